//! The canonical tokenizer and the on-disk index formats of sessiondex.
//!
//! [`tokenize`] is the single tokenizer used for queries, BM25 postings and cold
//! vocabularies, so a term found in one is found in the others.
//!
//! ```
//! assert_eq!(sessiondex_core::tokenize("Fix src/foo.ts ＴＯＤＯ"), ["fix", "src", "foo", "ts", "todo"]);
//! ```
#![deny(missing_docs)]

pub mod tokenize;

pub use tokenize::{for_each_token, normalize, tokenize};
