//! The cache store: atomic writes, permissions, listing, cleanup, lock.

use std::path::Path;

use sessiondex_core::format::FileKind;
use sessiondex_core::hot::{self, HotShard};
use sessiondex_core::store::Store;
use sessiondex_core::Policy;
use sessiondex_source::Branches;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn atomic_write_leaves_no_temp_and_replaces() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().join("idx")).unwrap();
    let key = Store::key(Path::new("/s/a.jsonl"));
    let (m, s) = super::sample();
    let bytes = hot::build(&m, &s, &Policy::default()).unwrap();
    let path = store
        .write(Branches::Active, FileKind::Hot, &key, &bytes)
        .unwrap();
    assert_eq!(names(&store.dir(Branches::Active)), [format!("{key}.hot")]);
    let read = store.read(&path).unwrap().unwrap();
    assert_eq!(read.as_slice(), bytes.as_slice());
    assert_eq!(HotShard::open(read).unwrap().entry_count(), 4);
    store
        .write(Branches::Active, FileKind::Hot, &key, b"second")
        .unwrap();
    assert_eq!(store.read(&path).unwrap().unwrap().as_slice(), b"second");
    assert_eq!(names(&store.dir(Branches::Active)).len(), 1);
    assert!(store
        .read(&store.path(Branches::All, FileKind::Hot, &key))
        .unwrap()
        .is_none());
    assert!(store.remove(Branches::Active, FileKind::Hot, &key).unwrap());
    assert!(!store.remove(Branches::Active, FileKind::Hot, &key).unwrap());
}

/// A pending write replaces the file as a write does (atomically, private, no temp left);
/// the commit flushes it, and fails with `index_io` when the directory is gone.
#[test]
fn pending_writes_replace_and_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path().join("idx")).unwrap();
    let key = Store::key(Path::new("/s/a.jsonl"));
    let b = Branches::Active;
    store.write(b, FileKind::Cold, &key, b"first").unwrap();
    let path = store.path(b, FileKind::Cold, &key);
    store.write_pending(&path, b"second").unwrap();
    assert_eq!(names(&store.dir(b)), [format!("{key}.cold")]);
    assert_eq!(store.read(&path).unwrap().unwrap().as_slice(), b"second");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    store.commit(b).unwrap();
    assert_eq!(store.read(&path).unwrap().unwrap().as_slice(), b"second");
    std::fs::remove_dir_all(store.dir(Branches::All)).unwrap();
    if cfg!(target_os = "linux") {
        assert_eq!(store.commit(Branches::All).unwrap_err().code(), "index_io");
    } else {
        store.commit(Branches::All).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn permissions_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache").join("sessiondex");
    let store = Store::open(&root).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for dir in [
        root.clone(),
        store.version_dir(),
        store.dir(Branches::Active),
        store.dir(Branches::All),
    ] {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    }
    let key = Store::key(Path::new("/s/a.jsonl"));
    let p = store
        .write(Branches::All, FileKind::Cold, &key, b"x")
        .unwrap();
    assert_eq!(mode(&p), 0o600);
    let _lock = store.lock().unwrap();
    assert_eq!(mode(&root.join("lock")), 0o600);
}

#[test]
fn listing_and_cleanup_within_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let live = Store::key(Path::new("/s/live.jsonl"));
    let gone = Store::key(Path::new("/s/deleted.jsonl"));
    for b in [Branches::Active, Branches::All] {
        store.write(b, FileKind::Hot, &live, b"h").unwrap();
        store.write(b, FileKind::Cold, &gone, b"c").unwrap();
        store.write(b, FileKind::Catalog, "", b"k").unwrap();
    }
    let dir = store.dir(Branches::Active);
    std::fs::write(dir.join(format!(".tmp-1-2-{live}.hot")), b"half").unwrap();
    std::fs::write(dir.join("junk.txt"), b"?").unwrap();
    std::fs::create_dir_all(tmp.path().join("v0").join("active")).unwrap();
    std::fs::write(tmp.path().join("v0").join("active").join("old"), b"old").unwrap();

    let listed: Vec<_> = store
        .list(Branches::Active)
        .unwrap()
        .into_iter()
        .map(|f| (f.kind, f.key))
        .collect();
    assert_eq!(listed.len(), 3);
    assert!(listed.contains(&(FileKind::Cold, gone.clone())));

    let lock = store.lock().unwrap();
    // A budget of one stops early and says so.
    let r = store.cleanup(&lock, 1, |_, _, k| k == live).unwrap();
    assert!(!r.complete);
    let r = store.cleanup(&lock, 1000, |_, _, k| k == live).unwrap();
    assert!(r.complete);
    assert!(!tmp.path().join("v0").exists());
    assert_eq!(names(&dir), [format!("{live}.hot"), "catalog".to_owned()]);
    assert_eq!(
        names(&store.dir(Branches::All)),
        [format!("{live}.hot"), "catalog".to_owned()]
    );
    assert!(tmp.path().join("lock").exists());
}

