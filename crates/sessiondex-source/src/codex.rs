//! Codex CLI rollouts: the bare-line form and the `{timestamp,type,payload}` envelope.
//!
//! Codex lines carry no ids. Every object becomes one top-level record whose id is derived from
//! its position ([`Loc::derived_id`]) and whose parent is the record before it, so a rollout is
//! a single line of history and the leaf is the last record. Tool calls (`function_call`,
//! `custom_tool_call`, ...) are lines of their own: the line's record is the carrier and the
//! call itself is its one child record `<id>/0`.
//!
//! `docs/formats-codex.md` describes the mapping field by field.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::coverage::ReasonCode;
use crate::hash::HashSet;
use crate::jsonl::Loc;
use crate::record::{Outcome, Record, SessionLink, TextClass};
use crate::session::Builder;
use crate::util::{files_from_args, normalize_ts, split_tool, str_field, value_text};
use crate::FormatReader;

/// Is this the first line of a bare-line (pre-envelope) rollout?
pub(crate) fn is_bare_header(obj: &Map<String, Value>) -> bool {
    obj.contains_key("id")
        && obj.contains_key("timestamp")
        && !obj.contains_key("type")
        && (obj.contains_key("instructions") || obj.contains_key("git"))
}

/// Envelope types we know and keep only as metadata records.
const META_ENVELOPES: &[&str] = &[
    "turn_context",
    "world_state",
    "inter_agent_communication_metadata",
];

/// Response item types we know and keep only as metadata records.
const META_ITEMS: &[&str] = &[
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
    "other",
];

#[derive(Debug, Default)]
pub(crate) struct CodexReader {
    /// Id of the previous top-level record: the parent of the next one.
    prev: Option<String>,
    /// The first `session_meta` (or bare header) has been read.
    seen_meta: bool,
    /// `forked_from_id` of a later `session_meta`, used when the first one has none.
    later_fork: Option<String>,
    /// Call ids of tool calls that have not seen any result line yet.
    pending: HashSet<String>,
    /// Call ids that were in flight when a `turn_aborted` event came and that got no typed
    /// outcome afterwards.
    aborted: HashSet<String>,
}

/// What a Codex reader needs to continue a grown file ([`crate::resume`]).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CodexState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prev: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    seen_meta: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    later_fork: Option<String>,
    /// Sorted, so that the state of a file is always the same value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pending: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    aborted: Vec<String>,
}

impl CodexReader {
    /// A reader that continues where the one that saved `state` stopped.
    pub(crate) fn restore(state: &Value) -> Option<Self> {
        let st: CodexState = serde_json::from_value(state.clone()).ok()?;
        Some(CodexReader {
            prev: st.prev,
            seen_meta: st.seen_meta,
            later_fork: st.later_fork,
            pending: st.pending.into_iter().collect(),
            aborted: st.aborted.into_iter().collect(),
        })
    }
}

fn sorted(set: &HashSet<String>) -> Vec<String> {
    let mut v: Vec<String> = set.iter().cloned().collect();
    // Distinct, so the unstable sort gives the one order (and is less code).
    v.sort_unstable();
    v
}

/// What a tool call line contributes to its child record.
struct Call {
    tool: String,
    namespace: Option<String>,
    call_id: Option<String>,
    text: String,
    files: Vec<String>,
    outcome: Option<Outcome>,
}

impl CodexReader {
    /// A new top-level record at `loc`, chained to the previous one.
    fn record(&mut self, loc: &Loc, kind: &str, timestamp: Option<String>) -> Record {
        let id = loc.derived_id();
        Record {
            parent_id: self.prev.replace(id.clone()),
            entry_id: id,
            kind: kind.to_owned(),
            timestamp,
            class: TextClass::Meta,
            line: loc.line,
            offset: loc.offset,
            ..Record::default()
        }
    }

    /// A metadata record: no role, no text.
    fn meta_record(&mut self, loc: &Loc, kind: &str, ts: Option<String>, b: &mut Builder) {
        let r = self.record(loc, kind, ts);
        b.push(r);
    }

