//! No false negatives from `maxEntryChars`, snippets centred on the match (issue 10, point 5):
//! a 2 MB tool output whose one unique term sits near its end is found by literal recall, its
//! snippet is read from the source past the stored cut and shows the term highlighted, and
//! once the source is rewritten under the index the hit says the snippet is unavailable.

use std::fs;
use std::path::{Path, PathBuf};

use sessiondex::query::request::{reason, Hit, HitKind, Page};
use sessiondex::query::{QueryMode, Scope};
use sessiondex::{Config, IndexCoverage, QueryContext, RecallRequest};

use super::{memory, sync};

const TERM: &str = "zebracorn7";

/// A pi session whose tool result is `size` bytes of filler with `term` near the end.
fn session(term: &str, size: usize) -> String {
    let filler = "lorem ipsum dolor sit amet ".repeat(size / 27);
    let output = format!("{filler}the answer is {term} here. tail words follow");
    let result = serde_json::json!({
        "type": "message", "id": "t1", "parentId": "a1",
        "timestamp": "2026-01-01T00:00:03.000Z",
        "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "bash",
                    "isError": false, "content": [{"type": "text", "text": output}]}
    });
    format!(
        "{}\n{}\n{}\n{}\n",
        r#"{"type":"session","version":3,"id":"big","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
        r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"run the build"}}"#,
        r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"make"}}]}}"#,
        result
    )
}

fn setup(dir: &Path) -> (PathBuf, sessiondex::Memory) {
    let src = dir.join("sessions");
    fs::create_dir_all(&src).unwrap();
    let file = src.join("big.jsonl");
    fs::write(&file, session(TERM, 2 << 20)).unwrap();
    let m = memory(dir, &src, Config::default());
    sync(&m);
    (file, m)
}

fn recall(m: &sessiondex::Memory, query: &str, mode: Option<QueryMode>) -> Page {
    let req = RecallRequest {
        query: Some(query.into()),
        query_mode: mode,
        scope: Some(Scope::Global),
        ..RecallRequest::default()
    };
    m.recall_indexed(&req, &QueryContext::default(), &IndexCoverage::default())
        .unwrap()
}

fn only_entry(page: &Page) -> &Hit {
    assert_eq!(page.total, 1, "{page:?}");
    let h = &page.hits[0];
    assert_eq!(h.kind, HitKind::Entry);
    assert_eq!(h.entry_id.as_deref(), Some("t1"));
    h
}

#[test]
fn a_term_past_the_cut_is_found_and_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, m) = setup(tmp.path());
    let page = recall(&m, TERM, None);
    let h = only_entry(&page);
    // Every token is posted: the cut does not make a literal answer incomplete.
    assert!(!page.coverage.reasons.iter().any(|r| r == "max_entry_chars"));
    assert_eq!(h.snippet_unavailable, None);
    let s = h.snippet.as_ref().unwrap();
    assert!(s.truncated);
    assert!(s.text.chars().count() <= 240);
    assert!(
        s.text.contains(&format!("the answer is {TERM} here.")),
        "{s:?}"
    );
    let marked: Vec<&str> = s.highlights.iter().map(|[a, b]| &s.text[*a..*b]).collect();
    assert_eq!(marked, [TERM]);

    // Two terms: the window is where they are, not the start of the output.
    let page = recall(&m, &format!("answer {TERM}"), None);
    let s = only_entry(&page).snippet.as_ref().unwrap();
    let marked: Vec<&str> = s.highlights.iter().map(|[a, b]| &s.text[*a..*b]).collect();
    assert_eq!(marked, ["answer", TERM]);
}

