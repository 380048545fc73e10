//! Synchronisation: session files -> index files and a catalog, within work budgets.
//!
//! One sync of a branch mode, under the index lock:
//!
//! 1. discover the session files of every source and `stat` them;
//! 2. open the catalog of the last sync (a damaged one is treated as absent);
//! 3. assign tiers: the `hotSessions` most recently modified sessions get hot shards, the rest
//!    cold digests;
//! 4. per session, newest first: reuse its index file when the stat (size, mtime, ctime,
//!    inode) is unchanged; when the stat moved, hash the source and reuse only if the SHA-256
//!    is unchanged; otherwise read the source (hashing it on the way) and write a new file;
//! 5. write the catalog when anything changed, and clean up files no entry points to.
//!
//! Budgets (`maxSyncSessions`, `maxSyncSourceBytes`) stop more reading; a session left
//! behind keeps its old entry (counted stale) or none (counted eligible, not indexed), and the
//! coverage says why. No session is hidden from the counts.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use sessiondex_core::catalog::{
    Catalog, CatalogBuilder, CatalogEntry, ReuseInfo, SessionTerms, SourceIdentity, Tier,
};
use sessiondex_core::format::{Aligned, FileKind, FORMAT_VERSION};
use sessiondex_core::mmap::Mmap;
use sessiondex_core::store::Store;
use sessiondex_core::{cold, hot, Policy, SessionSummary};
use sessiondex_source::{self as source, Branches, ErrorKind as SourceErrorKind, ReadOptions};
use sha2::{Digest, Sha256};

use crate::ahead::{Ahead, StopOnDrop};
use crate::identity::{hash_file, hex, HashingReader, Stat};
pub(crate) use sessiondex_query::index::core_error;

use crate::{Config, Error};

/// One reason with the number of sessions (or files) it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasonCount {
    /// The stable snake_case code.
    pub code: String,
    /// How many.
    pub count: u64,
}

/// Index coverage: whether an empty answer over these sessions is authoritative.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct IndexCoverage {
    /// True only when every eligible session is indexed from its current source, completely.
    pub complete: bool,
    /// Sessions indexed from their current source.
    pub indexed_sessions: u64,
    /// Session files found under the sources.
    pub eligible_sessions: u64,
    /// Sessions whose index entry is older than their source (a budget stopped the update).
    pub stale_sessions: u64,
    /// Indexed sessions whose own reading was incomplete (malformed lines, a partial tail,
    /// caps, ...).
    pub incomplete_sessions: u64,
    /// Why it is not complete, with counts, sorted by code.
    pub reasons: Vec<ReasonCount>,
}

impl IndexCoverage {
    fn add(&mut self, code: &str, n: u64) {
        if n == 0 {
            return;
        }
        match self.reasons.binary_search_by(|r| r.code.as_str().cmp(code)) {
            Ok(i) => self.reasons[i].count += n,
            Err(i) => self.reasons.insert(
                i,
                ReasonCount {
                    code: code.to_owned(),
                    count: n,
                },
            ),
        }
    }
}

/// What a sync did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SyncReport {
    /// Sessions read and (re)written.
    pub indexed: u64,
    /// Sessions whose index file was reused.
    pub reused: u64,
    /// Sessions removed (their source is gone).
    pub removed: u64,
    /// Files that could not be read or are not sessions of a known format.
    pub failed: u64,
    /// Source bytes read (parsing and hashing).
    pub bytes_read: u64,
    /// Source bytes parsed into records (a grown source parses only its new bytes).
    pub bytes_parsed: u64,
    /// Sessions continued from where the last sync stopped, because their source only grew.
    pub appended: u64,
    /// Coverage after the sync.
    pub coverage: IndexCoverage,
}

/// A file that is not a session (or could not be read), remembered by stat so that an
/// unchanged one is not read again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Skipped {
    path: String,
    size: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    inode: u64,
    code: String,
}

/// What a session gives the catalog's merged term and id maps (`None` while not loaded).
type Vocab = Option<SessionTerms>;

/// Where a session's part of the catalog's merged maps comes from when the catalog is
/// written.
enum Terms {
    /// Built with its index file by this sync.
    Built(SessionTerms),
    /// The last catalog's maps, where the session is at this position: its index file is
    /// the one that catalog lists, so nothing needs opening.
    Carried(usize),
    /// Its index file, opened when the catalog is written (an appended hot shard, or a stale
    /// session whose old file the listing did not find as recorded).
    File,
}

impl From<Vocab> for Terms {
    fn from(v: Vocab) -> Terms {
        v.map_or(Terms::File, Terms::Built)
    }
}

const SKIPPED_NAME: &str = "skipped.json";

struct Candidate {
    path: PathBuf,
    key: String,
    stat: Stat,
}

/// A session of the catalog being built: reused as the last catalog has it (its position
/// there, decoded only if the catalog must be rewritten), or a new or updated entry.
// One vector of these per sync; most are `Old` in a no-op sync, and a box per rebuilt entry
// would buy nothing.
#[allow(clippy::large_enum_variant)]
enum Kept {
    Old {
        pos: usize,
        tier: Tier,
        complete: bool,
    },
    New(CatalogEntry, Terms),
}

/// The index policy a config asks for.
#[must_use]
pub fn policy(config: &Config) -> Policy {
    Policy {
        max_entry_chars: u32::try_from(config.max_entry_chars).unwrap_or(u32::MAX),
        index_thinking: config.index_thinking,
        index_tool_output: config.index_tool_output,
        max_cold_vocabulary_bytes: config.max_cold_vocabulary_bytes,
        max_cold_cache_bytes: config.max_cold_cache_bytes,
        redact_secrets: config.redact_secrets,
    }
}

/// Opens the catalog of a branch mode; `Ok(None)` when there is none yet, `Err` when it is
/// damaged.
pub(crate) fn open_catalog(
    store: &Store,
    branches: Branches,
) -> Result<Option<Catalog<Aligned>>, sessiondex_core::Error> {
    let path = store.path(branches, FileKind::Catalog, "");
    store.load(&path, Catalog::open)
}

