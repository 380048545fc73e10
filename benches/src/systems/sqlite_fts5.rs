//! SQLite FTS5 (rusqlite, bundled SQLite): one row per active-branch record in
//! `fts5(text, tool UNINDEXED, outcome UNINDEXED, tokenize='unicode61')`, inserted in one
//! transaction. FTS5 has no regex and no fuzzy match: a prefix regex becomes a prefix query
//! (`zqpfx*`, a superset of `zqpfx[0-9]+`), a leading-wildcard regex a `LIKE '%tail%'` scan,
//! fuzzy is not run; typed filters are `WHERE` clauses on the unindexed columns.

use std::path::{Path, PathBuf};

use anyhow::Context;
use rusqlite::{params_from_iter, Connection};
use sessiondex::source::{discover, read_path, Branches, ReadOptions};
use sessiondex_core::Policy;

use crate::queries::{Mode, Query};

/// The FTS5 peer.
#[derive(Debug, Default)]
pub struct SqliteFts5 {
    conn: Option<Connection>,
    db: PathBuf,
}

fn quote(t: &str) -> String {
    format!("\"{}\"", t.replace('"', "\"\""))
}

/// The literal text before the first regex metacharacter.
fn literal_prefix(p: &str) -> &str {
    let end = p
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(p.len());
    &p[..end]
}

/// The literal text after the last regex metacharacter.
fn literal_suffix(p: &str) -> &str {
    let start = p
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
        .map_or(0, |i| i + 1);
    &p[start..]
}

impl super::System for SqliteFts5 {
    fn build(&mut self, corpus: &Path, work: &Path) -> anyhow::Result<()> {
        self.db = work.join("fts5.db");
        let mut conn = Connection::open(&self.db)?;
        conn.execute_batch(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
             CREATE VIRTUAL TABLE docs USING fts5(text, tool UNINDEXED, outcome UNINDEXED,
               tokenize='unicode61');",
        )?;
        let policy = Policy::default();
        let tx = conn.transaction()?;
        {
            let mut ins =
                tx.prepare("INSERT INTO docs(text, tool, outcome) VALUES (?1, ?2, ?3)")?;
            for path in discover(corpus) {
                let s = read_path(&path, &ReadOptions::default())
                    .with_context(|| format!("reading {}", path.display()))?;
                for r in s.select(Branches::Active).records {
                    ins.execute((
                        policy.text(&r).unwrap_or(""),
                        r.tool.as_deref(),
                        r.outcome.map(|o| o.as_str()),
                    ))?;
                }
            }
        }
        tx.commit()?;
        self.conn = Some(conn);
        Ok(())
    }

    fn index_bytes(&self, _work: &Path) -> u64 {
        std::fs::metadata(&self.db).map(|m| m.len()).unwrap_or(0)
    }

    fn query(&mut self, q: &Query) -> anyhow::Result<Option<u64>> {
        let conn = self.conn.as_ref().context("not built")?;
        let mut filters: Vec<String> = Vec::new();
        let mut params: Vec<String> = Vec::new();
        let mut ranked = false;
        if let Some(text) = &q.query {
            let terms = sessiondex::tokenize(text);
            match q.mode {
                Mode::Fuzzy => return Ok(None),
                Mode::Literal => {
                    let op = if q.all { " AND " } else { " OR " };
                    let m: Vec<String> = terms.iter().map(|t| quote(t)).collect();
                    filters.push("docs MATCH ?".into());
                    params.push(m.join(op));
                    ranked = true;
                }
                Mode::Phrase => {
                    filters.push("docs MATCH ?".into());
                    params.push(quote(&terms.join(" ")));
                    ranked = true;
                }
                Mode::Regex => {
                    let pre = literal_prefix(text);
                    if pre.is_empty() {
                        filters.push("text LIKE ?".into());
                        params.push(format!("%{}%", literal_suffix(text)));
                    } else {
                        filters.push("docs MATCH ?".into());
                        params.push(format!("{}*", quote(pre)));
                        ranked = true;
                    }
                }
            }
        }
        if let Some(t) = &q.tool {
            filters.push("tool = ?".into());
            params.push(t.clone());
        }
        if let Some(o) = &q.outcome {
            filters.push("outcome = ?".into());
            params.push(o.clone());
        }
        let wher = filters.join(" AND ");
        let order = if ranked { " ORDER BY rank" } else { "" };
        let mut top = conn.prepare_cached(&format!(
            "SELECT rowid FROM docs WHERE {wher}{order} LIMIT 10"
        ))?;
        let rows: Vec<i64> = top
            .query_map(params_from_iter(params.iter()), |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        drop(rows);
        let mut count = conn.prepare_cached(&format!("SELECT count(*) FROM docs WHERE {wher}"))?;
        let n: i64 = count.query_row(params_from_iter(params.iter()), |r| r.get(0))?;
        Ok(Some(u64::try_from(n).unwrap_or(0)))
    }
}
