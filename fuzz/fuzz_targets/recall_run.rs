//! Recall end to end over a fixed in-memory index (all hot, and two hot with the rest cold):
//! requests built field by field from the input; pages keep their bounds, their follow and
//! next calls run, and the two indexes find the same sessions for a plain literal query.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessiondex_fuzz::recall::{exercise_recall, RecallInput};

fuzz_target!(|input: RecallInput<'_>| {
    let _ = exercise_recall(&input);
});
