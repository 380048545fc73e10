//! The committed index of the current format version (`tests/data/v<FORMAT_VERSION>/`) still
//! opens and reads the same; the index of every older version kept there is refused as
//! `index_version_mismatch` (so a sync rebuilds it).
//!
//! `SESSIONDEX_REGENERATE_COMPAT=1 cargo test -p sessiondex-core compat` rewrites the files;
//! do that only together with a format version bump (and keep the old directory).
//!
//! Version 2 (hot shards post every token, also past `max_entry_chars`) was written that way;
//! `v1/` is the version 1 index, kept to prove it is refused. Version 3 (narrow cold digest
//! columns, derived operation addresses) too; `v2/` is kept for the same reason. Version 4
//! (hot vocabularies, id keys and hot totals in the catalog) too; `v3/` is kept. Version 5
//! (structural value and pair keys in the catalog's id map) too; `v4/` is kept. Version 6
//! (front-coded cold vocabularies and field keys) too; `v5/` is kept. Version 7 (cold
//! vocabularies only in the catalog) too; `v6/` is kept. Version 8 (`u32` posting starts and
//! bitmap posting lists in the catalog) too; `v7/` is kept. Version 9 (no summary in a cold
//! digest) too; `v8/` is kept. Version 10 (a hot shard's entry lists per structural value)
//! too; `v9/` is kept. Version 11 (a hot entry's NFKC flags) too; `v10/` is kept. Version
//! 12 (a hot shard's term table) too; `v11/` is kept. Version 13 (a summary's count of
//! records without a timestamp) too; `v12/` is kept. Version 14 (the catalog's id keys as a
//! table front-coded in blocks) too; `v13/` is kept.

use std::path::PathBuf;

use sessiondex_core::catalog::{field_key, pair_key, Catalog, Tier};
use sessiondex_core::cold::{ColdDigest, Field};
use sessiondex_core::format::{self, FileKind};
use sessiondex_core::hot::{self, HotShard, ListField};
use sessiondex_source::{Branches, Outcome};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(format!("v{}", format::FORMAT_VERSION))
}

fn name(kind: FileKind) -> &'static str {
    match kind {
        FileKind::Hot => "session.hot",
        FileKind::Cold => "session.cold",
        FileKind::Catalog => "catalog",
    }
}

#[test]
fn regenerate_compat_index_when_asked() {
    if std::env::var_os("SESSIONDEX_REGENERATE_COMPAT").is_none() {
        return;
    }
    std::fs::create_dir_all(dir()).unwrap();
    for (kind, bytes) in super::sample_files() {
        std::fs::write(dir().join(name(kind)), bytes.as_slice()).unwrap();
    }
}

fn read(kind: FileKind) -> format::Aligned {
    let bytes = std::fs::read(dir().join(name(kind))).unwrap();
    format::copy_aligned(&bytes)
}

