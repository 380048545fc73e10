//! Codex CLI rollouts: the real and synthetic fixtures under `shared/fixtures/sessions/codex`,
//! plus small inline cases for each shape. Expected counts were taken from the files with
//! `jq`/`python3`, not from this reader.

use sessiondex_source::{
    read_bytes, Branches, Format, Outcome, ReadOptions, ReasonCode, Record, Session, TextClass,
};

use crate::{count_role, read_shared, select};

const ROLLOUT: &str =
    "codex/codemie-code/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl";

fn read(bytes: &[u8]) -> Session {
    read_bytes("rollout-test.jsonl", bytes, &ReadOptions::default()).expect("codex session")
}

fn children(records: &[Record]) -> Vec<&Record> {
    records
        .iter()
        .filter(|r| r.parent_entry_id.is_some())
        .collect()
}

fn top_level(records: &[Record]) -> Vec<&Record> {
    records
        .iter()
        .filter(|r| r.parent_entry_id.is_none())
        .collect()
}

fn by_id<'a>(s: &'a Session, id: &str) -> &'a Record {
    s.records
        .iter()
        .find(|r| r.entry_id == id)
        .unwrap_or_else(|| panic!("no record {id}"))
}

fn count_kind(records: &[Record], kind: &str) -> usize {
    records.iter().filter(|r| r.kind == kind).count()
}

fn count_outcome(records: &[Record], o: Outcome) -> usize {
    records
        .iter()
        .filter(|r| r.kind == "tool_call" && r.outcome == Some(o))
        .count()
}

// ---------------------------------------------------------------- shared fixtures

