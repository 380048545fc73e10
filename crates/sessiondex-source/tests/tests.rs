//! Integration tests of the format readers, over the repo's own small fixtures and, when
//! `../shared` is beside the checkout, the real session logs in `shared/fixtures/sessions`.
// A panic in a test is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

use std::path::PathBuf;

use sessiondex_source::{read_path, Branches, ReadOptions, Record, Selection, Session};

mod claude;
mod codex;
mod damaged;
mod pi;
mod props;
mod redact;
mod resume;

/// `shared/fixtures/sessions/<rel>`, or `None` (with a printed notice) when `../shared` is absent.
pub fn shared_fixture(rel: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/sessions");
    if !root.is_dir() {
        eprintln!("notice: ../shared/fixtures/sessions is absent; skipping the test of {rel}");
        return None;
    }
    Some(root.join(rel))
}

/// Reads a shared fixture (detecting its format), or `None` when `../shared` is absent.
pub fn read_shared(rel: &str) -> Option<Session> {
    let path = shared_fixture(rel)?;
    Some(read_path(&path, &ReadOptions::default()).unwrap_or_else(|e| panic!("{rel}: {e}")))
}

/// The records of a branch mode.
pub fn select(session: &Session, branches: Branches) -> Selection {
    session.select(branches)
}

/// Records with the given role.
pub fn count_role(records: &[Record], role: &str) -> usize {
    records
        .iter()
        .filter(|r| r.role.as_deref() == Some(role))
        .count()
}
