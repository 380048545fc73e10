//! A pattern that is an ASCII literal followed by a run of one ASCII class (`zqpfx[0-9]+`,
//! `err_[a-z]{2,}`, `v[0-9]{3}`), matched without an automaton.
//!
//! Such a pattern's leftmost-first match is the first place the literal occurs followed by at
//! least `min` characters of the class, and it takes as many of them as there are, up to
//! `max`: one search for the literal and a look at the bytes after it. Determinizing
//! its dense DFA cost about a fifth of a prefix regex's recall call over 200 MB (about 150k of
//! 712k instructions, for 12 states), and a recall whose vocabulary holds no match needs no
//! automaton at all. [`Simple::of`] takes only patterns whose DFA would fit far within the
//! limits, so no pattern that the DFA's limits refuse is taken here instead.

use std::ops::Range;

use regex_syntax::hir::{Class, Hir, HirKind};

use super::RegexLimits;

/// Longest literal taken (bytes): the DFA such a pattern replaces has about a state per byte.
pub(super) const MAX_LITERAL: usize = 32;
/// Largest `min` or bounded `max` of the run taken: the DFA has about a state per repetition.
const MAX_COUNT: u32 = 16;
/// Smallest NFA, DFA and determinization limits under which a pattern is taken: its DFA has
/// at most about 56 states of at most 512 transitions of 4 bytes (115 KiB), so it fits.
const MIN_LIMIT: usize = 256 << 10;

/// An ASCII literal, then `min..=max` characters of an ASCII class, greedily.
#[derive(Debug, Clone)]
pub(super) struct Simple {
    literal: memchr::memmem::Finder<'static>,
    /// The class's bytes, bit `b` for byte `b` (all below 0x80).
    class: u128,
    min: usize,
    max: usize,
}

impl Simple {
    /// The simple form of `hir` (the pattern as the dense DFA would be built from it), when
    /// it has one and `limits` would let its DFA be built. The haystacks are searched with
    /// their ASCII letters lowered, as the dense DFA searches them when `lowers`; without
    /// `lowers` the literal and class must hold no ASCII letter, so lowering changes nothing.
    pub(super) fn of(hir: &Hir, lowers: bool, limits: &RegexLimits) -> Option<Simple> {
        if limits.max_nfa_bytes < MIN_LIMIT
            || limits.max_dfa_bytes < MIN_LIMIT
            || limits.max_determinize_bytes < MIN_LIMIT
        {
            return None;
        }
        let HirKind::Concat(parts) = hir.kind() else {
            return None;
        };
        let [lit, run] = parts.as_slice() else {
            return None;
        };
        let (HirKind::Literal(lit), HirKind::Repetition(rep)) = (lit.kind(), run.kind()) else {
            return None;
        };
        let lit = &lit.0;
        let max = rep.max.unwrap_or(u32::MAX);
        if lit.is_empty()
            || lit.len() > MAX_LITERAL
            || !rep.greedy
            || rep.min == 0
            || rep.min > MAX_COUNT
            || (rep.max.is_some() && max > MAX_COUNT)
            || max < rep.min
        {
            return None;
        }
        let HirKind::Class(class) = rep.sub.kind() else {
            return None;
        };
        let ranges: Vec<(u32, u32)> = match class {
            Class::Unicode(c) => c
                .ranges()
                .iter()
                .map(|r| (u32::from(r.start()), u32::from(r.end())))
                .collect(),
            Class::Bytes(c) => c
                .ranges()
                .iter()
                .map(|r| (u32::from(r.start()), u32::from(r.end())))
                .collect(),
        };
        let mut bits = 0u128;
        for (a, b) in ranges {
            if b >= 0x80 {
                return None;
            }
            for x in a..=b {
                bits |= 1 << x;
            }
        }
        let letters = (u32::from(b'A')..=u32::from(b'Z')).any(|x| bits & (1 << x) != 0);
        let lower = (u32::from(b'a')..=u32::from(b'z')).any(|x| bits & (1 << x) != 0);
        if !lit.is_ascii()
            || letters
            || lit.iter().any(u8::is_ascii_uppercase)
            || (!lowers && (lower || lit.iter().any(u8::is_ascii_alphabetic)))
        {
            return None;
        }
        Some(Simple {
            literal: memchr::memmem::Finder::new(lit).into_owned(),
            class: bits,
            min: rep.min as usize,
            max: if rep.max.is_some() {
                max as usize
            } else {
                usize::MAX
            },
        })
    }

