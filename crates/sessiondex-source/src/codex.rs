//! Codex CLI rollouts: the bare-line form and the `{timestamp,type,payload}` envelope.

use serde_json::{Map, Value};

use crate::jsonl::Loc;
use crate::session::Builder;
use crate::FormatReader;

/// Is this the first line of a bare-line (pre-envelope) rollout?
pub(crate) fn is_bare_header(obj: &Map<String, Value>) -> bool {
    obj.contains_key("id")
        && obj.contains_key("timestamp")
        && !obj.contains_key("type")
        && (obj.contains_key("instructions") || obj.contains_key("git"))
}

#[derive(Debug, Default)]
pub(crate) struct CodexReader {}

impl FormatReader for CodexReader {
    fn object(&mut self, _loc: Loc, _obj: Map<String, Value>, _b: &mut Builder) {}
    fn finish(&mut self, _b: &mut Builder) {}
}
