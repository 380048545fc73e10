//! `compare`: every system on the same corpus and queries, each in a child process of its own
//! (so that its peak RSS is its own), one table, one JSON report.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::gen::corpus_bytes;
use crate::queries::{QueryFile, CLASSES};
use crate::systems;

/// Latency and hits of one query class.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassStats {
    /// Median latency, microseconds.
    pub p50_us: f64,
    /// 95th percentile.
    pub p95_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Hits summed over the class's queries.
    pub hits: u64,
}

/// What one system measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemResult {
    /// Wall time of the build (reading sources included).
    pub build_seconds: f64,
    /// Corpus MB (2^20 bytes) per second of build.
    #[serde(rename = "buildMBps")]
    pub build_mbps: f64,
    /// Index bytes on disk.
    pub index_bytes: u64,
    /// Peak resident set of the process (`VmHWM`).
    pub peak_rss_bytes: u64,
    /// Per class.
    pub queries: BTreeMap<String, ClassStats>,
    /// Hits per query id (for the comparison; left out of the JSON report).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub query_hits: BTreeMap<String, u64>,
    /// System-specific figures.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, Value>,
}

/// Peak resident set size of this process, from `VmHWM` in `/proc/self/status`.
#[must_use]
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// The `p` quantile (0..=1) of sorted samples, nearest rank.
#[must_use]
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn stats(mut samples: Vec<f64>, hits: u64) -> ClassStats {
    samples.sort_by(f64::total_cmp);
    let r = |x: f64| (x * 10.0).round() / 10.0;
    ClassStats {
        p50_us: r(percentile(&samples, 0.50)),
        p95_us: r(percentile(&samples, 0.95)),
        p99_us: r(percentile(&samples, 0.99)),
        hits,
    }
}

