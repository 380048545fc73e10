//! Hot shards: one per session and branch mode, opened zero-copy for BM25 recall.
//!
//! The payload is one rkyv archive in a columnar layout: a handful of large byte and integer
//! arrays with offsets, so validating it at open costs a few bounds checks however many entries
//! it holds. Columns (one element per entry unless noted):
//!
//! - `text` bytes + `text_offsets` (n+1): the indexed text under the [`Policy`], cut to
//!   `max_entry_chars` Unicode scalars (flag bit 1, coverage `max_entry_chars`); empty when the
//!   policy excludes the record's class (flag bit 4). UTF-8 is checked when an entry is read.
//! - `thinking` bytes + `thinking_offsets` (n+1): reasoning text, only with `index_thinking`,
//!   cut to what `max_entry_chars` leaves after `text` (flag bit 2).
//! - `lengths`: tokens per entry (text + thinking, all of them, not only those of the stored
//!   cut text), for BM25 length normalisation.
//! - `class`, `flags`, `outcome`, `is_error` (u8 each), `timestamp` (i64 ms, `i64::MIN` none),
//!   `line`, `offset` (u64: where the record starts in the source).
//! - string-id columns into one interned string table (`u32::MAX` none): entry id, parent id,
//!   logical parent id, type, role, tool, ref, provider, action, operation address, parent
//!   entry id, call id, and the raw timestamp when it is not in canonical
//!   `YYYY-MM-DDTHH:MM:SS.mmmZ` form.
//! - `files` (string ids) + `files_offsets` (n+1): files touched.
//! - `terms`: an FST map term -> term ordinal; `post_starts` (terms+1) into `post_entries`
//!   and `post_tf` (entry ordinal and term frequency, ascending by entry; plain u32 arrays so
//!   a reader can gallop through them without decoding).
//! - `term_slots` + `term_strings`: the term table, an open-addressing hash table from a
//!   term to its ordinal (the terms themselves appended to the string table), so a lookup
//!   costs a hash and a comparison or two instead of a walk down the FST (docs/format.md).
//!
//! Terms come from [`crate::for_each_token`] over the record's whole indexed text (and
//! thinking) under the policy, not the stored cut: a term past `max_entry_chars` is still
//! posted, so literal recall has no false negatives from the cut, and postings, entry lengths
//! and `total_tokens` count every token. Only the stored text is cut; what needs the text
//! itself past the cut (a snippet there, a phrase or regex check) reads it from the source at
//! the entry's `line`/`offset`, or says it could not. `max_entry_chars` in the summary's
//! coverage counts the cut entries but does not make the session incomplete (format version
//! 2; version 1 posted only the stored text and is rebuilt).

use std::ops::Range;

use rkyv::{Archive, Serialize};
use sessiondex_source::{Outcome, Record, Selection, SessionMeta, TextClass};

use crate::error::{Error, ErrorKind, Result};
use crate::format::{self, Aligned, Col, FileKind, StrCol, StrTableBuilder, NONE};
use crate::policy::{bound_chars, Policy};
use crate::summary::{format_rfc3339_ms, parse_rfc3339_ms, SessionSummary, SummaryRaw};
use crate::terms::TermCollector;

/// The payload schema text, hashed into the header's schema fingerprint.
pub(crate) const SCHEMA: &str = "hot/1 {summary policy_fingerprint:bytes total_tokens:u64 \
strings:bytes string_offsets:[u32] text:bytes text_offsets:[u32] thinking:bytes \
thinking_offsets:[u32] lengths:[u32] class:[u8] flags:[u8] outcome:[u8] is_error:[u8] \
timestamp:[i64] line:[u64] offset:[u64] entry_id parent_id logical_parent_id kind role tool \
reference provider action operation_address parent_entry_id call_id timestamp_raw:[u32] \
files:[u32] files_offsets:[u32] terms:fst term_slots:[u32] term_strings:u32 \
post_starts:[u32] post_entries:[u32] post_tf:[u32] \
list_field:[u8] list_value:[u32] list_starts:[u32] list_entries:[u32] list_tokens:[u64] resume:bytes}";

/// Flag bit: `text` was cut at `max_entry_chars`.
pub const FLAG_TEXT_TRUNCATED: u8 = 1;
/// Flag bit: `thinking` was cut at `max_entry_chars`.
pub const FLAG_THINKING_TRUNCATED: u8 = 2;
/// Flag bit: the policy excluded the record's text (thinking or tool output class).
pub const FLAG_TEXT_EXCLUDED: u8 = 4;
/// Flag bit: a Claude Code sidechain record.
pub const FLAG_SIDECHAIN: u8 = 8;
/// Flag bit: the record has reasoning text stored.
pub const FLAG_HAS_THINKING: u8 = 16;
/// Flag bit: the stored `text` is NFKC ([`crate::tokenize::is_nfkc`]), so a reader searches
/// it as stored. Clear when the check cannot tell (the quick check's `Maybe`) or it is not.
pub const FLAG_TEXT_NFKC: u8 = 32;
/// Flag bit: the stored `thinking` is NFKC, as [`FLAG_TEXT_NFKC`].
pub const FLAG_THINKING_NFKC: u8 = 64;

#[derive(Archive, Serialize, Debug)]
pub(crate) struct HotPayload {
    summary: SummaryRaw,
    policy_fingerprint: Vec<u8>,
    total_tokens: u64,
    strings: Vec<u8>,
    string_offsets: Vec<u32>,
    text: Vec<u8>,
    text_offsets: Vec<u32>,
    thinking: Vec<u8>,
    thinking_offsets: Vec<u32>,
    lengths: Vec<u32>,
    class: Vec<u8>,
    flags: Vec<u8>,
    outcome: Vec<u8>,
    is_error: Vec<u8>,
    timestamp: Vec<i64>,
    line: Vec<u64>,
    offset: Vec<u64>,
    entry_id: Vec<u32>,
    parent_id: Vec<u32>,
    logical_parent_id: Vec<u32>,
    kind: Vec<u32>,
    role: Vec<u32>,
    tool: Vec<u32>,
    reference: Vec<u32>,
    provider: Vec<u32>,
    action: Vec<u32>,
    operation_address: Vec<u32>,
    parent_entry_id: Vec<u32>,
    call_id: Vec<u32>,
    timestamp_raw: Vec<u32>,
    files: Vec<u32>,
    files_offsets: Vec<u32>,
    terms: Vec<u8>,
    /// The open-addressing table ([`term_table`]) that finds a term's ordinal without
    /// walking the FST, and the string id of ordinal 0's term: term `t` is string
    /// `term_strings + t`. Empty (and 0) in a shard without the table (the browser build
    /// writes none): lookups then go through `terms`.
    term_slots: Vec<u32>,
    term_strings: u32,
    post_starts: Vec<u32>,
    post_entries: Vec<u32>,
    post_tf: Vec<u32>,
    /// The entries of each value of the listed fields ([`ListField`]), ordered by field
    /// code, then value: the list's field code, value (a string id, or an outcome code),
    /// `k+1` starts into `list_entries` (ascending entry ordinals) and the token total of
    /// each list's entries.
    list_field: Vec<u8>,
    list_value: Vec<u32>,
    list_starts: Vec<u32>,
    list_entries: Vec<u32>,
    list_tokens: Vec<u64>,
    resume: Vec<u8>,
}

pub(crate) fn class_code(c: TextClass) -> u8 {
    match c {
        TextClass::UserText => 0,
        TextClass::AssistantText => 1,
        TextClass::Thinking => 2,
        TextClass::ToolInput => 3,
        TextClass::ToolOutput => 4,
        TextClass::Summary => 5,
        TextClass::Meta => 6,
    }
}

