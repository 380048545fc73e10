//! The corpus catalog: one file listing every indexed session of a branch mode, plus merged
//! term -> sessions and id key -> sessions maps over every session's index file.
//!
//! Listing, scope resolution and cold recall over 10,000 sessions open this one file. The
//! layout is columnar (one element per session, strings interned in one table), so opening
//! costs no per-session work:
//!
//! - string-id columns: session id, file, format version, cwd, title, created, leaf, lineage
//!   fingerprint, source path, source hash (SHA-256 hex), policy fingerprint;
//! - u8 columns: format, tier, complete; u32: index format version; u64: entry count, error
//!   count, source bytes, cache bytes, source size, inode; i64: first/last timestamp (ms,
//!   `i64::MIN` none), mtime and ctime (ns);
//! - list columns (items + `n+1` offsets): files touched, tool histogram (name, count),
//!   coverage reasons (code, count), links (kind, target);
//! - `terms`: an FST map term -> ordinal into `post_starts` (u32, terms+1), whose ranges in
//!   `post_bytes` hold the ascending session ordinals, each list as LEB128 varint deltas or,
//!   where that is smaller, a bitmap of every session (see docs/format.md); every session's
//!   vocabulary joins it, hot and cold, so a term query opens only the sessions that hold one
//!   of its terms (and the map is the one copy of a cold session's vocabulary);
//! - `ids`, `id_blocks`, `id_post_starts`, `id_post_bytes`: the same for [`id_key`]s of
//!   session ids, entry ids and operation addresses (an id lookup opens only sessions sharing
//!   a key), but the keys are a sorted table front-coded in blocks of [`ID_BLOCK`], found by
//!   halves over the blocks' first keys: only ever looked up whole, they need no FST, whose
//!   build took three times as long as the term map's for as many keys;
//! - u64 columns `hot_entries`, `hot_tokens`: a hot shard's entry and token totals, so BM25
//!   statistics over every hot session need no shard opened.

use std::ops::Range;

use rkyv::{Archive, Serialize};
use sessiondex_source::{Branches, Outcome, SessionLink};

use crate::error::{Error, Result};
use crate::format::{self, Aligned, Col, FileKind, StrCol, StrTableBuilder};
use crate::summary::{
    branches_code, branches_from, format_code, Coverage, CoverageReason, SessionSummary,
};
use crate::terms::{Cursor, TermList, TermListBuilder};

/// The payload schema text, hashed into the header's schema fingerprint.
pub(crate) const SCHEMA: &str = "catalog/1 {branches:u8 strings:bytes string_offsets:[u32] \
session_id file format_version cwd title created leaf lineage_fingerprint path source_hash \
policy_fingerprint:[u32] format tier complete:[u8] index_version:[u32] entry_count \
error_count untimed_count source_bytes cache_bytes size inode:[u64] first_ts last_ts mtime_ns ctime_ns:[i64] \
files:[u32] files_offsets:[u32] tools:[u32] tool_counts:[u64] tools_offsets:[u32] \
reasons:[u32] reason_counts:[u64] reasons_offsets:[u32] link_kinds:[u32] link_targets:[u32] \
links_offsets:[u32] terms:fst-map post_starts:[u32] post_bytes:postings/2 \
hot_entries hot_tokens:[u64] ids:keys/16 id_blocks:[u32] id_post_starts:[u32] \
id_post_bytes:postings/2}";

/// Which tier holds a session's index file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// A hot shard.
    Hot,
    /// A cold digest.
    Cold,
}

impl Tier {
    /// `hot` or `cold`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Cold => "cold",
        }
    }
}

/// What identifies a source file's content: a record is reused only when all of it matches.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct SourceIdentity {
    /// The exact source path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ns since the Unix epoch.
    pub mtime_ns: i64,
    /// Status change time, ns since the Unix epoch (0 where the platform has none).
    pub ctime_ns: i64,
    /// Inode number (0 where the platform has none).
    pub inode: u64,
    /// SHA-256 (hex) of the source bytes (`sourceHash`).
    pub source_hash: String,
}

/// One session of the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogEntry {
    /// The session's metadata (branch mode and lineage fingerprint included).
    pub summary: SessionSummary,
    /// The tier holding its index file.
    pub tier: Tier,
    /// The source identity the index file was built from.
    pub identity: SourceIdentity,
    /// SHA-256 (hex) of the policy the index file was built with.
    pub policy_fingerprint: String,
    /// The index format version of the file.
    pub format_version: u32,
}

/// The fields of a catalog session that decide whether a sync may reuse its index file,
/// borrowed from the catalog ([`Catalog::reuse_info`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReuseInfo<'a> {
    /// The exact source path.
    pub path: &'a str,
    /// Source size in bytes.
    pub size: u64,
    /// Source modification time, ns.
    pub mtime_ns: i64,
    /// Source status change time, ns.
    pub ctime_ns: i64,
    /// Source inode.
    pub inode: u64,
    /// SHA-256 (hex) of the source bytes.
    pub source_hash: &'a str,
    /// The tier holding the index file.
    pub tier: Tier,
    /// SHA-256 (hex) of the policy the index file was built with.
    pub policy_fingerprint: &'a str,
    /// The index format version of the file.
    pub format_version: u32,
    /// The index file's length.
    pub cache_bytes: u64,
    /// Whether the session's own reading was complete.
    pub complete: bool,
}

#[derive(Archive, Serialize, Debug, Default)]
pub(crate) struct CatalogPayload {
    branches: u8,
    strings: Vec<u8>,
    string_offsets: Vec<u32>,
    session_id: Vec<u32>,
    file: Vec<u32>,
    format_version: Vec<u32>,
    cwd: Vec<u32>,
    title: Vec<u32>,
    created: Vec<u32>,
    leaf: Vec<u32>,
    lineage_fingerprint: Vec<u32>,
    path: Vec<u32>,
    source_hash: Vec<u32>,
    policy_fingerprint: Vec<u32>,
    format: Vec<u8>,
    tier: Vec<u8>,
    complete: Vec<u8>,
    index_version: Vec<u32>,
    entry_count: Vec<u64>,
    error_count: Vec<u64>,
    untimed_count: Vec<u64>,
    source_bytes: Vec<u64>,
    cache_bytes: Vec<u64>,
    size: Vec<u64>,
    inode: Vec<u64>,
    first_ts: Vec<i64>,
    last_ts: Vec<i64>,
    mtime_ns: Vec<i64>,
    ctime_ns: Vec<i64>,
    files: Vec<u32>,
    files_offsets: Vec<u32>,
    tools: Vec<u32>,
    tool_counts: Vec<u64>,
    tools_offsets: Vec<u32>,
    reasons: Vec<u32>,
    reason_counts: Vec<u64>,
    reasons_offsets: Vec<u32>,
    link_kinds: Vec<u32>,
    link_targets: Vec<u32>,
    links_offsets: Vec<u32>,
    terms: Vec<u8>,
    post_starts: Vec<u32>,
    post_bytes: Vec<u8>,
    hot_entries: Vec<u64>,
    hot_tokens: Vec<u64>,
    ids: Vec<u8>,
    id_blocks: Vec<u32>,
    id_post_starts: Vec<u32>,
    id_post_bytes: Vec<u8>,
}

/// Collects sessions, their vocabularies and id keys, then writes one catalog file.
#[derive(Debug)]
pub struct CatalogBuilder {
    branches: Branches,
    st: StrTableBuilder,
    p: CatalogPayload,
    vocabs: Batch,
    ids: Batch,
    /// (ordinal here, ordinal in the previous catalog) of sessions whose terms and id keys
    /// are carried over from that catalog's merged maps ([`CatalogBuilder::add_carried`]).
    carried: Vec<(u32, u32)>,
    /// [`FOLD`] (a test sets it past any corpus to compare with one batch per thread).
    fold: usize,
}

/// The most sessions' term sets folded into one part before the final merge. At finish,
/// `vocabs` and `ids` are each cut into the fewest runs of equal length (one more session
/// in some) that keep within it, as many as a multiple of the worker threads, so every
/// thread folds the same share: 4,212 sessions on two threads fold in two parts, 10,000 in
/// six. Fewer, larger parts sort and merge each shared term fewer times (the merge of
/// 4,212 sessions took 100 ms from 17 parts, 45 ms from two), at the memory of a batch's
/// `(term, session)` pairs (about 20 MB for 2,560 sessions of 1,000 terms).
const FOLD: usize = 2560;

/// `all` cut into runs for [`Folded::of_all`]: `k` runs, `k` the least multiple of
/// `threads` that keeps each run within `fold` sessions (at most one run per session),
/// their lengths equal or one apart, in order.
fn batches(all: Batch, fold: usize, threads: usize) -> Vec<Batch> {
    let n = all.len();
    let threads = threads.max(1);
    let k = n.div_ceil(fold.max(1)).div_ceil(threads).max(1) * threads;
    let k = k.min(n);
    let mut runs = Vec::with_capacity(k);
    let mut it = all.into_iter();
    for i in 0..k {
        runs.push(it.by_ref().take(n / k + usize::from(i < n % k)).collect());
    }
    runs
}

/// Per-session term sets merged into one part of the final [`merge`]: its distinct terms in
/// byte order (their bytes one after another, `ends[r]` the end of term `r`), `n+1` posting
/// starts and the postings, session ordinals already final.
#[derive(Debug, Default)]
struct Folded {
    text: Vec<u8>,
    ends: Vec<usize>,
    starts: Vec<u32>,
    bytes: Vec<u8>,
}

/// Distinct byte strings numbered in the order first met: their bytes in one buffer and an
/// open-addressed table of their numbers (linear probing, kept at most half full).
#[derive(Default)]
struct Distinct {
    text: Vec<u8>,
    /// `ends[i]`: the end of string `i` in `text`.
    ends: Vec<usize>,
    hashes: Vec<u64>,
    /// String numbers, `u32::MAX` for an empty slot; a power of two long.
    slots: Vec<u32>,
}

impl Distinct {
    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: u32) -> &[u8] {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    /// The first slot of hash `h` in a table of `len` slots: the high bits, which the
    /// multiply of FxHash mixes into.
    fn slot(h: u64, len: usize) -> usize {
        (h >> (64 - len.trailing_zeros())) as usize
    }

    /// The number of `t`, given it if new.
    fn id(&mut self, t: &[u8]) -> Result<u32> {
        use std::hash::BuildHasher;
        if (self.len() + 1) * 2 > self.slots.len() {
            let len = (self.slots.len() * 2).max(1024);
            self.slots = vec![u32::MAX; len];
            for (i, &h) in self.hashes.iter().enumerate() {
                let mut at = Distinct::slot(h, len);
                while self.slots[at] != u32::MAX {
                    at = (at + 1) & (len - 1);
                }
                self.slots[at] = i as u32;
            }
        }
        let h = rustc_hash::FxBuildHasher.hash_one(t);
        let mask = self.slots.len() - 1;
        let mut at = Distinct::slot(h, self.slots.len());
        loop {
            let s = self.slots[at];
            if s == u32::MAX {
                let id = format::to_u32(self.len())?;
                self.text.extend_from_slice(t);
                self.ends.push(self.text.len());
                self.hashes.push(h);
                self.slots[at] = id;
                return Ok(id);
            }
            if self.hashes[s as usize] == h && self.get(s) == t {
                return Ok(s);
            }
            at = (at + 1) & mask;
        }
    }
}

