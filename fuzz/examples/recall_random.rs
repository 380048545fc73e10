//! Runs the `recall_run` fuzz target's checks over inputs from a seeded generator, on the
//! stable toolchain: part of `make test` (`make fuzz-check`), so recall's invariants are
//! checked on every change and not only when someone fuzzes.
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --example recall_random -- [COUNT] [SEED] [DIR]`
//! (defaults: 2000 inputs, seed 1; the seed is made odd). With `DIR`, every `*.jsonl` under it
//! is indexed too (the real logs of `../shared/fixtures/sessions`); a `DIR` that does not
//! exist is skipped with a notice. A failing input panics with the request it built.

use std::path::{Path, PathBuf};

use libfuzzer_sys::arbitrary::{Arbitrary, Unstructured};
use sessiondex_fuzz::recall::{add_logs, exercise_recall, RecallInput};

fn logs(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    paths.sort();
    for p in paths {
        if p.is_dir() {
            logs(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push((p.display().to_string(), std::fs::read(&p)?));
        }
    }
    Ok(())
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let mut x: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1) | 1;
    if let Some(dir) = args.next() {
        let dir = PathBuf::from(dir);
        if dir.is_dir() {
            let mut found = Vec::new();
            logs(&dir, &mut found)?;
            println!(
                "recall_random: {} logs of {} indexed too",
                found.len(),
                dir.display()
            );
            add_logs(found);
        } else {
            println!("recall_random: {} is absent, skipped", dir.display());
        }
    }
    let mut bytes = vec![0u8; 256];
    let (mut answered, mut hits, mut compared, mut branches) = (0, 0, 0, 0);
    for _ in 0..count {
        for b in &mut bytes {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = (x >> 24) as u8;
        }
        // Inputs of every length up to 256 bytes: short ones give few query pieces.
        let len = usize::from(bytes[0]) + 1;
        // As libFuzzer's driver reads its input: the last field takes the bytes left.
        let u = Unstructured::new(&bytes[..len]);
        if let Ok(input) = RecallInput::arbitrary_take_rest(u) {
            let c = exercise_recall(&input);
            answered += c.answered;
            hits += c.hits;
            compared += usize::from(c.compared);
            branches += usize::from(c.branches_compared);
        }
    }
    println!(
        "recall_random: {count} inputs, {answered} pages of two indexes, {hits} hits, \
         {compared} compared across the tiers, {branches} across the branch modes"
    );
    Ok(())
}
