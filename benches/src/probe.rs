//! `sessiondex-bench probe`: sessiondex alone, recall by recall, on an index kept between runs.
//!
//! `compare` builds every system anew and reports a class's percentiles; a change to recall is
//! judged better by running the same queries many times over one opened index, binary against
//! binary, and by checking that no answer moved. For every query of `queries.json` (or those
//! whose id holds `--filter`) the probe prints the page's total, a hash of the page's JSON (the
//! hits, their order, snippets, follow calls and coverage) and the p50, minimum and maximum of
//! `--reps` calls. Two binaries that print the same hashes gave the same pages.
//!
//! `sessiondex-bench read` ([`read_alone`]) times the source reader alone, the part of a build
//! every system here shares.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use sessiondex::engine_options;
use sessiondex::query::engine;
use sessiondex::query::index::Index;
use sessiondex::query::QueryContext;
use sessiondex::source::Branches;

use crate::compare::percentile;
use crate::queries::QueryFile;
use crate::systems::sessiondex::Sessiondex;

/// Options of [`probe`].
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// A corpus written by `gen` (with `queries.json`).
    pub corpus: PathBuf,
    /// The index directory: synced from the corpus when it holds no index yet, reused after.
    pub work: PathBuf,
    /// Only the queries whose id contains this.
    pub filter: Option<String>,
    /// Timed calls per query (after one untimed call).
    pub reps: usize,
    /// Every session hot, as `compare`'s `sessiondex` system; else the default tiers.
    pub all_hot: bool,
}

/// One query's line of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeLine {
    /// The query's id (`rare_term/zqrare03`).
    pub id: String,
    /// The page's `total`.
    pub total: u64,
    /// FNV-1a of the page's JSON.
    pub hash: u64,
    /// Median call, microseconds.
    pub p50_us: f64,
    /// Fastest call, microseconds.
    pub min_us: f64,
    /// Slowest call, microseconds (a class's p99 in `compare` is often one such call).
    pub max_us: f64,
}

/// FNV-1a, 64 bits, of the page's JSON: stable across processes and Rust versions (the std
/// hasher is not).
fn page_hash(json: &[u8]) -> u64 {
    json.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs the probe; the lines in query order.
///
/// # Errors
///
/// When the corpus or its queries cannot be read, the sync fails, or a recall fails.
pub fn probe(opts: &ProbeOptions) -> anyhow::Result<Vec<ProbeLine>> {
    let queries = QueryFile::load(&opts.corpus.join("queries.json"))?;
    let config = Sessiondex::config(opts.all_hot);
    std::fs::create_dir_all(&opts.work)
        .with_context(|| format!("creating {}", opts.work.display()))?;
    let (memory, report) = Sessiondex::sync_corpus(&config, &opts.corpus, &opts.work)?;
    drop(memory);
    // An index built or changed here is not the one a comparison of binaries assumed.
    if report.indexed > 0 || report.removed > 0 {
        let reasons: Vec<String> = report
            .coverage
            .reasons
            .iter()
            .map(|r| format!("{} {}", r.code, r.count))
            .collect();
        eprintln!(
            "probe: the sync indexed {} sessions, reused {}, removed {} ({})",
            report.indexed,
            report.reused,
            report.removed,
            reasons.join(", ")
        );
    }
    let index = Index::open(&opts.work, Branches::Active).map_err(|e| anyhow::anyhow!("{e}"))?;
    let eopts = engine_options(&config);
    let ctx = QueryContext::default();
    let mut lines = Vec::new();
    for q in queries.iter() {
        if opts.filter.as_deref().is_some_and(|f| !q.id.contains(f)) {
            continue;
        }
        let req = Sessiondex::request(q);
        let page = engine::recall(&index, &eopts, &ctx, &req)
            .map_err(|e| anyhow::anyhow!("{}: {e}", q.id))?;
        let json = serde_json::to_vec(&page)?;
        let mut samples = Vec::with_capacity(opts.reps);
        for _ in 0..opts.reps.max(1) {
            // The page is dropped inside the timed call, as in `compare`.
            let t = Instant::now();
            drop(
                engine::recall(&index, &eopts, &ctx, &req)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", q.id))?,
            );
            samples.push(t.elapsed().as_secs_f64() * 1e6);
        }
        samples.sort_by(f64::total_cmp);
        lines.push(ProbeLine {
            id: q.id.clone(),
            total: page.total,
            hash: page_hash(&json),
            p50_us: percentile(&samples, 0.50),
            min_us: samples.first().copied().unwrap_or(0.0),
            max_us: samples.last().copied().unwrap_or(0.0),
        });
    }
    Ok(lines)
}

/// The report: one line per query, `id total hash p50 min max`.
#[must_use]
pub fn render(lines: &[ProbeLine]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<44} {:>8} {:>16} {:>10} {:>10} {:>10}",
        "query", "total", "page hash", "p50 us", "min us", "max us"
    );
    for l in lines {
        let _ = writeln!(
            out,
            "{:<44} {:>8} {:>16x} {:>10.1} {:>10.1} {:>10.1}",
            l.id, l.total, l.hash, l.p50_us, l.min_us, l.max_us
        );
    }
    out
}

/// One pass of [`read_alone`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadPass {
    /// Wall time of the pass, seconds.
    pub seconds: f64,
    /// Source bytes read.
    pub bytes: u64,
    /// Records the sessions hold.
    pub records: u64,
}

/// The source reader alone, on this thread: every session file of `corpus` read as a sync
/// reads it (secrets redacted), `reps` times. It is the part of a build that `compare`'s
/// tantivy system does on a thread beside its writer, so its cost bounds what sessiondex's
/// build can gain against it.
///
/// # Errors
///
/// When a session file cannot be read.
pub fn read_alone(corpus: &std::path::Path, reps: usize) -> anyhow::Result<Vec<ReadPass>> {
    let files = sessiondex::source::discover(corpus);
    // Measured once, outside the timed passes.
    let bytes: u64 = files
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let opts = sessiondex::source::ReadOptions::default();
    let mut passes = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        let mut records = 0u64;
        for path in &files {
            let s = sessiondex::source::read_path(path, &opts)
                .with_context(|| format!("reading {}", path.display()))?;
            records += s.records.len() as u64;
        }
        passes.push(ReadPass {
            seconds: t.elapsed().as_secs_f64(),
            bytes,
            records,
        });
    }
    Ok(passes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_its_reference_values() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(page_hash(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(page_hash(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(page_hash(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
