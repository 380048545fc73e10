//! Claude Code: the real fixtures under `shared/fixtures/sessions/claude-code/` and small
//! synthetic transcripts for every shape the reader handles.
//!
//! The expected numbers for the real fixtures were counted with a separate Python script over
//! the raw JSONL (its own record mapping, duplicate resolution, leaf rule and chain walk), not
//! by running this reader.

use sessiondex_source::{
    read_bytes, Branches, Format, Outcome, ReadOptions, ReasonCode, Record, Session, TextClass,
};

use crate::{count_role, read_shared};

fn read_as(file: &str, bytes: &[u8]) -> Session {
    read_bytes(file, bytes, &ReadOptions::default()).expect("detected as Claude Code")
}

fn read(bytes: &[u8]) -> Session {
    read_as("/p/s.jsonl", bytes)
}

fn by_id<'a>(records: &'a [Record], id: &str) -> &'a Record {
    records
        .iter()
        .find(|r| r.entry_id == id)
        .unwrap_or_else(|| panic!("no record {id}"))
}

fn ids(records: &[Record]) -> Vec<&str> {
    records.iter().map(|r| r.entry_id.as_str()).collect()
}

fn calls(records: &[Record]) -> usize {
    records.iter().filter(|r| r.kind == "tool_call").count()
}

fn failed_calls(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| r.kind == "tool_call" && r.outcome == Some(Outcome::Failed))
        .count()
}

fn failed_results(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| r.role.as_deref() == Some("tool") && r.outcome == Some(Outcome::Failed))
        .count()
}

/// Top-level sidechain records (children excluded).
fn sidechain_lines(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| r.sidechain && r.parent_entry_id.is_none())
        .count()
}

/// Every tool call child in `records` has its result (same call id) in `records` too.
fn assert_calls_have_results(records: &[Record]) {
    for c in records.iter().filter(|r| r.kind == "tool_call") {
        let id = c.call_id.as_deref().expect("call id");
        assert!(
            records
                .iter()
                .any(|r| r.role.as_deref() == Some("tool") && r.call_id.as_deref() == Some(id)),
            "result of {id} ({}) is not in the selection",
            c.entry_id
        );
    }
}

// ---------------------------------------------------------------------------------------
// Synthetic shapes
// ---------------------------------------------------------------------------------------

const BASIC: &[u8] = br#"{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,"sessionId":"s1","cwd":"/work","version":"2.1.9","timestamp":"2026-01-02T03:04:05Z","message":{"role":"user","content":"fix the parser"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","isSidechain":false,"sessionId":"s1","timestamp":"2026-01-02T03:04:06.5Z","message":{"id":"m1","role":"assistant","content":[{"type":"thinking","thinking":"look at it first"},{"type":"text","text":"Reading it."},{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/work/a.rs"}},{"type":"tool_use","id":"t2","name":"mcp__github__create_issue","input":{"title":"x"}}]}}
{"type":"user","uuid":"r1","parentUuid":"a1","isSidechain":false,"sessionId":"s1","timestamp":"2026-01-02T03:04:07Z","toolUseResult":{"stdout":"","interrupted":false},"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"fn main() {}"}]}}
{"type":"user","uuid":"r2","parentUuid":"r1","isSidechain":false,"sessionId":"s1","timestamp":"2026-01-02T03:04:08Z","toolUseResult":"Error: denied","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":[{"type":"text","text":"denied"},{"type":"image","source":{}}]}]}}
{"type":"assistant","uuid":"a2","parentUuid":"r2","isSidechain":false,"sessionId":"s1","timestamp":"2026-01-02T03:04:09Z","message":{"id":"m2","role":"assistant","content":[{"type":"thinking","thinking":"hmm"}]}}
"#;

