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
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use sessiondex_core as core;

pub mod bm25;
pub mod error;
pub mod fuzzy;
pub mod regex;
pub mod request;
pub mod snippet;

pub use error::{Error, ErrorCode};
pub use regex::{CompiledRegex, RegexLimits};
pub use request::{
    Call, Coverage, ExpandRequest, Hit, HitKind, Page, QueryMatch, QueryMode, RecallRequest, Scope,
};
pub use snippet::{snippet, Snippet, SnippetOptions};
