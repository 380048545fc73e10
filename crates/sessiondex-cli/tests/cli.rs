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

/// The binary with `args`, over the example corpus with its index in `index_dir`.
fn over_examples(args: &[&str], index_dir: &std::path::Path) -> Command {
    let mut c = bin();
    c.args(args)
        .arg("--source")
        .arg(repo("examples/sessions"))
        .arg("--index-dir")
        .arg(index_dir);
    c
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
    assert_eq!(body["error"]["code"], "source_unreadable");
    let usage = bin().args(["walk", "--branches", "some"]).output().unwrap();
    assert_eq!(usage.status.code(), Some(2));
}

/// A relative `--cwd`, or one with `.` and `..`, names the directory it resolves to from the
/// current one: left as given it matched no session's recorded cwd, and the empty answer said
/// it was complete.
#[test]
fn a_relative_cwd_is_resolved_from_the_current_directory() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| -> Value {
        let out = over_examples(args, dir.path())
            .current_dir("/")
            .arg("--json")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    for cwd in [
        "/home/dev/webapp",
        "home/dev/webapp",
        "./home/dev/webapp/",
        "/home/dev/other/../webapp",
        "home/./dev/webapp/src/..",
    ] {
        let page = run(&["recall", "timeout", "--cwd", cwd]);
        assert_eq!(page["total"], 2, "{cwd}: {page}");
        assert_eq!(page["coverage"]["complete"], true, "{cwd}");
        let list = run(&["sessions", "--cwd", cwd]);
        assert_eq!(list["sessions"].as_array().unwrap().len(), 4, "{cwd}");
    }
    let page = run(&["recall", "timeout", "--cwd", "home/dev/elsewhere"]);
    assert_eq!(page["total"], 0, "{page}");
}

