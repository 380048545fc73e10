//! Identifier-shaped queries: structural resolution of ids and the adjacency boost.
//!
//! A literal query is data, never syntax: `ZETA-999`, `src/foo.ts`, `foo.bar()`, `#1234` are
//! split by the canonical tokenizer into terms (`zeta 999`, `src foo ts`, `foo bar`, `1234`).
//! Two things keep such a query from losing what it names:
//!
//! - [`IdQuery`]: a query that is exactly a session id, entry id or operation address
//!   (ASCII case-insensitive), or a prefix of at least [`MIN_HEX_PREFIX`] hex digits of one
//!   (dashes ignored on both sides, so a UUID may be given without them), resolves to that
//!   record before any lexical hit. Only queries of at least [`MIN_ID_CHARS`] characters
//!   without whitespace are tried.
//! - [`Sequence`]: whether the query's terms occur contiguously and in order in a text,
//!   checked on an entry's stored text with the canonical tokenizer.

use crate::case_find::CaseFinder;
use sessiondex_core::tokenize::{
    any_token, is_ascii_term_byte, is_term_char, term_char_at, tokenize,
};

/// Shortest query tried as an exact id.
pub const MIN_ID_CHARS: usize = 6;
/// Shortest hex prefix that resolves an id.
pub const MIN_HEX_PREFIX: usize = 12;
/// Candidates (containing every query term, best BM25 first) checked for adjacency per call.
pub const ADJACENCY_CANDIDATES: usize = 2_000;

/// A query that may name a record by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdQuery {
    exact: String,
    hex: Option<String>,
}

