//! The deterministic corpus generator: pi (v3 trees), Claude Code and Codex CLI session files
//! in their real directory layouts, plus `queries.json`.
//!
//! Same seed and size give byte-identical output. Each file is a sequence of turns (a user
//! message, tool calls with results, a closing assistant message) with typed tool arguments
//! (read/edit/bash/grep with paths), failures, long tool outputs, reasoning, about 10% of
//! texts with CJK, accents or emoji, and in pi and Claude Code files a few abandoned branches.
//! Query tokens are planted only on the active branch, within the first few hundred
//! characters of a text (hot shards keep 2,000 characters per entry).
//!
//! Every written file is read back with `sessiondex_source`: it must read complete, with no
//! coverage reason at all, or the generator fails.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde_json::{json, Value};
use sessiondex_core::{normalize, tokenize, Policy};
use sessiondex_source::{read_bytes, Branches, ReadOptions, Record};

use crate::queries::{Mode, Query, QueryFile};
use crate::rng::Rng;

/// What to generate.
#[derive(Debug, Clone)]
pub struct GenOptions {
    /// Output directory (created; files in it are overwritten).
    pub out: PathBuf,
    /// Approximate total bytes of session files.
    pub size: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// Smallest session file ([`MIN_FILE`] by default).
    pub min_file: u64,
    /// Largest session file ([`MAX_FILE`] by default); `min_file == max_file == size` gives
    /// one session of that size.
    pub max_file: u64,
}

impl GenOptions {
    /// Options with the default file sizes (8 KB to 8 MB).
    #[must_use]
    pub fn new(out: PathBuf, size: u64, seed: u64) -> GenOptions {
        GenOptions {
            out,
            size,
            seed,
            min_file: MIN_FILE,
            max_file: MAX_FILE,
        }
    }
}

/// Smallest and largest session file.
pub const MIN_FILE: u64 = 8 << 10;
/// Largest session file.
pub const MAX_FILE: u64 = 8 << 20;

/// Parses `200MB`, `1.5GB`, `64KiB`, `5000` (bytes).
///
/// # Errors
///
/// When the text is not a number with an optional unit.
pub fn parse_size(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().with_context(|| format!("size `{text}`"))?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => bail!("size `{text}`: unknown unit `{unit}`"),
    };
    Ok((n * mult) as u64)
}

// ---------------------------------------------------------------------------------------------
// Words

#[rustfmt::skip]
const WORDS: &[&str] = &[
    "the", "a", "to", "of", "and", "in", "is", "it", "that", "for", "this", "with", "on", "we",
    "file", "function", "test", "error", "build", "module", "config", "value", "return", "type",
    "struct", "field", "parse", "index", "query", "cache", "update", "change", "check", "fix",
    "add", "remove", "rename", "refactor", "handler", "request", "response", "server", "client",
    "timeout", "retry", "flaky", "panic", "unwrap", "option", "result", "string", "vector",
    "buffer", "stream", "reader", "writer", "token", "session", "record", "entry", "branch",
    "commit", "merge", "lint", "format", "warning", "compile", "runtime", "memory", "thread",
    "lock", "mutex", "channel", "async", "await", "future", "trait", "impl", "generic",
    "lifetime", "borrow", "clone", "copy", "iterator", "closure", "macro", "crate", "package",
    "dependency", "version", "release", "debug", "profile", "benchmark", "latency",
    "throughput", "database", "schema", "migration", "table", "column", "row", "key", "hash",
    "map", "set", "list", "array", "slice", "pointer", "offset", "length", "size", "limit",
    "budget", "page", "cursor", "scope", "path", "directory", "folder", "import", "export",
    "call", "method", "class", "object", "instance", "interface", "callback", "event", "signal",
    "process", "command", "shell", "script", "output", "input", "log", "trace", "span",
    "metric", "counter", "gauge", "histogram", "sample", "window", "batch", "queue", "worker",
    "job", "task", "schedule", "deadline", "cancel", "abort", "fail", "pass", "skip", "assert",
    "expect", "mock", "fixture", "snapshot", "golden", "diff", "patch", "line", "column",
    "should", "could", "would", "now", "then", "first", "next", "last", "because", "when",
    "after", "before", "still", "also", "only", "again", "here", "there", "looks", "seems",
];

#[rustfmt::skip]
const NON_ASCII: &[&str] = &[
    "日本語のテキストを確認します", "エラーが発生しました", "中文错误信息：找不到文件", "测试失败，需要重试", "한국어 메시지 처리",
    "café naïve façade", "Größe Straße Übergröße", "résumé déjà vu élève", "mañana señor niño",
    "Привет мир, ошибка сборки", "Ελληνικά γράμματα ΣΟΦΙΑ", "emoji ✅ done 🚀 shipped 🎉",
    "warning ⚠️ check 🔥 hot path", "العربية نص تجريبي", "हिन्दी भाषा परीक्षण",
];

#[rustfmt::skip]
const PROJECTS: &[&str] = &[
    "sessiondex", "webshop", "ml-pipeline", "infra", "mobile-app", "compiler", "docs-site",
    "payments", "search-api", "game-engine", "data-lake", "auth-service",
];

#[rustfmt::skip]
const DIRS: &[&str] = &[
    "src", "src/api", "src/core", "src/util", "src/db", "tests", "lib", "crates/core/src",
    "app/models", "app/views", "scripts", "internal/server", "pkg/store",
];

#[rustfmt::skip]
const FILES: &[&str] = &[
    "main", "lib", "mod", "handler", "server", "client", "config", "parser", "index", "cache",
    "store", "query", "worker", "router", "schema", "util", "error", "types", "session",
];

#[rustfmt::skip]
const EXTS: &[&str] = &["rs", "ts", "py", "go", "tsx", "rs", "py"];

/// Letters for planted suffixes and prefixes: no `z` or `q`, so no random piece contains
/// `zq`, the start of every planted token.
const PLANT_LETTERS: &[u8] = b"abcdefghijklmnoprstuvwxy";