/// Opens the catalog of a branch mode memory-mapped and checks that every session decodes
/// ([`Catalog::validate`]), so that a sync reads only the columns it compares; `Ok(None)`
/// when there is none yet, `Err` when it is damaged.
fn open_catalog_checked(
    store: &Store,
    branches: Branches,
) -> Result<Option<Catalog<Mmap>>, sessiondex_core::Error> {
    let path = store.path(branches, FileKind::Catalog, "");
    let map = match Mmap::open(&path) {
        Ok(m) => m,
        Err(_) if !path.exists() => return Ok(None),
        Err(e) => return Err(e),
    };
    let cat = Catalog::open(map).map_err(|e| e.with_path(path.to_string_lossy()))?;
    cat.validate()?;
    Ok(Some(cat))
}

/// Whether an index file was there, as the sync's listing of its branch directory found it,
/// with the length its catalog entry recorded (a cheap check that catches a missing,
/// truncated or replaced file without reading it).
fn file_intact(lens: &FxHashMap<&str, u64>, name: &str, len: u64) -> bool {
    lens.get(name) == Some(&len)
}

/// The file name of a hot shard or cold digest ([`Store::path`]), written into `buf`.
fn index_name<'b>(buf: &'b mut String, kind: FileKind, key: &str) -> &'b str {
    buf.clear();
    buf.push_str(key);
    buf.push('.');
    buf.push_str(kind.as_str());
    buf
}

/// Whether the stat of a source is exactly the one a catalog entry recorded.
fn stat_matches(stat: &Stat, info: &ReuseInfo<'_>) -> bool {
    stat.size == info.size
        && stat.mtime_ns == info.mtime_ns
        && stat.ctime_ns == info.ctime_ns
        && stat.inode == info.inode
}

/// Removes every index file of `branches` that the catalog points to and that fails to open
/// (a damaged file of the right length, which a sync's reuse check cannot see), so that the
/// next sync rebuilds it from source. Returns how many were removed.
pub(crate) fn remove_damaged(store: &Store, branches: Branches) -> u64 {
    let Ok(_lock) = store.lock() else { return 0 };
    let Ok(Some(cat)) = open_catalog(store, branches) else {
        return 0;
    };
    let mut removed = 0;
    for i in 0..cat.len() {
        let Ok(e) = cat.session(i) else { continue };
        let key = Store::key(Path::new(&e.identity.path));
        let (path, opens) = match e.tier {
            Tier::Hot => {
                let path = store.path(branches, FileKind::Hot, &key);
                let opens = store.load(&path, hot::HotShard::open).is_ok();
                (path, opens)
            }
            Tier::Cold => {
                let path = store.path(branches, FileKind::Cold, &key);
                let opens = store.load(&path, cold::ColdDigest::open).is_ok();
                (path, opens)
            }
        };
        if !opens && std::fs::remove_file(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Runs one sync of `branches` over `sources` into `store`.
///
/// The sync runs on a thread of its own (see `apart`). `progress` is called on the calling
/// thread with `(done, total)` as session files are done (at most about every 20 ms, so
/// counts may be skipped), and last with `(total, total)`.
///
/// # Errors
///
/// `index_unavailable` when the index directory cannot be locked or written. Unreadable or
/// malformed sources are not errors: they are counted in the report.
pub fn sync(
    store: &Store,
    config: &Config,
    sources: &[PathBuf],
    branches: Branches,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SyncReport, Error> {
    let threads = build_threads();
    apart(progress, |progress| {
        sync_with(store, config, sources, branches, progress, threads)
    })
}

/// How often the calling thread of [`apart`] looks for progress.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// Runs `work` on a thread of its own, and `progress` on this one with the latest counts
/// `work` reported; runs `work` here when no thread can be started.
///
/// A build takes and frees hundreds of megabytes in many small pieces. The allocator keeps
/// that memory in the heap of the thread that freed it, and recalls made on that thread next
/// (a notebook that syncs then asks, the benchmark harness) ran 1.1-3x slower for their first
/// few hundred calls as it sorted its free lists out again: over 200 MB, ten calls of a rare
/// term 9.4 against 4.5 µs, `structural` 78 against 52 µs. A thread of its own takes that
/// heap with it when it ends.
fn apart<T: Send>(
    progress: &mut dyn FnMut(u64, u64),
    work: impl FnOnce(&mut dyn FnMut(u64, u64)) -> T + Send,
) -> T {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, PoisonError};
    let work = Mutex::new(Some(work));
    let latest: Mutex<Option<(u64, u64)>> = Mutex::new(None);
    let finished = AtomicBool::new(false);
    let caller = std::thread::current();
    let take =
        |m: &Mutex<Option<(u64, u64)>>| m.lock().unwrap_or_else(PoisonError::into_inner).take();
    let out = std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new()
            .name("sessiondex-sync".into())
            .spawn_scoped(scope, || {
                // Tells the calling thread when the work ends, panics included.
                struct Finished<'a>(&'a AtomicBool, std::thread::Thread);
                impl Drop for Finished<'_> {
                    fn drop(&mut self) {
                        self.0.store(true, Ordering::Release);
                        self.1.unpark();
                    }
                }
                let _finished = Finished(&finished, caller);
                let work = work.lock().unwrap_or_else(PoisonError::into_inner).take();
                work.map(|w| {
                    w(&mut |done, total| {
                        *latest.lock().unwrap_or_else(PoisonError::into_inner) =
                            Some((done, total));
                    })
                })
            });
        let Ok(handle) = spawned else {
            return None;
        };
        loop {
            // Seen finished before the last look: every count was reported before it.
            let ended = finished.load(Ordering::Acquire);
            if let Some((done, total)) = take(&latest) {
                progress(done, total);
            }
            if ended {
                break;
            }
            std::thread::park_timeout(PROGRESS_EVERY);
        }
        match handle.join() {
            Ok(out) => out,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    });
    match out {
        Some(out) => out,
        None => match work.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(w) => w(progress),
            // The thread took the work and gave nothing back only if it panicked, and
            // then the panic went on above.
            None => unreachable!("the sync thread took its work"),
        },
    }
}

