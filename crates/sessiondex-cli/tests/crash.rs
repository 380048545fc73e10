//! Crash safety: `sessiondex index` SIGKILLed at random points of a sync. After every kill
//! the index opens and a query answers exactly as a clean build does or says its coverage is
//! incomplete; one more complete sync converges to the clean build, with no temp files left.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;
use sessiondex::source::Branches;
use sessiondex::{Config, Memory, QueryContext, RecallRequest};

/// Kills per run (the issue asks for at least 50).
const KILLS: usize = 50;
/// Copies of each example session (4 examples): the corpus size.
const COPIES: usize = 64;
/// Sessions moved out of (and back into) the corpus between the two states.
const TOGGLED: usize = 26;

const QUERIES: [&str; 4] = [
    r#"{"query": "backoff", "scope": "global"}"#,
    r#"{"query": "migration", "scope": "global", "pageSize": 50}"#,
    r#"{"query": "webapp7", "scope": "global"}"#,
    r#"{"query": "retry test", "scope": "global", "queryMatch": "all"}"#,
];

/// splitmix64: a deterministic PRNG.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions")
}

/// The last 12 hex digits of each example's session id.
const ID_TAILS: [&str; 4] = [
    "2e1f0a9b8c7d",
    "0c1d2e3f4a5b",
    "3d4e5f6a7b8c",
    "4a2b3c4d5e6f",
];

/// Writes `COPIES` altered copies of every example session under `root`: distinct session
/// ids (in the name and the content) and distinct text; fixed, distinct mtimes so that tiers
/// are deterministic.
fn build_corpus(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let sessions = sessiondex::source::discover(&examples());
    let mut n = 0u64;
    for k in 0..COPIES {
        for src in &sessions {
            let rel = src.strip_prefix(examples()).unwrap().to_string_lossy();
            let tail = format!("{:012x}", 0xa000_0000_0000_u64 + k as u64);
            let mut text = fs::read_to_string(src).unwrap();
            let mut name = rel.into_owned();
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

/// Moves the toggled sessions out of the corpus (`out = true`) or back (renames keep mtimes).
fn toggle(files: &[PathBuf], src: &Path, stash: &Path, out: bool) {
    for f in files.iter().step_by(files.len() / TOGGLED).take(TOGGLED) {
        let parked = stash.join(f.strip_prefix(src).unwrap());
        let (from, to) = if out { (f, &parked) } else { (&parked, f) };
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::rename(from, to).unwrap();
    }
}

fn memory(src: &Path, index: &Path, config: Config) -> Memory {
    Memory::open(
        config,
        Some(vec![src.to_path_buf()]),
        Some(index.to_path_buf()),
    )
    .unwrap()
}

/// What a clean build answers: every query's page and the sessions list, as JSON.
struct Answers {
    pages: Vec<Value>,
    sessions: Value,
}

fn ctx() -> QueryContext {
    QueryContext {
        cwd: None,
        session: None,
    }
}

fn answers(m: &Memory) -> Answers {
    let pages = QUERIES
        .iter()
        .map(|q| {
            let req = RecallRequest::from_json(&serde_json::from_str(q).unwrap()).unwrap();
            serde_json::to_value(m.recall_in(&req, &ctx()).unwrap()).unwrap()
        })
        .collect();
    let sessions = serde_json::to_value(m.sessions(Branches::Active).unwrap()).unwrap();
    Answers { pages, sessions }
}

/// The state a kill left, as a query sees it without repairing it: a sync that may index
/// nothing (zero budgets) reports what is stale or missing, then each query runs.
fn check_after_kill(src: &Path, index: &Path, clean: &Answers) -> (usize, usize) {
    let config = Config {
        max_sync_sessions: 0,
        max_sync_source_bytes: 0,
        ..Config::default()
    };
    let m = memory(src, index, config);
    let (mut exact, mut incomplete) = (0, 0);
    // What `recall_in` does, with one sync for all the queries.
    let synced = m.sync(Branches::Active, &mut |_, _| {}).unwrap().coverage;
    for (q, want) in QUERIES.iter().zip(&clean.pages) {
        let req = RecallRequest::from_json(&serde_json::from_str(q).unwrap()).unwrap();
        let page = m.recall_indexed(&req, &ctx(), &synced).unwrap();
        let got = serde_json::to_value(&page).unwrap();
        if &got == want {
            exact += 1;
        } else {
            assert!(
                !page.coverage.complete,
                "a complete answer after a kill differs: {q}: {got}"
            );
            assert!(
                page.coverage.stale_sessions > 0
                    || page.coverage.indexed_sessions < page.coverage.eligible_sessions,
                "incomplete without a stale or missing session: {:?}",
                page.coverage
            );
            // Every hit is a session of the corpus.
            for h in got["hits"].as_array().unwrap() {
                let file = h["file"].as_str().unwrap();
                assert!(Path::new(file).starts_with(src), "{file}");
            }
            incomplete += 1;
        }
    }
    let list = m.sessions(Branches::Active).unwrap();
    if list.coverage.complete {
        assert_eq!(serde_json::to_value(&list).unwrap(), clean.sessions);
    }
    (exact, incomplete)
}

fn tmp_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(".tmp-")
            {
                out.push(p);
            }
        }
    }
    out
}