/// `a()` and `b()`, `b` on a helper thread when there is more than one core and one can be
/// started (else both here); `None` for `b` only when its helper panicked.
fn both<A, B: Send>(a: impl FnOnce() -> A, b: impl FnOnce() -> B + Send) -> (A, Option<B>) {
    use std::sync::{Mutex, PoisonError};
    if sessiondex_source::worker_threads() < 2 {
        return (a(), Some(b()));
    }
    let b = Mutex::new(Some(b));
    let run_b = || {
        let f = b.lock().unwrap_or_else(PoisonError::into_inner).take();
        f.map(|f| f())
    };
    std::thread::scope(|s| {
        let helper = std::thread::Builder::new().spawn_scoped(s, run_b);
        let ra = a();
        // A helper that could not start (or panicked before taking `b`) leaves `b` here.
        let rb = helper.ok().and_then(|h| h.join().ok().flatten());
        (ra, rb.or_else(run_b))
    })
}

/// Sessions' term sets (session ordinal, set) merged together into one [`Folded`].
type Batch = Vec<(u32, TermSet)>;

/// A session's sorted terms (vocabulary or id keys) as the catalog builder holds them until
/// it is written: a hot shard's vocabulary FST, or a front-coded list (a cold digest's
/// vocabulary, id keys).
#[derive(Debug, Clone)]
pub enum TermSet {
    /// An FST set.
    Fst(fst::Set<Vec<u8>>),
    /// A front-coded list, checked ([`TermList`] read through once without error).
    List(TermList),
}

impl From<fst::Set<Vec<u8>>> for TermSet {
    fn from(s: fst::Set<Vec<u8>>) -> TermSet {
        TermSet::Fst(s)
    }
}

impl TermSet {
    /// True when the set holds `term`.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when a list is damaged.
    pub fn contains(&self, term: &[u8]) -> Result<bool> {
        match self {
            TermSet::Fst(set) => Ok(set.contains(term)),
            TermSet::List(list) => list.contains(term),
        }
    }

    /// A front-coded list, read through once so that folding it cannot fail.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the list is damaged.
    pub fn checked(list: TermList) -> Result<TermSet> {
        let mut c = list.cursor();
        while c.next_term()?.is_some() {}
        Ok(TermSet::List(list))
    }

    /// How many terms.
    fn len(&self) -> usize {
        match self {
            TermSet::Fst(set) => set.len(),
            TermSet::List(list) => list.len(),
        }
    }

    /// Calls `f` with each term in byte order.
    fn each(&self, mut f: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        match self {
            TermSet::Fst(set) => {
                use fst::Streamer;
                let mut s = set.stream();
                while let Some(t) = s.next() {
                    f(t)?;
                }
            }
            TermSet::List(list) => {
                let mut c = list.cursor();
                while let Some(t) = c.next_term()? {
                    f(t)?;
                }
            }
        }
        Ok(())
    }
}

impl Folded {
    /// The union of a batch: what [`merge`] gives for it, without a heap of streams. Each
    /// distinct term gets a number the first time it is met ([`Distinct`]), each
    /// `(term, session)` pair is noted, then the distinct terms are sorted once and the pairs
    /// placed by a counting sort (stable, so a term's sessions keep the batch's order; sorted
    /// after only when that order was not ascending).
    fn of(list: &[(u32, TermSet)]) -> Result<Folded> {
        let mut terms = Distinct::default();
        // Reserved whole: grown by doubling, its copies and page faults were a quarter of a fold.
        let mut pairs: Vec<(u32, u32)> =
            Vec::with_capacity(list.iter().map(|(_, set)| set.len()).sum());
        let mut ascending = true;
        let mut last_session: Option<u32> = None;
        for (session, map) in list {
            ascending &= last_session.is_none_or(|l| l < *session);
            last_session = Some(*session);
            map.each(|t| {
                pairs.push((terms.id(t)?, *session));
                Ok(())
            })?;
        }
        let n = terms.len();
        // The distinct terms in byte order; `rank[id]` is a term's ordinal. Sorted with each
        // term's first 8 bytes as a number beside it, so that most comparisons are of two
        // words and only equal ones read the terms.
        let mut keyed: Vec<(u64, &[u8], u32)> = (0..format::to_u32(n)?)
            .map(|id| {
                let t = terms.get(id);
                (crate::terms::sort_key(t), t, id)
            })
            .collect();
        crate::terms::sort_keyed(&mut keyed);
        let order: Vec<u32> = keyed.into_iter().map(|(_, _, id)| id).collect();
        let mut rank = vec![0u32; n];
        for (r, &id) in order.iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        // Counting sort of the pairs by rank.
        let mut starts = vec![0usize; n + 1];
        for &(id, _) in &pairs {
            starts[rank[id as usize] as usize + 1] += 1;
        }
        for i in 0..n {
            starts[i + 1] += starts[i];
        }
        let mut fill = starts.clone();
        let mut sessions = vec![0u32; pairs.len()];
        for &(id, s) in &pairs {
            let slot = &mut fill[rank[id as usize] as usize];
            sessions[*slot] = s;
            *slot += 1;
        }
        drop(pairs);
        let mut text = Vec::with_capacity(terms.text.len());
        let mut ends = Vec::with_capacity(n);
        // At least a byte per pair.
        let mut bytes = Vec::with_capacity(sessions.len() + sessions.len() / 4);
        let mut byte_starts = Vec::with_capacity(n + 1);
        byte_starts.push(0u32);
        for (r, &id) in order.iter().enumerate() {
            let list = &mut sessions[starts[r]..starts[r + 1]];
            if !ascending {
                list.sort_unstable();
            }
            let mut prev = 0u32;
            for (k, &s) in list.iter().enumerate() {
                write_varint(&mut bytes, if k == 0 { s } else { s - prev });
                prev = s;
            }
            text.extend_from_slice(terms.get(id));
            ends.push(text.len());
            byte_starts.push(format::to_u32(bytes.len())?);
        }
        Ok(Folded {
            text,
            ends,
            starts: byte_starts,
            bytes,
        })
    }

    /// How many distinct terms.
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// Term `r` in byte order.
    fn term(&self, r: usize) -> &[u8] {
        let start = if r == 0 { 0 } else { self.ends[r - 1] };
        &self.text[start..self.ends[r]]
    }

    /// Calls `f` with each session of term `r`, ascending.
    fn each_session(&self, r: usize, f: impl FnMut(u32)) -> Result<()> {
        let span = match (self.starts.get(r), self.starts.get(r + 1)) {
            (Some(&a), Some(&b)) => a as usize..b as usize,
            _ => return Err(missing()),
        };
        let bytes = self.bytes.get(span).ok_or_else(missing)?;
        each_varint_delta(bytes, u32::MAX as usize, f)
    }

    /// Every batch folded, in order: on this thread and up to three helpers taking batches
    /// in turn (a helper that cannot be started, as in a browser, leaves its share to the
    /// others). Each part is the same whichever thread folds it.
    fn of_all(batches: &[Batch]) -> Result<Vec<Folded>> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::{Mutex, PoisonError};
        let threads = sessiondex_source::worker_threads().min(batches.len());
        if threads < 2 {
            return batches.iter().map(|b| Folded::of(b)).collect();
        }
        let next = AtomicUsize::new(0);
        let done: Vec<Mutex<Option<Result<Folded>>>> =
            batches.iter().map(|_| Mutex::new(None)).collect();
        let work = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(b) = batches.get(i) else { break };
            let folded = Folded::of(b);
            *done[i].lock().unwrap_or_else(PoisonError::into_inner) = Some(folded);
        };
        std::thread::scope(|s| {
            for _ in 1..threads {
                let _ = std::thread::Builder::new().spawn_scoped(s, work);
            }
            work();
        });
        done.into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(PoisonError::into_inner)
                    .unwrap_or_else(|| Err(missing()))
            })
            .collect()
    }
}

fn ts(t: Option<i64>) -> i64 {
    t.unwrap_or(i64::MIN)
}

impl CatalogBuilder {
    /// An empty catalog of one branch mode.
    #[must_use]
    pub fn new(branches: Branches) -> CatalogBuilder {
        let p = CatalogPayload {
            branches: branches_code(branches),
            files_offsets: vec![0],
            tools_offsets: vec![0],
            reasons_offsets: vec![0],
            links_offsets: vec![0],
            ..CatalogPayload::default()
        };
        CatalogBuilder {
            branches,
            st: StrTableBuilder::new(),
            p,
            vocabs: Vec::new(),
            ids: Vec::new(),
            carried: Vec::new(),
            fold: FOLD,
        }
    }

