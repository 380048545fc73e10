//! The generator is deterministic, reads back completely, and its expected counts are what
//! sessiondex answers; `compare --json` reports in the shape the issue names.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use sessiondex_bench::gen::{generate, GenOptions};
use sessiondex_bench::queries::QueryFile;
use sessiondex_bench::systems::{self, System};

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn same_seed_same_bytes_and_counts_match_sessiondex() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let size = 2 << 20;
    let ra = generate(&GenOptions::new(a.clone(), size, 42)).unwrap();
    generate(&GenOptions::new(b.clone(), size, 42)).unwrap();
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.len() as u64, ra.files + 1, "sessions plus queries.json");
    assert!(fa == fb, "same seed, different output");
    assert!(ra.bytes >= size);
    // Every format is there, in its own layout.
    for dir in [
        ".pi/agent/sessions/",
        ".claude/projects/",
        ".codex/sessions/",
    ] {
        assert!(fa.iter().any(|(p, _)| p.starts_with(dir)), "{dir}");
    }
    // About 10% of texts carry non-ASCII.
    assert!(fa.iter().any(|(_, bytes)| !bytes.is_ascii()));

    // sessiondex (every session hot) finds exactly the expected hits.
    let queries = QueryFile::load(&a.join("queries.json")).unwrap();
    let work = tmp.path().join("index");
    let mut sdx = systems::sessiondex::Sessiondex::new(true);
    sdx.build(&a, &work).unwrap();
    let mut checked = 0;
    for q in queries.iter() {
        let hits = sdx.query(q).unwrap().unwrap();
        if let Some(expected) = q.expected_hits {
            assert_eq!(hits, expected, "{}", q.id);
            checked += 1;
        }
    }
    assert!(checked > 30, "{checked}");
}

#[test]
fn another_seed_another_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let size = 64 << 10;
    generate(&GenOptions::new(tmp.path().join("a"), size, 1)).unwrap();
    generate(&GenOptions::new(tmp.path().join("b"), size, 2)).unwrap();
    assert!(files(&tmp.path().join("a")) != files(&tmp.path().join("b")));
}

/// `compare --json --reps 1` over `corpus` with `args`, run through the binary as a user runs
/// it (each system in a child process of its own): the JSON report and the text on stderr.
fn compare_json(
    corpus: &std::path::Path,
    work: &std::path::Path,
    args: &[&str],
) -> (serde_json::Value, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sessiondex-bench"))
        .args(["compare", "--json", "--reps", "1"])
        .args(args)
        .arg("--corpus")
        .arg(corpus)
        .arg("--work")
        .arg(work)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{text}");
    (serde_json::from_slice(&out.stdout).unwrap(), text)
}

/// `compare --json` prints the report the issue names, which scripts read: `corpusBytes` and
/// one key per system (`null` when it did not run), each run system with its build figures and
/// every query class's latencies and hits; the default tiers nest under `sessiondex`. Run
/// through the binary, as a user runs it (each system in a child process of its own).
#[test]
fn compare_json_has_the_documented_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    let report = generate(&GenOptions::new(corpus.clone(), 256 << 10, 3)).unwrap();
    let (json, text) = compare_json(
        &corpus,
        &tmp.path().join("work"),
        &["--systems", "sessiondex,sessiondex_default_tiers"],
    );
    assert_eq!(json["corpusBytes"], serde_json::json!(report.bytes));
    let systems = json["systems"].as_object().unwrap();
    let mut keys: Vec<&str> = systems.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "ripgrep",
            "sessiondex",
            "sqlite_fts5",
            "tantivy",
            "tantivy_page"
        ]
    );
    for peer in ["ripgrep", "sqlite_fts5", "tantivy", "tantivy_page"] {
        assert!(systems[peer].is_null(), "{peer} did not run");
    }
    let queries = QueryFile::load(&corpus.join("queries.json")).unwrap();
    for (name, sys) in [
        ("sessiondex", &systems["sessiondex"]),
        ("defaultTiers", &systems["sessiondex"]["defaultTiers"]),
    ] {
        for key in ["buildSeconds", "buildMBps", "noopSyncSeconds"] {
            assert!(sys[key].as_f64().is_some_and(|x| x >= 0.0), "{name} {key}");
        }
        for key in ["indexBytes", "peakRssBytes"] {
            assert!(sys[key].as_u64().is_some_and(|x| x > 0), "{name} {key}");
        }
        let classes = sys["queries"].as_object().unwrap();
        for q in queries.iter() {
            let c = &classes[&q.class];
            for key in ["p50Us", "p95Us", "p99Us"] {
                assert!(
                    c[key].as_f64().is_some_and(|x| x >= 0.0),
                    "{name} {} {key}",
                    q.class
                );
            }
            assert!(
                c["p50Us"].as_f64() <= c["p99Us"].as_f64(),
                "{name} {}",
                q.class
            );
            assert!(c["hits"].is_u64(), "{name} {}", q.class);
        }
        assert!(classes.contains_key("expand"), "{name}");
    }
    // All hot, every planted count is found: the class sums are the expected sums.
    let hot = &systems["sessiondex"]["queries"];
    let mut want: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
    let mut planted_only: std::collections::BTreeMap<&str, bool> =
        std::collections::BTreeMap::new();
    for q in queries.iter() {
        *want.entry(q.class.as_str()).or_default() += q.expected_hits.unwrap_or(0);
        *planted_only.entry(q.class.as_str()).or_insert(true) &= q.expected_hits.is_some();
    }
    let mut checked = 0;
    for (class, sum) in want {
        if planted_only[class] {
            assert_eq!(hot[class]["hits"], serde_json::json!(sum), "{class}");
            checked += 1;
        }
    }
    // Rare term, prefix and leading-wildcard regex, fuzzy, structural, lexical + structural
    // and the negative controls hold planted queries only.
    assert!(checked >= 7, "{checked} classes checked");
    // The table and the explanations of differing counts go to stderr.
    assert!(
        text.contains("sdx(hot)") && text.contains("sdx(tiers)"),
        "{text}"
    );
    assert!(text.contains("Why counts differ:"), "{text}");
}

/// `--build-rounds N` builds each system N times, each into a new directory: `buildSeconds` is
/// the median of the rounds, listed in `buildRoundSeconds`, and the queries run over the last
/// build (the same hits as one round). One round reports no list. The work directory is
/// removed after.
#[test]
fn build_rounds_report_their_median() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    generate(&GenOptions::new(corpus.clone(), 128 << 10, 5)).unwrap();
    let run = |rounds: &str| {
        let work = tmp.path().join(format!("work-{rounds}"));
        let (json, _) = compare_json(
            &corpus,
            &work,
            &[
                "--build-rounds",
                rounds,
                "--systems",
                "sessiondex_default_tiers",
            ],
        );
        assert!(!work.join("sessiondex_default_tiers").exists(), "{rounds}");
        json["systems"]["sessiondex"]["defaultTiers"].clone()
    };
    let three = run("3");
    let rounds: Vec<f64> = three["buildRoundSeconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(rounds.len(), 3);
    let mut sorted = rounds.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(
        three["buildSeconds"].as_f64(),
        Some(sorted[1]),
        "{rounds:?}"
    );
    let one = run("1");
    assert!(one.get("buildRoundSeconds").is_none());
    let hits = |s: &serde_json::Value| {
        s["queries"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(c, q)| (c.clone(), q["hits"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(hits(&three), hits(&one));
}
