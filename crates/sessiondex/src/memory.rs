//! [`Memory`]: the sources, the index directory and the config, in one handle.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sessiondex_core::catalog::Tier;
use sessiondex_core::format_rfc3339_ms;
use sessiondex_core::store::Store;
use sessiondex_query::index::Index;
use sessiondex_source::{Branches, Format};

use crate::sync::{self, core_error, IndexCoverage, ReasonCount, SyncReport};
use crate::{absolute_path, default_index_dir, default_sources, Config, Error, ErrorCode};

/// A session as the catalog lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session id.
    pub session_id: String,
    /// The source file.
    pub file: String,
    /// Its format.
    pub format: Option<Format>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Title.
    pub title: Option<String>,
    /// Earliest record timestamp.
    pub first_ts: Option<String>,
    /// Latest record timestamp.
    pub last_ts: Option<String>,
    /// Records in the indexed branch mode.
    pub entry_count: u64,
    /// Tool calls per tool name.
    pub tool_histogram: BTreeMap<String, u64>,
    /// Records with a typed error flag.
    pub error_count: u64,
    /// Files touched, from typed tool arguments.
    pub files_touched: Vec<String>,
    /// `hot` or `cold`.
    pub tier: String,
    /// This session's own coverage.
    pub coverage: SessionCoverage,
}

/// Coverage of one session's index entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionCoverage {
    /// Whether everything of the source was indexed.
    pub complete: bool,
    /// Why not, with counts.
    pub reasons: Vec<ReasonCount>,
}

/// The answer of [`Memory::sessions`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    /// Sessions, newest first.
    pub sessions: Vec<SessionInfo>,
    /// Coverage of the index the list was read from.
    pub coverage: IndexCoverage,
}

/// A memory of past sessions: where they are, where their index lives, and how to index them.
///
/// ```no_run
/// use sessiondex::{Config, Memory};
/// use sessiondex::source::Branches;
///
/// let memory = Memory::open(Config::default(), None, None).unwrap();
/// let report = memory.sync(Branches::Active, &mut |_, _| {}).unwrap();
/// println!("{} sessions indexed", report.coverage.indexed_sessions);
/// ```
#[derive(Debug, Clone)]
pub struct Memory {
    config: Config,
    sources: Vec<PathBuf>,
    pub(crate) store: Store,
    /// Indexes opened by earlier calls, per branch mode, shared by clones: a call reuses one
    /// while its catalog is still the file on disk, so hot shards are opened and checked
    /// once per process rather than once per call.
    pub(crate) indexes: OpenIndexes,
    /// Bytes of cold digests each opened index keeps across calls
    /// ([`Memory::set_cold_cache_bytes`]).
    pub(crate) cold_cache_bytes: u64,
    /// Whether each opened index may build for later calls on a thread of its own
    /// ([`Memory::set_background_builds`]).
    pub(crate) background_builds: bool,
}

/// The indexes a [`Memory`] keeps open, per branch mode.
pub(crate) type OpenIndexes = Arc<Mutex<Vec<(Branches, Arc<Index>)>>>;

impl Memory {
    /// A memory over `sources` (default: the agents' standard locations that exist) with its
    /// index in `index_dir` (default: [`default_index_dir`]). Relative paths are taken from
    /// the current directory ([`absolute_path`]): the index, its hits and their follow calls
    /// name every session by its absolute path.
    ///
    /// # Errors
    ///
    /// `index_unavailable` when the index directory cannot be created.
    pub fn open(
        config: Config,
        sources: Option<Vec<PathBuf>>,
        index_dir: Option<PathBuf>,
    ) -> Result<Memory, Error> {
        // A path that cannot be made absolute (the current directory is gone) stays as given:
        // reading it reports what is wrong.
        let absolute = |p: PathBuf| absolute_path(&p).unwrap_or(p);
        let store = Store::open(absolute(index_dir.unwrap_or_else(default_index_dir)))
            .map_err(|e| core_error(&e))?;
        Ok(Memory {
            config,
            sources: sources
                .unwrap_or_else(default_sources)
                .into_iter()
                .map(absolute)
                .collect(),
            store,
            indexes: Arc::default(),
            cold_cache_bytes: sessiondex_query::index::COLD_CACHE_BYTES,
            background_builds: true,
        })
    }

