//! Limits (the fast cases; `scripts/limits.sh` runs the heavy ones): symlink loops, unreadable
//! files and directories, FIFOs, read-only source trees and a 20 MB single-line session. Every
//! sync ends, indexes what it can and names the rest with exact coverage reasons.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sessiondex::source::{self, Branches};
use sessiondex::{Config, IndexCoverage, Memory, QueryContext, RecallRequest, SyncReport};

use super::{corpus, memory, sync};

fn reasons(c: &IndexCoverage) -> Vec<(String, u64)> {
    c.reasons
        .iter()
        .map(|r| (r.code.clone(), r.count))
        .collect()
}

fn counts(r: &SyncReport) -> (u64, u64, u64, u64) {
    let c = &r.coverage;
    (r.indexed, r.failed, c.indexed_sessions, c.eligible_sessions)
}

fn recall_total(m: &Memory, query: &str) -> u64 {
    let req =
        RecallRequest::from_json(&serde_json::json!({"query": query, "scope": "global"})).unwrap();
    let ctx = QueryContext {
        cwd: None,
        session: None,
    };
    m.recall_in(&req, &ctx).unwrap().total
}

/// Whether this process can open a file with mode 000 (root can: then file modes prove
/// nothing, and the chmod cases are skipped with a notice).
#[cfg(unix)]
fn modes_enforced(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let probe = dir.join("probe");
    fs::write(&probe, "x").unwrap();
    fs::set_permissions(&probe, fs::Permissions::from_mode(0o000)).unwrap();
    let enforced = fs::File::open(&probe).is_err();
    fs::remove_file(&probe).unwrap();
    enforced
}

#[cfg(unix)]
fn mkfifo(path: &Path) -> bool {
    Command::new("mkfifo")
        .arg(path)
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(unix)]
#[test]
fn symlink_loops_end_and_links_below_a_source_are_not_followed() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let dir = files[0].parent().unwrap().to_path_buf();
    symlink("..", dir.join("up")).unwrap(); // dir/up/<dir>/up/... forever if followed
    symlink(&src, dir.join("root")).unwrap();
    symlink("self.jsonl", dir.join("self.jsonl")).unwrap();
    symlink("b.jsonl", dir.join("a.jsonl")).unwrap();
    symlink("a.jsonl", dir.join("b.jsonl")).unwrap();
    symlink("missing.jsonl", dir.join("dangling.jsonl")).unwrap();
    symlink(&files[1], dir.join("alias.jsonl")).unwrap(); // would index a session twice

    let found = source::discover_all(&src);
    assert_eq!(found.files, files);
    assert!(found.unreadable.is_empty());

    let m = memory(tmp.path(), &src, Config::default());
    let r = sync(&m);
    assert_eq!(counts(&r), (4, 0, 4, 4));
    assert!(r.coverage.complete, "{:?}", r.coverage);
    assert_eq!(m.sessions(Branches::Active).unwrap().sessions.len(), 4);

    // A source that is itself a link is followed (once).
    let link = tmp.path().join("link-to-sessions");
    symlink(&src, &link).unwrap();
    let m = Memory::open(
        Config::default(),
        Some(vec![link]),
        Some(tmp.path().join("index-link")),
    )
    .unwrap();
    let r = sync(&m);
    assert_eq!(counts(&r), (4, 0, 4, 4));
    assert!(r.coverage.complete);
}

#[cfg(unix)]
#[test]
fn unreadable_files_and_directories_are_named_and_the_rest_is_indexed() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    if !modes_enforced(tmp.path()) {
        eprintln!(
            "notice: file modes are not enforced for this user (root?): the chmod 000 case is \
             skipped; the FIFO and read-error cases below cover the same paths"
        );
        return;
    }
    let (src, files) = corpus(tmp.path());
    let locked_file = files[0].parent().unwrap().join("locked.jsonl");
    fs::copy(&files[0], &locked_file).unwrap();
    let locked_dir = src.join("locked-dir");
    fs::create_dir(&locked_dir).unwrap();
    fs::copy(&files[1], locked_dir.join("inside.jsonl")).unwrap();
    let mode = |p: &Path, m: u32| fs::set_permissions(p, fs::Permissions::from_mode(m)).unwrap();
    mode(&locked_file, 0o000);
    mode(&locked_dir, 0o000);

    let found = source::discover_all(&src);
    assert_eq!(found.unreadable, vec![locked_dir.clone()]);
    let m = memory(tmp.path(), &src, Config::default());
    for _ in 0..2 {
        // The second sync remembers the unreadable file (same stat) and reports it again.
        let r = sync(&m);
        assert_eq!(counts(&r), (if r.reused == 0 { 4 } else { 0 }, 2, 4, 5));
        assert_eq!(reasons(&r.coverage), [("source_unreadable".to_owned(), 2)]);
        assert!(!r.coverage.complete);
    }
    let page_cov = {
        let req = RecallRequest::from_json(&serde_json::json!({"query": "x", "scope": "global"}))
            .unwrap();
        let ctx = QueryContext {
            cwd: None,
            session: None,
        };
        m.recall_in(&req, &ctx).unwrap().coverage
    };
    assert!(!page_cov.complete);
    assert!(page_cov.reasons.iter().any(|r| r == "source_unreadable"));

    // Readable again: everything is indexed, the coverage is complete.
    mode(&locked_file, 0o644);
    mode(&locked_dir, 0o755);
    let r = sync(&m);
    assert_eq!(counts(&r), (2, 0, 6, 6));
    assert!(r.coverage.complete, "{:?}", r.coverage);
}

