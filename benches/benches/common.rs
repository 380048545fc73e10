//! A small generated corpus shared by the bench files (size: `SESSIONDEX_BENCH_SIZE`,
//! default 8MB).

use std::path::{Path, PathBuf};

use sessiondex_bench::gen::{generate, parse_size, GenOptions};

/// A fresh corpus in a temporary directory, seed 42.
pub fn corpus() -> (tempfile::TempDir, PathBuf) {
    let size = std::env::var("SESSIONDEX_BENCH_SIZE")
        .ok()
        .and_then(|s| parse_size(&s).ok())
        .unwrap_or(8 << 20);
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().join("corpus");
    generate(&GenOptions::new(out.clone(), size, 42)).expect("generate");
    (tmp, out)
}

#[allow(dead_code)] // used by pipeline.rs, not recall.rs
/// The largest session file of each format directory (`.pi`, `.claude`, `.codex`).
pub fn largest_per_format(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let files = sessiondex::source::discover(dir);
    let mut out = Vec::new();
    for (name, prefix) in [
        ("pi", ".pi"),
        ("claude_code", ".claude"),
        ("codex", ".codex"),
    ] {
        let best = files
            .iter()
            .filter(|p| p.strip_prefix(dir).is_ok_and(|r| r.starts_with(prefix)))
            .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0));
        if let Some(p) = best {
            out.push((name, p.clone()));
        }
    }
    out
}
