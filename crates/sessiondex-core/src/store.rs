//! The cache store (feature `fs`): where index files live and how they are written.
//!
//! ```text
//! <index dir>/                 0700
//!   lock                       advisory lock file (0600), held by writers and cleanup
//!   v1/                        one directory per format version; others are removed
//!     active/                  one directory per branch mode
//!       <key>.hot              hot shard of the source whose path hashes to <key>
//!       <key>.cold             cold digest
//!       catalog                the catalog of this branch mode
//!       .tmp-<pid>-<n>-<name>  a write in progress (a leftover after a crash)
//!     all/
//! ```
//!
//! `<key>` is the first 32 hex digits of the SHA-256 of the source path's bytes. Writes go to
//! a temp file in the same directory, are fsynced, renamed over the target and the directory
//! is fsynced, so a reader sees the old file or the new one, never a mix. A sync writes its
//! session files with [`Store::write_pending`] instead, and on Linux makes them durable all at
//! once ([`Store::commit`], one `syncfs`) before it writes the catalog that refers to them:
//! one fsync of each file and of the directory after it was 40% of a one-thread build's wall
//! time over 4,212 small sessions. Directories are
//! created `0700` and files `0600` on Unix. Two writers coordinate through [`Store::lock`];
//! even without it, atomic renames mean they can only overwrite each other's complete files.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sessiondex_source::Branches;
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorKind, Result};
use crate::format::{Aligned, FileKind, FORMAT_VERSION};
use crate::policy::hex;

const TEMP_PREFIX: &str = ".tmp-";
const CATALOG_NAME: &str = "catalog";
const LOCK_NAME: &str = "lock";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// An index directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// One index file found in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredFile {
    /// Its kind.
    pub kind: FileKind,
    /// The source key (empty for a catalog).
    pub key: String,
    /// Its path.
    pub path: PathBuf,
}

/// What a cleanup did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CleanupReport {
    /// Files and directories removed.
    pub removed: u64,
    /// Directory entries examined.
    pub examined: u64,
    /// False when the budget stopped the cleanup before it examined everything.
    pub complete: bool,
}

/// One entry of a branch directory, as [`Store::listing`] found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its file name.
    pub name: String,
    /// Its length when it is a regular file (a link is not followed).
    pub file_len: Option<u64>,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// The name as the directory holds it (`name` is its lossy UTF-8 form).
    raw: std::ffi::OsString,
}

/// The entries of one branch directory ([`Store::listing`]), read once by a sync for both
/// its reuse checks (is each index file there, with the length its catalog recorded) and its
/// cleanup.
#[derive(Debug, Clone)]
pub struct Listing {
    branches: Branches,
    entries: Vec<Listed>,
}

impl Listing {
    /// The branch mode whose directory this lists.
    #[must_use]
    pub fn branches(&self) -> Branches {
        self.branches
    }

    /// The entries, in the directory's order.
    #[must_use]
    pub fn entries(&self) -> &[Listed] {
        &self.entries
    }

    /// File name -> length of every regular file.
    #[must_use]
    pub fn file_lens(&self) -> rustc_hash::FxHashMap<&str, u64> {
        self.entries
            .iter()
            .filter_map(|e| Some((e.name.as_str(), e.file_len?)))
            .collect()
    }
}