    /// A result line for `call_id` arrived (with or without a typed outcome).
    fn saw_result(&mut self, call_id: Option<&str>, outcome: Option<Outcome>) {
        if let Some(id) = call_id {
            self.pending.remove(id);
            if outcome.is_some() {
                self.aborted.remove(id);
            }
        }
    }

    fn session_meta(
        &mut self,
        loc: &Loc,
        p: &Map<String, Value>,
        ts: Option<String>,
        b: &mut Builder,
    ) {
        let fork = str_field(p, "forked_from_id").filter(|s| !s.is_empty());
        if self.seen_meta {
            if self.later_fork.is_none() {
                self.later_fork = fork.map(str::to_owned);
            }
        } else {
            self.seen_meta = true;
            let m = &mut b.meta;
            if let Some(id) = str_field(p, "id")
                .or_else(|| str_field(p, "session_id"))
                .filter(|s| !s.is_empty())
            {
                m.session_id = id.to_owned();
            }
            if let Some(cwd) = str_field(p, "cwd").filter(|s| !s.is_empty()) {
                m.cwd = Some(cwd.to_owned());
            }
            if let Some(v) = str_field(p, "cli_version").filter(|s| !s.is_empty()) {
                m.format_version = Some(v.to_owned());
            }
            m.created = p
                .get("timestamp")
                .and_then(normalize_ts)
                .or_else(|| ts.clone());
            if let Some(f) = fork {
                m.links.push(SessionLink {
                    kind: "forked_from".into(),
                    target: f.to_owned(),
                });
            }
            let spawn_parent = p
                .get("source")
                .and_then(|s| s.get("subagent"))
                .and_then(|s| s.get("thread_spawn"))
                .and_then(|s| s.get("parent_thread_id"))
                .and_then(Value::as_str);
            if let Some(parent) = str_field(p, "parent_thread_id")
                .or(spawn_parent)
                .filter(|s| !s.is_empty())
            {
                m.links.push(SessionLink {
                    kind: "subagent_of".into(),
                    target: parent.to_owned(),
                });
            }
        }
        self.meta_record(loc, "session_meta", ts, b);
    }

