//! The index policy: which text is indexed and how much of it is kept.

use sessiondex_source::{Record, TextClass};
use sha2::{Digest, Sha256};

/// What the index keeps of a session. Defaults follow the product configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Policy {
    /// Entry text kept in a hot shard, in Unicode scalars (`maxEntryChars`).
    pub max_entry_chars: u32,
    /// Index reasoning text (`indexThinking`); off by default.
    pub index_thinking: bool,
    /// Index tool output (`indexToolOutput`); on by default.
    pub index_tool_output: bool,
    /// Bytes of cold vocabulary terms kept per session (`maxColdVocabularyBytes`).
    pub max_cold_vocabulary_bytes: u64,
    /// Bytes of one cold digest file (`maxColdCacheBytes`).
    pub max_cold_cache_bytes: u64,
    /// Credentials were replaced by `[redacted:<kind>]` when the sessions were read
    /// (`redactSecrets`, [`sessiondex_source::redact()`]); on by default.
    pub redact_secrets: bool,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            max_entry_chars: 2000,
            index_thinking: false,
            index_tool_output: true,
            max_cold_vocabulary_bytes: 524_288,
            max_cold_cache_bytes: 1_048_576,
            redact_secrets: true,
        }
    }
}

impl Policy {
    /// SHA-256 (hex) over every field: a record built under another policy is rebuilt.
    ///
    /// `redact_secrets` adds ` redact_secrets=true` to the hashed text when on and nothing when
    /// off, so an index written before redaction existed (nothing redacted) carries the
    /// fingerprint of the policy with it off.
    #[must_use]
    pub fn fingerprint(&self) -> String {
        let text = format!(
            "sessiondex-policy/1 max_entry_chars={} index_thinking={} index_tool_output={} \
             max_cold_vocabulary_bytes={} max_cold_cache_bytes={}{}",
            self.max_entry_chars,
            self.index_thinking,
            self.index_tool_output,
            self.max_cold_vocabulary_bytes,
            self.max_cold_cache_bytes,
            if self.redact_secrets {
                " redact_secrets=true"
            } else {
                ""
            }
        );
        hex(&Sha256::digest(text.as_bytes()))
    }

    /// The record's indexed text under this policy: `text` unless its class is excluded
    /// (thinking without `index_thinking`, tool output without `index_tool_output`).
    #[must_use]
    pub fn text<'r>(&self, r: &'r Record) -> Option<&'r str> {
        let excluded = match r.class {
            TextClass::Thinking => !self.index_thinking,
            TextClass::ToolOutput => !self.index_tool_output,
            _ => false,
        };
        (!excluded).then_some(r.text.as_str())
    }

    /// The record's reasoning text, when `index_thinking`.
    #[must_use]
    pub fn thinking<'r>(&self, r: &'r Record) -> Option<&'r str> {
        if self.index_thinking {
            r.thinking.as_deref()
        } else {
            None
        }
    }
}

/// The first `max` Unicode scalars of `s` and whether anything was cut. Never splits a char.
#[must_use]
pub fn bound_chars(s: &str, max: usize) -> (&str, bool) {
    // A string has at most as many chars as bytes; and past an ASCII run of `max` bytes,
    // char `max` starts at byte `max` (most texts: no walk a char at a time).
    if s.len() <= max {
        return (s, false);
    }
    if s.as_bytes()[..max].is_ascii() {
        return (&s[..max], true);
    }
    match s.char_indices().nth(max) {
        Some((at, _)) => (&s[..at], true),
        None => (s, false),
    }
}

/// Lowercase hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quick paths give what a walk over the chars gives, at every bound, over ASCII,
    /// two-, three- and four-byte chars in any order.
    #[test]
    fn bounds_are_the_char_walks() {
        fn walk(s: &str, max: usize) -> (&str, bool) {
            match s.char_indices().nth(max) {
                Some((at, _)) => (&s[..at], true),
                None => (s, false),
            }
        }
        let alphabet = ['a', 'Z', ' ', 'é', '日', '🚀'];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 0..200 {
            let mut s = String::new();
            for _ in 0..len % 24 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push(alphabet[(x % alphabet.len() as u64) as usize]);
            }
            for max in 0..=s.len() + 1 {
                assert_eq!(bound_chars(&s, max), walk(&s, max), "{s:?} {max}");
            }
        }
    }

    #[test]
    fn bound_never_splits_a_char() {
        assert_eq!(bound_chars("héllo", 2), ("hé", true));
        assert_eq!(bound_chars("hé", 2), ("hé", false));
        assert_eq!(bound_chars("日本語", 1), ("日", true));
        assert_eq!(bound_chars("", 0), ("", false));
        assert_eq!(bound_chars("a", 0), ("", true));
    }

    #[test]
    fn policy_excludes_classes() {
        let mut r = Record {
            text: "t".into(),
            thinking: Some("th".into()),
            class: TextClass::Thinking,
            ..Record::default()
        };
        let p = Policy::default();
        assert_eq!(p.text(&r), None);
        assert_eq!(p.thinking(&r), None);
        let pt = Policy {
            index_thinking: true,
            ..p
        };
        assert_eq!(pt.text(&r), Some("t"));
        assert_eq!(pt.thinking(&r), Some("th"));
        r.class = TextClass::ToolOutput;
        assert_eq!(p.text(&r), Some("t"));
        let no_out = Policy {
            index_tool_output: false,
            ..p
        };
        assert_eq!(no_out.text(&r), None);
        assert_ne!(p.fingerprint(), no_out.fingerprint());
        assert_eq!(p.fingerprint().len(), 64);
        let plain = Policy {
            redact_secrets: false,
            ..p
        };
        assert_ne!(p.fingerprint(), plain.fingerprint());
        // Off hashes what the policy hashed before the field existed.
        assert_eq!(
            plain.fingerprint(),
            hex(&Sha256::digest(
                b"sessiondex-policy/1 max_entry_chars=2000 index_thinking=false \
                  index_tool_output=true max_cold_vocabulary_bytes=524288 \
                  max_cold_cache_bytes=1048576"
            ))
        );
    }
}
