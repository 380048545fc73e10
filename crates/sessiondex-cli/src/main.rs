//! The `sessiondex` command line. The only crate that prints.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Serialize;

use sessiondex::query::sessions::{Availability, SessionsRequest};
use sessiondex::source::{self, Branches, Format, ReadOptions, Record};
use sessiondex::{Config, Error, Memory};

mod mcp;
mod query;
use query::{CallArgs, ExpandArgs, RecallArgs, TraceArgs};

/// mimalloc: a sync allocates and frees many small strings and vectors per record and term
/// (without transparent huge pages: the workspace dependency's `no_thp`), asked for plain
/// blocks where their alignment is enough ([`sessiondex_core::alloc`]).
#[global_allocator]
static GLOBAL: sessiondex_core::alloc::Mimalloc = sessiondex_core::alloc::Mimalloc;

/// Fast, honest recall over coding agent session logs.
#[derive(Debug, Parser)]
#[command(name = "sessiondex", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print every normalized record of session files, in order.
    Walk(WalkArgs),
    /// Bring the index up to date with the session files (only what changed is read).
    Index(IndexArgs),
    /// List indexed sessions, newest first (all of them, or those passing the filters).
    Sessions(SessionsArgs),
    /// Search past sessions: ranked entry hits (and cold session candidates) with follow calls.
    Recall(RecallArgs),
    /// Read complete records of one session by index, entry id, operation address or range.
    Expand(ExpandArgs),
    /// Run a `follow` or `next` call exactly as a hit or page gave it (JSON, or `-` for stdin).
    Call(CallArgs),
    /// Follow one session's lineage across files: ancestors, root, descendants.
    Trace(TraceArgs),
    /// Serve recall, expand, sessions and call as MCP tools over stdio (docs/mcp.md).
    Mcp(mcp::McpArgs),
}

/// Where the sessions and the index are, and every config key as a flag.
#[derive(Debug, Args)]
struct IndexArgs {
    /// A session file or directory (relative: from the current directory); repeat for
    /// several. Default: the agents' standard locations that exist (~/.claude/projects,
    /// ~/.pi/agent/sessions, ~/.omp/agent/sessions, ~/.codex/sessions).
    #[arg(long, value_name = "PATH")]
    source: Vec<PathBuf>,
    /// The index directory. Default: $XDG_CACHE_HOME/sessiondex, else ~/.cache/sessiondex
    /// (~/Library/Caches/sessiondex on macOS).
    #[arg(long, value_name = "DIR")]
    index_dir: Option<PathBuf>,
    /// Which branch mode to index.
    #[arg(long, value_enum, default_value = "active")]
    branches: BranchesArg,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    config: ConfigArgs,
}

/// Every key of the config file, as a flag; a flag wins over the file.
#[derive(Debug, Args)]
struct ConfigArgs {
    /// A TOML config file with the keys below in camelCase.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Sessions considered per scope, newest first [default: 500]
    #[arg(long, value_name = "N")]
    max_sessions: Option<usize>,
    /// Indexed text per entry, in Unicode scalars; longer text is cut [default: 2000]
    #[arg(long, value_name = "N")]
    max_entry_chars: Option<usize>,
    /// Index reasoning (thinking) text [default: false]
    #[arg(long, value_name = "BOOL")]
    index_thinking: Option<bool>,
    /// Index tool output [default: true]
    #[arg(long, value_name = "BOOL")]
    index_tool_output: Option<bool>,
    /// How many of the newest sessions get hot shards; the rest get cold digests [default: 50]
    #[arg(long, value_name = "N")]
    hot_sessions: Option<usize>,
    /// Cap on one cold digest's vocabulary [default: 524288]
    #[arg(long, value_name = "BYTES")]
    max_cold_vocabulary_bytes: Option<u64>,
    /// Cap on one cold digest file [default: 1048576]
    #[arg(long, value_name = "BYTES")]
    max_cold_cache_bytes: Option<u64>,
    /// Sessions (re)indexed by one sync at most [default: 10000]
    #[arg(long, value_name = "N")]
    max_sync_sessions: Option<usize>,
    /// Source bytes read by one sync at most [default: 536870912]
    #[arg(long, value_name = "BYTES")]
    max_sync_source_bytes: Option<u64>,
    /// Index files examined by one cleanup at most [default: 100000]
    #[arg(long, value_name = "N")]
    max_cache_cleanup_files: Option<usize>,
    /// Longest regex pattern accepted, in bytes [default: 1024]
    #[arg(long, value_name = "BYTES")]
    regex_max_pattern_bytes: Option<usize>,
    /// Largest compiled regex automaton, in bytes [default: 4194304]
    #[arg(long, value_name = "BYTES")]
    regex_max_automaton_bytes: Option<usize>,
    /// Most text bytes one regex recall scans [default: 268435456]
    #[arg(long, value_name = "BYTES")]
    regex_max_haystack_bytes: Option<u64>,
    /// Replace well-known credential shapes with [redacted:<kind>] when sessions are read
    /// (docs/secrets.md) [default: true]
    #[arg(long, value_name = "BOOL")]
    redact_secrets: Option<bool>,
}

