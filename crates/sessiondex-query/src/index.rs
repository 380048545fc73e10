//! An opened index of one branch mode: the catalog, hot shards and cold digests, and session
//! resolution and hydration from source.
//!
//! An [`Index`] is backed either by the on-disk store (feature `fs`: files mmapped, sources
//! read from their paths) or by bytes in memory ([`Index::from_memory`]: the catalog, each
//! session's index file and the sources themselves, as a WASM page holds them). The engine
//! sees no difference: hydration, expansion and stale checks re-read the source bytes the
//! backend holds.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

#[cfg(feature = "fs")]
use crate::watch::Watch;
use serde_json::json;
use sessiondex_core::catalog::{Catalog, CatalogEntry, Tier};
use sessiondex_core::cold::ColdDigest;
use sessiondex_core::format::Aligned;
use sessiondex_core::hot::HotShard;
#[cfg(feature = "fs")]
use sessiondex_core::{format::FileKind, mmap::Mmap, store::Store};
use sessiondex_source::{self as source, Branches, ReadOptions, Selection, Session};
use sha2::{Digest, Sha256};
#[cfg(feature = "fs")]
use std::path::{Path, PathBuf};

use crate::engine::Scratch;
use crate::error::{Error, ErrorCode};

/// Index bytes: a memory map of a stored file, or bytes built in memory (a hydrated session,
/// an in-memory index).
#[derive(Debug)]
pub enum Bytes {
    /// A read-only map of an index file.
    #[cfg(feature = "fs")]
    Mapped(Mmap),
    /// Aligned bytes in memory.
    Owned(Aligned),
    /// Aligned bytes in memory, shared with the index that holds them.
    Shared(Arc<Aligned>),
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            #[cfg(feature = "fs")]
            Bytes::Mapped(m) => m.as_ref(),
            Bytes::Owned(a) => a.as_slice(),
            Bytes::Shared(a) => a.as_slice(),
        }
    }
}

impl Bytes {
    /// Whether bytes checked earlier can still be trusted: a map whose file was not written
    /// in place since (one `fstat`); bytes in memory always.
    #[must_use]
    pub fn unchanged(&self) -> bool {
        match self {
            #[cfg(feature = "fs")]
            Bytes::Mapped(m) => m.unchanged(),
            Bytes::Owned(_) | Bytes::Shared(_) => true,
        }
    }
}

/// Converts an index-layer error to the user-facing one.
#[must_use]
pub fn core_error(e: &sessiondex_core::Error) -> Error {
    let code = match e.code() {
        "index_corrupt" | "index_version_mismatch" | "index_unaligned" => ErrorCode::IndexCorrupt,
        _ => ErrorCode::IndexUnavailable,
    };
    Error::new(code, e.to_string())
}

/// The bytes of an in-memory index of one branch mode.
#[derive(Debug, Clone, Default)]
pub struct MemoryParts {
    /// The catalog file; `None` is an empty index.
    pub catalog: Option<Arc<Aligned>>,
    /// Per catalog position, the session's index file (hot shard or cold digest, as its
    /// entry's tier says); `None` counts as a missing file.
    pub files: Vec<Option<Arc<Aligned>>>,
    /// The source bytes by path (the catalog's `identity.path`), for hydration and expansion.
    pub sources: BTreeMap<String, Arc<[u8]>>,
}

#[derive(Debug)]
enum Backend {
    /// The cache store on disk.
    #[cfg(feature = "fs")]
    Store(Store),
    /// Index files and sources in memory.
    Memory {
        files: Vec<Option<Arc<Aligned>>>,
        sources: BTreeMap<String, Arc<[u8]>>,
    },
}

/// The catalog of one branch mode with every session decoded, and access to their files.
#[derive(Debug)]
pub struct Index {
    backend: Backend,
    branches: Branches,
    entries: Vec<CatalogEntry>,
    catalog: Option<Catalog<Bytes>>,
    /// The catalog's path and map when on disk ([`Index::is_current`]).
    #[cfg(feature = "fs")]
    catalog_file: Option<(PathBuf, Option<Mmap>)>,
    /// Hot shards opened (and checked) so far, per catalog position: an index kept across
    /// calls opens each shard once.
    hot: Vec<Mutex<Kept<HotShard<Bytes>>>>,
    /// Cold digests opened (and checked) so far, per catalog position, likewise, up to
    /// `cold_cap` bytes of digests in all (`cold_bytes`).
    cold: Vec<Mutex<Kept<ColdDigest<Bytes>>>>,
    /// The watch on the directory of the index files ([`Index::call_epoch`]).
    #[cfg(feature = "fs")]
    watch: Option<Watch>,
    cold_bytes: std::sync::atomic::AtomicU64,
    cold_cap: std::sync::atomic::AtomicU64,
    /// [`Index::newest_first`], computed by the first call that needs it.
    newest_first: OnceLock<Vec<u32>>,
    /// [`Index::newest_rank`], likewise.
    newest_rank: OnceLock<Vec<u32>>,
    /// [`Index::session_flags`], likewise.
    flags: OnceLock<Vec<u8>>,
    /// [`Index::term_list`], likewise (shared with the thread that builds its buckets).
    term_list: OnceLock<Arc<TermList>>,
    /// [`Index::set_background_builds`].
    background: std::sync::atomic::AtomicBool,
    /// [`Index::session_totals`], likewise.
    totals: OnceLock<Option<SessionTotals>>,
    /// What the last recall call left for the next one to fill ([`crate::engine::Scratch`]).
    /// Not in the browser build, which is held to its size.
    #[cfg(not(target_arch = "wasm32"))]
    scratch: Mutex<Scratch>,
}

/// Sums over every session of an index, so that a recall which looks at a few candidate
/// sessions counts the others in its coverage and BM25 statistics without visiting each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionTotals {
    /// Hot sessions.
    pub hot: u64,
    /// Their entries, from the catalog's hot totals.
    pub hot_entries: u64,
    /// Their tokens, likewise.
    pub hot_tokens: u64,
    /// Cold sessions.
    pub cold: u64,
    /// The positions of the sessions whose coverage is incomplete, ascending.
    pub incomplete: Vec<u32>,
}

/// The catalog's merged vocabulary as one flat list: every term in byte order with its
/// ordinal. A pass over it runs at memory speed; a stream over the term FST costs about
/// 180 ns a term (10 ms for the 56,385 terms of 10,256 generated sessions).
#[derive(Debug, Default)]
pub struct TermList {
    /// Every term's bytes, one after another, while the list is built and when they are not
    /// all UTF-8 (a damaged catalog); else empty, and `text` holds them.
    bytes: Vec<u8>,
    /// Every term's bytes as one string, once the list is built and found UTF-8
    /// ([`TermList::seal`]): a term is then a slice of it, with no check of its own.
    text: String,
    /// End of each term in `bytes`.
    ends: Vec<u32>,
    ords: Vec<u32>,
    /// [`TermList::dotted`], found on first use.
    dotted: OnceLock<Vec<usize>>,
    /// The terms of three bytes or more by their last three, found by the second
    /// [`TermList::ending_with`] of three bytes or more (a process that asks once, as the
    /// CLI does, searches once instead of building them).
    suffixes: OnceLock<Suffixes>,
    /// Whether an [`TermList::ending_with`] of three bytes or more searched already.
    searched_ending: std::sync::atomic::AtomicBool,
    /// The terms by the three-byte runs they hold, built beside the calls or by the second
    /// [`TermList::holding`] of a needle of three bytes or more (see
    /// [`TermList::ready_grams`]).
    grams: OnceLock<Buckets>,
    /// Whether a [`TermList::holding`] of three bytes or more searched already.
    searched_holding: std::sync::atomic::AtomicBool,
    /// Whether the build of `grams` on a thread began.
    building: std::sync::atomic::AtomicBool,
    /// Whether `grams` may be built on a thread of its own ([`Index::set_background_builds`]).
    background: std::sync::atomic::AtomicBool,
    /// The list itself when an [`Index`] shares it: `grams` is then built on a thread of its
    /// own, which holds the list while it builds.
    me: std::sync::Weak<TermList>,
}

