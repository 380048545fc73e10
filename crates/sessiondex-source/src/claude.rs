//! Claude Code transcripts: main files, sidechain lines, subagent files.
//!
//! Every line is one JSON object. Lines that carry a `uuid` are nodes of a tree linked by
//! `parentUuid` (at a `system/compact_boundary` line by `logicalParentUuid`); lines without a
//! `uuid` (`summary`, `file-history-snapshot`, `queue-operation`, titles, ...) get a position id
//! and no parent, so only `branches=all` keeps them. `docs/formats-claude.md` has the mapping.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::coverage::ReasonCode;
use crate::hash::{HashMap, HashSet};
use crate::jsonl::Loc;
use crate::record::{Outcome, Record, SessionLink, TextClass};
use crate::session::Builder;
use crate::util::{files_from_args, normalize_ts, split_tool, str_field, value_text};
use crate::FormatReader;

/// Entry types this reader knows. Others still become a `meta` record, and are counted as
/// `unknown_entry_type` (informational).
const KNOWN_TYPES: &[&str] = &[
    "user",
    "assistant",
    "system",
    "summary",
    "custom-title",
    "ai-title",
    "agent-name",
    "last-prompt",
    "file-history-snapshot",
    "progress",
    "queue-operation",
    "attachment",
    "permission-mode",
    "mode",
    "pr-link",
    "frame-link",
    "worktree-state",
    "relocated",
    "started",
    "result",
    "bridge-session",
    "atis-latch",
];

/// A line with a `uuid`: one node of the conversation tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Node {
    uuid: String,
    /// Entry id of the line's first record (`<uuid>#0` when a line has several).
    first_id: String,
    /// `logicalParentUuid` at a compact boundary, else `parentUuid`.
    parent: Option<String>,
    /// `parentUuid` as written.
    raw_parent: Option<String>,
    /// `message.id` of an assistant line (one API message may span several lines).
    message_id: Option<String>,
    /// A user line holding `tool_result` blocks.
    tool_result: bool,
    /// A `user` or `assistant` line.
    conversational: bool,
    sidechain: bool,
    timestamp: Option<String>,
}

#[derive(Debug, Default)]
pub(crate) struct ClaudeReader {
    nodes: Vec<Node>,
    session_id: Option<String>,
    agent_id: Option<String>,
    cwd: Option<String>,
    version: Option<String>,
    created: Option<String>,
    forked_from: Option<String>,
    custom_title: Option<String>,
    ai_title: Option<String>,
    /// `(leafUuid, summary)` of every `summary` line.
    summaries: Vec<(String, String)>,
    /// The first user/assistant line was a sidechain line with an `agentId`.
    first_conversational_is_agent: Option<bool>,
    /// Every user/assistant line so far was a sidechain line.
    all_sidechain: bool,
}

