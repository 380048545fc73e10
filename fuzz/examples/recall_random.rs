//! Runs the `recall_run` fuzz target's checks over inputs from a seeded generator, on the
//! stable toolchain: part of `make test` (`make fuzz-check`), so recall's invariants are
//! checked on every change and not only when someone fuzzes.
//!
//! `cargo run --manifest-path fuzz/Cargo.toml --example recall_random -- [COUNT] [SEED]`
//! (defaults: 2000 inputs, seed 1; the seed is made odd). A failing input panics with the
//! request it built.

use libfuzzer_sys::arbitrary::{Arbitrary, Unstructured};
use sessiondex_fuzz::recall::{exercise_recall, RecallInput};

fn main() {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2000);
    let mut x: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(1) | 1;
    let mut bytes = vec![0u8; 256];
    let (mut answered, mut hits, mut compared) = (0, 0, 0);
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
        }
    }
    println!(
        "recall_random: {count} inputs, {answered} pages of two indexes, {hits} hits, \
         {compared} compared across the tiers"
    );
}
