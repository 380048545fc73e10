//! Inside `recall`: identifiers resolved structurally, the adjacency boost, and field groups
//! (`in`). See [`crate::identifier`] and [`crate::fields`].
//!
//! Ranking tiers, highest first: records an id query names (tier 3), entries whose stored
//! text holds the query's terms contiguously and in order (tier 2), everything else (tier 0).
//! A tier's items score their own score plus one more than the highest final score of the
//! tiers below, so the order of the scores is the order of the page.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashSet};

use sessiondex_core::hot::HotEntry;
#[cfg(not(target_arch = "wasm32"))]
use sessiondex_core::hot::{FLAG_TEXT_NFKC, FLAG_THINKING_NFKC};
use sessiondex_source::Branches;

use super::{ce, corrupt, has_time, Item, Matcher, Search, Slot};
use crate::bm25::QueryTerms;
use crate::error::Error;
use crate::fields::{has_any_term, normalized, GroupSet, Parts};
use crate::identifier::{self, IdQuery, Sequence, ADJACENCY_CANDIDATES};
use crate::index::Index;
use crate::request::{
    reason, Call, FieldGroup, Hit, HitKind, QueryMode, RecallRequest, Scope, ValidRecall,
};

/// What `recall` tracks for identifiers and field groups.
pub(super) struct Precision {
    /// The groups of `in` (every group when absent).
    pub(super) groups: GroupSet,
    /// The query, when it may name a record by id (literal mode).
    id_query: Option<IdQuery>,
    /// The query's terms in order (literal mode, two or more).
    sequence: Option<Sequence>,
    /// Hot entries (slot, entry) whose entry id or operation address the query names.
    id_entries: BTreeSet<(usize, u32)>,
    /// Of those, the ones added without a lexical match.
    pub(super) id_only: BTreeSet<(usize, u32)>,
    /// Slots whose session id the query names.
    id_sessions: BTreeSet<usize>,
}

impl Precision {
    pub(super) fn new(v: &ValidRecall) -> Precision {
        let literal = v.mode == QueryMode::Literal;
        let q = v.query.as_deref().filter(|_| literal);
        Precision {
            groups: GroupSet::from_request(v.request.in_groups.as_deref()),
            id_query: q.and_then(IdQuery::parse),
            sequence: q.and_then(identifier::sequence).map(Sequence::new),
            id_entries: BTreeSet::new(),
            id_only: BTreeSet::new(),
            id_sessions: BTreeSet::new(),
        }
    }

    /// Notes a filtered hot entry whose id or operation address the query names.
    pub(super) fn note_entry(&mut self, slot: usize, e: &HotEntry<'_>) -> Result<(), Error> {
        if let Some(q) = &self.id_query {
            let named = q.matches(e.entry_id().map_err(ce)?)
                || e.operation_address()
                    .map_err(ce)?
                    .is_some_and(|a| q.matches(a));
            if named {
                self.id_entries.insert((slot, e.index() as u32));
            }
        }
        Ok(())
    }

    /// The catalog id key of an id-shaped query.
    pub(super) fn id_key(&self) -> Option<String> {
        self.id_query.as_ref().map(IdQuery::catalog_key)
    }

    /// Whether every entry must be looked at one by one (the query may name one by id).
    pub(super) fn notes_entries(&self) -> bool {
        self.id_query.is_some()
    }

    /// Whether a filtered hot entry has a part `in` allows.
    pub(super) fn allows(&self, e: &HotEntry<'_>) -> Result<bool, Error> {
        if self.groups.is_all() {
            return Ok(true);
        }
        Ok(Parts::of(e).map_err(ce)?.any_allowed(self.groups))
    }
}

/// An item of the ranking: (score, slot, entry or tuple ordinal, kind).
pub(super) type Ranked = (f32, usize, u32, Item);

fn passes_tuple(v: &ValidRecall, t: &sessiondex_core::cold::ColdTuple<'_>) -> bool {
    let r = &v.request;
    let eq =
        |want: &Option<String>, got: Option<&str>| want.as_deref().is_none_or(|w| got == Some(w));
    eq(&r.role, t.role().ok().flatten())
        && eq(&r.tool, t.tool().ok().flatten())
        && eq(&r.reference, t.reference().ok().flatten())
        && eq(&r.provider, t.provider().ok().flatten())
        && eq(&r.action, t.action().ok().flatten())
        && r.outcome
            .is_none_or(|o| t.outcome().ok().flatten() == Some(o))
}

/// An item's place in the page's order as one integer (ascending): its score (descending,
/// in `f32::total_cmp`'s order), its slot's rank (one slot, one session: its time and file),
/// the entry, the item's position `i`.
pub(super) fn order_key(slots: &[Slot], i: usize, it: &Ranked) -> u128 {
    let bits = it.0.to_bits();
    let ascending = if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    };
    let rank = slots.get(it.1).map_or(u32::MAX, |sl| sl.rank);
    (u128::from(!ascending) << 96)
        | (u128::from(rank) << 64)
        | (u128::from(it.2) << 32)
        | u128::from(u32::try_from(i).unwrap_or(u32::MAX))
}

