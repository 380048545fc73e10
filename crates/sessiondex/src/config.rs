//! Configuration: one set of keys for the config file, CLI flags and bindings.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Every tunable of sessiondex, with the defaults of the product documentation.
///
/// In a TOML config file the keys are camelCase (`hotSessions = 20`); snake_case is accepted
/// too. On the command line each key is a kebab-case flag (`--hot-sessions 20`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Config {
    /// Sessions considered per scope, newest first.
    #[serde(alias = "max_sessions")]
    pub max_sessions: usize,
    /// Indexed text per entry, in Unicode scalars; longer text is cut (`max_entry_chars`).
    #[serde(alias = "max_entry_chars")]
    pub max_entry_chars: usize,
    /// Index reasoning text.
    #[serde(alias = "index_thinking")]
    pub index_thinking: bool,
    /// Index tool output.
    #[serde(alias = "index_tool_output")]
    pub index_tool_output: bool,
    /// How many of the newest sessions get hot shards.
    #[serde(alias = "hot_sessions")]
    pub hot_sessions: usize,
    /// Cap on one cold digest's vocabulary.
    #[serde(alias = "max_cold_vocabulary_bytes")]
    pub max_cold_vocabulary_bytes: u64,
    /// Cap on one cold digest file.
    #[serde(alias = "max_cold_cache_bytes")]
    pub max_cold_cache_bytes: u64,
    /// Sessions (re)indexed by one sync at most.
    #[serde(alias = "max_sync_sessions")]
    pub max_sync_sessions: usize,
    /// Source bytes read by one sync at most.
    #[serde(alias = "max_sync_source_bytes")]
    pub max_sync_source_bytes: u64,
    /// Index files examined by one cleanup at most.
    #[serde(alias = "max_cache_cleanup_files")]
    pub max_cache_cleanup_files: usize,
    /// Longest regex pattern accepted, in bytes.
    #[serde(alias = "regex_max_pattern_bytes")]
    pub regex_max_pattern_bytes: usize,
    /// Largest compiled regex automaton, in bytes.
    #[serde(alias = "regex_max_automaton_bytes")]
    pub regex_max_automaton_bytes: usize,
    /// Most text bytes one regex recall scans.
    #[serde(alias = "regex_max_haystack_bytes")]
    pub regex_max_haystack_bytes: u64,
    /// Replace well-known credential shapes with `[redacted:<kind>]` when sessions are read
    /// (index, snippets, expand and walk unless `reveal`); docs/secrets.md.
    #[serde(alias = "redact_secrets")]
    pub redact_secrets: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_sessions: 500,
            max_entry_chars: 2000,
            index_thinking: false,
            index_tool_output: true,
            hot_sessions: 50,
            max_cold_vocabulary_bytes: 524_288,
            max_cold_cache_bytes: 1_048_576,
            max_sync_sessions: 10_000,
            max_sync_source_bytes: 536_870_912,
            max_cache_cleanup_files: 100_000,
            regex_max_pattern_bytes: 1024,
            regex_max_automaton_bytes: 4 << 20,
            regex_max_haystack_bytes: 256 << 20,
            redact_secrets: true,
        }
    }
}

/// An error in a configuration file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("config {path}: {message}")]
pub struct ConfigError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl ConfigError {
    /// The stable code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        "invalid_config"
    }
}

impl Config {
    /// Parses a TOML config text. Unknown keys are refused, so a typo is not silently ignored.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the problem.
    pub fn from_toml(path: &str, text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError {
            path: path.to_owned(),
            message: e.message().to_owned(),
        })
    }

    /// Reads a TOML config file.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] when the file cannot be read or parsed.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let name = path.to_string_lossy();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            path: name.to_string(),
            message: e.to_string(),
        })?;
        Config::from_toml(&name, &text)
    }
}

/// The standard session locations of each agent that exist on this machine: Claude Code
/// (`$CLAUDE_CONFIG_DIR/projects` or `~/.claude/projects`), pi (`~/.pi/agent/sessions`),
/// oh-my-pi (`~/.omp/agent/sessions`) and Codex CLI (`$CODEX_HOME/sessions` or
/// `~/.codex/sessions`).
#[must_use]
pub fn default_sources() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut candidates = Vec::new();
    match std::env::var_os("CLAUDE_CONFIG_DIR") {
        Some(dir) => candidates.push(PathBuf::from(dir).join("projects")),
        None => {
            if let Some(h) = &home {
                candidates.push(h.join(".claude/projects"));
            }
        }
    }
    if let Some(h) = &home {
        candidates.push(h.join(".pi/agent/sessions"));
        candidates.push(h.join(".omp/agent/sessions"));
    }
    match std::env::var_os("CODEX_HOME") {
        Some(dir) => candidates.push(PathBuf::from(dir).join("sessions")),
        None => {
            if let Some(h) = &home {
                candidates.push(h.join(".codex/sessions"));
            }
        }
    }
    candidates.into_iter().filter(|p| p.is_dir()).collect()
}

/// The default index directory, the platform's cache convention: `$XDG_CACHE_HOME/sessiondex`
/// when that variable holds an absolute path (the XDG rule: a relative one is ignored), else
/// `~/Library/Caches/sessiondex` on macOS and `~/.cache/sessiondex` elsewhere.
#[must_use]
pub fn default_index_dir() -> PathBuf {
    index_dir_from(
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
        cfg!(target_os = "macos"),
    )
}

fn index_dir_from(xdg: Option<OsString>, home: Option<OsString>, macos: bool) -> PathBuf {
    if let Some(x) = xdg.map(PathBuf::from).filter(|x| x.is_absolute()) {
        return x.join("sessiondex");
    }
    let home = home.map_or_else(std::env::temp_dir, PathBuf::from);
    if macos {
        home.join("Library/Caches/sessiondex")
    } else {
        home.join(".cache/sessiondex")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_keys_are_camel_or_snake_case() {
        let c = Config::from_toml("c.toml", "hotSessions = 3\nmax_entry_chars = 10\n").unwrap();
        assert_eq!(c.hot_sessions, 3);
        assert_eq!(c.max_entry_chars, 10);
        assert_eq!(c.max_sessions, 500);
    }

    #[test]
    fn the_index_dir_follows_the_platform_cache_convention() {
        let os = |s: &str| Some(OsString::from(s));
        for macos in [false, true] {
            assert_eq!(
                index_dir_from(os("/x/cache"), os("/home/u"), macos),
                PathBuf::from("/x/cache/sessiondex")
            );
        }
        // An empty or relative XDG_CACHE_HOME is ignored.
        for xdg in [None, os(""), os("rel/cache")] {
            assert_eq!(
                index_dir_from(xdg.clone(), os("/home/u"), false),
                PathBuf::from("/home/u/.cache/sessiondex")
            );
            assert_eq!(
                index_dir_from(xdg, os("/Users/u"), true),
                PathBuf::from("/Users/u/Library/Caches/sessiondex")
            );
        }
    }

    #[test]
    fn unknown_keys_are_refused() {
        let e = Config::from_toml("c.toml", "hotSesions = 3\n").unwrap_err();
        assert_eq!(e.code(), "invalid_config");
        assert!(e.message.contains("hotSesions"), "{}", e.message);
    }
}
