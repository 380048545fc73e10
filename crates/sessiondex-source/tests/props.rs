//! Property tests: no input of any bytes panics a reader, and valid lines survive damage to
//! other lines.

use std::path::PathBuf;

use proptest::prelude::*;
use sessiondex_source::{read_bytes, Branches, Format, ReadOptions, Record};

fn example_files() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions");
    sessiondex_source::discover(&root)
        .into_iter()
        .map(|p| (p.to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect()
}

fn all_options() -> Vec<ReadOptions> {
    let mut v = vec![ReadOptions::default()];
    v.extend(Format::ALL.iter().map(|f| ReadOptions {
        format: Some(*f),
        ..ReadOptions::default()
    }));
    v
}

/// Reads with detection and with every forced format; selecting both branch modes must not
/// panic either.
fn read_every_way(bytes: &[u8]) {
    for opts in all_options() {
        if let Ok(s) = read_bytes("fuzz.jsonl", bytes, &opts) {
            let _ = s.select(Branches::Active);
            let _ = s.select(Branches::All);
            let _ = serde_json::to_string(&s.records).unwrap();
        }
    }
}

/// What identifies a record independently of its position in the file.
fn content(records: &[Record]) -> Vec<(String, Option<String>, String, Option<String>)> {
    records
        .iter()
        .map(|r| {
            (
                r.kind.clone(),
                r.role.clone(),
                r.text.clone(),
                r.tool.clone(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        read_every_way(&bytes);
    }

    #[test]
    fn json_like_noise_never_panics(lines in proptest::collection::vec(
        prop_oneof![
            Just("{\"type\":\"session\",\"version\":3,\"id\":\"x\"}".to_owned()),
            Just("{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"a\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\"}]}}".to_owned()),
            Just("{\"type\":\"assistant\",\"uuid\":\"u\",\"parentUuid\":\"u\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"input\":7}]}}".to_owned()),
            Just("{\"timestamp\":5,\"type\":\"response_item\",\"payload\":{\"type\":\"function_call\",\"arguments\":\"{\"}}".to_owned()),
            Just("{\"timestamp\":\"x\",\"type\":\"event_msg\",\"payload\":{\"type\":\"exec_command_end\",\"exit_code\":\"1\"}}".to_owned()),
            Just("{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":[{\"type\":\"image\"}]}]}}".to_owned()),
            "[{}\\[\\]\":,a-z0-9]{0,40}",
        ],
        0..24,
    )) {
        read_every_way(lines.join("\n").as_bytes());
    }

    #[test]
    fn truncation_keeps_every_complete_line(file_idx in 0usize..16, cut in 0.0f64..1.0) {
        let files = example_files();
        let (name, bytes) = &files[file_idx % files.len()];
        let at = ((bytes.len() as f64) * cut) as usize;
        let truncated = &bytes[..at];
        // The same file cut at the last newline before `at`: every record of it must survive.
        let clean_end = truncated.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let clean = &bytes[..clean_end];
        let opts = ReadOptions { format: read_bytes(name, bytes, &ReadOptions::default()).unwrap().meta.format, ..ReadOptions::default() };
        let a = read_bytes(name, truncated, &opts).unwrap();
        let b = read_bytes(name, clean, &opts).unwrap();
        let (ca, cb) = (content(&a.records), content(&b.records));
        // A cut inside a line either drops that line (partial tail) or, when the cut falls
        // right after a complete object, keeps it: never anything else.
        prop_assert!(ca.len() >= cb.len());
        prop_assert_eq!(&ca[..cb.len()], &cb[..]);
        prop_assert_eq!(a.coverage.complete_bytes as usize >= clean_end, true);
    }

    #[test]
    fn spliced_garbage_loses_nothing_else(
        file_idx in 0usize..16,
        at_line in 0usize..64,
        garbage in prop_oneof![
            Just(b"not json at all".to_vec()),
            Just(b"42".to_vec()),
            Just(b"[1,2,3]".to_vec()),
            Just(b"{\"unterminated\": ".to_vec()),
            proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 1..64),
        ],
    ) {
        let files = example_files();
        let (name, bytes) = &files[file_idx % files.len()];
        let original = read_bytes(name, bytes, &ReadOptions::default()).unwrap();
        let opts = ReadOptions { format: original.meta.format, ..ReadOptions::default() };
        let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
        let at = at_line % (lines.len() + 1);
        // Garbage that happens to parse as an object could be a real record; skip those.
        prop_assume!(!matches!(serde_json::from_slice::<serde_json::Value>(&garbage), Ok(serde_json::Value::Object(_))));
        // A line of JSON whitespace only is blank (any other whitespace is malformed).
        prop_assume!(!garbage.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')));
        let mut spliced = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if i == at {
                spliced.extend_from_slice(&garbage);
                spliced.push(b'\n');
            }
            spliced.extend_from_slice(l);
        }
        if at == lines.len() {
            spliced.extend_from_slice(&garbage);
            spliced.push(b'\n');
        }
        let damaged = read_bytes(name, &spliced, &opts).unwrap();
        prop_assert_eq!(content(&damaged.records), content(&original.records));
        prop_assert!(!damaged.coverage.complete);
    }
}
