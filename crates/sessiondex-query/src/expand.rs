//! `expand` and `walk`: complete records re-read from source, bound to the pointer's
//! `sourceHash` and `lineageFingerprint`.

use serde::{Deserialize, Serialize};
use serde_json::json;
use sessiondex_source::{Branches, Format, Record, Selection};

use crate::engine::EngineOptions;
use crate::error::{Error, ErrorCode};
use crate::index::{Hydrated, Index};
use crate::request::{Call, Coverage, ExpandRequest, Selector};

/// The session an expansion or walk read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRef {
    /// The session id.
    pub session_id: String,
    /// The source path.
    pub file: String,
    /// The format.
    pub format: Option<Format>,
    /// The branch mode of the selection.
    pub branches: Branches,
    /// SHA-256 (hex) of the source as read.
    pub source_hash: String,
    /// The selected lineage's fingerprint.
    pub lineage_fingerprint: String,
    /// Records in the selection.
    pub entries: u64,
}

/// Which characters of a record's text a response carries (Unicode scalars).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextRange {
    /// First character carried.
    pub start: u64,
    /// One past the last character carried.
    pub end: u64,
    /// Characters in the whole text.
    pub total: u64,
    /// The whole text is here (`start == 0 && end == total`).
    pub complete: bool,
}

/// One expanded record: the record (its `text` possibly one chunk) and its text range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpandedEntry {
    /// The record.
    #[serde(flatten)]
    pub record: Record,
    /// The part of `text` carried.
    pub text_range: TextRange,
}

/// The answer of `expand`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Expansion {
    /// The session read.
    pub session: SessionRef,
    /// The selected records in selection order.
    pub entries: Vec<ExpandedEntry>,
    /// The call for the rest (a text cut at `maxChars`, or records not reached), or null.
    pub next: Option<Call>,
    /// Coverage of reading the session.
    pub coverage: Coverage,
}

fn session_ref(h: &Hydrated) -> SessionRef {
    SessionRef {
        session_id: h.session.meta.session_id.clone(),
        file: h.path.clone(),
        format: h.session.meta.format,
        branches: h.selection.branches,
        source_hash: h.source_hash.clone(),
        lineage_fingerprint: h.selection.lineage_fingerprint.clone(),
        entries: h.selection.records.len() as u64,
    }
}

fn read_coverage(sel: &Selection) -> Coverage {
    let mut c = Coverage::complete();
    c.eligible_sessions = 1;
    c.indexed_sessions = 1;
    if !sel.coverage.complete {
        c.incomplete_sessions = 1;
        for r in &sel.coverage.reasons {
            if r.code.makes_incomplete() {
                c.add_reason(r.code.as_str());
            }
        }
    }
    c
}

fn oob(field: &str, index: usize, n: usize) -> Error {
    Error::new(
        ErrorCode::IndexOutOfBounds,
        format!("`{field}` {index} is outside the session's {n} entries (0..{n})"),
    )
    .with_details(json!({"field": field, "index": index, "entries": n}))
}

/// Resolves one entry id or address to one position of the selection.
fn address(h: &Hydrated, field: &str, a: &str, by_operation: bool) -> Result<usize, Error> {
    let recs = &h.selection.records;
    let mut found: Vec<usize> = Vec::new();
    if by_operation {
        found = recs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.operation_address.as_deref() == Some(a))
            .map(|(i, _)| i)
            .collect();
    }
    if found.is_empty() {
        found = recs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.entry_id == a)
            .map(|(i, _)| i)
            .collect();
    }
    match found.as_slice() {
        [i] => Ok(*i),
        [] => {
            let off_lineage = h.selection.branches == Branches::Active
                && h.session
                    .records
                    .iter()
                    .any(|r| r.entry_id == a || r.operation_address.as_deref() == Some(a));
            let msg = if off_lineage {
                format!("`{a}` is not on the active branch; ask with `branches: all`")
            } else {
                format!("no record has the {field} `{a}`")
            };
            Err(Error::new(ErrorCode::AddressNotFound, msg)
                .with_details(json!({"field": field, "address": a, "offLineage": off_lineage})))
        }
        many => Err(Error::new(
            ErrorCode::AmbiguousAddress,
            format!("{} records have the {field} `{a}`", many.len()),
        )
        .with_details(json!({"field": field, "address": a, "indices": many}))),
    }
}