#[test]
fn real_rollout_counts() {
    let Some(s) = read_shared(ROLLOUT) else {
        return;
    };
    assert_eq!(s.meta.format, Some(Format::Codex));
    assert!(s.coverage.complete, "{:?}", s.coverage);
    assert_eq!(s.coverage.lines, 386);

    // One top-level record per line, one child per tool call line.
    assert_eq!(top_level(&s.records).len(), 386);
    let kids = children(&s.records);
    assert_eq!(kids.len(), 99 + 3 + 3);
    assert_eq!(s.records.len(), 491);
    assert!(kids.iter().all(|r| r.kind == "tool_call"));

    assert_eq!(count_kind(&s.records, "function_call"), 99);
    assert_eq!(count_kind(&s.records, "custom_tool_call"), 3);
    assert_eq!(count_kind(&s.records, "web_search_call"), 3);
    assert_eq!(count_kind(&s.records, "reasoning"), 25);
    assert_eq!(count_kind(&s.records, "exec_command_end"), 43);
    assert_eq!(count_kind(&s.records, "token_count"), 66);

    let tools = |name: &str| {
        kids.iter()
            .filter(|r| r.tool.as_deref() == Some(name))
            .count()
    };
    assert_eq!(tools("exec_command"), 43);
    assert_eq!(tools("write_stdin"), 54);
    assert_eq!(tools("update_plan"), 2);
    assert_eq!(tools("apply_patch"), 3);
    assert_eq!(tools("web_search"), 3);

    // Roles: response-item messages, calls and reasoning are the assistant's; the event
    // copies of user/agent messages carry no role.
    assert_eq!(count_role(&s.records, "user"), 3);
    assert_eq!(count_role(&s.records, "developer"), 1);
    // plus the 105 tool call children, which take their carrier's role
    assert_eq!(
        count_role(&s.records, "assistant"),
        13 + 25 + 99 + 3 + 3 + 105
    );
    assert_eq!(count_role(&s.records, "tool"), 99 + 3);
    assert_eq!(count_role(&s.records, "system"), 0);

    // exec_command_end: 39 exit 0, three exit 1 and one exit 2 (status "failed").
    assert_eq!(count_outcome(&s.records, Outcome::Failed), 4);
    for line in [131, 150, 203, 263] {
        let call = by_id(&s, &format!("l{line}/0"));
        assert_eq!(call.tool.as_deref(), Some("exec_command"));
        assert_eq!(call.outcome, Some(Outcome::Failed), "l{line}/0");
    }
    // 39 exec + 3 apply_patch (metadata.exit_code 0) + 3 web searches (status completed).
    assert_eq!(count_outcome(&s.records, Outcome::Succeeded), 45);
    assert_eq!(count_outcome(&s.records, Outcome::Aborted), 0);
    assert_eq!(count_outcome(&s.records, Outcome::TimedOut), 0);
    // write_stdin and update_plan outputs have no typed status.
    assert!(kids
        .iter()
        .filter(|r| matches!(r.tool.as_deref(), Some("write_stdin" | "update_plan")))
        .all(|r| r.outcome.is_none()));
    assert!(s.records.iter().all(|r| r.is_error.is_none()));

    // apply_patch: paths from the patch's file headers; exec_command args name no path key.
    let patch = by_id(&s, "l257/0");
    assert_eq!(patch.tool.as_deref(), Some("apply_patch"));
    assert_eq!(patch.class, TextClass::ToolInput);
    assert_eq!(patch.parent_entry_id.as_deref(), Some("l257"));
    assert_eq!(patch.operation_address.as_deref(), Some("l257/0"));
    assert!(patch.text.starts_with("*** Begin Patch\n*** Update File: "));
    assert_eq!(
        patch.files_touched,
        ["src/agents/plugins/__tests__/codemie-code-reasoning.test.ts"]
    );
    assert_eq!(
        by_id(&s, "l276/0").files_touched,
        ["src/agents/plugins/codemie-code.plugin.ts"]
    );
    assert_eq!(
        by_id(&s, "l280/0").files_touched,
        ["src/agents/plugins/opencode/opencode.plugin.ts"]
    );
    let with_files = kids.iter().filter(|r| !r.files_touched.is_empty()).count();
    assert_eq!(with_files, 3);

    // The apply_patch output's JSON wrapper is unwrapped to its text.
    let out = s
        .records
        .iter()
        .find(|r| r.kind == "custom_tool_call_output")
        .expect("custom output");
    assert!(out
        .text
        .starts_with("Success. Updated the following files:\n"));
    assert_eq!(out.outcome, Some(Outcome::Succeeded));

    // Texts.
    assert_eq!(by_id(&s, "l6").text, "show tools");
    assert_eq!(by_id(&s, "l6").class, TextClass::UserText);
    assert!(by_id(&s, "l4")
        .text
        .starts_with("# AGENTS.md instructions for "));
    assert_eq!(
        by_id(&s, "l22").text,
        "let's update the defailt context compart to 90 in env var"
    );
    let ws = by_id(&s, "l197/0");
    assert!(ws
        .text
        .contains("OpenCode config compact context percentage"));
    // Reasoning here is encrypted only: no thinking text, and never in `text`.
    let reasoning: Vec<_> = s.records.iter().filter(|r| r.kind == "reasoning").collect();
    assert!(reasoning
        .iter()
        .all(|r| r.thinking.is_none() && r.text.is_empty() && r.class == TextClass::Thinking));
    // The event copies of messages are not indexed twice.
    assert!(s
        .records
        .iter()
        .filter(|r| r.kind == "user_message" || r.kind == "agent_message")
        .all(|r| r.text.is_empty() && r.role.is_none()));

    // Metadata.
    assert_eq!(s.meta.session_id, "019e1625-789d-76c0-80ab-3724b5ddb799");
    assert_eq!(
        s.meta.cwd.as_deref(),
        Some("/Users/Sample_User/repos/codemie-ai/codemie-code")
    );
    assert_eq!(s.meta.format_version.as_deref(), Some("0.125.0"));
    assert_eq!(s.meta.created.as_deref(), Some("2026-05-11T08:26:55.042Z"));
    assert_eq!(s.meta.first_ts.as_deref(), Some("2026-05-11T08:27:17.490Z"));
    assert_eq!(s.meta.last_ts.as_deref(), Some("2026-05-11T08:44:58.544Z"));
    assert!(s.meta.links.is_empty());

    // Linear lineage: the active path is every record, the leaf is the last line.
    assert_eq!(s.leaf.as_deref(), Some("l386"));
    let active = select(&s, Branches::Active);
    assert_eq!(active.records.len(), 491);
    assert!(active.coverage.complete);
    assert_eq!(top_level(&active.records).len(), 386);
    assert_eq!(active.records[0].entry_id, "l1");
    assert_eq!(by_id(&s, "l2").parent_id.as_deref(), Some("l1"));
    assert!(kids.iter().all(|r| r.parent_id.is_none()));
}

