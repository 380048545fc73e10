//! The facade end to end: sync over real files in a temp dir, invalidation, tiers, budgets.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod corruption;
mod limits;
mod live;
mod query;
mod secrets;
mod truncation;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sessiondex::source::Branches;
use sessiondex::{Config, Memory, SyncReport};
use sessiondex_core::format::FORMAT_VERSION;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions")
}

/// Copies the example corpus into `dir/sessions`, giving each file a distinct mtime (oldest
/// first in path order) so that tiers are deterministic.
fn corpus(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let root = dir.join("sessions");
    let mut files = Vec::new();
    for (i, src) in sessiondex::source::discover(&examples()).iter().enumerate() {
        let rel = src.strip_prefix(examples()).unwrap();
        let dst = root.join(rel);
        fs::create_dir_all(dst.parent().unwrap()).unwrap();
        fs::copy(src, &dst).unwrap();
        set_mtime(
            &dst,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i as u64 * 60),
        );
        files.push(dst);
    }
    (root, files)
}

fn set_mtime(path: &Path, t: SystemTime) {
    let f = fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_times(fs::FileTimes::new().set_modified(t)).unwrap();
}

fn memory(dir: &Path, sources: &Path, config: Config) -> Memory {
    Memory::open(
        config,
        Some(vec![sources.to_path_buf()]),
        Some(dir.join("index")),
    )
    .unwrap()
}

fn sync(m: &Memory) -> SyncReport {
    m.sync(Branches::Active, &mut |_, _| {}).unwrap()
}

fn find(files: &[PathBuf], part: &str) -> PathBuf {
    files
        .iter()
        .find(|p| p.to_string_lossy().contains(part))
        .unwrap()
        .clone()
}

#[test]
fn second_sync_reuses_everything_and_reads_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    let m = memory(tmp.path(), &src, Config::default());
    let first = sync(&m);
    assert_eq!(
        (first.indexed, first.reused, first.removed, first.failed),
        (4, 0, 0, 0)
    );
    assert!(first.coverage.complete);
    assert_eq!(first.coverage.eligible_sessions, 4);
    let second = sync(&m);
    assert_eq!(
        (second.indexed, second.reused, second.bytes_read),
        (0, 4, 0)
    );
    assert_eq!(second.coverage, first.coverage);
}

#[test]
fn a_same_size_rewrite_with_the_mtime_put_back_is_reindexed() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let m = memory(tmp.path(), &src, Config::default());
    sync(&m);
    let pi = find(&files, "pi/");
    let before = fs::metadata(&pi).unwrap();
    let text = fs::read_to_string(&pi).unwrap();
    let changed = text.replace("five", "FIVE");
    assert_eq!(changed.len(), text.len());
    fs::write(&pi, &changed).unwrap();
    set_mtime(&pi, before.modified().unwrap());
    assert_eq!(fs::metadata(&pi).unwrap().len(), before.len());
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused), (1, 3), "{r:?}");
    // A touch alone (same bytes, new mtime) is verified by hash and reused.
    set_mtime(&pi, SystemTime::now());
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused), (0, 4), "{r:?}");
    assert!(r.bytes_read > 0);
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused, r.bytes_read), (0, 4, 0));
}

#[test]
fn a_deleted_source_is_removed_with_its_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let m = memory(tmp.path(), &src, Config::default());
    sync(&m);
    let index_files = |dir: &Path| -> usize {
        fs::read_dir(dir.join(format!("index/v{FORMAT_VERSION}/active")))
            .unwrap()
            .filter(|e| {
                let n = e.as_ref().unwrap().file_name();
                let n = n.to_string_lossy();
                n.ends_with(".hot") || n.ends_with(".cold")
            })
            .count()
    };
    assert_eq!(index_files(tmp.path()), 4);
    fs::remove_file(find(&files, "codex/")).unwrap();
    let r = sync(&m);
    assert_eq!((r.removed, r.reused, r.indexed), (1, 3, 0));
    assert_eq!(r.coverage.eligible_sessions, 3);
    assert_eq!(index_files(tmp.path()), 3);
    let list = m.sessions(Branches::Active).unwrap();
    assert_eq!(list.sessions.len(), 3);
    assert!(list.sessions.iter().all(|s| !s.file.contains("codex")));
}

