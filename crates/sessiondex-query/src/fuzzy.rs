//! Typo-tolerant terms: Levenshtein automata intersected with an FST vocabulary.
//!
//! A query term expands to the vocabulary terms within an edit distance of it, where an
//! insertion, deletion, substitution or transposition of adjacent characters each costs 1
//! (so `teh` is 1 from `the`). Distances count Unicode scalars, not bytes.
//!
//! The default distance depends on the term's length in characters
//! ([`default_distance`]): 0 up to 2 characters (exact only), 1 for 3-5, 2 for 6 and more.
//! Expansions rank exact first, then distance 1, then 2, each in term order, and stop at a
//! cap ([`FuzzyOptions::max_expansions`]); [`Expansion::truncated`] says when the cap cut.
//!
//! # Why `levenshtein_automata`
//!
//! Measured on a 34,000-term FST (release build): `levenshtein_automata` builds a distance-2
//! DFA for a 6-18 character term in 60-150 µs (from a parametric DFA built once per
//! distance, 0.6 ms for both), `fst::automaton::Levenshtein` in 1.8-19 ms (it determinizes
//! per query and refuses long queries with too many states); the intersections cost the
//! same (0.1-0.25 ms). `levenshtein_automata` also counts a transposition as one edit and
//! reports each matched term's exact distance from its DFA state, which the ranking needs;
//! the `fst` automaton only answers yes or no.

use std::sync::OnceLock;

use fst::{IntoStreamer, Streamer};
use levenshtein_automata::{Distance, LevenshteinAutomatonBuilder};

/// The largest supported distance.
pub const MAX_DISTANCE: u8 = 2;

/// Terms longer than this many characters are only matched exactly.
pub const MAX_FUZZY_CHARS: usize = 64;

/// The default edit distance for a term: 0 for up to 2 characters, 1 for 3-5, 2 for more.
#[must_use]
pub fn default_distance(term: &str) -> u8 {
    match term.chars().count() {
        0..=2 => 0,
        3..=5 => 1,
        _ => 2,
    }
}

/// Options of a fuzzy expansion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FuzzyOptions {
    /// The edit distance; `None` for [`default_distance`]. Values above [`MAX_DISTANCE`]
    /// are lowered to it.
    pub distance: Option<u8>,
    /// At most this many expansions per query term (default 50).
    pub max_expansions: usize,
}

impl Default for FuzzyOptions {
    fn default() -> Self {
        FuzzyOptions {
            distance: None,
            max_expansions: 50,
        }
    }
}

/// One vocabulary term near the query term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzyTerm {
    /// The vocabulary term.
    pub term: String,
    /// Its edit distance from the query term (0 = exact).
    pub distance: u8,
}

/// The expansion of one query term.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expansion {
    /// Matches, exact first, then by distance, each distance in term order.
    pub terms: Vec<FuzzyTerm>,
    /// More terms were within the distance than `max_expansions` allowed.
    pub truncated: bool,
}

fn builder(distance: u8) -> &'static LevenshteinAutomatonBuilder {
    static D1: OnceLock<LevenshteinAutomatonBuilder> = OnceLock::new();
    static D2: OnceLock<LevenshteinAutomatonBuilder> = OnceLock::new();
    if distance <= 1 {
        D1.get_or_init(|| LevenshteinAutomatonBuilder::new(1, true))
    } else {
        D2.get_or_init(|| LevenshteinAutomatonBuilder::new(2, true))
    }
}

/// The terms of `set` within the edit distance of `term` (a canonical, lowercased token).
#[must_use]
pub fn expand<D: AsRef<[u8]>>(set: &fst::Set<D>, term: &str, opts: &FuzzyOptions) -> Expansion {
    let cap = opts.max_expansions;
    let mut out = Expansion::default();
    if cap == 0 || term.is_empty() {
        out.truncated = cap == 0 && set.contains(term);
        return out;
    }
    let mut distance = opts
        .distance
        .unwrap_or_else(|| default_distance(term))
        .min(MAX_DISTANCE);
    if term.chars().count() > MAX_FUZZY_CHARS {
        distance = 0;
    }
    if distance == 0 {
        if set.contains(term) {
            out.terms.push(FuzzyTerm {
                term: term.to_owned(),
                distance: 0,
            });
        }
        return out;
    }
    let dfa = builder(distance).build_dfa(term);
    // One bucket per distance, each bounded by the cap: memory stays bounded however many
    // terms the automaton accepts, and the best `cap` come out in rank order.
    let mut buckets: [Vec<String>; (MAX_DISTANCE as usize) + 1] = Default::default();
    let mut stream = set.search_with_state(&dfa).into_stream();
    while let Some((key, state)) = stream.next() {
        let Distance::Exact(d) = dfa.distance(state) else {
            continue;
        };
        let d = usize::from(d.min(MAX_DISTANCE));
        let bucket = &mut buckets[d];
        if bucket.len() < cap {
            bucket.push(String::from_utf8_lossy(key).into_owned());
        } else {
            out.truncated = true;
        }
    }
    for (d, bucket) in buckets.into_iter().enumerate() {
        for t in bucket {
            if out.terms.len() >= cap {
                out.truncated = true;
                break;
            }
            out.terms.push(FuzzyTerm {
                term: t,
                distance: u8::try_from(d).unwrap_or(MAX_DISTANCE),
            });
        }
    }
    out
}

