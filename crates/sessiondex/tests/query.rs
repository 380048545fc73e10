//! The query engine end to end: the data-driven cases of `testdata/queries/*.toml`, the real
//! fixtures, and the error codes that need a damaged index.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::Deserialize;
use serde_json::{json, Value};
use sessiondex::query::request::{Call, HitKind, Page};
use sessiondex::query::SessionsRequest;
use sessiondex::source::{self, Branches, Outcome, ReadOptions};
use sessiondex::{CallResult, Config, ExpandRequest, Memory, QueryContext, RecallRequest};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    corpus: String,
    #[serde(default)]
    config: toml::Table,
    cwd: Option<String>,
    session: Option<String>,
    #[serde(rename = "case")]
    cases: Vec<Case>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    /// `recall` (default), `expand`, `call`, `sessions` or `trace`.
    #[serde(default)]
    op: Option<String>,
    /// The request as JSON; `{dir}` is the corpus directory.
    request: String,
    /// Expected hits in order: `file#index` for entries, `file` for session hits (file is the
    /// base name); for `expand`, the entry ids; for `sessions`, the session files.
    hits: Option<Vec<String>>,
    /// The expected hits in any order.
    hits_unordered: Option<Vec<String>>,
    total: Option<u64>,
    complete: Option<bool>,
    reasons: Option<Vec<String>>,
    error: Option<String>,
    /// Page through `next` to the end and expect these hits in order, each once.
    paginate: Option<Vec<String>>,
    /// Follow the first hit and expect these hits (or entry ids for an expansion).
    follow_first: Option<Vec<String>>,
    /// Append a line to this corpus file, then follow the first hit: `stale_pointer`.
    append_then_follow: Option<String>,
    /// For `expand`: follow `next` to the end and expect the texts joined whole.
    whole_text: Option<bool>,
    /// Each hit's `matchedIn` groups, in hit order (an empty list: the field is absent).
    matched_in: Option<Vec<Vec<String>>>,
    /// The hits' kinds (`entry` or `session`), in order.
    kinds: Option<Vec<String>>,
}

fn copy_corpus(from: &Path, to: &Path) {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![from.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    for (i, src) in files.iter().enumerate() {
        let dst = to.join(src.strip_prefix(from).unwrap());
        fs::create_dir_all(dst.parent().unwrap()).unwrap();
        fs::copy(src, &dst).unwrap();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i as u64 * 60);
        let f = fs::OpenOptions::new().write(true).open(&dst).unwrap();
        f.set_times(fs::FileTimes::new().set_modified(t)).unwrap();
    }
}

