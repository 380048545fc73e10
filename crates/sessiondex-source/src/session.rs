//! A read session, its lineage, and branch selection.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::coverage::{ReadCoverage, ReasonCode};
use crate::hash::{HashMap, HashSet};
use crate::record::{Outcome, Record, SessionMeta};

/// Which records of a session tree to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Branches {
    /// Only the path from the current leaf to the root (and the children of its records).
    #[default]
    Active,
    /// Every record, in file order.
    All,
}

impl Branches {
    /// `active` or `all`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Branches::Active => "active",
            Branches::All => "all",
        }
    }

    /// Parses `active` or `all`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Branches> {
        match s {
            "active" => Some(Branches::Active),
            "all" => Some(Branches::All),
            _ => None,
        }
    }
}

/// A session as read from its file: metadata, every record in file order, and read coverage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    /// Session metadata.
    pub meta: SessionMeta,
    /// Every record in file order; tool call children follow their carrier. Duplicate ids are
    /// already resolved to the last record.
    pub records: Vec<Record>,
    /// What the reader skipped and why.
    pub coverage: ReadCoverage,
    /// The entry id of the current leaf, chosen the way the writing agent chooses it.
    pub leaf: Option<String>,
    /// What the format reader needs to continue this session when its file grows
    /// ([`crate::resume`]): opaque, small (ids and flags, no texts). `None` when the session
    /// was not produced by a read of this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_state: Option<serde_json::Value>,
}

/// The records of one branch mode, with the lineage fingerprint that binds them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Selection {
    /// The branch mode.
    pub branches: Branches,
    /// The selected records, `index` set to their position.
    pub records: Vec<Record>,
    /// Read coverage plus lineage reasons (`invalid_parent_graph`, `missing_parent`).
    pub coverage: ReadCoverage,
    /// The leaf the active path was walked from.
    pub leaf: Option<String>,
    /// SHA-256 (hex) over the branch mode, the leaf and the path ids.
    pub lineage_fingerprint: String,
}

impl Session {
    /// Selects the records of a branch mode.
    ///
    /// `active` walks from the leaf to the root along `logicalParentId` (else `parentId`) and
    /// keeps those records root first, each followed by its child records. A cycle stops the
    /// walk (`invalid_parent_graph`); a parent that names no record stops it too
    /// (`missing_parent`). `all` keeps every record in file order.
    #[must_use]
    pub fn select(&self, branches: Branches) -> Selection {
        let (order, coverage, fingerprint) = self.selected(branches);
        let records = order.iter().map(|&i| self.records[i].clone()).collect();
        self.selection(branches, records, coverage, fingerprint)
    }

    /// [`Session::select`], moving each selected record's `text` and `thinking` into the
    /// selection instead of copying them: the session's selected records are left without
    /// them. For a reader that builds from the selection and keeps the session only for its
    /// other fields (the index build).
    #[must_use]
    pub fn select_taking_text(&mut self, branches: Branches) -> Selection {
        let (order, coverage, fingerprint) = self.selected(branches);
        let records = self.take_records(&order);
        self.selection(branches, records, coverage, fingerprint)
    }

    /// [`Session::select`], moving the selected records into the selection whole: the
    /// session is left without records (its metadata, coverage and leaf stay). For a reader
    /// that needs nothing of the records but the selection (a cold digest's build).
    #[must_use]
    pub fn take_selection(&mut self, branches: Branches) -> Selection {
        let (order, coverage, fingerprint) = self.selected(branches);
        let records = pick_records(&mut self.records, &order, std::mem::take);
        self.records.clear();
        self.selection(branches, records, coverage, fingerprint)
    }

    /// The records at `order`, each with its texts moved out of the session.
    fn take_records(&mut self, order: &[usize]) -> Vec<Record> {
        pick_records(&mut self.records, order, |r| {
            let text = std::mem::take(&mut r.text);
            let thinking = r.thinking.take();
            let mut copy = r.clone();
            copy.text = text;
            copy.thinking = thinking;
            copy
        })
    }

