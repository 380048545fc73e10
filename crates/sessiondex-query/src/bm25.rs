//! BM25 ranking with provenance weights, `any`/`all` term matching, and phrase matching.
//!
//! # BM25
//!
//! Every entry is a document, ranked on its own. For query terms `t` with term frequency
//! `tf` in an entry of `len` tokens:
//!
//! ```text
//! score = w(class) * coverage * sum_t idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len' / avg_len))
//! idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))
//! len' = min(len, MAX_NORM_LEN)
//! coverage = sum of idf(t) over the terms present / sum of idf(t) over all query terms
//! ```
//!
//! with `k1 = 1.2`, `b = 0.75`, and `N`, `df` and `avg_len` taken over everything the call
//! searched (all eligible hot entries, not one shard), so scores from different sessions
//! compare. `idf` is the non-negative (Lucene) form: a term in every entry still counts a
//! little. [`CorpusStats`] accumulates `N`, total length and `df`.
//!
//! `coverage` (1 for a single term) is a soft AND weighted by rarity: missing a rare term
//! costs much, missing `the` almost nothing. `len'` caps length normalization at
//! [`MAX_NORM_LEN`] tokens so a long tool output holding every term of an error message is
//! not buried. Both were chosen by `sessiondex-bench relevance` (docs/performance.md).
//!
//! # Provenance weights
//!
//! `w(class)` puts what people and the model wrote ahead of tool plumbing
//! ([`provenance_weight`]):
//!
//! | class            | default | when filters ask for operations |
//! |------------------|---------|---------------------------------|
//! | `user_text`      | 0.90    | 0.90                            |
//! | `assistant_text` | 1.00    | 1.00                            |
//! | `summary`        | 0.80    | 0.80                            |
//! | `thinking`       | 0.60    | 0.60                            |
//! | `tool_input`     | 0.50    | 1.00                            |
//! | `tool_output`    | 0.40    | 1.00                            |
//! | `meta`           | 0.30    | 0.30                            |
//!
//! Filters "ask for operations" when any of `tool`, `ref`, `provider`, `action` or
//! `outcome` is set (or `role` is `tool`): the caller wants tool calls, so their text is not
//! discounted.
//! User text weighs a little less than assistant text: with the same terms, the entry that
//! answered a question ranks above the question.
//!
//! # Phrases
//!
//! [`Phrase`] matches contiguously and case-insensitively over normalized text: NFKC,
//! lowercase (with final sigma folded to sigma), and every run of whitespace as one space,
//! applied alike to the phrase and the text. Matches are substrings (`time out` is found in
//! `Time  Out!`, `time` inside `timeout`). Spans map back to byte ranges of the original
//! text for highlighting. Normalization runs per character cluster (a starter and its
//! combining marks), which equals whole-text NFKC except for compositions across starters
//! (conjoining Hangul jamo).

use std::collections::HashMap;
use std::ops::Range;

use sessiondex_core::tokenize::{
    char_class, for_each_token, is_ascii_term_byte, next_non_ascii, nfkc, SEALED, TERM,
};
use sessiondex_source::TextClass;

#[cfg(not(target_arch = "wasm32"))]
use crate::case_find::CaseFinder;
use crate::request::QueryMatch;

/// BM25 `k1`.
pub const K1: f32 = 1.2;
/// BM25 `b`.
pub const B: f32 = 0.75;
/// The longest length (in tokens) length normalization counts: a longer entry is
/// normalized as if it had this many tokens, so a long tool output holding every query
/// term is not buried under short entries holding one (measured: `sessiondex-bench
/// relevance`, docs/performance.md).
pub const MAX_NORM_LEN: u32 = 1000;

/// The ranking weight of a text class; see the module table.
#[must_use]
pub fn provenance_weight(class: TextClass, operations_requested: bool) -> f32 {
    // A load from a table, not a match over the weights: ranking loops ask this of every
    // entry, whose classes change from one entry to the next, and a match could compile to a
    // jump through a table there, mispredicted about once an entry (a structural call's
    // search twice as long with one inlining as with another). The position comes from an
    // exhaustive match, so a new class cannot go without a weight; it is the declaration
    // order, which the compiler turns into the discriminant itself.
    const WEIGHTS: [f32; 7] = [0.9, 1.0, 0.6, 0.5, 0.4, 0.8, 0.3];
    const WITH_OPERATIONS: [f32; 7] = [0.9, 1.0, 0.6, 1.0, 1.0, 0.8, 0.3];
    let at = match class {
        TextClass::UserText => 0,
        TextClass::AssistantText => 1,
        TextClass::Thinking => 2,
        TextClass::ToolInput => 3,
        TextClass::ToolOutput => 4,
        TextClass::Summary => 5,
        TextClass::Meta => 6,
    };
    let weights = if operations_requested {
        &WITH_OPERATIONS
    } else {
        &WEIGHTS
    };
    weights[at]
}

/// BM25 parameters over one searched corpus.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    /// Number of documents searched (`N`).
    pub docs: u64,
    /// Average document length in tokens.
    pub avg_len: f32,
    /// `k1`.
    pub k1: f32,
    /// `b`.
    pub b: f32,
}

impl Bm25 {
    /// Parameters for `docs` documents of `total_len` tokens in all, with `k1 = 1.2`,
    /// `b = 0.75`.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn new(docs: u64, total_len: u64) -> Bm25 {
        let avg_len = if docs == 0 {
            1.0
        } else {
            (total_len as f64 / docs as f64).max(1.0) as f32
        };
        Bm25 {
            docs,
            avg_len,
            k1: K1,
            b: B,
        }
    }

    /// `ln(1 + (N - df + 0.5) / (df + 0.5))`; `df` above `N` counts as `N`.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn idf(&self, df: u64) -> f32 {
        let n = self.docs as f64;
        let df = (df.min(self.docs)) as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln() as f32
    }

    /// One term's contribution in a document of `len` tokens.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn term_score(&self, tf: u32, df: u64, len: u32) -> f32 {
        self.term_score_idf(tf, self.idf(df), len)
    }

    /// [`Bm25::term_score`] with the term's [`Bm25::idf`] given.
    #[must_use]
    #[allow(clippy::cast_precision_loss)]
    pub fn term_score_idf(&self, tf: u32, idf: f32, len: u32) -> f32 {
        if tf == 0 {
            return 0.0;
        }
        let tf = tf as f32;
        let len = len.min(MAX_NORM_LEN) as f32;
        let norm = self.k1 * (1.0 - self.b + self.b * len / self.avg_len);
        idf * tf * (self.k1 + 1.0) / (tf + norm)
    }

    /// The weighted score of a document: `weight * sum term_score`, with `(tf, df)` per
    /// query term.
    #[must_use]
    pub fn score(&self, weight: f32, len: u32, terms: impl IntoIterator<Item = (u32, u64)>) -> f32 {
        self.score_idf(
            weight,
            len,
            terms.into_iter().map(|(tf, df)| (tf, self.idf(df))),
        )
    }

    /// [`Bm25::score`] with `(tf, idf)` per query term: a ranking over many documents
    /// computes each term's [`Bm25::idf`] once, not per document (the same numbers).
    #[must_use]
    pub fn score_idf(
        &self,
        weight: f32,
        len: u32,
        terms: impl IntoIterator<Item = (u32, f32)>,
    ) -> f32 {
        let (mut n, mut sum, mut idf_all, mut idf_present) = (0usize, 0.0f32, 0.0f32, 0.0f32);
        for (tf, idf) in terms {
            n += 1;
            idf_all += idf;
            if tf > 0 {
                idf_present += idf;
                sum += self.term_score_idf(tf, idf, len);
            }
        }
        let coverage = if n > 1 && idf_all > 0.0 {
            idf_present / idf_all
        } else {
            1.0
        };
        weight * sum * coverage
    }

    /// [`Bm25::score_idf`] of a one-term query, bit for bit: the sum is the one term's score
    /// and the coverage factor 1, so neither is computed (a common term ranks thousands of
    /// entries this way).
    #[must_use]
    pub fn score_one(&self, weight: f32, len: u32, tf: u32, idf: f32) -> f32 {
        weight * self.term_score_idf(tf, idf, len)
    }
}

/// The unique canonical terms of a literal query, in first-occurrence order.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueryTerms {
    terms: Vec<String>,
}

impl QueryTerms {
    /// Tokenizes `query` with the canonical tokenizer (literal input is never a pattern).
    #[must_use]
    pub fn parse(query: &str) -> QueryTerms {
        let mut terms: Vec<String> = Vec::new();
        for_each_token(query, |t| {
            if !terms.iter().any(|x| x == t) {
                terms.push(t.to_owned());
            }
        });
        QueryTerms { terms }
    }

    /// From already canonical terms (fuzzy expansions, ...); duplicates dropped.
    #[must_use]
    pub fn from_terms<S: Into<String>>(terms: impl IntoIterator<Item = S>) -> QueryTerms {
        let mut out: Vec<String> = Vec::new();
        for t in terms {
            let t = t.into();
            if !out.contains(&t) {
                out.push(t);
            }
        }
        QueryTerms { terms: out }
    }

