//! `redactSecrets` from the command line: `walk` and `expand` show `[redacted:<kind>]` unless
//! `--reveal`; `--redact-secrets false` indexes the credentials (docs/secrets.md).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

const TOKEN: &str = "ghp_SyNtHeTiC0123456789abcdefABCDEFghijKL";

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sessiondex"))
}

fn session() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/sessions/secrets-pi.jsonl")
}

fn stdout(args: &[&str], extra: &[&std::ffi::OsStr]) -> String {
    let out = bin().args(args).args(extra).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn walk_redacts_unless_reveal() {
    let src = session();
    let hidden = stdout(&["walk", "--json", "--source"], &[src.as_os_str()]);
    assert!(!hidden.contains(TOKEN));
    assert!(hidden.contains("[redacted:github_token]"));
    assert!(hidden.contains("[redacted:private_key]"));
    let shown = stdout(
        &["walk", "--json", "--reveal", "--source"],
        &[src.as_os_str()],
    );
    assert!(shown.contains(TOKEN));
    assert!(!shown.contains("[redacted:"));
    // The config flag turns it off as well.
    let off = stdout(
        &["walk", "--json", "--redact-secrets", "false", "--source"],
        &[src.as_os_str()],
    );
    assert_eq!(off, shown);
}

#[test]
fn expand_redacts_unless_reveal_and_recall_never_finds_it() {
    let dir = std::env::temp_dir().join(format!("sdx-cli-secrets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let src = session();
    let common = |cmd: &str| -> Vec<std::ffi::OsString> {
        vec![
            cmd.into(),
            "--json".into(),
            "--source".into(),
            src.clone().into_os_string(),
            "--index-dir".into(),
            dir.clone().into_os_string(),
        ]
    };
    let run = |args: Vec<std::ffi::OsString>| -> Value {
        let out = bin().args(args).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let recall = |q: &str| {
        let mut args = common("recall");
        for a in ["--scope", "global", q] {
            args.push(a.into());
        }
        run(args)["total"].as_u64().unwrap()
    };
    assert_eq!(recall(TOKEN), 0);
    // The same entries are found by their other words (assistant text and tool input).
    assert_eq!(recall("vault"), 13 * 2);

    let path = src.to_string_lossy().into_owned();
    let mut expand = common("expand");
    for a in ["--session", &path, "--range", "0:52"] {
        expand.push(a.into());
    }
    let hidden = run(expand.clone()).to_string();
    assert!(!hidden.contains(TOKEN));
    assert!(hidden.contains("[redacted:github_token]"));
    expand.push("--reveal".into());
    let shown = run(expand).to_string();
    assert!(shown.contains(TOKEN));
    assert!(!shown.contains("[redacted:"));
    let _ = std::fs::remove_dir_all(&dir);
}
