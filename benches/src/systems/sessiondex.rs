//! sessiondex through its public API: `Memory::sync` builds, `engine::recall` over an index
//! opened once answers (the CLI opens it per call; `noopSyncSeconds` is what a call adds).

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context};
use serde_json::{json, Value};
use sessiondex::query::engine;
use sessiondex::query::expand;
use sessiondex::query::index::Index;
use sessiondex::query::{EngineOptions, QueryContext, QueryMatch, QueryMode, Scope};
use sessiondex::source::{Branches, Outcome};
use sessiondex::{engine_options, Config, ExpandRequest, Memory, RecallRequest};

use crate::queries::{Mode, Query};

/// sessiondex with every session hot (`all_hot`) or with the default tiers (50 hot).
#[derive(Debug)]
pub struct Sessiondex {
    config: Config,
    all_hot: bool,
    index: Option<Index>,
    /// The memory that built the index and its directory (for the no-op sync).
    memory: Option<(Memory, std::path::PathBuf)>,
    opts: EngineOptions,
    noop_sync_seconds: f64,
    indexed: u64,
    hot_sessions: u64,
    expand_anchor: Option<(String, String)>,
}

impl Sessiondex {
    /// A system; `all_hot` raises `hotSessions` and the sync budgets past any corpus.
    #[must_use]
    pub fn new(all_hot: bool) -> Sessiondex {
        let config = Self::config(all_hot);
        let opts = engine_options(&config);
        Sessiondex {
            config,
            all_hot,
            index: None,
            memory: None,
            opts,
            noop_sync_seconds: 0.0,
            indexed: 0,
            hot_sessions: 0,
            expand_anchor: None,
        }
    }

    /// The default configuration, or with `all_hot` `hotSessions` and the sync budgets past
    /// any corpus.
    #[must_use]
    pub fn config(all_hot: bool) -> Config {
        let mut config = Config::default();
        if all_hot {
            config.hot_sessions = 1_000_000;
            config.max_sessions = 1_000_000;
            config.max_sync_sessions = 1_000_000;
            config.max_sync_source_bytes = u64::MAX;
        }
        config
    }

    /// Opens a memory of `corpus` with its index in `work` and syncs it until no sync budget
    /// holds a session back (the default `maxSyncSourceBytes` stops a first sync of a large
    /// corpus early); the memory and the last sync's report.
    ///
    /// # Errors
    ///
    /// When the memory cannot be opened, a sync fails, or a session file fails to index.
    pub fn sync_corpus(
        config: &Config,
        corpus: &Path,
        work: &Path,
    ) -> anyhow::Result<(Memory, sessiondex::SyncReport)> {
        let memory = Memory::open(
            config.clone(),
            Some(vec![corpus.to_path_buf()]),
            Some(work.to_path_buf()),
        )
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut report = memory
            .sync(Branches::Active, &mut |_, _| {})
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let budget = |r: &sessiondex::SyncReport| {
            r.coverage
                .reasons
                .iter()
                .any(|x| x.code == "max_sync_source_bytes" || x.code == "max_sync_sessions")
        };
        while budget(&report) && report.indexed > 0 {
            report = memory
                .sync(Branches::Active, &mut |_, _| {})
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        if report.failed > 0 {
            bail!("{} session files failed to index", report.failed);
        }
        Ok((memory, report))
    }

    /// The recall request of a query: global scope, a page of 10.
    #[must_use]
    pub fn request(q: &Query) -> RecallRequest {
        RecallRequest {
            query: q.query.clone(),
            query_mode: Some(match q.mode {
                Mode::Literal => QueryMode::Literal,
                Mode::Phrase => QueryMode::Phrase,
                Mode::Regex => QueryMode::Regex,
                Mode::Fuzzy => QueryMode::Fuzzy,
            }),
            query_match: Some(if q.all {
                QueryMatch::All
            } else {
                QueryMatch::Any
            }),
            scope: Some(Scope::Global),
            tool: q.tool.clone(),
            outcome: q.outcome.as_deref().and_then(Outcome::parse),
            page_size: Some(10),
            ..RecallRequest::default()
        }
    }
}

impl super::System for Sessiondex {
    fn build(&mut self, corpus: &Path, work: &Path) -> anyhow::Result<()> {
        let (memory, report) = Self::sync_corpus(&self.config, corpus, work)?;
        self.indexed = report.coverage.indexed_sessions;
        // Opening the index is part of the build, as tantivy's reader is of its build.
        self.index = Some(Index::open(work, Branches::Active).map_err(|e| anyhow::anyhow!("{e}"))?);
        self.memory = Some((memory, work.to_path_buf()));
        Ok(())
    }

    /// The no-op sync, timed on its own (`noopSyncSeconds`), then the index as it leaves it.
    fn after_build(&mut self) -> anyhow::Result<()> {
        let (memory, work) = self.memory.as_ref().context("not built")?;
        let t = Instant::now();
        let again = memory
            .sync(Branches::Active, &mut |_, _| {})
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        self.noop_sync_seconds = t.elapsed().as_secs_f64();
        if again.indexed > 0 {
            bail!("a second sync re-indexed {} sessions", again.indexed);
        }
        let index = Index::open(work, Branches::Active).map_err(|e| anyhow::anyhow!("{e}"))?;
        self.hot_sessions = index
            .entries()
            .iter()
            .filter(|e| e.tier == sessiondex_core::catalog::Tier::Hot)
            .count() as u64;
        self.index = Some(index);
        Ok(())
    }

    fn query(&mut self, q: &Query) -> anyhow::Result<Option<u64>> {
        let index = self.index.as_ref().context("not built")?;
        let page = engine::recall(
            index,
            &self.opts,
            &QueryContext::default(),
            &Self::request(q),
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", q.id))?;
        if self.expand_anchor.is_none() && q.query.is_some() {
            if let Some(h) = page.hits.first() {
                if let Some(id) = &h.entry_id {
                    self.expand_anchor = Some((h.file.clone(), id.clone()));
                }
            }
        }
        Ok(Some(page.total))
    }

    fn extra_classes(&mut self, reps: usize) -> anyhow::Result<Vec<(String, Vec<f64>, u64)>> {
        let (Some(index), Some((file, id))) = (&self.index, &self.expand_anchor) else {
            return Ok(Vec::new());
        };
        let req = ExpandRequest::from_json(&json!({
            "session": file, "entryIds": [id], "before": 3, "after": 3
        }))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut samples = Vec::new();
        let mut hits = 0;
        for i in 0..=reps {
            let t = Instant::now();
            let x = expand::expand(index, &self.opts, &req).map_err(|e| anyhow::anyhow!("{e}"))?;
            let us = t.elapsed().as_secs_f64() * 1e6;
            if i > 0 {
                samples.push(us);
            }
            hits = x.entries.len() as u64;
        }
        Ok(vec![("expand".to_owned(), samples, hits)])
    }

    fn extra(&self) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("noopSyncSeconds".into(), json!(self.noop_sync_seconds));
        m.insert("indexedSessions".into(), json!(self.indexed));
        m.insert("hotSessions".into(), json!(self.hot_sessions));
        m.insert("allHot".into(), json!(self.all_hot));
        m
    }
}
