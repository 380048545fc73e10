//! Bounded snippets around the densest window of matches.
//!
//! Given an entry's text and the byte ranges of its matches (from
//! [`crate::bm25::term_spans`], [`crate::bm25::Phrase::spans`] or
//! [`crate::regex::CompiledRegex::find_spans`]), [`snippet`] picks the window of at most
//! `max_chars` characters (Unicode scalars) that contains the most whole matches, not the
//! start of the entry, and centres it on them. The window never splits a character; its
//! highlights are byte ranges into the snippet text; `truncated` says whether the snippet
//! is less than the whole text. With no matches the snippet is the start of the text.

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// A bounded excerpt of an entry's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Snippet {
    /// The excerpt, an exact slice of the text.
    pub text: String,
    /// The excerpt is not the whole text.
    pub truncated: bool,
    /// `[start, end)` byte ranges of matches inside `text`, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub highlights: Vec<[usize; 2]>,
}

/// Bounds of a snippet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnippetOptions {
    /// At most this many characters (Unicode scalars); default 240.
    pub max_chars: usize,
    /// At most this many highlights; default 16.
    pub max_highlights: usize,
}

impl Default for SnippetOptions {
    fn default() -> Self {
        SnippetOptions {
            max_chars: 240,
            max_highlights: 16,
        }
    }
}

/// The snippet of `text` around the densest window of `matches` (byte ranges of `text`, in
/// any order; ranges off char boundaries are widened, ranges past the end are clipped).
#[must_use]
pub fn snippet(text: &str, matches: &[Range<usize>], opts: &SnippetOptions) -> Snippet {
    window(text, matches, opts, text.is_ascii())
}

/// [`snippet`], told whether `text` is ASCII (a test runs ASCII text both ways).
fn window(text: &str, matches: &[Range<usize>], opts: &SnippetOptions, ascii: bool) -> Snippet {
    // Byte offset of every char start, plus the end; none kept for ASCII text, where the
    // k-th char starts at byte k (most entries: no offsets to collect for a long one).
    let starts: Vec<usize> = if ascii {
        Vec::new()
    } else {
        text.char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(text.len()))
            .collect()
    };
    let at = |k: usize| if ascii { k } else { starts[k] };
    let n_chars = if ascii { text.len() } else { starts.len() - 1 };
    let char_of = |byte: usize| {
        if ascii {
            byte.min(text.len())
        } else {
            starts.partition_point(|&s| s < byte.min(text.len()))
        }
    };
    let char_floor = |byte: usize| {
        let b = byte.min(text.len());
        if ascii {
            b
        } else {
            starts.partition_point(|&s| s <= b).saturating_sub(1)
        }
    };

    // Matches as char ranges, sorted, empty ones dropped.
    let mut spans: Vec<(usize, usize)> = matches
        .iter()
        .map(|r| (char_floor(r.start), char_of(r.end)))
        .filter(|(s, e)| s < e)
        .collect();
    spans.sort_unstable();
    spans.dedup();

    let max = opts.max_chars;
    let (ws, we) = if n_chars <= max {
        (0, n_chars)
    } else if spans.is_empty() || max == 0 {
        (0, max)
    } else {
        // Two pointers: the run of spans i..=j with the most spans fitting in `max` chars.
        let (mut best_i, mut best_j, mut best_n) = (0, 0, 0);
        let mut j = 0;
        for i in 0..spans.len() {
            if j < i {
                j = i;
            }
            while j + 1 < spans.len() && spans[j + 1].1 - spans[i].0 <= max {
                j += 1;
            }
            let n = if spans[j].1 - spans[i].0 <= max {
                j - i + 1
            } else {
                0
            };
            if n > best_n {
                (best_i, best_j, best_n) = (i, j, n);
            }
        }
        if best_n == 0 {
            // A single match longer than the window: show its start.
            let s = spans[0].0;
            (s, s + max)
        } else {
            let (s, e) = (spans[best_i].0, spans[best_j].1);
            let slack = max - (e - s);
            let mut ws = s.saturating_sub(slack / 2);
            let mut we = ws + max;
            if we > n_chars {
                we = n_chars;
                ws = n_chars - max;
            }
            // Prefer to start after a space within the lead, if that keeps every match.
            if ws > 0 {
                if let Some(k) = (ws..s).find(|&k| {
                    text[at(k)..at(k + 1)]
                        .chars()
                        .next()
                        .is_some_and(char::is_whitespace)
                }) {
                    if k < s && k + 1 - ws <= 16 {
                        let shift = k + 1 - ws;
                        ws += shift;
                        we = (we + shift).min(n_chars);
                    }
                }
            }
            (ws, we)
        }
    };

    let (bs, be) = (at(ws), at(we));
    let mut highlights = Vec::new();
    for &(s, e) in &spans {
        if highlights.len() >= opts.max_highlights {
            break;
        }
        let (s, e) = (s.max(ws), e.min(we));
        if s < e {
            highlights.push([at(s) - bs, at(e) - bs]);
        }
    }
    Snippet {
        text: text[bs..be].to_owned(),
        truncated: bs > 0 || be < text.len(),
        highlights,
    }
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init, clippy::reversed_empty_ranges)]
mod tests {
    use super::*;

    fn opts(max_chars: usize) -> SnippetOptions {
        SnippetOptions {
            max_chars,
            max_highlights: 16,
        }
    }

    fn marked(s: &Snippet) -> Vec<&str> {
        s.highlights.iter().map(|[a, b]| &s.text[*a..*b]).collect()
    }