pub(crate) fn class_from(code: u8) -> Result<TextClass> {
    Ok(match code {
        0 => TextClass::UserText,
        1 => TextClass::AssistantText,
        2 => TextClass::Thinking,
        3 => TextClass::ToolInput,
        4 => TextClass::ToolOutput,
        5 => TextClass::Summary,
        6 => TextClass::Meta,
        _ => return Err(Error::corrupt(format!("unknown text class {code}"))),
    })
}

pub(crate) fn outcome_code(o: Option<Outcome>) -> u8 {
    match o {
        None => 0,
        Some(Outcome::Succeeded) => 1,
        Some(Outcome::Failed) => 2,
        Some(Outcome::Aborted) => 3,
        Some(Outcome::TimedOut) => 4,
    }
}

pub(crate) fn outcome_from(code: u8) -> Result<Option<Outcome>> {
    Ok(match code {
        0 => None,
        1 => Some(Outcome::Succeeded),
        2 => Some(Outcome::Failed),
        3 => Some(Outcome::Aborted),
        4 => Some(Outcome::TimedOut),
        _ => return Err(Error::corrupt(format!("unknown outcome {code}"))),
    })
}

pub(crate) fn bool_code(b: Option<bool>) -> u8 {
    match b {
        None => 0,
        Some(false) => 1,
        Some(true) => 2,
    }
}

pub(crate) fn bool_from(code: u8) -> Result<Option<bool>> {
    Ok(match code {
        0 => None,
        1 => Some(false),
        2 => Some(true),
        _ => return Err(Error::corrupt(format!("unknown flag value {code}"))),
    })
}

/// The text a hot shard stores for a record under `policy`: `(text, thinking, flags)`.
#[must_use]
pub fn stored_text<'r>(r: &'r Record, policy: &Policy) -> (&'r str, Option<&'r str>, u8) {
    let max = policy.max_entry_chars as usize;
    let mut flags = 0;
    let text = match policy.text(r) {
        Some(t) => {
            let (t, cut) = bound_chars(t, max);
            if cut {
                flags |= FLAG_TEXT_TRUNCATED;
            }
            t
        }
        None => {
            flags |= FLAG_TEXT_EXCLUDED;
            ""
        }
    };
    let thinking = policy.thinking(r).map(|th| {
        flags |= FLAG_HAS_THINKING;
        let left = max.saturating_sub(text.chars().count());
        let (th, cut) = bound_chars(th, left);
        if cut {
            flags |= FLAG_THINKING_TRUNCATED;
        }
        th
    });
    if r.sidechain {
        flags |= FLAG_SIDECHAIN;
    }
    if crate::tokenize::is_nfkc(text) {
        flags |= FLAG_TEXT_NFKC;
    }
    if thinking.is_some_and(crate::tokenize::is_nfkc) {
        flags |= FLAG_THINKING_NFKC;
    }
    (text, thinking, flags)
}

/// Builds a hot shard file from a selection.
///
/// # Errors
///
/// [`ErrorKind::TooLarge`] when a column exceeds `u32` offsets (4 GiB of text).
pub fn build(meta: &SessionMeta, sel: &Selection, policy: &Policy) -> Result<Aligned> {
    build_with_resume(meta, sel, policy, &[])
}

/// [`build`], also storing `resume`: opaque bytes the sync keeps with a hot shard so that a
/// source that only grew can be continued without parsing its old bytes again (the
/// text-free record list and reader state of `sessiondex_source::resume`).
///
/// # Errors
///
/// As [`build`].
pub fn build_with_resume(
    meta: &SessionMeta,
    sel: &Selection,
    policy: &Policy,
    resume: &[u8],
) -> Result<Aligned> {
    build_shard(meta, sel, policy, resume, !cfg!(target_arch = "wasm32"))
}

/// [`build`] without the term table, as the browser build writes a shard: lookups go
/// through the FST. For tests of that path on other targets.
///
/// # Errors
///
/// As [`build`].
#[doc(hidden)]
pub fn build_without_term_table(
    meta: &SessionMeta,
    sel: &Selection,
    policy: &Policy,
) -> Result<Aligned> {
    build_shard(meta, sel, policy, &[], false)
}

fn build_shard(
    meta: &SessionMeta,
    sel: &Selection,
    policy: &Policy,
    resume: &[u8],
    table: bool,
) -> Result<Aligned> {
    let summary = SessionSummary::new(meta, sel);
    let n = sel.records.len();
    let p = HotPayload {
        summary: SummaryRaw::from(&summary),
        policy_fingerprint: policy.fingerprint().into_bytes(),
        total_tokens: 0,
        strings: Vec::new(),
        string_offsets: Vec::new(),
        text: Vec::new(),
        text_offsets: vec![0],
        thinking: Vec::new(),
        thinking_offsets: vec![0],
        lengths: Vec::with_capacity(n),
        class: Vec::with_capacity(n),
        flags: Vec::with_capacity(n),
        outcome: Vec::with_capacity(n),
        is_error: Vec::with_capacity(n),
        timestamp: Vec::with_capacity(n),
        line: Vec::with_capacity(n),
        offset: Vec::with_capacity(n),
        entry_id: Vec::with_capacity(n),
        parent_id: Vec::with_capacity(n),
        logical_parent_id: Vec::with_capacity(n),
        kind: Vec::with_capacity(n),
        role: Vec::with_capacity(n),
        tool: Vec::with_capacity(n),
        reference: Vec::with_capacity(n),
        provider: Vec::with_capacity(n),
        action: Vec::with_capacity(n),
        operation_address: Vec::with_capacity(n),
        parent_entry_id: Vec::with_capacity(n),
        call_id: Vec::with_capacity(n),
        timestamp_raw: Vec::with_capacity(n),
        files: Vec::new(),
        files_offsets: vec![0],
        terms: Vec::new(),
        term_slots: Vec::new(),
        term_strings: 0,
        post_starts: Vec::new(),
        post_entries: Vec::new(),
        post_tf: Vec::new(),
        list_field: Vec::new(),
        list_value: Vec::new(),
        list_starts: Vec::new(),
        list_entries: Vec::new(),
        list_tokens: Vec::new(),
        resume: resume.to_vec(),
    };
    crate::terms::with_collector(|ids| postings_and_columns(ids, sel, policy, p, summary, table))
}

/// The hash of a term that picks its first slot in a hot shard's term table: xxh3-64 of
/// its bytes (seed 0).
fn term_hash(term: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(term)
}

/// Fills the term table of `p` from the shard's terms in ordinal order: each term is
/// appended to the string table `st` (not interned: ordinal `t` is string `term_strings + t`),
/// and `term_slots` is a power of two of slots over one and a half times the term count,
/// each `0` (empty) or a term's ordinal plus one. A term sits in the first empty
/// slot from `term_hash & (slots - 1)` on, wrapping (linear probing); a lookup walks the
/// same slots until it finds the term or an empty slot. The browser build writes no table
/// (the code would take about 1.8 KB of the .wasm, whose size is capped) and looks terms up in
/// the FST.
fn term_table(p: &mut HotPayload, st: &mut StrTableBuilder, sorted: &[(&[u8], u32)]) -> Result<()> {
    let t = sorted.len();
    if t == 0 {
        return Ok(());
    }
    p.term_strings = format::to_u32(st.offsets.len() - 1)?;
    st.bytes
        .reserve(sorted.iter().map(|(term, _)| term.len()).sum());
    st.offsets.reserve(t);
    let size = (t + t / 2 + 1).next_power_of_two();
    let mask = size - 1;
    p.term_slots = vec![0; size];
    for (ord, &(term, _)) in sorted.iter().enumerate() {
        st.bytes.extend_from_slice(term);
        st.offsets.push(format::to_u32(st.bytes.len())?);
        #[allow(clippy::cast_possible_truncation)]
        let mut i = term_hash(term) as usize & mask;
        while p.term_slots.get(i).is_some_and(|&v| v != 0) {
            i = (i + 1) & mask;
        }
        if let Some(slot) = p.term_slots.get_mut(i) {
            *slot = format::to_u32(ord + 1)?;
        }
    }
    // Fewer than 2^32 strings: no term's id is `NONE`.
    format::to_u32(st.offsets.len())?;
    #[cfg(test)]
    tests::damage(p);
    Ok(())
}

