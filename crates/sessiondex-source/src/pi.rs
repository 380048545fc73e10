//! pi (v1, v2, v3) and oh-my-pi session files.

use serde_json::{Map, Value};

use crate::jsonl::Loc;
use crate::session::Builder;
use crate::FormatReader;

/// Is this first line oh-my-pi's fixed-width title line?
pub(crate) fn is_omp_title_line(_line: &[u8]) -> bool {
    false
}

/// Does this header carry oh-my-pi markers?
pub(crate) fn is_omp_header(_obj: &Map<String, Value>) -> bool {
    false
}

#[derive(Debug)]
pub(crate) struct PiReader {
    omp: bool,
}

impl PiReader {
    pub(crate) fn new(omp: bool) -> Self {
        PiReader { omp }
    }
}

impl FormatReader for PiReader {
    fn object(&mut self, _loc: Loc, _obj: Map<String, Value>, _b: &mut Builder) {
        let _ = self.omp;
    }
    fn finish(&mut self, _b: &mut Builder) {}
}
