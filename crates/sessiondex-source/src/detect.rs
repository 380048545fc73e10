//! Format detection from content.

use serde_json::{Map, Value};

use crate::record::Format;

/// How many leading lines detection may look at (oh-my-pi's title line comes before the
/// header; Claude Code files may open with several metadata lines).
pub(crate) const DETECT_LINES: usize = 8;

/// Detects the format of a session from its first bytes (one or more whole lines).
///
/// Returns `None` when no line seen so far decides it.
#[must_use]
pub fn detect(head: &[u8]) -> Option<Format> {
    let mut saw_title_line = false;
    for (i, line) in head.split(|&b| b == b'\n').enumerate() {
        if i >= DETECT_LINES {
            break;
        }
        let text = String::from_utf8_lossy(line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let mut objects = serde_json::Deserializer::from_str(text).into_iter::<Value>();
        match objects.next() {
            Some(Ok(Value::Object(obj))) => {
                // oh-my-pi's title slot is itself a JSON line (`{"type":"title","v":1,...}`).
                if i == 0 && crate::pi::is_omp_title_line(line) {
                    saw_title_line = true;
                    continue;
                }
                if let Some(f) = detect_object(&obj, saw_title_line) {
                    return Some(f);
                }
            }
            _ => {
                if i == 0 && crate::pi::is_omp_title_line(line) {
                    saw_title_line = true;
                }
            }
        }
    }
    None
}

fn detect_object(obj: &Map<String, Value>, after_title: bool) -> Option<Format> {
    let ty = obj.get("type").and_then(Value::as_str);
    if ty == Some("session") {
        return Some(if after_title || crate::pi::is_omp_header(obj) {
            Format::Omp
        } else {
            Format::Pi
        });
    }
    if obj.contains_key("payload") && obj.contains_key("timestamp") && ty.is_some() {
        return Some(Format::Codex);
    }
    if crate::codex::is_bare_header(obj) {
        return Some(Format::Codex);
    }
    if obj.contains_key("sessionId") || obj.contains_key("uuid") || obj.contains_key("leafUuid") {
        return Some(Format::ClaudeCode);
    }
    if matches!(
        ty,
        Some("file-history-snapshot" | "summary" | "queue-operation")
    ) {
        return Some(Format::ClaudeCode);
    }
    None
}