#[test]
fn turn_1_reads_as_a_prefix_of_turn_2() {
    let (Some(t1), Some(t2)) = (
        read_shared("codex/codemie-code/turn-1.jsonl"),
        read_shared("codex/codemie-code/turn-2.jsonl"),
    ) else {
        return;
    };
    assert_eq!(t1.records.len(), 13);
    assert_eq!(t2.records.len(), 25);
    assert_eq!(t1.records[..], t2.records[..13]);
    assert_eq!(t1.meta.session_id, "a1b2c3d4-e5f6-7890-abcd-ef1234567890");
    assert_eq!(t1.meta.session_id, t2.meta.session_id);
    assert_eq!(t1.meta.created.as_deref(), Some("2026-05-12T09:59:55.000Z"));
    assert_eq!(t1.meta.format_version.as_deref(), Some("0.129.0"));
    assert_eq!(t1.meta.cwd.as_deref(), Some("/home/user/project"));
    assert_eq!(count_role(&t1.records, "user"), 2);
    assert_eq!(count_role(&t1.records, "assistant"), 2);
    assert_eq!(count_role(&t1.records, "developer"), 1);
    assert_eq!(count_role(&t2.records, "user"), 4);
    assert_eq!(count_role(&t2.records, "assistant"), 4);
    assert_eq!(count_role(&t2.records, "developer"), 2);
    assert_eq!(t1.leaf.as_deref(), Some("l13"));
    assert_eq!(t2.leaf.as_deref(), Some("l25"));
    assert_eq!(
        by_id(&t2, "l23").text,
        "I can work with many programming languages including Python, JavaScript, TypeScript, Go, and Rust."
    );
    let a1 = select(&t1, Branches::Active);
    let a2 = select(&t2, Branches::Active);
    assert_eq!(a1.records[..], a2.records[..13]);
}

#[test]
fn agent_sessions_small_is_one_session() {
    let Some(s) = read_shared("codex/agent-sessions/small.jsonl") else {
        return;
    };
    assert!(s.coverage.complete, "{:?}", s.coverage);
    assert_eq!(s.coverage.count(ReasonCode::UnknownEntryType), 0);
    // 7 session_meta lines, one session: the first line's id.
    assert_eq!(count_kind(&s.records, "session_meta"), 7);
    assert_eq!(s.meta.session_id, "019fc8be-3658-7ca3-9e29-000000000000");
    assert_eq!(s.meta.cwd.as_deref(), Some("/tmp/repo"));
    assert_eq!(s.meta.format_version.as_deref(), Some("0.146.0"));
    assert_eq!(s.meta.created.as_deref(), Some("2026-08-03T10:48:56.000Z"));
    // forked_from_id appears only in the session_meta of line 36.
    assert_eq!(s.meta.link("forked_from"), Some("[trimmed for fixture]"));
    assert_eq!(s.meta.link("subagent_of"), None);
    assert_eq!(s.meta.title.as_deref(), Some("[trimmed for fixture]"));

    assert_eq!(top_level(&s.records).len(), 118);
    let kids = children(&s.records);
    assert_eq!(kids.len(), 8);
    assert_eq!(count_role(&s.records, "user"), 1);
    assert_eq!(count_role(&s.records, "developer"), 1);
    assert_eq!(count_role(&s.records, "assistant"), 13 + 8);
    assert_eq!(count_role(&s.records, "tool"), 6);
    assert_eq!(count_kind(&s.records, "compacted"), 6);
    assert!(s
        .records
        .iter()
        .filter(|r| r.kind == "compacted")
        .all(|r| r.class == TextClass::Summary));

    let tools: Vec<_> = kids.iter().filter_map(|r| r.tool.as_deref()).collect();
    assert_eq!(
        tools,
        [
            "shell",
            "shell",
            "tool_search",
            "web_search",
            "tool_search",
            "image_generation",
            "[trimmed for fixture]",
            "[trimmed for fixture]"
        ]
    );
    // call-1 (line 9) had no result when the turn was aborted (line 20).
    assert_eq!(by_id(&s, "l9/0").call_id.as_deref(), Some("call-1"));
    assert_eq!(by_id(&s, "l9/0").outcome, Some(Outcome::Aborted));
    // call-2 got its output (no typed status) before the abort.
    assert_eq!(by_id(&s, "l10/0").outcome, None);
    assert_eq!(by_id(&s, "l11").text, "a.txt\n");
    assert_eq!(by_id(&s, "l14/0").outcome, Some(Outcome::Succeeded));
    // The namespaced function call (line 114).
    let ns = by_id(&s, "l114/0");
    assert_eq!(ns.provider.as_deref(), Some("[trimmed for fixture]"));
    assert_eq!(
        ns.reference.as_deref(),
        Some("[trimmed for fixture].[trimmed for fixture]")
    );
    // Summary text of the reasoning item goes to thinking.
    assert_eq!(
        by_id(&s, "l7").thinking.as_deref(),
        Some("[trimmed for fixture]")
    );
    assert_eq!(by_id(&s, "l7").text, "");
    assert_eq!(by_id(&s, "l6").text, "List the files");
    assert_eq!(s.leaf.as_deref(), Some("l118"));
    assert_eq!(select(&s, Branches::Active).records.len(), 126);
}