/// The keys ([`order_key`]) of the best `want` items, ascending: the first `want` of every
/// key sorted. With few wanted of many, a max-heap keeps the best so far, and once it holds
/// `want` an item scoring below the worst of them is passed over without its key (no look at
/// its slot): most items of a common term cost one comparison.
pub(super) fn best_keys(slots: &[Slot], items: &[Ranked], want: usize) -> Vec<u128> {
    if want == 0 {
        return Vec::new();
    }
    if want > 256 || want.saturating_mul(4) >= items.len() {
        let mut order: Vec<u128> = items
            .iter()
            .enumerate()
            .map(|(i, it)| order_key(slots, i, it))
            .collect();
        if want < order.len() {
            order.select_nth_unstable(want - 1);
            order.truncate(want);
        }
        order.sort_unstable();
        return order;
    }
    let mut best: BinaryHeap<u128> = BinaryHeap::with_capacity(want + 1);
    // The score of the worst item kept, once `want` are.
    let mut cut: Option<f32> = None;
    for (i, it) in items.iter().enumerate() {
        if cut.is_some_and(|c| it.0.total_cmp(&c).is_lt()) {
            continue;
        }
        let key = order_key(slots, i, it);
        if best.len() == want {
            if best.peek().is_some_and(|&worst| key >= worst) {
                continue;
            }
            best.pop();
        }
        best.push(key);
        if best.len() == want {
            #[allow(clippy::cast_possible_truncation)]
            let worst = best.peek().and_then(|&k| items.get(k as u32 as usize));
            cut = worst.map(|w| w.0);
        }
    }
    best.into_sorted_vec()
}

/// Puts in tier 2 the candidates `cands` (tier-0 entry items holding every query term) whose
/// stored text holds the terms in order (`adjacent(k, slot, entry)`, `k` the item),
/// checking at most [`ADJACENCY_CANDIDATES`] of them in the page's order, and only as many
/// as decide the items up to `want` and every score among them. It stops once `want` are
/// found, the highest score of tier 0 is known (a candidate found not adjacent, or the next
/// one scoring at most the best tier-0 item that is no candidate) and the next candidate
/// would not tie the last one found once both have tier 2's bonus. A candidate left
/// unchecked stays in tier 0: in tier 2 it would come after the `want` found, and its score
/// is at most tier 0's highest, so neither the items up to `want` nor the bonuses change.
fn adjacency(
    items: &[Ranked],
    tier: &mut [u8],
    slots: &[Slot],
    cands: &[usize],
    want: usize,
    mut adjacent: impl FnMut(usize, usize, u32) -> Result<bool, Error>,
) -> Result<(), Error> {
    if cands.is_empty() {
        return Ok(());
    }
    // The best tier-0 score of the items that are no candidates.
    let mut is_cand = vec![false; items.len()];
    for &k in cands {
        if let Some(c) = is_cand.get_mut(k) {
            *c = true;
        }
    }
    let mut zero_best: Option<f32> = None;
    for (k, it) in items.iter().enumerate() {
        if tier[k] == 0 && !is_cand[k] {
            zero_best = Some(zero_best.map_or(it.0, |b| b.max(it.0)));
        }
    }
    let mut heap: BinaryHeap<Reverse<u128>> = cands
        .iter()
        .map(|&k| Reverse(order_key(slots, k, &items[k])))
        .collect();
    let mut found = 0usize;
    // A candidate was found not adjacent: `zero_best` is at least every unchecked score.
    let mut zero_known = false;
    let mut last_found: Option<f32> = None;
    let mut checked = 0usize;
    #[allow(clippy::cast_possible_truncation)]
    while let Some(Reverse(key)) = heap.pop() {
        if checked == ADJACENCY_CANDIDATES {
            break;
        }
        let k = key as u32 as usize;
        let Some(&(score, slot, entry, _)) = items.get(k) else {
            continue;
        };
        if found >= want && (zero_known || zero_best.is_some_and(|b| score <= b)) {
            let bonus = zero_best.map_or(0.0, |b| b.max(0.0)) + 1.0;
            if last_found.is_none_or(|l| score + bonus != l + bonus) {
                break;
            }
        }
        checked += 1;
        if adjacent(k, slot, entry)? {
            tier[k] = 2;
            found += 1;
            last_found = Some(score);
        } else if !zero_known {
            zero_known = true;
            zero_best = Some(zero_best.map_or(score, |b| b.max(score)));
        }
    }
    Ok(())
}