    /// The literal, the class's bits and the run's bounds (for comparing two forms).
    #[cfg(test)]
    pub(super) fn parts(&self) -> (&[u8], u128, usize, usize) {
        (self.literal.needle(), self.class, self.min, self.max)
    }

    /// How many bytes of the class follow `at` in `hay`, counting at most `cap`.
    fn run_at(&self, hay: &[u8], at: usize, cap: usize) -> usize {
        hay.get(at..).map_or(0, |rest| {
            rest.iter()
                .take(cap)
                .take_while(|&&b| self.holds(b))
                .count()
        })
    }

    /// The leftmost-first match in lowered `hay` starting at or after `from`, its run counted
    /// up to `cap` characters (`max` for the match itself, `min` to learn only that one is
    /// there).
    fn find(&self, hay: &[u8], from: usize, cap: usize) -> Option<Range<usize>> {
        let n = self.literal.needle().len();
        let mut at = from;
        while let Some(i) = hay
            .get(at..)
            .and_then(|rest| super::find_literal(&self.literal, rest))
        {
            let start = at + i;
            let run = self.run_at(hay, start + n, cap);
            if run >= self.min {
                return Some(start..start + n + run);
            }
            // The literal's occurrences may overlap: look again one byte on.
            at = start + 1;
        }
        None
    }

    /// Whether the pattern matches anywhere in `hay` (its ASCII letters need not be lowered).
    pub(super) fn is_match(&self, hay: &[u8]) -> bool {
        if hay.len() < super::SHORT_HAYSTACK {
            return self.is_match_short(hay);
        }
        if hay.iter().any(u8::is_ascii_uppercase) {
            self.find(&hay.to_ascii_lowercase(), 0, self.min).is_some()
        } else {
            self.find(hay, 0, self.min).is_some()
        }
    }

    /// [`Simple::is_match`] for a haystack as short as a term: each place that starts with
    /// the literal's first byte (either case) and leaves room for the literal and `min`
    /// characters of the class is compared, lowering on the way. A match is such a place, and
    /// the loop costs less than a search for the literal in a copy lowered first (a negative
    /// regex's recall call looks at about 165 terms).
    fn is_match_short(&self, hay: &[u8]) -> bool {
        let lit = self.literal.needle();
        let need = lit.len() + self.min;
        let (Some(last), Some((&first, rest))) = (hay.len().checked_sub(need), lit.split_first())
        else {
            return false;
        };
        // The literal's first byte, either case, then the rest of the place.
        let upper = first.to_ascii_uppercase();
        hay.get(..=last).is_some_and(|starts| {
            starts.iter().enumerate().any(|(start, &b)| {
                (b == first || b == upper)
                    && hay.get(start + 1..start + need).is_some_and(|w| {
                        let (head, run) = w.split_at(rest.len());
                        head.iter()
                            .zip(rest)
                            .all(|(b, c)| b.to_ascii_lowercase() == *c)
                            && run.iter().all(|b| self.holds(b.to_ascii_lowercase()))
                    })
            })
        })
    }

    /// Whether byte `b` is in the class.
    fn holds(&self, b: u8) -> bool {
        b < 0x80 && self.class & (1 << b) != 0
    }

    /// Successive leftmost-first, non-overlapping matches in lowered `hay`.
    fn matches<'h>(&'h self, hay: &'h [u8]) -> impl Iterator<Item = Range<usize>> + 'h {
        let mut at = 0;
        std::iter::from_fn(move || {
            let m = self.find(hay, at, self.max)?;
            at = m.end;
            Some(m)
        })
    }

    /// [`Simple::matches`] in lowered `hay`, at most `max`.
    pub(super) fn spans(&self, hay: &[u8], max: usize) -> Vec<Range<usize>> {
        self.matches(hay).take(max).collect()
    }

    /// How many matches [`Simple::spans`] finds, without keeping them.
    pub(super) fn count(&self, hay: &[u8], max: usize) -> usize {
        self.matches(hay).take(max).count()
    }
}