    /// Sessions added so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.p.session_id.len()
    }

    /// True when no session was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a session; `vocabulary` (a cold digest's, see
    /// [`crate::cold::build_digest`]) joins the merged term map. Returns the
    /// session's ordinal.
    ///
    /// # Errors
    ///
    /// `index_too_large` past `u32` sessions or string bytes.
    pub fn add(&mut self, e: &CatalogEntry, vocabulary: Option<TermSet>) -> Result<u32> {
        self.add_with(
            e,
            SessionTerms {
                vocabulary,
                ..SessionTerms::default()
            },
        )
    }

    /// Adds a session with what it gives the merged maps: its vocabulary (hot or cold), the
    /// keys of its ids and, for a hot session, its shard's entry and token totals. Returns
    /// the session's ordinal.
    ///
    /// # Errors
    ///
    /// `index_too_large` past `u32` sessions or string bytes; `index_corrupt` for an id key
    /// set that cannot be built.
    pub fn add_with(&mut self, e: &CatalogEntry, terms: SessionTerms) -> Result<u32> {
        let ord = format::to_u32(self.len())?;
        self.p.hot_entries.push(terms.hot_entries);
        self.p.hot_tokens.push(terms.hot_tokens);
        if let Some(set) = terms.id_keys {
            self.ids.push((ord, set));
        }
        let vocabulary = terms.vocabulary;
        let (st, p, s) = (&mut self.st, &mut self.p, &e.summary);
        p.session_id.push(st.intern(&s.session_id)?);
        p.file.push(st.intern(&s.file)?);
        p.format_version.push(st.opt(s.format_version.as_deref())?);
        p.cwd.push(st.opt(s.cwd.as_deref())?);
        p.title.push(st.opt(s.title.as_deref())?);
        p.created.push(st.opt(s.created.as_deref())?);
        p.leaf.push(st.opt(s.leaf.as_deref())?);
        p.lineage_fingerprint
            .push(st.intern(&s.lineage_fingerprint)?);
        p.path.push(st.intern(&e.identity.path)?);
        p.source_hash.push(st.intern(&e.identity.source_hash)?);
        p.policy_fingerprint.push(st.intern(&e.policy_fingerprint)?);
        p.format.push(format_code(s.format));
        p.tier.push(match e.tier {
            Tier::Hot => 0,
            Tier::Cold => 1,
        });
        p.complete.push(u8::from(s.coverage.complete));
        p.index_version.push(e.format_version);
        p.entry_count.push(s.entry_count);
        p.error_count.push(s.error_count);
        p.untimed_count.push(s.untimed_count);
        p.source_bytes.push(s.source_bytes);
        p.cache_bytes.push(s.cache_bytes);
        p.size.push(e.identity.size);
        p.inode.push(e.identity.inode);
        p.first_ts.push(ts(s.first_ts));
        p.last_ts.push(ts(s.last_ts));
        p.mtime_ns.push(e.identity.mtime_ns);
        p.ctime_ns.push(e.identity.ctime_ns);
        for f in &s.files_touched {
            p.files.push(st.intern(f)?);
        }
        p.files_offsets.push(format::to_u32(p.files.len())?);
        for (t, c) in &s.tool_histogram {
            p.tools.push(st.intern(t)?);
            p.tool_counts.push(*c);
        }
        p.tools_offsets.push(format::to_u32(p.tools.len())?);
        for r in &s.coverage.reasons {
            p.reasons.push(st.intern(&r.code)?);
            p.reason_counts.push(r.count);
        }
        p.reasons_offsets.push(format::to_u32(p.reasons.len())?);
        for l in &s.links {
            p.link_kinds.push(st.intern(&l.kind)?);
            p.link_targets.push(st.intern(&l.target)?);
        }
        p.links_offsets.push(format::to_u32(p.link_kinds.len())?);
        if let Some(v) = vocabulary {
            self.vocabs.push((ord, v));
        }
        Ok(ord)
    }

    /// Adds a session whose index file is the one `old` (the previous catalog of this branch
    /// mode) lists at `old_pos`: its vocabulary, id keys and hot totals are taken from `old`'s
    /// merged maps and columns by [`CatalogBuilder::finish_from`], so the file is not opened.
    /// Returns the session's ordinal.
    ///
    /// # Errors
    ///
    /// As [`CatalogBuilder::add_with`]; `index_corrupt` when `old_pos` is out of range.
    pub fn add_carried<B: AsRef<[u8]>>(
        &mut self,
        e: &CatalogEntry,
        old: &Catalog<B>,
        old_pos: usize,
    ) -> Result<u32> {
        if old_pos >= old.len() {
            return Err(Error::corrupt("carried session out of range"));
        }
        let (hot_entries, hot_tokens) = old.hot_totals(old_pos).unwrap_or((0, 0));
        let ord = self.add_with(
            e,
            SessionTerms {
                hot_entries,
                hot_tokens,
                ..SessionTerms::default()
            },
        )?;
        self.carried.push((ord, format::to_u32(old_pos)?));
        Ok(ord)
    }

    /// Merges the vocabularies and writes the catalog file.
    ///
    /// # Errors
    ///
    /// `index_too_large` when a column overflows; `index_corrupt` when a vocabulary or id key
    /// list is damaged or a session was carried ([`CatalogBuilder::add_carried`]).
    pub fn finish(self) -> Result<Aligned> {
        self.finish_with(None)
    }

    /// [`CatalogBuilder::finish`] with `old`, the catalog the carried sessions come from:
    /// the merged maps are the union of `old`'s (its postings renumbered, sessions not
    /// carried dropped, terms left in no session dropped) and the added sessions' own. The
    /// result is the catalog a build from every session's index file would give, at the
    /// cost of one pass over `old`'s maps instead of opening every file.
    ///
    /// # Errors
    ///
    /// As [`CatalogBuilder::finish`]; `index_corrupt` when `old` is damaged, or when sessions
    /// were carried and `old` is `None`.
    pub fn finish_from<B: AsRef<[u8]> + Sync>(self, old: Option<&Catalog<B>>) -> Result<Aligned> {
        let cat = match old {
            Some(cat) if !self.carried.is_empty() => cat,
            _ => return self.finish_with(None),
        };
        let mut renumber = vec![u32::MAX; cat.len()];
        for &(new, was) in &self.carried {
            if let Some(r) = renumber.get_mut(was as usize) {
                *r = new;
            }
        }
        let c = cat.cols;
        let terms = cat.terms()?;
        let mut old_terms = Carried {
            cat,
            keys: OldKeys::Fst(terms.stream()),
            starts: c.post_starts,
            bytes: c.post_bytes,
            renumber: &renumber,
        };
        let mut old_ids = Carried {
            cat,
            keys: OldKeys::Table(KeyCursor::new(cat.id_table()?)),
            starts: c.id_post_starts,
            bytes: c.id_post_bytes,
            renumber: &renumber,
        };
        self.finish_with(Some([&mut old_terms, &mut old_ids]))
    }

    /// [`CatalogBuilder::finish_from`] with the previous catalog's two maps to carry (term map,
    /// id map) when sessions are carried. Only `finish_from` makes them, so a build that never
    /// carries (the browser's) holds none of their code.
    fn finish_with(mut self, old: Option<[&mut (dyn OldMap + Send); 2]>) -> Result<Aligned> {
        if old.is_none() && !self.carried.is_empty() {
            return Err(Error::corrupt("carried sessions without their catalog"));
        }
        let [old_terms, old_ids] = match old {
            Some([t, i]) => [Some(t), Some(i)],
            None => [None, None],
        };
        let threads = sessiondex_source::worker_threads();
        let mut runs = batches(std::mem::take(&mut self.vocabs), self.fold, threads);
        let n_vocab = runs.len();
        runs.extend(batches(std::mem::take(&mut self.ids), self.fold, threads));
        let mut parts = Folded::of_all(&runs)?;
        drop(runs);
        let id_parts = parts.split_off(n_vocab);
        let n = self.p.tier.len();
        let (terms, ids) = both(
            || {
                let mut keys = fst::MapBuilder::memory();
                let postings = merge(&parts, old_terms, n, &mut keys)?;
                Ok::<_, Error>((keys.into_inner()?, postings))
            },
            || {
                let mut keys = KeyTableBuilder::default();
                let postings = merge(&id_parts, old_ids, n, &mut keys)?;
                Ok::<_, Error>((keys.finish()?, postings))
            },
        );
        (self.p.terms, (self.p.post_starts, self.p.post_bytes)) = terms?;
        let ((ids, id_blocks), (id_post_starts, id_post_bytes)) =
            ids.ok_or_else(|| Error::corrupt("the id map merge did not finish"))??;
        (self.p.ids, self.p.id_blocks) = (ids, id_blocks);
        (self.p.id_post_starts, self.p.id_post_bytes) = (id_post_starts, id_post_bytes);
        self.p.strings = std::mem::take(&mut self.st.bytes);
        self.p.string_offsets = std::mem::take(&mut self.st.offsets);
        let _ = self.branches;
        Ok(format::seal_in_place(
            FileKind::Catalog,
            format::to_sealable(&self.p)?,
        ))
    }
}

/// A previous catalog's merged map as [`merge`] carries it: its keys in order, and the
/// sessions of each still carried, renumbered.
trait OldMap {
    /// The next key, copied into `key`, and its ordinal there; `None` after the last.
    fn next_into(&mut self, key: &mut Vec<u8>) -> Result<Option<u64>>;

    /// Pushes the carried sessions of ordinal `at`, renumbered, onto `out`.
    fn sessions(&self, at: u64, out: &mut Vec<u32>) -> Result<()>;
}

/// One merged map of a previous catalog (its keys, its posting columns) and how its session
/// ordinals are renumbered (`u32::MAX`: not carried).
struct Carried<'c, B> {
    cat: &'c Catalog<B>,
    keys: OldKeys<'c>,
    starts: Col,
    bytes: Col,
    renumber: &'c [u32],
}

/// A previous catalog's keys in order: its term map's or its id key table's.
enum OldKeys<'m> {
    Fst(fst::map::Stream<'m>),
    Table(KeyCursor<'m>),
}

impl<B: AsRef<[u8]>> OldMap for Carried<'_, B> {
    fn next_into(&mut self, key: &mut Vec<u8>) -> Result<Option<u64>> {
        use fst::Streamer;
        match &mut self.keys {
            OldKeys::Fst(s) => Ok(s.next().map(|(t, v)| {
                key.clear();
                key.extend_from_slice(t);
                v
            })),
            OldKeys::Table(c) => c.next_into(key),
        }
    }

    fn sessions(&self, at: u64, out: &mut Vec<u32>) -> Result<()> {
        self.cat.each_posting(self.starts, self.bytes, at, |s| {
            match self.renumber.get(s as usize) {
                Some(&n) if n != u32::MAX => out.push(n),
                _ => {}
            }
        })
    }
}

/// Where [`merge`] puts the merged keys, in order, each with its ordinal.
trait KeySink {
    fn put(&mut self, key: &[u8], ord: u64) -> Result<()>;
}

impl KeySink for fst::MapBuilder<Vec<u8>> {
    fn put(&mut self, key: &[u8], ord: u64) -> Result<()> {
        Ok(self.insert(key, ord)?)
    }
}

impl KeySink for KeyTableBuilder {
    fn put(&mut self, key: &[u8], _ord: u64) -> Result<()> {
        self.insert(key)
    }
}

/// Keys in a block of the id key table.
pub const ID_BLOCK: usize = 16;

/// Builds the catalog's id key table from keys in strictly ascending order: blocks of
/// [`ID_BLOCK`] keys (the last may hold fewer), each front-coded as a [`TermList`] of its own,
/// so that its first key is stored whole; and where each block starts in the bytes, then
/// where the last one ends. Key `k` is the `k % ID_BLOCK`-th of block `k / ID_BLOCK`.
#[derive(Default)]
struct KeyTableBuilder {
    bytes: Vec<u8>,
    blocks: Vec<u32>,
    last: Vec<u8>,
    len: usize,
}

impl KeyTableBuilder {
    /// Appends `key`.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when `key` is not above the key before it; `index_too_large` past
    /// `u32` bytes.
    fn insert(&mut self, key: &[u8]) -> Result<()> {
        if self.len > 0 && key <= self.last.as_slice() {
            return Err(Error::corrupt("id keys out of order"));
        }
        let prev: &[u8] = if self.len.is_multiple_of(ID_BLOCK) {
            self.blocks.push(format::to_u32(self.bytes.len())?);
            &[]
        } else {
            &self.last
        };
        crate::terms::encode_after(&mut self.bytes, prev, key)?;
        self.last.clear();
        self.last.extend_from_slice(key);
        self.len += 1;
        Ok(())
    }

    /// The table's bytes and block starts (with the end after them).
    fn finish(mut self) -> Result<(Vec<u8>, Vec<u32>)> {
        self.blocks.push(format::to_u32(self.bytes.len())?);
        Ok((self.bytes, self.blocks))
    }
}

/// A catalog's id key table, read in place: `len` keys, `blocks` the block starts.
#[derive(Clone, Copy)]
struct KeyTable<'a> {
    base: &'a [u8],
    bytes: &'a [u8],
    blocks: Col,
    len: usize,
}

impl<'a> KeyTable<'a> {
    /// Block `b`'s bytes and how many keys it holds.
    fn block(&self, b: usize) -> Result<(&'a [u8], usize)> {
        let first = b.checked_mul(ID_BLOCK).filter(|&f| f < self.len);
        let span = first.and_then(|_| self.blocks.span(self.base, b));
        match (first, span.and_then(|r| self.bytes.get(r))) {
            (Some(first), Some(bytes)) => Ok((bytes, ID_BLOCK.min(self.len - first))),
            _ => Err(missing()),
        }
    }

