//! Cold digests: one per session and branch mode for sessions outside the hot set.
//!
//! A digest answers "could this session match?" without entry postings:
//!
//! - `vocab`: the session's canonical vocabulary as an `fst::Set` of every token
//!   ([`crate::for_each_token`]) of its indexed text under the [`Policy`] (full text, not cut
//!   at `max_entry_chars`). `max_cold_vocabulary_bytes` bounds the sum of the terms' byte
//!   lengths: the kept terms are an exact prefix of the sorted vocabulary, and the digest says
//!   `max_cold_vocabulary_bytes` with the number of terms dropped.
//! - structural tuples, one per record in selection order: record index, entry id, operation
//!   address, ref, provider, action, role, tool (string ids), outcome and is-error (u8).
//! - `fields`: an FST map from `<field>\0<value>` to an ordinal into `field_starts`, whose
//!   ranges in `field_postings` list the tuple ordinals having that value, for `ref`,
//!   `provider`, `action`, `outcome`, `role` and `tool`.
//! - the session summary (first/last timestamp, entry count, files touched, tool histogram,
//!   error count, coverage, `cache_bytes`, `source_bytes`).
//!
//! `max_cold_cache_bytes` bounds the whole file. Over it, the digest keeps the longest prefix
//! of tuples that fits, then (when no tuple fits) the longest prefix of the vocabulary, then of
//! files touched, and says `max_cold_cache_bytes` with the number of items dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use rkyv::{Archive, Serialize};
use sessiondex_source::{Outcome, Selection, SessionMeta};

use crate::error::{Error, ErrorKind, Result};
use crate::format::{self, Aligned, Col, FileKind, StrCol, StrTableBuilder};
use crate::hot::{bool_code, bool_from, outcome_code, outcome_from};
use crate::policy::Policy;
use crate::summary::{SessionSummary, SummaryRaw};

/// The payload schema text, hashed into the header's schema fingerprint.
pub(crate) const SCHEMA: &str = "cold/1 {summary policy_fingerprint:bytes vocab:fst-set \
vocab_total:u64 tuples_total:u64 strings:bytes string_offsets:[u32] t_index:[u32] \
t_entry_id t_operation_address t_reference t_provider t_action t_role t_tool:[u32] \
t_outcome:[u8] t_is_error:[u8] fields:fst-map field_starts:[u32] field_postings:[u32]}";

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

    /// The key of `value` in the fields FST: `<field>\0<value>`.
    #[must_use]
    pub fn key(self, value: &str) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.as_str().len() + 1 + value.len());
        k.extend_from_slice(self.as_str().as_bytes());
        k.push(0);
        k.extend_from_slice(value.as_bytes());
        k
    }
}

#[derive(Archive, Serialize, Debug, Default)]
pub(crate) struct ColdPayload {
    summary: SummaryRaw,
    policy_fingerprint: Vec<u8>,
    vocab: Vec<u8>,
    vocab_total: u64,
    tuples_total: u64,
    strings: Vec<u8>,
    string_offsets: Vec<u32>,
    t_index: Vec<u32>,
    t_entry_id: Vec<u32>,
    t_operation_address: Vec<u32>,
    t_reference: Vec<u32>,
    t_provider: Vec<u32>,
    t_action: Vec<u32>,
    t_role: Vec<u32>,
    t_tool: Vec<u32>,
    t_outcome: Vec<u8>,
    t_is_error: Vec<u8>,
    fields: Vec<u8>,
    field_starts: Vec<u32>,
    field_postings: Vec<u32>,
}

/// The canonical vocabulary of a selection's indexed text under `policy`, sorted.
#[must_use]
pub fn vocabulary(sel: &Selection, policy: &Policy) -> BTreeSet<String> {
    let mut set: rustc_hash::FxHashSet<Box<str>> = rustc_hash::FxHashSet::default();
    for r in &sel.records {
        for part in [policy.text(r), policy.thinking(r)].into_iter().flatten() {
            crate::for_each_token(part, |t| {
                if !set.contains(t) {
                    set.insert(t.into());
                }
            });
        }
    }
    let mut terms: Vec<String> = set.into_iter().map(String::from).collect();
    terms.sort_unstable();
    terms.into_iter().collect()
}

