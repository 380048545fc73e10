//! Recall, expand, walk, sessions and trace over a sessiondex index.
//!
//! This crate holds the query engine's building blocks, none of which depends on the index
//! format: they work on text, `fst` sets, iterators of terms and plain numbers.
//!
//! - [`error`]: the one enum of stable user-facing error codes.
//! - [`regex`]: bounded DFA regex over text and vocabularies.
//! - [`fuzzy`]: typo-tolerant terms with Levenshtein automata.
//! - [`bm25`]: BM25 with provenance weights, `any`/`all` and phrase helpers.
//! - [`request`]: the JSON shapes of recall/expand requests, calls, pages and coverage.
//! - [`mod@snippet`]: bounded snippets around the densest window of matches.
//! - [`source_text`]: an entry's whole text re-read from its source past the stored cut.
//!
//! The engine over an opened index of one branch mode ([`index::Index`]):
//!
//! - [`engine::recall`]: one ranked, bounded page of entry and session hits.
//! - [`expand::expand`] and [`expand::walk`]: complete records re-read from source, bound to
//!   the pointer's `sourceHash` and `lineageFingerprint`.
//! - [`sessions::sessions`] and [`sessions::trace`]: the catalog, filtered, and session
//!   lineage across files.
//!
//! An [`Index`] reads the on-disk store (feature `fs`, on by default) or bytes in memory;
//! [`memory::MemoryIndex`] builds one from session files handed over as bytes (the WASM
//! package), with no filesystem at all.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use sessiondex_core as core;

pub mod bm25;
mod case_find;
pub mod engine;
pub mod error;
pub mod expand;
pub mod fields;
pub mod fuzzy;
pub mod identifier;
pub mod index;
pub mod memory;
#[cfg(feature = "fs")]
pub mod paths;
pub mod regex;
pub mod request;
pub mod sessions;
pub mod snippet;
pub mod source_text;
#[cfg(feature = "fs")]
pub mod watch;

pub use engine::{recall, EngineOptions, QueryContext};
pub use error::{Error, ErrorCode};
pub use expand::{expand, walk, Expansion, Walk, WalkRequest};
pub use index::Index;
pub use memory::{MemoryConfig, MemoryIndex};
pub use regex::{CompiledRegex, RegexLimits};
pub use request::{
    Call, Coverage, ExpandRequest, FieldGroup, Hit, HitKind, Page, QueryMatch, QueryMode,
    RecallRequest, Scope,
};
pub use sessions::{sessions, trace, SessionsPage, SessionsRequest, Trace};
pub use snippet::{snippet, Snippet, SnippetOptions};

#[cfg(test)]
mod test_util {
    /// Every string of at most `max` symbols from `alphabet`, the empty one first.
    pub(crate) fn strings_over(alphabet: &[&str], max: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut last = all.clone();
        for _ in 0..max {
            last = last
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    /// A xorshift64 generator from `seed` (not zero): each call gives the next value modulo
    /// its argument (not zero).
    pub(crate) fn xorshift(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut x = seed;
        move |m| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        }
    }
}