fn resolve_and_read(
    index: &Index,
    session: &str,
    branches: Branches,
    source_hash: Option<&str>,
    lineage: Option<&str>,
    redact: bool,
) -> Result<Hydrated, Error> {
    let r = index.resolve(session)?;
    index.hydrate_with(&index.path_of(&r), branches, source_hash, lineage, redact)
}

fn char_byte(s: &str, chars: usize) -> usize {
    s.char_indices().nth(chars).map_or(s.len(), |(b, _)| b)
}

/// Runs an expansion over `index` (opened for the request's branch mode).
///
/// # Errors
///
/// The request's validation codes; `session_not_found`, `ambiguous_session` (details
/// `candidates`), `stale_pointer`, `address_not_found` (also for an address off the active
/// branch), `ambiguous_address`, `index_out_of_bounds` (never clamped), `source_unreadable`.
pub fn expand(
    index: &Index,
    opts: &EngineOptions,
    req: &ExpandRequest,
) -> Result<Expansion, Error> {
    let v = req.clone().validate()?;
    let h = resolve_and_read(
        index,
        &req.session,
        v.branches,
        req.source_hash.as_deref(),
        req.lineage_fingerprint.as_deref(),
        opts.policy.redact_secrets && !req.reveal,
    )?;
    let n = h.selection.records.len();
    let mut picked: Vec<usize> = match &v.selector {
        Selector::Indices(ix) => {
            for &i in ix {
                if i >= n {
                    return Err(oob("indices", i, n));
                }
            }
            ix.clone()
        }
        Selector::Range(a, b) => {
            for &i in [a, b] {
                if i >= n {
                    return Err(oob("range", i, n));
                }
            }
            (*a..=*b).collect()
        }
        Selector::EntryIds(ids) => ids
            .iter()
            .map(|a| address(&h, "entryId", a, false))
            .collect::<Result<_, _>>()?,
        Selector::Addresses(ads) => ads
            .iter()
            .map(|a| address(&h, "address", a, true))
            .collect::<Result<_, _>>()?,
    };
    if (v.before > 0 || v.after > 0) && picked.len() == 1 {
        let anchor = picked[0];
        let lo = anchor.saturating_sub(v.before);
        let hi = anchor.saturating_add(v.after).min(n.saturating_sub(1));
        picked = (lo..=hi).collect();
    }
    let mut seen = std::collections::HashSet::new();
    picked.retain(|i| seen.insert(*i));

    let mut budget = v.max_chars;
    let mut entries = Vec::new();
    let mut next_from: Option<(usize, u64)> = None;
    for (k, &i) in picked.iter().enumerate() {
        let mut record = h.selection.records[i].clone();
        if !opts.policy.index_thinking {
            record.thinking = None;
        }
        let total = record.text.chars().count();
        let start = if k == 0 {
            usize::try_from(v.text_offset).unwrap_or(usize::MAX)
        } else {
            0
        };
        if start > total {
            return Err(Error::new(
                ErrorCode::IndexOutOfBounds,
                format!("`textOffset` {start} is past the text's {total} characters"),
            )
            .with_details(json!({"field": "textOffset", "index": start, "total": total})));
        }
        if budget == 0 && total > start {
            next_from = Some((k, start as u64));
            break;
        }
        let take = (total - start).min(budget);
        let end = start + take;
        budget -= take;
        if start > 0 || end < total {
            let (a, b) = (char_byte(&record.text, start), char_byte(&record.text, end));
            record.text = record.text[a..b].to_owned();
        }
        entries.push(ExpandedEntry {
            record,
            text_range: TextRange {
                start: start as u64,
                end: end as u64,
                total: total as u64,
                complete: start == 0 && end == total,
            },
        });
        if end < total {
            next_from = Some((k, end as u64));
            break;
        }
    }
    let next = match next_from {
        None => None,
        Some((k, offset)) => {
            let rest = &picked[k..];
            let contiguous = rest.windows(2).all(|w| w[1] == w[0] + 1);
            let (indices, range) = match (rest.first(), rest.last()) {
                (Some(&a), Some(&b)) if contiguous && rest.len() > 1 => {
                    (None, Some([a as i64, b as i64]))
                }
                _ => (Some(rest.iter().map(|&i| i as i64).collect()), None),
            };
            Some(Call::expand(&ExpandRequest {
                session: h.path.clone(),
                indices,
                range,
                max_chars: req.max_chars,
                source_hash: Some(h.source_hash.clone()),
                lineage_fingerprint: Some(h.selection.lineage_fingerprint.clone()),
                branches: req.branches,
                text_offset: (offset > 0).then_some(offset),
                reveal: req.reveal,
                ..ExpandRequest::default()
            })?)
        }
    };
    Ok(Expansion {
        session: session_ref(&h),
        coverage: read_coverage(&h.selection),
        entries,
        next,
    })
}