impl ConfigArgs {
    fn resolve(&self) -> Result<Config, sessiondex::ConfigError> {
        let mut c = match &self.config {
            Some(path) => Config::from_file(path)?,
            None => Config::default(),
        };
        macro_rules! set {
            ($($field:ident),*) => {
                $(if let Some(v) = self.$field { c.$field = v; })*
            };
        }
        set!(
            max_sessions,
            max_entry_chars,
            index_thinking,
            index_tool_output,
            hot_sessions,
            max_cold_vocabulary_bytes,
            max_cold_cache_bytes,
            max_sync_sessions,
            max_sync_source_bytes,
            max_cache_cleanup_files,
            regex_max_pattern_bytes,
            regex_max_automaton_bytes,
            regex_max_haystack_bytes,
            redact_secrets
        );
        Ok(c)
    }
}

/// `sessions`: where sessions and the index are, and the filters of a `sessions` request
/// (docs/query.md), which combine with AND.
#[derive(Debug, Args)]
struct SessionsArgs {
    #[command(flatten)]
    index: IndexArgs,
    /// Only the session with this id or source path.
    #[arg(long, value_name = "ID|PATH")]
    id: Option<String>,
    /// Only sessions whose working directory is this directory or below it (a relative path
    /// is taken from the current directory, `.` and `..` resolved).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Only sessions created at or after this time (RFC 3339 or YYYY-MM-DD; the header's
    /// time, else the first record's).
    #[arg(long, value_name = "TIME")]
    created_since: Option<String>,
    /// Only sessions created at or before this time (a bare date covers its whole day).
    #[arg(long, value_name = "TIME")]
    created_until: Option<String>,
    /// Only sessions whose parent link (parent, fork, subagent) names this id or path.
    #[arg(long, value_name = "ID|PATH")]
    parent: Option<String>,
    /// Only sessions whose source is `available`, `stale` (changed since it was indexed) or
    /// `missing`.
    #[arg(long, value_enum)]
    availability: Option<AvailabilityArg>,
    /// At most this many sessions, the newest (default: every one that passes).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
}

impl SessionsArgs {
    /// The filters as a `sessions` request, `None` when no filter is given.
    ///
    /// # Errors
    ///
    /// As [`absolute_dir`].
    fn request(&self) -> Result<Option<SessionsRequest>, Error> {
        let cwd = self.cwd.as_deref().map(absolute_dir).transpose()?;
        let req = SessionsRequest {
            id: self.id.clone(),
            cwd,
            created_since: self.created_since.clone(),
            created_until: self.created_until.clone(),
            parent: self.parent.clone(),
            availability: self.availability.map(|a| match a {
                AvailabilityArg::Available => Availability::Available,
                AvailabilityArg::Stale => Availability::Stale,
                AvailabilityArg::Missing => Availability::Missing,
            }),
            // Every passing session: `--limit` cuts the list that is printed.
            limit: Some(usize::MAX),
        };
        let unfiltered = SessionsRequest {
            limit: req.limit,
            ..SessionsRequest::default()
        };
        Ok((req != unfiltered).then_some(req))
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AvailabilityArg {
    Available,
    Stale,
    Missing,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BranchesArg {
    Active,
    All,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    Pi,
    Omp,
    #[value(alias = "claude", alias = "claude-code")]
    ClaudeCode,
    Codex,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).multiple(true).args(["source", "session"])))]