    fn selection(
        &self,
        branches: Branches,
        mut records: Vec<Record>,
        coverage: ReadCoverage,
        lineage_fingerprint: String,
    ) -> Selection {
        for (i, r) in records.iter_mut().enumerate() {
            r.index = i;
        }
        Selection {
            branches,
            records,
            coverage,
            leaf: self.leaf.clone(),
            lineage_fingerprint,
        }
    }

    /// The positions of the selected records in selection order, the coverage with the
    /// lineage reasons, and the lineage fingerprint.
    fn selected(&self, branches: Branches) -> (Vec<usize>, ReadCoverage, String) {
        let mut coverage = self.coverage.clone();
        let mut hasher = Sha256::new();
        hasher.update(branches.as_str().as_bytes());
        hasher.update([0]);
        hasher.update(self.leaf.as_deref().unwrap_or("").as_bytes());
        hasher.update([0]);

        let order: Vec<usize> = match branches {
            Branches::All => {
                for r in &self.records {
                    hasher.update(r.entry_id.as_bytes());
                    hasher.update([0]);
                }
                (0..self.records.len()).collect()
            }
            Branches::Active => {
                let path = self.active_path(&mut coverage);
                for &i in &path {
                    hasher.update(self.records[i].entry_id.as_bytes());
                    hasher.update([0]);
                }
                let on_path: HashSet<&str> = path
                    .iter()
                    .map(|&i| self.records[i].entry_id.as_str())
                    .collect();
                let mut children: HashMap<&str, Vec<usize>> = HashMap::default();
                for (i, r) in self.records.iter().enumerate() {
                    if let Some(p) = r.parent_entry_id.as_deref() {
                        if on_path.contains(p) {
                            children.entry(p).or_default().push(i);
                        }
                    }
                }
                let mut out = Vec::with_capacity(path.len());
                for &i in &path {
                    out.push(i);
                    if let Some(kids) = children.get(self.records[i].entry_id.as_str()) {
                        out.extend_from_slice(kids);
                    }
                }
                out
            }
        };
        (order, coverage, hex(&hasher.finalize()))
    }

    /// Indices of the active path, root first.
    fn active_path(&self, coverage: &mut ReadCoverage) -> Vec<usize> {
        let Some(leaf) = self.leaf.as_deref() else {
            return Vec::new();
        };
        let mut by_id: HashMap<&str, usize> =
            HashMap::with_capacity_and_hasher(self.records.len(), Default::default());
        for (i, r) in self.records.iter().enumerate() {
            if r.parent_entry_id.is_none() {
                by_id.insert(r.entry_id.as_str(), i);
            }
        }
        let mut path = Vec::new();
        let mut seen = HashSet::default();
        let mut cur = by_id.get(leaf).copied();
        while let Some(i) = cur {
            if !seen.insert(i) {
                coverage.add(ReasonCode::InvalidParentGraph, self.records[i].line);
                break;
            }
            path.push(i);
            let r = &self.records[i];
            let parent = r.logical_parent_id.as_deref().or(r.parent_id.as_deref());
            cur = match parent {
                None => None,
                Some(p) => {
                    let next = by_id.get(p).copied();
                    if next.is_none() {
                        coverage.add(ReasonCode::MissingParent, r.line);
                    }
                    next
                }
            };
        }
        path.reverse();
        path
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Collects records while a format reader runs, then resolves duplicates and pairs tool calls
/// with their results.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    pub meta: SessionMeta,
    pub records: Vec<Record>,
    pub coverage: ReadCoverage,
    pub leaf: Option<String>,
    /// Redact credentials in every record pushed ([`crate::ReadOptions::redact_secrets`]).
    pub redact: bool,
}

impl Builder {
    pub fn new(file: &str) -> Self {
        Builder {
            meta: SessionMeta {
                file: file.to_owned(),
                ..SessionMeta::default()
            },
            coverage: ReadCoverage::new(),
            ..Builder::default()
        }
    }

