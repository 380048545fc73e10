//! The repo's own damaged sessions in `testdata/sessions/`: exact coverage reasons, nothing
//! valid lost. These always run.

use std::path::PathBuf;

use sessiondex_source::{read_bytes, read_path, Branches, Format, ReadOptions, ReasonCode};

fn testdata(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/sessions")
        .join(name)
}

fn texts(records: &[sessiondex_source::Record]) -> Vec<&str> {
    records.iter().map(|r| r.text.as_str()).collect()
}

#[test]
fn damaged_pi_keeps_every_valid_record() {
    let s = read_path(&testdata("damaged-pi.jsonl"), &ReadOptions::default()).unwrap();
    assert_eq!(s.meta.format, Some(Format::Pi));
    assert_eq!(s.meta.session_id, "dmg-pi-1");
    let c = &s.coverage;
    assert!(!c.complete);
    // `42` and the prose line
    assert_eq!(c.count(ReasonCode::MalformedLine), 2);
    let malformed = c
        .reasons
        .iter()
        .find(|r| r.code == ReasonCode::MalformedLine)
        .unwrap();
    assert_eq!(malformed.lines, [3, 4]);
    assert_eq!(c.count(ReasonCode::InvalidUtf8), 1);
    assert_eq!(c.count(ReasonCode::DuplicateEntryId), 1);
    assert_eq!(c.count(ReasonCode::PartialTail), 1);
    // The partial tail starts at the last line: everything before it is consumed.
    let bytes = std::fs::read(testdata("damaged-pi.jsonl")).unwrap();
    let tail_start = bytes.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    assert_eq!(c.complete_bytes, tail_start as u64);
    // Glued e1/e2 both come out; the later e3 wins over the invalid-UTF-8 one.
    let active = s.select(Branches::Active);
    assert_eq!(
        texts(&active.records),
        [
            "first question about zebra stripes",
            "glued answer about zebra",
            "second e3 wins"
        ]
    );
    // The replaced record is still read when it is not a duplicate.
    let fixed = String::from_utf8_lossy(&bytes).replace("second e3 wins", "x");
    let s2 = read_bytes(
        "d.jsonl",
        fixed
            .replace(
                "\"id\":\"e3\",\"parentId\":\"e2\",\"timestamp\":\"2026-01-02T03:04:09",
                "\"id\":\"e5\",\"parentId\":\"e3\",\"timestamp\":\"2026-01-02T03:04:09",
            )
            .as_bytes(),
        &ReadOptions::default(),
    )
    .unwrap();
    assert!(s2.records.iter().any(|r| r.text.starts_with("caf\u{fffd}")));
}

#[test]
fn the_partial_tail_completes_when_the_rest_arrives() {
    let mut bytes = std::fs::read(testdata("damaged-pi.jsonl")).unwrap();
    bytes.extend_from_slice(
        b"age\":{\"role\":\"assistant\",\"content\":\"tail arrived\"},\"timestamp\":\"2026-01-02T03:05:00Z\"}\n",
    );
    let s = read_bytes("live.jsonl", &bytes, &ReadOptions::default()).unwrap();
    assert_eq!(s.coverage.count(ReasonCode::PartialTail), 0);
    assert_eq!(s.coverage.complete_bytes, bytes.len() as u64);
    let active = s.select(Branches::Active);
    assert_eq!(active.records.last().unwrap().text, "tail arrived");
}

#[test]
fn a_parent_cycle_stops_the_walk() {
    let s = read_path(&testdata("cycle-claude.jsonl"), &ReadOptions::default()).unwrap();
    let active = s.select(Branches::Active);
    assert_eq!(active.records.len(), 3);
    assert_eq!(active.coverage.count(ReasonCode::InvalidParentGraph), 1);
    assert!(!active.coverage.complete);
    assert_eq!(s.select(Branches::All).records.len(), 3);
}

#[test]
fn a_missing_parent_stops_the_walk() {
    let s = read_path(
        &testdata("missing-parent-claude.jsonl"),
        &ReadOptions::default(),
    )
    .unwrap();
    let active = s.select(Branches::Active);
    assert_eq!(texts(&active.records), ["orphan answer"]);
    assert_eq!(active.coverage.count(ReasonCode::MissingParent), 1);
    assert!(!active.coverage.complete);
    // The read itself was complete; only the lineage is not.
    assert!(s.coverage.complete);
}

#[test]
fn a_20_mb_line_is_read_whole() {
    let big = "zebra ".repeat(20 * 1024 * 1024 / 6);
    let mut log = String::from(
        "{\"type\":\"session\",\"version\":3,\"id\":\"big\",\"timestamp\":\"2026-01-01T00:00:00Z\",\"cwd\":\"/\"}\n",
    );
    log.push_str(&format!(
        "{{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"message\":{{\"role\":\"user\",\"content\":\"{big}\"}}}}\n"
    ));
    log.push_str("{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"message\":{\"role\":\"assistant\",\"content\":\"after\"}}\n");
    assert!(log.len() > 20 * 1024 * 1024 - 64);
    let s = read_bytes("big.jsonl", log.as_bytes(), &ReadOptions::default()).unwrap();
    assert!(s.coverage.complete);
    let active = s.select(Branches::Active);
    assert_eq!(active.records.len(), 2);
    assert_eq!(active.records[0].text.len(), big.len());
    assert_eq!(active.records[1].text, "after");
}

#[test]
fn an_empty_or_unrecognized_file_is_an_error_not_a_panic() {
    for bytes in [&b""[..], b"\n\n", b"hello\n", b"[1,2]\n", b"{\"a\":1}\n"] {
        let e = read_bytes("x.jsonl", bytes, &ReadOptions::default()).unwrap_err();
        assert_eq!(e.kind().code(), "unknown_format");
    }
    // Forced, the same bytes read as an empty session.
    let s = read_bytes(
        "x.jsonl",
        b"",
        &ReadOptions {
            format: Some(Format::Codex),
            ..ReadOptions::default()
        },
    )
    .unwrap();
    assert!(s.records.is_empty());
}
