//! Bounded regular expressions over entry text and term vocabularies.
//!
//! A pattern compiles to a regex-automata 0.4 dense DFA for matching, under limits on pattern
//! bytes, NFA size, DFA size and determinization memory. A DFA never backtracks: matching is
//! one table lookup per byte, so no pattern can run for long, and a pattern whose automaton
//! would be too large is refused while it is being built (the determinizer stops at the
//! limit), not after. Where a match starts (for highlighting a page's hits) is found by a
//! reverse lazy DFA, built on the first [`CompiledRegex::find_spans`] with a cache of at most
//! the DFA limit: most calls never ask, and determinizing a second dense DFA up front cost
//! about as much as the first. A pattern that is an ASCII literal followed by a run of one
//! ASCII class (`zqpfx[0-9]+`) is matched without an automaton (`simple`): its matches are
//! the DFA's, and building the DFA was most of its cost when few texts are searched. Such a
//! pattern written plainly (a literal of letters, digits, `_` and `-`, a bracketed class of
//! letters, digits and `_`, and `+` or a counted bound) is read from its text without the
//! parser (`direct`), which then cost more than the rest of a call whose regex matches no
//! term.
//!
//! # Semantics
//!
//! - Matching is always case-insensitive (Unicode simple case folding); the index lowercases
//!   text and terms anyway. `(?-i)` does not turn it off: a case-sensitive part would match
//!   text whose lowered terms it does not match, and a cold session answers by its terms.
//! - **Over text** (hot entries): an entry matches when the pattern matches anywhere in its
//!   normalized text; `^`/`$` are the start/end of the text (`(?m)` makes them line anchors).
//!   [`CompiledRegex::is_match_text`] is a single linear pass that stops at the first match.
//! - **Over a vocabulary term** (cold digests): a term matches when the pattern matches
//!   anywhere in the term; `^`/`$` anchor to the term's start/end.
//! - The dense DFA leaves out of each small class the code points NFKC text never holds
//!   (U+017F and U+212A, which case folding adds to `s` and `k`, and the like), so an ASCII
//!   pattern compiles to an ASCII automaton (about half the states and compile time of
//!   `[a-z]+zqsfx`); it matches exactly as the pattern on every haystack it runs over.
//! - Every class holds both cases of a letter (case folding), so the dense DFA and the
//!   reverse lazy DFA leave out the ASCII capitals and search text with its ASCII letters
//!   lowered (byte offsets unchanged): about half the byte classes of a pattern with letters,
//!   so about half the transitions to determinize.
//! - `\b`, `\B`, `\<`, `\>` are ASCII word boundaries (a dense DFA cannot decide Unicode
//!   word boundaries); every other construct keeps its Unicode meaning.
//! - [`CompiledRegex::can_span_tokens`] tells whether some match could contain a character
//!   that is not a term character (space, punctuation, ...). Such a match can exist in text
//!   but never inside one vocabulary term, so a cold "no match" is then unprovable.
//!
//! # Vocabularies
//!
//! An unanchored DFA never dies on any prefix, so walking an FST with it visits every node;
//! only a pattern anchored at the term start with a non-empty literal prefix prunes the walk
//! to one narrow subtree. Measured (release, 100,000 terms, 1.3 MB of term bytes, 0.78 MB
//! FST): walking the FST unanchored takes 28-43 ms, scanning a flat term list with the DFA
//! 4.6-8.2 ms (3.5-9x faster), and streaming the FST's keys through the DFA 26-37 ms (the
//! key decoding costs as much as the walk). Hence:
//!
//! - [`CompiledRegex::matching_terms`] (over an `fst::Set`) walks the FST with
//!   [`TermAutomaton`] when [`CompiledRegex::walks_fst`], and otherwise streams the keys
//!   through the DFA (the same cost as a walk, but one DFA pass per term and an exact
//!   per-term haystack budget);
//! - [`CompiledRegex::matching_terms_in_list`] scans a flat term list (a decoded vocabulary
//!   the engine keeps, or any term iterator): use it whenever such a list is at hand and the
//!   pattern does not walk.

use std::borrow::Cow;
use std::ops::Range;

use std::sync::OnceLock;

use simple::Simple;

use regex_automata::dfa::{dense, Automaton, StartKind};
use regex_automata::hybrid;
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::util::iter::Searcher;
use regex_automata::util::primitives::StateID;
use regex_automata::util::{start, syntax};
use regex_automata::{Anchored, HalfMatch, Input, Match, MatchError, MatchKind};
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{
    Capture, Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind,
    Look, Repetition,
};
use serde_json::json;
use unicode_normalization::{is_nfkc_quick, IsNormalized};

use crate::error::{Error, ErrorCode};

#[cfg(not(target_arch = "wasm32"))]
mod direct;
mod simple;

/// Bounds on a regex: pattern bytes, automaton sizes and haystack bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegexLimits {
    /// Longest pattern accepted, in UTF-8 bytes (`regexMaxPatternBytes`, default 1024).
    pub max_pattern_bytes: usize,
    /// Heap bound on each Thompson NFA (forward and reverse), in bytes.
    pub max_nfa_bytes: usize,
    /// Bound on each dense DFA's transition table (forward and reverse), in bytes.
    pub max_dfa_bytes: usize,
    /// Bound on the auxiliary memory of determinization, in bytes.
    pub max_determinize_bytes: usize,
    /// Budget of haystack bytes (entry text plus vocabulary terms) one call may scan.
    pub max_haystack_bytes: u64,
}

impl RegexLimits {
    /// Defaults: 1 KiB patterns, 2 MiB NFA, 2 MiB per DFA, 2 MiB determinization, 64 MiB
    /// of haystack per call.
    pub const DEFAULT: RegexLimits = RegexLimits {
        max_pattern_bytes: 1024,
        max_nfa_bytes: 2 << 20,
        max_dfa_bytes: 2 << 20,
        max_determinize_bytes: 2 << 20,
        max_haystack_bytes: 64 << 20,
    };
}

impl Default for RegexLimits {
    fn default() -> Self {
        RegexLimits::DEFAULT
    }
}

/// A running count of haystack bytes against [`RegexLimits::max_haystack_bytes`].
///
/// When [`HaystackBudget::charge`] returns false the caller stops scanning and marks
/// coverage incomplete: the result is no longer an authoritative no-match.
#[derive(Debug, Clone)]
pub struct HaystackBudget {
    remaining: u64,
    exhausted: bool,
}

impl HaystackBudget {
    /// A budget of `limits.max_haystack_bytes`.
    #[must_use]
    pub fn new(limits: &RegexLimits) -> HaystackBudget {
        HaystackBudget {
            remaining: limits.max_haystack_bytes,
            exhausted: false,
        }
    }

    /// A budget that never runs out.
    #[must_use]
    pub fn unlimited() -> HaystackBudget {
        HaystackBudget {
            remaining: u64::MAX,
            exhausted: false,
        }
    }

    /// Takes `bytes` from the budget; false (and exhausted from now on) when they do not fit.
    pub fn charge(&mut self, bytes: usize) -> bool {
        let b = u64::try_from(bytes).unwrap_or(u64::MAX);
        if self.exhausted || b > self.remaining {
            self.exhausted = true;
            return false;
        }
        self.remaining -= b;
        true
    }

    /// Whether `bytes` can be charged now.
    #[must_use]
    pub fn fits(&self, bytes: usize) -> bool {
        !self.exhausted && u64::try_from(bytes).is_ok_and(|b| b <= self.remaining)
    }

    /// Whether a charge has been refused.
    #[must_use]
    pub fn is_exhausted(&self) -> bool {
        self.exhausted
    }
}

/// A lazy DFA's cache, kept between the searches of one regex: a page's hits each find their
/// spans, and a fresh cache per search (its allocation, and the states it learns again) was
/// about a twelfth of a prefix regex's call over 200 MB. Taken out for a search and put back
/// after, so searches on two threads at once each have one (the second a fresh one). A clone
/// starts empty.
#[derive(Debug, Default)]
struct CacheSlot(std::sync::Mutex<Option<hybrid::dfa::Cache>>);

impl Clone for CacheSlot {
    fn clone(&self) -> CacheSlot {
        CacheSlot::default()
    }
}

impl CacheSlot {
    /// Runs `f` with the kept cache of `dfa` (every call passes the same DFA), or a new one.
    fn with<T>(&self, dfa: &hybrid::dfa::DFA, f: impl FnOnce(&mut hybrid::dfa::Cache) -> T) -> T {
        let lock = || {
            self.0
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        let kept = lock().take();
        let mut cache = kept.unwrap_or_else(|| dfa.create_cache());
        let out = f(&mut cache);
        *lock() = Some(cache);
        out
    }
}

/// [`CompiledRegex`]'s pattern as parsed: set when compiled in the browser build, where no
/// pattern is read directly.
#[cfg(not(target_arch = "wasm32"))]
type FullHir = OnceLock<Option<Hir>>;
#[cfg(target_arch = "wasm32")]
type FullHir = Option<Hir>;

/// A pattern compiled to a bounded forward DFA (and, on first need, a reverse lazy DFA).
#[derive(Debug, Clone)]
pub struct CompiledRegex {
    pattern: String,
    /// The forward dense DFA and its start state; `None` for a [`Simple`] pattern.
    fwd: Option<(dense::DFA<Vec<u32>>, StateID)>,
    /// The pattern as a literal and a run of one class, matched without the DFA.
    simple: Option<Simple>,
    /// The pattern, for the reverse automaton (its classes without the characters
    /// normalized text never holds: [`drop_unnormalized`]; and without ASCII capitals when
    /// `lowers`).
    hir: Hir,
    /// The pattern as parsed, when dropping those characters changed it: text holding one
    /// of them is searched with it ([`CompiledRegex::find_spans`]). A pattern read directly
    /// ([`CompiledRegex::direct`]) is parsed on the first such text.
    full_hir: FullHir,
    /// The code points dropped from `hir` (ascending; empty when `full_hir` is `None`).
    dropped: Vec<char>,
    limits: RegexLimits,
    /// The reverse lazy DFA that finds where a match starts; `None` when it cannot be built
    /// under the limits (matches are then not highlighted).
    rev: OnceLock<Option<hybrid::dfa::DFA>>,
    /// The cache of `rev`, kept between searches.
    rev_cache: CacheSlot,
    /// Forward and reverse lazy DFAs of `full_hir`, built on the first text that needs them.
    full: OnceLock<Option<(hybrid::dfa::DFA, hybrid::dfa::DFA)>>,
    fst_prefix: bool,
    spans_tokens: bool,
    /// See [`CompiledRegex::has_anchor`].
    anchored: bool,
    /// Every match is at least one byte long.
    nonempty: bool,
    /// See [`CompiledRegex::counts_by_terms`].
    by_terms: bool,
    /// `fwd` and `rev` have no ASCII capitals: the text they search is lowered first
    /// ([`ascii_lowered`]).
    lowers: bool,
    /// Literals one of which every match in a term holds (empty: no such set is known).
    required: Vec<memchr::memmem::Finder<'static>>,
}

impl CompiledRegex {
    /// Compiles `pattern` case-insensitively under `limits`.
    ///
    /// # Errors
    ///
    /// `regex_pattern_too_long` over `max_pattern_bytes`; `invalid_regex` for a syntax error
    /// or an unsupported feature; `regex_too_large` when an automaton would exceed a limit.
    pub fn new(pattern: &str, limits: &RegexLimits) -> Result<CompiledRegex, Error> {
        if pattern.len() > limits.max_pattern_bytes {
            return Err(Error::new(
                ErrorCode::RegexPatternTooLong,
                format!(
                    "regex pattern is {} bytes, over the limit of {}",
                    pattern.len(),
                    limits.max_pattern_bytes
                ),
            )
            .with_details(json!({"limit": limits.max_pattern_bytes, "length": pattern.len()})));
        }
        #[cfg(test)]
        let dfa_only = tests::DFA_ONLY.with(std::cell::Cell::get);
        #[cfg(not(test))]
        let dfa_only = false;
        #[cfg(not(target_arch = "wasm32"))]
        {
            #[cfg(test)]
            let keep_capitals = tests::KEEP_CAPITALS.with(std::cell::Cell::get);
            #[cfg(not(test))]
            let keep_capitals = false;
            if !keep_capitals && !dfa_only {
                if let Some(re) = CompiledRegex::direct(pattern, limits) {
                    return Ok(re);
                }
            }
        }
        CompiledRegex::parsed(pattern, limits, dfa_only)
    }

