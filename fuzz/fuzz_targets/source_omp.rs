//! The omp reader (format forced) over arbitrary bytes: read, select both branch modes,
//! serialize.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sessiondex_source::Format;

fuzz_target!(|data: &[u8]| {
    sessiondex_fuzz::exercise_session(data, Some(Format::Omp), false);
});
