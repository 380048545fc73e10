//! The `sessiondex` command line. The only crate that prints.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Serialize;

use sessiondex::source::{self, Branches, Format, ReadOptions, Record};

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
struct WalkArgs {
    /// A session file, or a directory searched recursively for `*.jsonl` session files.
    #[arg(long, value_name = "PATH")]
    source: PathBuf,
    /// `active`: the path from the current leaf to the root; `all`: every record.
    #[arg(long, value_enum, default_value = "active")]
    branches: BranchesArg,
    /// Force a format instead of detecting it from content.
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// JSON Lines on stdout (one record per line); per-session coverage as JSON Lines on stderr.
    #[arg(long)]
    json: bool,
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
        Command::Walk(args) => walk(&args),
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
    };
    if !args.source.exists() {
        let message = format!("{}: no such file or directory", args.source.display());
        if args.json {
            let body =
                serde_json::json!({"error": {"code": "source_not_found", "message": message}});
            println!("{body}");
        } else {
            eprintln!("sessiondex: {message}");
        }
        return Ok(ExitCode::from(1));
    }
    let files = source::discover(&args.source);
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
