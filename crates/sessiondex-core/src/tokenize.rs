//! The one canonical tokenizer for queries, BM25 and vocabularies.
//!
//! Text is NFKC-normalized (skipped when the quick check says it already is), split into runs
//! of Unicode letters, numbers, combining marks and `_`, and lowercased. No stemming, no
//! synonyms, no pattern syntax: `src/foo.ts` is the three terms `src`, `foo`, `ts`.
//!
//! A run of CJK ideographs is one term, as any other run of letters; phrase mode matches
//! inside such runs.

use std::borrow::Cow;

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::{is_nfkc_quick, IsNormalized, UnicodeNormalization};

/// NFKC form of `text`, borrowed when it already is NFKC.
#[must_use]
pub fn nfkc(text: &str) -> Cow<'_, str> {
    if text.is_ascii() || is_nfkc_quick(text.chars()) == IsNormalized::Yes {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfkc().collect())
    }
}

/// NFKC then lowercase: the form phrase matching compares.
#[must_use]
pub fn normalize(text: &str) -> String {
    let n = nfkc(text);
    if n.is_ascii() {
        n.to_ascii_lowercase()
    } else {
        n.to_lowercase()
    }
}

#[inline]
fn is_term_char(c: char) -> bool {
    c == '_' || c.is_alphanumeric() || (!c.is_ascii() && is_combining_mark(c))
}

/// Calls `f` with every canonical term of `text`, in order. Allocates only for terms that
/// need lowercasing or NFKC.
pub fn for_each_token(text: &str, f: impl FnMut(&str)) {
    if text.is_ascii() {
        ascii_tokens(text, f);
    } else {
        general_tokens(text, f);
    }
}

/// A byte that is a term character in ASCII text: `_`, a letter or a digit.
static ASCII_TERM: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = (b as u8).is_ascii_alphanumeric() || b == b'_' as usize;
        b += 1;
    }
    t
};

/// Whether `b` is a term byte of ASCII text (`_`, a letter or a digit): a run of them is one
/// token of ASCII text, lowered.
#[must_use]
#[inline]
pub fn is_ascii_term_byte(b: u8) -> bool {
    ASCII_TERM[usize::from(b)]
}

/// [`for_each_token`] of ASCII text, a byte at a time: ASCII is NFKC already, its term
/// characters are `_`, letters and digits, and lowercasing is per byte.
fn ascii_tokens(text: &str, mut f: impl FnMut(&str)) {
    let b = text.as_bytes();
    let mut lower = String::new();
    let mut i = 0;
    while i < b.len() {
        while i < b.len() && !ASCII_TERM[usize::from(b[i])] {
            i += 1;
        }
        let start = i;
        let mut upper = false;
        while i < b.len() && ASCII_TERM[usize::from(b[i])] {
            upper |= b[i].is_ascii_uppercase();
            i += 1;
        }
        if start == i {
            break;
        }
        // Every byte is ASCII, so any offset is a char boundary.
        let piece = text.get(start..i).unwrap_or_default();
        if upper {
            lower.clear();
            lower.push_str(piece);
            lower.make_ascii_lowercase();
            f(&lower);
        } else {
            f(piece);
        }
    }
}

/// [`for_each_token`] of any text, a char at a time.
fn general_tokens(text: &str, mut f: impl FnMut(&str)) {
    let normalized = nfkc(text);
    let mut lower = String::new();
    let mut start: Option<usize> = None;
    let s: &str = &normalized;
    let mut emit = |piece: &str, f: &mut dyn FnMut(&str)| {
        if piece.bytes().any(|b| b.is_ascii_uppercase()) || !piece.is_ascii() {
            lower.clear();
            if piece.is_ascii() {
                lower.push_str(piece);
                lower.make_ascii_lowercase();
            } else {
                lower.extend(piece.chars().flat_map(char::to_lowercase));
            }
            f(&lower);
        } else {
            f(piece);
        }
    };
    for (i, c) in s.char_indices() {
        if is_term_char(c) {
            if start.is_none() {
                start = Some(i);
            }
        } else if let Some(st) = start.take() {
            emit(&s[st..i], &mut f);
        }
    }
    if let Some(st) = start {
        emit(&s[st..], &mut f);
    }
}

/// The canonical terms of `text`, in order, duplicates kept.
#[must_use]
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t.to_owned()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// The byte-at-a-time path gives the terms the general one gives, on any ASCII text.
        #[test]
        fn ascii_terms_are_the_general_terms(text in "[ -~\t\n\r\x00-\x1f\x7f]{0,80}") {
            let mut fast = Vec::new();
            ascii_tokens(&text, |t| fast.push(t.to_owned()));
            let mut general = Vec::new();
            general_tokens(&text, |t| general.push(t.to_owned()));
            proptest::prop_assert_eq!(fast, general);
        }
    }

    #[test]
    fn paths_are_terms_not_patterns() {
        assert_eq!(tokenize("src/foo.ts"), ["src", "foo", "ts"]);
        assert_eq!(tokenize("a.*b+ [x]"), ["a", "b", "x"]);
        assert_eq!(
            tokenize("snake_case_name ZETA-999"),
            ["snake_case_name", "zeta", "999"]
        );
    }

    #[test]
    fn full_width_forms_fold_to_ascii() {
        assert_eq!(tokenize("ＡＢＣ１２３"), ["abc123"]);
        assert_eq!(tokenize("ｓｒｃ／ｆｏｏ"), ["src", "foo"]);
    }

    #[test]
    fn ligatures_decompose() {
        assert_eq!(tokenize("ﬁle ﬂow"), ["file", "flow"]);
    }

    #[test]
    fn combining_marks_stay_inside_terms() {
        // e + COMBINING ACUTE composes to é under NFKC.
        assert_eq!(tokenize("Cafe\u{301} au lait"), ["café", "au", "lait"]);
        // q + COMBINING ACUTE has no precomposed form: the mark must not split the term.
        assert_eq!(tokenize("q\u{301}x"), ["q\u{301}x"]);
        // Devanagari vowel signs are marks.
        assert_eq!(tokenize("हिन्दी भाषा"), ["हिन्दी", "भाषा"]);
    }

    #[test]
    fn cjk_runs_are_terms() {
        assert_eq!(
            tokenize("日本語のテキスト、です"),
            ["日本語のテキスト", "です"]
        );
        assert_eq!(tokenize("エラー:timeout"), ["エラー", "timeout"]);
    }

    #[test]
    fn case_folds_beyond_ascii() {
        assert_eq!(tokenize("ÉCOLE Straße ΣΟΦΙΑ"), ["école", "straße", "σοφια"]);
        assert_eq!(normalize("ＦＯＯ Bar"), "foo bar");
    }

    #[test]
    fn empty_and_punctuation() {
        assert!(tokenize("").is_empty());
        assert!(tokenize(" -- ... !!! ").is_empty());
    }

    #[test]
    fn nfkc_is_borrowed_when_already_normal() {
        assert!(matches!(nfkc("plain ascii"), Cow::Borrowed(_)));
        assert!(matches!(nfkc("déjà vu"), Cow::Borrowed(_)));
        assert!(matches!(nfkc("ﬁ"), Cow::Owned(_)));
    }
}