/// Runs one system in this process: `rounds` builds, each by a new instance into a directory
/// of its own under `work` (`work` itself for one), then every query `reps` times after one
/// warm-up run over the last. The build time reported is the median of the rounds.
///
/// # Errors
///
/// When the system fails to build or to answer.
pub fn run_system(
    name: &str,
    corpus: &Path,
    work: &Path,
    reps: usize,
    rounds: usize,
) -> anyhow::Result<SystemResult> {
    let queries = QueryFile::load(&corpus.join("queries.json"))?;
    let bytes = corpus_bytes(corpus);
    let reps = if name == "ripgrep" {
        reps.clamp(1, 3)
    } else {
        reps.max(1)
    };
    let rounds = rounds.max(1);
    let mut samples = Vec::with_capacity(rounds);
    let mut built = None;
    for round in 0..rounds {
        let dir = if rounds == 1 {
            work.to_path_buf()
        } else {
            // Kept until `compare` removes `work`: see the note there on deleted inodes.
            work.join(format!("round-{round}"))
        };
        std::fs::create_dir_all(&dir)?;
        // The previous round's instance is dropped first: one index held at a time.
        drop(built.take());
        let mut sys = systems::make(name)?;
        let t = Instant::now();
        sys.build(corpus, &dir)?;
        samples.push(t.elapsed().as_secs_f64());
        built = Some((sys, dir));
    }
    let (mut sys, dir) = built.context("no build ran")?;
    let round_seconds: Vec<f64> = samples
        .iter()
        .map(|s| (s * 1000.0).round() / 1000.0)
        .collect();
    samples.sort_by(f64::total_cmp);
    // A system without an index (ripgrep) only checked that it can run: no build to report.
    let build_seconds = if sys.builds_index() {
        percentile(&samples, 0.5)
    } else {
        0.0
    };
    sys.after_build()?;
    let work = dir.as_path();
    let index_bytes = sys.index_bytes(work);
    let mut per_class: BTreeMap<String, (Vec<f64>, u64)> = BTreeMap::new();
    let mut query_hits = BTreeMap::new();
    for q in queries.iter() {
        let Some(hits) = sys.query(q)? else { continue };
        query_hits.insert(q.id.clone(), hits);
        let entry = per_class.entry(q.class.clone()).or_default();
        entry.1 += hits;
        for _ in 0..reps {
            let t = Instant::now();
            sys.query(q)?;
            entry.0.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    let mut classes: BTreeMap<String, ClassStats> = per_class
        .into_iter()
        .map(|(c, (s, h))| (c, stats(s, h)))
        .collect();
    for (c, s, h) in sys.extra_classes(reps)? {
        classes.insert(c, stats(s, h));
    }
    let mb = bytes as f64 / f64::from(1 << 20);
    Ok(SystemResult {
        build_seconds: (build_seconds * 1000.0).round() / 1000.0,
        build_mbps: if build_seconds > 0.0 {
            (mb / build_seconds * 10.0).round() / 10.0
        } else {
            0.0
        },
        index_bytes,
        peak_rss_bytes: peak_rss_bytes(),
        queries: classes,
        query_hits,
        extra: {
            let mut extra = sys.extra();
            if rounds > 1 && build_seconds > 0.0 {
                extra.insert("buildRoundSeconds".into(), json!(round_seconds));
            }
            extra
        },
    })
}

/// Options of [`compare`].
#[derive(Debug, Clone)]
pub struct CompareOptions {
    /// The generated corpus (with `queries.json`).
    pub corpus: PathBuf,
    /// Scratch directory for the indexes (one sub-directory per system, removed after).
    pub work: PathBuf,
    /// Systems to run; empty: every available one.
    pub systems: Vec<String>,
    /// Timed runs per query.
    pub reps: usize,
    /// Builds per system; the median is reported (`buildRoundSeconds` lists each).
    pub build_rounds: usize,
}

/// The whole comparison: `{"corpusBytes", "systems": {...}}` plus the text report.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The JSON report.
    pub json: Value,
    /// The table, the hit comparison and its explanations.
    pub text: String,
}

/// Runs every system in a child process (`exe __system NAME ...`) and gathers the report.
///
/// # Errors
///
/// When a child fails or prints no result.
pub fn compare(exe: &Path, opts: &CompareOptions) -> anyhow::Result<Comparison> {
    let queries = QueryFile::load(&opts.corpus.join("queries.json"))?;
    let names: Vec<String> = if opts.systems.is_empty() {
        systems::available()
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    } else {
        opts.systems.clone()
    };
    let mut results: BTreeMap<String, SystemResult> = BTreeMap::new();
    // Every system's work directory is cleared before the first runs and removed after the
    // last, not between two: ext4 without a journal (this machine's disk) skips inodes freed
    // in the last minute or more when it creates a file, so a build run right after another
    // system's thousands of files were deleted spent two thirds of its file creation
    // scanning past them (docs/performance-history.md, Ninth run).
    for name in &names {
        let work = opts.work.join(name);
        if work.exists() {
            std::fs::remove_dir_all(&work)
                .with_context(|| format!("clearing {}", work.display()))?;
        }
    }
    for name in &names {
        let work = opts.work.join(name);
        std::fs::create_dir_all(&work)?;
        eprintln!("compare: running {name} ...");
        let out = Command::new(exe)
            .arg("__system")
            .arg(name)
            .arg("--corpus")
            .arg(&opts.corpus)
            .arg("--work")
            .arg(&work)
            .arg("--reps")
            .arg(opts.reps.to_string())
            .arg("--build-rounds")
            .arg(opts.build_rounds.to_string())
            .stderr(Stdio::inherit())
            .output()
            .with_context(|| format!("running {name}"))?;
        if !out.status.success() {
            bail!("{name} failed ({})", out.status);
        }
        let r: SystemResult = serde_json::from_slice(&out.stdout)
            .with_context(|| format!("{name}: reading its result"))?;
        results.insert(name.clone(), r);
    }
    for name in &names {
        let _ = std::fs::remove_dir_all(opts.work.join(name));
    }
    let bytes = corpus_bytes(&opts.corpus);
    let strip = |r: &SystemResult| {
        let mut v = serde_json::to_value(SystemResult {
            query_hits: BTreeMap::new(),
            ..r.clone()
        })
        .unwrap_or(Value::Null);
        if let Some(o) = v.as_object_mut() {
            o.remove("queryHits");
        }
        v
    };
    let mut systems_json = serde_json::Map::new();
    for key in [
        "sessiondex",
        "tantivy",
        "tantivy_page",
        "sqlite_fts5",
        "ripgrep",
    ] {
        let mut v = results.get(key).map_or(Value::Null, strip);
        if key == "sessiondex" {
            if let Some(d) = results.get("sessiondex_default_tiers") {
                if v.is_null() {
                    v = json!({});
                }
                if let Some(o) = v.as_object_mut() {
                    o.insert("defaultTiers".into(), strip(d));
                }
            }
        }
        systems_json.insert(key.into(), v);
    }
    let json = json!({"corpusBytes": bytes, "systems": systems_json});
    let text = render(&queries, bytes, &names, &results);
    Ok(Comparison { json, text })
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / f64::from(1 << 20))
}

fn short(name: &str) -> &str {
    match name {
        "sessiondex" => "sdx(hot)",
        "sessiondex_default_tiers" => "sdx(tiers)",
        "tantivy_page" => "tantivy+page",
        "sqlite_fts5" => "fts5",
        "ripgrep" => "rg",
        other => other,
    }
}

