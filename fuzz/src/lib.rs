//! Shared code of the fuzz targets: what each target does with its input, the valid index files
//! that mutations start from, and the seed generator's output.
//!
//! Every `exercise_*` function must return normally on any input; a panic is a bug in the
//! crate under test (or in an assertion here, which states an invariant of that crate).

pub mod recall;

use std::sync::OnceLock;

use fst::Streamer;
use sessiondex_core::catalog::{
    Catalog, CatalogBuilder, CatalogEntry, SessionTerms, SourceIdentity, TermSet, Tier,
};
use sessiondex_core::cold::{self, ColdDigest, Field};
use sessiondex_core::format::{self, Aligned, FOOTER_LEN, HEADER_LEN};
use sessiondex_core::hot::{self, HotShard};
use sessiondex_core::terms::TermList;
use sessiondex_core::Policy;
use sessiondex_query::fuzzy::{self, FuzzyOptions};
use sessiondex_query::{CompiledRegex, RegexLimits};
use sessiondex_source::{read_bytes, Branches, Format, ReadOptions, Session};

/// The sessions that valid index files are built from: the bundled examples (one per format)
/// and the damaged sessions of `testdata/`.
pub const SESSIONS: [(&str, &[u8]); 7] = [
    (
        "pi.jsonl",
        include_bytes!("../../examples/sessions/pi/--home-dev-webapp--/2026-11-02T09-14-03-120Z_019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f.jsonl"),
    ),
    (
        "omp.jsonl",
        include_bytes!("../../examples/sessions/omp/--home-dev-webapp--/2026-11-05T16-20-00-000Z_019a6f3c-2d4e-7f50-9b1c-3d4e5f6a7b8c.jsonl"),
    ),
    (
        "claude.jsonl",
        include_bytes!("../../examples/sessions/claude-code/-home-dev-webapp/3f9d2c71-8a4e-4b6f-9c3d-2e1f0a9b8c7d.jsonl"),
    ),
    (
        "codex.jsonl",
        include_bytes!("../../examples/sessions/codex/2026/11/04/rollout-2026-11-04T08-30-00-019a5e2b-1c3d-7e4f-8a9b-0c1d2e3f4a5b.jsonl"),
    ),
    (
        "damaged-pi.jsonl",
        include_bytes!("../../testdata/sessions/damaged-pi.jsonl"),
    ),
    (
        "cycle-claude.jsonl",
        include_bytes!("../../testdata/sessions/cycle-claude.jsonl"),
    ),
    (
        "missing-parent-claude.jsonl",
        include_bytes!("../../testdata/sessions/missing-parent-claude.jsonl"),
    ),
];

/// Valid index files built from [`SESSIONS`].
#[derive(Debug)]
pub struct Samples {
    /// One hot shard per session and branch mode.
    pub hot: Vec<(String, Aligned)>,
    /// One cold digest per session and branch mode.
    pub cold: Vec<(String, Aligned)>,
    /// One catalog per branch mode: every session, alternating hot and cold.
    pub catalog: Vec<(String, Aligned)>,
}

fn read(name: &str, bytes: &[u8]) -> Option<Session> {
    read_bytes(name, bytes, &ReadOptions::default()).ok()
}

/// A catalog entry for a session as sync writes it (identity values made up).
fn catalog_entry(summary: sessiondex_core::SessionSummary, tier: Tier, n: u64) -> CatalogEntry {
    CatalogEntry {
        identity: SourceIdentity {
            path: summary.file.clone(),
            size: 4096 + n,
            mtime_ns: 1_767_225_600_000_000_000,
            ctime_ns: 1_767_225_600_000_000_001,
            inode: 77 + n,
            source_hash: "cd".repeat(32),
        },
        summary,
        tier,
        policy_fingerprint: Policy::default().fingerprint(),
        format_version: format::FORMAT_VERSION,
    }
}

