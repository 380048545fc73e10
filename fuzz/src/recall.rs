//! Recall run end to end over a fixed in-memory index, with requests built from fuzz input.
//!
//! Two indexes of the same session logs: every session hot, and only the two newest hot (the
//! rest cold digests, as a default sync leaves most sessions). Each request runs on both and
//! must return a page or a structured error, never panic; an answered page must keep what the
//! product promises of it, and its calls must run as handed out:
//!
//! - at most `pageSize` hits (10 when absent), no more than `total`, and the page's JSON under
//!   `MAX_PAGE_CHARS` characters unless it holds a single hit;
//! - the cold session hits of a literal query name only the query's own terms as matched,
//!   and under `queryMatch: all` every one of them;
//! - an entry hit's `follow` (an `expand`) returns that entry, and a session hit's `follow`
//!   (a `recall` of that session) answers; the page's `next` answers too;
//! - unless the engine's coverage reasons say a page is not authoritative (a budget hit, or
//!   what a cold vocabulary cannot decide), a request finds the same sessions on both
//!   indexes over all its pages: a cold session's vocabulary and structural tuples answer exactly
//!   what its entries would, or coverage says they could not;
//! - and on each index, unless coverage says so too, every hit a request finds on the active
//!   branch (without an entry range) is found with `branches: all`: the active branch's records
//!   are among every branch's.

use std::collections::BTreeSet;
use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use sessiondex_core::tokenize::{for_each_token, tokenize};
use sessiondex_query::engine::{self, MAX_PAGE_CHARS};
use sessiondex_query::expand;
use sessiondex_query::memory::{MemoryConfig, MemoryIndex};
use sessiondex_query::request::{reason, CallRef, HitKind, Page};
use sessiondex_query::{Error, QueryContext, RecallRequest};
use sessiondex_source::{read_bytes, Branches, ReadOptions};

/// The logs indexed: the bundled examples and damaged sessions ([`crate::SESSIONS`]) and the
/// query corpus of `testdata/queries` (several projects, duplicated sessions, tool calls).
const MORE: [(&str, &[u8]); 10] = [
    (
        "corpus/alpha-sub/sb.jsonl",
        include_bytes!("../../testdata/queries/corpus/alpha-sub/sb.jsonl"),
    ),
    (
        "corpus/alpha/sa.jsonl",
        include_bytes!("../../testdata/queries/corpus/alpha/sa.jsonl"),
    ),
    (
        "corpus/beta/sc.jsonl",
        include_bytes!("../../testdata/queries/corpus/beta/sc.jsonl"),
    ),
    (
        "corpus/gamma/dup-1.jsonl",
        include_bytes!("../../testdata/queries/corpus/gamma/dup-1.jsonl"),
    ),
    (
        "corpus/gamma/dup-2.jsonl",
        include_bytes!("../../testdata/queries/corpus/gamma/dup-2.jsonl"),
    ),
    (
        "corpus/gamma/notes.jsonl",
        include_bytes!("../../testdata/queries/corpus/gamma/notes.jsonl"),
    ),
    (
        "ids/new.jsonl",
        include_bytes!("../../testdata/queries/identifiers/ids/new.jsonl"),
    ),
    (
        "ids/old.jsonl",
        include_bytes!("../../testdata/queries/identifiers/ids/old.jsonl"),
    ),
    (
        "ids/tools.jsonl",
        include_bytes!("../../testdata/queries/identifiers/ids/tools.jsonl"),
    ),
    (
        "secrets-pi.jsonl",
        include_bytes!("../../testdata/sessions/secrets-pi.jsonl"),
    ),
];

/// A piece of the query text.
#[derive(Debug, Arbitrary)]
pub enum Piece<'a> {
    /// A term of the indexed logs, by position in their sorted vocabulary.
    Word(u16),
    /// Text as given.
    Raw(&'a str),
    /// One of [`SEPARATORS`].
    Sep(u8),
}

/// Separators and regex syntax placed between pieces.
const SEPARATORS: [&str; 16] = [
    " ", " ", "-", ".", "/", "\"", "_", ".*", "\\w+", "|", "^", "$", "[a-z]+", "?", "(", ")",
];