/// Each entry's type and, for a regular file, its length (read relative to the open
/// directory), by up to four threads: at 10,000 index files these stat calls are a tenth of
/// a no-op sync.
fn stat_entries(entries: Vec<fs::DirEntry>) -> Vec<Listed> {
    fn one(e: &fs::DirEntry) -> Listed {
        let ft = e.file_type().ok();
        let is_file = ft.is_some_and(|t| t.is_file());
        let raw = e.file_name();
        Listed {
            name: raw.to_string_lossy().into_owned(),
            raw,
            file_len: if is_file {
                e.metadata()
                    .ok()
                    .filter(fs::Metadata::is_file)
                    .map(|m| m.len())
            } else {
                None
            },
            is_dir: ft.is_some_and(|t| t.is_dir()),
        }
    }
    let threads = sessiondex_source::worker_threads();
    if threads < 2 || entries.len() < 512 {
        return entries.iter().map(one).collect();
    }
    let chunk = entries.len().div_ceil(threads);
    std::thread::scope(|s| {
        let mut parts = entries.chunks(chunk);
        let first = parts.next().unwrap_or_default();
        // A helper that cannot be started leaves its chunk to this thread.
        let helpers: Vec<_> = parts
            .map(|part| {
                std::thread::Builder::new()
                    .spawn_scoped(s, move || part.iter().map(one).collect::<Vec<_>>())
                    .map_err(|_| part)
            })
            .collect();
        let mut listed: Vec<Listed> = first.iter().map(one).collect();
        for h in helpers {
            match h {
                Ok(h) => {
                    // A helper that panicked lost its part: those files count as missing
                    // (rebuilt) and are not cleaned up.
                    if let Ok(mut part) = h.join() {
                        listed.append(&mut part);
                    }
                }
                Err(part) => listed.extend(part.iter().map(one)),
            }
        }
        listed
    })
}

/// An exclusive advisory lock on the store, released on drop.
#[derive(Debug)]
pub struct StoreLock {
    file: File,
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

fn create_dir(path: &Path) -> Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(path).map_err(|e| Error::io(path, &e))
}

fn open_new_private(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path)
}

fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(dir, &e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

fn branch_dir_name(b: Branches) -> &'static str {
    b.as_str()
}

impl Store {
    /// Opens (creating when needed) the index directory and its version and branch
    /// subdirectories.
    ///
    /// # Errors
    ///
    /// `index_io` when a directory cannot be created.
    pub fn open(root: impl Into<PathBuf>) -> Result<Store> {
        let store = Store { root: root.into() };
        for b in [Branches::Active, Branches::All] {
            create_dir(&store.dir(b))?;
        }
        Ok(store)
    }

    /// The index directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of the current format version.
    #[must_use]
    pub fn version_dir(&self) -> PathBuf {
        self.root.join(format!("v{FORMAT_VERSION}"))
    }

    /// The directory of one branch mode.
    #[must_use]
    pub fn dir(&self, branches: Branches) -> PathBuf {
        self.version_dir().join(branch_dir_name(branches))
    }

    /// The key of a source path: 32 hex digits of the SHA-256 of its bytes.
    #[must_use]
    pub fn key(source_path: &Path) -> String {
        let digest = Sha256::digest(source_path.as_os_str().as_encoded_bytes());
        hex(&digest[..16])
    }

    /// Where the file of `kind` for source `key` lives (`key` is ignored for the catalog).
    #[must_use]
    pub fn path(&self, branches: Branches, kind: FileKind, key: &str) -> PathBuf {
        match kind {
            FileKind::Catalog => self.dir(branches).join(CATALOG_NAME),
            _ => self.dir(branches).join(format!("{key}.{}", kind.as_str())),
        }
    }

    /// Writes `bytes` to `path` atomically: temp file in the same directory, write, fsync,
    /// rename, fsync the directory. The file is `0600` on Unix.
    ///
    /// # Errors
    ///
    /// `index_io`; the temp file is removed on failure.
    pub fn write_atomic(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.write_file(path, bytes, true)
    }