/// The valid index files, built once.
///
/// # Panics
///
/// When a bundled session does not read or its index files do not build and open: the fuzz
/// targets would then start from nothing.
#[must_use]
pub fn samples() -> &'static Samples {
    static SAMPLES: OnceLock<Samples> = OnceLock::new();
    SAMPLES.get_or_init(|| {
        let policy = Policy::default();
        let mut s = Samples {
            hot: Vec::new(),
            cold: Vec::new(),
            catalog: Vec::new(),
        };
        for branches in [Branches::Active, Branches::All] {
            let mut cat = CatalogBuilder::new(branches);
            for (n, (name, bytes)) in SESSIONS.iter().enumerate() {
                let session = read(name, bytes).expect("a bundled session reads");
                let sel = session.select(branches);
                let stem = format!("{}-{}", name.trim_end_matches(".jsonl"), branches.as_str());
                let h = hot::build(&session.meta, &sel, &policy).expect("hot shard builds");
                let b = cold::build_digest(&session.meta, &sel, &policy)
                    .expect("cold digest builds");
                let shard = HotShard::open(&h[..]).expect("hot shard opens");
                ColdDigest::open(&b.file[..]).expect("cold digest opens");
                let c = b.file;
                let (tier, summary, vocab) = if n % 2 == 0 {
                    (Tier::Hot, shard.summary().clone(), None)
                } else {
                    let v = TermSet::checked(b.vocabulary).expect("vocabulary reads");
                    (Tier::Cold, b.summary, Some(v))
                };
                cat.add(&catalog_entry(summary, tier, n as u64), vocab)
                    .expect("catalog entry adds");
                s.hot.push((format!("{stem}.hot"), h));
                s.cold.push((format!("{stem}.cold"), c));
            }
            let k = cat.finish().expect("catalog builds");
            Catalog::open(&k[..]).expect("catalog opens");
            s.catalog
                .push((format!("catalog-{}.catalog", branches.as_str()), k));
        }
        s
    })
}

/// `base` with byte edits applied to its payload, then resealed so the checksum passes.
///
/// `edits` is read in 4-byte groups: a 24-bit little-endian position (modulo the payload
/// length) and the byte to store there. A trailing group shorter than 4 bytes is ignored.
#[must_use]
pub fn mutate(base: &[u8], edits: &[u8]) -> Aligned {
    let mut v = base.to_vec();
    if v.len() > HEADER_LEN + FOOTER_LEN {
        let payload = v.len() - HEADER_LEN - FOOTER_LEN;
        for e in edits.chunks_exact(4) {
            let at =
                (usize::from(e[0]) | usize::from(e[1]) << 8 | usize::from(e[2]) << 16) % payload;
            v[HEADER_LEN + at] = e[3];
        }
    }
    format::reseal(&v)
}

/// Runs `exercise` over the three views of an index-file input: the bytes as given (aligned),
/// the bytes resealed (a mutated valid file gets past the checksum), and the byte edits of the
/// input applied to a valid file chosen by its first byte.
pub fn exercise_file(data: &[u8], valid: &[(String, Aligned)], exercise: impl Fn(&[u8])) {
    exercise(&format::copy_aligned(data));
    exercise(&format::reseal(data));
    if let Some((&pick, edits)) = data.split_first() {
        if !valid.is_empty() {
            let base = &valid[usize::from(pick) % valid.len()].1;
            exercise(&mutate(base, edits));
        }
    }
}

/// Reads `data` as a session (forced `format`, or detected), selects both branch modes and
/// serializes them; with `index`, also builds and opens both index files of each (what sync
/// does next). Building is most of the time per input (fst builders), so only the detection
/// target does it and the per-format targets stay fast.
///
/// # Panics
///
/// When a reader's invariant breaks: a selection of `all` that is not every record, record
/// indices that are not positions, or an index file built from a read session that does not
/// open.
pub fn exercise_session(data: &[u8], format: Option<Format>, index: bool) {
    let Ok(session) = read_bytes(
        "fuzz.jsonl",
        data,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    ) else {
        assert!(format.is_none(), "a forced format always reads");
        return;
    };
    if let Some(f) = format {
        assert_eq!(session.meta.format, Some(f));
    }
    let _ = serde_json::to_string(&session).expect("a session serializes");
    let policy = Policy::default();
    for branches in [Branches::Active, Branches::All] {
        let sel = session.select(branches);
        if branches == Branches::All {
            assert_eq!(sel.records.len(), session.records.len());
        }
        for (i, r) in sel.records.iter().enumerate() {
            assert_eq!(r.index, i, "record indices are positions");
        }
        let _ = serde_json::to_string(&sel.records).expect("records serialize");
        // Index one branch mode per input (by length parity): builds cost two fst builders
        // each, and the other mode is covered by the next input.
        if !index || (branches == Branches::All) != (data.len() % 2 == 1) {
            continue;
        }
        // What sync does next: every read session must index.
        let h = hot::build(&session.meta, &sel, &policy).expect("hot shard builds");
        let shard = HotShard::open(&h[..]).expect("a built hot shard opens");
        assert_eq!(shard.entry_count(), sel.records.len());
        exercise_hot_shard(&shard);
        let c = cold::build(&session.meta, &sel, &policy).expect("cold digest builds");
        let digest = ColdDigest::open(&c[..]).expect("a built cold digest opens");
        exercise_cold_digest(&digest);
    }
}