fn words(rng: &mut Rng, n: usize) -> String {
    let mut s = String::with_capacity(n * 7);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        let w = rng.pick::<&str>(WORDS);
        s.push_str(w);
    }
    s
}

fn sentence(rng: &mut Rng) -> String {
    let n = rng.range(5, 18) as usize;
    let mut s = words(rng, n);
    s.push('.');
    s
}

fn paragraph(rng: &mut Rng, sentences: usize) -> String {
    let mut s = String::new();
    for i in 0..sentences {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(&sentence(rng));
    }
    s
}

fn ident(rng: &mut Rng) -> String {
    format!("{}_{}", rng.pick(WORDS), rng.pick(WORDS))
}

fn file_path(rng: &mut Rng) -> String {
    format!("{}/{}.{}", rng.pick(DIRS), rng.pick(FILES), rng.pick(EXTS))
}

fn code_lines(rng: &mut Rng, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        let indent = "    ".repeat(rng.index(3));
        let line = match rng.below(6) {
            0 => format!(
                "fn {}(x: &{}) -> Result<(), Error> {{",
                ident(rng),
                rng.pick(WORDS)
            ),
            1 => format!(
                "let {} = {}.{}()?;",
                ident(rng),
                rng.pick(WORDS),
                ident(rng)
            ),
            2 => format!("// {}", sentence(rng)),
            3 => format!(
                "if {} > {} {{ return Err(Error::{}); }}",
                ident(rng),
                rng.below(1000),
                rng.pick(WORDS)
            ),
            4 => format!(
                "{}.push({}::new({}));",
                rng.pick(WORDS),
                rng.pick(WORDS),
                rng.below(100)
            ),
            _ => "}".to_owned(),
        };
        let _ = writeln!(s, "{:>4}\t{indent}{line}", i + 1);
    }
    s
}

fn log_lines(rng: &mut Rng, n: usize, failing: bool) -> String {
    let mut s = String::new();
    for _ in 0..n {
        let k = rng.range(4, 12) as usize;
        let level = if failing && rng.chance(0.2) {
            "ERROR"
        } else {
            *rng.pick(&["INFO", "DEBUG", "WARN", "INFO"])
        };
        let _ = writeln!(
            s,
            "2026-01-{:02}T{:02}:{:02}:{:02}Z {level} {}: {}",
            rng.range(1, 28),
            rng.below(24),
            rng.below(60),
            rng.below(60),
            ident(rng),
            words(rng, k)
        );
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Planting

const RARE_TOKENS: usize = 30;
const FUZZY_BASES: [&str; 2] = ["zqfuzzyword", "zqtypoterm"];

/// Restricted Damerau-Levenshtein (optimal string alignment) distance, in characters.
#[must_use]
pub fn osa_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
}

/// Spellings of a fuzzy base: the base, edits at distance 1 and 2 (found), and at 3 or more
/// (not found).
fn fuzzy_variants(base: &str) -> Vec<String> {
    let c: Vec<char> = base.chars().collect();
    let n = c.len();
    let sub = |c: &[char], i: usize, x: char| {
        let mut v = c.to_vec();
        v[i] = x;
        v
    };
    let s = |v: Vec<char>| v.into_iter().collect::<String>();
    let mut out = vec![base.to_owned()];
    out.push(s(sub(&c, n - 2, 'x'))); // one substitution
    out.push(s([&c[..n - 3], &c[n - 2..]].concat())); // one deletion
    let mut t = c.clone();
    t.swap(6, 7); // one transposition
    out.push(s(t));
    out.push(s(sub(&sub(&c, 3, 'a'), n - 2, 'e'))); // two substitutions
    out.push(format!("{base}xy")); // two insertions
    out.push(s(sub(&sub(&sub(&c, 3, 'a'), 6, 'b'), n - 2, 'e'))); // three: not found
    out.push(format!("{base}wxyz")); // four insertions: not found
    out
}

/// What the planter put into one text, before the text's own words.
struct Planter {
    rng: Rng,
    rare_left: Vec<u64>,
    next_rare: usize,
    /// Records that received each planted item, by item key; cross-checked on read-back.
    planted: BTreeMap<String, u64>,
    fuzzy: Vec<Vec<String>>,
}

/// Where a planted text goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    User,
    Assistant,
    ToolOutput,
    BashCommand,
}

impl Planter {
    fn new(rng: Rng) -> Planter {
        Planter {
            rng,
            rare_left: (0..RARE_TOKENS).map(|i| 1 + (i as u64 % 5)).collect(),
            next_rare: 0,
            planted: BTreeMap::new(),
            fuzzy: FUZZY_BASES.iter().map(|b| fuzzy_variants(b)).collect(),
        }
    }

    fn count(&mut self, key: &str) {
        *self.planted.entry(key.to_owned()).or_insert(0) += 1;
    }

    fn letters(&mut self, lo: u64, hi: u64) -> String {
        let n = self.rng.range(lo, hi);
        (0..n)
            .map(|_| char::from(*self.rng.pick(PLANT_LETTERS)))
            .collect()
    }

