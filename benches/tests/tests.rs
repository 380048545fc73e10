//! The generator is deterministic, reads back completely, and its expected counts are what
//! sessiondex answers.

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
