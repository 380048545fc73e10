//! Secrets at ingest (`redactSecrets`, docs/secrets.md): with the default policy a planted
//! credential is found by no recall mode, snippets show `[redacted:<kind>]`, no index file
//! (hot shard, cold digest, catalog) holds its bytes or its terms, and expand and walk show it
//! only with `reveal`. With the policy off everything is findable, which proves the checks can
//! see a secret when it is there; switching the policy rebuilds every session.

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;
use sessiondex::query::request::{ExpandRequest, RecallRequest};
use sessiondex::query::WalkRequest;
use sessiondex::source::Branches;
use sessiondex::{Config, Memory};
use sessiondex_core::catalog::Catalog;
use sessiondex_core::cold::ColdDigest;
use sessiondex_core::format::copy_aligned;
use sessiondex_core::hot::HotShard;
use sessiondex_core::tokenize::tokenize;

const FILE: &str = "secrets-pi.jsonl";

/// The planted credentials of `testdata/sessions/secrets-pi.jsonl`: the kind it is reported as
/// and its distinctive body (what must never be findable with the policy on), each a whole
/// term of the tokenizer so that literal and fuzzy recall can find it when it is indexed.
const PLANTED: [(&str, &str); 13] = [
    ("aws_access_key_id", "AKIAZQ3XAMPLE7KEYID9"),
    (
        "aws_secret_access_key",
        "Zq8sYnThEtIcSeCrEtKeY0123456789abcdEFGHi",
    ),
    ("github_token", "ghp_SyNtHeTiC0123456789abcdefABCDEFghijKL"),
    (
        "github_token",
        "github_pat_11SYNTHETIC0_abcdefghijKLMNOPQRSTuv0123456789",
    ),
    ("gitlab_token", "SyNtHeTiC0123456789xyz"),
    ("slack_token", "SyNtHeTiCtOkEn"),
    ("slack_webhook", "SyNtHeTiCwEbHoOk0123"),
    ("openai_key", "SyNtHeTiC0123456789openaiKEYabcdef"),
    ("anthropic_key", "SyNtHeTiC0123456789anthropicKEY_abc"),
    ("private_key", "MIIEsynthetic0123456789keybody"),
    ("bearer_token", "SyNtHeTiC0123456789bearerTOKEN"),
    ("jwt", "eyJzdWIiOiJzeW50aGV0aWMifQ"),
    ("url_password", "SyNtHeTiCpAsSw0rd"),
];

fn testdata() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/sessions")
}

/// The planted session alone in `dir/sessions`, and its path there.
fn source(dir: &Path) -> (PathBuf, PathBuf) {
    let root = dir.join("sessions");
    fs::create_dir_all(&root).unwrap();
    let file = root.join(FILE);
    fs::copy(testdata().join(FILE), &file).unwrap();
    (root, file)
}

fn open(dir: &Path, sources: &Path, redact: bool, hot_sessions: usize) -> Memory {
    let config = Config {
        redact_secrets: redact,
        hot_sessions,
        ..Config::default()
    };
    Memory::open(
        config,
        Some(vec![sources.to_path_buf()]),
        Some(dir.join("index")),
    )
    .unwrap()
}

fn recall(m: &Memory, query: &str, mode: &str) -> sessiondex::query::Page {
    let req = RecallRequest::from_json(&json!({
        "query": query, "queryMode": mode, "scope": "global", "pageSize": 100
    }))
    .unwrap();
    m.recall(&req).unwrap()
}

fn regex_escape(s: &str) -> String {
    s.chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$-".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// How many hits each recall mode gives for the body, whole and by its first 12 characters
/// (fuzzy and regex also see a part of a token).
fn finds(m: &Memory, body: &str) -> Vec<(String, u64)> {
    let part = &body[..12];
    vec![
        ("literal".into(), recall(m, body, "literal").total),
        ("phrase".into(), recall(m, body, "phrase").total),
        (
            "regex".into(),
            recall(m, &regex_escape(body), "regex").total,
        ),
        (
            "regex part".into(),
            recall(m, &regex_escape(part), "regex").total,
        ),
        ("fuzzy".into(), recall(m, body, "fuzzy").total),
    ]
}

/// Every file under the index directory, with its bytes.
fn index_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join("index")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let bytes = fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out
}

#[derive(Debug, Default, PartialEq)]
struct Kinds {
    hot: usize,
    cold: usize,
    catalog: usize,
}