    /// The planted items of one text of `slot`.
    fn items(&mut self, slot: Slot) -> Vec<String> {
        let mut items = Vec::new();
        if slot == Slot::BashCommand {
            if self.rng.chance(0.05) {
                items.push("zqlexbash".to_owned());
            }
            return items;
        }
        let r = &mut self.rng;
        if r.chance(0.002) {
            for _ in 0..RARE_TOKENS {
                let i = self.next_rare % RARE_TOKENS;
                self.next_rare += 1;
                if self.rare_left[i] > 0 {
                    self.rare_left[i] -= 1;
                    let t = format!("zqrare{i:02}");
                    self.count(&t);
                    items.push(t);
                    break;
                }
            }
        }
        if self.rng.chance(0.04) {
            self.count("zqcommon");
            items.push("zqcommon".to_owned());
        }
        for (a, b, p_one, p_both) in [
            ("zqalpha", "zqbeta", 0.003, 0.002),
            ("zqgamma", "zqdelta", 0.01, 0.001),
        ] {
            let x = self.rng.unit();
            let (has_a, has_b) = if x < p_one {
                (true, false)
            } else if x < 2.0 * p_one {
                (false, true)
            } else if x < 2.0 * p_one + p_both {
                (true, true)
            } else {
                (false, false)
            };
            if has_a {
                items.push(a.to_owned());
            }
            if has_b {
                items.push(b.to_owned());
            }
            if has_a || has_b {
                self.count(&format!("{a}|{b}"));
            }
            if has_a && has_b {
                self.count(&format!("{a}&{b}"));
            }
        }
        for (phrase, p) in [
            (&["zqquick", "zqbrown", "zqfox"][..], 0.002),
            (&["zqlazy", "zqdog"][..], 0.001),
        ] {
            let joined = phrase.join(" ");
            if self.rng.chance(p) {
                self.count(&joined);
                items.push(joined.clone());
            }
            if self.rng.chance(p) {
                // The words apart and reversed: a phrase query must not find them.
                for w in phrase.iter().rev() {
                    items.push((*w).to_owned());
                }
            }
        }
        if self.rng.chance(0.003) {
            let digits = self.rng.range(1, 999_999);
            items.push(format!("zqpfx{digits}"));
            self.count("zqpfx");
        }
        if self.rng.chance(0.002) {
            let t = format!("zqpre{}", self.letters(2, 6));
            items.push(t);
            self.count("zqpre");
        }
        if self.rng.chance(0.003) {
            let t = format!("{}zqsfx", self.letters(1, 6));
            items.push(t);
            self.count("zqsfx");
        }
        if self.rng.chance(0.002) {
            let t = format!("{}zqend", self.letters(1, 6));
            items.push(t);
            self.count("zqend");
        }
        for (f, base) in FUZZY_BASES.iter().enumerate() {
            if self.rng.chance(0.003) {
                let v = self.rng.pick(&self.fuzzy[f]).clone();
                if osa_distance(&v, base) <= 2 {
                    self.count(&format!("fuzzy:{base}"));
                }
                items.push(v);
            }
        }
        if slot == Slot::User && self.rng.chance(0.003) {
            // Decoys for the lexical + structural queries: the token outside a tool call.
            items.push("zqlexbash".to_owned());
        }
        items
    }

    /// `body` with this slot's planted items in front, each after a filler word.
    fn text(&mut self, slot: Slot, body: &str) -> String {
        let items = self.items(slot);
        let mut s = String::new();
        for it in &items {
            let w = self.rng.pick::<&str>(WORDS);
            s.push_str(w);
            s.push(' ');
            s.push_str(it);
            s.push(' ');
        }
        if self.rng.chance(0.1) {
            let w = self.rng.pick::<&str>(NON_ASCII);
            s.push_str(w);
            s.push(' ');
        }
        s.push_str(body);
        s
    }
}

