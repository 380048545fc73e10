//! The systems `compare` runs, each behind one small interface: build an index of a corpus,
//! then answer [`Query`]s with a hit count.

use std::path::Path;

use serde_json::Value;

use crate::queries::Query;

pub mod ripgrep;
pub mod sessiondex;
#[cfg(feature = "peers")]
pub mod sqlite_fts5;
#[cfg(feature = "peers")]
pub mod tantivy;

/// One system under test.
pub trait System {
    /// Builds the index of the session files under `corpus` in the empty directory `work`.
    ///
    /// # Errors
    ///
    /// When reading or indexing fails.
    fn build(&mut self, corpus: &Path, work: &Path) -> anyhow::Result<()>;

    /// Whether [`System::build`] builds an index. A system that searches the raw files
    /// (ripgrep) reports no build time or throughput.
    fn builds_index(&self) -> bool {
        true
    }

    /// Work after the build that is measured on its own, outside `buildSeconds`
    /// (sessiondex: the no-op sync).
    ///
    /// # Errors
    ///
    /// When that work fails.
    fn after_build(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Bytes of the index on disk.
    fn index_bytes(&self, work: &Path) -> u64 {
        dir_bytes(work)
    }

    /// Runs `q` (a ranked top-10 page plus the total, where the system ranks); `None` when the
    /// system has no equivalent of the query.
    ///
    /// # Errors
    ///
    /// When the system fails on the query.
    fn query(&mut self, q: &Query) -> anyhow::Result<Option<u64>>;

    /// Extra classes a system measures itself (sessiondex: `expand`), as
    /// `(class, samples in microseconds, hits)`.
    ///
    /// # Errors
    ///
    /// When the extra work fails.
    fn extra_classes(&mut self, _reps: usize) -> anyhow::Result<Vec<(String, Vec<f64>, u64)>> {
        Ok(Vec::new())
    }

    /// Extra figures for the report (`noopSyncSeconds`, ...).
    fn extra(&self) -> serde_json::Map<String, Value> {
        serde_json::Map::new()
    }
}

/// Sum of file sizes below `dir`.
#[must_use]
pub fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map(|m| m.len()).unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}

/// The systems this build can run, in report order.
#[must_use]
pub fn available() -> Vec<&'static str> {
    let mut v = vec!["sessiondex", "sessiondex_default_tiers"];
    if cfg!(feature = "peers") {
        v.push("tantivy");
        v.push("tantivy_page");
        v.push("sqlite_fts5");
    }
    v.push("ripgrep");
    v
}

/// A new system by name.
///
/// # Errors
///
/// When the name is unknown or needs the `peers` feature.
pub fn make(name: &str) -> anyhow::Result<Box<dyn System>> {
    Ok(match name {
        "sessiondex" => Box::new(sessiondex::Sessiondex::new(true)),
        "sessiondex_default_tiers" => Box::new(sessiondex::Sessiondex::new(false)),
        "ripgrep" => Box::new(ripgrep::Ripgrep::default()),
        #[cfg(feature = "peers")]
        "tantivy" => Box::new(tantivy::Tantivy::default()),
        #[cfg(feature = "peers")]
        "tantivy_page" => Box::new(tantivy::Tantivy::page()),
        #[cfg(feature = "peers")]
        "sqlite_fts5" => Box::new(sqlite_fts5::SqliteFts5::default()),
        #[cfg(not(feature = "peers"))]
        "tantivy" | "tantivy_page" | "sqlite_fts5" => {
            anyhow::bail!("{name} needs `--features peers`")
        }
        _ => anyhow::bail!("unknown system `{name}`"),
    })
}