#[test]
fn a_half_written_line_is_a_partial_tail_until_the_rest_arrives() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let m = memory(tmp.path(), &src, Config::default());
    sync(&m);
    let claude = find(&files, "claude-code/");
    let line = "{\"type\":\"user\",\"uuid\":\"c0000001-0000-4000-8000-000000000009\",\"parentUuid\":\"c0000001-0000-4000-8000-000000000008\",\"isSidechain\":false,\"sessionId\":\"3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d\",\"timestamp\":\"2026-11-03T14:01:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"thanks, ship it\"}}\n";
    let (head, tail) = line.split_at(60);
    let mut f = fs::OpenOptions::new().append(true).open(&claude).unwrap();
    std::io::Write::write_all(&mut f, head.as_bytes()).unwrap();
    let r = sync(&m);
    assert_eq!(r.indexed, 1);
    assert!(!r.coverage.complete);
    assert_eq!(r.coverage.incomplete_sessions, 1);
    assert!(r
        .coverage
        .reasons
        .iter()
        .any(|x| x.code == "partial_tail" && x.count == 1));
    std::io::Write::write_all(&mut f, tail.as_bytes()).unwrap();
    drop(f);
    let r = sync(&m);
    assert_eq!(r.indexed, 1);
    assert!(r.coverage.complete, "{:?}", r.coverage);
    let list = m.sessions(Branches::Active).unwrap();
    let s = list
        .sessions
        .iter()
        .find(|s| s.file.contains("claude-code"))
        .unwrap();
    assert_eq!(s.last_ts.as_deref(), Some("2026-11-03T14:01:00.000Z"));
    assert!(s.coverage.complete);
}

#[test]
fn tiers_follow_source_mtime_and_move_when_newer_sessions_arrive() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let config = Config {
        hot_sessions: 1,
        ..Config::default()
    };
    let m = memory(tmp.path(), &src, config);
    sync(&m);
    let tiers = |m: &Memory| -> Vec<(String, String)> {
        let mut v: Vec<_> = m
            .sessions(Branches::Active)
            .unwrap()
            .sessions
            .into_iter()
            .map(|s| (s.format.unwrap().as_str().to_owned(), s.tier))
            .collect();
        v.sort();
        v
    };
    // The newest file in path order is pi/ (copied last).
    let t = tiers(&m);
    assert_eq!(t.iter().filter(|(_, tier)| tier == "hot").count(), 1);
    assert!(t.contains(&("pi".to_owned(), "hot".to_owned())), "{t:?}");
    // Touching the Codex rollout with new content makes it the newest: it turns hot, pi cold.
    let codex = find(&files, "codex/");
    let mut text = fs::read_to_string(&codex).unwrap();
    text.push_str("{\"timestamp\":\"2026-11-04T09:00:00.000Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"one more thing\"}]}}\n");
    fs::write(&codex, text).unwrap();
    let r = sync(&m);
    assert_eq!(r.indexed, 2, "{r:?}");
    let t = tiers(&m);
    assert!(t.contains(&("codex".to_owned(), "hot".to_owned())), "{t:?}");
    assert!(t.contains(&("pi".to_owned(), "cold".to_owned())), "{t:?}");
}

#[test]
fn budgets_stop_indexing_but_never_hide_a_session() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    let config = Config {
        max_sync_sessions: 3,
        ..Config::default()
    };
    let m = memory(tmp.path(), &src, config.clone());
    let r = sync(&m);
    assert_eq!(r.indexed, 3);
    assert!(!r.coverage.complete);
    assert_eq!(r.coverage.eligible_sessions, 4);
    assert_eq!(r.coverage.indexed_sessions, 3);
    assert!(r
        .coverage
        .reasons
        .iter()
        .any(|x| x.code == "max_sync_sessions"));
    // The next sync picks up the rest.
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused), (1, 3));
    assert!(r.coverage.complete);

    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    let m = memory(
        tmp.path(),
        &src,
        Config {
            max_sync_source_bytes: 6000,
            ..Config::default()
        },
    );
    let r = sync(&m);
    assert!(r.bytes_read <= 6000);
    assert!(r.indexed < 4);
    assert_eq!(r.coverage.eligible_sessions, 4);
    assert!(r
        .coverage
        .reasons
        .iter()
        .any(|x| x.code == "max_sync_source_bytes"));
}

#[test]
fn a_damaged_catalog_or_index_file_is_rebuilt_from_source() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    let m = memory(tmp.path(), &src, Config::default());
    sync(&m);
    let clean = m.sessions(Branches::Active).unwrap();
    let catalog = tmp
        .path()
        .join(format!("index/v{FORMAT_VERSION}/active/catalog"));
    let mut bytes = fs::read(&catalog).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    fs::write(&catalog, &bytes).unwrap();
    let r = sync(&m);
    assert_eq!(r.indexed, 4);
    assert_eq!(m.sessions(Branches::Active).unwrap(), clean);
    // A deleted index file is rebuilt too.
    let one = fs::read_dir(tmp.path().join(format!("index/v{FORMAT_VERSION}/active")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "hot"))
        .unwrap();
    fs::remove_file(&one).unwrap();
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused), (1, 3));
    assert_eq!(m.sessions(Branches::Active).unwrap(), clean);
}