/// Term positions grouped into [`SUFFIX_BUCKETS`] lists (each ascending, a term at most once
/// in a list) by a hash of three bytes ([`suffix_bucket`]).
#[derive(Debug, Default)]
struct Buckets {
    /// Where each bucket's positions start in `terms`, and the end.
    starts: Vec<u32>,
    terms: Vec<u32>,
}

impl Buckets {
    /// The buckets of `list`'s terms, each term in the buckets `of` passes on for it (one
    /// bucket may come more than once): a counting sort of the positions by bucket.
    /// `pause` is called between runs of [`PAUSE_TERMS`] terms (see [`TermList::ready_grams`]).
    fn of(
        list: &TermList,
        of: impl Fn(&[u8], &mut dyn FnMut(usize)),
        pause: &mut dyn FnMut(),
    ) -> Buckets {
        // The last term put in each bucket, plus one (0: none), so a term goes in once.
        let mut last = vec![0u32; SUFFIX_BUCKETS];
        let mut each = |f: &mut dyn FnMut(usize, usize), pause: &mut dyn FnMut()| {
            last.fill(0);
            for k in 0..list.len() {
                if k % PAUSE_TERMS == PAUSE_TERMS - 1 {
                    pause();
                }
                let Some((t, _, _)) = list.get(k) else {
                    continue;
                };
                // At most 2^32 terms: the list's ends are u32.
                #[allow(clippy::cast_possible_truncation)]
                let mark = k as u32 + 1;
                of(t, &mut |b| {
                    if last[b] != mark {
                        last[b] = mark;
                        f(b, k);
                    }
                });
            }
        };
        let mut starts = vec![0u32; SUFFIX_BUCKETS + 1];
        each(&mut |b, _| starts[b + 1] += 1, pause);
        for b in 0..SUFFIX_BUCKETS {
            starts[b + 1] += starts[b];
        }
        let mut at = starts.clone();
        // New memory, zeroed (and faulted in) a run at a time.
        let total = starts[SUFFIX_BUCKETS] as usize;
        let mut terms = Vec::with_capacity(total);
        while terms.len() < total {
            terms.resize(total.min(terms.len() + PAUSE_TERMS * 16), 0);
            pause();
        }
        each(
            &mut |b, k| {
                #[allow(clippy::cast_possible_truncation)]
                {
                    terms[at[b] as usize] = k as u32;
                }
                at[b] += 1;
            },
            pause,
        );
        Buckets { starts, terms }
    }

    /// The buckets of `list`'s terms when each term is in one bucket at most, the one
    /// `bucket` gives it. Built in a call (the second search by suffix), so it touches as
    /// little new memory as it can: each term's bucket is noted in one pass and placed from
    /// the note in the next (no term looked at twice, no bucket's last term kept), and the
    /// starts, used as the next free places, shift back in place.
    fn of_one(list: &TermList, bucket: impl Fn(&[u8]) -> Option<u16>) -> Buckets {
        const NONE: u32 = u32::MAX;
        let mut starts = vec![0u32; SUFFIX_BUCKETS + 1];
        let picks: Vec<u32> = (0..list.len())
            .map(|k| match list.get(k).and_then(|(t, _, _)| bucket(t)) {
                Some(b) => {
                    // Bucket `b`'s count at `b + 1`; the prefix sum below makes it a start.
                    starts[usize::from(b) + 1] += 1;
                    u32::from(b)
                }
                None => NONE,
            })
            .collect();
        for b in 0..SUFFIX_BUCKETS {
            starts[b + 1] += starts[b];
        }
        let mut terms = vec![0u32; starts[SUFFIX_BUCKETS] as usize];
        for (k, &b) in picks.iter().enumerate() {
            let Some(at) = starts.get_mut(b as usize).filter(|_| b != NONE) else {
                continue;
            };
            if let Some(t) = terms.get_mut(*at as usize) {
                // At most 2^32 terms: the list's ends are u32.
                #[allow(clippy::cast_possible_truncation)]
                {
                    *t = k as u32;
                }
            }
            *at += 1;
        }
        // Each start is now the next bucket's: shifted back, bucket 0 starts at 0.
        starts.copy_within(..SUFFIX_BUCKETS, 1);
        starts[0] = 0;
        Buckets { starts, terms }
    }

    /// The positions of bucket `b`.
    fn get(&self, b: usize) -> &[u32] {
        let (s, e) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        self.terms.get(s..e).unwrap_or_default()
    }
}

/// The terms a build of [`Buckets`] looks at between two calls of its `pause`: about 50 µs
/// of a build's work here.
const PAUSE_TERMS: usize = 512;

/// The positions of the terms of three bytes or more, grouped by a hash of their last three
/// bytes: the terms that can end with a needle of three bytes or more are those of its
/// bucket.
type Suffixes = Buckets;

const SUFFIX_BUCKETS: usize = 1 << 16;

/// The bucket of the last three bytes of `b` (at least three).
fn suffix_bucket(b: &[u8]) -> usize {
    let n = b.len();
    let k = u32::from(b[n - 3]) << 16 | u32::from(b[n - 2]) << 8 | u32::from(b[n - 1]);
    (k.wrapping_mul(0x9e37_79b1) >> 16) as usize
}

impl TermList {
    /// The list behind an [`Arc`] that it knows itself by, so that it can hand a thread of
    /// its own a share (see [`TermList::ready_grams`]).
    fn shared(mut self) -> Arc<TermList> {
        Arc::new_cyclic(|me| {
            self.me = me.clone();
            self
        })
    }

    /// Keeps the terms' bytes as one string when they are UTF-8 (checked once here, not per
    /// term where a string is wanted).
    fn seal(&mut self) {
        match String::from_utf8(std::mem::take(&mut self.bytes)) {
            Ok(text) => self.text = text,
            Err(e) => self.bytes = e.into_bytes(),
        }
    }

    /// Every term's bytes, one after another.
    fn raw(&self) -> &[u8] {
        if self.text.is_empty() {
            &self.bytes
        } else {
            self.text.as_bytes()
        }
    }