/// A few terms to look up in every index file (present in the samples, and not).
const TERMS: [&str; 6] = ["the", "fix", "test", "src", "zzzz", ""];

/// Opens a hot shard and reads everything in it.
pub fn exercise_hot(bytes: &[u8]) {
    if let Ok(shard) = HotShard::open(bytes) {
        exercise_hot_shard(&shard);
    }
}

fn exercise_hot_shard<B: AsRef<[u8]>>(shard: &HotShard<B>) {
    let _ = (shard.summary(), shard.policy_fingerprint());
    let _ = (shard.total_tokens(), shard.avg_len(), shard.term_count());
    let n = shard.entry_count();
    assert!(shard.entry(n).is_none());
    if let Ok(stats) = shard.entry_stats() {
        for i in 0..=n {
            let e = shard.entry(i);
            let len = stats.token_len(i);
            let class = stats.class(i);
            // The columns cut once agree with the entries' views, damaged or not.
            if let Some(e) = e {
                assert_eq!(len, e.token_len());
                assert_eq!(class.ok(), e.class().ok());
            }
        }
    }
    for field in hot::ListField::ALL {
        if let Ok(lists) = shard.entry_lists(field) {
            for k in 0..=lists.len() {
                if let Ok(l) = lists.get(k) {
                    let _ = (l.value, l.tokens, l.len(), l.iter().count());
                    let _ = lists.find(l.value);
                }
            }
        }
    }
    for e in shard.entries() {
        let _ = e.to_record();
        let _ = (e.index(), e.flags(), e.truncated(), e.text_excluded());
        let _ = (e.token_len(), e.line(), e.offset(), e.timestamp_ms());
        let _ = (
            e.text(),
            e.thinking(),
            e.class(),
            e.entry_id(),
            e.parent_id(),
        );
        let _ = (
            e.logical_parent_id(),
            e.kind(),
            e.role(),
            e.tool(),
            e.reference(),
        );
        let _ = (e.provider(), e.action(), e.operation_address());
        let _ = (e.parent_entry_id(), e.call_id(), e.outcome(), e.is_error());
        let _ = (e.timestamp(), e.files_touched());
    }
    for t in TERMS {
        if let Ok(p) = shard.postings(t) {
            for posting in p {
                let _ = shard.entry(posting.entry as usize);
            }
        }
        let _ = shard.doc_freq(t);
    }
    let _ = shard.postings_at(u64::MAX).map(Iterator::count);
    let _ = shard
        .postings_at(shard.term_count() as u64)
        .map(Iterator::count);
    let _ = shard.for_each_term(|_, _| {});
    if let Ok(map) = shard.terms() {
        let mut s = map.stream();
        let mut k = 0;
        while let Some((_, ord)) = s.next() {
            let _ = shard.postings_at(ord).map(Iterator::count);
            k += 1;
            if k == 16 {
                break;
            }
        }
        // The query engine's walks over the term dictionary: fuzzy and regex.
        let set = fst::Set::from(map.into_fst());
        query_vocabulary(&set);
    }
}

/// Fuzzy and regex term lookups, as recall runs them over a vocabulary.
fn query_vocabulary<D: AsRef<[u8]>>(set: &fst::Set<D>) {
    static REGEXES: OnceLock<Vec<CompiledRegex>> = OnceLock::new();
    let regexes = REGEXES.get_or_init(|| {
        ["^fi", "es", "^s.c$", "t[a-z]+t"]
            .iter()
            .filter_map(|p| CompiledRegex::new(p, &RegexLimits::default()).ok())
            .collect()
    });
    for t in ["fix", "tset"] {
        let _ = fuzzy::expand(set, t, &FuzzyOptions::default());
    }
    for re in regexes {
        let _ = re.matching_terms(set, 20);
    }
}

