//! `queries.json`: the query sets of a generated corpus, per class, with exact expected hits.
//!
//! A hit is one record (entry) of the active branch whose indexed text (policy default:
//! reasoning left out, tool output kept) or typed fields match. Planted tokens are made of
//! letters no filler word uses, so their counts are known exactly; the generator counts them
//! twice (as it plants, and on the records read back with `sessiondex_source`) and refuses to
//! write a corpus where the two disagree.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// The query classes, in report order.
pub const CLASSES: [&str; 11] = [
    "rare_term",
    "common_term",
    "two_term_any",
    "two_term_all",
    "phrase",
    "prefix_regex",
    "leading_wildcard_regex",
    "fuzzy",
    "structural",
    "lexical_structural",
    "negative",
];

/// How the query text is read (the `queryMode` of a sessiondex recall).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Canonical terms.
    Literal,
    /// One contiguous phrase.
    Phrase,
    /// A regex over the text (a term-level pattern for the peers).
    Regex,
    /// Terms within a small edit distance (2 for terms of 6 characters or more).
    Fuzzy,
}

/// One query, with what each system needs to run its equivalent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Query {
    /// A stable name (`rare_term/zqrare03`).
    pub id: String,
    /// One of [`CLASSES`].
    pub class: String,
    /// The query text or pattern; `None` for structural-only queries.
    pub query: Option<String>,
    /// How `query` is read.
    pub mode: Mode,
    /// `true`: every term in one entry (`all`); `false`: any term.
    pub all: bool,
    /// Exact tool name filter.
    pub tool: Option<String>,
    /// Exact outcome filter (`succeeded`, `failed`, ...).
    pub outcome: Option<String>,
    /// Exact expected hits (records of the active branches), when the query is planted;
    /// `None` for natural words, whose counts depend on where each system cuts text.
    pub expected_hits: Option<u64>,
}

/// The whole `queries.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryFile {
    /// The generator's seed.
    pub seed: u64,
    /// Bytes of session files written.
    pub corpus_bytes: u64,
    /// Session files written.
    pub files: u64,
    /// Records of the active branches (what a hit counts).
    pub records: u64,
    /// Lines of the session files (what `rg -c` counts).
    pub lines: u64,
    /// Queries per class.
    pub classes: BTreeMap<String, Vec<Query>>,
}

impl QueryFile {
    /// Reads `queries.json`.
    ///
    /// # Errors
    ///
    /// When the file cannot be read or parsed.
    pub fn load(path: &Path) -> anyhow::Result<QueryFile> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }

    /// Every query, in class order.
    pub fn iter(&self) -> impl Iterator<Item = &Query> {
        CLASSES
            .iter()
            .filter_map(|c| self.classes.get(*c))
            .flatten()
    }
}
