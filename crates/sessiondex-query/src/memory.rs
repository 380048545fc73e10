//! An index held entirely in memory: session files added as bytes, their hot shards or cold
//! digests and the catalog built in memory, queried through an [`Index`] over those bytes.
//!
//! This is the index of a page that was handed files (the WASM package): nothing touches a
//! filesystem. The files are the same as the store's, and [`MemoryIndex::export`] /
//! [`MemoryIndex::load`] move them as one [`sessiondex_core::bundle`].
//!
//! ```
//! use sessiondex_query::memory::{MemoryConfig, MemoryIndex};
//! use sessiondex_query::{engine, QueryContext, RecallRequest, Scope};
//! use sessiondex_source::Branches;
//!
//! let log = br#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
//! {"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"the flaky timeout again"}}
//! "#;
//! let mut m = MemoryIndex::new(MemoryConfig::default());
//! m.add_file("s1.jsonl", log).unwrap();
//! let opts = m.engine_options();
//! let req = RecallRequest { query: Some("timeout".into()), scope: Some(Scope::Global), ..RecallRequest::default() };
//! let page = engine::recall(m.index(Branches::Active).unwrap(), &opts, &QueryContext::default(), &req).unwrap();
//! assert_eq!(page.hits[0].file, "s1.jsonl");
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sessiondex_core::bundle::{self, Item, ItemKind};
use sessiondex_core::catalog::{
    Catalog, CatalogBuilder, CatalogEntry, SessionTerms, SourceIdentity, Tier,
};
use sessiondex_core::cold::{self, ColdDigest};
use sessiondex_core::format::{copy_aligned, Aligned, FORMAT_VERSION};
use sessiondex_core::hot::{self, HotShard};
use sessiondex_core::terms::TermList;
use sessiondex_core::{Policy, SessionSummary};
use sessiondex_source::Branches;

use crate::engine::EngineOptions;
use crate::error::{Error, ErrorCode};
use crate::index::{core_error, hydrate_bytes, source_hash, Bytes, Hydrated, Index, MemoryParts};
use crate::regex::RegexLimits;
use crate::sessions::{row, SessionRow};

/// The keys of the product configuration that apply to an in-memory index (camelCase, as in a
/// config file). Defaults are the product's, except `hotSessions`: every session is hot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Sessions listed by `sessions` at most.
    pub max_sessions: usize,
    /// Indexed text per entry, in Unicode scalars.
    pub max_entry_chars: usize,
    /// Index reasoning text.
    pub index_thinking: bool,
    /// Index tool output.
    pub index_tool_output: bool,
    /// How many of the newest sessions (by last timestamp) get hot shards; the rest get cold
    /// digests. `None` (the default): all of them.
    pub hot_sessions: Option<usize>,
    /// Cap on one cold digest's vocabulary.
    pub max_cold_vocabulary_bytes: u64,
    /// Cap on one cold digest file.
    pub max_cold_cache_bytes: u64,
    /// Longest regex pattern accepted, in bytes.
    pub regex_max_pattern_bytes: usize,
    /// Largest compiled regex automaton, in bytes.
    pub regex_max_automaton_bytes: usize,
    /// Most text bytes one regex recall scans.
    pub regex_max_haystack_bytes: u64,
    /// Replace credentials with `[redacted:<kind>]` when reading (`redactSecrets`).
    pub redact_secrets: bool,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            max_sessions: 500,
            max_entry_chars: 2000,
            index_thinking: false,
            index_tool_output: true,
            hot_sessions: None,
            max_cold_vocabulary_bytes: 524_288,
            max_cold_cache_bytes: 1_048_576,
            regex_max_pattern_bytes: 1024,
            regex_max_automaton_bytes: 4 << 20,
            regex_max_haystack_bytes: 256 << 20,
            redact_secrets: true,
        }
    }
}

impl MemoryConfig {
    /// The index policy.
    #[must_use]
    pub fn policy(&self) -> Policy {
        Policy {
            max_entry_chars: u32::try_from(self.max_entry_chars).unwrap_or(u32::MAX),
            index_thinking: self.index_thinking,
            index_tool_output: self.index_tool_output,
            max_cold_vocabulary_bytes: self.max_cold_vocabulary_bytes,
            max_cold_cache_bytes: self.max_cold_cache_bytes,
            redact_secrets: self.redact_secrets,
        }
    }

