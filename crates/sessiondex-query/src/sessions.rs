//! `sessions` (the catalog, filtered, newest first) and `trace` (session lineage across
//! files: parents, forks, subagents).

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sessiondex_core::catalog::CatalogEntry;
use sessiondex_core::{format_rfc3339_ms, SessionSummary};
use sessiondex_source::util::parse_rfc3339_ms;
use sessiondex_source::{Format, SessionLink};

use crate::error::{Error, ErrorCode};
use crate::index::{Index, Resolved};
use crate::request::Coverage;

/// Link kinds that point from a session to its parent.
pub const PARENT_LINKS: [&str; 4] = [
    "parent_session",
    "branched_from",
    "forked_from",
    "subagent_of",
];

/// Whether the source of an indexed session is still what was indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    /// The source exists with the size and mtime that were indexed.
    Available,
    /// The source exists but changed since it was indexed.
    Stale,
    /// The source is gone.
    Missing,
}

/// A `sessions` request; every filter is optional and they combine with AND.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionsRequest {
    /// An exact session id or source path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Sessions whose cwd is this directory or below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Created at or after (RFC 3339 or `YYYY-MM-DD`; the header's time, else the first
    /// record's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_since: Option<String>,
    /// Created at or before (a bare date covers its whole day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_until: Option<String>,
    /// Sessions whose parent link (parent, fork, subagent) names this id or path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Only sessions with this availability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability: Option<Availability>,
    /// At most this many rows (default: the config's `maxSessions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// One session as `sessions` and `trace` list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    /// The session id.
    pub session_id: String,
    /// The source path.
    pub file: String,
    /// The format.
    pub format: Option<Format>,
    /// Working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Creation time from the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Earliest record timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_ts: Option<String>,
    /// Latest record timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ts: Option<String>,
    /// Records in the branch mode.
    pub entry_count: u64,
    /// Records with a typed error.
    pub error_count: u64,
    /// `hot`, `cold`, or `unindexed`.
    pub tier: String,
    /// Whether the source is still what was indexed.
    pub availability: Availability,
    /// Links to other sessions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<SessionLink>,
    /// SHA-256 of the source as indexed.
    pub source_hash: String,
    /// The lineage fingerprint as indexed.
    pub lineage_fingerprint: String,
    /// Whether the session was indexed completely.
    pub complete: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
}

/// The answer of `sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsPage {
    /// Sessions that pass the filters (before `limit`).
    pub total: u64,
    /// Rows, newest first (by last timestamp, then path).
    pub sessions: Vec<SessionRow>,
    /// Coverage of the listing.
    pub coverage: Coverage,
}

fn row_of(s: &SessionSummary, tier: &str, avail: Availability, hash: &str) -> SessionRow {
    SessionRow {
        session_id: s.session_id.clone(),
        file: s.file.clone(),
        format: s.format,
        cwd: s.cwd.clone(),
        title: s.title.clone(),
        created: s.created.clone(),
        first_ts: s.first_ts.and_then(format_rfc3339_ms),
        last_ts: s.last_ts.and_then(format_rfc3339_ms),
        entry_count: s.entry_count,
        error_count: s.error_count,
        tier: tier.to_owned(),
        availability: avail,
        links: s.links.clone(),
        source_hash: hash.to_owned(),
        lineage_fingerprint: s.lineage_fingerprint.clone(),
        complete: s.coverage.complete,
        reasons: s.coverage.reasons.iter().map(|r| r.code.clone()).collect(),
    }
}

/// The row of catalog entry `e` of `index`.
#[must_use]
pub fn row(index: &Index, e: &CatalogEntry) -> SessionRow {
    let mut r = row_of(
        &e.summary,
        e.tier.as_str(),
        index.availability(e),
        &e.identity.source_hash,
    );
    r.file.clone_from(&e.identity.path);
    r
}