    /// The terms.
    #[must_use]
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Number of terms.
    #[must_use]
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// No terms (the query had no letters or digits).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The position of `term`, if it is a query term.
    #[must_use]
    pub fn position(&self, term: &str) -> Option<usize> {
        self.terms.iter().position(|t| t == term)
    }

    /// Counts the query terms in a document given as a sequence of canonical tokens.
    #[must_use]
    pub fn count_tokens<S: AsRef<str>>(&self, tokens: impl IntoIterator<Item = S>) -> TermCounts {
        let mut c = TermCounts {
            tf: vec![0; self.terms.len()],
            len: 0,
        };
        for t in tokens {
            c.len = c.len.saturating_add(1);
            if let Some(i) = self.position(t.as_ref()) {
                c.tf[i] = c.tf[i].saturating_add(1);
            }
        }
        c
    }

    /// Tokenizes `text` and counts the query terms in it.
    #[must_use]
    pub fn count_text(&self, text: &str) -> TermCounts {
        let mut c = TermCounts {
            tf: vec![0; self.terms.len()],
            len: 0,
        };
        for_each_token(text, |t| {
            c.len = c.len.saturating_add(1);
            if let Some(i) = self.position(t) {
                c.tf[i] = c.tf[i].saturating_add(1);
            }
        });
        c
    }
}

/// Query-term frequencies in one document.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TermCounts {
    /// Frequency of each query term, in [`QueryTerms::terms`] order.
    pub tf: Vec<u32>,
    /// The document's length in tokens.
    pub len: u32,
}

impl TermCounts {
    /// Whether the document satisfies `any` (some term occurs) or `all` (every term does).
    /// An empty query matches nothing here (no-query browsing is decided by filters alone).
    #[must_use]
    pub fn matches(&self, mode: QueryMatch) -> bool {
        terms_match(self.tf.iter().map(|&n| n > 0), mode)
    }

    /// Indices of the query terms that occur.
    pub fn matched(&self) -> impl Iterator<Item = usize> + '_ {
        self.tf
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(i, _)| i)
    }
}

/// `any`: at least one `true`; `all`: at least one and every one `true`.
#[must_use]
pub fn terms_match(present: impl IntoIterator<Item = bool>, mode: QueryMatch) -> bool {
    let mut seen = false;
    for p in present {
        match (mode, p) {
            (QueryMatch::Any, true) => return true,
            (QueryMatch::All, false) => return false,
            _ => seen = true,
        }
    }
    mode == QueryMatch::All && seen
}

/// The query terms present in a vocabulary (a cold digest), in query order, and whether
/// `mode` is satisfied by presence alone. For `all` this is a candidate, never a proof that
/// the terms share an entry.
#[must_use]
pub fn vocabulary_matches<D: AsRef<[u8]>>(
    vocabulary: &fst::Set<D>,
    query: &QueryTerms,
    mode: QueryMatch,
) -> (Vec<String>, bool) {
    let present: Vec<bool> = query
        .terms()
        .iter()
        .map(|t| vocabulary.contains(t))
        .collect();
    let matched = query
        .terms()
        .iter()
        .zip(&present)
        .filter(|(_, &p)| p)
        .map(|(t, _)| t.clone())
        .collect();
    (matched, terms_match(present, mode))
}

/// Document frequencies, document count and total length over everything searched.
#[derive(Debug, Clone, Default)]
pub struct CorpusStats {
    /// Documents seen.
    pub docs: u64,
    /// Total length of the documents seen, in tokens.
    pub total_len: u64,
    /// Documents containing each term.
    pub df: HashMap<String, u64>,
}

impl CorpusStats {
    /// Counts one document of `len` tokens containing the query terms with `tf > 0`.
    pub fn add(&mut self, query: &QueryTerms, counts: &TermCounts) {
        self.docs += 1;
        self.total_len += u64::from(counts.len);
        for i in counts.matched() {
            if let Some(t) = query.terms().get(i) {
                *self.df.entry(t.clone()).or_insert(0) += 1;
            }
        }
    }

    /// Adds precomputed statistics (a shard's `N`, total length and `df` of one term).
    pub fn merge_counts(
        &mut self,
        docs: u64,
        total_len: u64,
        df: impl IntoIterator<Item = (String, u64)>,
    ) {
        self.docs += docs;
        self.total_len += total_len;
        for (t, n) in df {
            *self.df.entry(t).or_insert(0) += n;
        }
    }

    /// `df` of a term (0 when unseen).
    #[must_use]
    pub fn df(&self, term: &str) -> u64 {
        self.df.get(term).copied().unwrap_or(0)
    }

    /// The BM25 parameters of this corpus.
    #[must_use]
    pub fn bm25(&self) -> Bm25 {
        Bm25::new(self.docs, self.total_len)
    }

    /// The weighted BM25 score of one document.
    #[must_use]
    pub fn score(&self, query: &QueryTerms, counts: &TermCounts, weight: f32) -> f32 {
        let bm = self.bm25();
        bm.score(
            weight,
            counts.len,
            query
                .terms()
                .iter()
                .zip(&counts.tf)
                .map(|(t, &tf)| (tf, self.df(t))),
        )
    }
}

/// Text in phrase-normal form with a map back to the original bytes.
#[derive(Debug, Clone)]
pub struct NormalizedText {
    text: String,
    /// For every byte of `text`, the original byte range it came from; empty when the
    /// normal form is the original with ASCII letters lowered (same offsets).
    map: Vec<(u32, u32)>,
}

impl NormalizedText {
    /// Normalizes `text` (see the module docs).
    #[must_use]
    pub fn new(text: &str) -> NormalizedText {
        Self::build(text, true)
    }

    /// The normal form alone, without the map back to the original bytes (half the work,
    /// for counting matches).
    fn text_only(text: &str) -> String {
        Self::build(text, false).text
    }

    fn build(text: &str, with_map: bool) -> NormalizedText {
        if text.is_ascii() {
            if !has_collapsible_space(text) {
                return NormalizedText {
                    text: text.to_ascii_lowercase(),
                    map: Vec::new(),
                };
            }
            return Self::build_ascii(text, with_map);
        }
        Self::build_chars(text, with_map)
    }

    /// [`NormalizedText::build_chars`] for ASCII text, a byte at a time: every ASCII
    /// character is its own NFKC form and none is a combining mark, so only case and
    /// whitespace runs change.
    fn build_ascii(text: &str, with_map: bool) -> NormalizedText {
        let b = text.as_bytes();
        let mut out: Vec<u8> = Vec::with_capacity(b.len());
        let mut map: Vec<(u32, u32)> = Vec::with_capacity(if with_map { b.len() } else { 0 });
        ascii_normal_form(b, 0, &mut out, with_map.then_some(&mut map));
        NormalizedText {
            text: String::from_utf8(out).unwrap_or_default(),
            map,
        }
    }

    /// Any text: each whitespace run becomes one space, each character with the combining
    /// marks after it its NFKC form, lowered. A run of ASCII bytes takes the byte-at-a-time
    /// form of [`NormalizedText::build_ascii`] but for its last byte before a non-ASCII
    /// character (a combining mark may follow it) and its trailing whitespace (Unicode
    /// whitespace after it joins the run): most of a mostly-ASCII text takes that path.
    fn build_chars(text: &str, with_map: bool) -> NormalizedText {
        let b = text.as_bytes();
        let mut out: Vec<u8> = Vec::with_capacity(text.len());
        let mut map: Vec<(u32, u32)> = Vec::with_capacity(if with_map { text.len() } else { 0 });
        let offset = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        let mut i = 0;
        while let Some(&c0) = b.get(i) {
            if c0 < 0x80 {
                let j = next_non_ascii(b, i).unwrap_or(b.len());
                let mut k = if j == b.len() { j } else { j - 1 };
                while k > i && b.get(k - 1).is_some_and(|&c| is_ascii_space(c)) {
                    k -= 1;
                }
                if k > i {
                    let run = b.get(i..k).unwrap_or_default();
                    ascii_normal_form(run, i, &mut out, with_map.then_some(&mut map));
                    i = k;
                    continue;
                }
            }
            let start = i;
            let Some(c) = text.get(start..).and_then(|t| t.chars().next()) else {
                break;
            };
            let next = |at: usize| text.get(at..).and_then(|t| t.chars().next());
            let mut end = start + c.len_utf8();
            if c.is_whitespace() {
                while let Some(d) = next(end).filter(|d| d.is_whitespace()) {
                    end += d.len_utf8();
                }
                out.push(b' ');
                if with_map {
                    map.push((offset(start), offset(end)));
                }
                i = end;
                continue;
            }
            while let Some(d) = next(end) {
                if d.is_ascii()
                    || d.is_whitespace()
                    || unicode_normalization::char::canonical_combining_class(d) == 0
                {
                    break;
                }
                end += d.len_utf8();
            }
            i = end;
            if c.is_ascii() && end == start + 1 {
                // An ASCII character without combining marks is its own NFKC form.
                push_char(&mut out, c.to_ascii_lowercase());
                if with_map {
                    map.push((offset(start), offset(end)));
                }
                continue;
            }
            let before = out.len();
            for n in nfkc(&text[start..end]).chars() {
                if n.is_whitespace() {
                    out.push(b' ');
                } else {
                    for l in n.to_lowercase() {
                        push_char(&mut out, if l == 'ς' { 'σ' } else { l });
                    }
                }
            }
            if with_map {
                for _ in before..out.len() {
                    map.push((offset(start), offset(end)));
                }
            }
        }
        NormalizedText {
            text: String::from_utf8(out).unwrap_or_default(),
            map,
        }
    }