#[test]
fn messages_tool_calls_and_results() {
    let s = read(BASIC);
    assert_eq!(s.meta.format, Some(Format::ClaudeCode));
    assert_eq!(s.meta.session_id, "s1");
    assert_eq!(s.meta.cwd.as_deref(), Some("/work"));
    assert_eq!(s.meta.format_version.as_deref(), Some("2.1.9"));
    assert_eq!(s.meta.created.as_deref(), Some("2026-01-02T03:04:05.000Z"));
    assert_eq!(s.meta.last_ts.as_deref(), Some("2026-01-02T03:04:09.000Z"));
    assert!(s.meta.links.is_empty());
    assert_eq!(s.leaf.as_deref(), Some("a2"));
    assert_eq!(
        ids(&s.records),
        ["u1", "a1", "a1/0", "a1/1", "r1", "r2", "a2"]
    );

    let u1 = by_id(&s.records, "u1");
    assert_eq!(
        (u1.kind.as_str(), u1.role.as_deref()),
        ("user", Some("user"))
    );
    assert_eq!(u1.text, "fix the parser");
    assert_eq!(u1.class, TextClass::UserText);
    assert_eq!(u1.parent_id, None);

    let a1 = by_id(&s.records, "a1");
    assert_eq!(a1.text, "Reading it.");
    assert_eq!(a1.thinking.as_deref(), Some("look at it first"));
    assert_eq!(a1.class, TextClass::AssistantText);
    assert_eq!(a1.parent_id.as_deref(), Some("u1"));
    assert_eq!(a1.timestamp.as_deref(), Some("2026-01-02T03:04:06.500Z"));

    let c0 = by_id(&s.records, "a1/0");
    assert_eq!(c0.kind, "tool_call");
    assert_eq!(c0.operation_address.as_deref(), Some("a1/0"));
    assert_eq!(c0.parent_entry_id.as_deref(), Some("a1"));
    assert_eq!(c0.parent_id, None);
    assert_eq!(c0.tool.as_deref(), Some("Read"));
    assert_eq!(c0.reference.as_deref(), Some("Read"));
    assert_eq!(c0.provider, None);
    assert_eq!(c0.action.as_deref(), Some("Read"));
    assert_eq!(c0.call_id.as_deref(), Some("t1"));
    assert_eq!(c0.text, r#"{"file_path":"/work/a.rs"}"#);
    assert_eq!(c0.files_touched, ["/work/a.rs"]);
    assert_eq!(c0.class, TextClass::ToolInput);
    assert_eq!(c0.outcome, Some(Outcome::Succeeded));
    assert_eq!((c0.line, c0.offset), (a1.line, a1.offset));
    assert_eq!(c0.timestamp, a1.timestamp);

    let c1 = by_id(&s.records, "a1/1");
    assert_eq!(c1.provider.as_deref(), Some("github"));
    assert_eq!(c1.action.as_deref(), Some("create_issue"));
    assert_eq!(c1.outcome, Some(Outcome::Failed));
    assert_eq!(c1.is_error, Some(true));

    let r1 = by_id(&s.records, "r1");
    assert_eq!(
        (r1.kind.as_str(), r1.role.as_deref()),
        ("user", Some("tool"))
    );
    assert_eq!(r1.class, TextClass::ToolOutput);
    assert_eq!(r1.text, "fn main() {}");
    assert_eq!(r1.call_id.as_deref(), Some("t1"));
    assert_eq!(r1.outcome, Some(Outcome::Succeeded));
    assert_eq!(r1.is_error, None);

    let r2 = by_id(&s.records, "r2");
    assert_eq!(r2.text, "denied");
    assert_eq!(r2.outcome, Some(Outcome::Failed));
    assert_eq!(r2.is_error, Some(true));

    let a2 = by_id(&s.records, "a2");
    assert_eq!(a2.class, TextClass::Thinking);
    assert_eq!(a2.text, "");
    assert_eq!(a2.thinking.as_deref(), Some("hmm"));

    let active = s.select(Branches::Active);
    assert_eq!(ids(&active.records), ids(&s.records));
    assert!(active.coverage.complete);
}

#[test]
fn several_tool_results_on_one_line_are_chained() {
    let s = read(br#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"go"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"false"}},{"type":"tool_use","id":"t3","name":"Bash","input":"raw"}]}}
{"type":"user","uuid":"r","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"},{"type":"tool_result","tool_use_id":"t2","is_error":true,"content":"b"},{"type":"tool_result","tool_use_id":"t3","content":"c"},{"type":"text","text":"and stop"}]}}
{"type":"assistant","uuid":"a2","parentUuid":"r","sessionId":"s","timestamp":"2026-01-01T00:00:03Z","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"ok"}]}}
"#);
    assert_eq!(
        ids(&s.records),
        ["u1", "a1", "a1/0", "a1/1", "a1/2", "r#0", "r#1", "r#2", "r", "a2"]
    );
    assert_eq!(by_id(&s.records, "a1/2").text, "raw");
    let parents: Vec<Option<&str>> = ["r#0", "r#1", "r#2", "r"]
        .iter()
        .map(|id| by_id(&s.records, id).parent_id.as_deref())
        .collect();
    assert_eq!(parents, [Some("a1"), Some("r#0"), Some("r#1"), Some("r#2")]);
    let r = by_id(&s.records, "r");
    assert_eq!(
        (r.role.as_deref(), r.class),
        (Some("user"), TextClass::UserText)
    );
    assert_eq!(r.text, "and stop");
    assert_eq!(by_id(&s.records, "r#1").outcome, Some(Outcome::Failed));
    assert_eq!(by_id(&s.records, "a1/1").outcome, Some(Outcome::Failed));
    assert_eq!(by_id(&s.records, "a1/2").outcome, Some(Outcome::Succeeded));

    let active = s.select(Branches::Active);
    assert_eq!(ids(&active.records), ids(&s.records));
    assert!(active.coverage.complete);
}

