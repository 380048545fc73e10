//! Integration tests of the index formats and the cache store.
// A panic in a test is a failed test, which is what we want.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap};

use proptest::prelude::*;
use sessiondex_core::catalog::{
    field_key, id_key, Catalog, CatalogBuilder, CatalogEntry, SessionTerms, SourceIdentity,
    TermSet, Tier,
};
use sessiondex_core::cold::{self, ColdDigest, Field};
use sessiondex_core::format::{self, FileKind};
use sessiondex_core::hot::{self, HotShard, ListField, StrField};
use sessiondex_core::{bound_chars, tokenize, Policy};
use sessiondex_source::{
    Branches, Format, Outcome, ReadCoverage, Record, Selection, SessionLink, SessionMeta, TextClass,
};
use unicode_normalization::UnicodeNormalization;

#[path = "suite/compat.rs"]
mod compat;
#[path = "suite/fuzz.rs"]
mod fuzz;
#[cfg(feature = "fs")]
#[path = "suite/store.rs"]
mod store;

// ---------------------------------------------------------------- fixtures

const CLASSES: [TextClass; 7] = [
    TextClass::UserText,
    TextClass::AssistantText,
    TextClass::Thinking,
    TextClass::ToolInput,
    TextClass::ToolOutput,
    TextClass::Summary,
    TextClass::Meta,
];

fn selection(records: Vec<Record>) -> Selection {
    let mut records = records;
    for (i, r) in records.iter_mut().enumerate() {
        r.index = i;
    }
    Selection {
        branches: Branches::Active,
        leaf: records.last().map(|r| r.entry_id.clone()),
        records,
        coverage: ReadCoverage {
            complete: true,
            reasons: Vec::new(),
            lines: 3,
            complete_bytes: 4096,
        },
        lineage_fingerprint: "ab".repeat(32),
    }
}

fn meta(id: &str) -> SessionMeta {
    SessionMeta {
        session_id: id.into(),
        file: format!("/sessions/{id}.jsonl"),
        format: Some(Format::Pi),
        format_version: Some("3".into()),
        cwd: Some("/work/project".into()),
        title: Some(format!("session {id}")),
        created: Some("2026-01-01T00:00:00.000Z".into()),
        first_ts: None,
        last_ts: None,
        links: vec![SessionLink {
            kind: "parent_session".into(),
            target: "/sessions/root.jsonl".into(),
        }],
    }
}

/// Three records: a user message, an assistant carrier and its tool call child, and a failed
/// tool result.
pub(crate) fn sample_records() -> Vec<Record> {
    vec![
        Record {
            entry_id: "u1".into(),
            kind: "message".into(),
            role: Some("user".into()),
            timestamp: Some("2026-01-01T00:00:01.000Z".into()),
            text: "Where did we hit that TIMEOUT in src/net.rs?".into(),
            class: TextClass::UserText,
            line: 2,
            offset: 120,
            ..Record::default()
        },
        Record {
            entry_id: "a1".into(),
            parent_id: Some("u1".into()),
            kind: "message".into(),
            role: Some("assistant".into()),
            timestamp: Some("2026-01-01T00:00:02.500Z".into()),
            text: "Let me grep for the timeout. Café ﬁle 日本語".into(),
            thinking: Some("secret reasoning about timeouts".into()),
            class: TextClass::AssistantText,
            line: 3,
            offset: 300,
            ..Record::default()
        },
        Record {
            entry_id: "a1/0".into(),
            kind: "tool_call".into(),
            role: Some("assistant".into()),
            tool: Some("omp.grep".into()),
            reference: Some("omp.grep".into()),
            provider: Some("omp".into()),
            action: Some("grep".into()),
            outcome: Some(Outcome::Failed),
            is_error: Some(true),
            timestamp: Some("2026-01-01T00:00:02.500Z".into()),
            files_touched: vec!["src/net.rs".into(), "src/lib.rs".into()],
            text: r#"{"pattern":"timeout","path":"src/net.rs"}"#.into(),
            operation_address: Some("a1/0".into()),
            parent_entry_id: Some("a1".into()),
            call_id: Some("call_1".into()),
            class: TextClass::ToolInput,
            line: 3,
            offset: 300,
            ..Record::default()
        },
        Record {
            entry_id: "t1".into(),
            parent_id: Some("a1".into()),
            kind: "message".into(),
            role: Some("tool".into()),
            tool: Some("omp.grep".into()),
            outcome: Some(Outcome::Failed),
            is_error: Some(true),
            timestamp: Some("2026-01-01T00:00:03+00:00".into()),
            text: "error: timed out after 30s".into(),
            call_id: Some("call_1".into()),
            class: TextClass::ToolOutput,
            sidechain: true,
            line: 4,
            offset: 512,
            ..Record::default()
        },
    ]
}

pub(crate) fn sample() -> (SessionMeta, Selection) {
    (meta("s1"), selection(sample_records()))
}

fn opt_str() -> impl Strategy<Value = Option<String>> {
    prop::option::of("[a-z_./]{0,8}")
}

fn text() -> impl Strategy<Value = String> {
    // Letters, digits, marks, ligatures, CJK, full-width, punctuation and spaces.
    prop::collection::vec(
        prop::sample::select(vec![
            "a", "B", "c", "z", "0", "7", "_", " ", " ", ".", "/", "-", "é", "e\u{301}", "ﬁ", "日",
            "本", "Ｔ", "ß", "İ", "\n", "😀", "ق",
        ]),
        0..40,
    )
    .prop_map(|v| v.concat())
}