    /// The ordinal of `key`, if the table holds it: the last block whose first key is not
    /// above it is found by halves, then read in order.
    fn ordinal(&self, key: &[u8]) -> Result<Option<u64>> {
        let starts = self.blocks.raw(self.base, 4).ok_or_else(missing)?;
        // Block `b`'s first key (only where the block starts is read: its end is checked
        // when it is read whole).
        let first = |b: usize| -> Result<&[u8]> {
            let w = starts.get(b * 4..b * 4 + 4).ok_or_else(missing)?;
            let start = u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize;
            crate::terms::first_term(self.bytes.get(start..).ok_or_else(missing)?)
        };
        let (mut lo, mut hi) = (0, self.len.div_ceil(ID_BLOCK));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if first(mid)? <= key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let Some(b) = lo.checked_sub(1) else {
            return Ok(None);
        };
        let (bytes, count) = self.block(b)?;
        let i = crate::terms::position(bytes, count, key)?;
        Ok(i.map(|i| (b * ID_BLOCK + i) as u64))
    }
}

/// Reads a [`KeyTable`] in order, each block checked whole as it is left.
struct KeyCursor<'a> {
    table: KeyTable<'a>,
    /// The reader of the block being read.
    at: Option<Cursor<'a>>,
    /// The ordinal of the next key.
    next: usize,
}

impl<'a> KeyCursor<'a> {
    fn new(table: KeyTable<'a>) -> KeyCursor<'a> {
        KeyCursor {
            table,
            at: None,
            next: 0,
        }
    }

    /// The next key, copied into `key`, and its ordinal; `None` after the last. `key` holds
    /// the key given before (a block's first key is checked to be above it).
    ///
    /// # Errors
    ///
    /// `index_corrupt` when a block is damaged or its keys are not above the key before it.
    fn next_into(&mut self, key: &mut Vec<u8>) -> Result<Option<u64>> {
        loop {
            if let Some(c) = &mut self.at {
                if let Some(t) = c.next_term()? {
                    if self.next.is_multiple_of(ID_BLOCK) && self.next > 0 && t <= key.as_slice() {
                        return Err(Error::corrupt("id keys out of order"));
                    }
                    key.clear();
                    key.extend_from_slice(t);
                    self.next += 1;
                    return Ok(Some((self.next - 1) as u64));
                }
            }
            if self.next >= self.table.len {
                return Ok(None);
            }
            let (bytes, count) = self.table.block(self.next / ID_BLOCK)?;
            self.at = Some(Cursor::over(bytes, count));
        }
    }
}

/// The union of parts already merged and of a previous catalog's map when given: a term map
/// (term -> ordinal), `terms+1` posting starts and the postings (ascending session ordinals
/// below `n`, [`write_postings`]). A term whose sessions are all gone is left out.
///
/// The parts are merged by a heap of part numbers ordered by (current term, part number), so
/// a term's parts come out in order and, parts being in session order, its sessions
/// ascending; they are sorted only when a carried session breaks that.
fn merge(
    parts: &[Folded],
    mut old: Option<&mut (dyn OldMap + Send)>,
    n: usize,
    terms: &mut dyn KeySink,
) -> Result<(Vec<u32>, Vec<u8>)> {
    let mut post_starts = vec![0u32];
    let mut post_bytes = Vec::new();
    // The previous catalog's current term and its ordinal there.
    let mut old_key: Vec<u8> = Vec::new();
    let mut old_at = match old.as_mut() {
        Some(o) => o.next_into(&mut old_key)?,
        None => None,
    };
    // `pos[p]`: part `p`'s current term; the heap holds the parts not yet exhausted.
    let mut pos = vec![0usize; parts.len()];
    let less =
        |pos: &[usize], a: usize, b: usize| (parts[a].term(pos[a]), a) < (parts[b].term(pos[b]), b);
    let mut heap: Vec<usize> = (0..parts.len()).filter(|&p| parts[p].len() > 0).collect();
    for at in (0..heap.len() / 2).rev() {
        sift_down(&mut heap, at, |a, b| less(&pos, a, b));
    }
    let mut key: Vec<u8> = Vec::new();
    let mut sessions: Vec<u32> = Vec::new();
    let mut ord = 0u64;
    loop {
        let top = heap.first().map(|&p| parts[p].term(pos[p]));
        let from_old = match (top, old_at) {
            (None, None) => break,
            (Some(t), Some(_)) => old_key.as_slice() <= t,
            (None, Some(_)) => true,
            (Some(_), None) => false,
        };
        key.clear();
        key.extend_from_slice(if from_old {
            &old_key
        } else {
            top.unwrap_or_default()
        });
        sessions.clear();
        if let (true, Some(at), Some(o)) = (from_old, old_at, old.as_mut()) {
            o.sessions(at, &mut sessions)?;
            old_at = o.next_into(&mut old_key)?;
        }
        while let Some(&p) = heap.first() {
            let r = pos[p];
            if parts[p].term(r) != key.as_slice() {
                break;
            }
            parts[p].each_session(r, |s| sessions.push(s))?;
            pos[p] += 1;
            if pos[p] == parts[p].len() {
                heap.swap_remove(0);
            }
            sift_down(&mut heap, 0, |a, b| less(&pos, a, b));
        }
        if sessions.is_empty() {
            continue;
        }
        if !sessions.is_sorted_by(|a, b| a < b) {
            sessions.sort_unstable();
            sessions.dedup();
        }
        write_postings(&mut post_bytes, &sessions, n)?;
        terms.put(&key, ord)?;
        ord += 1;
        post_starts.push(format::to_u32(post_bytes.len())?);
    }
    Ok((post_starts, post_bytes))
}

/// Restores the heap order of `heap` below `at` (a min-heap by `less`).
fn sift_down(heap: &mut [usize], mut at: usize, less: impl Fn(usize, usize) -> bool) {
    loop {
        let l = 2 * at + 1;
        if l >= heap.len() {
            return;
        }
        let c = if l + 1 < heap.len() && less(heap[l + 1], heap[l]) {
            l + 1
        } else {
            l
        };
        if !less(heap[c], heap[at]) {
            return;
        }
        heap.swap(c, at);
        at = c;
    }
}

/// Longest id key, in characters: keys narrow a lookup to candidate sessions, whose records
/// are then compared in full, so a short key loses nothing.
pub const ID_KEY_CHARS: usize = 8;

/// The key of a session id, entry id or operation address in the catalog's id map: ASCII
/// lowercase, dashes removed, the first [`ID_KEY_CHARS`] characters. Two ids equal up to
/// ASCII case, and an id and any longer id it prefixes (dashes ignored) once the prefix is
/// [`ID_KEY_CHARS`] long, share a key.
#[must_use]
pub fn id_key(id: &str) -> String {
    id.chars()
        .filter(|&c| c != '-')
        .map(|c| c.to_ascii_lowercase())
        .take(ID_KEY_CHARS)
        .collect()
}

/// Keys given in ascending order as a front-coded list (a sync holds one per session until
/// the catalog is written).
fn key_set<K: AsRef<[u8]>>(sorted: impl IntoIterator<Item = K>) -> Result<TermSet> {
    let mut b = TermListBuilder::new();
    for k in sorted {
        b.insert(k.as_ref())?;
    }
    Ok(TermSet::List(b.finish()))
}

/// The key, in the catalog's id map, of a structural value one of a session's records has:
/// `field` is `role`, `tool`, `ref`, `provider`, `action` or `outcome`. It begins with a NUL,
/// which no id key of a real id does (were one to, a lookup would only open a session more).
#[must_use]
pub fn field_key(field: &str, value: &str) -> String {
    format!("\0{field}\0{value}")
}

/// The key, in the catalog's id map, of two structural values one record of a session holds
/// together: `(field_a, value_a)` comes first in the order `role`, `tool`, `ref`, `provider`,
/// `action`, `outcome`. It begins with two NULs (a [`field_key`] has a field name after its
/// first) and each value has `\` and NUL escaped, so no two pairs and no field key share one.
#[must_use]
pub fn pair_key(field_a: &str, value_a: &str, field_b: &str, value_b: &str) -> String {
    fn esc(v: &str) -> std::borrow::Cow<'_, str> {
        if v.contains(['\\', '\0']) {
            v.replace('\\', "\\\\").replace('\0', "\\0").into()
        } else {
            v.into()
        }
    }
    format!(
        "\0\0{field_a}\0{}\0{field_b}\0{}",
        esc(value_a),
        esc(value_b)
    )
}

/// The structural values of one record, in [`pair_key`]'s field order.
type Fields<'a> = [(&'static str, Option<&'a str>); 6];

/// A session's id map keys as its records are read: id keys as they come, each distinct
/// structural value and each distinct pair of values one record holds together (indices into
/// [`Fields`] and values), made keys once at the end.
#[derive(Default)]
struct IdKeys<'a> {
    keys: Vec<String>,
    fields: rustc_hash::FxHashSet<(usize, &'a str)>,
    pairs: rustc_hash::FxHashSet<(usize, &'a str, usize, &'a str)>,
}

impl<'a> IdKeys<'a> {
    /// Notes the [`id_key`] of a session id, entry id or operation address.
    fn id(&mut self, id: &str) {
        self.keys.push(id_key(id));
    }

    /// Notes a record's structural values, alone and in pairs.
    fn record(&mut self, fields: Fields<'a>) {
        for (i, (_, v)) in fields.iter().enumerate() {
            let Some(v) = *v else { continue };
            self.fields.insert((i, v));
            for (j, (_, w)) in fields.iter().enumerate().skip(i + 1) {
                if let Some(w) = *w {
                    self.pairs.insert((i, v, j, w));
                }
            }
        }
    }

