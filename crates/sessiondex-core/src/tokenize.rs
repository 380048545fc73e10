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
///
/// There is a normalization boundary before every ASCII character (a starter whose quick
/// check is `Yes`: nothing before it reorders past it or composes with it), and ASCII text
/// is its own NFKC form. So only the islands around non-ASCII characters are checked and
/// normalized, each from the ASCII character before it to the next ASCII character: a long
/// mostly-ASCII text costs a scan of its bytes, not a decomposition of every character.
#[must_use]
pub fn nfkc(text: &str) -> Cow<'_, str> {
    if is_nfkc(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut last = 0;
    for r in non_ascii_islands(text) {
        out.push_str(text.get(last..r.start).unwrap_or_default());
        out.extend(text.get(r.clone()).unwrap_or_default().nfkc());
        last = r.end;
    }
    out.push_str(text.get(last..).unwrap_or_default());
    Cow::Owned(out)
}

/// Whether `text` is its own NFKC form as far as the quick check tells ([`nfkc`] borrows it
/// then): ASCII text is; otherwise each island of non-ASCII characters is checked (an
/// island of starters that are NFKC each by a table lookup per character, any other by the
/// quick check). `false` may be said of text that normalizes to itself (the quick check's
/// `Maybe`), never `true` of text that does not.
#[must_use]
pub fn is_nfkc(text: &str) -> bool {
    text.is_ascii()
        || non_ascii_islands(text).all(|r| {
            text.get(r).is_some_and(|t| {
                t.chars().all(is_stable) || is_nfkc_quick(t.chars()) == IsNormalized::Yes
            })
        })
}

/// The first byte at or after `from` that is not ASCII: blocks of 32 bytes are checked a
/// word at a time (`is_ascii`), and only a block that holds one is searched byte by byte.
#[must_use]
#[inline]
pub fn next_non_ascii(b: &[u8], from: usize) -> Option<usize> {
    let rest = b.get(from..)?;
    let (blocks, tail) = rest.as_chunks::<32>();
    let mut at = from;
    for block in blocks {
        if !block.is_ascii() {
            return block.iter().position(|&c| c >= 0x80).map(|p| at + p);
        }
        at += 32;
    }
    tail.iter().position(|&c| c >= 0x80).map(|p| at + p)
}

/// The byte ranges of `text` around its non-ASCII characters: from the ASCII character just
/// before a run of non-ASCII characters (when there is one) to the next ASCII character or
/// the end. Every bound is a char boundary (next to an ASCII byte, or an end).
fn non_ascii_islands(text: &str) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    let b = text.as_bytes();
    let mut from = 0;
    std::iter::from_fn(move || {
        let p = next_non_ascii(b, from)?;
        let end = p + b
            .get(p..)
            .and_then(|rest| rest.iter().position(|&c| c < 0x80))
            .unwrap_or(b.len() - p);
        let start = if p > from { p - 1 } else { p };
        from = end;
        Some(start..end)
    })
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