fn record() -> impl Strategy<Value = Record> {
    (
        (
            "[a-z0-9]{1,6}",
            opt_str(),
            opt_str(),
            "[a-z_]{1,8}",
            opt_str(),
            opt_str(),
            opt_str(),
            opt_str(),
        ),
        (
            opt_str(),
            prop::option::of(0usize..4),
            prop::option::of(prop_oneof![
                (0i64..4_102_444_800_000)
                    .prop_map(|ms| sessiondex_core::format_rfc3339_ms(ms).unwrap_or_default()),
                Just("yesterday".to_owned()),
                Just("2026-01-01T00:00:00+02:00".to_owned()),
            ]),
            prop::option::of(any::<bool>()),
            prop::collection::vec("[a-z/.]{1,6}", 0..3),
            text(),
            prop::option::of(text()),
        ),
        (
            opt_str(),
            opt_str(),
            opt_str(),
            0usize..7,
            any::<bool>(),
            any::<u64>(),
            any::<u64>(),
        ),
    )
        .prop_map(|(a, b, c)| Record {
            index: 0,
            entry_id: a.0,
            parent_id: a.1,
            logical_parent_id: a.2,
            kind: a.3,
            role: a.4,
            tool: a.5,
            reference: a.6,
            provider: a.7,
            action: b.0,
            outcome: b.1.map(|i| {
                [
                    Outcome::Succeeded,
                    Outcome::Failed,
                    Outcome::Aborted,
                    Outcome::TimedOut,
                ][i]
            }),
            timestamp: b.2,
            is_error: b.3,
            files_touched: b.4,
            text: b.5,
            thinking: b.6,
            operation_address: c.0,
            parent_entry_id: c.1,
            call_id: c.2,
            class: CLASSES[c.3],
            sidechain: c.4,
            line: c.5,
            offset: c.6,
        })
}

fn policy() -> impl Strategy<Value = Policy> {
    (0u32..30, any::<bool>(), any::<bool>()).prop_map(|(max, th, out)| Policy {
        max_entry_chars: max,
        index_thinking: th,
        index_tool_output: out,
        ..Policy::default()
    })
}

/// What a hot shard must give back for `r`.
fn expected_hot(r: &Record, p: &Policy) -> Record {
    let mut e = r.clone();
    let max = p.max_entry_chars as usize;
    e.text = match p.text(r) {
        Some(t) => bound_chars(t, max).0.to_owned(),
        None => String::new(),
    };
    e.thinking = p.thinking(r).map(|th| {
        let left = max.saturating_sub(e.text.chars().count());
        bound_chars(th, left).0.to_owned()
    });
    e
}

/// Postings of the whole indexed text (text and thinking under `p`, never cut): a hot shard
/// posts every token, also past `max_entry_chars`.
fn naive_postings(records: &[Record], p: &Policy) -> BTreeMap<String, Vec<(u32, u32)>> {
    let mut out: BTreeMap<String, Vec<(u32, u32)>> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        let mut tf: BTreeMap<String, u32> = BTreeMap::new();
        for part in [p.text(r), p.thinking(r)].into_iter().flatten() {
            for t in tokenize(part) {
                *tf.entry(t).or_default() += 1;
            }
        }
        for (t, c) in tf {
            out.entry(t).or_default().push((i as u32, c));
        }
    }
    out
}

// ---------------------------------------------------------------- hot

/// The whole-column reads give what the per-entry views give.
fn check_columns<B: AsRef<[u8]>>(shard: &HotShard<B>, fields: &[StrField]) {
    for &f in fields {
        let col = shard.string_ids(f).unwrap();
        let per_entry: Vec<Option<u32>> =
            shard.entries().map(|e| e.string_id(f).unwrap()).collect();
        assert_eq!(col.len(), per_entry.len(), "{f:?}");
        assert_eq!(col.iter().collect::<Vec<_>>(), per_entry, "{f:?}");
        for (i, id) in per_entry.iter().enumerate() {
            assert_eq!(col.get(i), *id, "{f:?} {i}");
        }
        assert_eq!(col.get(per_entry.len()), None);
    }
    // Each listed field's lists are its values present, ascending, each with its entries
    // (ascending) and their token total; nothing else.
    for field in ListField::ALL {
        let mut want: BTreeMap<u32, (Vec<u32>, u64)> = BTreeMap::new();
        for e in shard.entries() {
            let value = match field {
                ListField::Role => e.string_id(StrField::Role).unwrap(),
                ListField::Tool => e.string_id(StrField::Tool).unwrap(),
                ListField::Reference => e.string_id(StrField::Reference).unwrap(),
                ListField::Provider => e.string_id(StrField::Provider).unwrap(),
                ListField::Action => e.string_id(StrField::Action).unwrap(),
                ListField::Outcome => e.outcome().unwrap().map(hot::outcome_value),
            };
            if let Some(v) = value {
                let l = want.entry(v).or_default();
                l.0.push(e.index() as u32);
                l.1 += u64::from(e.token_len());
            }
        }
        let lists = shard.entry_lists(field).unwrap();
        let mut got = BTreeMap::new();
        let mut last = None;
        for k in 0..lists.len() {
            let l = lists.get(k).unwrap();
            assert!(last < Some(l.value), "{field:?}: values ascending");
            last = Some(l.value);
            assert!(!l.is_empty());
            assert_eq!(lists.find(l.value).unwrap().unwrap().value, l.value);
            got.insert(l.value, (l.iter().collect::<Vec<_>>(), l.tokens));
        }
        assert!(lists.get(lists.len()).is_err());
        assert_eq!(lists.is_empty(), want.is_empty());
        assert_eq!(got, want, "{field:?}");
    }
}

/// Every term's ordinal is the FST's; a term with a byte more or less, or unknown, has none.
fn check_term_lookups<'a, B: AsRef<[u8]>>(
    shard: &HotShard<B>,
    terms: impl Iterator<Item = &'a String>,
) {
    let map = shard.terms().unwrap();
    let mut n = 0;
    for term in terms {
        let ord = shard.ordinal(term).unwrap();
        assert!(ord.is_some(), "{term:?}");
        assert_eq!(ord, map.get(term), "{term:?}");
        let mut shorter = term.chars();
        shorter.next_back();
        for other in [
            format!("{term}x"),
            format!("x{term}"),
            shorter.as_str().to_owned(),
        ] {
            assert_eq!(shard.ordinal(&other).unwrap(), map.get(&other), "{other:?}");
        }
        n += 1;
    }
    assert_eq!(n, shard.term_count());
    for absent in [
        "",
        "no-such-term",
        "\u{1F600}",
        "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
    ] {
        assert_eq!(shard.ordinal(absent).unwrap(), None, "{absent:?}");
    }
}