fn base(file: &str) -> String {
    Path::new(file)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

fn hit_names(p: &Page) -> Vec<String> {
    p.hits
        .iter()
        .map(|h| match h.kind {
            HitKind::Entry => format!("{}#{}", base(&h.file), h.index.unwrap()),
            HitKind::Session => base(&h.file),
        })
        .collect()
}

fn names(r: &CallResult) -> Vec<String> {
    match r {
        CallResult::Recall(p) => hit_names(p),
        CallResult::Expand(x) => x
            .entries
            .iter()
            .map(|e| e.record.entry_id.clone())
            .collect(),
    }
}

struct Ctx {
    memory: Memory,
    ctx: QueryContext,
    dir: PathBuf,
}

impl Ctx {
    fn run(&self, op: &str, req: &Value) -> Result<CallResult, sessiondex::Error> {
        match op {
            "recall" => {
                let r = RecallRequest::from_json(req)?;
                self.memory.recall_in(&r, &self.ctx).map(CallResult::Recall)
            }
            "expand" => {
                let r = ExpandRequest::from_json(req)?;
                self.memory.expand(&r).map(CallResult::Expand)
            }
            "call" => {
                let c = Call::from_json(req)?;
                self.memory.call_in(&c, &self.ctx)
            }
            other => panic!("unknown op {other}"),
        }
    }
}

fn check_case(c: &Ctx, case: &Case) {
    let name = &case.name;
    let text = case.request.replace("{dir}", &c.dir.to_string_lossy());
    let req: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    let op = case.op.as_deref().unwrap_or("recall");
    if op == "sessions" || op == "trace" {
        let got: Vec<String> = if op == "sessions" {
            let r: SessionsRequest = serde_json::from_value(req).unwrap();
            let page = c.memory.sessions_filtered(&r, Branches::Active).unwrap();
            page.sessions.iter().map(|s| base(&s.file)).collect()
        } else {
            let t = c
                .memory
                .trace(req["session"].as_str().unwrap(), Branches::Active)
                .unwrap();
            let mut v = vec![format!("session {}", base(&t.session.file))];
            v.extend(
                t.ancestors
                    .iter()
                    .map(|a| format!("ancestor {}", base(&a.session.file))),
            );
            v.extend(t.root.iter().map(|r| format!("root {}", base(&r.file))));
            v.extend(
                t.unresolved_parent
                    .iter()
                    .map(|l| format!("unresolved {}", l.target)),
            );
            v.extend(
                t.descendants
                    .iter()
                    .map(|d| format!("descendant {}", base(&d.session.file))),
            );
            v
        };
        assert_eq!(Some(&got), case.hits.as_ref(), "{name}");
        return;
    }
    let result = c.run(op, &req);
    if let Some(code) = &case.error {
        let e = result
            .err()
            .unwrap_or_else(|| panic!("{name}: expected {code}"));
        assert_eq!(e.code_str(), code, "{name}: {}", e.message);
        if code == "ambiguous_session" {
            assert_eq!(
                e.details.as_ref().unwrap()["candidates"]
                    .as_array()
                    .unwrap()
                    .len(),
                2,
                "{name}"
            );
        }
        return;
    }
    let result = result.unwrap_or_else(|e| panic!("{name}: {} {}", e.code_str(), e.message));
    let json = serde_json::to_string(&result).unwrap();
    if let Some(h) = &case.hits {
        assert_eq!(&names(&result), h, "{name}");
    }
    if let Some(h) = &case.hits_unordered {
        let got: BTreeSet<String> = names(&result).into_iter().collect();
        let want: BTreeSet<String> = h.iter().cloned().collect();
        assert_eq!(got, want, "{name}");
    }
    let coverage = match &result {
        CallResult::Recall(p) => {
            assert!(json.len() < 30_000, "{name}: page of {} chars", json.len());
            if let Some(t) = case.total {
                assert_eq!(p.total, t, "{name}");
            }
            p.coverage.clone()
        }
        CallResult::Expand(x) => x.coverage.clone(),
    };
    if let Some(want) = case.complete {
        assert_eq!(coverage.complete, want, "{name}: {coverage:?}");
    }
    if let (Some(want), CallResult::Recall(p)) = (&case.matched_in, &result) {
        let got: Vec<Vec<String>> = p
            .hits
            .iter()
            .map(|h| h.matched_in.iter().map(|g| g.as_str().to_owned()).collect())
            .collect();
        assert_eq!(&got, want, "{name}");
    }
    if let (Some(want), CallResult::Recall(p)) = (&case.kinds, &result) {
        let got: Vec<&str> = p
            .hits
            .iter()
            .map(|h| match h.kind {
                HitKind::Entry => "entry",
                HitKind::Session => "session",
            })
            .collect();
        assert_eq!(&got, want, "{name}");
    }
    if let Some(want) = &case.reasons {
        assert_eq!(&coverage.reasons, want, "{name}");
    }
    if let Some(want) = &case.paginate {
        let CallResult::Recall(mut page) = result.clone() else {
            panic!("{name}: not a page")
        };
        let mut all = hit_names(&page);
        let mut guard = 0;
        while let Some(next) = page.next.clone() {
            guard += 1;
            assert!(guard < 1000, "{name}: endless pages");
            let CallResult::Recall(p) = c.memory.call_in(&next, &c.ctx).unwrap() else {
                panic!("{name}")
            };
            assert!(!p.hits.is_empty(), "{name}: empty page with a next");
            all.extend(hit_names(&p));
            page = p;
        }
        let unique: BTreeSet<&String> = all.iter().collect();
        assert_eq!(unique.len(), all.len(), "{name}: duplicates in {all:?}");
        assert_eq!(&all, want, "{name}");
    }
    if let Some(want) = &case.follow_first {
        let CallResult::Recall(p) = &result else {
            panic!("{name}")
        };
        let followed = c.memory.call_in(&p.hits[0].follow, &c.ctx).unwrap();
        assert_eq!(&names(&followed), want, "{name}");
    }
    if let Some(file) = &case.append_then_follow {
        let CallResult::Recall(p) = &result else {
            panic!("{name}")
        };
        let path = c.dir.join(file);
        let mut bytes = fs::read(&path).unwrap();
        bytes.extend_from_slice(
            br#"{"type":"message","id":"late","parentId":null,"timestamp":"2026-02-01T00:00:00.000Z","message":{"role":"user","content":"appended"}}
"#,
        );
        fs::write(&path, bytes).unwrap();
        let e = c.memory.call_in(&p.hits[0].follow, &c.ctx).unwrap_err();
        assert_eq!(e.code_str(), "stale_pointer", "{name}");
        if let Some(next) = &p.next {
            if matches!(
                req["scope"].as_str(),
                Some(s) if s.starts_with("session")
            ) {
                let e = c.memory.call_in(next, &c.ctx).unwrap_err();
                assert_eq!(e.code_str(), "stale_pointer", "{name}: next");
            }
        }
    }
    if case.whole_text == Some(true) {
        let CallResult::Expand(mut x) = result.clone() else {
            panic!("{name}")
        };
        let r = ExpandRequest::from_json(&req).unwrap();
        let mut texts: Vec<(usize, String)> = Vec::new();
        loop {
            for e in &x.entries {
                match texts.last_mut() {
                    Some((i, t)) if *i == e.record.index && e.text_range.start > 0 => {
                        assert_eq!(t.chars().count() as u64, e.text_range.start, "{name}");
                        t.push_str(&e.record.text);
                    }
                    _ => texts.push((e.record.index, e.record.text.clone())),
                }
            }
            let Some(next) = x.next.clone() else { break };
            let CallResult::Expand(n) = c.memory.call(&next).unwrap() else {
                panic!("{name}")
            };
            x = n;
        }
        let full = Memory::expand(
            &c.memory,
            &ExpandRequest {
                max_chars: None,
                ..r
            },
        )
        .unwrap();
        let want: Vec<(usize, String)> = full
            .entries
            .iter()
            .map(|e| (e.record.index, e.record.text.clone()))
            .collect();
        assert_eq!(texts, want, "{name}");
    }
}

#[test]
fn data_driven_cases() {
    let dir = repo().join("testdata/queries");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    let mut n = 0;
    let mut failed = Vec::new();
    for f in files {
        let cf: CaseFile = toml::from_str(&fs::read_to_string(&f).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let tmp = tempfile::tempdir().unwrap();
        let corpus = tmp.path().join("corpus");
        copy_corpus(&dir.join(&cf.corpus), &corpus);
        let config: Config = serde_json::from_value(serde_json::to_value(&cf.config).unwrap())
            .unwrap_or_else(|e| panic!("{}: config {e}", f.display()));
        let memory = Memory::open(
            config,
            Some(vec![corpus.clone()]),
            Some(tmp.path().join("index")),
        )
        .unwrap();
        let ctx = Ctx {
            memory,
            ctx: QueryContext {
                cwd: cf.cwd.clone(),
                session: cf.session.clone(),
            },
            dir: corpus,
        };
        for case in &cf.cases {
            let ok =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_case(&ctx, case)));
            if ok.is_err() {
                failed.push(format!("{}: {}", f.display(), case.name));
            }
            n += 1;
        }
    }
    println!("{n} query cases");
    assert!(failed.is_empty(), "{} failed: {failed:#?}", failed.len());
}

