//! Index bytes vs source bytes: `cargo run -p sessiondex-core --example sizes -- PATH...`.
//!
//! Reads every `*.jsonl` under the paths, builds the hot shard and the cold digest of the
//! active branch with the default policy, and prints the totals.
use std::path::PathBuf;

use sessiondex_core::{cold, hot, Policy};
use sessiondex_source::{discover, read_path, Branches, ReadOptions};

fn main() {
    let policy = Policy::default();
    let (mut source, mut hot_bytes, mut cold_bytes, mut sessions, mut failed) = (0u64, 0, 0, 0, 0);
    for arg in std::env::args().skip(1) {
        for path in discover(&PathBuf::from(arg)) {
            let Ok(session) = read_path(&path, &ReadOptions::default()) else {
                failed += 1;
                continue;
            };
            let sel = session.select(Branches::Active);
            let (Ok(h), Ok(c)) = (
                hot::build(&session.meta, &sel, &policy),
                cold::build(&session.meta, &sel, &policy),
            ) else {
                failed += 1;
                continue;
            };
            source += std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            hot_bytes += h.len() as u64;
            cold_bytes += c.len() as u64;
            sessions += 1;
        }
    }
    let ratio = |n: u64| n as f64 / source.max(1) as f64;
    println!("sessions {sessions} (unreadable {failed}), source bytes {source}");
    println!("hot  bytes {hot_bytes} ({:.3} of source)", ratio(hot_bytes));
    println!(
        "cold bytes {cold_bytes} ({:.3} of source)",
        ratio(cold_bytes)
    );
}