    /// [`NormalizedText::build_chars`] a character at a time everywhere (what it was
    /// before its ASCII fast path), for the tests.
    #[cfg(test)]
    fn build_chars_reference(text: &str, with_map: bool) -> NormalizedText {
        let mut out = String::with_capacity(text.len());
        let mut map: Vec<(u32, u32)> = Vec::with_capacity(if with_map { text.len() } else { 0 });
        let offset = |i: usize| u32::try_from(i).unwrap_or(u32::MAX);
        let mut chars = text.char_indices().peekable();
        while let Some((start, c)) = chars.next() {
            if c.is_whitespace() {
                let mut end = start + c.len_utf8();
                while let Some(&(i, d)) = chars.peek() {
                    if !d.is_whitespace() {
                        break;
                    }
                    end = i + d.len_utf8();
                    chars.next();
                }
                out.push(' ');
                if with_map {
                    map.push((offset(start), offset(end)));
                }
                continue;
            }
            let mut end = start + c.len_utf8();
            while let Some(&(i, d)) = chars.peek() {
                if d.is_ascii()
                    || d.is_whitespace()
                    || unicode_normalization::char::canonical_combining_class(d) == 0
                {
                    break;
                }
                end = i + d.len_utf8();
                chars.next();
            }
            if c.is_ascii() && end == start + 1 {
                // An ASCII character without combining marks is its own NFKC form.
                out.push(c.to_ascii_lowercase());
                if with_map {
                    map.push((offset(start), offset(end)));
                }
                continue;
            }
            let before = out.len();
            for n in nfkc(&text[start..end]).chars() {
                if n.is_whitespace() {
                    out.push(' ');
                } else {
                    for l in n.to_lowercase() {
                        out.push(if l == 'ς' { 'σ' } else { l });
                    }
                }
            }
            if with_map {
                for _ in before..out.len() {
                    map.push((offset(start), offset(end)));
                }
            }
        }
        NormalizedText { text: out, map }
    }

    /// The normalized text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The original byte range of the normalized byte range `r` (widened to whole character
    /// clusters).
    #[must_use]
    pub fn original_range(&self, r: Range<usize>) -> Range<usize> {
        if self.map.is_empty() || r.is_empty() {
            return r;
        }
        let s = self.map.get(r.start).map_or(0, |m| m.0 as usize);
        let e = self.map.get(r.end - 1).map_or(s, |m| m.1 as usize);
        s..e
    }
}

/// The ASCII characters [`char::is_whitespace`] holds: tab, line feed, vertical tab, form
/// feed, carriage return and space.
fn is_ascii_space(c: u8) -> bool {
    matches!(c, b'\t'..=b'\r' | b' ')
}

/// Appends the normal form of ASCII bytes `b` (the text's bytes from `base` on): letters
/// lowered, each whitespace run one space; with `map`, each output byte's source range.
fn ascii_normal_form(
    b: &[u8],
    base: usize,
    out: &mut Vec<u8>,
    mut map: Option<&mut Vec<(u32, u32)>>,
) {
    if map.is_none() {
        // Without a map: every byte mapped at once (whitespace to a space, letters lowered),
        // then each run of spaces, all of them whitespace before, cut to one.
        let from = out.len();
        out.extend(b.iter().map(|&c| {
            if is_ascii_space(c) {
                b' '
            } else {
                c.to_ascii_lowercase()
            }
        }));
        // Found by a substring search for two spaces, the bytes between runs moved at once.
        let (mut w, mut r, end) = (from, from, out.len());
        while let Some(k) = out
            .get(r..end)
            .and_then(|rest| memchr::memmem::find(rest, b"  "))
        {
            let keep = r + k + 1;
            out.copy_within(r..keep, w);
            w += keep - r;
            r = keep;
            while out.get(r) == Some(&b' ') {
                r += 1;
            }
        }
        out.copy_within(r..end, w);
        out.truncate(w + (end - r));
        return;
    }
    let offset = |i: usize| u32::try_from(base + i).unwrap_or(u32::MAX);
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if is_ascii_space(c) {
            let start = i;
            while b.get(i).is_some_and(|&d| is_ascii_space(d)) {
                i += 1;
            }
            out.push(b' ');
            if let Some(m) = map.as_deref_mut() {
                m.push((offset(start), offset(i)));
            }
        } else {
            out.push(c.to_ascii_lowercase());
            if let Some(m) = map.as_deref_mut() {
                m.push((offset(i), offset(i + 1)));
            }
            i += 1;
        }
    }
}

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

fn has_collapsible_space(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter().any(|&c| is_ascii_space(c) && c != b' ')
        || b.windows(2).any(|w| w[0] == b' ' && w[1] == b' ')
}

/// Whether an ASCII needle's matches in the normal form of `text` are the ones
/// [`Phrase::matches_in_place`] finds in `text` itself: every non-ASCII character is
/// [`is_opaque`]. None then has a combining mark after it or after an ASCII character, so
/// each character is normalized alone: an ASCII one is lowered (whitespace runs collapsed
/// as in ASCII text) and a non-ASCII one becomes bytes that are all non-ASCII, at least one.
/// Every ASCII byte of the normal form is so a byte of `text`, lowered, and two ASCII bytes
/// are next to each other there exactly when they are in `text` (whitespace runs aside).
/// Most non-ASCII text (CJK, accented letters, Cyrillic, Greek, emoji) is so; fullwidth
/// forms, ligatures, Unicode whitespace and combining marks are not.
fn ascii_transparent(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = next_non_ascii(b, i) {
        let Some(c) = text.get(at..).and_then(|t| t.chars().next()) else {
            return false;
        };
        if !is_opaque(c) {
            return false;
        }
        i = at + c.len_utf8();
    }
    true
}

/// What [`is_opaque`] found for each character of the Basic Multilingual Plane: 0 not yet
/// asked, 1 opaque, 2 not.
static BMP_OPAQUE: [std::sync::atomic::AtomicU8; 0x1_0000] =
    [const { std::sync::atomic::AtomicU8::new(0) }; 0x1_0000];

/// Whether the non-ASCII character `c`, normalized alone (NFKC, lowered, whitespace a
/// space), gives at least one byte and no ASCII byte, and it is no combining mark (which
/// would be normalized with the character before it) and no whitespace. The answer for a
/// character of the BMP is kept.
fn is_opaque(c: char) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    let slot = BMP_OPAQUE.get(c as usize);
    match slot.map(|s| s.load(Relaxed)) {
        Some(1) => return true,
        Some(2) => return false,
        _ => {}
    }
    let opaque = !c.is_ascii()
        && !c.is_whitespace()
        && unicode_normalization::char::canonical_combining_class(c) == 0
        && {
            let mut buf = [0u8; 4];
            let n = NormalizedText::build_chars(c.encode_utf8(&mut buf), false).text;
            !n.is_empty() && !n.bytes().any(|b| b.is_ascii())
        };
    if let Some(s) = slot {
        s.store(if opaque { 1 } else { 2 }, Relaxed);
    }
    opaque
}

/// Copies `text` into `low` with ASCII letters lowered, and answers whether `text` is ASCII.
/// One pass over the bytes (it vectorizes; a push of each lowered byte did not) does both.
pub(crate) fn lower_into(low: &mut Vec<u8>, text: &[u8]) -> bool {
    low.clear();
    low.extend_from_slice(text);
    let mut seen = 0u8;
    for b in low.iter_mut() {
        seen |= *b;
        *b = b.to_ascii_lowercase();
    }
    seen.is_ascii()
}

/// A phrase query: contiguous, case-insensitive, over normalized text.
#[derive(Debug, Clone)]
pub struct Phrase {
    needle: String,
    /// The needle up to its first space: where a match in ASCII text may start.
    first_word: Box<memchr::memmem::Finder<'static>>,
}

impl PartialEq for Phrase {
    fn eq(&self, other: &Phrase) -> bool {
        self.needle == other.needle
    }
}

impl Eq for Phrase {}

