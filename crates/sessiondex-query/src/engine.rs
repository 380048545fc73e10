//! `recall`: one ranked, bounded page of entry and session hits over an opened [`Index`].
//!
//! Hot sessions answer with exact entry hits (postings for terms, the stored text for phrase
//! and regex). Cold sessions answer through the catalog's merged term map and their digests'
//! structural postings with session candidates whose `follow` hydrates that one session from
//! source. A single-session scope always reads its source (checking the call's bindings) and
//! searches it as an in-memory hot shard, so its answers are exact and never truncated.
//!
//! Over many sessions, the catalog's merged maps (terms, id keys, structural values) name
//! the sessions that can answer (`candidate_sessions`); only those are opened. The others
//! add their totals to the BM25 statistics, so the page equals a scan of every session
//! (`prefilter_tests`).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::json;
use sessiondex_core::cold::{ColdDigest, Field};
use sessiondex_core::hot::{self, EntryList, HotEntry, HotShard, ListField, StrField};
use sessiondex_core::{format_rfc3339_ms, tokenize, Policy};
use sessiondex_source::{Branches, Outcome};

use crate::bm25::{provenance_weight, terms_match, Bm25, Phrase, QueryTerms};
use crate::error::{Error, ErrorCode};
use crate::fuzzy::{self, FuzzyOptions};
use crate::index::{core_error, Bytes, Index, Resolved, SessionTotals, COLD};
use crate::regex::{CompiledRegex, HaystackBudget, RegexLimits};
use crate::request::{
    json_len, json_str_len, reason, session_args_len, Call, Coverage, Hit, HitKind, Page,
    QueryMatch, QueryMode, RecallRequest, Scope, SessionRecalls, StructuralEntry, ValidRecall,
};
use crate::snippet::{snippet, SnippetOptions};

mod precision;

/// Filtered hot entries one call keeps at most (`candidate_entry_budget`).
pub const CANDIDATE_ENTRY_BUDGET: usize = 50_000;
/// Candidate cold sessions one call considers at most (`candidate_digest_budget`): those
/// the catalog does not rule out (every cold session when it cannot narrow).
pub const CANDIDATE_DIGEST_BUDGET: usize = 10_000;
/// Ranked items one call keeps at most (`candidate_item_budget`).
pub const CANDIDATE_ITEM_BUDGET: usize = 10_000;
/// Upper bound of a page's JSON, in characters.
pub const MAX_PAGE_CHARS: usize = 30_000;
/// Structural entries listed per cold session hit.
pub const MAX_STRUCTURAL_ENTRIES: usize = 10;
/// Matched terms listed per cold session hit.
pub const MAX_MATCHED_TERMS: usize = 20;
/// Matches counted per entry for phrase and regex term frequency.
const MAX_SPANS: usize = 64;
/// Matches considered when placing a snippet's window.
const MAX_SNIP: usize = crate::source_text::MAX_SNIPPET_SPANS;

/// What the engine needs from the configuration.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// The index policy (what text is indexed); hydrated sessions use it without the
    /// `maxEntryChars` cut.
    pub policy: Policy,
    /// Regex limits.
    pub regex: RegexLimits,
}

/// Where a call comes from: what `scope: session` and `scope: project` resolve against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryContext {
    /// The caller's working directory (a request's `cwd` wins).
    pub cwd: Option<String>,
    /// The caller's current session (id or path), for `scope: session`.
    pub session: Option<String>,
}

struct Slot<'a> {
    names: Names<'a>,
    /// Its place in the page's order of sessions: newer first, then by path
    /// ([`Index::newest_rank`], so no catalog entry is read to rank it).
    rank: u32,
    shard: Option<Arc<HotShard<Bytes>>>,
    catalog: Option<usize>,
    cold: bool,
}

/// Where a slot's session id, file, source hash, lineage fingerprint and last timestamp
/// are read: its catalog entry, or (a session hydrated for the call) its own copies. A slot
/// is kept per session searched, so it stays small.
enum Names<'a> {
    Entry(&'a sessiondex_core::catalog::CatalogEntry),
    Owned(Box<([String; 4], Option<i64>)>),
}

impl Slot<'_> {
    fn session_id(&self) -> &str {
        match &self.names {
            Names::Entry(e) => &e.summary.session_id,
            Names::Owned(n) => &n.0[0],
        }
    }

    fn file(&self) -> &str {
        match &self.names {
            Names::Entry(e) => &e.identity.path,
            Names::Owned(n) => &n.0[1],
        }
    }

    fn source_hash(&self) -> &str {
        match &self.names {
            Names::Entry(e) => &e.identity.source_hash,
            Names::Owned(n) => &n.0[2],
        }
    }

    fn lineage(&self) -> &str {
        match &self.names {
            Names::Entry(e) => &e.summary.lineage_fingerprint,
            Names::Owned(n) => &n.0[3],
        }
    }

    fn last_ts(&self) -> Option<i64> {
        match &self.names {
            Names::Entry(e) => e.summary.last_ts,
            Names::Owned(n) => n.1,
        }
    }
}

enum Matcher {
    None,
    Terms { terms: Vec<String>, fuzzy: bool },
    Phrase { phrase: Phrase, tokens: Vec<String> },
    Regex(Box<CompiledRegex>),
}

impl Matcher {
    fn groups(&self) -> usize {
        match self {
            Matcher::None => 0,
            Matcher::Terms { terms, .. } => terms.len(),
            Matcher::Phrase { .. } | Matcher::Regex(_) => 1,
        }
    }
}

/// A hot entry that can answer; its term frequencies are `tf_len` values at `tf_at` of
/// [`Search::entry_tfs`] (one flat vector: an allocation per candidate was a tenth of a
/// common term's recall).
struct EntryCand {
    slot: usize,
    entry: u32,
    tf_at: u32,
    tf_len: u32,
    len: u32,
    weight: f32,
}

/// The vectors a recall call fills with its hot candidates, kept by the [`Index`] between
/// calls for their capacity (grown from nothing in each call, they and the cold candidates'
/// vector were about 7% of a structural call's instructions). Empty when kept. The cold
/// candidates' vector is not kept: kept, it made a common term's call over 10,256 sessions
/// 13-18% slower (its instructions 1-2% more).
#[derive(Default)]
pub(crate) struct Scratch {
    entries: Vec<EntryCand>,
    entry_tfs: Vec<u32>,
}

impl std::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scratch").finish_non_exhaustive()
    }
}

/// What [`Search::search_shard`] fills for each shard, kept across the shards of a call for
/// their capacity (made anew for each shard, they were about 4% of a structural call's
/// instructions): the string filters' memos, the pairing of results with their calls, the
/// entries kept.
#[derive(Default)]
struct ShardBufs<'a> {
    filters: Option<EntryFilters<'a>>,
    pairing: Option<Pairing>,
    kept: Vec<u32>,
}

/// A cold session that can answer. Small and flat: there is one per cold candidate, pushed
/// in a loop over thousands (the ordinals of its matching tuples, when its digest was read,
/// are in [`Search::cold_structural`]).
struct ColdCand {
    slot: u32,
    /// The query groups below 64 its notes hold ([`ColdTerms::held`]).
    held: u64,
    /// Its notes in [`Search::cold_terms`] (a range of positions).
    notes_start: u32,
    notes_end: u32,
    /// The catalog proved a tuple passes the one structural filter, so the digest was not
    /// read: its tuples are found if it becomes a page's hit.
    structural_later: bool,
}

impl ColdCand {
    fn notes(&self) -> std::ops::Range<usize> {
        self.notes_start as usize..self.notes_end as usize
    }
}

/// A ranked item's kind.
#[derive(Clone, Copy)]
enum Item {
    Entry,
    Cold(usize),
    /// A session its id names (the query is the session id or a hex prefix of it).
    Session,
    /// A cold session's entry its id or operation address names (the item's entry field is
    /// the digest tuple's ordinal).
    ColdEntry,
}

struct Search<'a> {
    v: &'a ValidRecall,
    matcher: Matcher,
    coverage: Coverage,
    docs: u64,
    total_len: u64,
    df: Vec<u64>,
    cold_docs: u64,
    cold_df: Vec<u64>,
    entries: Vec<EntryCand>,
    /// The term frequencies of `entries` (see [`EntryCand`]).
    entry_tfs: Vec<u32>,
    colds: Vec<ColdCand>,
    /// Per position in `colds` (ascending) whose digest was read: ordinals of its tuples
    /// that pass the structural filters (the first [`MAX_STRUCTURAL_ENTRIES`]).
    cold_structural: Vec<(usize, Vec<u32>)>,
    /// What the cold sessions' vocabularies hold.
    cold_terms: ColdTerms<'a>,
    highlight: BTreeSet<String>,
    budget: HaystackBudget,
    regex_stopped: bool,
    px: precision::Precision,
    /// Fuzzy expansions of the query terms over the catalog's merged vocabulary, when none
    /// was cut by the cap: each shard's own expansion is this restricted to its terms.
    fuzzy_groups: Option<Vec<Vec<String>>>,
    /// A literal query's groups (one term each), built by the first shard that needs them and
    /// lent to each shard after it (built per shard, they were an allocation per term and
    /// per group, for every shard).
    literal_groups: Option<Vec<Vec<String>>>,
    /// The (entry, group, tf) triples of a shard's postings, kept across shards for its
    /// capacity.
    hits_buf: Vec<(u32, u32, u32)>,
    /// Per literal query term, the catalog sessions holding it (ascending), when
    /// `candidate_sessions` read them.
    term_sessions: Option<Vec<Vec<u32>>>,
    /// Every session `candidate_sessions` marked (ascending), when they are few (under a
    /// 64th of the sessions) and it had them as lists: the candidates are found among these
    /// instead of in a pass over the marks.
    marked_few: Option<Vec<u32>>,
    /// The candidate sessions are those with records passing structural filters: a session
    /// left out adds nothing to the BM25 statistics (not its totals).
    filtered: bool,
    /// The regex terms the narrowing pass found, reused by the cold pass.
    regex_terms: Option<RegexTerms<'a>>,
    /// The phrase notes the narrowing pass made, reused by the cold pass.
    phrase_terms: Option<ColdTerms<'a>>,
    /// Per hot session, the terms ending with a phrase's first token and those beginning
    /// with its last, from the narrowing pass.
    phrase_first: Option<PhraseTerms>,
    phrase_last: Option<PhraseTerms>,
    /// For a narrowed regex: per hot session, the matching terms it holds.
    regex_hot: Option<RegexHot>,
    /// Per term of `regex_terms`, the matches the regex finds in it (0: not counted yet).
    regex_term_matches: Vec<u32>,
    /// Per catalog session, for an id query: whether one of its ids has the query's key
    /// (`None`: walk every session's entries).
    id_walk: Option<Vec<bool>>,
    /// Per catalog session, with exactly one structural filter: whether the catalog's field
    /// keys hold its value, so a tuple of the session's digest passes it (empty otherwise).
    structural_proven: Vec<bool>,
    /// The call's epoch ([`Index::call_epoch`]), read when the call first looks at a kept
    /// file ([`Search::epoch`]): kept files checked in it are not checked again.
    epoch: std::cell::OnceCell<Option<crate::index::Epoch>>,
}

/// Ids of a shard's string table known to hold a filter's value or not, at most this many
/// (past them, each value is read and compared).
const SID_MEMO: usize = 64;

/// One string filter over one hot shard's entries, by string id: a shard interns its strings
/// ([`HotEntry::string_id`]), so each id's value is read once, not once per entry.
#[derive(Debug)]
struct SidMatch<'w> {
    want: Option<&'w str>,
    seen: Vec<(u32, bool)>,
}

impl<'w> SidMatch<'w> {
    fn new(want: Option<&'w str>) -> Self {
        SidMatch {
            want,
            seen: Vec::new(),
        }
    }

    /// Forgets the ids seen (they are one shard's).
    fn clear(&mut self) {
        self.seen.clear();
    }

    /// Whether the value of id `sid` (`None`: absent) is the filter's; always true without
    /// a filter.
    fn passes(&mut self, shard: &HotShard<Bytes>, sid: Option<u32>) -> Result<bool, Error> {
        let Some(want) = self.want else {
            return Ok(true);
        };
        let Some(id) = sid else {
            return Ok(false);
        };
        if let Some(&(_, ok)) = self.seen.iter().find(|(i, _)| *i == id) {
            return Ok(ok);
        }
        let ok = shard.string(id).map_err(ce)? == want;
        if self.seen.len() < SID_MEMO {
            self.seen.push((id, ok));
        }
        Ok(ok)
    }
}

/// [`SidMatch::passes`] for a whole column: a direct-mapped memo by id, so that a value
/// that keeps coming back (a kind, a tool) costs one compare per entry.
struct IdMemo {
    slots: [(u32, bool); 32],
}

impl IdMemo {
    fn new() -> Self {
        // u32::MAX is no id (it is the absent one), so no slot starts out filled.
        IdMemo {
            slots: [(u32::MAX, false); 32],
        }
    }

    #[inline]
    fn passes(
        &mut self,
        m: &mut SidMatch<'_>,
        shard: &HotShard<Bytes>,
        sid: Option<u32>,
    ) -> Result<bool, Error> {
        let Some(id) = sid else {
            // An absent value passes only when there is no filter.
            return Ok(m.want.is_none());
        };
        let slot = &mut self.slots[(id % 32) as usize];
        if slot.0 == id {
            return Ok(slot.1);
        }
        let ok = m.passes(shard, Some(id))?;
        *slot = (id, ok);
        Ok(ok)
    }
}

/// The request's string filters over one hot shard; a column is read only when its filter
/// is set.
#[derive(Debug)]
struct EntryFilters<'w> {
    fields: [(StrField, ListField, SidMatch<'w>); 5],
}

impl<'w> EntryFilters<'w> {
    fn new(v: &'w ValidRecall) -> Self {
        let r = &v.request;
        let m = |w: &'w Option<String>| SidMatch::new(w.as_deref());
        EntryFilters {
            fields: [
                (StrField::Role, ListField::Role, m(&r.role)),
                (StrField::Tool, ListField::Tool, m(&r.tool)),
                (StrField::Reference, ListField::Reference, m(&r.reference)),
                (StrField::Provider, ListField::Provider, m(&r.provider)),
                (StrField::Action, ListField::Action, m(&r.action)),
            ],
        }
    }

    /// Ready for another shard.
    fn clear(&mut self) {
        for (_, _, m) in &mut self.fields {
            m.clear();
        }
    }

    fn passes(&mut self, e: &HotEntry<'_>, shard: &HotShard<Bytes>) -> Result<bool, Error> {
        for (field, _, m) in &mut self.fields {
            if m.want.is_some() && !m.passes(shard, e.string_id(*field).map_err(ce)?)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// What a filtered walk over one shard's entries needs besides the search.
struct Walk {
    slot: usize,
    walk_ids: bool,
}

/// The call/result pairing of a filtered walk (an outcome filter without a query): the
/// result records (entry, call id) that passed the filters, put aside until the shard's calls
/// among their ids are known.
struct Pairing {
    call_kind: SidMatch<'static>,
    memo: IdMemo,
    results: Vec<(u32, u32)>,
    /// Call ids of the calls that passed the filters (a call and its result carry the same
    /// tool and outcome, so most results' calls are among them).
    calls: Vec<u32>,
}

impl Pairing {
    fn new() -> Pairing {
        Pairing {
            call_kind: SidMatch::new(Some("tool_call")),
            memo: IdMemo::new(),
            results: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// Ready for another shard.
    fn clear(&mut self) {
        self.call_kind.clear();
        self.memo = IdMemo::new();
        self.results.clear();
        self.calls.clear();
    }

    /// The ids among the put-aside results' call ids that a tool call of `shard` with the
    /// results' `outcome` carries, sorted: those of the calls that passed the filters, and for
    /// the rest one pass over the call id column (a bit per wanted id), the kind and outcome
    /// read only where the id is wanted. A result defers only to a call with its outcome (the
    /// paired one): where another call has its id (a log whose ids repeat) it stays listed.
    fn calls_held(
        &mut self,
        shard: &HotShard<Bytes>,
        outcome: Option<Outcome>,
    ) -> Result<Vec<u32>, Error> {
        self.calls.sort_unstable();
        self.calls.dedup();
        let mut ids: Vec<u32> = self.results.iter().map(|r| r.1).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut held: Vec<u32> = Vec::new();
        ids.retain(|id| {
            let seen = self.calls.binary_search(id).is_ok();
            if seen {
                held.push(*id);
            }
            !seen
        });
        if ids.is_empty() {
            return Ok(held);
        }
        // A bit per id up to the largest wanted (a search of the sorted ids past 2^24).
        let max = ids.last().map_or(0, |&m| m as usize);
        let bits: Option<Vec<u64>> = (max < 1 << 24).then(|| {
            let mut w = vec![0u64; max / 64 + 1];
            for &id in &ids {
                w[id as usize / 64] |= 1 << (id % 64);
            }
            w
        });
        let wanted = |id: u32| match &bits {
            Some(w) => w
                .get(id as usize / 64)
                .is_some_and(|x| x & (1 << (id % 64)) != 0),
            None => ids.binary_search(&id).is_ok(),
        };
        let kinds = shard.string_ids(StrField::Kind).map_err(ce)?;
        let call_ids = shard.string_ids(StrField::CallId).map_err(ce)?;
        let n = shard.entry_count();
        if kinds.len() != n || call_ids.len() != n {
            return Err(corrupt());
        }
        for (j, id) in call_ids.iter().enumerate() {
            let Some(id) = id else { continue };
            if !wanted(id) {
                continue;
            }
            // The kind is required: an absent one is a damaged shard.
            let kind = kinds.get(j).ok_or_else(corrupt)?;
            if self.memo.passes(&mut self.call_kind, shard, Some(kind))?
                && shard.entry(j).ok_or_else(corrupt)?.outcome().map_err(ce)? == outcome
            {
                held.push(id);
            }
        }
        held.sort_unstable();
        held.dedup();
        Ok(held)
    }
}

/// The entries of `shard` that pass the request's outcome and string filters, ascending,
/// from the shard's entry lists of the wanted values (no pass over a column), and their token
/// total when they are one list as stored; `None` when no such filter is set or an entry range
/// limits the walk (then every entry is looked at). An entry left out fails
/// [`EntryFilters::passes`] or the outcome and an entry picked passes both, so the walk over
/// the picked ones (checking only their time) sees the same entries pass, in the same order.
fn filter_candidates(
    v: &ValidRecall,
    shard: &HotShard<Bytes>,
    filters: &mut EntryFilters<'_>,
) -> Result<Option<Picked>, Error> {
    let r = &v.request;
    if v.entry_range.is_some() {
        return Ok(None);
    }
    #[cfg(test)]
    if prefilter_tests::ENTRY_WALK.with(std::cell::Cell::get) {
        return Ok(None);
    }
    let n = shard.entry_count();
    let mut cands: Option<Picked> = None;
    if let Some(o) = r.outcome {
        let list = shard
            .entry_lists(ListField::Outcome)
            .and_then(|l| l.find(hot::outcome_value(o)))
            .map_err(ce)?;
        cands = Some(list_entries(list.as_ref(), n)?);
    }
    for (_, field, m) in &mut filters.fields {
        if m.want.is_none() {
            continue;
        }
        let lists = shard.entry_lists(*field).map_err(ce)?;
        // A built shard interns its strings: the first value found to pass is the only one.
        let mut found = None;
        for k in 0..lists.len() {
            let l = lists.get(k).map_err(ce)?;
            if m.passes(shard, Some(l.value))? {
                found = Some(l);
                break;
            }
        }
        let got = list_entries(found.as_ref(), n)?;
        cands = Some(match cands {
            None => got,
            Some((c, _)) => (intersect(&c, &got.0), None),
        });
    }
    Ok(cands)
}

/// Entries picked by the filters, ascending, and their token total when known without a look
/// at each (they are one list as stored).
type Picked = (Vec<u32>, Option<u64>);

/// The entries of `list` (none without one) and their token total, checked ascending and
/// within the shard's `n` entries.
fn list_entries(list: Option<&EntryList<'_>>, n: usize) -> Result<Picked, Error> {
    let Some(l) = list else {
        return Ok((Vec::new(), Some(0)));
    };
    // Copied whole, then checked in one pass without an early exit (both loops run on
    // vectors: a filter's list may hold most of a shard's entries).
    let out: Vec<u32> = l.iter().collect();
    let ascending = out.windows(2).fold(true, |ok, w| ok & (w[0] < w[1]));
    if !ascending || out.last().is_some_and(|&i| i as usize >= n) {
        return Err(corrupt());
    }
    Ok((out, Some(l.tokens)))
}

/// The values in both ascending lists, ascending and once each: the shorter one walked, each
/// of its values looked up in the longer by [`advance_to`].
fn intersect(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut rest = large;
    let mut last = None;
    small
        .iter()
        .copied()
        .filter(|&x| last.replace(x) != Some(x) && advance_to(&mut rest, x))
        .collect()
}

/// The term frequencies of `c` in [`Search::entry_tfs`].
fn entry_tf<'t>(tfs: &'t [u32], c: &EntryCand) -> &'t [u32] {
    let at = c.tf_at as usize;
    tfs.get(at..at + c.tf_len as usize).unwrap_or(&[])
}

fn corrupt() -> Error {
    Error::new(ErrorCode::IndexCorrupt, "a hot shard entry is out of range")
}

fn ce(e: sessiondex_core::Error) -> Error {
    core_error(&e)
}

fn has_structural(v: &ValidRecall) -> bool {
    let r = &v.request;
    r.role.is_some()
        || r.tool.is_some()
        || r.reference.is_some()
        || r.provider.is_some()
        || r.action.is_some()
        || r.outcome.is_some()
}

fn has_time(v: &ValidRecall) -> bool {
    v.since_ms.is_some() || v.until_ms.is_some()
}

/// True when every entry of a session passes the request's filters (no entry range, no
/// structural or time filter).
fn no_entry_filters(v: &ValidRecall) -> bool {
    let r = &v.request;
    v.entry_range.is_none()
        && r.outcome.is_none()
        && r.role.is_none()
        && r.tool.is_none()
        && r.reference.is_none()
        && r.provider.is_none()
        && r.action.is_none()
        && !has_time(v)
}

/// Adds an incomplete session's reasons to a recall's coverage. Every token of a cut entry
/// is posted: the cut alone loses nothing here (phrase and regex add it when they meet a cut
/// entry).
fn add_incomplete_reasons(coverage: &mut Coverage, e: &sessiondex_core::catalog::CatalogEntry) {
    for r in &e.summary.coverage.reasons {
        if r.code != reason::MAX_ENTRY_CHARS {
            coverage.add_reason(&r.code);
        }
    }
}

/// The sessions `cands` marks (a session past its end counts as marked), newest first as
/// [`Index::newest_first`] orders them. Few candidates (under a 64th of the sessions) are
/// found by a pass over `cands` and sorted by [`Index::newest_rank`]; more by filtering the
/// whole order, one look per session (sorting 400 of 4,212 by rank took three times as long).
///
/// `few`, when given, holds every marked session (and maybe some no longer marked): the
/// candidates are those of it still marked, and no pass over `cands` is made.
fn candidates_newest_first(index: &Index, cands: &[bool], few: Option<&[u32]>) -> Vec<usize> {
    let is_cand = |i: usize| cands.get(i).copied().unwrap_or(true);
    let n = index.entries().len();
    if let Some(few) = few.filter(|_| cands.len() >= n) {
        let mut picked: Vec<usize> = Vec::with_capacity(few.len());
        for &i in few {
            let i = i as usize;
            if i < n && is_cand(i) {
                picked.push(i);
            }
        }
        sort_newest_first(index, &mut picked);
        return picked;
    }
    let marked = cands.get(..n).unwrap_or(cands);
    let count = count_flags(marked) + n.saturating_sub(cands.len());
    if count < n / 64 {
        // Words of 8 flags with none set (most of them) are passed over whole.
        let mut picked: Vec<usize> = Vec::with_capacity(count);
        let mut words = marked.chunks_exact(8);
        for (w, word) in (&mut words).enumerate() {
            let mut bits = flag_word(word);
            while bits != 0 {
                picked.push(w * 8 + (bits.trailing_zeros() / 8) as usize);
                bits &= bits - 1;
            }
        }
        let tail = marked.len() - words.remainder().len();
        picked.extend(
            words
                .remainder()
                .iter()
                .enumerate()
                .filter(|(_, &c)| c)
                .map(|(j, _)| tail + j),
        );
        picked.extend(marked.len()..n);
        sort_newest_first(index, &mut picked);
        return picked;
    }
    // Every session is written and the candidates are kept (the write position moves by
    // one for a candidate): no branch to mispredict on flags set at random, as filtering
    // took.
    let order = index.newest_first();
    let mut picked = vec![0usize; order.len()];
    let mut kept = 0;
    for &i in order {
        let i = i as usize;
        if let Some(slot) = picked.get_mut(kept) {
            *slot = i;
        }
        kept += usize::from(is_cand(i));
    }
    picked.truncate(kept);
    picked
}

/// Sorts sessions newest first by [`Index::newest_rank`] (one sort for both ways of
/// [`candidates_newest_first`]: each sort of its own is kilobytes of the browser build).
fn sort_newest_first(index: &Index, sessions: &mut [usize]) {
    let rank = index.newest_rank();
    sessions.sort_unstable_by_key(|&i| rank.get(i).copied().unwrap_or(u32::MAX));
}

/// Eight flags (`c` holds 8) as the bytes of a word, each 0 or 1.
fn flag_word(c: &[bool]) -> u64 {
    let mut b = [0u8; 8];
    for (x, &f) in b.iter_mut().zip(c) {
        *x = u8::from(f);
    }
    u64::from_le_bytes(b)
}

/// How many of `flags` are set: words of 8 flags summed byte-wise (at most 255 words, so no
/// byte carries), then each sum's bytes added up (pairs of bytes first, into four 16-bit
/// lanes of at most 510, then the lanes).
fn count_flags(flags: &[bool]) -> usize {
    const BYTES: u64 = 0x00FF_00FF_00FF_00FF;
    let mut words = flags.chunks_exact(8);
    let mut count = 0usize;
    loop {
        let mut acc = 0u64;
        let mut k = 0;
        for w in (&mut words).take(255) {
            acc += flag_word(w);
            k += 1;
        }
        let pairs = (acc & BYTES) + ((acc >> 8) & BYTES);
        count += (pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48) as usize;
        if k < 255 {
            break;
        }
    }
    count + words.remainder().iter().filter(|&&c| c).count()
}

/// The most candidate cold sessions one call looks at ([`CANDIDATE_DIGEST_BUDGET`]; tests set
/// a smaller one).
fn digest_budget() -> usize {
    #[cfg(test)]
    if let Some(b) = prefilter_tests::DIGEST_BUDGET.with(std::cell::Cell::get) {
        return b;
    }
    CANDIDATE_DIGEST_BUDGET
}

/// Whether a recall over every session may count the sessions that are not candidates from
/// [`Index::session_totals`] instead of visiting each (tests turn it off to compare).
fn fast_totals_allowed() -> bool {
    #[cfg(test)]
    if prefilter_tests::VISIT_ALL.with(std::cell::Cell::get) {
        return false;
    }
    true
}

/// Per catalog session: whether it can hold a hit of a term query without entry filters,
/// from the catalog's merged maps: its vocabulary holds a query term (for fuzzy, a term of
/// the expansion over the merged vocabulary, kept in `s.fuzzy_groups`), or (an id-shaped
/// query) one of its ids shares the query's key. Every other session adds only its totals to
/// the BM25 statistics, so it need not be opened. `None` when every session must be searched
/// (no catalog, no terms, a fuzzy expansion cut by its cap, phrase or regex, entry filters,
/// field groups).
fn candidate_sessions<'a>(
    s: &mut Search<'a>,
    index: &'a Index,
) -> Result<Option<Vec<bool>>, Error> {
    #[cfg(test)]
    if prefilter_tests::EXHAUSTIVE.with(std::cell::Cell::get) {
        return Ok(None);
    }
    let Some(cat) = index.catalog() else {
        return Ok(None);
    };
    if !s.px.groups.is_all() || cat.len() != index.entries().len() {
        return Ok(None);
    }
    if s.v.entry_range.is_none() && !has_time(s.v) && has_structural(s.v) {
        let mut out = structural_sessions(s, cat)?;
        let narrow = match &s.matcher {
            Matcher::Terms {
                terms,
                fuzzy: false,
            } if !terms.is_empty() => Some(terms),
            _ => None,
        };
        if let Some(terms) = narrow {
            // A cold session holding no query term (and no id with the query's key) adds
            // one document to BM25's count whether it is a candidate or not, and nothing
            // else. A hot one stays: its filtered entries are BM25 documents.
            let mut holds = s.id_walk.clone().unwrap_or_else(|| vec![false; cat.len()]);
            for t in terms {
                mark(&mut holds, &cat.sessions_with(t).map_err(ce)?);
            }
            let flags = index.session_flags();
            for (i, o) in out.iter_mut().enumerate() {
                let cold = flags.get(i).is_some_and(|f| f & COLD != 0);
                if cold && !holds.get(i).copied().unwrap_or(true) {
                    *o = false;
                }
            }
        }
        return Ok(Some(out));
    }
    if !no_entry_filters(s.v) {
        return Ok(None);
    }
    if let Matcher::Phrase { tokens, phrase } = &s.matcher {
        if tokens.len() < 2 || !phrase.as_str().is_ascii() {
            return Ok(None);
        }
        let mut terms = ColdTerms::default();
        let (sessions, first, last) = phrase_cold_terms(&mut terms, index, cat, tokens)?;
        terms.seal(cat.len());
        s.phrase_terms = Some(terms);
        s.phrase_first = Some(first);
        s.phrase_last = last;
        return Ok(Some(sessions));
    }
    if let Matcher::Regex(re) = &s.matcher {
        let Some((sessions, terms, hot)) = regex_sessions(index, cat, re)? else {
            return Ok(None);
        };
        s.regex_terms = Some(terms);
        s.regex_hot = Some(hot);
        return Ok(Some(sessions));
    }
    let Matcher::Terms { terms, fuzzy } = &s.matcher else {
        return Ok(None);
    };
    if terms.is_empty() {
        return Ok(None);
    }
    let mut out = vec![false; cat.len()];
    if *fuzzy {
        let set = fst::Set::from(cat.terms().map_err(ce)?.into_fst());
        let mut groups = Vec::with_capacity(terms.len());
        for t in terms {
            let ex = fuzzy::expand(&set, t, &FuzzyOptions::default());
            if ex.truncated {
                // A shard's own expansion may keep terms this one cut.
                return Ok(None);
            }
            let group: Vec<String> = ex.terms.into_iter().map(|f| f.term).collect();
            for term in &group {
                mark(&mut out, &cat.sessions_with(term).map_err(ce)?);
            }
            groups.push(group);
        }
        s.fuzzy_groups = Some(groups);
    } else {
        // Kept for the cold notes (`cold_terms`), which need the same lists.
        let mut lists = Vec::with_capacity(terms.len());
        for t in terms {
            let list = cat.sessions_with(t).map_err(ce)?;
            mark(&mut out, &list);
            lists.push(list);
        }
        s.term_sessions = Some(lists);
    }
    let mut with_key = Vec::new();
    if let Some(key) = s.px.id_key() {
        with_key = cat.sessions_with_id_key(&key).map_err(ce)?;
        s.id_walk = Some(walk_set(cat.len(), &with_key));
        mark(&mut out, &with_key);
    }
    if let (false, Some(lists)) = (*fuzzy, &s.term_sessions) {
        let listed = lists.iter().map(Vec::len).sum::<usize>() + with_key.len();
        if listed < cat.len() / 64 {
            let mut few: Vec<u32> = Vec::with_capacity(listed);
            for list in lists {
                few.extend_from_slice(list);
            }
            few.extend_from_slice(&with_key);
            few.sort_unstable();
            few.dedup();
            s.marked_few = Some(few);
        }
    }
    Ok(Some(out))
}

/// A literal `all` query of two or more terms, with every session's totals at hand: a cold
/// candidate missing a term has no hit, and what a visit would add (one document of BM25's,
/// counted as every session not visited is, and a document for each term it holds) is
/// added here from the catalog's lists, so it is not visited. Hot candidates stay: their
/// entries holding one term count in that term's document frequency.
///
/// Costs the lists' lengths, not the catalog's: the sessions holding every term are the
/// lists' intersection, each list is walked beside it once, and the lists kept for the cold
/// notes ([`cold_terms`]) become the cold sessions of the intersection, the only ones whose
/// notes are read.
fn narrow_all(s: &mut Search<'_>, index: &Index, cands: &mut [bool]) {
    let (Some(lists), Matcher::Terms { fuzzy: false, .. }) = (&s.term_sessions, &s.matcher) else {
        return;
    };
    if s.v.matching != QueryMatch::All || lists.len() < 2 || s.id_walk.is_some() {
        return;
    }
    let flags = index.session_flags();
    let n = cands.len();
    let cold = |i: u32| (i as usize) < n && flags.get(i as usize).is_some_and(|f| f & COLD != 0);
    let mut every = lists[0].clone();
    for list in &lists[1..] {
        every = intersect(&every, list);
    }
    for (g, list) in lists.iter().enumerate() {
        let mut at = 0;
        let mut dropped = 0u64;
        for &i in list {
            while every.get(at).is_some_and(|&x| x < i) {
                at += 1;
            }
            if every.get(at) != Some(&i) && cold(i) {
                cands[i as usize] = false;
                dropped += 1;
            }
        }
        if let Some(df) = s.cold_df.get_mut(g) {
            *df += dropped;
        }
    }
    every.retain(|&i| cold(i));
    let k = lists.len();
    s.term_sessions = Some(vec![every; k]);
}

/// Per catalog session: whether it holds an id with the query's key, so its entries must be
/// compared one by one.
fn walk_set(n: usize, with_key: &[u32]) -> Vec<bool> {
    let mut w = vec![false; n];
    mark(&mut w, with_key);
    w
}

/// Sets the flags of the sessions `list` names (positions past `set` are ignored).
fn mark(set: &mut [bool], list: &[u32]) {
    for &i in list {
        if let Some(m) = set.get_mut(i as usize) {
            *m = true;
        }
    }
}

/// With structural filters (any query mode): the sessions holding a record with every
/// requested value (the catalog's field keys), and the sessions an id query's key names.
/// Any other session has no entry that passes the filters, so it adds nothing to the page or
/// to the BM25 statistics (`Search::filtered` tells the caller not to add its totals).
fn structural_sessions(
    s: &mut Search<'_>,
    cat: &sessiondex_core::catalog::Catalog<crate::index::Bytes>,
) -> Result<Vec<bool>, Error> {
    use sessiondex_core::catalog::{field_key, pair_key};
    let r = &s.v.request;
    let fields = [
        ("role", r.role.as_deref()),
        ("tool", r.tool.as_deref()),
        ("ref", r.reference.as_deref()),
        ("provider", r.provider.as_deref()),
        ("action", r.action.as_deref()),
        ("outcome", r.outcome.map(Outcome::as_str)),
    ];
    let set: Vec<(&str, &str)> = fields.iter().filter_map(|&(f, v)| Some((f, v?))).collect();
    // One filter: the sessions the catalog lists under the value have a record with it (its
    // field keys are its index file's). Two: those under the pair's key have a record holding
    // both (`fields` is in the key's order); those under each value alone may not. Either
    // way no digest needs reading to know a session is a candidate. Three or more: the
    // sessions under every value, each digest read later.
    let keys: Vec<String> = match set[..] {
        [(fa, va), (fb, vb)] => vec![pair_key(fa, va, fb, vb)],
        _ => set.iter().map(|&(f, v)| field_key(f, v)).collect(),
    };
    let mut out = vec![false; cat.len()];
    if let [key] = &keys[..] {
        // The sessions under the one key.
        mark(&mut out, &cat.sessions_with_id_key(key).map_err(ce)?);
    } else {
        let mut count = vec![0u8; cat.len()];
        for key in &keys {
            for i in cat.sessions_with_id_key(key).map_err(ce)? {
                if let Some(c) = count.get_mut(i as usize) {
                    *c = c.saturating_add(1);
                }
            }
        }
        let need = u8::try_from(keys.len()).unwrap_or(u8::MAX);
        for (o, c) in out.iter_mut().zip(count) {
            *o = c == need;
        }
    }
    if matches!(set.len(), 1 | 2) {
        s.structural_proven.clone_from(&out);
    }
    if let Some(key) = s.px.id_key() {
        let with_key = cat.sessions_with_id_key(&key).map_err(ce)?;
        mark(&mut out, &with_key);
        s.id_walk = Some(walk_set(cat.len(), &with_key));
    }
    s.filtered = true;
    Ok(out)
}

/// Sessions that can hold a match of a regex that never crosses a token boundary and never
/// matches empty text: such a match is a run of term characters, so it lies in one token, and
/// the token's term (the same characters lowered; the pattern ignores case) matches too. The
/// one character whose lowercase is two characters, `İ` (`i` and U+0307), can change word
/// boundaries: sessions with a term holding U+0307 are always searched. Any other regex is not
/// narrowed. Costs one pass over the merged vocabulary.
fn regex_sessions<'a>(
    index: &'a Index,
    cat: &sessiondex_core::catalog::Catalog<crate::index::Bytes>,
    re: &CompiledRegex,
) -> Result<Option<(Vec<bool>, RegexTerms<'a>, RegexHot)>, Error> {
    if re.can_span_tokens() || re.is_match_term(b"") {
        return Ok(None);
    }
    let mut out = vec![false; cat.len()];
    let mut found = Vec::new();
    let flags = index.session_flags();
    let mut hot = RegexHot {
        terms: PositionMap::default(),
        dotted: vec![false; cat.len()],
    };
    let list = index.term_list()?;
    // Only terms holding a literal every match holds, or U+0307, need a look; the others
    // count toward `since` through the term ends.
    let picks: Box<dyn Iterator<Item = usize>> = match re.required_literals() {
        Some(lits) => {
            // `is_match_term` looks for the literals itself: the terms that may hold one are
            // enough.
            let mut picks = list.maybe_holding(lits);
            picks.extend_from_slice(list.dotted());
            picks.sort_unstable();
            picks.dedup();
            Box::new(picks.into_iter())
        }
        None => Box::new(0..list.len()),
    };
    let mut last_end = 0usize;
    for k in picks {
        let Some((term, ord, end)) = list.get(k) else {
            continue;
        };
        let matched = re.is_match_term(term);
        if matched {
            if found.len() >= REGEX_NARROW_TERMS {
                // A broad pattern: most sessions match anyway, and keeping its terms would
                // cost memory; every session is searched as without the catalog.
                return Ok(None);
            }
            found.push((end - last_end, list.get_str(k).unwrap_or_default(), ord));
            last_end = end;
        }
        let dotted = list.dotted().binary_search(&k).is_ok();
        if matched || dotted {
            #[allow(clippy::cast_possible_truncation)]
            let pos = found.len().wrapping_sub(1) as u32;
            cat.each_session_at(ord, |i| {
                if let Some(m) = out.get_mut(i as usize) {
                    *m = true;
                }
                if dotted {
                    if let Some(d) = hot.dotted.get_mut(i as usize) {
                        *d = true;
                    }
                }
                if matched && flags.get(i as usize).is_some_and(|f| f & COLD == 0) {
                    hot.terms.entry(i).or_default().push(pos);
                }
            })
            .map_err(ce)?;
        }
    }
    let total = list.get(list.len().wrapping_sub(1)).map_or(0, |t| t.2);
    Ok(Some((out, (found, total - last_end), hot)))
}

/// A term of the merged vocabulary as a string, borrowed from the vocabulary: terms are
/// UTF-8, so the plain check (much cheaper than the lossy copy's scan by chunks) is all it
/// takes but on damage. A regex's matching terms are kept so (a copy of each was 5% of a
/// prefix regex's call); only a page's hits copy theirs.
fn term_str(term: &[u8]) -> Cow<'_, str> {
    std::str::from_utf8(term).map_or_else(|_| String::from_utf8_lossy(term), Cow::Borrowed)
}

/// A map keyed by catalog position, whose keys no caller chooses: natively hashed by a
/// multiply (SipHash was 12k of a prefix regex's 785k instructions a call).
#[cfg(not(target_arch = "wasm32"))]
type PositionMap<V> = rustc_hash::FxHashMap<u32, V>;
#[cfg(target_arch = "wasm32")]
type PositionMap<V> = HashMap<u32, V>;

/// For a regex narrowed through the catalog: per hot session (catalog position), the
/// positions in [`RegexTerms`] of the matching terms its vocabulary holds, and whether it
/// holds a term with U+0307 (such a session's entries are all searched).
#[derive(Debug)]
struct RegexHot {
    terms: PositionMap<Vec<u32>>,
    dotted: Vec<bool>,
}

/// Inside a hot shard, the entries (ascending) that can hold a match of a regex that never
/// crosses a token boundary (the rule of [`regex_sessions`] applied to the shard's postings): those
/// posting one of `terms`, the matching terms of its session's vocabulary, each given with the
/// matches the regex finds in it. Beside them, each entry's sum over its terms of the term's
/// frequency times its matches: the matches in the entry's stored text when
/// [`CompiledRegex::counts_by_terms`] holds and the text is ASCII and whole (see
/// [`Search::search_shard`]).
fn regex_entries<'t>(
    shard: &HotShard<Bytes>,
    terms: impl Iterator<Item = (&'t str, u32)>,
) -> Result<(Vec<u32>, Vec<u32>), Error> {
    let mut posted = Vec::new();
    for (t, n) in terms {
        let postings = shard.postings(t).map_err(ce)?;
        // Grown once per term, not a push at a time.
        posted.reserve(postings.len());
        for p in postings {
            posted.push((p.entry, p.tf.saturating_mul(n)));
        }
    }
    // The entries sorted alone, then each posting's count added to its entry's (one sort of
    // `u32`s, as elsewhere: the browser build keeps one copy of it).
    let mut entries: Vec<u32> = posted.iter().map(|&(i, _)| i).collect();
    entries.sort_unstable();
    entries.dedup();
    let mut counts = vec![0u32; entries.len()];
    for (i, n) in posted {
        if let Some(c) = entries
            .binary_search(&i)
            .ok()
            .and_then(|k| counts.get_mut(k))
        {
            *c = c.saturating_add(n);
        }
    }
    Ok((entries, counts))
}

/// Matching terms past which a regex is not narrowed.
const REGEX_NARROW_TERMS: usize = 50_000;

/// Terms of the merged vocabulary a regex matches, each with the term bytes streamed since
/// the previous one (itself included), and the bytes after the last: what the cold pass over
/// the same terms would have read, charged to the haystack budget in the same order.
type RegexTerms<'a> = (Vec<(usize, Cow<'a, str>, u64)>, usize);

