//! Resuming a grown file: `resume(read(prefix), rest)` must equal `read(whole)`.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::Value;
use sessiondex_source::{
    discover, read_bytes, resume, ErrorKind, Format, ReadOptions, ReasonCode, Session,
};

use crate::shared_fixture;

fn files_under(root: &Path) -> Vec<(String, Vec<u8>)> {
    discover(root)
        .into_iter()
        .map(|p| (p.to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

/// The repo's example sessions and damaged sessions (always present).
fn repo_files() -> Vec<(String, Vec<u8>)> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut v = files_under(&manifest.join("../../examples/sessions"));
    v.extend(files_under(&manifest.join("../../testdata/sessions")));
    assert!(
        v.len() >= 7,
        "examples and testdata sessions are in the repo"
    );
    v
}

fn json(s: &Session) -> Value {
    serde_json::to_value(s).unwrap()
}

/// The first place two values differ, as `path: left != right`.
fn first_diff(path: &str, a: &Value, b: &Value) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| {
                first_diff(
                    &format!("{path}.{k}"),
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                )
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (p, q))| first_diff(&format!("{path}[{i}]"), p, q)),
        _ if a == b => None,
        _ => {
            let short = |v: &Value| v.to_string().chars().take(400).collect::<String>();
            Some(format!("{path}: {} != {}", short(a), short(b)))
        }
    }
}

/// Asserts equal JSON, naming the first difference.
fn assert_same(left: &Value, right: &Value, what: &str) {
    if let Some(d) = first_diff("", left, right) {
        panic!("{what}: resumed differs from one read at {d}");
    }
}

/// Cuts every `text`/`thinking` of records that start before `end` to `n` characters, as the
/// index hands records back.
fn cut_texts(s: &mut Session, end: u64, n: usize) {
    for r in &mut s.records {
        if r.offset < end {
            r.text = r.text.chars().take(n).collect();
            if let Some(t) = &mut r.thinking {
                *t = t.chars().take(n).collect();
            }
        }
    }
}

/// Where a split at `at` left a last line without its newline that the rest continues with
/// more than blanks: the one case `resume` refuses.
fn continues_open_line(bytes: &[u8], prev: &Session) -> bool {
    let cb = prev.coverage.complete_bytes as usize;
    cb > 0
        && bytes.get(cb - 1) != Some(&b'\n')
        && bytes[cb..]
            .iter()
            .take_while(|&&c| c != b'\n')
            .any(|c| !c.is_ascii_whitespace())
}

/// Reads `bytes[..at]`, resumes with the rest, and compares with a read of the whole. Returns
/// false when the split was refused (only allowed inside a line with no newline yet).
fn check_split(name: &str, bytes: &[u8], at: usize, opts: &ReadOptions) -> bool {
    let whole = read_bytes(name, bytes, opts).unwrap();
    let Ok(prev) = read_bytes(name, &bytes[..at], opts) else {
        // Nothing to detect a format from yet: a first read of the whole file is needed.
        return true;
    };
    if prev.meta.format != whole.meta.format {
        // Detection saw fewer lines; the index reads such a file again.
        return true;
    }
    let cb = prev.coverage.complete_bytes as usize;
    assert!(cb <= at, "{name}@{at}: complete bytes past the prefix");
    if at < bytes.len() && prev.coverage.count(ReasonCode::PartialTail) == 0 {
        assert_eq!(
            cb, at,
            "{name}@{at}: a prefix without a partial tail is consumed"
        );
    }
    let mut cut = prev.clone();
    let resumed = match resume(prev, &bytes[cb..], opts) {
        Ok(s) => s,
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::NotResumable, "{name}@{at}: {e}");
            let prev = read_bytes(name, &bytes[..at], opts).unwrap();
            assert!(
                continues_open_line(bytes, &prev),
                "{name}@{at}: refused without cause: {e}"
            );
            return false;
        }
    };
    assert_same(
        &json(&resumed),
        &json(&whole),
        &format!("{name}: resumed at byte {at} (complete {cb})"),
    );

    // Old texts cut by the index: everything else is the same.
    cut_texts(&mut cut, cb as u64, 5);
    let resumed = resume(cut, &bytes[cb..], opts).unwrap();
    let mut expected = whole;
    cut_texts(&mut expected, cb as u64, 5);
    assert_same(
        &json(&resumed),
        &json(&expected),
        &format!("{name}: resumed at byte {at} with cut texts"),
    );
    true
}

/// Byte offsets just after each newline.
fn line_ends(bytes: &[u8]) -> Vec<usize> {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, &c)| c == b'\n')
        .map(|(i, _)| i + 1)
        .collect()
}