fn render(
    queries: &QueryFile,
    bytes: u64,
    names: &[String],
    results: &BTreeMap<String, SystemResult>,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "corpus: {} in {} files, {} active records, {} lines",
        mib(bytes),
        queries.files,
        queries.records,
        queries.lines
    );
    let _ = writeln!(s);
    let _ = write!(s, "{:<24}", "");
    for n in names {
        let _ = write!(s, " {:>14}", short(n));
    }
    let _ = writeln!(s);
    let row = |s: &mut String, label: &str, f: &dyn Fn(&SystemResult) -> String| {
        let _ = write!(s, "{label:<24}");
        for n in names {
            let cell = results.get(n).map_or_else(|| "-".to_owned(), f);
            let _ = write!(s, " {cell:>14}");
        }
        let _ = writeln!(s);
    };
    row(&mut s, "build s", &|r| format!("{:.2}", r.build_seconds));
    row(&mut s, "build MB/s", &|r| {
        if r.build_seconds > 0.0 {
            format!("{:.1}", r.build_mbps)
        } else {
            "-".to_owned()
        }
    });
    row(&mut s, "index", &|r| mib(r.index_bytes));
    row(&mut s, "index / corpus", &|r| {
        format!("{:.1}%", 100.0 * r.index_bytes as f64 / bytes.max(1) as f64)
    });
    row(&mut s, "peak RSS", &|r| mib(r.peak_rss_bytes));
    row(&mut s, "no-op sync ms", &|r| {
        r.extra
            .get("noopSyncSeconds")
            .and_then(Value::as_f64)
            .map_or_else(|| "-".to_owned(), |x| format!("{:.1}", x * 1000.0))
    });
    let mut classes: Vec<String> = CLASSES.iter().map(|c| (*c).to_owned()).collect();
    classes.push("expand".into());
    let _ = writeln!(s, "\nlatency p50 / p99 (µs), hits per class");
    for c in &classes {
        row(&mut s, c, &|r| {
            r.queries.get(c).map_or_else(
                || "n/a".to_owned(),
                |x| format!("{:.0}/{:.0}", x.p50_us, x.p99_us),
            )
        });
    }
    let _ = writeln!(s, "\nhits per query (* differs from the expected count)");
    let _ = write!(s, "{:<40}{:>9}", "query", "expected");
    for n in names {
        let _ = write!(s, " {:>14}", short(n));
    }
    let _ = writeln!(s);
    for q in queries.iter() {
        let _ = write!(
            s,
            "{:<40}{:>9}",
            q.id,
            q.expected_hits
                .map_or_else(|| "-".to_owned(), |e| e.to_string())
        );
        for n in names {
            let cell = match results.get(n).and_then(|r| r.query_hits.get(&q.id)) {
                None => "n/a".to_owned(),
                Some(h) => {
                    let mark = if q.expected_hits.is_some_and(|e| e != *h) {
                        "*"
                    } else {
                        ""
                    };
                    format!("{h}{mark}")
                }
            };
            let _ = write!(s, " {cell:>14}");
        }
        let _ = writeln!(s);
    }
    s.push_str(EXPLANATIONS);
    s
}

/// Why equivalent queries give different counts.
pub const EXPLANATIONS: &str = "
Why counts differ:
- A hit is one record of the active branch (sessiondex, tantivy, FTS5) or one line of a raw
  file (rg). rg also sees abandoned branches, reasoning text, JSON keys, and Codex command
  output written twice (exec_command_end and function_call_output); it cannot apply typed
  filters or fuzzy matching (n/a).
- sdx(hot) stores 2,000 characters per entry in a hot shard (maxEntryChars) and posts every
  token: terms are found anywhere, but a phrase or regex only matches the stored part (the
  coverage says `max_entry_chars`), so `flaky timeout` deep in long tool outputs is missed;
  the peers match whole texts. Planted tokens sit at the start of texts, so their counts are
  exact everywhere.
- sdx counts a failed call once under an outcome filter without a query (the result record
  defers to its call); the peers count the call and its result.
- sdx totals stop at the engine's candidate budgets (10,000 ranked items): common words.
- sdx(tiers): cold sessions answer with one session candidate per session (follow it to
  hydrate), so totals mix entries of hot sessions and sessions of cold ones.
- fts5 has no regex: a prefix regex runs as a prefix query (a superset: zqpfx* also matches
  letters after the prefix, the negative control `zqpfx[a-z]+` shows it), a leading-wildcard
  regex as a LIKE '%tail%' scan; no fuzzy.
- tantivy+page is tantivy with the text stored and each of the ten hits read back with a
  snippet (at most 240 characters, its highlights), the work a sessiondex page does for its
  hits; its counts are tantivy's. Regex and fuzzy queries give its snippet generator no
  terms: their snippets are empty (each hit's text is still read and tokenized).
- tantivy's default tokenizer does no NFKC folding and drops tokens over 40 bytes; its regex
  and fuzzy queries match whole terms, sessiondex's regex matches anywhere in the text.
";