    /// Every key, sorted and distinct.
    fn into_sorted(self) -> Vec<String> {
        const NAMES: [&str; 6] = ["role", "tool", "ref", "provider", "action", "outcome"];
        let mut keys = self.keys;
        for (i, v) in self.fields {
            if let Some(f) = NAMES.get(i) {
                keys.push(field_key(f, v));
            }
        }
        for (i, v, j, w) in self.pairs {
            if let (Some(a), Some(b)) = (NAMES.get(i), NAMES.get(j)) {
                keys.push(pair_key(a, v, b, w));
            }
        }
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

/// What one session adds to the catalog besides its metadata.
#[derive(Debug, Default)]
pub struct SessionTerms {
    /// Its vocabulary: every term its index file posts.
    pub vocabulary: Option<TermSet>,
    /// The [`id_key`]s of its session id, entry ids and operation addresses, the
    /// [`field_key`]s of its records' structural values and the [`pair_key`]s of values
    /// one record holds together, as a set (a
    /// sync holds one per session until the catalog is written: front-coded, that is small).
    pub id_keys: Option<TermSet>,
    /// A hot session's entry count (0 for a cold one).
    pub hot_entries: u64,
    /// A hot session's token total (0 for a cold one).
    pub hot_tokens: u64,
}

impl SessionTerms {
    /// Everything a hot shard gives: vocabulary, id keys of every entry, totals.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the shard is damaged.
    pub fn of_hot<B: AsRef<[u8]>>(shard: &crate::hot::HotShard<B>) -> Result<SessionTerms> {
        let mut id_keys = IdKeys::default();
        id_keys.id(&shard.summary().session_id);
        for e in shard.entries() {
            id_keys.id(e.entry_id()?);
            if let Some(a) = e.operation_address()? {
                id_keys.id(a);
            }
            id_keys.record([
                ("role", e.role()?),
                ("tool", e.tool()?),
                ("ref", e.reference()?),
                ("provider", e.provider()?),
                ("action", e.action()?),
                ("outcome", e.outcome()?.map(Outcome::as_str)),
            ]);
        }
        Ok(SessionTerms {
            vocabulary: Some(TermSet::Fst(shard.vocabulary_owned()?)),
            id_keys: Some(key_set(id_keys.into_sorted())?),
            hot_entries: shard.entry_count() as u64,
            hot_tokens: shard.total_tokens(),
        })
    }

    /// Everything a cold digest gives: its vocabulary (which the digest counts but does not
    /// hold: the one [`crate::cold::build_digest`] returned with it, or its part of a
    /// catalog, [`Catalog::cold_vocabularies`]) and the id keys of its session id (which the
    /// digest does not hold either) and its tuples.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the digest is damaged, the list is damaged or it does not have
    /// as many terms as the digest kept.
    pub fn of_cold<B: AsRef<[u8]>>(
        digest: &crate::cold::ColdDigest<B>,
        session_id: &str,
        vocabulary: TermList,
    ) -> Result<SessionTerms> {
        if vocabulary.len() != digest.vocabulary_len() {
            return Err(Error::corrupt("the vocabulary is not the digest's"));
        }
        let mut id_keys = IdKeys::default();
        id_keys.id(session_id);
        for i in 0..digest.tuple_count() {
            let t = digest
                .tuple(i)
                .ok_or_else(|| Error::corrupt("tuple out of range"))?;
            id_keys.id(t.entry_id()?);
            if let Some(a) = t.operation_address()? {
                id_keys.id(a);
            }
            id_keys.record([
                ("role", t.role()?),
                ("tool", t.tool()?),
                ("ref", t.reference()?),
                ("provider", t.provider()?),
                ("action", t.action()?),
                ("outcome", t.outcome()?.map(Outcome::as_str)),
            ]);
        }
        Ok(SessionTerms {
            vocabulary: Some(TermSet::checked(vocabulary)?),
            id_keys: Some(key_set(id_keys.into_sorted())?),
            hot_entries: 0,
            hot_tokens: 0,
        })
    }
}

/// Appends one posting list of a catalog's merged maps: `sessions` (ascending, each below
/// `n`, at least one) as LEB128 varints, the first session doubled and then the deltas, or,
/// when it takes fewer bytes, the varint 1 followed by a bitmap of `n` bits (bit `s % 8` of
/// byte `s / 8` set for each session `s`, the bits past `n` clear). A term in most sessions
/// then costs a bit per session instead of a byte.
///
/// # Errors
///
/// `index_too_large` when the first session does not fit doubled in a `u32`.
fn write_postings(out: &mut Vec<u8>, sessions: &[u32], n: usize) -> Result<()> {
    let varint_len = |v: u32| (32 - v.leading_zeros()).max(1).div_ceil(7) as usize;
    let first = sessions.first().map_or(Ok(0), |&s| {
        s.checked_mul(2)
            .ok_or_else(|| Error::new(crate::error::ErrorKind::TooLarge, "2^31 sessions"))
    })?;
    let mut len = varint_len(first);
    for w in sessions.windows(2) {
        len += varint_len(w[1] - w[0]);
    }
    let bitmap = n.div_ceil(8);
    if bitmap + 1 < len {
        out.push(1);
        let at = out.len();
        out.resize(at + bitmap, 0);
        for &s in sessions {
            let s = s as usize;
            let b = out
                .get_mut(at + s / 8)
                .filter(|_| s < n)
                .ok_or_else(|| Error::corrupt("a session past the catalog's"))?;
            *b |= 1 << (s % 8);
        }
        return Ok(());
    }
    write_varint(out, first);
    for w in sessions.windows(2) {
        write_varint(out, w[1] - w[0]);
    }
    Ok(())
}

/// Calls `f` with each session of a posting list written by [`write_postings`] for `n`
/// sessions, ascending, each checked below `n`.
fn each_posting_in(bytes: &[u8], n: usize, mut f: impl FnMut(u32)) -> Result<()> {
    let mut at = 0;
    let Some(head) = read_varint(bytes, &mut at) else {
        return if bytes.is_empty() {
            Ok(())
        } else {
            Err(Error::corrupt("bad varint"))
        };
    };
    if head == 1 {
        let bits = bytes.get(at..).unwrap_or_default();
        if bits.len() != n.div_ceil(8)
            || bits
                .last()
                .is_some_and(|&b| !n.is_multiple_of(8) && b >> (n % 8) != 0)
        {
            return Err(Error::corrupt("bad posting bitmap"));
        }
        for (k, chunk) in bits.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            let mut w = u64::from_le_bytes(word);
            while w != 0 {
                f((k * 64) as u32 + w.trailing_zeros());
                w &= w - 1;
            }
        }
        return Ok(());
    }
    if head % 2 != 0 {
        return Err(Error::corrupt("bad posting list head"));
    }
    let first = head / 2;
    if first as usize >= n {
        return Err(Error::corrupt("session ordinal out of range"));
    }
    f(first);
    each_varint_delta_from(bytes.get(at..).unwrap_or_default(), Some(first), n, f)
}

/// Calls `f` with each value of a posting list (varint deltas), each checked below `n`.
fn each_varint_delta(bytes: &[u8], n: usize, f: impl FnMut(u32)) -> Result<()> {
    each_varint_delta_from(bytes, None, n, f)
}

/// [`each_varint_delta`] after the value `prev` (the first varint is a delta from it).
fn each_varint_delta_from(
    bytes: &[u8],
    mut prev: Option<u32>,
    n: usize,
    mut f: impl FnMut(u32),
) -> Result<()> {
    let mut at = 0;
    while at < bytes.len() {
        let d = read_varint(bytes, &mut at).ok_or_else(|| Error::corrupt("bad varint"))?;
        let s = match prev {
            None => d,
            Some(p) => p
                .checked_add(d)
                .ok_or_else(|| Error::corrupt("bad delta"))?,
        };
        if s as usize >= n {
            return Err(Error::corrupt("session ordinal out of range"));
        }
        f(s);
        prev = Some(s);
    }
    Ok(())
}

pub(crate) fn write_varint(out: &mut Vec<u8>, mut v: u32) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub(crate) fn read_varint(b: &[u8], at: &mut usize) -> Option<u32> {
    let mut v = 0u32;
    for shift in (0..35).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u32::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

#[derive(Debug, Clone, Copy, Default)]
struct ListCol {
    items: Col,
    values: Col,
    offsets: Col,
}

#[derive(Debug, Clone, Copy, Default)]
struct Cols {
    n: usize,
    strings: StrCol,
    session_id: Col,
    file: Col,
    format_version: Col,
    cwd: Col,
    title: Col,
    created: Col,
    leaf: Col,
    lineage_fingerprint: Col,
    path: Col,
    source_hash: Col,
    policy_fingerprint: Col,
    format: Col,
    tier: Col,
    complete: Col,
    index_version: Col,
    entry_count: Col,
    error_count: Col,
    untimed_count: Col,
    source_bytes: Col,
    cache_bytes: Col,
    size: Col,
    inode: Col,
    first_ts: Col,
    last_ts: Col,
    mtime_ns: Col,
    ctime_ns: Col,
    files: ListCol,
    tools: ListCol,
    reasons: ListCol,
    links: ListCol,
    terms: Col,
    post_starts: Col,
    post_bytes: Col,
    hot_entries: Col,
    hot_tokens: Col,
    ids: Col,
    id_blocks: Col,
    id_post_starts: Col,
    id_post_bytes: Col,
}

/// An opened catalog over any bytes.
#[derive(Debug)]
pub struct Catalog<B> {
    bytes: B,
    payload: Range<usize>,
    cols: Cols,
    branches: Branches,
    term_count: usize,
}

fn missing() -> Error {
    Error::corrupt("column out of range")
}

impl<B: AsRef<[u8]>> Catalog<B> {
    /// Opens a catalog: header, checksum, rkyv validation, FST header. No per-session work.
    ///
    /// # Errors
    ///
    /// `index_corrupt` or `index_version_mismatch` for any damage; `index_unaligned` when the
    /// bytes are not aligned to [`format::ALIGN`]. Never panics.
    pub fn open(bytes: B) -> Result<Catalog<B>> {
        let range = format::unseal(FileKind::Catalog, bytes.as_ref())?;
        let base = &bytes.as_ref()[range.clone()];
        let a = format::access::<ArchivedCatalogPayload>(base)?;
        macro_rules! c {
            ($f:ident) => {
                Col::of(base, a.$f.as_slice())
            };
        }
        let n = a.session_id.len();
        let cols = Cols {
            n,
            strings: StrCol {
                bytes: c!(strings),
                offsets: c!(string_offsets),
            },
            session_id: c!(session_id),
            file: c!(file),
            format_version: c!(format_version),
            cwd: c!(cwd),
            title: c!(title),
            created: c!(created),
            leaf: c!(leaf),
            lineage_fingerprint: c!(lineage_fingerprint),
            path: c!(path),
            source_hash: c!(source_hash),
            policy_fingerprint: c!(policy_fingerprint),
            format: c!(format),
            tier: c!(tier),
            complete: c!(complete),
            index_version: c!(index_version),
            entry_count: c!(entry_count),
            error_count: c!(error_count),
            untimed_count: c!(untimed_count),
            source_bytes: c!(source_bytes),
            cache_bytes: c!(cache_bytes),
            size: c!(size),
            inode: c!(inode),
            first_ts: c!(first_ts),
            last_ts: c!(last_ts),
            mtime_ns: c!(mtime_ns),
            ctime_ns: c!(ctime_ns),
            files: ListCol {
                items: c!(files),
                values: Col::default(),
                offsets: c!(files_offsets),
            },
            tools: ListCol {
                items: c!(tools),
                values: c!(tool_counts),
                offsets: c!(tools_offsets),
            },
            reasons: ListCol {
                items: c!(reasons),
                values: c!(reason_counts),
                offsets: c!(reasons_offsets),
            },
            links: ListCol {
                items: c!(link_kinds),
                values: c!(link_targets),
                offsets: c!(links_offsets),
            },
            terms: c!(terms),
            post_starts: c!(post_starts),
            post_bytes: c!(post_bytes),
            hot_entries: c!(hot_entries),
            hot_tokens: c!(hot_tokens),
            ids: c!(ids),
            id_blocks: c!(id_blocks),
            id_post_starts: c!(id_post_starts),
            id_post_bytes: c!(id_post_bytes),
        };
        let per_session = [
            cols.file,
            cols.format_version,
            cols.cwd,
            cols.title,
            cols.created,
            cols.leaf,
            cols.lineage_fingerprint,
            cols.path,
            cols.source_hash,
            cols.policy_fingerprint,
            cols.format,
            cols.tier,
            cols.complete,
            cols.index_version,
            cols.entry_count,
            cols.error_count,
            cols.untimed_count,
            cols.source_bytes,
            cols.cache_bytes,
            cols.size,
            cols.inode,
            cols.first_ts,
            cols.last_ts,
            cols.mtime_ns,
            cols.ctime_ns,
            cols.hot_entries,
            cols.hot_tokens,
        ];
        let lists = [cols.files, cols.tools, cols.reasons, cols.links];
        if per_session.iter().any(|col| col.len() != n)
            || lists.iter().any(|l| l.offsets.len() != n + 1)
            || cols.tools.items.len() != cols.tools.values.len()
            || cols.reasons.items.len() != cols.reasons.values.len()
            || cols.links.items.len() != cols.links.values.len()
            || cols.strings.offsets.len() == 0
        {
            return Err(Error::corrupt("catalog columns differ in length"));
        }
        let terms = fst::Map::from(format::checked_fst(a.terms.as_slice())?);
        let term_count = terms.len();
        if cols.post_starts.len() != term_count + 1 {
            return Err(Error::corrupt("postings do not match the term map"));
        }
        let id_count = cols.id_post_starts.len().checked_sub(1);
        if id_count.is_none_or(|k| cols.id_blocks.len() != k.div_ceil(ID_BLOCK) + 1) {
            return Err(Error::corrupt("postings do not match the id map"));
        }
        let branches = branches_from(a.branches)?;
        Ok(Catalog {
            bytes,
            payload: range,
            cols,
            branches,
            term_count,
        })
    }

    fn base(&self) -> &[u8] {
        self.bytes.as_ref().get(self.payload.clone()).unwrap_or(&[])
    }

    /// The branch mode of every session listed.
    #[must_use]
    pub fn branches(&self) -> Branches {
        self.branches
    }

    /// Number of sessions.
    #[must_use]
    pub fn len(&self) -> usize {
        self.cols.n
    }

    /// True without sessions.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.cols.n == 0
    }

    fn s(&self, col: Col, i: usize) -> Result<Option<String>> {
        let base = self.base();
        let id = col.u32(base, i).ok_or_else(missing)?;
        Ok(self.cols.strings.opt(base, id)?.map(str::to_owned))
    }

    fn req(&self, col: Col, i: usize) -> Result<String> {
        self.s(col, i)?
            .ok_or_else(|| Error::corrupt("required string is absent"))
    }

    fn list(&self, l: ListCol, i: usize) -> Result<Vec<(String, u64)>> {
        let base = self.base();
        let span = l.offsets.span(base, i).ok_or_else(missing)?;
        span.map(|k| {
            let id = l.items.u32(base, k).ok_or_else(missing)?;
            let name = self.cols.strings.get(base, id as usize)?.to_owned();
            let value = if l.values.len() == 0 {
                0
            } else {
                l.values.u64(base, k).ok_or_else(missing)?
            };
            Ok((name, value))
        })
        .collect()
    }

    /// The source path of session `i` (cheap: no other column is read).
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage or when `i` is out of range.
    pub fn path(&self, i: usize) -> Result<String> {
        self.req(self.cols.path, i)
    }

    /// What a sync compares before reusing session `i` (source identity, tier, policy,
    /// format version, file length), borrowed from the catalog: no other column is read and
    /// nothing is allocated.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage or when `i` is out of range.
    pub fn reuse_info(&self, i: usize) -> Result<ReuseInfo<'_>> {
        let base = self.base();
        let c = &self.cols;
        let string = |col: Col| -> Result<&str> {
            let id = col.u32(base, i).ok_or_else(missing)?;
            c.strings
                .opt(base, id)?
                .ok_or_else(|| Error::corrupt("required string is absent"))
        };
        let u64_at = |col: Col| col.u64(base, i).ok_or_else(missing);
        let i64_at = |col: Col| col.i64(base, i).ok_or_else(missing);
        let tier = match c.tier.u8(base, i).ok_or_else(missing)? {
            0 => Tier::Hot,
            1 => Tier::Cold,
            t => return Err(Error::corrupt(format!("unknown tier {t}"))),
        };
        Ok(ReuseInfo {
            path: string(c.path)?,
            size: u64_at(c.size)?,
            mtime_ns: i64_at(c.mtime_ns)?,
            ctime_ns: i64_at(c.ctime_ns)?,
            inode: u64_at(c.inode)?,
            source_hash: string(c.source_hash)?,
            tier,
            policy_fingerprint: string(c.policy_fingerprint)?,
            format_version: c.index_version.u32(base, i).ok_or_else(missing)?,
            cache_bytes: u64_at(c.cache_bytes)?,
            complete: c.complete.u8(base, i).ok_or_else(missing)? != 0,
        })
    }

