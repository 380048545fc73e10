//! tantivy: one document per active-branch record, its indexed text (the sessiondex default
//! policy, not cut) in a `TEXT` field (default tokenizer, positions), `tool` and `outcome` as
//! `STRING` fields; a single-threaded writer. Building includes reading the sources with
//! `sessiondex_source`, as sessiondex's does.

use std::path::Path;

use anyhow::Context;
use sessiondex::source::{discover, read_path, Branches, ReadOptions};
use sessiondex_core::Policy;
use tantivy::collector::{Count, TopDocs};
use tantivy::query::{
    BooleanQuery, FuzzyTermQuery, Occur, PhraseQuery, Query as TQuery, RegexQuery, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Schema, STRING, TEXT};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, Term};

use crate::queries::{Mode, Query};

/// The tantivy peer.
#[derive(Default)]
pub struct Tantivy {
    fields: Option<(Field, Field, Field)>,
    reader: Option<IndexReader>,
}

impl std::fmt::Debug for Tantivy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Tantivy")
    }
}

impl super::System for Tantivy {
    fn build(&mut self, corpus: &Path, work: &Path) -> anyhow::Result<()> {
        let mut sb = Schema::builder();
        let text = sb.add_text_field("text", TEXT);
        let tool = sb.add_text_field("tool", STRING);
        let outcome = sb.add_text_field("outcome", STRING);
        let index = Index::create_in_dir(work, sb.build())?;
        let mut writer = index.writer_with_num_threads::<TantivyDocument>(1, 256 << 20)?;
        let policy = Policy::default();
        for path in discover(corpus) {
            let s = read_path(&path, &ReadOptions::default())
                .with_context(|| format!("reading {}", path.display()))?;
            for r in s.select(Branches::Active).records {
                let mut d = TantivyDocument::new();
                d.add_text(text, policy.text(&r).unwrap_or(""));
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
        let (_top, count) =
            searcher.search(&query, &(TopDocs::with_limit(10).order_by_score(), Count))?;
        Ok(Some(count as u64))
    }
}
