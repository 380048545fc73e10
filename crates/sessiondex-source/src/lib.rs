//! Agent session logs read into normalized records.
//!
//! This crate knows the JSONL formats that coding agents write (pi, oh-my-pi, Claude Code,
//! Codex CLI) and nothing about indexes. The main entry points:
//!
//! - [`read_path`] / [`read_bytes`] read one file into a [`Session`]: metadata, every
//!   [`Record`] in file order, and [`ReadCoverage`] saying what was skipped and why.
//! - [`Session::select`] keeps the `active` branch or `all` records and computes the
//!   lineage fingerprint.
//! - [`discover`] finds session files under a directory.
//!
//! ```
//! use sessiondex_source::{read_bytes, Branches, ReadOptions};
//!
//! let log = br#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
//! {"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"hello"}}
//! "#;
//! let session = read_bytes("s1.jsonl", log, &ReadOptions::default()).unwrap();
//! let active = session.select(Branches::Active);
//! assert_eq!(active.records[0].text, "hello");
//! ```
//!
//! Reading never panics and never stops at a bad line: malformed lines are skipped and
//! counted, glued objects are split, a cut-off last line is left for later (`partial_tail`).
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod claude;
mod codex;
mod coverage;
mod detect;
mod hash;
mod jsonl;
mod pi;
mod record;
pub mod redact;
mod session;
pub mod util;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::hash::HashMap;

pub use coverage::{ReadCoverage, Reason, ReasonCode};
pub use detect::detect;
pub use jsonl::{read_objects, Loc};
pub use record::{Format, Outcome, Record, SessionLink, SessionMeta, TextClass};
pub use redact::{redact, SecretKind};
pub use session::{Branches, Selection, Session};

use session::Builder;

/// What went wrong reading a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file could not be opened or read.
    Io,
    /// No complete JSON object to detect a format from, and none was forced.
    UnknownFormat,
    /// [`resume`] cannot continue this session: it has no resume state of this version, or
    /// the bytes continue a last line that had no newline. Read the whole file instead.
    NotResumable,
}

impl ErrorKind {
    /// The stable snake_case code.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Io => "source_unreadable",
            ErrorKind::UnknownFormat => "unknown_format",
            ErrorKind::NotResumable => "not_resumable",
        }
    }
}

/// An error reading a source file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct Error {
    kind: ErrorKind,
    path: String,
    message: String,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, path: &str, message: impl Into<String>) -> Self {
        Error {
            kind,
            path: path.to_owned(),
            message: message.into(),
        }
    }

    /// The kind of error.
    #[must_use]
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The path of the source.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The human-readable message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Options for reading a source.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Force a format instead of detecting it from content.
    pub format: Option<Format>,
    /// Replace well-known credential shapes with `[redacted:<kind>]` ([`redact()`]) in every
    /// record's `text`, `thinking` and `filesTouched`, in the session title, and in the resume
    /// state (`redactSecrets`); on by default.
    pub redact_secrets: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            redact_secrets: true,
        }
    }
}

/// One format reader: receives every object of the file in order.
pub(crate) trait FormatReader {
    /// One JSON object at `loc`.
    fn object(&mut self, loc: Loc, obj: Map<String, Value>, b: &mut Builder);
    /// A line that was not JSON (oh-my-pi's title line is the only one a reader may want).
    fn raw_line(&mut self, _line: u64, _bytes: &[u8], _b: &mut Builder) -> bool {
        false
    }
    /// End of input: set the leaf, the session id, anything that needs the whole file.
    /// Called once per read, also after a resume, so it must not consume the reader's state
    /// (what it computes from the records is computed again from all of them).
    fn finish(&mut self, b: &mut Builder);
    /// What the reader needs to continue after the end of this read ([`resume`]), as a small
    /// JSON value (ids and flags, no record texts). Called after [`FormatReader::finish`] and
    /// [`Builder::finish`] with the session's final records.
    fn save_state(&self, records: &[Record]) -> Value;
}