// ---------------------------------------------------------------------------------------------
// Time

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` of Unix milliseconds.
#[must_use]
pub fn iso_ms(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

// ---------------------------------------------------------------------------------------------
// Sessions

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fmt {
    Pi,
    Claude,
    Codex,
}

#[derive(Clone, Debug)]
enum Action {
    Read {
        path: String,
    },
    Edit {
        path: String,
        old: String,
        new: String,
    },
    Bash {
        command: String,
    },
    Grep {
        pattern: String,
        path: String,
    },
}

struct Writer {
    fmt: Fmt,
    out: Vec<u8>,
    rng: Rng,
    session_id: String,
    cwd: String,
    now: i64,
    parent: Option<String>,
    lines: u64,
    /// pi ids are 8 hex digits: a long file would collide without a check (pi checks too).
    ids: HashSet<String>,
}

impl Writer {
    fn line(&mut self, v: &Value) {
        // serde_json never fails on a Value.
        if let Ok(s) = serde_json::to_string(v) {
            self.out.extend_from_slice(s.as_bytes());
        }
        self.out.push(b'\n');
        self.lines += 1;
    }

    fn tick(&mut self) -> String {
        self.now += i64::try_from(self.rng.range(200, 30_000)).unwrap_or(1000);
        iso_ms(self.now)
    }

    fn new_id(&mut self) -> String {
        match self.fmt {
            Fmt::Pi => loop {
                let id = self.rng.hex(8);
                if self.ids.insert(id.clone()) {
                    break id;
                }
            },
            _ => self.rng.uuid(),
        }
    }

    fn header(&mut self) {
        let ts = iso_ms(self.now);
        match self.fmt {
            Fmt::Pi => {
                let v = json!({"type":"session","version":3,"id":self.session_id,"timestamp":ts,"cwd":self.cwd});
                self.line(&v);
                let id = self.new_id();
                let v = json!({"type":"model_change","id":id,"parentId":null,"timestamp":ts,
                    "provider":"anthropic","modelId":"claude-sonnet-4-5"});
                self.line(&v);
                self.parent = Some(id);
            }
            Fmt::Claude => {}
            Fmt::Codex => {
                let v = json!({"timestamp":ts,"type":"session_meta","payload":{"id":self.session_id,
                    "timestamp":ts,"cwd":self.cwd,"originator":"codex_cli_rs","cli_version":"0.46.0",
                    "instructions":null,"source":"cli","git":{"branch":"main"}}});
                self.line(&v);
                let v = json!({"timestamp":ts,"type":"turn_context","payload":{"cwd":self.cwd,
                    "approval_policy":"on-request","sandbox_policy":{"mode":"workspace-write"},
                    "model":"gpt-5-codex","summary":"auto"}});
                self.line(&v);
            }
        }
    }

    fn claude_base(&mut self, kind: &str, uuid: &str, ts: &str) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        m.insert("parentUuid".into(), json!(self.parent));
        m.insert("isSidechain".into(), json!(false));
        m.insert("userType".into(), json!("external"));
        m.insert("cwd".into(), json!(self.cwd));
        m.insert("sessionId".into(), json!(self.session_id));
        m.insert("version".into(), json!("2.0.14"));
        m.insert("gitBranch".into(), json!("main"));
        m.insert("type".into(), json!(kind));
        m.insert("uuid".into(), json!(uuid));
        m.insert("timestamp".into(), json!(ts));
        m
    }

    fn user(&mut self, text: &str) {
        let ts = self.tick();
        match self.fmt {
            Fmt::Pi => {
                let id = self.new_id();
                let v = json!({"type":"message","id":id,"parentId":self.parent,"timestamp":ts,
                    "message":{"role":"user","content":[{"type":"text","text":text}],"timestamp":self.now}});
                self.line(&v);
                self.parent = Some(id);
            }
            Fmt::Claude => {
                let id = self.new_id();
                let mut m = self.claude_base("user", &id, &ts);
                m.insert("message".into(), json!({"role":"user","content":text}));
                self.line(&Value::Object(m));
                self.parent = Some(id);
            }
            Fmt::Codex => {
                let v = json!({"timestamp":ts,"type":"response_item","payload":{"type":"message",
                    "role":"user","content":[{"type":"input_text","text":text}]}});
                self.line(&v);
            }
        }
    }

    /// An assistant message with optional reasoning, text and one tool call; returns the call id.
    fn assistant(
        &mut self,
        thinking: Option<&str>,
        text: Option<&str>,
        call: Option<&Action>,
    ) -> String {
        let ts = self.tick();
        let call_id = match self.fmt {
            Fmt::Pi => format!("toolu_{}", self.rng.hex(20)),
            Fmt::Claude => format!("toolu_01{}", self.rng.hex(22)),
            Fmt::Codex => format!("call_{}", self.rng.hex(24)),
        };
        match self.fmt {
            Fmt::Pi => {
                let mut content = Vec::new();
                if let Some(t) = thinking {
                    content.push(json!({"type":"thinking","thinking":t,"thinkingSignature":"sig"}));
                }
                if let Some(t) = text {
                    content.push(json!({"type":"text","text":t}));
                }
                if let Some(a) = call {
                    let (name, args) = pi_call(a);
                    content
                        .push(json!({"type":"toolCall","id":call_id,"name":name,"arguments":args}));
                }
                let id = self.new_id();
                let stop = if call.is_some() { "toolUse" } else { "stop" };
                let v = json!({"type":"message","id":id,"parentId":self.parent,"timestamp":ts,
                    "message":{"role":"assistant","content":content,"api":"anthropic-messages",
                    "provider":"anthropic","model":"claude-sonnet-4-5",
                    "usage":{"input":self.rng.range(100,9000),"output":self.rng.range(10,900),"cacheRead":0,"cacheWrite":0},
                    "stopReason":stop,"timestamp":self.now}});
                self.line(&v);
                self.parent = Some(id);
            }
            Fmt::Claude => {
                let mut content = Vec::new();
                if let Some(t) = thinking {
                    content
                        .push(json!({"type":"thinking","thinking":t,"signature":"EuYBCkQYAiJA"}));
                }
                if let Some(t) = text {
                    content.push(json!({"type":"text","text":t}));
                }
                if let Some(a) = call {
                    let (name, input) = claude_call(a);
                    content.push(json!({"type":"tool_use","id":call_id,"name":name,"input":input}));
                }
                let id = self.new_id();
                let mut m = self.claude_base("assistant", &id, &ts);
                let msg_id = format!("msg_01{}", self.rng.hex(22));
                m.insert("message".into(), json!({"id":msg_id,"type":"message","role":"assistant",
                    "model":"claude-sonnet-4-5-20250929","content":content,
                    "stop_reason": if call.is_some() {"tool_use"} else {"end_turn"},
                    "usage":{"input_tokens":self.rng.range(3,900),"output_tokens":self.rng.range(10,900)}}));
                m.insert(
                    "requestId".into(),
                    json!(format!("req_011{}", self.rng.hex(20))),
                );
                self.line(&Value::Object(m));
                self.parent = Some(id);
            }
            Fmt::Codex => {
                if let Some(t) = thinking {
                    let v = json!({"timestamp":ts,"type":"response_item","payload":{"type":"reasoning",
                        "summary":[{"type":"summary_text","text":t}],"content":null,
                        "encrypted_content":format!("gAAAAB{}", self.rng.hex(64))}});
                    self.line(&v);
                }
                if let Some(t) = text {
                    let v = json!({"timestamp":ts,"type":"response_item","payload":{"type":"message",
                        "role":"assistant","content":[{"type":"output_text","text":t}]}});
                    self.line(&v);
                }
                if let Some(a) = call {
                    let v = match a {
                        Action::Edit { path, old, new } => {
                            let patch = format!("*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch\n");
                            json!({"timestamp":ts,"type":"response_item","payload":{"type":"custom_tool_call",
                                "status":"completed","call_id":call_id,"name":"apply_patch","input":patch}})
                        }
                        _ => {
                            let args = json!({"cmd":codex_cmd(a),"workdir":self.cwd,"yield_time_ms":10000});
                            json!({"timestamp":ts,"type":"response_item","payload":{"type":"function_call",
                                "name":"exec_command","arguments":args.to_string(),"call_id":call_id}})
                        }
                    };
                    self.line(&v);
                }
            }
        }
        call_id
    }

    fn result(&mut self, call_id: &str, action: &Action, output: &str, failed: bool) {
        let ts = self.tick();
        match self.fmt {
            Fmt::Pi => {
                let (name, _) = pi_call(action);
                let id = self.new_id();
                let v = json!({"type":"message","id":id,"parentId":self.parent,"timestamp":ts,
                    "message":{"role":"toolResult","toolCallId":call_id,"toolName":name,
                    "content":[{"type":"text","text":output}],"isError":failed,"timestamp":self.now}});
                self.line(&v);
                self.parent = Some(id);
            }
            Fmt::Claude => {
                let id = self.new_id();
                let mut m = self.claude_base("user", &id, &ts);
                m.insert(
                    "message".into(),
                    json!({"role":"user","content":[{"tool_use_id":call_id,
                    "type":"tool_result","content":output,"is_error":failed}]}),
                );
                if matches!(action, Action::Bash { .. }) {
                    m.insert(
                        "toolUseResult".into(),
                        json!({"stdout":output,"stderr":"","interrupted":false,"isImage":false}),
                    );
                }
                self.line(&Value::Object(m));
                self.parent = Some(id);
            }
            Fmt::Codex => {
                if let Action::Edit { .. } = action {
                    let code = i32::from(failed);
                    let out = json!({"output": output, "metadata":{"exit_code":code,"duration_seconds":0.1}});
                    let v = json!({"timestamp":ts,"type":"response_item","payload":{"type":"custom_tool_call_output",
                        "call_id":call_id,"output":out.to_string()}});
                    self.line(&v);
                } else {
                    let code = if failed {
                        *self.rng.pick(&[1, 2, 101, 127])
                    } else {
                        0
                    };
                    let v = json!({"timestamp":ts,"type":"event_msg","payload":{"type":"exec_command_end",
                        "call_id":call_id,"stdout":output,"stderr":"","aggregated_output":output,"exit_code":code,
                        "duration":{"secs":0,"nanos":self.rng.range(1_000, 900_000_000)},"formatted_output":""}});
                    self.line(&v);
                    let text = format!(
                        "Chunk ID: {}\nWall time: 0.{} seconds\nProcess exited with code {code}\nOutput:\n{output}",
                        self.rng.hex(6),
                        self.rng.range(1, 999)
                    );
                    let v = json!({"timestamp":ts,"type":"response_item","payload":{"type":"function_call_output",
                        "call_id":call_id,"output":text}});
                    self.line(&v);
                }
            }
        }
    }

    fn token_count(&mut self) {
        if self.fmt == Fmt::Codex {
            let ts = iso_ms(self.now);
            let v = json!({"timestamp":ts,"type":"event_msg","payload":{"type":"token_count",
                "info":{"total_token_usage":{"input_tokens":self.rng.range(1000,90000),"output_tokens":self.rng.range(10,9000)}}}});
            self.line(&v);
        }
    }
}

fn pi_call(a: &Action) -> (&'static str, Value) {
    match a {
        Action::Read { path } => ("read", json!({"path": path})),
        Action::Edit { path, old, new } => (
            "edit",
            json!({"path": path, "oldText": old, "newText": new}),
        ),
        Action::Bash { command } => ("bash", json!({"command": command, "timeout": 120})),
        Action::Grep { pattern, path } => ("grep", json!({"pattern": pattern, "path": path})),
    }
}

fn claude_call(a: &Action) -> (&'static str, Value) {
    match a {
        Action::Read { path } => ("Read", json!({"file_path": path})),
        Action::Edit { path, old, new } => (
            "Edit",
            json!({"file_path": path, "old_string": old, "new_string": new}),
        ),
        Action::Bash { command } => (
            "Bash",
            json!({"command": command, "description": "Run the command"}),
        ),
        Action::Grep { pattern, path } => (
            "Grep",
            json!({"pattern": pattern, "path": path, "output_mode": "content"}),
        ),
    }
}

fn codex_cmd(a: &Action) -> String {
    match a {
        Action::Read { path } => format!("sed -n '1,200p' {path}"),
        Action::Bash { command } => command.clone(),
        Action::Grep { pattern, path } => format!("rg -n '{pattern}' {path}"),
        Action::Edit { path, .. } => format!("apply_patch {path}"),
    }
}

/// One session file's content and where it goes.
struct Generated {
    rel: PathBuf,
    bytes: Vec<u8>,
    lines: u64,
}

struct SessionGen<'p> {
    w: Writer,
    planter: &'p mut Planter,
    /// False inside an abandoned branch: nothing is planted there.
    plant: bool,
}

impl SessionGen<'_> {
    fn text(&mut self, slot: Slot, body: &str) -> String {
        if self.plant {
            self.planter.text(slot, body)
        } else {
            body.to_owned()
        }
    }

    fn action(&mut self) -> Action {
        let r = &mut self.w.rng;
        match r.below(10) {
            0..=2 => Action::Read { path: file_path(r) },
            3..=4 => Action::Edit {
                path: file_path(r),
                old: format!("let {} = {};", ident(r), r.below(100)),
                new: format!("let {} = {};", ident(r), r.below(100)),
            },
            5..=7 => {
                let base = match r.below(6) {
                    0 => "cargo test --workspace".to_owned(),
                    1 => format!("cargo build -p {}", r.pick(PROJECTS)),
                    2 => format!("npm run test -- {}", file_path(r)),
                    3 => format!("pytest -x {}", file_path(r)),
                    4 => format!("git diff --stat {}", file_path(r)),
                    _ => format!("ls -la {}", r.pick(DIRS)),
                };
                let cmd = self.text(Slot::BashCommand, "");
                Action::Bash {
                    command: if cmd.is_empty() {
                        base
                    } else {
                        format!("{base} # {}", cmd.trim())
                    },
                }
            }
            _ => Action::Grep {
                pattern: ident(r),
                path: r.pick(DIRS).to_string(),
            },
        }
    }

    fn output(&mut self, a: &Action, failed: bool) -> String {
        let r = &mut self.w.rng;
        let long = r.chance(0.03);
        let n = if long {
            r.range(300, 3000) as usize
        } else {
            r.range(2, 60) as usize
        };
        let body = match a {
            Action::Read { .. } => {
                if failed {
                    "File does not exist.".to_owned()
                } else {
                    code_lines(r, n)
                }
            }
            Action::Edit { path, .. } => {
                if failed {
                    format!("String to replace not found in file {path}.")
                } else {
                    format!("The file {path} has been updated successfully.")
                }
            }
            Action::Bash { .. } => log_lines(r, n, failed),
            Action::Grep { .. } => {
                let mut s = String::new();
                for _ in 0..n.min(400) {
                    let _ = writeln!(s, "{}:{}: {}", file_path(r), r.range(1, 900), words(r, 8));
                }
                s
            }
        };
        self.text(Slot::ToolOutput, &body)
    }

    fn turn(&mut self) {
        let sentences = self.w.rng.range(1, 4) as usize;
        let body = paragraph(&mut self.w.rng, sentences);
        let user = self.text(Slot::User, &body);
        self.w.user(&user);
        let calls = self.w.rng.range(0, 6);
        for _ in 0..calls {
            let thinking = self
                .w
                .rng
                .chance(0.3)
                .then(|| paragraph(&mut self.w.rng, 2));
            let pre = if self.w.rng.chance(0.5) {
                let body = sentence(&mut self.w.rng);
                Some(self.text(Slot::Assistant, &body))
            } else {
                None
            };
            let a = self.action();
            let failed = self.w.rng.chance(0.12);
            let id = self
                .w
                .assistant(thinking.as_deref(), pre.as_deref(), Some(&a));
            let out = self.output(&a, failed);
            self.w.result(&id, &a, &out, failed);
        }
        let sentences = self.w.rng.range(1, 5) as usize;
        let body = paragraph(&mut self.w.rng, sentences);
        let text = self.text(Slot::Assistant, &body);
        let thinking = self
            .w
            .rng
            .chance(0.2)
            .then(|| paragraph(&mut self.w.rng, 3));
        self.w.assistant(thinking.as_deref(), Some(&text), None);
        self.w.token_count();
    }
}

fn encode_claude_dir(cwd: &str) -> String {
    cwd.replace(['/', '.'], "-")
}

fn one_session(fmt: Fmt, n: u64, target: u64, rng: &mut Rng, planter: &mut Planter) -> Generated {
    let mut r = rng.fork(n);
    let session_id = r.uuid();
    let cwd = format!("/home/dev/src/{}", r.pick(PROJECTS));
    // Sessions a few hours apart from 2026-01-01 on, in generation order.
    let start = 1_767_225_600_000
        + i64::try_from(n).unwrap_or(0) * 3_600_000 * 3
        + i64::try_from(r.below(3_600_000)).unwrap_or(0);
    let branchy = fmt != Fmt::Codex && r.chance(0.3);
    let w = Writer {
        fmt,
        out: Vec::with_capacity(usize::try_from(target).unwrap_or(0) + 65_536),
        rng: r.fork(1),
        session_id: session_id.clone(),
        cwd: cwd.clone(),
        now: start,
        parent: None,
        lines: 0,
        ids: HashSet::new(),
    };
    let mut g = SessionGen {
        w,
        planter,
        plant: true,
    };
    g.w.header();
    let mut turns = 0u64;
    while (g.w.out.len() as u64) < target {
        g.turn();
        turns += 1;
        // A rewind: a turn or two that is then abandoned, the session going on from before it.
        if branchy && turns % 7 == 3 {
            let keep = g.w.parent.clone();
            g.plant = false;
            let k = g.w.rng.range(1, 2);
            for _ in 0..k {
                g.turn();
            }
            g.plant = true;
            g.w.parent = keep;
        }
    }
    let start_iso = iso_ms(start);
    let rel = match fmt {
        Fmt::Pi => {
            let dir = format!("--{}--", cwd.trim_start_matches('/').replace('/', "-"));
            let stamp = start_iso.replace([':', '.'], "-");
            PathBuf::from(format!(
                ".pi/agent/sessions/{dir}/{stamp}_{session_id}.jsonl"
            ))
        }
        Fmt::Claude => PathBuf::from(format!(
            ".claude/projects/{}/{session_id}.jsonl",
            encode_claude_dir(&cwd)
        )),
        Fmt::Codex => {
            let (y, m, d) = (&start_iso[0..4], &start_iso[5..7], &start_iso[8..10]);
            let stamp = start_iso[..19].replace(':', "-");
            PathBuf::from(format!(
                ".codex/sessions/{y}/{m}/{d}/rollout-{stamp}-{session_id}.jsonl"
            ))
        }
    };
    Generated {
        rel,
        bytes: g.w.out,
        lines: g.w.lines,
    }
}

// ---------------------------------------------------------------------------------------------
// Queries and their exact counts on read-back records

struct View {
    tokens: HashSet<String>,
    normalized: String,
    tool: Option<String>,
    outcome: Option<String>,
    /// A result record whose call is in the same session: with an outcome filter and no
    /// query, sessiondex counts the call only (one failed call is one hit).
    defers_to_call: bool,
}

type Check = Box<dyn Fn(&View) -> bool>;

struct Planned {
    query: Query,
    check: Option<Check>,
    /// The planter's key, when the count is also known from planting.
    planted: Option<String>,
    hits: u64,
}

fn q(
    class: &str,
    id: &str,
    query: Option<&str>,
    mode: Mode,
    all: bool,
    tool: Option<&str>,
    outcome: Option<&str>,
) -> Query {
    Query {
        id: format!("{class}/{id}"),
        class: class.to_owned(),
        query: query.map(str::to_owned),
        mode,
        all,
        tool: tool.map(str::to_owned),
        outcome: outcome.map(str::to_owned),
        expected_hits: None,
    }
}

fn has(t: &'static str) -> Check {
    Box::new(move |v: &View| v.tokens.contains(t))
}

fn token_with(f: impl Fn(&str) -> bool + 'static) -> Check {
    Box::new(move |v: &View| v.tokens.iter().any(|t| f(t)))
}

#[allow(clippy::too_many_lines)]
fn plan_queries() -> Vec<Planned> {
    let mut out = Vec::new();
    let mut add = |query: Query, check: Option<Check>, planted: Option<&str>| {
        out.push(Planned {
            query,
            check,
            planted: planted.map(str::to_owned),
            hits: 0,
        });
    };
    use Mode::{Fuzzy, Literal, Phrase, Regex};
    for i in [0usize, 2, 4, 7, 9, 14, 19, 24] {
        let t: &'static str = Box::leak(format!("zqrare{i:02}").into_boxed_str());
        add(
            q("rare_term", t, Some(t), Literal, false, None, None),
            Some(has(t)),
            Some(t),
        );
    }
    add(
        q(
            "common_term",
            "zqcommon",
            Some("zqcommon"),
            Literal,
            false,
            None,
            None,
        ),
        Some(has("zqcommon")),
        Some("zqcommon"),
    );
    for w in ["error", "file", "test"] {
        add(
            q("common_term", w, Some(w), Literal, false, None, None),
            None,
            None,
        );
    }
    for (a, b) in [("zqalpha", "zqbeta"), ("zqgamma", "zqdelta")] {
        let text = format!("{a} {b}");
        let any: Check = Box::new(move |v: &View| v.tokens.contains(a) || v.tokens.contains(b));
        let all: Check = Box::new(move |v: &View| v.tokens.contains(a) && v.tokens.contains(b));
        add(
            q(
                "two_term_any",
                &format!("{a}+{b}"),
                Some(&text),
                Literal,
                false,
                None,
                None,
            ),
            Some(any),
            Some(&format!("{a}|{b}")),
        );
        add(
            q(
                "two_term_all",
                &format!("{a}+{b}"),
                Some(&text),
                Literal,
                true,
                None,
                None,
            ),
            Some(all),
            Some(&format!("{a}&{b}")),
        );
    }
    add(
        q(
            "two_term_any",
            "error+timeout",
            Some("error timeout"),
            Literal,
            false,
            None,
            None,
        ),
        None,
        None,
    );
    add(
        q(
            "two_term_all",
            "error+timeout",
            Some("error timeout"),
            Literal,
            true,
            None,
            None,
        ),
        None,
        None,
    );
    for p in ["zqquick zqbrown zqfox", "zqlazy zqdog"] {
        let phrase: &'static str = p;
        let check: Check = Box::new(move |v: &View| v.normalized.contains(phrase));
        add(
            q(
                "phrase",
                &p.replace(' ', "_"),
                Some(p),
                Phrase,
                false,
                None,
                None,
            ),
            Some(check),
            Some(p),
        );
    }
    add(
        q(
            "phrase",
            "flaky_timeout",
            Some("flaky timeout"),
            Phrase,
            false,
            None,
            None,
        ),
        None,
        None,
    );
    add(
        q(
            "prefix_regex",
            "zqpfx",
            Some("zqpfx[0-9]+"),
            Regex,
            false,
            None,
            None,
        ),
        Some(token_with(|t| {
            t.strip_prefix("zqpfx")
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
        })),
        Some("zqpfx"),
    );
    add(
        q(
            "prefix_regex",
            "zqpre",
            Some("zqpre[a-z]+"),
            Regex,
            false,
            None,
            None,
        ),
        Some(token_with(|t| {
            t.strip_prefix("zqpre")
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_lowercase()))
        })),
        Some("zqpre"),
    );
    add(
        q(
            "leading_wildcard_regex",
            "zqsfx",
            Some("[a-z]+zqsfx"),
            Regex,
            false,
            None,
            None,
        ),
        Some(token_with(|t| {
            t.strip_suffix("zqsfx")
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_lowercase()))
        })),
        Some("zqsfx"),
    );
    add(
        q(
            "leading_wildcard_regex",
            "zqend",
            Some("[a-z]+zqend"),
            Regex,
            false,
            None,
            None,
        ),
        Some(token_with(|t| {
            t.strip_suffix("zqend")
                .is_some_and(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_lowercase()))
        })),
        Some("zqend"),
    );
    for base in FUZZY_BASES {
        add(
            q("fuzzy", base, Some(base), Fuzzy, false, None, None),
            Some(token_with(move |t| osa_distance(t, base) <= 2)),
            Some(&format!("fuzzy:{base}")),
        );
    }
    let structural: [(&str, &str, Option<&str>); 5] = [
        ("bash+failed", "bash", Some("failed")),
        ("Bash+failed", "Bash", Some("failed")),
        ("exec_command+failed", "exec_command", Some("failed")),
        ("Edit", "Edit", None),
        ("read", "read", None),
    ];
    for (id, tool, outcome) in structural {
        let check: Check = Box::new(move |v: &View| {
            v.tool.as_deref() == Some(tool)
                && (outcome.is_none() || (v.outcome.as_deref() == outcome && !v.defers_to_call))
        });
        add(
            q("structural", id, None, Literal, false, Some(tool), outcome),
            Some(check),
            None,
        );
    }
    for tool in ["bash", "Bash", "exec_command"] {
        let check: Check = Box::new(move |v: &View| {
            v.tool.as_deref() == Some(tool) && v.tokens.contains("zqlexbash")
        });
        add(
            q(
                "lexical_structural",
                &format!("zqlexbash+{tool}"),
                Some("zqlexbash"),
                Literal,
                false,
                Some(tool),
                None,
            ),
            Some(check),
            None,
        );
    }
    let check: Check = Box::new(|v: &View| {
        v.outcome.as_deref() == Some("failed") && v.tokens.contains("zqcommon")
    });
    add(
        q(
            "lexical_structural",
            "zqcommon+failed",
            Some("zqcommon"),
            Literal,
            false,
            None,
            Some("failed"),
        ),
        Some(check),
        None,
    );
    let never: fn() -> Check = || Box::new(|_: &View| false);
    add(
        q(
            "negative",
            "literal",
            Some("zqnothere"),
            Literal,
            false,
            None,
            None,
        ),
        Some(never()),
        None,
    );
    add(
        q(
            "negative",
            "all",
            Some("zqalpha zqgamma zqquick"),
            Literal,
            true,
            None,
            None,
        ),
        Some(Box::new(|v: &View| {
            ["zqalpha", "zqgamma", "zqquick"]
                .iter()
                .all(|t| v.tokens.contains(*t))
        })),
        None,
    );
    add(
        q(
            "negative",
            "phrase_reversed",
            Some("zqfox zqbrown zqquick"),
            Phrase,
            false,
            None,
            None,
        ),
        Some(Box::new(|v: &View| {
            v.normalized.contains("zqfox zqbrown zqquick")
        })),
        None,
    );
    add(
        q(
            "negative",
            "regex",
            Some("zqpfx[a-z]+"),
            Regex,
            false,
            None,
            None,
        ),
        Some(token_with(|t| {
            t.starts_with("zqpfx")
                && t[5..]
                    .bytes()
                    .next()
                    .is_some_and(|b| b.is_ascii_lowercase())
        })),
        None,
    );
    add(
        q(
            "negative",
            "fuzzy",
            Some("zqnothing"),
            Fuzzy,
            false,
            None,
            None,
        ),
        Some(token_with(|t| osa_distance(t, "zqnothing") <= 2)),
        None,
    );
    add(
        q(
            "negative",
            "structural",
            None,
            Literal,
            false,
            Some("nonexistent_tool"),
            None,
        ),
        Some(never()),
        None,
    );
    out
}

fn view(r: &Record, policy: &Policy, calls: &HashSet<&str>) -> View {
    let text = policy.text(r).unwrap_or("");
    View {
        defers_to_call: r.kind != "tool_call"
            && r.call_id.as_deref().is_some_and(|id| calls.contains(id)),
        tokens: tokenize(text).into_iter().collect(),
        normalized: normalize(text)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" "),
        tool: r.tool.clone(),
        outcome: r.outcome.map(|o| o.as_str().to_owned()),
    }
}

// ---------------------------------------------------------------------------------------------
// The corpus

/// What [`generate`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenReport {
    /// Session files written.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Active-branch records read back.
    pub records: u64,
    /// Lines written.
    pub lines: u64,
    /// Files per format (`pi`, `claude_code`, `codex`).
    pub per_format: BTreeMap<String, u64>,
}

/// Writes the corpus and `queries.json` under `opts.out`.
///
/// # Errors
///
/// When a file cannot be written, a written file does not read back complete, or a planted
/// count disagrees with the records read back.
pub fn generate(opts: &GenOptions) -> anyhow::Result<GenReport> {
    let mut rng = Rng::new(opts.seed);
    let mut planter = Planter::new(rng.fork(0xFACE));
    let mut plan = plan_queries();
    let policy = Policy::default();
    let mut report = GenReport {
        files: 0,
        bytes: 0,
        records: 0,
        lines: 0,
        per_format: BTreeMap::new(),
    };
    std::fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating {}", opts.out.display()))?;
    let (min_file, max_file) = (
        opts.min_file.max(1),
        opts.max_file.max(opts.min_file.max(1)),
    );
    let (lo, hi) = ((min_file as f64).ln(), (max_file as f64).ln());
    let mut n = 0u64;
    while report.bytes < opts.size {
        let left = opts.size - report.bytes;
        let mut target = (lo + rng.unit() * (hi - lo)).exp() as u64;
        target = target.min(left).max(min_file);
        // The first three files are one of each format, so that a small corpus has them all.
        let pick = if n < 3 {
            [0, 4, 7][n as usize]
        } else {
            rng.below(10)
        };
        let fmt = match pick {
            0..=3 => Fmt::Claude,
            4..=6 => Fmt::Pi,
            _ => Fmt::Codex,
        };
        let g = one_session(fmt, n, target, &mut rng, &mut planter);
        n += 1;
        let path = opts.out.join(&g.rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        std::fs::write(&path, &g.bytes).with_context(|| format!("writing {}", path.display()))?;
        // Read back: complete, every byte consumed, no reason of any kind.
        let name = path.to_string_lossy();
        let session = read_bytes(&name, &g.bytes, &ReadOptions::default())
            .with_context(|| format!("reading back {name}"))?;
        let sel = session.select(Branches::Active);
        let cov = &sel.coverage;
        if !cov.complete || !cov.reasons.is_empty() || cov.complete_bytes != g.bytes.len() as u64 {
            bail!("{name} does not read back completely: {cov:?}");
        }
        let calls: HashSet<&str> = sel
            .records
            .iter()
            .filter(|r| r.kind == "tool_call")
            .filter_map(|r| r.call_id.as_deref())
            .collect();
        for r in &sel.records {
            let v = view(r, &policy, &calls);
            for p in &mut plan {
                if let Some(check) = &p.check {
                    if check(&v) {
                        p.hits += 1;
                    }
                }
            }
        }
        report.records += sel.records.len() as u64;
        report.files += 1;
        report.bytes += g.bytes.len() as u64;
        report.lines += g.lines;
        let key = match fmt {
            Fmt::Pi => "pi",
            Fmt::Claude => "claude_code",
            Fmt::Codex => "codex",
        };
        *report.per_format.entry(key.to_owned()).or_insert(0) += 1;
    }
    let mut classes: BTreeMap<String, Vec<Query>> = BTreeMap::new();
    for p in plan {
        let mut query = p.query;
        if p.check.is_some() {
            if let Some(key) = &p.planted {
                let planted = planter.planted.get(key).copied().unwrap_or(0);
                if planted != p.hits {
                    bail!(
                        "{}: planted {planted} times, {} records found on read-back",
                        query.id,
                        p.hits
                    );
                }
            }
            query.expected_hits = Some(p.hits);
        }
        classes.entry(query.class.clone()).or_default().push(query);
    }
    let file = QueryFile {
        seed: opts.seed,
        corpus_bytes: report.bytes,
        files: report.files,
        records: report.records,
        lines: report.lines,
        classes,
    };
    let path = opts.out.join("queries.json");
    let text = serde_json::to_string_pretty(&file)?;
    std::fs::write(&path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    Ok(report)
}

/// Total bytes of the session files under `dir` (what `compare` calls the corpus).
#[must_use]
pub fn corpus_bytes(dir: &Path) -> u64 {
    sessiondex_source::discover(dir)
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fuzzy_variants_have_the_intended_distances() {
        for base in FUZZY_BASES {
            let d: Vec<usize> = fuzzy_variants(base)
                .iter()
                .map(|v| osa_distance(v, base))
                .collect();
            assert_eq!(d, [0, 1, 1, 1, 2, 2, 3, 4], "{base}");
        }
        assert_eq!(osa_distance("ab", "ba"), 1);
        assert_eq!(osa_distance("", "abc"), 3);
    }

    #[test]
    fn iso_dates() {
        assert_eq!(iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_ms(1_767_225_600_123), "2026-01-01T00:00:00.123Z");
        assert_eq!(iso_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("200MB").unwrap(), 200 << 20);
        assert_eq!(parse_size("64KiB").unwrap(), 64 << 10);
        assert_eq!(parse_size("5000").unwrap(), 5000);
        assert!(parse_size("12 parsecs").is_err());
    }
}
