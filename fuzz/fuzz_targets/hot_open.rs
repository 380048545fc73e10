//! hot file open over arbitrary bytes, over the same bytes with the checksum footer
//! recomputed, and over a valid hot file with the input's byte edits (checksum recomputed),
//! then every read the file offers.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = sessiondex_fuzz::samples();
    sessiondex_fuzz::exercise_file(data, &s.hot, sessiondex_fuzz::exercise_hot);
});