#[test]
fn the_index_is_disposable() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    let m = memory(tmp.path(), &src, Config::default());
    let first = m.sessions(Branches::Active).unwrap();
    fs::remove_dir_all(tmp.path().join("index")).unwrap();
    let m = memory(tmp.path(), &src, Config::default());
    assert_eq!(m.sessions(Branches::Active).unwrap(), first);
}

#[cfg(unix)]
#[test]
fn permissions_and_untouched_read_only_sources() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let before: Vec<Vec<u8>> = files.iter().map(|f| fs::read(f).unwrap()).collect();
    for f in &files {
        fs::set_permissions(f, fs::Permissions::from_mode(0o444)).unwrap();
    }
    let m = memory(tmp.path(), &src, Config::default());
    sync(&m);
    m.sync(Branches::All, &mut |_, _| {}).unwrap();
    let mut stack = vec![tmp.path().join("index")];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        let mode = fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        if p.is_dir() {
            assert_eq!(mode, 0o700, "{}", p.display());
            stack.extend(fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        } else {
            assert_eq!(mode, 0o600, "{}", p.display());
            assert!(!p.file_name().unwrap().to_string_lossy().starts_with(".tmp"));
            seen += 1;
        }
    }
    assert!(seen >= 10);
    for (f, b) in files.iter().zip(before) {
        assert_eq!(fs::read(f).unwrap(), b);
    }
}

#[test]
fn non_session_files_are_counted_once_and_not_reread() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = corpus(tmp.path());
    fs::write(src.join("notes.jsonl"), "{\"not\":\"a session\"}\n").unwrap();
    let m = memory(tmp.path(), &src, Config::default());
    let r = sync(&m);
    assert_eq!((r.indexed, r.failed), (4, 1));
    assert_eq!(r.coverage.eligible_sessions, 4);
    assert!(r.coverage.complete);
    let r = sync(&m);
    assert_eq!((r.failed, r.bytes_read), (1, 0));
}

#[test]
fn an_appended_session_parses_only_the_new_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let m = memory(tmp.path(), &src, Config::default());
    sync(&m);
    let claude = find(&files, "claude-code/");
    let old_len = fs::metadata(&claude).unwrap().len();
    let line = "{\"type\":\"user\",\"uuid\":\"c0000001-0000-4000-8000-000000000009\",\"parentUuid\":\"c0000001-0000-4000-8000-000000000008\",\"isSidechain\":false,\"sessionId\":\"3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d\",\"timestamp\":\"2026-11-03T14:01:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"thanks, ship it\"}}\n";
    let mut f = fs::OpenOptions::new().append(true).open(&claude).unwrap();
    std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
    drop(f);
    let r = sync(&m);
    assert_eq!((r.indexed, r.appended, r.reused), (1, 1, 3), "{r:?}");
    assert_eq!(r.bytes_parsed, line.len() as u64);
    assert_eq!(r.bytes_read, old_len + line.len() as u64);
    // The continued index equals a clean build of the grown file.
    let appended = m.sessions(Branches::Active).unwrap();
    let fresh = memory(&tmp.path().join("clean"), &src, Config::default());
    assert_eq!(fresh.sessions(Branches::Active).unwrap(), appended);
    // Byte for byte: the continued shard is the shard a full read builds.
    let key_files = |root: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<_> = fs::read_dir(root.join(format!("index/v{FORMAT_VERSION}/active")))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "hot"))
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    fs::read(&p).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(key_files(tmp.path()), key_files(&tmp.path().join("clean")));
    let s = appended
        .sessions
        .iter()
        .find(|s| s.file.contains("claude-code"))
        .unwrap();
    assert_eq!(s.entry_count, 12);
    // A rewrite of the old part (same length + more) is caught by the prefix hash: full read.
    let text = fs::read_to_string(&claude).unwrap();
    let mut rewritten = text.replace("exponential backoff", "EXPONENTIAL BACKOFF");
    rewritten.push_str(
        &line
            .replace("ship it", "ship it now")
            .replace("-000000000009", "-000000000010")
            .replace(
                "\"parentUuid\":\"c0000001-0000-4000-8000-000000000008\"",
                "\"parentUuid\":\"c0000001-0000-4000-8000-000000000009\"",
            ),
    );
    fs::write(&claude, rewritten).unwrap();
    let r = sync(&m);
    assert_eq!((r.indexed, r.appended), (1, 0), "{r:?}");
    assert_eq!(r.bytes_parsed, fs::metadata(&claude).unwrap().len());
}