/// A node as the resume state keeps it: by the position of its records in the session, plus
/// what the records do not say. A node whose records do not give it back is kept whole.
#[derive(Debug, Serialize, Deserialize)]
struct SavedNode {
    /// Index of the node's first record among the session's records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    i: Option<usize>,
    /// How many records after the first one belong to the line (`<uuid>#<k>` chains).
    #[serde(default, skip_serializing_if = "is_zero")]
    n: usize,
    /// `message.id` of an assistant line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    m: Option<String>,
    /// The lineage parent when it is not `parentUuid` (a compact boundary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<String>,
    /// A user line holding tool results.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    r: bool,
    /// The whole node, when the records cannot give it back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    node: Option<Node>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What a Claude Code reader needs to continue a grown file ([`crate::resume`]).
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeState {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    nodes: Vec<SavedNode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    forked_from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    custom_title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    ai_title: Option<String>,
    /// The summary lines that can still give the title: the one that gives it now and the
    /// later ones whose leaf is not in the file (yet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    summaries: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    first_conversational_is_agent: Option<bool>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    all_sidechain: bool,
}

/// The node a saved node stands for, from the records it points at.
fn node_from_records(s: SavedNode, records: &[Record]) -> Option<Node> {
    if let Some(node) = s.node {
        return Some(node);
    }
    let i = s.i?;
    let first = records.get(i)?;
    let last = records.get(i.checked_add(s.n)?)?;
    Some(Node {
        uuid: last.entry_id.clone(),
        first_id: first.entry_id.clone(),
        parent: s.p.or_else(|| first.parent_id.clone()),
        raw_parent: first.parent_id.clone(),
        message_id: s.m,
        tool_result: s.r,
        conversational: matches!(first.kind.as_str(), "user" | "assistant"),
        sidechain: first.sidechain,
        timestamp: first.timestamp.clone(),
    })
}

impl ClaudeReader {
    /// A reader that continues where the one that saved `state` stopped; `records` are the
    /// session's records (their texts are not read).
    pub(crate) fn restore(state: &Value, records: &[Record]) -> Option<Self> {
        let st: ClaudeState = serde_json::from_value(state.clone()).ok()?;
        let nodes = st
            .nodes
            .into_iter()
            .map(|s| node_from_records(s, records))
            .collect::<Option<Vec<Node>>>()?;
        Some(ClaudeReader {
            nodes,
            session_id: st.session_id,
            agent_id: st.agent_id,
            cwd: st.cwd,
            version: st.version,
            created: st.created,
            forked_from: st.forked_from,
            custom_title: st.custom_title,
            ai_title: st.ai_title,
            summaries: st.summaries,
            first_conversational_is_agent: st.first_conversational_is_agent,
            all_sidechain: st.all_sidechain,
        })
    }

    /// The live nodes (the last of each uuid), each by the position of its records in
    /// `records` where they give it back exactly.
    fn saved_nodes(&self, records: &[Record]) -> Vec<SavedNode> {
        let mut last: HashMap<&str, usize> =
            HashMap::with_capacity_and_hasher(self.nodes.len(), Default::default());
        for (i, n) in self.nodes.iter().enumerate() {
            last.insert(n.uuid.as_str(), i);
        }
        let mut by_id: HashMap<&str, usize> =
            HashMap::with_capacity_and_hasher(records.len(), Default::default());
        for (i, r) in records.iter().enumerate() {
            if r.parent_entry_id.is_none() {
                by_id.insert(r.entry_id.as_str(), i);
            }
        }
        let mut out = Vec::with_capacity(last.len());
        for (k, node) in self.nodes.iter().enumerate() {
            if last.get(node.uuid.as_str()) != Some(&k) {
                continue;
            }
            let saved = match (
                by_id.get(node.first_id.as_str()),
                by_id.get(node.uuid.as_str()),
            ) {
                (Some(&i), Some(&j)) if j >= i => {
                    let s = SavedNode {
                        i: Some(i),
                        n: j - i,
                        m: node.message_id.clone(),
                        p: node
                            .parent
                            .clone()
                            .filter(|p| node.raw_parent.as_ref() != Some(p)),
                        r: node.tool_result,
                        node: None,
                    };
                    let back = node_from_records(
                        SavedNode {
                            i: s.i,
                            n: s.n,
                            m: s.m.clone(),
                            p: s.p.clone(),
                            r: s.r,
                            node: None,
                        },
                        records,
                    );
                    (back.as_ref() == Some(node)).then_some(s)
                }
                _ => None,
            };
            out.push(saved.unwrap_or_else(|| SavedNode {
                i: None,
                n: 0,
                m: None,
                p: None,
                r: false,
                node: Some(node.clone()),
            }));
        }
        out
    }
}

fn non_empty(s: Option<&str>) -> Option<&str> {
    s.filter(|s| !s.is_empty())
}

/// Text of a list of content blocks (`text` blocks and bare strings), joined by newlines.
fn block_texts(blocks: &[Value]) -> Vec<&str> {
    let mut out = Vec::new();
    for block in blocks {
        match block {
            Value::String(s) => out.push(s.as_str()),
            Value::Object(o) if str_field(o, "type") == Some("text") => {
                if let Some(t) = str_field(o, "text") {
                    out.push(t);
                }
            }
            _ => {}
        }
    }
    out
}

/// The output of a `tool_result` block: a string, or the text blocks of a list.
fn tool_result_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(blocks)) => block_texts(blocks).join("\n"),
        Some(other) => value_text(other),
    }
}

