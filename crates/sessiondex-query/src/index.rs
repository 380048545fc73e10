//! An opened index of one branch mode: the catalog, hot shards and cold digests (mmapped), and
//! session resolution and hydration from source.

use std::path::{Path, PathBuf};

use serde_json::json;
use sessiondex_core::catalog::{Catalog, CatalogEntry, Tier};
use sessiondex_core::cold::ColdDigest;
use sessiondex_core::format::{Aligned, FileKind};
use sessiondex_core::hot::HotShard;
use sessiondex_core::mmap::Mmap;
use sessiondex_core::store::Store;
use sessiondex_source::{self as source, Branches, ReadOptions, Selection, Session};
use sha2::{Digest, Sha256};

use crate::error::{Error, ErrorCode};

/// Index bytes: a memory map of a stored file, or bytes built in memory (a hydrated session).
#[derive(Debug)]
pub enum Bytes {
    /// A read-only map of an index file.
    Mapped(Mmap),
    /// Aligned bytes in memory.
    Owned(Aligned),
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m.as_ref(),
            Bytes::Owned(a) => a.as_slice(),
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

/// The catalog of one branch mode with every session decoded, and access to their files.
#[derive(Debug)]
pub struct Index {
    store: Store,
    branches: Branches,
    entries: Vec<CatalogEntry>,
    catalog: Option<Catalog<Bytes>>,
}

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

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn stale(message: impl Into<String>, path: &str) -> Error {
    Error::new(ErrorCode::StalePointer, message).with_details(json!({ "session": path }))
}

/// Reads a session source, checks its integrity bindings and selects a branch mode.
///
/// # Errors
///
/// `stale_pointer` when `source_hash` or `lineage` is given and differs (a vanished file
/// included), `session_not_found` when the file does not exist, `source_unreadable`,
/// `unknown_format`.
pub fn hydrate(
    path: &str,
    branches: Branches,
    source_hash: Option<&str>,
    lineage: Option<&str>,
) -> Result<Hydrated, Error> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            if source_hash.is_some() {
                return Err(stale(format!("{path}: the source is gone ({e})"), path));
            }
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                ErrorCode::SessionNotFound
            } else {
                ErrorCode::SourceUnreadable
            };
            return Err(
                Error::new(code, format!("{path}: {e}")).with_details(json!({ "session": path }))
            );
        }
    };
    let hash = hex(&Sha256::digest(&bytes));
    if let Some(expected) = source_hash {
        if expected != hash {
            return Err(stale(
                format!("{path}: the source changed since the pointer was made"),
                path,
            ));
        }
    }
    let session = source::read_bytes(path, &bytes, &ReadOptions::default()).map_err(|e| {
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

fn map(path: &Path) -> Result<Option<Bytes>, Error> {
    match std::fs::metadata(path) {
        Err(_) => Ok(None),
        Ok(_) => Mmap::open(path)
            .map(|m| Some(Bytes::Mapped(m)))
            .map_err(|e| core_error(&e)),
    }
}

impl Index {
    /// Opens the catalog of `branches` under the index directory `root`. A missing catalog is
    /// an empty index.
    ///
    /// # Errors
    ///
    /// `index_unavailable` when the directory cannot be used, `index_corrupt` when the
    /// catalog fails its checks.
    pub fn open(root: &Path, branches: Branches) -> Result<Index, Error> {
        let store = Store::open(root.to_path_buf()).map_err(|e| core_error(&e))?;
        let path = store.path(branches, FileKind::Catalog, "");
        let catalog = match map(&path)? {
            None => None,
            Some(bytes) => Some(Catalog::open(bytes).map_err(|e| core_error(&e))?),
        };
        let mut entries = Vec::new();
        if let Some(cat) = &catalog {
            for i in 0..cat.len() {
                entries.push(cat.session(i).map_err(|e| core_error(&e))?);
            }
        }
        Ok(Index {
            store,
            branches,
            entries,
            catalog,
        })
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

    /// The catalog, when one was written.
    #[must_use]
    pub fn catalog(&self) -> Option<&Catalog<Bytes>> {
        self.catalog.as_ref()
    }

    fn file_path(&self, i: usize, kind: FileKind) -> Option<PathBuf> {
        let e = self.entries.get(i)?;
        let key = Store::key(Path::new(&e.identity.path));
        Some(self.store.path(self.branches, kind, &key))
    }

    /// The hot shard of session `i`; `None` when it is cold or its file is missing.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the file fails its checks.
    pub fn hot(&self, i: usize) -> Result<Option<HotShard<Bytes>>, Error> {
        if self.entries.get(i).map(|e| e.tier) != Some(Tier::Hot) {
            return Ok(None);
        }
        let Some(path) = self.file_path(i, FileKind::Hot) else {
            return Ok(None);
        };
        match map(&path)? {
            None => Ok(None),
            Some(b) => HotShard::open(b).map(Some).map_err(|e| core_error(&e)),
        }
    }

    /// The cold digest of session `i`; `None` when it is hot or its file is missing.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the file fails its checks.
    pub fn cold(&self, i: usize) -> Result<Option<ColdDigest<Bytes>>, Error> {
        if self.entries.get(i).map(|e| e.tier) != Some(Tier::Cold) {
            return Ok(None);
        }
        let Some(path) = self.file_path(i, FileKind::Cold) else {
            return Ok(None);
        };
        match map(&path)? {
            None => Ok(None),
            Some(b) => ColdDigest::open(b).map(Some).map_err(|e| core_error(&e)),
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
        if found.is_empty() && Path::new(s).is_file() {
            if let Ok(canon) = std::fs::canonicalize(s) {
                found = self
                    .entries
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| {
                        std::fs::canonicalize(&e.identity.path).is_ok_and(|c| c == canon)
                    })
                    .map(|(i, _)| i)
                    .collect();
            }
            if found.is_empty() {
                return Ok(Resolved::Unindexed(s.to_owned()));
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
