//! pi (v1, v2, v3) and oh-my-pi session files.
//!
//! One JSON object per line. The first object is the `{"type":"session"}` header (session
//! id, cwd, creation time, links); every later object is an entry. v1 entries carry no
//! `id`/`parentId`: they get position ids (`l<line>`, `l<line>.<k>`) and each one's parent
//! is the entry before it, so the whole file is one path. v2/v3 (and oh-my-pi) entries form
//! a tree through `id`/`parentId`; the leaf is the last entry in file order.
//!
//! oh-my-pi may put a fixed-width title slot before the header: a JSON line
//! `{"type":"title","v":1,"title":…,"source":…,"updatedAt":…,"pad":"   "}` padded with
//! spaces to 256 bytes including the newline. It carries the current title and is not an
//! entry. See `docs/formats-pi.md`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::hash::{HashMap, HashSet};
use crate::jsonl::Loc;
use crate::record::{Outcome, Record, SessionLink, TextClass};
use crate::session::Builder;
use crate::util::{files_from_args, normalize_ts, split_tool, str_field, value_text};
use crate::FormatReader;

/// Is this object oh-my-pi's title slot (`{"type":"title","v":1,"title":"…",…}`)?
fn is_title_slot(obj: &Map<String, Value>) -> bool {
    str_field(obj, "type") == Some("title")
        && obj.get("v").and_then(Value::as_u64) == Some(1)
        && obj.get("title").is_some_and(Value::is_string)
}

/// Is this first line oh-my-pi's fixed-width title line?
///
/// The slot is a JSON object with `type:"title"` and `v:1` (oh-my-pi writes it padded to
/// 256 bytes including the newline; like oh-my-pi's own loader we do not insist on the width, so a
/// slot whose padding was trimmed still counts).
pub(crate) fn is_omp_title_line(line: &[u8]) -> bool {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    if !text.starts_with('{') {
        return false;
    }
    let mut it = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    matches!(it.next(), Some(Ok(Value::Object(obj))) if is_title_slot(&obj))
}

/// Header keys only oh-my-pi writes (pi's header has `version`, `id`, `timestamp`, `cwd`,
/// `parentSession`, and in v1 `provider`/`modelId`/`thinkingLevel`/`branchedFrom`).
const OMP_HEADER_KEYS: &[&str] = &[
    "title",
    "titleSource",
    "additionalDirectories",
    "previousSessionFiles",
    "providerPromptCacheKey",
];

/// Does this header carry oh-my-pi markers?
pub(crate) fn is_omp_header(obj: &Map<String, Value>) -> bool {
    if str_field(obj, "type") != Some("session") {
        return false;
    }
    // pi stops at version 3; oh-my-pi's tool journal bumped its files to version 4.
    if obj
        .get("version")
        .and_then(Value::as_u64)
        .is_some_and(|v| v >= 4)
    {
        return true;
    }
    OMP_HEADER_KEYS.iter().any(|k| obj.contains_key(*k))
}

#[derive(Debug)]
pub(crate) struct PiReader {
    omp: bool,
    /// The header has been read.
    header_seen: bool,
    /// The id of the last top-level entry, for v1 parent chaining and the leaf.
    last_id: Option<String>,
    /// Title from the title slot (wins over everything).
    slot_title: Option<String>,
    /// Title from the header (`title`, oh-my-pi).
    header_title: Option<String>,
    /// Title from the last `session_info` / `title_change` entry.
    entry_title: Option<String>,
    /// Carriers whose message ended with `stopReason:"aborted"`.
    aborted_carriers: HashSet<String>,
    /// oh-my-pi tool journal: `executionId` -> `toolCallId`.
    executions: HashMap<String, String>,
    /// oh-my-pi tool journal outcomes that are more specific than a result's error flag.
    journal_outcomes: HashMap<String, Outcome>,
}

/// What a pi reader needs to continue a grown file ([`crate::resume`]).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PiState {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    header_seen: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slot_title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    header_title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    entry_title: Option<String>,
    /// Sorted, so that the state of a file is always the same value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    aborted_carriers: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    executions: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    journal_outcomes: Vec<(String, Outcome)>,
}