fn check_hot(meta: &SessionMeta, sel: &Selection, p: &Policy) {
    let bytes = hot::build(meta, sel, p).unwrap();
    let shard = HotShard::open(&bytes[..]).unwrap();
    assert_eq!(shard.entry_count(), sel.records.len());
    let expected: Vec<Record> = sel.records.iter().map(|r| expected_hot(r, p)).collect();
    for (i, e) in expected.iter().enumerate() {
        let entry = shard.entry(i).unwrap();
        assert_eq!(&entry.to_record().unwrap(), e);
        let r = &sel.records[i];
        let cut = p
            .text(r)
            .is_some_and(|t| t.chars().count() > p.max_entry_chars as usize)
            || e.thinking.as_deref().map(|t| t.len()) != p.thinking(r).map(str::len);
        assert_eq!(entry.truncated(), cut, "entry {i}");
    }
    assert!(shard.entry(expected.len()).is_none());
    // String ids read back their values, and two entries share an id exactly when they share
    // the value (the engine's filters compare ids).
    let fields = [
        StrField::Kind,
        StrField::Role,
        StrField::Tool,
        StrField::Reference,
        StrField::Provider,
        StrField::Action,
        StrField::CallId,
    ];
    let value = |e: &hot::HotEntry<'_>, f: StrField| -> Option<String> {
        match f {
            StrField::Kind => Some(e.kind().unwrap().to_owned()),
            StrField::Role => e.role().unwrap().map(str::to_owned),
            StrField::Tool => e.tool().unwrap().map(str::to_owned),
            StrField::Reference => e.reference().unwrap().map(str::to_owned),
            StrField::Provider => e.provider().unwrap().map(str::to_owned),
            StrField::Action => e.action().unwrap().map(str::to_owned),
            StrField::CallId => e.call_id().unwrap().map(str::to_owned),
        }
    };
    check_columns(&shard, &fields);
    let mut ids: BTreeMap<u32, String> = BTreeMap::new();
    for e in shard.entries() {
        for f in fields {
            let id = e.string_id(f).unwrap();
            let v = value(&e, f);
            assert_eq!(
                id.map(|id| shard.string(id).unwrap().to_owned()),
                v,
                "{f:?}"
            );
            if let (Some(id), Some(v)) = (id, v) {
                assert_eq!(ids.entry(id).or_insert_with(|| v.clone()), &v);
            }
        }
    }
    let distinct: BTreeSet<&String> = ids.values().collect();
    assert_eq!(distinct.len(), ids.len(), "one id per value");
    let naive = naive_postings(&sel.records, p);
    let mut seen = 0;
    shard
        .for_each_term(|term, df| {
            let want = &naive[term];
            assert_eq!(df as usize, want.len());
            seen += 1;
        })
        .unwrap();
    assert_eq!(seen, naive.len());
    let mut total = 0u64;
    for (term, want) in &naive {
        let got: Vec<(u32, u32)> = shard
            .postings(term)
            .unwrap()
            .map(|p| (p.entry, p.tf))
            .collect();
        assert_eq!(&got, want, "term {term:?}");
        total += want.iter().map(|&(_, c)| u64::from(c)).sum::<u64>();
    }
    assert_eq!(shard.total_tokens(), total);
    let stats = shard.entry_stats().unwrap();
    for (i, r) in sel.records.iter().enumerate() {
        let n = p.text(r).map_or(0, |t| tokenize(t).len())
            + p.thinking(r).map_or(0, |t| tokenize(t).len());
        let e = shard.entry(i).unwrap();
        assert_eq!(e.token_len() as usize, n);
        // The columns cut once read as each entry's view does.
        assert_eq!(stats.token_len(i), e.token_len());
        assert_eq!(stats.class(i).unwrap(), e.class().unwrap());
        assert_eq!(stats.class(i).unwrap(), r.class);
    }
    assert_eq!(stats.token_len(sel.records.len()), 0);
    assert!(stats.class(sel.records.len()).is_err());
    assert_eq!(shard.postings("no-such-term").unwrap().len(), 0);
    check_term_lookups(&shard, naive.keys());
    // The same shard without its term table (as the browser build writes it) finds the
    // same ordinals through the FST, and is smaller.
    let plain = hot::build_without_term_table(meta, sel, p).unwrap();
    let fst_only = HotShard::open(&plain[..]).unwrap();
    check_term_lookups(&fst_only, naive.keys());
    if !naive.is_empty() {
        assert!(plain.len() < bytes.len());
    }
    let truncated = (0..shard.entry_count())
        .filter(|&i| shard.entry(i).unwrap().truncated())
        .count() as u64;
    assert_eq!(shard.summary().coverage.count("max_entry_chars"), truncated);
    // Informational: every token is posted, so the cut does not make the index incomplete.
    assert!(shard.summary().coverage.complete);
    assert_eq!(shard.summary().cache_bytes, bytes.len() as u64);
    assert_eq!(shard.policy_fingerprint(), p.fingerprint());
}

#[test]
fn hot_sample_round_trip() {
    let (m, s) = sample();
    check_hot(&m, &s, &Policy::default());
    check_hot(
        &m,
        &s,
        &Policy {
            index_thinking: true,
            index_tool_output: false,
            max_entry_chars: 10,
            ..Policy::default()
        },
    );
    let shard_bytes = hot::build(&m, &s, &Policy::default()).unwrap();
    let shard = HotShard::open(shard_bytes).unwrap();
    // Thinking is excluded by default; tool output is included.
    assert_eq!(shard.doc_freq("secret").unwrap(), 0);
    assert_eq!(shard.doc_freq("timed").unwrap(), 1);
    assert_eq!(shard.doc_freq("timeout").unwrap(), 3);
    assert_eq!(shard.doc_freq("café").unwrap(), 1);
    assert_eq!(shard.doc_freq("file").unwrap(), 1);
    let e = shard.entry(3).unwrap();
    assert_eq!(
        e.timestamp().unwrap().as_deref(),
        Some("2026-01-01T00:00:03+00:00")
    );
    assert_eq!(e.timestamp_ms(), Some(1_767_225_603_000));
    let s = shard.summary();
    assert_eq!(s.entry_count, 4);
    // the failed call and its result count once
    assert_eq!(s.error_count, 1);
    assert_eq!(s.tool_histogram, vec![("omp.grep".to_owned(), 1)]);
    assert_eq!(s.files_touched, ["src/net.rs", "src/lib.rs"]);
    assert_eq!(s.first_ts, Some(1_767_225_601_000));
    assert!(s.coverage.complete);
    assert!(shard.avg_len() > 0.0);
}

