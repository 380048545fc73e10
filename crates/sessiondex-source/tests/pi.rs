//! pi (v1, v2, v3) and oh-my-pi: the real fixtures under `shared/fixtures/sessions/pi/`
//! and small synthetic files for every shape, including oh-my-pi (which has no real fixture).
//!
//! The expected numbers for the real fixtures were counted with a separate Python script
//! over the raw JSONL (splitting glued objects with `json.JSONDecoder.raw_decode`), not by
//! running this reader.

use proptest::prelude::*;
use sessiondex_source::{
    detect, read_bytes, Branches, Format, Outcome, ReadOptions, ReasonCode, Record, Session,
    TextClass,
};

use crate::{count_role, read_shared};

fn read(bytes: &[u8]) -> Session {
    read_bytes("mem.jsonl", bytes, &ReadOptions::default()).expect("detected")
}

fn children(records: &[Record]) -> Vec<&Record> {
    records.iter().filter(|r| r.kind == "tool_call").collect()
}

fn count_outcome(records: &[Record], outcome: Outcome) -> usize {
    records
        .iter()
        .filter(|r| r.kind == "tool_call" && r.outcome == Some(outcome))
        .count()
}

fn by_id<'a>(s: &'a Session, id: &str) -> &'a Record {
    s.records
        .iter()
        .find(|r| r.entry_id == id)
        .unwrap_or_else(|| panic!("no record {id}"))
}

/// oh-my-pi's title slot exactly as its writer lays it out: `JSON.stringify` of
/// `{type,v,title,source,updatedAt,pad}` with `pad` spaces making the line 256 bytes
/// including the newline.
fn omp_title_slot(title: &str) -> String {
    let unpadded = format!(
        r#"{{"type":"title","v":1,"title":"{title}","source":"auto","updatedAt":"2026-03-01T10:00:00.000Z","pad":""}}"#
    );
    let pad = " ".repeat(256 - unpadded.len() - 1);
    let line = format!(
        r#"{{"type":"title","v":1,"title":"{title}","source":"auto","updatedAt":"2026-03-01T10:00:00.000Z","pad":"{pad}"}}"#
    );
    assert_eq!(line.len() + 1, 256);
    line + "\n"
}

// ---------------------------------------------------------------------------------------
// Real fixtures
// ---------------------------------------------------------------------------------------

#[test]
fn session_jsonl_v1_counts_and_glued_line() {
    let Some(s) = read_shared("pi/pi-mono/session.jsonl") else {
        return;
    };
    assert_eq!(s.meta.format, Some(Format::Pi));
    assert_eq!(s.meta.session_id, "5fd1e58c-9635-410e-a644-133a96057c90");
    assert_eq!(
        s.meta.cwd.as_deref(),
        Some("/Users/badlogic/workspaces/pi-mono")
    );
    assert_eq!(s.meta.created.as_deref(), Some("2025-12-17T19:39:21.535Z"));
    assert_eq!(s.meta.format_version, None, "v1 headers carry no version");
    assert!(s.meta.links.is_empty());
    assert_eq!(s.meta.first_ts.as_deref(), Some("2025-12-17T19:39:17.548Z"));
    assert_eq!(s.meta.last_ts.as_deref(), Some("2025-12-17T21:23:29.721Z"));
    assert!(s.coverage.complete);

    // 463 entries (464 objects minus the header) + 189 tool calls.
    let all = s.select(Branches::All).records;
    assert_eq!(all.len(), 652);
    assert_eq!(count_role(&all, "user"), 44);
    // 220 assistant messages + their 189 tool call children
    assert_eq!(count_role(&all, "assistant"), 220 + 189);
    assert_eq!(
        count_role(&all, "tool"),
        190,
        "189 toolResult + 1 bashExecution"
    );
    assert_eq!(children(&all).len(), 189);
    assert_eq!(count_outcome(&all, Outcome::Failed), 12);
    assert_eq!(count_outcome(&all, Outcome::Succeeded), 177);
    assert_eq!(count_outcome(&all, Outcome::Aborted), 0);
    assert_eq!(
        all.iter()
            .filter(|r| r.role.as_deref() == Some("tool") && r.is_error == Some(true))
            .count(),
        12
    );
    assert_eq!(all.iter().filter(|r| r.thinking.is_some()).count(), 182);
    assert_eq!(
        all.iter()
            .filter(|r| r.class == TextClass::Thinking)
            .count(),
        4
    );
    assert_eq!(all.iter().filter(|r| r.kind == "compaction").count(), 1);
    assert_eq!(
        all.iter().filter(|r| r.class == TextClass::Summary).count(),
        1
    );
    assert_eq!(
        all.iter()
            .filter(|r| r.kind == "thinking_level_change")
            .count(),
        8
    );

    // Line 440 holds two objects: the assistant message and the glued `ok` user message.
    let first = by_id(&s, "l440");
    assert_eq!(first.role.as_deref(), Some("assistant"));
    let ok = by_id(&s, "l440.2");
    assert_eq!(ok.role.as_deref(), Some("user"));
    assert_eq!(ok.text, "ok");
    assert_eq!(ok.class, TextClass::UserText);
    assert_eq!(ok.line, 440);
    assert_eq!(ok.parent_id.as_deref(), Some("l440"));
    assert_eq!(ok.timestamp.as_deref(), Some("2025-12-17T21:20:35.077Z"));
    assert_eq!(by_id(&s, "l441").parent_id.as_deref(), Some("l440.2"));

    // v1: one chain, so the active path is every entry and the leaf is the last line.
    assert_eq!(s.leaf.as_deref(), Some("l463"));
    let active = s.select(Branches::Active);
    assert_eq!(active.records.len(), 652);
    assert!(active.coverage.complete);
    assert_eq!(active.records[0].entry_id, "l2");
    assert_eq!(active.records[0].parent_id, None);

    // The bashExecution entry (line 270): `npm run check`, exit code 0.
    let bash = by_id(&s, "l270");
    assert_eq!(bash.role.as_deref(), Some("tool"));
    assert_eq!(bash.tool.as_deref(), Some("bash"));
    assert_eq!(bash.outcome, Some(Outcome::Succeeded));
    assert!(bash.text.starts_with("npm run check\n"));
}

