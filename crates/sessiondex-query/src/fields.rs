//! Field groups (`in`): which provenance classes a query may match, checked on a hot entry's
//! stored text.
//!
//! A hot entry stores two parts: its text, whose group follows the record's class
//! ([`FieldGroup::of_class`]), and, with `indexThinking`, a separate thinking part (always
//! `thinking`). Postings mix both parts, so when the two parts belong to different groups and
//! only one of them may match, the query's terms are counted again on the stored text of the
//! part that may. Occurrences that the postings hold but the stored text does not show (a part
//! cut at `maxEntryChars`) are attributed to the cut part(s).

use std::borrow::Cow;

use sessiondex_core::hot::{
    HotEntry, FLAG_TEXT_NFKC, FLAG_TEXT_TRUNCATED, FLAG_THINKING_NFKC, FLAG_THINKING_TRUNCATED,
};
use sessiondex_core::tokenize::{any_token, for_each_token, nfkc};

use crate::request::FieldGroup;

/// A set of field groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupSet(u8);

fn bit(g: FieldGroup) -> u8 {
    match g {
        FieldGroup::Text => 1,
        FieldGroup::Thinking => 2,
        FieldGroup::ToolInput => 4,
        FieldGroup::ToolOutput => 8,
    }
}

impl GroupSet {
    /// Every group.
    pub const ALL: GroupSet = GroupSet(15);
    /// No group.
    pub const EMPTY: GroupSet = GroupSet(0);

    /// The groups of a request's `in` (absent: every group).
    #[must_use]
    pub fn from_request(groups: Option<&[FieldGroup]>) -> GroupSet {
        match groups {
            None => GroupSet::ALL,
            Some(gs) => gs.iter().fold(GroupSet::EMPTY, |s, &g| s.with(g)),
        }
    }

    /// This set plus `g`.
    #[must_use]
    pub fn with(self, g: FieldGroup) -> GroupSet {
        GroupSet(self.0 | bit(g))
    }

    /// Whether `g` is in the set.
    #[must_use]
    pub fn contains(self, g: FieldGroup) -> bool {
        self.0 & bit(g) != 0
    }

    /// Whether every group is in the set (no restriction).
    #[must_use]
    pub fn is_all(self) -> bool {
        self == GroupSet::ALL
    }

    /// Whether the set is empty.
    #[must_use]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The groups, in [`FieldGroup::ALL`] order.
    #[must_use]
    pub fn groups(self) -> Vec<FieldGroup> {
        FieldGroup::ALL
            .into_iter()
            .filter(|&g| self.contains(g))
            .collect()
    }
}

/// The stored parts of a hot entry.
#[derive(Debug, Clone, Copy)]
pub struct Parts<'a> {
    /// The stored text.
    pub text: &'a str,
    /// The group of the text (from the record's class).
    pub text_group: FieldGroup,
    /// The text was cut at `maxEntryChars`.
    pub text_truncated: bool,
    /// The stored thinking part, when the entry has one.
    pub thinking: Option<&'a str>,
    /// The thinking part was cut.
    pub thinking_truncated: bool,
    /// The shard says the stored text is NFKC (`false`: not known).
    pub text_nfkc: bool,
    /// The shard says the stored thinking part is NFKC (`false`: not known).
    pub thinking_nfkc: bool,
}

/// `text` in NFKC: itself when `known` (the shard's flag says so), else [`nfkc`].
#[must_use]
pub fn normalized(text: &str, known: bool) -> Cow<'_, str> {
    if known {
        Cow::Borrowed(text)
    } else {
        nfkc(text)
    }
}