/// The edit distance between two terms (insertions, deletions, substitutions and adjacent
/// transpositions cost 1), when it is at most [`MAX_DISTANCE`]; for scoring terms that did
/// not come from [`expand`].
#[must_use]
pub fn distance_within(a: &str, b: &str, max: u8) -> Option<u8> {
    let max = max.min(MAX_DISTANCE);
    if a == b {
        return Some(0);
    }
    if max == 0 {
        return None;
    }
    match builder(max).build_dfa(a).eval(b) {
        Distance::Exact(d) if d <= max => Some(d),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(terms: &[&str]) -> fst::Set<Vec<u8>> {
        let mut t = terms.to_vec();
        t.sort_unstable();
        t.dedup();
        fst::Set::from_iter(t).unwrap()
    }

    fn names(e: &Expansion) -> Vec<(&str, u8)> {
        e.terms
            .iter()
            .map(|t| (t.term.as_str(), t.distance))
            .collect()
    }

    #[test]
    fn default_distance_by_length() {
        assert_eq!(default_distance("ab"), 0);
        assert_eq!(default_distance("abc"), 1);
        assert_eq!(default_distance("abcde"), 1);
        assert_eq!(default_distance("abcdef"), 2);
        assert_eq!(default_distance("日本"), 0);
        assert_eq!(default_distance("日本語"), 1);
    }

    #[test]
    fn exact_first_then_by_distance() {
        let s = set(&[
            "config",
            "conifg",
            "configs",
            "confg",
            "cnfig",
            "conflict",
            "zebra",
            "configure",
        ]);
        let e = expand(&s, "config", &FuzzyOptions::default());
        assert_eq!(
            names(&e),
            [
                ("config", 0),
                ("cnfig", 1),
                ("confg", 1),
                ("configs", 1),
                ("conifg", 1)
            ]
        );
        assert!(!e.truncated);
    }

    #[test]
    fn transposition_costs_one() {
        let s = set(&["the", "tax"]);
        let e = expand(&s, "teh", &FuzzyOptions::default());
        assert_eq!(names(&e), [("the", 1)]);
        assert_eq!(distance_within("teh", "the", 2), Some(1));
        assert_eq!(distance_within("abc", "xyz", 2), None);
        assert_eq!(distance_within("abc", "abc", 0), Some(0));
    }

    #[test]
    fn short_terms_are_exact() {
        let s = set(&["go", "to", "gx"]);
        assert_eq!(
            names(&expand(&s, "go", &FuzzyOptions::default())),
            [("go", 0)]
        );
        assert!(expand(&s, "ox", &FuzzyOptions::default()).terms.is_empty());
    }

    #[test]
    fn explicit_distance_and_cap() {
        let s = set(&["aaaa", "aaab", "aaba", "abaa", "baaa", "aabb"]);
        let opts = FuzzyOptions {
            distance: Some(1),
            max_expansions: 3,
        };
        let e = expand(&s, "aaaa", &opts);
        assert_eq!(e.terms.len(), 3);
        assert_eq!(e.terms[0].term, "aaaa");
        assert!(e.truncated);
        let opts = FuzzyOptions {
            distance: Some(9),
            max_expansions: 100,
        };
        let e = expand(&s, "aaaa", &opts);
        assert_eq!(e.terms.len(), 6, "distance capped at 2 still reaches aabb");
        assert!(!e.truncated);
    }

    #[test]
    fn unicode_distances_count_chars() {
        let s = set(&["café", "cafe", "caffé"]);
        let e = expand(
            &s,
            "café",
            &FuzzyOptions {
                distance: Some(1),
                max_expansions: 10,
            },
        );
        assert_eq!(names(&e), [("café", 0), ("cafe", 1), ("caffé", 1)]);
    }

    #[test]
    fn long_terms_fall_back_to_exact() {
        let long = "a".repeat(MAX_FUZZY_CHARS + 1);
        let near = format!("{long}b");
        let s = set(&[&long, &near]);
        assert_eq!(
            names(&expand(&s, &long, &FuzzyOptions::default())),
            [(long.as_str(), 0)]
        );
    }
}
