//! `sessiondex-bench relevance`: a labeled query set, scored by hit@1, hit@5 and MRR per
//! query class.
//!
//! Labels live in `benches/relevance/*.json`, one file per corpus. Each question holds the
//! recall request as a user or agent would send it (the JSON of a `recall` call), the entries
//! that answer it (session id plus entry id, or session id plus operation address) and a note
//! saying why. The harness syncs each corpus into a scratch index through the public facade
//! ([`Memory`]) and runs every request through [`Memory::recall_indexed`], so it measures
//! whatever ranking the engine has. A question's rank is the 1-based position of the first hit
//! that is one of its expected entries, among the first [`DEPTH`] hits.
//!
//! Corpora: `bundled` (the repository's `examples/sessions` and `testdata/`, always present;
//! `--quick` runs only this one), `generated` (`gen --seed 42` at [`GEN_SIZE`] into a scratch
//! directory, plus the hand-written sessions of `benches/relevance/planted/` copied in: the
//! generated files are the distractors, the planted ones hold the labeled answers) and
//! `fixtures` (the real sessions of `../shared/fixtures/sessions`, skipped with a notice when
//! absent).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sessiondex::query::Scope;
use sessiondex::source::Branches;
use sessiondex::{Config, ExpandRequest, Memory, QueryContext, RecallRequest};

use crate::gen::{generate, GenOptions};

/// The query classes, in report order.
pub const CLASSES: [&str; 5] = [
    "natural_language",
    "identifier",
    "error_message",
    "file_path",
    "tool_outcome",
];

/// How many hits a question's rank is looked for in (one page of the largest size).
pub const DEPTH: u32 = 100;

/// Size of the generated distractor corpus (`gen --seed 42`).
pub const GEN_SIZE: u64 = 6 << 20;
/// Largest generated file (so the corpus is a few dozen sessions, not one big one).
pub const GEN_MAX_FILE: u64 = 1 << 20;
/// Seed of the generated corpus.
pub const GEN_SEED: u64 = 42;

/// `--quick` fails when hit@5 over its questions falls below this (measured: see
/// `docs/performance.md`, section Relevance).
pub const QUICK_HIT5_FLOOR: f64 = 0.75;

/// One expected answer: an entry (`entry`) or a tool operation (`address`) of a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    /// The session id.
    pub session: String,
    /// The entry id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// The operation address of a tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

/// One labeled question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// A stable name.
    pub id: String,
    /// One of [`CLASSES`].
    pub class: String,
    /// The recall request (JSON of a `recall` call); `scope` defaults to `global` here.
    pub request: Value,
    /// The entries that answer the question; any of them counts.
    pub expect: Vec<Expected>,
    /// Why these entries are the answer.
    pub note: String,
    /// A hard guarantee: `hit1` or `hit5`; `--quick` fails when it is not met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub must: Option<String>,
    /// In the `--quick` subset.
    #[serde(default)]
    pub quick: bool,
}

/// A label file: the questions of one corpus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelFile {
    /// `bundled`, `generated` or `fixtures`.
    pub corpus: String,
    /// What the corpus is and how the labels were made.
    pub description: String,
    /// The questions.
    pub questions: Vec<Question>,
}

impl LabelFile {
    /// Reads and checks a label file.
    ///
    /// # Errors
    ///
    /// When it cannot be read or parsed, or a question has an unknown class, no expected
    /// entry, an expected entry with neither or both of `entry` and `address`, or an id
    /// used twice.
    pub fn load(path: &Path) -> anyhow::Result<LabelFile> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let f: LabelFile =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let mut seen = std::collections::HashSet::new();
        for q in &f.questions {
            if !CLASSES.contains(&q.class.as_str()) {
                bail!("{}: {}: unknown class `{}`", path.display(), q.id, q.class);
            }
            if !seen.insert(q.id.clone()) {
                bail!("{}: question id `{}` used twice", path.display(), q.id);
            }
            if q.expect.is_empty()
                || q.expect
                    .iter()
                    .any(|e| e.entry.is_some() == e.address.is_some())
            {
                bail!(
                    "{}: {}: each expected answer needs exactly one of entry, address",
                    path.display(),
                    q.id
                );
            }
            if !matches!(q.must.as_deref(), None | Some("hit1" | "hit5")) {
                bail!("{}: {}: `must` is hit1 or hit5", path.display(), q.id);
            }
            RecallRequest::from_json(&q.request)
                .map_err(|e| anyhow::anyhow!("{}: {}: {e}", path.display(), q.id))?;
        }
        Ok(f)
    }
}