    /// [`CompiledRegex::new`] of a pattern of the simple form read from its text
    /// ([`direct`]): the pattern that the parser's path ([`CompiledRegex::parsed`]) gives
    /// the automata, built as it is, and what is told of it computed from it. `None` for any
    /// other pattern.
    #[cfg(not(target_arch = "wasm32"))]
    fn direct(pattern: &str, limits: &RegexLimits) -> Option<CompiledRegex> {
        let shape = direct::read(pattern)?;
        let class = shape
            .class_ranges()
            .into_iter()
            .map(|(a, b)| ClassUnicodeRange::new(char::from(a), char::from(b)));
        let run = Hir::repetition(Repetition {
            min: shape.min,
            max: shape.max,
            greedy: true,
            sub: Box::new(Hir::class(Class::Unicode(ClassUnicode::new(class)))),
        });
        let lowers = shape.has_letters();
        // What case folding adds to `s` and `k`, and the parser's path takes out again.
        let dropped: Vec<char> = [(b's', '\u{17f}'), (b'k', '\u{212a}')]
            .into_iter()
            .filter(|&(b, _)| shape.holds(b))
            .map(|(_, c)| c)
            .collect();
        let hir = Hir::concat(vec![Hir::literal(shape.literal), run]);
        let simple = Simple::of(&hir, lowers, limits)?;
        // Those code points are letters: the pattern as parsed spans tokens, has a least
        // length and anchors as this one does.
        let nonempty = hir.properties().minimum_len().is_some_and(|n| n > 0);
        let spans_tokens = can_span_tokens(&hir);
        let anchored = hir.properties().look_set().contains_anchor();
        let required = required_literals(&hir)
            .into_iter()
            .map(|l| memchr::memmem::Finder::new(&l).into_owned())
            .collect();
        Some(CompiledRegex {
            pattern: pattern.to_owned(),
            fst_prefix: has_anchored_literal_prefix(&hir),
            nonempty,
            by_terms: !spans_tokens && nonempty && hir.properties().look_set().is_empty(),
            lowers,
            spans_tokens,
            anchored,
            required,
            fwd: None,
            simple: Some(simple),
            hir,
            full_hir: if dropped.is_empty() {
                OnceLock::from(None)
            } else {
                OnceLock::new()
            },
            dropped,
            limits: *limits,
            rev: OnceLock::new(),
            rev_cache: CacheSlot::default(),
            full: OnceLock::new(),
        })
    }

    /// [`CompiledRegex::new`] by `regex_syntax`'s parser: any pattern.
    fn parsed(pattern: &str, limits: &RegexLimits, dfa_only: bool) -> Result<CompiledRegex, Error> {
        let hir = folded(pattern)?;
        // Every haystack but a snippet's text is NFKC (terms lowercased too), where a
        // character such as U+017F or U+212A, which case folding adds to `s` and `k`, never
        // occurs; without them an ASCII pattern compiles to an ASCII automaton.
        let (hir, full_hir, dropped) = match drop_unnormalized(&hir) {
            Some((narrow, dropped)) => (narrow, Some(hir), dropped),
            None => (hir, None, Vec::new()),
        };
        // What the pattern can match is told by the pattern as parsed.
        let full = full_hir.as_ref().unwrap_or(&hir);
        let fst_prefix = has_anchored_literal_prefix(full);
        let nonempty = full.properties().minimum_len().is_some_and(|n| n > 0);
        let spans_tokens = can_span_tokens(full);
        let anchored = full.properties().look_set().contains_anchor();
        let by_terms = !spans_tokens && nonempty && full.properties().look_set().is_empty();
        // Every class holds both cases of a letter: the automata need only the lowercase ASCII
        // ones when the text they search has its ASCII letters lowered (about half the byte
        // classes, so about half the transitions to determinize).
        #[cfg(test)]
        let keep_capitals = tests::KEEP_CAPITALS.with(std::cell::Cell::get);
        #[cfg(not(test))]
        let keep_capitals = false;
        let (hir, lowers) = match drop_ascii_capitals(&hir).filter(|_| !keep_capitals) {
            Some(narrow) => (narrow, true),
            None => (hir, false),
        };
        // Terms are NFKC with their ASCII letters lowered, as the text the automaton searches:
        // its pattern tells what a term's match holds, without the case variants of every
        // letter (32 for `zqpfx`) for the extraction to multiply.
        let required = required_literals(&hir)
            .into_iter()
            .map(|l| memchr::memmem::Finder::new(&l).into_owned())
            .collect();

        let simple = if cfg!(target_arch = "wasm32") || dfa_only {
            None
        } else {
            Simple::of(&hir, lowers, limits)
        };
        let fwd = match simple {
            Some(_) => None,
            None => Some(forward_dfa(&hir, limits)?),
        };

        #[cfg(not(target_arch = "wasm32"))]
        let full_hir = OnceLock::from(full_hir);
        Ok(CompiledRegex {
            pattern: pattern.to_owned(),
            fst_prefix,
            nonempty,
            by_terms,
            lowers,
            spans_tokens,
            anchored,
            required,
            fwd,
            simple,
            hir,
            full_hir,
            dropped,
            limits: *limits,
            rev: OnceLock::new(),
            rev_cache: CacheSlot::default(),
            full: OnceLock::new(),
        })
    }

    /// The reverse lazy DFA of the pattern (anchored at a match's end, every match kind, as
    /// regex-automata's own regexes pair it with a forward one), under the NFA limit and a
    /// cache of at most the DFA limit.
    fn reverse(&self) -> Option<&hybrid::dfa::DFA> {
        self.rev
            .get_or_init(|| lazy_dfa(&self.hir, &self.limits, true))
            .as_ref()
    }

    /// The pattern as parsed, when dropping characters changed it (parsed now when it was
    /// read directly).
    fn full_hir(&self) -> Option<&Hir> {
        #[cfg(target_arch = "wasm32")]
        return self.full_hir.as_ref();
        #[cfg(not(target_arch = "wasm32"))]
        self.full_hir
            .get_or_init(|| folded(&self.pattern).ok())
            .as_ref()
    }

    /// Forward and reverse lazy DFAs of the pattern as parsed, for text that may hold a
    /// character the dense DFA leaves out.
    fn full(&self) -> Option<&(hybrid::dfa::DFA, hybrid::dfa::DFA)> {
        self.full
            .get_or_init(|| {
                let hir = self.full_hir()?;
                Some((
                    lazy_dfa(hir, &self.limits, false)?,
                    lazy_dfa(hir, &self.limits, true)?,
                ))
            })
            .as_ref()
    }

    /// Literals one of which every match in a vocabulary term holds, when such a set is
    /// known: a term holding none cannot match.
    #[must_use]
    pub fn required_literals(&self) -> Option<&[memchr::memmem::Finder<'static>]> {
        (!self.required.is_empty()).then_some(&self.required[..])
    }

    /// The pattern as given.
    #[must_use]
    pub fn pattern(&self) -> &str {
        &self.pattern
    }

    /// Heap bytes of the forward DFA and, once built, the lazy DFAs (without the caches of a
    /// search, which [`CompiledRegex::find_spans`] drops when it returns).
    #[must_use]
    pub fn memory_usage(&self) -> usize {
        let lazy = self.rev.get().and_then(Option::as_ref).into_iter().chain(
            self.full
                .get()
                .and_then(Option::as_ref)
                .into_iter()
                .flat_map(|(f, r)| [f, r]),
        );
        let fwd = self.fwd.as_ref();
        fwd.map_or(0, |(d, _)| d.memory_usage())
            + lazy.map(hybrid::dfa::DFA::memory_usage).sum::<usize>()
    }

    /// Whether the pattern matches anywhere in `text`: one pass, one lookup per byte,
    /// stopping at the first match. Case does not matter; normalized text (NFKC) is the
    /// engine's, and other text holding a character the dense DFA leaves out is searched
    /// with the pattern as parsed.
    #[must_use]
    pub fn is_match_text(&self, text: &str) -> bool {
        if self.holds_dropped(text) {
            if let Some((fwd, _)) = self.full() {
                let mut cache = fwd.create_cache();
                let input = Input::new(text).earliest(true);
                return matches!(fwd.try_search_fwd(&mut cache, &input), Ok(Some(_)));
            }
        }
        self.run(text.as_bytes())
    }

    /// Whether `text` holds a character the dense DFA leaves out ([`drop_unnormalized`]);
    /// normalized text never does.
    fn holds_dropped(&self, text: &str) -> bool {
        if self.dropped.is_empty() || text.is_ascii() {
            return false;
        }
        if self.dropped.len() <= MAX_DROPPED_SEARCHES {
            // A vector search for each (U+017F and U+212A, most often).
            self.dropped.iter().any(|c| {
                memchr::memmem::find(text.as_bytes(), c.encode_utf8(&mut [0; 4]).as_bytes())
                    .is_some()
            })
        } else {
            text.chars().any(|c| self.dropped.binary_search(&c).is_ok())
        }
    }

    /// `text` as the dense DFA and `rev` search it: its ASCII letters lowered when the
    /// automata have no capitals (`lowers`).
    fn lowered<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if self.lowers {
            ascii_lowered(text)
        } else {
            Cow::Borrowed(text)
        }
    }

    /// Whether the pattern matches anywhere in the vocabulary term `term`, `^`/`$` anchoring
    /// at the term's start/end. The same pass as [`CompiledRegex::is_match_text`], after a
    /// look for the literals every match holds (most terms of a vocabulary hold none; the
    /// literals are lowercase, so the look is skipped for a term with an ASCII capital, which
    /// no vocabulary holds).
    #[must_use]
    pub fn is_match_term(&self, term: &[u8]) -> bool {
        if let Some(simple) = self.simple() {
            // Its one search is for the literal, the required one.
            return simple.is_match(term);
        }
        if !self.required.is_empty()
            && !self
                .required
                .iter()
                .any(|f| find_literal(f, term).is_some())
            && !term.iter().any(u8::is_ascii_uppercase)
        {
            return false;
        }
        self.run(term)
    }

    /// The [`Simple`] form; never in the browser build, whose size it would grow (about 0.9
    /// KB of .wasm).
    fn simple(&self) -> Option<&Simple> {
        if cfg!(target_arch = "wasm32") {
            None
        } else {
            self.simple.as_ref()
        }
    }

    /// The forward dense DFA and its start state (`None` for a [`Simple`] pattern, which
    /// never needs it).
    fn dfa(&self) -> Option<&(dense::DFA<Vec<u32>>, StateID)> {
        self.fwd.as_ref()
    }