    /// The write of [`Store::write_atomic`]; with `durable` false (Linux only) neither the
    /// file nor its directory is fsynced.
    fn write_file(&self, path: &Path, bytes: &[u8], durable: bool) -> Result<()> {
        let durable = durable || !cfg!(target_os = "linux");
        let dir = path
            .parent()
            .ok_or_else(|| Error::new(ErrorKind::Io, "path has no directory"))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = dir.join(format!(
            "{TEMP_PREFIX}{}-{}-{name}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            {
                // Closed before the rename.
                let mut f = open_new_private(&tmp)?;
                f.write_all(bytes)?;
                if durable {
                    f.sync_all()?;
                }
            }
            fs::rename(&tmp, path)
        })();
        if let Err(e) = result {
            let _ = fs::remove_file(&tmp);
            return Err(Error::io(path, &e));
        }
        if durable {
            sync_dir(dir)?;
        }
        Ok(())
    }

    /// Writes an index file of `kind` for source `key` atomically and returns its path.
    ///
    /// # Errors
    ///
    /// `index_io`.
    pub fn write(
        &self,
        branches: Branches,
        kind: FileKind,
        key: &str,
        bytes: &[u8],
    ) -> Result<PathBuf> {
        let path = self.path(branches, kind, key);
        self.write_atomic(&path, bytes)?;
        Ok(path)
    }

    /// [`Store::write_atomic`], leaving the file to be made durable by [`Store::commit`]: on
    /// Linux neither the file nor its directory is fsynced now; elsewhere this is
    /// [`Store::write_atomic`]. Readers see the old file or the new one either way (the rename
    /// is atomic); only a power loss before the commit can lose it, and until the catalog
    /// written after the commit nothing refers to it.
    ///
    /// # Errors
    ///
    /// `index_io`; the temp file is removed on failure.
    pub fn write_pending(&self, path: &Path, bytes: &[u8]) -> Result<()> {
        self.write_file(path, bytes, false)
    }

    /// Makes every file written by [`Store::write_pending`] durable, with their directory
    /// entries: one `syncfs` of the index's filesystem on Linux, where the writes were left
    /// pending (it flushes the file system's other dirty data too, at once, where a fsync of
    /// each file would wait for each in turn); nothing elsewhere, where they were not.
    ///
    /// # Errors
    ///
    /// `index_io` when the directory cannot be opened or the flush fails.
    pub fn commit(&self, branches: Branches) -> Result<()> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let dir = self.dir(branches);
            let d = File::open(&dir).map_err(|e| Error::io(&dir, &e))?;
            // SAFETY: `syncfs` takes a file descriptor, which `d` keeps open for the call, and
            // touches no memory of ours.
            #[allow(unsafe_code)]
            let rc = unsafe { libc::syncfs(d.as_raw_fd()) };
            if rc != 0 {
                return Err(Error::io(&dir, &std::io::Error::last_os_error()));
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = branches;
        Ok(())
    }

    /// Reads a file into aligned memory; `None` when it does not exist.
    ///
    /// # Errors
    ///
    /// `index_io` for other failures.
    pub fn read(&self, path: &Path) -> Result<Option<Aligned>> {
        let mut f = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, &e)),
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let mut v = Aligned::with_capacity(usize::try_from(len).unwrap_or(0));
        v.extend_from_reader(&mut f)
            .map_err(|e| Error::io(path, &e))?;
        Ok(Some(v))
    }

    /// Reads `path` and opens it with `open` (e.g. [`crate::hot::HotShard::open`]); errors
    /// name the path. `None` when the file does not exist.
    ///
    /// # Errors
    ///
    /// `index_io`, or what `open` returns (`index_corrupt`, `index_version_mismatch`: treat
    /// the file as absent and rebuild it).
    pub fn load<T>(
        &self,
        path: &Path,
        open: impl FnOnce(Aligned) -> Result<T>,
    ) -> Result<Option<T>> {
        match self.read(path)? {
            None => Ok(None),
            Some(bytes) => open(bytes)
                .map(Some)
                .map_err(|e| e.with_path(path.to_string_lossy())),
        }
    }

    /// Removes the file of `kind` for `key`; true when it existed.
    ///
    /// # Errors
    ///
    /// `index_io` for failures other than absence.
    pub fn remove(&self, branches: Branches, kind: FileKind, key: &str) -> Result<bool> {
        let path = self.path(branches, kind, key);
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(&path, &e)),
        }
    }

    /// The index files of one branch mode, sorted by path. Temp files and unknown names are
    /// not listed.
    ///
    /// # Errors
    ///
    /// `index_io` when the directory cannot be read.
    pub fn list(&self, branches: Branches) -> Result<Vec<StoredFile>> {
        let dir = self.dir(branches);
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(&dir, &e)),
        };
        let mut out: Vec<StoredFile> = rd
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                parse_name(&name).map(|(kind, key)| StoredFile {
                    kind,
                    key: key.to_owned(),
                    path: e.path(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Takes the store's exclusive lock, waiting for another holder to release it.
    ///
    /// # Errors
    ///
    /// `index_io` when the lock file cannot be opened or locked.
    pub fn lock(&self) -> Result<StoreLock> {
        let file = self.lock_file()?;
        let path = self.root.join(LOCK_NAME);
        file.lock().map_err(|e| Error::io(&path, &e))?;
        Ok(StoreLock { file })
    }

    /// Takes the store's exclusive lock, or fails with `index_locked` when another process
    /// (or another handle in this one) holds it.
    ///
    /// # Errors
    ///
    /// `index_locked`, or `index_io`.
    pub fn try_lock(&self) -> Result<StoreLock> {
        let file = self.lock_file()?;
        let path = self.root.join(LOCK_NAME);
        match file.try_lock() {
            Ok(()) => Ok(StoreLock { file }),
            Err(fs::TryLockError::WouldBlock) => Err(Error::new(
                ErrorKind::Locked,
                "another process holds the index lock",
            )
            .with_path(path.to_string_lossy())),
            Err(fs::TryLockError::Error(e)) => Err(Error::io(&path, &e)),
        }
    }

    fn lock_file(&self) -> Result<File> {
        let path = self.root.join(LOCK_NAME);
        let mut o = OpenOptions::new();
        o.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            o.mode(0o600);
        }
        o.open(&path).map_err(|e| Error::io(&path, &e))
    }

    /// The entries of the directory of `branches` (none when it is missing).
    ///
    /// # Errors
    ///
    /// `index_io` when the directory cannot be read.
    pub fn listing(&self, branches: Branches) -> Result<Listing> {
        let dir = self.dir(branches);
        let entries = match fs::read_dir(&dir) {
            Ok(rd) => rd.flatten().collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(&dir, &e)),
        };
        Ok(Listing {
            branches,
            entries: stat_entries(entries),
        })
    }

    /// Removes, within `budget` examined directory entries: temp leftovers, files with names
    /// the store does not write, other format versions' directories, and index files for which
    /// `live(branches, kind, key)` is false (deleted sources, a session that changed tier).
    /// Taking `&StoreLock` means no writer of this store is mid-write.
    ///
    /// # Errors
    ///
    /// `index_io` when a directory cannot be read; files that cannot be removed are skipped.
    pub fn cleanup(
        &self,
        lock: &StoreLock,
        budget: u64,
        live: impl FnMut(Branches, FileKind, &str) -> bool,
    ) -> Result<CleanupReport> {
        self.cleanup_inner(lock, budget, None, live)
    }

    /// [`Store::cleanup`] taking the directory of `listing`'s branch mode as `listing` found
    /// it (by this process, under the same lock): files written since are left alone.
    ///
    /// # Errors
    ///
    /// As [`Store::cleanup`].
    pub fn cleanup_listed(
        &self,
        lock: &StoreLock,
        budget: u64,
        listing: &Listing,
        live: impl FnMut(Branches, FileKind, &str) -> bool,
    ) -> Result<CleanupReport> {
        self.cleanup_inner(lock, budget, Some(listing), live)
    }

    fn cleanup_inner(
        &self,
        _lock: &StoreLock,
        budget: u64,
        listing: Option<&Listing>,
        mut live: impl FnMut(Branches, FileKind, &str) -> bool,
    ) -> Result<CleanupReport> {
        let mut report = CleanupReport {
            complete: true,
            ..CleanupReport::default()
        };
        let current = format!("v{FORMAT_VERSION}");
        let rd = fs::read_dir(&self.root).map_err(|e| Error::io(&self.root, &e))?;
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let is_version = name.len() > 1
                && name.starts_with('v')
                && name[1..].bytes().all(|b| b.is_ascii_digit());
            if !is_version || name == current {
                continue;
            }
            if !remove_tree(&e.path(), budget, &mut report) {
                report.complete = false;
                return Ok(report);
            }
        }
        for b in [Branches::Active, Branches::All] {
            let listed;
            let entries = match listing {
                Some(l) if l.branches == b => &l.entries,
                _ => {
                    let dir = self.dir(b);
                    let rd = match fs::read_dir(&dir) {
                        Ok(rd) => rd,
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(e) => return Err(Error::io(&dir, &e)),
                    };
                    // Only names and types are needed here: no stat.
                    listed = rd
                        .flatten()
                        .map(|e| {
                            let raw = e.file_name();
                            Listed {
                                name: raw.to_string_lossy().into_owned(),
                                raw,
                                file_len: None,
                                is_dir: e.file_type().is_ok_and(|t| t.is_dir()),
                            }
                        })
                        .collect::<Vec<_>>();
                    &listed
                }
            };
            let dir = self.dir(b);
            for e in entries {
                if report.examined >= budget {
                    report.complete = false;
                    return Ok(report);
                }
                report.examined += 1;
                let keep = match parse_name(&e.name) {
                    Some((kind, key)) => kind == FileKind::Catalog || live(b, kind, key),
                    None => false,
                };
                if keep {
                    continue;
                }
                let path = dir.join(&e.raw);
                let removed = if e.is_dir {
                    fs::remove_dir_all(&path)
                } else {
                    fs::remove_file(&path)
                };
                if removed.is_ok() {
                    report.removed += 1;
                }
            }
        }
        Ok(report)
    }
}