thread_local! {
    /// ASCII text lowered for [`Phrase::count`], kept across calls.
    static LOWERED: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Phrase {
    /// The phrase of `query`, normalized and trimmed; `None` when nothing but whitespace.
    #[must_use]
    pub fn new(query: &str) -> Option<Phrase> {
        let n = NormalizedText::new(query);
        let needle = n.as_str().trim();
        if needle.is_empty() {
            None
        } else {
            let first = needle.split(' ').next().unwrap_or(needle);
            Some(Phrase {
                needle: needle.to_owned(),
                first_word: Box::new(memchr::memmem::Finder::new(first.as_bytes()).into_owned()),
            })
        }
    }

    /// The normalized phrase.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.needle
    }

    /// Whether `text` contains the phrase.
    #[must_use]
    pub fn is_match(&self, text: &str) -> bool {
        self.count(text, 1) > 0
    }

    /// Whether already normalized text contains the phrase.
    #[must_use]
    pub fn is_match_normalized(&self, text: &NormalizedText) -> bool {
        text.as_str().contains(&self.needle)
    }

    /// The number of non-overlapping matches in `text`, at most `max`: the length of
    /// [`Phrase::spans`] without mapping matches back to the original bytes.
    #[must_use]
    pub fn count(&self, text: &str, max: usize) -> usize {
        if self.searched_in_place() {
            // One pass copies the text lowered and learns whether it is ASCII.
            let mut low = LOWERED.with(std::cell::Cell::take);
            let ascii = lower_into(&mut low, text.as_bytes());
            let mut n = None;
            if ascii || ascii_transparent(text) {
                let mut k = 0;
                self.matches_lowered(&low, max, |_| k += 1);
                n = Some(k);
            }
            LOWERED.with(|c| c.set(low));
            if let Some(n) = n {
                return n;
            }
        } else if text.is_ascii() {
            // The normal form of ASCII text is ASCII: no match for this needle.
            return 0;
        }
        self.count_normalized(text, max)
    }

    /// [`Phrase::count`] of a stored text's bytes, not yet checked as UTF-8: ASCII bytes are
    /// read as they are (the pass that lowers them learns that they are ASCII), other text
    /// is checked first. `None` when it is not UTF-8. (Not in the browser build, which
    /// checks every text first: its size budget.)
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn count_bytes(&self, bytes: &[u8], max: usize) -> Option<usize> {
        if !self.searched_in_place() {
            if bytes.is_ascii() {
                // The normal form of ASCII text is ASCII: no match for this needle.
                return Some(0);
            }
            return std::str::from_utf8(bytes)
                .ok()
                .map(|t| self.count_normalized(t, max));
        }
        // One pass copies the text lowered and learns whether it is ASCII.
        let mut low = LOWERED.with(std::cell::Cell::take);
        let ascii = lower_into(&mut low, bytes);
        let text = if ascii {
            None
        } else {
            std::str::from_utf8(bytes).ok()
        };
        let n = if ascii || text.is_some_and(ascii_transparent) {
            let mut k = 0;
            self.matches_lowered(&low, max, |_| k += 1);
            Some(k)
        } else {
            None
        };
        LOWERED.with(|c| c.set(low));
        match n {
            Some(n) => Some(n),
            None => text.map(|t| self.count_normalized(t, max)),
        }
    }

    /// [`Phrase::count`] on the normal form of `text`: any text.
    fn count_normalized(&self, text: &str, max: usize) -> usize {
        let normal = NormalizedText::text_only(text);
        memchr::memmem::find_iter(normal.as_bytes(), self.needle.as_bytes())
            .take(max)
            .count()
    }

    /// Whether the matches in `text` are found on `text` itself
    /// ([`Phrase::matches_in_place`]): ASCII text, or text [`ascii_transparent`] to an ASCII
    /// phrase.
    fn in_place(&self, text: &str) -> bool {
        text.is_ascii() || (self.needle.is_ascii() && ascii_transparent(text))
    }

    /// The matches of [`Phrase::count`] and [`Phrase::spans`] in ASCII text (or text
    /// [`ascii_transparent`] to an ASCII needle, whose non-ASCII bytes then match no needle
    /// byte), each given to `on_match` as its byte range of `text`, at most `max`: the normal
    /// form of ASCII text only lowers letters and turns each whitespace run into one space, so
    /// on the text lowered a needle space matches a whole run and any other needle byte one
    /// text byte. A match starts where the needle's first word does (found by a substring
    /// search); matches are taken leftmost first without overlap, as on the normal form. A
    /// match's range is the one the normal form's map gives: it begins and ends with a byte
    /// of the needle that is no space (the needle is trimmed), each the text's own.
    fn matches_in_place(&self, text: &[u8], max: usize, on_match: impl FnMut(Range<usize>)) {
        if !self.searched_in_place() {
            return;
        }
        let mut low = LOWERED.with(std::cell::Cell::take);
        lower_into(&mut low, text);
        self.matches_lowered(&low, max, on_match);
        LOWERED.with(|c| c.set(low));
    }

    /// Whether the needle can match in ASCII text: it is ASCII (the normal form of ASCII text
    /// is) and does not begin with a space (it never does: it is trimmed).
    fn searched_in_place(&self) -> bool {
        let needle = self.needle.as_bytes();
        needle.first().is_some_and(|&b| b != b' ') && needle.is_ascii()
    }

    /// [`Phrase::matches_in_place`] on the text lowered by [`lower_into`]; the needle is one
    /// [`Phrase::searched_in_place`] takes.
    fn matches_lowered(&self, low: &[u8], max: usize, mut on_match: impl FnMut(Range<usize>)) {
        let needle = self.needle.as_bytes();
        let at = |p: usize| -> Option<usize> {
            let mut q = p;
            for &n in needle {
                if n == b' ' {
                    if !low.get(q).is_some_and(|&c| is_ascii_space(c)) {
                        return None;
                    }
                    while low.get(q).is_some_and(|&c| is_ascii_space(c)) {
                        q += 1;
                    }
                } else if low.get(q) == Some(&n) {
                    q += 1;
                } else {
                    return None;
                }
            }
            Some(q)
        };
        let (mut count, mut p) = (0, 0);
        while count < max {
            let Some(k) = low.get(p..).and_then(|rest| self.first_word.find(rest)) else {
                break;
            };
            p += k;
            if let Some(end) = at(p) {
                on_match(p..end);
                count += 1;
                p = end;
            } else {
                p += 1;
            }
        }
    }

    /// Non-overlapping matches as byte ranges of the original `text`, at most `max`.
    #[must_use]
    pub fn spans(&self, text: &str, max: usize) -> Vec<Range<usize>> {
        if self.in_place(text) {
            let mut spans = Vec::new();
            self.matches_in_place(text.as_bytes(), max, |r| spans.push(r));
            return spans;
        }
        self.spans_normalized(text, max)
    }

    /// [`Phrase::spans`] through the normal form and its map: any text.
    fn spans_normalized(&self, text: &str, max: usize) -> Vec<Range<usize>> {
        let n = NormalizedText::new(text);
        let len = self.needle.len();
        memchr::memmem::find_iter(n.as_str().as_bytes(), self.needle.as_bytes())
            .take(max)
            .map(|i| n.original_range(i..i + len))
            .collect()
    }
}

/// Byte ranges of the tokens of `text` that are query terms, at most `max`, for highlighting
/// literal and fuzzy hits.
#[must_use]
pub fn term_spans(text: &str, terms: &QueryTerms, max: usize) -> Vec<Range<usize>> {
    if max == 0 || terms.is_empty() {
        return Vec::new();
    }
    if text.is_ascii() {
        return run_spans(text.as_bytes(), terms, max);
    }
    term_spans_general(text, terms, max)
}

/// [`term_spans`] of ASCII text: each run of term bytes is one token, lowered, and is
/// compared with the terms.
fn run_spans(text: &[u8], terms: &QueryTerms, max: usize) -> Vec<Range<usize>> {
    ascii_runs(text)
        .filter(|r| is_ascii_term(&text[r.clone()], terms.terms()))
        .take(max)
        .collect()
}

/// Terms searched one at a time in ASCII text by [`TermSearch`] (their places are merged as
/// two lists); with more, one pass over the text's runs costs less.
#[cfg(not(target_arch = "wasm32"))]
const SEARCHED_TERMS: usize = 2;

/// The query terms of a page's highlights, ready for [`TermSearch::ascii_spans`].
#[derive(Debug, Clone)]
pub(crate) struct TermSearch {
    /// A search per term that can be a token of ASCII text (ASCII term bytes only), when
    /// there are at most [`SEARCHED_TERMS`] terms.
    #[cfg(not(target_arch = "wasm32"))]
    finders: Option<Vec<(CaseFinder, usize)>>,
}

impl TermSearch {
    /// The searches of `terms` (none in the browser build, which compares runs and keeps 3 KB
    /// of .wasm).
    #[cfg_attr(target_arch = "wasm32", allow(unused_variables))]
    pub(crate) fn new(terms: &QueryTerms) -> TermSearch {
        #[cfg(not(target_arch = "wasm32"))]
        {
            let ts = terms.terms();
            let finders = (ts.len() <= SEARCHED_TERMS).then(|| {
                ts.iter()
                    .filter(|t| t.bytes().all(is_ascii_term_byte))
                    .filter_map(|t| Some((CaseFinder::new(t.as_bytes(), None)?, t.len())))
                    .collect()
            });
            TermSearch { finders }
        }
        #[cfg(target_arch = "wasm32")]
        TermSearch {}
    }