/// Inside a hot shard, the entries (ascending) that can hold an ASCII phrase of two or more
/// tokens (the rule of [`phrase_cold_terms`] applied to the shard's postings; the first
/// token's when `first`, the session's terms that end with it, is known); `None` when every
/// entry is to be scanned. `last_terms`, the session's terms that begin with the last token,
/// when known and few ([`PHRASE_LAST_LOOKUPS`]), are looked up one by one instead of read
/// from a range of the shard's term map.
fn phrase_entries(
    shard: &HotShard<Bytes>,
    tokens: &[String],
    phrase: &str,
    first: Option<&[&str]>,
    last_terms: Option<&[&str]>,
) -> Result<Option<Vec<u32>>, Error> {
    use fst::{IntoStreamer, Streamer};
    #[cfg(test)]
    if prefilter_tests::EXHAUSTIVE.with(std::cell::Cell::get) {
        return Ok(None);
    }
    let (Some((last, inner)), true) = (tokens.split_last(), phrase.is_ascii()) else {
        return Ok(None);
    };
    if inner.is_empty() {
        return Ok(None);
    }
    // Sorted entry lists, intersected: the cost is the postings', not the shard's size.
    let mut acc: Option<Vec<u32>> = None;
    let mut keep = |list: Vec<u32>| {
        acc = Some(match acc.take() {
            None => list,
            Some(a) => intersect(&a, &list),
        });
    };
    for t in &inner[1..] {
        keep(shard.postings(t).map_err(ce)?.map(|p| p.entry).collect());
    }
    if let Some(first) = first.filter(|f| f.len() <= PHRASE_PREFIX_TERMS) {
        // Entries posting any of these terms.
        let mut any = Vec::new();
        for &t in first {
            any.extend(shard.postings(t).map_err(ce)?.map(|p| p.entry));
        }
        any.sort_unstable();
        any.dedup();
        keep(any);
    }
    let mut seen = Vec::new();
    // A few terms are looked up one by one (a lookup costs about as much as opening the
    // range, and a term read from the range a third of that): the same terms as the range's,
    // since the catalog lists each session's vocabulary.
    if let Some(terms) = last_terms.filter(|t| t.len() <= PHRASE_LAST_LOOKUPS) {
        for &t in terms {
            seen.extend(shard.postings(t).map_err(ce)?.map(|p| p.entry));
        }
    } else {
        let map = shard.terms().map_err(ce)?;
        let mut upper = last.as_bytes().to_vec();
        upper.push(0xff);
        let mut stream = map.range().ge(last.as_bytes()).lt(&upper).into_stream();
        let mut terms = 0usize;
        while let Some((_, ord)) = stream.next() {
            terms += 1;
            if terms > PHRASE_PREFIX_TERMS {
                return Ok(None);
            }
            seen.extend(shard.postings_at(ord).map_err(ce)?.map(|p| p.entry));
        }
    }
    seen.sort_unstable();
    seen.dedup();
    keep(seen);
    Ok(acc)
}

/// The entries `mask` keeps, ascending: with `cand` (a phrase's or regex's candidates,
/// ascending), only those among them, after [`note_cut_outside`].
fn kept_entries(
    coverage: &mut Coverage,
    shard: &HotShard<Bytes>,
    mask: &Mask,
    cand: Option<&[u32]>,
) -> Result<Vec<usize>, Error> {
    let kept = |i: &usize| mask.holds(*i);
    Ok(match cand {
        Some(c) => {
            note_cut_outside(coverage, shard, mask, c)?;
            c.iter().map(|&i| i as usize).filter(kept).collect()
        }
        None => mask.kept().collect(),
    })
}

/// Drops the values of the ascending `list` below `x` and answers whether `x` is the first one
/// left: a galloping search, so a walk of ascending `x` costs about the shorter of the two
/// lists (a filter may keep many more entries than a rare term posts, or far fewer than a
/// common one).
fn advance_to(list: &mut &[u32], x: u32) -> bool {
    let l = *list;
    if l.first().is_none_or(|&f| f >= x) {
        return l.first() == Some(&x);
    }
    // l[0] < x: find a bound `hi` with l[hi] >= x (or the end), doubling.
    let mut hi = 1;
    while l.get(hi).is_some_and(|&v| v < x) {
        hi *= 2;
    }
    let lo = hi / 2;
    let hi = hi.min(l.len());
    let at = lo + l.get(lo..hi).map_or(0, |w| w.partition_point(|&v| v < x));
    *list = l.get(at..).unwrap_or_default();
    list.first() == Some(&x)
}

/// At most this many term groups, each of one term, have their postings merged instead of
/// sorted as triples ([`Search::search_shard`]).
const MERGED_GROUPS: usize = 8;

/// The entries of a shard that passed the filters: all of them (no filter, nothing to
/// allocate and clear for each query), or those listed, ascending (a list, not a flag per
/// entry: a filter keeps few of a shard's thousands, and the flags were an allocation and a
/// clear of the whole shard for each query).
enum Mask<'k> {
    All(usize),
    Listed(&'k [u32]),
}

impl Mask<'_> {
    fn holds(&self, i: usize) -> bool {
        match self {
            Mask::All(n) => i < *n,
            Mask::Listed(v) => u32::try_from(i).is_ok_and(|i| v.binary_search(&i).is_ok()),
        }
    }

    /// The entries kept, ascending.
    fn kept(&self) -> impl Iterator<Item = usize> + '_ {
        let (all, listed) = match self {
            Mask::All(n) => (0..*n, &[][..]),
            Mask::Listed(v) => (0..0, *v),
        };
        all.chain(listed.iter().map(|&i| i as usize))
    }

    /// The entries listed, when not all are kept.
    fn listed(&self) -> Option<&[u32]> {
        match self {
            Mask::All(_) => None,
            Mask::Listed(v) => Some(v),
        }
    }
}

/// Notes `max_entry_chars` when an entry that `mask` keeps, outside the ascending
/// `cands`, was cut: a scan of it would have reported the cut (no match can lie past it,
/// since every token is posted). Skipped when the call has the reason already or the shard
/// has no cut entry (its summary counts them).
fn note_cut_outside(
    coverage: &mut Coverage,
    shard: &HotShard<Bytes>,
    mask: &Mask,
    cands: &[u32],
) -> Result<(), Error> {
    if shard.summary().coverage.count(reason::MAX_ENTRY_CHARS) == 0
        || coverage
            .reasons
            .iter()
            .any(|r| r == reason::MAX_ENTRY_CHARS)
    {
        return Ok(());
    }
    let mut c = cands.iter().map(|&x| x as usize).peekable();
    for i in mask.kept() {
        while c.next_if(|&x| x < i).is_some() {}
        if c.peek() == Some(&i) {
            continue;
        }
        if shard.entry(i).ok_or_else(corrupt)?.truncated() {
            coverage.add_reason(reason::MAX_ENTRY_CHARS);
            break;
        }
    }
    Ok(())
}

/// Terms a phrase's last token may begin that the narrowing looks up at most.
const PHRASE_PREFIX_TERMS: usize = 2_000;

/// At most this many terms beginning with a phrase's last token are looked up one by one in
/// a hot shard; more are read from a range of its term map.
const PHRASE_LAST_LOOKUPS: usize = 2;

impl<'a> Search<'a> {
    /// The call's epoch: the index's watch is drained when the call first looks at a kept
    /// file, so every change on disk before that is seen ([`Index::call_epoch`]).
    fn epoch(&self, index: &Index) -> Option<crate::index::Epoch> {
        *self.epoch.get_or_init(|| index.call_epoch())
    }

    fn passes(
        &self,
        e: &HotEntry<'_>,
        shard: &HotShard<Bytes>,
        f: &mut EntryFilters<'_>,
    ) -> Result<bool, Error> {
        let r = &self.v.request;
        if let Some((a, b)) = self.v.entry_range {
            if e.index() < a || e.index() > b {
                return Ok(false);
            }
        }
        let outcome_ok = match r.outcome {
            None => true,
            Some(o) => e.outcome().map_err(ce)? == Some(o),
        };
        let ok = outcome_ok && f.passes(e, shard)?;
        Ok(ok && self.passes_time(e))
    }

    /// Whether `e` passes the request's time filters (always without them).
    fn passes_time(&self, e: &HotEntry<'_>) -> bool {
        if !has_time(self.v) {
            return true;
        }
        e.timestamp_ms().is_some_and(|t| {
            !(self.v.since_ms.is_some_and(|s| t < s) || self.v.until_ms.is_some_and(|u| t > u))
        })
    }

    /// Whether entry `i` of a filtered walk is a document of the search (its filters, its
    /// pairing, the precision groups); counts it into the BM25 statistics when it is.
    /// With `pairing`, a result record with a call id that passes the filters is put aside
    /// there (false here), for [`Search::admit_passed`] once its call is known absent.
    fn admit(
        &mut self,
        shard: &HotShard<Bytes>,
        i: usize,
        filters: &mut EntryFilters<'_>,
        walk: &Walk,
        picked: bool,
        pairing: &mut Option<&mut Pairing>,
    ) -> Result<bool, Error> {
        let e = shard.entry(i).ok_or_else(corrupt)?;
        // The filters first: most entries fail them, and then need no pairing look. An entry
        // `filter_candidates` picked passed the outcome and string filters already.
        let passes = if picked {
            self.passes_time(&e)
        } else {
            self.passes(&e, shard, filters)?
        };
        if !passes {
            return Ok(false);
        }
        if let Some(p) = pairing {
            if let Some(id) = e.string_id(StrField::CallId).map_err(ce)? {
                // The kind is required: an absent one is a damaged shard.
                let kind = e
                    .string_id(StrField::Kind)
                    .map_err(ce)?
                    .ok_or_else(corrupt)?;
                if !p.memo.passes(&mut p.call_kind, shard, Some(kind))? {
                    p.results
                        .push((u32::try_from(i).map_err(|_| corrupt())?, id));
                    return Ok(false);
                }
                p.calls.push(id);
            }
        }
        self.admit_passed(&e, walk)
    }

    /// The rest of [`Search::admit`] for an entry that passed the filters and the pairing.
    fn admit_passed(&mut self, e: &HotEntry<'_>, walk: &Walk) -> Result<bool, Error> {
        if walk.walk_ids {
            // Else no id of the session has the query's key (as for an unfiltered walk).
            self.px.note_entry(walk.slot, e)?;
        }
        if !self.px.allows(e)? {
            return Ok(false);
        }
        self.docs += 1;
        self.total_len += u64::from(e.token_len());
        Ok(true)
    }

    /// Adds a candidate entry of `slot` with its term frequencies (none without a query).
    fn push_entry(&mut self, slot: usize, entry: u32, len: u32, weight: f32, tf: &[u32]) {
        if self.entries.len() >= CANDIDATE_ENTRY_BUDGET {
            self.coverage.add_reason(reason::CANDIDATE_ENTRY_BUDGET);
            return;
        }
        #[allow(clippy::cast_possible_truncation)]
        let c = EntryCand {
            slot,
            entry,
            // At most the budget's candidates times the query's terms.
            tf_at: self.entry_tfs.len() as u32,
            tf_len: tf.len() as u32,
            len,
            weight,
        };
        self.entry_tfs.extend_from_slice(tf);
        self.entries.push(c);
    }

    /// Room for `most` more candidate entries of `per` frequencies each, within the budget,
    /// when `most` is exact or close (a shard's found entries, a term's postings): reserved
    /// once per shard, not grown a push at a time. Not for a bound that may be far above what
    /// is pushed (the postings of several terms, which overlap): a reallocation copies the
    /// whole capacity, and reserving that much copied more than growing did.
    fn reserve_entries(&mut self, most: usize, per: usize) {
        let most = most.min(CANDIDATE_ENTRY_BUDGET.saturating_sub(self.entries.len()));
        self.entries.reserve(most);
        self.entry_tfs.reserve(most.saturating_mul(per));
    }

    /// Pushes the entries of one term's `postings` that `keep` keeps (asked in ascending
    /// entry order; at most `most` of them), each with its frequency: the one-term path of
    /// [`Search::search_shard`].
    fn push_postings(
        &mut self,
        slot: usize,
        shard: &HotShard<Bytes>,
        postings: hot::Postings<'_>,
        most: usize,
        mut keep: impl FnMut(u32) -> bool,
    ) -> Result<(), Error> {
        // At most `most` entries: reserved once.
        self.reserve_entries(most, 1);
        let ops = self.v.operations_requested;
        // Each posting's length and class read from their columns, cut once.
        let stats = shard.entry_stats().map_err(ce)?;
        let n_entries = shard.entry_count();
        let mut postings = postings.peekable();
        while let Some(p) = postings.next() {
            let mut n = p.tf;
            while let Some(q) = postings.next_if(|q| q.entry == p.entry) {
                n = n.saturating_add(q.tf);
            }
            if n == 0 || !keep(p.entry) {
                continue;
            }
            self.df[0] += 1;
            let i = p.entry as usize;
            if i >= n_entries {
                return Err(corrupt());
            }
            let w = provenance_weight(stats.class(i).map_err(ce)?, ops);
            self.push_entry(slot, p.entry, stats.token_len(i), w, &[n]);
        }
        Ok(())
    }