    /// One pass of the dense DFA over `hay`, its ASCII letters lowered on the way (the DFA
    /// may have no capitals), stopping at the first match.
    fn run(&self, hay: &[u8]) -> bool {
        if let Some(simple) = self.simple() {
            return simple.is_match(hay);
        }
        let Some((dfa, start)) = self.dfa() else {
            return false;
        };
        let mut s = *start;
        for &b in hay {
            s = dfa.next_state(s, b.to_ascii_lowercase());
            if dfa.is_special_state(s) {
                if dfa.is_match_state(s) {
                    return true;
                }
                if dfa.is_dead_state(s) || dfa.is_quit_state(s) {
                    return false;
                }
            }
        }
        dfa.is_match_state(dfa.next_eoi_state(s))
    }

    /// Byte ranges of successive leftmost-first, non-overlapping matches in `text`, at most
    /// `max`; for highlighting. Empty matches are skipped (they highlight nothing). Each match
    /// is found as regex-automata's DFA regexes find it: its end by a forward search, its
    /// start by an anchored reverse search from that end. `text` need not be normalized (a
    /// snippet's is the stored text): where it holds a character the dense DFA leaves out,
    /// lazy DFAs of the pattern as parsed search it.
    #[must_use]
    pub fn find_spans(&self, text: &str, max: usize) -> Vec<Range<usize>> {
        if max == 0 {
            return Vec::new();
        }
        if self.holds_dropped(text) {
            // A character the dense DFA leaves out is here: the pattern as parsed.
            let Some((fwd, rev)) = self.full() else {
                return Vec::new();
            };
            let (mut fc, mut rc) = (fwd.create_cache(), rev.create_cache());
            return match_spans(
                text,
                max,
                fwd.get_nfa().is_always_start_anchored(),
                |input| fwd.try_search_fwd(&mut fc, input),
                |input| rev.try_search_rev(&mut rc, input),
            );
        }
        // Lowering keeps every byte offset: the spans are the text's.
        if let Some(simple) = self.simple() {
            return simple.spans(self.lowered(text).as_bytes(), max);
        }
        let (Some(rev), Some((fwd, _))) = (self.reverse(), self.dfa()) else {
            return Vec::new();
        };
        let text = self.lowered(text);
        self.rev_cache.with(rev, |cache| {
            match_spans(
                &text,
                max,
                fwd.is_always_start_anchored(),
                |input| fwd.try_search_fwd(input),
                |input| rev.try_search_rev(cache, input),
            )
        })
    }

    /// How many matches [`CompiledRegex::find_spans`] finds in normalized (NFKC) `text` (at
    /// most `max`). When no match can be empty, a match ends where the next search starts, so
    /// the forward DFA counts them alone: no reverse search for their starts.
    #[must_use]
    pub fn count_matches(&self, text: &str, max: usize) -> usize {
        if !self.nonempty || self.holds_dropped(text) {
            return self.find_spans(text, max).len();
        }
        self.count_nonempty(&self.lowered(text), max)
    }

    /// What an entry's text counts toward its term frequency: 0 when the pattern does not
    /// match normalized `text`, else [`CompiledRegex::count_matches`] (at least 1: a match
    /// may be empty, which highlights nothing). One pass over a text that holds no match.
    #[must_use]
    pub fn count_in_text(&self, text: &str, max: usize) -> usize {
        if self.holds_dropped(text) {
            return if self.is_match_text(text) {
                self.find_spans(text, max).len().max(1)
            } else {
                0
            };
        }
        let text = self.lowered(text);
        if self.nonempty && max > 0 {
            self.count_nonempty(&text, max)
        } else if self.run(text.as_bytes()) {
            self.find_spans(&text, max).len().max(1)
        } else {
            0
        }
    }

    /// [`CompiledRegex::count_matches`] of a pattern with no empty match, over `text` as
    /// the dense DFA searches it.
    fn count_nonempty(&self, text: &str, max: usize) -> usize {
        if let Some(simple) = self.simple() {
            return simple.count(text.as_bytes(), max);
        }
        // The browser build searches (230 bytes of .wasm).
        if self.by_terms && text.len() <= WALK_MAX_BYTES && !cfg!(target_arch = "wasm32") {
            self.count_walked(text.as_bytes(), max)
        } else {
            self.count_searched(text, max)
        }
    }

    /// [`CompiledRegex::count_nonempty`] by the DFA's searches, one per match and one past
    /// the last.
    fn count_searched(&self, text: &str, max: usize) -> usize {
        let Some((fwd, _)) = self.dfa() else {
            return 0;
        };
        let mut n = 0;
        let mut at = 0;
        while n < max && at < text.len() {
            match fwd.try_search_fwd(&Input::new(text).range(at..)) {
                Ok(Some(end)) => {
                    n += 1;
                    at = end.offset();
                }
                _ => break,
            }
        }
        n
    }

    /// [`CompiledRegex::count_searched`] for a pattern with no assertion (every start state
    /// of the DFA is `start`, wherever a search begins) and no empty match, walking the DFA
    /// here: each search's setup cost more than a term's bytes. As the DFA's leftmost-first
    /// search: a match ends where a match state is entered (one byte late) or at the end, the
    /// last before the dead state is the match, the next search starts at its end, and a quit
    /// state ends the count.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    fn count_walked(&self, hay: &[u8], max: usize) -> usize {
        let Some((dfa, start)) = self.dfa() else {
            return 0;
        };
        let mut n = 0;
        let mut at = 0;
        while n < max && at < hay.len() {
            let mut s = *start;
            let mut end = None;
            let mut i = at;
            loop {
                let Some(&b) = hay.get(i) else {
                    if dfa.is_match_state(dfa.next_eoi_state(s)) {
                        end = Some(i);
                    }
                    break;
                };
                s = dfa.next_state(s, b);
                if dfa.is_special_state(s) {
                    if dfa.is_match_state(s) {
                        end = Some(i);
                    } else if dfa.is_dead_state(s) {
                        break;
                    } else if dfa.is_quit_state(s) {
                        return n;
                    }
                }
                i += 1;
            }
            match end {
                // Past `at`: no match is empty.
                Some(e) if e > at => {
                    n += 1;
                    at = e;
                }
                _ => break,
            }
        }
        n
    }

    /// Whether the matches in ASCII text are those in its terms: no match is empty or holds
    /// a character that is not a term character, so each lies inside one run of term
    /// characters (a token), and the pattern has no assertion (`^`, `$`, `\b`, ...) that
    /// could look past the run. Leftmost-first matching then finds in each run what it finds
    /// in the run alone, and, the pattern ignoring case, what it finds in the run's term (in
    /// ASCII the same characters lowered); so [`CompiledRegex::count_matches`] over the text
    /// is the sum, over its terms, of the term's frequency times its own count.
    #[must_use]
    pub fn counts_by_terms(&self) -> bool {
        self.by_terms
    }

    /// Whether some match of the pattern may contain a character that is not a term
    /// character (letters, numbers, marks, `_`), i.e. cross a token boundary. When true, a
    /// cold vocabulary can miss a match that the text has: cold coverage is unprovable.
    /// Conservative: true when unsure.
    #[must_use]
    pub fn can_span_tokens(&self) -> bool {
        self.spans_tokens
    }

    /// Whether the pattern holds a start or end anchor (`^`, `$`, `\A`, `\z`, line anchors):
    /// over text they anchor to the text (or a line), over a vocabulary to the term, so a
    /// cold session's matching term does not prove a match in its text.
    #[must_use]
    pub fn has_anchor(&self) -> bool {
        self.anchored
    }

    /// Whether [`CompiledRegex::matching_terms`] walks the FST (the pattern is anchored at
    /// the term start with a non-empty literal prefix) rather than scanning the term list.
    #[must_use]
    pub fn walks_fst(&self) -> bool {
        self.fst_prefix
    }

    /// An [`fst::Automaton`] matching the terms that contain a match (see module docs);
    /// `None` for a pattern matched without an automaton (a literal and a run of one class,
    /// which has no anchor, so [`CompiledRegex::walks_fst`] is false).
    #[must_use]
    pub fn term_automaton(&self) -> Option<TermAutomaton<'_>> {
        self.dfa()
            .map(|(dfa, start)| TermAutomaton { dfa, start: *start })
    }

    /// Up to `limit` terms of `set`, in order, that contain a match. Ask for `limit + 1` to
    /// learn whether more exist.
    #[must_use]
    pub fn matching_terms<D: AsRef<[u8]>>(&self, set: &fst::Set<D>, limit: usize) -> Vec<String> {
        self.matching_terms_budgeted(set, limit, &mut HaystackBudget::unlimited())
    }

    /// [`CompiledRegex::matching_terms`] charging every scanned term's bytes to `budget`;
    /// stops when the budget is exhausted (check [`HaystackBudget::is_exhausted`]).
    #[must_use]
    pub fn matching_terms_budgeted<D: AsRef<[u8]>>(
        &self,
        set: &fst::Set<D>,
        limit: usize,
        budget: &mut HaystackBudget,
    ) -> Vec<String> {
        use fst::{IntoStreamer, Streamer};
        let mut out = Vec::new();
        if limit == 0 {
            return out;
        }
        if let Some(automaton) = self.fst_prefix.then(|| self.term_automaton()).flatten() {
            let mut stream = set.search(automaton).into_stream();
            while let Some(k) = stream.next() {
                if !budget.charge(k.len()) {
                    break;
                }
                out.push(String::from_utf8_lossy(k).into_owned());
                if out.len() >= limit {
                    break;
                }
            }
        } else {
            let mut stream = set.stream();
            while let Some(k) = stream.next() {
                if !budget.charge(k.len()) {
                    break;
                }
                if self.run(k) {
                    out.push(String::from_utf8_lossy(k).into_owned());
                    if out.len() >= limit {
                        break;
                    }
                }
            }
        }
        out
    }
}

impl CompiledRegex {
    /// Up to `limit` terms of a flat term list, in the list's order, that contain a match:
    /// one DFA pass per term (see the module docs for when this beats an FST walk).
    #[must_use]
    pub fn matching_terms_in_list<'t, I>(
        &self,
        terms: I,
        limit: usize,
        budget: &mut HaystackBudget,
    ) -> Vec<&'t str>
    where
        I: IntoIterator<Item = &'t str>,
    {
        let mut out = Vec::new();
        if limit == 0 {
            return out;
        }
        for t in terms {
            if !budget.charge(t.len()) {
                break;
            }
            if self.run(t.as_bytes()) {
                out.push(t);
                if out.len() >= limit {
                    break;
                }
            }
        }
        out
    }
}

/// An [`fst::Automaton`] over the forward DFA: a key matches when the pattern matches
/// anywhere in it.
///
/// regex-automata reports a match one byte late (a match state means "a match ended before
/// this byte"), so the end of a key is decided by the DFA's end-of-input transition in
/// [`fst::Automaton::is_match`] and [`fst::Automaton::accept_eof`]. A match inside a key is
/// sticky: once seen, every extension matches too, since "anywhere" needs no more input.
#[derive(Debug, Clone, Copy)]
pub struct TermAutomaton<'a> {
    dfa: &'a dense::DFA<Vec<u32>>,
    start: StateID,
}

/// The state of a [`TermAutomaton`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TermState {
    id: StateID,
    matched: bool,
}

