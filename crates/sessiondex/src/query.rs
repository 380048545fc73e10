//! The query entry points of [`Memory`]: recall, expand, call, walk, sessions, trace.
//!
//! Each opens the index of the call's branch mode; `recall` and `sessions` sync it first
//! (within the budgets), as a user who just typed a query expects, and merge the sync's
//! counts into the answer's coverage.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sessiondex_query::engine::{self, EngineOptions, QueryContext};
use sessiondex_query::expand::{self, Expansion, Walk, WalkRequest};
use sessiondex_query::index::Index;
use sessiondex_query::request::{
    Call, CallRef, Coverage, ExpandRequest, Page, RecallRequest, Scope,
};
use sessiondex_query::sessions::{self, SessionsPage, SessionsRequest, Trace};
use sessiondex_query::RegexLimits;
use sessiondex_source::Branches;

use crate::sync::{self, policy, IndexCoverage};
use crate::{Config, Error, ErrorCode, Memory};

/// Sync reasons that concern the corpus rather than one session: they apply to every scope.
const CORPUS_REASONS: [&str; 4] = [
    "max_sync_sessions",
    "max_sync_source_bytes",
    "source_unreadable",
    "source_not_found",
];

/// The answer of [`Memory::call`]: a recall page or an expansion (serialized as itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CallResult {
    /// A `recall` call's page.
    Recall(Page),
    /// An `expand` call's records.
    Expand(Expansion),
}

/// The context of a process: its working directory, and the current session named by the
/// `SESSIONDEX_SESSION` environment variable (an id or path), for `scope: session`.
#[must_use]
pub fn context_from_env() -> QueryContext {
    QueryContext {
        cwd: std::env::current_dir()
            .ok()
            .map(|p| p.to_string_lossy().into_owned()),
        session: std::env::var("SESSIONDEX_SESSION")
            .ok()
            .filter(|s| !s.trim().is_empty()),
    }
}

/// Index coverage (from a sync) as query coverage: the counts, and the reason codes.
#[must_use]
pub fn index_coverage(c: &IndexCoverage) -> Coverage {
    Coverage {
        complete: c.complete,
        indexed_sessions: c.indexed_sessions,
        eligible_sessions: c.eligible_sessions,
        stale_sessions: c.stale_sessions,
        incomplete_sessions: c.incomplete_sessions,
        reasons: c.reasons.iter().map(|r| r.code.clone()).collect(),
        error: None,
    }
}

/// Adds what a sync knows and a scope cannot: sessions that are stale or not indexed at all
/// (a budget stopped the sync, a file could not be read), and corpus-wide reasons.
fn merge_sync(page: &mut Coverage, sync: &IndexCoverage) {
    let unindexed = sync
        .eligible_sessions
        .saturating_sub(sync.indexed_sessions + sync.stale_sessions);
    page.eligible_sessions += unindexed;
    page.stale_sessions += sync.stale_sessions;
    if unindexed > 0 || sync.stale_sessions > 0 {
        page.complete = false;
    }
    for r in &sync.reasons {
        if CORPUS_REASONS.contains(&r.code.as_str()) {
            page.add_reason(&r.code);
        }
    }
}

/// The engine options of a config.
#[must_use]
pub fn engine_options(config: &Config) -> EngineOptions {
    let automaton = config.regex_max_automaton_bytes / 2;
    EngineOptions {
        policy: policy(config),
        regex: RegexLimits {
            max_pattern_bytes: config.regex_max_pattern_bytes,
            max_nfa_bytes: automaton,
            max_dfa_bytes: automaton,
            max_determinize_bytes: automaton,
            max_haystack_bytes: config.regex_max_haystack_bytes,
        },
    }
}