#[test]
fn agent_sessions_large_unknown_variants_survive() {
    let Some(s) = read_shared("codex/agent-sessions/large.jsonl") else {
        return;
    };
    // response_item tool_call / tool_result are not Codex types: kept as metadata, counted.
    assert_eq!(s.coverage.count(ReasonCode::UnknownEntryType), 2);
    assert!(s.coverage.complete);
    assert_eq!(s.records.len(), 20);
    assert!(children(&s.records).is_empty());
    // `tool_call` is reserved for child records, so that item keeps its envelope type.
    for (id, kind) in [("l6", "response_item"), ("l7", "tool_result")] {
        let r = by_id(&s, id);
        assert_eq!(r.kind, kind);
        assert_eq!(r.class, TextClass::Meta);
        assert!(r.role.is_none() && r.call_id.is_none());
    }
    assert_eq!(count_role(&s.records, "user"), 7);
    assert_eq!(count_role(&s.records, "assistant"), 7);
    assert_eq!(s.meta.session_id, "019b2ea4-aaaa-bbbb-cccc-58208e1f0000");
    assert_eq!(s.meta.format_version.as_deref(), Some("0.106.0"));
    assert_eq!(by_id(&s, "l20").text, "Ok");
    assert_eq!(select(&s, Branches::Active).records.len(), 20);
}

// ---------------------------------------------------------------- inline shapes

#[test]
fn bare_line_rollout() {
    let log = br#"{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-05-13T10:00:00.000Z","instructions":null,"git":{"commit_hash":"abc","branch":"main"}}
{"record_type":"state"}
{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"fix the build"}]}
{"record_type":"state"}
{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Check Cargo.toml"}],"encrypted_content":null}
{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"cargo\",\"build\"],\"workdir\":\"/repo\"}","call_id":"call_1"}
{"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"error[E0432]\",\"metadata\":{\"exit_code\":101,\"duration_seconds\":1.5}}"}
{"type":"message","id":null,"role":"assistant","content":[{"type":"output_text","text":"The build fails."}]}
"#;
    let s = read(log);
    assert_eq!(s.meta.format, Some(Format::Codex));
    assert_eq!(s.meta.session_id, "5973b6c0-94b8-487b-a530-2aeb6098ae0e");
    assert_eq!(s.meta.created.as_deref(), Some("2025-05-13T10:00:00.000Z"));
    assert_eq!(s.meta.cwd, None);
    assert!(s.coverage.complete);
    let ids: Vec<_> = s.records.iter().map(|r| r.entry_id.as_str()).collect();
    // State markers make no records.
    assert_eq!(ids, ["l1", "l3", "l5", "l6", "l6/0", "l7", "l8"]);
    assert_eq!(by_id(&s, "l1").kind, "session_meta");
    assert_eq!(by_id(&s, "l3").text, "fix the build");
    assert_eq!(by_id(&s, "l3").parent_id.as_deref(), Some("l1"));
    assert_eq!(
        by_id(&s, "l5").thinking.as_deref(),
        Some("Check Cargo.toml")
    );
    let call = by_id(&s, "l6/0");
    assert_eq!(
        call.text,
        r#"{"command":["cargo","build"],"workdir":"/repo"}"#
    );
    assert_eq!(call.outcome, Some(Outcome::Failed));
    assert!(call.files_touched.is_empty());
    let out = by_id(&s, "l7");
    assert_eq!(out.text, "error[E0432]");
    assert_eq!(out.parent_id.as_deref(), Some("l6"));
    // Only the header has a timestamp in this form.
    assert_eq!(
        by_id(&s, "l1").timestamp.as_deref(),
        Some("2025-05-13T10:00:00.000Z")
    );
    assert!(s.records[1..].iter().all(|r| r.timestamp.is_none()));
    assert_eq!(s.leaf.as_deref(), Some("l8"));
    assert_eq!(select(&s, Branches::Active).records.len(), 7);
}