/// A reader restored from the state a reader of `format` saved.
fn restore_reader(
    format: Format,
    state: &Value,
    records: &[Record],
) -> Option<Box<dyn FormatReader>> {
    Some(match format {
        Format::Pi => Box::new(pi::PiReader::restore(false, state)?),
        Format::Omp => Box::new(pi::PiReader::restore(true, state)?),
        Format::ClaudeCode => Box::new(claude::ClaudeReader::restore(state, records)?),
        Format::Codex => Box::new(codex::CodexReader::restore(state)?),
    })
}

fn reader_for(format: Format) -> Box<dyn FormatReader> {
    match format {
        Format::Pi => Box::new(pi::PiReader::new(false)),
        Format::Omp => Box::new(pi::PiReader::new(true)),
        Format::ClaudeCode => Box::new(claude::ClaudeReader::default()),
        Format::Codex => Box::new(codex::CodexReader::default()),
    }
}

/// Reads a session from any buffered reader. `file` names it in metadata and errors.
///
/// # Errors
///
/// [`ErrorKind::Io`] when reading fails, [`ErrorKind::UnknownFormat`] when no format was forced
/// and the content matches none.
pub fn read_from<R: BufRead>(
    file: &str,
    mut reader: R,
    opts: &ReadOptions,
) -> Result<Session, Error> {
    // Detection looks at the first lines; they are kept and replayed to the reader.
    let mut head: Vec<u8> = Vec::new();
    let mut format = opts.format;
    if format.is_none() {
        for _ in 0..detect::DETECT_LINES {
            let n = reader
                .read_until(b'\n', &mut head)
                .map_err(|e| Error::new(ErrorKind::Io, file, e.to_string()))?;
            if n == 0 {
                break;
            }
            if let Some(f) = detect::detect(&head) {
                format = Some(f);
                break;
            }
        }
        if format.is_none() {
            format = detect::detect(&head);
        }
    }
    let Some(format) = format else {
        return Err(Error::new(
            ErrorKind::UnknownFormat,
            file,
            "not a pi, oh-my-pi, Claude Code or Codex session",
        ));
    };
    let mut builder = Builder::new(file);
    builder.redact = opts.redact_secrets;
    builder.meta.format = Some(format);
    let coverage = std::mem::take(&mut builder.coverage);
    let chained = Replay {
        head,
        pos: 0,
        inner: reader,
    };
    run(builder, reader_for(format), chained, coverage, false, None)
}

/// The lines detection read (`head`), then the rest of `inner`. Unlike a `Cursor` chain it
/// frees `head` once it is consumed, so a huge first line is not held twice for the whole read.
struct Replay<R> {
    head: Vec<u8>,
    pos: usize,
    inner: R,
}