fn squash(s: &str) -> String {
    s.chars()
        .filter(|&c| c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

impl IdQuery {
    /// The id query of `query`, if it is shaped like one (trimmed, no whitespace, at least
    /// [`MIN_ID_CHARS`] characters).
    #[must_use]
    pub fn parse(query: &str) -> Option<IdQuery> {
        let q = query.trim();
        if q.chars().count() < MIN_ID_CHARS || q.chars().any(char::is_whitespace) {
            return None;
        }
        let s = squash(q);
        let hex =
            (s.len() >= MIN_HEX_PREFIX && s.bytes().all(|b| b.is_ascii_hexdigit())).then_some(s);
        Some(IdQuery {
            exact: q.to_owned(),
            hex,
        })
    }

    /// The catalog's id key ([`sessiondex_core::catalog::id_key`]) every id this query
    /// matches has: the sessions listed under it are the only ones to look in.
    #[must_use]
    pub fn catalog_key(&self) -> String {
        sessiondex_core::catalog::id_key(&self.exact)
    }

    /// Whether `id` is the query, or starts with its hex prefix.
    #[must_use]
    pub fn matches(&self, id: &str) -> bool {
        if id.eq_ignore_ascii_case(&self.exact) {
            return true;
        }
        match &self.hex {
            Some(h) if id.len() >= h.len() => squash(id).starts_with(h.as_str()),
            _ => false,
        }
    }
}

/// The query's terms in order, duplicates kept, when there are at least two (a sequence
/// whose adjacency can be checked).
#[must_use]
pub fn sequence(query: &str) -> Option<Vec<String>> {
    let t = tokenize(query);
    (t.len() >= 2).then_some(t)
}

/// Whether the canonical tokens of `text` hold `seq` contiguously and in order.
#[must_use]
pub fn contains_sequence(text: &str, seq: &[String]) -> bool {
    Sequence::new(seq.to_vec()).is_in(text, false, &mut Vec::new())
}

/// A query's terms in order, ready to be looked for in many texts (an adjacency check runs
/// over up to [`ADJACENCY_CANDIDATES`] entries per call).
#[derive(Debug, Clone)]
pub struct Sequence {
    terms: Vec<String>,
    /// The first term's search, ASCII case ignored (every term non-empty ASCII).
    ascii_first: Option<CaseFinder>,
}

impl Sequence {
    /// A sequence of canonical terms (as [`sequence`] gives them).
    #[must_use]
    pub fn new(terms: Vec<String>) -> Sequence {
        Sequence::with(terms, None)
    }

    /// [`Sequence::new`], its first term searched by its rare byte or in a lowered copy as
    /// `rare` says (a test runs both), else as the byte's rank says.
    fn with(terms: Vec<String>, rare: Option<bool>) -> Sequence {
        let ascii = !terms.is_empty() && terms.iter().all(|t| !t.is_empty() && t.is_ascii());
        let ascii_first = terms
            .first()
            .filter(|_| ascii)
            .and_then(|t| CaseFinder::new(t.as_bytes(), rare));
        Sequence { terms, ascii_first }
    }

    /// The terms.
    #[must_use]
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Whether the canonical tokens of `text` hold the terms contiguously and in order;
    /// `is_nfkc`: the text is known to be NFKC (a hot shard's flag), so it is not normalized
    /// again; `buf` is scratch space kept across calls.
    #[must_use]
    pub fn is_in(&self, text: &str, is_nfkc: bool, buf: &mut Vec<u8>) -> bool {
        self.is_in_at_most(text, is_nfkc, buf, usize::MAX)
    }

    /// [`Sequence::is_in`] when the text holds the first term as a token at most `most`
    /// times (an entry's frequency of it): the search stops at that many, instead of
    /// reading the rest of the text (a long tool output whose terms are all near its start).
    #[must_use]
    pub(crate) fn is_in_at_most(
        &self,
        text: &str,
        is_nfkc: bool,
        buf: &mut Vec<u8>,
        most: usize,
    ) -> bool {
        if self.terms.is_empty() {
            return false;
        }
        match &self.ascii_first {
            Some(first) => {
                let normalized = crate::fields::normalized(text, is_nfkc);
                contains_sequence_ascii(&*normalized, &self.terms, first, buf, most)
            }
            None => contains_sequence_general(text, &self.terms),
        }
    }

    /// [`Sequence::is_in_at_most`] of the bytes of a text known to be NFKC, not checked as
    /// UTF-8: ASCII terms are searched in the bytes and only the characters around the
    /// places they occur are decoded (bytes that are not UTF-8 there are no term
    /// characters). `None` when the terms are not all ASCII (the text is then checked and
    /// read as [`Sequence::is_in_at_most`] reads it).
    #[cfg(not(target_arch = "wasm32"))]
    pub(crate) fn is_in_nfkc_bytes_at_most(
        &self,
        text: &[u8],
        buf: &mut Vec<u8>,
        most: usize,
    ) -> Option<bool> {
        let first = self.ascii_first.as_ref()?;
        Some(contains_sequence_ascii(text, &self.terms, first, buf, most))
    }
}

/// A text [`contains_sequence_ascii`] reads: its bytes, and the characters at and before a
/// place. A string decodes them as it is; bytes not checked as UTF-8 decode one character at a
/// time (bytes that are not one there read as no term character).
trait Hay {
    fn bytes(&self) -> &[u8];
    /// Whether the character at byte `q` is a term character, and its width (`None` past
    /// the end).
    fn term_at(&self, q: usize) -> Option<(bool, usize)>;
    /// Whether the character ending at byte `p` is a term character, that one not ASCII.
    fn non_ascii_term_before(&self, p: usize) -> bool;
}

impl Hay for str {
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }

    fn term_at(&self, q: usize) -> Option<(bool, usize)> {
        term_char_at(self, q)
    }

    fn non_ascii_term_before(&self, p: usize) -> bool {
        self.get(..p)
            .and_then(|head| head.chars().next_back())
            .is_some_and(is_term_char)
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Hay for [u8] {
    fn bytes(&self) -> &[u8] {
        self
    }

    fn term_at(&self, q: usize) -> Option<(bool, usize)> {
        let c0 = *self.get(q)?;
        if c0 < 0x80 {
            return Some((is_ascii_term_byte(c0), 1));
        }
        let w = match c0 {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => 0,
        };
        let c = q
            .checked_add(w)
            .and_then(|end| self.get(q..end))
            .and_then(|c| std::str::from_utf8(c).ok());
        Some(c.and_then(|c| term_char_at(c, 0)).unwrap_or((false, 1)))
    }

    fn non_ascii_term_before(&self, p: usize) -> bool {
        // The character starts at most four bytes back, at its first byte that is no
        // continuation byte.
        let Some(start) = (1..=4)
            .filter_map(|k| p.checked_sub(k))
            .find(|&j| self.get(j).is_some_and(|&x| !(0x80..0xC0).contains(&x)))
        else {
            return false;
        };
        self.get(start..p)
            .and_then(|c| std::str::from_utf8(c).ok())
            .is_some_and(|c| c.non_ascii_term_before(c.len()))
    }
}

/// [`Sequence::is_in`] for non-empty ASCII terms (any text). A token equal to an ASCII term
/// is a run of ASCII term characters of the normalized text, lowered (a run holding any other
/// character keeps one after lowering: no character of normalized text lowers to ASCII alone,
/// `lowering_keeps_non_ascii` checks every one). So the first term is searched as a
/// substring, ASCII case ignored; only around the places it occurs are characters
/// classified: the terms must follow one another there, each a whole run, separated by
/// characters that are not term characters.
fn contains_sequence_ascii<H: Hay + ?Sized>(
    hay: &H,
    seq: &[String],
    first: &CaseFinder,
    buf: &mut Vec<u8>,
    most: usize,
) -> bool {
    let bytes = hay.bytes();
    let term_at = |q: usize| hay.term_at(q).is_some_and(|(t, _)| t);
    // A place the first term starts is a char boundary (the term is ASCII).
    let term_before = |p: usize| match p.checked_sub(1).and_then(|i| bytes.get(i)) {
        None => false,
        Some(&b) if b < 0x80 => is_ascii_term_byte(b),
        Some(_) => hay.non_ascii_term_before(p),
    };
    let at = |mut q: usize| -> bool {
        for (j, tok) in seq.iter().enumerate() {
            if j > 0 {
                // Past the characters between the terms (the term before ended at one).
                while let Some((false, width)) = hay.term_at(q) {
                    q += width;
                }
            }
            let t = tok.as_bytes();
            if !bytes
                .get(q..q + t.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(t))
            {
                return false;
            }
            q += t.len();
            if term_at(q) {
                return false;
            }
        }
        true
    };
    first.lower_into(bytes, buf);
    let first_len = seq.first().map_or(0, String::len);
    // The first term's places that are whole tokens, counted against `most`.
    let mut left = most;
    for p in first.starts(bytes, buf) {
        if term_before(p) || term_at(p + first_len) {
            continue;
        }
        if at(p) {
            return true;
        }
        left = left.saturating_sub(1);
        if left == 0 {
            return false;
        }
    }
    false
}

/// [`Sequence::is_in`] through the tokenizer: any text. Shift-And over the tokens: bit `j`
/// of the state is set when the last `j + 1` tokens are the first `j + 1` terms.
fn contains_sequence_general(text: &str, seq: &[String]) -> bool {
    let k = seq.len();
    if k > 64 {
        return contains_sequence_window(text, seq);
    }
    let done = 1u64 << (k - 1);
    let mut state = 0u64;
    // The tokens are read up to the one that ends the sequence.
    any_token(text, |t| {
        let mut m = 0u64;
        for (j, term) in seq.iter().enumerate() {
            if term.as_str() == t {
                m |= 1 << j;
            }
        }
        state = ((state << 1) | 1) & m;
        state & done != 0
    })
}

/// [`contains_sequence_general`] with a window of the last tokens: any number of terms.
fn contains_sequence_window(text: &str, seq: &[String]) -> bool {
    let k = seq.len();
    let mut window: std::collections::VecDeque<String> =
        std::collections::VecDeque::with_capacity(k);
    any_token(text, |t| {
        // The oldest token's string is reused: no allocation per token once the window is full.
        let mut slot = if window.len() == k {
            window.pop_front().unwrap_or_default()
        } else {
            String::new()
        };
        slot.clear();
        slot.push_str(t);
        window.push_back(slot);
        window.len() == k && window.iter().zip(seq).all(|(a, b)| a == b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_queries() {
        assert!(IdQuery::parse("ZETA-9").is_some());
        assert!(IdQuery::parse("abc").is_none());
        assert!(IdQuery::parse("two words here").is_none());
        let q = IdQuery::parse("019a4c1e5b2f").unwrap();
        assert!(q.matches("019a4c1e-5b2f-7c3d-9e10-4a2b3c4d5e6f"));
        assert!(q.matches("019A4C1E5B2F7C3D"));
        assert!(!q.matches("019a4c1e"));
        let q = IdQuery::parse("u1000001").unwrap();
        assert!(q.matches("u1000001") && q.matches("U1000001"));
        assert!(!q.matches("u10000012"));
        let q = IdQuery::parse("call_7/0").unwrap();
        assert!(q.matches("call_7/0"));
        // 11 hex digits are not a prefix query.
        assert!(!IdQuery::parse("019a4c1e5b2")
            .unwrap()
            .matches("019a4c1e5b2f"));
    }

    #[test]
    fn sequences() {
        let s = sequence("ZETA-999").unwrap();
        assert_eq!(s, ["zeta", "999"]);
        assert!(contains_sequence("see zeta 999 now", &s));
        assert!(contains_sequence("ZETA-999", &s));
        assert!(!contains_sequence("999 zeta", &s));
        assert!(!contains_sequence("zeta and 999", &s));
        assert!(sequence("E0382").is_none());
        let s = sequence("foo.bar()").unwrap();
        assert!(contains_sequence("x = Foo.Bar(1)", &s));
        let s = sequence("a a b").unwrap();
        assert!(contains_sequence("a a a b", &s));
        assert!(!contains_sequence("a b a b", &s));
    }

    /// The in-place check of ASCII text answers as the tokenizer does, the first term found
    /// by its rare byte and in a lowered copy, and told how often the first term is a token:
    /// every text of up to five symbols over letters of both cases, a digit, `_` and
    /// separators, against term sequences of one to three terms (a term may be a run of
    /// several symbols).
    #[test]
    fn ascii_sequences_are_the_tokenizer_sequences() {
        let symbols = ["a", "A", "b", "1", "_", " ", "-", "ab", "\n"];
        let texts = crate::test_util::strings_over(&symbols, 5);
        let terms = ["a", "b", "ab", "a1", "_", "aa", "1"];
        let mut seqs: Vec<Vec<String>> = Vec::new();
        for x in terms {
            seqs.push(vec![x.into()]);
            for y in terms {
                seqs.push(vec![x.into(), y.into()]);
                seqs.push(vec![x.into(), y.into(), "a".into()]);
            }
        }
        let seqs: Vec<Sequence> = seqs
            .into_iter()
            .flat_map(|q| {
                [
                    Sequence::with(q.clone(), Some(true)),
                    Sequence::with(q, Some(false)),
                ]
            })
            .collect();
        let mut hits = 0;
        let mut bytes = 0;
        let mut buf = Vec::new();
        for t in &texts {
            let tokens = tokenize(t);
            for q in &seqs {
                let want = contains_sequence_window(t, q.terms());
                assert_eq!(q.is_in(t, false, &mut buf), want, "{t:?} {q:?}");
                // Told how often the first term is a token (an entry's frequency), the
                // search stops there and answers the same.
                let first = q.terms().first().map(String::as_str);
                let most = tokens.iter().filter(|x| Some(x.as_str()) == first).count();
                assert_eq!(
                    q.is_in_at_most(t, false, &mut buf, most),
                    want,
                    "{t:?} {q:?} at most {most}"
                );
                if sessiondex_core::tokenize::is_nfkc(t) {
                    assert_eq!(q.is_in(t, true, &mut buf), want, "{t:?} {q:?} (NFKC)");
                    // Its bytes, not checked first: the same, with the cap too.
                    if let Some(hit) = q.is_in_nfkc_bytes_at_most(t.as_bytes(), &mut buf, most) {
                        assert_eq!(hit, want, "{t:?} {q:?} (bytes, at most {most})");
                        bytes += 1;
                    }
                }
                assert_eq!(contains_sequence_general(t, q.terms()), want, "{t:?} {q:?}");
                hits += usize::from(want);
            }
        }
        assert!(hits > 10_000, "{hits}");
        assert!(bytes > 10_000, "{bytes}");
    }

    /// Bytes around a term's place that are not UTF-8 read as no term character (the text's
    /// check, not this search, refuses them), and a character of two to four bytes before or
    /// after the term is decoded.
    #[test]
    fn sequence_bytes_around_a_term() {
        let q = Sequence::new(vec!["zqa".into(), "zqb".into()]);
        let cases: [(&[u8], bool); 8] = [
            (b"zqa zqb", true),
            (b"\xffzqa zqb", true),
            (b"zqa\xff zqb", true),
            (b"zqa \xffzqb", true),
            ("\u{e9}zqa zqb".as_bytes(), false),
            ("zqa zqb\u{1d41a}".as_bytes(), false),
            ("\u{65e5}zqa \u{1f680} zqb".as_bytes(), false),
            ("\u{1f680}zqa \u{65e5}zqb".as_bytes(), false),
        ];
        for (text, want) in cases {
            assert_eq!(
                q.is_in_nfkc_bytes_at_most(text, &mut Vec::new(), usize::MAX),
                Some(want),
                "{text:?}"
            );
        }
    }

    /// What [`contains_sequence_mixed`] rests on: no term character that can be in NFKC text
    /// (its quick check is not `No`) and is not ASCII lowers to ASCII only, so a token with
    /// such a character never equals an ASCII term. Every character is checked.
    #[test]
    fn lowering_keeps_non_ascii() {
        use unicode_normalization::{is_nfkc_quick, IsNormalized};
        let mut checked = 0;
        for c in (0x80..=0x10_FFFF).filter_map(char::from_u32) {
            if !is_term_char(c) || is_nfkc_quick(std::iter::once(c)) == IsNormalized::No {
                continue;
            }
            checked += 1;
            assert!(
                c.to_lowercase().any(|l| !l.is_ascii()),
                "{c:?} {:#x}",
                c as u32
            );
        }
        assert!(checked > 100_000, "{checked}");
    }

    /// Text that is not all ASCII: both token paths (which stop at the token that ends the
    /// sequence) answer what a look at every window of the text's tokens answers.
    #[test]
    fn general_sequences_are_the_token_windows() {
        let symbols = [
            "a", "É", "b", "é", "\u{301}", " ", "ﬁ", "Ａ", "中", "-", "İ", "\u{212a}", "—",
        ];
        let texts = crate::test_util::strings_over(&symbols, 4);
        let terms = ["a", "b", "é", "fi", "中", "ab", "k", "i"];
        let mut seqs: Vec<Vec<String>> = Vec::new();
        for x in terms {
            seqs.push(vec![x.into()]);
            for y in terms {
                seqs.push(vec![x.into(), y.into()]);
            }
        }
        let mut hits = 0;
        let mut bytes = 0;
        for t in &texts {
            let tokens = tokenize(t);
            for q in &seqs {
                let want = tokens.windows(q.len()).any(|w| w == q.as_slice());
                assert_eq!(contains_sequence_general(t, q), want, "{t:?} {q:?}");
                assert_eq!(contains_sequence_window(t, q), want, "{t:?} {q:?}");
                for rare in [true, false] {
                    let seq = Sequence::with(q.clone(), Some(rare));
                    assert_eq!(seq.is_in(t, false, &mut Vec::new()), want, "{t:?} {q:?}");
                    // An NFKC text's bytes, not checked first: the same.
                    if sessiondex_core::tokenize::is_nfkc(t) {
                        let hit =
                            seq.is_in_nfkc_bytes_at_most(t.as_bytes(), &mut Vec::new(), usize::MAX);
                        if let Some(hit) = hit {
                            assert_eq!(hit, want, "{t:?} {q:?} (bytes)");
                            bytes += 1;
                        }
                    }
                }
                hits += usize::from(want);
            }
        }
        assert!(hits > 1_000, "{hits}");
        assert!(bytes > 10_000, "{bytes}");
    }
}
