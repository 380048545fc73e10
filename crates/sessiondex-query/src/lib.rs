//! Recall, expand, walk, sessions and trace over a sessiondex index.
//!
//! The query engine arrives with its issue; the crate exists now so that the dependency
//! direction (source <- core <- query <- sessiondex) is fixed.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub use sessiondex_core as core;
