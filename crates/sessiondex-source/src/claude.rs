//! Claude Code transcripts: main files, sidechain lines, subagent files.

use serde_json::{Map, Value};

use crate::jsonl::Loc;
use crate::session::Builder;
use crate::FormatReader;

#[derive(Debug, Default)]
pub(crate) struct ClaudeReader {}

impl FormatReader for ClaudeReader {
    fn object(&mut self, _loc: Loc, _obj: Map<String, Value>, _b: &mut Builder) {}
    fn finish(&mut self, _b: &mut Builder) {}
}