impl fst::Automaton for TermAutomaton<'_> {
    type State = TermState;

    fn start(&self) -> TermState {
        TermState {
            id: self.start,
            matched: false,
        }
    }

    fn is_match(&self, s: &TermState) -> bool {
        s.matched || self.dfa.is_match_state(self.dfa.next_eoi_state(s.id))
    }

    fn can_match(&self, s: &TermState) -> bool {
        s.matched || !(self.dfa.is_dead_state(s.id) || self.dfa.is_quit_state(s.id))
    }

    fn will_always_match(&self, s: &TermState) -> bool {
        s.matched
    }

    fn accept(&self, s: &TermState, byte: u8) -> TermState {
        if s.matched {
            return *s;
        }
        // As `CompiledRegex::run`: the DFA may have no capitals.
        let id = self.dfa.next_state(s.id, byte.to_ascii_lowercase());
        TermState {
            id,
            matched: self.dfa.is_match_state(id),
        }
    }

    fn accept_eof(&self, s: &TermState) -> Option<TermState> {
        if s.matched {
            return Some(*s);
        }
        let id = self.dfa.next_eoi_state(s.id);
        Some(TermState {
            id,
            matched: self.dfa.is_match_state(id),
        })
    }
}

/// Haystacks shorter than this are searched for a literal by its first byte
/// ([`find_literal`]).
const SHORT_HAYSTACK: usize = 64;

/// Where `f`'s needle first occurs in `hay`, as [`memchr::memmem::Finder::find`]. A haystack
/// as short as a term is searched for the needle's first byte and compared there, which
/// costs less than memmem's searcher (Rabin-Karp below its vector search's minimum) on such
/// haystacks: a negative regex's recall call 172k -> 164k instructions, and 147k with plain
/// loops for the byte and the compare. The browser build keeps memmem (460 bytes of .wasm).
pub(crate) fn find_literal(f: &memchr::memmem::Finder<'_>, hay: &[u8]) -> Option<usize> {
    if hay.len() >= SHORT_HAYSTACK || cfg!(target_arch = "wasm32") {
        return f.find(hay);
    }
    let Some((&first, rest)) = f.needle().split_first() else {
        return Some(0);
    };
    // `memchr`'s dispatch and `memcmp`'s call cost more than the few bytes they would read.
    hay.iter()
        .enumerate()
        .find(|&(start, &b)| {
            b == first
                && hay.get(start + 1..).is_some_and(|t| {
                    t.len() >= rest.len() && t.iter().zip(rest).all(|(x, y)| x == y)
                })
        })
        .map(|(start, _)| start)
}

/// `pattern` parsed case-insensitively, every part closed under case folding and its word
/// boundaries made ASCII: the pattern as parsed, before what the automata leave out is taken
/// out.
///
/// # Errors
///
/// `invalid_regex` for a syntax error or an unsupported feature.
fn folded(pattern: &str) -> Result<Hir, Error> {
    let syn = syntax::Config::new().case_insensitive(true);
    let hir = syntax::parse_with(pattern, &syn)
        .map_err(|e| Error::new(ErrorCode::InvalidRegex, format!("invalid regex: {e}")))?;
    // Matching ignores case whatever the pattern's flags say: terms are lowered, so a part
    // that `(?-i)` makes case-sensitive would match text that no term matches.
    let hir = fold_case(&hir).unwrap_or(hir);
    Ok(if hir.properties().look_set().contains_word_unicode() {
        ascii_word_boundaries(&hir)
    } else {
        hir
    })
}

/// The forward dense DFA of `hir` (unanchored, leftmost-first) under `limits`, and its
/// start state.
///
/// # Errors
///
/// `regex_too_large` when the NFA or DFA would exceed a limit; `invalid_regex` when
/// regex-automata cannot build it.
fn forward_dfa(hir: &Hir, limits: &RegexLimits) -> Result<(dense::DFA<Vec<u32>>, StateID), Error> {
    let too_large = |what: &str| {
        Error::new(
            ErrorCode::RegexTooLarge,
            format!("regex is too large or too complex: its {what} exceeds the size limit"),
        )
        .with_details(json!({
            "maxNfaBytes": limits.max_nfa_bytes,
            "maxDfaBytes": limits.max_dfa_bytes,
            "maxDeterminizeBytes": limits.max_determinize_bytes,
        }))
    };
    let nfa_err = |e: thompson::BuildError| {
        if e.size_limit().is_some() {
            too_large("NFA")
        } else {
            Error::new(ErrorCode::InvalidRegex, format!("unsupported regex: {e}"))
        }
    };
    let dfa_err = |e: dense::BuildError| {
        if e.is_size_limit_exceeded() {
            too_large("DFA")
        } else {
            Error::new(ErrorCode::InvalidRegex, format!("unsupported regex: {e}"))
        }
    };

    let tcfg = thompson::Config::new()
        .nfa_size_limit(Some(limits.max_nfa_bytes))
        .which_captures(WhichCaptures::None)
        .shrink(false);
    let dcfg = dense::Config::new()
        .match_kind(MatchKind::LeftmostFirst)
        .start_kind(StartKind::Unanchored)
        .minimize(false)
        .dfa_size_limit(Some(limits.max_dfa_bytes))
        .determinize_size_limit(Some(limits.max_determinize_bytes));

    let fwd_nfa = thompson::Compiler::new()
        .configure(tcfg)
        .build_from_hir(hir)
        .map_err(nfa_err)?;
    let fwd = dense::Builder::new()
        .configure(dcfg)
        .build_from_nfa(&fwd_nfa)
        .map_err(dfa_err)?;
    drop(fwd_nfa);

    let start = fwd
        .start_state(&start::Config::new().anchored(Anchored::No))
        .map_err(|e| Error::new(ErrorCode::InvalidRegex, format!("unsupported regex: {e}")))?;
    Ok((fwd, start))
}

/// A lazy DFA of `hir` (reversed for finding a match's start: anchored, every match kind)
/// under the NFA limit and a cache of at most the DFA limit; `None` when it cannot be built.
fn lazy_dfa(hir: &Hir, limits: &RegexLimits, reverse: bool) -> Option<hybrid::dfa::DFA> {
    let nfa = thompson::Compiler::new()
        .configure(
            thompson::Config::new()
                .nfa_size_limit(Some(limits.max_nfa_bytes))
                .which_captures(WhichCaptures::None)
                .reverse(reverse)
                .shrink(false),
        )
        .build_from_hir(hir)
        .ok()?;
    hybrid::dfa::Builder::new()
        .configure(
            hybrid::dfa::Config::new()
                .match_kind(if reverse {
                    MatchKind::All
                } else {
                    MatchKind::LeftmostFirst
                })
                .prefilter(None)
                .specialize_start_states(false)
                .cache_capacity(limits.max_dfa_bytes),
        )
        .build_from_nfa(nfa)
        .ok()
}

/// Successive leftmost-first, non-empty, non-overlapping matches in `text` (at most `max`):
/// each one's end by `fwd`, its start by an anchored reverse search `rev` from that end.
fn match_spans(
    text: &str,
    max: usize,
    always_anchored: bool,
    mut fwd: impl FnMut(&Input<'_>) -> Result<Option<HalfMatch>, MatchError>,
    mut rev: impl FnMut(&Input<'_>) -> Result<Option<HalfMatch>, MatchError>,
) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let it = Searcher::new(Input::new(text)).into_matches_iter(|input| {
        let Some(end) = fwd(input)? else {
            return Ok(None);
        };
        if input.start() == end.offset() || always_anchored {
            // An empty match at the search start, or one that can only start there.
            return Ok(Some(Match::new(end.pattern(), input.start()..end.offset())));
        }
        let back = input
            .clone()
            .span(input.start()..end.offset())
            .anchored(Anchored::Yes)
            .earliest(false);
        Ok(rev(&back)?.map(|start| Match::new(end.pattern(), start.offset()..end.offset())))
    });
    for m in it {
        let Ok(m) = m else { break };
        if m.is_empty() {
            continue;
        }
        out.push(m.range());
        if out.len() >= max {
            break;
        }
    }
    out
}

/// Longest haystack [`CompiledRegex::count_nonempty`] walks the DFA over itself (a term, a
/// short text); a longer one is searched, where a state with few exits skips bytes by a vector
/// search.
const WALK_MAX_BYTES: usize = 64;

/// Characters left out of the dense DFA up to which [`CompiledRegex::holds_dropped`] looks
/// for each with a vector search rather than decoding the text.
const MAX_DROPPED_SEARCHES: usize = 4;

/// Most non-ASCII code points a class may hold for [`drop_unnormalized`] to look at each.
const MAX_CLASS_SCAN: u32 = 256;

/// `hir` without the code points that NFKC text never holds (Quick_Check NFKC = No, such as
/// U+017F and U+212A, which case folding adds to `s` and `k`), taken out of each class of at
/// most [`MAX_CLASS_SCAN`] non-ASCII code points when that leaves the class no more ranges;
/// `None` when no class changes; else the narrowed pattern and the code points taken out
/// (ascending). On text without them (normalized text, the lowercased terms of a
/// vocabulary, most other text) both match the same.
fn drop_unnormalized(hir: &Hir) -> Option<(Hir, Vec<char>)> {
    let mut dropped = Vec::new();
    let out = rewrite_leaves(hir, &mut |leaf| match leaf.kind() {
        HirKind::Class(Class::Unicode(c)) => {
            narrow_class(c, &mut dropped).map(|n| Hir::class(Class::Unicode(n)))
        }
        _ => None,
    })?;
    (!dropped.is_empty()).then_some((out, dropped))
}

fn unnormalized(c: char) -> bool {
    is_nfkc_quick(std::iter::once(c)) == IsNormalized::No
}

/// `c` without the code points NFKC text never holds, which are added to `dropped`; `None`
/// (and nothing added) when there are none or the class is too large to look at.
fn narrow_class(c: &ClassUnicode, dropped: &mut Vec<char>) -> Option<ClassUnicode> {
    let wide: u32 = c
        .ranges()
        .iter()
        .filter(|r| !r.end().is_ascii())
        .map(|r| u32::from(r.end()) - u32::from(r.start().max('\u{80}')) + 1)
        .sum();
    if wide > MAX_CLASS_SCAN {
        return None;
    }
    let mut ranges = Vec::new();
    let mut out = Vec::new();
    for r in c.ranges() {
        let mut open: Option<(char, char)> = None;
        for ch in r.start()..=r.end() {
            if !ch.is_ascii() && unnormalized(ch) {
                out.push(ch);
                ranges.extend(open.take().map(|(a, b)| ClassUnicodeRange::new(a, b)));
            } else {
                open = Some(open.map_or((ch, ch), |(a, _)| (a, ch)));
            }
        }
        ranges.extend(open.map(|(a, b)| ClassUnicodeRange::new(a, b)));
    }
    let narrow = ClassUnicode::new(ranges);
    if out.is_empty() || narrow.ranges().len() > c.ranges().len() {
        return None;
    }
    // Kept ascending and each once by inserting (no sort of its own in the browser build).
    for ch in out {
        if let Err(at) = dropped.binary_search(&ch) {
            dropped.insert(at, ch);
        }
    }
    Some(narrow)
}

/// `hir` with `f` applied to each of its children (a repetition's, a capture's, a
/// concatenation's or an alternation's); a leaf as it is.
fn with_children(hir: &Hir, f: &mut impl FnMut(&Hir) -> Hir) -> Hir {
    match hir.kind() {
        HirKind::Empty | HirKind::Literal(_) | HirKind::Class(_) | HirKind::Look(_) => hir.clone(),
        HirKind::Repetition(r) => Hir::repetition(Repetition {
            min: r.min,
            max: r.max,
            greedy: r.greedy,
            sub: Box::new(f(&r.sub)),
        }),
        HirKind::Capture(c) => Hir::capture(Capture {
            index: c.index,
            name: c.name.clone(),
            sub: Box::new(f(&c.sub)),
        }),
        HirKind::Concat(v) => Hir::concat(v.iter().map(&mut *f).collect()),
        HirKind::Alternation(v) => Hir::alternation(v.iter().map(f).collect()),
    }
}

/// `hir` with `leaf` applied to each of its literals and classes (`None`: that leaf is
/// unchanged); `None` when no leaf changes. Only the nodes above a changed leaf are rebuilt.
fn rewrite_leaves(hir: &Hir, leaf: &mut dyn FnMut(&Hir) -> Option<Hir>) -> Option<Hir> {
    fn many(v: &[Hir], leaf: &mut dyn FnMut(&Hir) -> Option<Hir>) -> Option<Vec<Hir>> {
        let mut out: Option<Vec<Hir>> = None;
        for (k, h) in v.iter().enumerate() {
            match (rewrite_leaves(h, leaf), &mut out) {
                (Some(new), Some(out)) => out.push(new),
                (Some(new), None) => {
                    let mut start = v[..k].to_vec();
                    start.push(new);
                    out = Some(start);
                }
                (None, Some(out)) => out.push(h.clone()),
                (None, None) => {}
            }
        }
        out
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => None,
        HirKind::Literal(_) | HirKind::Class(_) => leaf(hir),
        HirKind::Repetition(r) => rewrite_leaves(&r.sub, leaf).map(|sub| {
            Hir::repetition(Repetition {
                min: r.min,
                max: r.max,
                greedy: r.greedy,
                sub: Box::new(sub),
            })
        }),
        HirKind::Capture(c) => rewrite_leaves(&c.sub, leaf).map(|sub| {
            Hir::capture(Capture {
                index: c.index,
                name: c.name.clone(),
                sub: Box::new(sub),
            })
        }),
        HirKind::Concat(v) => many(v, leaf).map(Hir::concat),
        HirKind::Alternation(v) => many(v, leaf).map(Hir::alternation),
    }
}

/// `hir` with every literal and class closed under simple case folding (a literal
/// character with other cases becomes the class of them); `None` when nothing changes, as
/// for any pattern parsed case-insensitively without `(?-i)`.
fn fold_case(hir: &Hir) -> Option<Hir> {
    fn literal(bytes: &[u8]) -> Option<Hir> {
        let s = std::str::from_utf8(bytes).ok()?;
        let mut changed = false;
        let parts = s
            .chars()
            .map(|c| {
                let one = ClassUnicode::new([ClassUnicodeRange::new(c, c)]);
                let mut folded = one.clone();
                if folded.try_case_fold_simple().is_ok() && folded != one {
                    changed = true;
                    Hir::class(Class::Unicode(folded))
                } else {
                    Hir::literal(c.encode_utf8(&mut [0; 4]).as_bytes().to_vec())
                }
            })
            .collect();
        changed.then(|| Hir::concat(parts))
    }
    rewrite_leaves(hir, &mut |leaf| match leaf.kind() {
        HirKind::Literal(l) => literal(&l.0),
        HirKind::Class(Class::Unicode(c)) => {
            let mut folded = c.clone();
            (folded.try_case_fold_simple().is_ok() && folded != *c)
                .then(|| Hir::class(Class::Unicode(folded)))
        }
        HirKind::Class(Class::Bytes(c)) => {
            let mut folded = c.clone();
            folded.case_fold_simple();
            (folded != *c).then(|| Hir::class(Class::Bytes(folded)))
        }
        _ => None,
    })
}

/// `text` with its ASCII letters lowered (every byte where it was), borrowed when it has no
/// capital.
fn ascii_lowered(text: &str) -> Cow<'_, str> {
    // Many bytes at a time (a fold the compiler runs as vector code), stopping at the first
    // block with a capital.
    let capital = |b: &[u8]| b.iter().fold(false, |any, c| any | c.is_ascii_uppercase());
    if text.as_bytes().chunks(64).any(capital) {
        Cow::Owned(text.to_ascii_lowercase())
    } else {
        Cow::Borrowed(text)
    }
}