/// [`sync`] building index files on `threads` threads (1: the calling thread alone).
#[allow(clippy::too_many_lines)]
fn sync_with(
    store: &Store,
    config: &Config,
    sources: &[PathBuf],
    branches: Branches,
    progress: &mut dyn FnMut(u64, u64),
    threads: usize,
) -> Result<SyncReport, Error> {
    let lock = store.lock().map_err(|e| core_error(&e))?;
    let policy = policy(config);
    let policy_fp = policy.fingerprint();
    let mut report = SyncReport::default();
    let mut cov = IndexCoverage::default();

    // 1. Discover.
    let mut seen_paths = FxHashSet::default();
    let mut candidates = Vec::new();
    for src in sources {
        if !src.exists() {
            cov.add("source_not_found", 1);
            continue;
        }
        // The walk reads each file's metadata relative to its open directory.
        let (files, unreadable) = source::discover_with_metadata(src);
        // A directory that cannot be listed may hold sessions nobody can count: it is named
        // as unreadable (the coverage is then incomplete), not as an eligible session.
        for dir in unreadable {
            if seen_paths.insert(Store::key(&dir)) {
                report.failed += 1;
                cov.add("source_unreadable", 1);
            }
        }
        for found in files {
            let key = Store::key(&found.path);
            if !seen_paths.insert(key.clone()) {
                continue;
            }
            match found.metadata {
                Some(m) => candidates.push(Candidate {
                    path: found.path,
                    key,
                    stat: Stat::from_metadata(&m),
                }),
                None => {
                    report.failed += 1;
                    cov.eligible_sessions += 1;
                    cov.add("source_unreadable", 1);
                }
            }
        }
    }
    // Newest first: tiers and budgets favour what the user touched last. Paths are unique
    // here, so the order is total.
    candidates.sort_unstable_by(|a, b| {
        b.stat
            .mtime_ns
            .cmp(&a.stat.mtime_ns)
            .then_with(|| source::path_order(&a.path, &b.path))
    });

    // 2. The previous catalog and skip list.
    let mut catalog_changed = false;
    let old_catalog = match open_catalog_checked(store, branches) {
        Ok(c) => c,
        Err(_) => {
            // A damaged catalog is treated as absent: everything is rebuilt from source.
            cov.add("index_rebuilt", 1);
            None
        }
    };
    if old_catalog.is_none() {
        catalog_changed = true;
    }
    // Source path -> position in the old catalog. Entries stay in the (mapped) catalog and
    // are decoded only when the stat moved or the catalog must be rewritten.
    let mut old_entries: FxHashMap<&str, usize> = FxHashMap::default();
    if let Some(cat) = &old_catalog {
        old_entries.reserve(cat.len());
        for i in 0..cat.len() {
            match cat.reuse_info(i) {
                Ok(e) => {
                    old_entries.insert(e.path, i);
                }
                Err(_) => catalog_changed = true,
            }
        }
    }
    // Beside the branch directories, where cleanup (which owns those) leaves it alone.
    let skipped_path = store
        .version_dir()
        .join(format!("{}-{SKIPPED_NAME}", branches.as_str()));
    let old_skipped: FxHashMap<String, Skipped> = std::fs::read(&skipped_path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Vec<Skipped>>(&b).ok())
        .unwrap_or_default()
        .into_iter()
        .map(|s| (s.path.clone(), s))
        .collect();
    let mut new_skipped: Vec<Skipped> = Vec::new();

    // 3 + 4. Tiers and per-session work.
    let total = candidates.len() as u64;
    let mut hot_left = config.hot_sessions;
    // Each with the candidate it came from (its store key).
    let mut entries: Vec<(usize, Kept)> = Vec::with_capacity(candidates.len());
    let mut budget_sessions_hit = false;
    let mut budget_bytes_hit = false;
    let opts = ReadOptions {
        redact_secrets: config.redact_secrets,
        ..ReadOptions::default()
    };
    // The branch directory, listed once for the reuse checks and the cleanup.
    let listing = store.listing(branches).map_err(|e| core_error(&e))?;
    let index_lens = listing.file_lens();
    let mut name_buf = String::new();
    let mut stale_buf = String::new();
    // Rebuilds run ahead on helper threads (crate::ahead): what the walk below decides and
    // writes is the same as without them.
    let jobs = if threads > 1 {
        likely_rebuilds(&candidates, &old_entries, &old_skipped, config)
    } else {
        Vec::new()
    };
    let ahead = Ahead::new(jobs, AHEAD_JOBS, AHEAD_BYTES, |at: usize, tier: &Tier| {
        read_one(&policy, &policy_fp, branches, *tier, &candidates[at], &opts)
    });
    std::thread::scope(|scope| -> Result<(), Error> {
        for _ in 1..threads {
            // A helper that cannot be started leaves its share to the others and the walk.
            let _ = std::thread::Builder::new().spawn_scoped(scope, || ahead.help());
        }
        let _stop = StopOnDrop(&ahead);
        for (done, c) in candidates.iter().enumerate() {
            progress(done as u64, total);
            ahead.advance(done);
            let path_str = c.path.to_string_lossy();
            if let Some(s) = old_skipped.get(path_str.as_ref()) {
                if s.unchanged(&c.stat) {
                    report.failed += 1;
                    if s.code != "unknown_format" {
                        cov.eligible_sessions += 1;
                        cov.add(&s.code, 1);
                    }
                    new_skipped.push(s.clone());
                    continue;
                }
            }
            cov.eligible_sessions += 1;
            let tier = if hot_left > 0 { Tier::Hot } else { Tier::Cold };
            let kind = tier_kind(tier);
            let index_file = index_name(&mut name_buf, kind, &c.key);

            // Reuse?
            let old_pos = old_entries.remove(path_str.as_ref());
            if let (Some(pos), Some(cat)) = (old_pos, &old_catalog) {
                // The catalog was validated: its columns read.
                let info = cat.reuse_info(pos).map_err(|e| core_error(&e))?;
                if info.policy_fingerprint == policy_fp
                    && info.format_version == FORMAT_VERSION
                    && info.tier == tier
                    && stat_matches(&c.stat, &info)
                    && file_intact(&index_lens, index_file, info.cache_bytes)
                {
                    report.reused += 1;
                    hot_left = hot_left.saturating_sub(usize::from(tier == Tier::Hot));
                    entries.push((
                        done,
                        Kept::Old {
                            pos,
                            tier,
                            complete: info.complete,
                        },
                    ));
                    continue;
                }
                let old = cat.session(pos).map_err(|e| core_error(&e))?;
                let same_build = old.policy_fingerprint == policy_fp
                    && old.format_version == FORMAT_VERSION
                    && old.tier == tier
                    && file_intact(&index_lens, index_file, old.summary.cache_bytes);
                if same_build && c.stat.matches(&old.identity) {
                    report.reused += 1;
                    hot_left = hot_left.saturating_sub(usize::from(tier == Tier::Hot));
                    entries.push((done, Kept::New(old, Terms::Carried(pos))));
                    continue;
                }
                let grew = c.stat.size > old.identity.size;
                if same_build
                    && grew
                    && tier == Tier::Hot
                    && report.indexed < config.max_sync_sessions as u64
                    && report.bytes_read + c.stat.size <= config.max_sync_source_bytes
                {
                    // A live session that only grew: verify the old prefix, parse the new bytes.
                    match append_one(store, &policy, &policy_fp, branches, c, &old, &opts) {
                        Ok(Some(appended)) => {
                            report.bytes_read += appended.bytes_read;
                            report.bytes_parsed += appended.bytes_parsed;
                            report.indexed += 1;
                            report.appended += 1;
                            hot_left = hot_left.saturating_sub(1);
                            entries.push((done, Kept::New(appended.entry, Terms::File)));
                            catalog_changed = true;
                            continue;
                        }
                        Ok(None) => {}
                        Err(e) => return Err(e),
                    }
                }
                if same_build
                    && !grew
                    && report.bytes_read + c.stat.size <= config.max_sync_source_bytes
                {
                    // The stat moved: the content decides.
                    report.bytes_read += c.stat.size;
                    if let Ok(hash) = hash_file(&c.path, None) {
                        if hash == old.identity.source_hash {
                            report.reused += 1;
                            hot_left = hot_left.saturating_sub(usize::from(tier == Tier::Hot));
                            let mut e = old;
                            e.identity = identity(&path_str, &c.stat, hash);
                            entries.push((done, Kept::New(e, Terms::Carried(pos))));
                            catalog_changed = true;
                            continue;
                        }
                    }
                }
                // Changed: rebuild below, or keep the old entry as stale when a budget stops us.
                if report.indexed >= config.max_sync_sessions as u64
                    || report.bytes_read + c.stat.size > config.max_sync_source_bytes
                {
                    budget_sessions_hit |= report.indexed >= config.max_sync_sessions as u64;
                    budget_bytes_hit |=
                        report.bytes_read + c.stat.size > config.max_sync_source_bytes;
                    cov.stale_sessions += 1;
                    hot_left = hot_left.saturating_sub(usize::from(old.tier == Tier::Hot));
                    // Its old index file, if it is still there as the catalog recorded it,
                    // gives what the old catalog has; otherwise it is opened (and the session
                    // left out when that fails).
                    let old_name = index_name(&mut stale_buf, tier_kind(old.tier), &c.key);
                    let terms = if file_intact(&index_lens, old_name, old.summary.cache_bytes) {
                        Terms::Carried(pos)
                    } else {
                        Terms::File
                    };
                    entries.push((done, Kept::New(old, terms)));
                    continue;
                }
            } else if report.indexed >= config.max_sync_sessions as u64
                || report.bytes_read + c.stat.size > config.max_sync_source_bytes
            {
                budget_sessions_hit |= report.indexed >= config.max_sync_sessions as u64;
                budget_bytes_hit |= report.bytes_read + c.stat.size > config.max_sync_source_bytes;
                continue;
            }

            // (Re)index from source.
            catalog_changed = true;
            let read = ahead
                .take(done, &tier)
                .unwrap_or_else(|| read_one(&policy, &policy_fp, branches, tier, c, &opts));
            let written = read.and_then(|(built, bytes)| {
                let (entry, vocab) = built
                    .write(store, branches, &c.key)
                    .map_err(IndexOneError::Index)?;
                Ok((entry, vocab, bytes))
            });
            match written {
                Ok((entry, vocab, bytes)) => {
                    report.bytes_read += bytes;
                    report.bytes_parsed += bytes;
                    report.indexed += 1;
                    hot_left = hot_left.saturating_sub(usize::from(tier == Tier::Hot));
                    entries.push((done, Kept::New(entry, vocab.into())));
                }
                Err(IndexOneError::Source(kind, bytes)) => {
                    report.bytes_read += bytes;
                    report.failed += 1;
                    let code = kind.code();
                    if kind == SourceErrorKind::UnknownFormat {
                        // Not a session: not eligible, and not read again until it changes.
                        cov.eligible_sessions -= 1;
                    } else {
                        cov.add(code, 1);
                    }
                    new_skipped.push(Skipped {
                        path: path_str.into_owned(),
                        size: c.stat.size,
                        mtime_ns: c.stat.mtime_ns,
                        ctime_ns: c.stat.ctime_ns,
                        inode: c.stat.inode,
                        code: code.to_owned(),
                    });
                }
                Err(IndexOneError::Index(e)) => return Err(e),
            }
        }
        Ok(())
    })?;
    progress(total, total);
    if budget_sessions_hit {
        cov.add("max_sync_sessions", 1);
    }
    if budget_bytes_hit {
        cov.add("max_sync_source_bytes", 1);
    }

    // Sessions whose source is gone.
    report.removed = old_entries.len() as u64;
    if report.removed > 0 {
        catalog_changed = true;
    }

    // 5. The catalog.
    if catalog_changed {
        write_catalog(
            store,
            branches,
            old_catalog.as_ref(),
            &candidates,
            &mut entries,
        )?;
    }
    if new_skipped.len() != old_skipped.len()
        || new_skipped
            .iter()
            .any(|s| old_skipped.get(&s.path) != Some(s))
    {
        let bytes = serde_json::to_vec(&new_skipped).unwrap_or_default();
        store
            .write_atomic(&skipped_path, &bytes)
            .map_err(|e| core_error(&e))?;
    }
    let live: FxHashSet<(FileKind, &str)> = entries
        .iter()
        .map(|(at, kept)| {
            let tier = match kept {
                Kept::Old { tier, .. } => *tier,
                Kept::New(e, _) => e.tier,
            };
            (tier_kind(tier), candidates[*at].key.as_str())
        })
        .collect();
    let cleanup = store
        .cleanup_listed(
            &lock,
            config.max_cache_cleanup_files as u64,
            &listing,
            |b, kind, key| b != branches || live.contains(&(kind, key)),
        )
        .map_err(|e| core_error(&e))?;
    if !cleanup.complete {
        cov.add("max_cache_cleanup_files", 1);
    }
    drop(lock);

    // Coverage.
    let fresh = entries.len() as u64 - cov.stale_sessions;
    cov.indexed_sessions = fresh;
    let mut per_reason: BTreeMap<String, u64> = BTreeMap::new();
    for (_, kept) in &entries {
        let reasons = match (kept, &old_catalog) {
            (Kept::New(e, _), _) if !e.summary.coverage.complete => &e.summary.coverage.reasons,
            (Kept::Old { pos, complete, .. }, Some(cat)) if !complete => {
                let e = cat.session(*pos).map_err(|e| core_error(&e))?;
                cov.incomplete_sessions += 1;
                for r in e.summary.coverage.reasons {
                    *per_reason.entry(r.code).or_default() += 1;
                }
                continue;
            }
            _ => continue,
        };
        cov.incomplete_sessions += 1;
        for r in reasons {
            *per_reason.entry(r.code.clone()).or_default() += 1;
        }
    }
    for (code, n) in per_reason {
        cov.add(&code, n);
    }
    let informational = ["max_cache_cleanup_files", "index_rebuilt"];
    cov.complete = cov.indexed_sessions == cov.eligible_sessions
        && cov.stale_sessions == 0
        && cov.incomplete_sessions == 0
        && cov
            .reasons
            .iter()
            .all(|r| informational.contains(&r.code.as_str()));
    report.coverage = cov;
    Ok(report)
}