impl<R: BufRead> Read for Replay<R> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = {
            let buf = self.fill_buf()?;
            let n = buf.len().min(out.len());
            out[..n].copy_from_slice(&buf[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Replay<R> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.pos < self.head.len() {
            return Ok(&self.head[self.pos..]);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        if self.pos < self.head.len() {
            self.pos = (self.pos + n).min(self.head.len());
            if self.pos == self.head.len() {
                self.head = Vec::new();
                self.pos = 0;
            }
        } else {
            self.inner.consume(n);
        }
    }
}

/// The version of [`ResumeState`]; a state of another version is not resumed.
const RESUME_STATE_VERSION: u32 = 1;

/// [`Session::resume_state`]: what [`resume`] needs besides the records.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResumeState {
    v: u32,
    /// The last line read had no newline: the next bytes continue it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    open_line: bool,
    /// The metadata as the lines left it, before the reader's end-of-input work.
    meta: SessionMeta,
    /// Tool call records whose own line gave them an `outcome`/`isError` (before any pairing):
    /// `[entryId, outcome, isError]`. Every other tool call starts without one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    calls: Vec<(String, Option<Outcome>, Option<bool>)>,
    /// Records whose `logicalParentId` the reader's end-of-input work changed, with the value
    /// their line gave them: `[entryId, logicalParentId]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    lineage: Vec<(String, Option<String>)>,
    /// How many records the session had, and a digest of their entry ids: the state only
    /// fits those records.
    records: usize,
    ids: String,
    /// The format reader's own state.
    reader: Value,
}

/// The first 16 hex digits of SHA-256 over the records' entry ids.
fn ids_digest(records: &[Record]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for r in records {
        h.update(r.entry_id.as_bytes());
        h.update([0]);
    }
    let mut s = session::hex(&h.finalize());
    s.truncate(16);
    s
}

/// Feeds `reader` (starting at `coverage.complete_bytes`, line `coverage.lines + 1`) to the
/// format reader, then finishes the session and saves its resume state. `open_line` says the
/// previous read ended inside a line; `prior_dups` are the duplicate ids a previous read already
/// counted.
fn run<R: BufRead>(
    mut builder: Builder,
    mut fr: Box<dyn FormatReader>,
    mut reader: R,
    mut coverage: ReadCoverage,
    open_line: bool,
    prior_dups: Option<Reason>,
) -> Result<Session, Error> {
    let file = builder.meta.file.clone();
    let io_err = |e: std::io::Error| Error::new(ErrorKind::Io, &file, e.to_string());
    let mut open_line = open_line;
    if open_line {
        // The last line read had no newline. Blank bytes up to a newline end it (a full read
        // sees the same line); anything else would change what that line holds.
        let mut buf = Vec::new();
        let n = reader.read_until(b'\n', &mut buf).map_err(io_err)?;
        let body = buf.strip_suffix(b"\n").unwrap_or(&buf);
        if !body.iter().all(u8::is_ascii_whitespace) {
            return Err(Error::new(
                ErrorKind::NotResumable,
                &file,
                "the new bytes continue a last line that had no newline",
            ));
        }
        coverage.complete_bytes += n as u64;
        if buf.last() == Some(&b'\n') {
            open_line = false;
        }
    }
    let start = coverage.complete_bytes;
    let first_line = coverage.lines + 1;
    let consumed = {
        let b = &mut builder;
        let fr = &mut fr;
        jsonl::read_lines(
            reader,
            start,
            first_line,
            &mut coverage,
            &mut |ev| match ev {
                jsonl::LineEvent::Raw(line, bytes) => fr.raw_line(line, bytes, b),
                jsonl::LineEvent::Object(loc, obj) => {
                    fr.object(loc, obj, b);
                    true
                }
            },
        )
        .map_err(io_err)?
    };
    if let Some(open) = consumed {
        open_line = open;
    }
    coverage.merge(&builder.coverage);
    builder.coverage = coverage;

    // What the lines alone gave, before the end-of-input work changes it.
    let redact = builder.redact;
    if redact {
        redact_title(&mut builder.meta);
    }
    let meta = builder.meta.clone();
    let mut calls: HashMap<&str, (Option<Outcome>, Option<bool>)> = HashMap::default();
    for r in &builder.records {
        if r.kind == "tool_call" {
            calls.insert(r.entry_id.as_str(), (r.outcome, r.is_error));
        }
    }
    let mut calls: Vec<(String, Option<Outcome>, Option<bool>)> = calls
        .into_iter()
        .filter(|(_, (o, e))| o.is_some() || e.is_some())
        .map(|(id, (o, e))| (id.to_owned(), o, e))
        .collect();
    // Distinct ids (a map's keys): the unstable sort gives the one order, in less code.
    calls.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let logical: Vec<Option<String>> = builder
        .records
        .iter()
        .map(|r| r.logical_parent_id.clone())
        .collect();

    fr.finish(&mut builder);

    let mut lineage: Vec<(String, Option<String>)> = Vec::new();
    for (r, before) in builder.records.iter().zip(logical) {
        if r.logical_parent_id != before && r.parent_entry_id.is_none() {
            lineage.push((r.entry_id.clone(), before));
        }
    }
    let mut session = builder.finish();
    if let Some(prior) = prior_dups {
        merge_dups(&mut session.coverage, prior);
    }
    let state = ResumeState {
        v: RESUME_STATE_VERSION,
        open_line,
        meta,
        calls,
        lineage,
        records: session.records.len(),
        ids: ids_digest(&session.records),
        reader: fr.save_state(&session.records),
    };
    session.resume_state = serde_json::to_value(state).ok();
    if redact {
        // The reader states keep titles and summaries as the lines gave them.
        redact_title(&mut session.meta);
        if let Some(v) = session.resume_state.as_mut() {
            redact::redact_json(v);
        }
    }
    Ok(session)
}

fn redact_title(meta: &mut SessionMeta) {
    if let Some(t) = meta.title.as_mut() {
        redact::redact_in_place(t);
    }
}

/// Adds the duplicate ids a previous read counted to those of this one: a full read lists the
/// lines of every superseded entry in file order, the first [`Reason::MAX_LINES`] kept.
fn merge_dups(coverage: &mut ReadCoverage, prior: Reason) {
    let mut lines = prior.lines;
    let mut count = prior.count;
    if let Some(pos) = coverage
        .reasons
        .iter()
        .position(|r| r.code == ReasonCode::DuplicateEntryId)
    {
        let now = coverage.reasons.remove(pos);
        lines.extend(now.lines);
        count += now.count;
    }
    lines.sort_unstable();
    lines.truncate(Reason::MAX_LINES);
    let at = coverage
        .reasons
        .binary_search_by(|r| r.code.cmp(&ReasonCode::DuplicateEntryId))
        .unwrap_or_else(|i| i);
    coverage.reasons.insert(
        at,
        Reason {
            code: ReasonCode::DuplicateEntryId,
            count,
            lines,
        },
    );
    coverage.complete = !coverage.reasons.iter().any(|r| r.code.makes_incomplete());
}

/// Continues `prev`, read earlier from a file up to `prev.coverage.complete_bytes`, with the
/// bytes the file has from that offset on (`rest`), and returns what a read of the whole file
/// returns.
///
/// Line numbers and offsets go on from `prev`; a partial tail of `prev` is read again from
/// `rest`. Everything a reader works out from the whole file (duplicate ids, tool call
/// outcomes, the leaf, Claude Code's chain repair, titles, links) is worked out again over the
/// old and the new records. Only structural fields of `prev.records` are used, so their
/// `text`/`thinking` may be cut; the result then has those cut texts and nothing else differs.
/// `opts.format`, when set, must be `prev`'s format.
///
/// ```
/// use sessiondex_source::{read_bytes, resume, ReadOptions};
///
/// let log = br#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
/// {"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"hello"}}
/// {"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant","content":"hi"}}
/// "#;
/// let opts = ReadOptions::default();
/// let earlier = read_bytes("s1.jsonl", &log[..120], &opts).unwrap();
/// let from = earlier.coverage.complete_bytes as usize;
/// let now = resume(earlier, &log[from..], &opts).unwrap();
/// assert_eq!(now, read_bytes("s1.jsonl", log, &opts).unwrap());
/// ```
///
/// # Errors
///
/// [`ErrorKind::NotResumable`] when `prev` has no usable [`Session::resume_state`], when
/// `opts.format` names another format, or when `rest` continues a last line of `prev` that had
/// no newline with more than blanks (read the whole file instead); [`ErrorKind::Io`] when
/// reading `rest` fails.
pub fn resume<R: BufRead>(prev: Session, rest: R, opts: &ReadOptions) -> Result<Session, Error> {
    let file = prev.meta.file.clone();
    let not_resumable = |why: &str| Error::new(ErrorKind::NotResumable, &file, why);
    let state: ResumeState = prev
        .resume_state
        .and_then(|v| serde_json::from_value(v).ok())
        .filter(|s: &ResumeState| s.v == RESUME_STATE_VERSION)
        .ok_or_else(|| not_resumable("the session has no resume state of this version"))?;
    let Some(format) = state.meta.format else {
        return Err(not_resumable("the resume state names no format"));
    };
    if opts.format.is_some_and(|f| f != format) {
        return Err(not_resumable("the session was read as another format"));
    }
    if prev.records.len() != state.records || ids_digest(&prev.records) != state.ids {
        return Err(not_resumable(
            "the records are not those the resume state was saved with",
        ));
    }

    // Back to what the lines gave: the end-of-input work is done again over all records.
    let calls: HashMap<&str, (Option<Outcome>, Option<bool>)> = state
        .calls
        .iter()
        .map(|(id, o, e)| (id.as_str(), (*o, *e)))
        .collect();
    let lineage: HashMap<&str, &Option<String>> = state
        .lineage
        .iter()
        .map(|(id, l)| (id.as_str(), l))
        .collect();
    let mut records = prev.records;
    for r in &mut records {
        r.index = 0;
        if r.kind == "tool_call" {
            let (o, e) = calls.get(r.entry_id.as_str()).copied().unwrap_or_default();
            r.outcome = o;
            r.is_error = e;
        }
        if r.parent_entry_id.is_none() {
            if let Some(l) = lineage.get(r.entry_id.as_str()) {
                r.logical_parent_id = (*l).clone();
            }
        }
    }
    let fr = restore_reader(format, &state.reader, &records)
        .ok_or_else(|| not_resumable("the reader state does not parse"))?;

    // The coverage goes on from prev; its partial tail is read again, and duplicates are
    // counted again when the session finishes.
    let mut coverage = prev.coverage;
    coverage
        .reasons
        .retain(|r| r.code != ReasonCode::PartialTail);
    let prior_dups = coverage
        .reasons
        .iter()
        .position(|r| r.code == ReasonCode::DuplicateEntryId)
        .map(|i| coverage.reasons.remove(i));
    coverage.complete = !coverage.reasons.iter().any(|r| r.code.makes_incomplete());

    let mut builder = Builder::new(&file);
    builder.redact = opts.redact_secrets;
    builder.meta = state.meta;
    builder.records = records;
    run(builder, fr, rest, coverage, state.open_line, prior_dups)
}

/// Reads the records of one line of a session of `format`: `bytes` is the line as the file
/// holds it (its newline optional), `line` its 1-based number and `offset` the byte offset of
/// its first byte, so entry ids derived from the position, line numbers and offsets come out
/// as a read of the whole file gives them. The texts of the records are those of a whole read;
/// what a reader works out from other lines (pairing, lineage, the session id) is not.
///
/// This is how a caller that stored a cut text re-reads one entry's full text from the byte
/// offset it recorded (after checking the file is unchanged).
///
/// ```
/// use sessiondex_source::{read_bytes, read_line, Format, ReadOptions};
///
/// let log = br#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/p"}
/// {"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"hello"}}
/// "#;
/// let opts = ReadOptions::default();
/// let whole = read_bytes("s1.jsonl", log, &opts).unwrap();
/// let r = &whole.records[0];
/// let at = r.offset as usize;
/// let one = read_line("s1.jsonl", Format::Pi, r.line, r.offset, &log[at..], &opts).unwrap();
/// assert_eq!(one[0].text, "hello");
/// assert_eq!(one[0].entry_id, r.entry_id);
/// ```
///
/// `opts` are the options of the whole read (its `format` is ignored: `format` is the
/// session's); pass the same ones so the texts agree.
///
/// # Errors
///
/// [`ErrorKind::Io`] only in theory (the bytes are in memory).
pub fn read_line(
    file: &str,
    format: Format,
    line: u64,
    offset: u64,
    bytes: &[u8],
    opts: &ReadOptions,
) -> Result<Vec<Record>, Error> {
    let one = match bytes.iter().position(|&b| b == b'\n') {
        Some(end) => &bytes[..=end],
        None => bytes,
    };
    let mut builder = Builder::new(file);
    builder.redact = opts.redact_secrets;
    builder.meta.format = Some(format);
    let mut coverage = std::mem::take(&mut builder.coverage);
    coverage.complete_bytes = offset;
    coverage.lines = line.saturating_sub(1);
    let session = run(builder, reader_for(format), one, coverage, false, None)?;
    Ok(session.records)
}

/// Reads a session from bytes in memory.
///
/// # Errors
///
/// [`ErrorKind::UnknownFormat`] when no format was forced and the content matches none.
pub fn read_bytes(file: &str, bytes: &[u8], opts: &ReadOptions) -> Result<Session, Error> {
    read_from(file, bytes, opts)
}

/// Reads a session file, streaming it line by line.
///
/// # Errors
///
/// [`ErrorKind::Io`] when the file cannot be opened or read, [`ErrorKind::UnknownFormat`] when
/// no format was forced and the content matches none.
pub fn read_path(path: &Path, opts: &ReadOptions) -> Result<Session, Error> {
    let name = path.to_string_lossy();
    let file = File::open(path).map_err(|e| Error::new(ErrorKind::Io, &name, e.to_string()))?;
    read_from(&name, BufReader::with_capacity(256 * 1024, file), opts)
}

/// Session files under `path`: the file itself, or every `*.jsonl` below a directory
/// (recursively, symlinked directories not followed, sorted by path).
///
/// What could not be looked at is left out silently; [`discover_all`] also names it.
#[must_use]
pub fn discover(path: &Path) -> Vec<PathBuf> {
    discover_all(path).files
}

/// What [`discover_all`] found under one source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovered {
    /// Session files, sorted by path.
    pub files: Vec<PathBuf>,
    /// Directories that could not be listed (permissions, or a source that is neither a
    /// regular file nor a directory, such as a FIFO), and entries whose type could not be
    /// read: sessions may hide there. Sorted by path.
    pub unreadable: Vec<PathBuf>,
}