/// The text a non-conversational line carries in a typed field, if any.
fn meta_text(ty: Option<&str>, obj: &Map<String, Value>) -> String {
    let key = match ty {
        Some("system" | "queue-operation") => "content",
        Some("summary") => "summary",
        Some("custom-title") => "customTitle",
        Some("ai-title") => "aiTitle",
        Some("agent-name") => "agentName",
        Some("last-prompt") => "lastPrompt",
        Some("pr-link") => "prUrl",
        Some("frame-link") => "title",
        Some("attachment") => {
            let att = obj.get("attachment").and_then(Value::as_object);
            return att
                .and_then(|a| str_field(a, "content").or_else(|| str_field(a, "prompt")))
                .unwrap_or_default()
                .to_owned();
        }
        _ => return String::new(),
    };
    str_field(obj, key).unwrap_or_default().to_owned()
}

impl ClaudeReader {
    fn note_meta(&mut self, obj: &Map<String, Value>, timestamp: Option<&String>) {
        if self.session_id.is_none() {
            self.session_id = non_empty(str_field(obj, "sessionId")).map(str::to_owned);
        }
        if self.agent_id.is_none() {
            self.agent_id = non_empty(str_field(obj, "agentId")).map(str::to_owned);
        }
        if self.cwd.is_none() {
            self.cwd = non_empty(str_field(obj, "cwd")).map(str::to_owned);
        }
        if self.version.is_none() {
            self.version = non_empty(str_field(obj, "version")).map(str::to_owned);
        }
        if self.created.is_none() {
            self.created = timestamp.cloned();
        }
        if self.forked_from.is_none() {
            self.forked_from = match obj.get("forkedFrom") {
                Some(Value::String(s)) => non_empty(Some(s)).map(str::to_owned),
                Some(Value::Object(f)) => non_empty(str_field(f, "sessionId")).map(str::to_owned),
                _ => None,
            };
        }
    }

    /// A `user` line: prose, or one tool result record per `tool_result` block.
    ///
    /// Returns the id of the line's first record and whether the line held tool results.
    fn user(&mut self, base: &Record, obj: &Map<String, Value>, b: &mut Builder) -> (String, bool) {
        let msg = obj.get("message").and_then(Value::as_object);
        let role = msg
            .and_then(|m| non_empty(str_field(m, "role")))
            .unwrap_or("user");
        let class = if obj.get("isCompactSummary") == Some(&Value::Bool(true)) {
            TextClass::Summary
        } else if obj.get("isMeta") == Some(&Value::Bool(true)) {
            TextClass::Meta
        } else {
            TextClass::UserText
        };
        let prose = |text: String| Record {
            role: Some(role.to_owned()),
            text,
            class,
            ..base.clone()
        };
        let mut parts: Vec<Record> = Vec::new();
        let mut has_results = false;
        match msg.and_then(|m| m.get("content")) {
            Some(Value::String(s)) => parts.push(prose(s.clone())),
            Some(Value::Array(blocks)) => {
                let results: Vec<&Map<String, Value>> = blocks
                    .iter()
                    .filter_map(Value::as_object)
                    .filter(|o| str_field(o, "type") == Some("tool_result"))
                    .collect();
                // `toolUseResult` describes the line; it is only unambiguous with one result.
                let interrupted = results.len() == 1
                    && obj
                        .get("toolUseResult")
                        .and_then(Value::as_object)
                        .and_then(|t| t.get("interrupted"))
                        == Some(&Value::Bool(true));
                has_results = !results.is_empty();
                for r in &results {
                    let is_error = r.get("is_error").and_then(Value::as_bool);
                    let outcome = if interrupted {
                        Outcome::Aborted
                    } else if is_error == Some(true) {
                        Outcome::Failed
                    } else {
                        Outcome::Succeeded
                    };
                    parts.push(Record {
                        role: Some("tool".to_owned()),
                        text: tool_result_text(r.get("content")),
                        class: TextClass::ToolOutput,
                        call_id: non_empty(str_field(r, "tool_use_id")).map(str::to_owned),
                        is_error,
                        outcome: Some(outcome),
                        ..base.clone()
                    });
                }
                let texts = block_texts(blocks);
                if !texts.is_empty() || results.is_empty() {
                    parts.push(prose(texts.join("\n")));
                }
            }
            _ => parts.push(prose(String::new())),
        }
        (push_chain(parts, b), has_results)
    }

