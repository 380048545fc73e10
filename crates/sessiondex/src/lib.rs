//! sessiondex: a fast, honest memory of coding agent sessions.
//!
//! [`Memory`] is the entry point: session logs (files or folders; by default the agents'
//! standard locations, [`default_sources`]) and a disposable index directory. Each call first
//! brings the index up to date with the sources (only changed files are read), then answers:
//!
//! - [`Memory::recall`]: one ranked, bounded [`Page`] of entry and session hits. Each hit
//!   carries a `follow` [`Call`] bound to its source's SHA-256 and lineage, and the page's
//!   [`Coverage`] says whether an empty answer is authoritative.
//! - [`Memory::call`] runs a hit's `follow` or a page's `next`; [`Memory::expand`] re-reads
//!   records by position, entry id or operation address.
//! - [`Memory::walk`], [`Memory::sessions_filtered`] and [`Memory::trace`]: every record of a
//!   selection, the session list, lineage across files.
//!
//! Requests and results are the JSON shapes of `docs/query.md`, which the CLI, the Python
//! package and the browser package share. [`source`] reads logs into normalized records
//! without any index, [`query`] is the engine, and [`tokenize()`] the one tokenizer of queries,
//! postings and vocabularies.
//!
//! ```
//! use sessiondex::{CallResult, Config, Memory, RecallRequest};
//!
//! let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/sessions");
//! let index = tempfile::tempdir()?;
//! let memory = Memory::open(
//!     Config::default(),
//!     Some(vec![examples.into()]),
//!     Some(index.path().to_path_buf()),
//! )?;
//! let req = RecallRequest::from_json(&serde_json::json!({
//!     "query": "flaky timeout",
//!     "scope": "global",
//! }))?;
//! let page = memory.recall(&req)?;
//! assert!(page.coverage.complete);
//! // A hit's follow call returns its whole source record.
//! let CallResult::Expand(records) = memory.call(&page.hits[0].follow)? else {
//!     unreachable!("an entry hit follows into its record")
//! };
//! assert_eq!(records.entries[0].record.entry_id, page.hits[0].entry_id.clone().unwrap());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod ahead;
mod config;
pub mod identity;
mod memory;
// `query` is the re-exported query crate; the facade's entry points live in `query.rs`.
#[path = "query.rs"]
mod queries;
pub mod sync;

pub use config::{default_index_dir, default_sources, Config, ConfigError};
pub use memory::{Memory, SessionCoverage, SessionInfo, SessionList};
pub use queries::{context_from_env, engine_options, index_coverage, CallResult};
pub use sessiondex_core::tokenize;
pub use sessiondex_query as query;
pub use sessiondex_query::paths::absolute_path;
pub use sessiondex_query::request::{Call, Coverage, ExpandRequest, Page, RecallRequest};
pub use sessiondex_query::{Error, ErrorCode};
pub use sessiondex_query::{Expansion, QueryContext, SessionsRequest, Trace, Walk, WalkRequest};
pub use sessiondex_source as source;
pub use sync::{IndexCoverage, ReasonCount, SyncReport};