/// A summary counts the records whose timestamp is missing or does not parse (format 13), and
/// the hot shard, the cold build and the catalog's row all carry the count.
#[test]
fn summaries_count_untimed_records() {
    let mut records = sample_records();
    records[1].timestamp = None;
    records[2].timestamp = Some("[trimmed for fixture]".into());
    let (m, s) = (meta("s1"), selection(records));
    let hot = HotShard::open(hot::build(&m, &s, &Policy::default()).unwrap()).unwrap();
    assert_eq!(hot.summary().untimed_count, 2);
    assert_eq!(hot.summary().entry_count, 4);
    let untimed = (0..4).filter(|&i| hot.entry(i).unwrap().timestamp_ms().is_none());
    assert_eq!(untimed.count(), 2);
    assert_eq!(
        cold::build_digest(&m, &s, &Policy::default())
            .unwrap()
            .summary
            .untimed_count,
        2
    );
    let mut b = CatalogBuilder::new(Branches::Active);
    b.add(&catalog_entry(&m, &s, Tier::Cold, 0), None).unwrap();
    b.add(&catalog_entry(&sample().0, &sample().1, Tier::Hot, 1), None)
        .unwrap();
    let cat = Catalog::open(b.finish().unwrap()).unwrap();
    assert_eq!(cat.session(0).unwrap().summary.untimed_count, 2);
    assert_eq!(cat.session(1).unwrap().summary.untimed_count, 0);
}

/// A failed call and its result count one error; a failed result whose id only a call that
/// succeeded carries (a log whose ids repeat) counts one of its own, as recall lists it.
#[test]
fn errors_count_each_failed_call_once() {
    let mut records = sample_records();
    let ok_call = Record {
        entry_id: "a2/0".into(),
        kind: "tool_call".into(),
        role: Some("assistant".into()),
        tool: Some("omp.grep".into()),
        outcome: Some(Outcome::Succeeded),
        is_error: Some(false),
        call_id: Some("call_2".into()),
        class: TextClass::ToolInput,
        ..Record::default()
    };
    let failed_result = Record {
        entry_id: "t2".into(),
        kind: "message".into(),
        role: Some("tool".into()),
        outcome: Some(Outcome::Failed),
        is_error: Some(true),
        call_id: Some("call_2".into()),
        class: TextClass::ToolOutput,
        ..Record::default()
    };
    let (m, s) = sample();
    assert_eq!(
        cold::build_digest(&m, &s, &Policy::default())
            .unwrap()
            .summary
            .error_count,
        1
    );
    records.extend([ok_call, failed_result]);
    let s = selection(records);
    let hot = HotShard::open(hot::build(&m, &s, &Policy::default()).unwrap()).unwrap();
    assert_eq!(hot.summary().error_count, 2);
}

/// The NFKC flags of the sample: a ligature is not NFKC, plain text and CJK are.
#[test]
fn hot_flags_nfkc_parts() {
    let (m, s) = sample();
    let p = Policy {
        index_thinking: true,
        ..Policy::default()
    };
    let shard = HotShard::open(hot::build(&m, &s, &p).unwrap()).unwrap();
    let flags: Vec<u8> = (0..shard.entry_count())
        .map(|i| shard.entry(i).unwrap().flags() & (hot::FLAG_TEXT_NFKC | hot::FLAG_THINKING_NFKC))
        .collect();
    // `ﬁ` in the assistant's text; its (stored) thinking part is ASCII.
    assert_eq!(flags[0], hot::FLAG_TEXT_NFKC);
    assert_eq!(flags[1], hot::FLAG_THINKING_NFKC);
    assert!(
        flags[2..].iter().all(|&f| f == hot::FLAG_TEXT_NFKC),
        "{flags:?}"
    );
}

#[test]
fn hot_policy_marks_truncation() {
    let (m, s) = sample();
    let p = Policy {
        max_entry_chars: 5,
        ..Policy::default()
    };
    let bytes = hot::build(&m, &s, &p).unwrap();
    let shard = HotShard::open(&bytes[..]).unwrap();
    assert_eq!(shard.entry(0).unwrap().text().unwrap(), "Where");
    assert_eq!(shard.summary().coverage.count("max_entry_chars"), 4);
    assert!(shard.summary().coverage.complete);
    // A term past the cut is still posted, and lengths count every token.
    assert_eq!(shard.doc_freq("timeout").unwrap(), 3);
    let full = HotShard::open(hot::build(&m, &s, &Policy::default()).unwrap()).unwrap();
    for i in 0..shard.entry_count() {
        assert_eq!(
            shard.entry(i).unwrap().token_len(),
            full.entry(i).unwrap().token_len()
        );
    }
    assert_eq!(shard.total_tokens(), full.total_tokens());
    let p = Policy {
        index_tool_output: false,
        ..Policy::default()
    };
    let shard = HotShard::open(hot::build(&m, &s, &p).unwrap()).unwrap();
    let e = shard.entry(3).unwrap();
    assert!(e.text_excluded());
    assert_eq!(e.text().unwrap(), "");
    assert_eq!(shard.doc_freq("timed").unwrap(), 0);
}

