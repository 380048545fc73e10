//! `sessiondex-bench`: `gen` writes a deterministic corpus, `compare` runs every system on it.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use sessiondex_bench::compare::{compare, run_system, CompareOptions};
use sessiondex_bench::gen::{generate, parse_size, GenOptions};
use sessiondex_bench::probe;
use sessiondex_bench::relevance::{self, RelevanceOptions};

#[derive(Parser)]
#[command(
    name = "sessiondex-bench",
    about = "Corpus generator and side-by-side harness"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Write a deterministic corpus of pi, Claude Code and Codex sessions plus queries.json.
    Gen {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Total size of the session files (`200MB`, `2MiB`, bytes).
        #[arg(long, default_value = "200MB")]
        size: String,
        /// Seed: the same seed and size give byte-identical output.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Smallest session file.
        #[arg(long, default_value = "8KB")]
        min_file: String,
        /// Largest session file (sizes are log-uniform in between).
        #[arg(long, default_value = "8MB")]
        max_file: String,
    },
    /// Run every system on a generated corpus; print a table (or JSON with --json).
    Compare {
        /// A corpus written by `gen`.
        #[arg(long)]
        corpus: PathBuf,
        /// Print the JSON report on stdout (the table goes to stderr).
        #[arg(long)]
        json: bool,
        /// Comma-separated systems (default: all this build has).
        #[arg(long, value_delimiter = ',')]
        systems: Vec<String>,
        /// Timed runs per query (ripgrep: at most 3).
        #[arg(long, default_value_t = 20)]
        reps: usize,
        /// Builds per system, each into a new directory: `buildSeconds` is their median and
        /// `buildRoundSeconds` lists each (on a shared host one build can be far off).
        #[arg(long, default_value_t = 1)]
        build_rounds: usize,
        /// Scratch directory for the indexes (default: <corpus>.work).
        #[arg(long)]
        work: Option<PathBuf>,
    },
    /// Score ranking on the labeled questions of benches/relevance: hit@1, hit@5, MRR per class.
    Relevance {
        /// Print the JSON report on stdout (the table goes to stderr).
        #[arg(long)]
        json: bool,
        /// Only the quick questions over the bundled data (examples/sessions, testdata); exit
        /// nonzero when a guaranteed question misses or hit@5 falls below the floor.
        #[arg(long)]
        quick: bool,
        /// The label directory (default: benches/relevance of this checkout).
        #[arg(long)]
        labels: Option<PathBuf>,
        /// The real fixtures (default: ../shared/fixtures/sessions next to this checkout).
        #[arg(long)]
        fixtures: Option<PathBuf>,
        /// Scratch directory (default: a new one under the system temp dir, removed after).
        #[arg(long)]
        work: Option<PathBuf>,
    },
    /// sessiondex alone over an index kept in --work: each query's total, page hash, p50,
    /// fastest and slowest call (binary against binary: the same hashes are the same pages).
    Probe {
        /// A corpus written by `gen`.
        #[arg(long)]
        corpus: PathBuf,
        /// The index directory (synced from the corpus when empty, reused after).
        #[arg(long)]
        work: PathBuf,
        /// Only the queries whose id contains this.
        #[arg(long)]
        filter: Option<String>,
        /// Timed calls per query.
        #[arg(long, default_value_t = 300)]
        reps: usize,
        /// Every session hot (else the default tiers).
        #[arg(long)]
        all_hot: bool,
    },
    /// The source reader alone on one thread (secrets redacted, as a sync reads): each
    /// pass's time over every session of the corpus.
    Read {
        /// A corpus written by `gen`.
        #[arg(long)]
        corpus: PathBuf,
        /// Passes over the corpus.
        #[arg(long, default_value_t = 3)]
        reps: usize,
    },
    /// Run one system in this process and print its result as JSON (used by `compare`).
    #[command(name = "__system", hide = true)]
    System {
        name: String,
        #[arg(long)]
        corpus: PathBuf,
        #[arg(long)]
        work: PathBuf,
        #[arg(long, default_value_t = 20)]
        reps: usize,
        #[arg(long, default_value_t = 1)]
        build_rounds: usize,
    },
}