/// What one question scored.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// The corpus.
    pub corpus: String,
    /// The question id.
    pub id: String,
    /// Its class.
    pub class: String,
    /// 1-based rank of the first expected entry, `None` when not in the first [`DEPTH`].
    pub rank: Option<u32>,
    /// Hits the recall retained in all.
    pub total: u64,
    /// The first hit: session, entry or address, and snippet.
    pub top_hit: Option<Value>,
    /// The query text.
    pub query: Option<String>,
    /// The expected entries.
    pub expect: Vec<Expected>,
    /// The label's `must`.
    pub must: Option<String>,
    /// The label's note.
    pub note: String,
}

impl Outcome {
    /// The rank meets the question's `must` (always true without one).
    #[must_use]
    pub fn guarantee_met(&self) -> bool {
        match self.must.as_deref() {
            Some("hit1") => self.rank == Some(1),
            Some("hit5") => self.rank.is_some_and(|r| r <= 5),
            _ => true,
        }
    }
}

/// hit@1, hit@5 and MRR of a set of outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Scores {
    /// Questions.
    pub questions: usize,
    /// Share ranked first.
    pub hit1: f64,
    /// Share ranked in the first five.
    pub hit5: f64,
    /// Mean reciprocal rank (0 past [`DEPTH`]).
    pub mrr: f64,
}

impl Scores {
    /// Scores of the outcomes.
    #[must_use]
    pub fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Scores {
        let (mut n, mut h1, mut h5, mut rr) = (0usize, 0usize, 0usize, 0f64);
        for o in outcomes {
            n += 1;
            if let Some(r) = o.rank {
                h1 += usize::from(r == 1);
                h5 += usize::from(r <= 5);
                rr += 1.0 / f64::from(r);
            }
        }
        let d = n.max(1) as f64;
        Scores {
            questions: n,
            hit1: h1 as f64 / d,
            hit5: h5 as f64 / d,
            mrr: rr / d,
        }
    }
}

/// Where things are.
#[derive(Debug, Clone)]
pub struct RelevanceOptions {
    /// `benches/relevance` (label files and `planted/`).
    pub labels: PathBuf,
    /// The repository root (for `examples/sessions` and `testdata`).
    pub repo: PathBuf,
    /// The real fixtures (`../shared/fixtures/sessions`).
    pub fixtures: PathBuf,
    /// Scratch directory (generated corpus and indexes); removed afterwards.
    pub work: PathBuf,
    /// Only the `quick` questions of the bundled corpus.
    pub quick: bool,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Report {
    /// Every question's outcome.
    pub outcomes: Vec<Outcome>,
    /// Notices (a corpus skipped).
    pub notices: Vec<String>,
}

fn all_hot() -> Config {
    Config {
        hot_sessions: 1_000_000,
        max_sessions: 1_000_000,
        max_sync_sessions: 1_000_000,
        max_sync_source_bytes: u64::MAX,
        ..Config::default()
    }
}

fn copy_tree(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let e = e?;
        let dest = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else {
            std::fs::copy(e.path(), &dest)
                .with_context(|| format!("copying {}", e.path().display()))?;
        }
    }
    Ok(())
}

fn hit_json(h: &sessiondex::query::request::Hit) -> Value {
    json!({
        "session": h.session_id,
        "entry": h.entry_id,
        "address": h.operation_address,
        "snippet": h.snippet.as_ref().map(|s| s.text.chars().take(160).collect::<String>()),
    })
}

fn matches(h: &sessiondex::query::request::Hit, e: &Expected) -> bool {
    h.session_id == e.session
        && match (&e.entry, &e.address) {
            (Some(id), _) => h.entry_id.as_deref() == Some(id.as_str()),
            (None, Some(a)) => h.operation_address.as_deref() == Some(a.as_str()),
            (None, None) => false,
        }
}