/// [`discover`], also naming what could not be looked at.
///
/// Symbolic links below `path` are not followed, neither to directories nor to files, so a
/// link loop (`a -> ..`, a link to itself) cannot trap the walk and no file is found twice;
/// `path` itself may be a link. A missing `path` gives nothing: the caller checks existence.
#[must_use]
pub fn discover_all(path: &Path) -> Discovered {
    let (files, unreadable) = walk(path, false, true);
    Discovered {
        files: files.into_iter().map(|(p, _)| p).collect(),
        unreadable,
    }
}

/// A session file found by [`discover_with_metadata`], with its metadata.
#[derive(Debug, Clone)]
pub struct FoundFile {
    /// The file.
    pub path: PathBuf,
    /// Its metadata, `None` when it could not be read. Below a directory source the walk
    /// only returns regular files, so this is the file's own; a source that is a link to a
    /// file is followed, as `std::fs::metadata` does.
    pub metadata: Option<std::fs::Metadata>,
}

/// [`discover_all`] with each file's metadata, read relative to its open directory while
/// walking (cheaper than a `stat` of every full path afterwards), in no particular order: the
/// caller orders them (a sync sorts by modification time). The unreadable paths are sorted.
#[must_use]
pub fn discover_with_metadata(path: &Path) -> (Vec<FoundFile>, Vec<PathBuf>) {
    let (files, unreadable) = walk(path, true, false);
    let found = files
        .into_iter()
        .map(|(path, metadata)| FoundFile { path, metadata })
        .collect();
    (found, unreadable)
}

