//! A pattern of the [`Simple`](super::simple::Simple) form read from its text, without
//! `regex_syntax`'s parser: `zqpfx[a-z]+`, `err_[0-9]{2,}`, `v[0-9]{3}`.
//!
//! Parsing such a pattern, closing it under case folding and taking out of it what the
//! dense DFA leaves out (three rewrites of the parsed pattern) cost about 45k of the 118k
//! instructions of a recall call whose regex matches no term: more than finding that no term
//! matches. The narrow grammar read here gives the same pattern as that path directly.
//!
//! - A literal of ASCII letters, digits, `_` and `-`, one to [`MAX_LITERAL`] bytes.
//! - A class in brackets of ASCII letters, digits and `_`, and ranges within the letters of
//!   one case or within the digits; no negation, escape or other character.
//! - `+`, `{n}`, `{n,}` or `{n,m}` (decimal, at most two digits each), greedy, and nothing
//!   after.
//!
//! Any other text (including every invalid pattern) is `None`, and the parser reads it.
//! What is read is the pattern as the parser's path leaves it for the automata: the literal's
//! letters lowered (case folding makes each a class of both cases, and the capitals are
//! left out), the class's letters lowered, and the repetition as written.

// The longest literal read is the simple form's own bound.
use super::simple::MAX_LITERAL;

/// A literal and a run of one class, as [`read`] finds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Shape {
    /// The literal, its ASCII letters lowered.
    pub(super) literal: Vec<u8>,
    /// The class's bytes, bit `b` for byte `b`, its letters lowered.
    pub(super) class: u128,
    /// The repetition's bounds, as written (`+` is `1..`).
    pub(super) min: u32,
    pub(super) max: Option<u32>,
}

impl Shape {
    /// Whether the pattern holds an ASCII letter (the parser's path then lowers the text its
    /// automata search).
    pub(super) fn has_letters(&self) -> bool {
        self.literal.iter().any(u8::is_ascii_alphabetic) || self.class & LOWER != 0
    }

    /// Whether the literal or the class holds `b` (lowercase).
    pub(super) fn holds(&self, b: u8) -> bool {
        self.literal.contains(&b) || (b < 0x80 && self.class & (1 << b) != 0)
    }

    /// The class as ranges of consecutive bytes, ascending.
    pub(super) fn class_ranges(&self) -> Vec<(u8, u8)> {
        let mut out: Vec<(u8, u8)> = Vec::new();
        for b in 0..0x80u8 {
            if self.class & (1 << b) == 0 {
                continue;
            }
            match out.last_mut() {
                Some((_, end)) if *end + 1 == b => *end = b,
                _ => out.push((b, b)),
            }
        }
        out
    }
}

/// The bits of `a`-`z`.
const LOWER: u128 = ((1 << 26) - 1) << b'a';

/// `pattern` as a [`Shape`], when it is one in the grammar above.
pub(super) fn read(pattern: &str) -> Option<Shape> {
    let bytes = pattern.as_bytes();
    let open = bytes.iter().position(|&b| b == b'[')?;
    let (literal, rest) = bytes.split_at(open);
    if literal.is_empty()
        || literal.len() > MAX_LITERAL
        || !literal
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return None;
    }
    let close = rest.iter().position(|&b| b == b']')?;
    let (items, quant) = (rest.get(1..close)?, rest.get(close + 1..)?);
    let class = class_bits(items)?;
    let (min, max) = quantifier(quant)?;
    Some(Shape {
        literal: literal.to_ascii_lowercase(),
        class,
        min,
        max,
    })
}

/// The bits of a class's items (`a-z`, `0-9`, `x`, `_`), its letters lowered.
fn class_bits(items: &[u8]) -> Option<u128> {
    if items.is_empty() {
        return None;
    }
    let kind = |b: u8| match b {
        b'a'..=b'z' => Some(0),
        b'A'..=b'Z' => Some(1),
        b'0'..=b'9' => Some(2),
        b'_' => Some(3),
        _ => None,
    };
    let mut bits = 0u128;
    let mut i = 0;
    while let Some(&a) = items.get(i) {
        let ka = kind(a)?;
        let (lo, hi) = match (items.get(i + 1), items.get(i + 2)) {
            (Some(b'-'), Some(&b)) => {
                // A range within one kind, ascending (`_` is a kind of one).
                if kind(b)? != ka || b < a {
                    return None;
                }
                i += 3;
                (a, b)
            }
            // A `-` that ends the class is a literal hyphen: left to the parser.
            (Some(b'-'), None) => return None,
            _ => {
                i += 1;
                (a, a)
            }
        };
        for b in lo..=hi {
            bits |= 1 << b.to_ascii_lowercase();
        }
    }
    Some(bits)
}

/// `+`, `{n}`, `{n,}` or `{n,m}` as its bounds; `None` for anything else (a lazy `?` after
/// it, a reversed or empty bound, a number of more than two digits).
fn quantifier(q: &[u8]) -> Option<(u32, Option<u32>)> {
    let number = |d: &[u8]| -> Option<u32> {
        if d.is_empty() || d.len() > 2 || !d.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(d.iter().fold(0, |n, &b| n * 10 + u32::from(b - b'0')))
    };
    match q {
        b"+" => Some((1, None)),
        [b'{', inner @ .., b'}'] => {
            let (min, max) = match inner.iter().position(|&b| b == b',') {
                None => {
                    let n = number(inner)?;
                    (n, Some(n))
                }
                Some(comma) => {
                    let (a, b) = (&inner[..comma], &inner[comma + 1..]);
                    let min = number(a)?;
                    let max = if b.is_empty() { None } else { Some(number(b)?) };
                    (min, max)
                }
            };
            max.is_none_or(|m| m >= min).then_some((min, max))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_grammar_and_nothing_else() {
        let s = read("ZqPfx[A-C0-9_]{2,5}").unwrap();
        assert_eq!(s.literal, b"zqpfx");
        assert_eq!(s.class_ranges(), [(b'0', b'9'), (b'_', b'_'), (b'a', b'c')]);
        assert_eq!((s.min, s.max), (2, Some(5)));
        assert!(s.has_letters() && s.holds(b'z') && s.holds(b'_') && !s.holds(b'k'));
        assert_eq!(read("a-1[0-9]+").map(|s| (s.min, s.max)), Some((1, None)));
        assert_eq!(
            read("x[0-9]{3}").map(|s| (s.min, s.max)),
            Some((3, Some(3)))
        );
        assert_eq!(read("x[0-9]{3,}").map(|s| (s.min, s.max)), Some((3, None)));
        let digits = read("12[0-9]+").unwrap();
        assert!(!digits.has_letters());
        for p in [
            "[a-z]+",
            "ab",
            "a[]+",
            "a[^a]+",
            "a[a-]+",
            "a[-a]+",
            "a[a-Z]+",
            "a[z-a]+",
            "a[0-z]+",
            "a[\\d]+",
            "a[a-z]",
            "a[a-z]*",
            "a[a-z]?",
            "a[a-z]+?",
            "a[a-z]{2,1}",
            "a[a-z]{,3}",
            "a[a-z]{100}",
            "a[a-z]{1,2}?",
            "a[a-z]+b",
            "a.[a-z]+",
            "é[a-z]+",
            "a[é]+",
            "(?-i)a[a-z]+",
            "a b[a-z]+",
            "0123456789abcdefghijklmnopqrstuvw[a-z]+",
        ] {
            assert_eq!(read(p), None, "{p}");
        }
    }
}