/// The allocator the `sessiondex` command line uses, for every system run here alike (each runs
/// in a child process of this binary).
#[global_allocator]
static GLOBAL: sessiondex_core::alloc::Mimalloc = sessiondex_core::alloc::Mimalloc;

fn main() -> anyhow::Result<()> {
    match Cli::parse().cmd {
        Cmd::Gen {
            out,
            size,
            seed,
            min_file,
            max_file,
        } => {
            let size = parse_size(&size)?;
            let t = std::time::Instant::now();
            let r = generate(&GenOptions {
                min_file: parse_size(&min_file)?,
                max_file: parse_size(&max_file)?,
                ..GenOptions::new(out.clone(), size, seed)
            })?;
            eprintln!(
                "wrote {} files, {} bytes, {} active records, {} lines ({:?}) to {} in {:.1} s",
                r.files,
                r.bytes,
                r.records,
                r.lines,
                r.per_format,
                out.display(),
                t.elapsed().as_secs_f64()
            );
        }
        Cmd::Compare {
            corpus,
            json,
            systems,
            reps,
            build_rounds,
            work,
        } => {
            let exe = std::env::current_exe().context("locating this binary")?;
            let work = work.unwrap_or_else(|| {
                let mut w = corpus.clone().into_os_string();
                w.push(".work");
                PathBuf::from(w)
            });
            let c = compare(
                &exe,
                &CompareOptions {
                    corpus,
                    work,
                    systems,
                    reps,
                    build_rounds,
                },
            )?;
            if json {
                eprintln!("{}", c.text);
                println!("{}", serde_json::to_string_pretty(&c.json)?);
            } else {
                println!("{}", c.text);
            }
        }
        Cmd::Relevance {
            json,
            quick,
            labels,
            fixtures,
            work,
        } => {
            let bench = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
            let repo = bench.parent().map_or_else(|| bench.clone(), PathBuf::from);
            let fixtures = fixtures.unwrap_or_else(|| repo.join("../shared/fixtures/sessions"));
            let (work, scratch) = match work {
                Some(w) => (w, false),
                None => (
                    std::env::temp_dir()
                        .join(format!("sessiondex-relevance-{}", std::process::id())),
                    true,
                ),
            };
            let r = relevance::run(&RelevanceOptions {
                labels: labels.unwrap_or_else(|| bench.join("relevance")),
                repo,
                fixtures,
                work: work.clone(),
                quick,
            });
            if scratch {
                let _ = std::fs::remove_dir_all(&work);
            }
            let r = r?;
            if json {
                eprintln!("{}", r.text());
                println!("{}", serde_json::to_string_pretty(&r.json())?);
            } else {
                println!("{}", r.text());
            }
            if quick {
                let failures = r.quick_failures();
                if !failures.is_empty() {
                    for f in &failures {
                        eprintln!("relevance --quick: {f}");
                    }
                    std::process::exit(1);
                }
            }
        }
        Cmd::Probe {
            corpus,
            work,
            filter,
            reps,
            all_hot,
        } => {
            let lines = probe::probe(&probe::ProbeOptions {
                corpus,
                work,
                filter,
                reps,
                all_hot,
            })?;
            print!("{}", probe::render(&lines));
        }
        Cmd::Read { corpus, reps } => {
            for p in probe::read_alone(&corpus, reps)? {
                println!(
                    "read {} bytes, {} records in {:.3} s ({:.1} MB/s)",
                    p.bytes,
                    p.records,
                    p.seconds,
                    p.bytes as f64 / 1e6 / p.seconds
                );
            }
        }
        Cmd::System {
            name,
            corpus,
            work,
            reps,
            build_rounds,
        } => {
            let r = run_system(&name, &corpus, &work, reps, build_rounds)?;
            println!("{}", serde_json::to_string(&r)?);
        }
    }
    Ok(())
}
