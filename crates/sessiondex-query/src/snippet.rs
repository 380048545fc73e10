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

/// Bytes per block of [`Chars`]: each block's chars are counted once, and a char's place is
/// found by a walk within one block.
const BLOCK: usize = 64;

/// Whether byte `b` starts a char (it is no UTF-8 continuation byte).
fn starts_char(b: u8) -> bool {
    !(0x80..0xC0).contains(&b)
}

/// How many chars start in `bytes`.
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| starts_char(b)).count()
}

/// The places of a text's chars. In ASCII text the k-th char starts at byte k; in other text
/// the chars starting before each block of [`BLOCK`] bytes are counted, and a place within a
/// block is walked to (a table of every char's place was most of a snippet of a long text,
/// which needs a few dozen places).
struct Chars<'t> {
    bytes: &'t [u8],
    ascii: bool,
    /// Chars starting before block `i`, for each block and the end (not for ASCII text).
    before: Vec<usize>,
}

/// Where a text's chars are: what [`window_in`] reads of them.
trait Places {
    /// How many chars.
    fn count(&self) -> usize;
    /// How many chars start before byte `b` (at most the text's length).
    fn before(&self, b: usize) -> usize;
    /// The byte where char `k` starts; the text's length for `k` at or past the count.
    fn at(&self, k: usize) -> usize;
    /// The char that byte `b` lies in (the count at the end).
    fn of_byte(&self, b: usize) -> usize;
}

impl<'t> Chars<'t> {
    fn new(text: &'t str, ascii: bool) -> Chars<'t> {
        let bytes = text.as_bytes();
        let mut before = Vec::new();
        if !ascii {
            before.reserve(bytes.len() / BLOCK + 2);
            let mut n = 0;
            before.push(n);
            for block in bytes.chunks(BLOCK) {
                n += char_starts(block);
                before.push(n);
            }
        }
        Chars {
            bytes,
            ascii,
            before,
        }
    }
}

impl Places for Chars<'_> {
    fn count(&self) -> usize {
        if self.ascii {
            self.bytes.len()
        } else {
            self.before.last().copied().unwrap_or(0)
        }
    }

    fn before(&self, b: usize) -> usize {
        if self.ascii {
            return b;
        }
        let block = b / BLOCK;
        let counted = self.before.get(block).copied().unwrap_or(0);
        counted + char_starts(self.bytes.get(block * BLOCK..b).unwrap_or_default())
    }

    fn at(&self, k: usize) -> usize {
        if self.ascii {
            return k.min(self.bytes.len());
        }
        // The last block with at most `k` chars before it holds char `k` (`before[0]` is 0).
        let block = self.before.partition_point(|&c| c <= k).saturating_sub(1);
        let mut c = self.before.get(block).copied().unwrap_or(0);
        for (p, &b) in self.bytes.iter().enumerate().skip(block * BLOCK) {
            if starts_char(b) {
                if c == k {
                    return p;
                }
                c += 1;
            }
        }
        self.bytes.len()
    }

    fn of_byte(&self, b: usize) -> usize {
        if self.ascii {
            return b.min(self.bytes.len());
        }
        match self.bytes.get(b) {
            None => self.count(),
            Some(&x) => (self.before(b) + usize::from(starts_char(x))).saturating_sub(1),
        }
    }
}

/// [`snippet`], told whether `text` is ASCII (a test runs ASCII text both ways).
fn window(text: &str, matches: &[Range<usize>], opts: &SnippetOptions, ascii: bool) -> Snippet {
    window_in(text, matches, opts, &Chars::new(text, ascii))
}

/// How many chars a window that starts at char `ws` (byte `from`) moves to start after a
/// space: past the first whitespace char of its lead, the chars before the first match's
/// (char `s`), if that is among the lead's first 16 chars; else 0.
fn lead_shift(text: &str, from: usize, ws: usize, s: usize) -> usize {
    let lead = s.min(ws + 16).saturating_sub(ws);
    let mut chars = text.get(from..).unwrap_or_default().chars().take(lead);
    chars.position(char::is_whitespace).map_or(0, |j| j + 1)
}