fn fst_set<'a>(terms: impl Iterator<Item = &'a String>) -> Result<Vec<u8>> {
    let mut b = fst::SetBuilder::memory();
    for t in terms {
        b.insert(t)?;
    }
    Ok(b.into_inner()?)
}

struct Parts<'s> {
    sel: &'s Selection,
    policy_fingerprint: Vec<u8>,
    vocab_total: u64,
}

impl Parts<'_> {
    /// One digest with the first `tuples` tuples; `vocab` is the prebuilt FST set.
    fn assemble(&self, summary: &SessionSummary, vocab: &[u8], tuples: usize) -> Result<Aligned> {
        let mut st = StrTableBuilder::new();
        let mut p = ColdPayload {
            summary: SummaryRaw::from(summary),
            policy_fingerprint: self.policy_fingerprint.clone(),
            vocab: vocab.to_vec(),
            vocab_total: self.vocab_total,
            tuples_total: self.sel.records.len() as u64,
            ..ColdPayload::default()
        };
        let mut by_value: BTreeMap<Vec<u8>, Vec<u32>> = BTreeMap::new();
        for (i, r) in self.sel.records.iter().take(tuples).enumerate() {
            let ord = format::to_u32(i)?;
            p.t_index.push(format::to_u32(r.index)?);
            p.t_entry_id.push(st.intern(&r.entry_id)?);
            p.t_operation_address
                .push(st.opt(r.operation_address.as_deref())?);
            p.t_reference.push(st.opt(r.reference.as_deref())?);
            p.t_provider.push(st.opt(r.provider.as_deref())?);
            p.t_action.push(st.opt(r.action.as_deref())?);
            p.t_role.push(st.opt(r.role.as_deref())?);
            p.t_tool.push(st.opt(r.tool.as_deref())?);
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
        let mut fields = fst::MapBuilder::memory();
        p.field_starts.push(0);
        for (ord, (key, list)) in by_value.into_iter().enumerate() {
            fields.insert(key, ord as u64)?;
            p.field_postings.extend_from_slice(&list);
            p.field_starts.push(format::to_u32(p.field_postings.len())?);
        }
        p.fields = fields.into_inner()?;
        p.strings = st.bytes;
        p.string_offsets = st.offsets;
        Ok(format::seal(FileKind::Cold, &format::to_payload(&p)?))
    }

    /// Assembles with the file's own size recorded in the summary (a fixed-width field).
    fn sized(&self, summary: &mut SessionSummary, vocab: &[u8], tuples: usize) -> Result<Aligned> {
        let mut size = 0;
        for _ in 0..3 {
            summary.cache_bytes = size;
            let file = self.assemble(summary, vocab, tuples)?;
            if file.len() as u64 == size {
                return Ok(file);
            }
            size = file.len() as u64;
        }
        Err(Error::new(
            ErrorKind::TooLarge,
            "file size did not settle while sealing",
        ))
    }
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

/// Builds a cold digest file from a selection.
///
/// # Errors
///
/// [`ErrorKind::TooLarge`] when a column exceeds `u32` offsets.
pub fn build(meta: &SessionMeta, sel: &Selection, policy: &Policy) -> Result<Aligned> {
    let mut summary = SessionSummary::new(meta, sel);
    let all_terms: Vec<String> = vocabulary(sel, policy).into_iter().collect();
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
    let vocab = fst_set(all_terms[..kept_terms].iter())?;
    let file = parts.sized(&mut summary, &vocab, n)?;
    if file.len() as u64 <= cap {
        return Ok(file);
    }
    // Over the cap: the reason (a fixed-width count) is part of what must fit.
    summary.coverage.add("max_cold_cache_bytes", 1);
    let fits = |s: &mut SessionSummary, v: &[u8], k: usize| -> Result<bool> {
        Ok(parts.sized(s, v, k)?.len() as u64 <= cap)
    };
    let mut s = summary.clone();
    if let Some(k) = largest_fitting(n, |k| fits(&mut s, &vocab, k))? {
        return finish_capped(&parts, summary, &vocab, k, (n - k) as u64);
    }
    // Not even the vocabulary fits: keep a prefix of it and no tuples.
    let vocab_for = |t: usize| fst_set(all_terms[..t].iter());
    let mut s = summary.clone();
    if let Some(t) = largest_fitting(kept_terms, |t| fits(&mut s, &vocab_for(t)?, 0))? {
        let dropped = (n + kept_terms - t) as u64;
        return finish_capped(&parts, summary, &vocab_for(t)?, 0, dropped);
    }
    // Not even the metadata fits: keep a prefix of files touched.
    let all_files = std::mem::take(&mut summary.files_touched);
    let empty = vocab_for(0)?;
    let mut s = summary.clone();
    let f = largest_fitting(all_files.len(), |f| {
        s.files_touched = all_files[..f].to_vec();
        fits(&mut s, &empty, 0)
    })?
    .unwrap_or(0);
    summary.files_touched = all_files[..f].to_vec();
    let dropped = (n + kept_terms + all_files.len() - f) as u64;
    finish_capped(&parts, summary, &empty, 0, dropped)
}

fn finish_capped(
    parts: &Parts<'_>,
    mut summary: SessionSummary,
    vocab: &[u8],
    tuples: usize,
    dropped: u64,
) -> Result<Aligned> {
    // Replace the placeholder count of 1 with the real one; the width does not change.
    summary
        .coverage
        .add("max_cold_cache_bytes", dropped.saturating_sub(1));
    parts.sized(&mut summary, vocab, tuples)
}

#[derive(Debug, Clone, Copy, Default)]
struct Cols {
    n: usize,
    strings: StrCol,
    vocab: Col,
    t_index: Col,
    t_entry_id: Col,
    t_operation_address: Col,
    t_reference: Col,
    t_provider: Col,
    t_action: Col,
    t_role: Col,
    t_tool: Col,
    t_outcome: Col,
    t_is_error: Col,
    fields: Col,
    field_starts: Col,
    field_postings: Col,
}

/// An opened cold digest over any bytes.
#[derive(Debug)]
pub struct ColdDigest<B> {
    bytes: B,
    payload: Range<usize>,
    cols: Cols,
    vocab_total: u64,
    vocab_len: usize,
    tuples_total: u64,
    summary: SessionSummary,
    policy_fingerprint: String,
}

fn missing() -> Error {
    Error::corrupt("column out of range")
}

impl<B: AsRef<[u8]>> ColdDigest<B> {
    /// Opens a cold digest: header, checksum, rkyv validation, FST headers.
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
        let n = a.t_index.len();
        let cols = Cols {
            n,
            strings: StrCol {
                bytes: c8(a.strings.as_slice()),
                offsets: Col::of(base, a.string_offsets.as_slice()),
            },
            vocab: c8(a.vocab.as_slice()),
            t_index: Col::of(base, a.t_index.as_slice()),
            t_entry_id: Col::of(base, a.t_entry_id.as_slice()),
            t_operation_address: Col::of(base, a.t_operation_address.as_slice()),
            t_reference: Col::of(base, a.t_reference.as_slice()),
            t_provider: Col::of(base, a.t_provider.as_slice()),
            t_action: Col::of(base, a.t_action.as_slice()),
            t_role: Col::of(base, a.t_role.as_slice()),
            t_tool: Col::of(base, a.t_tool.as_slice()),
            t_outcome: c8(a.t_outcome.as_slice()),
            t_is_error: c8(a.t_is_error.as_slice()),
            fields: c8(a.fields.as_slice()),
            field_starts: Col::of(base, a.field_starts.as_slice()),
            field_postings: Col::of(base, a.field_postings.as_slice()),
        };
        let per_tuple = [
            cols.t_entry_id,
            cols.t_operation_address,
            cols.t_reference,
            cols.t_provider,
            cols.t_action,
            cols.t_role,
            cols.t_tool,
            cols.t_outcome,
            cols.t_is_error,
        ];
        if per_tuple.iter().any(|col| col.len() != n) || cols.strings.offsets.len() == 0 {
            return Err(Error::corrupt("cold digest columns differ in length"));
        }
        let vocab = fst::Set::from(format::checked_fst(a.vocab.as_slice())?);
        let fields = fst::Map::from(format::checked_fst(a.fields.as_slice())?);
        if cols.field_starts.len() != fields.len() + 1 {
            return Err(Error::corrupt("field postings do not match the field map"));
        }
        let vocab_len = vocab.len();
        let summary = a.summary.decode()?;
        let policy_fingerprint = crate::summary::string(&a.policy_fingerprint)?;
        Ok(ColdDigest {
            vocab_total: a.vocab_total.to_native(),
            tuples_total: a.tuples_total.to_native(),
            bytes,
            payload: range,
            cols,
            vocab_len,
            summary,
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

    /// The session's metadata.
    #[must_use]
    pub fn summary(&self) -> &SessionSummary {
        &self.summary
    }

    /// SHA-256 (hex) of the [`Policy`] the digest was built with.
    #[must_use]
    pub fn policy_fingerprint(&self) -> &str {
        &self.policy_fingerprint
    }

    /// The (possibly capped) vocabulary.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn vocabulary(&self) -> Result<fst::Set<&[u8]>> {
        let b = self.cols.vocab.bytes(self.base()).ok_or_else(missing)?;
        Ok(fst::Set::new(b)?)
    }

    /// An owned copy of the vocabulary, for [`crate::catalog::CatalogBuilder`].
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn vocabulary_owned(&self) -> Result<fst::Set<Vec<u8>>> {
        let b = self.cols.vocab.bytes(self.base()).ok_or_else(missing)?;
        Ok(fst::Set::new(b.to_vec())?)
    }

    /// True when the vocabulary holds `term`.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn contains(&self, term: &str) -> Result<bool> {
        Ok(self.vocabulary()?.contains(term))
    }

    /// Terms kept.
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
            i,
        })
    }

    /// The field-value map: keys `<field>\0<value>` (see [`Field::key`]), values ordinals for
    /// [`ColdDigest::field_postings_at`].
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn fields(&self) -> Result<fst::Map<&[u8]>> {
        let b = self.cols.fields.bytes(self.base()).ok_or_else(missing)?;
        Ok(fst::Map::new(b)?)
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
        span.map(|k| self.cols.field_postings.u32(base, k).ok_or_else(missing))
            .collect()
    }

    /// Tuple ordinals whose `field` equals `value`, ascending; empty when none.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn field_postings(&self, field: Field, value: &str) -> Result<Vec<u32>> {
        match self.fields()?.get(field.key(value)) {
            Some(ord) => self.field_postings_at(ord),
            None => Ok(Vec::new()),
        }
    }
}

/// A view of one structural tuple.
#[derive(Debug, Clone, Copy)]
pub struct ColdTuple<'a> {
    base: &'a [u8],
    cols: &'a Cols,
    i: usize,
}

impl<'a> ColdTuple<'a> {
    fn s(&self, col: Col) -> Result<Option<&'a str>> {
        let id = col.u32(self.base, self.i).ok_or_else(missing)?;
        self.cols.strings.opt(self.base, id)
    }

    /// The record's index in the selection.
    #[must_use]
    pub fn index(&self) -> u32 {
        self.cols.t_index.u32(self.base, self.i).unwrap_or(0)
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