/// Whether any index file holds the body's bytes or one of its terms (hot postings, the
/// catalog's vocabulary, which is where cold sessions' terms are kept), and how many files of
/// each kind there were.
fn in_index(dir: &Path, body: &str) -> (bool, Kinds) {
    let terms = tokenize(body);
    assert!(!terms.is_empty());
    let mut kinds = Kinds::default();
    let mut seen = false;
    for (path, bytes) in index_files(dir) {
        if bytes.windows(body.len()).any(|w| w == body.as_bytes()) {
            seen = true;
        }
        let aligned = copy_aligned(&bytes);
        if let Ok(h) = HotShard::open(&aligned[..]) {
            kinds.hot += 1;
            seen |= terms.iter().any(|t| h.doc_freq(t).unwrap() > 0);
        } else if ColdDigest::open(&aligned[..]).is_ok() {
            kinds.cold += 1;
        } else if let Ok(c) = Catalog::open(&aligned[..]) {
            kinds.catalog += 1;
            seen |= terms
                .iter()
                .any(|t| !c.sessions_with(t).unwrap().is_empty());
        } else {
            let _ = path;
        }
    }
    (seen, kinds)
}

#[test]
fn planted_secrets_are_found_by_no_recall_and_in_no_index_file() {
    for hot_sessions in [50, 0] {
        let tmp = tempfile::tempdir().unwrap();
        let (src, _) = source(tmp.path());
        let m = open(tmp.path(), &src, true, hot_sessions);
        let report = m.sync(Branches::Active, &mut |_, _| {}).unwrap();
        assert_eq!(report.indexed, 1);
        for (kind, body) in PLANTED {
            if hot_sessions > 0 {
                for (mode, n) in finds(&m, body) {
                    assert_eq!(n, 0, "{kind} `{body}` found by {mode}");
                }
            }
            let (seen, kinds) = in_index(tmp.path(), body);
            assert!(!seen, "{kind} `{body}` is in an index file");
            let want = if hot_sessions > 0 {
                Kinds {
                    hot: 1,
                    cold: 0,
                    catalog: 1,
                }
            } else {
                Kinds {
                    hot: 0,
                    cold: 1,
                    catalog: 1,
                }
            };
            assert_eq!(kinds, want);
        }
        // The title (a GitHub token) is redacted in the catalog's session list too.
        let rows = m.sessions(Branches::Active).unwrap();
        let title = rows.sessions[0].title.clone().unwrap();
        assert_eq!(title, "deploy with token [redacted:github_token]");
    }
}

#[test]
fn snippets_show_the_kind_of_what_was_redacted() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = source(tmp.path());
    let m = open(tmp.path(), &src, true, 50);
    let page = recall(&m, "redacted", "literal");
    let snippets: String = page
        .hits
        .iter()
        .filter_map(|h| h.snippet.as_ref().map(|s| s.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    for (kind, _) in PLANTED {
        assert!(
            snippets.contains(&format!("[redacted:{kind}]")),
            "no snippet shows {kind}: {snippets}"
        );
    }
    // 13 secrets in user text, assistant text, tool input and tool output, and the title
    // entry: every one of those entries is a hit.
    assert_eq!(page.total, 13 * 4 + 1);
}

#[test]
fn with_the_policy_off_the_same_checks_find_every_secret() {
    for hot_sessions in [50, 0] {
        let tmp = tempfile::tempdir().unwrap();
        let (src, _) = source(tmp.path());
        let m = open(tmp.path(), &src, false, hot_sessions);
        m.sync(Branches::Active, &mut |_, _| {}).unwrap();
        for (kind, body) in PLANTED {
            if hot_sessions > 0 {
                // Each is planted in four entries; in the tool input it is inside JSON, where
                // the private key's escaped newline (`\\n`) glues an `n` to its first term.
                for (mode, n) in finds(&m, body) {
                    assert!(n >= 3, "{kind} `{body}` found {n} times by {mode}");
                }
            }
            let (seen, _) = in_index(tmp.path(), body);
            assert!(
                seen,
                "{kind} `{body}` is in no index file with the policy off"
            );
        }
    }
}

#[test]
fn expand_and_walk_redact_unless_reveal() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, file) = source(tmp.path());
    let m = open(tmp.path(), &src, true, 50);
    m.sync(Branches::Active, &mut |_, _| {}).unwrap();
    let path = file.to_string_lossy().into_owned();
    let all_text = |reveal: bool| -> String {
        let req = ExpandRequest::from_json(&json!({
            "session": path, "range": [0, 52], "reveal": reveal, "maxChars": 20000
        }))
        .unwrap();
        let x = m.expand(&req).unwrap();
        assert_eq!(x.entries.len(), 53);
        assert!(x.next.is_none());
        x.entries
            .iter()
            .map(|e| e.record.text.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let hidden = all_text(false);
    let shown = all_text(true);
    for (kind, body) in PLANTED {
        assert!(!hidden.contains(body), "expand shows {kind}");
        assert!(hidden.contains(&format!("[redacted:{kind}]")));
        assert!(shown.contains(body), "expand with reveal hides {kind}");
    }
    assert!(!shown.contains("[redacted:"));

    let walked = |reveal: bool| -> String {
        let w = m
            .walk(&WalkRequest {
                session: path.clone(),
                reveal,
                ..WalkRequest::default()
            })
            .unwrap();
        w.map(|r| r.text).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(walked(false), hidden);
    assert_eq!(walked(true), shown);

    // A hit's follow call expands redacted; `reveal` carries into a continuation.
    let req = ExpandRequest::from_json(&json!({
        "session": path, "range": [0, 52], "reveal": true, "maxChars": 100
    }))
    .unwrap();
    let x = m.expand(&req).unwrap();
    let next = x.next.expect("a continuation");
    assert_eq!(next.args["reveal"], json!(true));
}

#[test]
fn switching_the_policy_rebuilds_every_session() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, _) = source(tmp.path());
    let fingerprint = |m: &Memory| {
        let (_, bytes) = index_files(tmp.path())
            .into_iter()
            .find(|(_, b)| HotShard::open(&copy_aligned(b)[..]).is_ok())
            .unwrap();
        let _ = m;
        HotShard::open(copy_aligned(&bytes))
            .unwrap()
            .policy_fingerprint()
            .to_owned()
    };
    let on = open(tmp.path(), &src, true, 50);
    assert_eq!(
        on.sync(Branches::Active, &mut |_, _| {}).unwrap().indexed,
        1
    );
    assert_eq!(on.sync(Branches::Active, &mut |_, _| {}).unwrap().reused, 1);
    let fp_on = fingerprint(&on);
    let off = open(tmp.path(), &src, false, 50);
    let r = off.sync(Branches::Active, &mut |_, _| {}).unwrap();
    assert_eq!((r.indexed, r.reused), (1, 0));
    let fp_off = fingerprint(&off);
    assert_ne!(fp_on, fp_off);
    assert!(recall(&off, PLANTED[0].1, "literal").total >= 4);
    let r = on.sync(Branches::Active, &mut |_, _| {}).unwrap();
    assert_eq!((r.indexed, r.reused), (1, 0));
    assert_eq!(recall(&on, PLANTED[0].1, "literal").total, 0);
}