    /// Pushes the entries of `held` (every entry of the shard below it is kept) that post
    /// every term of `lists` (one list per group, at most [`MERGED_GROUPS`]), each with its
    /// frequencies, and counts each term's documents: the path of `all` without filters of
    /// [`Search::search_shard`]. Every entry is kept, so a term's documents are its postings,
    /// and only the entries of the shortest list can hold every term: that list is walked
    /// and each of its entries sought in the others ([`hot::Postings::seek`]), instead of
    /// merging every posting. Not inlined: `search_shard`'s merge of `any` ran 5% slower
    /// with this inside it.
    #[inline(never)]
    fn intersect_all(
        &mut self,
        slot: usize,
        shard: &HotShard<Bytes>,
        lists: &mut [hot::Postings<'_>],
        held: usize,
    ) -> Result<(), Error> {
        let ops = self.v.operations_requested;
        let stats = shard.entry_stats().map_err(ce)?;
        let ng = lists.len();
        for (df, l) in self.df.iter_mut().zip(lists.iter()) {
            *df += l.len() as u64;
        }
        let short = (0..ng).min_by_key(|&g| lists[g].len()).unwrap_or_default();
        let Some(driver) = lists.get(short).cloned() else {
            return Ok(());
        };
        'entries: for p in driver {
            let mut tf = [0u32; MERGED_GROUPS];
            for (g, (list, t)) in lists.iter_mut().zip(&mut tf).enumerate() {
                if g == short {
                    *t = p.tf;
                    continue;
                }
                match list.seek(p.entry) {
                    Some(q) if q.entry == p.entry => *t = q.tf,
                    Some(_) => continue 'entries,
                    None => break 'entries,
                }
            }
            // The caller merges at most `MERGED_GROUPS` lists.
            let tf = &tf[..ng.min(MERGED_GROUPS)];
            if p.entry as usize >= held || tf.contains(&0) {
                continue;
            }
            let i = p.entry as usize;
            let w = provenance_weight(stats.class(i).map_err(ce)?, ops);
            self.push_entry(slot, p.entry, stats.token_len(i), w, tf);
        }
        Ok(())
    }

    /// One entry of a shard's merged postings lists, with its frequency in each group
    /// (`tf`): when the mask holds it (`listed`, the mask's list from this entry on, is
    /// advanced past it), counted in each group's document frequency, and a candidate
    /// when the groups found match the query. `stats` are the shard's, with its entry
    /// count (an entry past it is damage). Generic over the frequencies' type: two terms'
    /// array gives a copy whose length is known when compiled, so the loops over them unroll
    /// and their copy is one store (a slice's length is the query's, and it was copied by a
    /// call to `memcpy`).
    #[inline]
    fn merged_entry<T: AsRef<[u32]> + ?Sized>(
        &mut self,
        slot: usize,
        (stats, n_entries): &(hot::EntryStats<'_>, usize),
        mask: &Mask<'_>,
        listed: &mut Option<&[u32]>,
        entry: u32,
        tf: &T,
    ) -> Result<(), Error> {
        let tf = tf.as_ref();
        let held = match listed {
            None => mask.holds(entry as usize),
            Some(l) => advance_to(l, entry),
        };
        if !held {
            return Ok(());
        }
        for (df, &n) in self.df.iter_mut().zip(tf) {
            if n > 0 {
                *df += 1;
            }
        }
        if terms_match(tf.iter().map(|&n| n > 0), self.v.matching) {
            let i = entry as usize;
            if i >= *n_entries {
                return Err(corrupt());
            }
            let w = provenance_weight(stats.class(i).map_err(ce)?, self.v.operations_requested);
            self.push_entry(slot, entry, stats.token_len(i), w, tf);
        }
        Ok(())
    }

    /// The term frequencies of a candidate entry, one per query term group.
    fn tf(&self, c: &EntryCand) -> &[u32] {
        entry_tf(&self.entry_tfs, c)
    }

    #[allow(clippy::too_many_lines)]
    /// Searches one hot shard; `walk_ids`: its entries may be named by an id query (else
    /// the catalog said no id of the session has the query's key). `bufs` are the call's,
    /// passed from shard to shard.
    fn search_shard(
        &mut self,
        slot: usize,
        catalog: Option<usize>,
        shard: &HotShard<Bytes>,
        walk_ids: bool,
        bufs: &mut ShardBufs<'a>,
    ) -> Result<(), Error> {
        let n = shard.entry_count();
        let mask;
        // With an outcome filter and no query, one failed call is one hit: a result record
        // whose call is in the shard defers to the call (both carry the paired outcome). With
        // a query the result stays searchable, since the output is where the words are.
        // Values are compared as ids of the shard's string table (each decoded once). The
        // results that pass the filters are put aside during the walk, and one pass over the
        // call id column after it finds which of their calls the shard holds.
        // Without entry filters every entry passes: the mask and the BM25 statistics come from
        // the shard's totals, not from a walk over its entries (a rare term then costs its
        // postings, not the shard's size).
        let unfiltered = no_entry_filters(self.v)
            && self.px.groups.is_all()
            && !(self.px.notes_entries() && walk_ids);
        if unfiltered {
            mask = Mask::All(n);
            self.docs += n as u64;
            self.total_len += shard.total_tokens();
        } else {
            let v = self.v;
            let mut pairing =
                if v.request.outcome.is_some() && matches!(self.matcher, Matcher::None) {
                    let p = bufs.pairing.get_or_insert_with(Pairing::new);
                    p.clear();
                    Some(p)
                } else {
                    None
                };
            let filters = bufs.filters.get_or_insert_with(|| EntryFilters::new(v));
            filters.clear();
            let walk = Walk { slot, walk_ids };
            let mut kept = std::mem::take(&mut bufs.kept);
            kept.clear();
            match filter_candidates(self.v, shard, filters)? {
                // What `admit` does for each picked entry when it has no time to check, no
                // pairing, no id to note and no field group to look at: each is a document
                // of BM25's, their lengths the list's stored total (one list) or read from
                // the column.
                Some((cands, tokens))
                    if pairing.is_none()
                        && !has_time(self.v)
                        && !(walk_ids && self.px.notes_entries())
                        && self.px.groups.is_all() =>
                {
                    match tokens {
                        Some(t) => self.total_len += t,
                        None => {
                            let stats = shard.entry_stats().map_err(ce)?;
                            for &i in &cands {
                                self.total_len += u64::from(stats.token_len(i as usize));
                            }
                        }
                    }
                    self.docs += cands.len() as u64;
                    kept = cands;
                }
                Some((cands, _)) => {
                    for i in cands {
                        if self.admit(shard, i as usize, filters, &walk, true, &mut pairing)? {
                            kept.push(i);
                        }
                    }
                }
                None => {
                    for i in 0..n {
                        if self.admit(shard, i, filters, &walk, false, &mut pairing)? {
                            kept.push(u32::try_from(i).map_err(|_| corrupt())?);
                        }
                    }
                }
            }
            if let Some(p) = pairing.take().filter(|p| !p.results.is_empty()) {
                let calls = p.calls_held(shard, self.v.request.outcome)?;
                for &(i, id) in &p.results {
                    if calls.binary_search(&id).is_err() {
                        let e = shard.entry(i as usize).ok_or_else(corrupt)?;
                        if self.admit_passed(&e, &walk)? {
                            kept.push(i);
                        }
                    }
                }
                kept.sort_unstable();
            }
            // Ascending and unique as built: the stored lists are checked so, the walk goes in
            // order, the put-aside results join sorted (no pass over a filter's many kept
            // entries to check or sort them again).
            debug_assert!(kept.windows(2).all(|w| w[0] < w[1]));
            if kept.last().is_some_and(|&i| i as usize >= n) {
                return Err(corrupt());
            }
            bufs.kept = kept;
            mask = Mask::Listed(&bufs.kept);
        }
        let ops = self.v.operations_requested;
        let weight = |e: &HotEntry<'_>| -> Result<f32, Error> {
            Ok(provenance_weight(e.class().map_err(ce)?, ops))
        };
        match &self.matcher {
            Matcher::None => {
                let all: Vec<u32>;
                let picked = match mask.listed() {
                    Some(a) => a,
                    None => {
                        all = (0..u32::try_from(n).map_err(|_| corrupt())?).collect();
                        &all
                    }
                };
                self.reserve_entries(picked.len(), 0);
                // Each entry's length and class read from their columns, cut once (not an
                // entry's view and its column lookups for each).
                let stats = shard.entry_stats().map_err(ce)?;
                for &i in picked {
                    let at = i as usize;
                    if at >= n {
                        return Err(corrupt());
                    }
                    let w = provenance_weight(stats.class(at).map_err(ce)?, ops);
                    self.push_entry(slot, i, stats.token_len(at), w, &[]);
                }
            }
            Matcher::Terms { terms, fuzzy } => {
                let ng = terms.len();
                let own: Vec<Vec<String>>;
                // Taken for the shard and put back below (an error ends the call anyway).
                let shared_groups = self.fuzzy_groups.take();
                let literal = (shared_groups.is_none() && !*fuzzy).then(|| {
                    self.literal_groups
                        .take()
                        .unwrap_or_else(|| terms.iter().map(|t| vec![t.clone()]).collect())
                });
                let groups: &[Vec<String>] = if let Some(g) = &shared_groups {
                    g
                } else if let Some(g) = &literal {
                    g
                } else {
                    // A fuzzy query's own expansion over this shard's terms.
                    own = {
                        let set = fst::Set::from(shard.terms().map_err(ce)?.into_fst());
                        let mut out = Vec::with_capacity(ng);
                        for t in terms {
                            let ex = fuzzy::expand(&set, t, &FuzzyOptions::default());
                            if ex.truncated {
                                self.coverage.add_reason(reason::FUZZY_EXPANSION_LIMIT);
                            }
                            out.push(ex.terms.into_iter().map(|f| f.term).collect());
                        }
                        out
                    };
                    &own
                };
                let shared = shared_groups.is_some();
                #[cfg(test)]
                let one_term = !prefilter_tests::TRIPLES.with(std::cell::Cell::get);
                #[cfg(not(test))]
                let one_term = true;
                if let ([group], true, true) = (groups, one_term, self.px.groups.is_all()) {
                    if let [term] = group.as_slice() {
                        // One term: its postings are the entries, in order, each with its
                        // frequency (those the filters kept, when they listed some); no
                        // triples to sort and group. With some field groups only, the
                        // triples' pass counts each entry's frequencies in those groups.
                        let postings = shard.postings(term).map_err(ce)?;
                        if (!shared || !postings.is_empty())
                            && !self.highlight.contains(term.as_str())
                        {
                            self.highlight.insert(term.clone());
                        }
                        // Two loops, one without a check per posting.
                        match mask.listed() {
                            None => {
                                let most = postings.len();
                                self.push_postings(slot, shard, postings, most, |_| true)?;
                            }
                            Some(mut l) => {
                                let most = postings.len().min(l.len());
                                self.push_postings(slot, shard, postings, most, |e| {
                                    advance_to(&mut l, e)
                                })?;
                            }
                        }
                        self.fuzzy_groups = shared_groups;
                        self.literal_groups = literal;
                        return Ok(());
                    }
                }
                if ng <= MERGED_GROUPS
                    && one_term
                    && self.px.groups.is_all()
                    && groups.iter().all(|g| g.len() == 1)
                {
                    // A term per group, at most a few: the postings lists, each ascending,
                    // are merged a smallest entry at a time (what the triples' sort below
                    // makes of them, without the triples or the sort). The lists stay on the
                    // stack (a vector of them was an allocation per shard and call).
                    let mut all: [hot::Postings<'_>; MERGED_GROUPS] = Default::default();
                    let mut n_lists = 0;
                    for group in groups {
                        let Some(term) = group.first() else { continue };
                        let postings = shard.postings(term).map_err(ce)?;
                        if (!shared || !postings.is_empty())
                            && !self.highlight.contains(term.as_str())
                        {
                            self.highlight.insert(term.clone());
                        }
                        // `ng` is at most `MERGED_GROUPS`: every list has its place.
                        if let Some(list) = all.get_mut(n_lists) {
                            *list = postings;
                            n_lists += 1;
                        }
                    }
                    let lists = &mut all[..n_lists];
                    if let (QueryMatch::All, Mask::All(held), [_, _, ..]) =
                        (self.v.matching, &mask, &*lists)
                    {
                        self.intersect_all(slot, shard, lists, *held)?;
                        self.fuzzy_groups = shared_groups;
                        self.literal_groups = literal;
                        return Ok(());
                    }
                    let stats = (shard.entry_stats().map_err(ce)?, shard.entry_count());
                    // The entries merge ascending: each is looked up in the listed ones
                    // after the last ([`advance_to`]).
                    let mut listed = mask.listed();
                    // Two terms, natively: two heads, no loops over the lists (the browser
                    // build takes the loop: its size budget, docs/wasm.md).
                    let two = ng == 2 && !cfg!(target_arch = "wasm32");
                    if let ([a, b], true) = (&mut *lists, two) {
                        let (mut ha, mut hb) = (a.next(), b.next());
                        loop {
                            let entry = match (ha, hb) {
                                (Some(x), Some(y)) => x.entry.min(y.entry),
                                (Some(x), None) => x.entry,
                                (None, Some(y)) => y.entry,
                                (None, None) => break,
                            };
                            let mut tf = [0u32; 2];
                            while let Some(p) = ha.filter(|p| p.entry == entry) {
                                tf[0] = tf[0].saturating_add(p.tf);
                                ha = a.next();
                            }
                            while let Some(p) = hb.filter(|p| p.entry == entry) {
                                tf[1] = tf[1].saturating_add(p.tf);
                                hb = b.next();
                            }
                            self.merged_entry(slot, &stats, &mask, &mut listed, entry, &tf)?;
                        }
                    } else {
                        let mut heads = [None; MERGED_GROUPS];
                        for (h, l) in heads.iter_mut().zip(&mut *lists) {
                            *h = l.next();
                        }
                        let heads = &mut heads[..lists.len()];
                        while let Some(entry) = heads.iter().flatten().map(|p| p.entry).min() {
                            let mut tf = [0u32; MERGED_GROUPS];
                            for ((head, list), t) in heads.iter_mut().zip(&mut *lists).zip(&mut tf)
                            {
                                while let Some(p) = head.filter(|p| p.entry == entry) {
                                    *t = t.saturating_add(p.tf);
                                    *head = list.next();
                                }
                            }
                            let tf = &tf[..ng];
                            self.merged_entry(slot, &stats, &mask, &mut listed, entry, tf)?;
                        }
                    }
                    self.fuzzy_groups = shared_groups;
                    self.literal_groups = literal;
                    return Ok(());
                }
                // (entry, group, tf) of every kept posting, then put in entry order: a sort
                // of plain triples, not a map insert per posting. Postings of one term come
                // sorted already, so the stable sort, which finds runs, merges them.
                let mut hits = std::mem::take(&mut self.hits_buf);
                hits.clear();
                for (g, group) in groups.iter().enumerate() {
                    for term in group {
                        let postings = shard.postings(term).map_err(ce)?;
                        // A shared expansion holds terms this shard lacks: only its own
                        // terms are highlighted, as with the shard's own expansion.
                        if (!shared || !postings.is_empty())
                            && !self.highlight.contains(term.as_str())
                        {
                            self.highlight.insert(term.clone());
                        }
                        hits.reserve(postings.len());
                        #[allow(clippy::cast_possible_truncation)]
                        hits.extend(
                            postings
                                .filter(|p| mask.holds(p.entry as usize))
                                .map(|p| (p.entry, g as u32, p.tf)),
                        );
                    }
                }
                hits.sort_by_key(|h| h.0);
                let stats = shard.entry_stats().map_err(ce)?;
                // One entry's run of hits at a time, its frequencies summed per group.
                // Few groups are counted in a buffer of fixed size, cleared by a store or
                // two instead of a call to clear memory for every entry.
                let mut few = [0u32; 8];
                let mut many = vec![0u32; if ng > few.len() { ng } else { 0 }];
                let mut at = 0;
                while let Some(&(entry, _, _)) = hits.get(at) {
                    let tf: &mut [u32] = if ng <= few.len() {
                        few = [0; 8];
                        &mut few[..ng]
                    } else {
                        many.fill(0);
                        &mut many
                    };
                    while let Some(&(_, g, n)) = hits.get(at).filter(|h| h.0 == entry) {
                        if let Some(t) = tf.get_mut(g as usize) {
                            *t = t.saturating_add(n);
                        }
                        at += 1;
                    }
                    let restricted;
                    let tf: &[u32] = if self.px.groups.is_all() {
                        tf
                    } else {
                        let e = shard.entry(entry as usize).ok_or_else(corrupt)?;
                        restricted = crate::fields::Parts::of(&e).map_err(ce)?.restrict(
                            self.px.groups,
                            groups,
                            tf,
                        );
                        &restricted
                    };
                    for (g, &n) in tf.iter().enumerate() {
                        if n > 0 {
                            self.df[g] += 1;
                        }
                    }
                    if terms_match(tf.iter().map(|&n| n > 0), self.v.matching) {
                        let i = entry as usize;
                        if i >= shard.entry_count() {
                            return Err(corrupt());
                        }
                        let w = provenance_weight(stats.class(i).map_err(ce)?, ops);
                        self.push_entry(slot, entry, stats.token_len(i), w, tf);
                    }
                }
                self.hits_buf = hits;
                self.fuzzy_groups = shared_groups;
                self.literal_groups = literal;
            }
            Matcher::Phrase { phrase, tokens } => {
                let [first, last] =
                    [&self.phrase_first, &self.phrase_last].map(|t| match (t, catalog) {
                        (Some(t), Some(ci)) => Some(t.of(ci)),
                        _ => None,
                    });
                let cand = phrase_entries(
                    shard,
                    tokens,
                    phrase.as_str(),
                    first.as_deref(),
                    last.as_deref(),
                )?;
                let mut found = Vec::new();
                for i in kept_entries(&mut self.coverage, shard, &mask, cand.as_deref())? {
                    let e = shard.entry(i).ok_or_else(corrupt)?;
                    // The stored bytes: an ASCII text is not checked as UTF-8 first, as the
                    // pass that lowers it learns it is ASCII (other text is checked). The
                    // browser build checks every text first (its size budget).
                    #[cfg(not(target_arch = "wasm32"))]
                    let count = {
                        let g = self.px.groups;
                        let not_utf8 =
                            || Error::new(ErrorCode::IndexCorrupt, "a stored text is not UTF-8");
                        let mut count = 0;
                        let class = e.class().map_err(ce)?;
                        if g.contains(crate::request::FieldGroup::of_class(class)) {
                            let text = e.text_bytes().map_err(ce)?;
                            count += phrase.count_bytes(text, MAX_SPANS).ok_or_else(not_utf8)?;
                        }
                        if g.contains(crate::request::FieldGroup::Thinking) {
                            if let Some(th) = e.thinking_bytes().map_err(ce)? {
                                count += phrase.count_bytes(th, MAX_SPANS).ok_or_else(not_utf8)?;
                            }
                        }
                        count
                    };
                    #[cfg(target_arch = "wasm32")]
                    let count = {
                        let p = crate::fields::Parts::of(&e).map_err(ce)?;
                        let mut count = 0;
                        if p.text_allowed(self.px.groups) {
                            count += phrase.count(p.text, MAX_SPANS);
                        }
                        if let (true, Some(th)) = (p.thinking_allowed(self.px.groups), p.thinking) {
                            count += phrase.count(th, MAX_SPANS);
                        }
                        count
                    };
                    if count == 0 && e.truncated() {
                        // The phrase may lie past the stored cut.
                        self.coverage.add_reason(reason::MAX_ENTRY_CHARS);
                    }
                    if count > 0 {
                        found.push((i, count, e.token_len(), weight(&e)?));
                    }
                }
                self.reserve_entries(found.len(), 1);
                for (i, count, len, w) in found {
                    self.df[0] += 1;
                    self.push_entry(slot, i as u32, len, w, &[count as u32]);
                }
            }
            Matcher::Regex(re) => {
                // Narrowed through the catalog: only entries posting a matching term of this
                // session can hold a match (every token is posted, past a stored cut too).
                let narrowed = match (&self.regex_hot, &self.regex_terms, catalog) {
                    (Some(hot), Some((found, _)), Some(ci))
                        if !hot.dotted.get(ci).copied().unwrap_or(true) =>
                    {
                        let ids = u32::try_from(ci)
                            .ok()
                            .and_then(|c| hot.terms.get(&c))
                            .map_or(&[][..], Vec::as_slice);
                        let by_terms = re.counts_by_terms();
                        if by_terms && self.regex_term_matches.len() != found.len() {
                            self.regex_term_matches = vec![0; found.len()];
                        }
                        let matches = &mut self.regex_term_matches;
                        Some(regex_entries(
                            shard,
                            ids.iter().filter_map(|&k| {
                                let t: &str = &found.get(k as usize)?.1;
                                let n = if by_terms {
                                    let n = matches.get_mut(k as usize)?;
                                    if *n == 0 {
                                        *n = u32::try_from(re.count_matches(t, MAX_SPANS))
                                            .unwrap_or(u32::MAX)
                                            .max(1);
                                    }
                                    *n
                                } else {
                                    0
                                };
                                Some((t, n))
                            }),
                        )?)
                    }
                    _ => None,
                };
                let (cand, counts) = narrowed.unzip();
                let (mut cand_left, mut counts_left) = (
                    cand.as_deref().unwrap_or_default(),
                    counts.as_deref().unwrap_or_default(),
                );
                let kept = kept_entries(&mut self.coverage, shard, &mask, cand.as_deref())?;
                let mut found = Vec::with_capacity(kept.len());
                for i in kept {
                    if self.regex_stopped {
                        break;
                    }
                    let e = shard.entry(i).ok_or_else(corrupt)?;
                    // The matches the postings count, when they are the stored text's (the kept
                    // entries are ascending, among the candidates).
                    let skip = cand_left.partition_point(|&k| (k as usize) < i);
                    cand_left = cand_left.get(skip..).unwrap_or_default();
                    counts_left = counts_left.get(skip..).unwrap_or_default();
                    let n = match (cand_left.first(), counts_left.first()) {
                        (Some(&k), Some(&n)) if k as usize == i => n,
                        _ => 0,
                    };
                    if n > 0 && n as usize <= MAX_SPANS && !e.truncated() {
                        // ASCII bytes are UTF-8: the parts are read as bytes, and a text that
                        // is not ASCII is read as text below.
                        let g = self.px.groups;
                        let text = e.text_bytes().map_err(ce)?;
                        let thinking = e.thinking_bytes().map_err(ce)?;
                        let think_len = thinking.map_or(0, <[u8]>::len);
                        if g.contains(crate::request::FieldGroup::of_class(e.class().map_err(ce)?))
                            && (thinking.is_none()
                                || g.contains(crate::request::FieldGroup::Thinking))
                            && text.is_ascii()
                            && thinking.is_none_or(<[u8]>::is_ascii)
                            && self.budget.fits(text.len() + think_len)
                        {
                            self.budget.charge(text.len());
                            if thinking.is_some() {
                                self.budget.charge(think_len);
                            }
                            found.push((i, n as usize, e.token_len(), weight(&e)?));
                            continue;
                        }
                    }
                    let p = crate::fields::Parts::of(&e).map_err(ce)?;
                    let mut count = 0;
                    let texts = [
                        p.text_allowed(self.px.groups)
                            .then_some((p.text, p.text_nfkc)),
                        p.thinking
                            .filter(|_| p.thinking_allowed(self.px.groups))
                            .map(|t| (t, p.thinking_nfkc)),
                    ];
                    for (text, known) in texts.into_iter().flatten() {
                        let hay = crate::fields::normalized(text, known);
                        if !self.budget.charge(hay.len()) {
                            self.regex_stopped = true;
                            self.coverage.add_reason(reason::REGEX_HAYSTACK_BUDGET);
                            break;
                        }
                        count += re.count_in_text(&hay, MAX_SPANS);
                    }
                    if count == 0 && e.truncated() && !self.regex_stopped {
                        // The pattern may match past the stored cut.
                        self.coverage.add_reason(reason::MAX_ENTRY_CHARS);
                    }
                    if count > 0 {
                        found.push((i, count, e.token_len(), weight(&e)?));
                    }
                }
                self.reserve_entries(found.len(), 1);
                for (i, count, len, w) in found {
                    self.df[0] += 1;
                    self.push_entry(slot, i as u32, len, w, &[count as u32]);
                }
            }
        }
        Ok(())
    }
}

/// Which query groups and terms the vocabulary of each cold session (catalog ordinal) holds:
/// one `(session, group, term)` note per match, each term's text kept once. A common term
/// notes every session of the catalog, so a note is three integers, not a map entry with
/// strings of its own.
#[derive(Debug, Default)]
struct ColdTerms<'a> {
    names: Vec<Cow<'a, str>>,
    ids: HashMap<String, u32>,
    /// In the order noted until [`ColdTerms::seal`], then by session (stable).
    notes: Vec<(u32, u32, u32)>,
    /// The notes are in session order already ([`ColdTerms::merge_sorted`]).
    sorted: bool,
    /// After [`ColdTerms::seal`]: where each session's notes begin, one more at the end.
    starts: Vec<usize>,
}

impl<'a> ColdTerms<'a> {
    /// The id of `term`'s text.
    fn name(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.ids.get(term) {
            return id;
        }
        #[allow(clippy::cast_possible_truncation)]
        let id = self.names.len() as u32;
        self.names.push(Cow::Owned(term.to_owned()));
        self.ids.insert(term.to_owned(), id);
        id
    }

    /// The id of `term`, which no call before named: a literal query's terms (distinct), a
    /// regex's matching terms (each of the term list once). No lookup, no copy.
    fn name_distinct(&mut self, term: Cow<'a, str>) -> u32 {
        #[allow(clippy::cast_possible_truncation)]
        let id = self.names.len() as u32;
        self.names.push(term);
        id
    }

    #[allow(clippy::cast_possible_truncation)]
    fn note(&mut self, session: u32, group: usize, name: u32) {
        self.notes.push((session, group as u32, name));
        self.sorted = false;
    }

    /// Notes group `g`'s term `names[g]` in each session of `lists[g]` (each ascending), as
    /// [`ColdTerms::note`] would one list after the other, but merged in session order (a
    /// session's notes by group), so [`ColdTerms::seal`] need not sort them.
    #[allow(clippy::cast_possible_truncation)]
    fn merge_sorted(&mut self, lists: &[Vec<u32>], names: &[u32]) {
        let was_empty = self.notes.is_empty();
        self.notes.reserve(lists.iter().map(Vec::len).sum());
        let mut at = vec![0usize; lists.len()];
        loop {
            let mut best: Option<(u32, usize)> = None;
            for (g, l) in lists.iter().enumerate() {
                if let Some(&sess) = l.get(at[g]) {
                    if best.is_none_or(|(b, _)| sess < b) {
                        best = Some((sess, g));
                    }
                }
            }
            let Some((sess, g)) = best else { break };
            self.notes.push((sess, g as u32, names[g]));
            at[g] += 1;
        }
        self.sorted = was_empty;
    }

    /// Orders the notes by session, each session's in the order noted, and finds where each
    /// of the first `sessions` sessions' notes begin (notes of sessions past those are never
    /// asked for). With fewer notes than a sixteenth of the sessions (a rare term's), no
    /// table of starts is kept: [`ColdTerms::of`] searches the sorted notes.
    fn seal(&mut self, sessions: usize) {
        self.seal_with(sessions, self.notes.len() >= sessions / 16);
    }