#[test]
fn committed_v1_index_opens() {
    let hot = HotShard::open(read(FileKind::Hot)).unwrap();
    assert_eq!(hot.entry_count(), 4);
    let e = hot.entry(2).unwrap();
    assert_eq!(e.operation_address().unwrap(), Some("a1/0"));
    assert_eq!(e.provider().unwrap(), Some("omp"));
    assert_eq!(e.outcome().unwrap(), Some(Outcome::Failed));
    assert_eq!(e.files_touched().unwrap(), ["src/net.rs", "src/lib.rs"]);
    assert_eq!(
        hot.entry(1).unwrap().thinking().unwrap(),
        Some("secret reasoning about timeouts")
    );
    assert_eq!(hot.doc_freq("timeout").unwrap(), 3);
    let p: Vec<_> = hot
        .postings("timeouts")
        .unwrap()
        .map(|p| (p.entry, p.tf))
        .collect();
    assert_eq!(p, [(1, 1)]);
    assert_eq!(hot.summary().session_id, "s1");
    // Version 10: the entries of each outcome and tool, with their token totals.
    let failed = hot
        .entry_lists(ListField::Outcome)
        .unwrap()
        .find(hot::outcome_value(Outcome::Failed))
        .unwrap()
        .unwrap();
    // the failed call and its result
    assert_eq!(failed.iter().collect::<Vec<_>>(), [2, 3]);
    let len = |i: usize| u64::from(hot.entry(i).unwrap().token_len());
    assert_eq!(failed.tokens, len(2) + len(3));
    let tools = hot.entry_lists(ListField::Tool).unwrap();
    let tool_entries: Vec<Vec<u32>> = (0..tools.len())
        .map(|k| tools.get(k).unwrap().iter().collect())
        .collect();
    let with_tool: Vec<u32> = (0..4u32)
        .filter(|&i| hot.entry(i as usize).unwrap().tool().unwrap().is_some())
        .collect();
    assert_eq!(tool_entries.concat().len(), with_tool.len());

    let cold = ColdDigest::open(read(FileKind::Cold)).unwrap();
    // Version 7: the digest counts its vocabulary; the catalog holds it.
    let cat = Catalog::open(read(FileKind::Catalog)).unwrap();
    let vocabulary = cat.cold_vocabularies().unwrap().remove(0).unwrap();
    assert_eq!(cold.vocabulary_len(), vocabulary.len());
    assert!(vocabulary.contains("secret".as_bytes()).unwrap());
    assert!(vocabulary.contains("日本語".as_bytes()).unwrap());
    assert_eq!(
        cold.field_postings(Field::Outcome, "failed").unwrap(),
        [2, 3]
    );
    assert_eq!(cold.tuple(2).unwrap().address().unwrap(), "a1/0");
    let cat = Catalog::open(read(FileKind::Catalog)).unwrap();
    // the failed call and its result count once (version 9: the catalog holds the summary)
    assert_eq!(cat.session(0).unwrap().summary.error_count, 1);
    // version 13: every record of the sample has a timestamp
    assert_eq!(cat.session(0).unwrap().summary.untimed_count, 0);
    assert_eq!(cat.branches(), Branches::Active);
    assert_eq!(cat.len(), 1);
    let s = cat.session(0).unwrap();
    assert_eq!(s.tier, Tier::Cold);
    assert_eq!(s.identity.path, "/sessions/s1.jsonl");
    assert_eq!(s.summary.tool_histogram, [("omp.grep".to_owned(), 1)]);
    assert_eq!(cat.sessions_with("timeout").unwrap(), [0]);
    assert_eq!(cat.sessions_with("absent").unwrap(), Vec::<u32>::new());
    assert_eq!(cat.sessions_with_id_key("a1/0").unwrap(), [0]);
    assert_eq!(cat.sessions_with_id_key("s1").unwrap(), [0]);
    assert_eq!(cat.hot_totals(0), None);
    // Version 5: a record's structural values, alone and in pairs (in the key's field order).
    let key = |k: &str| cat.sessions_with_id_key(k).unwrap();
    assert_eq!(key(&field_key("outcome", "failed")), [0]);
    assert_eq!(key(&pair_key("provider", "omp", "outcome", "failed")), [0]);
    assert_eq!(
        key(&pair_key("outcome", "failed", "provider", "omp")),
        [0u32; 0]
    );
    assert_eq!(
        key(&pair_key("provider", "omp", "outcome", "succeeded")),
        [0u32; 0]
    );
}

#[test]
fn committed_v1_index_matches_this_build() {
    // Same input, same bytes: the writer is deterministic and the format did not drift.
    for (kind, bytes) in super::sample_files() {
        assert_eq!(read(kind).as_slice(), bytes.as_slice(), "{kind:?}");
    }
}

#[test]
fn older_committed_indexes_are_refused() {
    let base = dir().parent().unwrap().to_path_buf();
    let mut seen = 0;
    for v in 1..format::FORMAT_VERSION {
        let old = base.join(format!("v{v}"));
        for kind in [FileKind::Hot, FileKind::Cold, FileKind::Catalog] {
            let bytes = format::copy_aligned(&std::fs::read(old.join(name(kind))).unwrap());
            let e = match kind {
                FileKind::Hot => HotShard::open(bytes).err(),
                FileKind::Cold => ColdDigest::open(bytes).err(),
                FileKind::Catalog => Catalog::open(bytes).err(),
            }
            .unwrap();
            assert_eq!(e.code(), "index_version_mismatch", "v{v} {kind:?}");
            seen += 1;
        }
    }
    assert_eq!(seen, 3 * (format::FORMAT_VERSION as usize - 1));
}