impl Skipped {
    /// The file has the stat it had when it was skipped.
    fn unchanged(&self, stat: &Stat) -> bool {
        self.size == stat.size
            && self.mtime_ns == stat.mtime_ns
            && self.ctime_ns == stat.ctime_ns
            && self.inode == stat.inode
    }
}

/// Threads a sync builds index files with: the walk and up to three helpers, or
/// `SESSIONDEX_BUILD_THREADS` when set to a number (1: no helpers).
fn build_threads() -> usize {
    std::env::var("SESSIONDEX_BUILD_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or_else(source::worker_threads, |n| n.clamp(1, 64))
}

/// The most rebuilds helpers hold ahead of the walk (started or finished, not yet taken), and
/// the most source bytes they may stand for (one session past it is held when it is alone):
/// held results are index files in memory, at most about as large as their sources.
const AHEAD_JOBS: usize = 32;
const AHEAD_BYTES: u64 = 128 << 20;

/// The rebuilds a sync will most likely ask for, in the walk's order, each with the tier the
/// walk gives it when every build succeeds and its source bytes: sessions the last catalog
/// does not have (and skipped files that changed), within the budgets. A session the last
/// catalog has is left to the walk: it is usually reused.
fn likely_rebuilds(
    candidates: &[Candidate],
    old_entries: &FxHashMap<&str, usize>,
    old_skipped: &FxHashMap<String, Skipped>,
    config: &Config,
) -> Vec<(usize, Tier, u64)> {
    let mut hot_left = config.hot_sessions;
    let (mut count, mut bytes) = (0usize, 0u64);
    let mut jobs = Vec::new();
    for (at, c) in candidates.iter().enumerate() {
        let path = c.path.to_string_lossy();
        if old_skipped
            .get(path.as_ref())
            .is_some_and(|s| s.unchanged(&c.stat))
        {
            continue;
        }
        let tier = if hot_left > 0 { Tier::Hot } else { Tier::Cold };
        if !old_entries.contains_key(path.as_ref()) {
            if count >= config.max_sync_sessions
                || bytes.saturating_add(c.stat.size) > config.max_sync_source_bytes
            {
                continue;
            }
            count += 1;
            bytes += c.stat.size;
            jobs.push((at, tier, c.stat.size));
        }
        hot_left = hot_left.saturating_sub(usize::from(tier == Tier::Hot));
    }
    jobs
}

fn identity(path: &str, stat: &Stat, source_hash: String) -> SourceIdentity {
    SourceIdentity {
        path: path.to_owned(),
        size: stat.size,
        mtime_ns: stat.mtime_ns,
        ctime_ns: stat.ctime_ns,
        inode: stat.inode,
        source_hash,
    }
}

enum IndexOneError {
    Source(SourceErrorKind, u64),
    Index(Error),
}

/// Reads one source (hashing it on the way) and builds its index file, not written yet;
/// with the source bytes read. Touches nothing on disk, so a helper thread can run it
/// ([`crate::ahead`]).
fn read_one(
    policy: &Policy,
    policy_fp: &str,
    branches: Branches,
    tier: Tier,
    c: &Candidate,
    opts: &ReadOptions,
) -> Result<(Built, u64), IndexOneError> {
    let path_str = c.path.to_string_lossy().into_owned();
    let file = File::open(&c.path).map_err(|_| IndexOneError::Source(SourceErrorKind::Io, 0))?;
    let mut reader = BufReader::with_capacity(256 * 1024, HashingReader::new(file));
    let read = source::read_from(&path_str, &mut reader, opts);
    let (hash, bytes) = reader
        .into_inner()
        .finish()
        .map_err(|_| IndexOneError::Source(SourceErrorKind::Io, 0))?;
    let mut session = read.map_err(|e| IndexOneError::Source(e.kind(), bytes))?;
    let sel = match tier {
        // A cold digest reads nothing of the session but its metadata: the selected records
        // move to the selection whole.
        Tier::Cold => session.take_selection(branches),
        // The selected records' texts move to the selection; the resume column stores none,
        // so the others are dropped too: a huge entry is not held two or three times while
        // building.
        Tier::Hot => {
            let sel = session.select_taking_text(branches);
            for r in &mut session.records {
                r.text = String::new();
                r.thinking = None;
            }
            sel
        }
    };
    let built = build_index(
        policy,
        policy_fp,
        tier,
        c,
        &session,
        &sel,
        SourceIdentityParts {
            path: &path_str,
            hash,
        },
    )
    .map_err(IndexOneError::Index)?;
    Ok((built, bytes))
}

struct SourceIdentityParts<'a> {
    path: &'a str,
    hash: String,
}

