//! Corruption: random byte ranges of every index file kind flipped, zeroed or truncated.
//! Every open detects it (a query answers as a clean build does, says its coverage is
//! incomplete, or fails with `index_corrupt`, never a wrong answer), the next sync rebuilds,
//! and the answers equal a clean build's.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sessiondex::query::ErrorCode;
use sessiondex::source::Branches;
use sessiondex::{Config, IndexCoverage, Memory, QueryContext, RecallRequest};
use sessiondex_core::format::FORMAT_VERSION;

use super::{corpus, memory, sync};

/// Damages per file kind and operation.
const TRIALS: usize = 4;

const QUERIES: [&str; 4] = [
    r#"{"query": "backoff", "scope": "global"}"#,
    r#"{"query": "migration", "scope": "global"}"#,
    r#"{"query": "retry test", "scope": "global", "queryMatch": "all"}"#,
    r#"{"query": "the", "scope": "global", "pageSize": 50}"#,
];

/// splitmix64: a deterministic PRNG.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn ctx() -> QueryContext {
    QueryContext {
        cwd: None,
        session: None,
    }
}

fn request(q: &str) -> RecallRequest {
    RecallRequest::from_json(&serde_json::from_str(q).unwrap()).unwrap()
}

/// Recall pages (after a sync) and the sessions list, as JSON.
fn answers(m: &Memory) -> (Vec<Value>, Value) {
    let pages = QUERIES
        .iter()
        .map(|q| serde_json::to_value(m.recall_in(&request(q), &ctx()).unwrap()).unwrap())
        .collect();
    let list = m.sessions(Branches::Active).unwrap();
    (pages, serde_json::to_value(list.sessions).unwrap())
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dst = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dst);
        } else {
            fs::copy(&p, &dst).unwrap();
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Hot,
    Cold,
    Catalog,
    SkipList,
}

fn files_of(index: &Path, kind: Kind) -> Vec<PathBuf> {
    let active = index.join(format!("v{FORMAT_VERSION}/active"));
    match kind {
        Kind::Catalog => vec![active.join("catalog")],
        Kind::SkipList => vec![index.join(format!("v{FORMAT_VERSION}/active-skipped.json"))],
        Kind::Hot | Kind::Cold => {
            let ext = if matches!(kind, Kind::Hot) {
                "hot"
            } else {
                "cold"
            };
            let mut v: Vec<PathBuf> = fs::read_dir(&active)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == ext))
                .collect();
            v.sort();
            v
        }
    }
}

/// Flips, zeroes or truncates a random range of `path`; returns what it did.
fn damage(path: &Path, op: usize, rng: &mut Rng) -> String {
    let mut bytes = fs::read(path).unwrap();
    let len = bytes.len();
    assert!(len > 0, "{}", path.display());
    let start = rng.below(len);
    let n = 1 + rng.below((len - start).min(64));
    match op {
        0 => {
            for b in &mut bytes[start..start + n] {
                *b ^= 1 << rng.below(8);
            }
        }
        1 => bytes[start..start + n].fill(0),
        _ => bytes.truncate(start),
    }
    fs::write(path, &bytes).unwrap();
    let what = ["flip", "zero", "truncate"][op.min(2)];
    format!("{what} {start}+{n} of {len} in {}", path.display())
}