/// Paths that cannot be read even by root: a FIFO given as a source (not a directory, not a
/// regular file), a FIFO named like a session inside a source (never opened: opening it would
/// block), and a regular file whose reads fail (`/proc/self/mem` at offset 0 answers EIO).
#[cfg(target_os = "linux")]
#[test]
fn fifos_and_read_errors_are_unreadable_not_hangs() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    let fifo_source = tmp.path().join("pipe");
    if !mkfifo(&fifo_source) || !mkfifo(&src.join("pipe.jsonl")) {
        eprintln!("notice: mkfifo unavailable, FIFO cases skipped");
        return;
    }
    let found = source::discover_all(&fifo_source);
    assert_eq!(found.files, Vec::<PathBuf>::new());
    assert_eq!(found.unreadable, vec![fifo_source.clone()]);
    assert_eq!(source::discover_all(&src).files.len(), 4);

    let mut sources = vec![src.clone(), fifo_source];
    let mem = Path::new("/proc/self/mem");
    let with_mem = mem.is_file();
    if with_mem {
        sources.push(mem.to_path_buf());
    }
    let m = Memory::open(
        Config::default(),
        Some(sources),
        Some(tmp.path().join("index")),
    )
    .unwrap();
    let r = sync(&m);
    let c = &r.coverage;
    let unreadable = 1 + u64::from(with_mem);
    assert_eq!(
        (r.indexed, r.failed, c.indexed_sessions, c.eligible_sessions),
        (4, unreadable, 4, 4 + u64::from(with_mem))
    );
    assert_eq!(reasons(c), [("source_unreadable".to_owned(), unreadable)]);
    assert!(!c.complete);
}

#[cfg(unix)]
#[test]
fn read_only_source_trees_are_indexed_and_left_byte_identical() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    let snapshot = |root: &Path| {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(p) = stack.pop() {
            let meta = fs::symlink_metadata(&p).unwrap();
            let bytes = if meta.is_dir() {
                let mut names: Vec<PathBuf> = fs::read_dir(&p)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .collect();
                names.sort();
                stack.extend(names);
                Vec::new()
            } else {
                fs::read(&p).unwrap()
            };
            out.push((p, meta.len(), meta.modified().unwrap(), bytes));
        }
        out
    };
    let mut stack = vec![src.clone()];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            stack.extend(fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            fs::set_permissions(&p, fs::Permissions::from_mode(0o555)).unwrap();
        } else {
            fs::set_permissions(&p, fs::Permissions::from_mode(0o444)).unwrap();
        }
    }
    let before = snapshot(&src);
    let m = memory(tmp.path(), &src, Config::default());
    let r = sync(&m);
    assert_eq!(counts(&r), (4, 0, 4, 4));
    assert!(r.coverage.complete);
    let r = m.sync(Branches::All, &mut |_, _| {}).unwrap();
    assert_eq!(counts(&r), (4, 0, 4, 4));
    assert!(recall_total(&m, "backoff") > 0);
    assert_eq!(snapshot(&src), before);
    // Writable again so that the temp dir can be removed.
    let mut stack = vec![src];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
            stack.extend(fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
    }
}

#[test]
fn a_20_mb_single_line_session_is_indexed_with_its_text_capped() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("sessions/-home-dev-big");
    fs::create_dir_all(&src).unwrap();
    let words = "zebra quokka ".repeat(20 * 1024 * 1024 / 13);
    let line = format!(
        r#"{{"parentUuid":null,"isSidechain":false,"type":"user","cwd":"/home/dev/big","sessionId":"b16b16b1-0000-4000-8000-000000000001","uuid":"b16b16b1-0000-4000-8000-000000000002","timestamp":"2026-11-03T14:00:00.000Z","message":{{"role":"user","content":"limitneedle {words}limitneedle"}}}}"#
    );
    assert!(line.len() > 20 * 1024 * 1024);
    fs::write(
        src.join("b16b16b1-0000-4000-8000-000000000001.jsonl"),
        &line,
    )
    .unwrap();
    let m = memory(tmp.path(), &tmp.path().join("sessions"), Config::default());
    let r = sync(&m);
    assert_eq!(counts(&r), (1, 0, 1, 1));
    assert_eq!(r.bytes_read, line.len() as u64);
    // One entry whose stored text is cut at maxEntryChars: every token is still posted, so
    // the index is complete and the cut is only counted in the session's own coverage.
    assert!(r.coverage.complete, "{:?}", r.coverage);
    assert_eq!(reasons(&r.coverage), []);
    assert_eq!(recall_total(&m, "limitneedle"), 1);
    let list = m.sessions(Branches::Active).unwrap();
    assert_eq!(list.sessions.len(), 1);
    assert_eq!(list.sessions[0].entry_count, 1);
    assert_eq!(
        serde_json::to_value(&list.sessions[0]).unwrap()["coverage"],
        serde_json::json!({"complete": true, "reasons": [{"code": "max_entry_chars", "count": 1}]})
    );

    // A byte budget below the file skips it, counted, without reading it.
    let m = Memory::open(
        Config {
            max_sync_source_bytes: 1_000_000,
            ..Config::default()
        },
        Some(vec![tmp.path().join("sessions")]),
        Some(tmp.path().join("index-budget")),
    )
    .unwrap();
    let r = sync(&m);
    assert_eq!(counts(&r), (0, 0, 0, 1));
    assert_eq!(r.bytes_read, 0);
    assert_eq!(
        reasons(&r.coverage),
        [("max_sync_source_bytes".to_owned(), 1)]
    );
}