    /// [`term_spans`] of ASCII `text` (the same spans). With few terms each is searched as a
    /// substring, ASCII case ignored (by its rare byte or in a lowered copy), and kept where
    /// no term byte is next to it: a token is a whole run of term bytes. Else the text's runs
    /// are compared with the terms.
    pub(crate) fn ascii_spans(
        &self,
        text: &[u8],
        terms: &QueryTerms,
        max: usize,
    ) -> Vec<Range<usize>> {
        if max == 0 || terms.is_empty() {
            return Vec::new();
        }
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(finders) = &self.finders {
            return searched_spans(finders, text, max);
        }
        run_spans(text, terms, max)
    }

    /// [`term_spans`] of text that is not all ASCII (the same spans). When every term has
    /// its search, by those searches: a term is found where no term character is next to
    /// it. The runs of term characters that a search cannot find are those holding a
    /// character that is neither ASCII nor sealed (which NFKC or case folding may make
    /// ASCII): each is found from the text's non-ASCII bytes and compared as [`term_spans`]
    /// compares it. So a long text with a few such characters is not read a character at a
    /// time. Else, and in the browser build, [`term_spans`].
    pub(crate) fn non_ascii_spans(
        &self,
        text: &str,
        terms: &QueryTerms,
        max: usize,
    ) -> Vec<Range<usize>> {
        #[cfg(not(target_arch = "wasm32"))]
        if let Some(finders) = self
            .finders
            .as_ref()
            .filter(|f| max > 0 && !f.is_empty() && f.len() == terms.len())
        {
            return mixed_spans(finders, text, terms, max);
        }
        term_spans(text, terms, max)
    }
}

/// [`TermSearch::non_ascii_spans`] by the searches of (at most two) terms.
#[cfg(not(target_arch = "wasm32"))]
fn mixed_spans(
    finders: &[(CaseFinder, usize)],
    text: &str,
    terms: &QueryTerms,
    max: usize,
) -> Vec<Range<usize>> {
    // A place found is at ASCII bytes, so its neighbours are whole characters.
    let found = searched_spans_by(finders, text.as_bytes(), max, |s, e| {
        !text
            .get(..s)
            .and_then(|t| t.chars().next_back())
            .is_some_and(is_term_char)
            && !text
                .get(e..)
                .and_then(|t| t.chars().next())
                .is_some_and(is_term_char)
    });
    // A run that starts past the last place found of a full list is not among the first.
    let until = found
        .get(max.saturating_sub(1))
        .map_or(text.len(), |r| r.start);
    let unsealed = unsealed_runs(text, terms, max, until);
    if unsealed.is_empty() {
        return found;
    }
    // Both lists are in order and never meet (a term found is a run of ASCII bytes).
    merged(found.into_iter(), unsealed.into_iter(), max)
}

/// The ranges of two lists in order, that never meet, merged in order, at most `max`.
#[cfg(not(target_arch = "wasm32"))]
fn merged(
    a: impl Iterator<Item = Range<usize>>,
    b: impl Iterator<Item = Range<usize>>,
    max: usize,
) -> Vec<Range<usize>> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    let mut out = Vec::new();
    while out.len() < max {
        let r = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if y.start < x.start => b.next(),
            (Some(_), _) => a.next(),
            (None, _) => b.next(),
        };
        let Some(r) = r else { break };
        out.push(r);
    }
    out
}

/// The spans [`term_spans`] gives in text with ASCII terms among the runs of term
/// characters that hold a character neither ASCII nor sealed, at most `max`, in order, of
/// the runs holding such a character before `until`.
#[cfg(not(target_arch = "wasm32"))]
fn unsealed_runs(text: &str, terms: &QueryTerms, max: usize, until: usize) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while out.len() < max {
        let Some(at) = next_non_ascii(bytes, from).filter(|&at| at < until) else {
            break;
        };
        let Some(c) = text.get(at..).and_then(|t| t.chars().next()) else {
            break;
        };
        let class = char_class(c);
        if class & TERM == 0 || class & SEALED != 0 {
            from = at + c.len_utf8();
            continue;
        }
        // The run around it: term characters back to its start and on to its end.
        let start = text.get(..at).map_or(at, |head| {
            let mut start = at;
            for ch in head.chars().rev() {
                if !is_term_char(ch) {
                    break;
                }
                start -= ch.len_utf8();
            }
            start
        });
        let end = text.get(at..).map_or(at, |tail| {
            let mut end = at;
            for ch in tail.chars() {
                if !is_term_char(ch) {
                    break;
                }
                end += ch.len_utf8();
            }
            end
        });
        let mut hit = false;
        if let Some(run) = text.get(start..end) {
            for_each_token(run, |t| hit |= terms.position(t).is_some());
        }
        if hit {
            out.push(start..end);
        }
        from = end.max(at + c.len_utf8());
    }
    out
}

/// Whether `c` is a term character, as [`term_spans`] tells: ASCII by the table, any other
/// by its class.
#[cfg(not(target_arch = "wasm32"))]
fn is_term_char(c: char) -> bool {
    match u8::try_from(c) {
        Ok(b) if b.is_ascii() => is_ascii_term_byte(b),
        _ => char_class(c) & TERM != 0,
    }
}

/// [`TermSearch::ascii_spans`] by a search of each of (at most two) terms.
#[cfg(not(target_arch = "wasm32"))]
fn searched_spans(finders: &[(CaseFinder, usize)], text: &[u8], max: usize) -> Vec<Range<usize>> {
    searched_spans_by(finders, text, max, |s, e| {
        (s == 0 || text.get(s - 1).is_some_and(|&b| !is_ascii_term_byte(b)))
            && text.get(e).is_none_or(|&b| !is_ascii_term_byte(b))
    })
}

/// The places of each of (at most two) terms in `text`, ASCII case ignored, where `whole`
/// holds of the place's start and end, merged in order, at most `max`.
#[cfg(not(target_arch = "wasm32"))]
fn searched_spans_by(
    finders: &[(CaseFinder, usize)],
    text: &[u8],
    max: usize,
    whole: impl Fn(usize, usize) -> bool + Copy,
) -> Vec<Range<usize>> {
    // One lowered copy serves every finder that searches one (each makes the same copy).
    let mut lowered = Vec::new();
    if let Some((f, _)) = finders.iter().find(|(f, _)| f.lowers()) {
        f.lower_into(text, &mut lowered);
    }
    let lowered = &lowered;
    let mut lists = finders.iter().map(|(f, len)| {
        let len = *len;
        let whole = move |s: usize| whole(s, s + len);
        f.starts(text, lowered)
            .filter(move |&s| whole(s))
            .take(max)
            .map(move |s| s..s + len)
    });
    let (Some(a), b) = (lists.next(), lists.next()) else {
        return Vec::new();
    };
    let Some(b) = b else {
        return a.collect();
    };
    // Two terms' places never meet (each is a whole run): merged as they are found (no
    // list per term), they are the runs'.
    merged(a, b, max)
}

/// The runs of term bytes (`_`, letters, digits) of ASCII text, in order: its tokens, before
/// they are lowered.
pub(crate) fn ascii_runs(text: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = at
            + text
                .get(at..)?
                .iter()
                .position(|&b| is_ascii_term_byte(b))?;
        let end = text[start..]
            .iter()
            .position(|&b| !is_ascii_term_byte(b))
            .map_or(text.len(), |n| start + n);
        at = end;
        Some(start..end)
    })
}

/// Whether a run of ASCII term bytes, lowered, is one of `terms`.
pub(crate) fn is_ascii_term(run: &[u8], terms: &[String]) -> bool {
    terms.iter().any(|t| {
        t.len() == run.len()
            && t.bytes()
                .zip(run)
                .all(|(a, &b)| a == b.to_ascii_lowercase())
    })
}

