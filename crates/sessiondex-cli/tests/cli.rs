//! The `sessiondex` binary, run as users run it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sessiondex"))
}

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn json_lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8(bytes.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn walk_prints_json_lines_with_session_and_file() {
    let out = bin()
        .args(["walk", "--json", "--source"])
        .arg(repo("examples/sessions"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let records = json_lines(&out.stdout);
    let coverage = json_lines(&out.stderr);
    // One coverage line per example session, every one complete.
    assert_eq!(coverage.len(), 4);
    for c in &coverage {
        assert_eq!(c["coverage"]["complete"], true, "{c}");
        assert_eq!(c["lineageFingerprint"].as_str().unwrap().len(), 64);
    }
    let formats: Vec<&str> = coverage
        .iter()
        .map(|c| c["format"].as_str().unwrap())
        .collect();
    for f in ["pi", "omp", "claude_code", "codex"] {
        assert!(formats.contains(&f), "{formats:?}");
    }
    // Counts per session add up to the records printed.
    let total: u64 = coverage
        .iter()
        .map(|c| c["records"].as_u64().unwrap())
        .sum();
    assert_eq!(total as usize, records.len());
    for r in &records {
        assert!(r["sessionId"].is_string() && r["file"].is_string() && r["entryId"].is_string());
    }
    // The failed calls of the corpus, from typed fields: pi's test run is on a rewound
    // branch, so the active walk has the Claude type check and the Codex migration only.
    let failed: Vec<(&str, &str)> = records
        .iter()
        .filter(|r| r["type"] == "tool_call" && r["outcome"] == "failed")
        .map(|r| {
            (
                r["tool"].as_str().unwrap(),
                r["operationAddress"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [
            ("Bash", "c0000001-0000-4000-8000-000000000004/0"),
            ("exec_command", "l5/0")
        ]
    );
}

#[test]
fn walk_all_branches_includes_the_rewound_branch() {
    let pi = repo("examples/sessions/pi");
    let active = bin()
        .args(["walk", "--json", "--source"])
        .arg(&pi)
        .output()
        .unwrap();
    let all = bin()
        .args(["walk", "--json", "--branches", "all", "--source"])
        .arg(&pi)
        .output()
        .unwrap();
    let (active, all) = (json_lines(&active.stdout), json_lines(&all.stdout));
    let ids = |rs: &[Value]| -> Vec<String> {
        rs.iter()
            .map(|r| r["entryId"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids(&active),
        [
            "m0a1b2c3",
            "u1000001",
            "a1000001",
            "a1000001/0",
            "t1000001",
            "u1000002",
            "a1000003",
            "a1000003/0",
            "t1000003",
            "a1000004"
        ]
    );
    assert_eq!(all.len(), active.len() + 3);
    assert!(all
        .iter()
        .any(|r| r["outcome"] == "failed" && r["tool"] == "bash"));
    // index is the position in the selected lineage
    for (i, r) in all.iter().enumerate() {
        assert_eq!(r["index"].as_u64().unwrap() as usize, i);
    }
}

#[test]
fn walk_reports_damage_on_stderr_and_still_exits_zero() {
    let out = bin()
        .args(["walk", "--json", "--source"])
        .arg(repo("testdata/sessions/damaged-pi.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let cov = json_lines(&out.stderr);
    assert_eq!(cov.len(), 1);
    assert_eq!(cov[0]["coverage"]["complete"], false);
    let codes: Vec<&str> = cov[0]["coverage"]["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "malformed_line",
            "partial_tail",
            "invalid_utf8",
            "duplicate_entry_id"
        ]
    );
    assert_eq!(json_lines(&out.stdout).len(), 3);
}

#[test]
fn walk_forced_format_and_unknown_files() {
    let dir = std::env::temp_dir().join(format!("sdx-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.jsonl"), "{\"hello\":1}\n").unwrap();
    let out = bin()
        .args(["walk", "--json", "--source"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let cov = json_lines(&out.stderr);
    assert_eq!(cov[0]["error"]["code"], "unknown_format");
    assert!(out.stdout.is_empty());
    let forced = bin()
        .args(["walk", "--json", "--format", "codex", "--source"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(forced.status.success());
    assert_eq!(json_lines(&forced.stderr)[0]["format"], "codex");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_source_and_bad_usage_exit_codes() {
    let out = bin()
        .args(["walk", "--json", "--source", "/nonexistent/sessions"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["error"]["code"], "source_not_found");
    let usage = bin().args(["walk", "--branches", "some"]).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
}