/// A recall request, field by field.
#[derive(Debug, Arbitrary)]
pub struct RecallInput<'a> {
    pieces: Vec<Piece<'a>>,
    mode: u8,
    all: bool,
    scope: u8,
    cwd: u8,
    all_branches: bool,
    role: Option<u8>,
    tool: Option<u8>,
    action: Option<u8>,
    provider: Option<u8>,
    reference: Option<u8>,
    outcome: Option<u8>,
    since: Option<u8>,
    until: Option<u8>,
    entry_range: Option<(i8, i8)>,
    page_size: Option<u8>,
    offset: Option<u8>,
    groups: Option<u8>,
}

struct World {
    /// All hot, then two hot and the rest cold.
    indexes: [MemoryIndex; 2],
    vocabulary: Vec<String>,
    /// Values of each structural field in the logs, plus one that is in none.
    roles: Vec<String>,
    tools: Vec<String>,
    actions: Vec<String>,
    providers: Vec<String>,
    references: Vec<String>,
    cwds: Vec<String>,
    names: Vec<String>,
    times: Vec<String>,
}

/// Logs indexed besides the bundled ones, set before the first input.
static EXTRA: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();

/// Indexes `logs` too (named by their paths), for runs over real sessions such as
/// `../shared/fixtures/sessions`. Returns false when the indexes were built already.
pub fn add_logs(logs: Vec<(String, Vec<u8>)>) -> bool {
    EXTRA.set(logs).is_ok()
}

fn world() -> &'static Mutex<World> {
    static WORLD: OnceLock<Mutex<World>> = OnceLock::new();
    WORLD.get_or_init(|| {
        let extra = EXTRA.get_or_init(Vec::new);
        let files: Vec<(&str, &[u8])> = crate::SESSIONS
            .iter()
            .chain(MORE.iter())
            .copied()
            .chain(extra.iter().map(|(n, b)| (n.as_str(), b.as_slice())))
            .collect();
        let mut indexes = [
            MemoryIndex::new(MemoryConfig::default()),
            MemoryIndex::new(MemoryConfig {
                hot_sessions: Some(2),
                ..MemoryConfig::default()
            }),
        ];
        let mut vocabulary = BTreeSet::new();
        let mut sets: [BTreeSet<String>; 7] = Default::default();
        let mut names = Vec::new();
        for (name, bytes) in &files {
            // A log that is no session (`notes.jsonl`) is refused by both, as it should be.
            let added = indexes.iter_mut().map(|m| m.add_file(name, bytes).is_ok());
            if !added.fold(true, |a, b| a & b) {
                continue;
            }
            names.push((*name).to_owned());
            let Ok(session) = read_bytes(name, bytes, &ReadOptions::default()) else {
                continue;
            };
            if let Some(cwd) = &session.meta.cwd {
                sets[5].insert(cwd.clone());
            }
            for r in &session.select(Branches::All).records {
                for_each_token(&r.text, |t| {
                    vocabulary.insert(t.to_owned());
                });
                for (k, v) in [&r.role, &r.tool, &r.action, &r.provider, &r.reference]
                    .into_iter()
                    .enumerate()
                {
                    if let Some(v) = v {
                        sets[k].insert(v.clone());
                    }
                }
                if let Some(t) = &r.timestamp {
                    sets[6].insert(t.clone());
                }
            }
        }
        let [roles, tools, actions, providers, references, cwds, times] = sets.map(|s| {
            s.into_iter()
                .chain(["zqnone".to_owned()])
                .collect::<Vec<_>>()
        });
        Mutex::new(World {
            indexes,
            vocabulary: vocabulary.into_iter().collect(),
            roles,
            tools,
            actions,
            providers,
            references,
            cwds,
            names,
            times,
        })
    })
}

/// A filter is set for one value of `k` in four, so that most requests keep some hits.
fn pick(values: &[String], k: Option<u8>) -> Option<String> {
    k.filter(|k| k % 4 == 0)
        .map(|k| values[usize::from(k / 4) % values.len()].clone())
}