fn fixtures() -> Option<PathBuf> {
    // As a memory names its files: absolute, `..` resolved.
    let p = sessiondex::absolute_path(&repo().join("../shared/fixtures/sessions")).unwrap();
    if p.is_dir() {
        Some(p)
    } else {
        println!("skipped: {} is absent", p.display());
        None
    }
}

fn fixture_memory(hot: usize, index: &Path) -> Option<Memory> {
    let src = fixtures()?;
    let config = Config {
        hot_sessions: hot,
        ..Config::default()
    };
    Some(Memory::open(config, Some(vec![src]), Some(index.to_path_buf())).unwrap())
}

fn global(query: Option<&str>) -> RecallRequest {
    RecallRequest {
        query: query.map(str::to_owned),
        scope: Some(sessiondex::query::Scope::Global),
        page_size: Some(100),
        ..RecallRequest::default()
    }
}

/// A word that occurs in exactly one entry of the fixtures, and where.
fn rare_word() -> Option<(String, String, usize)> {
    let src = fixtures()?;
    let policy = sessiondex::engine_options(&Config::default()).policy;
    let mut seen: std::collections::HashMap<String, Vec<(String, usize)>> = Default::default();
    for path in source::discover(&src) {
        let Ok(s) = source::read_path(&path, &ReadOptions::default()) else {
            continue;
        };
        let sel = s.select(Branches::Active);
        for r in &sel.records {
            let Some(text) = policy.text(r) else { continue };
            // Only words inside the hot text bound count as findable in a hot shard.
            let (bounded, _) = sessiondex_core::bound_chars(text, 2000);
            let inside: BTreeSet<String> = sessiondex::tokenize(bounded).into_iter().collect();
            let toks: BTreeSet<String> = sessiondex::tokenize(text).into_iter().collect();
            for t in toks {
                let ok = inside.contains(&t);
                seen.entry(t).or_default().push((
                    path.to_string_lossy().into_owned(),
                    if ok { r.index } else { usize::MAX },
                ));
            }
        }
    }
    seen.into_iter()
        .filter(|(t, v)| {
            v.len() == 1
                && v[0].1 != usize::MAX
                && t.len() >= 8
                && t.chars().all(|c| c.is_ascii_lowercase())
        })
        .min_by(|a, b| a.0.cmp(&b.0))
        .map(|(t, v)| (t, v[0].0.clone(), v[0].1))
}