    /// An `assistant` line: one record for its prose and thinking, then one child record per
    /// tool call.
    fn assistant(&mut self, base: Record, obj: &Map<String, Value>, b: &mut Builder) {
        let msg = obj.get("message").and_then(Value::as_object);
        let role = msg
            .and_then(|m| non_empty(str_field(m, "role")))
            .unwrap_or("assistant");
        let mut texts: Vec<&str> = Vec::new();
        let mut thinking: Vec<&str> = Vec::new();
        let mut calls: Vec<&Map<String, Value>> = Vec::new();
        let mut unknown = false;
        match msg.and_then(|m| m.get("content")) {
            Some(Value::String(s)) => texts.push(s),
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    match block {
                        Value::String(s) => texts.push(s),
                        Value::Object(o) => match str_field(o, "type") {
                            Some("text") => texts.extend(str_field(o, "text")),
                            Some("thinking") => thinking.extend(str_field(o, "thinking")),
                            Some("tool_use" | "server_tool_use") => calls.push(o),
                            Some("redacted_thinking") => {}
                            _ => unknown = true,
                        },
                        _ => unknown = true,
                    }
                }
            }
            _ => {}
        }
        let class = if texts.is_empty() && !thinking.is_empty() {
            TextClass::Thinking
        } else if texts.is_empty() && calls.is_empty() && unknown {
            TextClass::Meta
        } else {
            TextClass::AssistantText
        };
        let carrier = Record {
            role: Some(role.to_owned()),
            text: texts.join("\n"),
            thinking: (!thinking.is_empty()).then(|| thinking.join("\n")),
            class,
            ..base
        };
        let children: Vec<Record> = calls
            .iter()
            .enumerate()
            .map(|(k, call)| tool_call(&carrier, k, call))
            .collect();
        b.push(carrier);
        for child in children {
            b.push(child);
        }
    }
}

/// A child record for the `k`-th tool call of `carrier`.
fn tool_call(carrier: &Record, k: usize, call: &Map<String, Value>) -> Record {
    let address = format!("{}/{k}", carrier.entry_id);
    let name = non_empty(str_field(call, "name"));
    let (reference, provider, action) = match name.map(split_tool) {
        Some((r, p, a)) => (Some(r), p, Some(a)),
        None => (None, None, None),
    };
    let input = call.get("input").unwrap_or(&Value::Null);
    Record {
        entry_id: address.clone(),
        kind: "tool_call".to_owned(),
        role: carrier.role.clone(),
        tool: name.map(str::to_owned),
        reference,
        provider,
        action,
        timestamp: carrier.timestamp.clone(),
        files_touched: files_from_args(input),
        text: value_text(input),
        operation_address: Some(address),
        parent_entry_id: Some(carrier.entry_id.clone()),
        call_id: non_empty(str_field(call, "id")).map(str::to_owned),
        class: TextClass::ToolInput,
        sidechain: carrier.sidechain,
        line: carrier.line,
        offset: carrier.offset,
        ..Record::default()
    }
}