impl World {
    fn request(&self, input: &RecallInput<'_>) -> RecallRequest {
        let mut query = String::new();
        for p in input.pieces.iter().take(12) {
            match p {
                Piece::Word(i) => {
                    query.push_str(&self.vocabulary[usize::from(*i) % self.vocabulary.len()]);
                }
                Piece::Raw(s) => query.push_str(&s.chars().take(40).collect::<String>()),
                Piece::Sep(k) => query.push_str(SEPARATORS[usize::from(*k) % SEPARATORS.len()]),
            }
        }
        // Without a query only `literal` is valid: other modes are refused there one time in
        // eight, so that most requests run.
        let mode = if query.trim().is_empty() && input.mode < 224 {
            "literal"
        } else {
            ["literal", "phrase", "regex", "fuzzy"][usize::from(input.mode % 4)]
        };
        let mut req = serde_json::json!({
            "query": query,
            "queryMode": mode,
            "queryMatch": if input.all { "all" } else { "any" },
        });
        let o = req.as_object_mut().expect("an object");
        let cwd = self.cwds[usize::from(input.cwd) % self.cwds.len()].clone();
        match input.scope % 5 {
            0 | 1 => {
                o.insert("scope".into(), "global".into());
            }
            2 => {
                o.insert("scope".into(), "project".into());
                o.insert("cwd".into(), cwd.into());
            }
            3 => {
                o.insert("scope".into(), "session".into());
                o.insert("cwd".into(), cwd.into());
            }
            _ => {
                let name = &self.names[usize::from(input.cwd) % self.names.len()];
                o.insert("scope".into(), format!("session:{name}").into());
            }
        }
        if input.all_branches {
            o.insert("branches".into(), "all".into());
        }
        for (key, values, k) in [
            ("role", &self.roles, input.role),
            ("tool", &self.tools, input.tool),
            ("action", &self.actions, input.action),
            ("provider", &self.providers, input.provider),
            ("ref", &self.references, input.reference),
            ("since", &self.times, input.since),
            ("until", &self.times, input.until),
        ] {
            if let Some(v) = pick(values, k) {
                o.insert(key.into(), v.into());
            }
        }
        if let Some(k) = input.outcome.filter(|k| k % 4 == 0) {
            let v = ["succeeded", "failed", "aborted", "timed_out"][usize::from(k / 4 % 4)];
            o.insert("outcome".into(), v.into());
        }
        if let Some((a, b)) = input.entry_range.filter(|(a, _)| a % 4 == 0) {
            o.insert("entryRange".into(), serde_json::json!([a / 4, b]));
        }
        if let Some(n) = input.page_size {
            o.insert("pageSize".into(), (n % 104).into());
        }
        if let Some(n) = input.offset.filter(|n| n % 4 == 0) {
            o.insert("offset".into(), (n / 4).into());
        }
        if let Some(g) = input.groups.filter(|g| g & 0xf0 == 0) {
            let all = ["text", "thinking", "tool_input", "tool_output"];
            let groups: Vec<&str> = (0..4).filter(|i| g >> i & 1 == 1).map(|i| all[i]).collect();
            o.insert("in".into(), groups.into());
        }
        // A request of these fields always parses; `recall` validates it.
        RecallRequest::from_json(&req).expect("a built request parses")
    }
}

fn recall(m: &mut MemoryIndex, req: &RecallRequest) -> Result<Page, Error> {
    let valid = req.clone().validate()?;
    let opts = m.engine_options();
    let index = m.index(valid.branches)?;
    engine::recall(index, &opts, &QueryContext::default(), req)
}

/// The terms of a literal query, as the engine reads them.
fn terms(query: &str) -> BTreeSet<String> {
    tokenize(query).into_iter().collect()
}