/// Adds the records an id query names that the lexical search did not find, puts every
/// item in its tier and adds the tier bonuses. `items` holds the entry candidates first, in
/// the order of `s.entries`, then the cold candidates in the order of `s.colds`.
#[allow(clippy::too_many_lines)]
pub(super) fn add_and_tier(
    s: &mut Search<'_>,
    index: &Index,
    slots: &[Slot],
    items: &mut Vec<Ranked>,
    single: bool,
    want: usize,
) -> Result<(), Error> {
    #[cfg(test)]
    let want = if tests::FULL_ADJACENCY.with(std::cell::Cell::get) {
        usize::MAX
    } else {
        want
    };
    let n_entries = s.entries.len();
    let mut tier = vec![0u8; items.len()];
    // Records named by id.
    if let Some(q) = s.px.id_query.clone() {
        if !single {
            for (k, slot) in slots.iter().enumerate() {
                if q.matches(slot.session_id()) {
                    s.px.id_sessions.insert(k);
                }
            }
        }
        // The entries an id names that are no candidate yet join as their own items. Most
        // queries name none, and then the candidates are not looked up at all.
        // `named` is ascending (a set's order), so each candidate is looked up by halves.
        let named: Vec<(usize, u32)> = s.px.id_entries.iter().copied().collect();
        let mut present = vec![false; named.len()];
        if !named.is_empty() {
            for it in &items[..n_entries] {
                if let Ok(j) = named.binary_search(&(it.1, it.2)) {
                    present[j] = true;
                }
            }
        }
        for (key, seen) in named.into_iter().zip(present) {
            if !seen {
                s.px.id_only.insert(key);
                items.push((0.0, key.0, key.1, Item::Entry));
                tier.push(3);
            }
        }
        let mut cold_with_candidate: HashSet<usize> = HashSet::new();
        for (k, it) in items.iter().enumerate() {
            match it.3 {
                Item::Entry if s.px.id_entries.contains(&(it.1, it.2)) => tier[k] = 3,
                Item::Cold(_) if s.px.id_sessions.contains(&it.1) => {
                    tier[k] = 3;
                    cold_with_candidate.insert(it.1);
                }
                _ => {}
            }
        }
        for &k in &s.px.id_sessions {
            if !cold_with_candidate.contains(&k) {
                items.push((0.0, k, 0, Item::Session));
                tier.push(3);
            }
        }
        // Cold sessions: entry ids and operation addresses in the digests' tuples.
        for (k, slot) in slots.iter().enumerate().filter(|(_, sl)| sl.cold) {
            let Some(ci) = slot.catalog else { continue };
            // Only a session holding an id with the query's key can hold a match.
            if let Some(w) = &s.id_walk {
                if !w.get(ci).copied().unwrap_or(true) {
                    continue;
                }
            }
            let summary = &index.entries()[ci].summary;
            if has_time(s.v) {
                let (since, until) = (
                    s.v.since_ms.unwrap_or(i64::MIN),
                    s.v.until_ms.unwrap_or(i64::MAX),
                );
                match (summary.first_ts, summary.last_ts) {
                    (Some(f), Some(l)) if l >= since && f <= until => {
                        if f < since || l > until {
                            s.coverage
                                .add_reason(reason::COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION);
                        }
                    }
                    _ => continue,
                }
            }
            let Some(d) = index.cold_shared_in(ci, s.epoch(index))? else {
                s.coverage.add_reason("index_file_missing");
                continue;
            };
            for ord in 0..d.tuple_count() {
                let Some(t) = d.tuple(ord) else { continue };
                let named = t.entry_id().is_ok_and(|id| q.matches(id))
                    || t.operation_address()
                        .ok()
                        .flatten()
                        .is_some_and(|a| q.matches(a));
                if named && passes_tuple(s.v, &t) {
                    items.push((0.0, k, ord as u32, Item::ColdEntry));
                    tier.push(3);
                }
            }
        }
    }
    // Adjacency: entries holding every query term, best first, checked on stored text; only
    // as many as decide the items up to `want` (see `adjacency`).
    if let (Some(seq), Matcher::Terms { fuzzy: false, .. }) = (&s.px.sequence, &s.matcher) {
        let cands: Vec<usize> = (0..n_entries)
            .filter(|&k| {
                tier[k] == 0 && {
                    let tf = s.tf(&s.entries[k]);
                    !tf.is_empty() && tf.iter().all(|&n| n > 0)
                }
            })
            .collect();
        let g = s.px.groups;
        let mut buf = Vec::new();
        // The query term the sequence starts with: an entry's frequency of it bounds how
        // often its stored text holds it as a token (every token of the text is posted, past
        // a cut too), so a search of the text stops once it met that many. The reasoning,
        // which the frequencies count only when it is indexed, is searched whole.
        let first = match &s.matcher {
            Matcher::Terms { terms, .. } => seq
                .terms()
                .first()
                .and_then(|f| terms.iter().position(|t| t == f)),
            _ => None,
        };
        // A full check (a test's) searches every text whole, as the browser build does (its
        // size budget).
        let first = first.filter(|_| !cfg!(target_arch = "wasm32"));
        #[cfg(test)]
        let first = first.filter(|_| !tests::FULL_ADJACENCY.with(std::cell::Cell::get));
        // The browser build reads every text as checked parts (its size budget), and so does
        // a test's full check.
        #[cfg(all(not(target_arch = "wasm32"), test))]
        let bytes_path = !tests::FULL_ADJACENCY.with(std::cell::Cell::get);
        #[cfg(all(not(target_arch = "wasm32"), not(test)))]
        let bytes_path = true;
        adjacency(items, &mut tier, slots, &cands, want, |k, slot, entry| {
            let Some(shard) = &slots[slot].shard else {
                return Ok(false);
            };
            let most = first
                .and_then(|f| s.entries.get(k).and_then(|c| s.tf(c).get(f)))
                .map_or(usize::MAX, |&n| n as usize);
            let e = shard.entry(entry as usize).ok_or_else(corrupt)?;
            // A text the shard says is NFKC is searched in its bytes, not checked as UTF-8
            // first (the search stops at the first term's last place; a check reads it all).
            #[cfg(not(target_arch = "wasm32"))]
            if bytes_path {
                let flags = e.flags();
                let text_group = FieldGroup::of_class(e.class().map_err(ce)?);
                let text_hit = if !g.contains(text_group) {
                    false
                } else if flags & FLAG_TEXT_NFKC != 0 {
                    let text = e.text_bytes().map_err(ce)?;
                    match seq.is_in_nfkc_bytes_at_most(text, &mut buf, most) {
                        Some(hit) => hit,
                        None => seq.is_in_at_most(e.text().map_err(ce)?, true, &mut buf, most),
                    }
                } else {
                    seq.is_in_at_most(e.text().map_err(ce)?, false, &mut buf, most)
                };
                let thinking_nfkc = flags & FLAG_THINKING_NFKC != 0;
                return Ok(text_hit
                    || (g.contains(FieldGroup::Thinking)
                        && e.thinking()
                            .map_err(ce)?
                            .is_some_and(|t| seq.is_in(t, thinking_nfkc, &mut buf))));
            }
            let p = Parts::of(&e).map_err(ce)?;
            Ok(
                (p.text_allowed(g) && seq.is_in_at_most(p.text, p.text_nfkc, &mut buf, most))
                    || (p.thinking_allowed(g)
                        && p.thinking
                            .is_some_and(|t| seq.is_in(t, p.thinking_nfkc, &mut buf))),
            )
        })?;
    }
    // Bonuses: each tier scores above the highest final score of the tiers below. With every
    // item in tier 0 there is none (its bonus is 0, and no score is -0.0: BM25's terms are
    // never negative), so the passes are skipped.
    if tier.iter().all(|&t| t == 0) {
        return Ok(());
    }
    let mut below: Option<f32> = None;
    for t in [0u8, 2, 3] {
        let bonus = if t == 0 {
            0.0
        } else {
            below.map_or(0.0, |b| b.max(0.0)) + 1.0
        };
        let mut top = below;
        for (k, it) in items.iter_mut().enumerate() {
            if tier[k] == t {
                it.0 += bonus;
                top = Some(top.map_or(it.0, |x| x.max(it.0)));
            }
        }
        below = top;
    }
    Ok(())
}