/// Pushes the records of one line as a chain: the last one keeps the line's id (the tree node
/// other lines name as their parent), earlier ones get `<id>#<k>`, and each one's parent is the
/// previous one, the first one's the line's parent. Returns the first record's id.
fn push_chain(mut parts: Vec<Record>, b: &mut Builder) -> String {
    let n = parts.len();
    if n > 1 {
        let id = parts
            .first()
            .map(|r| r.entry_id.clone())
            .unwrap_or_default();
        let mut parent = parts.first().and_then(|r| r.parent_id.clone());
        for (k, part) in parts.iter_mut().enumerate() {
            if k + 1 < n {
                part.entry_id = format!("{id}#{k}");
            }
            part.parent_id = parent.take();
            parent = Some(part.entry_id.clone());
        }
    }
    let first = parts
        .first()
        .map(|r| r.entry_id.clone())
        .unwrap_or_default();
    for part in parts {
        b.push(part);
    }
    first
}

impl FormatReader for ClaudeReader {
    fn object(&mut self, loc: Loc, obj: Map<String, Value>, b: &mut Builder) {
        let ty = str_field(&obj, "type");
        let timestamp = obj.get("timestamp").and_then(normalize_ts);
        self.note_meta(&obj, timestamp.as_ref());

        let uuid = non_empty(str_field(&obj, "uuid")).map(str::to_owned);
        let sidechain = obj.get("isSidechain") == Some(&Value::Bool(true));
        let (parent_id, logical_parent_id) = if uuid.is_some() {
            let logical =
                if ty == Some("system") && str_field(&obj, "subtype") == Some("compact_boundary") {
                    non_empty(str_field(&obj, "logicalParentUuid")).map(str::to_owned)
                } else {
                    None
                };
            (
                non_empty(str_field(&obj, "parentUuid")).map(str::to_owned),
                logical,
            )
        } else {
            (None, None)
        };
        let conversational = matches!(ty, Some("user" | "assistant"));
        if conversational {
            let is_agent = sidechain && non_empty(str_field(&obj, "agentId")).is_some();
            if self.first_conversational_is_agent.is_none() {
                self.first_conversational_is_agent = Some(is_agent);
                self.all_sidechain = true;
            }
            self.all_sidechain &= sidechain;
        }
        let node = uuid.as_ref().map(|id| Node {
            uuid: id.clone(),
            first_id: id.clone(),
            parent: logical_parent_id.clone().or_else(|| parent_id.clone()),
            raw_parent: parent_id.clone(),
            message_id: None,
            tool_result: false,
            conversational,
            sidechain,
            timestamp: timestamp.clone(),
        });

        let base = Record {
            entry_id: uuid.unwrap_or_else(|| loc.derived_id()),
            parent_id,
            logical_parent_id,
            kind: ty.unwrap_or("unknown").to_owned(),
            timestamp,
            sidechain,
            line: loc.line,
            offset: loc.offset,
            ..Record::default()
        };
        let mut node = node;
        match ty {
            Some("user") => {
                let (first_id, tool_result) = self.user(&base, &obj, b);
                if let Some(n) = node.as_mut() {
                    n.first_id = first_id;
                    n.tool_result = tool_result;
                }
            }
            Some("assistant") => {
                if let Some(n) = node.as_mut() {
                    n.message_id = obj
                        .get("message")
                        .and_then(Value::as_object)
                        .and_then(|m| non_empty(str_field(m, "id")))
                        .map(str::to_owned);
                }
                self.assistant(base, &obj, b);
            }
            _ => {
                match ty {
                    Some("summary") => {
                        if let (Some(leaf), Some(text)) = (
                            non_empty(str_field(&obj, "leafUuid")),
                            non_empty(str_field(&obj, "summary")),
                        ) {
                            self.summaries.push((leaf.to_owned(), text.to_owned()));
                        }
                    }
                    Some("custom-title") => {
                        if let Some(t) = non_empty(str_field(&obj, "customTitle")) {
                            self.custom_title = Some(t.to_owned());
                        }
                    }
                    Some("ai-title") => {
                        if let Some(t) = non_empty(str_field(&obj, "aiTitle")) {
                            self.ai_title = Some(t.to_owned());
                        }
                    }
                    Some(t) if KNOWN_TYPES.contains(&t) => {}
                    _ => b.coverage.add(ReasonCode::UnknownEntryType, loc.line),
                }
                let record = Record {
                    role: (ty == Some("system")).then(|| "system".to_owned()),
                    text: meta_text(ty, &obj),
                    class: if ty == Some("summary") {
                        TextClass::Summary
                    } else {
                        TextClass::Meta
                    },
                    ..base
                };
                b.push(record);
            }
        }
        if let Some(n) = node {
            self.nodes.push(n);
        }
    }

