//! The normalized record model shared by every format.

use serde::{Deserialize, Serialize};

/// A session log format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// pi coding agent session files, versions 1, 2 and 3.
    Pi,
    /// oh-my-pi: pi v3 plus a fixed-width title line and extra entry types.
    Omp,
    /// Claude Code project transcripts, including sidechains and subagent files.
    ClaudeCode,
    /// Codex CLI rollouts, bare-line and `{timestamp,type,payload}` forms.
    Codex,
}

impl Format {
    /// Every format, in a stable order.
    pub const ALL: [Format; 4] = [Format::Pi, Format::Omp, Format::ClaudeCode, Format::Codex];

    /// The stable snake_case name (`pi`, `omp`, `claude_code`, `codex`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Pi => "pi",
            Format::Omp => "omp",
            Format::ClaudeCode => "claude_code",
            Format::Codex => "codex",
        }
    }

    /// Parses a format name; accepts `claude` and `claude-code` as aliases.
    #[must_use]
    pub fn parse(name: &str) -> Option<Format> {
        match name.trim().to_ascii_lowercase().as_str() {
            "pi" => Some(Format::Pi),
            "omp" | "oh-my-pi" | "oh_my_pi" => Some(Format::Omp),
            "claude_code" | "claude-code" | "claude" => Some(Format::ClaudeCode),
            "codex" => Some(Format::Codex),
            _ => None,
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a tool call ended, from typed fields of the source only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The paired result reported success.
    Succeeded,
    /// The paired result reported an error (typed error flag, non-zero exit code, failed status).
    Failed,
    /// A typed aborted or cancelled state.
    Aborted,
    /// A typed timeout field.
    TimedOut,
}

impl Outcome {
    /// The stable snake_case name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Aborted => "aborted",
            Outcome::TimedOut => "timed_out",
        }
    }

    /// Parses a stable name.
    #[must_use]
    pub fn parse(name: &str) -> Option<Outcome> {
        match name {
            "succeeded" => Some(Outcome::Succeeded),
            "failed" => Some(Outcome::Failed),
            "aborted" => Some(Outcome::Aborted),
            "timed_out" => Some(Outcome::TimedOut),
            _ => None,
        }
    }
}

/// The provenance class of a record's text; it drives ranking weights and field groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TextClass {
    /// Prose a person typed.
    UserText,
    /// Prose the model wrote.
    AssistantText,
    /// Model reasoning (`thinking`, `reasoning` summaries). Indexed only with `indexThinking`.
    Thinking,
    /// Arguments of a tool call.
    ToolInput,
    /// Output of a tool.
    ToolOutput,
    /// Summaries written by the agent itself (compactions, branch summaries).
    Summary,
    /// Everything else: system notices, model changes, metadata lines.
    #[default]
    Meta,
}

impl TextClass {
    /// The stable snake_case name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TextClass::UserText => "user_text",
            TextClass::AssistantText => "assistant_text",
            TextClass::Thinking => "thinking",
            TextClass::ToolInput => "tool_input",
            TextClass::ToolOutput => "tool_output",
            TextClass::Summary => "summary",
            TextClass::Meta => "meta",
        }
    }
}

/// One normalized record of a session.
///
/// Field names serialize in camelCase exactly as `docs/formats.md` lists them. Optional
/// fields are omitted when the source does not have them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// Position in the selected lineage (0-based), assigned by [`crate::Session::select`].
    pub index: usize,
    /// The source's entry id, or a derived position id (`l<line>`, `l<line>.<k>`) for formats
    /// without ids; a tool call child is `<carrier entryId>/<k>`.
    pub entry_id: String,
    /// The source's parent id (pi `parentId`, Claude `parentUuid`), or the previous entry for
    /// formats without ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The parent used for lineage when it differs from `parentId` (Claude `logicalParentUuid`
    /// at a `compact_boundary`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_parent_id: Option<String>,
    /// The record type: the source's entry type (`message`, `compaction`, `user`, ...) or
    /// `tool_call` for a child record.
    #[serde(rename = "type")]
    pub kind: String,
    /// `user`, `assistant`, `tool`, `system`, `developer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The tool name exactly as the source wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The full tool reference (`omp.grep`, `mcp__github__create_issue`, `bash`).
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The namespace of a namespaced tool (`omp`, `github`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The action of a tool (`grep`, `create_issue`); the tool name when not namespaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// How a tool call ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// UTC timestamp, RFC 3339 with milliseconds (`2025-12-17T19:39:21.535Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The source's typed error flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Paths from typed tool-argument keys (`path`, `file_path`, ...), in order, deduplicated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_touched: Vec<String>,
    /// The record's text (prose, tool arguments as JSON, tool output); full, never cut here.
    #[serde(default)]
    pub text: String,
    /// Reasoning text, kept apart so the index can exclude it (`indexThinking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// `<entryId>/<k>` for a tool call child record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_address: Option<String>,
    /// The carrier's entry id for a child record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_entry_id: Option<String>,
    /// The tool call id that pairs a call with its result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Provenance class of `text`.
    #[serde(default)]
    pub class: TextClass,
    /// Claude Code sidechain line (an in-file subagent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sidechain: bool,
    /// 1-based line of the source file.
    pub line: u64,
    /// Byte offset of that line in the source file.
    pub offset: u64,
}

/// A link from one session to another.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionLink {
    /// `parent_session` (pi), `branched_from` (pi), `forked_from` (Claude, Codex),
    /// `subagent_of` (Claude subagent file).
    pub kind: String,
    /// The id or path of the other session, as the source wrote it.
    pub target: String,
}

/// Session metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    /// The session id (source id; for Claude subagent files `<sessionId>/<agent file stem>`).
    pub session_id: String,
    /// The source file path.
    pub file: String,
    /// The detected or forced format.
    pub format: Option<Format>,
    /// Format version where the source has one (pi `version`, Claude `version`, Codex `cli_version`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_version: Option<String>,
    /// Working directory of the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Title (OMP title line, Claude `custom-title`/`ai-title`/`summary`, pi `session_info` name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Creation time from the header (RFC 3339 UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Earliest record timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_ts: Option<String>,
    /// Latest record timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ts: Option<String>,
    /// Links to other sessions (parents, forks, subagent parent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<SessionLink>,
}

impl SessionMeta {
    /// The first link of the given kind.
    #[must_use]
    pub fn link(&self, kind: &str) -> Option<&str> {
        self.links
            .iter()
            .find(|l| l.kind == kind)
            .map(|l| l.target.as_str())
    }
}
