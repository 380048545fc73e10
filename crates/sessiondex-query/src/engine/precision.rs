//! Inside `recall`: identifiers resolved structurally, the adjacency boost, and field groups
//! (`in`). See [`crate::identifier`] and [`crate::fields`].
//!
//! Ranking tiers, highest first: records an id query names (tier 3), entries whose stored
//! text holds the query's terms contiguously and in order (tier 2), everything else (tier 0).
//! A tier's items score their own score plus one more than the highest final score of the
//! tiers below, so the order of the scores is the order of the page.

use std::collections::{BTreeSet, HashSet};

use sessiondex_core::hot::HotEntry;
use sessiondex_core::tokenize::nfkc;
use sessiondex_source::Branches;

use super::{ce, corrupt, has_time, Item, Matcher, Search, Slot};
use crate::bm25::QueryTerms;
use crate::error::Error;
use crate::fields::{has_any_term, GroupSet, Parts};
use crate::identifier::{self, IdQuery, Sequence, ADJACENCY_CANDIDATES};
use crate::index::Index;
use crate::request::{
    reason, Call, ExpandRequest, FieldGroup, Hit, HitKind, QueryMode, RecallRequest, Scope,
    ValidRecall,
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
) -> Result<(), Error> {
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
        let present: HashSet<(usize, u32)> =
            items[..n_entries].iter().map(|it| (it.1, it.2)).collect();
        let named: Vec<(usize, u32)> = s.px.id_entries.iter().copied().collect();
        for key in named {
            if !present.contains(&key) {
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
            let Some(d) = index.cold_shared(ci)? else {
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
    // Adjacency: entries holding every query term, best first, checked on stored text.
    if let (Some(seq), Matcher::Terms { fuzzy: false, .. }) = (&s.px.sequence, &s.matcher) {
        let mut cands: Vec<usize> = (0..n_entries)
            .filter(|&k| {
                tier[k] == 0 && {
                    let tf = s.tf(&s.entries[k]);
                    !tf.is_empty() && tf.iter().all(|&n| n > 0)
                }
            })
            .collect();
        cands.sort_by(|&a, &b| {
            items[b]
                .0
                .total_cmp(&items[a].0)
                .then_with(|| (items[a].1, items[a].2).cmp(&(items[b].1, items[b].2)))
        });
        cands.truncate(ADJACENCY_CANDIDATES);
        let mut buf = Vec::new();
        for k in cands {
            let (slot, entry) = (items[k].1, items[k].2);
            let Some(shard) = &slots[slot].shard else {
                continue;
            };
            let e = shard.entry(entry as usize).ok_or_else(corrupt)?;
            let p = Parts::of(&e).map_err(ce)?;
            let g = s.px.groups;
            let hit = (p.text_allowed(g) && seq.is_in(p.text, &mut buf))
                || (p.thinking_allowed(g) && p.thinking.is_some_and(|t| seq.is_in(t, &mut buf)));
            if hit {
                tier[k] = 2;
            }
        }
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
    let p = Parts::of(e).map_err(ce)?;
    let g = s.px.groups;
    Ok(match &s.matcher {
        Matcher::None => Vec::new(),
        Matcher::Terms { .. } => p.matched(g, |t| has_any_term(t, highlight.terms()), true),
        Matcher::Phrase { phrase, .. } => p.matched(g, |t| phrase.is_match(t), false),
        Matcher::Regex(re) => p.matched(g, |t| re.is_match_text(&nfkc(t)), false),
    })
}

/// The text a snippet is cut from: the thinking part when only it matched.
pub(super) fn snippet_text<'a>(
    e: &HotEntry<'a>,
    matched: &[FieldGroup],
) -> Result<Option<&'a str>, Error> {
    let p = Parts::of(e).map_err(ce)?;
    if matched.contains(&FieldGroup::Thinking) && !matched.contains(&p.text_group) {
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
    slot: &Slot,
    ord: u32,
    score: f64,
    branches: Option<Branches>,
) -> Result<Option<Hit>, Error> {
    let Some(ci) = slot.catalog else {
        return Ok(None);
    };
    let Some(d) = index.cold_shared(ci)? else {
        return Ok(None);
    };
    let Some(t) = d.tuple(ord as usize) else {
        return Ok(None);
    };
    let follow = Call::expand(&ExpandRequest {
        session: slot.file().to_string(),
        indices: Some(vec![i64::from(t.index())]),
        source_hash: Some(slot.source_hash().to_string()),
        lineage_fingerprint: Some(slot.lineage().to_string()),
        branches,
        ..ExpandRequest::default()
    })?;
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
mod tests {
    use sessiondex_source::Branches;

    use crate::engine::{recall, QueryContext};
    use crate::memory::{MemoryConfig, MemoryIndex};
    use crate::request::{HitKind, Page, RecallRequest, Scope};

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