#[test]
fn envelope_call_and_exec_end() {
    let log = br#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"s1","timestamp":"2025-12-31T23:59:59Z","cwd":"/p","cli_version":"0.130.0"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"function_call","name":"mcp__fs__read_file","arguments":"{\"path\":\"src/a.rs\",\"command\":\"cat src/b.rs\"}","call_id":"c1"}}
{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"Process exited with code 1"}}
{"timestamp":"2026-01-01T00:00:03Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c1","exit_code":1,"status":"completed"}}
{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"not json","call_id":"c2"}}
{"timestamp":"2026-01-01T00:00:05Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c2","exit_code":0,"status":"completed","timed_out":true}}
{"timestamp":"2026-01-01T00:00:06Z","type":"response_item","payload":{"type":"local_shell_call","call_id":"c3","status":"completed","action":{"type":"exec","command":["ls"],"working_directory":"/p"}}}
{"timestamp":"2026-01-01T00:00:07Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"c3","exit_code":0,"status":"declined"}}
"#;
    let s = read(log);
    assert_eq!(s.meta.session_id, "s1");
    assert_eq!(s.meta.created.as_deref(), Some("2025-12-31T23:59:59.000Z"));
    assert_eq!(s.meta.first_ts.as_deref(), Some("2026-01-01T00:00:00.000Z"));
    let c1 = by_id(&s, "l2/0");
    assert_eq!(c1.reference.as_deref(), Some("mcp__fs__read_file"));
    assert_eq!(c1.provider.as_deref(), Some("fs"));
    assert_eq!(c1.action.as_deref(), Some("read_file"));
    assert_eq!(c1.files_touched, ["src/a.rs"]);
    assert_eq!(c1.outcome, Some(Outcome::Failed));
    assert_eq!(c1.timestamp.as_deref(), Some("2026-01-01T00:00:01.000Z"));
    assert_eq!(
        (c1.line, c1.offset),
        (by_id(&s, "l2").line, by_id(&s, "l2").offset)
    );
    let carrier = by_id(&s, "l2");
    assert_eq!(carrier.role.as_deref(), Some("assistant"));
    assert_eq!(carrier.class, TextClass::Meta);
    assert_eq!(carrier.text, "");
    // The output's prose is not read for an exit code; the event is.
    assert_eq!(by_id(&s, "l3").outcome, None);
    assert_eq!(by_id(&s, "l3").class, TextClass::ToolOutput);
    assert_eq!(by_id(&s, "l4").outcome, Some(Outcome::Failed));
    assert_eq!(by_id(&s, "l4").text, "");
    let c2 = by_id(&s, "l5/0");
    assert_eq!(c2.text, "not json");
    assert_eq!(c2.outcome, Some(Outcome::TimedOut));
    let c3 = by_id(&s, "l7/0");
    assert_eq!(c3.tool.as_deref(), Some("local_shell"));
    assert_eq!(c3.outcome, Some(Outcome::Aborted));
    assert!(c3.text.contains(r#""command":["ls"]"#));
}

#[test]
fn several_session_meta_lines_and_links() {
    let log = br#"{"timestamp":"2026-03-01T00:00:00Z","type":"session_meta","payload":{"id":"child","timestamp":"2026-03-01T00:00:00Z","cwd":"/c","forked_from_id":"parent","source":{"subagent":{"thread_spawn":{"parent_thread_id":"boss","depth":1}}}}}
{"timestamp":"2026-03-01T00:00:00Z","type":"session_meta","payload":{"id":"parent","timestamp":"2026-02-01T00:00:00Z","cwd":"/p","forked_from_id":"grandparent"}}
{"timestamp":"2026-03-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}
"#;
    let s = read(log);
    assert_eq!(s.meta.session_id, "child");
    assert_eq!(s.meta.cwd.as_deref(), Some("/c"));
    assert_eq!(s.meta.link("forked_from"), Some("parent"));
    assert_eq!(s.meta.link("subagent_of"), Some("boss"));
    assert_eq!(s.meta.links.len(), 2);
    assert_eq!(s.records.len(), 3);

    // A fork id only in a later session_meta still gives the link.
    let log = br#"{"timestamp":"2026-03-01T00:00:00Z","type":"session_meta","payload":{"id":"a","timestamp":"2026-03-01T00:00:00Z","cwd":"/c"}}
{"timestamp":"2026-03-01T00:00:00Z","type":"session_meta","payload":{"id":"b","forked_from_id":"z"}}
"#;
    let s = read(log);
    assert_eq!(s.meta.session_id, "a");
    assert_eq!(s.meta.link("forked_from"), Some("z"));

    // No header at all: the file name stands in for the id.
    let log = br#"{"timestamp":"2026-03-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":"plain"}}
"#;
    let s = read_bytes(
        "/x/rollout-2026-03-01T00-00-01-abc.jsonl",
        log,
        &ReadOptions::default(),
    )
    .expect("codex");
    assert_eq!(s.meta.session_id, "rollout-2026-03-01T00-00-01-abc");
    assert_eq!(s.records[0].text, "plain");
}

#[test]
fn custom_tools_outputs_and_aborts() {
    let log = br#"{"timestamp":"2026-04-01T00:00:00Z","type":"session_meta","payload":{"id":"s"}}
{"timestamp":"2026-04-01T00:00:01Z","type":"response_item","payload":{"type":"custom_tool_call","status":"completed","call_id":"p1","name":"apply_patch","input":"*** Begin Patch\n*** Add File: new.txt\n+hello\n*** Delete File: old.txt\n*** End Patch\n"}}
{"timestamp":"2026-04-01T00:00:02Z","type":"event_msg","payload":{"type":"patch_apply_end","call_id":"p1","success":false,"stdout":"","stderr":"boom"}}
{"timestamp":"2026-04-01T00:00:03Z","type":"response_item","payload":{"type":"function_call","name":"view","arguments":"{\"file_path\":\"/etc/hosts\"}","call_id":"v1"}}
{"timestamp":"2026-04-01T00:00:04Z","type":"response_item","payload":{"type":"function_call","name":"mcp_thing","namespace":"github","arguments":"{}","call_id":"m1"}}
{"timestamp":"2026-04-01T00:00:05Z","type":"event_msg","payload":{"type":"mcp_tool_call_end","call_id":"m1","result":{"Ok":{"content":[],"isError":true}}}}
{"timestamp":"2026-04-01T00:00:06Z","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}
{"timestamp":"2026-04-01T00:00:07Z","type":"response_item","payload":{"type":"function_call_output","call_id":"v1","output":[{"type":"input_text","text":"127.0.0.1 localhost"},{"type":"input_image","image_url":"data:x"}]}}
{"timestamp":"2026-04-01T00:00:08Z","type":"compacted","payload":{"message":"We looked at hosts.","replacement_history":[{"type":"message","role":"user","content":[{"type":"input_text","text":"old"}]}]}}
{"timestamp":"2026-04-01T00:00:09Z","type":"event_msg","payload":{"type":"token_count","info":null}}
{"timestamp":"2026-04-01T00:00:10Z","type":"event_msg","payload":{"type":"error","message":"stream disconnected"}}
{"timestamp":"2026-04-01T00:00:11Z","type":"brand_new_envelope","payload":{"x":1}}
{"timestamp":"2026-04-01T00:00:12Z","type":"response_item","payload":{"type":"brand_new_item","text":"?"}}
{"timestamp":"2026-04-01T00:00:13Z","type":"response_item","payload":"not an object"}
"#;
    let s = read(log);
    let patch = by_id(&s, "l2/0");
    assert_eq!(patch.files_touched, ["new.txt", "old.txt"]);
    assert_eq!(patch.outcome, Some(Outcome::Failed));
    assert!(patch.text.starts_with("*** Begin Patch"));
    // v1 was in flight at the abort; its later output has no typed status.
    let v1 = by_id(&s, "l4/0");
    assert_eq!(v1.files_touched, ["/etc/hosts"]);
    assert_eq!(v1.outcome, Some(Outcome::Aborted));
    assert_eq!(by_id(&s, "l8").text, "127.0.0.1 localhost");
    // m1 had its typed result before the abort.
    let m1 = by_id(&s, "l5/0");
    assert_eq!(m1.outcome, Some(Outcome::Failed));
    assert_eq!(m1.is_error, Some(true));
    assert_eq!(m1.provider.as_deref(), Some("github"));
    assert_eq!(m1.action.as_deref(), Some("mcp_thing"));
    assert_eq!(m1.reference.as_deref(), Some("github.mcp_thing"));
    let c = by_id(&s, "l9");
    assert_eq!(
        (c.kind.as_str(), c.class),
        ("compacted", TextClass::Summary)
    );
    assert_eq!(c.text, "We looked at hosts.");
    assert_eq!(by_id(&s, "l10").text, "");
    assert_eq!(by_id(&s, "l11").text, "stream disconnected");
    assert_eq!(by_id(&s, "l12").kind, "brand_new_envelope");
    assert_eq!(by_id(&s, "l13").kind, "brand_new_item");
    assert_eq!(by_id(&s, "l14").kind, "response_item");
    assert_eq!(s.coverage.count(ReasonCode::UnknownEntryType), 3);
    assert!(s.coverage.complete);
    assert_eq!(s.leaf.as_deref(), Some("l14"));
    assert_eq!(top_level(&s.records).len(), 14);
}

#[test]
fn glued_and_partial_lines() {
    let log = b"{\"timestamp\":\"2026-01-01T00:00:00Z\",\"type\":\"session_meta\",\"payload\":{\"id\":\"g\"}}{\"timestamp\":\"2026-01-01T00:00:01Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"ok\"}]}}\nnot json\n{\"timestamp\":\"2026-01-01T00:00:02Z\",\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"yes\"}]}}\n{\"timestamp\":\"2026-01-01T00:00:03Z\",\"type\":\"response_it";
    let s = read(log);
    let ids: Vec<_> = s.records.iter().map(|r| r.entry_id.as_str()).collect();
    assert_eq!(ids, ["l1", "l1.2", "l3"]);
    assert_eq!(by_id(&s, "l1.2").text, "ok");
    assert_eq!(by_id(&s, "l1.2").parent_id.as_deref(), Some("l1"));
    assert_eq!(by_id(&s, "l3").parent_id.as_deref(), Some("l1.2"));
    assert_eq!(s.coverage.count(ReasonCode::MalformedLine), 1);
    assert_eq!(s.coverage.count(ReasonCode::PartialTail), 1);
    assert_eq!(s.leaf.as_deref(), Some("l3"));
}

#[test]
fn odd_values_do_not_panic() {
    for line in [
        r#"{"timestamp":5,"type":"response_item","payload":{"type":"function_call","arguments":"{"}}"#,
        r#"{"timestamp":"x","type":"event_msg","payload":{"type":"exec_command_end","exit_code":"1"}}"#,
        r#"{"timestamp":"x","type":"session_meta","payload":{"id":7,"cwd":[],"forked_from_id":{}}}"#,
        r#"{"timestamp":"x","type":"response_item","payload":{"type":"message","role":5,"content":{"a":1}}}"#,
        r#"{"timestamp":"x","type":"response_item","payload":{"type":"reasoning","summary":"s","content":[1,null]}}"#,
        r#"{"timestamp":"x","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","input":7}}"#,
        r#"{"timestamp":"x","type":"response_item","payload":{"type":"function_call_output","output":"{\"metadata\":{\"exit_code\":\"no\"}}"}}"#,
        r#"{"timestamp":"x","type":"event_msg","payload":{"type":"mcp_tool_call_end","result":"Ok"}}"#,
        r#"{"timestamp":"x","type":7,"payload":1}"#,
        r#"{"id":"h","timestamp":"x"}"#,
    ] {
        let s = read_bytes(
            "odd.jsonl",
            format!("{line}\n").as_bytes(),
            &ReadOptions {
                format: Some(Format::Codex),
                ..ReadOptions::default()
            },
        )
        .expect("forced format reads");
        assert!(!s.records.is_empty(), "{line}");
        let _ = s.select(Branches::Active);
    }
}