/// The rest of [`build_with_resume`]: the payload's entry columns and postings, with the
/// session's terms numbered by `ids` (cleared).
fn postings_and_columns(
    ids: &mut TermCollector,
    sel: &Selection,
    policy: &Policy,
    mut p: HotPayload,
    mut summary: SessionSummary,
    table: bool,
) -> Result<Aligned> {
    // Every posting as `(term id, entry, frequency)`, in entry order (ids in order of first
    // sight), placed by term once every entry is read. `counts[id]` holds the current entry's
    // frequency of a term and how many entries held it before; `seen`, the current entry's
    // terms. No allocation per distinct term, token or entry.
    let mut st = StrTableBuilder::new();
    let mut postings: Vec<(u32, u32, u32)> = Vec::new();
    let mut counts: Vec<[u32; 2]> = Vec::new();
    let mut seen: Vec<u32> = Vec::new();
    let mut too_many = false;
    let mut truncated = 0u64;
    let mut total_tokens = 0u64;
    for (i, r) in sel.records.iter().enumerate() {
        let ord = format::to_u32(i)?;
        let (text, thinking, flags) = stored_text(r, policy);
        if flags & (FLAG_TEXT_TRUNCATED | FLAG_THINKING_TRUNCATED) != 0 {
            truncated += 1;
        }
        format::push_str(&mut p.text, &mut p.text_offsets, text)?;
        format::push_str(
            &mut p.thinking,
            &mut p.thinking_offsets,
            thinking.unwrap_or(""),
        )?;
        let mut len = 0u32;
        // Every token of the indexed text, also past the stored cut.
        for part in [policy.text(r), policy.thinking(r)].into_iter().flatten() {
            ids.insert_tokens(part, |id| {
                len = len.saturating_add(1);
                let Ok(id) = id else {
                    too_many = true;
                    return;
                };
                if id as usize == counts.len() {
                    counts.push([0, 0]);
                }
                let c = &mut counts[id as usize][0];
                if *c == 0 {
                    seen.push(id);
                }
                *c += 1;
            });
        }
        if too_many {
            return Err(Error::new(
                ErrorKind::TooLarge,
                "more than 2^32 distinct terms or 4 GiB of their bytes",
            ));
        }
        total_tokens += u64::from(len);
        for id in seen.drain(..) {
            let [c, df] = &mut counts[id as usize];
            postings.push((id, ord, std::mem::take(c)));
            *df += 1;
        }
        p.lengths.push(len);
        p.class.push(class_code(r.class));
        p.flags.push(flags);
        p.outcome.push(outcome_code(r.outcome));
        p.is_error.push(bool_code(r.is_error));
        let ts = r.timestamp.as_deref();
        let ms = ts.and_then(parse_rfc3339_ms);
        let canonical = ms.and_then(format_rfc3339_ms);
        p.timestamp.push(ms.unwrap_or(i64::MIN));
        p.timestamp_raw.push(if canonical.as_deref() == ts {
            NONE
        } else {
            st.opt(ts)?
        });
        p.line.push(r.line);
        p.offset.push(r.offset);
        p.entry_id.push(st.intern(&r.entry_id)?);
        p.parent_id.push(st.opt(r.parent_id.as_deref())?);
        p.logical_parent_id
            .push(st.opt(r.logical_parent_id.as_deref())?);
        p.kind.push(st.intern(&r.kind)?);
        p.role.push(st.opt(r.role.as_deref())?);
        p.tool.push(st.opt(r.tool.as_deref())?);
        p.reference.push(st.opt(r.reference.as_deref())?);
        p.provider.push(st.opt(r.provider.as_deref())?);
        p.action.push(st.opt(r.action.as_deref())?);
        p.operation_address
            .push(st.opt(r.operation_address.as_deref())?);
        p.parent_entry_id
            .push(st.opt(r.parent_entry_id.as_deref())?);
        p.call_id.push(st.opt(r.call_id.as_deref())?);
        for f in &r.files_touched {
            p.files.push(st.intern(f)?);
        }
        p.files_offsets.push(format::to_u32(p.files.len())?);
    }
    p.total_tokens = total_tokens;
    let sorted = ids.sorted_with_ids();
    let mut terms = fst::MapBuilder::memory();
    // Each term's postings start where the terms before it in byte order end: `counts[id][0]`
    // becomes that start, then the next free place as the postings are placed. A term's
    // postings stay in entry order.
    p.post_starts.reserve_exact(sorted.len() + 1);
    p.post_starts.push(0);
    let mut end = 0u32;
    for (ord, &(term, id)) in sorted.iter().enumerate() {
        terms.insert(term, ord as u64)?;
        let [start, df] = &mut counts[id as usize];
        *start = end;
        end = end
            .checked_add(*df)
            .ok_or_else(|| Error::new(ErrorKind::TooLarge, "more than 2^32 postings"))?;
        p.post_starts.push(end);
    }
    p.post_entries = vec![0; postings.len()];
    p.post_tf = vec![0; postings.len()];
    for (id, e, c) in postings {
        let at = &mut counts[id as usize][0];
        let k = *at as usize;
        *at += 1;
        p.post_entries[k] = e;
        p.post_tf[k] = c;
    }
    p.terms = terms.into_inner()?;
    if table {
        term_table(&mut p, &mut st, &sorted)?;
    }
    entry_lists(&mut p)?;
    p.strings = std::mem::take(&mut st.bytes);
    p.string_offsets = std::mem::take(&mut st.offsets);
    // Informational: the cut entries are counted, but every token is posted, so the session's
    // index is not less complete for them.
    let complete = summary.coverage.complete;
    summary.coverage.add("max_entry_chars", truncated);
    summary.coverage.complete = complete;
    seal_with_size(&mut p, &mut summary)
}

/// Fills the payload's entry lists ([`ListField`]) from its columns: for each listed field in
/// code order, each value present (ascending) with its entries (ascending) and their token
/// total. An absent value (no tool, no outcome) has no list.
fn entry_lists(p: &mut HotPayload) -> Result<()> {
    p.list_starts.push(0);
    // Outcome codes as ids, `NONE` for none (code 0).
    let outcomes: Vec<u32> = p
        .outcome
        .iter()
        .map(|&c| if c == 0 { NONE } else { u32::from(c) })
        .collect();
    let mut keyed: Vec<u64> = Vec::new();
    for field in ListField::ALL {
        let col = match field {
            ListField::Role => &p.role,
            ListField::Tool => &p.tool,
            ListField::Reference => &p.reference,
            ListField::Provider => &p.provider,
            ListField::Action => &p.action,
            ListField::Outcome => &outcomes,
        };
        // Value, then entry: each value's entries ascending.
        keyed.clear();
        for (i, &id) in (0u32..).zip(col) {
            if id != NONE {
                keyed.push(u64::from(id) << 32 | u64::from(i));
            }
        }
        keyed.sort_unstable();
        let mut k = 0;
        while let Some(&key) = keyed.get(k) {
            let value = (key >> 32) as u32;
            let mut tokens = 0u64;
            while let Some(&key) = keyed.get(k).filter(|&&key| (key >> 32) as u32 == value) {
                let entry = key as u32;
                p.list_entries.push(entry);
                tokens += u64::from(p.lengths.get(entry as usize).copied().unwrap_or(0));
                k += 1;
            }
            p.list_field.push(field as u8);
            p.list_value.push(value);
            p.list_tokens.push(tokens);
            p.list_starts.push(format::to_u32(p.list_entries.len())?);
        }
    }
    Ok(())
}