struct WalkArgs {
    /// A session file, or a directory searched recursively for `*.jsonl` session files. With
    /// `--session`: where sessions are found (repeatable; default: the standard locations).
    #[arg(long, value_name = "PATH")]
    source: Vec<PathBuf>,
    /// One session by id or path, read through the index (ids resolve after a sync).
    #[arg(long, value_name = "ID_OR_PATH")]
    session: Option<String>,
    /// The index directory (with `--session`).
    #[arg(long, value_name = "DIR")]
    index_dir: Option<PathBuf>,
    #[command(flatten)]
    config: ConfigArgs,
    /// `active`: the path from the current leaf to the root; `all`: every record.
    #[arg(long, value_enum, default_value = "active")]
    branches: BranchesArg,
    /// Force a format instead of detecting it from content.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// JSON Lines on stdout (one record per line); per-session coverage as JSON Lines on stderr.
    #[arg(long)]
    json: bool,
    /// Show credentials as the source has them instead of `[redacted:<kind>]` (with
    /// `redactSecrets` on, the default).
    #[arg(long)]
    reveal: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WalkLine<'a> {
    session_id: &'a str,
    file: &'a str,
    #[serde(flatten)]
    record: &'a Record,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SessionCoverageLine<'a> {
    session_id: Option<&'a str>,
    file: &'a str,
    format: Option<Format>,
    records: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    lineage_fingerprint: Option<&'a str>,
    coverage: Option<&'a source::ReadCoverage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorBody<'a>>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    message: &'a str,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Walk(args) if args.session.is_some() => query::walk_session(&args),
        Command::Walk(args) => walk(&args),
        Command::Index(args) => index(&args),
        Command::Sessions(args) => sessions(&args),
        Command::Recall(args) => query::recall(&args),
        Command::Expand(args) => query::expand(&args),
        Command::Call(args) => query::call(&args),
        Command::Trace(args) => query::trace(&args),
        Command::Mcp(args) => mcp::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // A closed stdout (`| head`) is not a failure of ours.
            if e.kind() == io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("sessiondex: {e}");
            ExitCode::from(1)
        }
    }
}