    /// [`ColdTerms::seal`], keeping the table of starts or not.
    fn seal_with(&mut self, sessions: usize, table: bool) {
        self.starts.clear();
        if !table {
            if !self.sorted {
                self.sort_notes();
            }
            return;
        }
        if self.notes.len() < sessions || self.sorted {
            if !self.sorted {
                self.sort_notes();
            }
            // One pass over the sorted notes: each session starts at its first note, or
            // (none) where the next session's notes start.
            let mut starts = Vec::with_capacity(sessions + 1);
            let mut end = self.notes.len();
            for (k, n) in self.notes.iter().enumerate() {
                let session = n.0 as usize;
                if session >= sessions {
                    end = k;
                    break;
                }
                if starts.len() <= session {
                    starts.resize(session + 1, k);
                }
            }
            starts.resize(sessions + 1, end);
            self.starts = starts;
            return;
        }
        // As many notes as sessions or more (common terms): a counting sort (stable), whose
        // counts are the table, costs two passes instead of a sort. Notes of sessions past
        // `sessions` go last.
        let bucket = |n: &(u32, u32, u32)| (n.0 as usize).min(sessions);
        let mut starts = vec![0usize; sessions + 2];
        for n in &self.notes {
            starts[bucket(n) + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut at = starts.clone();
        let mut sorted = vec![(0, 0, 0); self.notes.len()];
        for n in &self.notes {
            let b = bucket(n);
            sorted[at[b]] = *n;
            at[b] += 1;
        }
        self.notes = sorted;
        starts.truncate(sessions + 1);
        self.starts = starts;
    }

    /// The notes in session order, each session's in the order noted. One call site of the
    /// sort: each is a copy of its code, and the browser build has a size limit.
    fn sort_notes(&mut self) {
        self.notes.sort_by_key(|n| n.0);
    }

    /// The notes of `session` (after [`ColdTerms::seal`]), as a range of positions.
    fn of(&self, session: u32) -> std::ops::Range<usize> {
        if self.starts.is_empty() {
            let a = self.notes.partition_point(|n| n.0 < session);
            let b = a + self.notes[a..].partition_point(|n| n.0 == session);
            return a..b;
        }
        let i = session as usize;
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) => a..b,
            _ => 0..0,
        }
    }

    /// Whether the notes in `range` hold query group `group`.
    fn holds(&self, range: &std::ops::Range<usize>, group: usize) -> bool {
        self.notes
            .get(range.clone())
            .is_some_and(|ns| ns.iter().any(|n| n.1 as usize == group))
    }

    /// The query groups below 64 the notes in `range` hold, a bit each (what
    /// [`ColdTerms::holds`] answers for them, in one pass over the notes).
    fn held(&self, range: &std::ops::Range<usize>) -> u64 {
        self.notes
            .get(range.clone())
            .unwrap_or_default()
            .iter()
            .fold(0, |bits, n| bits | 1u64.checked_shl(n.1).unwrap_or(0))
    }

    /// [`ColdTerms::holds`] with the notes' groups below 64 already read into `held`
    /// ([`ColdTerms::held`]): groups past them are read from the notes.
    fn holds_with(&self, held: u64, range: &std::ops::Range<usize>, group: usize) -> bool {
        match group {
            0..64 => held >> group & 1 == 1,
            _ => self.holds(range, group),
        }
    }

    /// The first [`MAX_MATCHED_TERMS`] distinct terms of the notes in `range`, in the order
    /// noted.
    fn terms(&self, range: &std::ops::Range<usize>) -> Vec<String> {
        // The distinct names on the stack, then one vector of their exact length (a page
        // makes this for each cold session hit).
        let mut ids = [0u32; MAX_MATCHED_TERMS];
        let mut n = 0;
        for note in self.notes.get(range.clone()).unwrap_or_default() {
            if n == MAX_MATCHED_TERMS {
                break;
            }
            if !ids[..n].contains(&note.2) {
                ids[n] = note.2;
                n += 1;
            }
        }
        let mut out = Vec::with_capacity(n);
        for &i in &ids[..n] {
            if let Some(name) = self.names.get(i as usize) {
                out.push(name.clone().into_owned());
            }
        }
        out
    }
}

/// Which cold sessions' vocabularies hold what, from the catalog's merged term map.
fn cold_terms<'a>(s: &mut Search<'a>, index: &'a Index) -> Result<ColdTerms<'a>, Error> {
    let mut out = ColdTerms::default();
    let Some(cat) = index.catalog() else {
        return Ok(out);
    };
    match &s.matcher {
        Matcher::None => {}
        Matcher::Terms {
            terms,
            fuzzy: false,
        } => {
            let lists = match s.term_sessions.take() {
                Some(lists) => lists,
                None => terms
                    .iter()
                    .map(|t| cat.sessions_with(t).map_err(ce))
                    .collect::<Result<Vec<_>, _>>()?,
            };
            let names: Vec<u32> = terms
                .iter()
                .zip(&lists)
                .map(|(t, l)| {
                    if l.is_empty() {
                        u32::MAX
                    } else {
                        out.name_distinct(Cow::Owned(t.clone()))
                    }
                })
                .collect();
            out.merge_sorted(&lists, &names);
        }
        Matcher::Terms { terms, fuzzy: true } => {
            let set = fst::Set::from(cat.terms().map_err(ce)?.into_fst());
            for (g, t) in terms.iter().enumerate() {
                let group: Vec<String> =
                    if let Some(shared) = s.fuzzy_groups.as_ref().and_then(|gs| gs.get(g)) {
                        // Expanded over this same vocabulary by the narrowing, uncut.
                        shared.clone()
                    } else {
                        let ex = fuzzy::expand(&set, t, &FuzzyOptions::default());
                        if ex.truncated {
                            s.coverage.add_reason(reason::FUZZY_EXPANSION_LIMIT);
                        }
                        ex.terms.into_iter().map(|f| f.term).collect()
                    };
                for term in group {
                    let sessions = cat.sessions_with(&term).map_err(ce)?;
                    if sessions.is_empty() {
                        continue;
                    }
                    let name = out.name(&term);
                    for sess in sessions {
                        out.note(sess, g, name);
                    }
                }
            }
        }
        Matcher::Phrase { tokens, .. } => {
            if let Some(shared) = s.phrase_terms.take() {
                return Ok(shared);
            }
            if tokens.is_empty() {
                return Ok(out);
            }
            phrase_cold_terms(&mut out, index, cat, tokens)?;
        }
        Matcher::Regex(_) if s.regex_terms.is_some() => {
            // The narrowing pass found the matching terms already; charge the budget as a
            // pass over every term would (the bytes before each matching term, then the rest).
            let (found, trailing) = s.regex_terms.take().unwrap_or_default();
            let mut stopped = false;
            for (bytes, term, ord) in found {
                if !s.budget.charge(bytes) {
                    s.coverage.add_reason(reason::REGEX_HAYSTACK_BUDGET);
                    stopped = true;
                    break;
                }
                let name = out.name_distinct(term);
                cat.each_session_at(ord, |sess| out.note(sess, 0, name))
                    .map_err(ce)?;
            }
            if !stopped && trailing > 0 && !s.budget.charge(trailing) {
                s.coverage.add_reason(reason::REGEX_HAYSTACK_BUDGET);
            }
        }
        Matcher::Regex(re) => {
            for (term, ord) in index.term_list()?.iter() {
                if !s.budget.charge(term.len()) {
                    s.coverage.add_reason(reason::REGEX_HAYSTACK_BUDGET);
                    break;
                }
                if re.is_match_term(term) {
                    let name = out.name_distinct(term_str(term));
                    cat.each_session_at(ord, |sess| out.note(sess, 0, name))
                        .map_err(ce)?;
                }
            }
        }
    }
    out.seal(cat.len());
    Ok(out)
}

/// The notes of a phrase: per session, for each token the first term (in term order) of its
/// vocabulary that can carry it, when every token has one. The first token may end a longer
/// term and the last may start one (phrases match substrings); a one-token phrase may lie
/// anywhere in a term. Only the first token (or the only one) needs a search of the merged
/// vocabulary (one substring search over all its bytes); inner tokens are looked up and the
/// last one's terms are a range of the map.
///
/// Returns, per catalog session, whether it was noted, and the terms of each hot session that
/// carry the first token, and the last (when the catalog has at most [`PHRASE_LAST_LOOKUPS`]
/// such terms). For an ASCII phrase of two or more tokens no other session can hold a match: a
/// match is ASCII text whose tokens are the phrase's, the first ending a term (a space or the
/// next token follows it), the inner ones whole terms and the last beginning one. Other
/// phrases (Unicode case and normal forms differ between phrase and tokenizer) and one-token
/// phrases (any substring) do not narrow.
fn phrase_cold_terms(
    out: &mut ColdTerms,
    index: &Index,
    cat: &sessiondex_core::catalog::Catalog<Bytes>,
    tokens: &[String],
) -> Result<(Vec<bool>, PhraseTerms, Option<PhraseTerms>), Error> {
    use fst::{IntoStreamer, Streamer};
    const NONE: u32 = u32::MAX;
    // Only hot shards look up their first- and last-token terms.
    let flags = index.session_flags();
    let hot = |sess: u32| {
        flags
            .get(sess as usize)
            .is_some_and(|f| f & crate::index::COLD == 0)
    };
    let k = tokens.len();
    // Per token, per catalog session: the name of the first term carrying it, or NONE.
    let mut rows: Vec<Vec<u32>> = vec![vec![NONE; cat.len()]; k];
    // Notes `term` (ordinal `ord`) in `row` for each session holding it; with `listed`, also
    // lists it (terms, then `(session, term id)` pairs) for each hot one.
    type Listed = (Vec<String>, Vec<(u32, u32)>);
    let carry = |out: &mut ColdTerms,
                 row: &mut Vec<u32>,
                 term: &str,
                 ord: u64,
                 listed: Option<&mut Listed>|
     -> Result<(), Error> {
        let mut listed = match listed {
            Some(l) => Some((term_id(l.0.len())?, l)),
            None => None,
        };
        let mut name = None;
        cat.each_session_at(ord, |sess| {
            if let Some((id, l)) = &mut listed {
                if hot(sess) {
                    l.1.push((sess, *id));
                }
            }
            if let Some(slot) = row.get_mut(sess as usize) {
                if *slot == NONE {
                    *slot = *name.get_or_insert_with(|| out.name(term));
                }
            }
        })
        .map_err(ce)?;
        if let Some((_, l)) = listed {
            l.0.push(term.to_owned());
        }
        Ok(())
    };
    let Some((first_row, rest)) = rows.split_first_mut() else {
        return Ok((vec![false; cat.len()], PhraseTerms::default(), None));
    };
    let (mut first_listed, mut last_listed): (Listed, Listed) = Default::default();
    let mut listing = false;
    let list = index.term_list()?;
    // One search of all terms' bytes for the first token, not a look at each term.
    let first = memchr::memmem::Finder::new(tokens[0].as_bytes());
    let picks = if k == 1 {
        list.holding(&[first])
    } else {
        list.ending_with(&first)
    };
    for (term, ord, _) in picks.into_iter().filter_map(|p| list.get(p)) {
        if let Ok(term) = std::str::from_utf8(term) {
            carry(out, first_row, term, ord, Some(&mut first_listed))?;
        }
    }
    if let Some((last_row, inner)) = rest.split_last_mut() {
        for (row, tok) in inner.iter_mut().zip(&tokens[1..]) {
            if let Some(ord) = cat.terms().map_err(ce)?.get(tok.as_bytes()) {
                carry(out, row, tok, ord, None)?;
            }
        }
        let map = cat.terms().map_err(ce)?;
        let last = tokens[k - 1].as_bytes();
        let mut upper = last.to_vec();
        upper.push(0xff);
        let mut stream = map.range().ge(last).lt(&upper).into_stream();
        // Listed for hot shards only while the catalog has at most PHRASE_LAST_LOOKUPS of
        // them (each shard then holds at most that many): more are read from each shard's
        // range, and listing them would cost a pair per hot session holding each.
        listing = true;
        while let Some((term, ord)) = stream.next() {
            let term = std::str::from_utf8(term);
            if listing && (term.is_err() || last_listed.0.len() >= PHRASE_LAST_LOOKUPS) {
                listing = false;
                last_listed = Listed::default();
            }
            if let Ok(term) = term {
                carry(
                    out,
                    last_row,
                    term,
                    ord,
                    listing.then_some(&mut last_listed),
                )?;
            }
        }
    }
    let mut noted = vec![false; cat.len()];
    #[allow(clippy::cast_possible_truncation)]
    for (sess, n) in noted.iter_mut().enumerate() {
        if rows.iter().all(|r| r[sess] != NONE) {
            *n = true;
            for r in &rows {
                out.note(sess as u32, 0, r[sess]);
            }
        }
    }
    Ok((
        noted,
        PhraseTerms::new(first_listed.0, &first_listed.1),
        listing.then(|| PhraseTerms::new(last_listed.0, &last_listed.1)),
    ))
}

/// The id of the `n`th term listed.
fn term_id(n: usize) -> Result<u32, Error> {
    u32::try_from(n).map_err(|_| {
        Error::new(
            ErrorCode::IndexCorrupt,
            "the catalog has 2^32 terms or more",
        )
    })
}

/// Per hot catalog session, the terms of its vocabulary that end with a phrase's first token,
/// or begin with its last (cold sessions have none listed: they have no shard to look them
/// up in).
#[derive(Debug, Default)]
struct PhraseTerms {
    terms: Vec<String>,
    /// The sessions listed, ascending (the pairs', not the catalog's size).
    sessions: Vec<u32>,
    /// Where each listed session's term ids begin in `ids`, one more at the end.
    starts: Vec<usize>,
    ids: Vec<u32>,
}

