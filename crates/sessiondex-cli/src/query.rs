//! `recall`, `expand`, `call`, `walk --session` and `trace`: the query commands.
//!
//! `--json` prints the result object exactly as the library returns it; without it a
//! readable view. Exit 0 with a result, 1 when the call failed (`{"error": {...}}` on stdout
//! with `--json`), 2 for usage errors (clap).

use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use serde_json::{json, Map, Value};

use sessiondex::query::expand::Expansion;
use sessiondex::query::request::{
    Call, ExpandRequest, FieldGroup, HitKind, Page, RecallRequest, Scope,
};
use sessiondex::query::sessions::{SessionRow, Trace};
use sessiondex::query::WalkRequest;
use sessiondex::source::Branches;
use sessiondex::{CallResult, Coverage, Error, ErrorCode, Memory};

use super::{
    absolute_dir, branches_of, fail, write_record_text, BranchesArg, ConfigArgs, WalkArgs,
};

/// Where sessions and the index are, and every config key.
#[derive(Debug, Args)]
pub(crate) struct MemoryArgs {
    /// A session file or directory (relative: from the current directory); repeat for
    /// several. Default: the agents' standard locations that exist.
    #[arg(long, value_name = "PATH")]
    source: Vec<PathBuf>,
    /// The index directory. Default: $XDG_CACHE_HOME/sessiondex, else ~/.cache/sessiondex
    /// (~/Library/Caches/sessiondex on macOS).
    #[arg(long, value_name = "DIR")]
    index_dir: Option<PathBuf>,
    #[command(flatten)]
    config: ConfigArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ModeArg {
    Literal,
    Phrase,
    Regex,
    Fuzzy,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum MatchArg {
    Any,
    All,
}

fn range_arg(s: &str) -> Result<[i64; 2], String> {
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("`{s}` is not A:B"))?;
    let p = |x: &str| {
        x.trim()
            .parse::<i64>()
            .map_err(|_| format!("`{x}` is not an integer"))
    };
    Ok([p(a)?, p(b)?])
}

#[derive(Debug, Args)]
pub(crate) struct RecallArgs {
    /// The query; omit it to select by the filters alone.
    query: Option<String>,
    /// How the query is read.
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// `any` term (default) or `all` terms in one entry.
    #[arg(long = "match", value_enum)]
    matching: Option<MatchArg>,
    /// `session`, `project` (default), `global` or `session:<id-or-path>`.
    #[arg(long)]
    scope: Option<String>,
    /// The directory `project` and `session` resolve against (default: the current one; a
    /// relative path is taken from the current directory, `.` and `..` resolved).
    #[arg(long)]
    cwd: Option<String>,
    /// `active` (default) or `all` branches.
    #[arg(long, value_enum)]
    branches: Option<BranchesArg>,
    /// The current session (id or path) for `--scope session`; default: $SESSIONDEX_SESSION.
    #[arg(long, value_name = "ID_OR_PATH")]
    current_session: Option<String>,
    /// Exact role.
    #[arg(long)]
    role: Option<String>,
    /// Exact tool name.
    #[arg(long)]
    tool: Option<String>,
    /// Exact tool reference (`omp.grep`, `mcp__github__create_issue`).
    #[arg(long = "ref", value_name = "REF")]
    reference: Option<String>,
    /// Exact provider.
    #[arg(long)]
    provider: Option<String>,
    /// Exact action.
    #[arg(long)]
    action: Option<String>,
    /// `succeeded`, `failed`, `aborted` or `timed_out`.
    #[arg(long)]
    outcome: Option<String>,
    /// At or after (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    since: Option<String>,
    /// At or before (a bare date covers its whole day).
    #[arg(long)]
    until: Option<String>,
    /// Inclusive entry indices `A:B` of one session.
    #[arg(long, value_name = "A:B", value_parser = range_arg)]
    entry_range: Option<[i64; 2]>,
    /// Hits per page (1..=100).
    #[arg(long, value_name = "N")]
    page_size: Option<u32>,
    /// Field groups the query may match: `text`, `thinking`, `tool_input`, `tool_output`
    /// (comma-separated or repeated).
    #[arg(long = "in", value_name = "GROUPS", value_delimiter = ',')]
    in_groups: Vec<String>,
    /// Print the page as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: MemoryArgs,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("selector").required(true).args(["index", "entry_id", "address", "range"])))]
pub(crate) struct ExpandArgs {
    /// The session id or path.
    #[arg(long, value_name = "ID_OR_PATH")]
    session: String,
    /// Entry indices.
    #[arg(long, value_name = "N", num_args = 1..)]
    index: Vec<i64>,
    /// A stable entry id (repeatable).
    #[arg(long, value_name = "ID")]
    entry_id: Vec<String>,
    /// An operation address `<entryId>/<k>` (repeatable).
    #[arg(long, value_name = "A")]
    address: Vec<String>,
    /// An inclusive index range `A:B`.
    #[arg(long, value_name = "A:B", value_parser = range_arg)]
    range: Option<[i64; 2]>,
    /// Entries of context before the one anchor.
    #[arg(long, value_name = "N")]
    before: Option<u32>,
    /// Entries of context after the one anchor.
    #[arg(long, value_name = "N")]
    after: Option<u32>,
    /// Characters of text per response (default and at most 20000).
    #[arg(long, value_name = "N")]
    max_chars: Option<u32>,
    /// `active` (default) or `all` branches.
    #[arg(long, value_enum)]
    branches: Option<BranchesArg>,
    /// Show credentials as the source has them instead of `[redacted:<kind>]`.
    #[arg(long)]
    reveal: bool,
    /// Print the expansion as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: MemoryArgs,
}

#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The call as JSON (`{"ref": ..., "args": {...}}`), or `-` to read it from stdin.
    call: String,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: MemoryArgs,
}

#[derive(Debug, Args)]
pub(crate) struct TraceArgs {
    /// The session id or path.
    #[arg(long, value_name = "ID_OR_PATH")]
    session: String,
    /// `active` (default) or `all` branches.
    #[arg(long, value_enum)]
    branches: Option<BranchesArg>,
    /// Print the trace as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    memory: MemoryArgs,
}

/// The memory of a command's flags, or the exit code of the error that stops it.
pub(crate) fn open(
    sources: &[PathBuf],
    index_dir: Option<&PathBuf>,
    config: &ConfigArgs,
    json: bool,
) -> Result<Memory, ExitCode> {
    let config = config
        .resolve()
        .map_err(|e| fail(json, &Error::new(ErrorCode::InvalidConfig, e.to_string())))?;
    let sources = (!sources.is_empty()).then(|| sources.to_vec());
    let mut memory =
        Memory::open(config, sources, index_dir.cloned()).map_err(|e| fail(json, &e))?;
    // One call per process: a cold digest kept open would only keep its pages here, and a
    // build for later calls would only take a core from this one.
    memory.set_cold_cache_bytes(0);
    memory.set_background_builds(false);
    Ok(memory)
}

/// Says on stderr that a memory without sources searches nothing (the default sources are
/// the standard locations that exist, and none does), so that its empty answer is read as
/// "nothing here" rather than "not found".
pub(crate) fn hint_no_sources(memory: &Memory) {
    if memory.sources().is_empty() {
        eprintln!(
            "sessiondex: no session logs here: none of the agents' standard locations exists \
             (~/.claude/projects, ~/.pi/agent/sessions, ~/.omp/agent/sessions, \
             ~/.codex/sessions); name files or folders with --source"
        );
    }
}

fn open_memory(m: &MemoryArgs, json: bool) -> Result<Memory, ExitCode> {
    open(&m.source, m.index_dir.as_ref(), &m.config, json)
}

/// The flags a copied follow command needs to reach the same sessions and index, from any
/// directory: each path absolute, as the memory holds it ([`sessiondex::absolute_path`]).
fn memory_flags(m: &MemoryArgs) -> String {
    let mut s = String::new();
    let mut flag = |name: &str, p: &Path| {
        let p = sessiondex::absolute_path(p).unwrap_or_else(|_| p.to_path_buf());
        s.push_str(name);
        s.push_str(&shell_quote(&p.to_string_lossy()));
    };
    for src in &m.source {
        flag(" --source ", src);
    }
    if let Some(d) = &m.index_dir {
        flag(" --index-dir ", d);
    }
    if let Some(c) = &m.config.config {
        flag(" --config ", c);
    }
    s
}

fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn print_json(v: &impl serde::Serialize) -> io::Result<ExitCode> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    serde_json::to_writer(&mut out, v)?;
    writeln!(out)?;
    Ok(ExitCode::SUCCESS)
}