#[test]
fn fixtures_rare_word_hot_and_cold() {
    let Some((word, file, index)) = rare_word() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let ctx = QueryContext::default();
    // Hot: the entry itself.
    let m = fixture_memory(10_000, &tmp.path().join("hot")).unwrap();
    let page = m.recall_in(&global(Some(&word)), &ctx).unwrap();
    assert_eq!(page.total, 1, "{word}: {:?}", hit_names(&page));
    assert_eq!(page.hits[0].kind, HitKind::Entry);
    assert_eq!(page.hits[0].file, file);
    assert_eq!(page.hits[0].index, Some(index as u64));
    // Cold: the session, whose follow call yields the entry.
    let m = fixture_memory(0, &tmp.path().join("cold")).unwrap();
    let page = m.recall_in(&global(Some(&word)), &ctx).unwrap();
    assert_eq!(page.total, 1, "{word}");
    assert_eq!(page.hits[0].kind, HitKind::Session);
    assert_eq!(page.hits[0].file, file);
    let CallResult::Recall(followed) = m.call_in(&page.hits[0].follow, &ctx).unwrap() else {
        panic!("a session hit follows with recall")
    };
    assert_eq!(followed.total, 1);
    assert_eq!(followed.hits[0].index, Some(index as u64));
    let CallResult::Expand(x) = m.call_in(&followed.hits[0].follow, &ctx).unwrap() else {
        panic!("an entry hit follows with expand")
    };
    assert!(x.entries[0].record.text.to_lowercase().contains(&word));
}