/// Serializes once: the summary records the file's own size ([`format::seal_sized`]).
fn seal_with_size(p: &mut HotPayload, summary: &mut SessionSummary) -> Result<Aligned> {
    summary.cache_bytes = 0;
    p.summary = SummaryRaw::from(&*summary);
    let (file, size) = format::seal_sized::<ArchivedHotPayload>(
        FileKind::Hot,
        format::to_sealable(p)?,
        std::mem::offset_of!(ArchivedHotPayload, summary),
    )?;
    summary.cache_bytes = size;
    Ok(file)
}

#[derive(Debug, Clone, Copy, Default)]
struct Cols {
    n: usize,
    strings: StrCol,
    text: StrCol,
    thinking: StrCol,
    lengths: Col,
    class: Col,
    flags: Col,
    outcome: Col,
    is_error: Col,
    timestamp: Col,
    line: Col,
    offset: Col,
    entry_id: Col,
    parent_id: Col,
    logical_parent_id: Col,
    kind: Col,
    role: Col,
    tool: Col,
    reference: Col,
    provider: Col,
    action: Col,
    operation_address: Col,
    parent_entry_id: Col,
    call_id: Col,
    timestamp_raw: Col,
    files: Col,
    files_offsets: Col,
    terms: Col,
    term_slots: Col,
    term_strings: usize,
    post_starts: Col,
    post_entries: Col,
    post_tf: Col,
    list_field: Col,
    list_value: Col,
    list_starts: Col,
    list_entries: Col,
    list_tokens: Col,
    resume: Col,
}

impl Cols {
    fn str_field(&self, field: StrField) -> Col {
        match field {
            StrField::Kind => self.kind,
            StrField::Role => self.role,
            StrField::Tool => self.tool,
            StrField::Reference => self.reference,
            StrField::Provider => self.provider,
            StrField::Action => self.action,
            StrField::CallId => self.call_id,
        }
    }
}

/// An opened hot shard over any bytes (an mmap, a `Vec<u8>`, a WASM buffer).
#[derive(Debug)]
pub struct HotShard<B> {
    bytes: B,
    payload: Range<usize>,
    cols: Cols,
    term_count: usize,
    total_tokens: u64,
    summary: SessionSummary,
    policy_fingerprint: String,
}

fn missing() -> Error {
    Error::corrupt("column out of range")
}

impl<B: AsRef<[u8]>> HotShard<B> {
    /// Opens a hot shard: header, checksum, then rkyv validation of the columns (no per-entry
    /// work). `bytes` must be aligned to [`format::ALIGN`].
    ///
    /// # Errors
    ///
    /// `index_corrupt` or `index_version_mismatch` for any damage; `index_unaligned` when the
    /// bytes are not aligned. Never panics.
    pub fn open(bytes: B) -> Result<HotShard<B>> {
        let range = format::unseal(FileKind::Hot, bytes.as_ref())?;
        let base = &bytes.as_ref()[range.clone()];
        let a = format::access::<ArchivedHotPayload>(base)?;
        let c = |s: &[u8]| Col::of(base, s);
        let n = a.lengths.len();
        let cols = Cols {
            n,
            strings: StrCol {
                bytes: c(a.strings.as_slice()),
                offsets: Col::of(base, a.string_offsets.as_slice()),
            },
            text: StrCol {
                bytes: c(a.text.as_slice()),
                offsets: Col::of(base, a.text_offsets.as_slice()),
            },
            thinking: StrCol {
                bytes: c(a.thinking.as_slice()),
                offsets: Col::of(base, a.thinking_offsets.as_slice()),
            },
            lengths: Col::of(base, a.lengths.as_slice()),
            class: c(a.class.as_slice()),
            flags: c(a.flags.as_slice()),
            outcome: c(a.outcome.as_slice()),
            is_error: c(a.is_error.as_slice()),
            timestamp: Col::of(base, a.timestamp.as_slice()),
            line: Col::of(base, a.line.as_slice()),
            offset: Col::of(base, a.offset.as_slice()),
            entry_id: Col::of(base, a.entry_id.as_slice()),
            parent_id: Col::of(base, a.parent_id.as_slice()),
            logical_parent_id: Col::of(base, a.logical_parent_id.as_slice()),
            kind: Col::of(base, a.kind.as_slice()),
            role: Col::of(base, a.role.as_slice()),
            tool: Col::of(base, a.tool.as_slice()),
            reference: Col::of(base, a.reference.as_slice()),
            provider: Col::of(base, a.provider.as_slice()),
            action: Col::of(base, a.action.as_slice()),
            operation_address: Col::of(base, a.operation_address.as_slice()),
            parent_entry_id: Col::of(base, a.parent_entry_id.as_slice()),
            call_id: Col::of(base, a.call_id.as_slice()),
            timestamp_raw: Col::of(base, a.timestamp_raw.as_slice()),
            files: Col::of(base, a.files.as_slice()),
            files_offsets: Col::of(base, a.files_offsets.as_slice()),
            terms: c(a.terms.as_slice()),
            term_slots: Col::of(base, a.term_slots.as_slice()),
            term_strings: a.term_strings.to_native() as usize,
            post_starts: Col::of(base, a.post_starts.as_slice()),
            post_entries: Col::of(base, a.post_entries.as_slice()),
            post_tf: Col::of(base, a.post_tf.as_slice()),
            list_field: c(a.list_field.as_slice()),
            list_value: Col::of(base, a.list_value.as_slice()),
            list_starts: Col::of(base, a.list_starts.as_slice()),
            list_entries: Col::of(base, a.list_entries.as_slice()),
            list_tokens: Col::of(base, a.list_tokens.as_slice()),
            resume: c(a.resume.as_slice()),
        };
        let per_entry = [
            cols.class,
            cols.flags,
            cols.outcome,
            cols.is_error,
            cols.timestamp,
            cols.line,
            cols.offset,
            cols.entry_id,
            cols.parent_id,
            cols.logical_parent_id,
            cols.kind,
            cols.role,
            cols.tool,
            cols.reference,
            cols.provider,
            cols.action,
            cols.operation_address,
            cols.parent_entry_id,
            cols.call_id,
            cols.timestamp_raw,
        ];
        if per_entry.iter().any(|col| col.len() != n)
            || cols.text.offsets.len() != n + 1
            || cols.thinking.offsets.len() != n + 1
            || cols.files_offsets.len() != n + 1
            || cols.strings.offsets.len() == 0
            || cols.post_entries.len() != cols.post_tf.len()
            || cols.list_value.len() != cols.list_field.len()
            || cols.list_tokens.len() != cols.list_field.len()
            || cols.list_starts.len() != cols.list_field.len() + 1
        {
            return Err(Error::corrupt("hot shard columns differ in length"));
        }
        let terms = fst::Map::from(format::checked_fst(a.terms.as_slice())?);
        let term_count = terms.len();
        if cols.post_starts.len() != term_count + 1 {
            return Err(Error::corrupt("postings do not match the term dictionary"));
        }
        let slots = cols.term_slots.len();
        if slots != 0
            && !(slots.is_power_of_two()
                && slots > term_count
                && cols.term_strings.checked_add(term_count) < Some(cols.strings.offsets.len()))
        {
            return Err(Error::corrupt(
                "term table does not match the term dictionary",
            ));
        }
        let summary = a.summary.decode()?;
        let policy_fingerprint = crate::summary::string(&a.policy_fingerprint)?;
        let total_tokens = a.total_tokens.to_native();
        Ok(HotShard {
            bytes,
            payload: range,
            cols,
            term_count,
            total_tokens,
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

    /// The bytes stored with [`build_with_resume`] (empty when none).
    #[must_use]
    pub fn resume_bytes(&self) -> &[u8] {
        self.cols.resume.bytes(self.base()).unwrap_or(&[])
    }

    /// Number of entries (records of the selection).
    #[must_use]
    pub fn entry_count(&self) -> usize {
        self.cols.n
    }

    /// The session's metadata.
    #[must_use]
    pub fn summary(&self) -> &SessionSummary {
        &self.summary
    }

    /// SHA-256 (hex) of the [`Policy`] the shard was built with.
    #[must_use]
    pub fn policy_fingerprint(&self) -> &str {
        &self.policy_fingerprint
    }

    /// Entry `i`, or `None` past the end.
    #[must_use]
    pub fn entry(&self, i: usize) -> Option<HotEntry<'_>> {
        (i < self.cols.n).then(|| HotEntry {
            base: self.base(),
            cols: &self.cols,
            i,
        })
    }

    /// Every entry in order.
    pub fn entries(&self) -> impl Iterator<Item = HotEntry<'_>> + '_ {
        (0..self.cols.n).filter_map(|i| self.entry(i))
    }

    /// The string of id `id` of the shard's string table (see [`HotEntry::string_id`]).
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the id is out of range or the string is not UTF-8.
    pub fn string(&self, id: u32) -> Result<&str> {
        self.cols.strings.get(self.base(), id as usize)
    }

    /// Every entry's id of a string field (as [`HotEntry::string_id`] gives it), for a scan
    /// of a whole column without a view per entry.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the column is out of range.
    pub fn string_ids(&self, field: StrField) -> Result<StringIds<'_>> {
        let col = self.cols.str_field(field);
        let bytes = col.raw(self.base(), 4).ok_or_else(missing)?;
        Ok(StringIds { bytes })
    }

    /// The entry lists of `field`'s values present in the shard, by ascending value
    /// ([`EntryLists`]): for a filter, the entries of its value without a pass over the column.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the column is out of range.
    pub fn entry_lists(&self, field: ListField) -> Result<EntryLists<'_>> {
        let base = self.base();
        let codes = self.cols.list_field.bytes(base).ok_or_else(missing)?;
        let code = field as u8;
        let start = codes.partition_point(|&c| c < code);
        let end = start
            + codes
                .get(start..)
                .unwrap_or_default()
                .partition_point(|&c| c == code);
        Ok(EntryLists {
            base,
            cols: &self.cols,
            start,
            end,
        })
    }