/// Syncs `sources` into `index` and scores every question of `labels` (only the `quick` ones
/// when `quick`).
///
/// # Errors
///
/// When the index cannot be built, a request is refused, or an expected entry is not in the
/// corpus (a stale label).
pub fn run_corpus(
    labels: &LabelFile,
    sources: Vec<PathBuf>,
    index: &Path,
    quick: bool,
) -> anyhow::Result<Vec<Outcome>> {
    let memory = Memory::open(all_hot(), Some(sources), Some(index.to_path_buf()))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let report = memory
        .sync(Branches::Active, &mut |_, _| {})
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let ctx = QueryContext::default();
    let mut out = Vec::new();
    for q in labels.questions.iter().filter(|q| !quick || q.quick) {
        for e in &q.expect {
            let x = match (&e.entry, &e.address) {
                (Some(id), _) => json!({"session": e.session, "entryIds": [id]}),
                (None, a) => json!({"session": e.session, "addresses": [a]}),
            };
            let req = ExpandRequest::from_json(&x).map_err(|e| anyhow::anyhow!("{e}"))?;
            memory.expand_indexed(&req).map_err(|err| {
                anyhow::anyhow!(
                    "{}/{}: expected {:?} is not in the corpus (stale label?): {err}",
                    labels.corpus,
                    q.id,
                    e
                )
            })?;
        }
        let mut req = RecallRequest::from_json(&q.request).map_err(|e| anyhow::anyhow!("{e}"))?;
        req.scope.get_or_insert(Scope::Global);
        req.page_size = Some(DEPTH);
        let page = memory
            .recall_indexed(&req, &ctx, &report.coverage)
            .map_err(|e| anyhow::anyhow!("{}/{}: {e}", labels.corpus, q.id))?;
        let rank = page
            .hits
            .iter()
            .position(|h| q.expect.iter().any(|e| matches(h, e)))
            .map(|p| p as u32 + 1);
        out.push(Outcome {
            corpus: labels.corpus.clone(),
            id: q.id.clone(),
            class: q.class.clone(),
            rank,
            total: page.total,
            top_hit: page.hits.first().map(hit_json),
            query: req.query.clone(),
            expect: q.expect.clone(),
            must: q.must.clone(),
            note: q.note.clone(),
        });
    }
    Ok(out)
}

/// Runs the corpora (only `bundled` when `quick`).
///
/// # Errors
///
/// As [`run_corpus`]; when a label file is missing or malformed, or the corpus cannot be
/// generated.
pub fn run(opts: &RelevanceOptions) -> anyhow::Result<Report> {
    let mut outcomes = Vec::new();
    let mut notices = Vec::new();
    std::fs::create_dir_all(&opts.work)?;

    let bundled = LabelFile::load(&opts.labels.join("bundled.json"))?;
    outcomes.extend(run_corpus(
        &bundled,
        vec![
            opts.repo.join("examples/sessions"),
            opts.repo.join("testdata"),
        ],
        &opts.work.join("index-bundled"),
        opts.quick,
    )?);
    if opts.quick {
        return Ok(Report { outcomes, notices });
    }

    let generated = LabelFile::load(&opts.labels.join("generated.json"))?;
    let corpus = opts.work.join("generated");
    generate(&GenOptions {
        max_file: GEN_MAX_FILE,
        ..GenOptions::new(corpus.clone(), GEN_SIZE, GEN_SEED)
    })?;
    copy_tree(&opts.labels.join("planted"), &corpus)?;
    outcomes.extend(run_corpus(
        &generated,
        vec![corpus],
        &opts.work.join("index-generated"),
        false,
    )?);

    let fixtures = LabelFile::load(&opts.labels.join("fixtures.json"))?;
    if opts.fixtures.is_dir() {
        outcomes.extend(run_corpus(
            &fixtures,
            vec![opts.fixtures.clone()],
            &opts.work.join("index-fixtures"),
            false,
        )?);
    } else {
        notices.push(format!(
            "fixtures: {} is absent; its {} questions were skipped",
            opts.fixtures.display(),
            fixtures.questions.len()
        ));
    }
    Ok(Report { outcomes, notices })
}

impl Report {
    /// Scores per class, in [`CLASSES`] order (classes with questions only).
    #[must_use]
    pub fn classes(&self) -> Vec<(&'static str, Scores)> {
        CLASSES
            .iter()
            .map(|c| {
                (
                    *c,
                    Scores::of(self.outcomes.iter().filter(|o| o.class == *c)),
                )
            })
            .filter(|(_, s)| s.questions > 0)
            .collect()
    }

    /// Scores over every question.
    #[must_use]
    pub fn overall(&self) -> Scores {
        Scores::of(&self.outcomes)
    }

    /// Questions whose expected entry was not ranked first.
    pub fn misses(&self) -> impl Iterator<Item = &Outcome> {
        self.outcomes.iter().filter(|o| o.rank != Some(1))
    }

    /// `{"classes": {CLASS: scores}, "overall": scores, "corpora": {...}, "misses": [...]}`.
    #[must_use]
    pub fn json(&self) -> Value {
        let classes: serde_json::Map<String, Value> = self
            .classes()
            .into_iter()
            .map(|(c, s)| (c.to_owned(), json!(s)))
            .collect();
        let mut corpora: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
        for o in &self.outcomes {
            corpora.entry(o.corpus.as_str()).or_default().push(o);
        }
        let corpora: serde_json::Map<String, Value> = corpora
            .into_iter()
            .map(|(c, os)| (c.to_owned(), json!(Scores::of(os))))
            .collect();
        json!({
            "classes": classes,
            "overall": self.overall(),
            "corpora": corpora,
            "misses": self.misses().collect::<Vec<_>>(),
            "notices": self.notices,
        })
    }

