//! The canonical tokenizer and the on-disk index formats of sessiondex.
#![deny(missing_docs)]

mod tokenize;

pub use tokenize::tokenize;