    /// A response item: enveloped `payload`, or a bare line of the old format.
    fn response_item(
        &mut self,
        loc: &Loc,
        p: &Map<String, Value>,
        ts: Option<String>,
        b: &mut Builder,
    ) {
        let ty = str_field(p, "type").unwrap_or("");
        match ty {
            "message" | "agent_message" => {
                let role = if ty == "message" {
                    str_field(p, "role").map(str::to_owned)
                } else {
                    Some("assistant".to_owned())
                };
                let mut r = self.record(loc, ty, ts);
                r.class = match role.as_deref() {
                    Some("user") => TextClass::UserText,
                    Some("assistant") => TextClass::AssistantText,
                    _ => TextClass::Meta,
                };
                r.role = role;
                r.text = p.get("content").map(content_text).unwrap_or_default();
                b.push(r);
            }
            "reasoning" => {
                let mut parts = Vec::new();
                for key in ["summary", "content"] {
                    let t = p.get(key).map(content_text).unwrap_or_default();
                    if !t.is_empty() {
                        parts.push(t);
                    }
                }
                let mut r = self.record(loc, ty, ts);
                r.role = Some("assistant".into());
                r.class = TextClass::Thinking;
                if !parts.is_empty() {
                    r.thinking = Some(parts.join("\n"));
                }
                b.push(r);
            }
            "function_call" => {
                let name = str_field(p, "name").unwrap_or("");
                let (text, args) = match p.get("arguments") {
                    Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                        Ok(v) => (v.to_string(), Some(v)),
                        Err(_) => (s.clone(), None),
                    },
                    Some(Value::Null) | None => (String::new(), None),
                    Some(v) => (v.to_string(), Some(v.clone())),
                };
                let mut files = args.as_ref().map(files_from_args).unwrap_or_default();
                if name == "apply_patch" {
                    // The old function form of apply_patch: `{"input": "*** Begin Patch ..."}`.
                    if let Some(input) = args
                        .as_ref()
                        .and_then(|a| a.get("input"))
                        .and_then(Value::as_str)
                    {
                        add_unique(&mut files, patch_files(input));
                    }
                }
                let call = Call {
                    tool: name.to_owned(),
                    namespace: str_field(p, "namespace")
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned),
                    call_id: str_field(p, "call_id").map(str::to_owned),
                    text,
                    files,
                    outcome: None,
                };
                self.call(loc, ty, ts, call, b);
            }
            "custom_tool_call" => {
                let name = str_field(p, "name").unwrap_or("");
                let input = p.get("input").map(value_text).unwrap_or_default();
                let files = if name == "apply_patch" {
                    patch_files(&input)
                } else {
                    Vec::new()
                };
                let call = Call {
                    tool: name.to_owned(),
                    namespace: None,
                    call_id: str_field(p, "call_id").map(str::to_owned),
                    text: input,
                    files,
                    outcome: None,
                };
                self.call(loc, ty, ts, call, b);
            }
            "local_shell_call" => {
                let action = p.get("action").cloned().unwrap_or(Value::Null);
                let call = Call {
                    tool: "local_shell".into(),
                    namespace: None,
                    call_id: str_field(p, "call_id")
                        .or_else(|| str_field(p, "id"))
                        .map(str::to_owned),
                    text: json_text(&action),
                    files: files_from_args(&action),
                    outcome: None,
                };
                self.call(loc, ty, ts, call, b);
            }
            "web_search_call" | "image_generation_call" => {
                let (tool, text) = if ty == "web_search_call" {
                    (
                        "web_search",
                        json_text(p.get("action").unwrap_or(&Value::Null)),
                    )
                } else {
                    (
                        "image_generation",
                        p.get("revised_prompt").map(value_text).unwrap_or_default(),
                    )
                };
                // These run on the server: the item's own status is the execution status.
                let outcome = match str_field(p, "status") {
                    Some("completed") => Some(Outcome::Succeeded),
                    Some("failed") => Some(Outcome::Failed),
                    _ => None,
                };
                let call = Call {
                    tool: tool.into(),
                    namespace: None,
                    call_id: str_field(p, "call_id").map(str::to_owned),
                    text,
                    files: Vec::new(),
                    outcome,
                };
                self.call(loc, ty, ts, call, b);
            }
            "tool_search_call" => {
                let args = p.get("arguments").cloned().unwrap_or(Value::Null);
                let call = Call {
                    tool: "tool_search".into(),
                    namespace: None,
                    call_id: str_field(p, "call_id").map(str::to_owned),
                    text: json_text(&args),
                    files: files_from_args(&args),
                    outcome: None,
                };
                self.call(loc, ty, ts, call, b);
            }
            "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
                let call_id = str_field(p, "call_id").map(str::to_owned);
                let (text, outcome) = if ty == "tool_search_output" {
                    (json_text(p.get("tools").unwrap_or(&Value::Null)), None)
                } else {
                    output_text(p.get("output").unwrap_or(&Value::Null))
                };
                self.saw_result(call_id.as_deref(), outcome);
                let mut r = self.record(loc, ty, ts);
                r.role = Some("tool".into());
                r.class = TextClass::ToolOutput;
                r.call_id = call_id;
                r.outcome = outcome;
                r.text = text;
                b.push(r);
            }
            _ => {
                if !META_ITEMS.contains(&ty) {
                    b.coverage.add(ReasonCode::UnknownEntryType, loc.line);
                }
                // `tool_call` is the type of child records; an item that calls itself that is
                // kept under its envelope type.
                let kind = if ty.is_empty() || ty == "tool_call" {
                    "response_item"
                } else {
                    ty
                };
                self.meta_record(loc, kind, ts, b);
            }
        }
    }

    /// The carrier record of a tool call line, then its child record.
    fn call(&mut self, loc: &Loc, kind: &str, ts: Option<String>, call: Call, b: &mut Builder) {
        let mut carrier = self.record(loc, kind, ts);
        carrier.role = Some("assistant".into());
        let carrier_id = carrier.entry_id.clone();
        let (reference, provider, action) = match &call.namespace {
            Some(ns) => (
                format!("{ns}.{}", call.tool),
                Some(ns.clone()),
                call.tool.clone(),
            ),
            None => split_tool(&call.tool),
        };
        if let Some(id) = &call.call_id {
            self.pending.insert(id.clone());
        }
        let child_id = format!("{carrier_id}/0");
        let child = Record {
            entry_id: child_id.clone(),
            operation_address: Some(child_id),
            parent_entry_id: Some(carrier_id),
            kind: "tool_call".into(),
            tool: Some(call.tool),
            reference: Some(reference),
            provider,
            action: Some(action),
            call_id: call.call_id,
            outcome: call.outcome,
            text: call.text,
            class: TextClass::ToolInput,
            files_touched: call.files,
            timestamp: carrier.timestamp.clone(),
            line: carrier.line,
            offset: carrier.offset,
            ..Record::default()
        };
        b.push(carrier);
        b.push(child);
    }

    fn event(&mut self, loc: &Loc, p: &Map<String, Value>, ts: Option<String>, b: &mut Builder) {
        let ty = str_field(p, "type").unwrap_or("");
        let kind = if ty.is_empty() || ty == "tool_call" {
            "event_msg"
        } else {
            ty
        };
        let mut r = self.record(loc, kind, ts);
        match ty {
            "exec_command_end" => {
                r.call_id = str_field(p, "call_id").map(str::to_owned);
                r.outcome = exec_outcome(p);
            }
            "patch_apply_end" | "dynamic_tool_call_response" => {
                r.call_id = str_field(p, "call_id").map(str::to_owned);
                r.outcome = match str_field(p, "status") {
                    Some("failed") => Some(Outcome::Failed),
                    Some("declined") => Some(Outcome::Aborted),
                    _ => match p.get("success").and_then(Value::as_bool) {
                        Some(true) => Some(Outcome::Succeeded),
                        Some(false) => Some(Outcome::Failed),
                        None => None,
                    },
                };
            }
            "mcp_tool_call_end" => {
                r.call_id = str_field(p, "call_id").map(str::to_owned);
                if let Some(Value::Object(res)) = p.get("result") {
                    if let Some(Value::Object(ok)) = res.get("Ok") {
                        let is_error = ok.get("isError").and_then(Value::as_bool);
                        r.is_error = is_error;
                        r.outcome = Some(if is_error == Some(true) {
                            Outcome::Failed
                        } else {
                            Outcome::Succeeded
                        });
                    } else if res.contains_key("Err") {
                        r.outcome = Some(Outcome::Failed);
                    }
                }
            }
            "web_search_end"
            | "image_generation_end"
            | "view_image_tool_call"
            | "collab_agent_spawn_end"
            | "collab_agent_interaction_end"
            | "collab_waiting_end"
            | "collab_close_end" => {
                r.call_id = str_field(p, "call_id").map(str::to_owned);
            }
            "turn_aborted" => {
                let in_flight = std::mem::take(&mut self.pending);
                self.aborted.extend(in_flight);
            }
            "thread_name_updated" => {
                if let Some(name) = str_field(p, "thread_name").filter(|s| !s.is_empty()) {
                    b.meta.title = Some(name.to_owned());
                }
            }
            "error" | "stream_error" | "warning" => {
                r.text = p.get("message").map(value_text).unwrap_or_default();
            }
            _ => {}
        }
        if r.call_id.is_some() {
            let call_id = r.call_id.clone();
            self.saw_result(call_id.as_deref(), r.outcome);
        }
        b.push(r);
    }

    fn envelope(
        &mut self,
        loc: &Loc,
        ty: &str,
        payload: Option<&Value>,
        ts: Option<String>,
        b: &mut Builder,
    ) {
        let empty = Map::new();
        let p = match payload {
            Some(Value::Object(m)) => m,
            _ => &empty,
        };
        match ty {
            "session_meta" => self.session_meta(loc, p, ts, b),
            "response_item" => self.response_item(loc, p, ts, b),
            "event_msg" => self.event(loc, p, ts, b),
            "compacted" => {
                let mut r = self.record(loc, ty, ts);
                r.class = TextClass::Summary;
                r.text = p.get("message").map(value_text).unwrap_or_default();
                b.push(r);
            }
            _ => {
                if ty == "turn_context" && b.meta.cwd.is_none() {
                    b.meta.cwd = str_field(p, "cwd")
                        .filter(|s| !s.is_empty())
                        .map(str::to_owned);
                }
                if !META_ENVELOPES.contains(&ty) {
                    b.coverage.add(ReasonCode::UnknownEntryType, loc.line);
                }
                let kind = if ty.is_empty() || ty == "tool_call" {
                    "unknown"
                } else {
                    ty
                };
                self.meta_record(loc, kind, ts, b);
            }
        }
    }
}