/// Split points: up to `max` line boundaries spread over the file, and for some of them a cut
/// one byte in, in the middle of the next line, and right before its newline.
fn splits(bytes: &[u8], max: usize) -> Vec<usize> {
    let ends = line_ends(bytes);
    let step = ends.len().div_ceil(max.max(1)).max(1);
    let mut out = vec![0];
    for (k, &e) in ends.iter().enumerate().filter(|(k, _)| k % step == 0) {
        out.push(e);
        if k % (2 * step) == 0 {
            let next = ends.get(k + 1).copied().unwrap_or(bytes.len());
            if next > e + 2 {
                out.extend([e + 1, e + (next - e) / 2, next - 1]);
            }
        }
    }
    out.push(bytes.len());
    out.retain(|&a| a <= bytes.len());
    out.sort_unstable();
    out.dedup();
    out
}

#[test]
fn every_line_boundary_of_the_repo_sessions() {
    let mut checked = 0;
    for (name, bytes) in repo_files() {
        let mut cuts = line_ends(&bytes);
        cuts.push(0);
        cuts.push(bytes.len());
        for at in cuts {
            assert!(check_split(&name, &bytes, at, &ReadOptions::default()));
            checked += 1;
        }
    }
    assert!(checked > 50);
}

#[test]
fn mid_line_cuts_of_the_repo_sessions() {
    for (name, bytes) in repo_files() {
        for at in splits(&bytes, 40) {
            check_split(&name, &bytes, at, &ReadOptions::default());
        }
    }
}

#[test]
fn every_shared_fixture_resumes() {
    let Some(root) = shared_fixture("") else {
        return;
    };
    let files = files_under(&root);
    assert!(files.len() >= 20, "the shared fixtures are there");
    for (name, bytes) in files {
        let max = if bytes.len() > 1_000_000 { 4 } else { 12 };
        let mut resumed = 0;
        for at in splits(&bytes, max) {
            if check_split(&name, &bytes, at, &ReadOptions::default()) {
                resumed += 1;
            }
        }
        assert!(resumed > 0, "{name}");
    }
}

/// `turn-1` is the same file as `turn-2` before the second turn was written.
fn real_prefix_pair(dir: &str) {
    let (Some(one), Some(two)) = (
        shared_fixture(&format!("{dir}/turn-1.jsonl")),
        shared_fixture(&format!("{dir}/turn-2.jsonl")),
    ) else {
        return;
    };
    let one = std::fs::read(one).unwrap();
    let name = two.to_string_lossy().into_owned();
    let two = std::fs::read(&two).unwrap();
    assert!(two.starts_with(&one), "{dir}: turn-1 is a prefix of turn-2");
    let opts = ReadOptions::default();
    let prev = read_bytes(&name, &one, &opts).unwrap();
    let cb = prev.coverage.complete_bytes as usize;
    assert_eq!(cb, one.len());
    let before = prev.records.len();
    let resumed = resume(prev, &two[cb..], &opts).unwrap();
    let whole = read_bytes(&name, &two, &opts).unwrap();
    assert!(whole.records.len() > before);
    assert_same(&json(&resumed), &json(&whole), dir);
}

#[test]
fn claude_incremental_turns() {
    real_prefix_pair("claude-code/codemie-code/incremental-simple");
}

#[test]
fn codex_incremental_turns() {
    real_prefix_pair("codex/codemie-code");
}

fn resume_all(name: &str, parts: &[&[u8]], opts: &ReadOptions) -> Session {
    let first = parts.first().copied().unwrap_or_default();
    let mut s = read_bytes(name, first, opts).unwrap();
    let mut consumed = first.len();
    let whole: Vec<u8> = parts.concat();
    for part in parts.iter().skip(1) {
        consumed += part.len();
        let cb = s.coverage.complete_bytes as usize;
        s = resume(s, &whole[cb..consumed], opts).unwrap();
    }
    s
}

fn assert_resumes(name: &str, parts: &[&[u8]]) -> Session {
    let opts = ReadOptions::default();
    let whole = read_bytes(name, &parts.concat(), &opts).unwrap();
    let resumed = resume_all(name, parts, &opts);
    assert_same(&json(&resumed), &json(&whole), name);
    whole
}