/// [`snippet`] with the text's chars at `chars`.
fn window_in(
    text: &str,
    matches: &[Range<usize>],
    opts: &SnippetOptions,
    chars: &impl Places,
) -> Snippet {
    let at = |k: usize| chars.at(k);
    let n_chars = chars.count();
    let char_of = |byte: usize| chars.before(byte.min(text.len()));
    let char_floor = |byte: usize| chars.of_byte(byte.min(text.len()));

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
                let shift = lead_shift(text, at(ws), ws, s);
                ws += shift;
                we = (we + shift).min(n_chars);
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

    /// Every char's place in a table, as the window first read them: the reference of
    /// [`Chars`].
    struct Table {
        /// Each char's start, then the text's length.
        starts: Vec<usize>,
    }

    impl Table {
        fn new(text: &str) -> Table {
            let ends = std::iter::once(text.len());
            Table {
                starts: text.char_indices().map(|(i, _)| i).chain(ends).collect(),
            }
        }
    }

    impl Places for Table {
        fn count(&self) -> usize {
            self.starts.len() - 1
        }
        fn before(&self, b: usize) -> usize {
            self.starts.partition_point(|&x| x < b)
        }
        fn at(&self, k: usize) -> usize {
            self.starts[k.min(self.count())]
        }
        fn of_byte(&self, b: usize) -> usize {
            self.starts.partition_point(|&x| x <= b).saturating_sub(1)
        }
    }

    /// ASCII text, and text of chars one to four bytes wide, across blocks, with matches on
    /// and off char boundaries and past the end: the blocks' places give the table's
    /// snippets, and ASCII text gives them read as ASCII or not.
    #[test]
    fn block_places_are_the_table_places() {
        let mut next = crate::test_util::xorshift(0x2545_f491_4f6c_dd1du64);
        let ascii = ["alpha", " ", "timeout", "\n", "x", "  ", "filler", "b", "c"];
        let mixed = ["a", " ", "é", "日本", "\n", "😀", "x y", "  ", "ß"];
        let mut checked = 0;
        for round in 0..800 {
            let pieces = if round % 2 == 0 { ascii } else { mixed };
            let len = next(if round % 8 < 2 { 400 } else { 90 }) as usize;
            let text: String = (0..len).map(|_| pieces[next(9) as usize]).collect();
            let spans: Vec<Range<usize>> = (0..next(8))
                .map(|_| {
                    let a = next(text.len() as u64 + 5) as usize;
                    a..a + next(20) as usize
                })
                .collect();
            for max in [0, 1, 3, 16, 40, 240] {
                let o = SnippetOptions {
                    max_chars: max,
                    max_highlights: 1 + round % 5,
                };
                let want = window_in(&text, &spans, &o, &Table::new(&text));
                assert_eq!(snippet(&text, &spans, &o), want, "{text:?} {spans:?} {max}");
                // The blocks read ASCII text as they read any other.
                assert_eq!(window(&text, &spans, &o, false), want, "{text:?} {spans:?}");
                if text.is_ascii() {
                    assert_eq!(window(&text, &spans, &o, true), want, "{text:?} {spans:?}");
                }
                checked += usize::from(!want.highlights.is_empty());
            }
        }
        assert!(checked > 1_000, "{checked}");
    }

    /// A window moves past the first whitespace char among the chars from its start to the
    /// first match's, if that char is one of the first 16: every start and match over texts
    /// of spaces and chars of one to four bytes.
    #[test]
    fn lead_shift_is_the_first_space_of_the_lead() {
        let texts = crate::test_util::strings_over(&["a", " ", "é", "\n", "😀"], 5);
        let long = format!("{}{}", "x".repeat(20), " y ".repeat(3));
        let mut shifted = 0;
        for text in texts.iter().chain([&long]) {
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            for ws in 0..=chars.len() {
                for s in ws..=chars.len() {
                    let from = chars.get(ws).map_or(text.len(), |c| c.0);
                    let want = (ws..s)
                        .find(|&k| chars[k].1.is_whitespace())
                        .filter(|&k| k + 1 - ws <= 16)
                        .map_or(0, |k| k + 1 - ws);
                    assert_eq!(lead_shift(text, from, ws, s), want, "{text:?} {ws} {s}");
                    shifted += usize::from(want > 0);
                }
            }
        }
        assert!(shifted > 1_000, "{shifted}");
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