impl FormatReader for CodexReader {
    fn object(&mut self, loc: Loc, obj: Map<String, Value>, b: &mut Builder) {
        let ts = obj.get("timestamp").and_then(normalize_ts);
        match obj.get("type") {
            Some(Value::String(ty)) if obj.contains_key("payload") => {
                self.envelope(&loc, ty, obj.get("payload"), ts, b);
            }
            // The old bare-line form: a response item on its own line.
            Some(Value::String(_)) => self.response_item(&loc, &obj, ts, b),
            Some(_) => {
                b.coverage.add(ReasonCode::UnknownEntryType, loc.line);
                self.meta_record(&loc, "unknown", ts, b);
            }
            None => {
                if obj.contains_key("record_type") {
                    // `{"record_type":"state"}`: a bookkeeping marker with no content.
                } else if !self.seen_meta && obj.get("id").is_some_and(Value::is_string) {
                    // The bare-line header `{id, timestamp, instructions?, git?}`.
                    self.session_meta(&loc, &obj, ts, b);
                } else {
                    b.coverage.add(ReasonCode::UnknownEntryType, loc.line);
                    self.meta_record(&loc, "unknown", ts, b);
                }
            }
        }
    }

    fn finish(&mut self, b: &mut Builder) {
        if !b.meta.links.iter().any(|l| l.kind == "forked_from") {
            if let Some(f) = self.later_fork.clone() {
                b.meta.links.push(SessionLink {
                    kind: "forked_from".into(),
                    target: f,
                });
            }
        }
        if b.meta.session_id.is_empty() {
            // No header: the file name (`rollout-<time>-<uuid>`) stands in for the id.
            let stem = std::path::Path::new(&b.meta.file)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            b.meta.session_id = stem;
        }
        if !self.aborted.is_empty() {
            for r in &mut b.records {
                if r.kind == "tool_call" && r.outcome.is_none() {
                    if let Some(id) = r.call_id.as_deref() {
                        if self.aborted.contains(id) {
                            r.outcome = Some(Outcome::Aborted);
                        }
                    }
                }
            }
        }
    }

