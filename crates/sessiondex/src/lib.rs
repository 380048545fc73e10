//! sessiondex: a fast, honest memory of coding agent sessions.
//!
//! This facade re-exports what users need. Today that is reading sessions into normalized
//! records ([`source`]) and the canonical tokenizer ([`tokenize`]).
//!
//! ```
//! use sessiondex::source::{read_bytes, Branches, ReadOptions};
//!
//! let log = br#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
//! {"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"Hello World"}}
//! "#;
//! let session = read_bytes("s1.jsonl", log, &ReadOptions::default()).unwrap();
//! let text = &session.select(Branches::Active).records[0].text;
//! assert_eq!(sessiondex::tokenize(text), ["hello", "world"]);
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
pub use sessiondex_query::request::{Call, Coverage, ExpandRequest, Page, RecallRequest};
pub use sessiondex_query::{Error, ErrorCode};
pub use sessiondex_query::{Expansion, QueryContext, SessionsRequest, Trace, Walk, WalkRequest};
pub use sessiondex_source as source;
pub use sync::{IndexCoverage, ReasonCount, SyncReport};
