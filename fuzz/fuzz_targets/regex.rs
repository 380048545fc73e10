//! Regex compile under small limits over an arbitrary pattern; when it compiles, search
//! arbitrary text and a small vocabulary, checking the FST walk against a plain scan. Under
//! limits wide enough for a literal and a run of one class to be matched without a DFA, such
//! a pattern answers as its DFA under the small limits.
#![no_main]

use libfuzzer_sys::arbitrary::{self, Arbitrary};
use libfuzzer_sys::fuzz_target;
use sessiondex_query::regex::HaystackBudget;
use sessiondex_query::{CompiledRegex, RegexLimits};

#[derive(Debug, Arbitrary)]
struct Input<'a> {
    pattern: &'a str,
    text: &'a str,
    terms: Vec<&'a str>,
}

/// Small enough that compiling stays fast; large enough for real patterns.
const LIMITS: RegexLimits = RegexLimits {
    max_pattern_bytes: 256,
    max_nfa_bytes: 64 << 10,
    max_dfa_bytes: 64 << 10,
    max_determinize_bytes: 64 << 10,
    max_haystack_bytes: 4 << 10,
};

/// Wide enough that a literal followed by a run of one class builds no DFA (its simple form
/// needs limits of at least 256 KiB); `LIMITS` builds one for every pattern.
const WIDE: RegexLimits = RegexLimits {
    max_nfa_bytes: 256 << 10,
    max_dfa_bytes: 256 << 10,
    max_determinize_bytes: 256 << 10,
    ..LIMITS
};

fuzz_target!(|input: Input<'_>| {
    let Ok(re) = CompiledRegex::new(input.pattern, &LIMITS) else {
        return;
    };
    // A regex that holds no automaton once compiled (no memory) is the simple form: it finds
    // what the DFA finds, in text as given and lowered, and in each term.
    if let Some(simple) = CompiledRegex::new(input.pattern, &WIDE)
        .ok()
        .filter(|w| w.memory_usage() == 0)
    {
        let lowered = input.text.to_ascii_lowercase();
        // The literal (its required one) before and inside the text, so that its matches and
        // near misses are met, not only texts without it.
        let seeded: Vec<String> = simple
            .required_literals()
            .into_iter()
            .flatten()
            .map(|f| String::from_utf8_lossy(f.needle()).into_owned())
            .flat_map(|l| {
                let t = input.text;
                let mid = (0..=t.len() / 2).rev().find(|&i| t.is_char_boundary(i));
                let (a, b) = t.split_at(mid.unwrap_or(0));
                [format!("{l}{}", input.text), format!("{a}{l}{b}{l}")]
            })
            .collect();
        let texts = [input.text, lowered.as_str()]
            .into_iter()
            .chain(seeded.iter().map(String::as_str));
        for text in texts {
            assert_eq!(simple.is_match_text(text), re.is_match_text(text), "simple match");
            assert_eq!(simple.find_spans(text, 8), re.find_spans(text, 8), "simple spans");
            assert_eq!(
                simple.count_in_text(text, 8),
                re.count_in_text(text, 8),
                "simple count"
            );
            assert_eq!(
                simple.count_matches(text, 8),
                re.count_matches(text, 8),
                "simple matches"
            );
        }
        for t in &input.terms {
            assert_eq!(
                simple.is_match_term(t.as_bytes()),
                re.is_match_term(t.as_bytes()),
                "simple term {t:?}"
            );
        }
    }
    let _ = (re.memory_usage(), re.can_span_tokens(), re.walks_fst());
    let matched = re.is_match_text(input.text);
    let spans = re.find_spans(input.text, 8);
    // A non-empty match found by the reverse search is a match for the forward pass too.
    assert!(
        spans.is_empty() || matched,
        "find_spans found {spans:?}, is_match_text did not"
    );
    for s in &spans {
        assert!(
            input.text.get(s.clone()).is_some(),
            "span {s:?} is not on a char boundary"
        );
    }
    // A text's count is 0 exactly when nothing matches.
    assert_eq!(re.count_in_text(input.text, 8) > 0, matched, "count_in_text");
    // Matching ignores case: the text with its ASCII letters lowered (every byte where it
    // was) matches alike, at the same spans.
    let lowered = input.text.to_ascii_lowercase();
    assert_eq!(re.is_match_text(&lowered), matched, "lowered text");
    assert_eq!(re.find_spans(&lowered, 8), spans, "lowered spans");
    assert_eq!(
        re.count_matches(&lowered, 8),
        re.count_matches(input.text, 8),
        "lowered count"
    );

    let mut terms: Vec<&str> = input.terms.iter().copied().take(64).collect();
    terms.sort_unstable();
    terms.dedup();
    let Ok(set) = fst::Set::from_iter(terms.iter()) else {
        return;
    };
    // Walking the FST (anchored literal prefix) and scanning every term agree.
    let walked = re.matching_terms(&set, usize::MAX);
    let scanned = re.matching_terms_in_list(
        terms.iter().copied(),
        usize::MAX,
        &mut HaystackBudget::unlimited(),
    );
    assert_eq!(walked, scanned, "FST walk and term scan differ");
    for t in &terms {
        assert_eq!(re.is_match_term(t.as_bytes()), scanned.contains(t));
    }
    // A vocabulary term (a canonical token) the pattern matches holds one of its required
    // literals, the catalog's narrowing looks at no other term (but those holding U+0307,
    // which it always looks at).
    if let Some(lits) = re.required_literals() {
        for t in terms.iter().flat_map(|t| sessiondex_core::tokenize::tokenize(t)) {
            if re.is_match_term(t.as_bytes()) && !t.contains('\u{307}') {
                assert!(
                    lits.iter().any(|f| f.find(t.as_bytes()).is_some()),
                    "{t:?} matches and holds no required literal"
                );
            }
        }
    }
    let _ = re.matching_terms_budgeted(&set, 4, &mut HaystackBudget::new(&LIMITS));
});