#[test]
fn empty_selection_round_trips() {
    let sel = selection(Vec::new());
    let m = SessionMeta::default();
    let p = Policy::default();
    let shard = HotShard::open(hot::build(&m, &sel, &p).unwrap()).unwrap();
    assert_eq!(shard.entry_count(), 0);
    assert_eq!(shard.avg_len(), 0.0);
    let cold = ColdDigest::open(cold::build(&m, &sel, &p).unwrap()).unwrap();
    assert_eq!(cold.vocabulary_len(), 0);
    let cat = Catalog::open(CatalogBuilder::new(Branches::All).finish().unwrap()).unwrap();
    assert!(cat.is_empty());
    assert_eq!(cat.branches(), Branches::All);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn hot_round_trip(records in prop::collection::vec(record(), 0..12), p in policy()) {
        let sel = selection(records);
        check_hot(&meta("p"), &sel, &p);
    }

    /// A stored part is flagged NFKC exactly when the check says so, and the check never
    /// says so of text that normalizes to anything else (a reader then skips normalizing).
    #[test]
    fn hot_nfkc_flags(records in prop::collection::vec(record(), 0..12), p in policy()) {
        let sel = selection(records);
        let shard = HotShard::open(hot::build(&meta("p"), &sel, &p).unwrap()).unwrap();
        for i in 0..shard.entry_count() {
            let e = shard.entry(i).unwrap();
            let text = e.text().unwrap();
            prop_assert_eq!(e.flags() & hot::FLAG_TEXT_NFKC != 0, tokenize::is_nfkc(text));
            if tokenize::is_nfkc(text) {
                prop_assert_eq!(text.nfkc().collect::<String>(), text);
            }
            let thinking = e.thinking().unwrap();
            prop_assert_eq!(
                e.flags() & hot::FLAG_THINKING_NFKC != 0,
                thinking.is_some_and(tokenize::is_nfkc)
            );
            if let Some(t) = thinking.filter(|t| tokenize::is_nfkc(t)) {
                prop_assert_eq!(t.nfkc().collect::<String>(), t);
            }
        }
    }

    #[test]
    fn hot_columns_read_whole(records in prop::collection::vec(record(), 0..100)) {
        // Past one 32-entry block of the outcome scan.
        let sel = selection(records);
        let shard = HotShard::open(hot::build(&meta("p"), &sel, &Policy::default()).unwrap()).unwrap();
        check_columns(&shard, &[StrField::Kind, StrField::Tool, StrField::CallId]);
    }

    #[test]
    fn cold_vocabulary_is_the_token_set(records in prop::collection::vec(record(), 0..12), p in policy()) {
        let sel = selection(records);
        let b = cold::build_digest(&meta("p"), &sel, &p).unwrap();
        let (d, vocabulary) = (ColdDigest::open(&b.file[..]).unwrap(), b.vocabulary);
        let mut want = BTreeSet::new();
        for r in &sel.records {
            for part in [p.text(r), p.thinking(r)].into_iter().flatten() {
                want.extend(tokenize(part));
            }
        }
        prop_assert_eq!(d.vocabulary_len(), vocabulary.len());
        let got: BTreeSet<String> = vocabulary
            .to_strings()
            .unwrap()
            .into_iter()
            .collect();
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(d.vocabulary_total(), want.len() as u64);
        prop_assert_eq!(d.tuple_count(), sel.records.len());
        check_tuples(&d, &sel.records);
        prop_assert!(b.summary.coverage.complete);
    }
}

fn check_tuples<B: AsRef<[u8]>>(d: &ColdDigest<B>, records: &[Record]) {
    let mut want: HashMap<(Field, String), Vec<u32>> = HashMap::new();
    for (i, r) in records.iter().take(d.tuple_count()).enumerate() {
        let t = d.tuple(i).unwrap();
        assert_eq!(t.index() as usize, r.index);
        assert_eq!(t.entry_id().unwrap(), r.entry_id);
        assert_eq!(
            t.operation_address().unwrap(),
            r.operation_address.as_deref()
        );
        assert_eq!(
            t.address().unwrap(),
            r.operation_address.as_deref().unwrap_or(&r.entry_id)
        );
        assert_eq!(t.reference().unwrap(), r.reference.as_deref());
        assert_eq!(t.provider().unwrap(), r.provider.as_deref());
        assert_eq!(t.action().unwrap(), r.action.as_deref());
        assert_eq!(t.role().unwrap(), r.role.as_deref());
        assert_eq!(t.tool().unwrap(), r.tool.as_deref());
        assert_eq!(t.outcome().unwrap(), r.outcome);
        assert_eq!(t.is_error().unwrap(), r.is_error);
        let vals = [
            (Field::Ref, r.reference.clone()),
            (Field::Provider, r.provider.clone()),
            (Field::Action, r.action.clone()),
            (Field::Outcome, r.outcome.map(|o| o.as_str().to_owned())),
            (Field::Role, r.role.clone()),
            (Field::Tool, r.tool.clone()),
        ];
        for (f, v) in vals {
            if let Some(v) = v {
                want.entry((f, v)).or_default().push(i as u32);
            }
        }
    }
    for ((f, v), list) in &want {
        assert_eq!(&d.field_postings(*f, v).unwrap(), list);
    }
    assert_eq!(d.fields().unwrap().len(), want.len());
}

// ---------------------------------------------------------------- cold

#[test]
fn cold_sample_digest() {
    let (m, s) = sample();
    let b = cold::build_digest(&m, &s, &Policy::default()).unwrap();
    let (bytes, vocabulary) = (&b.file, &b.vocabulary);
    let d = ColdDigest::open(&bytes[..]).unwrap();
    assert!(vocabulary.contains(b"timeout").unwrap());
    assert!(!vocabulary.contains(b"secret").unwrap());
    assert_eq!(d.vocabulary_len(), vocabulary.len());
    assert_eq!(d.field_postings(Field::Outcome, "failed").unwrap(), [2, 3]);
    assert_eq!(d.field_postings(Field::Provider, "omp").unwrap(), [2]);
    assert_eq!(
        d.field_postings(Field::Tool, "nope").unwrap(),
        Vec::<u32>::new()
    );
    let sum = &b.summary;
    assert_eq!(sum.cache_bytes, bytes.len() as u64);
    assert_eq!(sum.source_bytes, 4096);
    assert!((sum.cache_source_ratio() - bytes.len() as f64 / 4096.0).abs() < 1e-12);
    assert_eq!(sum.links.len(), 1);
    check_tuples(&d, &s.records);
}