    fn finish(&mut self, b: &mut Builder) {
        let file = b.meta.file.clone();
        let path = Path::new(&file);
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let subagent = stem.starts_with("agent-")
            || (self.first_conversational_is_agent == Some(true) && self.all_sidechain);
        if subagent {
            let agent = if stem.starts_with("agent-") {
                stem.clone()
            } else {
                format!("agent-{}", self.agent_id.as_deref().unwrap_or_default())
            };
            // 2.1 layout: `<parent session>/subagents/agent-*.jsonl`.
            let parent_from_path = path
                .parent()
                .filter(|d| d.file_name().is_some_and(|n| n == "subagents"))
                .and_then(Path::parent)
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned());
            let parent = self.session_id.clone().or(parent_from_path);
            b.meta.session_id = match &self.session_id {
                Some(sid) => format!("{sid}/{agent}"),
                None => agent,
            };
            if let Some(parent) = parent {
                b.meta.links.push(SessionLink {
                    kind: "subagent_of".to_owned(),
                    target: parent,
                });
            }
        } else {
            b.meta.session_id = self.session_id.clone().unwrap_or(stem);
        }
        if let Some(f) = self.forked_from.clone() {
            b.meta.links.push(SessionLink {
                kind: "forked_from".to_owned(),
                target: f,
            });
        }
        b.meta.cwd = self.cwd.clone();
        b.meta.format_version = self.version.clone();
        b.meta.created = self.created.clone();

