//! Per-session read coverage: what was skipped and why.

use serde::{Deserialize, Serialize};

/// Why a read is not complete. Each code is stable; `docs/formats.md` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReasonCode {
    /// A line that does not parse as JSON, or parses to something other than an object.
    MalformedLine,
    /// The last line has no newline and does not parse: a writer is still writing it.
    PartialTail,
    /// Invalid UTF-8 was replaced with U+FFFD; the record was kept.
    InvalidUtf8,
    /// Two entries share an id; the last one wins.
    DuplicateEntryId,
    /// A parent cycle stopped a lineage walk.
    InvalidParentGraph,
    /// A parent id names no entry of the file; the walk stopped there.
    MissingParent,
    /// A line of a type this reader does not know; kept as a `meta` record.
    UnknownEntryType,
}

impl ReasonCode {
    /// The stable snake_case code.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::MalformedLine => "malformed_line",
            ReasonCode::PartialTail => "partial_tail",
            ReasonCode::InvalidUtf8 => "invalid_utf8",
            ReasonCode::DuplicateEntryId => "duplicate_entry_id",
            ReasonCode::InvalidParentGraph => "invalid_parent_graph",
            ReasonCode::MissingParent => "missing_parent",
            ReasonCode::UnknownEntryType => "unknown_entry_type",
        }
    }

    /// Whether this reason makes a read incomplete. Unknown entry types are informational:
    /// every typed field we read was read.
    #[must_use]
    pub fn makes_incomplete(self) -> bool {
        !matches!(self, ReasonCode::UnknownEntryType)
    }
}

/// One reason with how often it happened and the first lines where it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reason {
    /// The stable code.
    pub code: ReasonCode,
    /// How many times.
    pub count: u64,
    /// Up to [`Reason::MAX_LINES`] 1-based source lines, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<u64>,
}

impl Reason {
    /// How many line numbers a reason keeps.
    pub const MAX_LINES: usize = 8;
}

/// Coverage of reading one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ReadCoverage {
    /// True when nothing valid was lost and no reason makes the read incomplete.
    pub complete: bool,
    /// Reasons, sorted by code.
    pub reasons: Vec<Reason>,
    /// Lines read (terminated lines plus an unterminated last line that parsed).
    pub lines: u64,
    /// Bytes of the source that were consumed; a partial tail starts here.
    pub complete_bytes: u64,
}

impl ReadCoverage {
    /// A new, complete coverage.
    #[must_use]
    pub fn new() -> Self {
        ReadCoverage {
            complete: true,
            ..ReadCoverage::default()
        }
    }

    /// Records one occurrence of `code` at `line` (0 when no line applies).
    pub fn add(&mut self, code: ReasonCode, line: u64) {
        if code.makes_incomplete() {
            self.complete = false;
        }
        match self.reasons.binary_search_by(|r| r.code.cmp(&code)) {
            Ok(i) => {
                let r = &mut self.reasons[i];
                r.count += 1;
                if line > 0 && r.lines.len() < Reason::MAX_LINES {
                    r.lines.push(line);
                }
            }
            Err(i) => self.reasons.insert(
                i,
                Reason {
                    code,
                    count: 1,
                    lines: if line > 0 { vec![line] } else { Vec::new() },
                },
            ),
        }
    }

    /// How many times `code` happened.
    #[must_use]
    pub fn count(&self, code: ReasonCode) -> u64 {
        self.reasons
            .iter()
            .find(|r| r.code == code)
            .map_or(0, |r| r.count)
    }

    /// Adds every reason of `other`.
    pub fn merge(&mut self, other: &ReadCoverage) {
        for r in &other.reasons {
            for _ in 0..r.count.saturating_sub(r.lines.len() as u64) {
                self.add(r.code, 0);
            }
            for &l in &r.lines {
                self.add(r.code, l);
            }
        }
    }
}