#[test]
fn interrupted_only_from_the_typed_flag() {
    let line = |uuid: &str, tur: &str| {
        format!(
            r#"{{"type":"user","uuid":"{uuid}","sessionId":"s","toolUseResult":{tur},"message":{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t-{uuid}","content":"[Request interrupted by user for tool use]","is_error":true}}]}}}}"#
        )
    };
    let text = [
        line("x", r#"{"interrupted":true}"#),
        line("y", r#"{"interrupted":"true"}"#),
        line("z", r#""interrupted""#),
    ]
    .join("\n");
    let s = read(text.as_bytes());
    assert_eq!(by_id(&s.records, "x").outcome, Some(Outcome::Aborted));
    assert_eq!(by_id(&s.records, "x").is_error, Some(true));
    assert_eq!(by_id(&s.records, "y").outcome, Some(Outcome::Failed));
    assert_eq!(by_id(&s.records, "z").outcome, Some(Outcome::Failed));
}

/// The shape of `dag_compact_after_rewind.jsonl`, so it is tested without the shared fixtures.
#[test]
fn compact_boundary_follows_the_logical_parent() {
    let s = read(br#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"start"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":"ready"}]}}
{"type":"user","uuid":"old","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":"rewound away"}}
{"type":"user","uuid":"new","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-01T00:00:03Z","message":{"role":"user","content":"second try"}}
{"type":"system","subtype":"compact_boundary","uuid":"cb","parentUuid":null,"logicalParentUuid":"new","sessionId":"s","timestamp":"2026-01-01T00:00:04Z","content":"Conversation compacted"}
{"type":"user","uuid":"cs","parentUuid":"cb","isCompactSummary":true,"sessionId":"s","timestamp":"2026-01-01T00:00:05Z","message":{"role":"user","content":"summary of the above"}}
{"type":"assistant","uuid":"end","parentUuid":"cs","sessionId":"s","timestamp":"2026-01-01T00:00:06Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}
"#);
    let cb = by_id(&s.records, "cb");
    assert_eq!(cb.parent_id, None);
    assert_eq!(cb.logical_parent_id.as_deref(), Some("new"));
    assert_eq!(
        (cb.role.as_deref(), cb.class),
        (Some("system"), TextClass::Meta)
    );
    assert_eq!(cb.text, "Conversation compacted");
    assert_eq!(by_id(&s.records, "cs").class, TextClass::Summary);
    assert_eq!(s.leaf.as_deref(), Some("end"));
    let active = s.select(Branches::Active);
    assert_eq!(ids(&active.records), ["u1", "a1", "new", "cb", "cs", "end"]);
    assert_eq!(s.select(Branches::All).records.len(), 7);
}

#[test]
fn leaf_is_the_newest_terminal_non_sidechain_line() {
    let s = read(br#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"a"}}
{"type":"assistant","uuid":"late","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:05:00Z","message":{"role":"assistant","content":[{"type":"text","text":"newest main branch"}]}}
{"type":"assistant","uuid":"early","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:01:00Z","message":{"role":"assistant","content":[{"type":"text","text":"older branch, later in the file"}]}}
{"type":"user","uuid":"side","parentUuid":null,"isSidechain":true,"sessionId":"s","timestamp":"2026-01-01T00:09:00Z","message":{"role":"user","content":"Warmup"}}
{"type":"system","subtype":"turn_duration","uuid":"sys","parentUuid":"late","sessionId":"s","timestamp":"2026-01-01T00:09:30Z"}
"#);
    // `late` has only a system child, so it is still terminal; `side` is newer but a sidechain.
    assert_eq!(s.leaf.as_deref(), Some("late"));
    let active = s.select(Branches::Active);
    assert_eq!(ids(&active.records), ["u1", "late"]);
    let side = by_id(&s.records, "side");
    assert!(side.sidechain);
    assert_eq!(sidechain_lines(&s.records), 1);
}

#[test]
fn split_messages_and_parallel_results_stay_on_the_active_path() {
    // One API message written as two lines (same message.id), each tool result parented to its
    // own line, and the chain continuing through a progress line: a single-parent walk from
    // the leaf would miss `a2` and `r1`.
    let s = read(br#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"go"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/x"}}]}}
{"type":"assistant","uuid":"a2","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-01T00:00:01.1Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"/y"}}]}}
{"type":"progress","uuid":"p1","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-01T00:00:01.2Z","data":{"type":"hook_progress"}}
{"type":"user","uuid":"r1","parentUuid":"a1","sessionId":"s","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}
{"type":"user","uuid":"r2","parentUuid":"a2","sessionId":"s","timestamp":"2026-01-01T00:00:03Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"y"}]}}
{"type":"assistant","uuid":"a3","parentUuid":"p1","sessionId":"s","timestamp":"2026-01-01T00:00:04Z","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"both read"}]}}
"#);
    assert_eq!(s.leaf.as_deref(), Some("a3"));
    let active = s.select(Branches::Active);
    // The group's other line and both results come right after its last line on the chain.
    assert_eq!(
        ids(&active.records),
        ["u1", "a1", "a1/0", "a2", "a2/0", "r1", "r2", "p1", "a3"]
    );
    assert!(active.coverage.complete);
    assert_calls_have_results(&active.records);
    // The splice is carried by logicalParentId; parentId stays as written.
    let logical = |id: &str| by_id(&s.records, id).logical_parent_id.as_deref();
    assert_eq!(logical("a2"), None);
    assert_eq!(logical("r1"), Some("a2"));
    assert_eq!(logical("r2"), Some("r1"));
    assert_eq!(logical("p1"), Some("r2"));
    assert_eq!(logical("a3"), None);
    assert_eq!(by_id(&s.records, "p1").parent_id.as_deref(), Some("a1"));
}

#[test]
fn lines_without_uuid_and_titles() {
    let s = read(br#"{"type":"summary","summary":"Another session's summary","leafUuid":"elsewhere"}
{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hi"}}
{"type":"file-history-snapshot","messageId":"u1","snapshot":{"messageId":"u1","trackedFileBackups":{}},"isSnapshotUpdate":false}
{"type":"summary","summary":"This session's summary","leafUuid":"u1"}{"type":"queue-operation","operation":"enqueue","content":"later","sessionId":"s","timestamp":"2026-01-01T00:00:01Z"}
"#);
    assert_eq!(ids(&s.records), ["l1", "u1", "l3", "l4", "l4.2"]);
    let sum = by_id(&s.records, "l4");
    assert_eq!(
        (sum.kind.as_str(), sum.class),
        ("summary", TextClass::Summary)
    );
    assert_eq!(sum.parent_id, None);
    assert_eq!(by_id(&s.records, "l4.2").text, "later");
    assert_eq!(by_id(&s.records, "l3").class, TextClass::Meta);
    // Only the summary whose leaf is in this file is a title.
    assert_eq!(s.meta.title.as_deref(), Some("This session's summary"));
    assert_eq!(ids(&s.select(Branches::Active).records), ["u1"]);

    // custom-title wins over ai-title, which wins over a summary; the last rename counts.
    let s = read(
        br#"{"type":"summary","summary":"summary","leafUuid":"u1"}
{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"hi"}}
{"type":"ai-title","sessionId":"s","aiTitle":"AI title"}
{"type":"custom-title","sessionId":"s","customTitle":"first name"}
{"type":"custom-title","sessionId":"s","customTitle":"second name"}
"#,
    );
    assert_eq!(s.meta.title.as_deref(), Some("second name"));
    let s = read(
        br#"{"type":"summary","summary":"summary","leafUuid":"u1"}
{"type":"user","uuid":"u1","sessionId":"s","message":{"role":"user","content":"hi"}}
{"type":"ai-title","sessionId":"s","aiTitle":"AI title"}
"#,
    );
    assert_eq!(s.meta.title.as_deref(), Some("AI title"));
}

#[test]
fn subagent_files_and_forks() {
    let agent = br#"{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":true,"agentId":"a7","sessionId":"main-1","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"task"}}
{"type":"assistant","uuid":"a1","parentUuid":"u1","isSidechain":true,"agentId":"a7","sessionId":"main-1","timestamp":"2026-01-01T00:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}
"#;
    // 2.1 layout.
    let s = read_as("/p/main-1/subagents/agent-a7.jsonl", agent);
    assert_eq!(s.meta.session_id, "main-1/agent-a7");
    assert_eq!(s.meta.link("subagent_of"), Some("main-1"));
    // All lines are sidechain lines: the leaf falls back to them.
    assert_eq!(s.leaf.as_deref(), Some("a1"));
    assert_eq!(s.select(Branches::Active).records.len(), 2);
    // 2.0 layout, next to the session file.
    let s = read_as("/p/agent-a7.jsonl", agent);
    assert_eq!(s.meta.session_id, "main-1/agent-a7");
    // Renamed file: the agentId decides.
    let s = read_as("/tmp/copy.jsonl", agent);
    assert_eq!(s.meta.session_id, "main-1/agent-a7");
    assert_eq!(s.meta.link("subagent_of"), Some("main-1"));

    // No sessionId: the agent id names it, the directory names the parent.
    let bare = br#"{"type":"user","uuid":"u1","isSidechain":true,"agentId":"a9","message":{"role":"user","content":"task"}}
"#;
    let s = read_as("/p/parent-9/subagents/agent-a9.jsonl", bare);
    assert_eq!(s.meta.session_id, "agent-a9");
    assert_eq!(s.meta.link("subagent_of"), Some("parent-9"));

    // A main file is no subagent even when some lines are sidechains.
    let s = read_as("/p/main-1.jsonl", br#"{"type":"user","uuid":"u0","isSidechain":false,"sessionId":"main-1","message":{"role":"user","content":"hi"}}
{"type":"user","uuid":"u1","isSidechain":true,"agentId":"a7","sessionId":"main-1","message":{"role":"user","content":"task"}}
"#);
    assert_eq!(s.meta.session_id, "main-1");
    assert_eq!(s.meta.link("subagent_of"), None);

    // forkedFrom, as an object or a string.
    let s = read(br#"{"type":"user","uuid":"u1","sessionId":"child","forkedFrom":{"sessionId":"parent-0001","messageUuid":"m0"},"message":{"role":"user","content":"hi"}}
"#);
    assert_eq!(s.meta.session_id, "child");
    assert_eq!(s.meta.link("forked_from"), Some("parent-0001"));
    let s = read(br#"{"type":"user","uuid":"u1","sessionId":"child","forkedFrom":"parent-0002","message":{"role":"user","content":"hi"}}
"#);
    assert_eq!(s.meta.link("forked_from"), Some("parent-0002"));

    // No sessionId anywhere: the file stem.
    let s = read_as(
        "/p/abc.jsonl",
        br#"{"type":"user","uuid":"u1","message":{"role":"user","content":"hi"}}
"#,
    );
    assert_eq!(s.meta.session_id, "abc");
}

#[test]
fn odd_shapes_are_kept_and_never_panic() {
    let s = read(br#"{"type":"user","uuid":"u1","sessionId":"s","message":"error"}
{"type":"user","uuid":"u2","sessionId":"s","message":{"role":"user","content":null}}
{"type":"user","uuid":"u3","sessionId":"s","message":{"role":"user","content":["bare string",{"type":"image","source":{}},7]}}
{"type":"assistant","uuid":"a1","sessionId":"s","message":{"role":"assistant","content":[{"type":"fallback","from":{},"to":{}}]}}
{"type":"assistant","uuid":"a2","sessionId":"s","message":{"role":"assistant","content":[{"type":"tool_use"},{"type":"text","text":5}]}}
{"type":"brand-new-thing","uuid":"n1","parentUuid":"a2","sessionId":"s"}
{"sessionId":"s","no":"type"}
{"type":"user","uuid":"","parentUuid":7,"timestamp":"yesterday","isSidechain":"yes","message":{"content":[{"type":"tool_result"}]}}
"#);
    assert_eq!(by_id(&s.records, "u1").text, "");
    assert_eq!(by_id(&s.records, "u2").text, "");
    assert_eq!(by_id(&s.records, "u3").text, "bare string");
    assert_eq!(by_id(&s.records, "a1").class, TextClass::Meta);
    let c = by_id(&s.records, "a2/0");
    assert_eq!((c.tool.as_deref(), c.call_id.as_deref()), (None, None));
    assert_eq!(c.text, "");
    let n1 = by_id(&s.records, "n1");
    assert_eq!(
        (n1.kind.as_str(), n1.class),
        ("brand-new-thing", TextClass::Meta)
    );
    assert_eq!(n1.parent_id.as_deref(), Some("a2"));
    assert_eq!(by_id(&s.records, "l7").kind, "unknown");
    let l8 = by_id(&s.records, "l8");
    assert_eq!(
        (l8.role.as_deref(), l8.parent_id.as_deref()),
        (Some("tool"), None)
    );
    assert_eq!((l8.timestamp.as_deref(), l8.sidechain), (None, false));
    assert_eq!(l8.outcome, Some(Outcome::Succeeded));
    assert_eq!(s.coverage.count(ReasonCode::UnknownEntryType), 2);
    assert!(s.coverage.complete, "unknown types are informational");

    // Bytes that are no transcript at all, forced to this format.
    let forced = ReadOptions {
        format: Some(Format::ClaudeCode),
        ..ReadOptions::default()
    };
    for bytes in [
        &b""[..],
        b"\n\n",
        b"\xff\xfe{\"type\":\"user\"",
        b"{\"type\":\"assistant\",\"message\":{\"content\":{\"type\":\"text\"}}}\n",
        b"{\"uuid\":\"x\",\"parentUuid\":\"x\",\"type\":\"user\"}\n",
        b"{\"uuid\":\"a\",\"parentUuid\":\"b\",\"type\":\"assistant\",\"message\":{\"id\":\"m\"}}\n{\"uuid\":\"b\",\"parentUuid\":\"a\",\"type\":\"assistant\",\"message\":{\"id\":\"m\"}}\n",
    ] {
        let s = read_bytes("x.jsonl", bytes, &forced).expect("forced");
        let _ = s.select(Branches::Active);
        let _ = s.select(Branches::All);
    }
}

// ---------------------------------------------------------------------------------------
// Real fixtures
// ---------------------------------------------------------------------------------------

#[test]
fn viewer_5c0375b4_sidechains_and_errors() {
    let Some(s) =
        read_shared("claude-code/claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl")
    else {
        return;
    };
    assert_eq!(s.meta.format, Some(Format::ClaudeCode));
    assert_eq!(s.meta.session_id, "5c0375b4-57a5-4f26-b12d-d022ee4e51b7");
    assert_eq!(s.meta.cwd.as_deref(), Some("/path/to/Demo"));
    assert_eq!(s.meta.format_version.as_deref(), Some("1.0.108"));
    assert_eq!(s.meta.created.as_deref(), Some("2025-09-07T09:52:03.071Z"));
    assert!(s.meta.links.is_empty());
    assert!(s.coverage.complete);

    let all = s.select(Branches::All).records;
    assert_eq!(all.len(), 74);
    assert_eq!(count_role(&all, "user"), 4);
    assert_eq!(count_role(&all, "assistant"), 49);
    assert_eq!(count_role(&all, "tool"), 21);
    assert_eq!(calls(&all), 21);
    assert_eq!(failed_results(&all), 3);
    assert_eq!(failed_calls(&all), 3);
    assert_eq!(sidechain_lines(&all), 22);
    let err = by_id(&all, "f42f3628-5619-4f3d-860f-74703e3897fc");
    assert_eq!(
        err.call_id.as_deref(),
        Some("toolu_018t5jce2ZNoGr2ADsHGQife")
    );
    assert!(err.text.starts_with("<tool_use_error>InputValidationError"));

    assert_eq!(
        s.leaf.as_deref(),
        Some("e9bd5ce8-d37d-49a1-868c-8281d0d0a32b")
    );
    let active = s.select(Branches::Active);
    assert_eq!(active.records.len(), 44);
    assert_eq!(count_role(&active.records, "user"), 2);
    assert_eq!(count_role(&active.records, "assistant"), 29);
    assert_eq!(count_role(&active.records, "tool"), 13);
    assert_eq!(calls(&active.records), 13);
    assert_eq!(sidechain_lines(&active.records), 0);
    assert!(active.coverage.complete);
}

#[test]
fn viewer_1af7fc5e_init_session() {
    let Some(s) =
        read_shared("claude-code/claude-code-viewer/1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl")
    else {
        return;
    };
    assert_eq!(s.meta.session_id, "1af7fc5e-8455-4414-9ccd-011d40f70b2a");
    assert_eq!(s.meta.format_version.as_deref(), Some("1.0.98"));
    assert_eq!(s.meta.created.as_deref(), Some("2025-09-03T00:47:19.293Z"));
    let all = s.select(Branches::All).records;
    assert_eq!(all.len(), 41);
    assert_eq!(count_role(&all, "user"), 2);
    assert_eq!(count_role(&all, "assistant"), 27);
    assert_eq!(count_role(&all, "tool"), 12);
    assert_eq!(calls(&all), 12);
    assert_eq!(failed_calls(&all), 1);
    let active = s.select(Branches::Active).records;
    assert_eq!(ids(&active), ids(&all));
}

#[test]
fn spotter_8463c716_main_with_compaction() {
    let Some(s) = read_shared("claude-code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl")
    else {
        return;
    };
    assert_eq!(s.meta.session_id, "8463c716-a2ea-4c14-9efa-87158ebd9f20");
    assert_eq!(
        s.meta.cwd.as_deref(),
        Some("/home/USER/projects/spotter-worktrees/spotter-fum")
    );
    assert_eq!(s.meta.format_version.as_deref(), Some("2.1.39"));
    assert_eq!(s.meta.created.as_deref(), Some("2026-02-11T21:41:40.277Z"));
    assert!(s.meta.links.is_empty());
    assert!(s.coverage.complete);

    let all = s.select(Branches::All).records;
    assert_eq!(all.len(), 1770);
    assert_eq!(count_role(&all, "user"), 3);
    assert_eq!(count_role(&all, "assistant"), 455);
    assert_eq!(count_role(&all, "tool"), 177);
    assert_eq!(count_role(&all, "system"), 4);
    assert_eq!(all.iter().filter(|r| r.kind == "progress").count(), 1117);
    assert_eq!(calls(&all), 177);
    assert_eq!(failed_results(&all), 13);
    assert_eq!(failed_calls(&all), 13);

    assert_eq!(
        s.leaf.as_deref(),
        Some("d280fbb7-9ee6-4432-903c-df5a5fe7d404")
    );
    let active = s.select(Branches::Active);
    assert!(active.coverage.complete);
    let a = &active.records;
    assert_eq!(a.len(), 685);
    assert_eq!(count_role(a, "assistant"), 455);
    assert_eq!(count_role(a, "tool"), 177);
    assert_eq!(count_role(a, "user"), 3);
    assert_eq!(calls(a), 177);
    assert_calls_have_results(a);
    // The compaction is on the path, linked to the history before it.
    let cb = a
        .iter()
        .find(|r| r.kind == "system" && r.logical_parent_id.is_some() && r.parent_id.is_none())
        .expect("compact boundary on the active path");
    let before = a
        .iter()
        .position(|r| Some(&r.entry_id) == cb.logical_parent_id.as_ref());
    assert!(before.is_some_and(|i| i < cb.index));
}

#[test]
fn spotter_small_transcripts() {
    let cases: [(&str, &str, [usize; 4], [usize; 4], usize); 3] = [
        // file, session id, all [records, assistant, tool, calls], active [...], failed calls
        (
            "claude-code/spotter/short.jsonl",
            "55604662-cf2a-4331-851a-ec234028f8ca",
            [17, 7, 2, 2],
            [14, 7, 2, 2],
            2,
        ),
        (
            "claude-code/spotter/tool_heavy.jsonl",
            "d6e0bada-1959-4eec-a9d2-0bfade768d8f",
            [45, 15, 6, 6],
            [32, 15, 6, 6],
            0,
        ),
        (
            "claude-code/spotter/subagent.jsonl",
            "491e126e-1e71-469c-ade2-fcc8af567c74",
            [112, 44, 16, 16],
            [69, 44, 16, 16],
            0,
        ),
    ];
    for (rel, sid, all_n, active_n, failed) in cases {
        let Some(s) = read_shared(rel) else { return };
        assert_eq!(s.meta.session_id, sid, "{rel}");
        let all = s.select(Branches::All).records;
        let got = [
            all.len(),
            count_role(&all, "assistant"),
            count_role(&all, "tool"),
            calls(&all),
        ];
        assert_eq!(got, all_n, "{rel} all");
        assert_eq!(failed_calls(&all), failed, "{rel}");
        let active = s.select(Branches::Active).records;
        let got = [
            active.len(),
            count_role(&active, "assistant"),
            count_role(&active, "tool"),
            calls(&active),
        ];
        assert_eq!(got, active_n, "{rel} active");
        assert_calls_have_results(&active);
    }
}

#[test]
fn subagent_fixtures() {
    let cases = [
        (
            "claude-code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-a7be2f0.jsonl",
            "8463c716-a2ea-4c14-9efa-87158ebd9f20/agent-a7be2f0",
            "8463c716-a2ea-4c14-9efa-87158ebd9f20",
            [150, 51, 19, 19, 2],
            83,
        ),
        (
            "claude-code/spotter/8463c716-a2ea-4c14-9efa-87158ebd9f20/subagents/agent-acompact-f46190.jsonl",
            "8463c716-a2ea-4c14-9efa-87158ebd9f20/agent-acompact-f46190",
            "8463c716-a2ea-4c14-9efa-87158ebd9f20",
            [7, 1, 0, 0, 0],
            2,
        ),
        (
            "claude-code/spotter/258c7280-ae70-4798-800f-63464d01a85d/subagents/agent-acompact-fffbd0.jsonl",
            "258c7280-ae70-4798-800f-63464d01a85d/agent-acompact-fffbd0",
            "258c7280-ae70-4798-800f-63464d01a85d",
            [4, 1, 0, 0, 0],
            2,
        ),
        (
            "claude-code/codemie-code/-tmp-private/agent-36541525.jsonl",
            "4c2ddfdc-b619-4525-8d03-1950fb1b0257/agent-36541525",
            "4c2ddfdc-b619-4525-8d03-1950fb1b0257",
            [2, 1, 0, 0, 0],
            2,
        ),
    ];
    for (rel, sid, parent, all_n, active_n) in cases {
        let Some(s) = read_shared(rel) else { return };
        assert_eq!(s.meta.session_id, sid);
        assert_eq!(s.meta.link("subagent_of"), Some(parent), "{rel}");
        let all = s.select(Branches::All).records;
        let got = [
            all.len(),
            count_role(&all, "assistant"),
            count_role(&all, "tool"),
            calls(&all),
            failed_calls(&all),
        ];
        assert_eq!(got, all_n, "{rel}");
        let active = s.select(Branches::Active).records;
        assert_eq!(active.len(), active_n, "{rel}");
        assert!(active.iter().all(|r| r.sidechain), "{rel}");
    }
    if let Some(s) = read_shared("claude-code/codemie-code/-tmp-private/agent-36541525.jsonl") {
        assert_eq!(s.meta.created.as_deref(), Some("2025-12-10T19:37:37.159Z"));
        assert_eq!(s.meta.format_version.as_deref(), Some("2.0.64"));
    }
    // Its main session.
    if let Some(s) = read_shared(
        "claude-code/codemie-code/-tmp-private/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl",
    ) {
        assert_eq!(s.meta.session_id, "4c2ddfdc-b619-4525-8d03-1950fb1b0257");
        assert_eq!(s.meta.cwd.as_deref(), Some("/tmp/private"));
        assert!(s.meta.links.is_empty());
        let all = s.select(Branches::All).records;
        assert_eq!(all.len(), 31);
        assert_eq!(
            all.iter()
                .filter(|r| r.kind == "file-history-snapshot")
                .count(),
            6
        );
        assert_eq!(calls(&all), 6);
        assert_eq!(s.select(Branches::Active).records.len(), 25);
    }
}

#[test]
fn dag_compact_after_rewind_active_path() {
    let Some(s) = read_shared("claude-code/claude-code-log/dag_compact_after_rewind.jsonl") else {
        return;
    };
    assert_eq!(s.meta.session_id, "s1");
    assert_eq!(s.leaf.as_deref(), Some("p1a"));
    let active = s.select(Branches::Active);
    assert!(active.coverage.complete);
    let conversational: Vec<&str> = active
        .records
        .iter()
        .filter(|r| matches!(r.kind.as_str(), "user" | "assistant"))
        .map(|r| r.entry_id.as_str())
        .collect();
    assert_eq!(
        conversational,
        ["u1", "a1", "b2u", "b2a", "b2u2", "b2a2", "cs", "p1u", "p1a"]
    );
    assert_eq!(
        ids(&active.records),
        ["u1", "a1", "b2u", "b2a", "b2u2", "b2a2", "cb", "cs", "p1u", "p1a"]
    );
    assert_eq!(
        by_id(&active.records, "cb").logical_parent_id.as_deref(),
        Some("b2a2")
    );
    assert_eq!(by_id(&active.records, "cs").class, TextClass::Summary);
    let all = s.select(Branches::All);
    assert_eq!(all.records.len(), 12);
    assert_ne!(all.lineage_fingerprint, active.lineage_fingerprint);
}

#[test]
fn edge_cases_file() {
    let Some(s) = read_shared("claude-code/claude-code-log/edge_cases.jsonl") else {
        return;
    };
    assert_eq!(s.meta.session_id, "edge_cases");
    assert_eq!(s.meta.created.as_deref(), Some("2025-06-14T11:00:00.000Z"));
    // Three lines that are JSON but not objects; nothing else fails to parse.
    assert_eq!(s.coverage.count(ReasonCode::MalformedLine), 3);
    assert_eq!(s.coverage.count(ReasonCode::PartialTail), 0);
    // edge_010 and edge_011 appear twice each; the later line wins.
    assert_eq!(s.coverage.count(ReasonCode::DuplicateEntryId), 2);
    // `{"silly": "this"}` has no type.
    assert_eq!(s.coverage.count(ReasonCode::UnknownEntryType), 1);
    assert_eq!(s.coverage.lines, 19);

    let all = s.select(Branches::All).records;
    assert_eq!(all.len(), 17);
    assert_eq!(count_role(&all, "user"), 7);
    assert_eq!(count_role(&all, "assistant"), 7);
    assert_eq!(count_role(&all, "tool"), 1);
    assert_eq!(calls(&all), 3);
    assert_eq!(failed_calls(&all), 1);
    assert_eq!(by_id(&all, "edge_004/0").outcome, Some(Outcome::Failed));
    let e11 = by_id(&all, "edge_011");
    assert_eq!(e11.line, 12);
    assert!(e11.text.starts_with("Testing special characters: café"));
    assert_eq!(by_id(&all, "edge_010").text, "wow error");
    // An assistant line from another session whose parent is not in the file.
    let a4 = by_id(&all, "assistant_004");
    assert_eq!(
        (a4.line, a4.parent_id.as_deref()),
        (17, Some("assistant_003"))
    );
    assert_eq!(
        by_id(&all, "assistant_004/0").tool.as_deref(),
        Some("TodoWrite")
    );
    // The object without a type (line 14) is kept as a record with a position id.
    assert_eq!(by_id(&all, "l14").kind, "unknown");
    // The last line has no newline and is read: a summary of this file, so the title.
    let last = by_id(&all, "l19");
    assert_eq!(last.kind, "summary");
    assert!(s
        .meta
        .title
        .as_deref()
        .is_some_and(|t| t.starts_with("Tested various edge cases")));

    assert_eq!(s.leaf.as_deref(), Some("edge_011"));
    assert_eq!(ids(&s.select(Branches::Active).records), ["edge_011"]);
}

#[test]
fn incremental_turn_1_is_a_prefix_of_turn_2() {
    let (Some(t1), Some(t2)) = (
        read_shared("claude-code/codemie-code/incremental-simple/turn-1.jsonl"),
        read_shared("claude-code/codemie-code/incremental-simple/turn-2.jsonl"),
    ) else {
        return;
    };
    assert_eq!(t1.meta.session_id, "3fb74381-1bf4-475e-8c6f-442d872b1bcf");
    assert_eq!(t2.meta.session_id, t1.meta.session_id);
    assert_eq!(t1.meta.created, t2.meta.created);
    assert_eq!(
        t1.meta.title, None,
        "its summaries belong to other sessions"
    );
    let a1 = t1.select(Branches::All).records;
    let a2 = t2.select(Branches::All).records;
    assert_eq!(a1.len(), 20);
    assert_eq!(a2.len(), 47);
    assert_eq!(a1[..], a2[..a1.len()]);
    assert_eq!(a1.iter().filter(|r| r.kind == "summary").count(), 15);
    assert!(t1.coverage.complete && t2.coverage.complete);

    let act1 = t1.select(Branches::Active).records;
    assert_eq!(act1.len(), 3);
    assert_eq!(
        t1.leaf.as_deref(),
        Some("b5d93735-6144-4784-b613-07756c66fe16")
    );
    let act2 = t2.select(Branches::Active).records;
    assert_eq!(act2.len(), 26);
    assert_eq!(count_role(&act2, "assistant"), 16);
    assert_eq!(count_role(&act2, "tool"), 2);
    assert_eq!(count_role(&act2, "system"), 4);
    assert_eq!(
        t2.leaf.as_deref(),
        Some("54c9d860-9621-4d8b-a918-e925064c52a2")
    );
}

#[test]
fn agent_sessions_catalogue_survives() {
    let Some(s) = read_shared("claude-code/agent-sessions/small.jsonl") else {
        return;
    };
    assert_eq!(s.meta.session_id, "ses_stage0_small");
    assert_eq!(s.meta.title.as_deref(), Some("Stage0 small fixture"));
    // Many `[trimmed for fixture]` uuids repeat; the last line of each wins.
    assert_eq!(s.coverage.count(ReasonCode::DuplicateEntryId), 44);
    assert_eq!(s.coverage.count(ReasonCode::MalformedLine), 0);
    let all = s.select(Branches::All).records;
    assert_eq!(all.len(), 47);
    assert_eq!(count_role(&all, "tool"), 3);
    assert_eq!(calls(&all), 2);
    assert_eq!(s.leaf.as_deref(), Some("u-nested-1"));
    assert_eq!(s.select(Branches::Active).records.len(), 5);
}