    /// The table and the misses, as text.
    #[must_use]
    pub fn text(&self) -> String {
        let mut s = String::new();
        for n in &self.notices {
            let _ = writeln!(s, "notice: {n}");
        }
        let _ = writeln!(
            s,
            "{:<18} {:>9} {:>7} {:>7} {:>7}",
            "class", "questions", "hit@1", "hit@5", "MRR"
        );
        let row = |s: &mut String, name: &str, sc: &Scores| {
            let _ = writeln!(
                s,
                "{:<18} {:>9} {:>7.3} {:>7.3} {:>7.3}",
                name, sc.questions, sc.hit1, sc.hit5, sc.mrr
            );
        };
        for (c, sc) in self.classes() {
            row(&mut s, c, &sc);
        }
        row(&mut s, "overall", &self.overall());
        let misses: Vec<_> = self.misses().collect();
        if !misses.is_empty() {
            let _ = writeln!(s, "\nmisses (not ranked first):");
        }
        for o in misses {
            let rank = o
                .rank
                .map_or_else(|| format!(">{DEPTH}"), |r| r.to_string());
            let top = o.top_hit.as_ref().map_or_else(
                || "no hit".to_owned(),
                |t| {
                    format!(
                        "{} {} {:?}",
                        t["session"].as_str().unwrap_or(""),
                        t["address"].as_str().or(t["entry"].as_str()).unwrap_or(""),
                        t["snippet"].as_str().unwrap_or("")
                    )
                },
            );
            let _ = writeln!(
                s,
                "  {}/{} [{}] rank {} of {}; query {:?}\n    top hit: {}",
                o.corpus,
                o.id,
                o.class,
                rank,
                o.total,
                o.query.as_deref().unwrap_or(""),
                top
            );
        }
        s
    }

    /// Why `--quick` fails: unmet guarantees, or hit@5 under [`QUICK_HIT5_FLOOR`].
    #[must_use]
    pub fn quick_failures(&self) -> Vec<String> {
        let mut f: Vec<String> = self
            .outcomes
            .iter()
            .filter(|o| !o.guarantee_met())
            .map(|o| {
                format!(
                    "{}/{}: must be {} but ranked {:?}",
                    o.corpus,
                    o.id,
                    o.must.as_deref().unwrap_or(""),
                    o.rank
                )
            })
            .collect();
        let hit5 = self.overall().hit5;
        if hit5 < QUICK_HIT5_FLOOR {
            f.push(format!(
                "hit@5 {hit5:.3} is below the floor {QUICK_HIT5_FLOOR}"
            ));
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("relevance")
    }

    #[test]
    fn label_files_parse_and_cover_every_class() {
        let mut full = 0;
        for corpus in ["bundled", "generated", "fixtures"] {
            let f = LabelFile::load(&labels().join(format!("{corpus}.json"))).unwrap();
            assert_eq!(f.corpus, corpus);
            if corpus != "bundled" {
                full += f.questions.len();
            }
            for c in CLASSES {
                assert!(f.questions.iter().any(|q| q.class == c), "{corpus}: {c}");
            }
        }
        assert!(full >= 60, "{full}");
        let quick = LabelFile::load(&labels().join("bundled.json")).unwrap();
        let quick: Vec<_> = quick.questions.iter().filter(|q| q.quick).collect();
        assert!((6..=10).contains(&quick.len()));
        for c in CLASSES {
            assert!(quick.iter().any(|q| q.class == c), "quick: {c}");
        }
    }

    #[test]
    fn scores() {
        let o = |rank| Outcome {
            corpus: "c".into(),
            id: "q".into(),
            class: "identifier".into(),
            rank,
            total: 0,
            top_hit: None,
            query: None,
            expect: Vec::new(),
            must: Some("hit1".into()),
            note: String::new(),
        };
        let s = Scores::of(&[o(Some(1)), o(Some(4)), o(None), o(Some(10))]);
        assert_eq!(s.questions, 4);
        assert!((s.hit1 - 0.25).abs() < 1e-9 && (s.hit5 - 0.5).abs() < 1e-9);
        assert!((s.mrr - (1.0 + 0.25 + 0.1) / 4.0).abs() < 1e-9);
        assert!(o(Some(1)).guarantee_met() && !o(Some(2)).guarantee_met());
    }
}