#[test]
fn session_jsonl_tool_call_children() {
    let Some(s) = read_shared("pi/pi-mono/session.jsonl") else {
        return;
    };
    let kids = children(&s.records);
    let names = |n: &str| kids.iter().filter(|r| r.tool.as_deref() == Some(n)).count();
    assert_eq!(names("bash"), 115);
    assert_eq!(names("edit"), 43);
    assert_eq!(names("read"), 30);
    assert_eq!(names("write"), 1);
    for (i, r) in s.records.iter().enumerate() {
        if r.kind == "tool_call" {
            let carrier = r.parent_entry_id.as_deref().expect("carrier");
            assert!(r.operation_address.as_deref() == Some(r.entry_id.as_str()));
            assert!(r.entry_id.starts_with(&format!("{carrier}/")));
            assert!(r.parent_id.is_none());
            assert_eq!(r.class, TextClass::ToolInput);
            assert!(r.call_id.is_some());
            // Children follow their carrier (or a sibling child) directly.
            let prev = &s.records[i - 1];
            assert!(prev.entry_id == carrier || prev.parent_entry_id.as_deref() == Some(carrier));
            assert_eq!(prev.line, r.line);
        }
    }
    // Every edit/read/write call names its file through the typed `path` argument.
    let with_files = kids.iter().filter(|r| !r.files_touched.is_empty()).count();
    assert_eq!(with_files, 43 + 30 + 1);
}

#[test]
fn large_session_aborted_and_error() {
    let Some(s) = read_shared("pi/pi-mono/large-session.jsonl") else {
        return;
    };
    assert_eq!(s.meta.session_id, "d703a1a9-1b7b-4fb1-b512-c9738b1fe617");
    assert_eq!(s.meta.created.as_deref(), Some("2025-11-20T23:33:50.805Z"));
    let all = &s.records;
    // 1018 entries + 391 tool calls.
    assert_eq!(all.len(), 1409);
    assert_eq!(count_role(all, "user"), 88);
    assert_eq!(count_role(all, "assistant"), 453 + 391);
    assert_eq!(count_role(all, "tool"), 373);
    assert_eq!(children(all).len(), 391);
    assert_eq!(count_outcome(all, Outcome::Failed), 19);
    // Two calls of `stopReason:"aborted"` messages got no result (lines 234 and 843).
    assert_eq!(count_outcome(all, Outcome::Aborted), 2);
    let aborted: Vec<u64> = all
        .iter()
        .filter(|r| r.outcome == Some(Outcome::Aborted))
        .map(|r| r.line)
        .collect();
    assert_eq!(aborted, [234, 843]);
    // 16 calls of the `stopReason:"error"` message on line 33 got no result and no typed
    // aborted state: no outcome.
    assert_eq!(
        all.iter()
            .filter(|r| r.kind == "tool_call" && r.outcome.is_none())
            .count(),
        16
    );
    assert_eq!(count_outcome(all, Outcome::Succeeded), 391 - 19 - 2 - 16);
    let err = by_id(&s, "l33");
    assert_eq!(err.is_error, Some(true));
    assert!(err.text.ends_with("terminated"));
    assert_eq!(
        all.iter()
            .filter(|r| r.is_error == Some(true)
                && r.kind == "message"
                && r.role.as_deref() == Some("assistant"))
            .count(),
        1
    );
    assert_eq!(
        all.iter()
            .filter(|r| r.kind == "thinking_level_change")
            .count(),
        103
    );
    let mc: Vec<_> = all.iter().filter(|r| r.kind == "model_change").collect();
    assert_eq!(mc.len(), 1);
    assert_eq!(s.select(Branches::Active).records.len(), 1409);
    assert_eq!(s.leaf.as_deref(), Some("l1019"));
}