    /// Checks that every session decodes ([`Catalog::session`] cannot fail after this): the
    /// string table is UTF-8 with every string on a character boundary, every string id and
    /// list span is in range, every code is known. Allocates nothing per session, so a sync
    /// can trust the catalog and decode only the sessions it must rewrite.
    ///
    /// # Errors
    ///
    /// `index_corrupt` naming the first problem.
    pub fn validate(&self) -> Result<()> {
        let base = self.base();
        let c = &self.cols;
        let all = c.strings.bytes.bytes(base).ok_or_else(missing)?;
        let text = format::utf8(all).ok_or_else(|| Error::corrupt("strings are not UTF-8"))?;
        let count = c.strings.offsets.len() - 1;
        let mut prev = 0usize;
        for k in 0..=count {
            let at = c.strings.offsets.u32(base, k).ok_or_else(missing)? as usize;
            if at < prev || !text.is_char_boundary(at) {
                return Err(Error::corrupt(format!("string {k} out of range")));
            }
            prev = at;
        }
        let id_ok =
            |id: u32, optional: bool| (id as usize) < count || (optional && id == format::NONE);
        let required = [
            c.session_id,
            c.file,
            c.lineage_fingerprint,
            c.path,
            c.source_hash,
            c.policy_fingerprint,
        ];
        let optional = [c.format_version, c.cwd, c.title, c.created, c.leaf];
        for i in 0..c.n {
            for (cols, opt) in [(&required[..], false), (&optional[..], true)] {
                for col in cols {
                    if !id_ok(col.u32(base, i).ok_or_else(missing)?, opt) {
                        return Err(Error::corrupt("string id out of range"));
                    }
                }
            }
            if c.format.u8(base, i).ok_or_else(missing)? > 4 {
                return Err(Error::corrupt("unknown format code"));
            }
            if c.tier.u8(base, i).ok_or_else(missing)? > 1 {
                return Err(Error::corrupt("unknown tier"));
            }
            // Link targets are string ids too; tool and reason counts are plain numbers.
            for (l, ids) in [
                (c.files, false),
                (c.tools, false),
                (c.reasons, false),
                (c.links, true),
            ] {
                let span = l.offsets.span(base, i).ok_or_else(missing)?;
                if span.end > l.items.len() {
                    return Err(missing());
                }
                for k in span {
                    let item = l.items.u32(base, k).ok_or_else(missing)?;
                    let value_ok = !ids || id_ok(l.values.u32(base, k).ok_or_else(missing)?, false);
                    if !id_ok(item, false) || !value_ok {
                        return Err(Error::corrupt("string id out of range"));
                    }
                }
            }
        }
        Ok(())
    }

    /// Session `i`, decoded.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage or when `i` is out of range.
    pub fn session(&self, i: usize) -> Result<CatalogEntry> {
        let base = self.base();
        let c = &self.cols;
        let u8_at = |col: Col| col.u8(base, i).ok_or_else(missing);
        let u64_at = |col: Col| col.u64(base, i).ok_or_else(missing);
        let i64_at = |col: Col| col.i64(base, i).ok_or_else(missing);
        let opt_ts = |col: Col| i64_at(col).map(|t| (t != i64::MIN).then_some(t));
        let format = match u8_at(c.format)? {
            0 => None,
            1 => Some(sessiondex_source::Format::Pi),
            2 => Some(sessiondex_source::Format::Omp),
            3 => Some(sessiondex_source::Format::ClaudeCode),
            4 => Some(sessiondex_source::Format::Codex),
            f => return Err(Error::corrupt(format!("unknown format code {f}"))),
        };
        let tier = match u8_at(c.tier)? {
            0 => Tier::Hot,
            1 => Tier::Cold,
            t => return Err(Error::corrupt(format!("unknown tier {t}"))),
        };
        let links_span = c.links.offsets.span(base, i).ok_or_else(missing)?;
        let links = links_span
            .map(|k| {
                let kind = c.links.items.u32(base, k).ok_or_else(missing)?;
                let target = c.links.values.u32(base, k).ok_or_else(missing)?;
                Ok(SessionLink {
                    kind: c.strings.get(base, kind as usize)?.to_owned(),
                    target: c.strings.get(base, target as usize)?.to_owned(),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let summary = SessionSummary {
            session_id: self.req(c.session_id, i)?,
            file: self.req(c.file, i)?,
            format,
            format_version: self.s(c.format_version, i)?,
            cwd: self.s(c.cwd, i)?,
            title: self.s(c.title, i)?,
            created: self.s(c.created, i)?,
            links,
            branches: self.branches,
            leaf: self.s(c.leaf, i)?,
            lineage_fingerprint: self.req(c.lineage_fingerprint, i)?,
            first_ts: opt_ts(c.first_ts)?,
            last_ts: opt_ts(c.last_ts)?,
            entry_count: u64_at(c.entry_count)?,
            error_count: u64_at(c.error_count)?,
            untimed_count: u64_at(c.untimed_count)?,
            files_touched: self.list(c.files, i)?.into_iter().map(|(f, _)| f).collect(),
            tool_histogram: self.list(c.tools, i)?,
            coverage: Coverage {
                complete: u8_at(c.complete)? != 0,
                reasons: self
                    .list(c.reasons, i)?
                    .into_iter()
                    .map(|(code, count)| CoverageReason { code, count })
                    .collect(),
            },
            source_bytes: u64_at(c.source_bytes)?,
            cache_bytes: u64_at(c.cache_bytes)?,
        };
        Ok(CatalogEntry {
            summary,
            tier,
            identity: SourceIdentity {
                path: self.req(c.path, i)?,
                size: u64_at(c.size)?,
                mtime_ns: i64_at(c.mtime_ns)?,
                ctime_ns: i64_at(c.ctime_ns)?,
                inode: u64_at(c.inode)?,
                source_hash: self.req(c.source_hash, i)?,
            },
            policy_fingerprint: self.req(c.policy_fingerprint, i)?,
            format_version: c.index_version.u32(base, i).ok_or_else(missing)?,
        })
    }

    /// Number of distinct terms over the sessions' vocabularies.
    #[must_use]
    pub fn term_count(&self) -> usize {
        self.term_count
    }

    /// A hot session's shard totals: (entries, tokens); `None` for a cold one or out of range.
    #[must_use]
    pub fn hot_totals(&self, i: usize) -> Option<(u64, u64)> {
        let base = self.base();
        if self.cols.tier.u8(base, i)? != 0 {
            return None;
        }
        Some((
            self.cols.hot_entries.u64(base, i)?,
            self.cols.hot_tokens.u64(base, i)?,
        ))
    }

    /// The merged term map: term -> ordinal for [`Catalog::sessions_at`].
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn terms(&self) -> Result<fst::Map<&[u8]>> {
        let b = self.cols.terms.bytes(self.base()).ok_or_else(missing)?;
        Ok(fst::Map::new(b)?)
    }

    /// Session ordinals of term ordinal `ord`, ascending.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when out of range or the varints are malformed.
    pub fn sessions_at(&self, ord: u64) -> Result<Vec<u32>> {
        self.postings(self.cols.post_starts, self.cols.post_bytes, ord)
    }

    /// Calls `f` with each session ordinal of term `ord` ([`Catalog::sessions_at`] without
    /// the vector), ascending.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when out of range or the varints are malformed (`f` may have seen the
    /// sessions before the damage).
    pub fn each_session_at(&self, ord: u64, f: impl FnMut(u32)) -> Result<()> {
        self.each_posting(self.cols.post_starts, self.cols.post_bytes, ord, f)
    }

    fn postings(&self, starts: Col, bytes: Col, ord: u64) -> Result<Vec<u32>> {
        let bytes = self.posting_bytes(starts, bytes, ord)?;
        // Room for the whole list at once (grown a push at a time, a common term's list was
        // copied over and over): a list holds each session once, and as varints each takes a
        // byte at least; a bitmap (head 1) may hold every session.
        let n = self.cols.n;
        let bitmap = read_varint(bytes, &mut 0) == Some(1);
        let mut out = Vec::with_capacity(if bitmap { n } else { bytes.len().min(n) });
        each_posting_in(bytes, n, |s| out.push(s))?;
        Ok(out)
    }

    /// Calls `f` with each session ordinal of posting list `ord`, ascending.
    fn each_posting(&self, starts: Col, bytes: Col, ord: u64, f: impl FnMut(u32)) -> Result<()> {
        each_posting_in(self.posting_bytes(starts, bytes, ord)?, self.cols.n, f)
    }

    /// The varints of posting list `ord`.
    fn posting_bytes(&self, starts: Col, bytes: Col, ord: u64) -> Result<&[u8]> {
        let base = self.base();
        let ord = usize::try_from(ord).map_err(|_| missing())?;
        let span = starts.span(base, ord).ok_or_else(missing)?;
        let all = bytes.bytes(base).ok_or_else(missing)?;
        all.get(span).ok_or_else(missing)
    }

    /// Reads both merged maps whole: every term and id key, and every posting list they
    /// point to (varints, session ordinals in range). What a catalog written from this one
    /// ([`CatalogBuilder::finish_from`]) reads, checked before relying on it.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn validate_maps(&self) -> Result<()> {
        use fst::Streamer;
        let c = self.cols;
        let terms = self.terms()?;
        let mut stream = terms.stream();
        while let Some((_, ord)) = stream.next() {
            self.each_posting(c.post_starts, c.post_bytes, ord, |_| {})?;
        }
        let mut keys = KeyCursor::new(self.id_table()?);
        let mut key = Vec::new();
        while let Some(ord) = keys.next_into(&mut key)? {
            self.each_posting(c.id_post_starts, c.id_post_bytes, ord, |_| {})?;
        }
        Ok(())
    }

    /// The id key table.
    fn id_table(&self) -> Result<KeyTable<'_>> {
        let base = self.base();
        Ok(KeyTable {
            base,
            bytes: self.cols.ids.bytes(base).ok_or_else(missing)?,
            blocks: self.cols.id_blocks,
            len: self.cols.id_post_starts.len().saturating_sub(1),
        })
    }

    /// Each cold session's vocabulary as the merged term map holds it (the only place it is
    /// kept: [`SessionTerms::of_cold`]), by session ordinal; `None` for a hot session. One
    /// pass over the whole map.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn cold_vocabularies(&self) -> Result<Vec<Option<TermList>>> {
        use fst::Streamer;
        let base = self.base();
        let mut lists: Vec<Option<TermListBuilder>> = (0..self.cols.n)
            .map(|i| (self.cols.tier.u8(base, i) == Some(1)).then(TermListBuilder::new))
            .collect();
        let map = self.terms()?;
        let mut stream = map.stream();
        let mut failed = None;
        while let Some((term, ord)) = stream.next() {
            self.each_session_at(ord, |s| {
                if let Some(Some(list)) = lists.get_mut(s as usize) {
                    if let Err(e) = list.insert(term) {
                        failed.get_or_insert(e);
                    }
                }
            })?;
        }
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(lists
            .into_iter()
            .map(|l| l.map(TermListBuilder::finish))
            .collect())
    }

    /// Session ordinals whose vocabulary (hot or cold) holds `term`, ascending.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn sessions_with(&self, term: &str) -> Result<Vec<u32>> {
        match self.terms()?.get(term) {
            Some(ord) => self.sessions_at(ord),
            None => Ok(Vec::new()),
        }
    }

