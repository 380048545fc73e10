//! Format detection over arbitrary bytes, then the detected reader: read, select both branch
//! modes, serialize, index.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sessiondex_fuzz::exercise_session(data, None, true);
});