/// Files found by a walk, each with its metadata when asked for (`None` when it cannot be
/// read), and what could not be looked at.
#[derive(Default)]
struct WalkOut {
    files: Vec<(PathBuf, Option<std::fs::Metadata>)>,
    unreadable: Vec<PathBuf>,
}

/// Threads a parallel step of sessiondex uses (the directory walk, the stat of index files,
/// a sync's builds, the catalog's folds): the machine's cores, at most four; 1 where threads
/// are not available (a browser).
#[must_use]
pub fn worker_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// The walk behind [`discover_all`]; with `stat`, each file's metadata too; with `sorted`, in
/// path order. Directories are listed by up to four threads (fewer when the machine has
/// fewer cores): listing and stat calls wait on the kernel, and a tree of 10,000 sessions
/// takes most of a no-op sync.
#[allow(clippy::type_complexity)]
fn walk(
    path: &Path,
    stat: bool,
    sorted: bool,
) -> (Vec<(PathBuf, Option<std::fs::Metadata>)>, Vec<PathBuf>) {
    let Ok(meta) = std::fs::metadata(path) else {
        return (Vec::new(), Vec::new());
    };
    if meta.is_file() {
        return (vec![(path.to_path_buf(), stat.then_some(meta))], Vec::new());
    }
    walk_with(path, stat, sorted, worker_threads())
}