fn time(field: &str, s: &str, end_of_day: bool) -> Result<i64, Error> {
    let ms = parse_rfc3339_ms(s).ok_or_else(|| {
        Error::new(
            ErrorCode::InvalidTime,
            format!("`{field}` is not an RFC 3339 time or a YYYY-MM-DD date: `{s}`"),
        )
    })?;
    Ok(if end_of_day && s.trim().len() == 10 {
        ms + 86_399_999
    } else {
        ms
    })
}

fn below(cwd: Option<&str>, dir: &str) -> bool {
    let Some(c) = cwd else { return false };
    let c = c.trim_end_matches('/');
    let d = dir.trim_end_matches('/');
    d.is_empty() || c == d || c.strip_prefix(d).is_some_and(|r| r.starts_with('/'))
}

/// Whether a link target names catalog entry `e`: its id, its path, or its file name / stem.
fn names(e: &CatalogEntry, target: &str) -> bool {
    let p = Path::new(&e.identity.path);
    e.summary.session_id == target
        || e.identity.path == target
        || p.file_name().is_some_and(|n| n == target)
        || p.file_stem().is_some_and(|n| n == target)
        || (target.contains('/') && e.identity.path.ends_with(target))
}

fn find(index: &Index, target: &str) -> Option<usize> {
    let es = index.entries();
    es.iter()
        .position(|e| e.summary.session_id == target || e.identity.path == target)
        .or_else(|| es.iter().position(|e| names(e, target)))
}

fn parent_link(links: &[SessionLink]) -> Option<&SessionLink> {
    PARENT_LINKS
        .iter()
        .find_map(|k| links.iter().find(|l| l.kind == *k))
}

/// Lists the sessions of `index` that pass the filters, newest first.
///
/// # Errors
///
/// `invalid_time` for a bad created bound.
pub fn sessions(
    index: &Index,
    req: &SessionsRequest,
    max_sessions: usize,
) -> Result<SessionsPage, Error> {
    let since = req
        .created_since
        .as_deref()
        .map(|s| time("createdSince", s, false))
        .transpose()?;
    let until = req
        .created_until
        .as_deref()
        .map(|s| time("createdUntil", s, true))
        .transpose()?;
    let parent = req.parent.as_deref().map(|p| (p, find(index, p)));
    let mut rows: Vec<(Option<i64>, SessionRow)> = Vec::new();
    for e in index.entries() {
        let s = &e.summary;
        if let Some(id) = &req.id {
            if s.session_id != *id && e.identity.path != *id && s.file != *id {
                continue;
            }
        }
        if let Some(c) = &req.cwd {
            if !below(s.cwd.as_deref(), c) {
                continue;
            }
        }
        if since.is_some() || until.is_some() {
            let created = s
                .created
                .as_deref()
                .and_then(parse_rfc3339_ms)
                .or(s.first_ts);
            let Some(t) = created else { continue };
            if since.is_some_and(|a| t < a) || until.is_some_and(|b| t > b) {
                continue;
            }
        }
        if let Some((p, pi)) = parent {
            let Some(l) = parent_link(&s.links) else {
                continue;
            };
            let hit = l.target == p
                || pi.is_some_and(|pi| {
                    index
                        .entries()
                        .get(pi)
                        .is_some_and(|pe| names(pe, &l.target))
                });
            if !hit {
                continue;
            }
        }
        let r = row(index, e);
        if req.availability.is_some_and(|a| a != r.availability) {
            continue;
        }
        rows.push((s.last_ts, r));
    }
    // Files are unique, so any sort gives this one order; an unstable one is the smaller
    // code in the browser build (docs/wasm.md).
    rows.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.file.cmp(&b.1.file)));
    let total = rows.len() as u64;
    let limit = req.limit.unwrap_or(max_sessions);
    let mut coverage = Coverage::complete();
    coverage.eligible_sessions = index.entries().len() as u64;
    coverage.indexed_sessions = coverage.eligible_sessions;
    for (_, r) in &rows {
        if !r.complete {
            coverage.incomplete_sessions += 1;
            for code in &r.reasons {
                coverage.add_reason(code);
            }
        }
        if r.availability != Availability::Available {
            coverage.stale_sessions += 1;
            coverage.add_reason("source_changed");
        }
    }
    Ok(SessionsPage {
        total,
        sessions: rows.into_iter().take(limit).map(|(_, r)| r).collect(),
        coverage,
    })
}