/// A relative `--source` or `--index-dir` is taken from the current directory: the same files
/// reached from another directory, or spelled another way, are the same sessions of the same
/// index (nothing rebuilt), and a follow line printed in one directory runs in any other.
#[test]
fn a_relative_source_names_the_same_sessions_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = std::fs::canonicalize(dir.path()).unwrap();
    let root = std::fs::canonicalize(repo("")).unwrap();
    let index_dir = tmp.join("idx");
    let run = |cwd: &std::path::Path, args: &[&str]| -> String {
        let out = bin().current_dir(cwd).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let sync = |cwd: &std::path::Path, source: &str, index: &str| -> Value {
        let out = run(
            cwd,
            &["index", "--json", "--source", source, "--index-dir", index],
        );
        serde_json::from_str(&out).unwrap()
    };
    // From the repository root, the index named absolute; then from the index's parent,
    // the index named relative and the source spelled another way.
    let first = sync(&root, "examples/sessions", index_dir.to_str().unwrap());
    assert_eq!(
        (first["indexed"].as_u64(), first["removed"].as_u64()),
        (Some(4), Some(0))
    );
    let other = format!("{}/examples/./sessions/pi/../", root.display());
    let again = sync(&tmp, &other, "idx");
    assert_eq!(
        (
            again["indexed"].as_u64(),
            again["reused"].as_u64(),
            again["removed"].as_u64()
        ),
        (Some(0), Some(4), Some(0)),
        "{again}"
    );
    // Hits and follow calls name files by absolute path.
    let page: Value = serde_json::from_str(&run(
        &tmp,
        &[
            "recall",
            "timeout",
            "--scope",
            "global",
            "--json",
            "--source",
            &other,
            "--index-dir",
            "idx",
        ],
    ))
    .unwrap();
    let omp = root.join(
        "examples/sessions/omp/--home-dev-webapp--/\
         2026-11-05T16-20-00-000Z_019a6f3c-2d4e-7f50-9b1c-3d4e5f6a7b8c.jsonl",
    );
    assert_eq!(page["hits"][0]["file"], omp.to_str().unwrap(), "{page}");
    assert_eq!(
        page["hits"][0]["follow"]["args"]["session"],
        omp.to_str().unwrap()
    );
    // `walk` names the file as the hits do, so their lines join.
    let walked = run(
        &root,
        &["walk", "--json", "--source", "examples/./sessions/omp"],
    );
    let first: Value = serde_json::from_str(walked.lines().next().unwrap()).unwrap();
    assert_eq!(first["file"], omp.to_str().unwrap(), "{first}");
    // The printed follow line, copied and run from `/`, reads the record.
    let text = run(
        &root,
        &[
            "recall",
            "timeout",
            "--scope",
            "global",
            "--page-size",
            "1",
            "--source",
            "examples/sessions",
            "--index-dir",
            index_dir.to_str().unwrap(),
        ],
    );
    let line = text
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("follow: sessiondex "))
        .unwrap();
    assert!(
        line.ends_with(&format!(
            " --source {}/examples/sessions --index-dir {}",
            root.display(),
            index_dir.display()
        )),
        "{line}"
    );
    let out = Command::new("sh")
        .current_dir("/")
        .arg("-c")
        .arg(format!("\"$0\" {line} --json"))
        .arg(env!("CARGO_BIN_EXE_sessiondex"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let x: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(x["session"]["file"], omp.to_str().unwrap(), "{x}");
    assert_eq!(x["entries"][0]["index"], 4, "{x}");
}

/// `expand --session` with a relative path finds the session its text names, made absolute,
/// and a `..` after a symbolic link is the file the link leads to, not the one the text spells.
#[test]
fn a_relative_session_path_is_the_file_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = std::fs::canonicalize(dir.path()).unwrap();
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    std::fs::create_dir_all(b.join("c")).unwrap();
    std::fs::create_dir_all(&a).unwrap();
    let pi = "019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f";
    let claude = "3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d";
    std::fs::copy(
        repo(&format!(
            "examples/sessions/pi/--home-dev-webapp--/2026-11-02T09-14-03-120Z_{pi}.jsonl"
        )),
        a.join("s.jsonl"),
    )
    .unwrap();
    std::fs::copy(
        repo(&format!(
            "examples/sessions/claude-code/-home-dev-webapp/{claude}.jsonl"
        )),
        b.join("s.jsonl"),
    )
    .unwrap();
    std::os::unix::fs::symlink(b.join("c"), a.join("l")).unwrap();
    let expand = |session: &str| -> Value {
        let out = bin()
            .current_dir(&tmp)
            .args(["expand", "--json", "--index", "0", "--session", session])
            .args(["--source", ".", "--index-dir", "idx"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{session}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let cases = [
        ("a/s.jsonl", pi, a.join("s.jsonl")),
        ("./a/../a/s.jsonl", pi, a.join("s.jsonl")),
        ("b/s.jsonl", claude, b.join("s.jsonl")),
        // `a/l/..` is `b` on disk, `a` in the text.
        ("a/l/../s.jsonl", claude, b.join("s.jsonl")),
    ];
    // Read as files outside the index, then as the index's sessions.
    for indexed in [false, true] {
        if indexed {
            let out = bin()
                .current_dir(&tmp)
                .args(["index", "--source", ".", "--index-dir", "idx"])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0));
        }
        for (session, id, file) in &cases {
            let x = expand(session);
            assert_eq!(x["session"]["sessionId"], *id, "{session}: {x}");
            assert_eq!(x["session"]["file"], file.to_str().unwrap(), "{session}");
        }
    }
}

/// An empty answer that only means "nothing here" says why on stderr (text output only; the
/// JSON and the exit status are unchanged): no agent's standard location exists, or the
/// default scope's directory holds no session.
#[test]
fn an_empty_answer_says_where_it_looked() {
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str], cwd: &str| -> (String, String) {
        let out = bin()
            .current_dir(cwd)
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (out, err) = run(&["recall", "timeout"], "/");
    assert!(out.starts_with("0 hits; coverage complete, 0/0"), "{out}");
    assert!(err.contains("no session logs here"), "{err}");
    assert!(err.contains("--source"), "{err}");
    for cmd in ["sessions", "index"] {
        let (_, err) = run(&[cmd], "/");
        assert!(err.contains("no session logs here"), "{cmd}: {err}");
    }
    let (_, err) = run(&["recall", "timeout", "--json"], "/");
    assert_eq!(err, "");
    let examples = repo("examples/sessions");
    let src = examples.to_str().unwrap();
    let here = std::fs::canonicalize(home.path()).unwrap();
    let here = here.to_str().unwrap();
    let (out, err) = run(&["recall", "timeout", "--source", src], here);
    assert!(out.starts_with("0 hits; coverage complete, 0/0"), "{out}");
    assert_eq!(
        err.trim_end(),
        format!(
            "sessiondex: no indexed session ran in {here} or below it; \
             --scope global searches every session"
        )
    );
    // Sessions in scope, or another scope: no hint, whatever the hits.
    for args in [
        &[
            "recall",
            "timeout",
            "--source",
            src,
            "--cwd",
            "/home/dev/webapp",
        ][..],
        &[
            "recall",
            "nothinglikethis",
            "--source",
            src,
            "--cwd",
            "/home/dev",
        ],
        &[
            "recall",
            "nothinglikethis",
            "--source",
            src,
            "--scope",
            "global",
        ],
        &["recall", "timeout", "--source", src, "--json"],
    ] {
        let (_, err) = run(args, "/");
        assert_eq!(err, "", "{args:?}");
    }
}

/// `index` says what one sync did, in words: counts, the bytes read and the time, then the
/// coverage.
#[test]
fn index_prints_what_the_sync_did() {
    let dir = tempfile::tempdir().unwrap();
    let index = |expect: &str| {
        let out = over_examples(&["index"], dir.path()).output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        let (head, time) = lines[0].split_once(" read in ").unwrap();
        assert_eq!(head, expect, "{text}");
        let secs = time.strip_suffix(" s").unwrap();
        assert!(secs.parse::<f64>().is_ok_and(|s| s >= 0.0), "{text}");
        assert_eq!(lines[1], "4/4 sessions indexed", "{text}");
    };
    index("4 indexed, 0 reused, 0 removed, 0 failed; 13.3 KB");
    index("0 indexed, 4 reused, 0 removed, 0 failed; 0 bytes");
}

/// `sessions` with the filters of a `sessions` request: they combine with AND, keep the list's
/// JSON shape and its newest-first order, and a bad time is `invalid_time` (exit 1).
#[test]
fn sessions_filters_select_from_the_same_list() {
    let dir = tempfile::tempdir().unwrap();
    let list = |extra: &[&str]| -> (Option<i32>, Value) {
        let out = bin()
            .args(["sessions", "--json", "--source"])
            .arg(repo("examples/sessions"))
            .arg("--index-dir")
            .arg(dir.path())
            .args(extra)
            .output()
            .unwrap();
        (
            out.status.code(),
            serde_json::from_slice(&out.stdout).unwrap(),
        )
    };
    let ids = |v: &Value| -> Vec<String> {
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_owned())
            .collect()
    };
    let (code, all) = list(&[]);
    assert_eq!(code, Some(0));
    let every = ids(&all);
    assert_eq!(every.len(), 4, "{all}");
    let (omp, codex, claude, pi) = (
        "019a6f3c-2d4e-7f50-9b1c-3d4e5f6a7b8c",
        "019a5e2b-1c3d-7e4f-8a9b-0c1d2e3f4a5b",
        "3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d",
        "019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f",
    );
    assert_eq!(every, [omp, codex, claude, pi]);
    for (args, want) in [
        (&["--created-since", "2026-11-04"][..], vec![omp, codex]),
        (&["--created-until", "2026-11-03"], vec![claude, pi]),
        (
            &[
                "--created-since",
                "2026-11-03",
                "--created-until",
                "2026-11-04",
            ],
            vec![codex, claude],
        ),
        (&["--id", pi], vec![pi]),
        (&["--cwd", "/home/dev/webapp"], vec![omp, codex, claude, pi]),
        (&["--cwd", "/home/dev"], vec![omp, codex, claude, pi]),
        (&["--cwd", "/home/dev/elsewhere"], vec![]),
        (
            &["--availability", "available"],
            vec![omp, codex, claude, pi],
        ),
        (&["--availability", "stale"], vec![]),
        (&["--parent", pi], vec![]),
        (&["--limit", "2"], vec![omp, codex]),
        (
            &["--created-until", "2026-11-04", "--limit", "1"],
            vec![codex],
        ),
    ] {
        let (code, v) = list(args);
        assert_eq!(code, Some(0), "{args:?}: {v}");
        assert_eq!(ids(&v), want, "{args:?}");
        // The rows are the unfiltered list's, whole.
        for row in v["sessions"].as_array().unwrap() {
            assert!(all["sessions"].as_array().unwrap().contains(row), "{row}");
        }
    }
    let (code, v) = list(&["--created-since", "last tuesday"]);
    assert_eq!(code, Some(1));
    assert_eq!(v["error"]["code"], "invalid_time", "{v}");
}

