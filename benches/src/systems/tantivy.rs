//! tantivy: one document per active-branch record, its indexed text (the sessiondex default
//! policy, not cut) in a `TEXT` field (default tokenizer, positions), `tool` and `outcome` as
//! `STRING` fields; a single-threaded writer. Building includes reading the sources with
//! `sessiondex_source`, as sessiondex's does.
//!
//! [`Tantivy::page`] (`tantivy_page`) is the same index with the text, the source path and the
//! record's index also stored, and a query that also returns what a sessiondex page holds for
//! each of its ten hits: the stored document (where the hit is) and a snippet of at most 240
//! characters with its highlights (`SnippetGenerator`). It is not the reference of issue 7's
//! targets (`tantivy` is); it measures what the same page costs tantivy.

use std::path::Path;

use anyhow::Context;
use sessiondex::source::{discover, read_path, Branches, ReadOptions};
use sessiondex_core::Policy;
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    BooleanQuery, FuzzyTermQuery, Occur, PhraseQuery, Query as TQuery, RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Schema, Value as _, STORED, STRING, TEXT};
use tantivy::snippet::SnippetGenerator;
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, Term};

use crate::queries::{Mode, Query};

/// The tantivy peer.
#[derive(Default)]
pub struct Tantivy {
    fields: Option<(Field, Field, Field)>,
    /// The stored path and record index of [`Tantivy::page`].
    stored: Option<(Field, Field)>,
    reader: Option<IndexReader>,
    page: bool,
}

/// One hit of a [`Tantivy::page`] query: where it is, its snippet and highlights.
type PageHit = (String, u64, String, Vec<std::ops::Range<usize>>);

impl Tantivy {
    /// The variant that stores the text and answers with a page of ten hits (stored
    /// document and snippet each), as a sessiondex page does.
    #[must_use]
    pub fn page() -> Tantivy {
        Tantivy {
            page: true,
            ..Tantivy::default()
        }
    }
}

impl std::fmt::Debug for Tantivy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tantivy")
    }
}

impl super::System for Tantivy {
    fn build(&mut self, corpus: &Path, work: &Path) -> anyhow::Result<()> {
        let mut sb = Schema::builder();
        let text = if self.page {
            sb.add_text_field("text", TEXT | STORED)
        } else {
            sb.add_text_field("text", TEXT)
        };
        let tool = sb.add_text_field("tool", STRING);
        let outcome = sb.add_text_field("outcome", STRING);
        let stored = self.page.then(|| {
            (
                sb.add_text_field("path", STORED),
                sb.add_u64_field("index", STORED),
            )
        });
        let index = Index::create_in_dir(work, sb.build())?;
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, 256 << 20)?;
        let policy = Policy::default();
        for path in discover(corpus) {
            let s = read_path(&path, &ReadOptions::default())
                .with_context(|| format!("reading {}", path.display()))?;
            let path_text = path.to_string_lossy();
            for r in s.select(Branches::Active).records {
                let mut d = TantivyDocument::new();
                d.add_text(text, policy.text(&r).unwrap_or(""));
                if let Some((p, i)) = stored {
                    d.add_text(p, &path_text);
                    d.add_u64(i, r.index as u64);
                }
                if let Some(t) = &r.tool {
                    d.add_text(tool, t);
                }
                if let Some(o) = r.outcome {
                    d.add_text(outcome, o.as_str());
                }
                writer.add_document(d)?;
            }
        }
        writer.commit()?;
        writer.wait_merging_threads()?;
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()?;
        self.fields = Some((text, tool, outcome));
        self.stored = stored;
        self.reader = Some(reader);
        Ok(())
    }

    fn query(&mut self, q: &Query) -> anyhow::Result<Option<u64>> {
        let (text, tool, outcome) = self.fields.context("not built")?;
        let reader = self.reader.as_ref().context("not built")?;
        let mut clauses: Vec<(Occur, Box<dyn TQuery>)> = Vec::new();
        if let Some(qt) = &q.query {
            let terms = sessiondex::tokenize(qt);
            let term = |t: &str| Term::from_field_text(text, t);
            let lexical: Box<dyn TQuery> = match q.mode {
                Mode::Literal => {
                    let occur = if q.all { Occur::Must } else { Occur::Should };
                    Box::new(BooleanQuery::new(
                        terms
                            .iter()
                            .map(|t| {
                                let tq: Box<dyn TQuery> =
                                    Box::new(TermQuery::new(term(t), IndexRecordOption::WithFreqs));
                                (occur, tq)
                            })
                            .collect(),
                    ))
                }
                Mode::Phrase if terms.len() > 1 => {
                    Box::new(PhraseQuery::new(terms.iter().map(|t| term(t)).collect()))
                }
                Mode::Phrase => Box::new(TermQuery::new(
                    term(terms.first().map_or("", String::as_str)),
                    IndexRecordOption::WithFreqs,
                )),
                Mode::Regex => Box::new(RegexQuery::from_pattern(qt, text)?),
                Mode::Fuzzy => Box::new(FuzzyTermQuery::new(
                    term(terms.first().map_or("", String::as_str)),
                    2,
                    true,
                )),
            };
            clauses.push((Occur::Must, lexical));
        }
        if let Some(t) = &q.tool {
            clauses.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(tool, t),
                    IndexRecordOption::Basic,
                )),
            ));
        }
        if let Some(o) = &q.outcome {
            clauses.push((
                Occur::Must,
                Box::new(TermQuery::new(
                    Term::from_field_text(outcome, o),
                    IndexRecordOption::Basic,
                )),
            ));
        }
        let query = BooleanQuery::new(clauses);
        let searcher = reader.searcher();
        let (top, count) =
            searcher.search(&query, &(TopDocs::with_limit(10).order_by_score(), Count))?;
        if let Some((path, index)) = self.stored {
            let mut snippets = SnippetGenerator::create(&searcher, &query, text)?;
            snippets.set_max_num_chars(240);
            let mut page: Vec<PageHit> = Vec::with_capacity(top.len());
            for (_score, addr) in top {
                let doc: TantivyDocument = searcher.doc(addr)?;
                let snippet = snippets.snippet_from_doc(&doc);
                page.push((
                    doc.get_first(path)
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                        .to_owned(),
                    doc.get_first(index).and_then(|v| v.as_u64()).unwrap_or(0),
                    snippet.fragment().to_owned(),
                    snippet.highlighted().to_vec(),
                ));
            }
            std::hint::black_box(page);
        }
        Ok(Some(count as u64))
    }
}