    /// Tokens in all entries.
    #[must_use]
    pub fn total_tokens(&self) -> u64 {
        self.total_tokens
    }

    /// Average entry length in tokens (BM25 `avgdl`), 0 without entries.
    #[must_use]
    pub fn avg_len(&self) -> f64 {
        if self.cols.n == 0 {
            0.0
        } else {
            self.total_tokens as f64 / self.cols.n as f64
        }
    }

    /// Number of distinct terms.
    #[must_use]
    pub fn term_count(&self) -> usize {
        self.term_count
    }

    /// The term dictionary: an FST map from term to term ordinal, for streams, prefix, range,
    /// Levenshtein or regex automata.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the FST bytes moved under the reader.
    pub fn terms(&self) -> Result<fst::Map<&[u8]>> {
        let b = self.cols.terms.bytes(self.base()).ok_or_else(missing)?;
        Ok(fst::Map::new(b)?)
    }

    /// An owned copy of the term dictionary as a set, for [`crate::catalog::CatalogBuilder`].
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn vocabulary_owned(&self) -> Result<fst::Set<Vec<u8>>> {
        let b = self.cols.terms.bytes(self.base()).ok_or_else(missing)?;
        Ok(fst::Set::from(fst::raw::Fst::new(b.to_vec())?))
    }

    /// Every term in byte order with its document frequency.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn for_each_term(&self, mut f: impl FnMut(&str, u32)) -> Result<()> {
        use fst::Streamer;
        let map = self.terms()?;
        let mut s = map.stream();
        while let Some((term, ord)) = s.next() {
            let term =
                std::str::from_utf8(term).map_err(|_| Error::corrupt("term is not UTF-8"))?;
            f(term, self.postings_at(ord)?.len() as u32);
        }
        Ok(())
    }

    /// Each entry's token length and provenance class, their columns cut once
    /// ([`EntryStats`]).
    ///
    /// # Errors
    ///
    /// `index_corrupt` when a column is out of bounds.
    pub fn entry_stats(&self) -> Result<EntryStats<'_>> {
        let base = self.base();
        Ok(EntryStats {
            lengths: self.cols.lengths.raw(base, 4).ok_or_else(missing)?,
            class: self.cols.class.bytes(base).ok_or_else(missing)?,
        })
    }

    /// The ordinal of `term` (a canonical token), `None` when the shard does not hold it:
    /// found through the term table when the shard has one (a hash and a comparison or two),
    /// else through the FST.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the table names an ordinal out of range.
    pub fn ordinal(&self, term: &str) -> Result<Option<u64>> {
        let slots = self.cols.term_slots;
        if slots.len() == 0 || cfg!(target_arch = "wasm32") {
            return Ok(self.terms()?.get(term));
        }
        let base = self.base();
        let strs = self.cols.strings;
        let all = strs.bytes.bytes(base).ok_or_else(missing)?;
        // The table and the string offsets as slices of four-byte words, sliced once: a probe
        // is then a read of each, not a column lookup with its own range checks.
        let table = slots.raw(base, 4).ok_or_else(missing)?;
        let offsets = strs.offsets.raw(base, 4).ok_or_else(missing)?;
        let word = |b: &[u8], k: usize| -> Option<u32> {
            let at = k.checked_mul(4)?;
            let w: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
            Some(u32::from_le_bytes(w))
        };
        let want = term.as_bytes();
        let mask = slots.len() - 1;
        // Truncated on 32-bit targets: the low bits pick the slot either way.
        #[allow(clippy::cast_possible_truncation)]
        let mut i = term_hash(want) as usize & mask;
        // The table has an empty slot (it is larger than the term count): the walk ends there
        // at the latest; the bound only keeps a damaged table from looping.
        for _ in 0..slots.len() {
            let Some(ord) = word(table, i).ok_or_else(missing)?.checked_sub(1) else {
                return Ok(None);
            };
            let id = self.cols.term_strings.checked_add(ord as usize);
            let (start, end) = id
                .and_then(|id| word(offsets, id).zip(word(offsets, id.checked_add(1)?)))
                .filter(|(start, end)| start <= end)
                .ok_or_else(missing)?;
            let span = start as usize..end as usize;
            if span.len() == want.len() && all.get(span) == Some(want) {
                return Ok(Some(u64::from(ord)));
            }
            i = (i + 1) & mask;
        }
        Ok(None)
    }

    /// The postings of term ordinal `ord` (a value of [`HotShard::terms`]).
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the ordinal or its range is out of bounds.
    pub fn postings_at(&self, ord: u64) -> Result<Postings<'_>> {
        let ord = usize::try_from(ord).map_err(|_| missing())?;
        let base = self.base();
        let span = self.cols.post_starts.span(base, ord).ok_or_else(missing)?;
        if span.end > self.cols.post_entries.len() {
            return Err(missing());
        }
        // The list's bytes in each column, sliced once: each posting is then two reads of
        // four bytes, no offset arithmetic or range check of its own.
        let bytes = span.start.checked_mul(4).zip(span.end.checked_mul(4));
        let slice = |col: Col| {
            col.raw(base, 4)
                .zip(bytes)
                .and_then(|(b, (start, end))| b.get(start..end))
                .ok_or_else(missing)
        };
        Ok(Postings {
            entries: slice(self.cols.post_entries)?,
            tfs: slice(self.cols.post_tf)?,
        })
    }

    /// The postings of `term` (a canonical token), empty when absent.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn postings(&self, term: &str) -> Result<Postings<'_>> {
        match self.ordinal(term)? {
            Some(ord) => self.postings_at(ord),
            None => Ok(Postings::EMPTY),
        }
    }

    /// Number of entries containing `term`.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn doc_freq(&self, term: &str) -> Result<u32> {
        Ok(self.postings(term)?.len() as u32)
    }
}