/// The field groups a hot entry hit matched in.
pub(super) fn matched_in(
    s: &Search<'_>,
    e: &HotEntry<'_>,
    highlight: &QueryTerms,
    lexical: bool,
) -> Result<Vec<FieldGroup>, Error> {
    if !lexical {
        return Ok(Vec::new());
    }
    // A lexical hit with no reasoning part matched in its text: for a literal query the
    // entry's frequencies count the text whole, so the stored text shows a term or was cut
    // before it, and a phrase's hit was counted in the stored text itself. Either way the
    // text's group is the answer (as `Parts::matched` finds it, without reading the text).
    // The browser build reads the parts (its size budget).
    #[cfg(test)]
    let full = tests::FULL_MATCHED_IN.with(std::cell::Cell::get);
    #[cfg(not(test))]
    let full = cfg!(target_arch = "wasm32");
    if let (Matcher::Terms { .. } | Matcher::Phrase { .. }, false) = (&s.matcher, full) {
        if e.flags() & sessiondex_core::hot::FLAG_HAS_THINKING == 0 {
            let g = FieldGroup::of_class(e.class().map_err(ce)?);
            if s.px.groups.contains(g) {
                return Ok(vec![g]);
            }
        }
    }
    let p = Parts::of(e).map_err(ce)?;
    let g = s.px.groups;
    Ok(match &s.matcher {
        Matcher::None => Vec::new(),
        Matcher::Terms { .. } => p.matched(g, |t| has_any_term(t, highlight.terms()), true),
        Matcher::Phrase { phrase, .. } => p.matched(g, |t| phrase.is_match(t), false),
        Matcher::Regex(re) => {
            p.matched_parts(g, |t, known| re.is_match_text(&normalized(t, known)), false)
        }
    })
}