impl<'a> Parts<'a> {
    /// The parts of `e`.
    ///
    /// # Errors
    ///
    /// A damaged shard column.
    pub fn of(e: &HotEntry<'a>) -> sessiondex_core::Result<Parts<'a>> {
        let flags = e.flags();
        Ok(Parts {
            text: e.text()?,
            text_group: FieldGroup::of_class(e.class()?),
            text_truncated: flags & FLAG_TEXT_TRUNCATED != 0,
            thinking: e.thinking()?,
            thinking_truncated: flags & FLAG_THINKING_TRUNCATED != 0,
            text_nfkc: flags & FLAG_TEXT_NFKC != 0,
            thinking_nfkc: flags & FLAG_THINKING_NFKC != 0,
        })
    }

    /// Whether the text part may match under `set`.
    #[must_use]
    pub fn text_allowed(&self, set: GroupSet) -> bool {
        set.contains(self.text_group)
    }

    /// Whether the thinking part exists and may match under `set`.
    #[must_use]
    pub fn thinking_allowed(&self, set: GroupSet) -> bool {
        self.thinking.is_some() && set.contains(FieldGroup::Thinking)
    }

    /// Whether any part may match under `set`.
    #[must_use]
    pub fn any_allowed(&self, set: GroupSet) -> bool {
        self.text_allowed(set) || self.thinking_allowed(set)
    }

    /// Whether the postings of this entry may hold terms of a part that `set` excludes, so
    /// term frequencies must be counted again on the stored text.
    #[must_use]
    pub fn needs_recount(&self, set: GroupSet) -> bool {
        self.thinking.is_some() && self.text_allowed(set) != self.thinking_allowed(set)
    }

    /// The entry's term frequencies restricted to the parts `set` allows. `tf` is the
    /// postings' frequency per query group; `groups[g]` the terms (a fuzzy term's
    /// expansions) of group `g`.
    #[must_use]
    pub fn restrict(&self, set: GroupSet, groups: &[Vec<String>], tf: &[u32]) -> Vec<u32> {
        if !self.needs_recount(set) {
            return tf.to_vec();
        }
        let text = count_groups(self.text, groups);
        let thinking = count_groups(self.thinking.unwrap_or(""), groups);
        let (allowed, allowed_cut) = if self.text_allowed(set) {
            (&text, self.text_truncated)
        } else {
            (&thinking, self.thinking_truncated)
        };
        tf.iter()
            .enumerate()
            .map(|(g, &n)| {
                let at = |v: &Vec<u32>| v.get(g).copied().unwrap_or(0);
                let seen = at(&text).saturating_add(at(&thinking));
                // Occurrences the stored text does not show lie past a cut; they count for
                // the allowed part when it was cut.
                let unseen = if allowed_cut {
                    n.saturating_sub(seen)
                } else {
                    0
                };
                at(allowed).saturating_add(unseen)
            })
            .collect()
    }

    /// The groups among `set` whose part holds a match, given a per-part test; a part that
    /// shows none but was cut while `unseen` is true (the postings hold a match the stored
    /// text does not show) counts as matched.
    #[must_use]
    pub fn matched(
        &self,
        set: GroupSet,
        mut has_match: impl FnMut(&str) -> bool,
        unseen_allowed: bool,
    ) -> Vec<FieldGroup> {
        self.matched_parts(set, |t, _| has_match(t), unseen_allowed)
    }

    /// [`Parts::matched`] with `has_match` also told whether the shard says the part is
    /// NFKC.
    pub fn matched_parts(
        &self,
        set: GroupSet,
        mut has_match: impl FnMut(&str, bool) -> bool,
        unseen_allowed: bool,
    ) -> Vec<FieldGroup> {
        let mut out = GroupSet::EMPTY;
        let text_hit = self.text_allowed(set) && has_match(self.text, self.text_nfkc);
        let thinking_hit = self.thinking_allowed(set)
            && self
                .thinking
                .is_some_and(|t| has_match(t, self.thinking_nfkc));
        if text_hit {
            out = out.with(self.text_group);
        }
        if thinking_hit {
            out = out.with(FieldGroup::Thinking);
        }
        if out.is_empty() && unseen_allowed {
            if self.text_truncated && self.text_allowed(set) {
                out = out.with(self.text_group);
            }
            if self.thinking_truncated && self.thinking_allowed(set) {
                out = out.with(FieldGroup::Thinking);
            }
        }
        out.groups()
    }
}

/// Occurrences of each group's terms among the canonical tokens of `text`.
#[must_use]
pub fn count_groups(text: &str, groups: &[Vec<String>]) -> Vec<u32> {
    let mut out = vec![0u32; groups.len()];
    if text.is_empty() || groups.is_empty() {
        return out;
    }
    for_each_token(text, |t| {
        for (g, terms) in groups.iter().enumerate() {
            if terms.iter().any(|x| x == t) {
                out[g] = out[g].saturating_add(1);
            }
        }
    });
    out
}

/// Whether any canonical token of `text` is one of `terms`.
#[must_use]
pub fn has_any_term(text: &str, terms: &[String]) -> bool {
    if text.is_ascii() {
        // Each run of term bytes is one token, lowered: the first that is a term answers.
        let bytes = text.as_bytes();
        return crate::bm25::ascii_runs(bytes)
            .any(|r| crate::bm25::is_ascii_term(&bytes[r], terms));
    }
    // The first of its terms that is one answers.
    !terms.is_empty() && any_token(text, |t| terms.iter().any(|x| x == t))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(text: &'a str, thinking: Option<&'a str>) -> Parts<'a> {
        Parts {
            text,
            text_group: FieldGroup::Text,
            text_truncated: false,
            thinking,
            thinking_truncated: false,
            text_nfkc: false,
            thinking_nfkc: false,
        }
    }