/// A `walk` request: one session, a branch mode, optionally an inclusive index range and
/// integrity bindings.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WalkRequest {
    /// The session id or path.
    pub session: String,
    /// `active` (default) or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branches: Option<Branches>,
    /// An inclusive `[first, last]` index range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[i64; 2]>,
    /// Integrity binding: the source's SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    /// Integrity binding: the selected lineage's fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage_fingerprint: Option<String>,
    /// Show credentials as the source has them instead of `[redacted:<kind>]`; default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reveal: bool,
}

/// An iterator over the complete records of a selection, in order.
#[derive(Debug)]
pub struct Walk {
    /// The session read.
    pub session: SessionRef,
    /// Coverage of reading it.
    pub coverage: Coverage,
    records: std::vec::IntoIter<Record>,
}

impl Iterator for Walk {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        self.records.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.records.size_hint()
    }
}

/// Reads a session for walking over `index` (opened for the request's branch mode).
///
/// # Errors
///
/// `session_not_found`, `ambiguous_session`, `stale_pointer`, `index_out_of_bounds` for a
/// range outside the selection, `invalid_request` for an inverted range.
pub fn walk(index: &Index, opts: &EngineOptions, req: &WalkRequest) -> Result<Walk, Error> {
    let h = resolve_and_read(
        index,
        &req.session,
        req.branches.unwrap_or_default(),
        req.source_hash.as_deref(),
        req.lineage_fingerprint.as_deref(),
        opts.policy.redact_secrets && !req.reveal,
    )?;
    let n = h.selection.records.len();
    let (lo, hi) = match req.range {
        None => (0, n),
        Some([a, b]) => {
            let a = usize::try_from(a).map_err(|_| oob("range", 0, n))?;
            let b = usize::try_from(b).map_err(|_| oob("range", 0, n))?;
            if a > b {
                return Err(Error::new(ErrorCode::InvalidRequest, "`range` is inverted"));
            }
            if b >= n {
                return Err(oob("range", b, n));
            }
            (a, b + 1)
        }
    };
    let session = session_ref(&h);
    let coverage = read_coverage(&h.selection);
    let mut records = h.selection.records;
    records.truncate(hi);
    let mut records: Vec<Record> = records.into_iter().skip(lo).collect();
    if !opts.policy.index_thinking {
        for r in &mut records {
            r.thinking = None;
        }
    }
    Ok(Walk {
        session,
        coverage,
        records: records.into_iter(),
    })
}
