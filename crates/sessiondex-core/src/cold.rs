//! Cold digests: one per session and branch mode for sessions outside the hot set.
//!
//! A digest answers "could this session match?" without entry postings:
//!
//! - the size of the session's canonical vocabulary: every token ([`crate::for_each_token`])
//!   of its indexed text under the [`Policy`] (full text, not cut at `max_entry_chars`). The
//!   terms themselves are not in the file: [`build_digest`] returns them as a
//!   front-coded [`TermList`] and the catalog's merged term map is where they are kept (it is
//!   what cold recall reads). `max_cold_vocabulary_bytes` bounds the sum of the terms' byte
//!   lengths: the kept terms are an exact prefix of the sorted vocabulary, and the digest says
//!   `max_cold_vocabulary_bytes` with the number of terms dropped.
//! - structural tuples, one per record in selection order: record index, entry id, operation
//!   address, ref, provider, action, role, tool (string ids), outcome and is-error (u8). The
//!   integer columns are narrow (1, 2 or 4 bytes per element, the least that holds the
//!   values); a string `<base>/<k>` (a tool call child's entry id and operation address) is
//!   stored as the id of `<base>` and the number `k`, and rebuilt when the digest is opened.
//! - `fields`: a front-coded [`TermList`] of `<field>\0<value>` keys; a key's position is
//!   its ordinal into `field_starts`, whose ranges in `field_postings` list the tuple ordinals
//!   having that value, for `ref`, `provider`, `action`, `outcome`, `role` and `tool`.
//!
//! The session summary (first/last timestamp, entry count, files touched, tool histogram,
//! error count, coverage, `cache_bytes`, `source_bytes`) is built with the digest
//! ([`build_digest`]) and kept in the catalog's row for the session, not in the file: nothing
//! reads it from a digest.
//!
//! `max_cold_cache_bytes` bounds the file, its vocabulary's front-coded bytes and its summary's
//! encoded bytes together (what the session costs the cold tier, [`ColdBuild::cost`]). Over
//! it, the digest keeps the longest prefix of tuples that fits, then (when no tuple fits) the
//! longest prefix of the vocabulary, then of files touched, and says `max_cold_cache_bytes`
//! with the number of items dropped.
//!
//! The vocabulary and the field keys are read in order only (the catalog's merged maps answer
//! term lookups at query time; a digest has a few dozen field keys), so they are front-coded
//! rather than FSTs, which cost far more to build.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use rkyv::{Archive, Serialize};
use sessiondex_source::{Outcome, Selection, SessionMeta};

use crate::error::{Error, ErrorKind, Result};
use crate::format::{self, Aligned, Col, FileKind, StrTableBuilder};
use crate::hot::{bool_code, bool_from, outcome_code, outcome_from};
use crate::policy::Policy;
use crate::summary::{SessionSummary, SummaryRaw};
use crate::terms::{TermCollector, TermList, TermListBuilder};

/// The payload schema text, hashed into the header's schema fingerprint.
pub(crate) const SCHEMA: &str = "cold/6 {policy_fingerprint:bytes \
vocab_len:u64 vocab_total:u64 tuples_total:u64 strings:bytes offsets_width:u8 \
string_offsets:[uW] index_width:u8 t_index:[uW] id_width:u8 t_entry_id t_operation_address \
t_reference t_provider t_action t_role t_tool:[uW] child_width:u8 derived_base:[uW] \
derived_child:[uW] t_outcome:[u8] t_is_error:[u8] fields:front-coded fields_len:u64 \
starts_width:u8 field_starts:[uW] postings_width:u8 field_postings:[uW]}";

/// The structural fields with value postings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// The full tool reference.
    Ref,
    /// The tool namespace.
    Provider,
    /// The tool action.
    Action,
    /// How a tool call ended (`succeeded`, `failed`, `aborted`, `timed_out`).
    Outcome,
    /// The role.
    Role,
    /// The tool name.
    Tool,
}

impl Field {
    /// Every field.
    pub const ALL: [Field; 6] = [
        Field::Ref,
        Field::Provider,
        Field::Action,
        Field::Outcome,
        Field::Role,
        Field::Tool,
    ];

    /// The stable name (`ref`, `provider`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Ref => "ref",
            Field::Provider => "provider",
            Field::Action => "action",
            Field::Outcome => "outcome",
            Field::Role => "role",
            Field::Tool => "tool",
        }
    }

    /// The key of `value` in the digest's field keys: `<field>\0<value>`.
    #[must_use]
    pub fn key(self, value: &str) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.as_str().len() + 1 + value.len());
        k.extend_from_slice(self.as_str().as_bytes());
        k.push(0);
        k.extend_from_slice(value.as_bytes());
        k
    }
}