    /// The engine options (the automaton budget split as the CLI splits it).
    #[must_use]
    pub fn engine_options(&self) -> EngineOptions {
        let automaton = self.regex_max_automaton_bytes / 2;
        EngineOptions {
            policy: self.policy(),
            regex: RegexLimits {
                max_pattern_bytes: self.regex_max_pattern_bytes,
                max_nfa_bytes: automaton,
                max_dfa_bytes: automaton,
                max_determinize_bytes: automaton,
                max_haystack_bytes: self.regex_max_haystack_bytes,
            },
        }
    }
}

/// A session's index file and catalog entry.
#[derive(Debug, Clone)]
struct Built {
    entry: CatalogEntry,
    file: Arc<Aligned>,
    /// A cold session's vocabulary, which its digest does not hold (the catalog does).
    vocabulary: Option<Arc<TermList>>,
}

/// The sessions of one branch mode, and the index over them once built.
#[derive(Debug, Default)]
struct Mode {
    sessions: BTreeMap<String, Built>,
    catalog: Option<Arc<Aligned>>,
    index: Option<Index>,
}

impl Mode {
    fn invalidate(&mut self) {
        self.catalog = None;
        self.index = None;
    }
}

/// Session files in memory and their index, per branch mode.
#[derive(Debug)]
pub struct MemoryIndex {
    config: MemoryConfig,
    sources: BTreeMap<String, Arc<[u8]>>,
    active: Mode,
    all: Mode,
}

fn slot(b: Branches) -> usize {
    match b {
        Branches::Active => 0,
        Branches::All => 1,
    }
}

/// Builds the index file of a read session and its catalog entry.
fn build(h: &Hydrated, size: u64, tier: Tier, policy: &Policy) -> Result<Built, Error> {
    let ce = |e: sessiondex_core::Error| core_error(&e);
    let (file, summary, vocabulary) = match tier {
        Tier::Hot => {
            let file = Arc::new(hot::build(&h.session.meta, &h.selection, policy).map_err(ce)?);
            // The summary as stored in the file (caps may have added reasons there).
            let mut summary = HotShard::open(Bytes::Shared(Arc::clone(&file)))
                .map(|s| s.summary().clone())
                .unwrap_or_else(|_| SessionSummary::new(&h.session.meta, &h.selection));
            summary.cache_bytes = file.len() as u64;
            (file, summary, None)
        }
        // The digest's vocabulary and summary come with it: the file holds neither.
        Tier::Cold => {
            let b = cold::build_digest(&h.session.meta, &h.selection, policy).map_err(ce)?;
            (Arc::new(b.file), b.summary, Some(Arc::new(b.vocabulary)))
        }
    };
    let entry = CatalogEntry {
        summary,
        tier,
        identity: SourceIdentity {
            path: h.path.clone(),
            size,
            source_hash: h.source_hash.clone(),
            ..SourceIdentity::default()
        },
        policy_fingerprint: policy.fingerprint(),
        format_version: FORMAT_VERSION,
    };
    Ok(Built {
        entry,
        file,
        vocabulary,
    })
}