#[test]
fn pi_duplicates_pairing_and_aborts_across_the_boundary() {
    let head: &[u8] = br#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"hi"}}
{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"ls"}},{"type":"toolCall","id":"c2","name":"read","arguments":{"path":"x"}}],"stopReason":"aborted"}}
{"type":"message","id":"r1","parentId":"b","timestamp":"2026-01-01T00:00:03Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"bash","content":"ok","isError":false}}
"#;
    let tail: &[u8] = br#"{"type":"message","id":"r2","parentId":"r1","timestamp":"2026-01-01T00:00:04Z","message":{"role":"toolResult","toolCallId":"c2","toolName":"read","content":"no","isError":true}}
{"type":"message","id":"a","parentId":null,"timestamp":"2025-12-31T00:00:00Z","message":{"role":"user","content":"again"}}
{"type":"session_info","id":"t","parentId":"a","name":"A title"}
"#;
    let whole = assert_resumes("2026_s1.jsonl", &[head, tail]);
    assert_eq!(whole.coverage.count(ReasonCode::DuplicateEntryId), 1);
    assert_eq!(whole.meta.title.as_deref(), Some("A title"));
    let c2 = whole.records.iter().find(|r| r.entry_id == "b/1").unwrap();
    assert_eq!(c2.outcome, Some(sessiondex_source::Outcome::Failed));
    // Every line on its own.
    let whole_bytes = [head, tail].concat();
    let lines: Vec<&[u8]> = whole_bytes.split_inclusive(|&c| c == b'\n').collect();
    assert_resumes("2026_s1.jsonl", &lines);
}