/// Checks one page and runs its calls.
fn check_page(m: &mut MemoryIndex, req: &RecallRequest, page: &Page) {
    let size = req.page_size.unwrap_or(10) as usize;
    assert!(
        page.hits.len() <= size,
        "{} hits, page size {size}",
        page.hits.len()
    );
    assert!(
        page.hits.len() as u64 <= page.total,
        "{} hits of {}",
        page.hits.len(),
        page.total
    );
    let json = serde_json::to_string(page).expect("a page serializes");
    assert!(
        json.chars().count() <= MAX_PAGE_CHARS || page.hits.len() <= 1,
        "a page of {} hits is {} characters",
        page.hits.len(),
        json.chars().count()
    );
    let literal = matches!(
        req.query_mode,
        None | Some(sessiondex_query::QueryMode::Literal)
    );
    let asked = req.query.as_deref().map(terms).unwrap_or_default();
    for hit in &page.hits {
        if literal && hit.kind == HitKind::Session {
            for t in &hit.matched_terms {
                assert!(asked.contains(t), "matched {t:?}, asked {asked:?}");
            }
            // A cold candidate of `all` holds every term in its vocabulary.
            if req.query_match == Some(sessiondex_query::QueryMatch::All) && !asked.is_empty() {
                let got: BTreeSet<String> = hit.matched_terms.iter().cloned().collect();
                assert_eq!(got, asked, "a session hit of `all`");
            }
        }
    }
    for hit in page.hits.iter().take(3) {
        match hit.follow.target().expect("a follow call names its target") {
            CallRef::Expand => {
                let x = hit.follow.expand_request().expect("an expand call parses");
                let opts = m.engine_options();
                let index = m
                    .index(x.branches.unwrap_or_default())
                    .expect("the index builds");
                let got = expand::expand(index, &opts, &x)
                    .unwrap_or_else(|e| panic!("follow of {hit:?}: {e:?}"));
                assert_eq!(hit.kind, HitKind::Entry);
                let Some(e) = got
                    .entries
                    .iter()
                    .find(|e| Some(&e.record.entry_id) == hit.entry_id.as_ref())
                else {
                    panic!(
                        "follow of entry {:?} returned {:?}",
                        hit.entry_id,
                        got.entries
                            .iter()
                            .map(|e| &e.record.entry_id)
                            .collect::<Vec<_>>()
                    );
                };
                check_entry(req, &e.record, e.text_range.complete, &asked, literal);
            }
            CallRef::Recall => {
                let r = hit.follow.recall_request().expect("a recall call parses");
                recall(m, &r).unwrap_or_else(|e| panic!("follow of {hit:?}: {e:?}"));
            }
        }
    }
    if let Some(next) = &page.next {
        let r = next.recall_request().expect("a next call parses");
        recall(m, &r).unwrap_or_else(|e| panic!("next of {req:?}: {e:?}"));
    }
}

/// Coverage reasons of the engine: a budget hit, or what a cold vocabulary cannot decide.
const ENGINE_REASONS: [&str; 12] = [
    reason::CANDIDATE_ENTRY_BUDGET,
    reason::CANDIDATE_DIGEST_BUDGET,
    reason::CANDIDATE_ITEM_BUDGET,
    reason::COLD_ALL_REQUIRES_HYDRATION,
    reason::COLD_PHRASE_REQUIRES_HYDRATION,
    reason::COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION,
    reason::COLD_REGEX_SPANS_TOKENS,
    reason::COLD_REGEX_ANCHOR_REQUIRES_HYDRATION,
    reason::COLD_FIELD_GROUP_REQUIRES_HYDRATION,
    reason::REGEX_HAYSTACK_BUDGET,
    reason::FUZZY_EXPANSION_LIMIT,
    reason::MAX_ENTRY_CHARS,
];

/// An entry hit's record, re-read from the source, holds what the request asked for: the
/// exact value of every structural filter and, for a literal query over its whole text, one
/// of the query's terms (every one under `all`).
fn check_entry(
    req: &RecallRequest,
    r: &sessiondex_source::Record,
    whole: bool,
    asked: &BTreeSet<String>,
    literal: bool,
) {
    for (key, want, got) in [
        ("role", &req.role, &r.role),
        ("tool", &req.tool, &r.tool),
        ("ref", &req.reference, &r.reference),
        ("provider", &req.provider, &r.provider),
        ("action", &req.action, &r.action),
    ] {
        if want.is_some() {
            assert_eq!(got, want, "{key} of entry {}", r.entry_id);
        }
    }
    if let Some(o) = req.outcome {
        assert_eq!(r.outcome, Some(o), "outcome of entry {}", r.entry_id);
    }
    // A query that is the record's entry id or address (or a hex prefix of it) names it
    // whatever its text holds (docs/query.md, Identifiers).
    let key = |x: &str| x.to_ascii_lowercase().replace('-', "");
    let q = key(req.query.as_deref().unwrap_or("").trim());
    let named = q.len() >= 6
        && [Some(&r.entry_id), r.operation_address.as_ref()]
            .into_iter()
            .flatten()
            .any(|id| key(id).starts_with(&q));
    if literal && whole && !asked.is_empty() && !named {
        let mut held = terms(&r.text);
        if let Some(t) = &r.thinking {
            held.extend(terms(t));
        }
        let found = asked.intersection(&held).count();
        if req.query_match == Some(sessiondex_query::QueryMatch::All) {
            assert_eq!(found, asked.len(), "entry {} holds {held:?}", r.entry_id);
        } else {
            assert!(found > 0, "entry {} holds none of {asked:?}", r.entry_id);
        }
    }
}