impl MemoryIndex {
    /// An empty index.
    #[must_use]
    pub fn new(config: MemoryConfig) -> MemoryIndex {
        MemoryIndex {
            config,
            sources: BTreeMap::new(),
            active: Mode::default(),
            all: Mode::default(),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    /// The engine options of the configuration.
    #[must_use]
    pub fn engine_options(&self) -> EngineOptions {
        self.config.engine_options()
    }

    /// The names of the files held, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.sources.keys().map(String::as_str)
    }

    fn mode(&mut self, b: Branches) -> &mut Mode {
        match slot(b) {
            0 => &mut self.active,
            _ => &mut self.all,
        }
    }

    /// Adds (or replaces) the session file `name`: detects its format, reads it and builds its
    /// hot shard for the active branch. Returns its `sessions` row.
    ///
    /// # Errors
    ///
    /// `unknown_format` when no reader recognizes the bytes, `source_unreadable`, and
    /// `index_corrupt` / `index_unavailable` when an index file cannot be built. Nothing is
    /// kept then.
    pub fn add_file(&mut self, name: &str, bytes: &[u8]) -> Result<SessionRow, Error> {
        let redact = self.config.redact_secrets;
        let h = hydrate_bytes(name, bytes, Branches::Active, None, None, redact)?;
        let built = build(&h, bytes.len() as u64, Tier::Hot, &self.config.policy())?;
        self.sources.insert(name.to_owned(), Arc::from(bytes));
        self.all.sessions.remove(name);
        self.all.invalidate();
        self.active.sessions.insert(name.to_owned(), built);
        self.active.invalidate();
        let index = self.index(Branches::Active)?;
        let e = index
            .entries()
            .iter()
            .find(|e| e.identity.path == name)
            .ok_or_else(|| Error::new(ErrorCode::IndexUnavailable, "the session was not kept"))?;
        Ok(row(index, e))
    }

    /// Removes the session file `name`; false when it was not there.
    pub fn remove_file(&mut self, name: &str) -> bool {
        let had = self.sources.remove(name).is_some();
        for m in [&mut self.active, &mut self.all] {
            if m.sessions.remove(name).is_some() || had {
                m.invalidate();
            }
        }
        had
    }

    /// The index of a branch mode, built on first use after a change: missing sessions are
    /// read from the bytes held, tiers assigned (the `hotSessions` newest hot), the catalog
    /// written.
    ///
    /// # Errors
    ///
    /// Those of building an index file or the catalog (`index_corrupt`, `index_unavailable`);
    /// a held file that no longer reads is an error of its code (`source_unreadable`).
    pub fn index(&mut self, branches: Branches) -> Result<&Index, Error> {
        if self.mode(branches).index.is_none() {
            self.rebuild(branches)?;
        }
        self.mode(branches)
            .index
            .as_ref()
            .ok_or_else(|| Error::new(ErrorCode::IndexUnavailable, "the index was not built"))
    }

    fn rebuild(&mut self, branches: Branches) -> Result<(), Error> {
        let policy = self.config.policy();
        let fp = policy.fingerprint();
        let sources = self.sources.clone();
        let hot_n = self.config.hot_sessions.unwrap_or(usize::MAX);
        let mode = self.mode(branches);
        mode.sessions
            .retain(|name, b| sources.contains_key(name) && b.entry.policy_fingerprint == fp);
        for (name, bytes) in &sources {
            if !mode.sessions.contains_key(name) {
                let h = hydrate_bytes(name, bytes, branches, None, None, policy.redact_secrets)?;
                let b = build(&h, bytes.len() as u64, Tier::Hot, &policy)?;
                mode.sessions.insert(name.clone(), b);
            }
        }
        // Tiers: the newest `hot_n` sessions by last timestamp are hot.
        let mut order: Vec<(&String, Option<i64>)> = mode
            .sessions
            .iter()
            .map(|(n, b)| (n, b.entry.summary.last_ts))
            .collect();
        // Names are distinct (a map's keys), so the order is total and the unstable sort
        // gives it (in less code than the stable one).
        order.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let want: BTreeMap<String, Tier> = order
            .iter()
            .enumerate()
            .map(|(k, (n, _))| ((*n).clone(), if k < hot_n { Tier::Hot } else { Tier::Cold }))
            .collect();
        for (name, tier) in &want {
            let stale = mode
                .sessions
                .get(name)
                .is_some_and(|b| b.entry.tier != *tier);
            if let (true, Some(bytes)) = (stale, sources.get(name)) {
                let h = hydrate_bytes(name, bytes, branches, None, None, policy.redact_secrets)?;
                let b = build(&h, bytes.len() as u64, *tier, &policy)?;
                mode.sessions.insert(name.clone(), b);
            }
        }
        let ce = |e: sessiondex_core::Error| core_error(&e);
        let mut cb = CatalogBuilder::new(branches);
        let mut files = Vec::with_capacity(mode.sessions.len());
        for b in mode.sessions.values() {
            let terms = match b.entry.tier {
                Tier::Hot => HotShard::open(Bytes::Shared(Arc::clone(&b.file)))
                    .and_then(|h| SessionTerms::of_hot(&h)),
                Tier::Cold => {
                    let v = b.vocabulary.as_deref().cloned().ok_or_else(|| {
                        Error::new(
                            ErrorCode::IndexCorrupt,
                            "a cold session without its vocabulary",
                        )
                    })?;
                    ColdDigest::open(Bytes::Shared(Arc::clone(&b.file)))
                        .and_then(|d| SessionTerms::of_cold(&d, &b.entry.summary.session_id, v))
                }
            }
            .map_err(ce)?;
            cb.add_with(&b.entry, terms).map_err(ce)?;
            files.push(Some(b.file.clone()));
        }
        let catalog = Arc::new(cb.finish().map_err(ce)?);
        let index = Index::from_memory(
            branches,
            MemoryParts {
                catalog: Some(catalog.clone()),
                files,
                sources,
            },
        )?;
        mode.catalog = Some(catalog);
        mode.index = Some(index);
        Ok(())
    }

    /// One bundle with the sources and, for each branch mode built so far (the active one
    /// always), the catalog and every session's index file.
    ///
    /// # Errors
    ///
    /// Those of [`MemoryIndex::index`]; `index_too_large` for a name past `u32::MAX` bytes.
    pub fn export(&mut self) -> Result<Aligned, Error> {
        self.index(Branches::Active)?;
        if !self.all.sessions.is_empty() {
            self.index(Branches::All)?;
        }
        let mut items = Vec::new();
        for (name, bytes) in &self.sources {
            items.push(Item {
                kind: ItemKind::Source,
                branches: None,
                name,
                data: bytes,
            });
        }
        for (b, mode) in [(Branches::Active, &self.active), (Branches::All, &self.all)] {
            let Some(cat) = &mode.catalog else { continue };
            items.push(Item {
                kind: ItemKind::Catalog,
                branches: Some(b),
                name: "",
                data: cat,
            });
            for (name, s) in &mode.sessions {
                items.push(Item {
                    kind: match s.entry.tier {
                        Tier::Hot => ItemKind::Hot,
                        Tier::Cold => ItemKind::Cold,
                    },
                    branches: Some(b),
                    name,
                    data: &s.file,
                });
            }
        }
        bundle::write(items).map_err(|e| core_error(&e))
    }

    /// An index from a bundle of [`MemoryIndex::export`]. Index files are reused when they
    /// open, match their source's hash and were built under this configuration's policy;
    /// others are rebuilt from the sources on first use.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the bundle or a catalog in it fails its checks.
    pub fn load(bytes: &[u8], config: MemoryConfig) -> Result<MemoryIndex, Error> {
        let ce = |e: sessiondex_core::Error| core_error(&e);
        let items = bundle::read(bytes).map_err(ce)?;
        let mut m = MemoryIndex::new(config);
        let fp = m.config.policy().fingerprint();
        for it in items.iter().filter(|it| it.kind == ItemKind::Source) {
            m.sources.insert(it.name.to_owned(), Arc::from(it.data));
        }
        for it in items.iter().filter(|it| it.kind == ItemKind::Catalog) {
            let Some(b) = it.branches else { continue };
            let cat = Catalog::open(Bytes::Owned(copy_aligned(it.data))).map_err(ce)?;
            let mut entries = BTreeMap::new();
            for i in 0..cat.len() {
                let e = cat.session(i).map_err(ce)?;
                entries.insert(e.identity.path.clone(), (e, i));
            }
            // Cold digests do not hold their vocabularies: the catalog's term map does.
            let mut vocabularies = cat.cold_vocabularies().map_err(ce)?;
            for f in items.iter().filter(|f| {
                f.branches == Some(b) && matches!(f.kind, ItemKind::Hot | ItemKind::Cold)
            }) {
                let Some((entry, at)) = entries.remove(f.name) else {
                    continue;
                };
                let tier = if f.kind == ItemKind::Hot {
                    Tier::Hot
                } else {
                    Tier::Cold
                };
                let file = Arc::new(copy_aligned(f.data));
                let vocabulary = vocabularies.get_mut(at).and_then(Option::take);
                let opens = match (tier, &vocabulary) {
                    (Tier::Hot, _) => HotShard::open(Bytes::Shared(Arc::clone(&file))).is_ok(),
                    (Tier::Cold, Some(v)) => ColdDigest::open(Bytes::Shared(Arc::clone(&file)))
                        .is_ok_and(|d| d.vocabulary_len() == v.len()),
                    (Tier::Cold, None) => false,
                };
                let matches = m
                    .sources
                    .get(f.name)
                    .is_some_and(|s| source_hash(s) == entry.identity.source_hash);
                if opens && matches && entry.tier == tier && entry.policy_fingerprint == fp {
                    m.mode(b).sessions.insert(
                        f.name.to_owned(),
                        Built {
                            entry,
                            file,
                            vocabulary: vocabulary.filter(|_| tier == Tier::Cold).map(Arc::new),
                        },
                    );
                }
            }
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{recall, QueryContext};
    use crate::expand::{expand, walk, WalkRequest};
    use crate::request::{ExpandRequest, RecallRequest, Scope};

    const PI: &[u8] = br#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"the flaky timeout again"}}
{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"raising the timeout"}]}}
"#;
    const PI2: &[u8] = br#"{"type":"session","version":3,"id":"s2","timestamp":"2026-01-02T00:00:00Z","cwd":"/p"}
{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-02T00:00:01Z","message":{"role":"user","content":"another timeout elsewhere"}}
"#;

    fn global(q: &str) -> RecallRequest {
        RecallRequest {
            query: Some(q.into()),
            scope: Some(Scope::Global),
            ..RecallRequest::default()
        }
    }

    fn run(m: &mut MemoryIndex, q: &str) -> crate::request::Page {
        let opts = m.engine_options();
        let index = m.index(Branches::Active).expect("index");
        recall(index, &opts, &QueryContext::default(), &global(q)).expect("recall")
    }

    #[test]
    fn add_recall_expand_remove() {
        let mut m = MemoryIndex::new(MemoryConfig::default());
        let row = m.add_file("one.jsonl", PI).expect("add");
        assert_eq!(row.session_id, "s1");
        assert_eq!(row.tier, "hot");
        m.add_file("two.jsonl", PI2).expect("add");
        let page = run(&mut m, "timeout");
        assert_eq!(page.total, 3);
        assert!(page.coverage.complete);
        let opts = m.engine_options();
        let index = m.index(Branches::Active).expect("index");
        let x = expand(
            index,
            &opts,
            &ExpandRequest {
                session: "one.jsonl".into(),
                indices: Some(vec![1]),
                ..ExpandRequest::default()
            },
        )
        .expect("expand");
        assert_eq!(x.entries[0].record.text, "raising the timeout");
        let w = walk(
            index,
            &opts,
            &WalkRequest {
                session: "s2".into(),
                ..WalkRequest::default()
            },
        )
        .expect("walk");
        assert_eq!(w.count(), 1);
        assert!(m.remove_file("two.jsonl"));
        assert!(!m.remove_file("two.jsonl"));
        assert_eq!(run(&mut m, "timeout").total, 2);
    }

    #[test]
    fn unknown_format_is_refused_and_not_kept() {
        let mut m = MemoryIndex::new(MemoryConfig::default());
        let e = m.add_file("x.txt", b"hello\n").expect_err("refused");
        assert_eq!(e.code, ErrorCode::UnknownFormat);
        assert_eq!(m.names().count(), 0);
    }

    #[test]
    fn cold_sessions_answer_with_session_hits_that_hydrate() {
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(1),
            ..MemoryConfig::default()
        });
        m.add_file("one.jsonl", PI).expect("add");
        m.add_file("two.jsonl", PI2).expect("add");
        let page = run(&mut m, "flaky");
        assert_eq!(page.hits.len(), 1);
        assert_eq!(page.hits[0].file, "one.jsonl");
        assert_eq!(page.hits[0].kind, crate::request::HitKind::Session);
        let call = page.hits[0].follow.recall_request().expect("recall call");
        let opts = m.engine_options();
        let index = m.index(Branches::Active).expect("index");
        let inner = recall(index, &opts, &QueryContext::default(), &call).expect("hydrate");
        assert_eq!(inner.hits[0].index, Some(0));
    }

    #[test]
    fn export_load_round_trip_and_damage() {
        let mut m = MemoryIndex::new(MemoryConfig {
            hot_sessions: Some(1),
            ..MemoryConfig::default()
        });
        m.add_file("one.jsonl", PI).expect("add");
        m.add_file("two.jsonl", PI2).expect("add");
        let before = run(&mut m, "timeout");
        let b = m.export().expect("export");
        let mut l = MemoryIndex::load(
            &b,
            MemoryConfig {
                hot_sessions: Some(1),
                ..MemoryConfig::default()
            },
        )
        .expect("load");
        assert_eq!(l.active.sessions.len(), 2, "shards reused");
        assert_eq!(run(&mut l, "timeout"), before);
        // The cold session's terms come back from the bundle's catalog (its digest has none).
        let cold = run(&mut l, "flaky");
        assert_eq!(cold.hits.len(), 1);
        assert_eq!(cold.hits[0].file, "one.jsonl");
        assert_eq!(cold, run(&mut m, "flaky"));
        let mut d = b.to_vec();
        d[40] ^= 1;
        let e = MemoryIndex::load(&d, MemoryConfig::default()).expect_err("damaged");
        assert_eq!(e.code, ErrorCode::IndexCorrupt);
    }
}