impl PhraseTerms {
    /// From `(session, term id)` pairs, each session's ids kept in the order given.
    fn new(terms: Vec<String>, pairs: &[(u32, u32)]) -> Self {
        let mut sessions: Vec<u32> = pairs.iter().map(|&(s, _)| s).collect();
        sessions.sort_unstable();
        sessions.dedup();
        let slot = |s: u32| sessions.binary_search(&s).ok();
        let mut starts = vec![0usize; sessions.len() + 1];
        for &(s, _) in pairs {
            if let Some(c) = slot(s).and_then(|i| starts.get_mut(i + 1)) {
                *c += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut ids = vec![0u32; starts.last().copied().unwrap_or(0)];
        for &(s, id) in pairs {
            if let Some(at) = slot(s).and_then(|i| next.get_mut(i)) {
                if let Some(place) = ids.get_mut(*at) {
                    *place = id;
                    *at += 1;
                }
            }
        }
        Self {
            terms,
            sessions,
            starts,
            ids,
        }
    }

    /// The terms of `session`.
    fn of(&self, session: usize) -> Vec<&str> {
        let Some(i) = u32::try_from(session)
            .ok()
            .and_then(|s| self.sessions.binary_search(&s).ok())
        else {
            return Vec::new();
        };
        let (Some(&a), Some(&b)) = (self.starts.get(i), self.starts.get(i + 1)) else {
            return Vec::new();
        };
        self.ids
            .get(a..b)
            .unwrap_or_default()
            .iter()
            .filter_map(|&id| self.terms.get(id as usize).map(String::as_str))
            .collect()
    }
}

/// Ordinals (ascending) of the tuples of a digest matching every structural filter; `None`
/// when no filter is set.
fn structural_matches(v: &ValidRecall, d: &ColdDigest<Bytes>) -> Result<Option<Vec<u32>>, Error> {
    let r = &v.request;
    let outcome = r.outcome.map(Outcome::as_str);
    let filters = [
        (Field::Role, r.role.as_deref()),
        (Field::Tool, r.tool.as_deref()),
        (Field::Ref, r.reference.as_deref()),
        (Field::Provider, r.provider.as_deref()),
        (Field::Action, r.action.as_deref()),
        (Field::Outcome, outcome),
    ];
    let mut set: Option<Vec<u32>> = None;
    for (field, value) in filters {
        let Some(value) = value else { continue };
        let mut post = d.field_postings(field, value).map_err(ce)?;
        post.sort_unstable();
        post.dedup();
        set = Some(match set {
            None => post,
            Some(s) => {
                let mut j = 0;
                s.into_iter()
                    .filter(|&x| {
                        while post.get(j).is_some_and(|&p| p < x) {
                            j += 1;
                        }
                        post.get(j) == Some(&x)
                    })
                    .collect()
            }
        });
    }
    Ok(set.map(|mut set| {
        set.retain(|&ord| d.tuple(ord as usize).is_some());
        set
    }))
}

/// The structural entries of a digest's tuples `ords`.
fn structural_entries(d: &ColdDigest<Bytes>, ords: &[u32]) -> Vec<StructuralEntry> {
    ords.iter()
        .filter_map(|&ord| d.tuple(ord as usize))
        .map(|t| StructuralEntry {
            index: u64::from(t.index()),
            entry_id: t.entry_id().ok().map(str::to_owned),
            operation_address: t.operation_address().ok().flatten().map(str::to_owned),
        })
        .collect()
}

enum Target {
    /// These sessions (catalog positions), or every session (`None`: no list to build).
    Many(Option<Vec<usize>>),
    One(String, Option<usize>),
}

fn norm_dir(s: &str) -> &str {
    let t = s.trim_end_matches('/');
    if t.is_empty() {
        "/"
    } else {
        t
    }
}

fn in_dir(cwd: Option<&str>, dir: &str) -> bool {
    let Some(c) = cwd else { return false };
    let (c, d) = (norm_dir(c), norm_dir(dir));
    c == d || d == "/" || c.strip_prefix(d).is_some_and(|rest| rest.starts_with('/'))
}

fn target(index: &Index, ctx: &QueryContext, v: &ValidRecall) -> Result<Target, Error> {
    let cwd = v.request.cwd.as_deref().or(ctx.cwd.as_deref());
    match &v.scope {
        Scope::Global => Ok(Target::Many(None)),
        Scope::Project => {
            let Some(cwd) = cwd else {
                return Err(Error::new(
                    ErrorCode::InvalidScope,
                    "scope `project` needs a cwd (the request's `cwd` or the caller's)",
                )
                .with_details(json!({"field": "scope"})));
            };
            Ok(Target::Many(Some(
                index
                    .entries()
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| in_dir(e.summary.cwd.as_deref(), cwd))
                    .map(|(i, _)| i)
                    .collect(),
            )))
        }
        Scope::Session => {
            if let Some(cur) = &ctx.session {
                let r = index.resolve(cur)?;
                let pos = match &r {
                    Resolved::Indexed(i) => Some(*i),
                    Resolved::Unindexed(_) => None,
                };
                return Ok(Target::One(index.path_of(&r), pos));
            }
            let Some(cwd) = cwd else {
                return Err(Error::new(
                    ErrorCode::InvalidScope,
                    "scope `session` needs a current session or a cwd",
                )
                .with_details(json!({"field": "scope"})));
            };
            let entries = index.entries();
            let newest = index
                .newest_first()
                .iter()
                .map(|&i| (i as usize, &entries[i as usize]))
                .find(|(_, e)| e.summary.cwd.as_deref().map(norm_dir) == Some(norm_dir(cwd)));
            match newest {
                Some((i, e)) => Ok(Target::One(e.identity.path.clone(), Some(i))),
                None => Err(Error::new(
                    ErrorCode::SessionNotFound,
                    format!("no session has the cwd `{cwd}`"),
                )
                .with_details(json!({"cwd": cwd}))),
            }
        }
        Scope::Explicit(s) => {
            let r = index.resolve(s)?;
            let pos = match &r {
                Resolved::Indexed(i) => Some(*i),
                Resolved::Unindexed(_) => None,
            };
            Ok(Target::One(index.path_of(&r), pos))
        }
    }
}

fn round(score: f32) -> f64 {
    (f64::from(score) * 10_000.0).round() / 10_000.0
}

/// Runs a recall over `index` (opened for the request's branch mode).
///
/// # Errors
///
/// The request's validation codes, `regex_*` for a refused pattern, `invalid_scope`,
/// `session_not_found`, `ambiguous_session`, `stale_pointer` for a single-session call whose
/// bindings no longer match, `index_corrupt`.
#[allow(clippy::too_many_lines)]
pub fn recall(
    index: &Index,
    opts: &EngineOptions,
    ctx: &QueryContext,
    req: &RecallRequest,
) -> Result<Page, Error> {
    let v = req.clone().validate()?;
    if v.branches != index.branches() {
        return Err(Error::new(
            ErrorCode::InvalidRequest,
            "the index was opened for another branch mode",
        ));
    }
    let matcher = match (&v.query, v.mode) {
        (None, _) => Matcher::None,
        (Some(q), QueryMode::Literal | QueryMode::Fuzzy) => Matcher::Terms {
            terms: QueryTerms::parse(q).terms().to_vec(),
            fuzzy: v.mode == QueryMode::Fuzzy,
        },
        (Some(q), QueryMode::Phrase) => match Phrase::new(q) {
            Some(p) => Matcher::Phrase {
                tokens: tokenize(p.as_str()),
                phrase: p,
            },
            None => Matcher::None,
        },
        (Some(q), QueryMode::Regex) => {
            Matcher::Regex(Box::new(CompiledRegex::new(q, &opts.regex)?))
        }
    };
    let ng = matcher.groups();
    let scratch = index.take_scratch();
    let mut s = Search {
        v: &v,
        matcher,
        coverage: Coverage::complete(),
        docs: 0,
        total_len: 0,
        df: vec![0; ng],
        cold_docs: 0,
        cold_df: vec![0; ng],
        entries: scratch.entries,
        entry_tfs: scratch.entry_tfs,
        colds: Vec::new(),
        cold_structural: Vec::new(),
        cold_terms: ColdTerms::default(),
        highlight: BTreeSet::new(),
        budget: HaystackBudget::new(&opts.regex),
        regex_stopped: false,
        px: precision::Precision::new(&v),
        fuzzy_groups: None,
        literal_groups: None,
        hits_buf: Vec::new(),
        term_sessions: None,
        marked_few: None,
        filtered: false,
        regex_terms: None,
        phrase_terms: None,
        phrase_first: None,
        phrase_last: None,
        regex_hot: None,
        regex_term_matches: Vec::new(),
        id_walk: None,
        structural_proven: Vec::new(),
        epoch: std::cell::OnceCell::new(),
    };
    let lexical = !matches!(s.matcher, Matcher::None);
    let mut slots: Vec<Slot> = Vec::new();
    let single = match target(index, ctx, &v)? {
        Target::One(path, pos) => {
            let h = index.hydrate_with(
                &path,
                v.branches,
                v.request.source_hash.as_deref(),
                v.request.lineage_fingerprint.as_deref(),
                opts.policy.redact_secrets,
            )?;
            let n = h.selection.records.len();
            if let Some((a, b)) = v.entry_range {
                if a >= n || b >= n {
                    return Err(Error::new(
                        ErrorCode::IndexOutOfBounds,
                        format!("`entryRange` [{a}, {b}] is outside the session's {n} entries"),
                    )
                    .with_details(json!({"field": "entryRange", "entries": n})));
                }
            }
            let policy = Policy {
                max_entry_chars: u32::MAX,
                ..opts.policy
            };
            let built = hot::build(&h.session.meta, &h.selection, &policy).map_err(ce)?;
            let shard = HotShard::open(Bytes::Owned(built)).map_err(ce)?;
            s.coverage.eligible_sessions = 1;
            s.coverage.indexed_sessions = 1;
            if !h.selection.coverage.complete {
                s.coverage.incomplete_sessions = 1;
                for r in &h.selection.coverage.reasons {
                    if r.code.makes_incomplete() {
                        s.coverage.add_reason(r.code.as_str());
                    }
                }
            }
            let _ = pos;
            slots.push(Slot {
                names: Names::Owned(Box::new((
                    [
                        h.session.meta.session_id.clone(),
                        h.path.clone(),
                        h.source_hash.clone(),
                        h.selection.lineage_fingerprint.clone(),
                    ],
                    shard.summary().last_ts,
                ))),
                rank: 0,
                shard: Some(Arc::new(shard)),
                catalog: pos,
                cold: false,
            });
            true
        }
        Target::Many(chosen) => {
            let entries = index.entries();
            // Newest first (paths are unique, so the order is total).
            let order = index.newest_first();
            let eligible = chosen.as_ref().map_or(entries.len(), Vec::len);
            let every = eligible == entries.len();
            s.coverage.eligible_sessions = eligible as u64;
            let cands = candidate_sessions(&mut s, index)?;
            // Over every session with candidates, and no session past the digest budget: only
            // the candidates are visited, the others are counted from the index's totals
            // (what the loop below would add for each of them, as it skips them).
            let totals = match (&cands, index.session_totals()) {
                (Some(_), Some(t)) if every && fast_totals_allowed() => Some(t),
                _ => None,
            };
            let mut cands = cands;
            if let (Some(c), Some(_)) = (&mut cands, totals) {
                narrow_all(&mut s, index, c);
            }
            let list: Vec<usize> = if let (Some(c), Some(_)) = (&cands, totals) {
                candidates_newest_first(index, c, s.marked_few.as_deref())
            } else if every {
                order.iter().map(|&i| i as usize).collect()
            } else {
                let mut member = vec![false; entries.len()];
                for &i in chosen.iter().flatten() {
                    if let Some(m) = member.get_mut(i) {
                        *m = true;
                    }
                }
                order
                    .iter()
                    .map(|&i| i as usize)
                    .filter(|&i| member[i])
                    .collect()
            };
            let mut cold_seen = 0usize;
            let mut skipped_cold = 0u64;
            // What the visited candidates are (and so what the others are, by difference).
            let mut seen = SessionTotals::default();
            if let Some(t) = totals {
                for &i in &t.incomplete {
                    s.coverage.incomplete_sessions += 1;
                    add_incomplete_reasons(&mut s.coverage, &entries[i as usize]);
                }
            }
            // One byte per session instead of its whole entry: most sessions of a large
            // index are skipped, and their entries would only miss the cache.
            let flags = index.session_flags();
            let rank = index.newest_rank();
            // At most every session listed (grown one push at a time, a common term's 4,000
            // were copied twice over).
            let mut cold_slots: Vec<usize> = Vec::with_capacity(list.len());
            let budget = digest_budget();
            for i in list {
                let f = flags.get(i).copied().unwrap_or(0);
                if totals.is_some() {
                    if f & crate::index::COLD != 0 {
                        seen.cold += 1;
                    } else if let Some((n, t)) = index.catalog().and_then(|c| c.hot_totals(i)) {
                        seen.hot += 1;
                        seen.hot_entries += n;
                        seen.hot_tokens += t;
                    }
                } else if f & crate::index::INCOMPLETE != 0 {
                    s.coverage.incomplete_sessions += 1;
                    add_incomplete_reasons(&mut s.coverage, &entries[i]);
                }
                let cold = f & crate::index::COLD != 0;
                let skip = cands
                    .as_ref()
                    .is_some_and(|c| !c.get(i).copied().unwrap_or(true));
                if skip && !cold && s.filtered {
                    // No record with the requested values: no entry passes the filters.
                    s.coverage.indexed_sessions += 1;
                    continue;
                }
                if skip && !cold {
                    // Holds no query term and no id with the query's key: its entries
                    // count in the BM25 statistics, read from the catalog.
                    if let Some((n, t)) = index.catalog().and_then(|c| c.hot_totals(i)) {
                        s.coverage.indexed_sessions += 1;
                        s.docs += n;
                        s.total_len += t;
                        continue;
                    }
                }
                let shard = if cold {
                    None
                } else {
                    index.hot_shared_in(i, s.epoch(index))?
                };
                if !cold && shard.is_none() {
                    s.coverage.add_reason("index_file_missing");
                    continue;
                }
                if skip && cold {
                    // Counted in BM25's documents, as the cold loop below counts each cold
                    // session it looks at; its vocabulary holds none of the terms, so it is
                    // not a candidate and takes nothing from the digest budget.
                    s.coverage.indexed_sessions += 1;
                    skipped_cold += 1;
                    continue;
                }
                if cold {
                    if cold_seen >= budget {
                        s.coverage.add_reason(reason::CANDIDATE_DIGEST_BUDGET);
                        continue;
                    }
                    cold_seen += 1;
                }
                s.coverage.indexed_sessions += 1;
                if cold {
                    cold_slots.push(i);
                    continue;
                }
                slots.push(Slot {
                    names: Names::Entry(&entries[i]),
                    rank: rank.get(i).copied().unwrap_or(u32::MAX),
                    shard,
                    catalog: Some(i),
                    cold,
                });
            }
            // Cold slots after the hot ones, in one pass that writes each in place (pushed one
            // by one, each was built on the stack and copied: a stall per session).
            slots.extend(cold_slots.iter().map(|&i| Slot {
                names: Names::Entry(&entries[i]),
                rank: rank.get(i).copied().unwrap_or(u32::MAX),
                shard: None,
                catalog: Some(i),
                cold: true,
            }));
            if let Some(t) = totals {
                // The sessions not visited: none a candidate, so each is skipped as the loop
                // skips it (counted; a hot one's totals join BM25's unless filtered; a cold
                // one is a document of BM25's).
                let hot = t.hot.saturating_sub(seen.hot);
                let cold = t.cold.saturating_sub(seen.cold);
                s.coverage.indexed_sessions += hot + cold;
                if !s.filtered {
                    s.docs += t.hot_entries.saturating_sub(seen.hot_entries);
                    s.total_len += t.hot_tokens.saturating_sub(seen.hot_tokens);
                }
                skipped_cold += cold;
            }
            s.cold_docs += skipped_cold;
            false
        }
    };

    // Hot (and hydrated) sessions.
    let mut bufs = ShardBufs::default();
    for (k, slot) in slots.iter().enumerate() {
        if let Some(shard) = &slot.shard {
            let walk = match (&s.id_walk, slot.catalog) {
                (Some(w), Some(c)) => w.get(c).copied().unwrap_or(true),
                _ => true,
            };
            s.search_shard(k, slot.catalog, shard, walk, &mut bufs)?;
        }
    }

    // Cold sessions.
    let any_cold = slots.iter().any(|sl| sl.cold);
    if any_cold {
        match &s.matcher {
            // A match across tokens, or an empty one (`$^` in an empty text), is in no term.
            Matcher::Regex(re) if re.can_span_tokens() || re.is_match_term(b"") => {
                s.coverage.add_reason(reason::COLD_REGEX_SPANS_TOKENS);
            }
            // A phrase of separators alone (`/`, `::`) holds no term to look up: no cold
            // session is a candidate, and none is ruled out.
            Matcher::Phrase { tokens, .. } if tokens.is_empty() => {
                s.coverage
                    .add_reason(reason::COLD_PHRASE_REQUIRES_HYDRATION);
            }
            _ => {}
        }
        s.cold_terms = cold_terms(&mut s, index)?;
        s.colds.reserve(slots.iter().filter(|sl| sl.cold).count());
        let structural = has_structural(&v);
        // Whether a cold candidate was kept (and one of them only partly inside the time
        // bounds): the reasons that say what a cold candidate leaves unproven are added once.
        let (mut kept_cold, mut any_time_unproven) = (false, false);
        for (k, slot) in slots.iter().enumerate().filter(|(_, sl)| sl.cold) {
            let Some(ci) = slot.catalog else { continue };
            s.cold_docs += 1;
            #[allow(clippy::cast_possible_truncation)]
            let notes = s.cold_terms.of(ci as u32);
            let held = s.cold_terms.held(&notes);
            let holds = |g: usize| s.cold_terms.holds_with(held, &notes, g);
            for g in 0..s.cold_df.len() {
                if holds(g) {
                    s.cold_df[g] += 1;
                }
            }
            let lexical_ok = match &s.matcher {
                Matcher::None => true,
                Matcher::Terms { terms: q, .. } => terms_match((0..q.len()).map(holds), v.matching),
                Matcher::Phrase { .. } | Matcher::Regex(_) => !notes.is_empty(),
            };
            if !lexical_ok {
                continue;
            }
            let mut found = Vec::new();
            let structural_later = structural && s.structural_proven.get(ci) == Some(&true);
            if structural && !structural_later {
                let Some(d) = index.cold_shared_in(ci, s.epoch(index))? else {
                    s.coverage.add_reason("index_file_missing");
                    continue;
                };
                if let Some(mut m) = structural_matches(&v, &d)? {
                    if m.is_empty() {
                        continue;
                    }
                    // Only a page's hits name their entries, at most this many each.
                    m.truncate(MAX_STRUCTURAL_ENTRIES);
                    found = m;
                }
            }
            let summary = &index.entries()[ci].summary;
            let mut time_unproven = false;
            if has_time(&v) {
                let (first, last) = (summary.first_ts, summary.last_ts);
                let (since, until) = (
                    v.since_ms.unwrap_or(i64::MIN),
                    v.until_ms.unwrap_or(i64::MAX),
                );
                // A record without a timestamp is out of every range: with none timed, so
                // is the session; with some untimed, its first and last times do not
                // speak for every record the digest may name.
                match (first, last) {
                    (Some(f), Some(l)) if summary.untimed_count < summary.entry_count => {
                        if l < since || f > until {
                            continue;
                        }
                        time_unproven = f < since || l > until || summary.untimed_count > 0;
                    }
                    _ => continue,
                }
            }
            kept_cold = true;
            any_time_unproven |= time_unproven;
            if !found.is_empty() {
                s.cold_structural.push((s.colds.len(), found));
            }
            let pos = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
            s.colds.push(ColdCand {
                slot: pos(k),
                held,
                notes_start: pos(notes.start),
                notes_end: pos(notes.end),
                structural_later,
            });
        }
        if kept_cold {
            if let (Matcher::Terms { terms: q, .. }, QueryMatch::All) = (&s.matcher, v.matching) {
                if q.len() > 1 {
                    s.coverage.add_reason(reason::COLD_ALL_REQUIRES_HYDRATION);
                }
            }
            // A phrase of one token alone is a substring of one term, which the vocabulary
            // shows; a second token or a separator (`foo.`) is not in it.
            if let Matcher::Phrase { tokens, phrase } = &s.matcher {
                if tokens.len() > 1 || tokens.first().is_some_and(|t| t != phrase.as_str()) {
                    s.coverage
                        .add_reason(reason::COLD_PHRASE_REQUIRES_HYDRATION);
                }
            }
            if let Matcher::Regex(re) = &s.matcher {
                if re.has_anchor() {
                    s.coverage
                        .add_reason(reason::COLD_REGEX_ANCHOR_REQUIRES_HYDRATION);
                }
            }
            // With an outcome and no query a result defers to its call (search_shard), which
            // a digest cannot pair: a result can stand for its session where the call fails
            // the role or the range.
            let deferred = !lexical
                && v.request.outcome.is_some()
                && (v.request.role.as_deref() == Some("tool") || v.entry_range.is_some());
            if (lexical && structural) || deferred {
                s.coverage
                    .add_reason(reason::COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION);
            }
            if !s.px.groups.is_all() {
                s.coverage
                    .add_reason(reason::COLD_FIELD_GROUP_REQUIRES_HYDRATION);
            }
        }
        if any_time_unproven {
            s.coverage
                .add_reason(reason::COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION);
        }
    }

    // Rank.
    let mut bm = Bm25::new(s.docs, s.total_len);
    bm.docs += s.cold_docs;
    let df: Vec<u64> = s.df.iter().zip(&s.cold_df).map(|(a, b)| a + b).collect();
    // Both loops extend `items` from mapped slices: each item is written in place (pushed
    // one at a time, each was built on the stack and copied, a stall per item).
    let mut items: Vec<(f32, usize, u32, Item)> =
        Vec::with_capacity(s.entries.len() + s.colds.len());
    let idf: Vec<f32> = df.iter().map(|&d| bm.idf(d)).collect();
    items.extend(s.entries.iter().map(|c| {
        let score = if let (true, &[idf]) = (lexical, idf.as_slice()) {
            let tf = entry_tf(&s.entry_tfs, c).first().copied().unwrap_or(0);
            bm.score_one(c.weight, c.len, tf, idf)
        } else if lexical {
            bm.score_idf(
                c.weight,
                c.len,
                entry_tf(&s.entry_tfs, c)
                    .iter()
                    .zip(&idf)
                    .map(|(&tf, &i)| (tf, i)),
            )
        } else {
            0.0
        };
        (score, c.slot, c.entry, Item::Entry)
    }));
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let avg = bm.avg_len.round() as u32;
    // A cold session's score depends only on the groups it holds: with at most 64 groups
    // (all in `held`), sessions holding the same ones (every one, for one term) share it.
    let mut last: Option<(u64, f32)> = None;
    items.extend(s.colds.iter().enumerate().map(|(k, c)| {
        let score = if !lexical {
            0.0
        } else if let Some((_, score)) = last.filter(|l| l.0 == c.held && idf.len() <= 64) {
            score
        } else {
            // Every query term, absent ones with tf 0, so coverage counts them.
            let notes = c.notes();
            let score = bm.score_idf(
                1.0,
                avg,
                idf.iter()
                    .enumerate()
                    .map(|(g, &i)| (u32::from(s.cold_terms.holds_with(c.held, &notes, g)), i)),
            );
            last = Some((c.held, score));
            score
        };
        (score, c.slot as usize, 0, Item::Cold(k))
    }));
    let offset = usize::try_from(v.offset).unwrap_or(usize::MAX);
    if lexical {
        let want = offset.saturating_add(v.page_size as usize);
        precision::add_and_tier(&mut s, index, &slots, &mut items, single, want)?;
    }
    if items.len() > CANDIDATE_ITEM_BUDGET {
        s.coverage.add_reason(reason::CANDIDATE_ITEM_BUDGET);
    }
    let total = items.len().min(CANDIDATE_ITEM_BUDGET) as u64;
    // Only the items up to the end of the page are put in order: the best `want` by score,
    // then newer session, path, entry, then the order they were added in (what a stable sort
    // of every item would give, at the cost of a selection).
    let want = offset
        .saturating_add(v.page_size as usize)
        .min(CANDIDATE_ITEM_BUDGET)
        .min(items.len());
    // Each item's place as one integer (`precision::order_key`), so the selection compares
    // integers.
    let order = precision::best_keys(&slots, &items, want);
    #[allow(clippy::cast_possible_truncation)]
    // Each with its place in `items`: the first `s.entries.len()` are the hot candidates, in
    // order, so a page entry's term frequencies are found by it.
    let items: Vec<(usize, precision::Ranked)> = order
        .iter()
        .filter_map(|&k| {
            let k = k as u32 as usize;
            items.get(k).map(|&it| (k, it))
        })
        .collect();

    // One page, bounded.
    let highlight = QueryTerms::from_terms(s.highlight.iter().cloned());
    let searched = crate::bm25::TermSearch::new(&highlight);
    let branches_arg = (v.branches == Branches::All).then_some(Branches::All);
    // Not in the browser build, which keeps to its size budget: there every page is counted
    // finely from the first hit (the same pages).
    let mut coarse = !cfg!(target_arch = "wasm32");
    #[cfg(test)]
    if prefilter_tests::FINE_ONLY.with(std::cell::Cell::get) {
        coarse = false;
    }
    let mut exact = false;
    // The bound of a session call's args without the session's three strings (each cold
    // hit's call is the request with those set).
    let mut session_rest = None;
    // A page hit whose digest was left for later and is gone.
    let mut digest_missing = false;
    // The `follow` calls of the page's cold session hits (the request without what names a
    // place in one session), serialized once, for the first of them, and shared by all.
    let mut cold_follow: Option<SessionRecalls> = None;
    let page_items = || items.iter().skip(offset).take(v.page_size as usize);
    let mut page_left = page_items().count();
    // The page without its hits: only a page with hits counts it.
    let base = if page_left == 0 {
        0
    } else {
        600 + json_len(&s.coverage) + json_len(req)
    };
    // Hits are counted by a coarse bound of their length while those show the page fits
    // (each byte of a string as six, its longest escape, without reading the strings), then
    // by a finer bound (a pass over each string), and exactly from the first hit that does
    // not show fitting: the same hits as counting each exactly.
    let mut used = base;
    // Room for the page's hits at once (a hit is a few hundred bytes, moved at each growth).
    let mut hits = Vec::with_capacity(page_left);
    // How the finer bound of each page hit's call's args is found, for the switch from the
    // coarse ones: given, from the session's parts, or by a walk over the args.
    let mut fine_args: Vec<Option<Result<usize, usize>>> = Vec::with_capacity(page_left);
    for &(k, (score, slot_k, entry, item)) in page_items() {
        page_left = page_left.saturating_sub(1);
        let slot = &slots[slot_k];
        // The bound of the hit's call's args, when it is known without a walk over them
        // (`Ok`), or from the session's parts (`Err` of its slot), with a coarse one.
        let mut args_bound = None;
        let mut args_coarse = None;
        let hit = match item {
            Item::Entry => {
                let Some(shard) = &slot.shard else { continue };
                let e = shard.entry(entry as usize).ok_or_else(corrupt)?;
                let matched_in = precision::matched_in(
                    &s,
                    &e,
                    &highlight,
                    lexical && !s.px.id_only.contains(&(slot_k, entry)),
                )?;
                let mut text = e.text().map_err(ce)?;
                // Whether the shard says the text the snippet is cut from is NFKC.
                let flags = e.flags();
                let mut text_nfkc = flags & sessiondex_core::hot::FLAG_TEXT_NFKC != 0;
                if text.is_empty() {
                    text = e.thinking().map_err(ce)?.unwrap_or("");
                    text_nfkc = flags & sessiondex_core::hot::FLAG_THINKING_NFKC != 0;
                }
                if let Some(th) = precision::snippet_text(&e, &matched_in)? {
                    text = th;
                    text_nfkc = flags & sessiondex_core::hot::FLAG_THINKING_NFKC != 0;
                }
                // Every match (up to a cap), so the window is the densest of the entry. A
                // literal query's matches in a stored ASCII text that is whole are at most the
                // entry's term frequencies (its text and thinking are indexed whole, and in
                // ASCII text a match is a token; `bm25` tests both): once that many are found,
                // the rest of the text holds none (a long tool output is not read past its
                // last match). Only with every field group searched: then the frequencies
                // count the text and the thinking whichever of them the snippet shows.
                let term_cap = match (&s.matcher, s.entries.get(k)) {
                    (Matcher::Terms { fuzzy: false, .. }, Some(c))
                        if !e.truncated() && s.px.groups.is_all() =>
                    {
                        s.tf(c)
                            .iter()
                            .fold(0usize, |a, &n| a.saturating_add(n as usize))
                            .min(MAX_SNIP)
                    }
                    _ => MAX_SNIP,
                };
                // So is a text the shard says is NFKC: each run of term characters of it is
                // one token, which the frequencies count (a cut text's cap is `MAX_SNIP`, so
                // a window read from source is searched whole). The browser build searches
                // such text whole (its size budget), as does a test's full check.
                #[cfg(test)]
                let text_nfkc =
                    text_nfkc && !prefilter_tests::FULL_SPANS.with(std::cell::Cell::get);
                let general_cap = if text_nfkc && !cfg!(target_arch = "wasm32") {
                    term_cap
                } else {
                    MAX_SNIP
                };
                let spans_of = |text: &str| match &s.matcher {
                    Matcher::None => Vec::new(),
                    Matcher::Terms { .. } if text.is_ascii() => {
                        searched.ascii_spans(text.as_bytes(), &highlight, term_cap)
                    }
                    Matcher::Terms { .. } => {
                        searched.non_ascii_spans(text, &highlight, general_cap)
                    }
                    Matcher::Phrase { phrase, .. } => phrase.spans(text, MAX_SNIP),
                    Matcher::Regex(re) => re.find_spans(text, MAX_SNIP),
                };
                let spans = spans_of(text);
                let mut snip = Some(snippet(text, &spans, &SnippetOptions::default()));
                let mut snippet_unavailable = None;
                if spans.is_empty() && lexical && e.truncated() {
                    // The matches lie past the stored cut: the window is read from source.
                    let entry = slot.catalog.and_then(|i| index.entries().get(i));
                    let (sn, why) = crate::source_text::entry_snippet(
                        index,
                        entry,
                        &e,
                        &opts.policy,
                        Some(&spans_of),
                    );
                    snip = sn;
                    snippet_unavailable = why.map(|u| u.code().to_owned());
                }
                let (follow, bound) = Call::expand_entry(
                    slot.file(),
                    entry,
                    slot.source_hash(),
                    slot.lineage(),
                    branches_arg,
                );
                args_bound = Some(Ok(bound));
                Hit {
                    kind: HitKind::Entry,
                    session_id: slot.session_id().to_string(),
                    file: slot.file().to_string(),
                    entry_id: Some(e.entry_id().map_err(ce)?.to_owned()),
                    index: Some(u64::from(entry)),
                    operation_address: e.operation_address().map_err(ce)?.map(str::to_owned),
                    role: e.role().map_err(ce)?.map(str::to_owned),
                    tool: e.tool().map_err(ce)?.map(str::to_owned),
                    outcome: e.outcome().map_err(ce)?,
                    timestamp: e.timestamp().map_err(ce)?,
                    score: round(score),
                    snippet: snip,
                    snippet_unavailable,
                    matched_terms: Vec::new(),
                    matched_structural_entries: Vec::new(),
                    matched_in,
                    follow,
                }
            }
            Item::Cold(k) => {
                let c = &s.colds[k];
                let structural = match slot.catalog {
                    Some(ci) if c.structural_later => {
                        match index.cold_shared_in(ci, s.epoch(index))? {
                            Some(d) => {
                                let mut m = structural_matches(&v, &d)?.unwrap_or_default();
                                m.truncate(MAX_STRUCTURAL_ENTRIES);
                                structural_entries(&d, &m)
                            }
                            None => {
                                digest_missing = true;
                                Vec::new()
                            }
                        }
                    }
                    Some(ci) => match s.cold_structural.binary_search_by_key(&k, |f| f.0) {
                        Ok(f) => index
                            .cold_shared_in(ci, s.epoch(index))?
                            .map(|d| structural_entries(&d, &s.cold_structural[f].1))
                            .unwrap_or_default(),
                        Err(_) => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                let calls = match cold_follow.take() {
                    Some(calls) => calls,
                    None => SessionRecalls::new(RecallRequest {
                        cwd: None,
                        entry_range: None,
                        offset: None,
                        ..req.clone()
                    })?,
                };
                let (file, hash, lineage) = (slot.file(), slot.source_hash(), slot.lineage());
                session_rest = Some(calls.rest_bound());
                args_bound = Some(Err(slot_k));
                args_coarse = coarse.then(|| calls.args_coarse(file, hash, lineage));
                let follow = calls.call(file, hash, lineage);
                cold_follow = Some(calls);
                Hit {
                    matched_terms: s.cold_terms.terms(&c.notes()),
                    matched_structural_entries: structural,
                    ..precision::session_hit_of(
                        slot,
                        round(score),
                        slot.last_ts().and_then(format_rfc3339_ms),
                        follow,
                    )
                }
            }
            Item::Session => precision::session_hit(
                slot,
                req,
                round(score),
                slot.last_ts().and_then(format_rfc3339_ms),
            )?,
            Item::ColdEntry => {
                match precision::cold_entry_hit(
                    index,
                    s.epoch(index),
                    slot,
                    entry,
                    round(score),
                    branches_arg,
                )? {
                    Some(h) => h,
                    None => continue,
                }
            }
        };
        // The finer bound of a hit whose call's args are found as `a` says.
        let fine = |hit: &Hit, a: Option<Result<usize, usize>>| match a {
            Some(Ok(b)) => hit.json_len_bound_with(b),
            Some(Err(k)) => match (session_rest, slots.get(k)) {
                (Some(rest), Some(sl)) => hit.json_len_bound_with(session_args_len(
                    rest,
                    json_str_len,
                    [sl.file(), sl.source_hash(), sl.lineage()],
                )),
                _ => hit.json_len_bound(),
            },
            None => hit.json_len_bound(),
        };
        debug_assert!(hit.json_len_bound() >= json_len(&hit));
        debug_assert_eq!(fine(&hit, args_bound), hit.json_len_bound());
        if coarse {
            let len = match (args_coarse, args_bound) {
                (Some(c), _) | (None, Some(Ok(c))) => hit.json_len_coarse_with(c),
                _ => fine(&hit, args_bound),
            } + 1;
            debug_assert!(len > fine(&hit, args_bound));
            // Coarse while that shows this hit and as many more of its length fit: a page
            // that the coarse bounds would not show fitting is counted finely from the start.
            if used.saturating_add(len.saturating_mul(page_left + 1)) <= MAX_PAGE_CHARS {
                used += len;
                hits.push(hit);
                fine_args.push(args_bound);
                continue;
            }
            coarse = false;
            #[cfg(test)]
            if !hits.is_empty() {
                prefilter_tests::COARSE_SWITCHES.with(|c| c.set(c.get() + 1));
            }
            used = base
                + hits
                    .iter()
                    .zip(&fine_args)
                    .map(|(h, &a)| fine(h, a) + 1)
                    .sum::<usize>();
        }
        let mut len = if exact {
            json_len(&hit)
        } else {
            fine(&hit, args_bound)
        } + 1;
        if !hits.is_empty() && used + len > MAX_PAGE_CHARS && !exact {
            exact = true;
            used = base + hits.iter().map(|h| json_len(h) + 1).sum::<usize>();
            len = json_len(&hit) + 1;
        }
        if !hits.is_empty() && used + len > MAX_PAGE_CHARS {
            break;
        }
        used += len;
        hits.push(hit);
    }
    if digest_missing {
        s.coverage.add_reason("index_file_missing");
    }
    let end = offset.saturating_add(hits.len());
    let next = if (end as u64) < total {
        let mut n = req.clone();
        n.offset = Some(end as u64);
        if single {
            n.source_hash = Some(slots[0].source_hash().to_string());
            n.lineage_fingerprint = Some(slots[0].lineage().to_string());
        }
        Some(Call::recall(&n)?)
    } else {
        None
    };
    let (mut entries, mut entry_tfs) = (s.entries, s.entry_tfs);
    entries.clear();
    entry_tfs.clear();
    index.keep_scratch(Scratch { entries, entry_tfs });
    Ok(Page {
        total,
        hits,
        next,
        coverage: s.coverage,
        error: None,
    })
}

#[cfg(test)]
mod advance_tests {
    use super::advance_to;
    use crate::test_util::xorshift;

    /// Over random ascending lists and ascending probes (repeats included), each answer is the
    /// probe's membership and what is left is every value from the probe on.
    #[test]
    fn advance_to_is_membership_and_drops_the_smaller() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for len in [0usize, 1, 2, 3, 7, 64, 500] {
            for _ in 0..40 {
                let mut v: Vec<u32> = (0..len).map(|_| next(1_000) as u32).collect();
                v.sort_unstable();
                v.dedup();
                let mut probes: Vec<u32> = (0..next(60) + 1).map(|_| next(1_100) as u32).collect();
                probes.sort_unstable();
                let mut left: &[u32] = &v;
                for &x in &probes {
                    let held = advance_to(&mut left, x);
                    assert_eq!(held, v.binary_search(&x).is_ok(), "{v:?} {x}");
                    let want: Vec<u32> = v.iter().copied().filter(|&y| y >= x).collect();
                    assert_eq!(left, want.as_slice(), "{v:?} {x}");
                }
            }
        }
    }
}

#[cfg(test)]
mod prefilter_tests {
    //! The catalog's candidate sessions change what a term query opens, never its page:
    //! every query below answers the same with and without them.

    use std::cell::Cell;
    use std::collections::BTreeSet;
    use std::path::Path;

    use fst::Streamer;
    use sessiondex_source::{Branches, Outcome};

    use super::{json_len, recall, QueryContext, MAX_PAGE_CHARS};
    use crate::memory::{MemoryConfig, MemoryIndex};
    use crate::request::{FieldGroup, QueryMatch, QueryMode, RecallRequest, Scope};

    thread_local! {
        pub(super) static EXHAUSTIVE: Cell<bool> = const { Cell::new(false) };
        pub(super) static VISIT_ALL: Cell<bool> = const { Cell::new(false) };
        /// Hot shards' filters look at every entry (no whole-column scans first).
        pub(super) static ENTRY_WALK: Cell<bool> = const { Cell::new(false) };
        /// A digest budget in place of [`super::CANDIDATE_DIGEST_BUDGET`].
        pub(super) static DIGEST_BUDGET: Cell<Option<usize>> = const { Cell::new(None) };
        /// A one-term query takes the path of several terms (postings as sorted triples).
        pub(super) static TRIPLES: Cell<bool> = const { Cell::new(false) };
        /// A page counts its hits by the finer bounds from the first (no coarse ones).
        pub(super) static FINE_ONLY: Cell<bool> = const { Cell::new(false) };
        /// Pages that counted hits by coarse bounds, then finely.
        pub(super) static COARSE_SWITCHES: Cell<usize> = const { Cell::new(0) };
        /// A page hit's text that is not ASCII is searched whole for its term spans.
        pub(super) static FULL_SPANS: Cell<bool> = const { Cell::new(false) };
    }

    /// Texts that are not ASCII (NFKC and not, accents, CJK, a combining mark, a ligature,
    /// Turkish capitals, emoji), holding the query's terms once, twice or in both text and
    /// reasoning, whole and cut: every page's snippets, and so every page, equal those of a
    /// search of each text whole.
    #[test]
    fn capped_spans_of_mixed_text_give_the_whole_search_pages() {
        for index_thinking in [false, true] {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: Some(1_000),
                max_entry_chars: 120,
                index_thinking,
                ..MemoryConfig::default()
            });
            let words = [
                "caf\u{e9}",
                "\u{65e5}\u{672c}",
                "\u{130}stanbul",
                "na\u{131}ve",
                "\u{1f680}",
                "stra\u{df}e",
                "\u{4e2d}\u{6587}",
                "word",
                "e\u{301}t\u{e9}",
                "\u{fb01}le",
            ];
            let mut next = crate::test_util::xorshift(7);
            for sess in 0..8 {
                let mut lines = vec![format!(
                    r#"{{"type":"session","version":3,"id":"s{sess}","timestamp":"2026-01-01T00:0{sess}:00Z","cwd":"/p"}}"#
                )];
                for k in 0..6 {
                    let mut text = String::new();
                    for w in 0..(4 + next(40)) {
                        if w == next(6) || w == 30 + next(10) {
                            text.push_str(if next(2) == 0 { "zqa " } else { "ZQB " });
                        }
                        // Even sessions' texts are NFKC (the shard flags them so): none of the
                        // last two words (a decomposed accent, a ligature).
                        let pool = if sess % 2 == 0 { 8 } else { words.len() as u64 };
                        text.push_str(words[next(pool) as usize]);
                        text.push(' ');
                    }
                    let thought = if next(3) == 0 {
                        "zqa \u{e9}t\u{e9}"
                    } else {
                        "\u{e9}t\u{e9}"
                    };
                    let parent = if k == 0 {
                        "null".to_owned()
                    } else {
                        format!("\"m{sess}-{}\"", k - 1)
                    };
                    lines.push(format!(
                        r#"{{"type":"message","id":"m{sess}-{k}","parentId":{parent},"timestamp":"2026-01-01T00:0{sess}:0{k}Z","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"{thought}"}},{{"type":"text","text":"{text}"}}]}}}}"#
                    ));
                }
                m.add_file(&format!("s{sess}.jsonl"), lines.join("\n").as_bytes())
                    .unwrap();
            }
            let mut hits = 0;
            for query in ["zqa", "zqb", "zqa zqb", "word zqa"] {
                for matching in ["any", "all"] {
                    let capped = super::precision::tests::same_as_full(
                        &mut m,
                        serde_json::json!({
                            "query": query, "queryMatch": matching, "pageSize": 100,
                            "scope": "global"
                        }),
                        &FULL_SPANS,
                        &format!("{index_thinking} {query} {matching}"),
                    );
                    hits += capped.hits.len();
                }
            }
            assert!(hits > 100, "{index_thinking} {hits}");
        }
    }

    /// A one-term query without filters reads its postings directly: every page equals the
    /// one of the path of several terms, with `all`, fuzzy expansions (one term each or
    /// several) and deeper pages (and with filters, which take that path anyway), over every
    /// session hot and over the default tiers.
    #[test]
    fn one_term_postings_give_the_triples_pages() {
        let pages = pages_as_triples(&[
            "error",
            "the",
            "file",
            "test",
            "zeta",
            "a1b2c3d4e5f6",
            "nothing_here",
        ]);
        assert!(pages > 40, "{pages}");
    }

    /// Several terms, a term per group, have their postings merged (intersected, with `all`
    /// and no filter): every page equals the one of the triples' sort, with `any` and `all`,
    /// filters, fuzzy expansions, deeper pages, a term no shard holds, a repeated term, and
    /// more groups than are merged.
    #[test]
    fn merged_postings_give_the_triples_pages() {
        let pages = pages_as_triples(&[
            "error file",
            "the test",
            "file the",
            "zeta error nothing_here",
            "error error test",
            "the file test error read write bash user json",
        ]);
        assert!(pages > 40, "{pages}");
    }