        // Last node of each uuid wins, as duplicate records do.
        let mut last: HashMap<&str, usize> =
            HashMap::with_capacity_and_hasher(self.nodes.len(), Default::default());
        for (i, n) in self.nodes.iter().enumerate() {
            last.insert(n.uuid.as_str(), i);
        }
        let live: Vec<usize> = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(i, n)| last.get(n.uuid.as_str()) == Some(i))
            .map(|(i, _)| i)
            .collect();

        let own_summary = self
            .summaries
            .iter()
            .rev()
            .find(|(leaf, _)| last.contains_key(leaf.as_str()))
            .map(|(_, text)| text.clone());
        b.meta.title = self
            .custom_title
            .clone()
            .or_else(|| self.ai_title.clone())
            .or(own_summary);

        let leaf = pick_leaf(&self.nodes, &live, &last, false)
            .or_else(|| pick_leaf(&self.nodes, &live, &last, true));
        let Some(leaf) = leaf else { return };
        b.leaf = self.nodes.get(leaf).map(|n| n.uuid.clone());

        let (relinks, end) = recover_parallel_results(&self.nodes, &live, &last, leaf);
        if let Some(end) = end.and_then(|e| self.nodes.get(e)) {
            b.leaf = Some(end.uuid.clone());
        }
        if relinks.is_empty() {
            return;
        }
        let mut by_id: HashMap<&str, usize> =
            HashMap::with_capacity_and_hasher(b.records.len(), Default::default());
        for (i, r) in b.records.iter().enumerate() {
            if r.parent_entry_id.is_none() {
                by_id.insert(r.entry_id.as_str(), i);
            }
        }
        let mut updates: Vec<(usize, String)> = Vec::with_capacity(relinks.len());
        for (node, parent) in relinks {
            let Some(n) = self.nodes.get(node) else {
                continue;
            };
            if let Some(&i) = by_id.get(n.first_id.as_str()) {
                updates.push((i, parent));
            }
        }
        for (i, parent) in updates {
            if let Some(r) = b.records.get_mut(i) {
                r.logical_parent_id = Some(parent);
            }
        }
    }
    fn save_state(&self, records: &[Record]) -> Value {
        let uuids: HashSet<&str> = self.nodes.iter().map(|n| n.uuid.as_str()).collect();
        let from = self
            .summaries
            .iter()
            .rposition(|(leaf, _)| uuids.contains(leaf.as_str()))
            .unwrap_or(0);
        let st = ClaudeState {
            nodes: self.saved_nodes(records),
            session_id: self.session_id.clone(),
            agent_id: self.agent_id.clone(),
            cwd: self.cwd.clone(),
            version: self.version.clone(),
            created: self.created.clone(),
            forked_from: self.forked_from.clone(),
            custom_title: self.custom_title.clone(),
            ai_title: self.ai_title.clone(),
            summaries: self.summaries.iter().skip(from).cloned().collect(),
            first_conversational_is_agent: self.first_conversational_is_agent,
            all_sidechain: self.all_sidechain,
        };
        serde_json::to_value(st).unwrap_or(Value::Null)
    }
}