/// `hir` without the ASCII capitals `A`-`Z` of its classes, when each class holding one also
/// holds its lowercase and no literal holds one (as [`fold_case`] leaves every pattern): on
/// text whose ASCII letters are lowercase both match the same. `None` when no class changes
/// or a capital stands alone.
fn drop_ascii_capitals(hir: &Hir) -> Option<Hir> {
    /// The letters of `A`-`Z` (bit 0: `A`) and of `a`-`z` (bit 0: `a`) in the ranges.
    fn letters(ranges: impl Iterator<Item = (u32, u32)>) -> (u32, u32) {
        let span = |(start, end): (u32, u32), base: u32| {
            let (lo, hi) = (start.max(base), end.min(base + 25));
            if lo > hi {
                0
            } else {
                ((1u64 << (hi - base + 1)) - (1u64 << (lo - base))) as u32
            }
        };
        ranges.fold((0, 0), |(caps, lows), r| {
            (
                caps | span(r, u32::from(b'A')),
                lows | span(r, u32::from(b'a')),
            )
        })
    }
    let mut closed = true;
    let out = rewrite_leaves(hir, &mut |leaf| {
        let (caps, lows) = match leaf.kind() {
            HirKind::Literal(l) => {
                closed &= !l.0.iter().any(u8::is_ascii_uppercase);
                return None;
            }
            HirKind::Class(Class::Unicode(c)) => letters(
                c.ranges()
                    .iter()
                    .map(|r| (u32::from(r.start()), u32::from(r.end()))),
            ),
            HirKind::Class(Class::Bytes(c)) => letters(
                c.ranges()
                    .iter()
                    .map(|r| (u32::from(r.start()), u32::from(r.end()))),
            ),
            _ => return None,
        };
        if caps == 0 {
            return None;
        }
        if caps & !lows != 0 {
            // A capital without its lowercase.
            closed = false;
            return None;
        }
        Some(match leaf.kind() {
            HirKind::Class(Class::Unicode(c)) => {
                let mut narrow = c.clone();
                narrow.difference(&ClassUnicode::new([ClassUnicodeRange::new('A', 'Z')]));
                Hir::class(Class::Unicode(narrow))
            }
            HirKind::Class(Class::Bytes(c)) => {
                let mut narrow = c.clone();
                narrow.difference(&ClassBytes::new([ClassBytesRange::new(b'A', b'Z')]));
                Hir::class(Class::Bytes(narrow))
            }
            _ => return None,
        })
    });
    out.filter(|_| closed)
}

/// Rewrites Unicode word-boundary assertions to their ASCII forms.
fn ascii_word_boundaries(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Look(l) => Hir::look(match l {
            Look::WordUnicode => Look::WordAscii,
            Look::WordUnicodeNegate => Look::WordAsciiNegate,
            Look::WordStartUnicode => Look::WordStartAscii,
            Look::WordEndUnicode => Look::WordEndAscii,
            Look::WordStartHalfUnicode => Look::WordStartHalfAscii,
            Look::WordEndHalfUnicode => Look::WordEndHalfAscii,
            other => *other,
        }),
        _ => with_children(hir, &mut ascii_word_boundaries),
    }
}

/// Literals most telling of a match in a vocabulary term: every match begins with one of the
/// prefix set or ends with one of the suffix set (`regex_syntax`'s extraction from the
/// pattern the dense automaton runs: without the characters NFKC text never holds, and
/// without ASCII capitals when it can), whichever has the longer shortest literal. A term's
/// ASCII letters are lowercase (the tokenizer lowers them), so a variant a term holds has
/// them lowercase already: each literal is kept with its ASCII letters lowered, once. Empty
/// when neither set is finite, either holds the empty literal, or more than
/// [`MAX_REQUIRED_LITERALS`] remain.
fn required_literals(hir: &Hir) -> Vec<Vec<u8>> {
    let mut best: Option<Vec<Vec<u8>>> = None;
    for kind in [ExtractKind::Prefix, ExtractKind::Suffix] {
        // A class of more than a few characters ends a literal instead of multiplying it
        // (`zqpfx[0-9]` is the one literal `zqpfx`, not ten).
        let seq = Extractor::new()
            .kind(kind)
            .limit_class(REQUIRED_CLASS_LIMIT)
            .extract(hir);
        let Some(lits) = seq.literals() else { continue };
        let mut set: Vec<Vec<u8>> = lits
            .iter()
            .map(|l| l.as_bytes().to_ascii_lowercase())
            .collect();
        set.sort_unstable();
        set.dedup();
        let shortest = set.iter().map(Vec::len).min().unwrap_or(0);
        if shortest == 0 || set.len() > MAX_REQUIRED_LITERALS {
            continue;
        }
        let better = best.as_ref().is_none_or(|b| {
            let b_shortest = b.iter().map(Vec::len).min().unwrap_or(0);
            (shortest, std::cmp::Reverse(set.len())) > (b_shortest, std::cmp::Reverse(b.len()))
        });
        if better {
            best = Some(set);
        }
    }
    best.unwrap_or_default()
}

/// Literals past which [`required_literals`] gives up (each is one more search per term).
const MAX_REQUIRED_LITERALS: usize = 8;

/// The largest class [`required_literals`] expands into one literal per character.
const REQUIRED_CLASS_LIMIT: usize = 4;

/// Anchored at the start of every match, with a non-empty literal prefix in every branch.
fn has_anchored_literal_prefix(hir: &Hir) -> bool {
    let props = hir.properties();
    if !props.look_set_prefix().contains(Look::Start) {
        return false;
    }
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(hir);
    seq.is_finite() && seq.min_literal_len().is_some_and(|n| n > 0)
}

/// The tokenizer's term characters (kept identical to `sessiondex_core::tokenize`).
fn is_term_char(c: char) -> bool {
    c == '_'
        || c.is_alphanumeric()
        || (!c.is_ascii() && unicode_normalization::char::is_combining_mark(c))
}

/// Characters a class check may inspect before answering "may span" conservatively.
const CLASS_CHECK_BUDGET: u32 = 2_000_000;

fn can_span_tokens(hir: &Hir) -> bool {
    let mut budget = CLASS_CHECK_BUDGET;
    spans(hir, &mut budget)
}

