//! Live appends: one thread appends lines to a session in pieces (half lines included) while
//! others recall and expand. Results only grow, `partial_tail` shows while a line is half
//! written, a follow call taken before an append answers `stale_pointer`, and no answer ever
//! carries wrong content.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use sessiondex::query::request::Page;
use sessiondex::{
    CallResult, Config, ErrorCode, ExpandRequest, Memory, QueryContext, RecallRequest,
};

use super::corruption::Rng;
use super::{corpus, find, memory, sync};

/// Lines appended.
const LINES: usize = 12;
const SESSION: &str = "3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d";

fn uuid(i: usize) -> String {
    format!("c0000001-0000-4000-8000-{:012}", 100 + i)
}

fn text(i: usize) -> String {
    format!("quokka note number{i} about the deploy")
}

fn line(i: usize) -> String {
    let parent = if i == 0 {
        "c0000001-0000-4000-8000-000000000008".to_owned()
    } else {
        uuid(i - 1)
    };
    let v = json!({
        "type": "user",
        "uuid": uuid(i),
        "parentUuid": parent,
        "isSidechain": false,
        "sessionId": SESSION,
        "timestamp": format!("2026-11-03T15:{:02}:00.000Z", i),
        "message": {"role": "user", "content": text(i)},
    });
    format!("{v}\n")
}

fn recall(m: &Memory) -> Page {
    let req =
        RecallRequest::from_json(&json!({"query": "quokka", "scope": "global", "pageSize": 100}))
            .unwrap();
    m.recall_in(&req, &QueryContext::default()).unwrap()
}

/// Every hit is one of the appended lines, at most `lines` of them.
fn check_hits(page: &Page, expected: &HashMap<String, String>) -> usize {
    for h in &page.hits {
        let id = h.entry_id.as_deref().unwrap();
        assert!(
            expected.contains_key(id),
            "a hit that was never written: {h:?}"
        );
    }
    page.hits.len()
}

#[test]
fn appends_in_pieces_while_others_recall_and_expand() {
    let tmp = tempfile::tempdir().unwrap();
    let (src, files) = corpus(tmp.path());
    let claude = find(&files, "claude-code/");
    let m = memory(tmp.path(), &src, Config::default());
    sync(&m);
    let expected: HashMap<String, String> = (0..LINES).map(|i| (uuid(i), text(i))).collect();
    let expected = Arc::new(expected);
    let done = Arc::new(AtomicBool::new(false));

    // Readers: recall and expand in a loop; counts never shrink, content is never wrong.
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (m, expected, done) = (m.clone(), expected.clone(), done.clone());
            let claude = claude.clone();
            std::thread::spawn(move || {
                let (mut last, mut rounds) = (0, 0);
                while !done.load(Ordering::SeqCst) || rounds == 0 {
                    rounds += 1;
                    let page = recall(&m);
                    let n = check_hits(&page, &expected);
                    assert!(n >= last, "reader {r}: {n} hits after {last}");
                    last = n;
                    let ids: Vec<String> = page
                        .hits
                        .iter()
                        .filter_map(|h| h.entry_id.clone())
                        .collect();
                    if ids.is_empty() {
                        continue;
                    }
                    let req =
                        ExpandRequest::from_json(&json!({"session": claude, "entryIds": ids}))
                            .unwrap();
                    let x = m.expand(&req).unwrap();
                    assert_eq!(x.entries.len(), ids.len(), "reader {r}");
                    for e in &x.entries {
                        let want = &expected[e.record.entry_id.as_str()];
                        assert_eq!(&e.record.text, want, "reader {r}: wrong content");
                    }
                }
                rounds
            })
        })
        .collect();

    // The writer: each line in two pieces, checking between them.
    let mut rng = Rng(0x0011_fea9_9e0d_5e55);
    let mut f = fs::OpenOptions::new().append(true).open(&claude).unwrap();
    let mut partial_seen = 0;
    for i in 0..LINES {
        let before = recall(&m);
        assert_eq!(check_hits(&before, &expected), i);
        let l = line(i);
        let cut = 1 + rng.below(l.len() - 2);
        f.write_all(&l.as_bytes()[..cut]).unwrap();
        f.flush().unwrap();
        let half = recall(&m);
        assert_eq!(check_hits(&half, &expected), i, "a half line is no hit");
        if half.coverage.reasons.iter().any(|r| r == "partial_tail") {
            partial_seen += 1;
        }
        assert!(!half.coverage.complete, "{:?}", half.coverage);
        std::thread::sleep(Duration::from_millis(5));
        f.write_all(&l.as_bytes()[cut..]).unwrap();
        f.flush().unwrap();
        let after = recall(&m);
        assert_eq!(check_hits(&after, &expected), i + 1);
        assert!(
            !after.coverage.reasons.iter().any(|r| r == "partial_tail"),
            "{:?}",
            after.coverage
        );
        // A follow call taken before the append points at the old source.
        if let Some(h) = before.hits.first() {
            match m.call(&h.follow) {
                Err(e) => assert_eq!(e.code, ErrorCode::StalePointer, "{e:?}"),
                Ok(CallResult::Expand(x)) => panic!("a stale follow answered: {x:?}"),
                Ok(other) => panic!("a stale follow answered: {other:?}"),
            }
        }
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(
        partial_seen, LINES,
        "partial_tail while a line was half written"
    );
}
