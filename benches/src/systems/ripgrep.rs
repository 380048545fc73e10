//! ripgrep over the raw files: the `rg` binary (Debian package `ripgrep`), no index. A hit is a
//! matching line (`rg -c`), with its default thread count.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use crate::queries::{Mode, Query};

/// `rg` run once per query.
#[derive(Debug, Default)]
pub struct Ripgrep {
    corpus: PathBuf,
}

/// The `rg` arguments of a query, or `None` when a line regex cannot express it (fuzzy,
/// structural filters, more than three `all` terms).
#[must_use]
pub fn args(q: &Query) -> Option<Vec<String>> {
    if q.tool.is_some() || q.outcome.is_some() {
        return None;
    }
    let text = q.query.as_deref()?;
    let mut a: Vec<String> = vec!["-c".into(), "--no-filename".into(), "-i".into()];
    match q.mode {
        Mode::Fuzzy => return None,
        Mode::Phrase => {
            a.push("-F".into());
            a.push("-e".into());
            a.push(text.into());
        }
        Mode::Regex => {
            a.push("-e".into());
            a.push(text.into());
        }
        Mode::Literal => {
            let terms = sessiondex::tokenize(text);
            if q.all && terms.len() > 1 {
                if terms.len() > 3 {
                    return None;
                }
                // Every order of the terms on one line.
                let mut alts = Vec::new();
                permute(&terms, &mut Vec::new(), &mut alts);
                a.push("-e".into());
                a.push(alts.join("|"));
            } else {
                a.push("-w".into());
                a.push("-F".into());
                for t in terms {
                    a.push("-e".into());
                    a.push(t);
                }
            }
        }
    }
    a.push("--glob".into());
    a.push("*.jsonl".into());
    a.push("--hidden".into());
    Some(a)
}

fn permute(rest: &[String], cur: &mut Vec<String>, out: &mut Vec<String>) {
    if rest.is_empty() {
        let parts: Vec<String> = cur.iter().map(|t| format!(r"\b{t}\b")).collect();
        out.push(parts.join(".*"));
        return;
    }
    for i in 0..rest.len() {
        let mut r = rest.to_vec();
        let t = r.remove(i);
        cur.push(t);
        permute(&r, cur, out);
        cur.pop();
    }
}

impl super::System for Ripgrep {
    fn build(&mut self, corpus: &Path, _work: &Path) -> anyhow::Result<()> {
        let ok = Command::new("rg")
            .arg("--version")
            .output()
            .context("running `rg` (apt-get install -y ripgrep)")?;
        if !ok.status.success() {
            bail!("`rg --version` failed");
        }
        self.corpus = corpus.to_path_buf();
        Ok(())
    }

    fn builds_index(&self) -> bool {
        false
    }

    fn query(&mut self, q: &Query) -> anyhow::Result<Option<u64>> {
        let Some(args) = args(q) else {
            return Ok(None);
        };
        let out = Command::new("rg")
            .args(&args)
            .arg(&self.corpus)
            .output()
            .context("running rg")?;
        // 0: matches, 1: none, 2: error.
        if out.status.code() == Some(2) {
            bail!("rg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        let total = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.trim().parse::<u64>().ok())
            .sum();
        Ok(Some(total))
    }
}