fn spans(hir: &Hir, budget: &mut u32) -> bool {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => false,
        HirKind::Literal(l) => match std::str::from_utf8(&l.0) {
            Ok(s) => s.chars().any(|c| !is_term_char(c)),
            Err(_) => true,
        },
        HirKind::Class(Class::Unicode(cls)) => {
            for r in cls.ranges() {
                for cp in u32::from(r.start())..=u32::from(r.end()) {
                    if *budget == 0 {
                        return true;
                    }
                    *budget -= 1;
                    if char::from_u32(cp).is_some_and(|c| !is_term_char(c)) {
                        return true;
                    }
                }
            }
            false
        }
        HirKind::Class(Class::Bytes(cls)) => cls
            .ranges()
            .iter()
            .any(|r| (r.start()..=r.end()).any(|b| !b.is_ascii() || !is_term_char(char::from(b)))),
        HirKind::Repetition(r) => r.max != Some(0) && spans(&r.sub, budget),
        HirKind::Capture(c) => spans(&c.sub, budget),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(|h| spans(h, budget)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sessiondex_core::tokenize::nfkc;
    use std::time::Instant;

    fn re(p: &str) -> CompiledRegex {
        CompiledRegex::new(p, &RegexLimits::default()).unwrap()
    }

    thread_local! {
        /// Compile with the ASCII capitals kept (the automata search the text as given).
        pub(super) static KEEP_CAPITALS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// Compile every pattern to the dense DFA (no [`Simple`] form).
        pub(super) static DFA_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// [`find_literal`] finds what memmem finds, in haystacks short and long, where the
    /// needle's first byte occurs without the rest, and with an empty needle.
    #[test]
    fn literal_search_is_memmem() {
        let mut next = crate::test_util::xorshift(0x51_7cc1_b727_220a);
        let pieces = ["a", "b", "ab", "aab", "c", "é", "x"];
        for _ in 0..20_000 {
            let word = |next: &mut dyn FnMut(u64) -> u64, n: u64| -> Vec<u8> {
                let len = next(n);
                (0..len)
                    .flat_map(|_| pieces[next(pieces.len() as u64) as usize].bytes())
                    .collect()
            };
            let needle = word(&mut next, 4);
            let hay = word(&mut next, 50);
            let f = memchr::memmem::Finder::new(&needle);
            assert_eq!(
                find_literal(&f, &hay),
                f.find(&hay),
                "{needle:?} in {hay:?}"
            );
        }
    }

    /// `a` and `b` find the same in `t`: whether it matches, how many times, what that
    /// counts toward a term frequency, and where.
    fn assert_same_in_text(a: &CompiledRegex, b: &CompiledRegex, t: &str) {
        let p = a.pattern();
        assert_eq!(a.is_match_text(t), b.is_match_text(t), "{p} {t:?}");
        assert_eq!(a.count_matches(t, 64), b.count_matches(t, 64), "{p} {t:?}");
        assert_eq!(a.count_in_text(t, 64), b.count_in_text(t, 64), "{p} {t:?}");
        assert_eq!(a.find_spans(t, 64), b.find_spans(t, 64), "{p} {t:?}");
    }

    /// Patterns of the simple form: a literal and a run of one class.
    const SIMPLE: [&str; 11] = [
        "zqpfx[0-9]+",
        "zqpre[a-z]+",
        "aa[a-c]+",
        "ab[a-b]{2,}",
        "a[0-9]{2,3}",
        "x[0-9]{3}",
        "12[0-9]+",
        "K_[k-l]+",
        "a-[b_]{1,16}",
        "aba[0-9]+",
        "SK[A-Z]+",
    ];

    /// A pattern taken as a literal and a run of one class answers as its dense DFA: matches
    /// (text and terms), counts, spans and matching terms, over text where the literal's
    /// occurrences overlap, runs are shorter, as long as and longer than the repetition's
    /// bounds, letters are capitals, and non-ASCII characters and U+212A (Kelvin, which
    /// case folding adds to `k`) sit beside them.
    #[test]
    fn simple_patterns_answer_as_their_dfa() {
        let simple = SIMPLE;
        let not_simple = [
            "[a-z]+zqsfx",
            "a[é]+",
            "ab\\d+",
            "^ab[0-9]+",
            "ab[0-9]+?",
            "ab[0-9]*",
            "ab[0-9]{17,}",
            "ab",
        ];
        for p in not_simple {
            assert!(re(p).simple.is_none(), "{p}");
        }
        let tight = RegexLimits {
            max_dfa_bytes: 64 << 10,
            ..RegexLimits::default()
        };
        let r = CompiledRegex::new("zqpfx[0-9]+", &tight).unwrap();
        assert!(r.simple.is_none() && r.fwd.is_some());
        // The largest form taken has a DFA within the smallest limits it is taken under, so
        // no pattern the DFA's limits would refuse is taken instead.
        let least = RegexLimits {
            max_nfa_bytes: 256 << 10,
            max_dfa_bytes: 256 << 10,
            max_determinize_bytes: 256 << 10,
            ..RegexLimits::default()
        };
        let big = r"0123456789abcdefghijklmnopqrstuv[!-@\[-`{-~a-z]{16}";
        assert!(CompiledRegex::new(big, &least).unwrap().simple.is_some());
        assert!(CompiledRegex::new(&big.replace("{16}", "{17}"), &least)
            .unwrap()
            .simple
            .is_none());
        DFA_ONLY.with(|c| c.set(true));
        let r = CompiledRegex::new(big, &least).unwrap();
        DFA_ONLY.with(|c| c.set(false));
        assert!(r.memory_usage() < 256 << 10, "{}", r.memory_usage());
        let alphabet = [
            "a", "a", "b", "c", "k", "l", "x", "z", "q", "p", "f", "r", "e", "1", "2", "0", "9",
            "A", "B", "K", "Z", "Q", "_", "-", " ", "é", "\u{212a}", "zqpfx", "zqpre", "aa", "ab",
            "aba",
        ];
        let mut next = crate::test_util::xorshift(0x2545_f491_4f6c_dd1d);
        // Up to 63 pieces: texts both sides of `SHORT_HAYSTACK`, searched differently.
        let texts: Vec<String> = (0..3000)
            .map(|_| {
                let n = next(64);
                (0..n)
                    .map(|_| alphabet[next(alphabet.len() as u64) as usize])
                    .collect()
            })
            .collect();
        let terms: Vec<String> = {
            let mut t: Vec<String> = texts.iter().map(|t| nfkc(t).to_lowercase()).collect();
            t.sort();
            t.dedup();
            t
        };
        let vocab = fst::Set::from_iter(terms.iter()).unwrap();
        for p in simple {
            let fast = re(p);
            DFA_ONLY.with(|c| c.set(true));
            let dfa = re(p);
            DFA_ONLY.with(|c| c.set(false));
            assert!(fast.simple.is_some() && fast.fwd.is_none(), "{p}");
            assert!(dfa.simple.is_none(), "{p}");
            for t in &texts {
                assert_same_in_text(&fast, &dfa, t);
                assert_eq!(
                    fast.count_in_text(t, 3),
                    dfa.count_in_text(t, 3),
                    "{p} {t:?}"
                );
                assert_eq!(fast.find_spans(t, 1), dfa.find_spans(t, 1), "{p} {t:?}");
                let n = nfkc(t);
                assert_eq!(
                    fast.count_matches(&n, 64),
                    dfa.count_matches(&n, 64),
                    "{p} {n:?}"
                );
                assert_eq!(
                    fast.is_match_term(t.as_bytes()),
                    dfa.is_match_term(t.as_bytes()),
                    "{p} {t:?}"
                );
            }
            assert_eq!(
                fast.matching_terms(&vocab, usize::MAX),
                dfa.matching_terms(&vocab, usize::MAX),
                "{p}"
            );
            let mut budget = HaystackBudget::unlimited();
            assert_eq!(
                fast.matching_terms_in_list(terms.iter().map(String::as_str), 50, &mut budget),
                dfa.matching_terms_in_list(terms.iter().map(String::as_str), 50, &mut budget),
                "{p}"
            );
            assert!(fast.term_automaton().is_none() && !fast.walks_fst(), "{p}");
        }
    }

    /// A pattern read from its text ([`CompiledRegex::direct`]) compiles to what the parser's
    /// path makes of it: the same pattern for the automata, the same pattern as parsed, the
    /// same code points left out, literals, simple form and flags. The patterns are drawn
    /// from pieces in and out of the grammar read (capitals, `k` and `s`, whose case folding
    /// adds a code point, classes of one character, reversed ranges, lazy and open bounds),
    /// so many are read and many are not.
    #[test]
    fn direct_patterns_compile_as_parsed() {
        let limits = RegexLimits::default();
        let same = |p: &str, d: &CompiledRegex, r: &CompiledRegex| {
            let needles = |c: &CompiledRegex| -> Vec<Vec<u8>> {
                c.required.iter().map(|f| f.needle().to_vec()).collect()
            };
            assert_eq!(d.hir, r.hir, "{p}");
            assert_eq!(d.dropped, r.dropped, "{p}");
            let full =
                |c: &CompiledRegex| c.full_hir.get_or_init(|| folded(&c.pattern).ok()).clone();
            assert_eq!(full(d), full(r), "{p}");
            assert_eq!(needles(d), needles(r), "{p}");
            let flags = |c: &CompiledRegex| {
                (
                    c.fst_prefix,
                    c.nonempty,
                    c.by_terms,
                    c.lowers,
                    c.spans_tokens,
                    c.anchored,
                )
            };
            assert_eq!(flags(d), flags(r), "{p}");
            assert_eq!(
                d.simple.as_ref().map(Simple::parts),
                r.simple.as_ref().map(Simple::parts),
                "{p}"
            );
            assert!(d.fwd.is_none() && r.fwd.is_none(), "{p}");
            assert_eq!(d.pattern, p);
        };
        for p in SIMPLE {
            let d = CompiledRegex::direct(p, &limits).unwrap_or_else(|| panic!("{p}"));
            same(p, &d, &CompiledRegex::parsed(p, &limits, false).unwrap());
        }
        let literal = [
            "a", "k", "s", "z", "Q", "K", "S", "0", "9", "_", "-", "a", "k", "s", "z", "Q", "K",
            "S", "0", "9", "_", "-", "é", " ", ".",
        ];
        let items = [
            "a", "k", "S", "0", "_", "a-c", "A-Z", "j-l", "r-t", "0-9", "a-z", "K", "a", "k", "S",
            "0", "_", "a-c", "A-Z", "j-l", "r-t", "0-9", "a-z", "K", "z-a", "0-z", "^", "-", "é",
        ];
        let quant = [
            "+", "+", "{2}", "{2,}", "{1,3}", "{3,1}", "{0}", "{1}", "{16}", "{17}", "{16,}", "+?",
            "*", "?", "{,2}", "{02}", "", "{1,16}", "{0,3}",
        ];
        let mut next = crate::test_util::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut pick = |set: &[&str]| set[next(set.len() as u64) as usize].to_owned();
        let (mut read, mut total) = (0, 0);
        for _ in 0..20_000 {
            let mut p = String::new();
            let n = 1 + pick(&["0", "1", "2", "5", "9", "2", "33"])
                .parse::<usize>()
                .unwrap();
            for _ in 0..n {
                p += &pick(&literal);
            }
            p += "[";
            for _ in 0..1 + pick(&["0", "1", "2", "3"]).parse::<usize>().unwrap() {
                p += &pick(&items);
            }
            p += &pick(&["]", "]", "]", "]", "]", ""]);
            p += &pick(&quant);
            p += &pick(&["", "", "", "", "", "", "", "a", "]"]);
            total += 1;
            let Some(d) = CompiledRegex::direct(&p, &limits) else {
                continue;
            };
            read += 1;
            let r =
                CompiledRegex::parsed(&p, &limits, false).unwrap_or_else(|e| panic!("{p}: {e}"));
            same(&p, &d, &r);
            assert!(
                CompiledRegex::new(&p, &limits).unwrap().simple.is_some(),
                "{p}"
            );
        }
        assert!(read * 20 > total, "{read} of {total} read");
    }

    /// Automata without ASCII capitals over lowered text answer as those of the pattern with
    /// them over the text as given: matches, counts and spans (at the text's offsets), over
    /// text mixing cases, non-ASCII letters and punctuation; and terms with capitals.
    #[test]
    fn lowered_text_answers_as_the_text() {
        let patterns = [
            "[a-z]+zqsfx",
            "zqpfx[0-9]+",
            "(?-i)ZQ[A-Z]x",
            "t.?out",
            "[^a-z ]+",
            "\\bÉté\\b",
            "[A-Fa-f0-9]{4}",
            "(?m)^error",
            "\\w+_\\d",
            "x*",
            "[[:upper:]]{2}",
            "\\p{Lu}é",
            "(?-u:[A-Z])q",
        ];
        let texts = [
            "Error: ZQpfx12 then zqPFX7 and abcZQSFX",
            "ÉTÉ été Été; TimeOut t-out TOUT",
            "BEEF cafe 12ab CAFÉ_9 Straße STRASSE",
            "line\nERROR here\nerror there",
            "ZQAx zqbX Zqcx — ǅ ǆ Ǆ",
        ];
        let mut lowering = 0;
        for p in patterns {
            let lowered = re(p);
            lowering += usize::from(lowered.lowers);
            KEEP_CAPITALS.with(|c| c.set(true));
            let kept = re(p);
            KEEP_CAPITALS.with(|c| c.set(false));
            assert!(!kept.lowers, "{p}");
            for t in texts {
                assert_same_in_text(&lowered, &kept, t);
                let mut words: Vec<&str> = t
                    .split(|c: char| !c.is_alphanumeric() && c != '_')
                    .collect();
                for w in &words {
                    let term = w.to_lowercase();
                    assert_eq!(
                        lowered.is_match_term(w.as_bytes()),
                        kept.is_match_term(term.as_bytes()),
                        "{p} {w}"
                    );
                }
                // Terms with capitals (no vocabulary holds one) still answer alike in a
                // scan, a walk of an FST and one by one.
                words.sort_unstable();
                words.dedup();
                let set = fst::Set::from_iter(words.iter()).unwrap();
                let scanned = lowered.matching_terms_in_list(
                    words.iter().copied(),
                    usize::MAX,
                    &mut HaystackBudget::unlimited(),
                );
                assert_eq!(lowered.matching_terms(&set, usize::MAX), scanned, "{p} {t}");
                for w in &words {
                    assert_eq!(
                        lowered.is_match_term(w.as_bytes()),
                        scanned.iter().any(|x| x == w),
                        "{p} {w}"
                    );
                }
            }
        }
        assert!(lowering >= patterns.len() - 2, "{lowering}");
        // A capital no class pairs with its lowercase keeps the automata as they are.
        let hir = Hir::concat(vec![Hir::literal(*b"Q"), Hir::literal(*b"x")]);
        assert!(drop_ascii_capitals(&hir).is_none());
        let one_case = Hir::class(Class::Unicode(ClassUnicode::new([ClassUnicodeRange::new(
            'A', 'C',
        )])));
        assert!(drop_ascii_capitals(&one_case).is_none());
        // Capitals met in ranges that hold them partly ([K-c] holds `K`-`Z` and `a`-`c`: not
        // closed; [A-z] holds all) and in a byte class.
        let class = |a: char, b: char| {
            Hir::class(Class::Unicode(ClassUnicode::new([ClassUnicodeRange::new(
                a, b,
            )])))
        };
        assert!(drop_ascii_capitals(&class('K', 'c')).is_none());
        assert_eq!(
            drop_ascii_capitals(&class('A', 'z')),
            Some(Hir::class(Class::Unicode(ClassUnicode::new([
                ClassUnicodeRange::new('[', 'z')
            ]))))
        );
        let bytes = Hir::class(Class::Bytes(ClassBytes::new([
            ClassBytesRange::new(b'Q', b'Q'),
            ClassBytesRange::new(b'q', b'q'),
        ])));
        assert_eq!(
            drop_ascii_capitals(&bytes),
            Some(Hir::class(Class::Bytes(ClassBytes::new([
                ClassBytesRange::new(b'q', b'q')
            ]))))
        );
    }

    /// A rewrite rebuilds only what is above a changed leaf, and gives `None` when no leaf
    /// changes: in `a|(?:[Bb]x)+`, folding case changes only `a`.
    #[test]
    fn rewrites_keep_unchanged_parts() {
        let p = |s: &str| syntax::parse_with(s, &syntax::Config::new()).unwrap();
        let hir = p("a|(?:[Bb]x)+");
        let HirKind::Alternation(parts) = fold_case(&hir).unwrap().into_kind() else {
            panic!("not an alternation");
        };
        assert_eq!(parts[0], p("[Aa]"));
        assert_eq!(parts[1], p("(?:[Bb][Xx])+"));
        assert_eq!(fold_case(&p("(?i)a|(?:[Bb]x)+")), None);
        assert_eq!(drop_unnormalized(&p("a|(?:[Bb]x)+")), None);
        let kept = p("0|(?:9x)+");
        assert_eq!(rewrite_leaves(&kept, &mut |_| None), None);
    }

    /// The literal look before the DFA never turns a term away that the DFA matches: every
    /// lowercase term of up to four characters over a small alphabet (and some longer ones),
    /// against patterns with literals, classes, case variants (`s`/`ſ`, `k`/`K`), anchors,
    /// word boundaries and alternations. And it does turn terms away.
    #[test]
    fn required_literals_keep_every_term_match() {
        let alphabet = ["a", "b", "z", "q", "s", "k", "_", "1", "é"];
        let mut terms = crate::test_util::strings_over(&alphabet, 4);
        terms.extend(["zqpfx12", "xzqsfx", "abzqend", "sk_ab", "éab1", "qqzqzq"].map(String::from));
        let patterns = [
            "ab",
            "a[b1]",
            "[a-z]+zq",
            "zq[0-9]+",
            "^ab",
            "ab$",
            "(ab|zq)",
            r"\bab",
            "é+a",
            "s",
            "k",
            "ſk",
            "a.b",
            "x?ab",
            "(?-i)AB",
            "Sk",
            "z(q|s)+",
            "[a-z]+zqsfx",
            "zqpfx[0-9]+",
            "b{2,}",
            "^(zq|ab)$",
            r"\w+q",
        ];
        let mut turned_away = 0;
        for p in patterns {
            let with = re(p);
            let mut without = with.clone();
            without.required.clear();
            for t in &terms {
                let (a, b) = (
                    with.is_match_term(t.as_bytes()),
                    without.is_match_term(t.as_bytes()),
                );
                assert_eq!(a, b, "{p} on {t:?}");
                turned_away += usize::from(
                    !with.required.is_empty()
                        && !with.required.iter().any(|f| f.find(t.as_bytes()).is_some()),
                );
            }
        }
        assert!(turned_away > 10_000, "{turned_away}");
        assert_eq!(re("zqpfx[0-9]+").required.len(), 1);
        // Terms are NFKC: `ſ` (a case variant of `s`) is `s` in them.
        assert_eq!(re("[a-z]+zqsfx").required.len(), 1);
        assert_eq!(re("gr[ae]y").required.len(), 2, "gray and grey");
        assert!(re("a*").required.is_empty());
        // Not a vocabulary term, but the answer is the DFA's all the same.
        assert!(re("zqpfx[0-9]+").is_match_term(b"ZQPFX12"));
    }

    fn set(terms: &[&str]) -> fst::Set<Vec<u8>> {
        let mut t: Vec<&str> = terms.to_vec();
        t.sort_unstable();
        t.dedup();
        fst::Set::from_iter(t).unwrap()
    }

    #[test]
    fn text_matches_anywhere_case_insensitively() {
        let r = re("time(out)?");
        assert!(r.is_match_text("a connection timeout occurred"));
        assert!(r.is_match_text("TIME"));
        assert!(!r.is_match_text("tim e"));
        assert!(re("^error").is_match_text("Error: x"));
        assert!(!re("^error").is_match_text("an error"));
        assert!(re("done$").is_match_text("all done"));
        assert!(!re("done$").is_match_text("done later"));
        assert!(re("(?m)^b").is_match_text("a\nb"));
        assert!(re("").is_match_text(""));
        assert!(re("x*").is_match_text("abc"));
        assert!(re("é").is_match_text("CAFÉ"));
    }

    #[test]
    fn pathological_pattern_is_refused() {
        let t = Instant::now();
        let e = CompiledRegex::new("(a|b)*a(a|b){20}", &RegexLimits::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::RegexTooLarge);
        eprintln!("refused in {:?}", t.elapsed());
        let e = CompiledRegex::new("(?:a{1000}){1000}", &RegexLimits::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::RegexTooLarge);
        let e = CompiledRegex::new(r"\w{200}", &RegexLimits::default()).unwrap_err();
        assert_eq!(e.code, ErrorCode::RegexTooLarge);
    }

    #[test]
    fn pattern_length_and_syntax_errors() {
        let limits = RegexLimits {
            max_pattern_bytes: 4,
            ..RegexLimits::default()
        };
        let e = CompiledRegex::new("abcde", &limits).unwrap_err();
        assert_eq!(e.code, ErrorCode::RegexPatternTooLong);
        assert_eq!(e.details.unwrap()["limit"], 4);
        assert!(CompiledRegex::new("abcd", &limits).is_ok());
        for bad in ["(abc", "a{2,1}", "[z-a]", "*", r"\p{Nope}"] {
            let e = CompiledRegex::new(bad, &RegexLimits::default()).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidRegex, "{bad}");
        }
    }

    /// `(?-i)` cannot make a part case-sensitive: terms are lowered, so such a part would
    /// match text that no term of it matches (a narrowed or cold search would miss it).
    #[test]
    fn inline_flags_do_not_turn_case_folding_off() {
        for p in [
            "(?-i)CHECKOUT_TIMEOUT",
            "(?-i:Check)out_TIMEOUT",
            "(?-i)[A-Z]+_timeout",
        ] {
            let r = re(p);
            for hay in ["checkout_timeout", "CHECKOUT_TIMEOUT", "Checkout_Timeout"] {
                assert!(r.is_match_text(hay), "{p} {hay}");
                assert!(r.is_match_term(hay.to_lowercase().as_bytes()), "{p} {hay}");
            }
            let spans: Vec<(usize, usize)> = r
                .find_spans("see Checkout_Timeout", 4)
                .into_iter()
                .map(|s| (s.start, s.end))
                .collect();
            assert_eq!(spans, [(4, 20)], "{p}");
        }
        assert!(re("(?-iu:[A-Z])x").is_match_term(b"ax"));
        assert!(!re("(?-i)[0-9]+x").is_match_term(b"ax"));
    }

    #[test]
    fn word_boundaries_are_ascii() {
        let r = re(r"\bfoo\b");
        assert!(r.is_match_text("a foo b"));
        assert!(!r.is_match_text("afoob"));
        assert!(r.is_match_text("foo"));
    }

    #[test]
    fn find_spans_are_leftmost_first() {
        let r = re("fo+|bar");
        let text = "xx FOO bar fooo";
        let spans = r.find_spans(text, 10);
        assert_eq!(spans, vec![3..6, 7..10, 11..15]);
        assert_eq!(r.find_spans(text, 2).len(), 2);
        assert!(r.find_spans(text, 0).is_empty());
        assert!(re("x*").find_spans("abc", 10).is_empty());
        let r = re("é+");
        let t = "caféé!";
        for s in r.find_spans(t, 10) {
            assert!(t.is_char_boundary(s.start) && t.is_char_boundary(s.end));
        }
    }

    /// The code points dropped from classes never occur in a haystack the DFA runs over:
    /// not in NFKC text, and not in the lowercase of a character NFKC text holds (terms).
    #[test]
    fn dropped_code_points_never_occur_in_normalized_text() {
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            if unnormalized(c) {
                assert!(!nfkc(c.encode_utf8(&mut [0; 4])).contains(c), "{c:?}");
                continue;
            }
            for l in c.to_lowercase() {
                assert!(!unnormalized(l), "{c:?} lowercases to {l:?}");
            }
        }
    }

    /// Case folding adds U+017F to `s` and U+212A to `k`; without them an ASCII pattern's
    /// classes are ASCII. Large classes are left whole.
    #[test]
    fn ascii_patterns_keep_ascii_classes() {
        let parse =
            |p: &str| syntax::parse_with(p, &syntax::Config::new().case_insensitive(true)).unwrap();
        let (narrow, dropped) = drop_unnormalized(&parse("[a-z]+zqsfx")).unwrap();
        assert_eq!(dropped, ['\u{17f}', '\u{212a}']);
        let ascii = syntax::parse("[A-Za-z]+[Zz][Qq][Ss][Ff][Xx]").unwrap();
        assert_eq!(narrow, ascii);
        assert_eq!(drop_unnormalized(&parse("zqpfx[0-9]+")), None);
        assert_eq!(drop_unnormalized(&parse(r"\w+")), None);
        let r = re("[a-z]+zqsfx");
        assert!(r.is_match_text("abczqsfx"));
        assert!(!r.is_match_text("zqsfx"));
    }

    /// The spans of the forward DFA and the reverse lazy DFA are those of regex-automata's
    /// own dense DFA regex (both directions determinized up front) over the same pattern.
    #[test]
    fn find_spans_are_those_of_a_dense_regex() {
        let patterns = [
            "fo+|bar",
            "a|ab",
            "(?:ab|a)(?:c|bcd)",
            "[a-z]+zqsfx",
            "zqpfx[a-z]+",
            "é+",
            "k+",
            "x*",
            "(?m)^ab$",
            "^ab",
            "ab$",
            r"\d+\.\d*",
            "a.*b",
            "s+",
            "[a-z]+",
            "µs",
            "å+",
            "[^a-z ]+",
        ];
        let texts = [
            "xx FOO bar fooo",
            "abab ab abcd abbcd",
            "wxzqsfx zqpfxab ZQPFXé yzqsfxzqsfx",
            "ééé É café",
            "KELVIN \u{212A} kk",
            "ab\nab\nxab",
            "1.5 22. 3",
            "aXb aab ba",
            "lo\u{17F}s \u{17F}\u{17F} S\u{17F}x\u{212A}zqsfx",
            "\u{17F}j",
            "ab\u{212A} \u{17F}",
            "12 \u{B5}s 3 \u{3BC}s \u{212B}\u{C5}\u{E5} \u{FB01}le",
            // Not NFKC, but none of the characters a pattern's classes leave out.
            "\u{FF21}b FOO\u{FF46} foo \u{FB01} zqpfx\u{FF41}b sss",
        ];
        for p in patterns {
            let dense = regex_automata::dfa::regex::Regex::builder()
                .syntax(syntax::Config::new().case_insensitive(true))
                .build(p)
                .unwrap();
            let find = |t: &str| -> Vec<Range<usize>> {
                dense
                    .find_iter(t)
                    .map(|m| m.range())
                    .filter(|m| !m.is_empty())
                    .collect()
            };
            let r = re(p);
            for t in texts {
                // Any text for spans, as a snippet's; normalized text for counts, as the
                // engine's.
                assert_eq!(r.find_spans(t, 100), find(t), "{p:?} in {t:?}");
                // Any text for matches and counts too (one holding U+017F or U+212A is
                // searched with the pattern as parsed).
                assert_eq!(r.is_match_text(t), dense.is_match(t), "{p:?} in {t:?}");
                let raw = find(t).len();
                assert_eq!(r.count_matches(t, 100), raw, "{p:?} in {t:?}");
                let counted = if dense.is_match(t) { raw.max(1) } else { 0 };
                assert_eq!(r.count_in_text(t, 100), counted, "{p:?} in {t:?}");
                let n = nfkc(t);
                let want = find(&n);
                assert_eq!(r.find_spans(&n, 100), want, "{p:?} in {n:?}");
                assert_eq!(r.is_match_text(&n), dense.is_match(&*n), "{p:?} in {n:?}");
                for max in [0, 1, 2, 100] {
                    assert_eq!(
                        r.count_matches(&n, max),
                        want.len().min(max),
                        "{p:?} in {n:?}"
                    );
                    let counted = if dense.is_match(&*n) {
                        want.len().min(max).max(1)
                    } else {
                        0
                    };
                    assert_eq!(r.count_in_text(&n, max), counted, "{p:?} in {n:?}");
                }
            }
        }
    }

    /// Counting by walking the DFA gives the count of its searches, for patterns with and
    /// without assertions, over thousands of short haystacks (terms, short texts, damage).
    #[test]
    fn walked_counts_are_searched_counts() {
        let patterns = [
            "zqpfx[0-9]+",
            "[a-z]+zqsfx",
            "ab",
            "a+b?",
            "(ab|a)(ba)?",
            "b+a",
            "[a-z]{2}",
            "é+",
            "q[0-9]*z",
            "\\d+",
            "ab$",
            "^a",
            "\\bab",
            "a b",
            "a.*b",
        ];
        let alphabet = [
            "a", "b", "z", "q", "p", "f", "x", "s", "0", "7", "é", " ", "-", "\u{0}",
        ];
        let mut next = crate::test_util::xorshift(0x9e37_79b9_7f4a_7c15);
        let mut walked = 0;
        for p in patterns {
            let r = re(p);
            for _ in 0..3000 {
                let len = next(24) as usize;
                let hay: String = (0..len).map(|_| alphabet[next(14) as usize]).collect();
                if r.holds_dropped(&hay) {
                    continue;
                }
                for max in [0, 1, 2, 3, 100] {
                    let searched = r.count_searched(&hay, max);
                    assert_eq!(r.count_nonempty(&hay, max), searched, "{p:?} in {hay:?}");
                    if r.by_terms {
                        walked += 1;
                        assert_eq!(
                            r.count_walked(hay.as_bytes(), max),
                            searched,
                            "{p:?} in {hay:?}"
                        );
                    }
                }
            }
        }
        assert!(walked > 50_000, "{walked}");
        // Bytes that are not UTF-8, as a damaged term's; by the DFA and the simple form.
        DFA_ONLY.with(|c| c.set(true));
        let r = re("zqpfx[0-9]+");
        DFA_ONLY.with(|c| c.set(false));
        assert!(r.by_terms);
        assert_eq!(r.count_walked(b"zqpfx1\xffzqpfx22", 100), 2);
        assert_eq!(r.count_walked(b"\xc3zqpfx", 100), 0);
        let simple = re("zqpfx[0-9]+").simple.unwrap();
        assert_eq!(simple.count(b"zqpfx1\xffzqpfx22", 100), 2);
        assert_eq!(simple.count(b"\xc3zqpfx", 100), 0);
        assert!(simple.is_match(b"\xffZQPFX9\xc3"));
    }

    #[test]
    fn terms_match_anywhere_with_term_anchors() {
        let r = re("out");
        assert!(r.is_match_term(b"timeout"));
        assert!(r.is_match_term(b"outer"));
        assert!(!re("^out").is_match_term(b"timeout"));
        assert!(re("^out").is_match_term(b"outer"));
        assert!(re("out$").is_match_term(b"timeout"));
        assert!(!re("out$").is_match_term(b"outer"));
    }

    #[test]
    fn fst_automaton_agrees_with_linear_scan() {
        let terms = [
            "abc", "abcd", "timeout", "timer", "time", "outer", "out", "zeta", "été", "x",
        ];
        let s = set(&terms);
        for p in [
            "out",
            "^out",
            "out$",
            "^time",
            "^tim(e|er)$",
            "t.*t",
            "^é",
            "é",
            "^$",
            "",
            "q",
            "^abc",
        ] {
            let r = re(p);
            let via_fst: Vec<String> = {
                use fst::{IntoStreamer, Streamer};
                let mut v = Vec::new();
                let mut st = s.search(r.term_automaton().unwrap()).into_stream();
                while let Some(k) = st.next() {
                    v.push(String::from_utf8(k.to_vec()).unwrap());
                }
                v
            };
            let mut expect: Vec<String> = terms
                .iter()
                .filter(|t| r.is_match_term(t.as_bytes()))
                .map(|t| (*t).to_owned())
                .collect();
            expect.sort();
            assert_eq!(via_fst, expect, "{p}");
            assert_eq!(r.matching_terms(&s, 100), expect, "{p}");
            let mut sorted = terms.to_vec();
            sorted.sort_unstable();
            let listed = r.matching_terms_in_list(sorted, 100, &mut HaystackBudget::unlimited());
            assert_eq!(listed, expect, "{p}");
        }
    }

    #[test]
    fn strategy_walks_only_with_anchored_literal_prefix() {
        assert!(re("^time").walks_fst());
        assert!(re("^tim(e|er)$").walks_fst());
        assert!(re("^Time").walks_fst());
        assert!(!re("time").walks_fst());
        assert!(!re("^.*time").walks_fst());
        assert!(!re("^time|out").walks_fst());
        assert!(!re("^[a-z]+").walks_fst());
    }

    #[test]
    fn matching_terms_limit_and_budget() {
        let s = set(&["aa", "ab", "ac", "ad"]);
        assert_eq!(re("a").matching_terms(&s, 2), ["aa", "ab"]);
        assert_eq!(re("^a").matching_terms(&s, 3), ["aa", "ab", "ac"]);
        let mut b = HaystackBudget::new(&RegexLimits {
            max_haystack_bytes: 5,
            ..RegexLimits::default()
        });
        assert_eq!(
            re("a").matching_terms_budgeted(&s, 10, &mut b),
            ["aa", "ab"]
        );
        assert!(b.is_exhausted());
        assert!(!b.charge(0));
    }

    #[test]
    fn token_spanning() {
        for p in [
            "foo bar", "foo.bar", r"foo\.ts", r"a\s+b", "a.b", "[^a]", r"\W", "-",
        ] {
            assert!(re(p).can_span_tokens(), "{p}");
        }
        for p in [
            "foo", "^foo$", r"\bfoo\b", "[a-z]+", r"\d{3}", "é", "foo_bar", r"\w+", "(ab|cd)*",
        ] {
            // \w includes connector punctuation beyond `_` (U+203F ...): conservatively spans.
            if p == r"\w+" {
                assert!(re(p).can_span_tokens());
                continue;
            }
            assert!(!re(p).can_span_tokens(), "{p}");
        }
        assert!(!re(r"\p{L}+").can_span_tokens());
    }

    /// Native builds have every Unicode property table (`unicode-all`); the browser build
    /// refuses these (bindings/wasm/tests/api.rs).
    #[cfg(feature = "unicode-all")]
    #[test]
    fn scripts_ages_and_boolean_properties_compile_natively() {
        for p in [
            r"\p{Greek}+",
            r"\p{scx=Hira}",
            r"\p{Age=6.0}",
            r"\p{Alphabetic}+",
        ] {
            assert!(
                CompiledRegex::new(p, &RegexLimits::default()).is_ok(),
                "{p}"
            );
        }
    }

    #[test]
    fn three_strategies_agree_on_a_large_vocabulary() {
        let mut terms: Vec<String> = (0..20_000u32)
            .map(|i| {
                let stem = ["alpha", "beta", "gamma", "timeout"][(i % 4) as usize];
                format!("{stem}{:x}", i.wrapping_mul(2_654_435_761))
            })
            .collect();
        terms.sort();
        terms.dedup();
        let s = fst::Set::from_iter(terms.iter()).unwrap();
        for p in ["a1b", r"\d{3}f", "^timeout", "^ti.*[0-9]$", "^beta"] {
            let r = re(p);
            let streamed = r.matching_terms(&s, usize::MAX);
            let walked: Vec<String> = {
                use fst::{IntoStreamer, Streamer};
                let mut v = Vec::new();
                let mut st = s.search(r.term_automaton().unwrap()).into_stream();
                while let Some(k) = st.next() {
                    v.push(String::from_utf8_lossy(k).into_owned());
                }
                v
            };
            let listed = r.matching_terms_in_list(
                terms.iter().map(String::as_str),
                usize::MAX,
                &mut HaystackBudget::unlimited(),
            );
            assert_eq!(streamed, walked, "{p}");
            assert_eq!(streamed, listed, "{p}");
            assert!(!streamed.is_empty(), "{p}");
        }
    }
}