/// [`term_spans`] of any text: runs of term characters in the original text, ASCII bytes
/// classified by the table and other characters decoded one at a time. A run of ASCII bytes
/// is one token, lowered (compared as [`term_spans`] compares ASCII text); the canonical
/// tokens of any other run are compared with the query terms. Most runs of a text that is
/// not all ASCII are, and each then costs a comparison instead of a tokenizer call.
fn term_spans_general(text: &str, terms: &QueryTerms, max: usize) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let check = |s: usize, e: usize, ascii: bool, out: &mut Vec<Range<usize>>| {
        let hit = if ascii {
            is_ascii_term(&bytes[s..e], terms.terms())
        } else {
            let mut hit = false;
            for_each_token(&text[s..e], |t| hit |= terms.position(t).is_some());
            hit
        };
        if hit && out.len() < max {
            out.push(s..e);
        }
    };
    // A run holding a non-ASCII character, all of whose non-ASCII characters are sealed,
    // is one token that is not ASCII (`is_sealed`): no ASCII term, so not looked at.
    let ascii_terms = terms.terms().iter().all(|t| t.is_ascii());
    // The run being read: where it starts, whether it is ASCII so far, and whether its
    // non-ASCII characters are all sealed so far.
    let mut start: Option<usize> = None;
    let mut ascii = true;
    let mut sealed = true;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let (class, width) = if b < 0x80 {
            (if is_ascii_term_byte(b) { TERM } else { 0 }, 1)
        } else {
            let Some(c) = text.get(i..).and_then(|t| t.chars().next()) else {
                break;
            };
            (char_class(c), c.len_utf8())
        };
        if class & TERM != 0 {
            if start.is_none() {
                start = Some(i);
                ascii = true;
                sealed = true;
            }
            if b >= 0x80 {
                ascii = false;
                sealed &= class & SEALED != 0;
            }
        } else if let Some(s) = start.take() {
            if ascii || !(sealed && ascii_terms) {
                check(s, i, ascii, &mut out);
            }
            if out.len() >= max {
                return out;
            }
        }
        i += width;
    }
    if let Some(s) = start {
        if ascii || !(sealed && ascii_terms) {
            check(s, text.len(), ascii, &mut out);
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init, clippy::reversed_empty_ranges)]
mod tests {
    use super::*;

    /// `len` bytes of `alphabet` drawn by xorshift from `x`.
    fn random_text(alphabet: &[u8], len: usize, x: &mut u64) -> String {
        let mut text = String::new();
        for _ in 0..len {
            *x ^= *x << 13;
            *x ^= *x >> 7;
            *x ^= *x << 17;
            text.push(char::from(alphabet[(*x % alphabet.len() as u64) as usize]));
        }
        text
    }