#[test]
fn before_compaction_header_links_and_counts() {
    let Some(s) = read_shared("pi/pi-mono/before-compaction.jsonl") else {
        return;
    };
    assert_eq!(s.meta.session_id, "ffae836b-9420-4060-ac13-7745215f90ff");
    assert_eq!(s.meta.created.as_deref(), Some("2025-12-09T00:53:29.825Z"));
    assert_eq!(
        s.meta.cwd.as_deref(),
        Some("/Users/badlogic/workspaces/pi-mono")
    );
    assert_eq!(
        s.meta.link("branched_from"),
        Some(
            "/Users/badlogic/.pi/agent/sessions/--Users-badlogic-workspaces-pi-mono--/\
             2025-12-09T00-52-54-397Z_d97339c6-6c10-4827-846b-9ff1d9c3dc37.jsonl"
        )
    );
    assert_eq!(s.meta.link("parent_session"), None);
    assert_eq!(s.meta.links.len(), 1);
    let all = &s.records;
    // 1002 entries + 454 tool calls.
    assert_eq!(all.len(), 1456);
    assert_eq!(count_role(all, "user"), 55);
    assert_eq!(count_role(all, "assistant"), 484 + 454);
    assert_eq!(
        count_role(all, "tool"),
        451,
        "448 toolResult + 3 bashExecution"
    );
    assert_eq!(children(all).len(), 454);
    assert_eq!(count_outcome(all, Outcome::Failed), 12);
    // Five calls of aborted messages (lines 374, 386 x3, 678) never got a result.
    assert_eq!(count_outcome(all, Outcome::Aborted), 5);
    // One call (line 628, stopReason toolUse) has no result and no typed state.
    assert_eq!(
        all.iter()
            .filter(|r| r.kind == "tool_call" && r.outcome.is_none())
            .map(|r| r.line)
            .collect::<Vec<_>>(),
        [628]
    );
    assert_eq!(all.iter().filter(|r| r.kind == "compaction").count(), 2);
    assert_eq!(all.iter().filter(|r| r.kind == "model_change").count(), 5);
    assert_eq!(by_id(&s, "l711").text, "anthropic/claude-3-opus-20240229");
    assert_eq!(
        all.iter()
            .filter(|r| r.class == TextClass::Thinking)
            .count(),
        2
    );
    assert_eq!(s.select(Branches::Active).records.len(), 1456);
}

#[test]
fn agent_sessions_small_v3_tree() {
    let Some(s) = read_shared("pi/agent-sessions/small.jsonl") else {
        return;
    };
    assert_eq!(s.meta.format, Some(Format::Pi));
    assert_eq!(s.meta.session_id, "019e19b4-eb48-746a-aa6b-8dfcfa37954b");
    assert_eq!(s.meta.format_version.as_deref(), Some("3"));
    assert_eq!(s.meta.cwd.as_deref(), Some("/tmp/as-agent-fixture/project"));
    assert_eq!(s.meta.created.as_deref(), Some("2026-05-12T01:02:27.657Z"));
    assert_eq!(s.records.len(), 8);
    assert_eq!(s.leaf.as_deref(), Some("2c19d326"));
    let active = s.select(Branches::Active);
    let ids: Vec<&str> = active.records.iter().map(|r| r.entry_id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "f7c7091e", "3a59c5dd", "30c6a75f", "22a2720e", "c139a627", "ddd2179a", "4a666296",
            "2c19d326"
        ]
    );
    assert_eq!(count_role(&active.records, "user"), 2);
    assert_eq!(count_role(&active.records, "assistant"), 2);
    let kinds: Vec<&str> = active.records.iter().map(|r| r.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message",
            "message",
            "compaction",
            "message",
            "message",
            "compaction"
        ]
    );
    assert_eq!(active.records[0].text, "pi-fixture/pi-fixture-model");
    assert_eq!(active.records[1].text, "off");
    assert_eq!(active.records[4].class, TextClass::Summary);
    assert_eq!(
        active.records[4].text,
        "hello.py prints a fixture greeting."
    );
    assert_eq!(
        active.records[2].text,
        "Read hello.py and summarize what it prints without editing files."
    );
    assert!(active.coverage.complete);
}