/// Every session file a query's pages name (at most 50 pages).
fn sessions_of(m: &mut MemoryIndex, req: &RecallRequest) -> Option<BTreeSet<String>> {
    Some(
        hits_of(m, req)?
            .into_iter()
            .map(|(file, _, _)| file)
            .collect(),
    )
}

/// A hit's file, and its record's entry id and operation address (none for a session hit).
type HitKey = (String, Option<String>, Option<String>);

/// Every hit a query's pages name (at most 50 pages).
fn hits_of(m: &mut MemoryIndex, req: &RecallRequest) -> Option<BTreeSet<HitKey>> {
    let mut out = BTreeSet::new();
    let mut req = req.clone();
    for _ in 0..50 {
        let page = recall(m, &req).ok()?;
        // Reasons of the source (a malformed line, a missing parent) say nothing of the
        // tiers; the engine's own do.
        if page
            .coverage
            .reasons
            .iter()
            .any(|r| ENGINE_REASONS.contains(&r.as_str()))
        {
            return None;
        }
        out.extend(page.hits.iter().map(|h| {
            (
                h.file.clone(),
                h.entry_id.clone(),
                h.operation_address.clone(),
            )
        }));
        match page.next {
            Some(next) => req = next.recall_request().ok()?,
            None => return Some(out),
        }
    }
    None
}

/// What one input checked.
#[derive(Debug, Default, Clone, Copy)]
pub struct Checked {
    /// Indexes (of two) that answered with a page.
    pub answered: usize,
    /// Hits on those pages.
    pub hits: usize,
    /// The two indexes' sessions were compared.
    pub compared: bool,
    /// The active branch's hits were compared with every branch's.
    pub branches_compared: bool,
}

/// Runs one input; panics when an invariant of recall does not hold.
pub fn exercise_recall(input: &RecallInput<'_>) -> Checked {
    let mut w = world()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let req = w.request(input);
    let mut checked = Checked::default();
    for m in &mut w.indexes {
        if let Ok(page) = recall(m, &req) {
            check_page(m, &req, &page);
            checked.hits += page.hits.len();
            checked.answered += 1;
        }
    }
    if checked.answered == 2 {
        let mut all = req.clone();
        all.page_size = Some(100);
        all.offset = None;
        let [hot, tiers] = &mut w.indexes;
        if let (Some(a), Some(b)) = (sessions_of(hot, &all), sessions_of(tiers, &all)) {
            assert_eq!(a, b, "sessions of {all:?}: all hot, then tiers");
            checked.compared = true;
        }
        // What the active branch finds, every branch finds: its records are among them, with
        // the same text and typed fields (a result is paired with its call before either
        // selection), so a larger selection only adds hits, and a larger vocabulary only
        // adds fuzzy terms (where an expansion limit cuts them, coverage says so). Not for an
        // entry range: positions differ between the two selections.
        if all.branches.unwrap_or_default() == Branches::Active && all.entry_range.is_none() {
            let mut every = all.clone();
            every.branches = Some(Branches::All);
            for (k, m) in w.indexes.iter_mut().enumerate() {
                if let (Some(a), Some(b)) = (hits_of(m, &all), hits_of(m, &every)) {
                    // Cold sessions answer with session hits: their files are compared.
                    let (a, b) = if k == 0 {
                        (a, b)
                    } else {
                        let files = |s: BTreeSet<HitKey>| -> BTreeSet<HitKey> {
                            s.into_iter().map(|(f, _, _)| (f, None, None)).collect()
                        };
                        (files(a), files(b))
                    };
                    let missing: Vec<&HitKey> = a.difference(&b).collect();
                    assert!(
                        missing.is_empty(),
                        "index {k}: {missing:?} found on the active branch, not on every \
                         branch, by {all:?}"
                    );
                    checked.branches_compared = true;
                }
            }
        }
    }
    checked
}
