//! An entry's whole text, read back from its source past the stored `maxEntryChars` cut.
//!
//! A hot shard posts every token of an entry but stores its text only up to `maxEntryChars`
//! (flag `truncated`). When a hit's matches all lie past the cut, its snippet needs the text
//! there: [`entry_text`] re-reads the one source line the entry came from (at its recorded
//! byte offset and line number), parses it with the session's reader
//! ([`sessiondex_source::read_line`]) and takes the record with the entry's id, but only after
//! checking the source is still what was indexed:
//!
//! 1. the source's identity: on disk size and mtime as the catalog recorded them, in memory
//!    the size of the bytes held under its path ([`Index::source_line`]);
//! 2. the record itself: it must exist on that line with the entry's id and class, its
//!    indexed text must start with the stored (cut) text, its thinking likewise, and its
//!    token count must equal the entry's length in the shard (which counts every token).
//!
//! Anything else is [`Unavailable::SourceChanged`] (error code `stale_pointer`); a source that
//! exists but cannot be read or parsed is [`Unavailable::SourceUnreadable`]
//! (`source_unreadable`). A hit then carries `snippetUnavailable` with that code and no
//! snippet: it is never built from text that may not be the indexed one.

use std::ops::Range;

use sessiondex_core::catalog::CatalogEntry;
use sessiondex_core::hot::HotEntry;
use sessiondex_core::Policy;
use sessiondex_source::{self as source, ReadOptions};

use crate::error::ErrorCode;
use crate::index::Index;
use crate::snippet::{snippet, Snippet, SnippetOptions};

/// Why an entry's whole text could not be read from its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// The source is gone or is no longer what was indexed (`stale_pointer`).
    SourceChanged,
    /// The source exists but could not be read or parsed (`source_unreadable`).
    SourceUnreadable,
}

impl Unavailable {
    /// The error code a hit's `snippetUnavailable` carries.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Unavailable::SourceChanged => ErrorCode::StalePointer.code(),
            Unavailable::SourceUnreadable => ErrorCode::SourceUnreadable.code(),
        }
    }
}

/// An entry's indexed text and thinking, whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryText {
    /// The indexed text (empty when the policy excludes the record's class).
    pub text: String,
    /// The indexed thinking (only with `indexThinking`).
    pub thinking: Option<String>,
}

/// Tokens of a text.
fn token_count(s: &str) -> u64 {
    let mut n = 0u64;
    sessiondex_core::for_each_token(s, |_| n += 1);
    n
}

/// The whole indexed text of hot entry `e` of catalog session `ce`, re-read from its source
/// (see the module docs for the checks). `policy` is the index policy: the line is read with
/// its `redact_secrets`, so a credential past the cut is redacted exactly when the index is.
///
/// # Errors
///
/// [`Unavailable`] when a check fails or the source cannot be read.
pub fn entry_text(
    index: &Index,
    ce: &CatalogEntry,
    e: &HotEntry<'_>,
    policy: &Policy,
) -> Result<EntryText, Unavailable> {
    let changed = Unavailable::SourceChanged;
    let format = ce.summary.format.ok_or(Unavailable::SourceUnreadable)?;
    let line = index.source_line(ce, e.offset())?;
    // The options the index read with (its `redactSecrets` included), so the texts agree.
    let opts = ReadOptions {
        redact_secrets: policy.redact_secrets,
        ..ReadOptions::default()
    };
    let records = source::read_line(
        &ce.identity.path,
        format,
        e.line(),
        e.offset(),
        &line,
        &opts,
    )
    .map_err(|_| Unavailable::SourceUnreadable)?;
    let id = e.entry_id().map_err(|_| changed)?;
    let r = records.iter().find(|r| r.entry_id == id).ok_or(changed)?;
    if Ok(r.class) != e.class() || r.line != e.line() || r.offset != e.offset() {
        return Err(changed);
    }
    let text = if e.text_excluded() {
        ""
    } else {
        policy.text(r).ok_or(changed)?
    };
    let thinking = policy.thinking(r);
    let stored = e.text().map_err(|_| changed)?;
    let stored_th = e.thinking().map_err(|_| changed)?;
    let thinking_ok = match (stored_th, thinking) {
        (None, None) => true,
        (Some(s), Some(t)) => t.starts_with(s),
        _ => false,
    };
    let tokens = token_count(text) + thinking.map_or(0, token_count);
    if !text.starts_with(stored) || !thinking_ok || tokens != u64::from(e.token_len()) {
        return Err(changed);
    }
    Ok(EntryText {
        text: text.to_owned(),
        thinking: thinking.map(str::to_owned),
    })
}

/// Byte ranges of a query's matches in a text.
pub type SpansOf<'a> = &'a dyn Fn(&str) -> Vec<Range<usize>>;

/// Matches counted per text when looking for a hit's best window.
pub const MAX_SNIPPET_SPANS: usize = 4096;

/// The snippet of hot entry `e`: the densest window of `spans_of`'s matches in its stored
/// text (or thinking, when only that matches). When the entry was cut and nothing matches in
/// the stored part, the window lies past the cut: it is taken from the whole text read from
/// the source of `ce` ([`entry_text`]), or, when that fails, the snippet is `None` with the
/// reason. `ce` is `None` for a session read whole (nothing was cut); `spans_of` is `None`
/// without a query (the snippet is the start of the text, the source is never read).
pub fn entry_snippet(
    index: &Index,
    ce: Option<&CatalogEntry>,
    e: &HotEntry<'_>,
    policy: &Policy,
    spans_of: Option<SpansOf<'_>>,
) -> (Option<Snippet>, Option<Unavailable>) {
    let opts = SnippetOptions::default();
    let text = e.text().unwrap_or("");
    let thinking = e.thinking().ok().flatten();
    let start = if text.is_empty() {
        thinking.unwrap_or("")
    } else {
        text
    };
    let fallback = Some(snippet(start, &[], &opts));
    let Some(spans_of) = spans_of else {
        return (fallback, None);
    };
    let best = |text: &str, thinking: Option<&str>| -> Option<Snippet> {
        for part in [Some(text), thinking].into_iter().flatten() {
            let spans = spans_of(part);
            if !spans.is_empty() {
                return Some(snippet(part, &spans, &opts));
            }
        }
        None
    };
    if let Some(s) = best(text, thinking) {
        return (Some(s), None);
    }
    let Some(ce) = ce.filter(|_| e.truncated()) else {
        return (fallback, None);
    };
    match entry_text(index, ce, e, policy) {
        Ok(full) => match best(&full.text, full.thinking.as_deref()) {
            Some(s) => (Some(s), None),
            None => (fallback, None),
        },
        Err(u) => (None, Some(u)),
    }
}
