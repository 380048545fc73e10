//! sessiondex-bench: the deterministic corpus generator ([`gen`]), its query sets
//! ([`queries`]) and the side-by-side harness ([`compare`]) against tantivy, SQLite FTS5 and
//! ripgrep (the peers need the `peers` feature, except ripgrep, which runs the `rg` binary).

pub mod compare;
pub mod gen;
pub mod probe;
pub mod queries;
pub mod relevance;
pub mod rng;
pub mod systems;