/// [`walk`] of a directory with `threads` workers (1: this thread alone).
#[allow(clippy::type_complexity)]
fn walk_with(
    path: &Path,
    stat: bool,
    sorted: bool,
    threads: usize,
) -> (Vec<(PathBuf, Option<std::fs::Metadata>)>, Vec<PathBuf>) {
    let mut out = if threads > 1 {
        walk_parallel(path.to_path_buf(), stat, threads)
    } else {
        let mut out = WalkOut::default();
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            list_dir(dir, stat, &mut stack, &mut out);
        }
        out
    };
    if sorted {
        out.files.sort_by(|a, b| path_order(&a.0, &b.0));
    }
    out.unreadable.sort();
    (out.files, out.unreadable)
}

/// Lists one directory of a walk: its subdirectories go to `subdirs`, its session files
/// (regular `.jsonl` files; links are not files here) to `out`.
fn list_dir(dir: PathBuf, stat: bool, subdirs: &mut Vec<PathBuf>, out: &mut WalkOut) {
    let Ok(entries) = std::fs::read_dir(&dir) else {
        out.unreadable.push(dir);
        return;
    };
    for entry in entries {
        let Ok(entry) = entry else {
            out.unreadable.push(dir);
            return;
        };
        let p = entry.path();
        let Ok(ft) = entry.file_type() else {
            out.unreadable.push(p);
            continue;
        };
        if ft.is_dir() {
            subdirs.push(p);
        } else if ft.is_file() && p.extension().is_some_and(|e| e == "jsonl") {
            // The file's own metadata, read relative to the open directory.
            let m = if stat { entry.metadata().ok() } else { None };
            out.files.push((p, m));
        }
    }
}