/// Opens a cold digest, reads everything in it, and adds it to a catalog the way sync does
/// for a cold digest it built, with a vocabulary of as many terms as the digest counts (the
/// digest does not hold its terms; up to 1,000 here).
pub fn exercise_cold(bytes: &[u8]) {
    if let Ok(d) = ColdDigest::open(bytes) {
        exercise_cold_digest(&d);
        let n = d.vocabulary_len().min(1000);
        let terms: Vec<String> = (0..n).map(|i| format!("t{i:04}")).collect();
        let Ok(v) = TermList::from_sorted(&terms) else {
            return;
        };
        let summary = sessiondex_core::SessionSummary {
            session_id: "fuzz-session".into(),
            file: "/sessions/fuzz.jsonl".into(),
            ..sessiondex_core::SessionSummary::default()
        };
        if let Ok(t) = SessionTerms::of_cold(&d, &summary.session_id, v) {
            let mut cat = CatalogBuilder::new(summary.branches);
            let entry = catalog_entry(summary, Tier::Cold, 0);
            if cat.add_with(&entry, t).is_ok() {
                if let Ok(k) = cat.finish() {
                    exercise_catalog(&k);
                    if let Ok(c) = Catalog::open(&k[..]) {
                        let _ = c.cold_vocabularies();
                    }
                }
            }
        }
    }
}

fn exercise_cold_digest<B: AsRef<[u8]>>(d: &ColdDigest<B>) {
    let _ = (d.policy_fingerprint(), d.vocabulary_len());
    let _ = (d.vocabulary_total(), d.tuples_total());
    let n = d.tuple_count();
    assert!(d.tuple(n).is_none());
    for i in 0..n {
        let Some(t) = d.tuple(i) else {
            panic!("tuple {i} of {n} is missing");
        };
        let _ = (t.index(), t.entry_id(), t.operation_address(), t.address());
        let _ = (t.reference(), t.provider(), t.action(), t.role(), t.tool());
        let _ = (t.outcome(), t.is_error());
    }
    for t in TERMS {
        for f in Field::ALL {
            let _ = d.field_postings(f, t);
        }
    }
    let _ = d.field_postings(Field::ALL[0], "user");
    let _ = d.field_postings_at(u64::MAX);
    if let Ok(fields) = d.fields() {
        let mut keys = fields.cursor();
        let mut ord = 0;
        while let Ok(Some(_)) = keys.next_term() {
            let _ = d.field_postings_at(ord);
            ord += 1;
        }
    }
}

/// Opens a catalog and reads every session and every term's sessions.
pub fn exercise_catalog(bytes: &[u8]) {
    let Ok(cat) = Catalog::open(bytes) else {
        return;
    };
    let _ = (cat.branches(), cat.is_empty(), cat.term_count());
    for i in 0..cat.len() {
        let _ = cat.path(i);
        let _ = cat.session(i);
        let _ = cat.hot_totals(i);
    }
    let _ = cat.session(cat.len());
    let _ = cat.hot_totals(cat.len());
    for t in TERMS {
        let _ = cat.sessions_with(t);
        let _ = cat.sessions_with_id_key(&sessiondex_core::catalog::id_key(t));
    }
    let _ = cat.sessions_with_id_key(&sessiondex_core::catalog::field_key("outcome", "failed"));
    let _ = cat.sessions_at(u64::MAX);
    let _ = cat.validate_maps();
    // A catalog written from this one, every other session carried over.
    let mut next = CatalogBuilder::new(cat.branches());
    for i in (0..cat.len()).step_by(2) {
        if let Ok(e) = cat.session(i) {
            let _ = next.add_carried(&e, &cat, i);
            // Out of range: refused.
            let _ = next.add_carried(&e, &cat, cat.len());
        }
    }
    if let Ok(written) = next.finish_from(Some(&cat)) {
        let _ = Catalog::open(written.as_slice()).map(|c| c.validate_maps());
    }
    if let Ok(terms) = cat.terms() {
        let mut s = terms.stream();
        while let Some((_, ord)) = s.next() {
            let _ = cat.sessions_at(ord);
        }
        let set = fst::Set::from(terms.into_fst());
        query_vocabulary(&set);
    }
}