fn set(obj: &mut Map<String, Value>, key: &str, v: Option<Value>) {
    if let Some(v) = v {
        obj.insert(key.to_owned(), v);
    }
}

pub(crate) fn recall(a: &RecallArgs) -> io::Result<ExitCode> {
    let memory = match open_memory(&a.memory, a.json) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let mut o = Map::new();
    let s = |x: &Option<String>| x.as_ref().map(|v| json!(v));
    set(&mut o, "query", s(&a.query));
    set(
        &mut o,
        "queryMode",
        a.mode.map(|m| {
            json!(match m {
                ModeArg::Literal => "literal",
                ModeArg::Phrase => "phrase",
                ModeArg::Regex => "regex",
                ModeArg::Fuzzy => "fuzzy",
            })
        }),
    );
    set(
        &mut o,
        "queryMatch",
        a.matching.map(|m| {
            json!(match m {
                MatchArg::Any => "any",
                MatchArg::All => "all",
            })
        }),
    );
    set(&mut o, "scope", s(&a.scope));
    let cwd = match a
        .cwd
        .as_deref()
        .map(Path::new)
        .map(absolute_dir)
        .transpose()
    {
        Ok(c) => c,
        Err(e) => return Ok(fail(a.json, &e)),
    };
    set(&mut o, "cwd", cwd.map(Value::String));
    set(
        &mut o,
        "branches",
        a.branches.map(|b| json!(branches_of(b).as_str())),
    );
    set(&mut o, "role", s(&a.role));
    set(&mut o, "tool", s(&a.tool));
    set(&mut o, "ref", s(&a.reference));
    set(&mut o, "provider", s(&a.provider));
    set(&mut o, "action", s(&a.action));
    set(&mut o, "outcome", s(&a.outcome));
    set(&mut o, "since", s(&a.since));
    set(&mut o, "until", s(&a.until));
    set(&mut o, "entryRange", a.entry_range.map(|r| json!(r)));
    set(&mut o, "pageSize", a.page_size.map(|n| json!(n)));
    if !a.in_groups.is_empty() {
        let groups: Vec<&str> = a.in_groups.iter().map(|g| g.trim()).collect();
        set(&mut o, "in", Some(json!(groups)));
    }
    let req = match RecallRequest::from_json(&Value::Object(o)) {
        Ok(r) => r,
        Err(e) => return Ok(fail(a.json, &e)),
    };
    let mut ctx = sessiondex::context_from_env();
    if a.current_session.is_some() {
        ctx.session.clone_from(&a.current_session);
    }
    match memory.recall_in(&req, &ctx) {
        Ok(page) if a.json => print_json(&page),
        Ok(page) => {
            hint_no_sources(&memory);
            print_page(&page, &memory_flags(&a.memory))?;
            // The default scope is the current directory's project: say so when it holds no
            // session, rather than leave "0/0 sessions searched" to be read.
            if page.coverage.eligible_sessions == 0
                && matches!(req.scope, None | Some(Scope::Project))
                && !memory.sources().is_empty()
            {
                let dir = req.cwd.as_deref().or(ctx.cwd.as_deref()).unwrap_or(".");
                eprintln!(
                    "sessiondex: no indexed session ran in {dir} or below it; \
                     --scope global searches every session"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(fail(a.json, &e)),
    }
}

pub(crate) fn expand(a: &ExpandArgs) -> io::Result<ExitCode> {
    let memory = match open_memory(&a.memory, a.json) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let mut o = Map::new();
    o.insert("session".into(), json!(a.session));
    set(
        &mut o,
        "indices",
        (!a.index.is_empty()).then(|| json!(a.index)),
    );
    set(
        &mut o,
        "entryIds",
        (!a.entry_id.is_empty()).then(|| json!(a.entry_id)),
    );
    set(
        &mut o,
        "addresses",
        (!a.address.is_empty()).then(|| json!(a.address)),
    );
    set(&mut o, "range", a.range.map(|r| json!(r)));
    set(&mut o, "before", a.before.map(|n| json!(n)));
    set(&mut o, "after", a.after.map(|n| json!(n)));
    set(&mut o, "maxChars", a.max_chars.map(|n| json!(n)));
    set(
        &mut o,
        "branches",
        a.branches.map(|b| json!(branches_of(b).as_str())),
    );
    set(&mut o, "reveal", a.reveal.then_some(json!(true)));
    let req = match ExpandRequest::from_json(&Value::Object(o)) {
        Ok(r) => r,
        Err(e) => return Ok(fail(a.json, &e)),
    };
    match memory.expand(&req) {
        Ok(x) if a.json => print_json(&x),
        Ok(x) => {
            print_expansion(&x, &memory_flags(&a.memory))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(fail(a.json, &e)),
    }
}

pub(crate) fn call(a: &CallArgs) -> io::Result<ExitCode> {
    let text = if a.call == "-" {
        let mut s = String::new();
        io::stdin().read_to_string(&mut s)?;
        s
    } else {
        a.call.clone()
    };
    let parsed = serde_json::from_str::<Value>(&text)
        .map_err(|e| Error::new(ErrorCode::InvalidCall, format!("the call is not JSON: {e}")))
        .and_then(|v| Call::from_json(&v));
    let call = match parsed {
        Ok(c) => c,
        Err(e) => return Ok(fail(a.json, &e)),
    };
    let memory = match open_memory(&a.memory, a.json) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    match memory.call(&call) {
        Ok(r) if a.json => print_json(&r),
        Ok(CallResult::Recall(p)) => {
            print_page(&p, &memory_flags(&a.memory))?;
            Ok(ExitCode::SUCCESS)
        }
        Ok(CallResult::Expand(x)) => {
            print_expansion(&x, &memory_flags(&a.memory))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(fail(a.json, &e)),
    }
}

pub(crate) fn walk_session(a: &WalkArgs) -> io::Result<ExitCode> {
    let memory = match open(&a.source, a.index_dir.as_ref(), &a.config, a.json) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let req = WalkRequest {
        session: a.session.clone().unwrap_or_default(),
        branches: Some(branches_of(a.branches)),
        reveal: a.reveal,
        ..WalkRequest::default()
    };
    let walk = match memory.walk(&req) {
        Ok(w) => w,
        Err(e) => return Ok(fail(a.json, &e)),
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    let session = walk.session.clone();
    let coverage = walk.coverage.clone();
    for record in walk {
        if a.json {
            let mut v = serde_json::to_value(&record)?;
            if let Value::Object(m) = &mut v {
                m.insert("sessionId".into(), json!(session.session_id));
                m.insert("file".into(), json!(session.file));
            }
            serde_json::to_writer(&mut out, &v)?;
            writeln!(out)?;
        } else {
            write_record_text(&mut out, &record)?;
        }
    }
    out.flush()?;
    let line = json!({"session": session, "coverage": coverage});
    if a.json {
        eprintln!("{line}");
    } else {
        eprintln!(
            "{} [{}] {} records, {}",
            session.file,
            session.format.map_or("?", |f| f.as_str()),
            session.entries,
            coverage_text(&coverage)
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn trace(a: &TraceArgs) -> io::Result<ExitCode> {
    let memory = match open_memory(&a.memory, a.json) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let branches = a.branches.map_or(Branches::Active, branches_of);
    match memory.trace(&a.session, branches) {
        Ok(t) if a.json => print_json(&t),
        Ok(t) => {
            print_trace(&t)?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(fail(a.json, &e)),
    }
}

fn coverage_text(c: &Coverage) -> String {
    let counts = format!(
        "{}/{} sessions searched",
        c.indexed_sessions, c.eligible_sessions
    );
    if c.complete {
        format!("complete, {counts}")
    } else {
        let mut s = format!("incomplete, {counts}");
        if c.stale_sessions > 0 {
            s.push_str(&format!(", {} stale", c.stale_sessions));
        }
        if c.incomplete_sessions > 0 {
            s.push_str(&format!(", {} incomplete", c.incomplete_sessions));
        }
        if !c.reasons.is_empty() {
            s.push_str(": ");
            s.push_str(&c.reasons.join(", "));
        }
        if let Some(e) = &c.error {
            s.push_str(&format!(" ({}: {})", e.code_str(), e.message));
        }
        s
    }
}

/// Marks highlighted byte ranges: bold yellow on a terminal, `**...**` otherwise.
fn highlight(text: &str, ranges: &[[usize; 2]], tty: bool) -> String {
    let (on, off) = if tty {
        ("\x1b[1;33m", "\x1b[0m")
    } else {
        ("**", "**")
    };
    let mut out = String::with_capacity(text.len() + ranges.len() * 8);
    let mut at = 0;
    for &[a, b] in ranges {
        if a < at || b > text.len() || !text.is_char_boundary(a) || !text.is_char_boundary(b) {
            continue;
        }
        out.push_str(&text[at..a]);
        out.push_str(on);
        out.push_str(&text[a..b]);
        out.push_str(off);
        at = b;
    }
    out.push_str(&text[at..]);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn call_line(c: &Call, flags: &str) -> String {
    let json = serde_json::to_string(c).unwrap_or_default();
    format!("sessiondex call {}{flags}", shell_quote(&json))
}

fn print_page(p: &Page, flags: &str) -> io::Result<()> {
    let tty = io::stdout().is_terminal();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    writeln!(
        out,
        "{} hits; coverage {}",
        p.total,
        coverage_text(&p.coverage)
    )?;
    for h in &p.hits {
        writeln!(out)?;
        match h.kind {
            HitKind::Entry => {
                let mut head = format!("entry {}#{}", h.file, h.index.unwrap_or(0));
                for part in [&h.role, &h.tool, &h.operation_address]
                    .into_iter()
                    .flatten()
                {
                    head.push(' ');
                    head.push_str(part);
                }
                if let Some(o) = h.outcome {
                    head.push_str(&format!(" [{}]", o.as_str()));
                }
                if let Some(t) = &h.timestamp {
                    head.push_str(&format!(" {t}"));
                }
                // Prose is the default; other groups are named.
                if !h.matched_in.is_empty() && h.matched_in != [FieldGroup::Text] {
                    let groups: Vec<&str> = h.matched_in.iter().map(|g| g.as_str()).collect();
                    head.push_str(&format!(" in {}", groups.join(",")));
                }
                writeln!(out, "{head}  score {}", h.score)?;
                if let Some(s) = &h.snippet {
                    let dots = if s.truncated { " ..." } else { "" };
                    writeln!(out, "    {}{dots}", highlight(&s.text, &s.highlights, tty))?;
                }
            }
            HitKind::Session => {
                writeln!(
                    out,
                    "session {} last {}  score {}",
                    h.file,
                    h.timestamp.as_deref().unwrap_or("-"),
                    h.score
                )?;
                if !h.matched_terms.is_empty() {
                    writeln!(out, "    matched terms: {}", h.matched_terms.join(", "))?;
                }
                if !h.matched_structural_entries.is_empty() {
                    let ix: Vec<String> = h
                        .matched_structural_entries
                        .iter()
                        .map(|e| e.index.to_string())
                        .collect();
                    writeln!(out, "    matching entries: {}", ix.join(", "))?;
                }
            }
        }
        writeln!(out, "    follow: {}", call_line(&h.follow, flags))?;
    }
    if let Some(n) = &p.next {
        writeln!(out)?;
        writeln!(out, "next: {}", call_line(n, flags))?;
    }
    Ok(())
}

fn print_expansion(x: &Expansion, flags: &str) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    writeln!(
        out,
        "{} [{}] {} entries; coverage {}",
        x.session.file,
        x.session.format.map_or("?", |f| f.as_str()),
        x.session.entries,
        coverage_text(&x.coverage)
    )?;
    for e in &x.entries {
        let r = &e.record;
        let mut head = format!("#{} {} {}", r.index, r.entry_id, r.kind);
        for part in [&r.role, &r.tool].into_iter().flatten() {
            head.push(' ');
            head.push_str(part);
        }
        if let Some(o) = r.outcome {
            head.push_str(&format!(" [{}]", o.as_str()));
        }
        if let Some(t) = &r.timestamp {
            head.push_str(&format!(" {t}"));
        }
        let tr = e.text_range;
        if !tr.complete {
            head.push_str(&format!(
                " (chars {}..{} of {})",
                tr.start, tr.end, tr.total
            ));
        }
        writeln!(out)?;
        writeln!(out, "{head}")?;
        for line in r.text.lines() {
            writeln!(out, "    {line}")?;
        }
    }
    if let Some(n) = &x.next {
        writeln!(out)?;
        writeln!(out, "next: {}", call_line(n, flags))?;
    }
    Ok(())
}

fn row_line(r: &SessionRow) -> String {
    format!(
        "{} {} [{}] {} ({})",
        r.last_ts.as_deref().unwrap_or("-"),
        r.title.as_deref().unwrap_or(&r.session_id),
        r.format.map_or("?", |f| f.as_str()),
        r.file,
        r.tier
    )
}

fn print_trace(t: &Trace) -> io::Result<()> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "session    {}", row_line(&t.session))?;
    for a in &t.ancestors {
        writeln!(
            out,
            "ancestor {} {} via {}",
            a.depth,
            row_line(&a.session),
            a.link.kind
        )?;
    }
    match (&t.root, &t.unresolved_parent) {
        (Some(r), _) => writeln!(out, "root       {}", row_line(r))?,
        (None, Some(l)) => writeln!(out, "unresolved {} -> {}", l.kind, l.target)?,
        (None, None) => writeln!(out, "cycle in the parent links")?,
    }
    for d in &t.descendants {
        writeln!(
            out,
            "descendant {} {} via {}",
            d.depth,
            row_line(&d.session),
            d.link.kind
        )?;
    }
    Ok(())
}