/// One step of a trace: the link followed and the session it led to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceStep {
    /// The link (kind and target as the child wrote it).
    pub link: SessionLink,
    /// Distance from the traced session (1: parent or child).
    pub depth: u32,
    /// The session.
    pub session: SessionRow,
}

/// The answer of `trace`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    /// The traced session.
    pub session: SessionRow,
    /// Parents, nearest first.
    pub ancestors: Vec<TraceStep>,
    /// The root of the lineage (a session with no parent link), when reached.
    pub root: Option<SessionRow>,
    /// The first parent link that names no known session, when the walk stopped there.
    pub unresolved_parent: Option<SessionLink>,
    /// Sessions descending from this one (children, grandchildren, ...), breadth first.
    pub descendants: Vec<TraceStep>,
    /// A parent cycle stopped the walk.
    pub cycle: bool,
}

/// Traces a session's lineage across files.
///
/// # Errors
///
/// `session_not_found`, `ambiguous_session`, `source_unreadable` for an unindexed file.
pub fn trace(index: &Index, session: &str) -> Result<Trace, Error> {
    let es = index.entries();
    let (start, start_row, start_links) = match index.resolve(session)? {
        Resolved::Indexed(i) => (Some(i), row(index, &es[i]), es[i].summary.links.clone()),
        Resolved::Unindexed(p) => {
            let h = index.hydrate(&p, index.branches(), None, None)?;
            let s = SessionSummary::new(&h.session.meta, &h.selection);
            let r = row_of(&s, "unindexed", Availability::Available, &h.source_hash);
            (None, r, s.links)
        }
    };
    let mut ancestors = Vec::new();
    let mut root = None;
    let mut unresolved = None;
    let mut cycle = false;
    let mut seen: HashSet<usize> = start.into_iter().collect();
    let mut links = start_links;
    let mut current_row = start_row.clone();
    let mut depth = 0;
    loop {
        let Some(l) = parent_link(&links).cloned() else {
            root = Some(current_row);
            break;
        };
        let Some(p) = find(index, &l.target) else {
            unresolved = Some(l);
            break;
        };
        if !seen.insert(p) {
            cycle = true;
            break;
        }
        depth += 1;
        let r = row(index, &es[p]);
        ancestors.push(TraceStep {
            link: l,
            depth,
            session: r.clone(),
        });
        links = es[p].summary.links.clone();
        current_row = r;
    }
    // Children: every session whose parent link resolves to a session of the frontier.
    let mut children: HashMap<usize, Vec<(usize, SessionLink)>> = HashMap::new();
    for (j, e) in es.iter().enumerate() {
        if let Some(l) = parent_link(&e.summary.links) {
            if let Some(p) = find(index, &l.target) {
                if p != j {
                    children.entry(p).or_default().push((j, l.clone()));
                }
            }
        }
    }
    let mut descendants = Vec::new();
    if let Some(s) = start {
        let mut queue = VecDeque::from([(s, 0u32)]);
        let mut visited: HashSet<usize> = HashSet::from([s]);
        while let Some((node, d)) = queue.pop_front() {
            for (c, l) in children.get(&node).into_iter().flatten() {
                if visited.insert(*c) {
                    descendants.push(TraceStep {
                        link: l.clone(),
                        depth: d + 1,
                        session: row(index, &es[*c]),
                    });
                    queue.push_back((*c, d + 1));
                }
            }
        }
    }
    Ok(Trace {
        session: start_row,
        ancestors,
        root,
        unresolved_parent: unresolved,
        descendants,
        cycle,
    })
}