/// Whether `c` is a term character: `_`, a letter or number, or a combining mark (outside
/// ASCII). A token is a run of them in NFKC text, lowered.
#[must_use]
#[inline]
pub fn is_term_char(c: char) -> bool {
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

/// Whether the character at byte `i` of `s` is a term character, and its width in bytes: an
/// ASCII byte by the table, any other character decoded. `None` past the end or inside a
/// character.
#[must_use]
#[inline]
pub fn term_char_at(s: &str, i: usize) -> Option<(bool, usize)> {
    let b = *s.as_bytes().get(i)?;
    if b < 0x80 {
        return Some((is_ascii_term_byte(b), 1));
    }
    let c = s.get(i..)?.chars().next()?;
    Some((char_class(c) & TERM != 0, c.len_utf8()))
}

/// [`char_class`] bit: a term character ([`is_term_char`]).
pub const TERM: u8 = 2;
/// [`char_class`] bit: a non-ASCII term character that keeps a token non-ASCII ([`is_sealed`]).
pub const SEALED: u8 = 4;
/// A kept bit besides [`char_class`]'s: a starter (canonical combining class 0) whose NFKC
/// quick check is `Yes` ([`is_stable`]).
const STABLE: u8 = 8;

/// What [`char_class`] found for each character of the BMP: 0 not yet asked, else 1 and
/// its bits.
static BMP_CLASS: [std::sync::atomic::AtomicU8; 0x1_0000] =
    [const { std::sync::atomic::AtomicU8::new(0) }; 0x1_0000];

/// [`TERM`] when `c` is a term character, [`SEALED`] when it is sealed ([`is_sealed`]); kept
/// for the BMP (a table lookup instead of Unicode's property searches each time).
#[must_use]
#[inline]
pub fn char_class(c: char) -> u8 {
    kept_class(c) & (TERM | SEALED)
}

/// Whether `c` is a starter (canonical combining class 0) whose NFKC quick check is `Yes`:
/// text of such characters only is NFKC (each is, and none reorders or composes with
/// another). Kept for the BMP as [`char_class`].
#[must_use]
#[inline]
pub fn is_stable(c: char) -> bool {
    c.is_ascii() || kept_class(c) & STABLE != 0
}

/// Every bit of `c` ([`TERM`], [`SEALED`], [`STABLE`]), from the BMP's table when asked
/// before.
#[inline]
fn kept_class(c: char) -> u8 {
    use std::sync::atomic::Ordering::Relaxed;
    let slot = BMP_CLASS.get(c as usize);
    if let Some(k) = slot.map(|s| s.load(Relaxed)).filter(|&k| k != 0) {
        return k & (TERM | SEALED | STABLE);
    }
    let k = class_of(c);
    if let Some(s) = slot {
        s.store(k | 1, Relaxed);
    }
    k
}

#[cold]
fn class_of(c: char) -> u8 {
    let term = if is_term_char(c) { TERM } else { 0 };
    let sealed = if is_sealed(c) { SEALED } else { 0 };
    let stable = if unicode_normalization::char::canonical_combining_class(c) == 0
        && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
    {
        STABLE
    } else {
        0
    };
    term | sealed | stable
}

/// Whether `c` is *sealed*: a non-ASCII term character, a starter (canonical combining
/// class 0), NFKC already (quick check `Yes`), whose lowercase holds a non-ASCII character.
/// A run of term characters whose non-ASCII characters are all sealed, and which holds one,
/// is its own NFKC form (each character is, and no mark reorders), so it is one token, the
/// run lowered, and that token is not ASCII: it equals no ASCII term. (U+212A, the Kelvin
/// sign, lowers to ASCII `k` but is no NFKC character; fullwidth letters and ligatures are
/// not NFKC either.)
#[must_use]
pub fn is_sealed(c: char) -> bool {
    !c.is_ascii()
        && is_term_char(c)
        && unicode_normalization::char::canonical_combining_class(c) == 0
        && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes
        && c.to_lowercase().any(|l| !l.is_ascii())
}

/// Bytes `lo..=hi` of an ASCII word (every byte below 0x80), as their high bits: a byte plus
/// `0x80 - lo` carries into its high bit exactly when it is at least `lo`, and never into
/// the next byte.
#[inline]
fn in_range(x: u64, lo: u8, hi: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let ge_lo = x + ONES * u64::from(0x80 - lo);
    let ge_above = x + ONES * u64::from(0x80 - hi - 1);
    ge_lo & !ge_above & (ONES << 7)
}

/// The high bit of each byte of `x`, gathered into bits 0..8 (byte `j` to bit `j`).
#[inline]
fn gather(high_bits: u64) -> u64 {
    // Bit 7 of byte j moves to bit 56 + j; the products' other bits fall below bit 56.
    ((high_bits >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// For up to 64 bytes of ASCII text: a mask of its term bytes (`_`, letters, digits) and a
/// mask of its uppercase letters, byte `j` as bit `j`.
#[inline]
fn term_masks(block: &[u8]) -> (u64, u64) {
    let (mut term, mut upper) = (0u64, 0u64);
    let mut words = block.chunks_exact(8);
    let mut at = 0;
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let x = u64::from_le_bytes(b);
        let up = in_range(x, b'A', b'Z');
        let t = up | in_range(x, b'a', b'z') | in_range(x, b'0', b'9') | in_range(x, b'_', b'_');
        term |= gather(t) << at;
        upper |= gather(up) << at;
        at += 8;
    }
    for &b in words.remainder() {
        term |= u64::from(ASCII_TERM[usize::from(b)]) << at;
        upper |= u64::from(b.is_ascii_uppercase()) << at;
        at += 1;
    }
    (term, upper)
}

/// [`for_each_token`] of ASCII text, 64 bytes at a time: ASCII is NFKC already, its term
/// characters are `_`, letters and digits, and lowercasing is per byte. Each block's term
/// bytes are a bit mask (8 bytes classified per step, no branch per byte), and a token is a
/// run of set bits found with `trailing_zeros`; a run may go on into the next block.
fn ascii_tokens(text: &str, mut f: impl FnMut(&str)) {
    let b = text.as_bytes();
    let mut lower = String::new();
    let mut emit = |start: usize, end: usize, upper: bool| {
        // Every byte is ASCII, so any offset is a char boundary.
        let piece = text.get(start..end).unwrap_or_default();
        if upper {
            lower.clear();
            lower.push_str(piece);
            lower.make_ascii_lowercase();
            f(&lower);
        } else {
            f(piece);
        }
    };
    // The run not yet ended: its start and whether it holds an uppercase letter.
    let mut open: Option<(usize, bool)> = None;
    for (k, block) in b.chunks(64).enumerate() {
        let base = k * 64;
        let (term, upper) = term_masks(block);
        // Bits from `at` up are not yet passed.
        let mut at = 0u32;
        while at < 64 {
            let from = !0u64 << at;
            let (start, up) = match open {
                Some(run) => run,
                None => {
                    let next = term & from;
                    if next == 0 {
                        break;
                    }
                    at = next.trailing_zeros();
                    (base + at as usize, false)
                }
            };
            let after = !term & (!0u64 << at);
            // Bits past a short last block are not term bytes: the run ends there.
            let end = after.trailing_zeros();
            let within = if end == 64 { !0u64 } else { !(!0u64 << end) };
            let up = up || upper & within & (!0u64 << at) != 0;
            if end == 64 {
                open = Some((start, up));
                break;
            }
            open = None;
            emit(start, base + end as usize, up);
            at = end;
        }
    }
    if let Some((start, up)) = open {
        emit(start, b.len(), up);
    }
}

/// Calls `f` with `piece` lowercased in `lower`.
fn emit_lowered(lower: &mut String, piece: &str, f: &mut dyn FnMut(&str)) {
    lower.clear();
    if piece.is_ascii() {
        lower.push_str(piece);
        lower.make_ascii_lowercase();
    } else {
        lower.extend(piece.chars().flat_map(char::to_lowercase));
    }
    f(lower);
}

/// [`for_each_token`] of any text: ASCII bytes classified by the table, other characters
/// decoded one at a time.
fn general_tokens(text: &str, mut f: impl FnMut(&str)) {
    general_tokens_until(text, |t| {
        f(t);
        false
    });
}

/// [`general_tokens`], stopping at the first term for which `f` answers true; whether it
/// did.
fn general_tokens_until(text: &str, mut f: impl FnMut(&str) -> bool) -> bool {
    let normalized = nfkc(text);
    let s: &str = &normalized;
    let b = s.as_bytes();
    let mut lower = String::new();
    // The term being read: where it starts, and whether it is lowercase ASCII so far.
    let mut start: Option<usize> = None;
    let mut plain = true;
    let mut emit = |piece: &str, plain: bool, f: &mut dyn FnMut(&str) -> bool| {
        if plain {
            f(piece)
        } else {
            let mut stop = false;
            emit_lowered(&mut lower, piece, &mut |t| stop = f(t));
            stop
        }
    };
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        let Some((term, width)) = term_char_at(s, i) else {
            break;
        };
        if term {
            if start.is_none() {
                start = Some(i);
                plain = true;
            }
            plain &= c < 0x80 && !c.is_ascii_uppercase();
        } else if let Some(st) = start.take() {
            if emit(s.get(st..i).unwrap_or_default(), plain, &mut f) {
                return true;
            }
        }
        i += width;
    }
    if let Some(st) = start {
        return emit(s.get(st..).unwrap_or_default(), plain, &mut f);
    }
    false
}

/// Whether `pred` holds for one of the canonical terms of `text` (those of
/// [`for_each_token`], in order), asked until it does: a term found early ends the pass.
pub fn any_token(text: &str, mut pred: impl FnMut(&str) -> bool) -> bool {
    if text.is_ascii() {
        let mut hit = false;
        ascii_tokens(text, |t| hit = hit || pred(t));
        return hit;
    }
    general_tokens_until(text, pred)
}

/// [`general_tokens`] a char at a time everywhere (what it was before it read ASCII
/// bytes as bytes), for the tests.
#[cfg(test)]
fn general_tokens_reference(text: &str, mut f: impl FnMut(&str)) {
    let normalized = nfkc(text);
    let mut lower = String::new();
    let mut start: Option<usize> = None;
    let s: &str = &normalized;
    let mut emit = |piece: &str, f: &mut dyn FnMut(&str)| {
        if piece.bytes().any(|b| b.is_ascii_uppercase()) || !piece.is_ascii() {
            emit_lowered(&mut lower, piece, f);
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

    /// The block search finds the first non-ASCII byte from every start, as a byte search
    /// does: texts of up to 100 bytes with one to three non-ASCII bytes anywhere, or none.
    #[test]
    fn next_non_ascii_is_the_byte_search() {
        let mut checked = 0;
        for len in 0..100usize {
            for marks in [
                vec![],
                vec![len / 2],
                vec![0, len.saturating_sub(1)],
                vec![31, 32, 64],
            ] {
                let mut b = vec![b'a'; len];
                for &m in &marks {
                    if let Some(x) = b.get_mut(m) {
                        *x = 0xc3;
                    }
                }
                for from in 0..=len + 1 {
                    let want = b
                        .get(from..)
                        .and_then(|r| r.iter().position(|&c| c >= 0x80))
                        .map(|p| from + p);
                    assert_eq!(next_non_ascii(&b, from), want, "{len} {marks:?} {from}");
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 4 * (2..=101).sum::<usize>());
    }

    /// Every character's kept class is its properties' answer; a run of ASCII term bytes
    /// and sealed characters holding one of them is one token that is not ASCII, for every
    /// sealed character of Unicode (after and before ASCII letters, a digit, `_`, another
    /// sealed character).
    #[test]
    fn sealed_characters_keep_a_run_one_token_not_ascii() {
        let mut sealed = Vec::new();
        for c in (0x80..=0x10_FFFFu32).filter_map(char::from_u32) {
            let want =
                if is_term_char(c) { TERM } else { 0 } | if is_sealed(c) { SEALED } else { 0 };
            assert_eq!(char_class(c), want, "{c:?}");
            assert_eq!(char_class(c), want, "{c:?} kept");
            let stable = unicode_normalization::char::canonical_combining_class(c) == 0
                && is_nfkc_quick(std::iter::once(c)) == IsNormalized::Yes;
            assert_eq!(is_stable(c), stable, "{c:?}");
            if want & SEALED != 0 {
                sealed.push(c);
            }
        }
        assert!(sealed.len() > 100_000, "{}", sealed.len());
        assert!(!is_sealed('\u{212a}') && !is_sealed('ｆ') && !is_sealed('\u{301}'));
        assert!(is_sealed('é') && is_sealed('İ') && is_sealed('中') && is_sealed('ß'));
        let mut runs = 0;
        for (k, &c) in sealed.iter().enumerate() {
            let next = sealed[(k * 7919 + 1) % sealed.len()];
            for run in [
                format!("{c}"),
                format!("Ab{c}"),
                format!("{c}z_9"),
                format!("x{c}{next}Y"),
            ] {
                let mut tokens = Vec::new();
                for_each_token(&run, |t| tokens.push(t.to_owned()));
                assert!(
                    tokens.len() == 1 && !tokens[0].is_ascii(),
                    "{run:?}: {tokens:?}"
                );
                runs += 1;
            }
        }
        assert!(runs > 400_000);
    }

    /// The terms of ASCII `text` by the block path and by the general path.
    fn both_paths(text: &str) -> (Vec<String>, Vec<String>) {
        let mut fast = Vec::new();
        ascii_tokens(text, |t| fast.push(t.to_owned()));
        let mut general = Vec::new();
        general_tokens(text, |t| general.push(t.to_owned()));
        (fast, general)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]
        /// The block path gives the terms the general one gives, on any ASCII text.
        #[test]
        fn ascii_terms_are_the_general_terms(text in "[ -~\t\n\r\x00-\x1f\x7f]{0,80}") {
            let (fast, general) = both_paths(&text);
            proptest::prop_assert_eq!(fast, general);
        }

        /// Also across blocks: runs of term bytes up to 200 long, and separators, in texts up
        /// to about 600 bytes, so runs start, end and go on at every offset of a 64-byte block.
        #[test]
        fn ascii_runs_across_blocks_are_the_general_terms(
            parts in proptest::collection::vec(("[a-zA-Z0-9_]{0,200}", "[ -/:-@\\[-^`{-~\x00-\x1f\x7f]{1,3}"), 0..8),
            tail in "[a-zA-Z0-9_]{0,70}",
        ) {
            let mut text = String::new();
            for (run, sep) in &parts {
                text.push_str(run);
                text.push_str(sep);
            }
            text.push_str(&tail);
            let (fast, general) = both_paths(&text);
            proptest::prop_assert_eq!(fast, general);
        }
    }

    /// Pieces of text for the proptests below: ASCII, combining marks (after ASCII letters
    /// too, and out of canonical order), compatibility characters, Hangul jamo that compose,
    /// characters already NFKC and ones whose quick check is `Maybe`.
    const PIECES: &[&str] = &[
        "a", "e", "Z", "_", " ", "\n", ".", "1", "\u{301}", "\u{327}", "\u{323}", "\u{308}",
        "\u{334}", "é", "ﬁ", "ｆ", "Ⅻ", "²", "K", "Å", "\u{1100}", "\u{1161}", "\u{11a8}", "가",
        "\u{3099}", "か", "ſ", "µ", "\u{a0}", "\u{3000}", "中", "\u{fb01}", "\u{1e9b}",
    ];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Normalizing only the islands around non-ASCII characters gives the NFKC form of
        /// the whole text, borrowed exactly when the text is its own form.
        #[test]
        fn island_nfkc_is_whole_text_nfkc(
            parts in proptest::collection::vec(proptest::sample::select(PIECES), 0..24),
        ) {
            let text: String = parts.concat();
            let got = nfkc(&text);
            let want: String = text.nfkc().collect();
            proptest::prop_assert_eq!(got.as_ref(), want.as_str());
            if matches!(got, Cow::Borrowed(_)) {
                proptest::prop_assert_eq!(&text, &want);
            }
        }

        /// `any_token` answers whether a term of the text passes, asking each term in order
        /// and none after the first that passes, on ASCII and mixed text.
        #[test]
        fn any_token_asks_the_terms_up_to_the_first_that_passes(
            parts in proptest::collection::vec(proptest::sample::select(PIECES), 0..24),
            pick in 0usize..6,
        ) {
            let text: String = parts.concat();
            let terms = tokenize(&text);
            // A term of the text (when it has one), or one it cannot hold.
            let want_term = terms.get(pick).cloned().unwrap_or_else(|| "#".to_owned());
            let mut asked = Vec::new();
            let hit = any_token(&text, |t| {
                asked.push(t.to_owned());
                t == want_term
            });
            let first = terms.iter().position(|t| *t == want_term);
            proptest::prop_assert_eq!(hit, first.is_some());
            let upto = first.map_or(terms.len(), |k| k + 1);
            proptest::prop_assert_eq!(&asked[..], &terms[..upto]);
        }

        /// The general path reading ASCII bytes as bytes gives the terms it gave a char at a
        /// time, on text mixing ASCII with every kind of piece above.
        #[test]
        fn general_terms_are_the_char_at_a_time_terms(
            parts in proptest::collection::vec(proptest::sample::select(PIECES), 0..24),
        ) {
            let text: String = parts.concat();
            let mut got = Vec::new();
            general_tokens(&text, |t| got.push(t.to_owned()));
            let mut want = Vec::new();
            general_tokens_reference(&text, |t| want.push(t.to_owned()));
            proptest::prop_assert_eq!(got, want);
        }
    }

    /// Every byte is classified as the table classifies it, at every offset of a block.
    #[test]
    fn masks_classify_every_byte() {
        let bytes: Vec<u8> = (0u8..128).collect();
        for len in [0, 1, 7, 8, 9, 63, 64] {
            for shift in [0usize, 3, 64] {
                let block: Vec<u8> = bytes
                    .iter()
                    .cycle()
                    .skip(shift)
                    .take(len)
                    .copied()
                    .collect();
                let (term, upper) = term_masks(&block);
                for (j, &b) in block.iter().enumerate() {
                    assert_eq!(term >> j & 1 == 1, is_ascii_term_byte(b), "{b:#x} at {j}");
                    assert_eq!(upper >> j & 1 == 1, b.is_ascii_uppercase(), "{b:#x} at {j}");
                }
                let past = if len == 64 { 0 } else { !0u64 << len };
                assert_eq!((term | upper) & past, 0);
            }
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
