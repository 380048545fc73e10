//! `sessiondex recall --in`: field groups restrict what a query matches; `matchedIn` says
//! where each hit matched. Identifier queries resolve first. Over testdata/queries/identifiers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

fn recall(index: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sessiondex"))
        .arg("recall")
        .args(args)
        .args(["--scope", "global", "--index-thinking", "true", "--source"])
        .arg(repo("testdata/queries/identifiers"))
        .arg("--index-dir")
        .arg(index)
        .output()
        .unwrap()
}

/// A fresh index dir for one test.
fn index_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sdx-fields-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn hits(v: &Value) -> Vec<(String, Value)> {
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            let file = PathBuf::from(h["file"].as_str().unwrap());
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            (format!("{name}#{}", h["index"]), h["matchedIn"].clone())
        })
        .collect()
}

#[test]
fn in_flag_restricts_and_hits_say_where() {
    let index = index_dir("in");
    let run = |args: &[&str]| -> Value {
        let out = recall(&index, args);
        assert!(out.status.success(), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let v = run(&["kestrel", "--in", "tool_output", "--json"]);
    assert_eq!(
        hits(&v),
        [(
            "tools.jsonl#3".to_owned(),
            serde_json::json!(["tool_output"])
        )]
    );
    let v = run(&["kestrel", "--in", "thinking", "--json"]);
    assert_eq!(
        hits(&v),
        [("tools.jsonl#1".to_owned(), serde_json::json!(["thinking"]))]
    );
    // Comma-separated and repeated forms; `next` carries `in`.
    let v = run(&[
        "kestrel config",
        "--in",
        "tool_input,tool_output",
        "--page-size",
        "1",
        "--json",
    ]);
    assert_eq!(hits(&v)[0].0, "tools.jsonl#2");
    assert_eq!(
        v["next"]["args"]["in"],
        serde_json::json!(["tool_input", "tool_output"])
    );
    let v = run(&["kestrel", "--in", "tool_input", "--in", "text", "--json"]);
    let mut got: Vec<String> = hits(&v).into_iter().map(|h| h.0).collect();
    got.sort();
    assert_eq!(got, ["tools.jsonl#0", "tools.jsonl#2"]);
    // Text output names groups other than prose.
    let out = recall(&index, &["kestrel", "--in", "tool_output"]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(" in tool_output  score "), "{text}");
    // An unknown group: invalid_request, exit 1.
    let out = recall(&index, &["kestrel", "--in", "prose", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["error"]["code"], "invalid_request");
    let _ = std::fs::remove_dir_all(&index);
}

#[test]
fn identifier_queries_are_data() {
    let index = index_dir("ids");
    let v: Value = serde_json::from_slice(&recall(&index, &["ZETA-999", "--json"]).stdout).unwrap();
    assert_eq!(hits(&v)[0].0, "old.jsonl#0");
    for q in [
        "no such column: 999",
        "\"unbalanced",
        "foo(",
        "a OR b NOT c",
        "*",
        ":",
    ] {
        let out = recall(&index, &[q, "--json"]);
        assert!(out.status.success(), "{q}: {out:?}");
    }
    // A leading dash is an option to a shell parser, so it goes after `--`.
    let out = Command::new(env!("CARGO_BIN_EXE_sessiondex"))
        .args(["recall", "--scope", "global", "--json", "--source"])
        .arg(repo("testdata/queries/identifiers"))
        .arg("--index-dir")
        .arg(&index)
        .args(["--", "-zeta"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value =
        serde_json::from_slice(&recall(&index, &["0f1e2d3c4b5a", "--json"]).stdout).unwrap();
    assert_eq!(v["hits"][0]["kind"], "session");
    let _ = std::fs::remove_dir_all(&index);
}