#[test]
fn appended_lines_are_redacted_too() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, file) = source(tmp.path());
    let m = open(tmp.path(), &src, true, 50);
    m.sync(Branches::Active, &mut |_, _| {}).unwrap();
    let line = json!({"type": "message", "id": "late", "parentId": "r12",
        "timestamp": "2026-02-01T11:00:00Z",
        "message": {"role": "user", "content": "one more: glpat-LaTeAppEnDeD0123456789abc"}});
    let mut bytes = fs::read(&file).unwrap();
    bytes.extend_from_slice(format!("{line}\n").as_bytes());
    fs::write(&file, bytes).unwrap();
    let r = m.sync(Branches::Active, &mut |_, _| {}).unwrap();
    assert_eq!(r.appended, 1, "{r:?}");
    assert_eq!(
        recall(&m, "glpat-LaTeAppEnDeD0123456789abc", "phrase").total,
        0
    );
    let (seen, _) = in_index(tmp.path(), "LaTeAppEnDeD0123456789abc");
    assert!(!seen);
    let page = recall(&m, "one more", "phrase");
    assert_eq!(page.total, 1);
    let snippet = page.hits[0].snippet.as_ref().unwrap().text.clone();
    assert_eq!(snippet, "one more: [redacted:gitlab_token]");
}

#[test]
fn the_in_memory_index_redacts_by_its_config() {
    use sessiondex::query::engine::recall as run;
    use sessiondex::query::memory::{MemoryConfig, MemoryIndex};
    use sessiondex::QueryContext;

    let bytes = fs::read(testdata().join(FILE)).unwrap();
    for redact in [true, false] {
        let mut mi = MemoryIndex::new(MemoryConfig {
            redact_secrets: redact,
            ..MemoryConfig::default()
        });
        mi.add_file(FILE, &bytes).unwrap();
        let opts = mi.engine_options();
        let index = mi.index(Branches::Active).unwrap();
        for (kind, body) in PLANTED {
            let req = RecallRequest::from_json(
                &json!({"query": body, "queryMode": "phrase", "scope": "global"}),
            )
            .unwrap();
            let n = run(index, &opts, &QueryContext::default(), &req)
                .unwrap()
                .total;
            if redact {
                assert_eq!(n, 0, "{kind}");
            } else {
                assert!(n >= 4, "{kind}: {n}");
            }
        }
    }
}