// ---------------------------------------------------------------------------------------
// Synthetic pi shapes
// ---------------------------------------------------------------------------------------

#[test]
fn v1_ids_chain_and_glued_objects() {
    let log = br#"{"type":"session","id":"s1","timestamp":"2025-12-01T00:00:00Z","cwd":"/p","provider":"anthropic","modelId":"m"}
{"type":"message","timestamp":"2025-12-01T00:00:01Z","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}
{"type":"message","timestamp":"2025-12-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"yo"}],"stopReason":"stop"}}{"type":"message","timestamp":"2025-12-01T00:00:03Z","message":{"role":"user","content":"ok"}}
{"type":"thinking_level_change","timestamp":"2025-12-01T00:00:04Z","thinkingLevel":"high"}
"#;
    let s = read(log);
    assert_eq!(s.meta.format, Some(Format::Pi));
    let ids: Vec<_> = s.records.iter().map(|r| r.entry_id.as_str()).collect();
    assert_eq!(ids, ["l2", "l3", "l3.2", "l4"]);
    let parents: Vec<_> = s.records.iter().map(|r| r.parent_id.as_deref()).collect();
    assert_eq!(parents, [None, Some("l2"), Some("l3"), Some("l3.2")]);
    assert_eq!(s.records[2].text, "ok");
    assert_eq!(s.leaf.as_deref(), Some("l4"));
    assert_eq!(s.select(Branches::Active).records.len(), 4);
}

#[test]
fn v3_branches_leaf_is_last_line() {
    let log = br#"{"type":"session","version":3,"id":"s3","timestamp":"2026-01-01T00:00:00Z","cwd":"/p","parentSession":"/old/s2.jsonl"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"q"}}
{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"first answer"}]}}
{"type":"branch_summary","id":"c","parentId":"a","timestamp":"2026-01-01T00:00:03Z","fromId":"b","summary":"tried the first answer"}
{"type":"message","id":"d","parentId":"c","timestamp":"2026-01-01T00:00:04Z","message":{"role":"assistant","content":[{"type":"text","text":"second answer"}]}}
{"type":"label","id":"e","parentId":"d","timestamp":"2026-01-01T00:00:05Z","targetId":"d","label":"good"}
{"type":"session_info","id":"f","parentId":"e","timestamp":"2026-01-01T00:00:06Z","name":"My session"}
"#;
    let s = read(log);
    assert_eq!(s.meta.link("parent_session"), Some("/old/s2.jsonl"));
    assert_eq!(s.meta.title.as_deref(), Some("My session"));
    assert_eq!(s.meta.format_version.as_deref(), Some("3"));
    assert_eq!(s.leaf.as_deref(), Some("f"));
    let active = s.select(Branches::Active);
    let ids: Vec<_> = active.records.iter().map(|r| r.entry_id.as_str()).collect();
    assert_eq!(ids, ["a", "c", "d", "e", "f"]);
    assert_eq!(active.records[1].class, TextClass::Summary);
    assert_eq!(active.records[1].text, "tried the first answer");
    assert_eq!(active.records[3].text, "good");
    assert_eq!(s.select(Branches::All).records.len(), 6);
}