#[test]
fn index_json_report_and_two_concurrent_indexers() {
    let dir = std::env::temp_dir().join(format!("sdx-cli-idx-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let run = || {
        bin()
            .args(["index", "--json", "--source"])
            .arg(repo("examples/sessions"))
            .arg("--index-dir")
            .arg(&dir)
            .spawn()
            .unwrap()
    };
    let kids: Vec<_> = (0..3).map(|_| run()).collect();
    for k in kids {
        assert!(k.wait_with_output().unwrap().status.success());
    }
    let out = bin()
        .args(["index", "--json", "--source"])
        .arg(repo("examples/sessions"))
        .arg("--index-dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["indexed", "reused", "removed", "failed", "bytesRead"] {
        assert!(report[key].is_u64(), "{key}: {report}");
    }
    assert_eq!(report["reused"], 4);
    assert_eq!(report["indexed"], 0);
    assert_eq!(report["coverage"]["complete"], true);
    assert_eq!(report["coverage"]["eligibleSessions"], 4);
    let list = bin()
        .args(["sessions", "--json", "--source"])
        .arg(repo("examples/sessions"))
        .arg("--index-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let list: Value = serde_json::from_slice(&list.stdout).unwrap();
    let sessions = list["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 4);
    for key in [
        "sessionId",
        "file",
        "format",
        "cwd",
        "firstTs",
        "lastTs",
        "entryCount",
        "toolHistogram",
        "errorCount",
        "filesTouched",
        "tier",
        "coverage",
    ] {
        assert!(sessions[0].get(key).is_some(), "{key}: {}", sessions[0]);
    }
    // newest first
    let last: Vec<&str> = sessions
        .iter()
        .map(|s| s["lastTs"].as_str().unwrap())
        .collect();
    let mut sorted = last.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    assert_eq!(last, sorted);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn config_file_and_flags() {
    let dir = std::env::temp_dir().join(format!("sdx-cli-cfg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("sessiondex.toml");
    std::fs::write(&cfg, "hotSessions = 1\n").unwrap();
    let list = |extra: &[&str]| -> Value {
        let out = bin()
            .args(["sessions", "--json", "--source"])
            .arg(repo("examples/sessions"))
            .arg("--index-dir")
            .arg(dir.join("index"))
            .arg("--config")
            .arg(&cfg)
            .args(extra)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let hot = |v: &Value| {
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["tier"] == "hot")
            .count()
    };
    assert_eq!(hot(&list(&[])), 1);
    assert_eq!(hot(&list(&["--hot-sessions", "3"])), 3);
    std::fs::write(&cfg, "hotSesions = 1\n").unwrap();
    let bad = bin()
        .args(["index", "--json", "--config"])
        .arg(&cfg)
        .arg("--index-dir")
        .arg(dir.join("index"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    let body: Value = serde_json::from_slice(&bad.stdout).unwrap();
    assert_eq!(body["error"]["code"], "invalid_config");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's first command, run as written (with the built binary for `cargo run --release
/// --` and a temp index dir), answers with hits and complete coverage.
#[test]
fn readme_main_command_runs() {
    let readme = std::fs::read_to_string(repo("README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("cargo run --release -- "))
        .expect("README has the main command");
    let rest = line.trim_start_matches("cargo run --release -- ");
    // Split like a shell would for this simple line: double quotes group words.
    let mut args: Vec<String> = Vec::new();
    for (i, part) in rest.split('"').enumerate() {
        if i % 2 == 1 {
            args.push(part.to_owned());
        } else {
            args.extend(part.split_whitespace().map(str::to_owned));
        }
    }
    let dir = std::env::temp_dir().join(format!("sdx-readme-{}", std::process::id()));
    let out = bin()
        .current_dir(repo(""))
        .args(&args)
        .args(["--json", "--index-dir"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(page["total"].as_u64().unwrap() > 0);
    assert_eq!(page["coverage"]["complete"], true);
    assert_eq!(page["coverage"]["eligibleSessions"], 4);
    let _ = std::fs::remove_dir_all(&dir);
}