    /// Adds a record, tracking first/last timestamps.
    pub fn push(&mut self, mut r: Record) {
        if self.redact {
            crate::redact::redact_in_place(&mut r.text);
            if let Some(t) = r.thinking.as_mut() {
                crate::redact::redact_in_place(t);
            }
            for f in &mut r.files_touched {
                crate::redact::redact_in_place(f);
            }
        }
        if let Some(ts) = r.timestamp.as_deref() {
            if self.meta.first_ts.as_deref().is_none_or(|f| ts < f) {
                self.meta.first_ts = Some(ts.to_owned());
            }
            if self.meta.last_ts.as_deref().is_none_or(|l| ts > l) {
                self.meta.last_ts = Some(ts.to_owned());
            }
        }
        self.records.push(r);
    }

    /// Finishes: duplicate ids resolve to the last record (`duplicate_entry_id`), tool call
    /// children take `outcome`/`isError` from the result with the same call id.
    pub fn finish(mut self) -> Session {
        // Duplicates: keep the last top-level record of each id, and the children of that one.
        let mut last: HashMap<&str, usize> = HashMap::default();
        for (i, r) in self.records.iter().enumerate() {
            if r.parent_entry_id.is_none() {
                last.insert(r.entry_id.as_str(), i);
            }
        }
        let mut keep = vec![true; self.records.len()];
        let mut dup_lines = Vec::new();
        let mut owner_kept = true;
        for (i, r) in self.records.iter().enumerate() {
            if r.parent_entry_id.is_none() {
                owner_kept = last.get(r.entry_id.as_str()) == Some(&i);
                if !owner_kept {
                    dup_lines.push(r.line);
                }
            }
            keep[i] = owner_kept;
        }
        drop(last);
        for line in dup_lines {
            self.coverage.add(ReasonCode::DuplicateEntryId, line);
        }
        if keep.iter().any(|k| !k) {
            let mut it = keep.iter();
            self.records.retain(|_| *it.next().unwrap_or(&true));
        }

        // A child record speaks for its carrier: it takes the carrier's role when the reader
        // gave it none.
        let mut carrier_role: Option<String> = None;
        for r in &mut self.records {
            if r.parent_entry_id.is_none() {
                carrier_role.clone_from(&r.role);
            } else if r.role.is_none() {
                r.role.clone_from(&carrier_role);
            }
        }

        // Pair calls with results.
        let mut results: HashMap<String, (Option<Outcome>, Option<bool>)> = HashMap::default();
        for r in &self.records {
            if r.parent_entry_id.is_none() && r.kind != "tool_call" {
                if let Some(id) = r.call_id.as_deref() {
                    if r.outcome.is_some() || r.is_error.is_some() {
                        results.insert(id.to_owned(), (r.outcome, r.is_error));
                    }
                }
            }
        }
        for r in &mut self.records {
            if r.kind == "tool_call" {
                if let Some((outcome, is_error)) =
                    r.call_id.as_deref().and_then(|id| results.get(id))
                {
                    if r.outcome.is_none() {
                        r.outcome = *outcome;
                    }
                    if r.is_error.is_none() {
                        r.is_error = *is_error;
                    }
                }
            }
        }
        if self.leaf.is_none() {
            self.leaf = self
                .records
                .iter()
                .rev()
                .find(|r| r.parent_entry_id.is_none())
                .map(|r| r.entry_id.clone());
        }
        Session {
            meta: self.meta,
            records: self.records,
            coverage: self.coverage,
            leaf: self.leaf,
            resume_state: None,
        }
    }
}

/// `take` of each record at `order`, in order. The positions a selection walks are distinct;
/// should one come twice, the second is a copy of the first; one past the records is skipped.
fn pick_records(
    records: &mut [Record],
    order: &[usize],
    mut take: impl FnMut(&mut Record) -> Record,
) -> Vec<Record> {
    let mut placed = vec![usize::MAX; records.len()];
    let mut out: Vec<Record> = Vec::with_capacity(order.len());
    for &i in order {
        if let Some(&at) = placed.get(i).filter(|&&at| at != usize::MAX) {
            let copy = out[at].clone();
            out.push(copy);
            continue;
        }
        let Some(r) = records.get_mut(i) else {
            continue;
        };
        placed[i] = out.len();
        out.push(take(r));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, parent: Option<&str>, line: u64) -> Record {
        Record {
            entry_id: id.into(),
            parent_id: parent.map(Into::into),
            kind: "message".into(),
            line,
            ..Record::default()
        }
    }

    #[test]
    fn active_path_and_cycles() {
        let mut b = Builder::new("f");
        b.push(rec("a", None, 1));
        b.push(rec("b", Some("a"), 2));
        b.push(rec("c", Some("a"), 3));
        b.push(rec("d", Some("c"), 4));
        let s = b.finish();
        let active = s.select(Branches::Active);
        let ids: Vec<_> = active.records.iter().map(|r| r.entry_id.as_str()).collect();
        assert_eq!(ids, ["a", "c", "d"]);
        assert!(active.coverage.complete);
        assert_eq!(s.select(Branches::All).records.len(), 4);
        assert_ne!(
            active.lineage_fingerprint,
            s.select(Branches::All).lineage_fingerprint
        );

        let mut b = Builder::new("f");
        b.push(rec("a", Some("b"), 1));
        b.push(rec("b", Some("a"), 2));
        let s = b.finish();
        let active = s.select(Branches::Active);
        assert_eq!(active.records.len(), 2);
        assert_eq!(active.coverage.count(ReasonCode::InvalidParentGraph), 1);
    }

    #[test]
    fn select_taking_text_is_select() {
        let mut b = Builder::new("f");
        let mut a = rec("a", None, 1);
        a.text = "root".into();
        a.thinking = Some("why".into());
        b.push(a);
        let mut abandoned = rec("x", Some("a"), 2);
        abandoned.text = "off the path".into();
        b.push(abandoned);
        let mut call = rec("a/1", None, 3);
        call.parent_entry_id = Some("a".into());
        call.text = "a child of a".into();
        b.push(call);
        let mut c = rec("c", Some("a"), 4);
        c.text = "the leaf".into();
        c.thinking = Some("done".into());
        b.push(c);
        let s = b.finish();
        for branches in [Branches::Active, Branches::All] {
            let want = s.select(branches);
            let mut taken = s.clone();
            let got = taken.select_taking_text(branches);
            assert_eq!(got, want, "{branches:?}");
            let mut moved = s.clone();
            assert_eq!(moved.take_selection(branches), want, "{branches:?}");
            assert!(moved.records.is_empty());
            assert_eq!(moved.meta, s.meta);
            for r in &taken.records {
                let selected = want.records.iter().any(|w| w.entry_id == r.entry_id);
                assert_eq!(r.text.is_empty(), selected, "{}", r.entry_id);
                if selected {
                    assert_eq!(r.thinking, None);
                }
            }
        }
        let ids: Vec<_> = s
            .select(Branches::Active)
            .records
            .into_iter()
            .map(|r| r.entry_id)
            .collect();
        assert_eq!(ids, ["a", "a/1", "c"]);
        // A position taken twice: the second is a copy of the first, texts and all.
        let mut taken = s.clone();
        let twice = taken.take_records(&[3, 0, 3]);
        assert_eq!(twice[0], s.records[3]);
        assert_eq!(twice[2], s.records[3]);
        assert_eq!(twice[1], s.records[0]);
        let twice = pick_records(&mut s.records.clone(), &[3, 0, 3, 9], std::mem::take);
        assert_eq!(
            twice,
            [
                s.records[3].clone(),
                s.records[0].clone(),
                s.records[3].clone()
            ]
        );
    }

    #[test]
    fn duplicates_resolve_to_last() {
        let mut b = Builder::new("f");
        b.push(rec("a", None, 1));
        let mut first = rec("b", Some("a"), 2);
        first.text = "old".into();
        b.push(first);
        let mut second = rec("b", Some("a"), 3);
        second.text = "new".into();
        b.push(second);
        let s = b.finish();
        assert_eq!(s.records.len(), 2);
        assert_eq!(s.records[1].text, "new");
        assert_eq!(s.coverage.count(ReasonCode::DuplicateEntryId), 1);
        assert!(!s.coverage.complete);
    }
}