impl Memory {
    /// The index of `branches`: the one an earlier call opened while it is still current
    /// ([`Index::is_current`]), else opened now and kept.
    fn index(&self, branches: Branches) -> Result<Arc<Index>, Error> {
        let mut open = self
            .indexes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, index)) = open.iter().find(|(b, _)| *b == branches) {
            if index.is_current() {
                return Ok(Arc::clone(index));
            }
        }
        let index = Arc::new(Index::open(self.index_dir(), branches)?);
        index.set_cold_cache_bytes(self.cold_cache_bytes);
        index.set_background_builds(self.background_builds);
        open.retain(|(b, _)| *b != branches);
        open.push((branches, Arc::clone(&index)));
        Ok(index)
    }

    /// Recall in the context of this process ([`context_from_env`]).
    ///
    /// # Errors
    ///
    /// As [`Memory::recall_in`].
    pub fn recall(&self, req: &RecallRequest) -> Result<Page, Error> {
        self.recall_in(req, &context_from_env())
    }

    /// Syncs the index of the request's branch mode, then runs the recall; the page's
    /// coverage includes the sync's stale and unindexed sessions.
    ///
    /// # Errors
    ///
    /// Every code of [`sessiondex_query::engine::recall`]; `index_unavailable` when the sync
    /// cannot write the index.
    pub fn recall_in(&self, req: &RecallRequest, ctx: &QueryContext) -> Result<Page, Error> {
        // Refuse a malformed request before any work.
        let valid = req.clone().validate()?;
        let report = self.sync(valid.branches, &mut |_, _| {})?;
        match self.recall_indexed(req, ctx, &report.coverage) {
            // A damaged index file that the sync's cheap checks let through (same length):
            // remove what fails to open, rebuild it from source, answer once more.
            Err(e) if e.code == ErrorCode::IndexCorrupt => {
                if sync::remove_damaged(&self.store, valid.branches) == 0 {
                    return Err(e);
                }
                let report = self.sync(valid.branches, &mut |_, _| {})?;
                self.recall_indexed(req, ctx, &report.coverage)
            }
            r => r,
        }
    }

    /// [`Memory::recall_in`] over the index as the caller's last sync left it, without
    /// syncing first (for a caller that syncs on its own schedule, like the MCP server's
    /// background sync); `sync` is that sync's coverage, merged into the page's.
    ///
    /// # Errors
    ///
    /// Every code of [`sessiondex_query::engine::recall`].
    pub fn recall_indexed(
        &self,
        req: &RecallRequest,
        ctx: &QueryContext,
        sync: &IndexCoverage,
    ) -> Result<Page, Error> {
        let valid = req.clone().validate()?;
        let index = self.index(valid.branches)?;
        let mut page = engine::recall(&index, &engine_options(self.config()), ctx, req)?;
        if !matches!(valid.scope, Scope::Session | Scope::Explicit(_)) {
            merge_sync(&mut page.coverage, sync);
        }
        Ok(page)
    }

    /// [`Memory::expand`] without syncing first: a session named by id resolves only if the
    /// index already holds it.
    ///
    /// # Errors
    ///
    /// Every code of [`sessiondex_query::expand::expand`].
    pub fn expand_indexed(&self, req: &ExpandRequest) -> Result<Expansion, Error> {
        let index = self.index(req.branches.unwrap_or_default())?;
        expand::expand(&index, &engine_options(self.config()), req)
    }

    /// [`Memory::call_in`] without syncing first ([`Memory::recall_indexed`],
    /// [`Memory::expand_indexed`]).
    ///
    /// # Errors
    ///
    /// As [`Memory::call`].
    pub fn call_indexed(
        &self,
        call: &Call,
        ctx: &QueryContext,
        sync: &IndexCoverage,
    ) -> Result<CallResult, Error> {
        match call.target()? {
            CallRef::Recall => Ok(CallResult::Recall(self.recall_indexed(
                &call.recall_request()?,
                ctx,
                sync,
            )?)),
            CallRef::Expand => Ok(CallResult::Expand(
                self.expand_indexed(&call.expand_request()?)?,
            )),
        }
    }

    /// Re-reads a session and returns the selected records (see
    /// [`sessiondex_query::expand::expand`]). A session named by id syncs the index first so
    /// that new sessions resolve.
    ///
    /// # Errors
    ///
    /// Every code of [`sessiondex_query::expand::expand`].
    pub fn expand(&self, req: &ExpandRequest) -> Result<Expansion, Error> {
        let branches = req.branches.unwrap_or_default();
        if !std::path::Path::new(&req.session).is_file() {
            self.sync(branches, &mut |_, _| {})?;
        }
        let index = self.index(branches)?;
        expand::expand(&index, &engine_options(self.config()), req)
    }

    /// Runs a `follow` or `next` call unchanged.
    ///
    /// # Errors
    ///
    /// `invalid_call` for a malformed call, then the codes of the call's target.
    pub fn call(&self, call: &Call) -> Result<CallResult, Error> {
        self.call_in(call, &context_from_env())
    }

    /// [`Memory::call`] in a given context.
    ///
    /// # Errors
    ///
    /// As [`Memory::call`].
    pub fn call_in(&self, call: &Call, ctx: &QueryContext) -> Result<CallResult, Error> {
        match call.target()? {
            CallRef::Recall => Ok(CallResult::Recall(
                self.recall_in(&call.recall_request()?, ctx)?,
            )),
            CallRef::Expand => Ok(CallResult::Expand(self.expand(&call.expand_request()?)?)),
        }
    }

    /// An iterator over the complete records of one session's selection.
    ///
    /// # Errors
    ///
    /// Every code of [`sessiondex_query::expand::walk`].
    pub fn walk(&self, req: &WalkRequest) -> Result<Walk, Error> {
        let branches = req.branches.unwrap_or_default();
        if !std::path::Path::new(&req.session).is_file() {
            self.sync(branches, &mut |_, _| {})?;
        }
        let index = self.index(branches)?;
        expand::walk(&index, &engine_options(self.config()), req)
    }

    /// Syncs, then lists the sessions passing the filters, newest first, at most
    /// `maxSessions` (or the request's `limit`).
    ///
    /// # Errors
    ///
    /// `invalid_time`, and those of [`Memory::sync`].
    pub fn sessions_filtered(
        &self,
        req: &SessionsRequest,
        branches: Branches,
    ) -> Result<SessionsPage, Error> {
        let report = self.sync(branches, &mut |_, _| {})?;
        self.sessions_indexed(req, branches, &report.coverage)
    }

    /// [`Memory::sessions_filtered`] without syncing first; `sync` is the coverage of the
    /// caller's last sync.
    ///
    /// # Errors
    ///
    /// `invalid_time`; `index_corrupt` or `index_unavailable` for an index that cannot be
    /// opened.
    pub fn sessions_indexed(
        &self,
        req: &SessionsRequest,
        branches: Branches,
        sync: &IndexCoverage,
    ) -> Result<SessionsPage, Error> {
        let index = self.index(branches)?;
        let mut page = sessions::sessions(&index, req, self.config().max_sessions)?;
        merge_sync(&mut page.coverage, sync);
        Ok(page)
    }

    /// Syncs, then traces a session's lineage: ancestors, descendants, the root or the first
    /// parent that could not be found.
    ///
    /// # Errors
    ///
    /// `session_not_found`, `ambiguous_session`, and those of [`Memory::sync`].
    pub fn trace(&self, session: &str, branches: Branches) -> Result<Trace, Error> {
        self.sync(branches, &mut |_, _| {})?;
        let index = self.index(branches)?;
        sessions::trace(&index, session)
    }
}