#[test]
fn claude_title_leaf_and_chain_repair_across_the_boundary() {
    let head: &[u8] = br#"{"type":"summary","summary":"Old title","leafUuid":"u4"}
{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"S","cwd":"/p","timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"go"}}
{"type":"assistant","uuid":"u2","parentUuid":"u1","sessionId":"S","timestamp":"2026-01-01T00:00:02Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"a"}}]}}
"#;
    let tail: &[u8] = br#"{"type":"assistant","uuid":"u3","parentUuid":"u2","sessionId":"S","timestamp":"2026-01-01T00:00:03Z","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t2","name":"Read","input":{"file_path":"b"}}]}}
{"type":"user","uuid":"u4","parentUuid":"u2","sessionId":"S","timestamp":"2026-01-01T00:00:04Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"A","is_error":true}]}}
{"type":"user","uuid":"u5","parentUuid":"u3","sessionId":"S","timestamp":"2026-01-01T00:00:05Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"B"}]}}
{"type":"system","subtype":"compact_boundary","uuid":"u6","parentUuid":null,"logicalParentUuid":"u5","sessionId":"S","timestamp":"2026-01-01T00:00:06Z","content":"Conversation compacted"}
{"type":"user","uuid":"u7","parentUuid":"u6","sessionId":"S","timestamp":"2026-01-01T00:00:07Z","message":{"role":"user","content":"more"}}
"#;
    let whole = assert_resumes("S.jsonl", &[head, tail]);
    assert_eq!(whole.meta.title.as_deref(), Some("Old title"));
    assert_eq!(whole.leaf.as_deref(), Some("u7"));
    // The chain repair ran (the result of the sibling block was spliced in).
    let state = whole.resume_state.as_ref().unwrap();
    assert!(state["lineage"].as_array().is_some_and(|a| !a.is_empty()));
    let bytes = [head, tail].concat();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&c| c == b'\n').collect();
    assert_resumes("S.jsonl", &lines);
    // Resuming twice after a repair: the repaired parents go back to what the lines said.
    for k in 1..lines.len() {
        let (a, b) = lines.split_at(k);
        assert_resumes("S.jsonl", &[&a.concat(), &b.concat()]);
    }
}

#[test]
fn codex_in_flight_calls_across_the_boundary() {
    let head: &[u8] = br#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"c-1","cwd":"/p","cli_version":"0.1"}}
{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"k1"}}
{"timestamp":"2026-01-01T00:00:02Z","type":"response_item","payload":{"type":"web_search_call","status":"completed","action":{"query":"q"}}}
{"timestamp":"2026-01-01T00:00:03Z","type":"event_msg","payload":{"type":"turn_aborted"}}
"#;
    let tail: &[u8] = br#"{"timestamp":"2026-01-01T00:00:04Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{}","call_id":"k2"}}
{"timestamp":"2026-01-01T00:00:05Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"k2","exit_code":1}}
{"timestamp":"2026-01-01T00:00:06Z","type":"session_meta","payload":{"id":"c-1","forked_from_id":"f-0"}}
"#;
    let whole = assert_resumes("rollout-x.jsonl", &[head, tail]);
    assert_eq!(whole.meta.link("forked_from"), Some("f-0"));
    let bytes = [head, tail].concat();
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&c| c == b'\n').collect();
    assert_resumes("rollout-x.jsonl", &lines);
}

#[test]
fn open_last_lines_and_partial_tails() {
    let name = "rollout-y.jsonl";
    let opts = ReadOptions::default();
    let a = br#"{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"c"}}"#;
    let b = br#"{"timestamp":"2026-01-01T00:00:01Z","type":"event_msg","payload":{"type":"error","message":"x"}}"#;
    // The newline of the last line arrives later, with blanks before it.
    let whole = [&a[..], b"  \r\n", &b[..], b"\n", b"\n"].concat();
    for at in 0..=whole.len() {
        check_split(name, &whole, at, &opts);
    }
    assert!(check_split(name, &whole, a.len(), &opts));
    assert!(check_split(name, &whole, a.len() + 1, &opts));
    // A glued continuation of a line read without its newline is refused.
    let glued = [&a[..], &b[..], b"\n"].concat();
    let prev = read_bytes(name, a, &opts).unwrap();
    let e = resume(prev, &b[..], &opts).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotResumable);
    assert!(!check_split(name, &glued, a.len(), &opts));
    // A partial tail is read again once complete.
    let prev = read_bytes(name, &whole[..a.len() + 10], &opts).unwrap();
    assert_eq!(prev.coverage.count(ReasonCode::PartialTail), 1);
    let cb = prev.coverage.complete_bytes as usize;
    let s = resume(prev, &whole[cb..], &opts).unwrap();
    assert_eq!(s.coverage.count(ReasonCode::PartialTail), 0);
    assert!(s.coverage.complete);
    assert_eq!(s.coverage.lines, 3);
}

#[test]
fn refusals() {
    let opts = ReadOptions::default();
    let log = b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n";
    let mut s = read_bytes("s.jsonl", log, &opts).unwrap();
    let forced = ReadOptions {
        format: Some(Format::Codex),
        ..ReadOptions::default()
    };
    assert_eq!(
        resume(s.clone(), &b""[..], &forced).unwrap_err().kind(),
        ErrorKind::NotResumable
    );
    s.resume_state = None;
    assert_eq!(
        resume(s.clone(), &b""[..], &opts).unwrap_err().kind(),
        ErrorKind::NotResumable
    );
    // Records that are not the ones the state was saved with.
    let mut fewer = read_bytes(
        "s.jsonl",
        b"{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n{\"type\":\"label\",\"id\":\"a\"}\n",
        &opts,
    )
    .unwrap();
    fewer.records.clear();
    assert_eq!(
        resume(fewer, &b""[..], &opts).unwrap_err().kind(),
        ErrorKind::NotResumable
    );
    s.resume_state = Some(serde_json::json!({"v": 99}));
    assert_eq!(
        resume(s, &b""[..], &opts).unwrap_err().kind(),
        ErrorKind::NotResumable
    );
}

#[test]
fn state_is_small() {
    for (name, bytes) in repo_files() {
        let s = read_bytes(&name, &bytes, &ReadOptions::default()).unwrap();
        let state = serde_json::to_string(&s.resume_state).unwrap();
        assert!(
            state.len() * 4 < bytes.len().max(4096),
            "{name}: state of {} bytes for {} bytes of source",
            state.len(),
            bytes.len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Two cuts anywhere (in lines or between them), resumed twice, with every forced format
    /// too: the same session as one read of the whole.
    #[test]
    fn resumed_twice_equals_one_read(
        file_idx in 0usize..64,
        a in 0.0f64..1.0,
        b in 0.0f64..1.0,
        forced in proptest::option::of(0usize..4),
    ) {
        let files = repo_files();
        let (name, bytes) = &files[file_idx % files.len()];
        let opts = ReadOptions { format: forced.map(|i| Format::ALL[i]), ..ReadOptions::default() };
        let (x, y) = if a < b { (a, b) } else { (b, a) };
        let x = ((bytes.len() as f64) * x) as usize;
        let y = ((bytes.len() as f64) * y) as usize;
        let Ok(whole) = read_bytes(name, bytes, &opts) else { return Ok(()) };
        let Ok(first) = read_bytes(name, &bytes[..x], &opts) else { return Ok(()) };
        if first.meta.format != whole.meta.format {
            return Ok(());
        }
        let cb = first.coverage.complete_bytes as usize;
        let Ok(second) = resume(first, &bytes[cb..y.max(cb)], &opts) else { return Ok(()) };
        let cb = second.coverage.complete_bytes as usize;
        let Ok(third) = resume(second, &bytes[cb..], &opts) else { return Ok(()) };
        let d = first_diff("", &json(&third), &json(&whole));
        prop_assert!(d.is_none(), "{} at {}/{}: {:?}", name, x, y, d);
    }
}