#[test]
fn cold_child_addresses_and_wide_ids_round_trip() {
    // Children `<base>/<k>` are stored as (base, k); odd shapes stay plain strings; over 255
    // strings the id columns widen to two bytes.
    let long = "x".repeat(65);
    let odd = [
        "u1/01".to_owned(),
        "/3".to_owned(),
        "u1/".to_owned(),
        "u1/4294967295".to_owned(),
        "u1/4294967294".to_owned(),
        "u1/-1".to_owned(),
        "a/b/7".to_owned(),
        format!("{long}/0"),
        "日本/2".to_owned(),
    ];
    let mut records = Vec::new();
    for i in 0..300 {
        let id = format!("e{i}");
        records.push(Record {
            index: i,
            entry_id: id.clone(),
            kind: "message".into(),
            tool: Some(format!("tool{i}")),
            ..Record::default()
        });
        let child = format!("{id}/{}", i % 3);
        records.push(Record {
            index: i + 1000,
            entry_id: child.clone(),
            operation_address: Some(child),
            reference: odd.get(i % 20).cloned(),
            kind: "tool_call".into(),
            ..Record::default()
        });
    }
    for (i, o) in odd.iter().enumerate() {
        records.push(Record {
            index: 5000 + i,
            entry_id: o.clone(),
            operation_address: Some(format!("{o}/{i}")),
            kind: "tool_call".into(),
            ..Record::default()
        });
    }
    let s = selection(records);
    let bytes = cold::build(&meta("s1"), &s, &Policy::default()).unwrap();
    let d = ColdDigest::open(&bytes[..]).unwrap();
    assert_eq!(d.tuple_count(), s.records.len());
    check_tuples(&d, &s.records);
    assert_eq!(d.tuple(1).unwrap().address().unwrap(), "e0/0");
    assert_eq!(d.tuple(599).unwrap().entry_id().unwrap(), "e299/2");
}

#[test]
fn cold_vocabulary_cap_keeps_exact_prefix() {
    let (m, s) = sample();
    let all: Vec<String> = cold::vocabulary(&s, &Policy::default())
        .into_iter()
        .collect();
    for cap in [0u64, 1, 5, 17, 40, 1000] {
        let p = Policy {
            max_cold_vocabulary_bytes: cap,
            ..Policy::default()
        };
        let b = cold::build_digest(&m, &s, &p).unwrap();
        let (d, vocabulary) = (ColdDigest::open(&b.file[..]).unwrap(), &b.vocabulary);
        assert_eq!(d.vocabulary_len(), vocabulary.len());
        let got = vocabulary.to_strings().unwrap();
        let mut bytes = 0;
        let want: Vec<String> = all
            .iter()
            .take_while(|t| {
                bytes += t.len() as u64;
                bytes <= cap
            })
            .cloned()
            .collect();
        assert_eq!(got, want, "cap {cap}");
        let dropped = (all.len() - want.len()) as u64;
        assert_eq!(
            b.summary.coverage.count("max_cold_vocabulary_bytes"),
            dropped
        );
        assert_eq!(b.summary.coverage.complete, dropped == 0);
        assert_eq!(d.vocabulary_total(), all.len() as u64);
    }
}

#[test]
fn cold_cache_cap_keeps_exact_prefix() {
    let (m, _) = sample();
    let records: Vec<Record> = (0..200)
        .map(|i| Record {
            entry_id: format!("e{i}"),
            kind: "message".into(),
            role: Some("user".into()),
            tool: Some(format!("tool{}", i % 7)),
            text: format!("word{i} common"),
            ..Record::default()
        })
        .collect();
    let s = selection(records);
    // The cap bounds the file and the vocabulary and summary the catalog keeps for it.
    let cost = |b: &cold::ColdBuild| b.cost().unwrap();
    let full = cold::build_digest(&m, &s, &Policy::default()).unwrap();
    let full_len = cost(&full);
    assert!(full_len > (full.file.len() + full.vocabulary.as_bytes().len()) as u64);
    for cap in [full_len, full_len - 1, full_len / 2, 2500, 1200, 900, 100] {
        let p = Policy {
            max_cold_cache_bytes: cap,
            ..Policy::default()
        };
        let built = cold::build_digest(&m, &s, &p).unwrap();
        let d = ColdDigest::open(&built.file[..]).unwrap();
        assert_eq!(d.vocabulary_len(), built.vocabulary.len());
        assert_eq!(built.summary.cache_bytes, built.file.len() as u64);
        let cut = built.summary.coverage.count("max_cold_cache_bytes");
        if cap >= full_len {
            assert_eq!(cut, 0);
            assert_eq!(d.tuple_count(), 200);
            continue;
        }
        assert!(cut > 0, "cap {cap}");
        assert!(!built.summary.coverage.complete);
        if cost(&built) <= cap {
            // Tuples then vocabulary are exact prefixes.
            check_tuples(&d, &s.records);
            let all: Vec<String> = cold::vocabulary(&s, &p).into_iter().collect();
            let got = built.vocabulary.to_strings().unwrap();
            assert_eq!(got[..], all[..got.len()]);
            if d.tuple_count() > 0 {
                assert_eq!(got.len(), all.len());
            }
            let dropped = (200 - d.tuple_count()) + (all.len() - got.len());
            assert_eq!(cut, dropped as u64, "cap {cap}");
            // One more tuple would not have fit.
            if d.tuple_count() > 0 && d.tuple_count() < 200 {
                assert!(cost(&built) <= cap);
            }
        } else {
            // Not even the metadata fits: everything droppable was dropped.
            assert_eq!(d.tuple_count(), 0);
            assert_eq!(d.vocabulary_len(), 0);
        }
    }
}

// ---------------------------------------------------------------- catalog