fn walk(args: &WalkArgs) -> io::Result<ExitCode> {
    let branches = match args.branches {
        BranchesArg::Active => Branches::Active,
        BranchesArg::All => Branches::All,
    };
    let opts = ReadOptions {
        format: args.format.map(|f| match f {
            FormatArg::Pi => Format::Pi,
            FormatArg::Omp => Format::Omp,
            FormatArg::ClaudeCode => Format::ClaudeCode,
            FormatArg::Codex => Format::Codex,
        }),
        redact_secrets: !args.reveal && args.config.resolve().map_or(true, |c| c.redact_secrets),
    };
    if let Some(missing) = args.source.iter().find(|s| !s.exists()) {
        // One set of error codes for every entry point: a path that cannot be opened is
        // `source_unreadable`.
        let message = format!("{}: no such file or directory", missing.display());
        let e = Error::new(sessiondex::ErrorCode::SourceUnreadable, message);
        return Ok(fail(args.json, &e));
    }
    // Files named as recall and expand name them: absolute, so the lines join with theirs.
    let files: Vec<PathBuf> = args
        .source
        .iter()
        .map(|s| sessiondex::absolute_path(s).unwrap_or_else(|_| s.clone()))
        .flat_map(|s| source::discover(&s))
        .collect();
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    let stderr = io::stderr();
    let mut err = stderr.lock();
    for path in files {
        let file = path.to_string_lossy().into_owned();
        match source::read_path(&path, &opts) {
            Ok(session) => {
                let sel = session.select(branches);
                for record in &sel.records {
                    if args.json {
                        serde_json::to_writer(
                            &mut out,
                            &WalkLine {
                                session_id: &session.meta.session_id,
                                file: &file,
                                record,
                            },
                        )?;
                        out.write_all(b"\n")?;
                    } else {
                        write_record_text(&mut out, record)?;
                    }
                }
                out.flush()?;
                let line = SessionCoverageLine {
                    session_id: Some(&session.meta.session_id),
                    file: &file,
                    format: session.meta.format,
                    records: sel.records.len(),
                    lineage_fingerprint: Some(&sel.lineage_fingerprint),
                    coverage: Some(&sel.coverage),
                    error: None,
                };
                report(&mut err, args.json, &line)?;
            }
            Err(e) => {
                let line = SessionCoverageLine {
                    session_id: None,
                    file: &file,
                    format: None,
                    records: 0,
                    lineage_fingerprint: None,
                    coverage: None,
                    error: Some(ErrorBody {
                        code: e.kind().code(),
                        message: e.message(),
                    }),
                };
                report(&mut err, args.json, &line)?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn report(err: &mut impl Write, json: bool, line: &SessionCoverageLine<'_>) -> io::Result<()> {
    if json {
        serde_json::to_writer(&mut *err, line)?;
        writeln!(err)
    } else {
        let status = match (&line.error, line.coverage) {
            (Some(e), _) => format!("skipped: {} ({})", e.code, e.message),
            (None, Some(c)) if c.complete => "complete".to_owned(),
            (None, Some(c)) => {
                let reasons: Vec<String> = c
                    .reasons
                    .iter()
                    .map(|r| format!("{} x{}", r.code.as_str(), r.count))
                    .collect();
                format!("incomplete: {}", reasons.join(", "))
            }
            (None, None) => String::new(),
        };
        writeln!(
            err,
            "{} [{}] {} records, {}",
            line.file,
            line.format.map_or("?", Format::as_str),
            line.records,
            status
        )
    }
}

fn write_record_text(out: &mut impl Write, r: &Record) -> io::Result<()> {
    let who = match (r.role.as_deref(), r.tool.as_deref()) {
        (_, Some(tool)) => format!("{} {tool}", r.kind),
        (Some(role), None) => role.to_owned(),
        (None, None) => r.kind.clone(),
    };
    let outcome = r
        .outcome
        .map_or(String::new(), |o| format!(" [{}]", o.as_str()));
    let first_line: String = r
        .text
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(160)
        .collect();
    writeln!(
        out,
        "{:>5} {} {}{}: {}",
        r.index,
        r.timestamp.as_deref().unwrap_or("-"),
        who,
        outcome,
        first_line
    )
}

fn branches_of(b: BranchesArg) -> Branches {
    match b {
        BranchesArg::Active => Branches::Active,
        BranchesArg::All => Branches::All,
    }
}

/// Prints a failed call: `{"error": {...}}` on stdout with `--json`, a line on stderr
/// without; exit status 1.
fn fail(json: bool, e: &Error) -> ExitCode {
    if json {
        println!("{}", e.envelope());
    } else {
        eprintln!("sessiondex: {}: {}", e.code_str(), e.message);
    }
    ExitCode::from(1)
}

/// `dir` as the absolute path a session's recorded cwd is compared with
/// ([`sessiondex::absolute_path`]: made absolute against the current directory, `.` and `..`
/// resolved, other symbolic links kept as spelled, as an agent records the directory its
/// shell named). A relative `--cwd` left as given matches no session, and the empty answer
/// would look authoritative.
///
/// # Errors
///
/// `invalid_request` when the current directory cannot be read.
pub(crate) fn absolute_dir(dir: &Path) -> Result<String, Error> {
    let abs = sessiondex::absolute_path(dir).map_err(|e| {
        Error::new(
            sessiondex::ErrorCode::InvalidRequest,
            format!("--cwd {}: {e}", dir.display()),
        )
    })?;
    Ok(abs.to_string_lossy().into_owned())
}

/// The memory of `args` ([`query::open`]), or the exit code of the error that stops it.
fn open_memory(args: &IndexArgs) -> Result<Memory, ExitCode> {
    query::open(
        &args.source,
        args.index_dir.as_ref(),
        &args.config,
        args.json,
    )
}

/// `sessions`: the list of [`Memory::sessions`], keeping the sessions that pass the filters
/// (the rows `sessions_filtered` gives for them, matched by source path) when any is given,
/// then at most `--limit`.
fn sessions(args: &SessionsArgs) -> io::Result<ExitCode> {
    let json = args.index.json;
    let req = match args.request() {
        Ok(r) => r,
        Err(e) => return Ok(fail(json, &e)),
    };
    let memory = match open_memory(&args.index) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let branches = branches_of(args.index.branches);
    let mut list = match memory.sessions(branches) {
        Ok(l) => l,
        Err(e) => return Ok(fail(json, &e)),
    };
    if let Some(req) = req {
        // The list's sync is this call's: the filters run over the index it left.
        let page = match memory.sessions_indexed(&req, branches, &list.coverage) {
            Ok(p) => p,
            Err(e) => return Ok(fail(json, &e)),
        };
        let passing: std::collections::HashSet<&str> =
            page.sessions.iter().map(|r| r.file.as_str()).collect();
        list.sessions.retain(|s| passing.contains(s.file.as_str()));
    }
    if let Some(n) = args.limit {
        list.sessions.truncate(n);
    }
    if json {
        println!("{}", serde_json::to_string(&list)?);
    } else {
        query::hint_no_sources(&memory);
        print_sessions(&list)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn index(args: &IndexArgs) -> io::Result<ExitCode> {
    let memory = match open_memory(args) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let branches = branches_of(args.branches);
    let bar = progress_bar();
    let started = std::time::Instant::now();
    let result = memory.sync(branches, &mut |done, total| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    match result {
        Ok(report) => {
            if args.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                query::hint_no_sources(&memory);
                let c = &report.coverage;
                println!(
                    "{} indexed, {} reused, {} removed, {} failed; {} read in {:.2} s",
                    report.indexed,
                    report.reused,
                    report.removed,
                    report.failed,
                    bytes_text(report.bytes_read),
                    started.elapsed().as_secs_f64()
                );
                println!(
                    "{}/{} sessions indexed{}",
                    c.indexed_sessions,
                    c.eligible_sessions,
                    coverage_words(c)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(fail(args.json, &e)),
    }
}

/// A byte count for people: `812 bytes`, `13.3 KB`, `210.0 MB`, `1.2 GB` (powers of 1,000,
/// as the benchmarks' MB/s).
fn bytes_text(n: u64) -> String {
    #[allow(clippy::cast_precision_loss)] // a tenth of a unit is all that is shown
    let x = n as f64;
    // The unit is picked after rounding, so 999,960 bytes are 1.0 MB, not 1000.0 KB.
    match n {
        0..=999 => format!("{n} bytes"),
        1_000..=999_949 => format!("{:.1} KB", x / 1e3),
        999_950..=999_949_999 => format!("{:.1} MB", x / 1e6),
        _ => format!("{:.1} GB", x / 1e9),
    }
}

fn coverage_words(c: &sessiondex::IndexCoverage) -> String {
    if c.complete {
        return String::new();
    }
    let reasons: Vec<String> = c
        .reasons
        .iter()
        .map(|r| format!("{} x{}", r.code, r.count))
        .collect();
    format!(
        "; incomplete ({} stale, {} incomplete): {}",
        c.stale_sessions,
        c.incomplete_sessions,
        reasons.join(", ")
    )
}

fn print_sessions(l: &sessiondex::SessionList) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    for s in &l.sessions {
        writeln!(
            out,
            "{}  {:<4} {:<11} {:>5} entries {:>3} errors  {}",
            s.last_ts.as_deref().unwrap_or("-"),
            s.tier,
            s.format.map_or("?", Format::as_str),
            s.entry_count,
            s.error_count,
            s.title.as_deref().unwrap_or(&s.session_id)
        )?;
        writeln!(out, "    {}", s.file)?;
    }
    let n = l.sessions.len();
    writeln!(
        out,
        "{n} session{}{}",
        if n == 1 { "" } else { "s" },
        coverage_words(&l.coverage)
    )
}

/// A progress bar on stderr when it is a terminal.
fn progress_bar() -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(0);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("indexing {bar:40} {pos}/{len} sessions ({eta})")
    {
        bar.set_style(style);
    }
    Some(bar)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn byte_counts_read_in_their_unit() {
        for (n, text) in [
            (0, "0 bytes"),
            (999, "999 bytes"),
            (1_000, "1.0 KB"),
            (13_251, "13.3 KB"),
            (999_949, "999.9 KB"),
            (999_950, "1.0 MB"),
            (210_009_363, "210.0 MB"),
            (999_949_999, "999.9 MB"),
            (999_950_000, "1.0 GB"),
            (u64::MAX, "18446744073.7 GB"),
        ] {
            assert_eq!(bytes_text(n), text, "{n}");
        }
    }

    /// Every config key is a flag of `index` whose help names the key's default, as
    /// `Config::default` has it (so the help cannot drift from the library).
    #[test]
    fn config_flags_name_their_defaults() {
        let defaults = serde_json::to_value(Config::default()).expect("config serializes");
        let defaults = defaults.as_object().expect("an object");
        let mut cli = Cli::command();
        let index = cli.find_subcommand_mut("index").expect("index");
        for (key, value) in defaults {
            let flag: String = key
                .chars()
                .flat_map(|c| {
                    let dash = c.is_ascii_uppercase().then_some('-');
                    dash.into_iter()
                        .chain(std::iter::once(c.to_ascii_lowercase()))
                })
                .collect();
            let arg = index
                .get_arguments()
                .find(|a| a.get_long() == Some(flag.as_str()))
                .unwrap_or_else(|| panic!("no flag --{flag} for config key {key}"));
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(
                help.ends_with(&format!("[default: {value}]")),
                "--{flag}: {help:?} does not name {value}"
            );
        }
    }
}