    /// Sets the bytes of cold digests an index opened from now on keeps open across calls
    /// (default [`sessiondex_query::index::COLD_CACHE_BYTES`]). A process that answers one
    /// call and exits (the CLI) sets 0: kept digests would only hold their pages in it.
    pub fn set_cold_cache_bytes(&mut self, bytes: u64) {
        self.cold_cache_bytes = bytes;
    }

    /// Whether an index opened from now on may build what later calls use on a thread of its
    /// own (default true; [`Index::set_background_builds`]). A process that answers one call
    /// and exits (the CLI) turns it off: the build would only take a core from that call.
    ///
    /// [`Index::set_background_builds`]: sessiondex_query::index::Index::set_background_builds
    pub fn set_background_builds(&mut self, on: bool) {
        self.background_builds = on;
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The sources.
    #[must_use]
    pub fn sources(&self) -> &[PathBuf] {
        &self.sources
    }

    /// The index directory.
    #[must_use]
    pub fn index_dir(&self) -> &Path {
        self.store.root()
    }

    /// Brings the index of a branch mode up to date with the sources, within the budgets.
    /// The work runs on a thread of its own; `progress` receives `(done, total)` session
    /// files on the calling thread (at most about every 20 ms, last `(total, total)`).
    ///
    /// # Errors
    ///
    /// `index_unavailable` when the index directory cannot be locked or written.
    pub fn sync(
        &self,
        branches: Branches,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<SyncReport, Error> {
        sync::sync(&self.store, &self.config, &self.sources, branches, progress)
    }

    /// Syncs, then lists the indexed sessions newest first (by last timestamp).
    ///
    /// # Errors
    ///
    /// As [`Memory::sync`]; `index_corrupt` when the catalog written by the sync cannot be
    /// read back.
    pub fn sessions(&self, branches: Branches) -> Result<SessionList, Error> {
        let report = self.sync(branches, &mut |_, _| {})?;
        let catalog = sync::open_catalog(&self.store, branches).map_err(|e| core_error(&e))?;
        let mut sessions = Vec::new();
        if let Some(cat) = catalog {
            for i in 0..cat.len() {
                let e = cat.session(i).map_err(|e| core_error(&e))?;
                let s = e.summary;
                sessions.push(SessionInfo {
                    session_id: s.session_id,
                    file: s.file,
                    format: s.format,
                    cwd: s.cwd,
                    title: s.title,
                    first_ts: s.first_ts.and_then(format_rfc3339_ms),
                    last_ts: s.last_ts.and_then(format_rfc3339_ms),
                    entry_count: s.entry_count,
                    tool_histogram: s.tool_histogram.into_iter().collect(),
                    error_count: s.error_count,
                    files_touched: s.files_touched,
                    tier: match e.tier {
                        Tier::Hot => "hot",
                        Tier::Cold => "cold",
                    }
                    .to_owned(),
                    coverage: SessionCoverage {
                        complete: s.coverage.complete,
                        reasons: s
                            .coverage
                            .reasons
                            .into_iter()
                            .map(|r| ReasonCount {
                                code: r.code,
                                count: r.count,
                            })
                            .collect(),
                    },
                });
            }
        } else if report.coverage.eligible_sessions > 0 {
            return Err(Error::new(
                ErrorCode::IndexUnavailable,
                "the sync wrote no catalog",
            ));
        }
        sessions.sort_by(|a, b| b.last_ts.cmp(&a.last_ts).then_with(|| a.file.cmp(&b.file)));
        Ok(SessionList {
            sessions,
            coverage: report.coverage,
        })
    }
}