pub(crate) fn catalog_entry(m: &SessionMeta, s: &Selection, tier: Tier, n: u64) -> CatalogEntry {
    // As in `sample_files`: the fingerprint the committed catalog was written with.
    let p = Policy {
        redact_secrets: false,
        ..Policy::default()
    };
    let summary = match tier {
        Tier::Hot => HotShard::open(hot::build(m, s, &p).unwrap())
            .unwrap()
            .summary()
            .clone(),
        Tier::Cold => cold::build_digest(m, s, &p).unwrap().summary,
    };
    CatalogEntry {
        summary,
        tier,
        identity: SourceIdentity {
            path: m.file.clone(),
            size: 4096 + n,
            mtime_ns: 1_767_225_600_000_000_000 + n as i64,
            ctime_ns: 1_767_225_600_000_000_001,
            inode: 77 + n,
            source_hash: "cd".repeat(32),
        },
        policy_fingerprint: p.fingerprint(),
        format_version: format::FORMAT_VERSION,
    }
}

#[test]
fn catalog_lists_sessions_and_merges_vocabularies() {
    let p = Policy::default();
    let mut sessions = Vec::new();
    for i in 0..6u64 {
        let mut records = sample_records();
        records[0].text = format!(
            "session{i} shared {}",
            if i % 2 == 0 { "even" } else { "odd" }
        );
        sessions.push((meta(&format!("s{i}")), selection(records)));
    }
    let mut b = CatalogBuilder::new(Branches::Active);
    let mut entries = Vec::new();
    let mut vocabs: Vec<Option<BTreeSet<String>>> = Vec::new();
    for (i, (m, s)) in sessions.iter().enumerate() {
        let tier = if i < 2 { Tier::Hot } else { Tier::Cold };
        let e = catalog_entry(m, s, tier, i as u64);
        let vocab = (tier == Tier::Cold).then(|| cold::build_digest(m, s, &p).unwrap().vocabulary);
        vocabs.push(
            vocab
                .as_ref()
                .map(|v| v.to_strings().unwrap().into_iter().collect()),
        );
        let vocab = vocab.map(|v| TermSet::checked(v).unwrap());
        assert_eq!(b.add(&e, vocab).unwrap(), i as u32);
        entries.push(e);
    }
    let bytes = b.finish().unwrap();
    let cat = Catalog::open(&bytes[..]).unwrap();
    assert_eq!(cat.len(), 6);
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(&cat.session(i).unwrap(), e);
        assert_eq!(cat.path(i).unwrap(), e.identity.path);
    }
    assert!(cat.session(6).is_err());
    let mut union: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for (i, v) in vocabs.iter().enumerate() {
        for t in v.iter().flatten() {
            union.entry(t.clone()).or_default().push(i as u32);
        }
    }
    assert_eq!(cat.term_count(), union.len());
    for (t, want) in &union {
        assert_eq!(&cat.sessions_with(t).unwrap(), want, "term {t}");
    }
    assert_eq!(cat.sessions_with("even").unwrap(), [2, 4]);
    assert_eq!(cat.sessions_with("session0").unwrap(), Vec::<u32>::new());
    assert_eq!(cat.sessions_with("timeout").unwrap(), [2, 3, 4, 5]);
    // The merged map gives each cold session its vocabulary back (hot ones have none here).
    let back: Vec<Option<BTreeSet<String>>> = cat
        .cold_vocabularies()
        .unwrap()
        .into_iter()
        .map(|v| v.map(|v| v.to_strings().unwrap().into_iter().collect()))
        .collect();
    assert_eq!(back, vocabs);
}

#[test]
fn catalog_maps_hot_and_cold_terms_ids_and_hot_totals() {
    let p = Policy::default();
    let mut b = CatalogBuilder::new(Branches::Active);
    let mut shards = Vec::new();
    for i in 0..4u64 {
        let m = meta(&format!("Sess-{i}-0123456789ab"));
        let mut records = sample_records();
        records[0].text = format!("only{i} shared");
        records[0].entry_id = format!("ENTRY-{i}abcdef");
        let s = selection(records);
        let tier = if i % 2 == 0 { Tier::Hot } else { Tier::Cold };
        let terms = if tier == Tier::Hot {
            let h = HotShard::open(hot::build(&m, &s, &p).unwrap()).unwrap();
            shards.push((h.entry_count() as u64, h.total_tokens()));
            SessionTerms::of_hot(&h).unwrap()
        } else {
            let b = cold::build_digest(&m, &s, &p).unwrap();
            let d = ColdDigest::open(&b.file[..]).unwrap();
            SessionTerms::of_cold(&d, &b.summary.session_id, b.vocabulary).unwrap()
        };
        assert!(terms
            .id_keys
            .as_ref()
            .unwrap()
            .contains(id_key("a1/0").as_bytes())
            .unwrap());
        b.add_with(&catalog_entry(&m, &s, tier, i), terms).unwrap();
    }
    let bytes = b.finish().unwrap();
    let cat = Catalog::open(&bytes[..]).unwrap();
    // Hot vocabularies join the merged map next to cold ones.
    assert_eq!(cat.sessions_with("shared").unwrap(), [0, 1, 2, 3]);
    assert_eq!(cat.sessions_with("only0").unwrap(), [0]);
    assert_eq!(cat.sessions_with("only3").unwrap(), [3]);
    // Id keys: lowercase, dashes dropped, 8 characters; session ids, entry ids, addresses.
    assert_eq!(id_key("ENTRY-2abcdef"), "entry2ab");
    assert_eq!(id_key("a1/0"), "a1/0");
    assert_eq!(cat.sessions_with_id_key("entry2ab").unwrap(), [2]);
    assert_eq!(cat.sessions_with_id_key("entry1ab").unwrap(), [1]);
    assert_eq!(
        cat.sessions_with_id_key(&id_key("sess-3-0123")).unwrap(),
        [3]
    );
    assert_eq!(cat.sessions_with_id_key("a1/0").unwrap(), [0, 1, 2, 3]);
    assert_eq!(
        cat.sessions_with_id_key("nothing").unwrap(),
        Vec::<u32>::new()
    );
    // Structural values of records: field keys, in the same map.
    assert_eq!(
        cat.sessions_with_id_key(&field_key("outcome", "failed"))
            .unwrap(),
        [0, 1, 2, 3]
    );
    assert_eq!(
        cat.sessions_with_id_key(&field_key("tool", "no_such_tool"))
            .unwrap(),
        Vec::<u32>::new()
    );
    // The id keys stay out of the term map.
    assert_eq!(cat.sessions_with("entry2ab").unwrap(), Vec::<u32>::new());
    // Hot totals equal the shard's, cold sessions have none.
    assert_eq!(cat.hot_totals(0), Some(shards[0]));
    assert_eq!(cat.hot_totals(2), Some(shards[1]));
    assert_eq!(cat.hot_totals(1), None);
    assert_eq!(cat.hot_totals(4), None);
}

