//! The query commands as users run them: the examples of docs/query.md, exit codes and JSON
//! shapes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Splits a command line with single quotes (as the docs write them).
fn split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            _ => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

fn run(args: &[String], index: &Path) -> Output {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.replace("INDEX", &index.to_string_lossy()))
        .collect();
    Command::new(env!("CARGO_BIN_EXE_sessiondex"))
        .args(&args)
        .current_dir(repo())
        .output()
        .unwrap()
}

#[test]
fn documented_examples_print_what_the_docs_say() {
    let doc = std::fs::read_to_string(repo().join("docs/query.md")).unwrap();
    let dir = tempfile_dir();
    let tmp = dir.path();
    let mut blocks = 0;
    let mut in_block = false;
    let mut cmd: Option<Vec<String>> = None;
    let mut expected = String::new();
    // Paths print absolute; the docs write the repository root as /src/sessiondex.
    let root = std::fs::canonicalize(repo()).unwrap();
    let check = |cmd: &[String], expected: &str| {
        let out = run(cmd, tmp);
        let got = String::from_utf8(out.stdout)
            .unwrap()
            .replace(&*tmp.to_string_lossy(), "INDEX")
            .replace(&*root.to_string_lossy(), "/src/sessiondex");
        assert_eq!(got.trim_end(), expected.trim_end(), "{cmd:?}");
    };
    for line in doc.lines() {
        if line == "```console" {
            in_block = true;
            continue;
        }
        if in_block && line == "```" {
            if let Some(c) = cmd.take() {
                check(&c, &expected);
                blocks += 1;
            }
            expected.clear();
            in_block = false;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(rest) = line.strip_prefix("$ sessiondex ") {
            if let Some(c) = cmd.take() {
                check(&c, &expected);
                blocks += 1;
                expected.clear();
            }
            cmd = Some(split(rest));
        } else {
            expected.push_str(line);
            expected.push('\n');
        }
    }
    assert!(blocks >= 3, "{blocks} examples");
}

/// A new directory, removed with everything in it when dropped (a failing test too).
fn tempfile_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("sessiondex-docs-")
        .tempdir()
        .unwrap()
}

fn sx(args: &str, index: &Path) -> Output {
    run(&split(args), index)
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn exit_codes_and_json_shapes() {
    let dir = tempfile_dir();
    let idx = dir.path().to_path_buf();
    let src = "--source examples/sessions --index-dir INDEX";
    // A page: exit 0, exactly the page object.
    let out = sx(
        &format!("recall checkout --scope global --json {src}"),
        &idx,
    );
    assert_eq!(out.status.code(), Some(0));
    let page = json(&out);
    let keys: Vec<&str> = page
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["coverage", "hits", "next", "total"]);
    for k in [
        "complete",
        "indexedSessions",
        "eligibleSessions",
        "staleSessions",
        "incompleteSessions",
        "reasons",
    ] {
        assert!(page["coverage"].get(k).is_some(), "{k}");
    }
    let hit = &page["hits"][0];
    assert_eq!(hit["follow"]["ref"], "expand");
    assert!(hit["follow"]["args"]["sourceHash"].as_str().unwrap().len() == 64);
    // The follow call runs unchanged through `call`.
    let follow = serde_json::to_string(&hit["follow"]).unwrap();
    let out = run(
        &[
            "call".into(),
            follow,
            "--json".into(),
            "--source".into(),
            "examples/sessions".into(),
            "--index-dir".into(),
            "INDEX".into(),
        ],
        &idx,
    );
    assert_eq!(out.status.code(), Some(0));
    let x = json(&out);
    assert_eq!(x["entries"].as_array().unwrap().len(), 1);
    assert_eq!(x["entries"][0]["textRange"]["complete"], true);
    // A failed call: exit 1, `{"error": {code, message}}` on stdout.
    let out = sx(
        &format!("expand --session 019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f --index 999 --json {src}"),
        &idx,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "index_out_of_bounds");
    let out = sx(&format!("call nonsense --json {src}"), &idx);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "invalid_call");
    let out = sx(&format!("recall x --scope nowhere --json {src}"), &idx);
    assert_eq!(json(&out)["error"]["code"], "invalid_scope");
    let out = sx(
        &format!("recall x --json --config /nonexistent.toml {src}"),
        &idx,
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["error"]["code"], "invalid_config");
    // Usage errors: exit 2.
    let out = sx(&format!("expand --session s {src}"), &idx);
    assert_eq!(out.status.code(), Some(2));
    let out = sx(&format!("recall --entry-range 3 {src}"), &idx);
    assert_eq!(out.status.code(), Some(2));
    // walk --session and trace.
    let out = sx(
        &format!("walk --session 019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f --json {src}"),
        &idx,
    );
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 10);
    assert_eq!(lines[3]["index"], 3);
    let out = sx(
        &format!("trace --session 019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f --json {src}"),
        &idx,
    );
    assert_eq!(out.status.code(), Some(0));
    let t = json(&out);
    assert_eq!(
        t["root"]["sessionId"],
        "019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f"
    );
}