/// [`walk`] with `threads` workers (the calling thread and `threads - 1` helpers; if a
/// helper cannot be started the others do its share) taking directories from one queue.
fn walk_parallel(root: PathBuf, stat: bool, threads: usize) -> WalkOut {
    use std::sync::{Condvar, Mutex, PoisonError};

    /// Directories not listed yet, and how many workers are listing one (which may add more).
    struct Queue {
        dirs: Vec<PathBuf>,
        busy: usize,
    }
    let queue = Mutex::new(Queue {
        dirs: vec![root],
        busy: 0,
    });
    let changed = Condvar::new();
    let worker = || {
        let mut out = WalkOut::default();
        let mut subdirs = Vec::new();
        loop {
            let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
            let dir = loop {
                if let Some(d) = q.dirs.pop() {
                    q.busy += 1;
                    break Some(d);
                }
                if q.busy == 0 {
                    break None;
                }
                q = changed.wait(q).unwrap_or_else(PoisonError::into_inner);
            };
            drop(q);
            let Some(dir) = dir else {
                // Nothing queued and nobody listing: the walk is over for every worker.
                changed.notify_all();
                return out;
            };
            list_dir(dir, stat, &mut subdirs, &mut out);
            let mut q = queue.lock().unwrap_or_else(PoisonError::into_inner);
            q.busy -= 1;
            q.dirs.append(&mut subdirs);
            drop(q);
            changed.notify_all();
        }
    };
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads)
            .filter_map(|_| std::thread::Builder::new().spawn_scoped(s, worker).ok())
            .collect();
        let mut all = worker();
        for h in helpers {
            // A helper returns once the queue is empty and nobody is listing.
            if let Ok(mut out) = h.join() {
                all.files.append(&mut out.files);
                all.unreadable.append(&mut out.unreadable);
            }
        }
        all
    })
}