    /// Each query with each of a few request shapes, over every session hot (reasoning
    /// indexed or not, so that an entry holds text and reasoning for a request of one field
    /// group) and over the default tiers: the page with the direct postings paths equals the
    /// one of the triples' sort. Returns how many pages held hits.
    fn pages_as_triples(queries: &[&str]) -> usize {
        let all = corpus();
        let mut pages = 0;
        for (hot, index_thinking) in [(Some(10_000), false), (Some(10_000), true), (None, false)] {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: hot,
                index_thinking,
                ..MemoryConfig::default()
            });
            for (name, bytes) in &all {
                m.add_file(name, bytes).unwrap();
            }
            let opts = m.engine_options();
            let index = m.index(Branches::Active).unwrap();
            for &query in queries {
                for extra in [
                    serde_json::json!({}),
                    serde_json::json!({"queryMatch": "all"}),
                    serde_json::json!({"tool": "bash"}),
                    serde_json::json!({"role": "user"}),
                    serde_json::json!({"queryMode": "fuzzy"}),
                    serde_json::json!({"offset": 5, "pageSize": 7}),
                    serde_json::json!({"in": ["text"]}),
                    serde_json::json!({"in": ["thinking"]}),
                    serde_json::json!({"in": ["tool_output"], "queryMatch": "all"}),
                    serde_json::json!({"in": ["tool_input", "text"], "tool": "bash"}),
                ] {
                    let mut j =
                        serde_json::json!({"scope": "global", "query": query, "pageSize": 20});
                    for (k, v) in extra.as_object().unwrap() {
                        j[k] = v.clone();
                    }
                    let req = RecallRequest::from_json(&j).unwrap();
                    let direct = recall(index, &opts, &QueryContext::default(), &req).unwrap();
                    TRIPLES.with(|c| c.set(true));
                    let triples = recall(index, &opts, &QueryContext::default(), &req).unwrap();
                    TRIPLES.with(|c| c.set(false));
                    assert_eq!(
                        serde_json::to_value(&direct).unwrap(),
                        serde_json::to_value(&triples).unwrap(),
                        "{j}"
                    );
                    pages += usize::from(!direct.hits.is_empty());
                }
            }
        }
        pages
    }

    fn files(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut paths: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push((p.to_string_lossy().into_owned(), std::fs::read(&p).unwrap()));
            }
        }
    }

    /// Recalls `req` with the catalog's narrowing, with the narrowing but every session
    /// visited (no [`super::SessionTotals`]) and with a scan of every session, asserts the
    /// three pages are equal, and returns the narrowed one.
    fn same_page(
        index: &crate::index::Index,
        opts: &crate::EngineOptions,
        req: &RecallRequest,
        what: &str,
    ) -> crate::request::Page {
        let fast = recall(index, opts, &QueryContext::default(), req).unwrap();
        VISIT_ALL.with(|c| c.set(true));
        let visited = recall(index, opts, &QueryContext::default(), req).unwrap();
        VISIT_ALL.with(|c| c.set(false));
        EXHAUSTIVE.with(|c| c.set(true));
        let slow = recall(index, opts, &QueryContext::default(), req).unwrap();
        EXHAUSTIVE.with(|c| c.set(false));
        ENTRY_WALK.with(|c| c.set(true));
        let walked = recall(index, opts, &QueryContext::default(), req).unwrap();
        ENTRY_WALK.with(|c| c.set(false));
        let fast_json = serde_json::to_value(&fast).unwrap();
        assert_eq!(fast_json, serde_json::to_value(&visited).unwrap(), "{what}");
        assert_eq!(fast_json, serde_json::to_value(&slow).unwrap(), "{what}");
        assert_eq!(fast_json, serde_json::to_value(&walked).unwrap(), "{what}");
        fast
    }

    /// Every session hot: each tool, role and outcome the corpus holds as a filter, alone
    /// and paired, with and without a query, gives the page of a walk over every entry (the
    /// whole-column scans pick no other entries). The hits are checked against the records.
    #[test]
    fn column_scans_give_the_walks_pages() {
        let all = corpus();
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(10_000),
            ..MemoryConfig::default()
        });
        let mut tools = std::collections::BTreeSet::new();
        let mut roles = std::collections::BTreeSet::new();
        for (name, bytes) in &all {
            m.add_file(name, bytes).unwrap();
            let opts = sessiondex_source::ReadOptions::default();
            if let Ok(s) = sessiondex_source::read_bytes(name, bytes, &opts) {
                for r in s.select(Branches::Active).records {
                    tools.extend(r.tool.clone());
                    roles.extend(r.role.clone());
                }
            }
        }
        assert!(tools.len() >= 5, "{tools:?}");
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        let outcomes = [None, Some("failed"), Some("succeeded")];
        let mut checked = 0;
        let mut timed = 0;
        for tool in tools
            .iter()
            .map(Some)
            .chain([None, Some(&"absent_tool".to_owned())])
        {
            for outcome in outcomes {
                for role in [None, roles.first(), roles.last()] {
                    for query in [None, Some("error"), Some("the")] {
                        if tool.is_none() && outcome.is_none() && role.is_none() {
                            continue;
                        }
                        let mut j = serde_json::json!({"scope": "global", "pageSize": 50});
                        if let Some(t) = tool {
                            j["tool"] = t.as_str().into();
                        }
                        if let Some(o) = outcome {
                            j["outcome"] = o.into();
                        }
                        if let Some(r) = role {
                            j["role"] = r.as_str().into();
                        }
                        if let Some(q) = query {
                            j["query"] = q.into();
                        }
                        let req = RecallRequest::from_json(&j).unwrap();
                        let page = same_page(index, &opts, &req, &j.to_string());
                        for h in &page.hits {
                            let hit = serde_json::to_value(h).unwrap();
                            if let Some(t) = tool {
                                assert_eq!(hit["tool"], t.as_str(), "{j}");
                            }
                            if let Some(o) = outcome {
                                assert_eq!(hit["outcome"], o, "{j}");
                            }
                            if let Some(r) = role {
                                assert_eq!(hit["role"], r.as_str(), "{j}");
                            }
                        }
                        checked += usize::from(!page.hits.is_empty());
                        // The same filters from and up to a hit's time: picked entries are
                        // still checked against the time filters.
                        let times: Vec<String> = page
                            .hits
                            .iter()
                            .filter_map(|h| h.timestamp.clone())
                            .collect();
                        let Some(mid) = times.get(times.len() / 2).filter(|_| times.len() > 1)
                        else {
                            continue;
                        };
                        for bound in ["since", "until"] {
                            let mut jt = j.clone();
                            jt[bound] = mid.as_str().into();
                            let req = RecallRequest::from_json(&jt).unwrap();
                            let page = same_page(index, &opts, &req, &jt.to_string());
                            for h in &page.hits {
                                let t = h.timestamp.as_deref().unwrap_or_default();
                                let inside = if bound == "since" {
                                    t >= mid.as_str()
                                } else {
                                    t <= mid.as_str()
                                };
                                assert!(inside, "{t} {jt}");
                            }
                            timed += usize::from(!page.hits.is_empty());
                        }
                    }
                }
            }
        }
        assert!(checked >= 20, "{checked} pages with hits");
        assert!(timed >= 20, "{timed} pages with hits and a time filter");
    }

    /// The repo's own sessions: bundled examples, damaged and secret test files, id cases.
    fn corpus() -> Vec<(String, Vec<u8>)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut all = Vec::new();
        for d in [
            "examples/sessions",
            "testdata/sessions",
            "testdata/queries/identifiers/ids",
        ] {
            files(&root.join(d), &mut all);
        }
        all
    }

    /// An index keeps a call's candidate vectors for the next call, and a call keeps its
    /// shards' filter memos, pairings and kept entries from one shard to the next: calls of
    /// every kind in a row, forwards and backwards, on one index (all hot, and default tiers)
    /// give each the page the same call gives on an index that answered nothing before.
    #[test]
    fn calls_in_a_row_give_the_pages_of_a_new_index() {
        let requests = [
            serde_json::json!({"scope": "global", "tool": "bash", "outcome": "failed"}),
            serde_json::json!({"scope": "global", "query": "error"}),
            serde_json::json!({"scope": "global", "outcome": "succeeded", "pageSize": 3}),
            serde_json::json!({"scope": "global", "query": "the file", "queryMatch": "all"}),
            serde_json::json!({"scope": "global", "tool": "read"}),
            serde_json::json!({"scope": "global", "query": "test", "role": "assistant"}),
            serde_json::json!({"scope": "global", "query": "absentword"}),
            serde_json::json!({"scope": "global", "query": "fail", "queryMode": "regex"}),
            serde_json::json!({"scope": "global", "tool": "bash", "outcome": "succeeded"}),
            serde_json::json!({"scope": "global", "query": "no such", "queryMode": "phrase"}),
        ];
        let requests: Vec<RecallRequest> = requests
            .iter()
            .map(|j| RecallRequest::from_json(j).unwrap())
            .collect();
        let all = corpus();
        for hot_sessions in [Some(10_000), None] {
            let build = || {
                let mut m = MemoryIndex::new(MemoryConfig {
                    hot_sessions,
                    ..MemoryConfig::default()
                });
                for (name, bytes) in &all {
                    m.add_file(name, bytes).unwrap();
                }
                m
            };
            let answer = |m: &mut MemoryIndex, req: &RecallRequest| {
                let opts = m.engine_options();
                let index = m.index(Branches::Active).unwrap();
                serde_json::to_value(recall(index, &opts, &QueryContext::default(), req).unwrap())
                    .unwrap()
            };
            let fresh: Vec<serde_json::Value> =
                requests.iter().map(|r| answer(&mut build(), r)).collect();
            assert!(fresh.iter().filter(|p| p["total"] != 0).count() >= 6);
            let mut kept = build();
            let order: Vec<usize> = (0..requests.len())
                .chain((0..requests.len()).rev())
                .collect();
            for k in order {
                assert_eq!(
                    answer(&mut kept, &requests[k]),
                    fresh[k],
                    "{k} {hot_sessions:?}"
                );
            }
        }
    }

    /// A sealed note list answers each session's notes alike with a table of starts (many
    /// notes) and with a search of the sorted notes (few).
    #[test]
    fn cold_notes_by_session_with_and_without_starts() {
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for sessions in [0usize, 1, 15, 16, 17, 64, 200] {
            for count in [0usize, 1, 3, 12, 40, 300] {
                let mut notes = Vec::new();
                for _ in 0..count {
                    // Some past the sealed sessions: never asked for, they must not move
                    // the others.
                    let sess = next(sessions as u64 + 3) as u32;
                    notes.push((sess, next(3) as u32, next(5) as u32));
                }
                let sealed = |table: bool| {
                    let mut t = super::ColdTerms::default();
                    for &(a, g, n) in &notes {
                        t.note(a, g as usize, n);
                    }
                    t.seal_with(sessions + 1, table);
                    t
                };
                let (with, without) = (sealed(true), sealed(false));
                for sess in 0..=sessions as u32 {
                    let (a, b) = (with.of(sess), without.of(sess));
                    // Stable: a session's notes in the order noted.
                    let want: Vec<_> = notes.iter().filter(|n| n.0 == sess).copied().collect();
                    assert_eq!(with.notes[a.clone()], want[..], "{sessions} {count} {sess}");
                    assert_eq!(without.notes[b], want[..], "{sessions} {count} {sess}");
                }
                // A literal query's lists (each ascending, one per group) merged give the
                // notes noting them one list after the other gives.
                let mut lists: Vec<Vec<u32>> = vec![Vec::new(); 3];
                for n in &notes {
                    lists[n.1 as usize].push(n.0);
                }
                for l in &mut lists {
                    l.sort_unstable();
                    l.dedup();
                }
                let names = [4, 9, 2];
                for table in [true, false] {
                    let mut merged = super::ColdTerms::default();
                    merged.merge_sorted(&lists, &names);
                    merged.seal_with(sessions + 1, table);
                    let mut noted = super::ColdTerms::default();
                    for (g, l) in lists.iter().enumerate() {
                        for &sess in l {
                            noted.note(sess, g, names[g]);
                        }
                    }
                    noted.seal_with(sessions + 1, table);
                    for sess in 0..=sessions as u32 + 3 {
                        let (a, b) = (merged.of(sess), noted.of(sess));
                        assert_eq!(merged.notes[a], noted.notes[b], "{sessions} {count} {sess}");
                    }
                }
            }
        }
    }

    /// Candidates come newest first whichever way they are found (a pass and a sort by rank
    /// for few, a filter of the whole order for many).
    #[test]
    fn candidates_come_newest_first() {
        let mut m = MemoryIndex::new(MemoryConfig::default());
        for (name, bytes) in corpus() {
            m.add_file(&name, &bytes).unwrap();
        }
        // More sessions, some sharing a last time (the order then goes by path); enough
        // that both ways run (a sort for under a 64th of them, a filter for more).
        for k in 0..640 {
            let (id, day) = (format!("order{k}"), 1 + (k * 7) % 13);
            let ts = format!("2026-02-{day:02}T00:00:00Z");
            let text = concat!(
                r#"{"type":"session","version":3,"id":"ID","timestamp":"TS","cwd":"/p"}"#,
                "\n",
                r#"{"type":"message","id":"ID-1","parentId":null,"timestamp":"TS","message":{"role":"user","content":"order"}}"#,
                "\n"
            )
            .replace("ID", &id)
            .replace("TS", &ts);
            m.add_file(&format!("{id}.jsonl"), text.as_bytes()).unwrap();
        }
        let index = m.index(Branches::Active).unwrap();
        let n = index.entries().len();
        assert!(n >= 640, "{n} sessions");
        let mut seed = 11u64;
        for round in 0..120 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            // From a handful of candidates (sorted) to most of them (filtered); sometimes
            // shorter than the index.
            let every = if round % 3 == 0 {
                120 + round as u64
            } else {
                1 + (round % 12) as u64
            };
            let len = if round % 7 == 0 { n - 3 } else { n };
            let cands: Vec<bool> = (0..len)
                .map(|i| {
                    (seed >> (i % 40))
                        .wrapping_add(i as u64)
                        .is_multiple_of(every)
                })
                .collect();
            let want: Vec<usize> = index
                .newest_first()
                .iter()
                .map(|&i| i as usize)
                .filter(|&i| cands.get(i).copied().unwrap_or(true))
                .collect();
            assert_eq!(
                super::candidates_newest_first(index, &cands, None),
                want,
                "{round}"
            );
            if len == n {
                // Every marked session listed, with some unmarked ones among them.
                let few: Vec<u32> = (0..n as u32)
                    .filter(|&i| cands[i as usize] || (i as u64 + seed).is_multiple_of(5))
                    .collect();
                assert_eq!(
                    super::candidates_newest_first(index, &cands, Some(&few)),
                    want,
                    "{round}, listed"
                );
            }
        }
    }

    /// A pi session of `calls` tool calls (each with its result), call k naming tool
    /// `tool{k % distinct}` and holding `marker` when k is a multiple of 3.
    fn tool_session(calls: usize, distinct: usize) -> Vec<u8> {
        let mut out = String::from(
            r#"{"type":"session","version":3,"id":"019a4c1e-0000-7c3d-9e10-4a2b3c4d5e6f","timestamp":"2026-11-02T09:14:03.120Z","cwd":"/w"}"#,
        );
        out.push('\n');
        let mut parent = "null".to_owned();
        for k in 0..calls {
            let tool = format!("tool{}", k % distinct);
            let word = if k % 3 == 0 { "marker" } else { "plain" };
            let (a, t) = (format!("a{k:06}"), format!("t{k:06}"));
            out.push_str(&format!(
                r#"{{"type":"message","id":"{a}","parentId":{parent},"timestamp":"2026-11-02T09:14:15.000Z","message":{{"role":"assistant","content":[{{"type":"text","text":"step {word}"}},{{"type":"toolCall","id":"c{k}","name":"{tool}","arguments":{{"path":"f{k}"}}}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":1793610855000}}}}"#
            ));
            out.push('\n');
            out.push_str(&format!(
                r#"{{"type":"message","id":"{t}","parentId":"{a}","timestamp":"2026-11-02T09:14:15.200Z","message":{{"role":"toolResult","toolCallId":"c{k}","toolName":"{tool}","isError":{},"content":[{{"type":"text","text":"out {word}"}}],"timestamp":1793610855200}}}}"#,
                k % 4 == 0
            ));
            out.push('\n');
            parent = format!("\"{t}\"");
        }
        out.into_bytes()
    }

    /// Two filters' entry lists meet in the entries both hold, ascending, at any lengths and
    /// overlaps (against a set's intersection); a list out of order or past the shard is
    /// `index_corrupt`.
    #[test]
    fn entry_lists_meet_as_sets_do() {
        let mut seed = 11u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        for (la, lb, span) in [
            (0, 5, 10),
            (1, 1, 2),
            (7, 300, 400),
            (64, 65, 70),
            (500, 20, 100_000),
        ] {
            let mut a: Vec<u32> = (0..la).map(|_| next() % span).collect();
            let mut b: Vec<u32> = (0..lb).map(|_| next() % span).collect();
            a.sort_unstable();
            a.dedup();
            b.sort_unstable();
            b.dedup();
            let want: Vec<u32> = a.iter().copied().filter(|x| b.contains(x)).collect();
            assert_eq!(super::intersect(&a, &b), want, "{la} {lb} {span}");
            assert_eq!(super::intersect(&b, &a), want, "{la} {lb} {span}");
        }
        // A value repeated (a damaged list) is still met once.
        assert_eq!(super::intersect(&[1, 1, 2, 5, 5], &[1, 5, 5, 7]), [1, 5]);
        assert_eq!(super::intersect(&[1, 5, 5, 7], &[1, 1, 2, 5, 5]), [1, 5]);
        let bytes = tool_session(20, 3);
        let opts = sessiondex_source::ReadOptions::default();
        let s = sessiondex_source::read_bytes("t.jsonl", &bytes, &opts).unwrap();
        let sel = s.select(Branches::Active);
        let built = sessiondex_core::hot::build(&s.meta, &sel, &sessiondex_core::Policy::default())
            .unwrap();
        let shard = sessiondex_core::hot::HotShard::open(&built[..]).unwrap();
        let tools = shard
            .entry_lists(sessiondex_core::hot::ListField::Tool)
            .unwrap();
        let l = tools.get(0).unwrap();
        let (got, tokens) = super::list_entries(Some(&l), shard.entry_count()).unwrap();
        assert_eq!(got, l.iter().collect::<Vec<_>>());
        assert_eq!(tokens, Some(l.tokens));
        let last = *got.last().unwrap() as usize;
        let e = super::list_entries(Some(&l), last).unwrap_err();
        assert_eq!(e.code_str(), "index_corrupt");
    }

    /// A long session's tool filter (its value's entry list, then the picked entries counted
    /// without a view each) gives the pages of a walk over every entry, with and without a query,
    /// with an outcome too, over a column of few tools and one of many.
    #[test]
    fn tool_filters_of_long_sessions_give_the_walks_pages() {
        for distinct in [3, 40] {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: Some(10_000),
                ..MemoryConfig::default()
            });
            m.add_file("/w/s.jsonl", &tool_session(300, distinct))
                .unwrap();
            let opts = m.engine_options();
            let index = m.index(Branches::Active).unwrap();
            for tool in ["tool0", "tool2", "absent"] {
                for extra in [
                    serde_json::json!({}),
                    serde_json::json!({"query": "marker"}),
                    serde_json::json!({"query": "marker plain", "queryMatch": "all"}),
                    serde_json::json!({"query": "marker", "outcome": "failed"}),
                    serde_json::json!({"outcome": "failed"}),
                ] {
                    let mut j = serde_json::json!({"scope": "global", "tool": tool, "pageSize": 7});
                    for (k, v) in extra.as_object().unwrap() {
                        j[k] = v.clone();
                    }
                    let req = RecallRequest::from_json(&j).unwrap();
                    let page = same_page(index, &opts, &req, &j.to_string());
                    let calls = (0..300).filter(|k| format!("tool{}", k % distinct) == tool);
                    let want = match (j.get("query").is_some(), j.get("outcome").is_some()) {
                        // Calls and results of the tool.
                        (false, false) => 2 * calls.count(),
                        // The results of every third call (a call's text is its arguments).
                        (true, false) if j["queryMatch"] != "all" => {
                            calls.filter(|k| k % 3 == 0).count()
                        }
                        // No record holds both words.
                        (true, false) => 0,
                        // The failed calls (every fourth): with a query the results holding
                        // it, without one each call once (its result defers to it).
                        (true, true) => calls.filter(|k| k % 12 == 0).count(),
                        (false, true) => calls.filter(|k| k % 4 == 0).count(),
                    };
                    assert_eq!(page.total, want as u64, "{j}");
                }
            }
        }
    }

    /// Flags counted and found by words of eight: as one at a time, at every length and
    /// density (past 255 words a sum starts again).
    #[test]
    fn flags_by_words_are_flags_one_at_a_time() {
        let mut seed = 7u64;
        for len in [
            0, 1, 7, 8, 9, 63, 64, 65, 2039, 2040, 2041, 2047, 4212, 10_000,
        ] {
            for every in [1u64, 2, 3, 17, 200] {
                let flags: Vec<bool> = (0..len)
                    .map(|_| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        (seed >> 33).is_multiple_of(every)
                    })
                    .collect();
                let want = flags.iter().filter(|&&f| f).count();
                assert_eq!(super::count_flags(&flags), want, "{len} {every}");
                let at: Vec<usize> = flags
                    .chunks_exact(8)
                    .enumerate()
                    .flat_map(|(w, c)| {
                        let mut bits = super::flag_word(c);
                        std::iter::from_fn(move || {
                            (bits != 0).then(|| {
                                let j = (bits.trailing_zeros() / 8) as usize;
                                bits &= bits - 1;
                                w * 8 + j
                            })
                        })
                    })
                    .collect();
                let whole = len - len % 8;
                let naive: Vec<usize> = (0..whole).filter(|&i| flags[i]).collect();
                assert_eq!(at, naive, "{len} {every}");
            }
        }
    }

    /// Cold sessions answer with the terms their vocabularies hold, from the catalog: each
    /// distinct term once, in the order the query's groups found them, a session holding
    /// more query groups first.
    #[test]
    fn cold_sessions_name_their_matched_terms() {
        let session = |id: &str, ts: &str, text: &str| {
            format!(
                "{}\n{}\n",
                format_args!(
                    r#"{{"type":"session","version":3,"id":"{id}","timestamp":"{ts}","cwd":"/p"}}"#
                ),
                format_args!(
                    r#"{{"type":"message","id":"{id}-1","parentId":null,"timestamp":"{ts}","message":{{"role":"user","content":"{text}"}}}}"#
                ),
            )
        };
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(0),
            ..MemoryConfig::default()
        });
        for (name, ts, text) in [
            (
                "both.jsonl",
                "2026-01-01T00:00:01Z",
                "kestrel kestrels harbor",
            ),
            ("one.jsonl", "2026-01-01T00:00:02Z", "kestrel alone"),
            (
                "port.jsonl",
                "2026-01-01T00:00:03Z",
                "harbors harbor kestrelx",
            ),
            ("none.jsonl", "2026-01-01T00:00:04Z", "nothing here"),
        ] {
            m.add_file(name, session(name, ts, text).as_bytes())
                .unwrap();
        }
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        let page = |req: serde_json::Value| {
            let mut r = RecallRequest::from_json(&req).unwrap();
            r.scope = Some(Scope::Global);
            let p = same_page(index, &opts, &r, &req.to_string());
            p.hits
                .iter()
                .map(|h| (h.file.clone(), h.matched_terms.join(" ")))
                .collect::<Vec<_>>()
        };
        let pairs = |v: &[(&str, &str)]| {
            v.iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            page(serde_json::json!({"query": "kestrel harbor"})),
            pairs(&[
                ("both.jsonl", "kestrel harbor"),
                ("port.jsonl", "harbor"),
                ("one.jsonl", "kestrel"),
            ])
        );
        // `all`: only a session holding both; the others still count in the terms'
        // document frequencies (the score is the one a visit of every session gives).
        assert_eq!(
            page(serde_json::json!({"query": "kestrel harbor", "queryMatch": "all"})),
            pairs(&[("both.jsonl", "kestrel harbor")])
        );
        assert_eq!(
            page(serde_json::json!({"query": "kestrel harbor nothing", "queryMatch": "all"})),
            pairs(&[])
        );
        // Groups past the 64 a cold candidate keeps as bits are read from its notes.
        let filler: Vec<String> = (0..64).map(|i| format!("absent{i}")).collect();
        assert_eq!(
            page(serde_json::json!({"query": format!("{} kestrel harbor", filler.join(" "))})),
            pairs(&[
                ("both.jsonl", "kestrel harbor"),
                ("port.jsonl", "harbor"),
                ("one.jsonl", "kestrel"),
            ])
        );
        assert_eq!(
            page(serde_json::json!({"query": "harbor kestrel", "queryMode": "fuzzy"})),
            pairs(&[
                ("port.jsonl", "harbor harbors kestrelx"),
                ("both.jsonl", "harbor kestrel kestrels"),
                ("one.jsonl", "kestrel"),
            ])
        );
        // Both groups expand to the same terms (each named once), so every session holds
        // both groups and the newest comes first.
        assert_eq!(
            page(serde_json::json!({"query": "kestrel kestrels", "queryMode": "fuzzy"})),
            pairs(&[
                ("port.jsonl", "kestrelx"),
                ("one.jsonl", "kestrel"),
                ("both.jsonl", "kestrel kestrels"),
            ])
        );
        assert_eq!(
            page(serde_json::json!({"query": "kestrel[a-z]+", "queryMode": "regex"})),
            pairs(&[("port.jsonl", "kestrelx"), ("both.jsonl", "kestrels")])
        );
        assert_eq!(
            page(serde_json::json!({"query": "harbor kestrel", "queryMode": "phrase"})),
            // Per token, the first term (in vocabulary order) that can carry it.
            pairs(&[
                ("port.jsonl", "harbor kestrelx"),
                ("both.jsonl", "harbor kestrel")
            ])
        );
    }

    /// Without a query every hit scores the same: newer sessions first, whichever entry
    /// holds the match (the oldest session's is its first entry, the newest's its fifth).
    #[test]
    fn structural_pages_go_newest_first() {
        let session = |i: usize| {
            let mut lines = vec![format!(
                r#"{{"type":"session","version":3,"id":"n{i}","timestamp":"2026-01-01T00:00:0{i}Z","cwd":"/p"}}"#
            )];
            let mut parent = "null".to_owned();
            for k in 0..2 * i {
                lines.push(format!(
                    r#"{{"type":"message","id":"u{k}","parentId":{parent},"timestamp":"2026-01-01T00:00:0{i}Z","message":{{"role":"user","content":"step {k}"}}}}"#
                ));
                parent = format!("\"u{k}\"");
            }
            lines.push(format!(
                r#"{{"type":"message","id":"a","parentId":{parent},"timestamp":"2026-01-01T00:00:0{i}Z","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"call_a","name":"bash","arguments":{{"command":"make"}}}}]}}}}"#
            ));
            lines.join("\n") + "\n"
        };
        let mut m = MemoryIndex::new(MemoryConfig::default());
        for i in 0..3 {
            m.add_file(&format!("n{i}.jsonl"), session(i).as_bytes())
                .unwrap();
        }
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        let mut r = RecallRequest::from_json(&serde_json::json!({"tool": "bash"})).unwrap();
        r.scope = Some(Scope::Global);
        let page = same_page(index, &opts, &r, "tool bash");
        let files: Vec<&str> = page.hits.iter().map(|h| h.file.as_str()).collect();
        assert_eq!(files, ["n2.jsonl", "n1.jsonl", "n0.jsonl"]);
    }

    /// With one structural filter the catalog's field keys prove the cold candidates, with two
    /// its pair keys (a record holds both values; a session holding them in two records is no
    /// candidate): only the page's hits read their digests (and name their entries). With
    /// three, every candidate's digest is read. The page is the one reading every digest
    /// gives.
    #[test]
    fn one_or_two_structural_filters_read_only_the_page_digests() {
        // Every session's second step fails; in every third one that step is `grep`, so
        // `bash` and `failed` are in two different records.
        let tool = |i: usize, k: usize| {
            if i.is_multiple_of(3) && k == 1 {
                "grep"
            } else {
                "bash"
            }
        };
        let session = |i: usize| {
            let mut lines = vec![format!(
                r#"{{"type":"session","version":3,"id":"s{i}","timestamp":"2026-01-01T00:00:{i:02}Z","cwd":"/p"}}"#
            )];
            for k in 0..3 {
                lines.push(format!(
                    r#"{{"type":"message","id":"a{k}","parentId":{},"timestamp":"2026-01-01T00:00:{i:02}Z","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"call_{k}","name":"{}","arguments":{{"command":"make step{k}"}}}}]}}}}"#,
                    if k == 0 { "null".to_owned() } else { format!("\"r{}\"", k - 1) },
                    tool(i, k)
                ));
                lines.push(format!(
                    r#"{{"type":"message","id":"r{k}","parentId":"a{k}","timestamp":"2026-01-01T00:00:{i:02}Z","message":{{"role":"toolResult","content":[{{"type":"text","text":"done"}}],"toolCallId":"call_{k}","toolName":"{}","isError":{}}}}}"#,
                    tool(i, k),
                    k == 1
                ));
            }
            lines.join("\n") + "\n"
        };
        let fresh = || {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: Some(0),
                ..MemoryConfig::default()
            });
            for i in 0..12 {
                m.add_file(&format!("s{i:02}.jsonl"), session(i).as_bytes())
                    .unwrap();
            }
            m
        };
        let pages = |index: &crate::index::Index, files: &[&str]| -> u64 {
            files
                .iter()
                .map(|f| {
                    let i = index
                        .entries()
                        .iter()
                        .position(|e| e.summary.file == *f)
                        .unwrap();
                    let len = index.cold(i).unwrap().unwrap().bytes().as_ref().len() as u64;
                    len.div_ceil(4096) * 4096
                })
                .sum()
        };
        let all: Vec<String> = (0..12).map(|i| format!("s{i:02}.jsonl")).collect();
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        for (req, total, reads_all) in [
            (serde_json::json!({"tool": "bash"}), 12, false),
            (serde_json::json!({"outcome": "failed"}), 12, false),
            (
                serde_json::json!({"tool": "bash", "outcome": "failed"}),
                8,
                false,
            ),
            (
                serde_json::json!({"role": "tool", "tool": "bash", "outcome": "failed"}),
                8,
                true,
            ),
        ] {
            let mut r = RecallRequest::from_json(&req).unwrap();
            r.scope = Some(Scope::Global);
            r.page_size = Some(2);
            let mut m = fresh();
            let opts = m.engine_options();
            let index = m.index(Branches::Active).unwrap();
            let page = recall(index, &opts, &QueryContext::default(), &r).unwrap();
            assert_eq!((page.total, page.hits.len()), (total, 2), "{req}");
            for h in &page.hits {
                assert!(!h.matched_structural_entries.is_empty(), "{req}");
            }
            let on_page: Vec<&str> = page.hits.iter().map(|h| h.file.as_str()).collect();
            let read = if reads_all { &all[..] } else { &on_page[..] };
            assert_eq!(index.cold_kept_bytes(), pages(index, read), "{req}");
            // The same page as reading every digest.
            same_page(index, &opts, &r, &req.to_string());
        }
    }

    /// A pi log's header line for session `id`, and the parent id of its first entry.
    fn pi_header(id: &str) -> (Vec<String>, String) {
        let header = format!(
            r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}}"#
        );
        (vec![header], "null".to_owned())
    }

    /// With an outcome and no query a result defers only to a call with its outcome: two
    /// calls share the id `dup` (a log whose ids repeat, as the trimmed Codex fixture's), the
    /// first one's result failed and the second's succeeded, so both calls take `succeeded`
    /// (the last result's); the failed result is then listed, hot and cold, where it deferred
    /// to a call that did not fail and `outcome: failed` found nothing (found by `recall_run`
    /// over `../shared/fixtures/sessions`). A call with the failed outcome still takes its
    /// result's place.
    #[test]
    fn results_defer_only_to_calls_with_their_outcome() {
        let (mut lines, mut parent) = pi_header("dupids");
        for (i, id, failed) in [(0, "dup", true), (1, "dup", false), (2, "once", true)] {
            lines.push(format!(
                r#"{{"type":"message","id":"a{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:0{i}Z","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"{id}","name":"bash","arguments":{{"command":"make step{i}"}}}}]}}}}"#
            ));
            lines.push(format!(
                r#"{{"type":"message","id":"r{i}","parentId":"a{i}","timestamp":"2026-01-01T00:00:0{i}Z","message":{{"role":"toolResult","content":[{{"type":"text","text":"done {i}"}}],"toolCallId":"{id}","toolName":"bash","isError":{failed}}}}}"#
            ));
            parent = format!("\"r{i}\"");
        }
        let bytes = lines.join("\n") + "\n";
        for hot in [None, Some(0)] {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: hot,
                ..MemoryConfig::default()
            });
            m.add_file("dupids.jsonl", bytes.as_bytes()).unwrap();
            let opts = m.engine_options();
            let index = m.index(Branches::Active).unwrap();
            let req = RecallRequest::from_json(
                &serde_json::json!({"outcome": "failed", "scope": "global"}),
            )
            .unwrap();
            let page = same_page(index, &opts, &req, "outcome failed");
            let named: Vec<String> = match hot {
                None => page
                    .hits
                    .iter()
                    .map(|h| h.entry_id.clone().unwrap())
                    .collect(),
                Some(_) => page.hits[0]
                    .matched_structural_entries
                    .iter()
                    .filter_map(|e| e.entry_id.clone())
                    .collect(),
            };
            let want: &[&str] = match hot {
                None => &["r0", "a2/0"],
                Some(_) => &["r0", "a2/0", "r2"],
            };
            let mut named = named;
            named.sort();
            let mut want: Vec<&str> = want.to_vec();
            want.sort_unstable();
            assert_eq!(named, want, "hot sessions {hot:?}");
            assert!(page
                .coverage
                .reasons
                .iter()
                .all(|r| !r.starts_with("cold_")));
        }
    }

    /// A call's shards share one pairing of results with their calls, cleared for each
    /// shard: its memo is of one shard's string ids. Sessions whose string tables number the
    /// kinds differently (a preamble of 0 to 11 model changes, calls of different tools), all
    /// hot in one index, count for each outcome the sum of what each counts alone.
    #[test]
    fn shards_pair_results_with_their_own_calls() {
        let session = |k: usize| {
            let (mut lines, mut parent) = pi_header(&format!("s{k}"));
            for j in 0..k {
                lines.push(format!(
                    r#"{{"type":"model_change","id":"m{j}","parentId":{parent},"timestamp":"2026-01-01T00:00:00Z","provider":"p","modelId":"model{j}"}}"#
                ));
                parent = format!("\"m{j}\"");
            }
            for (i, failed) in [true, false, true].into_iter().enumerate() {
                let tool = ["bash", "read", "edit", "grep"][(k + i) % 4];
                lines.push(format!(
                    r#"{{"type":"message","id":"a{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:0{i}Z","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"c{k}x{i}","name":"{tool}","arguments":{{"command":"step {i}"}}}}]}}}}"#
                ));
                lines.push(format!(
                    r#"{{"type":"message","id":"r{i}","parentId":"a{i}","timestamp":"2026-01-01T00:00:0{i}Z","message":{{"role":"toolResult","content":[{{"type":"text","text":"done {i}"}}],"toolCallId":"c{k}x{i}","toolName":"{tool}","isError":{failed}}}}}"#
                ));
                parent = format!("\"r{i}\"");
            }
            lines.join("\n") + "\n"
        };
        let total = |sessions: &[usize], outcome: &str| {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: Some(10_000),
                ..MemoryConfig::default()
            });
            for &k in sessions {
                m.add_file(&format!("s{k}.jsonl"), session(k).as_bytes())
                    .unwrap();
            }
            let opts = m.engine_options();
            let index = m.index(Branches::Active).unwrap();
            let req = RecallRequest::from_json(
                &serde_json::json!({"outcome": outcome, "scope": "global"}),
            )
            .unwrap();
            same_page(index, &opts, &req, outcome).total
        };
        let all: Vec<usize> = (0..12).collect();
        for (outcome, each) in [("failed", 2), ("succeeded", 1)] {
            for &k in &all {
                assert_eq!(total(&[k], outcome), each, "s{k} {outcome}");
            }
            assert_eq!(total(&all, outcome), each * all.len() as u64, "{outcome}");
        }
    }

    /// A cold session names the entries that pass the structural filters (both filters at
    /// once, the first [`super::MAX_STRUCTURAL_ENTRIES`] by position): with one filter, the
    /// entries the same session answers with when hot.
    #[test]
    fn cold_sessions_name_their_structural_entries() {
        let (mut lines, mut parent) = pi_header("ops");
        for i in 0..14 {
            let failed = i % 4 == 3;
            // The last call, to another tool, has no result.
            let tool = if i == 13 { "edit" } else { "bash" };
            lines.push(format!(
                r#"{{"type":"message","id":"a{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:{:02}Z","message":{{"role":"assistant","content":[{{"type":"toolCall","id":"call_{i}","name":"{tool}","arguments":{{"command":"make step{i}"}}}}]}}}}"#,
                2 * i + 1
            ));
            if i == 13 {
                break;
            }
            lines.push(format!(
                r#"{{"type":"message","id":"r{i}","parentId":"a{i}","timestamp":"2026-01-01T00:00:{:02}Z","message":{{"role":"toolResult","content":[{{"type":"text","text":"done {i}"}}],"toolCallId":"call_{i}","toolName":"bash","isError":{failed}}}}}"#,
                2 * i + 2
            ));
            parent = format!("\"r{i}\"");
        }
        let bytes = lines.join("\n") + "\n";
        let hits = |hot: Option<usize>, req: serde_json::Value| {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: hot,
                ..MemoryConfig::default()
            });
            m.add_file("ops.jsonl", bytes.as_bytes()).unwrap();
            let opts = m.engine_options();
            let index = m.index(Branches::Active).unwrap();
            let mut r = RecallRequest::from_json(&req).unwrap();
            r.scope = Some(Scope::Global);
            r.page_size = Some(50);
            same_page(index, &opts, &r, &req.to_string()).hits
        };
        let listed = |hits: &[crate::request::Hit]| -> Vec<(u64, String)> {
            hits.iter()
                .map(|h| (h.index.unwrap(), h.entry_id.clone().unwrap()))
                .collect()
        };
        let named = |hits: &[crate::request::Hit]| -> Vec<(u64, String)> {
            assert_eq!(hits.len(), 1);
            hits[0]
                .matched_structural_entries
                .iter()
                .map(|e| (e.index, e.entry_id.clone().unwrap()))
                .collect()
        };
        let req = serde_json::json!({"tool": "bash"});
        let mut hot = listed(&hits(None, req.clone()));
        hot.sort();
        assert_eq!(hot.len(), 26);
        hot.truncate(super::MAX_STRUCTURAL_ENTRIES);
        assert_eq!(named(&hits(Some(0), req)), hot);
        let req = serde_json::json!({"tool": "edit"});
        assert_eq!(listed(&hits(None, req.clone())), [(40, "a13/0".to_owned())]);
        assert_eq!(named(&hits(Some(0), req)), [(40, "a13/0".to_owned())]);
        // Three failed calls. Hot, a result defers to its call (paired by call id); a digest
        // keeps no call ids, so a cold session names each call and its result.
        let req = serde_json::json!({"tool": "bash", "outcome": "failed"});
        let mut hot = listed(&hits(None, req.clone()));
        hot.sort();
        let own = |v: &[(u64, &str)]| -> Vec<(u64, String)> {
            v.iter().map(|&(i, id)| (i, id.to_owned())).collect()
        };
        assert_eq!(hot, own(&[(10, "a3/0"), (22, "a7/0"), (34, "a11/0")]));
        assert_eq!(
            named(&hits(Some(0), req)),
            own(&[
                (10, "a3/0"),
                (11, "r3"),
                (22, "a7/0"),
                (23, "r7"),
                (34, "a11/0"),
                (35, "r11")
            ])
        );
    }

    /// A regex narrowed through the catalog (only terms holding its literals looked at)
    /// charges the haystack budget as the pass over every term does: for every budget from
    /// none to past all the vocabulary's bytes, the same cold sessions and the same
    /// `regex_haystack_budget` reason as the exhaustive pass.
    #[test]
    fn narrowed_regex_charges_the_budget_as_a_full_pass() {
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(0),
            ..MemoryConfig::default()
        });
        // `zzz` sorts after every match: the bytes past the last match count too.
        let words = [
            "alpha",
            "zqpfx1",
            "beta zzz",
            "gamma zqpfx22",
            "delta",
            "omega zqpfx333",
        ];
        for (i, w) in words.iter().enumerate() {
            let text = format!(
                r#"{{"type":"session","version":3,"id":"b{i}","timestamp":"2026-01-01T00:00:0{i}Z","cwd":"/p"}}
{{"type":"message","id":"m","parentId":null,"timestamp":"2026-01-01T00:00:0{i}Z","message":{{"role":"user","content":"{w} filler{i}"}}}}
"#
            );
            m.add_file(&format!("b{i}.jsonl"), text.as_bytes()).unwrap();
        }
        let mut opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        let all: usize = index
            .term_list()
            .unwrap()
            .iter()
            .map(|(t, _)| t.len())
            .sum();
        let req = RecallRequest {
            query: Some("zqpfx[0-9]+".into()),
            query_mode: Some(QueryMode::Regex),
            scope: Some(Scope::Global),
            ..RecallRequest::default()
        };
        let mut seen = std::collections::BTreeSet::new();
        for budget in 0..=all + 2 {
            opts.regex.max_haystack_bytes = budget as u64;
            let page = same_page(index, &opts, &req, &format!("budget {budget}"));
            let cut = page
                .coverage
                .reasons
                .iter()
                .any(|r| r == "regex_haystack_budget");
            assert_eq!(cut, budget < all, "budget {budget} of {all}");
            seen.insert(page.total);
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [0, 1, 2, 3]);
    }

    /// One pi session of user messages `texts`, indexed with entries cut at 60 characters.
    fn session_with_cut(texts: &[String]) -> MemoryIndex {
        let mut lines = vec![
            r#"{"type":"session","version":3,"id":"rx","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}"#
                .to_owned(),
        ];
        let mut parent = "null".to_owned();
        for (i, t) in texts.iter().enumerate() {
            lines.push(format!(
                r#"{{"type":"message","id":"m{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:0{}Z","message":{{"role":"user","content":"{t}"}}}}"#,
                i + 1
            ));
            parent = format!("\"m{i}\"");
        }
        let mut m = MemoryIndex::new(MemoryConfig {
            max_entry_chars: 60,
            ..MemoryConfig::default()
        });
        m.add_file("rx.jsonl", (lines.join("\n") + "\n").as_bytes())
            .unwrap();
        m
    }

    /// Over [`session_with_cut`] of `texts`, each query of `mode` hits exactly the entries
    /// given, the same with and without narrowing, and reports `max_entry_chars`.
    fn answers_as_a_scan(texts: &[String], mode: QueryMode, cases: &[(&str, &[u64])]) {
        let mut m = session_with_cut(texts);
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        for &(query, want) in cases {
            let req = RecallRequest {
                query: Some(query.into()),
                query_mode: Some(mode),
                scope: Some(Scope::Global),
                ..RecallRequest::default()
            };
            let page = same_page(index, &opts, &req, query);
            let mut got: Vec<u64> = page.hits.iter().filter_map(|h| h.index).collect();
            got.sort_unstable();
            assert_eq!(got, want, "{query}");
            assert!(
                page.coverage.reasons.iter().any(|r| r == "max_entry_chars"),
                "{query}: {:?}",
                page.coverage.reasons
            );
        }
    }

    /// A regex narrowed to the entries posting a matching term, or a phrase to the entries
    /// posting its tokens, answers as a scan of every entry: the same hits, and an entry cut
    /// at `maxEntryChars` that holds no match still says the match may lie past its cut. (A
    /// session whose vocabulary holds no matching term is not opened at all, so it reports no
    /// cut: every token is posted, past the cut too, so none can hold a match.)
    #[test]
    fn narrowed_entries_answer_as_a_scan() {
        let filler = format!("{} and then some", "filler words ".repeat(20));
        let regex: [(&str, &[u64]); 2] = [("zqpfx[0-9]+", &[0, 3]), ("zqpfx[a-z]+", &[3])];
        let phrase: [(&str, &[u64]); 2] = [("zqquick zqbrown", &[0, 3]), ("zqbrown zqquick", &[2])];
        for (mode, texts, cases) in [
            (
                QueryMode::Regex,
                [
                    "zqpfx12 opens the run",
                    "nothing to see",
                    "later zqpfx7 and zqpfxab",
                ],
                &regex,
            ),
            (
                QueryMode::Phrase,
                [
                    "zqquick zqbrown fox",
                    "zqbrown zqquick reversed",
                    "then zqquick zqbrowner again",
                ],
                &phrase,
            ),
        ] {
            let texts = [
                texts[0].to_owned(),
                filler.clone(),
                texts[1].to_owned(),
                texts[2].to_owned(),
            ];
            answers_as_a_scan(&texts, mode, cases);
        }
    }

    /// A narrowed regex's entry counts taken from postings (ASCII whole texts) give the
    /// pages of a scan of every stored text: words repeated in one entry and in one term,
    /// capitals, thinking parts, an entry past the span cap, cut entries with matches past
    /// the cut and non-ASCII ones (these scanned), with and without field groups.
    #[test]
    fn regex_counts_from_postings_equal_a_scan() {
        let words = [
            "zqab", "ZQAB", "zqabzqab", "Zq1", "zq_2", "xzqab", "abc", "zqabZQAB", "q", "zqé",
            "Ézq", "ab_zq", "zz", "qq",
        ];
        let mut seed = 11u64;
        let mut next = |m: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % m
        };
        let mut lines = vec![
            r#"{"type":"session","version":3,"id":"rc","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}"#
                .to_owned(),
        ];
        let mut parent = "null".to_owned();
        for i in 0..40 {
            let n = 1 + next(12);
            let mut text = Vec::new();
            for _ in 0..n {
                text.push(words[next(words.len())]);
            }
            let sep = [" ", ", ", "-", " ("][next(4)];
            let text = match i {
                // 66 matches of `z` in a whole entry: the scan counts 64.
                7 => vec!["zz"; 33].join(" "),
                // Matches only past the cut at 120 characters, and on both sides of it.
                9 => format!("{} zqab zqab", "abc ".repeat(40)),
                11 => format!("zqab {} zqab", "abc ".repeat(40)),
                _ => text.join(sep),
            };
            let thought = words[next(words.len())];
            let line = if i % 3 == 0 {
                format!(
                    r#"{{"type":"message","id":"m{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:01Z","message":{{"role":"assistant","content":[{{"type":"thinking","thinking":"{thought} {thought}"}},{{"type":"text","text":"{text}"}}]}}}}"#
                )
            } else {
                format!(
                    r#"{{"type":"message","id":"m{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:01Z","message":{{"role":"user","content":"{text}"}}}}"#
                )
            };
            lines.push(line);
            parent = format!("\"m{i}\"");
        }
        let mut m = MemoryIndex::new(MemoryConfig {
            max_entry_chars: 120,
            index_thinking: true,
            ..MemoryConfig::default()
        });
        m.add_file("rc.jsonl", (lines.join("\n") + "\n").as_bytes())
            .unwrap();
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        let mut hits = 0;
        for q in [
            "zq[a-z]+",
            "zq.",
            "ab",
            "z",
            "zqab",
            "(?-i)ZQ",
            "q",
            "[a-z]+zq[a-z_0-9]*",
        ] {
            for groups in [
                None,
                Some(vec![FieldGroup::Text]),
                Some(vec![FieldGroup::Thinking]),
            ] {
                let req = RecallRequest {
                    query: Some(q.into()),
                    query_mode: Some(QueryMode::Regex),
                    scope: Some(Scope::Global),
                    page_size: Some(100),
                    in_groups: groups.clone(),
                    ..RecallRequest::default()
                };
                let page = same_page(index, &opts, &req, &format!("{q} {groups:?}"));
                hits += page.hits.len();
            }
        }
        assert!(hits > 300, "{hits}");
    }

    /// Stored text that is not NFKC (a ligature, full-width letters) is normalized before a
    /// regex or the adjacency check reads it, and NFKC text is read as stored (the shard's
    /// flags tell which): the regex finds `file` in all three entries, and the ligature's
    /// and the full-width entries hold `file system` adjacent, so they rank above the third.
    #[test]
    fn text_not_nfkc_is_normalized_before_it_is_read() {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"nf","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"message","id":"n1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"the \ufb01le system é"}}"#,
            "\n",
            r#"{"type":"message","id":"n2","parentId":"n1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"\uff26\uff49\uff4c\uff45 \uff53\uff59\uff53\uff54\uff45\uff4d"}}"#,
            "\n",
            r#"{"type":"message","id":"n3","parentId":"n2","timestamp":"2026-01-01T00:00:03Z","message":{"role":"user","content":"a file, then a system é"}}"#,
            "\n"
        );
        let mut m = MemoryIndex::new(MemoryConfig::default());
        m.add_file("nf.jsonl", text.as_bytes()).unwrap();
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        let run = |q: &str, mode: QueryMode| {
            let req = RecallRequest {
                query: Some(q.into()),
                query_mode: Some(mode),
                scope: Some(Scope::Global),
                ..RecallRequest::default()
            };
            same_page(index, &opts, &req, q)
        };
        let page = run("fil[e]", QueryMode::Regex);
        let mut got: Vec<u64> = page.hits.iter().filter_map(|h| h.index).collect();
        got.sort_unstable();
        assert_eq!(got, [0, 1, 2]);
        assert!(page.hits.iter().all(|h| !h.matched_in.is_empty()));
        // n1 holds `file system` adjacent too, once its ligature is `fi`.
        let page = run("file system", QueryMode::Literal);
        let got: Vec<u64> = page.hits.iter().filter_map(|h| h.index).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got.last(), Some(&2), "{got:?}");
    }

    /// `İ` lowers to `i` and U+0307, so a regex over the text can match where no term of the
    /// vocabulary does: a session holding such a term is always searched, and so are all the
    /// entries of its shard.
    #[test]
    fn regex_narrowing_keeps_dotted_capital_i() {
        let text = concat!(
            r#"{"type":"session","version":3,"id":"dot","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"message","id":"d1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"zqİx here"}}"#,
            "\n",
            r#"{"type":"message","id":"d2","parentId":"d1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"zqother words"}}"#,
            "\n"
        );
        let mut m = MemoryIndex::new(MemoryConfig::default());
        m.add_file("dot.jsonl", text.as_bytes()).unwrap();
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        let req = RecallRequest {
            query: Some("zqİ".into()),
            query_mode: Some(QueryMode::Regex),
            scope: Some(Scope::Global),
            ..RecallRequest::default()
        };
        let page = same_page(index, &opts, &req, "zqİ");
        let got: Vec<u64> = page.hits.iter().filter_map(|h| h.index).collect();
        assert_eq!(got, [0]);
    }

    /// Cold digests are kept open across calls from their first use, up to the index's byte
    /// cap; past it (and with a cap of 0), each call opens its own.
    #[test]
    fn cold_digests_kept_within_the_cap() {
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(0),
            ..MemoryConfig::default()
        });
        for (i, name) in ["a.jsonl", "b.jsonl", "c.jsonl"].iter().enumerate() {
            let text = format!(
                "{}\n{}\n",
                format_args!(
                    r#"{{"type":"session","version":3,"id":"s{i}","timestamp":"2026-01-01T00:00:0{i}Z","cwd":"/p"}}"#
                ),
                format_args!(
                    r#"{{"type":"message","id":"m{i}","parentId":null,"timestamp":"2026-01-01T00:00:0{i}Z","message":{{"role":"user","content":"kestrel {i}"}}}}"#
                ),
            );
            m.add_file(name, text.as_bytes()).unwrap();
        }
        let index = m.index(Branches::Active).unwrap();
        let len = |i: usize| {
            (index.cold(i).unwrap().unwrap().bytes().as_ref().len() as u64).div_ceil(4096) * 4096
        };
        let same = |i: usize| {
            let a = index.cold_shared(i).unwrap().unwrap();
            let b = index.cold_shared(i).unwrap().unwrap();
            std::sync::Arc::ptr_eq(&a, &b)
        };
        // A cap of 0 (the CLI's) keeps nothing.
        index.set_cold_cache_bytes(0);
        assert!(!same(2), "kept past a cap of 0");
        index.set_cold_cache_bytes(len(2));
        assert!(same(2), "not kept on its first use");
        index.set_cold_cache_bytes(len(2) + len(0) + len(1) - 1);
        assert!(same(0), "the next digest fits");
        assert!(!same(1), "the last would pass the cap");
        assert!(same(0) && same(2));
        index.set_cold_cache_bytes(u64::MAX);
        assert!(same(1));
    }

    /// Sessions that tie on score and last timestamp (the same file under several names,
    /// added in no particular order) are paged by path, in a global scope and in a project
    /// scope (a subset of the sessions), all hot and all cold; scope `session` picks the
    /// first of them by path.
    /// The digest budget counts candidate cold sessions only: a rare term in the oldest of
    /// more cold sessions than the budget is found, and the page is complete; a term in
    /// every session stops at the budget's newest candidates and says so. Visiting every
    /// session (no totals) gives the same pages.
    #[test]
    fn digest_budget_counts_candidates_only() {
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(1),
            ..MemoryConfig::default()
        });
        for k in 0..8 {
            let word = if k == 0 { "zqoldest" } else { "filler" };
            m.add_file(
                &format!("s{k}.jsonl"),
                format!(
                    "{}\n{}\n",
                    format_args!(
                        r#"{{"type":"session","version":3,"id":"s{k}","timestamp":"2026-01-0{}T00:00:00Z","cwd":"/p"}}"#,
                        k + 1
                    ),
                    format_args!(
                        r#"{{"type":"message","id":"s{k}-1","parentId":null,"timestamp":"2026-01-0{}T00:00:01Z","message":{{"role":"user","content":"zqeverywhere {word}"}}}}"#,
                        k + 1
                    ),
                )
                .as_bytes(),
            )
            .unwrap();
        }
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        DIGEST_BUDGET.with(|c| c.set(Some(3)));
        let page = |query: &str| {
            let req = RecallRequest::from_json(
                &serde_json::json!({"query": query, "scope": "global", "pageSize": 20}),
            )
            .unwrap();
            let fast = recall(index, &opts, &QueryContext::default(), &req).unwrap();
            VISIT_ALL.with(|c| c.set(true));
            let visited = recall(index, &opts, &QueryContext::default(), &req).unwrap();
            VISIT_ALL.with(|c| c.set(false));
            assert_eq!(
                serde_json::to_value(&fast).unwrap(),
                serde_json::to_value(&visited).unwrap(),
                "{query}"
            );
            let files: Vec<String> = fast.hits.iter().map(|h| h.file.clone()).collect();
            (files, fast.coverage)
        };
        let (files, coverage) = page("zqoldest");
        assert_eq!(files, ["s0.jsonl"]);
        assert!(coverage.complete, "{coverage:?}");
        assert_eq!(coverage.indexed_sessions, 8);
        // The newest session is hot; of the seven cold ones the three newest are looked at.
        let (mut files, coverage) = page("zqeverywhere");
        files.sort();
        assert_eq!(files, ["s4.jsonl", "s5.jsonl", "s6.jsonl", "s7.jsonl"]);
        assert!(!coverage.complete);
        assert!(coverage
            .reasons
            .iter()
            .any(|r| r == "candidate_digest_budget"));
        assert_eq!(coverage.indexed_sessions, 4);
        DIGEST_BUDGET.with(|c| c.set(None));
    }

    /// A page stops at the first hit that takes it past `MAX_PAGE_CHARS`, counted exactly,
    /// though its hits are counted by bounds until then: escape-heavy snippets and a long
    /// path make a hit long, and the next page's first hit is the one that did not fit.
    #[test]
    fn pages_stop_where_exact_lengths_say() {
        let mut lines = vec![serde_json::json!({
            "type": "session", "version": 3, "id": "long", "timestamp": "2026-01-01T00:00:00Z",
            "cwd": "/p"
        })
        .to_string()];
        for k in 0..150 {
            let text = format!(
                "zqpage {k} {}",
                "say \"hi\" to C:\\dir\\file \u{1}\t\u{1f} and \u{e9}t\u{e9} ".repeat(12)
            );
            lines.push(
                serde_json::json!({
                    "type": "message", "id": format!("e{k}"),
                    "parentId": if k == 0 { None } else { Some(format!("e{}", k - 1)) },
                    "timestamp": "2026-01-01T00:00:01Z",
                    "message": {"role": "user", "content": text}
                })
                .to_string(),
            );
        }
        let mut m = MemoryIndex::new(MemoryConfig::default());
        let name = format!("{}/session.jsonl", "deep".repeat(40));
        m.add_file(&name, format!("{}\n", lines.join("\n")).as_bytes())
            .unwrap();
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        let req = RecallRequest::from_json(
            &serde_json::json!({"query": "zqpage", "pageSize": 100, "scope": "global"}),
        )
        .unwrap();
        let page = recall(index, &opts, &QueryContext::default(), &req).unwrap();
        assert_eq!(page.total, 150);
        assert!(
            page.hits.len() > 1 && page.hits.len() < 100,
            "{}",
            page.hits.len()
        );
        let used = 600
            + json_len(&page.coverage)
            + json_len(&req)
            + page.hits.iter().map(|h| json_len(h) + 1).sum::<usize>();
        assert!(used <= MAX_PAGE_CHARS, "{used}");
        let next = page.next.as_ref().unwrap().recall_request().unwrap();
        let rest = recall(index, &opts, &QueryContext::default(), &next).unwrap();
        let first = json_len(&rest.hits[0]) + 1;
        assert!(used + first > MAX_PAGE_CHARS, "{used} + {first}");
    }

    /// Pages of cold session hits (paths of many lengths, some with escapes) and entry hits
    /// are counted by coarse bounds while those show them fitting, then finely: every page
    /// equals the one counted finely from the first hit, some pages switched from one count
    /// to the other, and each page fits (its next one's first hit would not).
    #[test]
    fn coarse_counts_give_the_fine_pages() {
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(6),
            ..MemoryConfig::default()
        });
        for i in 0..40usize {
            let dir = ["d", "q\\", "t\"", "n\u{1}"][i % 4].repeat((i * 37) % 23 * 9);
            let header = serde_json::json!({
                "type": "session", "version": 3, "id": format!("s{i}"),
                "timestamp": format!("2026-01-01T00:00:{:02}Z", i % 60), "cwd": "/p"
            });
            let message = serde_json::json!({
                "type": "message", "id": "e1", "parentId": null,
                "timestamp": format!("2026-01-01T00:01:{:02}Z", i % 60),
                "message": {"role": "user", "content": format!("zqcoarse {}", "w ".repeat(i))}
            });
            m.add_file(
                &format!("{i:02}/{dir}/s.jsonl"),
                format!("{header}\n{message}\n").as_bytes(),
            )
            .unwrap();
        }
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        COARSE_SWITCHES.with(|c| c.set(0));
        let mut pages = 0;
        for size in [1, 2, 3, 5, 8, 13, 21, 40] {
            for offset in [0, 4, 17] {
                let req = RecallRequest::from_json(&serde_json::json!({
                    "query": "zqcoarse", "pageSize": size, "offset": offset, "scope": "global"
                }))
                .unwrap();
                let page = recall(index, &opts, &QueryContext::default(), &req).unwrap();
                FINE_ONLY.with(|c| c.set(true));
                let fine = recall(index, &opts, &QueryContext::default(), &req);
                FINE_ONLY.with(|c| c.set(false));
                assert_eq!(
                    serde_json::to_string(&page).unwrap(),
                    serde_json::to_string(&fine.unwrap()).unwrap(),
                    "{size} {offset}"
                );
                let used = 600
                    + json_len(&page.coverage)
                    + json_len(&req)
                    + page.hits.iter().map(|h| json_len(h) + 1).sum::<usize>();
                assert!(used <= MAX_PAGE_CHARS || page.hits.len() == 1, "{used}");
                if let Some(next) = &page.next {
                    let next = next.recall_request().unwrap();
                    let rest = recall(index, &opts, &QueryContext::default(), &next).unwrap();
                    if page.hits.len() < size {
                        let first = json_len(&rest.hits[0]) + 1;
                        assert!(used + first > MAX_PAGE_CHARS, "{used} + {first}");
                    }
                }
                pages += usize::from(!page.hits.is_empty());
            }
        }
        assert!(pages > 20, "{pages}");
        let switched = COARSE_SWITCHES.with(Cell::get);
        assert!(switched > 0, "{switched}");
    }

    #[test]
    fn ties_go_to_the_path() {
        let one = concat!(
            r#"{"type":"session","version":3,"id":"tie","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}"#,
            "\n",
            r#"{"type":"message","id":"t1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"zqtie alike"}}"#,
            "\n"
        );
        let other = one.replace("\"/p\"", "\"/elsewhere\"");
        let names = [
            "m.jsonl",
            "b.jsonl",
            "z.jsonl",
            "a.jsonl",
            "q/c.jsonl",
            "k.jsonl",
        ];
        for (hot, scope, want) in [
            (
                100,
                Scope::Global,
                vec!["a", "b", "elsewhere", "k", "m", "q/c", "z"],
            ),
            (100, Scope::Project, vec!["a", "b", "k", "m", "q/c", "z"]),
            (
                0,
                Scope::Global,
                vec!["a", "b", "elsewhere", "k", "m", "q/c", "z"],
            ),
            (0, Scope::Project, vec!["a", "b", "k", "m", "q/c", "z"]),
        ] {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: Some(hot),
                ..MemoryConfig::default()
            });
            for n in names {
                m.add_file(n, one.as_bytes()).unwrap();
            }
            m.add_file("elsewhere.jsonl", other.as_bytes()).unwrap();
            let opts = m.engine_options();
            let index = m.index(Branches::Active).unwrap();
            let req = RecallRequest {
                query: Some("zqtie".into()),
                scope: Some(scope.clone()),
                cwd: Some("/p".into()),
                page_size: Some(20),
                ..RecallRequest::default()
            };
            let page = recall(index, &opts, &QueryContext::default(), &req).unwrap();
            let files: Vec<String> = page
                .hits
                .iter()
                .map(|h| h.file.trim_end_matches(".jsonl").to_owned())
                .collect();
            assert_eq!(files, want, "hot {hot}, {scope:?}");
            // Scope `session` without a current session: the newest session of the cwd,
            // the first by path among those tying on time.
            let req = RecallRequest {
                scope: Some(Scope::Session),
                ..req
            };
            let page = recall(index, &opts, &QueryContext::default(), &req).unwrap();
            assert!(!page.hits.is_empty());
            assert!(page.hits.iter().all(|h| h.file == "a.jsonl"), "hot {hot}");
        }
    }

    #[test]
    fn pages_are_windows_of_one_order() {
        // Only the items up to a page's end are ordered; every page must still be the
        // matching window of the one order a page of 100 shows.
        let all = corpus();
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(5),
            ..MemoryConfig::default()
        });
        for (name, bytes) in &all {
            m.add_file(name, bytes).unwrap();
        }
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        // What places a hit: its record and score (snippets and follow calls are per page).
        let key = |h: &crate::request::Hit| {
            let v = serde_json::to_value(h).unwrap();
            [
                "file",
                "entryId",
                "score",
                "kind",
                "sessionId",
                "operationAddress",
            ]
            .map(|k| v.get(k).cloned())
        };
        let mut checked = 0;
        for q in ["the", "error test", "a", "timeout retry", "src ts", "user"] {
            let page = |offset: u64, size: u32| {
                let req = RecallRequest {
                    query: Some(q.into()),
                    scope: Some(Scope::Global),
                    page_size: Some(size),
                    offset: Some(offset),
                    ..RecallRequest::default()
                };
                recall(index, &opts, &QueryContext::default(), &req).unwrap()
            };
            let big = page(0, 100);
            let all_hits: Vec<_> = big.hits.iter().map(key).collect();
            for (offset, size) in [
                (0, 1),
                (0, 10),
                (3, 5),
                (7, 2),
                (20, 10),
                (99, 1),
                (150, 10),
            ] {
                let p = page(offset, size);
                assert_eq!(p.total, big.total, "{q} total");
                let want: Vec<_> = all_hits
                    .iter()
                    .skip(offset as usize)
                    .take(size as usize)
                    .cloned()
                    .collect();
                let got: Vec<_> = p.hits.iter().map(key).collect();
                assert_eq!(got, want, "{q} offset {offset} size {size}");
                checked += got.len();
            }
        }
        assert!(checked >= 40, "{checked} hits compared");
    }

    #[test]
    fn candidate_sessions_never_change_a_page() {
        let mut all = corpus();
        assert!(all.len() >= 10, "{} files", all.len());
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(5),
            ..MemoryConfig::default()
        });
        // `İ` lowers to two characters (`i`, U+0307): terms holding U+0307 are always
        // searched by a narrowed regex.
        all.push((
            "dotted.jsonl".into(),
            concat!(
                r#"{"type":"session","version":3,"id":"dotted","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}"#,
                "\n",
                r#"{"type":"message","id":"d1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"zqdotİbar in İstanbul"}}"#,
                "\n"
            )
            .as_bytes()
            .to_vec(),
        ));
        for (name, bytes) in &all {
            m.add_file(name, bytes).unwrap();
        }
        let opts = m.engine_options();
        let index = m.index(Branches::Active).unwrap();
        let cat = index.catalog().unwrap();
        // Queries: a spread of the corpus's terms, pairs of them, ids, id prefixes, absent words.
        let mut terms = Vec::new();
        let map = cat.terms().unwrap();
        let mut st = map.stream();
        let mut k = 0;
        let mut list = index.term_list().unwrap().iter();
        while let Some((t, ord)) = st.next() {
            // The flat list regex and phrase queries walk is the term map, term for term.
            assert_eq!(list.next(), Some((t, ord)));
            if k % 5 == 0 {
                terms.push(String::from_utf8(t.to_vec()).unwrap());
            }
            k += 1;
        }
        assert_eq!(list.next(), None);
        assert_eq!(index.term_list().unwrap().len(), k);
        let mut queries: Vec<(String, QueryMatch)> = Vec::new();
        let mut fuzzy: Vec<(String, QueryMatch)> = Vec::new();
        for (i, t) in terms.iter().enumerate() {
            queries.push((t.clone(), QueryMatch::Any));
            if i % 2 == 0 {
                // The term itself and a typo of it (last character replaced).
                let mut typo: Vec<char> = t.chars().collect();
                if let Some(c) = typo.last_mut() {
                    *c = if *c == 'x' { 'y' } else { 'x' };
                }
                fuzzy.push((t.clone(), QueryMatch::Any));
                fuzzy.push((typo.into_iter().collect(), QueryMatch::Any));
            }
            if let Some(u) = terms.get(i * 7 % terms.len()) {
                queries.push((format!("{t} {u}"), QueryMatch::Any));
                queries.push((format!("{t} {u}"), QueryMatch::All));
            }
        }
        for e in index.entries() {
            let id = &e.summary.session_id;
            queries.push((id.clone(), QueryMatch::Any));
            queries.push((id.to_uppercase(), QueryMatch::Any));
            // Every term of an id (`a-b-c` is three) required.
            queries.push((id.clone(), QueryMatch::All));
            let squashed: String = id.chars().filter(|&c| c != '-').collect();
            if squashed.len() >= 14 {
                queries.push((squashed[..14].to_owned(), QueryMatch::Any));
            }
        }
        for i in 0..index.entries().len() {
            if let Some(h) = index.hot(i).unwrap() {
                for e in h.entries().step_by(3) {
                    queries.push((e.entry_id().unwrap().to_owned(), QueryMatch::Any));
                    if let Some(a) = e.operation_address().unwrap() {
                        queries.push((a.to_owned(), QueryMatch::Any));
                    }
                }
            }
            if let Some(d) = index.cold(i).unwrap() {
                for t in (0..d.tuple_count()).step_by(3).filter_map(|o| d.tuple(o)) {
                    queries.push((t.address().unwrap().to_owned(), QueryMatch::Any));
                }
            }
        }
        // Phrases: runs of 2-4 words of stored texts, cut inside words too, and a
        // non-ASCII one (not narrowed).
        let mut phrases: Vec<(String, QueryMatch)> = Vec::new();
        for i in 0..index.entries().len() {
            if let Some(h) = index.hot(i).unwrap() {
                for e in h.entries() {
                    let text = e.text().unwrap();
                    let words: Vec<&str> = text.split_whitespace().collect();
                    for (k, w) in words.windows(4).enumerate().step_by(3) {
                        let n = 2 + k % 3;
                        let mut p = w[..n].join(" ");
                        if k % 2 == 1 && p.is_ascii() && p.len() > 4 {
                            p = p[1..p.len() - 1].to_owned();
                        }
                        phrases.push((p, QueryMatch::Any));
                    }
                }
            }
        }
        phrases.push(("Timeout again".into(), QueryMatch::Any));
        phrases.push(("zzzabsent timeout".into(), QueryMatch::Any));
        phrases.push(("日本語 テキスト".into(), QueryMatch::Any));
        // Regexes: term prefixes and suffixes, classes, boundaries, one that spans tokens
        // and one that matches empty text (neither narrowed).
        let mut regexes: Vec<(String, QueryMatch)> = Vec::new();
        for (i, t) in terms.iter().enumerate() {
            let chars: Vec<char> = t.chars().collect();
            if chars.len() < 3 || !t.chars().all(|c| c.is_ascii_alphanumeric()) {
                continue;
            }
            let head: String = chars[..3].iter().collect();
            let tail: String = chars[chars.len() - 3..].iter().collect();
            let r = match i % 4 {
                0 => format!("{head}[a-z0-9]*"),
                1 => format!("[a-z]+{tail}\\b"),
                2 => format!("\\b{head}"),
                _ => format!("{}\\w", &head[..2]),
            };
            regexes.push((r, QueryMatch::Any));
        }
        for r in [
            "time.?out",
            "TIMEOUT",
            "t[i1]meout",
            "x*",
            "a b",
            "[0-9]{3,}",
            "é",
            "zqdot\\b",
            "İstanbul",
            // Case-sensitive parts are folded: terms are lowered.
            "(?-i)TIMEOUT",
            "(?-i)CHECKOUT_TIMEOUT",
            "(?-i:T)imeout",
            // Many matches in one term, and past the spans an entry counts.
            "[a-z]",
            "e",
            "t.",
            "o+",
            "[0-9]",
        ] {
            regexes.push((r.into(), QueryMatch::Any));
        }
        queries.push(("zzzabsentzzz".into(), QueryMatch::Any));
        queries.push(("zzzabsentzzz timeout".into(), QueryMatch::All));
        // Structural filters, alone and with a term, an id or a phrase.
        let mut tools = std::collections::BTreeSet::new();
        for i in 0..index.entries().len() {
            if let Some(h) = index.hot(i).unwrap() {
                tools.extend(
                    h.entries()
                        .filter_map(|e| e.tool().unwrap().map(str::to_owned)),
                );
            }
            if let Some(d) = index.cold(i).unwrap() {
                tools.extend(
                    (0..d.tuple_count())
                        .filter_map(|o| d.tuple(o).and_then(|t| t.tool().unwrap()))
                        .map(str::to_owned),
                );
            }
        }
        assert!(tools.len() >= 3, "{tools:?}");
        let mut filtered: Vec<RecallRequest> = Vec::new();
        let words = [None, Some("timeout"), Some("error"), Some("ZETA-999")];
        for tool in tools.iter().map(Some).chain([None]) {
            for outcome in [None, Some(Outcome::Failed), Some(Outcome::Succeeded)] {
                for role in [None, Some("user"), Some("tool")] {
                    if tool.is_none() && outcome.is_none() && role.is_none() {
                        continue;
                    }
                    for q in words {
                        filtered.push(RecallRequest {
                            query: q.map(str::to_owned),
                            tool: tool.cloned(),
                            outcome,
                            role: role.map(str::to_owned),
                            ..RecallRequest::default()
                        });
                    }
                }
            }
        }
        filtered.push(RecallRequest {
            query: Some("flaky timeout".into()),
            query_mode: Some(QueryMode::Phrase),
            outcome: Some(Outcome::Failed),
            ..RecallRequest::default()
        });
        filtered.push(RecallRequest {
            query: Some("absent-tool".into()),
            tool: Some("no_such_tool".into()),
            ..RecallRequest::default()
        });
        for req in &filtered {
            let req = RecallRequest {
                scope: Some(Scope::Global),
                page_size: Some(50),
                ..req.clone()
            };
            same_page(index, &opts, &req, &format!("{req:?}"));
        }
        assert!(filtered.len() > 30, "{} filtered requests", filtered.len());
        let mut narrowed = 0;
        let modes = queries
            .iter()
            .map(|q| (q, QueryMode::Literal))
            .chain(fuzzy.iter().map(|q| (q, QueryMode::Fuzzy)))
            .chain(phrases.iter().map(|q| (q, QueryMode::Phrase)))
            .chain(regexes.iter().map(|q| (q, QueryMode::Regex)));
        for ((q, matching), mode) in modes {
            let req = RecallRequest {
                query: Some(q.clone()),
                query_mode: Some(mode),
                query_match: Some(*matching),
                scope: Some(Scope::Global),
                page_size: Some(50),
                ..RecallRequest::default()
            };
            let fast = same_page(
                index,
                &opts,
                &req,
                &format!("query {q:?} {matching:?} {mode:?}"),
            );
            if fast
                .hits
                .iter()
                .map(|h| &h.file)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
                < index.entries().len()
            {
                narrowed += 1;
            }
        }
        // The dotted session is indexed (the regexes below compare both ways).
        let req = RecallRequest {
            query: Some("zqdotİbar".into()),
            scope: Some(Scope::Global),
            ..RecallRequest::default()
        };
        let page = recall(index, &opts, &QueryContext::default(), &req).unwrap();
        let files: Vec<&str> = page.hits.iter().map(|h| h.file.as_str()).collect();
        assert_eq!(files, ["dotted.jsonl"]);
        assert!(queries.len() > 200, "{} queries", queries.len());
        assert!(fuzzy.len() > 50, "{} fuzzy queries", fuzzy.len());
        assert!(phrases.len() > 50, "{} phrases", phrases.len());
        assert!(regexes.len() > 50, "{} regexes", regexes.len());
        assert!(
            narrowed > queries.len() / 2,
            "{narrowed} of {}",
            queries.len()
        );
    }

    /// A time range leaves out a record without a timestamp. A cold session whose first and
    /// last times lie inside the range, and which has such records, may be named by one of
    /// them: coverage says so (format 13 counts them). A session with no timed record on its
    /// branch is out of every range on both tiers, whatever times its abandoned branches give
    /// it. Found by `recall_run` over a fixture whose timestamps were trimmed; each of the two
    /// checks on the count fails this test without it.
    #[test]
    fn time_ranges_over_cold_sessions_count_untimed_records() {
        let line = |uuid: &str, parent: &str, sid: &str, ts: &str, text: &str| {
            format!(
                "{{\"type\":\"user\",\"uuid\":\"{uuid}\",\"parentUuid\":{parent},\
                 \"sessionId\":\"{sid}\",\"cwd\":\"/w\",{ts}\
                 \"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n"
            )
        };
        let at = |s: &str| format!("\"timestamp\":\"2026-01-0{s}T00:00:00.000Z\",");
        // Two timed records and, between them, one whose timestamp does not parse: the
        // session's first and last times are the 2nd and the 4th.
        let mixed = [
            line("m1", "null", "mixed", &at("2"), "plain words"),
            line(
                "m2",
                "\"m1\"",
                "mixed",
                "\"timestamp\":\"[trimmed]\",",
                "zebra stripes",
            ),
            line("m3", "\"m2\"", "mixed", &at("4"), "more words"),
        ]
        .concat();
        let timed = [
            line("t1", "null", "timed", &at("5"), "zebra crossing"),
            line("t2", "\"t1\"", "timed", &at("5"), "other words"),
        ]
        .concat();
        // A pi log with no timed record on its active branch (the last entry's path); the
        // abandoned entry `u2` has a timestamp, which gives the session first and last times
        // all the same.
        let pi = |id: &str, parent: &str, ts: &str, text: &str| {
            format!(
                "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},{ts}\
                 \"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n"
            )
        };
        let (header, root) = pi_header("untimed");
        let untimed = [
            header.concat() + "\n",
            pi("u1", &root, "", "zebra alone"),
            pi("u2", "\"u1\"", &at("3"), "abandoned words"),
            pi("u3", "\"u1\"", "", "last words"),
        ]
        .concat();
        let index_of = |hot: Option<usize>| {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: hot,
                ..MemoryConfig::default()
            });
            for (name, text) in [
                ("claude/mixed", &mixed),
                ("claude/timed", &timed),
                ("pi/untimed", &untimed),
            ] {
                m.add_file(&format!("/s/{name}.jsonl"), text.as_bytes())
                    .unwrap();
            }
            m
        };
        let (mut hot, mut cold) = (index_of(None), index_of(Some(0)));
        let answer = |m: &mut MemoryIndex, req: serde_json::Value| {
            let opts = m.engine_options();
            let index = m.index(Branches::Active).unwrap();
            let mut r = RecallRequest::from_json(&req).unwrap();
            r.scope = Some(Scope::Global);
            let page = same_page(index, &opts, &r, &req.to_string());
            let ids: BTreeSet<String> = page.hits.iter().map(|h| h.session_id.clone()).collect();
            let reasons: Vec<String> = (page.coverage.reasons.iter())
                .filter(|r| r.starts_with("cold_"))
                .cloned()
                .collect();
            (ids.into_iter().collect::<Vec<_>>(), reasons)
        };
        let partly = "cold_structural_filter_requires_hydration".to_owned();
        let range = |q: Option<&str>| {
            let mut r =
                serde_json::json!({"role": "user", "since": "2026-01-01", "until": "2026-01-09"});
            if let Some(q) = q {
                r["query"] = q.into();
            }
            r
        };
        // Structural filters alone: every timed user record passes hot; cold, `mixed` is named
        // (its untimed record might be the only one) with the reason, `untimed` by nobody.
        assert_eq!(
            answer(&mut hot, range(None)),
            (vec!["mixed".into(), "timed".into()], vec![])
        );
        assert_eq!(
            answer(&mut cold, range(None)),
            (vec!["mixed".into(), "timed".into()], vec![partly.clone()])
        );
        // `zebra` is only in `mixed`'s untimed record: hot leaves it out, cold names it and
        // says that it may not hold.
        assert_eq!(answer(&mut hot, range(Some("zebra"))).0, ["timed"]);
        let (ids, reasons) = answer(&mut cold, range(Some("zebra")));
        assert_eq!(ids, ["mixed", "timed"]);
        assert!(reasons.contains(&partly), "{reasons:?}");
        // Without a time range the untimed records count on both tiers.
        let plain = serde_json::json!({"query": "zebra"});
        assert_eq!(
            answer(&mut hot, plain.clone()).0,
            ["mixed", "timed", "untimed"]
        );
        assert_eq!(answer(&mut cold, plain).0, ["mixed", "timed", "untimed"]);
        // A range over `timed` alone: the same answer on both tiers, without a reason.
        let only = serde_json::json!({"role": "user", "since": "2026-01-05", "until": "2026-01-05T23:59:59Z"});
        assert_eq!(
            answer(&mut hot, only.clone()),
            (vec!["timed".into()], vec![])
        );
        assert_eq!(answer(&mut cold, only), (vec!["timed".into()], vec![]));
    }

    /// Where a cold session's vocabulary or digest cannot prove an answer, coverage says so,
    /// and where it says nothing the cold answer is the hot one: the example sessions all hot
    /// and all cold, the same sessions named by every page of each request, or the reason
    /// named. Found by the `recall_run` fuzz target: a phrase of separators alone (`/`) and a
    /// regex matching empty text (`$^`) found nothing cold and said nothing; a one-token phrase with a separator (`fetch.`), a regex
    /// anchored to the text (`^jitter`, whose term matches anchored to the term) and a result
    /// that defers to its call (`role: tool` with `outcome: failed`) named cold sessions that
    /// their hot entries do not hold, also without a reason.
    #[test]
    fn cold_answers_name_what_they_cannot_prove() {
        let index_of = |hot: Option<usize>| {
            let mut m = MemoryIndex::new(MemoryConfig {
                hot_sessions: hot,
                ..MemoryConfig::default()
            });
            for (name, bytes) in corpus().iter().filter(|(n, _)| n.contains("examples")) {
                m.add_file(name, bytes).unwrap();
            }
            m
        };
        let (mut hot, mut cold) = (index_of(None), index_of(Some(0)));
        let answer = |m: &mut MemoryIndex, req: &serde_json::Value| {
            let opts = m.engine_options();
            let index = m.index(Branches::Active).unwrap();
            let mut r = RecallRequest::from_json(req).unwrap();
            r.scope = Some(Scope::Global);
            r.page_size = Some(100);
            let page = same_page(index, &opts, &r, &req.to_string());
            assert!(page.next.is_none());
            let files: BTreeSet<String> = page.hits.iter().map(|h| h.file.clone()).collect();
            (files, page.coverage.reasons)
        };
        // Each example's format, from its directory.
        let name = |files: &BTreeSet<String>| -> Vec<&str> {
            let mut v: Vec<&str> = files
                .iter()
                .filter_map(|f| {
                    ["claude-code", "codex", "omp", "pi"]
                        .into_iter()
                        .find(|k| f.contains(&format!("/{k}/")))
                })
                .collect();
            v.sort_unstable();
            v
        };
        let phrase = "cold_phrase_requires_hydration";
        let anchor = "cold_regex_anchor_requires_hydration";
        let structural = "cold_structural_filter_requires_hydration";
        // (request, the reason the cold answer gives or none, hot sessions, cold sessions)
        type Case = (
            serde_json::Value,
            Option<&'static str>,
            &'static [&'static str],
            &'static [&'static str],
        );
        let cases: [Case; 9] = [
            (
                serde_json::json!({"query": "/", "queryMode": "phrase"}),
                Some(phrase),
                &["claude-code", "codex", "omp", "pi"],
                &[],
            ),
            (
                serde_json::json!({"query": "ackof", "queryMode": "phrase"}),
                None,
                &["claude-code"],
                &["claude-code"],
            ),
            (
                serde_json::json!({"query": "fetch.t", "queryMode": "phrase"}),
                Some(phrase),
                &["claude-code"],
                &["claude-code"],
            ),
            (
                serde_json::json!({"query": "jitter.", "queryMode": "phrase"}),
                Some(phrase),
                &[],
                &["omp", "pi"],
            ),
            (
                serde_json::json!({"query": "jitter", "queryMode": "regex"}),
                None,
                &["omp", "pi"],
                &["omp", "pi"],
            ),
            (
                serde_json::json!({"query": "^jitter", "queryMode": "regex"}),
                Some(anchor),
                &[],
                &["omp", "pi"],
            ),
            (
                serde_json::json!({"query": "$^", "queryMode": "regex"}),
                Some("cold_regex_spans_tokens"),
                &["claude-code", "codex", "omp", "pi"],
                &[],
            ),
            (
                serde_json::json!({"outcome": "failed"}),
                None,
                &["claude-code", "codex"],
                &["claude-code", "codex"],
            ),
            (
                serde_json::json!({"role": "tool", "outcome": "failed"}),
                Some(structural),
                &[],
                &["claude-code"],
            ),
        ];
        for (req, reason, want_hot, want_cold) in cases {
            let (h, hr) = answer(&mut hot, &req);
            let (c, cr) = answer(&mut cold, &req);
            assert_eq!(name(&h), want_hot, "{req} hot");
            assert_eq!(name(&c), want_cold, "{req} cold");
            let engine: Vec<&String> = cr.iter().filter(|r| r.starts_with("cold_")).collect();
            assert_eq!(
                engine,
                reason.into_iter().collect::<Vec<_>>(),
                "{req} cold reasons"
            );
            assert!(hr.iter().all(|r| !r.starts_with("cold_")), "{req} {hr:?}");
            if reason.is_none() {
                assert_eq!(h, c, "{req}");
            }
        }
    }
}
