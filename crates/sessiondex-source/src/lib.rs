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
mod jsonl;
mod pi;
mod record;
mod session;
pub mod util;

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

pub use coverage::{ReadCoverage, Reason, ReasonCode};
pub use detect::detect;
pub use jsonl::{read_objects, Loc};
pub use record::{Format, Outcome, Record, SessionLink, SessionMeta, TextClass};
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
}

impl ErrorKind {
    /// The stable snake_case code.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::Io => "source_unreadable",
            ErrorKind::UnknownFormat => "unknown_format",
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
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// Force a format instead of detecting it from content.
    pub format: Option<Format>,
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
    fn finish(&mut self, b: &mut Builder);
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
    builder.meta.format = Some(format);
    let mut fr = reader_for(format);
    let chained = std::io::Cursor::new(head).chain(reader);
    let mut coverage = std::mem::take(&mut builder.coverage);
    {
        let b = &mut builder;
        let fr = &mut fr;
        jsonl::read_lines(chained, 0, 1, &mut coverage, &mut |ev| match ev {
            jsonl::LineEvent::Raw(line, bytes) => fr.raw_line(line, bytes, b),
            jsonl::LineEvent::Object(loc, obj) => {
                fr.object(loc, obj, b);
                true
            }
        })
        .map_err(|e| Error::new(ErrorKind::Io, file, e.to_string()))?;
    }
    coverage.merge(&builder.coverage);
    builder.coverage = coverage;
    fr.finish(&mut builder);
    Ok(builder.finish())
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
#[must_use]
pub fn discover(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(meta) = std::fs::metadata(path) else {
        return out;
    };
    if meta.is_file() {
        out.push(path.to_path_buf());
        return out;
    }
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(ft) = entry.file_type() else { continue };
            let p = entry.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && p.extension().is_some_and(|e| e == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