/// The session without texts, as stored in a hot shard's resume column.
fn resume_blob(session: &source::Session) -> Vec<u8> {
    if session
        .records
        .iter()
        .all(|r| r.text.is_empty() && r.thinking.is_none())
    {
        // Already bare (index_one drops the texts): no copy of every record.
        return serde_json::to_vec(session).unwrap_or_default();
    }
    let mut bare = session.clone();
    for r in &mut bare.records {
        r.text.clear();
        r.thinking = None;
    }
    serde_json::to_vec(&bare).unwrap_or_default()
}

/// The index file of a read session with its catalog entry and what it gives the catalog's
/// merged maps, not written yet.
struct Built {
    kind: FileKind,
    file: Aligned,
    entry: CatalogEntry,
    vocab: Vocab,
}

impl Built {
    /// Writes the index file; returns the catalog entry and terms.
    fn write(
        self,
        store: &Store,
        branches: Branches,
        key: &str,
    ) -> Result<(CatalogEntry, Vocab), Error> {
        // Made durable with every other session file of the sync before the catalog.
        store
            .write_pending(&store.path(branches, self.kind, key), &self.file)
            .map_err(|e| core_error(&e))?;
        Ok((self.entry, self.vocab))
    }
}

/// Builds the index file of a read session.
fn build_index(
    policy: &Policy,
    policy_fp: &str,
    tier: Tier,
    c: &Candidate,
    session: &source::Session,
    sel: &source::Selection,
    id: SourceIdentityParts<'_>,
) -> Result<Built, Error> {
    let ce = |e: sessiondex_core::Error| core_error(&e);
    let (kind, built, summary, vocab) = match tier {
        Tier::Hot => {
            let built = hot::build_with_resume(&session.meta, sel, policy, &resume_blob(session))
                .map_err(ce)?;
            let shard = hot::HotShard::open(&built[..]);
            // The summary as stored in the file (caps may have added reasons there).
            let mut summary = shard
                .as_ref()
                .map(|s| s.summary().clone())
                .unwrap_or_else(|_| SessionSummary::new(&session.meta, sel));
            summary.cache_bytes = built.len() as u64;
            let vocab = shard.and_then(|h| SessionTerms::of_hot(&h)).ok();
            (FileKind::Hot, built, summary, vocab)
        }
        Tier::Cold => {
            // The digest's vocabulary and summary come with it: the file holds neither.
            let b = cold::build_digest(&session.meta, sel, policy).map_err(ce)?;
            let vocab = cold::ColdDigest::open(&b.file[..])
                .and_then(|d| SessionTerms::of_cold(&d, &b.summary.session_id, b.vocabulary))
                .ok();
            (FileKind::Cold, b.file, b.summary, vocab)
        }
    };
    let entry = CatalogEntry {
        summary,
        tier,
        identity: identity(id.path, &c.stat, id.hash),
        policy_fingerprint: policy_fp.to_owned(),
        format_version: FORMAT_VERSION,
    };
    Ok(Built {
        kind,
        file: built,
        entry,
        vocab,
    })
}