    /// Session ordinals holding an id (session id, entry id, operation address) whose
    /// [`id_key`] is `key`, ascending: the only sessions an id lookup needs to open.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn sessions_with_id_key(&self, key: &str) -> Result<Vec<u32>> {
        match self.id_table()?.ordinal(key.as_bytes())? {
            Some(ord) => self.postings(self.cols.id_post_starts, self.cols.id_post_bytes, ord),
            None => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No two (field, value) pairs share a pair key and no pair key is a field key, whatever
    /// NULs and backslashes the values hold; a record adds each pair it holds once, in the
    /// key's field order.
    #[test]
    fn pair_keys_are_unambiguous() {
        let values = [
            "",
            "a",
            "a\0",
            "\0a",
            "\0",
            "a\\",
            "a\\0",
            "\\",
            "a\0tool\0b",
            "b\0outcome\0c",
            "c",
        ];
        let names = ["role", "tool", "ref", "provider", "action", "outcome"];
        let mut seen = std::collections::HashSet::new();
        for (i, fa) in names.iter().enumerate() {
            for fb in &names[i + 1..] {
                for va in values {
                    for vb in values {
                        assert!(
                            seen.insert(pair_key(fa, va, fb, vb)),
                            "{fa} {va:?} {fb} {vb:?}"
                        );
                    }
                }
            }
        }
        for f in names {
            for v in values {
                assert!(seen.insert(field_key(f, v)), "{f} {v:?}");
            }
        }
        let mut keys = IdKeys::default();
        let record = [
            ("role", Some("tool")),
            ("tool", Some("bash")),
            ("ref", None),
            ("provider", None),
            ("action", None),
            ("outcome", Some("failed")),
        ];
        keys.record(record);
        keys.record(record);
        let want: std::collections::BTreeSet<String> = [
            field_key("role", "tool"),
            field_key("tool", "bash"),
            field_key("outcome", "failed"),
            pair_key("role", "tool", "tool", "bash"),
            pair_key("role", "tool", "outcome", "failed"),
            pair_key("tool", "bash", "outcome", "failed"),
        ]
        .into();
        assert_eq!(keys.into_sorted(), want.into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn an_empty_id_keys_its_session() {
        // A session whose id is empty has the empty id key, first in its list.
        let cold = |id: &str| CatalogEntry {
            summary: SessionSummary {
                session_id: id.into(),
                file: format!("/s/{id}.jsonl"),
                ..SessionSummary::default()
            },
            tier: Tier::Cold,
            identity: SourceIdentity::default(),
            policy_fingerprint: "p".into(),
            format_version: 6,
        };
        let mut b = CatalogBuilder::new(Branches::Active);
        for id in ["", "abc"] {
            let mut keys = IdKeys::default();
            keys.id(id);
            keys.record([
                ("role", Some("user")),
                ("tool", None),
                ("ref", None),
                ("provider", None),
                ("action", None),
                ("outcome", None),
            ]);
            let terms = SessionTerms {
                vocabulary: Some(TermSet::List(TermList::from_sorted(["", "w"]).unwrap())),
                id_keys: Some(key_set(keys.into_sorted()).unwrap()),
                ..SessionTerms::default()
            };
            b.add_with(&cold(id), terms).unwrap();
        }
        let bytes = b.finish().unwrap();
        let cat = Catalog::open(bytes.as_slice()).unwrap();
        assert_eq!(cat.sessions_with_id_key("").unwrap(), [0]);
        assert_eq!(cat.sessions_with_id_key("abc").unwrap(), [1]);
        assert_eq!(
            cat.sessions_with_id_key(&field_key("role", "user"))
                .unwrap(),
            [0, 1]
        );
        assert_eq!(cat.sessions_with("w").unwrap(), [0, 1]);
    }

    /// 700 sessions with overlapping vocabularies and id keys (some with neither): folding
    /// at most 256 sessions together, or 7, writes the catalog that one batch per thread
    /// writes, byte for byte, and every term maps to exactly the sessions that hold it. A
    /// catalog written from that one, carrying every other session, equals a fresh build of
    /// those sessions, and carrying every other session while adding the rest anew equals it.
    #[test]
    fn folded_merges_equal_one_merge() {
        let entry = |i: usize| CatalogEntry {
            summary: SessionSummary {
                session_id: format!("s{i}"),
                file: format!("/s/{i}.jsonl"),
                ..SessionSummary::default()
            },
            tier: if i.is_multiple_of(3) {
                Tier::Hot
            } else {
                Tier::Cold
            },
            identity: SourceIdentity {
                path: format!("/s/{i}.jsonl"),
                ..SourceIdentity::default()
            },
            policy_fingerprint: "p".into(),
            format_version: 4,
        };
        let words = |i: usize| -> std::collections::BTreeSet<String> {
            (0..40)
                .map(|k| format!("w{}", (i * 7 + k * k) % 997))
                .chain([format!("own{i}"), "all".to_owned()])
                .collect()
        };
        let terms = |i: usize| SessionTerms {
            vocabulary: (i % 11 != 5).then(|| {
                if i.is_multiple_of(2) {
                    TermSet::Fst(fst::Set::from_iter(words(i)).unwrap())
                } else {
                    TermSet::List(TermList::from_sorted(words(i)).unwrap())
                }
            }),
            id_keys: (i % 13 != 4).then(|| {
                key_set(std::collections::BTreeSet::from([
                    id_key(&format!("id{}", i % 50)),
                    field_key("tool", "bash"),
                ]))
                .unwrap()
            }),
            hot_entries: if i.is_multiple_of(3) { i as u64 } else { 0 },
            hot_tokens: if i.is_multiple_of(3) {
                10 * i as u64
            } else {
                0
            },
        };
        let build = |fold: usize, keep: &dyn Fn(usize) -> bool| {
            let mut b = CatalogBuilder::new(Branches::Active);
            b.fold = fold;
            for i in (0..700).filter(|&i| keep(i)) {
                b.add_with(&entry(i), terms(i)).unwrap();
            }
            b.finish().unwrap()
        };
        let all = |_: usize| true;
        let one = build(usize::MAX, &all);
        assert_eq!(build(256, &all).as_slice(), one.as_slice());
        assert_eq!(build(7, &all).as_slice(), one.as_slice());
        let cat = Catalog::open(one.as_slice()).unwrap();
        for term in ["all", "w0", "w996", "own0", "own5", "own699"] {
            let want: Vec<u32> = (0..700u32)
                .filter(|&i| i % 11 != 5 && words(i as usize).contains(term))
                .collect();
            assert_eq!(cat.sessions_with(term).unwrap(), want, "{term}");
        }
        let bash: Vec<u32> = (0..700u32).filter(|i| i % 13 != 4).collect();
        assert_eq!(
            cat.sessions_with_id_key(&field_key("tool", "bash"))
                .unwrap(),
            bash
        );
        // Carry the even sessions over from `cat`, in order, folding the new ones.
        let even = |i: usize| i.is_multiple_of(2);
        let mut b = CatalogBuilder::new(Branches::Active);
        b.fold = 7;
        for i in (0..700).filter(|&i| even(i)) {
            b.add_carried(&entry(i), &cat, i).unwrap();
        }
        let carried = b.finish_from(Some(&cat)).unwrap();
        assert_eq!(carried.as_slice(), build(usize::MAX, &even).as_slice());
        // Carried and new sessions interleaved: a term's carried sessions and its new ones
        // merge into one ascending list.
        let mut b = CatalogBuilder::new(Branches::Active);
        b.fold = 7;
        for i in 0..700 {
            if even(i) {
                b.add_carried(&entry(i), &cat, i).unwrap();
            } else {
                b.add_with(&entry(i), terms(i)).unwrap();
            }
        }
        assert_eq!(
            b.finish_from(Some(&cat)).unwrap().as_slice(),
            one.as_slice()
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// A batch folds to the union of its sessions' terms (each term with its ascending
        /// sessions): shared and own terms, sessions in any order, FST sets and front-coded
        /// lists, past the table's first growth (512 distinct terms).
        #[test]
        fn a_fold_is_the_merge_of_its_batch(
            sessions in proptest::collection::btree_set(0u32..5000, 1..40),
            seed in 0u64..1000,
            shuffle in proptest::bool::ANY,
        ) {
            let mut ords: Vec<u32> = sessions.into_iter().collect();
            if shuffle {
                ords.reverse();
                let k = (seed as usize) % ords.len();
                ords.rotate_left(k);
            }
            let mut union: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
            let batch: Batch = ords
                .iter()
                .map(|&s| {
                    let words: std::collections::BTreeSet<String> = (0..(seed % 97 + s as u64 % 61))
                        .map(|k| format!("t{}", (k * k + seed * u64::from(s)) % 1500))
                        .chain([format!("own{s}"), "é".to_owned()])
                        .collect();
                    for w in &words {
                        union.entry(w.clone()).or_default().push(s);
                    }
                    let set = if s.is_multiple_of(2) {
                        TermSet::Fst(fst::Set::from_iter(words).unwrap())
                    } else {
                        TermSet::checked(TermList::from_sorted(words).unwrap()).unwrap()
                    };
                    (s, set)
                })
                .collect();
            let folded = Folded::of(&batch).unwrap();
            proptest::prop_assert_eq!(folded.len(), union.len());
            for (ord, (term, mut want)) in union.into_iter().enumerate() {
                proptest::prop_assert_eq!(folded.term(ord), term.as_bytes());
                want.sort_unstable();
                let mut got = Vec::new();
                folded.each_session(ord, |s| got.push(s)).unwrap();
                proptest::prop_assert_eq!(got, want);
            }
        }

        /// The id key table finds every key a session gave, with exactly the sessions that
        /// gave it, and no other key: keys of 0 to 40 bytes (an empty one, long ones past a
        /// short header, shared prefixes), one to several blocks of them. Read in order it
        /// holds every key once; carried over to a new catalog it is the same table.
        #[test]
        fn the_id_key_table_finds_each_key_and_no_other(
            keys in proptest::collection::vec("[abé\\x00]{0,40}", 0..90),
            probes in proptest::collection::vec("[abé\\x00]{0,40}", 0..30),
            sessions in 1usize..6,
        ) {
            let entry = |i: usize| CatalogEntry {
                summary: SessionSummary {
                    session_id: format!("s{i}"),
                    file: format!("/s/{i}.jsonl"),
                    ..SessionSummary::default()
                },
                tier: Tier::Cold,
                identity: SourceIdentity {
                    path: format!("/s/{i}.jsonl"),
                    ..SourceIdentity::default()
                },
                policy_fingerprint: "p".into(),
                format_version: 4,
            };
            // Key `k` goes to the sessions `s` with `(k + s) % 3 != 0`, at least one.
            let mut want: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
            let mut per: Vec<std::collections::BTreeSet<String>> =
                vec![Default::default(); sessions];
            for (k, key) in keys.iter().enumerate() {
                let to: Vec<usize> = (0..sessions).filter(|s| (k + s) % 3 != 0).collect();
                let to = if to.is_empty() { vec![k % sessions] } else { to };
                for s in to {
                    per[s].insert(key.clone());
                }
            }
            for (s, set) in per.iter().enumerate() {
                for key in set {
                    want.entry(key.clone()).or_default().push(s as u32);
                }
            }
            let build = || {
                let mut b = CatalogBuilder::new(Branches::Active);
                for (s, set) in per.iter().enumerate() {
                    let terms = SessionTerms {
                        id_keys: Some(key_set(set.iter()).unwrap()),
                        ..SessionTerms::default()
                    };
                    b.add_with(&entry(s), terms).unwrap();
                }
                b.finish().unwrap()
            };
            let bytes = build();
            let cat = Catalog::open(bytes.as_slice()).unwrap();
            cat.validate_maps().unwrap();
            for (key, sessions) in &want {
                proptest::prop_assert_eq!(&cat.sessions_with_id_key(key).unwrap(), sessions);
            }
            for probe in &probes {
                let got = cat.sessions_with_id_key(probe).unwrap();
                proptest::prop_assert_eq!(got, want.get(probe).cloned().unwrap_or_default());
            }
            let table = cat.id_table().unwrap();
            let mut cursor = KeyCursor::new(table);
            let mut key = Vec::new();
            let mut read = Vec::new();
            while let Some(ord) = cursor.next_into(&mut key).unwrap() {
                proptest::prop_assert_eq!(ord, read.len() as u64);
                proptest::prop_assert_eq!(table.ordinal(&key).unwrap(), Some(ord));
                read.push(key.clone());
            }
            let keys: Vec<Vec<u8>> = want.keys().map(|k| k.as_bytes().to_vec()).collect();
            proptest::prop_assert_eq!(read, keys);
            let mut b = CatalogBuilder::new(Branches::Active);
            for s in 0..sessions {
                b.add_carried(&entry(s), &cat, s).unwrap();
            }
            let carried = b.finish_from(Some(&cat)).unwrap();
            proptest::prop_assert_eq!(carried.as_slice(), bytes.as_slice());
        }
    }

    /// Runs are as many as a multiple of the threads, the fewest within `fold` sessions (at
    /// most one per session), their lengths equal or one apart, the sessions in order.
    #[test]
    fn batches_share_sessions_evenly() {
        let lens = |n: u32, fold: usize, threads: usize| -> Vec<usize> {
            let all: Batch = (0..n)
                .map(|s| (s, TermSet::List(TermList::from_sorted(["t"]).unwrap())))
                .collect();
            let runs = batches(all, fold, threads);
            let order: Vec<u32> = runs.iter().flatten().map(|(s, _)| *s).collect();
            assert_eq!(order, (0..n).collect::<Vec<_>>());
            runs.iter().map(Vec::len).collect()
        };
        assert_eq!(lens(4212, FOLD, 2), [2106, 2106]);
        assert_eq!(lens(10_256, FOLD, 2), [1710, 1710, 1709, 1709, 1709, 1709]);
        assert_eq!(lens(4097, 2048, 1), [1366, 1366, 1365]);
        assert_eq!(lens(4097, 2048, 2), [1025, 1024, 1024, 1024]);
        assert_eq!(lens(700, 256, 4), [175, 175, 175, 175]);
        assert_eq!(lens(3, 2048, 4), [1, 1, 1]);
        assert_eq!(lens(0, 2048, 2), Vec::<usize>::new());
        assert_eq!(lens(5, usize::MAX, 0), [5]);
    }

    #[test]
    fn both_runs_each_once() {
        let runs = std::sync::atomic::AtomicUsize::new(0);
        let count = || runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        assert_eq!(both(|| 1, || 2), (1, Some(2)));
        // A panicking `b` is reported as `None`, not run again here.
        let (a, b) = both(
            || 1,
            || {
                count();
                if sessiondex_source::worker_threads() > 1 {
                    panic!("b fails on its helper");
                }
                2
            },
        );
        assert_eq!(a, 1);
        assert_eq!(runs.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(b, (sessiondex_source::worker_threads() == 1).then_some(2));
    }

    #[test]
    fn posting_lists_round_trip_in_the_smaller_form() {
        // splitmix64
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        let (mut bitmaps, mut varints) = (0, 0);
        for n in [1usize, 2, 7, 8, 9, 63, 64, 65, 200, 1000, 5000] {
            for per_mille in [1u64, 20, 125, 300, 700, 1000] {
                let mut list: Vec<u32> = (0..n as u32)
                    .filter(|_| next() % 1000 < per_mille)
                    .collect();
                if list.is_empty() {
                    list.push((next() % n as u64) as u32);
                }
                let mut varint = Vec::new();
                write_varint(&mut varint, list[0] * 2);
                for w in list.windows(2) {
                    write_varint(&mut varint, w[1] - w[0]);
                }
                let mut out = vec![9u8];
                write_postings(&mut out, &list, n).unwrap();
                assert_eq!(out[0], 9, "appended");
                let got = &out[1..];
                assert_eq!(got.len(), varint.len().min(n.div_ceil(8) + 1), "n {n}");
                if varint.len() <= n.div_ceil(8) + 1 {
                    assert_eq!(got, &varint[..], "n {n}: varints when they tie");
                }
                if got.len() < varint.len() {
                    bitmaps += 1;
                } else {
                    varints += 1;
                }
                let mut back = Vec::new();
                each_posting_in(got, n, |s| back.push(s)).unwrap();
                assert_eq!(back, list, "n {n} density {per_mille}");
                // One session fewer in the catalog than the list needs: refused.
                if *list.last().unwrap() as usize == n - 1 {
                    assert!(each_posting_in(got, n - 1, |_| {}).is_err(), "n {n}");
                }
            }
        }
        assert!(bitmaps > 10 && varints > 10, "{bitmaps} {varints}");
        // Any bytes: an error or sessions below `n`, ascending, never a panic.
        for k in 0..4000 {
            let n = (next() % 70) as usize + (k % 3) * 500;
            let len = (next() % 24) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if k % 4 == 0 && !bytes.is_empty() {
                bytes[0] = 1;
            }
            let mut seen: Vec<u32> = Vec::new();
            if each_posting_in(&bytes, n, |s| seen.push(s)).is_ok() {
                assert!(seen.iter().all(|&s| (s as usize) < n), "{bytes:?} {n}");
                if bytes.first() == Some(&1) {
                    assert!(seen.is_sorted_by(|a, b| a < b), "{bytes:?} {n}");
                }
            }
        }
        // A tie (two bytes either way) stays varints.
        let mut tie = Vec::new();
        write_postings(&mut tie, &[0, 1], 8).unwrap();
        assert_eq!(tie, [0, 1]);
        // Damage: a bit past the sessions, a short bitmap, an odd head other than 1.
        assert!(each_posting_in(&[1, 0b1000_0001], 7, |_| {}).is_err());
        assert!(each_posting_in(&[1, 0b0100_0001], 7, |_| {}).is_ok());
        assert!(each_posting_in(&[1, 0xff], 9, |_| {}).is_err());
        assert!(each_posting_in(&[3, 0], 9, |_| {}).is_err());
        assert!(each_posting_in(&[18], 9, |_| {}).is_err());
        assert!(each_posting_in(&[16], 9, |_| {}).is_ok());
        assert!(each_posting_in(&[], 9, |_| {}).is_ok());
    }

    #[test]
    fn varints_round_trip() {
        let mut b = Vec::new();
        for v in [0u32, 1, 127, 128, 300, u32::MAX] {
            write_varint(&mut b, v);
        }
        let mut at = 0;
        for v in [0u32, 1, 127, 128, 300, u32::MAX] {
            assert_eq!(read_varint(&b, &mut at), Some(v));
        }
        assert_eq!(
            read_varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0x01], &mut 0),
            None
        );
    }
}