/// Integer columns are stored narrow: `width` bytes (1, 2 or 4) per element, little-endian,
/// the smallest width whose all-ones value ([`none_of`]) is above every stored value, so the
/// all-ones value can mean "absent" in string-id columns.
#[derive(Archive, Serialize, Debug, Default)]
pub(crate) struct ColdPayload {
    policy_fingerprint: Vec<u8>,
    vocab_len: u64,
    vocab_total: u64,
    tuples_total: u64,
    strings: Vec<u8>,
    offsets_width: u8,
    index_width: u8,
    id_width: u8,
    child_width: u8,
    starts_width: u8,
    postings_width: u8,
    string_offsets: Vec<u8>,
    t_index: Vec<u8>,
    t_entry_id: Vec<u8>,
    t_operation_address: Vec<u8>,
    t_reference: Vec<u8>,
    t_provider: Vec<u8>,
    t_action: Vec<u8>,
    t_role: Vec<u8>,
    t_tool: Vec<u8>,
    /// Derived strings, ids `s..s+d` after the `s` stored ones: string `s+j` is
    /// `<string derived_base[j]>/<derived_child[j]>`; the base is a stored string.
    derived_base: Vec<u8>,
    derived_child: Vec<u8>,
    t_outcome: Vec<u8>,
    t_is_error: Vec<u8>,
    fields: Vec<u8>,
    fields_len: u64,
    field_starts: Vec<u8>,
    field_postings: Vec<u8>,
}

/// The all-ones value of a width: "absent" in string-id columns.
fn none_of(width: usize) -> u32 {
    match width {
        1 => u32::from(u8::MAX),
        2 => u32::from(u16::MAX),
        _ => u32::MAX,
    }
}

/// The narrowest width whose all-ones value is above every value in `values` other than
/// [`format::NONE`].
fn width_for(values: &[u32]) -> u8 {
    let max = values
        .iter()
        .copied()
        .filter(|&v| v != format::NONE)
        .max()
        .unwrap_or(0);
    if max < u32::from(u8::MAX) {
        1
    } else if max < u32::from(u16::MAX) {
        2
    } else {
        4
    }
}

/// `values` packed at `width` bytes each; [`format::NONE`] becomes the width's all-ones value.
fn pack(values: &[u32], width: u8) -> Vec<u8> {
    let w = usize::from(width);
    let mut out = Vec::with_capacity(values.len() * w);
    for &v in values {
        let v = if v == format::NONE { none_of(w) } else { v };
        out.extend_from_slice(&v.to_le_bytes()[..w]);
    }
    out
}

/// One narrow column of a built payload: its width and packed bytes.
fn packed(values: &[u32]) -> (u8, Vec<u8>) {
    let w = width_for(values);
    (w, pack(values, w))
}

/// The longest base a derived string may have (bounds what opening a digest allocates).
const MAX_DERIVED_BASE: usize = 64;

/// `(base, k)` when `s` is `<base>/<k>` with `k` written canonically and a short base.
fn split_child(s: &str) -> Option<(&str, u32)> {
    let (base, rest) = s.rsplit_once('/')?;
    let k: u32 = rest.parse().ok()?;
    (!base.is_empty()
        && base.len() <= MAX_DERIVED_BASE
        && k != format::NONE
        && k.to_string() == rest)
        .then_some((base, k))
}

/// Interns strings, storing `<base>/<k>` as a derived string (base id, k).
#[derive(Default)]
struct Interner {
    stored: StrTableBuilder,
    derived: rustc_hash::FxHashMap<(u32, u32), u32>,
    base: Vec<u32>,
    child: Vec<u32>,
}

/// A string id while building: stored ids are final, derived ones are renumbered after the
/// stored ones at the end.
#[derive(Clone, Copy)]
enum Sid {
    None,
    Stored(u32),
    Derived(u32),
}

impl Interner {
    fn intern(&mut self, s: &str) -> Result<Sid> {
        let Some((base, k)) = split_child(s) else {
            return Ok(Sid::Stored(self.stored.intern(s)?));
        };
        let b = self.stored.intern(base)?;
        if let Some(&j) = self.derived.get(&(b, k)) {
            return Ok(Sid::Derived(j));
        }
        let j = format::to_u32(self.base.len())?;
        self.base.push(b);
        self.child.push(k);
        self.derived.insert((b, k), j);
        Ok(Sid::Derived(j))
    }

    fn opt(&mut self, s: Option<&str>) -> Result<Sid> {
        s.map_or(Ok(Sid::None), |s| self.intern(s))
    }