struct Appended {
    entry: CatalogEntry,
    bytes_read: u64,
    bytes_parsed: u64,
}

/// Hashes what passes through: every byte into `full`, the first `prefix_len` bytes into
/// `prefix` too.
struct TeeHash<R> {
    inner: R,
    full: Sha256,
    prefix: Sha256,
    prefix_len: u64,
    pos: u64,
}

impl<R: Read> Read for TeeHash<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let chunk = &buf[..n];
        self.full.update(chunk);
        if self.pos < self.prefix_len {
            let take = usize::try_from(self.prefix_len - self.pos).map_or(n, |left| left.min(n));
            self.prefix.update(&chunk[..take]);
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// Continues a hot session whose source only grew: the old prefix must hash to the recorded
/// `sourceHash`, the reader resumes from the last complete line, and old records keep the
/// text stored in the old shard. `Ok(None)` when that is not possible (prefix changed, no
/// resume data, a record whose text the old shard does not have): the caller reads the whole
/// source instead.
fn append_one(
    store: &Store,
    policy: &Policy,
    policy_fp: &str,
    branches: Branches,
    c: &Candidate,
    old: &CatalogEntry,
    opts: &ReadOptions,
) -> Result<Option<Appended>, Error> {
    let shard_path = store.path(branches, FileKind::Hot, &c.key);
    let Ok(Some(shard)) = store.load(&shard_path, hot::HotShard::open) else {
        return Ok(None);
    };
    let Ok(prev) = serde_json::from_slice::<source::Session>(shard.resume_bytes()) else {
        return Ok(None);
    };
    let start = prev.coverage.complete_bytes;
    if start > old.identity.size {
        return Ok(None);
    }
    let path_str = c.path.to_string_lossy().into_owned();
    let Ok(file) = File::open(&c.path) else {
        return Ok(None);
    };
    let mut tee = TeeHash {
        inner: file,
        full: Sha256::new(),
        prefix: Sha256::new(),
        prefix_len: old.identity.size,
        pos: 0,
    };
    // The old complete lines are hashed, not parsed.
    if std::io::copy(&mut (&mut tee).take(start), &mut std::io::sink()).ok() != Some(start) {
        return Ok(None);
    }
    let mut reader = BufReader::with_capacity(256 * 1024, tee);
    let resumed = source::resume(prev, &mut reader, opts);
    let mut tee = reader.into_inner();
    if std::io::copy(&mut tee, &mut std::io::sink()).is_err() {
        return Ok(None);
    }
    let total = tee.pos;
    if hex(&tee.prefix.finalize()) != old.identity.source_hash || total < old.identity.size {
        return Ok(None);
    }
    let Ok(session) = resumed else {
        return Ok(None);
    };
    let hash = hex(&tee.full.finalize());
    let mut sel = session.select(branches);
    // Old records take their stored text from the old shard; one whose stored text was cut at
    // `maxEntryChars` is read again from its own line, so the new shard posts all its tokens.
    let mut stored: FxHashMap<&str, (&str, Option<&str>, bool)> = FxHashMap::default();
    for e in shard.entries() {
        if let (Ok(id), Ok(text), Ok(thinking)) = (e.entry_id(), e.text(), e.thinking()) {
            stored.insert(id, (text, thinking, e.truncated()));
        }
    }
    for r in &mut sel.records {
        if r.offset < start {
            let Some((text, thinking, cut)) = stored.get(r.entry_id.as_str()) else {
                return Ok(None);
            };
            if *cut {
                let Some((text, thinking)) = reread_entry(&c.path, session.meta.format, r, opts)
                else {
                    return Ok(None);
                };
                r.text = text;
                r.thinking = thinking;
            } else {
                r.text = (*text).to_owned();
                r.thinking = thinking.map(str::to_owned);
            }
        }
    }
    drop(stored);
    let (entry, _) = build_index(
        policy,
        policy_fp,
        Tier::Hot,
        c,
        &session,
        &sel,
        SourceIdentityParts {
            path: &path_str,
            hash,
        },
    )?
    .write(store, branches, &c.key)?;
    Ok(Some(Appended {
        entry,
        bytes_read: total,
        bytes_parsed: total - start,
    }))
}

/// The text and thinking of record `r` read again from its line of the source at `path`
/// (`None` when the line cannot be read or no longer holds the record).
fn reread_entry(
    path: &Path,
    format: Option<source::Format>,
    r: &source::Record,
    opts: &ReadOptions,
) -> Option<(String, Option<String>)> {
    use std::io::{BufRead, Seek, SeekFrom};
    let mut f = File::open(path).ok()?;
    f.seek(SeekFrom::Start(r.offset)).ok()?;
    let mut line = Vec::new();
    BufReader::new(f).read_until(b'\n', &mut line).ok()?;
    let name = path.to_string_lossy();
    let records = source::read_line(&name, format?, r.line, r.offset, &line, opts).ok()?;
    let found = records.into_iter().find(|x| x.entry_id == r.entry_id)?;
    Some((found.text, found.thinking))
}

/// Writes the catalog; entries reused from the last sync get their vocabulary, id keys and
/// totals from the last catalog (or a hot shard's file). A file that cannot be opened, or a
/// cold session whose terms cannot be carried (its digest does not hold them), drops its
/// entry (the next sync rebuilds it).
fn write_catalog(
    store: &Store,
    branches: Branches,
    old: Option<&Catalog<Mmap>>,
    candidates: &[Candidate],
    entries: &mut Vec<(usize, Kept)>,
) -> Result<(), Error> {
    // Entries reused as they were are decoded now (the old catalog was validated); their
    // terms stay in the old catalog's maps.
    for (_, kept) in entries.iter_mut() {
        if let (Kept::Old { pos, .. }, Some(cat)) = (&*kept, old) {
            let pos = *pos;
            *kept = Kept::New(
                cat.session(pos).map_err(|e| core_error(&e))?,
                Terms::Carried(pos),
            );
        }
    }
    let mut build = || match catalog_bytes(store, branches, old, candidates, entries) {
        Ok(bytes) => Ok(bytes),
        // The old catalog passed its checksum but its maps could not be carried over: every
        // session's part comes from its index file (the builder left every entry `File`).
        Err(_) if old.is_some() => catalog_bytes(store, branches, None, candidates, entries),
        Err(e) => Err(e),
    };
    // The session files this sync wrote are made durable before the catalog that refers to
    // them is written. The flush (mostly waiting on the device: 25 ms of a 200 MB build's
    // 0.6 s) runs on a thread of its own while the catalog is built.
    let commit = || store.commit(branches).map_err(|e| core_error(&e));
    let (bytes, committed) = std::thread::scope(|s| {
        let flush = std::thread::Builder::new().spawn_scoped(s, commit);
        let bytes = build();
        let committed = match flush {
            Ok(h) => h
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            // No thread to be had: the flush runs here.
            Err(_) => commit(),
        };
        (bytes, committed)
    });
    let bytes = bytes?;
    committed?;
    store
        .write(branches, FileKind::Catalog, "", &bytes)
        .map_err(|e| core_error(&e))?;
    Ok(())
}

/// The catalog of `entries`: terms carried from `old`, given, or read from hot shards (a
/// session whose file does not open, or a cold one with neither, is left out). Every entry's
/// terms are `File` after.
fn catalog_bytes(
    store: &Store,
    branches: Branches,
    old: Option<&Catalog<Mmap>>,
    candidates: &[Candidate],
    entries: &mut Vec<(usize, Kept)>,
) -> Result<Aligned, Error> {
    entries.retain_mut(|(at, kept)| {
        let Kept::New(e, terms) = kept else {
            return false;
        };
        if matches!(terms, Terms::Carried(_)) && old.is_some() {
            return true;
        }
        if let Terms::Built(_) = terms {
            return true;
        }
        // A cold digest does not hold its vocabulary (only a catalog does): a cold session
        // whose terms were neither built by this sync nor carried is left out, like a file
        // that does not open, and the next sync (finding no catalog entry) rebuilds it.
        if e.tier == Tier::Cold {
            return false;
        }
        let path = store.path(branches, tier_kind(e.tier), &candidates[*at].key);
        // Mapped, not read.
        let opened = Mmap::open(&path).ok().and_then(|m| {
            hot::HotShard::open(m)
                .and_then(|h| SessionTerms::of_hot(&h))
                .ok()
        });
        match opened {
            Some(t) => {
                *terms = Terms::Built(t);
                true
            }
            None => false,
        }
    });
    let mut builder = CatalogBuilder::new(branches);
    let mut result = Ok(());
    for (_, kept) in entries.iter_mut() {
        if let Kept::New(e, terms) = kept {
            let added = match (std::mem::replace(terms, Terms::File), old) {
                (Terms::Built(t), _) => builder.add_with(e, t),
                (Terms::Carried(pos), Some(cat)) => builder.add_carried(e, cat, pos),
                _ => continue,
            };
            // Every entry is left `File`, also after an error.
            if result.is_ok() {
                result = added.map(|_| ());
            }
        }
    }
    result
        .and_then(|()| builder.finish_from(old))
        .map_err(|e| core_error(&e))
}

/// The index file kind of a tier.
fn tier_kind(tier: Tier) -> FileKind {
    match tier {
        Tier::Hot => FileKind::Hot,
        Tier::Cold => FileKind::Cold,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::collections::BTreeMap;
    use std::time::{Duration, SystemTime};

    /// Every file under `dir` (relative path -> bytes).
    fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.file_name().is_some_and(|n| n != "lock") {
                    out.insert(
                        p.strip_prefix(dir).unwrap().to_path_buf(),
                        std::fs::read(&p).unwrap(),
                    );
                }
            }
        }
        out
    }

    /// Writes `n` session files (the examples, over and over, each copy a distinct session
    /// by its mtime and path) into `dir`, the newest last; every `bad_every`-th is not a
    /// session.
    fn sessions(dir: &Path, from: usize, n: usize, bad_every: usize) {
        let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions");
        let srcs = source::discover(&examples);
        std::fs::create_dir_all(dir).unwrap();
        for i in from..from + n {
            let dst = dir.join(format!("s{i:03}.jsonl"));
            if i % bad_every == bad_every - 1 {
                std::fs::write(&dst, "{\"not\":\"a session\"}\n").unwrap();
            } else {
                std::fs::copy(&srcs[i % srcs.len()], &dst).unwrap();
            }
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i as u64 * 60);
            let f = std::fs::OpenOptions::new().write(true).open(&dst).unwrap();
            f.set_times(std::fs::FileTimes::new().set_modified(t))
                .unwrap();
        }
    }

    /// `apart` runs the work on another thread, gives back its result, calls `progress` on
    /// the calling thread only, ends with the last count reported, and lets a panic through.
    #[test]
    fn apart_runs_the_work_elsewhere_and_reports_here() {
        let here = std::thread::current().id();
        let mut seen = Vec::new();
        let (out, there) = apart(
            &mut |d, t| {
                assert_eq!(std::thread::current().id(), here);
                seen.push((d, t));
            },
            |progress| {
                for d in 0..=5 {
                    progress(d, 5);
                    std::thread::sleep(Duration::from_millis(3));
                }
                (42, std::thread::current().id())
            },
        );
        assert_eq!(out, 42);
        assert_ne!(there, here);
        assert_eq!(seen.last(), Some(&(5, 5)), "{seen:?}");
        assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "{seen:?}");
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            apart(&mut |_, _| {}, |_| -> u8 {
                panic!("inside the sync thread")
            })
        }));
        assert!(panicked.is_err());
    }

    /// A sync reports progress, the last call being `(total, total)`, and what it reports
    /// equals a sync on the calling thread's.
    #[test]
    fn sync_reports_progress_to_its_end() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        sessions(&a, 0, 12, 5);
        let config = Config {
            hot_sessions: 4,
            ..Config::default()
        };
        let store = Store::open(tmp.path().join("idx")).unwrap();
        let mut seen = Vec::new();
        let r = sync(
            &store,
            &config,
            std::slice::from_ref(&a),
            Branches::Active,
            &mut |d, t| seen.push((d, t)),
        )
        .unwrap();
        assert_eq!(seen.last(), Some(&(12, 12)), "{seen:?}");
        let here = Store::open(tmp.path().join("here")).unwrap();
        let r1 = sync_with(
            &here,
            &config,
            &[a],
            Branches::Active,
            &mut |_, _| {},
            build_threads(),
        )
        .unwrap();
        assert_eq!(r, r1);
        assert_eq!(files(store.root()), files(here.root()));
    }

    /// Builds run ahead on helper threads change nothing: the same reports, the same bytes
    /// in every index file and the catalog, for a first sync, a sync that adds sessions, and
    /// under budgets; non-session files among the newest shift which sessions are hot.
    #[test]
    fn helper_threads_build_what_one_thread_builds() {
        let tmp = tempfile::tempdir().unwrap();
        // The second and third syncs see the sessions of `b` too: new ones among reused ones.
        let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
        sessions(&a, 0, 30, 7);
        sessions(&b, 30, 10, 4);
        let configs = [
            Config {
                hot_sessions: 6,
                ..Config::default()
            },
            Config {
                hot_sessions: 3,
                max_sync_sessions: 9,
                ..Config::default()
            },
            Config {
                hot_sessions: 4,
                max_sync_source_bytes: 20_000,
                ..Config::default()
            },
        ];
        for (k, config) in configs.iter().enumerate() {
            let mut outs = Vec::new();
            for threads in [1, 2, 4] {
                let dir = tmp.path().join(format!("idx-{k}-{threads}"));
                let store = Store::open(&dir).unwrap();
                let mut reports = Vec::new();
                for sources in [
                    vec![a.clone()],
                    vec![a.clone(), b.clone()],
                    vec![a.clone(), b.clone()],
                ] {
                    let r = sync_with(
                        &store,
                        config,
                        &sources,
                        Branches::Active,
                        &mut |_, _| {},
                        threads,
                    )
                    .unwrap();
                    reports.push(r);
                }
                outs.push((threads, reports, files(&dir)));
            }
            let (_, reports, first) = &outs[0];
            assert!(
                reports[0].indexed > 0 && reports[0].failed > 0,
                "{reports:?}"
            );
            for (threads, r, f) in &outs[1..] {
                assert_eq!(r, reports, "config {k}, {threads} threads");
                assert_eq!(
                    f.keys().collect::<Vec<_>>(),
                    first.keys().collect::<Vec<_>>(),
                    "config {k}, {threads} threads"
                );
                for (name, bytes) in f {
                    assert!(
                        first[name] == *bytes,
                        "config {k}, {threads} threads: {name:?} differs"
                    );
                }
            }
        }
    }
}
