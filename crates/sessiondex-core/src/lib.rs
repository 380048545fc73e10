//! The canonical tokenizer and the on-disk index formats of sessiondex.
//!
//! - [`tokenize()`] is the single tokenizer used for queries, BM25 postings and cold
//!   vocabularies, so a term found in one is found in the others.
//! - [`hot::HotShard`]: per-session rkyv archive with bounded entry text, postings and
//!   structural columns, opened zero-copy from any bytes.
//! - [`cold::ColdDigest`]: per-session structural tuples and the size of the session's
//!   vocabulary (built with it as a front-coded [`terms::TermList`], and with the session's
//!   summary; the catalog keeps both).
//! - [`catalog::Catalog`]: every indexed session (its summary) plus merged term -> sessions and
//!   id key -> sessions maps (the merged term map is the one copy of the cold vocabularies).
//! - [`bundle`]: one file carrying a whole in-memory index (sources, catalogs, shards).
//! - [`store::Store`] (feature `fs`): the cache directory, atomic writes, lock, cleanup.
//!
//! Every file shares the envelope of [`mod@format`]: magic, version, endianness mark, schema
//! fingerprint, length, and an XXH3-64 checksum footer checked on open. Damaged files give an
//! [`Error`] with code `index_corrupt` or `index_version_mismatch`, never a panic.
//!
//! ```
//! assert_eq!(sessiondex_core::tokenize("Fix src/foo.ts ＴＯＤＯ"), ["fix", "src", "foo", "ts", "todo"]);
//! ```
//!
//! ```
//! use sessiondex_core::{hot, Policy};
//! use sessiondex_source::{Branches, ReadCoverage, Record, Selection, SessionMeta};
//!
//! let sel = Selection {
//!     branches: Branches::Active,
//!     records: vec![Record { entry_id: "a".into(), kind: "message".into(),
//!                            text: "Fix the flaky timeout".into(), ..Record::default() }],
//!     coverage: ReadCoverage { complete: true, ..ReadCoverage::default() },
//!     leaf: Some("a".into()),
//!     lineage_fingerprint: String::new(),
//! };
//! let bytes = hot::build(&SessionMeta::default(), &sel, &Policy::default()).unwrap();
//! let shard = hot::HotShard::open(&bytes[..]).unwrap();
//! assert_eq!(shard.entry(0).unwrap().text().unwrap(), "Fix the flaky timeout");
//! assert_eq!(shard.postings("timeout").unwrap().next().unwrap().entry, 0);
//! ```
#![deny(missing_docs)]

#[cfg(feature = "mimalloc")]
pub mod alloc;
#[allow(unsafe_code)]
pub mod background;
pub mod bundle;
pub mod catalog;
pub mod cold;
mod error;
pub mod format;
pub mod hot;
#[cfg(feature = "mmap")]
#[allow(unsafe_code)]
pub mod mmap;
mod policy;
#[cfg(feature = "fs")]
pub mod store;
mod summary;
pub mod terms;
pub mod tokenize;

pub use error::{Error, ErrorKind, Result};
pub use policy::{bound_chars, Policy};
pub use summary::{format_rfc3339_ms, parse_rfc3339_ms, Coverage, CoverageReason, SessionSummary};
pub use tokenize::{for_each_token, normalize, tokenize};