    /// Every id, final; `None` is [`format::NONE`].
    fn resolve(&self, ids: &[Sid]) -> Result<Vec<u32>> {
        let stored = format::to_u32(self.stored.offsets.len() - 1)?;
        ids.iter()
            .map(|id| match *id {
                Sid::None => Ok(format::NONE),
                Sid::Stored(i) => Ok(i),
                Sid::Derived(j) => stored
                    .checked_add(j)
                    .filter(|&v| v != format::NONE)
                    .ok_or_else(|| Error::new(ErrorKind::TooLarge, "more than 2^32-1 strings")),
            })
            .collect()
    }
}

/// The canonical vocabulary of a selection's indexed text under `policy`, sorted (empty past
/// 4 GiB of distinct terms, where no digest can be built).
#[must_use]
pub fn vocabulary(sel: &Selection, policy: &Policy) -> BTreeSet<String> {
    let Ok(terms) = collect_vocabulary(sel, policy) else {
        return BTreeSet::new();
    };
    terms
        .sorted()
        .into_iter()
        .map(|t| String::from_utf8_lossy(t).into_owned())
        .collect()
}

/// The distinct tokens of [`vocabulary`], collected.
fn collect_vocabulary(sel: &Selection, policy: &Policy) -> Result<TermCollector> {
    let mut terms = TermCollector::default();
    collect_into(&mut terms, sel, policy)?;
    Ok(terms)
}

/// [`collect_vocabulary`] into `terms` (cleared first).
fn collect_into(terms: &mut TermCollector, sel: &Selection, policy: &Policy) -> Result<()> {
    terms.clear();
    let mut failed = None;
    for r in &sel.records {
        for part in [policy.text(r), policy.thinking(r)].into_iter().flatten() {
            terms.insert_tokens(part, |id| {
                if let Err(e) = id {
                    failed.get_or_insert(e);
                }
            });
        }
    }
    failed.map_or(Ok(()), Err)
}

fn term_list(terms: &[&[u8]]) -> Result<TermList> {
    TermList::from_sorted(terms)
}

struct Parts<'s> {
    sel: &'s Selection,
    policy_fingerprint: Vec<u8>,
    vocab_total: u64,
}

impl Parts<'_> {
    /// The payload of a digest with the first `tuples` tuples and the vocabulary `vocab`.
    fn payload(&self, vocab: &TermList, tuples: usize) -> Result<ColdPayload> {
        let mut st = Interner {
            stored: StrTableBuilder::new(),
            ..Interner::default()
        };
        // Seven string-id columns: entry id, operation address, ref, provider, action, role,
        // tool.
        let mut ids: [Vec<Sid>; 7] = Default::default();
        let mut index: Vec<u32> = Vec::new();
        let mut p = ColdPayload {
            policy_fingerprint: self.policy_fingerprint.clone(),
            vocab_len: vocab.len() as u64,
            vocab_total: self.vocab_total,
            tuples_total: self.sel.records.len() as u64,
            ..ColdPayload::default()
        };
        let mut by_value: BTreeMap<Vec<u8>, Vec<u32>> = BTreeMap::new();
        for (i, r) in self.sel.records.iter().take(tuples).enumerate() {
            let ord = format::to_u32(i)?;
            index.push(format::to_u32(r.index)?);
            ids[0].push(st.intern(&r.entry_id)?);
            ids[1].push(st.opt(r.operation_address.as_deref())?);
            ids[2].push(st.opt(r.reference.as_deref())?);
            ids[3].push(st.opt(r.provider.as_deref())?);
            ids[4].push(st.opt(r.action.as_deref())?);
            ids[5].push(st.opt(r.role.as_deref())?);
            ids[6].push(st.opt(r.tool.as_deref())?);
            p.t_outcome.push(outcome_code(r.outcome));
            p.t_is_error.push(bool_code(r.is_error));
            let values = [
                (Field::Ref, r.reference.as_deref()),
                (Field::Provider, r.provider.as_deref()),
                (Field::Action, r.action.as_deref()),
                (Field::Outcome, r.outcome.map(Outcome::as_str)),
                (Field::Role, r.role.as_deref()),
                (Field::Tool, r.tool.as_deref()),
            ];
            for (field, value) in values {
                if let Some(v) = value {
                    by_value.entry(field.key(v)).or_default().push(ord);
                }
            }
        }
        let mut fields = TermListBuilder::new();
        let mut starts = vec![0u32];
        let mut postings = Vec::new();
        for (key, list) in by_value {
            fields.insert(&key)?;
            postings.extend_from_slice(&list);
            starts.push(format::to_u32(postings.len())?);
        }
        let fields = fields.finish();
        p.fields_len = fields.len() as u64;
        p.fields = fields.as_bytes().to_vec();
        (p.starts_width, p.field_starts) = packed(&starts);
        // Tuple ordinals are below the tuple count.
        p.postings_width = width_for(&[format::to_u32(tuples)?]);
        p.field_postings = pack(&postings, p.postings_width);
        (p.index_width, p.t_index) = packed(&index);
        // String ids are below the string count.
        let count = st.stored.offsets.len() - 1 + st.base.len();
        p.id_width = width_for(&[format::to_u32(count)?]);
        let w = p.id_width;
        let col = |c: &[Sid]| -> Result<Vec<u8>> { Ok(pack(&st.resolve(c)?, w)) };
        p.t_entry_id = col(&ids[0])?;
        p.t_operation_address = col(&ids[1])?;
        p.t_reference = col(&ids[2])?;
        p.t_provider = col(&ids[3])?;
        p.t_action = col(&ids[4])?;
        p.t_role = col(&ids[5])?;
        p.t_tool = col(&ids[6])?;
        p.derived_base = pack(&st.base, p.id_width);
        (p.child_width, p.derived_child) = packed(&st.child);
        (p.offsets_width, p.string_offsets) = packed(&st.stored.offsets);
        p.strings = st.stored.bytes;
        Ok(p)
    }

    /// The digest file with the first `tuples` tuples. `vocab` is the kept vocabulary; the
    /// file records only how many terms it has.
    fn file(&self, vocab: &TermList, tuples: usize) -> Result<Aligned> {
        let p = self.payload(vocab, tuples)?;
        Ok(format::seal_in_place(
            FileKind::Cold,
            format::to_sealable(&p)?,
        ))
    }
}