/// A sync that changes some sessions writes its catalog from the previous one (the terms,
/// ids and totals of untouched sessions carried over, renumbered) instead of opening every
/// index file: after each kind of change the catalog is byte for byte the one a clean build
/// of the same sources writes.
#[test]
fn a_catalog_written_from_the_last_one_equals_a_clean_build() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let config = Config {
        hot_sessions: 2,
        ..Config::default()
    };
    // The Claude session is hot from the start (newer than the others).
    let claude = find(&files, "claude-code/");
    set_mtime(
        &claude,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_750_000_000),
    );
    let m = memory(tmp.path(), &src, config.clone());
    let catalog = |root: &Path| {
        fs::read(root.join(format!("index/v{FORMAT_VERSION}/active/catalog"))).unwrap()
    };
    let mut step = 0;
    let mut same_as_clean = |what: &str| {
        step += 1;
        let clean = tmp.path().join(format!("clean{step}"));
        let fresh = memory(&clean, &src, config.clone());
        let r = sync(&fresh);
        assert_eq!(r.reused, 0);
        assert_eq!(catalog(tmp.path()), catalog(&clean), "{what}");
    };
    sync(&m);
    same_as_clean("first sync");

    // An appended hot session (its terms read from its continued shard).
    let line = "{\"type\":\"user\",\"uuid\":\"c0000001-0000-4000-8000-000000000009\",\"parentUuid\":\"c0000001-0000-4000-8000-000000000008\",\"isSidechain\":false,\"sessionId\":\"3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d\",\"timestamp\":\"2026-11-03T14:01:00.000Z\",\"message\":{\"role\":\"user\",\"content\":\"zqcarried appended words\"}}\n";
    let mut f = fs::OpenOptions::new().append(true).open(&claude).unwrap();
    std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
    drop(f);
    let r = sync(&m);
    assert_eq!((r.appended, r.reused), (1, 3), "{r:?}");
    same_as_clean("append");

    // A new session, newest of all: it turns hot and pushes another one cold.
    let copy = claude.with_file_name("copy-of-claude.jsonl");
    fs::copy(&claude, &copy).unwrap();
    set_mtime(
        &copy,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
    );
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused), (2, 3), "{r:?}");
    same_as_clean("new session and a tier move");

    // Content unchanged but the stat moved: the entry is updated, its terms carried.
    let codex = find(&files, "codex/");
    set_mtime(
        &codex,
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000),
    );
    let r = sync(&m);
    assert_eq!((r.indexed, r.reused), (0, 5), "{r:?}");
    same_as_clean("stat moved");

    // Deleted sources: their sessions leave, and so do the terms only they held.
    fs::remove_file(&copy).unwrap();
    let pi = find(&files, "pi/");
    fs::remove_file(&pi).unwrap();
    let r = sync(&m);
    assert_eq!(r.removed, 2, "{r:?}");
    same_as_clean("deletions");
}

/// A previous catalog that passes its checksum but whose merged maps cannot be read (a
/// posting list damaged and the file resealed): a sync that changes a session does not fail
/// nor carry the damage over; it reads every index file and writes the clean build's catalog.
#[test]
fn a_catalog_whose_maps_fail_is_not_carried_over() {
    use sessiondex_core::catalog::Catalog;
    use sessiondex_core::format;
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let m = memory(tmp.path(), &src, Config::default());
    sync(&m);
    let path = tmp
        .path()
        .join(format!("index/v{FORMAT_VERSION}/active/catalog"));
    let good = fs::read(&path).unwrap();
    // The first byte whose change leaves the catalog opening and its columns valid but its
    // maps unreadable.
    let damaged = (format::HEADER_LEN..good.len() - format::FOOTER_LEN)
        .find_map(|at| {
            let mut b = good.clone();
            b[at] ^= 0x80;
            let b = format::reseal(&b);
            let cat = Catalog::open(b.as_slice()).ok()?;
            (cat.validate().is_ok() && cat.validate_maps().is_err()).then(|| b.as_slice().to_vec())
        })
        .expect("a posting byte to damage");
    fs::write(&path, &damaged).unwrap();
    let pi = find(&files, "pi/");
    let mut f = fs::OpenOptions::new().append(true).open(&pi).unwrap();
    std::io::Write::write_all(&mut f, b"\n").unwrap();
    drop(f);
    let r = sync(&m);
    assert_eq!(r.reused + r.indexed, 4, "{r:?}");
    let clean = tmp.path().join("clean");
    sync(&memory(&clean, &src, Config::default()));
    let rebuilt = fs::read(&path).unwrap();
    assert_eq!(
        rebuilt,
        fs::read(clean.join(format!("index/v{FORMAT_VERSION}/active/catalog"))).unwrap()
    );
}