/// The token length and provenance class of each entry of a shard
/// ([`HotShard::entry_stats`]): for a pass over many entries (a term's postings), each a read
/// of a slice instead of an entry's view and its column lookups.
#[derive(Debug, Clone, Copy)]
pub struct EntryStats<'a> {
    lengths: &'a [u8],
    class: &'a [u8],
}

impl EntryStats<'_> {
    /// [`HotEntry::token_len`] of entry `i`: 0 past the column's end, as there.
    #[must_use]
    pub fn token_len(&self, i: usize) -> u32 {
        i.checked_mul(4)
            .and_then(|at| self.lengths.get(at..at.checked_add(4)?))
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    }

    /// [`HotEntry::class`] of entry `i`.
    ///
    /// # Errors
    ///
    /// `index_corrupt` for an unknown code or past the column's end.
    pub fn class(&self, i: usize) -> Result<TextClass> {
        class_from(*self.class.get(i).ok_or_else(missing)?)
    }
}

/// One posting: an entry ordinal and how often the term occurs in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Posting {
    /// Entry ordinal.
    pub entry: u32,
    /// Term frequency in the entry.
    pub tf: u32,
}

/// The postings of one term, ascending by entry.
#[derive(Debug, Clone)]
pub struct Postings<'a> {
    /// The entry ordinals left, four bytes each (a multiple of four as sliced).
    entries: &'a [u8],
    /// Their term frequencies, four bytes each.
    tfs: &'a [u8],
}

impl Postings<'_> {
    /// No postings.
    const EMPTY: Postings<'static> = Postings {
        entries: &[],
        tfs: &[],
    };

    /// Postings left.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len().min(self.tfs.len()) / 4
    }

    /// True when no postings are left.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry of the `i`-th posting left.
    fn entry_at(&self, i: usize) -> Option<u32> {
        let at = i.checked_mul(4)?;
        let b = self.entries.get(at..at.checked_add(4)?)?;
        b.try_into().ok().map(u32::from_le_bytes)
    }

    /// Drops the first `k` postings (all of them when fewer are left).
    fn skip(&mut self, k: usize) {
        let at = k.saturating_mul(4);
        self.entries = self.entries.get(at..).unwrap_or_default();
        self.tfs = self.tfs.get(at..).unwrap_or_default();
    }

    /// Drops the postings whose entry is below `entry` and returns the next one, left in
    /// place; `None` when none is left. The postings are ascending, so the first one at or
    /// past `entry` is found by galloping: doubling steps, then halving, a number of reads
    /// logarithmic in the postings skipped (an intersection walks the shortest list and
    /// seeks in the others). A list out of order (damage) gives some posting, never a panic.
    pub fn seek(&mut self, entry: u32) -> Option<Posting> {
        let n = self.len();
        let below = |i: usize| self.entry_at(i).is_some_and(|e| e < entry);
        if !below(0) {
            return self.peek();
        }
        // `lo` is below `entry`; `hi` is not (or is past the end).
        let (mut lo, mut step) = (0usize, 1usize);
        let mut hi = loop {
            let next = lo.saturating_add(step);
            if next >= n || !below(next) {
                break next.min(n);
            }
            lo = next;
            step = step.saturating_mul(2);
        };
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if below(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.skip(hi);
        self.peek()
    }

    /// The next posting, left in place.
    #[must_use]
    pub fn peek(&self) -> Option<Posting> {
        let (e, _) = self.entries.split_first_chunk::<4>()?;
        let (t, _) = self.tfs.split_first_chunk::<4>()?;
        Some(Posting {
            entry: u32::from_le_bytes(*e),
            tf: u32::from_le_bytes(*t),
        })
    }
}

impl Default for Postings<'_> {
    /// No postings.
    fn default() -> Self {
        Postings::EMPTY
    }
}

impl Iterator for Postings<'_> {
    type Item = Posting;

    fn next(&mut self) -> Option<Posting> {
        let (e, entries) = self.entries.split_first_chunk::<4>()?;
        let (t, tfs) = self.tfs.split_first_chunk::<4>()?;
        self.entries = entries;
        self.tfs = tfs;
        Some(Posting {
            entry: u32::from_le_bytes(*e),
            tf: u32::from_le_bytes(*t),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.len()))
    }
}

/// A field whose values a hot shard lists the entries of ([`HotShard::entry_lists`]): the
/// string filters' fields and the outcome. The code of each (its order here) is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ListField {
    /// [`HotEntry::role`]; values are string ids.
    Role,
    /// [`HotEntry::tool`].
    Tool,
    /// [`HotEntry::reference`].
    Reference,
    /// [`HotEntry::provider`].
    Provider,
    /// [`HotEntry::action`].
    Action,
    /// [`HotEntry::outcome`]; values are [`outcome_value`]s.
    Outcome,
}

impl ListField {
    /// Every listed field, in code order.
    pub const ALL: [ListField; 6] = [
        ListField::Role,
        ListField::Tool,
        ListField::Reference,
        ListField::Provider,
        ListField::Action,
        ListField::Outcome,
    ];
}

/// The value an outcome's entry list has in [`ListField::Outcome`].
#[must_use]
pub fn outcome_value(o: Outcome) -> u32 {
    u32::from(outcome_code(Some(o)))
}

/// The entry lists of one field of a shard ([`HotShard::entry_lists`]), by ascending value.
#[derive(Debug, Clone, Copy)]
pub struct EntryLists<'a> {
    base: &'a [u8],
    cols: &'a Cols,
    start: usize,
    end: usize,
}

impl<'a> EntryLists<'a> {
    /// Values with a list.
    #[must_use]
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// True when no entry has a value of the field.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

    /// The list of the `k`-th value.
    ///
    /// # Errors
    ///
    /// `index_corrupt` past the end or when the list is out of range.
    pub fn get(&self, k: usize) -> Result<EntryList<'a>> {
        let at = self
            .start
            .checked_add(k)
            .filter(|&at| at < self.end)
            .ok_or_else(missing)?;
        let (c, base) = (self.cols, self.base);
        let value = c.list_value.u32(base, at).ok_or_else(missing)?;
        let tokens = c.list_tokens.u64(base, at).ok_or_else(missing)?;
        let span = c.list_starts.span(base, at).ok_or_else(missing)?;
        let bytes = c
            .list_entries
            .raw(base, 4)
            .and_then(|b| b.get(span.start.checked_mul(4)?..span.end.checked_mul(4)?))
            .ok_or_else(missing)?;
        Ok(EntryList {
            value,
            tokens,
            entries: bytes.as_chunks::<4>().0,
        })
    }

    /// The list of `value`, `None` when no entry has it.
    ///
    /// # Errors
    ///
    /// As [`EntryLists::get`].
    pub fn find(&self, value: u32) -> Result<Option<EntryList<'a>>> {
        for k in 0..self.len() {
            let l = self.get(k)?;
            if l.value == value {
                return Ok(Some(l));
            }
        }
        Ok(None)
    }
}