/// A built cold digest and what the catalog keeps for its session.
#[derive(Debug)]
pub struct ColdBuild {
    /// The digest file.
    pub file: Aligned,
    /// The kept vocabulary (a prefix, see the module docs), for the catalog's merged term map.
    pub vocabulary: TermList,
    /// The session's summary, with the caps' coverage reasons and `cache_bytes` the file's
    /// length, for the catalog's row.
    pub summary: SessionSummary,
}

impl ColdBuild {
    /// What the session costs the cold tier, which `max_cold_cache_bytes` bounds: the file,
    /// the vocabulary's front-coded bytes and the summary's encoded bytes.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::TooLarge`] when the summary cannot be encoded.
    pub fn cost(&self) -> Result<u64> {
        cost(&self.file, &self.vocabulary, &self.summary)
    }
}

/// [`ColdBuild::cost`] of its parts.
fn cost(file: &Aligned, vocabulary: &TermList, summary: &SessionSummary) -> Result<u64> {
    let summary = format::to_payload(&SummaryRaw::from(summary))?.len();
    Ok((file.len() + vocabulary.as_bytes().len() + summary) as u64)
}

/// The largest `k` in `0..=hi` with `fits(k)`, assuming `fits` is monotone; `None` when even
/// `fits(0)` fails.
fn largest_fitting(
    hi: usize,
    mut fits: impl FnMut(usize) -> Result<bool>,
) -> Result<Option<usize>> {
    if !fits(0)? {
        return Ok(None);
    }
    let (mut lo, mut hi) = (0usize, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid)? {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(Some(lo))
}

/// Builds a cold digest file from a selection (its vocabulary and summary dropped: see
/// [`build_digest`]).
///
/// # Errors
///
/// [`ErrorKind::TooLarge`] when a column exceeds `u32` offsets.
pub fn build(meta: &SessionMeta, sel: &Selection, policy: &Policy) -> Result<Aligned> {
    build_digest(meta, sel, policy).map(|b| b.file)
}

/// Builds a cold digest file from a selection, with the vocabulary it counts and the session's
/// summary, which the catalog keeps: the file holds neither.
///
/// # Errors
///
/// [`ErrorKind::TooLarge`] when a column exceeds `u32` offsets.
pub fn build_digest(meta: &SessionMeta, sel: &Selection, policy: &Policy) -> Result<ColdBuild> {
    crate::terms::with_collector(|collected| build_with(collected, meta, sel, policy))
}

/// [`build`] with a collector for the vocabulary.
fn build_with(
    collected: &mut TermCollector,
    meta: &SessionMeta,
    sel: &Selection,
    policy: &Policy,
) -> Result<ColdBuild> {
    let mut summary = SessionSummary::new(meta, sel);
    collect_into(collected, sel, policy)?;
    let all_terms = collected.sorted();
    let mut kept_terms = 0usize;
    let mut bytes = 0u64;
    for t in &all_terms {
        bytes += t.len() as u64;
        if bytes > policy.max_cold_vocabulary_bytes {
            break;
        }
        kept_terms += 1;
    }
    summary.coverage.add(
        "max_cold_vocabulary_bytes",
        (all_terms.len() - kept_terms) as u64,
    );
    let parts = Parts {
        sel,
        policy_fingerprint: policy.fingerprint().into_bytes(),
        vocab_total: all_terms.len() as u64,
    };
    let cap = policy.max_cold_cache_bytes;
    let n = sel.records.len();
    let vocab = term_list(&all_terms[..kept_terms])?;
    let file = parts.file(&vocab, n)?;
    // The file, and the vocabulary and summary the catalog keeps for it.
    if cost(&file, &vocab, &summary)? <= cap {
        return Ok(finish(file, vocab, summary));
    }
    // Over the cap: the reason (a fixed-width count) is part of what must fit.
    summary.coverage.add("max_cold_cache_bytes", 1);
    let fits = |s: &SessionSummary, v: &TermList, k: usize| -> Result<bool> {
        Ok(cost(&parts.file(v, k)?, v, s)? <= cap)
    };
    if let Some(k) = largest_fitting(n, |k| fits(&summary, &vocab, k))? {
        return finish_capped(&parts, summary, vocab, k, (n - k) as u64);
    }
    // Not even the vocabulary fits: keep a prefix of it and no tuples.
    let vocab_for = |t: usize| term_list(&all_terms[..t]);
    if let Some(t) = largest_fitting(kept_terms, |t| fits(&summary, &vocab_for(t)?, 0))? {
        let dropped = (n + kept_terms - t) as u64;
        return finish_capped(&parts, summary, vocab_for(t)?, 0, dropped);
    }
    // Not even the metadata fits: keep a prefix of files touched.
    let all_files = std::mem::take(&mut summary.files_touched);
    let empty = vocab_for(0)?;
    let mut s = summary.clone();
    let f = largest_fitting(all_files.len(), |f| {
        s.files_touched = all_files[..f].to_vec();
        fits(&s, &empty, 0)
    })?
    .unwrap_or(0);
    summary.files_touched = all_files[..f].to_vec();
    let dropped = (n + kept_terms + all_files.len() - f) as u64;
    finish_capped(&parts, summary, empty, 0, dropped)
}

/// The build's result, the summary recording the file's length.
fn finish(file: Aligned, vocabulary: TermList, mut summary: SessionSummary) -> ColdBuild {
    summary.cache_bytes = file.len() as u64;
    ColdBuild {
        file,
        vocabulary,
        summary,
    }
}

fn finish_capped(
    parts: &Parts<'_>,
    mut summary: SessionSummary,
    vocab: TermList,
    tuples: usize,
    dropped: u64,
) -> Result<ColdBuild> {
    // Replace the placeholder count of 1 with the real one; the width does not change.
    summary
        .coverage
        .add("max_cold_cache_bytes", dropped.saturating_sub(1));
    Ok(finish(parts.file(&vocab, tuples)?, vocab, summary))
}

/// A narrow integer column located in a payload.
#[derive(Debug, Clone, Copy, Default)]
struct Narrow {
    col: Col,
    width: usize,
}

impl Narrow {
    /// Checks the width and that the bytes hold whole elements.
    fn of(base: &[u8], bytes: &[u8], width: u8) -> Result<Narrow> {
        let width = usize::from(width);
        if !matches!(width, 1 | 2 | 4) || !bytes.len().is_multiple_of(width) {
            return Err(Error::corrupt("cold digest column width"));
        }
        Ok(Narrow {
            col: Col::of(base, bytes),
            width,
        })
    }

    fn len(self) -> usize {
        self.col.len() / self.width
    }

    /// Element `i`, widened.
    fn get(self, base: &[u8], i: usize) -> Option<u32> {
        if i >= self.len() {
            return None;
        }
        let b = self.col.bytes(base)?;
        let at = i.checked_mul(self.width)?;
        let e = b.get(at..at.checked_add(self.width)?)?;
        let mut le = [0u8; 4];
        le.get_mut(..self.width)?.copy_from_slice(e);
        Some(u32::from_le_bytes(le))
    }

    /// A string id: the all-ones value becomes [`format::NONE`].
    fn id(self, base: &[u8], i: usize) -> Option<u32> {
        let v = self.get(base, i)?;
        Some(if v == none_of(self.width) {
            format::NONE
        } else {
            v
        })
    }

    /// Elements `range`, widened; `None` when out of range.
    fn range(self, base: &[u8], range: Range<usize>) -> Option<Vec<u32>> {
        if range.is_empty() {
            return Some(Vec::new());
        }
        let w = self.width;
        let b = self.col.bytes(base)?;
        let b = b.get(range.start.checked_mul(w)?..range.end.checked_mul(w)?)?;
        Some(match w {
            1 => b.iter().map(|&x| u32::from(x)).collect(),
            2 => b
                .chunks_exact(2)
                .map(|c| u32::from(u16::from_le_bytes([c[0], c[1]])))
                .collect(),
            _ => b
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        })
    }

    /// The range `[self[i], self[i+1])`, checked to be ordered.
    fn span(self, base: &[u8], i: usize) -> Option<Range<usize>> {
        let a = self.get(base, i)? as usize;
        let b = self.get(base, i.checked_add(1)?)? as usize;
        (a <= b).then_some(a..b)
    }
}

/// The string table: bytes plus narrow `s+1` offsets.
#[derive(Debug, Clone, Copy, Default)]
struct Strings {
    bytes: Col,
    offsets: Narrow,
}

impl Strings {
    fn get(self, base: &[u8], id: u32) -> Result<&str> {
        let bad = || Error::corrupt(format!("string {id} out of range"));
        let span = self.offsets.span(base, id as usize).ok_or_else(bad)?;
        let all = self.bytes.bytes(base).ok_or_else(bad)?;
        let b = all.get(span).ok_or_else(bad)?;
        format::utf8(b).ok_or_else(|| Error::corrupt(format!("string {id} is not UTF-8")))
    }

    fn opt(self, base: &[u8], id: u32) -> Result<Option<&str>> {
        if id == format::NONE {
            Ok(None)
        } else {
            self.get(base, id).map(Some)
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Cols {
    n: usize,
    strings: Strings,
    t_index: Narrow,
    t_entry_id: Narrow,
    t_operation_address: Narrow,
    t_reference: Narrow,
    t_provider: Narrow,
    t_action: Narrow,
    t_role: Narrow,
    t_tool: Narrow,
    derived_base: Narrow,
    derived_child: Narrow,
    t_outcome: Col,
    t_is_error: Col,
    fields: Col,
    field_starts: Narrow,
    field_postings: Narrow,
}

/// The derived strings `<base>/<k>`, rebuilt on open: string `stored + j` is
/// `text[ends[j]..ends[j+1]]`.
#[derive(Debug, Default)]
struct Derived {
    stored: usize,
    text: String,
    ends: Vec<usize>,
}

impl Derived {
    fn get(&self, j: usize) -> Option<&str> {
        let a = *self.ends.get(j)?;
        let b = *self.ends.get(j.checked_add(1)?)?;
        self.text.get(a..b)
    }
}

/// An opened cold digest over any bytes.
#[derive(Debug)]
pub struct ColdDigest<B> {
    bytes: B,
    payload: Range<usize>,
    cols: Cols,
    derived: Derived,
    vocab_total: u64,
    vocab_len: usize,
    fields_len: usize,
    tuples_total: u64,
    policy_fingerprint: String,
}

fn missing() -> Error {
    Error::corrupt("column out of range")
}

impl<B: AsRef<[u8]>> ColdDigest<B> {
    /// Opens a cold digest: header, checksum, rkyv validation, column widths and lengths, term
    /// list counts (each list is checked as it is read), and the derived strings (rebuilt
    /// here).
    ///
    /// # Errors
    ///
    /// `index_corrupt` or `index_version_mismatch` for any damage; `index_unaligned` when the
    /// bytes are not aligned to [`format::ALIGN`]. Never panics.
    pub fn open(bytes: B) -> Result<ColdDigest<B>> {
        let range = format::unseal(FileKind::Cold, bytes.as_ref())?;
        let base = &bytes.as_ref()[range.clone()];
        let a = format::access::<ArchivedColdPayload>(base)?;
        let c8 = |s: &[u8]| Col::of(base, s);
        let nw = |s: &[u8], w: u8| Narrow::of(base, s, w);
        let id = |s: &[u8]| Narrow::of(base, s, a.id_width);
        let t_index = nw(a.t_index.as_slice(), a.index_width)?;
        let n = t_index.len();
        let cols = Cols {
            n,
            strings: Strings {
                bytes: c8(a.strings.as_slice()),
                offsets: nw(a.string_offsets.as_slice(), a.offsets_width)?,
            },
            t_index,
            t_entry_id: id(a.t_entry_id.as_slice())?,
            t_operation_address: id(a.t_operation_address.as_slice())?,
            t_reference: id(a.t_reference.as_slice())?,
            t_provider: id(a.t_provider.as_slice())?,
            t_action: id(a.t_action.as_slice())?,
            t_role: id(a.t_role.as_slice())?,
            t_tool: id(a.t_tool.as_slice())?,
            derived_base: id(a.derived_base.as_slice())?,
            derived_child: nw(a.derived_child.as_slice(), a.child_width)?,
            t_outcome: c8(a.t_outcome.as_slice()),
            t_is_error: c8(a.t_is_error.as_slice()),
            fields: c8(a.fields.as_slice()),
            field_starts: nw(a.field_starts.as_slice(), a.starts_width)?,
            field_postings: nw(a.field_postings.as_slice(), a.postings_width)?,
        };
        let narrow = [
            cols.t_entry_id,
            cols.t_operation_address,
            cols.t_reference,
            cols.t_provider,
            cols.t_action,
            cols.t_role,
            cols.t_tool,
        ];
        if narrow.iter().any(|col| col.len() != n)
            || cols.derived_base.len() != cols.derived_child.len()
            || [cols.t_outcome, cols.t_is_error]
                .iter()
                .any(|col| col.len() != n)
            || cols.strings.offsets.len() == 0
        {
            return Err(Error::corrupt("cold digest columns differ in length"));
        }
        // Every term takes at least two bytes (a header and a non-empty suffix) but an empty
        // first one (a header); the lists themselves are checked as they are read.
        let list_len = |len: &rkyv::Archived<u64>, bytes: &[u8]| -> Result<usize> {
            usize::try_from(len.to_native())
                .ok()
                .filter(|&n| n <= bytes.len().div_ceil(2))
                .ok_or_else(|| Error::corrupt("term list longer than its bytes"))
        };
        let vocab_total = a.vocab_total.to_native();
        let vocab_len = usize::try_from(a.vocab_len.to_native())
            .ok()
            .filter(|&n| n as u64 <= vocab_total)
            .ok_or_else(|| Error::corrupt("more terms kept than the vocabulary has"))?;
        let fields_len = list_len(&a.fields_len, a.fields.as_slice())?;
        if cols.field_starts.len() != fields_len + 1 {
            return Err(Error::corrupt("field postings do not match the field map"));
        }
        let derived = derive_strings(base, &cols)?;
        let policy_fingerprint = crate::summary::string(&a.policy_fingerprint)?;
        Ok(ColdDigest {
            vocab_total,
            tuples_total: a.tuples_total.to_native(),
            bytes,
            payload: range,
            cols,
            derived,
            vocab_len,
            fields_len,
            policy_fingerprint,
        })
    }

    fn base(&self) -> &[u8] {
        self.bytes.as_ref().get(self.payload.clone()).unwrap_or(&[])
    }

    /// The underlying bytes.
    pub fn bytes(&self) -> &B {
        &self.bytes
    }

    /// SHA-256 (hex) of the [`Policy`] the digest was built with.
    #[must_use]
    pub fn policy_fingerprint(&self) -> &str {
        &self.policy_fingerprint
    }

    /// Terms kept (the catalog holds them).
    #[must_use]
    pub fn vocabulary_len(&self) -> usize {
        self.vocab_len
    }

    /// Terms in the full vocabulary, before caps.
    #[must_use]
    pub fn vocabulary_total(&self) -> u64 {
        self.vocab_total
    }

    /// Tuples kept (a prefix of the selection's records).
    #[must_use]
    pub fn tuple_count(&self) -> usize {
        self.cols.n
    }

    /// Records in the selection, before caps.
    #[must_use]
    pub fn tuples_total(&self) -> u64 {
        self.tuples_total
    }

    /// Tuple `i`, or `None` past the end.
    #[must_use]
    pub fn tuple(&self, i: usize) -> Option<ColdTuple<'_>> {
        (i < self.cols.n).then(|| ColdTuple {
            base: self.base(),
            cols: &self.cols,
            derived: &self.derived,
            i,
        })
    }

    /// The field-value keys `<field>\0<value>` (see [`Field::key`]) in byte order; a key's
    /// position is its ordinal for [`ColdDigest::field_postings_at`].
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn fields(&self) -> Result<TermList<&[u8]>> {
        let b = self.cols.fields.bytes(self.base()).ok_or_else(missing)?;
        Ok(TermList::new(b, self.fields_len))
    }

    /// Tuple ordinals of field-value ordinal `ord`.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when out of range.
    pub fn field_postings_at(&self, ord: u64) -> Result<Vec<u32>> {
        let ord = usize::try_from(ord).map_err(|_| missing())?;
        let base = self.base();
        let span = self.cols.field_starts.span(base, ord).ok_or_else(missing)?;
        self.cols
            .field_postings
            .range(base, span)
            .ok_or_else(missing)
    }

    /// Tuple ordinals whose `field` equals `value`, ascending; empty when none.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn field_postings(&self, field: Field, value: &str) -> Result<Vec<u32>> {
        let key = field.key(value);
        let fields = self.fields()?;
        let mut keys = fields.cursor();
        let mut ord = 0u64;
        while let Some(k) = keys.next_term()? {
            match k.cmp(key.as_slice()) {
                std::cmp::Ordering::Less => ord += 1,
                std::cmp::Ordering::Equal => return self.field_postings_at(ord),
                std::cmp::Ordering::Greater => break,
            }
        }
        Ok(Vec::new())
    }
}

/// Rebuilds every derived string; each base must be a stored string of at most
/// [`MAX_DERIVED_BASE`] bytes (so the text is at most a few dozen bytes per derived string).
fn derive_strings(base: &[u8], cols: &Cols) -> Result<Derived> {
    let stored = cols.strings.offsets.len() - 1;
    let count = cols.derived_base.len();
    let mut d = Derived {
        stored,
        text: String::new(),
        ends: Vec::with_capacity(count + 1),
    };
    d.ends.push(0);
    for j in 0..count {
        let b = cols.derived_base.get(base, j).ok_or_else(missing)?;
        let k = cols.derived_child.get(base, j).ok_or_else(missing)?;
        if b as usize >= stored {
            return Err(Error::corrupt("derived string without a stored base"));
        }
        let b = cols.strings.get(base, b)?;
        if b.len() > MAX_DERIVED_BASE {
            return Err(Error::corrupt("derived string base too long"));
        }
        d.text.push_str(b);
        d.text.push('/');
        d.text.push_str(&k.to_string());
        d.ends.push(d.text.len());
    }
    Ok(d)
}

/// A view of one structural tuple.
#[derive(Debug, Clone, Copy)]
pub struct ColdTuple<'a> {
    base: &'a [u8],
    cols: &'a Cols,
    derived: &'a Derived,
    i: usize,
}

impl<'a> ColdTuple<'a> {
    fn s(&self, col: Narrow) -> Result<Option<&'a str>> {
        let id = col.id(self.base, self.i).ok_or_else(missing)?;
        match (id as usize).checked_sub(self.derived.stored) {
            Some(j) if id != format::NONE => self
                .derived
                .get(j)
                .map(Some)
                .ok_or_else(|| Error::corrupt(format!("string {id} out of range"))),
            _ => self.cols.strings.opt(self.base, id),
        }
    }

    /// The record's index in the selection.
    #[must_use]
    pub fn index(&self) -> u32 {
        self.cols.t_index.get(self.base, self.i).unwrap_or(0)
    }

    /// The entry id.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage (so for every accessor below).
    pub fn entry_id(&self) -> Result<&'a str> {
        self.s(self.cols.t_entry_id)?
            .ok_or_else(|| Error::corrupt("tuple without entry id"))
    }

    /// `<entryId>/<k>` of a tool call child.
    pub fn operation_address(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.t_operation_address)
    }

    /// The address a caller follows: the operation address, else the entry id.
    pub fn address(&self) -> Result<&'a str> {
        match self.operation_address()? {
            Some(a) => Ok(a),
            None => self.entry_id(),
        }
    }

    /// The full tool reference.
    pub fn reference(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.t_reference)
    }

    /// The tool namespace.
    pub fn provider(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.t_provider)
    }

    /// The tool action.
    pub fn action(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.t_action)
    }

    /// The role.
    pub fn role(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.t_role)
    }

    /// The tool name.
    pub fn tool(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.t_tool)
    }

    /// How a tool call ended.
    pub fn outcome(&self) -> Result<Option<Outcome>> {
        outcome_from(
            self.cols
                .t_outcome
                .u8(self.base, self.i)
                .ok_or_else(missing)?,
        )
    }

    /// The typed error flag.
    pub fn is_error(&self) -> Result<Option<bool>> {
        bool_from(
            self.cols
                .t_is_error
                .u8(self.base, self.i)
                .ok_or_else(missing)?,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A range of a narrow column, read at once, is its elements read one by one.
        #[test]
        fn a_narrow_range_is_its_elements(
            values in proptest::collection::vec(0u32..u32::MAX, 0..60),
            width_of in 0usize..3,
            a in 0usize..70,
            len in 0usize..70,
        ) {
            let width = [1u8, 2, 4][width_of];
            let max = if width == 4 { u32::MAX - 1 } else { (1u32 << (8 * u32::from(width))) - 2 };
            let values: Vec<u32> = values.into_iter().map(|v| v % (max + 1)).collect();
            let bytes = pack(&values, width);
            let col = Narrow::of(&bytes, &bytes, width).unwrap();
            let range = a..a + len;
            let one_by_one: Option<Vec<u32>> = range.clone().map(|i| col.get(&bytes, i)).collect();
            proptest::prop_assert_eq!(col.range(&bytes, range), one_by_one);
        }
    }
}