/// A sync lists its branch directory once: the listing gives each index file's length, and
/// the cleanup over it removes what it listed and is not live, in that branch only, and
/// leaves what was written after it.
#[test]
fn cleanup_over_one_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let live = Store::key(Path::new("/s/live.jsonl"));
    let gone = Store::key(Path::new("/s/deleted.jsonl"));
    let later = Store::key(Path::new("/s/later.jsonl"));
    for b in [Branches::Active, Branches::All] {
        store.write(b, FileKind::Hot, &live, b"hot!").unwrap();
        store.write(b, FileKind::Cold, &gone, b"c").unwrap();
        store.write(b, FileKind::Catalog, "", b"k").unwrap();
    }
    let dir = store.dir(Branches::Active);
    std::fs::write(dir.join(format!(".tmp-1-2-{live}.hot")), b"half").unwrap();
    std::fs::create_dir(dir.join(format!("{gone}.hot"))).unwrap();
    std::fs::write(dir.join(format!("{gone}.hot")).join("x"), b"x").unwrap();

    let listing = store.listing(Branches::Active).unwrap();
    assert_eq!(listing.branches(), Branches::Active);
    assert_eq!(listing.entries().len(), 5);
    let lens = listing.file_lens();
    assert_eq!(lens.get(format!("{live}.hot").as_str()), Some(&4));
    assert_eq!(lens.get(format!("{gone}.cold").as_str()), Some(&1));
    assert_eq!(lens.get("catalog"), Some(&1));
    // A directory has no file length.
    assert_eq!(lens.get(format!("{gone}.hot").as_str()), None);

    // Written after the listing, and not live: left for the next cleanup.
    store
        .write(Branches::Active, FileKind::Cold, &later, b"new")
        .unwrap();
    let lock = store.lock().unwrap();
    let r = store
        .cleanup_listed(&lock, 1000, &listing, |_, _, k| k == live)
        .unwrap();
    assert!(r.complete);
    assert_eq!(
        names(&dir),
        [
            format!("{later}.cold"),
            format!("{live}.hot"),
            "catalog".to_owned()
        ]
    );
    // The other branch was listed by the cleanup itself.
    assert_eq!(
        names(&store.dir(Branches::All)),
        [format!("{live}.hot"), "catalog".to_owned()]
    );
    // Enough files for the stat calls to be shared by threads: every length is right.
    let keys: Vec<String> = (0..700)
        .map(|i| Store::key(Path::new(&format!("/s/{i}.jsonl"))))
        .collect();
    for (i, k) in keys.iter().enumerate() {
        let body = vec![b'x'; i % 13];
        store
            .write(Branches::All, FileKind::Cold, k, &body)
            .unwrap();
    }
    let listing = store.listing(Branches::All).unwrap();
    assert_eq!(listing.entries().len(), 702);
    let lens = listing.file_lens();
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            lens.get(format!("{k}.cold").as_str()),
            Some(&((i % 13) as u64))
        );
    }
    // An empty listing of a missing directory.
    std::fs::remove_dir_all(store.dir(Branches::All)).unwrap();
    assert!(store.listing(Branches::All).unwrap().entries().is_empty());
}

#[test]
fn lock_excludes_a_second_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let a = Store::open(tmp.path()).unwrap();
    let b = Store::open(tmp.path()).unwrap();
    let held = a.try_lock().unwrap();
    let e = b.try_lock().unwrap_err();
    assert_eq!(e.code(), "index_locked");
    drop(held);
    assert!(b.try_lock().is_ok());
}

#[test]
fn concurrent_writers_corrupt_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let key = Store::key(Path::new("/s/a.jsonl"));
    let (m, s) = super::sample();
    let files: Vec<_> = [10u32, 2000]
        .iter()
        .map(|&max| {
            hot::build(
                &m,
                &s,
                &Policy {
                    max_entry_chars: max,
                    ..Policy::default()
                },
            )
            .unwrap()
        })
        .collect();
    std::thread::scope(|sc| {
        for f in &files {
            let (root, key) = (root.clone(), key.clone());
            sc.spawn(move || {
                let store = Store::open(root).unwrap();
                for _ in 0..20 {
                    store
                        .write(Branches::Active, FileKind::Hot, &key, f)
                        .unwrap();
                }
            });
        }
        let store = Store::open(&root).unwrap();
        let path = store.path(Branches::Active, FileKind::Hot, &key);
        for _ in 0..40 {
            if let Some(b) = store.read(&path).unwrap() {
                assert!(files.iter().any(|f| f.as_slice() == b.as_slice()));
            }
        }
    });
    let store = Store::open(&root).unwrap();
    assert_eq!(names(&store.dir(Branches::Active)), [format!("{key}.hot")]);
}

#[cfg(feature = "mmap")]
#[test]
fn mmap_opens_every_kind() {
    use sessiondex_core::catalog::Catalog;
    use sessiondex_core::cold::ColdDigest;
    use sessiondex_core::mmap::Mmap;
    let tmp = tempfile::tempdir().unwrap();
    let store = Store::open(tmp.path()).unwrap();
    let key = Store::key(Path::new("/s/a.jsonl"));
    for (kind, bytes) in super::sample_files() {
        let p = store.write(Branches::Active, kind, &key, &bytes).unwrap();
        let map = Mmap::open(&p).unwrap();
        assert_eq!(map.as_ref(), bytes.as_slice());
        match kind {
            FileKind::Hot => assert_eq!(HotShard::open(map).unwrap().entry_count(), 4),
            FileKind::Cold => assert_eq!(ColdDigest::open(map).unwrap().tuple_count(), 4),
            FileKind::Catalog => assert_eq!(Catalog::open(map).unwrap().len(), 1),
        }
    }
    let empty = tmp.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let e = HotShard::open(Mmap::open(&empty).unwrap()).unwrap_err();
    assert_eq!(e.code(), "index_corrupt");
}