#[test]
fn fixtures_failed_calls_page_exactly() {
    let Some(src) = fixtures() else { return };
    let mut want = BTreeSet::new();
    for path in source::discover(&src) {
        let Ok(s) = source::read_path(&path, &ReadOptions::default()) else {
            continue;
        };
        let records = s.select(Branches::Active).records;
        // One per failed call: a result defers to a call in the session with its call id and
        // its outcome (a result whose id only calls with another outcome carry is listed).
        let calls: BTreeSet<(&str, Option<&str>)> = records
            .iter()
            .filter(|r| r.kind == "tool_call")
            .filter_map(|r| Some((r.call_id.as_deref()?, r.outcome.map(Outcome::as_str))))
            .collect();
        for r in &records {
            let paired_result = r.kind != "tool_call"
                && r.call_id
                    .as_deref()
                    .is_some_and(|c| calls.contains(&(c, r.outcome.map(Outcome::as_str))));
            if r.outcome == Some(Outcome::Failed) && !paired_result {
                want.insert((path.to_string_lossy().into_owned(), r.index as u64));
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    let m = fixture_memory(10_000, &tmp.path().join("i")).unwrap();
    let ctx = QueryContext::default();
    let mut req = global(None);
    req.outcome = Some(Outcome::Failed);
    req.page_size = Some(7);
    let mut page = m.recall_in(&req, &ctx).unwrap();
    assert_eq!(page.total, want.len() as u64);
    let mut got = Vec::new();
    loop {
        for h in &page.hits {
            assert_eq!(h.outcome, Some(Outcome::Failed));
            got.push((h.file.clone(), h.index.unwrap()));
        }
        let Some(next) = page.next.clone() else { break };
        let CallResult::Recall(p) = m.call_in(&next, &ctx).unwrap() else {
            panic!()
        };
        page = p;
    }
    let set: BTreeSet<_> = got.iter().cloned().collect();
    assert_eq!(set.len(), got.len(), "no duplicates");
    assert_eq!(set, want);
    println!("{} failed tool call records", want.len());
}

#[test]
fn fixtures_pathological_regex_refused_fast() {
    let Some(_) = fixtures() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let m = fixture_memory(50, &tmp.path().join("i")).unwrap();
    let mut req = global(Some("(a|b)*a(a|b){20}"));
    req.query_mode = Some(sessiondex::query::QueryMode::Regex);
    // The index is built first so that the timing is the regex alone.
    m.sync(Branches::Active, &mut |_, _| {}).unwrap();
    let t = std::time::Instant::now();
    let e = m.recall_in(&req, &QueryContext::default()).unwrap_err();
    let took = t.elapsed();
    assert_eq!(e.code_str(), "regex_too_large");
    assert!(took < Duration::from_secs(2), "{took:?}");
    println!("refused in {took:?}");
}

#[test]
fn damaged_or_unusable_index_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    copy_corpus(&repo().join("testdata/queries/corpus"), &corpus);
    // index_unavailable: the index directory is a file.
    let file = tmp.path().join("plain");
    fs::write(&file, b"x").unwrap();
    let e = Memory::open(Config::default(), Some(vec![corpus.clone()]), Some(file)).unwrap_err();
    assert_eq!(e.code_str(), "index_unavailable");
    // index_corrupt: a hot shard damaged after the sync that wrote it.
    let index = tmp.path().join("index");
    let m = Memory::open(
        Config::default(),
        Some(vec![corpus.clone()]),
        Some(index.clone()),
    )
    .unwrap();
    m.sync(Branches::Active, &mut |_, _| {}).unwrap();
    let hot: Vec<PathBuf> = walk_files(&index)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "hot"))
        .collect();
    assert!(!hot.is_empty());
    for h in &hot {
        let mut b = fs::read(h).unwrap();
        let mid = b.len() / 2;
        b[mid] ^= 0xff;
        fs::write(h, b).unwrap();
    }
    let req = global(Some("timeout"));
    let synced = sessiondex::IndexCoverage::default();
    let e = m
        .recall_indexed(&req, &QueryContext::default(), &synced)
        .unwrap_err();
    assert_eq!(e.code_str(), "index_corrupt");
    // A recall that syncs first rebuilds the damaged shards and answers.
    assert!(m.recall_in(&req, &QueryContext::default()).is_ok());
    // unknown_format: a file that is no session, named by path.
    let e = m
        .expand(
            &ExpandRequest::from_json(
                &json!({"session": corpus.join("gamma/notes.jsonl"), "indices": [0]}),
            )
            .unwrap(),
        )
        .unwrap_err();
    assert_eq!(e.code_str(), "unknown_format");
}

fn walk_files(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![d.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