/// The text a snippet is cut from: the thinking part when only it matched.
pub(super) fn snippet_text<'a>(
    e: &HotEntry<'a>,
    matched: &[FieldGroup],
) -> Result<Option<&'a str>, Error> {
    // Most hits did not match in the thinking part: their entry's parts are not split.
    if !matched.contains(&FieldGroup::Thinking) {
        return Ok(None);
    }
    let p = Parts::of(e).map_err(ce)?;
    if !matched.contains(&p.text_group) {
        return Ok(p.thinking);
    }
    Ok(None)
}

/// The hit of a session its id names: `follow` lists the session (bound to its source).
pub(super) fn session_hit(
    slot: &Slot,
    req: &RecallRequest,
    score: f64,
    timestamp: Option<String>,
) -> Result<Hit, Error> {
    let follow = Call::recall(&RecallRequest {
        scope: Some(Scope::Explicit(slot.file().to_string())),
        branches: req.branches,
        page_size: req.page_size,
        source_hash: Some(slot.source_hash().to_string()),
        lineage_fingerprint: Some(slot.lineage().to_string()),
        ..RecallRequest::default()
    })?;
    Ok(session_hit_of(slot, score, timestamp, follow))
}

/// A `session` hit of `slot` with its `follow` call, nothing matched yet.
pub(super) fn session_hit_of(
    slot: &Slot,
    score: f64,
    timestamp: Option<String>,
    follow: Call,
) -> Hit {
    Hit {
        kind: HitKind::Session,
        session_id: slot.session_id().to_string(),
        file: slot.file().to_string(),
        entry_id: None,
        index: None,
        operation_address: None,
        role: None,
        tool: None,
        outcome: None,
        timestamp,
        score,
        snippet: None,
        snippet_unavailable: None,
        matched_terms: Vec::new(),
        matched_structural_entries: Vec::new(),
        matched_in: Vec::new(),
        follow,
    }
}

/// The entry hit of a cold session's tuple its id or operation address names (no snippet:
/// the text is not in the index; `follow` expands it from source).
pub(super) fn cold_entry_hit(
    index: &Index,
    epoch: Option<crate::index::Epoch>,
    slot: &Slot,
    ord: u32,
    score: f64,
    branches: Option<Branches>,
) -> Result<Option<Hit>, Error> {
    let Some(ci) = slot.catalog else {
        return Ok(None);
    };
    let Some(d) = index.cold_shared_in(ci, epoch)? else {
        return Ok(None);
    };
    let Some(t) = d.tuple(ord as usize) else {
        return Ok(None);
    };
    let (follow, _) = Call::expand_entry(
        slot.file(),
        t.index(),
        slot.source_hash(),
        slot.lineage(),
        branches,
    );
    Ok(Some(Hit {
        kind: HitKind::Entry,
        session_id: slot.session_id().to_string(),
        file: slot.file().to_string(),
        entry_id: Some(t.entry_id().map_err(ce)?.to_owned()),
        index: Some(u64::from(t.index())),
        operation_address: t.operation_address().map_err(ce)?.map(str::to_owned),
        role: t.role().map_err(ce)?.map(str::to_owned),
        tool: t.tool().map_err(ce)?.map(str::to_owned),
        outcome: t.outcome().map_err(ce)?,
        timestamp: None,
        score,
        snippet: None,
        snippet_unavailable: None,
        matched_terms: Vec::new(),
        matched_structural_entries: Vec::new(),
        matched_in: Vec::new(),
        follow,
    }))
}

#[cfg(test)]
pub(super) mod tests {
    use std::cell::Cell;

    use sessiondex_source::Branches;

    use super::{adjacency, Ranked};
    use crate::engine::{recall, Item, QueryContext};
    use crate::error::Error;
    use crate::memory::{MemoryConfig, MemoryIndex};
    use crate::request::{HitKind, Page, RecallRequest, Scope};

    thread_local! {
        /// Every adjacency candidate is checked, whatever the page needs.
        pub(super) static FULL_ADJACENCY: Cell<bool> = const { Cell::new(false) };
        /// Every entry hit's matched groups are found by reading its parts.
        pub(super) static FULL_MATCHED_IN: Cell<bool> = const { Cell::new(false) };
    }