/// The writer's own repair of the active chain, done when it resumes a session: one API
/// message can be written as several assistant lines sharing `message.id` (one per content
/// block), and each tool result names its own line as `parentUuid`, so a walk along single
/// parents drops sibling blocks and their results (older versions also forked the chain at
/// `progress` lines). For every `message.id` group on the chain, the off-chain members and the
/// off-chain tool result lines whose `parentUuid` is a member are spliced in right after the
/// group's last on-chain line (members first, then results, each by timestamp then file order).
///
/// Returns `(node, new lineage parent)` for every node whose lineage parent changes, and the
/// new end of the path when something was spliced in after the leaf.
fn recover_parallel_results(
    nodes: &[Node],
    live: &[usize],
    last: &HashMap<&str, usize>,
    leaf: usize,
) -> (Vec<(usize, String)>, Option<usize>) {
    // The chain the session walk will take, root first.
    let mut chain: Vec<usize> = Vec::new();
    let mut seen = vec![false; nodes.len()];
    let mut cur = Some(leaf);
    while let Some(i) = cur {
        match seen.get_mut(i) {
            Some(s) if !*s => *s = true,
            _ => break,
        }
        chain.push(i);
        cur = nodes
            .get(i)
            .and_then(|n| n.parent.as_deref())
            .and_then(|p| last.get(p).copied());
    }
    chain.reverse();

    let mut groups: HashMap<&str, Vec<usize>> = HashMap::default();
    let mut results_of: HashMap<&str, Vec<usize>> = HashMap::default();
    for &i in live {
        let Some(n) = nodes.get(i) else { continue };
        if let Some(id) = n.message_id.as_deref() {
            groups.entry(id).or_default().push(i);
        } else if n.tool_result {
            if let Some(p) = n.raw_parent.as_deref() {
                results_of.entry(p).or_default().push(i);
            }
        }
    }
    let mut anchor: HashMap<&str, usize> = HashMap::default();
    for &i in &chain {
        if let Some(id) = nodes.get(i).and_then(|n| n.message_id.as_deref()) {
            anchor.insert(id, i);
        }
    }
    let order = |a: &usize, c: &usize| {
        let ta = nodes.get(*a).and_then(|n| n.timestamp.as_deref());
        let tc = nodes.get(*c).and_then(|n| n.timestamp.as_deref());
        ta.cmp(&tc).then(a.cmp(c))
    };
    let mut inserts: HashMap<usize, Vec<usize>> = HashMap::default();
    let mut done: HashSet<&str> = HashSet::default();
    for &i in &chain {
        let Some(id) = nodes.get(i).and_then(|n| n.message_id.as_deref()) else {
            continue;
        };
        if !done.insert(id) {
            continue;
        }
        let members = groups.get(id).map(Vec::as_slice).unwrap_or_default();
        let mut siblings: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&m| !seen.get(m).copied().unwrap_or(true))
            .collect();
        let mut results: Vec<usize> = Vec::new();
        for &m in members {
            let Some(n) = nodes.get(m) else { continue };
            for &r in results_of
                .get(n.uuid.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                if !seen.get(r).copied().unwrap_or(true) && !results.contains(&r) {
                    results.push(r);
                }
            }
        }
        if siblings.is_empty() && results.is_empty() {
            continue;
        }
        // `order` ends on the index, so no two differ only where a sort's stability would
        // show: the unstable sort's code is the smaller (the browser build counts it).
        siblings.sort_unstable_by(order);
        results.sort_unstable_by(order);
        siblings.extend(results);
        for &r in &siblings {
            if let Some(s) = seen.get_mut(r) {
                *s = true;
            }
        }
        if let Some(&a) = anchor.get(id) {
            inserts.entry(a).or_default().extend(siblings);
        }
    }
    if inserts.is_empty() {
        return (Vec::new(), None);
    }
    let mut path: Vec<usize> = Vec::with_capacity(chain.len());
    for &i in &chain {
        path.push(i);
        if let Some(extra) = inserts.get(&i) {
            path.extend(extra.iter().copied());
        }
    }
    let mut relinks = Vec::new();
    for pair in path.windows(2) {
        let (Some(prev), Some(node)) = (
            pair.first().and_then(|&p| nodes.get(p)),
            pair.get(1).copied(),
        ) else {
            continue;
        };
        let current = nodes.get(node).and_then(|n| n.parent.as_deref());
        if current != Some(prev.uuid.as_str()) {
            relinks.push((node, prev.uuid.clone()));
        }
    }
    (relinks, path.last().copied())
}

/// The newest terminal user/assistant node: no user/assistant line descends from it. Only
/// non-sidechain lines count unless `sidechain` is set (subagent files are all sidechain).
fn pick_leaf(
    nodes: &[Node],
    live: &[usize],
    last: &HashMap<&str, usize>,
    sidechain: bool,
) -> Option<usize> {
    let counts = |n: &Node| n.conversational && (sidechain || !n.sidechain);
    let mut has_descendant = vec![false; nodes.len()];
    for &i in live {
        let Some(node) = nodes.get(i) else { continue };
        if !counts(node) {
            continue;
        }
        // Mark every ancestor; stop at one already marked (its ancestors are too), which also
        // ends the walk on a cycle.
        let mut cur = node.parent.as_deref();
        while let Some(p) = cur {
            let Some(&j) = last.get(p) else { break };
            match has_descendant.get_mut(j) {
                Some(seen) if !*seen => *seen = true,
                _ => break,
            }
            cur = nodes.get(j).and_then(|n| n.parent.as_deref());
        }
    }
    live.iter()
        .copied()
        .filter(|&i| {
            nodes.get(i).is_some_and(counts) && !has_descendant.get(i).copied().unwrap_or(true)
        })
        .max_by(|&a, &c| {
            let ta = nodes.get(a).and_then(|n| n.timestamp.as_deref());
            let tc = nodes.get(c).and_then(|n| n.timestamp.as_deref());
            ta.cmp(&tc).then(a.cmp(&c))
        })
}