    /// The spans of ASCII text searched term by term are the runs' spans: random texts over
    /// both cases of a rare and a common letter, a digit, `_` and separators, one to three
    /// terms (three: the runs are compared), every cap.
    #[test]
    fn searched_ascii_spans_are_the_runs_spans() {
        let alphabet = b"qQaA1_ .-";
        let sets: [&[&str]; 9] = [
            &["q"],
            &["a"],
            &["qa"],
            &["aq", "a"],
            &["q_1", "qq"],
            &["aa", "a1"],
            &["q", "a", "qa"],
            &["é", "q"],
            &["a.q"],
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut found = 0;
        for len in 0..600 {
            let text = random_text(alphabet, len % 40, &mut x);
            found += same_spans(&text, &sets, |s, t, q, max| {
                s.ascii_spans(t.as_bytes(), q, max)
            })
            .len();
        }
        assert!(found > 5_000, "{found}");
    }

    /// The spans `search` gives of `text` for each set of terms, at every cap, checked equal
    /// to [`term_spans`]'s; all of them.
    fn same_spans(
        text: &str,
        sets: &[&[&str]],
        search: impl Fn(&TermSearch, &str, &QueryTerms, usize) -> Vec<Range<usize>>,
    ) -> Vec<Range<usize>> {
        let mut all = Vec::new();
        for set in sets {
            let q = QueryTerms::from_terms(set.iter().copied());
            let s = TermSearch::new(&q);
            for max in [0, 1, 2, 5, usize::MAX] {
                let want = term_spans(text, &q, max);
                assert_eq!(search(&s, text, &q, max), want, "{text:?} {set:?} {max}");
                all.extend(want);
            }
        }
        all
    }

    /// In text that is not all ASCII, the searches' spans are the general ones: random texts
    /// over ASCII term bytes of both cases, separators, sealed letters, characters that NFKC
    /// or case folding makes ASCII (a ligature, a full-width letter, the Kelvin sign), a
    /// combining mark and a dash; one or two terms (one not ASCII: the general search), every
    /// cap.
    #[test]
    fn searched_mixed_spans_are_the_general_spans() {
        let alphabet = [
            "q", "Q", "a", "k", "f", "i", "1", "_", " ", ".", "-", "\u{e9}", "\u{65e5}",
            "\u{fb01}", "\u{ff51}", "\u{212a}", "\u{301}", "\u{2014}",
        ];
        let sets: [&[&str]; 10] = [
            &["q"],
            &["a"],
            &["qa"],
            &["aq", "a"],
            &["q_1", "qq"],
            &["fi"],
            &["k", "q"],
            &["fia", "kk"],
            &["\u{e9}", "q"],
            &["a.q"],
        ];
        let mut next = crate::test_util::xorshift(0x2545_f491_4f6c_dd1d);
        let (mut found, mut unsealed) = (0, 0);
        for len in 0..1_500 {
            let text: String = (0..len % 50)
                .map(|_| alphabet[next(alphabet.len() as u64) as usize])
                .collect();
            let spans = same_spans(&text, &sets, TermSearch::non_ascii_spans);
            found += spans.len();
            unsealed += spans
                .iter()
                .filter(|r| !text[(*r).clone()].is_ascii())
                .count();
        }
        assert!(found > 5_000 && unsealed > 500, "{found} {unsealed}");
    }

    /// A one-term score is [`Bm25::score_idf`]'s to the bit, over frequencies, lengths past
    /// the cap, weights and document frequencies from none to every document.
    #[test]
    fn one_term_scores_are_the_general_scores() {
        let mut checked = 0;
        for (docs, total) in [(1u64, 1u64), (10, 700), (4_212, 9_000_000), (100_000, 3)] {
            let bm = Bm25::new(docs, total);
            for df in [0, 1, 2, docs / 2, docs] {
                let idf = bm.idf(df);
                for tf in [0u32, 1, 2, 7, 1_000, u32::MAX] {
                    for len in [0u32, 1, 30, 5_000, MAX_NORM_LEN, u32::MAX] {
                        for weight in [0.0f32, 0.25, 1.0, 1.5] {
                            let general = bm.score_idf(weight, len, [(tf, idf)]);
                            let one = bm.score_one(weight, len, tf, idf);
                            assert_eq!(one.to_bits(), general.to_bits(), "{docs} {df} {tf} {len}");
                            checked += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(checked, 4 * 5 * 6 * 6 * 4);
    }

    /// The phrase `needle`'s count and spans in `text` (at each cap) and whether it matches
    /// are those found on the normal form of `text`, whichever path takes them.
    fn assert_phrase_is_the_normal_forms(needle: &str, text: &str, maxes: &[usize]) {
        let p = Phrase::new(needle).unwrap();
        for &max in maxes {
            let want = NormalizedText::text_only(text)
                .match_indices(p.as_str())
                .take(max)
                .count();
            assert_eq!(
                p.count(text, max),
                want,
                "{needle:?} in {text:?}, max {max}"
            );
            // From the bytes, not checked first: the same.
            assert_eq!(
                p.count_bytes(text.as_bytes(), max),
                Some(want),
                "{needle:?} in {text:?}, max {max}"
            );
            assert_eq!(
                p.spans(text, max),
                p.spans_normalized(text, max),
                "{needle:?} in {text:?}, max {max}"
            );
        }
        assert_eq!(
            p.is_match(text),
            NormalizedText::new(text).as_str().contains(p.as_str()),
            "{needle:?} in {text:?}"
        );
    }

    /// Counting in place on ASCII text equals counting on its normal form, for needles with
    /// and without spaces, overlapping candidates, whitespace runs and every cap.
    #[test]
    fn ascii_phrase_count_is_the_normal_form_count() {
        let alphabet = b"ab AB\t\n\x0b.";
        let needles = [
            "ab", "a b", "ab a", "b ab", "aba", "a", ". a", "ab  ab", "é a",
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for len in 0..400 {
            let text = random_text(alphabet, len % 50, &mut x);
            for n in needles {
                assert_phrase_is_the_normal_forms(n, &text, &[0, 1, 3, 64]);
            }
        }
    }

    /// The byte-at-a-time form of ASCII text is the character-at-a-time one, map included,
    /// for every mix of case, whitespace runs (vertical tab too) and punctuation.
    #[test]
    fn ascii_normal_form_is_the_general_one() {
        let alphabet = b"aZ q\t\n\x0b\x0c\r  .-_9\x00\x7f";
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for len in 0..300 {
            let text = random_text(alphabet, len % 40, &mut x);
            for with_map in [false, true] {
                let fast = NormalizedText::build_ascii(&text, with_map);
                let slow = NormalizedText::build_chars(&text, with_map);
                assert_eq!(fast.text, slow.text, "{text:?}");
                assert_eq!(fast.map, slow.map, "{text:?}");
            }
        }
        // A vertical tab alone collapses as any other whitespace does.
        assert_eq!(NormalizedText::new("a\x0bb").as_str(), "a b");
        assert!(Phrase::new("flaky timeout")
            .unwrap()
            .is_match("FLAKY\x0btimeout"));
    }

    /// The general form with its ASCII fast path is the character-at-a-time one, map
    /// included, over ASCII mixed with combining marks (after ASCII letters too), Unicode
    /// whitespace, compatibility characters, capitals and final sigma.
    #[test]
    fn general_normal_form_is_the_char_at_a_time_one() {
        let alphabet: &[&str] = &[
            "a", "Z", " ", "\t", "\n", ".", "e", "\u{301}", "\u{327}", "\u{a0}", "\u{3000}",
            "\u{85}", "ｆ", "ﬁ", "é", "Σ", "ς", "İ", "K", "ſ", "가", "\u{11a8}", "9", "_",
        ];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for len in 0..600 {
            let text: String = (0..len % 30)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            for with_map in [false, true] {
                let fast = NormalizedText::build_chars(&text, with_map);
                let slow = NormalizedText::build_chars_reference(&text, with_map);
                assert_eq!(fast.text, slow.text, "{text:?}");
                assert_eq!(fast.map, slow.map, "{text:?}");
            }
        }
    }

    /// Counting in place on text whose non-ASCII characters are opaque equals counting on its
    /// normal form; text with any other non-ASCII character (fullwidth letters, ligatures, a
    /// Kelvin sign, combining marks after ASCII letters, Unicode whitespace, a diaeresis
    /// that normalizes to a space and a mark) takes the normal form, and counts the same.
    #[test]
    fn mixed_phrase_count_is_the_normal_form_count() {
        let alphabet: &[&str] = &[
            "a",
            "b",
            "A",
            " ",
            "\t",
            ".",
            "日",
            "é",
            "Σ",
            "ς",
            "ß",
            "🚀",
            "✅",
            "가",
            "ж",
            "ｆ",
            "ﬁ",
            "\u{212a}",
            "\u{301}",
            "\u{327}",
            "\u{a0}",
            "\u{3000}",
            "\u{85}",
            "\u{a8}",
            "İ",
            "：",
            "\u{1d41a}",
        ];
        let needles = ["ab", "a b", "ab a", "b.a", "fi a", "k", "a : b", "é a", "σ"];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut transparent, mut other) = (0, 0);
        for len in 0..3000 {
            // Mostly the first fifteen (ASCII and opaque), so many texts are transparent.
            let text: String = (0..len % 24)
                .map(|_| {
                    let r = next();
                    let k = if r % 4 == 0 { alphabet.len() } else { 15 };
                    alphabet[((r >> 8) % k as u64) as usize]
                })
                .collect();
            if !text.is_ascii() {
                if ascii_transparent(&text) {
                    transparent += 1;
                } else {
                    other += 1;
                }
            }
            for n in needles {
                assert_phrase_is_the_normal_forms(n, &text, &[1, 2, 64]);
            }
        }
        assert!(transparent > 500 && other > 500, "{transparent} {other}");
        for c in [
            "ｆ", "ﬁ", "\u{212a}", "\u{301}", "\u{a0}", "\u{3000}", "\u{a8}", "İ", "：",
        ] {
            assert!(!ascii_transparent(&format!("a{c}b")), "{c:?}");
        }
        for c in ["日", "é", "Σ", "ς", "ß", "🚀", "✅", "가", "ж"] {
            assert!(ascii_transparent(&format!("a{c}b")), "{c:?}");
        }
    }

    #[test]
    fn phrase_count_is_the_number_of_spans() {
        let texts = [
            "Flaky timeout, flaky  timeout\n\tflaky timeout",
            "ｆｌａｋｙ timeout and FLAKY\u{a0}TIMEOUT",
            "cafe\u{301} flaky timeout ﬁ flaky timeout",
            "no match here",
            "",
        ];
        let p = Phrase::new("flaky timeout").unwrap();
        for t in texts {
            for max in [0, 1, 2, 100] {
                assert_eq!(p.count(t, max), p.spans(t, max).len(), "{t:?} {max}");
            }
        }
        assert_eq!(p.count(texts[0], 100), 3);
        assert_eq!(p.count(texts[1], 100), 2);
        // Bytes that are not UTF-8 are refused, wherever the bad byte is, and for a needle
        // searched in place or on the normal form.
        for needle in ["flaky timeout", "ｆ timeout"] {
            let q = Phrase::new(needle).unwrap();
            for bad in [
                &b"\xff flaky timeout"[..],
                b"flaky timeout \xe6\x97",
                b"\xc0\xaf",
            ] {
                assert_eq!(q.count_bytes(bad, 100), None, "{needle:?} {bad:?}");
            }
        }
    }

    #[test]
    fn weights_follow_the_table() {
        use TextClass::*;
        assert!(provenance_weight(UserText, false) > provenance_weight(ToolInput, false));
        assert!(provenance_weight(AssistantText, false) > provenance_weight(ToolOutput, false));
        assert!((provenance_weight(ToolOutput, true) - 1.0).abs() < f32::EPSILON);
        assert!((provenance_weight(ToolInput, true) - 1.0).abs() < f32::EPSILON);
        assert!((provenance_weight(Meta, true) - 0.3).abs() < f32::EPSILON);
        assert!((provenance_weight(Summary, false) - 0.8).abs() < f32::EPSILON);
        assert!((provenance_weight(Thinking, false) - 0.6).abs() < f32::EPSILON);
        // Every class, with and without operations, as the weights were first written.
        for ops in [false, true] {
            for (class, want) in [
                (UserText, 0.9),
                (AssistantText, 1.0),
                (Summary, 0.8),
                (Thinking, 0.6),
                (ToolInput, if ops { 1.0 } else { 0.5 }),
                (ToolOutput, if ops { 1.0 } else { 0.4 }),
                (Meta, 0.3),
            ] {
                assert_eq!(provenance_weight(class, ops), want, "{class:?} {ops}");
            }
        }
    }

    #[test]
    fn bm25_values() {
        let bm = Bm25::new(10, 100);
        assert!((bm.avg_len - 10.0).abs() < 1e-6);
        // idf(df=1, N=10) = ln(1 + 9.5/1.5)
        assert!((bm.idf(1) - (1.0f32 + 9.5 / 1.5).ln()).abs() < 1e-5);
        assert!(bm.idf(10) > 0.0, "non-negative idf");
        assert!(bm.idf(1) > bm.idf(5));
        // tf saturates; shorter documents score higher.
        assert!(bm.term_score(2, 1, 10) > bm.term_score(1, 1, 10));
        assert!(bm.term_score(1, 1, 5) > bm.term_score(1, 1, 20));
        assert_eq!(bm.term_score(0, 1, 10), 0.0);
        // tf=1, len=avg: idf * 2.2 / 2.2 = idf
        assert!((bm.term_score(1, 1, 10) - bm.idf(1)).abs() < 1e-5);
        assert!((bm.score(0.5, 10, [(1, 1)]) - 0.5 * bm.idf(1)).abs() < 1e-5);
        let empty = Bm25::new(0, 0);
        assert!(empty.idf(3).is_finite());
    }

    #[test]
    fn coverage_weights_missing_terms_by_idf() {
        let bm = Bm25::new(1000, 10_000);
        // Both terms: no loss. One term of two: the share of idf present.
        let both = bm.score(1.0, 10, [(1, 5), (1, 500)]);
        let plain = bm.term_score(1, 5, 10) + bm.term_score(1, 500, 10);
        assert!((both - plain).abs() < 1e-5);
        let rare_only = bm.score(1.0, 10, [(1, 5), (0, 500)]);
        let common_only = bm.score(1.0, 10, [(0, 5), (1, 500)]);
        let share = bm.idf(5) / (bm.idf(5) + bm.idf(500));
        assert!((rare_only - bm.term_score(1, 5, 10) * share).abs() < 1e-5);
        assert!(rare_only > 4.0 * common_only);
        // A single term is never scaled.
        assert!((bm.score(1.0, 10, [(1, 5)]) - bm.term_score(1, 5, 10)).abs() < 1e-5);
    }

    #[test]
    fn length_normalization_is_capped() {
        let bm = Bm25::new(1000, 10_000);
        assert!(bm.term_score(1, 5, 200) > bm.term_score(1, 5, 900));
        let at_cap = bm.term_score(1, 5, MAX_NORM_LEN);
        assert!((bm.term_score(1, 5, 50_000) - at_cap).abs() < 1e-6);
    }

    #[test]
    fn query_terms_and_counts() {
        let q = QueryTerms::parse("Fix src/foo.ts fix FOO");
        assert_eq!(q.terms(), ["fix", "src", "foo", "ts"]);
        let c = q.count_text("foo bar FOO ts");
        assert_eq!(c.tf, [0, 0, 2, 1]);
        assert_eq!(c.len, 4);
        assert!(c.matches(QueryMatch::Any));
        assert!(!c.matches(QueryMatch::All));
        assert_eq!(c.matched().collect::<Vec<_>>(), [2, 3]);
        let c2 = q.count_tokens(["fix", "src", "foo", "ts", "x"]);
        assert!(c2.matches(QueryMatch::All));
        assert_eq!(c2.len, 5);
        let none = QueryTerms::parse("!!");
        assert!(none.is_empty());
        assert!(!none.count_text("x").matches(QueryMatch::Any));
        assert!(!none.count_text("x").matches(QueryMatch::All));
        assert_eq!(QueryTerms::from_terms(["a", "b", "a"]).terms(), ["a", "b"]);
    }

    #[test]
    fn corpus_stats_rank_rare_terms_higher() {
        let q = QueryTerms::parse("common rare");
        let docs = [
            "common words here",
            "common again",
            "common and rare",
            "nothing",
        ];
        let mut stats = CorpusStats::default();
        let counts: Vec<TermCounts> = docs.iter().map(|d| q.count_text(d)).collect();
        for c in &counts {
            stats.add(&q, c);
        }
        assert_eq!(stats.docs, 4);
        assert_eq!(stats.df("common"), 3);
        assert_eq!(stats.df("rare"), 1);
        let s: Vec<f32> = counts.iter().map(|c| stats.score(&q, c, 1.0)).collect();
        assert!(s[2] > s[0] && s[2] > s[1]);
        assert_eq!(s[3], 0.0);
        let mut merged = CorpusStats::default();
        merged.merge_counts(4, 9, [("rare".to_owned(), 1)]);
        assert_eq!(merged.df("rare"), 1);
        assert_eq!(merged.bm25().docs, 4);
    }

    #[test]
    fn vocabulary_presence() {
        let v = fst::Set::from_iter(["alpha", "beta", "gamma"]).unwrap();
        let q = QueryTerms::parse("beta delta alpha");
        let (m, ok) = vocabulary_matches(&v, &q, QueryMatch::Any);
        assert_eq!(m, ["beta", "alpha"]);
        assert!(ok);
        let (_, ok) = vocabulary_matches(&v, &q, QueryMatch::All);
        assert!(!ok);
        let (_, ok) = vocabulary_matches(&v, &QueryTerms::parse("alpha gamma"), QueryMatch::All);
        assert!(ok);
    }

    #[test]
    fn phrase_is_contiguous_case_insensitive() {
        let p = Phrase::new("  Connection   REFUSED ").unwrap();
        assert_eq!(p.as_str(), "connection refused");
        assert!(p.is_match("error: connection refused (os error 111)"));
        assert!(p.is_match("CONNECTION\n\trefused"));
        assert!(!p.is_match("refused connection"));
        assert!(!p.is_match("connection was refused"));
        assert!(Phrase::new("   ").is_none());
        assert!(Phrase::new("ＦＯＯ").unwrap().is_match("foo"));
        assert!(Phrase::new("ΟΔΟΣ").unwrap().is_match("η οδος"));
        assert!(Phrase::new("café").unwrap().is_match("CAFE\u{301} noir"));
    }

    #[test]
    fn phrase_spans_map_to_original_bytes() {
        let p = Phrase::new("foo bar").unwrap();
        let t = "x FOO  bar y foo\nbar";
        let spans = p.spans(t, 10);
        assert_eq!(spans.len(), 2);
        assert_eq!(&t[spans[0].clone()], "FOO  bar");
        assert_eq!(&t[spans[1].clone()], "foo\nbar");
        let t = "Ｆｏｏ ｂａｒ!";
        let s = p.spans(t, 10);
        assert_eq!(&t[s[0].clone()], "Ｆｏｏ ｂａｒ");
        let t = "ab CAFE\u{301} cd";
        let s = Phrase::new("café").unwrap().spans(t, 10);
        assert_eq!(&t[s[0].clone()], "CAFE\u{301}");
        assert_eq!(p.spans("foo bar foo bar", 1).len(), 1);
    }

    #[test]
    fn term_spans_find_query_tokens() {
        let q = QueryTerms::parse("foo ts");
        let t = "src/Foo.ts and foobar";
        let s = term_spans(t, &q, 10);
        let words: Vec<&str> = s.iter().map(|r| &t[r.clone()]).collect();
        assert_eq!(words, ["Foo", "ts"]);
        assert_eq!(term_spans(t, &q, 1).len(), 1);
        assert!(term_spans(t, &QueryTerms::default(), 5).is_empty());
        let t = "ＦＯＯ!";
        assert_eq!(term_spans(t, &q, 5), [0..t.len() - 1]);
    }

    /// [`term_spans_general`] as it was, a character at a time with a tokenizer call per run.
    fn term_spans_reference(text: &str, terms: &QueryTerms, max: usize) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut start: Option<usize> = None;
        let check = |s: usize, e: usize, out: &mut Vec<Range<usize>>| {
            let mut hit = false;
            for_each_token(&text[s..e], |t| hit |= terms.position(t).is_some());
            if hit && out.len() < max {
                out.push(s..e);
            }
        };
        for (i, c) in text.char_indices() {
            let term_char = c == '_'
                || c.is_alphanumeric()
                || (!c.is_ascii() && unicode_normalization::char::is_combining_mark(c));
            if term_char {
                start.get_or_insert(i);
            } else if let Some(s) = start.take() {
                check(s, i, &mut out);
                if out.len() >= max {
                    return out;
                }
            }
        }
        if let Some(s) = start {
            check(s, text.len(), &mut out);
        }
        out
    }

    /// Text that is not all ASCII: the run-by-byte path gives the spans the character path
    /// gave, at every cap, over ASCII runs, accented and decomposed letters, full-width and
    /// compatibility characters, and separators of both kinds.
    #[test]
    fn general_term_spans_equal_the_character_path() {
        let alphabet: Vec<char> = "aAbB9_ .-\néÉe\u{301}ｆＦ①ﬁ™→ßẞİı中жЖ가\u{212a}kK"
            .chars()
            .collect();
        // With a term that is not ASCII every run is tokenized; with ASCII terms only, runs
        // of ASCII and sealed characters (`é`, `ß`, `ı`, `中`, `ж`, ...) are not.
        let mixed = QueryTerms::from_terms(
            [
                "ab", "b9", "é", "f", "1", "fi", "ss", "中", "a_b", "i\u{307}",
            ]
            .map(String::from),
        );
        let ascii = QueryTerms::from_terms(
            ["ab", "b9", "f", "1", "fi", "ss", "a_b", "a", "k", "e", "tm"].map(String::from),
        );
        let mut x = 0x5851_f42d_4c95_7f2du64;
        let mut hits = 0;
        for len in 0..1200 {
            let mut text = String::new();
            for _ in 0..len % 40 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                text.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            for (q, only_ascii) in [(&mixed, false), (&ascii, true)] {
                for max in [1, 2, 5, 64] {
                    let want = term_spans_reference(&text, q, max);
                    if only_ascii {
                        hits += want
                            .iter()
                            .filter(|r| !text[(*r).clone()].is_ascii())
                            .count();
                    }
                    assert_eq!(
                        term_spans_general(&text, q, max),
                        want,
                        "{text:?} max {max}"
                    );
                }
            }
        }
        // Runs that are not ASCII and hold an ASCII term (fullwidth letters, `①`, `ﬁ`,
        // `™`, the Kelvin sign): the ones a wrong seal would lose.
        assert!(hits > 500, "{hits}");
    }

    /// The matches [`term_spans`] finds in ASCII text are at most the occurrences of the
    /// terms among the text's tokens (the indexer's tokenizer over the whole text), so a page
    /// stops looking once it has found as many as an entry's term frequencies. Not so in
    /// other text: a compatibility character normalizes to a separator and a mark, so a run
    /// can match that the whole text's tokens do not hold.
    #[test]
    fn ascii_term_spans_are_at_most_the_terms_tokens() {
        let q = QueryTerms::from_terms(["ab", "a_1", "b", "zz9", "a", "1"].map(String::from));
        let count = |text: &str| {
            let mut n = 0usize;
            for_each_token(text, |t| n += usize::from(q.position(t).is_some()));
            n
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..2000 {
            let text = random_text(b"aAbBzZ9_1 .-/\n\t", len % 80, &mut x);
            let spans = term_spans(&text, &q, usize::MAX);
            assert_eq!(spans.len(), count(&text), "{text:?}: {spans:?}");
        }
        let text = "\u{a8}A";
        let q = QueryTerms::from_terms(["a"].map(String::from));
        let mut n = 0usize;
        for_each_token(text, |t| n += usize::from(q.position(t).is_some()));
        assert_eq!((term_spans(text, &q, usize::MAX).len(), n), (1, 0));
    }

    /// ASCII text takes the run-by-byte path; the character-at-a-time path gives the same
    /// spans, at every cap.
    #[test]
    fn ascii_term_spans_equal_the_general_path() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let q = QueryTerms::from_terms(["ab", "a_1", "b", "zz9"].map(String::from));
        for len in 0..300 {
            let text = random_text(b"aAbBzZ9_1 .-/\n", len % 60, &mut x);
            for max in [1, 2, 5, 64] {
                assert_eq!(
                    term_spans(&text, &q, max),
                    term_spans_general(&text, &q, max),
                    "{text:?} {max}"
                );
            }
        }
        let text = "AB ab_ a_1 A_1x b";
        let spans = term_spans(text, &q, 10);
        let words: Vec<&str> = spans.iter().map(|r| &text[r.clone()]).collect();
        assert_eq!(words, ["AB", "a_1", "b"]);
    }
}