#[test]
fn tool_calls_results_errors_and_aborts() {
    let log = br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
{"type":"message","id":"u","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"go"}}
{"type":"message","id":"a1","parentId":"u","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"plan"},{"type":"text","text":"reading"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"/src/a.rs"}},{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":"cat /etc/x"}}],"stopReason":"toolUse"}}
{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-01T00:00:03Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"fn main() {}"}],"isError":false}}
{"type":"message","id":"r2","parentId":"r1","timestamp":"2026-01-01T00:00:04Z","message":{"role":"toolResult","toolCallId":"c2","toolName":"bash","content":[{"type":"text","text":"No such file"}],"isError":true}}
{"type":"message","id":"a2","parentId":"r2","timestamp":"2026-01-01T00:00:05Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c3","name":"mcp__github__create_issue","arguments":{"title":"x"}},{"type":"toolCall","id":"c4","name":"edit","arguments":{"path":"/b.rs"}}],"stopReason":"aborted","errorMessage":"Request was aborted."}}
{"type":"message","id":"r4","parentId":"a2","timestamp":"2026-01-01T00:00:06Z","message":{"role":"toolResult","toolCallId":"c4","toolName":"edit","content":"Operation aborted","isError":true}}
{"type":"message","id":"a3","parentId":"r4","timestamp":"2026-01-01T00:00:07Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"}],"stopReason":"error","errorMessage":"overloaded"}}
{"type":"message","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:08Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"only thinking"}],"stopReason":"stop"}}
"#;
    let s = read(log);
    let a1 = by_id(&s, "a1");
    assert_eq!(a1.text, "reading");
    assert_eq!(a1.thinking.as_deref(), Some("plan"));
    assert_eq!(a1.class, TextClass::AssistantText);
    let c1 = by_id(&s, "a1/0");
    assert_eq!(c1.kind, "tool_call");
    assert_eq!(c1.operation_address.as_deref(), Some("a1/0"));
    assert_eq!(c1.parent_entry_id.as_deref(), Some("a1"));
    assert_eq!(c1.parent_id, None);
    assert_eq!(c1.call_id.as_deref(), Some("c1"));
    assert_eq!(c1.tool.as_deref(), Some("read"));
    assert_eq!(c1.action.as_deref(), Some("read"));
    assert_eq!(c1.provider, None);
    assert_eq!(c1.text, r#"{"path":"/src/a.rs"}"#);
    assert_eq!(c1.files_touched, ["/src/a.rs"]);
    assert_eq!(c1.outcome, Some(Outcome::Succeeded));
    assert_eq!(c1.is_error, Some(false));
    assert_eq!(c1.timestamp.as_deref(), Some("2026-01-01T00:00:02.000Z"));
    let c2 = by_id(&s, "a1/1");
    assert!(c2.files_touched.is_empty(), "no paths from shell commands");
    assert_eq!(c2.outcome, Some(Outcome::Failed));
    assert_eq!(c2.is_error, Some(true));
    let r2 = by_id(&s, "r2");
    assert_eq!(r2.role.as_deref(), Some("tool"));
    assert_eq!(r2.class, TextClass::ToolOutput);
    assert_eq!(r2.text, "No such file");
    assert_eq!(r2.outcome, Some(Outcome::Failed));
    // Aborted message: the unanswered call is aborted, the answered one keeps its result.
    let c3 = by_id(&s, "a2/0");
    assert_eq!(c3.outcome, Some(Outcome::Aborted));
    assert_eq!(c3.provider.as_deref(), Some("github"));
    assert_eq!(c3.action.as_deref(), Some("create_issue"));
    assert_eq!(c3.reference.as_deref(), Some("mcp__github__create_issue"));
    assert_eq!(by_id(&s, "a2/1").outcome, Some(Outcome::Failed));
    assert_eq!(by_id(&s, "a2").is_error, None);
    // stopReason error: typed error flag, errorMessage in the text.
    let a3 = by_id(&s, "a3");
    assert_eq!(a3.is_error, Some(true));
    assert_eq!(a3.text, "overloaded");
    assert_eq!(a3.class, TextClass::AssistantText);
    let a4 = by_id(&s, "a4");
    assert_eq!(a4.class, TextClass::Thinking);
    assert_eq!(a4.text, "");
    // Order: children right after their carrier.
    let ids: Vec<_> = s.records.iter().map(|r| r.entry_id.as_str()).collect();
    assert_eq!(
        ids,
        ["u", "a1", "a1/0", "a1/1", "r1", "r2", "a2", "a2/0", "a2/1", "r4", "a3", "a4"]
    );
    let active = s.select(Branches::Active);
    assert_eq!(active.records.len(), 12);
}

#[test]
fn shell_executions_and_custom_messages() {
    let log = br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
{"type":"message","id":"b1","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"bashExecution","command":"make","output":"boom","exitCode":2,"cancelled":false,"truncated":false}}
{"type":"message","id":"b2","parentId":"b1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"bashExecution","command":"sleep 9","output":"","exitCode":null,"cancelled":true,"truncated":false}}
{"type":"custom_message","id":"cm","parentId":"b2","timestamp":"2026-01-01T00:00:03Z","customType":"ext","content":[{"type":"text","text":"injected"}],"display":true}
{"type":"custom","id":"cu","parentId":"cm","timestamp":"2026-01-01T00:00:04Z","customType":"state","data":{"k":1}}
{"type":"message","id":"h","parentId":"cu","timestamp":"2026-01-01T00:00:05Z","message":{"role":"custom","customType":"ext","content":"hook says","display":false}}
"#;
    let s = read(log);
    let b1 = by_id(&s, "b1");
    assert_eq!(b1.role.as_deref(), Some("tool"));
    assert_eq!(b1.tool.as_deref(), Some("bash"));
    assert_eq!(b1.text, "make\nboom");
    assert_eq!(b1.outcome, Some(Outcome::Failed));
    assert_eq!(b1.is_error, None);
    assert_eq!(by_id(&s, "b2").outcome, Some(Outcome::Aborted));
    let cm = by_id(&s, "cm");
    assert_eq!(cm.text, "injected");
    assert_eq!(cm.class, TextClass::Meta);
    assert_eq!(by_id(&s, "cu").text, "state");
    assert_eq!(by_id(&s, "h").text, "hook says");
    assert_eq!(by_id(&s, "h").role.as_deref(), Some("system"));
}

#[test]
fn unknown_types_are_kept_as_meta() {
    let log = br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
{"type":"hologram","id":"x","parentId":null,"timestamp":"2026-01-01T00:00:01Z","payload":[1,2]}
{"id":"y","parentId":"x","timestamp":"2026-01-01T00:00:02Z"}
{"type":"message","id":"z","parentId":"y","timestamp":"2026-01-01T00:00:03Z","message":{"role":"narrator","content":"psst"}}
{"type":"message","id":"w","parentId":"z","message":"not an object"}
"#;
    let s = read(log);
    assert_eq!(s.records.len(), 4);
    let x = by_id(&s, "x");
    assert_eq!(x.kind, "hologram");
    assert_eq!(x.class, TextClass::Meta);
    assert_eq!(by_id(&s, "y").kind, "unknown");
    let z = by_id(&s, "z");
    assert_eq!(z.role.as_deref(), Some("narrator"));
    assert_eq!(z.text, "psst");
    assert_eq!(by_id(&s, "w").timestamp, None);
    assert_eq!(s.select(Branches::Active).records.len(), 4);
}

#[test]
fn bad_lines_partial_tail_and_duplicates() {
    let log = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"cwd\":\"/p\"}\n\
{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"one\"}}\n\
not json at all\n\
{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{\"role\":\"user\",\"content\":\"one again \xff\"}}\n\
{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"message\":{\"role\":\"assis";
    let s = read(log);
    assert_eq!(s.records.len(), 1);
    assert_eq!(s.records[0].text, "one again \u{fffd}");
    assert_eq!(s.coverage.count(ReasonCode::MalformedLine), 1);
    assert_eq!(s.coverage.count(ReasonCode::PartialTail), 1);
    assert_eq!(s.coverage.count(ReasonCode::DuplicateEntryId), 1);
    assert_eq!(s.coverage.count(ReasonCode::InvalidUtf8), 1);
    assert_eq!(s.leaf.as_deref(), Some("a"));
}

#[test]
fn headerless_file_takes_its_id_from_the_file_name() {
    let log = br#"{"type":"message","timestamp":"2025-12-01T00:00:01Z","message":{"role":"user","content":"hi"}}
"#;
    let s = read_bytes(
        "/x/--p--/2025-12-01T00-00-00-000Z_5fd1e58c-aaaa.jsonl",
        log,
        &ReadOptions {
            format: Some(Format::Pi),
            ..ReadOptions::default()
        },
    )
    .expect("forced");
    assert_eq!(s.meta.session_id, "5fd1e58c-aaaa");
    assert_eq!(s.records.len(), 1);
    assert_eq!(s.records[0].entry_id, "l1");
}

#[test]
fn parent_cycle_stops() {
    let log =
        br#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
{"type":"message","id":"a","parentId":"b","message":{"role":"user","content":"1"}}
{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"2"}}
"#;
    let s = read(log);
    let active = s.select(Branches::Active);
    assert_eq!(active.records.len(), 2);
    assert_eq!(active.coverage.count(ReasonCode::InvalidParentGraph), 1);
}

// ---------------------------------------------------------------------------------------
// oh-my-pi (no real fixture: shapes from can1357/oh-my-pi
// packages/coding-agent/src/session/session-entries.ts and session-title-slot.ts)
// ---------------------------------------------------------------------------------------

fn omp_log(with_slot: bool) -> Vec<u8> {
    let mut out = String::new();
    if with_slot {
        out.push_str(&omp_title_slot("Fix the flaky test"));
    }
    out.push_str(r#"{"type":"session","version":3,"id":"0195f3a2-7c1e-7000-8000-1234567890ab","title":"Header title","titleSource":"auto","timestamp":"2026-03-01T09:59:59.000Z","cwd":"/work/repo","parentSession":"/home/u/.omp/agent/sessions/--work-repo--/old.jsonl"}
{"type":"session_init","id":"3f9a1c2e","parentId":null,"timestamp":"2026-03-01T10:00:00.000Z","systemPrompt":["sys"],"task":"Find the flaky test","tools":["omp.grep","read"],"agent":"scout"}
{"type":"model_change","id":"8b2d4e6f","parentId":"3f9a1c2e","timestamp":"2026-03-01T10:00:00.500Z","model":"anthropic/claude-opus-4-5","role":"default"}
{"type":"mode_change","id":"a1b2c3d4","parentId":"8b2d4e6f","timestamp":"2026-03-01T10:00:01.000Z","mode":"plan"}
{"type":"message","id":"c0ffee01","parentId":"a1b2c3d4","timestamp":"2026-03-01T10:00:02.000Z","message":{"role":"user","content":[{"type":"text","text":"why is it flaky?"}],"timestamp":1772359202000}}
{"type":"message","id":"c0ffee02","parentId":"c0ffee01","timestamp":"2026-03-01T10:00:03.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_1","name":"omp.grep","arguments":{"pattern":"sleep","paths":["tests/a.rs","tests/b.rs"]}}],"stopReason":"toolUse"}}
{"type":"tool_execution_started","id":"j1","parentId":"c0ffee02","timestamp":"2026-03-01T10:00:03.100Z","recordVersion":1,"executionId":"exec-1","call":{"toolCallId":"call_1","toolName":"omp.grep","title":"grep sleep","kind":"search"},"presentation":{"version":1,"facts":[]}}
{"type":"tool_execution_settled","id":"j1s","parentId":"j1","timestamp":"2026-03-01T10:00:33.100Z","recordVersion":1,"executionId":"exec-1","outcome":{"kind":"failed","failure":{"reason":"process","message":"timed out after 30000ms"},"process":{"kind":"timed_out","timeoutMs":30000}},"presentation":{"version":1,"facts":[],"attachments":[]},"modelProjection":{"version":1,"content":[]}}
{"type":"message","id":"c0ffee03","parentId":"j1s","timestamp":"2026-03-01T10:00:33.200Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"omp.grep","content":[{"type":"text","text":"timed out"}],"isError":true}}
{"type":"ttsr_injection","id":"d00d0001","parentId":"c0ffee03","timestamp":"2026-03-01T10:00:34.000Z","injectedRules":["no-sleep-in-tests"]}
{"type":"title_change","id":"d00d0002","parentId":"d00d0001","timestamp":"2026-03-01T10:00:35.000Z","title":"Flaky test hunt","source":"auto"}
{"type":"message","id":"d00d0003","parentId":"d00d0002","timestamp":"2026-03-01T10:00:36.000Z","message":{"role":"fileMention","files":[{"path":"tests/a.rs","content":"..."}]}}
{"type":"credential_pin","id":"d00d0004","parentId":"d00d0003","timestamp":"2026-03-01T10:00:37.000Z","provider":"anthropic","hash":"ab12"}
"#);
    out.into_bytes()
}

#[test]
fn omp_title_slot_is_detected_and_read() {
    let log = omp_log(true);
    assert!(log.starts_with(b"{\"type\":\"title\""));
    assert_eq!(log.iter().position(|&c| c == b'\n'), Some(255));
    assert_eq!(detect(&log), Some(Format::Omp));
    let s = read(&log);
    assert_eq!(s.meta.format, Some(Format::Omp));
    assert_eq!(s.meta.title.as_deref(), Some("Fix the flaky test"));
    assert_eq!(s.meta.session_id, "0195f3a2-7c1e-7000-8000-1234567890ab");
    assert_eq!(s.meta.cwd.as_deref(), Some("/work/repo"));
    assert_eq!(s.meta.created.as_deref(), Some("2026-03-01T09:59:59.000Z"));
    assert_eq!(
        s.meta.link("parent_session"),
        Some("/home/u/.omp/agent/sessions/--work-repo--/old.jsonl")
    );
    assert!(s.coverage.complete);
    // The slot is not an entry: 12 entries (lines 3..14) + 1 tool call.
    assert_eq!(s.records.len(), 13);
    assert_eq!(s.records[0].entry_id, "3f9a1c2e");
    assert_eq!(s.records[0].line, 3);
    assert_eq!(
        s.records[0].offset,
        256 + log[256..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(0, |p| p as u64 + 1)
    );
    assert_eq!(s.leaf.as_deref(), Some("d00d0004"));
    assert_eq!(s.select(Branches::Active).records.len(), 13);

    assert_eq!(by_id(&s, "3f9a1c2e").text, "Find the flaky test");
    assert_eq!(by_id(&s, "8b2d4e6f").text, "anthropic/claude-opus-4-5");
    assert_eq!(by_id(&s, "a1b2c3d4").text, "plan");
    assert_eq!(by_id(&s, "d00d0001").text, "no-sleep-in-tests");
    assert_eq!(by_id(&s, "d00d0002").text, "Flaky test hunt");
    let mention = by_id(&s, "d00d0003");
    assert_eq!(mention.files_touched, ["tests/a.rs"]);
    assert_eq!(by_id(&s, "d00d0004").kind, "credential_pin");

    let call = by_id(&s, "c0ffee02/0");
    assert_eq!(call.provider.as_deref(), Some("omp"));
    assert_eq!(call.action.as_deref(), Some("grep"));
    assert_eq!(call.files_touched, ["tests/a.rs", "tests/b.rs"]);
    // The journal's typed timeout is more specific than the result's error flag.
    assert_eq!(call.outcome, Some(Outcome::TimedOut));
    assert_eq!(call.is_error, Some(true));
    let settled = by_id(&s, "j1s");
    assert_eq!(settled.call_id.as_deref(), Some("call_1"));
    assert_eq!(settled.outcome, Some(Outcome::TimedOut));
}

#[test]
fn omp_without_slot_detects_from_header_and_titles_fall_back() {
    let log = omp_log(false);
    assert_eq!(detect(&log), Some(Format::Omp));
    let s = read(&log);
    assert_eq!(s.meta.format, Some(Format::Omp));
    // No slot: the last title_change wins over the header's title.
    assert_eq!(s.meta.title.as_deref(), Some("Flaky test hunt"));
    assert_eq!(s.records[0].line, 2);

    let header_only = br#"{"type":"session","version":3,"id":"o","title":"Header title","timestamp":"2026-03-01T10:00:00Z","cwd":"/w"}
{"type":"message","id":"m","parentId":null,"message":{"role":"user","content":"x"}}
"#;
    let s = read(header_only);
    assert_eq!(s.meta.format, Some(Format::Omp));
    assert_eq!(s.meta.title.as_deref(), Some("Header title"));
}

#[test]
fn omp_slot_with_empty_title_and_forced_formats() {
    let mut log = omp_title_slot("").into_bytes();
    log.extend_from_slice(
        br#"{"type":"session","version":3,"id":"o","timestamp":"2026-03-01T10:00:00Z","cwd":"/w"}
{"type":"message","id":"m","parentId":null,"message":{"role":"user","content":"x"}}
"#,
    );
    let s = read(&log);
    assert_eq!(s.meta.format, Some(Format::Omp));
    assert_eq!(s.meta.title, None);
    assert_eq!(s.records.len(), 1);
    // Forcing pi on an oh-my-pi file still reads it the same way.
    let forced = read_bytes(
        "f",
        &log,
        &ReadOptions {
            format: Some(Format::Pi),
            ..ReadOptions::default()
        },
    )
    .expect("forced");
    assert_eq!(forced.records.len(), 1);
    assert_eq!(forced.meta.session_id, "o");
    // A plain pi v3 header is not oh-my-pi.
    let pi = br#"{"type":"session","version":3,"id":"p","timestamp":"2026-03-01T10:00:00Z","cwd":"/w","parentSession":"/x.jsonl"}
"#;
    assert_eq!(detect(pi), Some(Format::Pi));
    // A `title` object after line 1 is an ordinary (unknown) entry.
    let late =
        br#"{"type":"session","version":3,"id":"p","timestamp":"2026-03-01T10:00:00Z","cwd":"/w"}
{"type":"title","v":1,"title":"late","updatedAt":"2026-03-01T10:00:00Z","pad":""}
"#;
    let s = read(late);
    assert_eq!(s.meta.title, None);
    assert_eq!(s.records.len(), 1);
    assert_eq!(s.records[0].kind, "title");
}

// ---------------------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------------------

const SEED: &[u8] = br#"{"type":"session","id":"s","timestamp":"2025-12-01T00:00:00Z","cwd":"/p"}
{"type":"message","timestamp":"2025-12-01T00:00:01Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"edit","arguments":{"path":"/a"}}],"stopReason":"aborted"}}
{"type":"message","id":"x","parentId":"x","message":{"role":"toolResult","toolCallId":"c","isError":true,"content":[{"type":"image","data":"AA=="}]}}
{"type":"compaction","summary":{"nested":true},"firstKeptEntryIndex":"3"}
"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut input = SEED.to_vec();
        input.extend_from_slice(&bytes);
        for format in [Format::Pi, Format::Omp] {
            let s = read_bytes("p", &input, &ReadOptions { format: Some(format), ..ReadOptions::default() }).expect("forced");
            let _ = s.select(Branches::Active);
            let _ = s.select(Branches::All);
        }
    }

    #[test]
    fn truncated_and_spliced_never_panic(cut in 0usize..SEED.len(), at in 0usize..SEED.len()) {
        let mut input = SEED[..cut].to_vec();
        input.extend_from_slice(&SEED[at..]);
        let s = read_bytes("p", &input, &ReadOptions { format: Some(Format::Pi), ..ReadOptions::default() }).expect("forced");
        // Every record read from a whole line keeps its text.
        prop_assert!(s.records.iter().all(|r| r.line >= 1));
        let _ = s.select(Branches::Active);
    }
}