impl PiReader {
    /// A reader that continues where the one that saved `state` stopped.
    pub(crate) fn restore(omp: bool, state: &Value) -> Option<Self> {
        let st: PiState = serde_json::from_value(state.clone()).ok()?;
        Some(PiReader {
            omp,
            header_seen: st.header_seen,
            last_id: st.last_id,
            slot_title: st.slot_title,
            header_title: st.header_title,
            entry_title: st.entry_title,
            aborted_carriers: st.aborted_carriers.into_iter().collect(),
            executions: st.executions.into_iter().collect(),
            journal_outcomes: st.journal_outcomes.into_iter().collect(),
        })
    }

    pub(crate) fn new(omp: bool) -> Self {
        PiReader {
            omp,
            header_seen: false,
            last_id: None,
            slot_title: None,
            header_title: None,
            entry_title: None,
            aborted_carriers: HashSet::default(),
            executions: HashMap::default(),
            journal_outcomes: HashMap::default(),
        }
    }

    fn header(&mut self, obj: &Map<String, Value>, b: &mut Builder) {
        self.header_seen = true;
        let meta = &mut b.meta;
        if meta.session_id.is_empty() {
            if let Some(id) = str_field(obj, "id") {
                meta.session_id = id.to_owned();
            }
        }
        if meta.format_version.is_none() {
            meta.format_version = match obj.get("version") {
                Some(Value::Number(n)) => Some(n.to_string()),
                Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
                _ => None,
            };
        }
        if meta.cwd.is_none() {
            meta.cwd = str_field(obj, "cwd").map(str::to_owned);
        }
        if meta.created.is_none() {
            meta.created = obj.get("timestamp").and_then(normalize_ts);
        }
        if let Some(t) = str_field(obj, "title").filter(|t| !t.is_empty()) {
            self.header_title = Some(t.to_owned());
        }
        for (key, kind) in [
            ("parentSession", "parent_session"),
            ("branchedFrom", "branched_from"),
        ] {
            if let Some(target) = str_field(obj, key).filter(|t| !t.is_empty()) {
                if !meta
                    .links
                    .iter()
                    .any(|l| l.kind == kind && l.target == target)
                {
                    meta.links.push(SessionLink {
                        kind: kind.to_owned(),
                        target: target.to_owned(),
                    });
                }
            }
        }
    }
}

/// Text of a pi content value: a string, or the `text` blocks of an array joined by newlines.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => {
            let parts: Vec<&str> = blocks
                .iter()
                .filter_map(Value::as_object)
                .filter(|b| str_field(b, "type") == Some("text"))
                .filter_map(|b| str_field(b, "text"))
                .collect();
            parts.join("\n")
        }
        _ => String::new(),
    }
}

fn join_nonempty(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("\n")
}

fn set_tool(r: &mut Record, name: &str) {
    let (reference, provider, action) = split_tool(name);
    r.tool = Some(name.to_owned());
    r.reference = Some(reference);
    r.provider = provider;
    r.action = Some(action);
}

/// Outcome of a shell execution entry (`bashExecution`, `pythonExecution`): `cancelled`
/// first, then the exit code.
fn execution_outcome(msg: &Map<String, Value>) -> Option<Outcome> {
    if msg.get("cancelled").and_then(Value::as_bool) == Some(true) {
        return Some(Outcome::Aborted);
    }
    match msg.get("exitCode").and_then(Value::as_i64) {
        Some(0) => Some(Outcome::Succeeded),
        Some(_) => Some(Outcome::Failed),
        None => None,
    }
}

/// Outcome of an oh-my-pi `tool_execution_settled` entry.
fn journal_outcome(outcome: &Map<String, Value>) -> Option<Outcome> {
    match str_field(outcome, "kind")? {
        "succeeded" => Some(Outcome::Succeeded),
        "failed" => {
            let timed_out = outcome
                .get("process")
                .and_then(Value::as_object)
                .and_then(|p| str_field(p, "kind"))
                == Some("timed_out");
            Some(if timed_out {
                Outcome::TimedOut
            } else {
                Outcome::Failed
            })
        }
        "interrupted" => Some(Outcome::Aborted),
        _ => None,
    }
}