/// Removes a directory tree, counting entries against the budget; false when it ran out.
fn remove_tree(path: &Path, budget: u64, report: &mut CleanupReport) -> bool {
    if path.is_dir() {
        if let Ok(rd) = fs::read_dir(path) {
            for e in rd.flatten() {
                if !remove_tree(&e.path(), budget, report) {
                    return false;
                }
            }
        }
        if report.examined >= budget {
            return false;
        }
        report.examined += 1;
        if fs::remove_dir(path).is_ok() {
            report.removed += 1;
        }
    } else {
        if report.examined >= budget {
            return false;
        }
        report.examined += 1;
        if fs::remove_file(path).is_ok() {
            report.removed += 1;
        }
    }
    true
}

/// `(kind, key)` of a file name the store writes.
fn parse_name(name: &str) -> Option<(FileKind, &str)> {
    if name == CATALOG_NAME {
        return Some((FileKind::Catalog, ""));
    }
    let (key, ext) = name.rsplit_once('.')?;
    let kind = match ext {
        "hot" => FileKind::Hot,
        "cold" => FileKind::Cold,
        _ => return None,
    };
    let valid = key.len() == 32 && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    valid.then_some((kind, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse() {
        let key = Store::key(Path::new("/a/b.jsonl"));
        assert_eq!(key.len(), 32);
        assert_eq!(
            parse_name(&format!("{key}.hot")),
            Some((FileKind::Hot, key.as_str()))
        );
        assert_eq!(parse_name("catalog"), Some((FileKind::Catalog, "")));
        assert_eq!(parse_name(&format!(".tmp-1-2-{key}.hot")), None);
        assert_eq!(parse_name("x.hot"), None);
        assert_eq!(parse_name(&format!("{key}.warm")), None);
    }
}