fn index_cmd(src: &Path, index: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sessiondex"));
    c.arg("index")
        .arg("--source")
        .arg(src)
        .arg("--index-dir")
        .arg(index)
        .arg("--json")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

#[test]
fn sigkill_at_random_points_never_yields_a_wrong_answer_and_the_next_sync_converges() {
    let started = Instant::now();
    let base =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("crash-{}", std::process::id()));
    let _ = fs::remove_dir_all(&base);
    let src = base.join("sessions");
    let stash = base.join("stash");
    let files = build_corpus(&src);

    // Clean builds of both corpus states: all sessions (state 0), the toggled ones out (1).
    let clean0 = answers(&memory(&src, &base.join("clean0"), Config::default()));
    toggle(&files, &src, &stash, true);
    let clean1 = answers(&memory(&src, &base.join("clean1"), Config::default()));
    toggle(&files, &src, &stash, false);
    let mut state = 0;

    // How long a full sync (no catalog yet) and an update (the toggled sessions) take here.
    let timing = base.join("timing");
    let timed = || {
        let t = Instant::now();
        assert!(index_cmd(&src, &timing).status().unwrap().success());
        t.elapsed()
    };
    let full = timed();
    toggle(&files, &src, &stash, true);
    let update = timed();
    toggle(&files, &src, &stash, false);
    let update = update.max(timed());
    eprintln!(
        "corpus: {} files; a full sync: {full:?}, an update: {update:?}",
        files.len()
    );

    let index = base.join("index");
    let mut rng = Rng(0x5e55_10d3_c0ff_ee00);
    let (mut finished, mut exact, mut incomplete) = (0, 0, 0);
    let (mut full, mut update) = (full, update);
    let mut built = false;
    let (mut round, mut runs) = (0, 0);
    while round < KILLS {
        // Spread the kill over the sync this run will do: a full build when there is no
        // complete build yet, else an update of the toggled sessions. Every sixth run is let
        // finish (not counted as a kill) so that both kinds of sync keep happening whatever
        // the load, and its duration becomes the new span of its kind.
        let let_finish = runs % 6 == 5;
        runs += 1;
        let span = if built { update } else { full };
        let delay = Duration::from_micros(rng.below(span.as_micros() as u64 * 11 / 10 + 1));
        let t = Instant::now();
        let mut child = index_cmd(&src, &index).spawn().unwrap();
        let status = if let_finish {
            let status = child.wait().unwrap();
            *(if built { &mut update } else { &mut full }) = t.elapsed();
            status
        } else {
            std::thread::sleep(delay);
            child.kill().unwrap(); // SIGKILL
            round += 1;
            child.wait().unwrap()
        };
        let clean = if state == 0 { &clean0 } else { &clean1 };
        let (e, i) = check_after_kill(&src, &index, clean);
        exact += e;
        incomplete += i;
        if status.success() {
            // The sync finished: give the next one work, alternately a corpus change (an
            // update) and an empty index dir (a full build).
            finished += 1;
            built = true;
            if finished % 2 == 1 {
                state = 1 - state;
                toggle(&files, &src, &stash, state == 1);
            } else {
                fs::remove_dir_all(&index).unwrap();
                built = false;
            }
        }
    }
    // One more complete sync converges to the clean build.
    assert!(index_cmd(&src, &index).status().unwrap().success());
    assert_eq!(tmp_files(&index), Vec::<PathBuf>::new());
    let clean = if state == 0 { &clean0 } else { &clean1 };
    let got = answers(&memory(&src, &index, Config::default()));
    assert_eq!(got.pages, clean.pages);
    assert_eq!(got.sessions, clean.sessions);
    eprintln!(
        "{KILLS} kills in {runs} runs ({finished} syncs finished), answers after a kill: {exact} \
         exact, {incomplete} incomplete; {:?} in all",
        started.elapsed()
    );
    fs::remove_dir_all(&base).unwrap();
}