    fn save_state(&self, _records: &[Record]) -> Value {
        let st = CodexState {
            prev: self.prev.clone(),
            seen_meta: self.seen_meta,
            later_fork: self.later_fork.clone(),
            pending: sorted(&self.pending),
            aborted: sorted(&self.aborted),
        };
        serde_json::to_value(st).unwrap_or(Value::Null)
    }
}

/// The outcome of an `exec_command_end` event: a typed timeout, the status, the exit code.
fn exec_outcome(p: &Map<String, Value>) -> Option<Outcome> {
    if p.get("timed_out").and_then(Value::as_bool) == Some(true) {
        return Some(Outcome::TimedOut);
    }
    let exit = p.get("exit_code").and_then(Value::as_i64);
    match str_field(p, "status") {
        Some("failed") => Some(Outcome::Failed),
        Some("declined") => Some(Outcome::Aborted),
        status => match exit {
            Some(0) => Some(Outcome::Succeeded),
            Some(_) => Some(Outcome::Failed),
            None if status == Some("completed") => Some(Outcome::Succeeded),
            None => None,
        },
    }
}

/// Text of a tool output: a plain string, a JSON string `{output, metadata:{exit_code}}`, an
/// array of content items, or an object with `text`/`content` and a typed `success`.
fn output_text(v: &Value) -> (String, Option<Outcome>) {
    match v {
        Value::String(s) => {
            if s.trim_start().starts_with('{') {
                if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(s) {
                    let exit = m
                        .get("metadata")
                        .and_then(|md| md.get("exit_code"))
                        .and_then(Value::as_i64);
                    let outcome = exit.map(|c| {
                        if c == 0 {
                            Outcome::Succeeded
                        } else {
                            Outcome::Failed
                        }
                    });
                    if let (Some(Value::String(out)), Some(_)) = (m.get("output"), outcome) {
                        return (out.clone(), outcome);
                    }
                    return (s.clone(), outcome);
                }
            }
            (s.clone(), None)
        }
        Value::Array(_) => (content_text(v), None),
        Value::Object(m) => {
            let text = match m.get("text").or_else(|| m.get("content")) {
                Some(t @ Value::String(_)) => value_text(t),
                Some(t @ Value::Array(_)) => content_text(t),
                _ => String::new(),
            };
            let outcome = m.get("success").and_then(Value::as_bool).map(|ok| {
                if ok {
                    Outcome::Succeeded
                } else {
                    Outcome::Failed
                }
            });
            (text, outcome)
        }
        Value::Null => (String::new(), None),
        other => (other.to_string(), None),
    }
}