/// The entries holding one value of a field ([`EntryLists::get`]).
#[derive(Debug, Clone, Copy)]
pub struct EntryList<'a> {
    /// The value: a string id of the shard, or an [`outcome_value`].
    pub value: u32,
    /// The token total of the entries ([`HotEntry::token_len`] summed).
    pub tokens: u64,
    entries: &'a [[u8; 4]],
}

impl<'a> EntryList<'a> {
    /// Entries in the list.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the list is empty (never in a built shard).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry ordinals, ascending in a built shard (a reader checks what it relies on).
    pub fn iter(&self) -> impl Iterator<Item = u32> + 'a {
        self.entries.iter().map(|&b| u32::from_le_bytes(b))
    }
}

/// A string field of an entry, for [`HotEntry::string_id`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrField {
    /// [`HotEntry::kind`].
    Kind,
    /// [`HotEntry::role`].
    Role,
    /// [`HotEntry::tool`].
    Tool,
    /// [`HotEntry::reference`].
    Reference,
    /// [`HotEntry::provider`].
    Provider,
    /// [`HotEntry::action`].
    Action,
    /// [`HotEntry::call_id`].
    CallId,
}

/// The ids of one string field, one per entry in order (see [`HotShard::string_ids`]).
#[derive(Debug, Clone, Copy)]
pub struct StringIds<'a> {
    bytes: &'a [u8],
}

impl<'a> StringIds<'a> {
    /// Entries in the column.
    #[must_use]
    pub fn len(&self) -> usize {
        self.bytes.len() / 4
    }

    /// True when the shard has no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.bytes.len() < 4
    }

    /// Entry `i`'s id, `None` when absent (or `i` out of range).
    #[must_use]
    pub fn get(&self, i: usize) -> Option<u32> {
        let b = self.bytes.get(i.checked_mul(4)?..)?.get(..4)?;
        let id = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        (id != NONE).then_some(id)
    }

    /// Every entry's id in order, `None` when absent.
    pub fn iter(&self) -> impl Iterator<Item = Option<u32>> + 'a {
        self.bytes.as_chunks::<4>().0.iter().map(|&b| {
            let id = u32::from_le_bytes(b);
            (id != NONE).then_some(id)
        })
    }
}

/// A view of one entry's columns. String accessors check UTF-8 and return `index_corrupt`
/// when it fails.
#[derive(Debug, Clone, Copy)]
pub struct HotEntry<'a> {
    base: &'a [u8],
    cols: &'a Cols,
    i: usize,
}