/// `a.cmp(b)` for two paths of one walk. They share the walk's root as a byte prefix and
/// continue with names joined by `/` (never empty, never `.`, never holding `/`), so
/// comparing their bytes with `/` ranked below every other byte orders them component by
/// component, as `Path::cmp` does, without parsing components (a third of a no-op sync's
/// time at 10,000 files went into that). For any two paths it is a total order of their
/// bytes, which is what a tie-break needs.
pub fn path_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    #[cfg(unix)]
    {
        let (x, y) = (
            a.as_os_str().as_encoded_bytes(),
            b.as_os_str().as_encoded_bytes(),
        );
        let rank = |c: u8| if c == b'/' { 0u16 } else { u16::from(c) + 1 };
        let at = x.iter().zip(y).position(|(p, q)| p != q);
        match at {
            Some(i) => rank(x[i]).cmp(&rank(y[i])),
            None => x.len().cmp(&y.len()),
        }
    }
    #[cfg(not(unix))]
    {
        a.cmp(b)
    }
}

#[cfg(test)]
mod walk_order_tests {
    use super::{path_order, walk_with};
    use std::path::{Path, PathBuf};

    /// A tree of 300 directories up to four deep, with sessions, other files and (on Unix)
    /// links to a directory and to a file: every worker count finds the same files with the
    /// same metadata, and only the sessions.
    #[test]
    fn parallel_walk_finds_what_one_thread_finds() {
        let root = std::env::temp_dir().join(format!("sdx-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let mut expected = Vec::new();
        for i in 0..300 {
            let mut dir = root.clone();
            for level in 0..=(i % 4) {
                dir.push(format!("d{}", (i / (level + 1)) % 7));
            }
            dir.push(format!("leaf{i}"));
            std::fs::create_dir_all(&dir).expect("dir");
            let session = dir.join(format!("s{i}.jsonl"));
            std::fs::write(&session, "x".repeat(i)).expect("file");
            expected.push(session);
            std::fs::write(dir.join("notes.txt"), "no").expect("file");
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&root, root.join("loop")).expect("link");
            std::os::unix::fs::symlink(&expected[0], root.join("link.jsonl")).expect("link");
        }
        expected.sort();
        for threads in [1, 2, 4, 9] {
            let (files, unreadable) = walk_with(&root, true, true, threads);
            let paths: Vec<&PathBuf> = files.iter().map(|(p, _)| p).collect();
            assert_eq!(
                paths,
                expected.iter().collect::<Vec<_>>(),
                "{threads} workers"
            );
            assert!(unreadable.is_empty());
            for (p, m) in &files {
                let len = m.as_ref().map(std::fs::Metadata::len);
                assert_eq!(len, std::fs::metadata(p).ok().map(|m| m.len()), "{p:?}");
            }
            let (unsorted, _) = walk_with(&root, false, false, threads);
            let mut paths: Vec<PathBuf> = unsorted.into_iter().map(|(p, _)| p).collect();
            paths.sort();
            assert_eq!(paths, expected, "{threads} workers, unsorted");
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn walk_order_is_path_order() {
        let root = "/r/./s";
        let names = [
            "a", "a.b", "a-b", "a b", "ab", "a/b", "a/b.c", "a/bc", "a.b/c", "a-/x", "é/x", "z",
            "a/b/c", "a0/b", "a//b",
        ];
        for x in names {
            for y in names {
                let (p, q) = (Path::new(root).join(x), Path::new(root).join(y));
                if x.contains("//") || y.contains("//") {
                    continue;
                }
                assert_eq!(path_order(&p, &q), p.cmp(&q), "{x} {y}");
            }
        }
    }
}