/// The text blocks of a content array (`input_text`, `output_text`, `summary_text`,
/// `reasoning_text`, `text`, `refusal`), one per line; images and encrypted blocks are skipped.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let mut parts: Vec<&str> = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => parts.push(s),
                    Value::Object(block) => {
                        let ty = str_field(block, "type").unwrap_or("");
                        if ty.contains("image") || ty == "encrypted_content" {
                            continue;
                        }
                        if let Some(t) =
                            str_field(block, "text").or_else(|| str_field(block, "refusal"))
                        {
                            parts.push(t);
                        }
                    }
                    _ => {}
                }
            }
            parts.join("\n")
        }
        _ => String::new(),
    }
}

/// Compact JSON of a typed argument value; nothing for null.
fn json_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Paths named by the file headers of an apply_patch patch (`*** Add File: p`,
/// `*** Update File: p`, `*** Delete File: p`, `*** Move to: p`). The patch grammar is typed;
/// nothing else of the input is read.
fn patch_files(input: &str) -> Vec<String> {
    let mut out = Vec::new();
    if !input.trim_start().starts_with("*** Begin Patch") {
        return out;
    }
    for line in input.lines() {
        let line = line.trim_end_matches('\r');
        let path = [
            "*** Add File: ",
            "*** Update File: ",
            "*** Delete File: ",
            "*** Move to: ",
        ]
        .iter()
        .find_map(|h| line.strip_prefix(h));
        if let Some(p) = path.map(str::trim).filter(|p| !p.is_empty()) {
            if !out.iter().any(|o| o == p) {
                out.push(p.to_owned());
            }
        }
    }
    out
}

fn add_unique(into: &mut Vec<String>, more: Vec<String>) {
    for m in more {
        if !into.contains(&m) {
            into.push(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_headers_only() {
        let p = "*** Begin Patch\n*** Update File: a.rs\n@@\n-*** Add File: not/a/header\n*** Add File: b.rs\n*** Update File: c.rs\n*** Move to: d.rs\n*** Delete File: a.rs\n*** End Patch\n";
        assert_eq!(patch_files(p), vec!["a.rs", "b.rs", "c.rs", "d.rs"]);
        assert!(patch_files("*** Update File: x.rs").is_empty());
    }

    #[test]
    fn exec_outcomes() {
        let m = |v: Value| v.as_object().cloned().unwrap_or_default();
        assert_eq!(
            exec_outcome(&m(
                serde_json::json!({"exit_code": 0, "status": "completed"})
            )),
            Some(Outcome::Succeeded)
        );
        assert_eq!(
            exec_outcome(&m(serde_json::json!({"exit_code": 2}))),
            Some(Outcome::Failed)
        );
        assert_eq!(
            exec_outcome(&m(serde_json::json!({"exit_code": 0, "status": "failed"}))),
            Some(Outcome::Failed)
        );
        assert_eq!(
            exec_outcome(&m(serde_json::json!({"status": "declined"}))),
            Some(Outcome::Aborted)
        );
        assert_eq!(
            exec_outcome(&m(serde_json::json!({"exit_code": 124, "timed_out": true}))),
            Some(Outcome::TimedOut)
        );
        assert_eq!(
            exec_outcome(&m(serde_json::json!({"exit_code": "1"}))),
            None
        );
    }
}
