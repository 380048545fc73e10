//! Concurrency: two `sessiondex index` processes and several querying threads on one index
//! dir. No error at all (the lock serializes syncs; readers see whole files), and no torn
//! read: every answer is either the empty index before the first catalog or exactly the
//! clean build's.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use sessiondex::source::Branches;
use sessiondex::{Config, IndexCoverage, Memory, QueryContext, RecallRequest, SessionsRequest};

const COPIES: usize = 25;
const ROUNDS: usize = 4;
const QUERIES: [&str; 3] = [
    r#"{"query": "backoff", "scope": "global"}"#,
    r#"{"query": "migration", "scope": "global", "pageSize": 50}"#,
    r#"{"query": "webapp7", "scope": "global"}"#,
];
const ID_TAILS: [&str; 4] = [
    "2e1f0a9b8c7d",
    "0c1d2e3f4a5b",
    "3d4e5f6a7b8c",
    "4a2b3c4d5e6f",
];

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions")
}

/// Altered copies of the example sessions (distinct ids and text, fixed distinct mtimes).
fn build_corpus(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let sessions = sessiondex::source::discover(&examples());
    let mut n = 0u64;
    for k in 0..COPIES {
        for src in &sessions {
            let mut name = src
                .strip_prefix(examples())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let tail = format!("{:012x}", 0xb000_0000_0000_u64 + k as u64);
            let mut text = fs::read_to_string(src).unwrap();
            for t in ID_TAILS {
                text = text.replace(t, &tail);
                name = name.replace(t, &tail);
            }
            text = text.replace("webapp", &format!("webapp{k}"));
            let dst = root.join(format!("c{k:03}")).join(name);
            fs::create_dir_all(dst.parent().unwrap()).unwrap();
            fs::write(&dst, text).unwrap();
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + n * 60);
            n += 1;
            let f = fs::OpenOptions::new().write(true).open(&dst).unwrap();
            f.set_times(fs::FileTimes::new().set_modified(t)).unwrap();
            files.push(dst);
        }
    }
    files
}

fn memory(src: &Path, index: &Path) -> Memory {
    Memory::open(
        Config::default(),
        Some(vec![src.to_path_buf()]),
        Some(index.to_path_buf()),
    )
    .unwrap()
}

fn request(q: &str) -> RecallRequest {
    RecallRequest::from_json(&serde_json::from_str(q).unwrap()).unwrap()
}

fn ctx() -> QueryContext {
    QueryContext {
        cwd: None,
        session: None,
    }
}

/// Clean answers: each query's page and the sessions page's rows.
struct Clean {
    pages: Vec<Value>,
    sessions: Value,
}

#[test]
fn two_syncing_processes_and_querying_threads_share_one_index_dir() {
    let started = Instant::now();
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("concurrency-{}", std::process::id()));
    let _ = fs::remove_dir_all(&base);
    let src = base.join("sessions");
    let files = Arc::new(build_corpus(&src));
    let clean_m = memory(&src, &base.join("clean"));
    let cov = clean_m
        .sync(Branches::Active, &mut |_, _| {})
        .unwrap()
        .coverage;
    let clean = Arc::new(Clean {
        pages: QUERIES
            .iter()
            .map(|q| serde_json::to_value(clean_m.recall_in(&request(q), &ctx()).unwrap()).unwrap())
            .collect(),
        sessions: serde_json::to_value(
            clean_m
                .sessions_indexed(&SessionsRequest::default(), Branches::Active, &cov)
                .unwrap()
                .sessions,
        )
        .unwrap(),
    });

    let answers = Arc::new(AtomicUsize::new(0));
    let whole = Arc::new(AtomicUsize::new(0));
    for round in 0..ROUNDS {
        let index = base.join(format!("index{round}"));
        let done = Arc::new(AtomicBool::new(false));
        // Two writers, each running `sessiondex index` three times in a row.
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let (src, index) = (src.clone(), index.clone());
                std::thread::spawn(move || {
                    for _ in 0..3 {
                        let out = Command::new(env!("CARGO_BIN_EXE_sessiondex"))
                            .args(["index", "--json", "--source"])
                            .arg(&src)
                            .arg("--index-dir")
                            .arg(&index)
                            .stdout(Stdio::null())
                            .stderr(Stdio::piped())
                            .output()
                            .unwrap();
                        assert!(
                            out.status.success(),
                            "{}",
                            String::from_utf8_lossy(&out.stderr)
                        );
                    }
                })
            })
            .collect();
        // A toucher: setting a file's mtime to its own value moves its ctime, so every sync
        // re-hashes it and rewrites the catalog, with the same answers.
        let toucher = {
            let (files, done) = (files.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::SeqCst) {
                    for f in files.iter().step_by(7) {
                        let mtime = fs::metadata(f).unwrap().modified().unwrap();
                        let h = fs::OpenOptions::new().write(true).open(f).unwrap();
                        h.set_times(fs::FileTimes::new().set_modified(mtime))
                            .unwrap();
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        // Readers without a sync: the empty index or the clean answers, nothing between.
        let mut threads: Vec<std::thread::JoinHandle<()>> = (0..2)
            .map(|t| {
                let (m, clean, done, answers) = (
                    memory(&src, &index),
                    clean.clone(),
                    done.clone(),
                    answers.clone(),
                );
                let whole = whole.clone();
                std::thread::spawn(move || {
                    let mut first = true;
                    while first || !done.load(Ordering::SeqCst) {
                        first = false;
                        for (q, want) in QUERIES.iter().zip(&clean.pages) {
                            let page = m
                                .recall_indexed(&request(q), &ctx(), &IndexCoverage::default())
                                .unwrap();
                            let got = serde_json::to_value(&page).unwrap();
                            assert!(
                                page.hits.is_empty() || got["hits"] == want["hits"],
                                "reader {t}: a torn answer to {q}: {got}"
                            );
                            answers.fetch_add(1, Ordering::SeqCst);
                            if !page.hits.is_empty() {
                                whole.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                        let list = m
                            .sessions_indexed(
                                &SessionsRequest::default(),
                                Branches::Active,
                                &IndexCoverage::default(),
                            )
                            .unwrap();
                        let got = serde_json::to_value(&list.sessions).unwrap();
                        assert!(
                            list.sessions.is_empty() || got == clean.sessions,
                            "reader {t}: a torn sessions list"
                        );
                    }
                })
            })
            .collect();
        // A reader that syncs in process too (a third writer): always the clean answer.
        {
            let (m, clean, done, answers) = (
                memory(&src, &index),
                clean.clone(),
                done.clone(),
                answers.clone(),
            );
            threads.push(std::thread::spawn(move || {
                let mut first = true;
                while first || !done.load(Ordering::SeqCst) {
                    first = false;
                    for (q, want) in QUERIES.iter().zip(&clean.pages) {
                        let page = m.recall_in(&request(q), &ctx()).unwrap();
                        assert_eq!(&serde_json::to_value(&page).unwrap(), want, "{q}");
                        answers.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }));
        }
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        toucher.join().unwrap();
        for t in threads {
            t.join().unwrap();
        }
    }
    eprintln!(
        "{ROUNDS} rounds, {} answers checked ({} with hits without a sync), {:?}",
        answers.load(Ordering::SeqCst),
        whole.load(Ordering::SeqCst),
        started.elapsed()
    );
    fs::remove_dir_all(&base).unwrap();
}