    /// Every term, in byte order, with its ordinal in the catalog's term map.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u64)> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .zip(&self.ords)
            .map(|((s, &e), &ord)| {
                (
                    self.raw().get(s as usize..e as usize).unwrap_or_default(),
                    u64::from(ord),
                )
            })
    }

    /// Term `k`, its ordinal in the catalog's term map and where it ends among all terms'
    /// bytes (the bytes of terms `0..=k`).
    #[must_use]
    pub fn get(&self, k: usize) -> Option<(&[u8], u64, usize)> {
        let end = *self.ends.get(k)? as usize;
        let start = if k == 0 {
            0
        } else {
            *self.ends.get(k - 1)? as usize
        };
        Some((
            self.raw().get(start..end)?,
            u64::from(*self.ords.get(k)?),
            end,
        ))
    }

    /// Term `k` as a string: a slice of the sealed list's string, or its bytes checked (and
    /// made valid, on damage); `None` past the end.
    #[must_use]
    pub fn get_str(&self, k: usize) -> Option<Cow<'_, str>> {
        let end = *self.ends.get(k)? as usize;
        let start = if k == 0 {
            0
        } else {
            *self.ends.get(k - 1)? as usize
        };
        if let Some(t) = self.text.get(start..end).filter(|_| !self.text.is_empty()) {
            return Some(Cow::Borrowed(t));
        }
        let b = self.raw().get(start..end)?;
        Some(std::str::from_utf8(b).map_or_else(|_| String::from_utf8_lossy(b), Cow::Borrowed))
    }

    /// Positions (ascending, each once) of the terms holding one of `needles`: one search
    /// over all terms' bytes per needle instead of one per term. An empty needle is in every
    /// term. From the second call on, a needle of three bytes or more is looked for only in
    /// the terms holding its rarest run of three bytes (see `TermList::grams`).
    #[must_use]
    pub fn holding(&self, needles: &[memchr::memmem::Finder<'_>]) -> Vec<usize> {
        self.holding_or_more(needles, true)
    }

    /// [`TermList::holding`] for a caller that looks at each term given anyway (a regex's
    /// narrowing, whose term match looks for the literals first): from the second call on,
    /// the terms of a needle's bucket are given without looking for the needle in each, so
    /// some may not hold it.
    #[must_use]
    pub fn maybe_holding(&self, needles: &[memchr::memmem::Finder<'_>]) -> Vec<usize> {
        self.holding_or_more(needles, false)
    }

    fn holding_or_more(&self, needles: &[memchr::memmem::Finder<'_>], exact: bool) -> Vec<usize> {
        let mut out = Vec::new();
        for f in needles {
            let n = f.needle();
            if n.is_empty() {
                return (0..self.len()).collect();
            }
            if let Some(grams) = (n.len() >= 3).then(|| self.ready_grams()).flatten() {
                let fewest = n
                    .windows(3)
                    .map(|w| grams.get(suffix_bucket(w)))
                    .min_by_key(|b| b.len())
                    .unwrap_or_default();
                out.extend(fewest.iter().map(|&k| k as usize).filter(|&k| {
                    !exact
                        || self
                            .get(k)
                            .is_some_and(|(t, _, _)| crate::regex::find_literal(f, t).is_some())
                }));
                continue;
            }
            self.each_match(f, |k, _| out.push(k));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Calls `f(term, ends_term)` for every occurrence of a non-empty `needle` inside
    /// one term, in byte order: one search over all terms' bytes. Overlapping occurrences are
    /// all seen (one that straddles two terms must not hide one after it).
    fn each_match(&self, needle: &memchr::memmem::Finder<'_>, mut f: impl FnMut(usize, bool)) {
        let n = needle.needle().len();
        let mut pos = 0;
        while let Some(i) = self.raw().get(pos..).and_then(|b| needle.find(b)) {
            let at = pos + i;
            let k = self.ends.partition_point(|&e| e as usize <= at);
            if let Some(&end) = self.ends.get(k).filter(|&&end| at + n <= end as usize) {
                f(k, at + n == end as usize);
            }
            pos = at + 1;
        }
    }

    /// Positions (ascending) of the terms that end with `needle`: one search over all terms'
    /// bytes, as [`TermList::holding`], keeping the matches that end where their term ends.
    /// Every term ends with the empty needle.
    /// From the second call on, a needle of three bytes or more is compared only with the
    /// terms of its bucket (see `Suffixes`), not searched for in every term.
    #[must_use]
    pub fn ending_with(&self, needle: &memchr::memmem::Finder<'_>) -> Vec<usize> {
        use std::sync::atomic::Ordering;
        let n = needle.needle();
        if n.is_empty() {
            return (0..self.len()).collect();
        }
        if n.len() >= 3 && self.searched_ending.swap(true, Ordering::Relaxed) {
            return self
                .suffixes()
                .get(suffix_bucket(n))
                .iter()
                .map(|&k| k as usize)
                .filter(|&k| self.get(k).is_some_and(|(t, _, _)| t.ends_with(n)))
                .collect();
        }
        let mut out = Vec::new();
        self.each_match(needle, |k, ends_term| {
            if ends_term {
                out.push(k);
            }
        });
        out
    }

    /// Positions (ascending) of the terms holding U+0307 (combining dot above, which `İ`
    /// lowers to): what a regex narrowing must always look at, searched for once per list.
    #[must_use]
    pub fn dotted(&self) -> &[usize] {
        self.dotted
            .get_or_init(|| self.holding(&[memchr::memmem::Finder::new("\u{307}")]))
    }

    /// [`Suffixes`]: each term of three bytes or more in the bucket of its last three.
    fn suffixes(&self) -> &Suffixes {
        self.suffixes.get_or_init(|| {
            Buckets::of_one(self, |t| {
                // Below 2^16: the bucket count.
                #[allow(clippy::cast_possible_truncation)]
                (t.len() >= 3).then(|| suffix_bucket(t) as u16)
            })
        })
    }

    /// [`TermList::grams`] once built, for a search of a needle of three bytes or more.
    ///
    /// For the 56,385 terms of 10,256 generated sessions the build takes about 5 ms, much of
    /// it page faults of new memory; the call that built them had waited for it (that class's
    /// p99 at that scale). So when an [`Index`] shares the list ([`TermList::shared`]) with
    /// background builds on ([`Index::set_background_builds`]), the build starts on a thread
    /// of its own as the list is made, as background work that gives way to other threads
    /// between runs of terms (it may share the caller's core), and until it is done the
    /// searches look at the terms' bytes (they find the same terms). Otherwise (the CLI, the
    /// browser) the first search looks at the bytes and the second builds the buckets: a
    /// process that searches once builds none.
    fn ready_grams(&self) -> Option<&Buckets> {
        use std::sync::atomic::Ordering;
        if let Some(grams) = self.grams.get() {
            return Some(grams);
        }
        if !self.searched_holding.swap(true, Ordering::Relaxed) || self.start_grams() {
            return None;
        }
        Some(self.grams(&mut || {}))
    }

    /// Starts the build of [`TermList::grams`] on a thread of its own, once; false when it
    /// cannot (a list no index shares, background builds off, or no threads), which leaves
    /// the build to the caller.
    fn start_grams(&self) -> bool {
        use std::sync::atomic::Ordering;
        if !self.background.load(Ordering::Relaxed) {
            // A thread started before background builds were turned off still builds.
            return self.building.load(Ordering::Relaxed);
        }
        if self.building.swap(true, Ordering::Relaxed) {
            return true;
        }
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(me) = self.me.upgrade() {
            let build = move || {
                sessiondex_core::background::lower_this_thread();
                me.grams(&mut std::thread::yield_now);
            };
            return std::thread::Builder::new()
                .name("sessiondex-grams".to_owned())
                .spawn(build)
                .is_ok();
        }
        false
    }

    /// Each term in the bucket of every run of three bytes it holds: a term holding a
    /// needle of three bytes or more is in the bucket of each of the needle's runs.
    /// `pause` as in [`Buckets::of`].
    fn grams(&self, pause: &mut dyn FnMut()) -> &Buckets {
        self.grams.get_or_init(|| {
            Buckets::of(
                self,
                |t, put| t.windows(3).for_each(|w| put(suffix_bucket(w))),
                pause,
            )
        })
    }

    /// The number of terms.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are no terms.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// The epoch of a call ([`Index::call_epoch`]); an index without a watch has none.
pub type Epoch = u64;

/// A file an index keeps across calls, and the epoch of the last call that checked it.
#[derive(Debug)]
struct Kept<T> {
    file: Option<Arc<T>>,
    checked: Option<Epoch>,
}

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept {
            file: None,
            checked: None,
        }
    }
}

/// Locks a slot of [`Index::hot_shared_in`] or [`Index::cold_shared_in`], with the file kept
/// in it when its bytes can still be trusted: checked in this call's epoch already, else
/// unchanged ([`Bytes::unchanged`], one `fstat`), which the slot then records.
fn kept_in<T>(
    slot: &Mutex<Kept<T>>,
    bytes: impl Fn(&T) -> &Bytes,
    epoch: Option<Epoch>,
) -> (std::sync::MutexGuard<'_, Kept<T>>, Option<Arc<T>>) {
    let mut guard = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let trusted = epoch.is_some() && guard.checked == epoch;
    let kept = guard
        .file
        .as_ref()
        .filter(|t| trusted || bytes(t).unchanged())
        .cloned();
    if kept.is_some() {
        guard.checked = epoch;
    }
    (guard, kept)
}

/// Bytes of cold digests (whole pages) an index keeps open across calls
/// ([`Index::cold_shared`]); past them a digest is opened for the call and unmapped after it.
pub const COLD_CACHE_BYTES: u64 = 64 << 20;

/// [`Index::session_flags`]: the session has a cold digest.
pub const COLD: u8 = 1;
/// [`Index::session_flags`]: the session's coverage is incomplete.
pub const INCOMPLETE: u8 = 2;

/// A session named by id or path, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// A session of the catalog (its position).
    Indexed(usize),
    /// A session file that exists but is not in the catalog.
    Unindexed(String),
}

/// A session read from its source: its bytes hashed, its records selected.
#[derive(Debug)]
pub struct Hydrated {
    /// The path it was read from.
    pub path: String,
    /// The session as read.
    pub session: Session,
    /// The selected records.
    pub selection: Selection,
    /// SHA-256 (hex) of the source bytes.
    pub source_hash: String,
}

/// Lowercase hex of `bytes`.
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// SHA-256 (hex) of `bytes`: a source's `sourceHash`.
#[must_use]
pub fn source_hash(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn stale(message: impl Into<String>, path: &str) -> Error {
    Error::new(ErrorCode::StalePointer, message).with_details(json!({ "session": path }))
}

/// The error for a source that cannot be read: `stale_pointer` when the caller held a
/// binding to it, else `session_not_found` (`not_found`) or `source_unreadable`.
fn unreadable(path: &str, why: &str, not_found: bool, bound: bool) -> Error {
    if bound {
        return stale(format!("{path}: the source is gone ({why})"), path);
    }
    let code = if not_found {
        ErrorCode::SessionNotFound
    } else {
        ErrorCode::SourceUnreadable
    };
    Error::new(code, format!("{path}: {why}")).with_details(json!({ "session": path }))
}

/// Reads a session source from disk, checks its integrity bindings and selects a branch mode.
/// `redact` replaces credentials in its texts ([`ReadOptions::redact_secrets`]).
///
/// # Errors
///
/// `stale_pointer` when `source_hash` or `lineage` is given and differs (a vanished file
/// included), `session_not_found` when the file does not exist, `source_unreadable`,
/// `unknown_format`.
#[cfg(feature = "fs")]
pub fn hydrate(
    path: &str,
    branches: Branches,
    source_hash: Option<&str>,
    lineage: Option<&str>,
    redact: bool,
) -> Result<Hydrated, Error> {
    let bytes = std::fs::read(path).map_err(|e| {
        unreadable(
            path,
            &e.to_string(),
            e.kind() == std::io::ErrorKind::NotFound,
            source_hash.is_some(),
        )
    })?;
    hydrate_bytes(path, &bytes, branches, source_hash, lineage, redact)
}

/// [`hydrate`] over source bytes already in hand (`path` names them).
///
/// # Errors
///
/// `stale_pointer` when `source_hash` or `lineage` is given and differs, `source_unreadable`,
/// `unknown_format`.
pub fn hydrate_bytes(
    path: &str,
    bytes: &[u8],
    branches: Branches,
    source_hash: Option<&str>,
    lineage: Option<&str>,
    redact: bool,
) -> Result<Hydrated, Error> {
    let hash = self::source_hash(bytes);
    if let Some(expected) = source_hash {
        if expected != hash {
            return Err(stale(
                format!("{path}: the source changed since the pointer was made"),
                path,
            ));
        }
    }
    let opts = ReadOptions {
        redact_secrets: redact,
        ..ReadOptions::default()
    };
    let session = source::read_bytes(path, bytes, &opts).map_err(|e| {
        let code = match e.kind() {
            source::ErrorKind::UnknownFormat => ErrorCode::UnknownFormat,
            _ => ErrorCode::SourceUnreadable,
        };
        Error::new(code, e.to_string()).with_details(json!({ "session": path }))
    })?;
    let selection = session.select(branches);
    if let Some(expected) = lineage {
        if expected != selection.lineage_fingerprint {
            return Err(stale(
                format!("{path}: the selected lineage changed since the pointer was made"),
                path,
            ));
        }
    }
    Ok(Hydrated {
        path: path.to_owned(),
        session,
        selection,
        source_hash: hash,
    })
}

#[cfg(feature = "fs")]
fn map(path: &Path) -> Result<Option<Bytes>, Error> {
    match std::fs::metadata(path) {
        Err(_) => Ok(None),
        Ok(_) => Mmap::open(path)
            .map(|m| Some(Bytes::Mapped(m)))
            .map_err(|e| core_error(&e)),
    }
}

fn decode(catalog: Option<&Catalog<Bytes>>) -> Result<Vec<CatalogEntry>, Error> {
    let mut entries = Vec::new();
    if let Some(cat) = catalog {
        for i in 0..cat.len() {
            entries.push(cat.session(i).map_err(|e| core_error(&e))?);
        }
    }
    Ok(entries)
}

impl Index {
    /// The candidate vectors the last recall call left (empty, with their capacity), or new
    /// ones while another call holds them.
    pub(crate) fn take_scratch(&self) -> Scratch {
        #[cfg(not(target_arch = "wasm32"))]
        if let Ok(mut s) = self.scratch.try_lock() {
            return std::mem::take(&mut *s);
        }
        Scratch::default()
    }

    /// Keeps a recall call's emptied candidate vectors for the next call (not in the browser
    /// build).
    pub(crate) fn keep_scratch(&self, scratch: Scratch) {
        #[cfg(not(target_arch = "wasm32"))]
        if let Ok(mut s) = self.scratch.try_lock() {
            *s = scratch;
        }
        #[cfg(target_arch = "wasm32")]
        drop(scratch);
    }

    /// Opens the catalog of `branches` under the index directory `root`. A missing catalog is
    /// an empty index.
    ///
    /// # Errors
    ///
    /// `index_unavailable` when the directory cannot be used, `index_corrupt` when the
    /// catalog fails its checks.
    #[cfg(feature = "fs")]
    pub fn open(root: &Path, branches: Branches) -> Result<Index, Error> {
        let store = Store::open(root.to_path_buf()).map_err(|e| core_error(&e))?;
        let path = store.path(branches, FileKind::Catalog, "");
        // Set before any file is mapped: every change after it is reported.
        let watch = path.parent().and_then(Watch::new);
        let (catalog, stamp) = match std::fs::metadata(&path) {
            Err(_) => (None, None),
            Ok(_) => {
                let cat = Mmap::open(&path).map_err(|e| core_error(&e))?;
                // A second map of the same inode, kept to tell later whether the path
                // still names it (the catalog reader owns the first).
                let stamp = Mmap::open(&path).map_err(|e| core_error(&e))?;
                let cat = Catalog::open(Bytes::Mapped(cat)).map_err(|e| core_error(&e))?;
                (Some(cat), Some(stamp))
            }
        };
        let entries = decode(catalog.as_ref())?;
        let hot = (0..entries.len()).map(|_| Mutex::default()).collect();
        let cold = (0..entries.len()).map(|_| Mutex::default()).collect();
        Ok(Index {
            backend: Backend::Store(store),
            branches,
            entries,
            catalog,
            catalog_file: Some((path, stamp)),
            hot,
            cold,
            watch,
            cold_bytes: std::sync::atomic::AtomicU64::new(0),
            cold_cap: std::sync::atomic::AtomicU64::new(COLD_CACHE_BYTES),
            newest_first: OnceLock::new(),
            newest_rank: OnceLock::new(),
            flags: OnceLock::new(),
            term_list: OnceLock::new(),
            background: true.into(),
            totals: OnceLock::new(),
            #[cfg(not(target_arch = "wasm32"))]
            scratch: Mutex::default(),
        })
    }

    /// An index of `branches` over bytes in memory: the catalog, each session's index file
    /// and the sources. Hydration and expansion read the sources held here, never a file.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the catalog fails its checks, is of another branch mode, or the
    /// files do not match its sessions one to one.
    pub fn from_memory(branches: Branches, parts: MemoryParts) -> Result<Index, Error> {
        let catalog = match parts.catalog {
            None => None,
            Some(bytes) => Some(Catalog::open(Bytes::Shared(bytes)).map_err(|e| core_error(&e))?),
        };
        if catalog.as_ref().is_some_and(|c| c.branches() != branches) {
            return Err(Error::new(
                ErrorCode::IndexCorrupt,
                "the catalog is of another branch mode",
            ));
        }
        let entries = decode(catalog.as_ref())?;
        if entries.len() != parts.files.len() {
            return Err(Error::new(
                ErrorCode::IndexCorrupt,
                format!(
                    "the catalog has {} sessions but {} index files were given",
                    entries.len(),
                    parts.files.len()
                ),
            ));
        }
        let hot = (0..entries.len()).map(|_| Mutex::default()).collect();
        let cold = (0..entries.len()).map(|_| Mutex::default()).collect();
        Ok(Index {
            backend: Backend::Memory {
                files: parts.files,
                sources: parts.sources,
            },
            branches,
            entries,
            catalog,
            #[cfg(feature = "fs")]
            catalog_file: None,
            hot,
            cold,
            #[cfg(feature = "fs")]
            watch: None,
            cold_bytes: std::sync::atomic::AtomicU64::new(0),
            cold_cap: std::sync::atomic::AtomicU64::new(COLD_CACHE_BYTES),
            newest_first: OnceLock::new(),
            newest_rank: OnceLock::new(),
            flags: OnceLock::new(),
            term_list: OnceLock::new(),
            background: true.into(),
            totals: OnceLock::new(),
            #[cfg(not(target_arch = "wasm32"))]
            scratch: Mutex::default(),
        })
    }

    /// Whether this index still shows what is on disk: the catalog path names the file it
    /// opened (a sync that changed anything renamed a new catalog over it), or both are
    /// absent. An index in memory is always current. A caller that keeps an index across
    /// calls reopens it when this is false.
    #[must_use]
    pub fn is_current(&self) -> bool {
        #[cfg(feature = "fs")]
        if let Some((path, stamp)) = &self.catalog_file {
            return match stamp {
                Some(m) => m.is_current(path),
                None => !path.exists(),
            };
        }
        true
    }

    /// The branch mode.
    #[must_use]
    pub fn branches(&self) -> Branches {
        self.branches
    }

    /// Every session of the catalog.
    #[must_use]
    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }

    /// The positions of every session, newest first: by last timestamp descending (none
    /// last), then path. The order every multi-session recall walks sessions in, sorted once
    /// per index (at 10,000 sessions the sort was about 40% of a rare-term recall).
    #[must_use]
    pub fn newest_first(&self) -> &[u32] {
        self.newest_first.get_or_init(|| {
            let e = &self.entries;
            let mut order: Vec<u32> = (0..e.len()).filter_map(|i| u32::try_from(i).ok()).collect();
            order.sort_unstable_by(|&a, &b| {
                let (a, b) = (&e[a as usize], &e[b as usize]);
                b.summary
                    .last_ts
                    .cmp(&a.summary.last_ts)
                    .then_with(|| a.identity.path.cmp(&b.identity.path))
            });
            order
        })
    }

    /// Each session's place (by position) in [`Index::newest_first`].
    #[must_use]
    pub fn newest_rank(&self) -> &[u32] {
        self.newest_rank.get_or_init(|| {
            let order = self.newest_first();
            let mut rank = vec![0u32; order.len()];
            for (r, &i) in order.iter().enumerate() {
                if let (Some(slot), Ok(r)) = (rank.get_mut(i as usize), u32::try_from(r)) {
                    *slot = r;
                }
            }
            rank
        })
    }

    /// One byte per session (by position): [`COLD`] and [`INCOMPLETE`].
    #[must_use]
    pub fn session_flags(&self) -> &[u8] {
        self.flags.get_or_init(|| {
            self.entries
                .iter()
                .map(|e| {
                    let cold = if e.tier == Tier::Cold { COLD } else { 0 };
                    let incomplete = if e.summary.coverage.complete {
                        0
                    } else {
                        INCOMPLETE
                    };
                    cold | incomplete
                })
                .collect()
        })
    }

    /// [`SessionTotals`] of every session, computed by the first call that needs it; `None`
    /// without a catalog or when a hot session's totals cannot be read from it (a recall then
    /// visits every session).
    #[must_use]
    pub fn session_totals(&self) -> Option<&SessionTotals> {
        self.totals
            .get_or_init(|| {
                let cat = self.catalog.as_ref()?;
                let mut t = SessionTotals::default();
                for (i, e) in self.entries.iter().enumerate() {
                    if !e.summary.coverage.complete {
                        t.incomplete.push(u32::try_from(i).ok()?);
                    }
                    if e.tier == Tier::Cold {
                        t.cold += 1;
                    } else {
                        let (n, k) = cat.hot_totals(i)?;
                        t.hot += 1;
                        t.hot_entries = t.hot_entries.checked_add(n)?;
                        t.hot_tokens = t.hot_tokens.checked_add(k)?;
                    }
                }
                Some(t)
            })
            .as_ref()
    }

    /// The catalog's vocabulary as a flat list, read from its term map by the first call
    /// that needs it (an empty list without a catalog).
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the term map fails to open.
    pub fn term_list(&self) -> Result<&TermList, Error> {
        use fst::Streamer;
        if let Some(list) = self.term_list.get() {
            return Ok(list);
        }
        let mut list = TermList::default();
        if let Some(cat) = &self.catalog {
            let map = cat.terms().map_err(|e| core_error(&e))?;
            let mut stream = map.stream();
            let big = || {
                Error::new(
                    ErrorCode::IndexCorrupt,
                    "the catalog's term map is past 4 GiB or 2^32 terms",
                )
            };
            while let Some((term, ord)) = stream.next() {
                list.bytes.extend_from_slice(term);
                list.ends
                    .push(u32::try_from(list.bytes.len()).map_err(|_| big())?);
                list.ords.push(u32::try_from(ord).map_err(|_| big())?);
            }
        }
        list.seal();
        let background = self.background.load(std::sync::atomic::Ordering::Relaxed);
        list.background = background.into();
        let list = self.term_list.get_or_init(|| list.shared());
        // The buckets of three-byte runs are built beside the calls, by the time a later
        // call's regex narrowing asks for them.
        list.start_grams();
        Ok(list)
    }

    /// The catalog, when one was written.
    #[must_use]
    pub fn catalog(&self) -> Option<&Catalog<Bytes>> {
        self.catalog.as_ref()
    }

    /// The index file of session `i` when its tier is `tier`.
    fn file(&self, i: usize, tier: Tier) -> Result<Option<Bytes>, Error> {
        let Some(e) = self.entries.get(i).filter(|e| e.tier == tier) else {
            return Ok(None);
        };
        match &self.backend {
            #[cfg(feature = "fs")]
            Backend::Store(store) => {
                let kind = match tier {
                    Tier::Hot => FileKind::Hot,
                    Tier::Cold => FileKind::Cold,
                };
                let key = Store::key(Path::new(&e.identity.path));
                let path: PathBuf = store.path(self.branches, kind, &key);
                map(&path)
            }
            Backend::Memory { files, .. } => {
                let _ = e;
                Ok(files.get(i).cloned().flatten().map(Bytes::Shared))
            }
        }
    }

    /// The hot shard of session `i`; `None` when it is cold or its file is missing.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the file fails its checks.
    pub fn hot(&self, i: usize) -> Result<Option<HotShard<Bytes>>, Error> {
        match self.file(i, Tier::Hot)? {
            None => Ok(None),
            Some(b) => HotShard::open(b).map(Some).map_err(|e| core_error(&e)),
        }
    }

    /// The epoch of a call that starts now: files kept across calls that a call of the same
    /// epoch checked are trusted without their `fstat` ([`Index::hot_shared_in`]). Every
    /// change in the index directory since the last call moves it ([`crate::watch`]); `None`
    /// without a watch (an index in memory, a platform without inotify), where each kept
    /// file is checked in every call.
    #[must_use]
    pub fn call_epoch(&self) -> Option<Epoch> {
        #[cfg(feature = "fs")]
        return self.watch.as_ref().and_then(Watch::epoch);
        #[cfg(not(feature = "fs"))]
        None
    }

    /// [`Index::hot`], opened and checked once per index and shared: a later call gets the
    /// same shard while its file is unchanged (one `fstat`), else opens it again.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the file fails its checks.
    pub fn hot_shared(&self, i: usize) -> Result<Option<Arc<HotShard<Bytes>>>, Error> {
        self.hot_shared_in(i, None)
    }

    /// [`Index::hot_shared`] in a call of `epoch` ([`Index::call_epoch`]): a shard checked in
    /// the same epoch is not checked again.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the file fails its checks.
    pub fn hot_shared_in(
        &self,
        i: usize,
        epoch: Option<Epoch>,
    ) -> Result<Option<Arc<HotShard<Bytes>>>, Error> {
        let Some(slot) = self.hot.get(i) else {
            return Ok(None);
        };
        let (mut slot, kept) = kept_in(slot, HotShard::bytes, epoch);
        if kept.is_some() {
            return Ok(kept);
        }
        let shard = self.hot(i)?.map(Arc::new);
        slot.file.clone_from(&shard);
        slot.checked = epoch;
        Ok(shard)
    }

    /// The cold digest of session `i`; `None` when it is hot or its file is missing.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the file fails its checks.
    pub fn cold(&self, i: usize) -> Result<Option<ColdDigest<Bytes>>, Error> {
        match self.file(i, Tier::Cold)? {
            None => Ok(None),
            Some(b) => ColdDigest::open(b).map(Some).map_err(|e| core_error(&e)),
        }
    }

    /// [`Index::cold`], opened and checked once per index and shared, as [`Index::hot_shared`],
    /// while the digests kept stay within [`COLD_CACHE_BYTES`]
    /// ([`Index::set_cold_cache_bytes`]); otherwise opened and checked for the caller alone.
    /// A recall over many cold sessions with structural filters opens thousands of digests:
    /// kept, their pages stay in the process, so a one-call process (the CLI, which sets the
    /// cap to 0) over 10,256 sessions peaked at 70-86 MiB instead of 48.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the file fails its checks.
    pub fn cold_shared(&self, i: usize) -> Result<Option<Arc<ColdDigest<Bytes>>>, Error> {
        self.cold_shared_in(i, None)
    }

    /// [`Index::cold_shared`] in a call of `epoch`, as [`Index::hot_shared_in`].
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the file fails its checks.
    pub fn cold_shared_in(
        &self,
        i: usize,
        epoch: Option<Epoch>,
    ) -> Result<Option<Arc<ColdDigest<Bytes>>>, Error> {
        use std::sync::atomic::Ordering;
        let Some(slot) = self.cold.get(i) else {
            return Ok(None);
        };
        let (mut slot, kept) = kept_in(slot, ColdDigest::bytes, epoch);
        if kept.is_some() {
            return Ok(kept);
        }
        // A map takes whole pages.
        let pages = |d: &ColdDigest<Bytes>| {
            let len = u64::try_from(d.bytes().as_ref().len()).unwrap_or(u64::MAX);
            len.div_ceil(4096).saturating_mul(4096)
        };
        if let Some(old) = slot.file.take() {
            self.cold_bytes.fetch_sub(pages(&old), Ordering::Relaxed);
        }
        let digest = self.cold(i)?.map(Arc::new);
        if let Some(d) = &digest {
            let len = pages(d);
            let cap = self.cold_cap.load(Ordering::Relaxed);
            let kept = self
                .cold_bytes
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                    b.checked_add(len).filter(|&n| n <= cap)
                })
                .is_ok();
            if kept {
                slot.file = Some(Arc::clone(d));
                slot.checked = epoch;
            }
        }
        Ok(digest)
    }

    /// Bytes (whole pages) of the cold digests kept open across calls now.
    #[must_use]
    pub fn cold_kept_bytes(&self) -> u64 {
        self.cold_bytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether work for later calls may run on a thread of its own (default true): the term
    /// list's buckets of three-byte runs (see `TermList::ready_grams`). A process that makes
    /// one call, as the CLI, turns it off: the build would only take a core from that call.
    pub fn set_background_builds(&self, on: bool) {
        self.background
            .store(on, std::sync::atomic::Ordering::Relaxed);
        if let Some(list) = self.term_list.get() {
            list.background
                .store(on, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Sets the bytes of cold digests kept open across calls (default [`COLD_CACHE_BYTES`]);
    /// digests kept already stay.
    pub fn set_cold_cache_bytes(&self, bytes: u64) {
        self.cold_cap
            .store(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Reads the source `path` (from disk, or the bytes held in memory), checks its integrity
    /// bindings and selects a branch mode.
    ///
    /// # Errors
    ///
    /// As [`hydrate`]: `stale_pointer` when a binding differs or a bound source is gone,
    /// `session_not_found`, `source_unreadable`, `unknown_format`.
    pub fn hydrate(
        &self,
        path: &str,
        branches: Branches,
        source_hash: Option<&str>,
        lineage: Option<&str>,
    ) -> Result<Hydrated, Error> {
        self.hydrate_with(path, branches, source_hash, lineage, true)
    }

    /// [`Index::hydrate`], with credentials redacted in the texts only when `redact` (the
    /// index policy's `redact_secrets`, unless the caller asked to `reveal` them).
    ///
    /// # Errors
    ///
    /// As [`Index::hydrate`].
    pub fn hydrate_with(
        &self,
        path: &str,
        branches: Branches,
        source_hash: Option<&str>,
        lineage: Option<&str>,
        redact: bool,
    ) -> Result<Hydrated, Error> {
        match &self.backend {
            #[cfg(feature = "fs")]
            Backend::Store(_) => hydrate(path, branches, source_hash, lineage, redact),
            Backend::Memory { sources, .. } => match sources.get(path) {
                Some(bytes) => hydrate_bytes(path, bytes, branches, source_hash, lineage, redact),
                None => Err(unreadable(
                    path,
                    "no source of that name is loaded",
                    true,
                    source_hash.is_some(),
                )),
            },
        }
    }

    /// The line at byte `offset` of the source of catalog entry `e` (its newline included),
    /// when the source is still what was indexed: on disk its size and mtime must match the
    /// catalog's identity, in memory the bytes held under its path must have the indexed
    /// size. For [`crate::source_text`], which re-reads one entry past its stored cut.
    ///
    /// # Errors
    ///
    /// [`crate::source_text::Unavailable::SourceChanged`] when the source is gone or differs,
    /// [`crate::source_text::Unavailable::SourceUnreadable`] when it cannot be read.
    pub fn source_line(
        &self,
        e: &CatalogEntry,
        offset: u64,
    ) -> Result<Vec<u8>, crate::source_text::Unavailable> {
        use crate::source_text::Unavailable;
        let id = &e.identity;
        if offset >= id.size {
            return Err(Unavailable::SourceChanged);
        }
        match &self.backend {
            #[cfg(feature = "fs")]
            Backend::Store(_) => {
                use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
                let mut f = match std::fs::File::open(&id.path) {
                    Ok(f) => f,
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                        return Err(Unavailable::SourceChanged)
                    }
                    Err(_) => return Err(Unavailable::SourceUnreadable),
                };
                let m = f.metadata().map_err(|_| Unavailable::SourceUnreadable)?;
                let mtime = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .and_then(|d| i64::try_from(d.as_nanos()).ok())
                    .unwrap_or(0);
                if m.len() != id.size || mtime != id.mtime_ns {
                    return Err(Unavailable::SourceChanged);
                }
                f.seek(SeekFrom::Start(offset))
                    .map_err(|_| Unavailable::SourceUnreadable)?;
                let mut line = Vec::new();
                BufReader::with_capacity(256 * 1024, f)
                    .take(id.size - offset)
                    .read_until(b'\n', &mut line)
                    .map_err(|_| Unavailable::SourceUnreadable)?;
                Ok(line)
            }
            Backend::Memory { sources, .. } => {
                let Some(bytes) = sources.get(&id.path) else {
                    return Err(Unavailable::SourceChanged);
                };
                if bytes.len() as u64 != id.size {
                    return Err(Unavailable::SourceChanged);
                }
                let rest = usize::try_from(offset)
                    .ok()
                    .and_then(|o| bytes.get(o..))
                    .ok_or(Unavailable::SourceChanged)?;
                let end = rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(rest.len(), |i| i + 1);
                Ok(rest[..end].to_vec())
            }
        }
    }

    /// Whether the source of catalog entry `e` is still what was indexed: on disk by its size
    /// and mtime, in memory by the bytes held under its path.
    #[must_use]
    pub fn availability(&self, e: &CatalogEntry) -> crate::sessions::Availability {
        use crate::sessions::Availability;
        match &self.backend {
            #[cfg(feature = "fs")]
            Backend::Store(_) => match std::fs::metadata(&e.identity.path) {
                Err(_) => Availability::Missing,
                Ok(m) => {
                    let mtime = m
                        .modified()
                        .ok()
                        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                        .and_then(|d| i64::try_from(d.as_nanos()).ok())
                        .unwrap_or(0);
                    if m.len() == e.identity.size && mtime == e.identity.mtime_ns {
                        Availability::Available
                    } else {
                        Availability::Stale
                    }
                }
            },
            Backend::Memory { sources, .. } => match sources.get(&e.identity.path) {
                None => Availability::Missing,
                Some(b) if b.len() as u64 == e.identity.size => Availability::Available,
                Some(_) => Availability::Stale,
            },
        }
    }

    /// Catalog positions whose source is the same file as `s` under another spelling.
    #[cfg(feature = "fs")]
    fn same_file(&self, s: &str) -> Option<Vec<usize>> {
        if !matches!(self.backend, Backend::Store(_)) || !Path::new(s).is_file() {
            return None;
        }
        // A memory names its sessions by absolute path ([`crate::paths::absolute_path`], which
        // names the same file as `s`): `s` made absolute so is found by its text, without
        // resolving every session's path (a relative one took 80 ms over 10,256 sessions).
        if let Ok(abs) = crate::paths::absolute_path(Path::new(s)) {
            let abs = abs.to_string_lossy();
            let found: Vec<usize> = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.identity.path == abs)
                .map(|(i, _)| i)
                .collect();
            if !found.is_empty() {
                return Some(found);
            }
        }
        let mut found = Vec::new();
        if let Ok(canon) = std::fs::canonicalize(s) {
            found = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| std::fs::canonicalize(&e.identity.path).is_ok_and(|c| c == canon))
                .map(|(i, _)| i)
                .collect();
        }
        Some(found)
    }

    /// Whether `s` names a source outside the catalog: an existing file on disk, or bytes
    /// held in memory.
    fn unindexed_source(&self, s: &str) -> Option<Vec<usize>> {
        match &self.backend {
            #[cfg(feature = "fs")]
            Backend::Store(_) => self.same_file(s),
            Backend::Memory { sources, .. } => sources.contains_key(s).then(Vec::new),
        }
    }

    /// How a source outside the catalog is named: a file on disk by its absolute path, as the
    /// catalog names its sessions ([`crate::paths::absolute_path`]); bytes held in memory by
    /// their name.
    fn unindexed_name(&self, s: &str) -> String {
        match &self.backend {
            #[cfg(feature = "fs")]
            Backend::Store(_) => crate::paths::absolute_path(Path::new(s))
                .map_or_else(|_| s.to_owned(), |p| p.to_string_lossy().into_owned()),
            Backend::Memory { .. } => s.to_owned(),
        }
    }

    /// Resolves a session id or path: an exact id, source path or file name of the catalog,
    /// else the same file under another spelling, else an existing file outside the catalog.
    ///
    /// # Errors
    ///
    /// `ambiguous_session` (details `candidates`: the paths) when an id names several files,
    /// `session_not_found` when nothing matches.
    pub fn resolve(&self, id_or_path: &str) -> Result<Resolved, Error> {
        let s = id_or_path.trim();
        let mut found: Vec<usize> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| {
                e.summary.session_id == s || e.identity.path == s || e.summary.file == s
            })
            .map(|(i, _)| i)
            .collect();
        if found.is_empty() {
            if let Some(same) = self.unindexed_source(s) {
                if same.is_empty() {
                    return Ok(Resolved::Unindexed(self.unindexed_name(s)));
                }
                found = same;
            }
        }
        let mut paths: Vec<&str> = found
            .iter()
            .map(|&i| self.entries[i].identity.path.as_str())
            .collect();
        paths.sort_unstable();
        paths.dedup();
        match (found.first(), paths.len()) {
            (Some(&i), 1) => Ok(Resolved::Indexed(i)),
            (None, _) => Err(Error::new(
                ErrorCode::SessionNotFound,
                format!("no session has the id or path `{s}`"),
            )
            .with_details(json!({ "session": s }))),
            _ => Err(Error::new(
                ErrorCode::AmbiguousSession,
                format!(
                    "{} sessions have the id `{s}`; name one by path",
                    paths.len()
                ),
            )
            .with_details(json!({ "session": s, "candidates": paths }))),
        }
    }

    /// The source path of a resolved session.
    #[must_use]
    pub fn path_of(&self, r: &Resolved) -> String {
        match r {
            Resolved::Indexed(i) => self
                .entries
                .get(*i)
                .map(|e| e.identity.path.clone())
                .unwrap_or_default(),
            Resolved::Unindexed(p) => p.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::TermList;

    /// A sealed list gives its terms as slices of one string, the same bytes as `get` (the
    /// empty term and non-ASCII ones too), and searches as before; a list whose bytes are not
    /// UTF-8 stays bytes, and its damaged term comes out made valid, the others as they are.
    #[test]
    fn sealed_terms_are_slices_of_one_string() {
        let build = |terms: &[&[u8]]| {
            let mut list = TermList::default();
            for (k, t) in terms.iter().enumerate() {
                list.bytes.extend_from_slice(t);
                list.ends.push(u32::try_from(list.bytes.len()).unwrap());
                list.ords.push(u32::try_from(k).unwrap());
            }
            list.seal();
            list
        };
        let terms: [&[u8]; 5] = [
            b"",
            b"ab",
            "d\u{e9}j\u{e0}".as_bytes(),
            "\u{65e5}".as_bytes(),
            b"zq",
        ];
        let list = build(&terms);
        assert!(list.bytes.is_empty() && !list.text.is_empty());
        for (k, t) in terms.iter().enumerate() {
            let s = list.get_str(k).unwrap();
            assert!(matches!(s, std::borrow::Cow::Borrowed(_)), "{k}");
            assert_eq!(s.as_bytes(), *t);
            assert_eq!(list.get(k).unwrap().0, *t);
        }
        assert!(list.get_str(terms.len()).is_none());
        let zq = memchr::memmem::Finder::new("zq");
        assert_eq!(list.holding(&[zq]), [4]);
        let damaged = build(&[b"ab", b"c\xffd", b"zq"]);
        assert!(damaged.text.is_empty());
        assert_eq!(damaged.get_str(0).unwrap(), "ab");
        assert_eq!(damaged.get_str(1).unwrap(), "c\u{fffd}d");
        assert_eq!(damaged.get(1).unwrap().0, b"c\xffd");
        assert_eq!(damaged.get_str(2).unwrap(), "zq");
    }

    /// `holding` finds exactly the terms that hold a needle, the same as a search of each
    /// term: needles straddling two terms are not counted, overlapping ones are all found;
    /// `ending_with` exactly the terms that end with one; `maybe_holding` at least the terms
    /// `holding` finds.
    #[test]
    fn holding_is_a_search_of_each_term() {
        let terms = [
            "aab", "ab", "abab", "b", "ba", "bab", "baba", "zq", "zqzq", "qz", "é", "éé", "x",
        ];
        let mut list = TermList::default();
        for (k, t) in terms.iter().enumerate() {
            list.bytes.extend_from_slice(t.as_bytes());
            list.ends.push(u32::try_from(list.bytes.len()).unwrap());
            list.ords.push(u32::try_from(k).unwrap());
        }
        let needles = [
            "ab",
            "ba",
            "bab",
            "aba",
            "zqz",
            "qzq",
            "bb",
            "é",
            "\u{e9}\u{e9}",
            "xa",
            "",
        ];
        for a in needles {
            for b in needles {
                let finders = [
                    memchr::memmem::Finder::new(a),
                    memchr::memmem::Finder::new(b),
                ];
                let want: Vec<usize> = positions(&terms, |t| t.contains(a) || t.contains(b));
                assert_eq!(list.holding(&finders), want, "{a:?} {b:?}");
                // From the second call on, a bucket's terms: ascending, each once, and
                // every term holding a needle among them.
                let maybe = list.maybe_holding(&finders);
                assert!(maybe.windows(2).all(|w| w[0] < w[1]), "{a:?} {b:?}");
                assert!(want.iter().all(|k| maybe.contains(k)), "{a:?} {b:?}");
            }
            let ending: Vec<usize> = positions(&terms, |t| t.ends_with(a));
            // The first call searches, the later ones look in the needle's bucket.
            for _ in 0..2 {
                assert_eq!(
                    list.ending_with(&memchr::memmem::Finder::new(a)),
                    ending,
                    "{a:?}"
                );
            }
        }
        assert_eq!(list.get(2), Some((&b"abab"[..], 2, 9)));
        assert_eq!(list.get(terms.len()), None);
        assert!(list.dotted().is_empty());
        let mut dotted = TermList::default();
        for t in ["a", "i\u{307}x", "x\u{307}", "z"] {
            dotted.bytes.extend_from_slice(t.as_bytes());
            dotted.ends.push(u32::try_from(dotted.bytes.len()).unwrap());
            dotted.ords.push(0);
        }
        assert_eq!(dotted.dotted(), [1, 2]);
    }

    /// The positions of the `terms` that `keep` keeps, ascending.
    fn positions(terms: &[impl AsRef<str>], keep: impl Fn(&str) -> bool) -> Vec<usize> {
        terms
            .iter()
            .enumerate()
            .filter(|(_, t)| keep(t.as_ref()))
            .map(|(k, _)| k)
            .collect()
    }

    /// The letters of [`random_terms`]: few, so that many terms share runs and buckets.
    const ALPHABET: [&str; 5] = ["a", "b", "c", "\u{e9}", "z"];

    /// Up to 3,000 terms (sorted, each once) of fewer than `most` letters of [`ALPHABET`].
    fn random_terms(next: &mut impl FnMut(u64) -> u64, most: u64) -> Vec<String> {
        let mut terms: Vec<String> = (0..3000)
            .map(|_| {
                (0..next(most))
                    .map(|_| ALPHABET[next(5) as usize])
                    .collect::<String>()
            })
            .collect();
        terms.sort_unstable();
        terms.dedup();
        terms
    }

    /// A list of `terms`, in their order, each term's ordinal its place.
    fn list_of(terms: &[String]) -> TermList {
        let mut list = TermList::default();
        for (k, t) in terms.iter().enumerate() {
            list.bytes.extend_from_slice(t.as_bytes());
            list.ends.push(u32::try_from(list.bytes.len()).unwrap());
            list.ords.push(u32::try_from(k).unwrap());
        }
        list
    }

    /// A shared list with background builds on (an [`Index`]'s) builds its buckets of runs
    /// on a thread, here started by the second search of a needle of three bytes or more (an
    /// index starts it as it makes the list); the searches before and after the build give
    /// exactly the terms a search of each term gives, and so do a list's own buckets built in
    /// the call (a list no index shares). Both build their suffixes' buckets in the call.
    #[test]
    fn holding_by_runs_is_a_search_of_each_term_built_beside_or_in_the_call() {
        let mut next = crate::test_util::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let terms = random_terms(&mut next, 9);
        let build = || {
            let mut list = list_of(&terms);
            list.seal();
            list
        };
        let needles: Vec<String> = (0..300)
            .map(|_| {
                (0..3 + next(3))
                    .map(|_| ALPHABET[next(5) as usize])
                    .collect()
            })
            .collect();
        let check = |list: &TermList| {
            for needle in &needles {
                let want: Vec<usize> = positions(&terms, |t| t.contains(needle.as_str()));
                let f = [memchr::memmem::Finder::new(needle)];
                assert_eq!(list.holding(&f), want, "{needle:?}");
                let maybe = list.maybe_holding(&f);
                assert!(maybe.windows(2).all(|w| w[0] < w[1]), "{needle:?}");
                assert!(want.iter().all(|k| maybe.contains(k)), "{needle:?}");
                let ending: Vec<usize> = positions(&terms, |t| t.ends_with(needle.as_str()));
                assert_eq!(list.ending_with(&f[0]), ending, "{needle:?}");
            }
        };
        let mut shared = build();
        shared.background = true.into();
        let shared = shared.shared();
        let first = [memchr::memmem::Finder::new("abc")];
        let _ = shared.holding(&first);
        assert!(!shared.building.load(std::sync::atomic::Ordering::Relaxed));
        check(&shared);
        assert!(shared.building.load(std::sync::atomic::Ordering::Relaxed));
        // The thread ends its build (its work is bounded); the searches then use it.
        let waited = std::time::Instant::now();
        while shared.grams.get().is_none() {
            assert!(
                waited.elapsed().as_secs() < 60,
                "the build thread did not finish"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        check(&shared);
        assert!(shared.suffixes.get().is_some());
        let own = build();
        let _ = own.holding(&first);
        let _ = own.holding(&first);
        assert!(own.grams.get().is_some());
        check(&own);
        assert!(own.suffixes.get().is_some());
    }

    /// Over many terms (many sharing a bucket), the buckets give the terms a search of each
    /// term gives, in order, for needles of every length.
    #[test]
    fn ending_with_by_bucket_is_a_search_of_each_term() {
        let mut next = crate::test_util::xorshift(0x2545_f491_4f6c_dd1du64);
        let terms = random_terms(&mut next, 7);
        let list = list_of(&terms);
        let _ = list.ending_with(&memchr::memmem::Finder::new("abc"));
        for _ in 0..400 {
            let needle: String = (0..next(6)).map(|_| ALPHABET[next(5) as usize]).collect();
            let want: Vec<usize> = positions(&terms, |t| t.ends_with(&needle));
            let got = list.ending_with(&memchr::memmem::Finder::new(&needle));
            assert_eq!(got, want, "{needle:?}");
        }
    }
}