// ---------------------------------------------------------------- corruption

pub(crate) fn sample_files() -> Vec<(FileKind, format::Aligned)> {
    let (m, s) = sample();
    // `redact_secrets` off: the committed index files were written before the field existed,
    // and off hashes into the same policy fingerprint (the sample has no credentials).
    let p = Policy {
        index_thinking: true,
        redact_secrets: false,
        ..Policy::default()
    };
    let hot = hot::build(&m, &s, &p).unwrap();
    let built = cold::build_digest(&m, &s, &p).unwrap();
    let (cold, vocabulary) = (built.file, built.vocabulary);
    let mut b = CatalogBuilder::new(Branches::Active);
    b.add_with(
        &catalog_entry(&m, &s, Tier::Cold, 0),
        SessionTerms::of_cold(
            &ColdDigest::open(&cold[..]).unwrap(),
            &built.summary.session_id,
            vocabulary,
        )
        .unwrap(),
    )
    .unwrap();
    let cat = b.finish().unwrap();
    vec![
        (FileKind::Hot, hot),
        (FileKind::Cold, cold),
        (FileKind::Catalog, cat),
    ]
}

/// Opens `bytes` as `kind` and reads everything; an error anywhere is fine, a panic is not.
/// Returns whether it opened.
fn open_and_read(kind: FileKind, bytes: &[u8]) -> bool {
    let bytes = format::aligned(bytes);
    match kind {
        FileKind::Hot => HotShard::open(bytes.as_ref()).is_ok(),
        FileKind::Cold => ColdDigest::open(bytes.as_ref()).is_ok(),
        FileKind::Catalog => Catalog::open(bytes.as_ref()).is_ok(),
    }
}

#[test]
fn every_single_byte_change_is_detected() {
    for (kind, file) in sample_files() {
        assert!(open_and_read(kind, &file));
        let mut v = file.to_vec();
        for i in 0..v.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                v[i] ^= mask;
                let e = match kind {
                    FileKind::Hot => HotShard::open(format::aligned(&v).as_ref()).err(),
                    FileKind::Cold => ColdDigest::open(format::aligned(&v).as_ref()).err(),
                    FileKind::Catalog => Catalog::open(format::aligned(&v).as_ref()).err(),
                };
                let e = e.unwrap_or_else(|| panic!("{kind:?}: flip {mask:#x} at {i} not detected"));
                assert!(e.is_rebuildable(), "{kind:?} at {i}: {e}");
                v[i] ^= mask;
            }
        }
        for len in 0..file.len() {
            assert!(
                !open_and_read(kind, &file[..len]),
                "{kind:?} truncated to {len}"
            );
        }
        let mut longer = file.to_vec();
        longer.push(0);
        assert!(!open_and_read(kind, &longer));
    }
}

#[test]
fn files_of_one_kind_do_not_open_as_another() {
    let files = sample_files();
    for (kind, file) in &files {
        for (other, _) in &files {
            assert_eq!(open_and_read(*other, file), kind == other);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn damaged_ranges_are_detected(which in 0usize..3, start in any::<prop::sample::Index>(),
                                   len in 1usize..64, op in 0u8..3, byte in any::<u8>()) {
        let files = sample_files();
        let (kind, file) = &files[which];
        let mut v = file.to_vec();
        let at = start.index(v.len());
        let end = (at + len).min(v.len());
        match op {
            0 => v[at..end].iter_mut().for_each(|b| *b = 0),
            1 => v[at..end].iter_mut().for_each(|b| *b = byte),
            _ => v.truncate(at),
        }
        if v != file.to_vec() {
            prop_assert!(!open_and_read(*kind, &v));
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..256), magic in 0usize..3) {
        let mut v = bytes;
        let kinds = [FileKind::Hot, FileKind::Cold, FileKind::Catalog];
        if v.len() >= 8 {
            v[..4].copy_from_slice(&kinds[magic].magic());
            v[4..8].copy_from_slice(&format::FORMAT_VERSION.to_le_bytes());
        }
        for k in kinds {
            prop_assert!(!open_and_read(k, &v));
        }
    }
}

#[test]
fn version_and_schema_mismatch_have_their_code() {
    let (_, file) = sample_files().remove(0);
    let mut v = file.to_vec();
    let other = format::FORMAT_VERSION + 1;
    v[4] = other as u8;
    let e = HotShard::open(format::aligned(&v).as_ref()).unwrap_err();
    assert_eq!(e.code(), "index_version_mismatch");
    assert_eq!(
        e.kind(),
        sessiondex_core::ErrorKind::VersionMismatch {
            expected: format::FORMAT_VERSION,
            found: other
        }
    );
}

#[test]
fn unaligned_bytes_are_refused_not_misread() {
    let (_, file) = sample_files().remove(0);
    let mut shifted = format::Aligned::new();
    shifted.push(0);
    shifted.extend_from_slice(&file);
    let e = HotShard::open(&shifted[1..]).unwrap_err();
    assert_eq!(e.code(), "index_unaligned");
    assert!(HotShard::open(format::aligned(&shifted[1..])).is_ok());
}

#[test]
fn hot_resume_bytes_round_trip() {
    let (m, s) = sample();
    let plain = hot::build(&m, &s, &Policy::default()).unwrap();
    assert!(HotShard::open(plain).unwrap().resume_bytes().is_empty());
    let blob = br#"{"records":[],"resumeState":{"v":1}}"#;
    let bytes = hot::build_with_resume(&m, &s, &Policy::default(), blob).unwrap();
    let shard = HotShard::open(bytes).unwrap();
    assert_eq!(shard.resume_bytes(), blob);
    assert_eq!(shard.entry_count(), s.records.len());
}