    #[test]
    fn short_text_is_whole() {
        let t = "the timeout happened";
        let s = snippet(t, &[4..11], &opts(100));
        assert_eq!(s.text, t);
        assert!(!s.truncated);
        assert_eq!(marked(&s), ["timeout"]);
    }

    #[test]
    fn window_goes_to_densest_cluster_not_start() {
        let mut t = String::from("alpha ");
        t.push_str(&"filler ".repeat(40));
        let c = t.len();
        t.push_str("beta gamma beta ");
        t.push_str(&"filler ".repeat(40));
        let spans = [0..5, c..c + 4, c + 5..c + 10, c + 11..c + 15];
        let s = snippet(&t, &spans, &opts(40));
        assert!(s.truncated);
        assert!(s.text.chars().count() <= 40);
        assert_eq!(marked(&s), ["beta", "gamma", "beta"]);
    }

    fn spans_of(t: &str, needle: &str) -> Vec<Range<usize>> {
        t.match_indices(needle)
            .map(|(i, m)| i..i + m.len())
            .collect()
    }

    #[test]
    fn the_densest_run_wins_over_an_earlier_sparser_one_exactly() {
        // Two matches at the start fit in 12 chars, three later ones do too: the three win.
        // The window (12 chars, slack split) starts after the space before the run, so it is
        // chars 24..35: "aa aa aa hh".
        let t = "aa bb aa cc dd ee ff gg aa aa aa hh";
        let s = snippet(t, &spans_of(t, "aa"), &opts(12));
        assert_eq!(s.text, "aa aa aa hh");
        assert!(s.truncated);
        assert_eq!(s.highlights, [[0, 2], [3, 5], [6, 8]]);
    }

    #[test]
    fn a_lone_match_far_from_the_start_gets_its_window_exactly() {
        let t = "aaaa bbbb cccc TERM dddd eeee ffff";
        let s = snippet(t, &spans_of(t, "TERM"), &opts(14));
        assert_eq!(s.text, "TERM dddd eeee");
        assert_eq!(s.highlights, [[0, 4]]);
        // Near the end the window is pulled back to stay full.
        let t = "aaaa bbbb cccc dddd eeee TERM";
        let s = snippet(t, &spans_of(t, "TERM"), &opts(10));
        assert_eq!(s.text, "eeee TERM");
        assert_eq!(s.highlights, [[5, 9]]);
    }

    #[test]
    fn never_splits_a_char_and_stays_bounded() {
        let t = "日本語のテキスト、です。".repeat(30);
        let needle = "です";
        let spans: Vec<Range<usize>> = t
            .match_indices(needle)
            .map(|(i, m)| i..i + m.len())
            .collect();
        for max in [1, 2, 5, 17, 50] {
            let s = snippet(&t, &spans, &opts(max));
            assert!(s.text.chars().count() <= max);
            assert!(t.contains(&s.text));
            for [a, b] in &s.highlights {
                assert!(s.text.is_char_boundary(*a) && s.text.is_char_boundary(*b));
            }
        }
        // A range that is off char boundaries is widened to whole chars.
        let s = snippet("é", &[1..2], &opts(10));
        assert_eq!(s.highlights, [[0, 2]]);
    }

    #[test]
    fn no_matches_gives_the_start() {
        let t = "abcdefghij";
        let s = snippet(t, &[], &opts(4));
        assert_eq!(s.text, "abcd");
        assert!(s.truncated);
        assert!(s.highlights.is_empty());
    }

    #[test]
    fn match_longer_than_window_is_clipped() {
        let t = format!("xx {} yy", "m".repeat(50));
        let s = snippet(&t, &[3..53], &opts(10));
        assert_eq!(s.text, "m".repeat(10));
        assert_eq!(s.highlights, [[0, 10]]);
    }

    #[test]
    fn out_of_range_spans_and_highlight_cap() {
        let t = "a b a b a";
        let s = snippet(t, &[100..200, 4..2], &opts(50));
        assert!(s.highlights.is_empty());
        let spans: Vec<Range<usize>> = (0..5).map(|i| i * 2..i * 2 + 1).collect();
        let s = snippet(
            t,
            &spans,
            &SnippetOptions {
                max_chars: 50,
                max_highlights: 2,
            },
        );
        assert_eq!(s.highlights.len(), 2);
    }

    /// ASCII text gives the same snippet with or without the table of char starts.
    #[test]
    fn ascii_needs_no_char_table() {
        let mut next = crate::test_util::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let words = ["alpha", " ", "timeout", "\n", "x", "  ", "filler"];
        for round in 0..300 {
            let len = next(120) as usize;
            let text: String = (0..len)
                .map(|_| words[next(7) as usize])
                .collect::<String>();
            let spans: Vec<Range<usize>> = (0..next(6))
                .map(|_| {
                    let a = next(text.len() as u64 + 3) as usize;
                    a..a + next(12) as usize
                })
                .collect();
            for max in [0, 1, 5, 16, 40, 240] {
                let o = SnippetOptions {
                    max_chars: max,
                    max_highlights: 1 + round % 4,
                };
                assert_eq!(
                    window(&text, &spans, &o, true),
                    window(&text, &spans, &o, false),
                    "{text:?} {spans:?} {max}"
                );
            }
        }
    }

    #[test]
    fn json_shape() {
        let s = snippet("a timeout", &[2..9], &opts(50));
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"text": "a timeout", "truncated": false, "highlights": [[2, 9]]})
        );
    }
}