#[test]
fn every_damaged_index_file_is_detected_and_the_next_sync_rebuilds_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    // Not a session: it lands in the skip list.
    fs::write(src.join("notes.jsonl"), "{\"not\":\"a session\"}\n").unwrap();
    let config = Config {
        hot_sessions: 2,
        ..Config::default()
    };
    let clean = answers(&memory(&tmp.path().join("clean"), &src, config.clone()));

    // The index every trial starts from.
    let m = memory(tmp.path(), &src, config.clone());
    let full: IndexCoverage = sync(&m).coverage;
    assert!(full.complete);
    let index = tmp.path().join("index");
    let snapshot = tmp.path().join("snapshot");
    copy_dir(&index, &snapshot);

    let mut rng = Rng(0xc0de_dead_beef_0001);
    let (mut detected, mut trials, mut rebuilt) = (0, 0, 0);
    for kind in [Kind::Hot, Kind::Cold, Kind::Catalog, Kind::SkipList] {
        for op in 0..3 {
            for _ in 0..TRIALS {
                fs::remove_dir_all(&index).unwrap();
                copy_dir(&snapshot, &index);
                let files = files_of(&index, kind);
                assert!(!files.is_empty(), "{kind:?}");
                let target = &files[rng.below(files.len())];
                let before = fs::read(target).unwrap();
                let what = damage(target, op, &mut rng);
                let changed = fs::read(target).unwrap() != before;

                // Before any sync: the damaged index as a query opens it.
                let m = memory(tmp.path(), &src, config.clone());
                for (q, want) in QUERIES.iter().zip(&clean.0) {
                    match m.recall_indexed(&request(q), &ctx(), &full) {
                        Ok(page) => {
                            let got = serde_json::to_value(&page).unwrap();
                            assert!(
                                !page.coverage.complete || &got == want,
                                "{what}: a wrong complete answer to {q}: {got}"
                            );
                        }
                        Err(e) => {
                            assert_eq!(e.code, ErrorCode::IndexCorrupt, "{what}: {e:?}");
                            detected += 1;
                        }
                    }
                }

                // The next sync rebuilds what it can see without reading index files (a
                // damaged catalog, a file of the wrong length); a damaged file of the right
                // length is rebuilt by the first recall that opens it (one no query opens stays). Either way the answers
                // are a clean build's.
                let damaged = fs::read(target).unwrap_or_default();
                let r = sync(&m);
                match kind {
                    Kind::SkipList => {
                        // A damaged skip list is an empty one: the non-session is read again
                        // and the list written anew.
                        let list = fs::read(target).unwrap();
                        assert!(serde_json::from_slice::<Value>(&list).is_ok(), "{what}");
                    }
                    Kind::Catalog if changed => {
                        assert!(r.indexed >= 1, "{what}: nothing rebuilt: {r:?}");
                    }
                    Kind::Hot | Kind::Cold if changed && op == 2 => {
                        assert!(r.indexed >= 1, "{what}: nothing rebuilt: {r:?}");
                    }
                    _ => {}
                }
                assert_eq!(answers(&m), clean, "{what}");
                if changed && fs::read(target).unwrap_or_default() != damaged {
                    rebuilt += 1;
                }
                trials += 1;
            }
        }
    }
    eprintln!(
        "{trials} damaged files, {rebuilt} rebuilt, {detected} queries refused as index_corrupt"
    );
    assert!(rebuilt > trials / 2);
    assert!(detected > 0);
}