impl PiReader {
    /// Fills a `message` entry's record from its `message` object; returns the tool call
    /// children to push after it.
    fn message(&mut self, r: &mut Record, msg: &Map<String, Value>) -> Vec<Record> {
        let role = str_field(msg, "role").unwrap_or("");
        let mut children = Vec::new();
        match role {
            "user" => {
                r.role = Some("user".into());
                r.text = content_text(msg.get("content"));
                r.class = TextClass::UserText;
            }
            "developer" => {
                r.role = Some("developer".into());
                r.text = content_text(msg.get("content"));
                r.class = TextClass::Meta;
            }
            "assistant" => {
                r.role = Some("assistant".into());
                let mut texts: Vec<&str> = Vec::new();
                let mut thinking: Vec<&str> = Vec::new();
                match msg.get("content") {
                    Some(Value::String(s)) => texts.push(s),
                    Some(Value::Array(blocks)) => {
                        for block in blocks.iter().filter_map(Value::as_object) {
                            match str_field(block, "type") {
                                Some("text") => texts.extend(str_field(block, "text")),
                                Some("thinking") => thinking.extend(str_field(block, "thinking")),
                                Some("toolCall") => {
                                    let k = children.len();
                                    children.push(tool_call_child(r, block, k));
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
                let stop = str_field(msg, "stopReason");
                if stop == Some("error") {
                    r.is_error = Some(true);
                    if let Some(e) = str_field(msg, "errorMessage") {
                        texts.push(e);
                    }
                }
                if stop == Some("aborted") {
                    self.aborted_carriers.insert(r.entry_id.clone());
                }
                r.text = join_nonempty(&texts);
                let thinking = join_nonempty(&thinking);
                r.class = if r.text.is_empty() && !thinking.is_empty() && children.is_empty() {
                    TextClass::Thinking
                } else {
                    TextClass::AssistantText
                };
                if !thinking.is_empty() {
                    r.thinking = Some(thinking);
                }
            }
            "toolResult" => {
                r.role = Some("tool".into());
                r.class = TextClass::ToolOutput;
                r.text = content_text(msg.get("content"));
                r.call_id = str_field(msg, "toolCallId").map(str::to_owned);
                if let Some(name) = str_field(msg, "toolName") {
                    set_tool(r, name);
                }
                let is_error = msg.get("isError").and_then(Value::as_bool);
                r.is_error = is_error;
                r.outcome = Some(if is_error == Some(true) {
                    Outcome::Failed
                } else {
                    Outcome::Succeeded
                });
            }
            "bashExecution" | "pythonExecution" => {
                let (tool, input_key) = if role == "bashExecution" {
                    ("bash", "command")
                } else {
                    ("python", "code")
                };
                r.role = Some("tool".into());
                r.class = TextClass::ToolOutput;
                set_tool(r, tool);
                r.text = join_nonempty(&[
                    str_field(msg, input_key).unwrap_or(""),
                    str_field(msg, "output").unwrap_or(""),
                ]);
                r.outcome = execution_outcome(msg);
            }
            "custom" | "hookMessage" => {
                r.role = Some("system".into());
                r.class = TextClass::Meta;
                r.text = content_text(msg.get("content"));
            }
            "branchSummary" | "compactionSummary" => {
                r.class = TextClass::Summary;
                r.text = str_field(msg, "summary").unwrap_or("").to_owned();
            }
            "fileMention" => {
                r.role = Some("user".into());
                r.class = TextClass::Meta;
                let paths: Vec<String> = msg
                    .get("files")
                    .and_then(Value::as_array)
                    .map(|files| {
                        files
                            .iter()
                            .filter_map(Value::as_object)
                            .filter_map(|f| str_field(f, "path"))
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                r.text = paths.join("\n");
                r.files_touched = paths;
            }
            other => {
                if !other.is_empty() {
                    r.role = Some(other.to_owned());
                }
                r.class = TextClass::Meta;
                r.text = content_text(msg.get("content"));
            }
        }
        children
    }
}

/// A child record for the `k`-th `toolCall` block of carrier `r`.
fn tool_call_child(r: &Record, block: &Map<String, Value>, k: usize) -> Record {
    let address = format!("{}/{}", r.entry_id, k);
    let args = block.get("arguments").unwrap_or(&Value::Null);
    let mut c = Record {
        entry_id: address.clone(),
        kind: "tool_call".into(),
        timestamp: r.timestamp.clone(),
        text: value_text(args),
        class: TextClass::ToolInput,
        operation_address: Some(address),
        parent_entry_id: Some(r.entry_id.clone()),
        call_id: str_field(block, "id").map(str::to_owned),
        files_touched: files_from_args(args),
        line: r.line,
        offset: r.offset,
        ..Record::default()
    };
    if let Some(name) = str_field(block, "name") {
        set_tool(&mut c, name);
    }
    c
}

impl FormatReader for PiReader {
    fn object(&mut self, loc: Loc, obj: Map<String, Value>, b: &mut Builder) {
        let ty = str_field(&obj, "type").unwrap_or("");
        // oh-my-pi's title slot: written as the first line; accepted anywhere before the header
        // so that damage before it does not turn it into an entry.
        if !self.header_seen && is_title_slot(&obj) {
            self.slot_title = str_field(&obj, "title")
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            return;
        }
        if ty == "session" {
            self.header(&obj, b);
            return;
        }

        // Ids: the entry's own (v2/v3, oh-my-pi) or its position (v1).
        let (entry_id, parent_id) = match str_field(&obj, "id").filter(|s| !s.is_empty()) {
            Some(id) => (
                id.to_owned(),
                str_field(&obj, "parentId").map(str::to_owned),
            ),
            None => (loc.derived_id(), self.last_id.clone()),
        };
        let message = obj.get("message").and_then(Value::as_object);
        let timestamp = obj.get("timestamp").and_then(normalize_ts).or_else(|| {
            message
                .and_then(|m| m.get("timestamp"))
                .and_then(normalize_ts)
        });
        let mut r = Record {
            entry_id,
            parent_id,
            kind: if ty.is_empty() {
                "unknown".into()
            } else {
                ty.to_owned()
            },
            timestamp,
            class: TextClass::Meta,
            line: loc.line,
            offset: loc.offset,
            ..Record::default()
        };
        let mut children = Vec::new();
        let text_of = |key: &str| str_field(&obj, key).unwrap_or("").to_owned();
        match ty {
            "message" => {
                if let Some(msg) = message {
                    children = self.message(&mut r, msg);
                }
            }
            "compaction" | "branch_summary" => {
                r.class = TextClass::Summary;
                r.text = text_of("summary");
            }
            "model_change" => {
                r.text = match (str_field(&obj, "provider"), str_field(&obj, "modelId")) {
                    (Some(p), Some(m)) => format!("{p}/{m}"),
                    (None, Some(m)) => m.to_owned(),
                    _ => text_of("model"),
                };
            }
            "thinking_level_change" => r.text = text_of("thinkingLevel"),
            "session_info" | "title_change" => {
                let key = if ty == "session_info" {
                    "name"
                } else {
                    "title"
                };
                r.text = text_of(key);
                if !r.text.is_empty() {
                    self.entry_title = Some(r.text.clone());
                }
            }
            "custom" => r.text = text_of("customType"),
            "custom_message" => {
                r.role = Some("system".into());
                r.text = content_text(obj.get("content"));
            }
            "label" => r.text = text_of("label"),
            "mode_change" => r.text = text_of("mode"),
            "session_init" => r.text = text_of("task"),
            "ttsr_injection" => {
                r.text = obj
                    .get("injectedRules")
                    .and_then(Value::as_array)
                    .map(|rules| {
                        rules
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("\n")
                    })
                    .unwrap_or_default();
            }
            "model_usage" => {
                r.text = join_nonempty(&[
                    str_field(&obj, "purpose").unwrap_or(""),
                    str_field(&obj, "model").unwrap_or(""),
                ]);
                if str_field(&obj, "stopReason") == Some("error") {
                    r.is_error = Some(true);
                }
            }
            "tool_execution_started" => {
                let call = obj.get("call").and_then(Value::as_object);
                if let Some(call) = call {
                    r.call_id = str_field(call, "toolCallId").map(str::to_owned);
                    if let Some(name) = str_field(call, "toolName") {
                        set_tool(&mut r, name);
                    }
                    r.text = str_field(call, "title").unwrap_or("").to_owned();
                    if let (Some(exec), Some(call_id)) =
                        (str_field(&obj, "executionId"), r.call_id.clone())
                    {
                        self.executions.insert(exec.to_owned(), call_id);
                    }
                }
            }
            "tool_execution_settled" => {
                r.call_id = str_field(&obj, "executionId")
                    .and_then(|e| self.executions.get(e))
                    .cloned();
                if let Some(outcome) = obj.get("outcome").and_then(Value::as_object) {
                    r.outcome = journal_outcome(outcome);
                    r.text = outcome
                        .get("failure")
                        .and_then(Value::as_object)
                        .and_then(|f| str_field(f, "message"))
                        .or_else(|| str_field(outcome, "reason"))
                        .unwrap_or("")
                        .to_owned();
                }
                if let (Some(call_id), Some(o @ (Outcome::TimedOut | Outcome::Aborted))) =
                    (r.call_id.clone(), r.outcome)
                {
                    self.journal_outcomes.insert(call_id, o);
                }
            }
            _ => {}
        }
        self.last_id = Some(r.entry_id.clone());
        b.push(r);
        for c in children {
            b.push(c);
        }
    }

    fn finish(&mut self, b: &mut Builder) {
        let _ = self.omp;
        b.meta.title = self
            .slot_title
            .clone()
            .or_else(|| self.entry_title.clone())
            .or_else(|| self.header_title.clone());
        // No header (a damaged file read with a forced format): name the session after its
        // file, as pi names files `<timestamp>_<session id>.jsonl`.
        if b.meta.session_id.is_empty() {
            let path = std::path::Path::new(&b.meta.file);
            let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
            if let Some(stem) = stem {
                let id = stem.rsplit_once('_').map_or(stem.as_str(), |(_, id)| id);
                b.meta.session_id = id.to_owned();
            }
        }
        // Calls of an aborted message that never got a result were aborted.
        let answered: HashSet<String> = b
            .records
            .iter()
            .filter(|r| r.parent_entry_id.is_none() && r.kind != "tool_call")
            .filter(|r| r.outcome.is_some() || r.is_error.is_some())
            .filter_map(|r| r.call_id.clone())
            .collect();
        for r in &mut b.records {
            if r.kind != "tool_call" {
                continue;
            }
            if let Some(o) = r
                .call_id
                .as_ref()
                .and_then(|id| self.journal_outcomes.get(id))
            {
                r.outcome = Some(*o);
                continue;
            }
            let carrier_aborted = r
                .parent_entry_id
                .as_ref()
                .is_some_and(|p| self.aborted_carriers.contains(p));
            let has_result = r.call_id.as_ref().is_some_and(|id| answered.contains(id));
            if carrier_aborted && !has_result && r.outcome.is_none() {
                r.outcome = Some(Outcome::Aborted);
            }
        }
        // pi and oh-my-pi resume at the last entry in file order.
        b.leaf = self.last_id.clone();
    }

    fn save_state(&self, _records: &[Record]) -> Value {
        let mut aborted_carriers: Vec<String> = self.aborted_carriers.iter().cloned().collect();
        // Distinct (a set's), so any sort gives one order; the unstable one is less code.
        aborted_carriers.sort_unstable();
        let mut executions: Vec<(String, String)> = self
            .executions
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        executions.sort_unstable();
        let mut journal_outcomes: Vec<(String, Outcome)> = self
            .journal_outcomes
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        journal_outcomes.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let st = PiState {
            header_seen: self.header_seen,
            last_id: self.last_id.clone(),
            slot_title: self.slot_title.clone(),
            header_title: self.header_title.clone(),
            entry_title: self.entry_title.clone(),
            aborted_carriers,
            executions,
            journal_outcomes,
        };
        serde_json::to_value(st).unwrap_or(Value::Null)
    }
}