    /// Entry hits with and without a reasoning part, cut and whole, of every text class,
    /// some holding a term only past the cut, and id-named entries: under every field-group
    /// set and both reasoning policies, every page equals the page whose matched groups are
    /// found by reading each hit's parts.
    #[test]
    fn matched_groups_equal_a_full_check() {
        for index_thinking in [false, true] {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: Some(1_000),
                max_entry_chars: 40,
                index_thinking,
                ..MemoryConfig::default()
            });
            let pad = "pad ".repeat(12);
            for sess in 0..6 {
                let text = match sess % 3 {
                    0 => "zqa early".to_owned(),
                    1 => format!("{pad}zqa late"),
                    _ => "nothing here".to_owned(),
                };
                let thought = match sess % 2 {
                    0 => "zqa thought".to_owned(),
                    _ => format!("{pad}zqb thought"),
                };
                let lines = [
                    format!(
                        r#"{{"type":"session","version":3,"id":"s{sess}","timestamp":"2026-01-01T00:0{sess}:00Z","cwd":"/p"}}"#
                    ),
                    format!(
                        r#"{{"type":"message","id":"u{sess}","parentId":null,"timestamp":"2026-01-01T00:0{sess}:01Z","message":{{"role":"user","content":"{text} zqb"}}}}"#
                    ),
                    format!(
                        r#"{{"type":"message","id":"a{sess}","parentId":"u{sess}","timestamp":"2026-01-01T00:0{sess}:02Z","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"{thought}"}},{{"type":"text","text":"{text}"}},{{"type":"toolCall","id":"c{sess}","name":"bash","arguments":{{"command":"{text}"}}}}]}}}}"#
                    ),
                    format!(
                        r#"{{"type":"message","id":"t{sess}","parentId":"a{sess}","timestamp":"2026-01-01T00:0{sess}:03Z","message":{{"role":"toolResult","toolCallId":"c{sess}","toolName":"bash","isError":false,"content":[{{"type":"text","text":"{text} zqb"}}]}}}}"#
                    ),
                ];
                m.add_file(&format!("s{sess}.jsonl"), lines.join("\n").as_bytes())
                    .unwrap();
            }
            let mut hits = 0;
            for (query, mode) in [
                ("zqa", "literal"),
                ("zqb", "literal"),
                ("zqa zqb", "literal"),
                ("s3", "literal"),
                ("u2 zqa", "literal"),
                ("zqa early", "phrase"),
                ("zqa late", "phrase"),
                ("zqb thought", "phrase"),
                ("late zqb", "phrase"),
            ] {
                for groups in [
                    None,
                    Some(vec!["text"]),
                    Some(vec!["thinking"]),
                    Some(vec!["tool_input", "tool_output"]),
                    Some(vec!["text", "thinking"]),
                ] {
                    for matching in ["any", "all"] {
                        let mut req = serde_json::json!({
                            "query": query, "queryMode": mode, "queryMatch": matching,
                            "pageSize": 100
                        });
                        if let Some(g) = &groups {
                            req["in"] = serde_json::json!(g);
                        }
                        let what = format!("{index_thinking} {query} {mode} {groups:?} {matching}");
                        let short = same_as_full(&mut m, req, &FULL_MATCHED_IN, &what);
                        hits += short
                            .hits
                            .iter()
                            .filter(|h| h.kind == HitKind::Entry)
                            .count();
                    }
                }
            }
            assert!(hits > 200, "{index_thinking} {hits}");
        }
    }

    /// Runs [`adjacency`] over `scores` (every item a candidate but those in `others`),
    /// `adjacent` saying which are; returns the tiers and the positions checked in order.
    fn tiers(
        scores: &[f32],
        others: &[usize],
        adjacent: &[usize],
        want: usize,
    ) -> (Vec<u8>, Vec<usize>) {
        #[allow(clippy::cast_possible_truncation)]
        let items: Vec<Ranked> = scores
            .iter()
            .enumerate()
            .map(|(k, &s)| (s, 0, k as u32, Item::Entry))
            .collect();
        let cands: Vec<usize> = (0..items.len()).filter(|k| !others.contains(k)).collect();
        let mut tier = vec![0u8; items.len()];
        let mut checked = Vec::new();
        adjacency(&items, &mut tier, &[], &cands, want, |_, _, entry| {
            checked.push(entry as usize);
            Ok::<bool, Error>(adjacent.contains(&(entry as usize)))
        })
        .unwrap();
        (tier, checked)
    }

    /// The best keys by a heap with a score cut are the first of every key sorted: random
    /// scores from a few values (many ties), every count wanted up to past the items.
    #[test]
    fn best_keys_are_the_first_sorted() {
        let mut next = crate::test_util::xorshift(0x2545_f491_4f6c_dd1du64);
        for n in [0usize, 1, 2, 5, 40, 300, 2_000] {
            #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
            let items: Vec<Ranked> = (0..n)
                .map(|_| (next(6) as f32 * 0.5, 0, next(50) as u32, Item::Entry))
                .collect();
            let mut all: Vec<u128> = items
                .iter()
                .enumerate()
                .map(|(i, it)| super::order_key(&[], i, it))
                .collect();
            all.sort_unstable();
            for want in [0usize, 1, 2, 3, 10, 37, 257, 600, 3_000] {
                let got = super::best_keys(&[], &items, want);
                assert_eq!(got, all[..want.min(n)], "{n} items, {want} wanted");
            }
        }
    }

    /// The check stops once the page's items and the bonus are decided, and not before:
    /// the best tier-0 score must be known, and a candidate that ties the last one found
    /// once both have the bonus is checked (the page orders ties by entry, and entry 1 here
    /// comes before entry 2 though its score is lower before the bonus).
    #[test]
    fn adjacency_checks_what_the_page_needs() {
        // Item 0 is no candidate and scores 10,000,000: the bonus is 10,000,001, and
        // 5.0000005 and 5.0 are the same once it is added.
        let (tier, checked) = tiers(&[1.0e7, 5.0, 5.000_000_5], &[0], &[1, 2], 1);
        assert_eq!(checked, [2, 1]);
        assert_eq!(tier, [0, 2, 2]);
        // No tie: one found is enough (item 0 is above every candidate).
        let (tier, checked) = tiers(&[1.0e7, 5.0, 6.0], &[0], &[1, 2], 1);
        assert_eq!(checked, [2]);
        assert_eq!(tier, [0, 0, 2]);
        // The best of tier 0 is a candidate: checked until one is found not adjacent.
        let (tier, checked) = tiers(&[1.0, 5.0, 6.0, 7.0, 4.0], &[0], &[3, 2], 1);
        assert_eq!(checked, [3, 2, 1]);
        assert_eq!(tier, [0, 0, 2, 2, 0]);
        // Nothing outside the candidates: the same.
        let (_, checked) = tiers(&[5.0, 6.0, 7.0], &[], &[2, 1], 1);
        assert_eq!(checked, [2, 1, 0]);
        // Every one wanted.
        let (tier, checked) = tiers(&[1.0, 5.0, 6.0, 7.0], &[0], &[3, 1], 5);
        assert_eq!(checked, [3, 2, 1]);
        assert_eq!(tier, [0, 2, 0, 2]);
    }

    /// Many entries holding two terms, adjacent or not, in ASCII and other text, with equal
    /// scores across sessions: every page of every size equals the page of a check of every
    /// candidate, each text searched whole, scores included.
    #[test]
    fn adjacency_pages_equal_a_full_check() {
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(1_000),
            ..MemoryConfig::default()
        });
        let mut seed = 11u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        let shapes = [
            "zqa zqb",
            "zqb zqa",
            "zqa filler zqb",
            "ZQA-ZQB",
            "\u{e9}t\u{e9} zqa zqb",
            "zqa \u{e9} zqb",
            "zqa",
            "filler zqb filler",
            // The first term alone, then again before the second: a search told the first
            // term's frequency must not stop at the first place.
            "zqa zqc zqa zqb",
        ];
        for sess in 0..24 {
            let mut lines = vec![format!(
                r#"{{"type":"session","version":3,"id":"s{sess}","timestamp":"2026-01-01T00:{sess:02}:00Z","cwd":"/p"}}"#
            )];
            for k in 0..6 {
                let mut text = String::new();
                // Sessions 0-3 repeat session 4's texts: equal scores, ranked by session.
                let shape = if sess < 4 {
                    (k * 3) % shapes.len()
                } else {
                    next(shapes.len() as u64) as usize
                };
                for _ in 0..=(if sess < 4 { k % 3 } else { next(3) as usize }) {
                    text.push_str(shapes[shape]);
                    text.push(' ');
                }
                for _ in 0..(if sess < 4 { k } else { next(40) as usize }) {
                    text.push_str("pad ");
                }
                lines.push(format!(
                    r#"{{"type":"message","id":"s{sess}-{k}","parentId":{},"timestamp":"2026-01-01T00:{sess:02}:0{k}Z","message":{{"role":"user","content":"{text}"}}}}"#,
                    if k == 0 { "null".to_owned() } else { format!("\"s{sess}-{}\"", k - 1) }
                ));
            }
            m.add_file(&format!("s{sess:02}.jsonl"), lines.join("\n").as_bytes())
                .unwrap();
        }
        let mut pages = 0;
        for query in ["zqa zqb", "zqb zqa", "zqa filler zqb"] {
            for matching in ["any", "all"] {
                for size in [1u64, 2, 3, 7] {
                    let mut offset = 0u64;
                    loop {
                        let req = serde_json::json!({
                            "query": query, "queryMatch": matching, "pageSize": size,
                            "offset": offset
                        });
                        let what = format!("{query} {matching} {size} {offset}");
                        let lazy = same_as_full(&mut m, req, &FULL_ADJACENCY, &what);
                        pages += 1;
                        offset += size;
                        if offset >= lazy.total {
                            break;
                        }
                    }
                }
            }
        }
        assert!(pages > 300, "{pages}");
    }

    const OLD: &[u8] = include_bytes!("../../../../testdata/queries/identifiers/ids/old.jsonl");
    const NEW: &[u8] = include_bytes!("../../../../testdata/queries/identifiers/ids/new.jsonl");
    const TOOLS: &[u8] = include_bytes!("../../../../testdata/queries/identifiers/ids/tools.jsonl");

    fn memory(hot: Option<usize>) -> MemoryIndex {
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: hot,
            index_thinking: true,
            ..MemoryConfig::default()
        });
        m.add_file("old.jsonl", OLD).unwrap();
        m.add_file("new.jsonl", NEW).unwrap();
        m.add_file("tools.jsonl", TOOLS).unwrap();
        m
    }

    /// The page of `req`, checked equal to its page with `switch` set (`what`: the case).
    pub(in crate::engine) fn same_as_full(
        m: &mut MemoryIndex,
        req: serde_json::Value,
        switch: &'static std::thread::LocalKey<Cell<bool>>,
        what: &str,
    ) -> Page {
        let page = run(m, req.clone());
        switch.with(|c| c.set(true));
        let full = run(m, req);
        switch.with(|c| c.set(false));
        assert_eq!(
            serde_json::to_value(&page).unwrap(),
            serde_json::to_value(&full).unwrap(),
            "{what}"
        );
        page
    }

    fn run(m: &mut MemoryIndex, req: serde_json::Value) -> Page {
        let mut req = RecallRequest::from_json(&req).unwrap();
        req.scope.get_or_insert(Scope::Global);
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        recall(index, &opts, &QueryContext::default(), &req).unwrap()
    }

    fn names(p: &Page) -> Vec<String> {
        p.hits
            .iter()
            .map(|h| match h.kind {
                HitKind::Entry => format!("{}#{}", h.file, h.index.unwrap_or(0)),
                HitKind::Session => h.file.clone(),
            })
            .collect()
    }

    #[test]
    fn contiguous_older_longer_entry_ranks_first() {
        let mut m = memory(None);
        let reversed = run(&mut m, serde_json::json!({"query": "999 zeta"}));
        assert_eq!(
            names(&reversed),
            ["new.jsonl#0", "new.jsonl#1", "old.jsonl#0"]
        );
        let p = run(&mut m, serde_json::json!({"query": "ZETA-999"}));
        assert_eq!(names(&p), ["old.jsonl#0", "new.jsonl#0", "new.jsonl#1"]);
        let scores: Vec<f64> = p.hits.iter().map(|h| h.score).collect();
        assert!(scores.windows(2).all(|w| w[0] > w[1]), "{scores:?}");
    }

    #[test]
    fn ids_resolve_first() {
        let mut m = memory(None);
        let p = run(&mut m, serde_json::json!({"query": "a1b2c3d4e5f60002"}));
        assert_eq!(names(&p), ["old.jsonl#1"]);
        let p = run(&mut m, serde_json::json!({"query": "0f1e2d3c4b5a"}));
        assert_eq!(names(&p), ["old.jsonl"]);
        for q in [
            "no such column: 999",
            "\"unbalanced",
            "foo(",
            "a OR b NOT c",
            "*",
            ":",
            "-x",
        ] {
            run(&mut m, serde_json::json!({"query": q}));
        }
    }

    #[test]
    fn ids_resolve_in_cold_sessions() {
        // Every session cold: ids come from the digests' tuples of the sessions whose catalog
        // id keys hold the query's key, and only from those.
        let mut m = memory(Some(0));
        let p = run(&mut m, serde_json::json!({"query": "a1b2c3d4e5f60002"}));
        assert_eq!(names(&p), ["old.jsonl#1"]);
        assert_eq!(p.hits[0].kind, HitKind::Entry);
        let p = run(&mut m, serde_json::json!({"query": "A1B2C3D4-E5F6"}));
        assert_eq!(names(&p), ["old.jsonl#1"]);
        let p = run(&mut m, serde_json::json!({"query": "a1b2c3d4e5f69999"}));
        assert!(p.hits.is_empty(), "{:?}", names(&p));
    }

    #[test]
    fn field_groups() {
        let mut m = memory(None);
        let p = run(
            &mut m,
            serde_json::json!({"query": "kestrel", "in": ["thinking"]}),
        );
        assert_eq!(names(&p), ["tools.jsonl#1"]);
        assert_eq!(p.hits[0].matched_in, [crate::request::FieldGroup::Thinking]);
        let snippet = p.hits[0].snippet.as_ref().unwrap();
        assert!(snippet.text.contains("appsettings"), "{snippet:?}");
    }
}