#[test]
fn a_rewritten_source_makes_the_snippet_unavailable_never_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let (file, m) = setup(tmp.path());
    // Same entry, another term, after the index was built (no sync in between).
    fs::write(&file, session("quokka42xy", 2 << 20)).unwrap();
    let page = recall(&m, TERM, None);
    let h = only_entry(&page);
    assert_eq!(h.snippet, None);
    assert_eq!(h.snippet_unavailable.as_deref(), Some("stale_pointer"));
    // A source that is gone: the same.
    fs::remove_file(&file).unwrap();
    let h = recall(&m, TERM, None).hits[0].clone();
    assert_eq!(h.snippet_unavailable.as_deref(), Some("stale_pointer"));
    assert_eq!(
        serde_json::to_value(&h).unwrap()["snippetUnavailable"],
        "stale_pointer"
    );
}

#[test]
fn phrase_and_regex_past_the_cut_say_max_entry_chars() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, m) = setup(tmp.path());
    for mode in [QueryMode::Phrase, QueryMode::Regex] {
        let q = match mode {
            QueryMode::Phrase => format!("answer is {TERM}"),
            _ => "zebra[a-z]+7".to_owned(),
        };
        let page = recall(&m, &q, Some(mode));
        assert_eq!(page.total, 0, "{mode:?}");
        assert!(!page.coverage.complete);
        assert!(
            page.coverage
                .reasons
                .iter()
                .any(|r| r == reason::MAX_ENTRY_CHARS),
            "{mode:?} {:?}",
            page.coverage.reasons
        );
    }
    // A phrase inside the stored part matches as before and says nothing about the cut.
    let page = recall(&m, "run the build", Some(QueryMode::Phrase));
    assert_eq!(page.total, 1);
}

#[test]
fn an_appended_session_keeps_every_token_of_old_cut_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let (file, m) = setup(tmp.path());
    let mut text = fs::read_to_string(&file).unwrap();
    text.push_str(r#"{"type":"message","id":"u2","parentId":"t1","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"thanks"}}"#);
    text.push('\n');
    fs::write(&file, text).unwrap();
    let report = sync(&m);
    assert_eq!(report.appended, 1);
    let page = recall(&m, TERM, None);
    let s = only_entry(&page).snippet.as_ref().unwrap();
    assert!(s.text.contains(TERM));
}

/// A made-up GitHub token, planted past the cut next to [`TERM`].
const SECRET: &str = "ghp_SyNtHeTiC0123456789abcdefABCDEFghijKL";

/// The snippet of the one hit for [`TERM`] in a 20,000-byte tool output whose end holds
/// [`SECRET`] beside the term, indexed with `redactSecrets` set to `redact`.
fn snippet_past_the_cut(redact: bool) -> Hit {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("sessions");
    fs::create_dir_all(&src).unwrap();
    let term = format!("{TERM} with token {SECRET}");
    fs::write(src.join("big.jsonl"), session(&term, 20_000)).unwrap();
    let config = Config {
        redact_secrets: redact,
        ..Config::default()
    };
    let m = memory(tmp.path(), &src, config);
    sync(&m);
    only_entry(&recall(&m, TERM, None)).clone()
}

#[test]
fn the_re_read_past_the_cut_redacts_as_the_index_does() {
    // Default policy: the re-read text is redacted like the stored text, so the checks pass
    // and the snippet shows the kind, never the token.
    let h = snippet_past_the_cut(true);
    assert_eq!(h.snippet_unavailable, None);
    let s = h.snippet.as_ref().unwrap();
    assert!(
        s.text
            .contains(&format!("{TERM} with token [redacted:github_token] here.")),
        "{s:?}"
    );
    assert!(!s.text.contains(SECRET), "{s:?}");
    assert!(!s.text.contains("SyNtHeTiC"), "{s:?}");

    // Policy off: the re-read text is the source's, as the index holds it, so the snippet is
    // available and shows the token.
    let h = snippet_past_the_cut(false);
    assert_eq!(h.snippet_unavailable, None);
    let s = h.snippet.as_ref().unwrap();
    assert!(
        s.text
            .contains(&format!("{TERM} with token {SECRET} here.")),
        "{s:?}"
    );
    assert!(!s.text.contains("[redacted:"), "{s:?}");
}