    #[test]
    fn sets() {
        let s = GroupSet::from_request(Some(&[FieldGroup::ToolOutput, FieldGroup::Thinking]));
        assert!(s.contains(FieldGroup::ToolOutput) && !s.contains(FieldGroup::Text));
        assert_eq!(s.groups(), [FieldGroup::Thinking, FieldGroup::ToolOutput]);
        assert!(GroupSet::from_request(None).is_all());
        assert!(GroupSet::from_request(Some(&FieldGroup::ALL)).is_all());
    }

    #[test]
    fn ascii_text_holds_a_term_as_its_tokens_say() {
        let terms = ["ab", "a_1", "zz9"].map(String::from);
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let alphabet = b"aAbBzZ9_1 .-/";
        for len in 0..400 {
            let text: String = (0..len % 40)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    char::from(alphabet[(x % alphabet.len() as u64) as usize])
                })
                .collect();
            let mut want = false;
            for_each_token(&text, |t| want |= terms.iter().any(|x| x == t));
            assert_eq!(has_any_term(&text, &terms), want, "{text:?}");
        }
        assert!(has_any_term("x AB.", &terms));
        assert!(!has_any_term("abc a_12 zz", &terms));
    }

    #[test]
    fn recount_splits_text_and_thinking() {
        let groups = vec![vec!["alpha".to_owned()], vec!["beta".to_owned()]];
        let p = parts("alpha beta", Some("alpha alpha"));
        let only_text = GroupSet::EMPTY.with(FieldGroup::Text);
        let only_thinking = GroupSet::EMPTY.with(FieldGroup::Thinking);
        assert_eq!(p.restrict(only_text, &groups, &[3, 1]), [1, 1]);
        assert_eq!(p.restrict(only_thinking, &groups, &[3, 1]), [2, 0]);
        assert_eq!(p.restrict(GroupSet::ALL, &groups, &[3, 1]), [3, 1]);
        let has = |t: &str| has_any_term(t, &["beta".to_owned()]);
        assert_eq!(p.matched(GroupSet::ALL, has, true), [FieldGroup::Text]);
        let has = |t: &str| has_any_term(t, &["alpha".to_owned()]);
        assert_eq!(
            p.matched(GroupSet::ALL, has, true),
            [FieldGroup::Text, FieldGroup::Thinking]
        );
        let cut = Parts {
            text_truncated: true,
            ..parts("x", Some(""))
        };
        // `gamma` is in the postings but past the cut of the text.
        let groups = vec![vec!["gamma".to_owned()]];
        assert_eq!(cut.restrict(only_text, &groups, &[2]), [2]);
        assert_eq!(cut.restrict(only_thinking, &groups, &[2]), [0]);
        let none = |_: &str| false;
        assert_eq!(cut.matched(GroupSet::ALL, none, true), [FieldGroup::Text]);
        assert!(cut.matched(GroupSet::ALL, none, false).is_empty());
    }
}