impl<'a> HotEntry<'a> {
    fn s(&self, col: Col) -> Result<Option<&'a str>> {
        let id = col.u32(self.base, self.i).ok_or_else(missing)?;
        self.cols.strings.opt(self.base, id)
    }

    fn req(&self, col: Col) -> Result<&'a str> {
        self.s(col)?
            .ok_or_else(|| Error::corrupt("required string is absent"))
    }

    /// Ordinal of the entry (its `index` in the selection).
    #[must_use]
    pub fn index(&self) -> usize {
        self.i
    }

    /// The stored (indexed, bounded) text; empty when the policy excluded it.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the bytes are not UTF-8 or out of range.
    pub fn text(&self) -> Result<&'a str> {
        self.cols.text.get(self.base, self.i)
    }

    /// The stored reasoning text (only with `index_thinking`).
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn thinking(&self) -> Result<Option<&'a str>> {
        if self.flags() & FLAG_HAS_THINKING == 0 {
            return Ok(None);
        }
        self.cols.thinking.get(self.base, self.i).map(Some)
    }

    /// The bytes of [`HotEntry::text`], not checked as UTF-8 (a reader that needs only its
    /// ASCII bytes checks the rest itself).
    ///
    /// # Errors
    ///
    /// `index_corrupt` when out of range.
    pub fn text_bytes(&self) -> Result<&'a [u8]> {
        self.cols.text.get_bytes(self.base, self.i)
    }

    /// The bytes of [`HotEntry::thinking`], not checked as UTF-8.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when out of range.
    pub fn thinking_bytes(&self) -> Result<Option<&'a [u8]>> {
        if self.flags() & FLAG_HAS_THINKING == 0 {
            return Ok(None);
        }
        self.cols.thinking.get_bytes(self.base, self.i).map(Some)
    }

    /// The flag bits (`FLAG_*`).
    #[must_use]
    pub fn flags(&self) -> u8 {
        self.cols.flags.u8(self.base, self.i).unwrap_or(0)
    }

    /// True when text or thinking was cut at `max_entry_chars`.
    #[must_use]
    pub fn truncated(&self) -> bool {
        self.flags() & (FLAG_TEXT_TRUNCATED | FLAG_THINKING_TRUNCATED) != 0
    }

    /// True when the policy excluded the record's text.
    #[must_use]
    pub fn text_excluded(&self) -> bool {
        self.flags() & FLAG_TEXT_EXCLUDED != 0
    }

    /// Length in tokens.
    #[must_use]
    pub fn token_len(&self) -> u32 {
        self.cols.lengths.u32(self.base, self.i).unwrap_or(0)
    }

    /// Provenance class of the text.
    ///
    /// # Errors
    ///
    /// `index_corrupt` for an unknown code.
    pub fn class(&self) -> Result<TextClass> {
        class_from(self.cols.class.u8(self.base, self.i).ok_or_else(missing)?)
    }

    /// The entry id.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage (so for every string accessor below).
    pub fn entry_id(&self) -> Result<&'a str> {
        self.req(self.cols.entry_id)
    }

    /// The parent id.
    pub fn parent_id(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.parent_id)
    }

    /// The lineage parent when it differs from the parent id.
    pub fn logical_parent_id(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.logical_parent_id)
    }

    /// The record type.
    pub fn kind(&self) -> Result<&'a str> {
        self.req(self.cols.kind)
    }

    /// The id of a string field's value in the shard's string table, `None` when absent
    /// ([`HotShard::string`] reads it). A shard interns its strings, so two of its entries
    /// hold the same value exactly when they hold the same id: a filter compares ids and
    /// reads each value once per shard, not once per entry.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the column is short.
    pub fn string_id(&self, field: StrField) -> Result<Option<u32>> {
        let id = self
            .cols
            .str_field(field)
            .u32(self.base, self.i)
            .ok_or_else(missing)?;
        Ok((id != NONE).then_some(id))
    }

    /// The role.
    pub fn role(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.role)
    }

    /// The tool name.
    pub fn tool(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.tool)
    }

    /// The full tool reference.
    pub fn reference(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.reference)
    }

    /// The tool namespace.
    pub fn provider(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.provider)
    }

    /// The tool action.
    pub fn action(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.action)
    }

    /// `<entryId>/<k>` for a tool call child.
    pub fn operation_address(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.operation_address)
    }

    /// The carrier's entry id for a child record.
    pub fn parent_entry_id(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.parent_entry_id)
    }

    /// The tool call id.
    pub fn call_id(&self) -> Result<Option<&'a str>> {
        self.s(self.cols.call_id)
    }

    /// How a tool call ended.
    pub fn outcome(&self) -> Result<Option<Outcome>> {
        outcome_from(
            self.cols
                .outcome
                .u8(self.base, self.i)
                .ok_or_else(missing)?,
        )
    }

    /// The typed error flag.
    pub fn is_error(&self) -> Result<Option<bool>> {
        bool_from(
            self.cols
                .is_error
                .u8(self.base, self.i)
                .ok_or_else(missing)?,
        )
    }

    /// The timestamp in ms since the Unix epoch, when it parsed.
    #[must_use]
    pub fn timestamp_ms(&self) -> Option<i64> {
        self.cols
            .timestamp
            .i64(self.base, self.i)
            .filter(|&t| t != i64::MIN)
    }

    /// The timestamp as the source wrote it (canonical RFC 3339 with ms unless it was not).
    pub fn timestamp(&self) -> Result<Option<String>> {
        if let Some(raw) = self.s(self.cols.timestamp_raw)? {
            return Ok(Some(raw.to_owned()));
        }
        Ok(self.timestamp_ms().and_then(format_rfc3339_ms))
    }

    /// Files touched, in order.
    pub fn files_touched(&self) -> Result<Vec<&'a str>> {
        let span = self
            .cols
            .files_offsets
            .span(self.base, self.i)
            .ok_or_else(missing)?;
        span.map(|k| {
            let id = self.cols.files.u32(self.base, k).ok_or_else(missing)?;
            self.cols.strings.get(self.base, id as usize)
        })
        .collect()
    }

    /// 1-based line of the source file.
    #[must_use]
    pub fn line(&self) -> u64 {
        self.cols.line.u64(self.base, self.i).unwrap_or(0)
    }

    /// Byte offset of that line in the source file.
    #[must_use]
    pub fn offset(&self) -> u64 {
        self.cols.offset.u64(self.base, self.i).unwrap_or(0)
    }

    /// The entry as a [`Record`] with the stored (bounded) text.
    pub fn to_record(&self) -> Result<Record> {
        let own = |s: Option<&str>| s.map(str::to_owned);
        Ok(Record {
            index: self.i,
            entry_id: self.entry_id()?.to_owned(),
            parent_id: own(self.parent_id()?),
            logical_parent_id: own(self.logical_parent_id()?),
            kind: self.kind()?.to_owned(),
            role: own(self.role()?),
            tool: own(self.tool()?),
            reference: own(self.reference()?),
            provider: own(self.provider()?),
            action: own(self.action()?),
            outcome: self.outcome()?,
            timestamp: self.timestamp()?,
            is_error: self.is_error()?,
            files_touched: self
                .files_touched()?
                .into_iter()
                .map(str::to_owned)
                .collect(),
            text: self.text()?.to_owned(),
            thinking: own(self.thinking()?),
            operation_address: own(self.operation_address()?),
            parent_entry_id: own(self.parent_entry_id()?),
            call_id: own(self.call_id()?),
            class: self.class()?,
            sidechain: self.flags() & FLAG_SIDECHAIN != 0,
            line: self.line(),
            offset: self.offset(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use sessiondex_source::{Branches, ReadCoverage};

    use super::*;

    thread_local! {
        /// How [`term_table`] damages the table it wrote (0: not at all).
        static DAMAGE: Cell<u8> = const { Cell::new(0) };
    }

    /// Applies the damage [`DAMAGE`] names to a built table.
    pub(super) fn damage(p: &mut HotPayload) {
        match DAMAGE.with(Cell::get) {
            // One slot more: not a power of two.
            1 => p.term_slots.push(0),
            // No more slots than terms.
            2 => p.term_slots.truncate(1),
            // Terms past the string table.
            3 => p.term_strings = u32::MAX - 1,
            // Every slot names an ordinal past the string table.
            4 => p.term_slots.fill(u32::MAX),
            _ => {}
        }
    }

    fn shard_with(damage: u8) -> Aligned {
        let sel = Selection {
            branches: Branches::Active,
            records: vec![Record {
                entry_id: "a".into(),
                kind: "message".into(),
                text: "fix the flaky timeout in src/net.rs".into(),
                ..Record::default()
            }],
            coverage: ReadCoverage {
                complete: true,
                ..ReadCoverage::default()
            },
            leaf: Some("a".into()),
            lineage_fingerprint: String::new(),
        };
        DAMAGE.with(|d| d.set(damage));
        let bytes = build(&SessionMeta::default(), &sel, &Policy::default());
        DAMAGE.with(|d| d.set(0));
        bytes.expect("build")
    }

    /// A table that does not fit the term dictionary is refused at open; slots naming
    /// ordinals past the string table make each lookup an error, never a panic.
    #[test]
    fn a_damaged_term_table_is_refused_or_an_error() {
        let whole = shard_with(0);
        let shard = HotShard::open(&whole[..]).expect("open");
        assert_eq!(
            shard.ordinal("flaky").expect("lookup"),
            shard.terms().expect("fst").get("flaky")
        );
        for damage in 1..=3 {
            let bytes = shard_with(damage);
            let err = HotShard::open(&bytes[..]).expect_err("refused");
            assert_eq!(err.code(), "index_corrupt", "damage {damage}");
        }
        let bytes = shard_with(4);
        let shard = HotShard::open(&bytes[..]).expect("open");
        for term in ["flaky", "timeout", "absent"] {
            let err = shard.ordinal(term).expect_err("lookup");
            assert_eq!(err.code(), "index_corrupt", "{term}");
            assert!(shard.postings(term).is_err());
        }
    }

    /// The bytes of a postings list: entries and frequencies, four little-endian bytes each.
    fn columns(list: &[(u32, u32)]) -> (Vec<u8>, Vec<u8>) {
        let entries = list.iter().flat_map(|p| p.0.to_le_bytes()).collect();
        let tfs = list.iter().flat_map(|p| p.1.to_le_bytes()).collect();
        (entries, tfs)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 256, ..proptest::prelude::ProptestConfig::default()
        })]

        /// A seek (galloping) leaves the postings at the first one at or past its entry,
        /// as a walk would: the same posting next and the same ones after it, seek after
        /// seek, over lists of every length.
        #[test]
        fn a_seek_stops_where_a_walk_would(
            entries in proptest::collection::btree_set(0u32..5_000, 0..600),
            targets in proptest::collection::vec(0u32..5_200, 1..24),
        ) {
            let list: Vec<(u32, u32)> = entries.iter().map(|&e| (e, e % 7 + 1)).collect();
            let (e, t) = columns(&list);
            let mut sorted = targets.clone();
            sorted.sort_unstable();
            let mut p = Postings { entries: &e, tfs: &t };
            for target in sorted {
                let at = list.partition_point(|&(e, _)| e < target);
                let want = list.get(at).map(|&(entry, tf)| Posting { entry, tf });
                proptest::prop_assert_eq!(p.seek(target), want);
                proptest::prop_assert_eq!(p.len(), list.len() - at);
                proptest::prop_assert_eq!(p.peek(), want);
            }
            // Unordered seeks never move back.
            let mut p = Postings { entries: &e, tfs: &t };
            for &target in &targets {
                let before = p.len();
                p.seek(target);
                proptest::prop_assert!(p.len() <= before);
            }
        }

        /// Damaged lists (out of order, a frequency column shorter than the entries) give
        /// some posting of theirs or none, never a panic.
        #[test]
        fn a_seek_in_a_damaged_list_never_panics(
            list in proptest::collection::vec((proptest::prelude::any::<u32>(), 0u32..9), 0..80),
            cut in 0usize..8,
            targets in proptest::collection::vec(proptest::prelude::any::<u32>(), 1..8),
        ) {
            let (e, mut t) = columns(&list);
            t.truncate(t.len().saturating_sub(cut * 4));
            let mut p = Postings { entries: &e, tfs: &t };
            for target in targets {
                if let Some(q) = p.seek(target) {
                    proptest::prop_assert!(list.contains(&(q.entry, q.tf)));
                }
            }
            proptest::prop_assert!(p.count() <= list.len());
        }
    }
}