/// Damages every file of `kind` in place (same inode, same length) and checks that the next
/// call of `m` answers `first` again and rewrites the files as they were.
fn damage_in_place_between_calls(
    m: &Memory,
    index: &Path,
    kind: Kind,
    q: &RecallRequest,
    first: &sessiondex::Page,
) {
    // The file times are coarse (a few ms): wait so the write is seen as one.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let files = files_of(index, kind);
    assert!(!files.is_empty());
    let sound: Vec<Vec<u8>> = files.iter().map(|p| fs::read(p).unwrap()).collect();
    for path in &files {
        let mut bytes = fs::read(path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0xff;
        fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
            .unwrap();
    }
    let again = m.recall_in(q, &ctx()).unwrap();
    assert_eq!(
        serde_json::to_value(&again).unwrap(),
        serde_json::to_value(first).unwrap(),
        "the damaged {kind:?} files were used or not repaired"
    );
    for (path, sound) in files.iter().zip(&sound) {
        assert_eq!(
            &fs::read(path).unwrap(),
            sound,
            "{} not rebuilt",
            path.display()
        );
    }
}

/// The same for cold digests, which a structural recall opens (and keeps, like hot shards).
#[test]
fn a_memory_kept_across_calls_sees_damaged_cold_digests() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    let config = Config {
        hot_sessions: 0,
        ..Config::default()
    };
    let m = memory(tmp.path(), &src, config);
    let q = request(r#"{"role": "user", "scope": "global"}"#);
    let first = m.recall_in(&q, &ctx()).unwrap();
    assert!(!first.hits.is_empty());
    assert!(first
        .hits
        .iter()
        .all(|h| !h.matched_structural_entries.is_empty()));
    let again = m.recall_in(&q, &ctx()).unwrap();
    assert_eq!(again, first);
    damage_in_place_between_calls(&m, &tmp.path().join("index"), Kind::Cold, &q, &first);
}

/// Appends a user message with `text` to the example Claude Code session (its uuid ending in
/// `uuid_tail`, two hex digits).
fn append_claude_user_line(files: &[PathBuf], text: &str, uuid_tail: &str) {
    let claude = files
        .iter()
        .find(|p| p.to_string_lossy().contains("claude-code"))
        .unwrap();
    let line = format!(
        r#"{{"parentUuid":"c0000001-0000-4000-8000-000000000008","isSidechain":false,"userType":"external","cwd":"/home/dev/webapp","sessionId":"3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d","version":"2.1.40","type":"user","message":{{"role":"user","content":"{text}"}},"uuid":"c0000001-0000-4000-8000-0000000000{uuid_tail}","timestamp":"2026-11-03T14:05:00.000Z"}}"#
    );
    let mut f = fs::OpenOptions::new().append(true).open(claude).unwrap();
    std::io::Write::write_all(&mut f, format!("{line}\n").as_bytes()).unwrap();
}

/// One `Memory` answers many calls from the index it opened first (hot shards opened and
/// checked once). What changes on disk between calls is still seen: a hot shard written in
/// place is checked again (and the damage repaired), a sync that changed the catalog makes
/// the next call open the new one.
#[test]
fn a_memory_kept_across_calls_sees_damage_and_new_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let m = memory(tmp.path(), &src, Config::default());
    let q = request(r#"{"query": "backoff", "scope": "global"}"#);
    let first = m.recall_in(&q, &ctx()).unwrap();
    assert!(!first.hits.is_empty());
    assert!(first.coverage.complete);

    damage_in_place_between_calls(&m, &tmp.path().join("index"), Kind::Hot, &q, &first);

    // A new entry appended to a source: the sync rewrites the catalog, the next call sees it.
    append_claude_user_line(&files, "zqkeptacrosscalls after the append", "ff");
    let q = request(r#"{"query": "zqkeptacrosscalls", "scope": "global"}"#);
    let page = m.recall_in(&q, &ctx()).unwrap();
    let ids: Vec<_> = page
        .hits
        .iter()
        .filter_map(|h| h.entry_id.clone())
        .collect();
    assert_eq!(ids, ["c0000001-0000-4000-8000-0000000000ff"]);
}

/// A cold digest does not hold its session's terms: the catalog's merged map does. A later
/// sync carries the unchanged cold sessions' terms from the last catalog and builds only the
/// changed one; with the catalog gone, every cold session is built again from its source.
/// Each time the answers equal a clean build's.
#[test]
fn cold_terms_are_carried_by_the_catalog_and_rebuilt_without_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let config = Config {
        hot_sessions: 0,
        ..Config::default()
    };
    let index = tmp.path().join("index");
    let m = memory(tmp.path(), &src, config.clone());
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused), (4, 0), "{r:?}");
    let digests = files_of(&index, Kind::Cold);
    assert_eq!(digests.len(), 4);
    for d in &digests {
        let bytes = fs::read(d).unwrap();
        assert!(
            !bytes.windows(11).any(|w| w == b"exponential"),
            "{}",
            d.display()
        );
    }
    let clean = |tag: &str| {
        let dir = tmp.path().join(tag);
        let fresh = Memory::open(config.clone(), Some(vec![src.clone()]), Some(dir)).unwrap();
        answers(&fresh)
    };
    let first = answers(&m);
    assert!(
        !first.0[0]["hits"].as_array().unwrap().is_empty(),
        "{first:?}"
    );
    assert_eq!(first, clean("clean-1"));

    // One session changes: the other three keep their terms from the last catalog.
    append_claude_user_line(&files, "zqcoldlater backoff once more", "fe");
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused), (1, 3), "{r:?}");
    let page = m
        .recall_in(
            &request(r#"{"query": "zqcoldlater", "scope": "global"}"#),
            &ctx(),
        )
        .unwrap();
    assert_eq!(page.hits.len(), 1);
    assert_eq!(answers(&m), clean("clean-2"));

    // No catalog: nothing can be carried, so every cold session is read again.
    fs::remove_file(&files_of(&index, Kind::Catalog)[0]).unwrap();
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused), (4, 0), "{r:?}");
    assert_eq!(answers(&m), clean("clean-3"));
}
