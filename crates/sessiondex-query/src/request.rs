//! The JSON shapes of the query API: requests, calls, pages, hits and coverage.
//!
//! Field names are camelCase exactly as `docs/product.md` names them; requests refuse
//! unknown fields. [`RecallRequest::from_json`], [`ExpandRequest::from_json`] and
//! [`Call::from_json`] turn JSON into a request and report a stable [`ErrorCode`]:
//! `invalid_query_mode` and `invalid_scope` for those two fields, `invalid_request` for any
//! other shape error, then `validate` checks values (`invalid_time`,
//! `index_out_of_bounds`, ...). A [`Call`] (`follow` of a hit, `next` of a page) is passed
//! back unchanged: it round-trips through serde as the same JSON value (`args` is kept as
//! an opaque value, unknown fields included; object keys may come back reordered).

use std::fmt;
use std::sync::Arc;
#[cfg(not(target_arch = "wasm32"))]
use std::sync::OnceLock;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{json, Value};
use sessiondex_source::util::parse_rfc3339_ms;
use sessiondex_source::{Branches, Outcome};

use crate::error::{Error, ErrorCode};
use crate::snippet::Snippet;

/// Default `pageSize`.
pub const DEFAULT_PAGE_SIZE: u32 = 10;
/// Largest `pageSize`.
pub const MAX_PAGE_SIZE: u32 = 100;
/// Default and largest `maxChars` of an expansion.
pub const DEFAULT_MAX_CHARS: u32 = 20_000;

/// How the query text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum QueryMode {
    /// Canonical terms ranked by BM25 (the default).
    #[default]
    Literal,
    /// One contiguous, case-insensitive phrase over normalized text.
    Phrase,
    /// A bounded DFA regex (explicit opt-in).
    Regex,
    /// Canonical terms, each expanded to vocabulary terms within a small edit distance.
    Fuzzy,
}

impl QueryMode {
    /// The stable name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            QueryMode::Literal => "literal",
            QueryMode::Phrase => "phrase",
            QueryMode::Regex => "regex",
            QueryMode::Fuzzy => "fuzzy",
        }
    }

    /// Parses a stable name.
    #[must_use]
    pub fn parse(s: &str) -> Option<QueryMode> {
        [
            QueryMode::Literal,
            QueryMode::Phrase,
            QueryMode::Regex,
            QueryMode::Fuzzy,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
    }
}

/// Whether one query term suffices or every term must occur in one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum QueryMatch {
    /// At least one term (the default).
    #[default]
    Any,
    /// Every term, in one entry.
    All,
}

/// A field group (`in`): the provenance classes a query may match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FieldGroup {
    /// Prose: user and assistant text, summaries and other (meta) text.
    Text,
    /// Model reasoning: thinking records and an entry's thinking part.
    Thinking,
    /// Arguments of tool calls.
    ToolInput,
    /// Output of tools.
    ToolOutput,
}

impl FieldGroup {
    /// Every group, in order.
    pub const ALL: [FieldGroup; 4] = [
        FieldGroup::Text,
        FieldGroup::Thinking,
        FieldGroup::ToolInput,
        FieldGroup::ToolOutput,
    ];

    /// The stable name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FieldGroup::Text => "text",
            FieldGroup::Thinking => "thinking",
            FieldGroup::ToolInput => "tool_input",
            FieldGroup::ToolOutput => "tool_output",
        }
    }

    /// Parses a stable name.
    #[must_use]
    pub fn parse(s: &str) -> Option<FieldGroup> {
        FieldGroup::ALL.into_iter().find(|g| g.as_str() == s)
    }

    /// The group of a record's text class (its thinking part is always `thinking`).
    #[must_use]
    pub fn of_class(class: sessiondex_source::TextClass) -> FieldGroup {
        use sessiondex_source::TextClass;
        match class {
            TextClass::Thinking => FieldGroup::Thinking,
            TextClass::ToolInput => FieldGroup::ToolInput,
            TextClass::ToolOutput => FieldGroup::ToolOutput,
            TextClass::UserText
            | TextClass::AssistantText
            | TextClass::Summary
            | TextClass::Meta => FieldGroup::Text,
        }
    }
}

/// Which sessions a recall searches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The current session, or the newest session of `cwd`.
    Session,
    /// Every session of `cwd`'s project.
    Project,
    /// Every indexed session; never a default.
    Global,
    /// One session by id or path: `session:<id-or-path>`.
    Explicit(String),
}

impl Scope {
    /// Parses `session`, `project`, `global` or `session:<id-or-path>` (non-empty).
    #[must_use]
    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "session" => Some(Scope::Session),
            "project" => Some(Scope::Project),
            "global" => Some(Scope::Global),
            _ => {
                let rest = s.strip_prefix(SCOPE_PREFIX)?;
                (!rest.trim().is_empty()).then(|| Scope::Explicit(rest.to_owned()))
            }
        }
    }

    /// Whether the scope names one session (`session` or `session:<...>`).
    #[must_use]
    pub fn is_single_session(&self) -> bool {
        matches!(self, Scope::Session | Scope::Explicit(_))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Session => f.write_str("session"),
            Scope::Project => f.write_str("project"),
            Scope::Global => f.write_str("global"),
            Scope::Explicit(s) => write!(f, "{SCOPE_PREFIX}{s}"),
        }
    }
}

impl Serialize for Scope {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Scope {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Scope::parse(&s).ok_or_else(|| de::Error::custom(format_args!("invalid scope `{s}`")))
    }
}

/// JSON Schemas of the types that are not schemars types: [`Scope`] (a string), and the
/// `sessiondex-source` enums `Branches` and `Outcome` (their serde names).
#[cfg(feature = "schema")]
mod schema {
    use std::borrow::Cow;

    use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};

    use super::Scope;

    /// `Branches` as serde writes it.
    pub(super) const BRANCHES: [&str; 2] = ["active", "all"];
    /// `Outcome` as serde writes it.
    pub(super) const OUTCOMES: [&str; 4] = ["succeeded", "failed", "aborted", "timed_out"];

    pub(super) fn branches(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": BRANCHES,
            "description": "`active` (default): the path from the current leaf to the root; `all`: every record",
        })
    }

    pub(super) fn outcome(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": OUTCOMES,
            "description": "Exact outcome of a tool call",
        })
    }

    impl JsonSchema for Scope {
        fn schema_name() -> Cow<'static, str> {
            Cow::Borrowed("Scope")
        }

        fn json_schema(_: &mut SchemaGenerator) -> Schema {
            json_schema!({
                "type": "string",
                "pattern": "^(session|project|global|session:.*\\S.*)$",
                "description": "`project` (default: sessions under the cwd), `global` (every session; never a default), `session` (the current session), or `session:<id-or-path>`",
            })
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::request::RecallRequest;
        use sessiondex_source::{Branches, Outcome};

        #[test]
        fn enum_names_are_the_serde_names() {
            for b in [Branches::Active, Branches::All] {
                assert!(BRANCHES.contains(&b.as_str()));
            }
            for n in BRANCHES {
                let b: Branches = serde_json::from_value(serde_json::json!(n)).unwrap();
                assert_eq!(b.as_str(), n);
            }
            for n in OUTCOMES {
                let o: Outcome = serde_json::from_value(serde_json::json!(n)).unwrap();
                assert_eq!(o.as_str(), n);
            }
        }

        #[test]
        fn recall_schema_names_every_field() {
            let schema = serde_json::to_value(schemars::schema_for!(RecallRequest)).unwrap();
            let props = schema["properties"].as_object().unwrap();
            assert!(props.contains_key("ref") && props.contains_key("entryRange"));
            assert_eq!(schema["additionalProperties"], serde_json::json!(false));
        }
    }
}

/// A `recall` request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecallRequest {
    /// The query text; absent or empty: typed fields alone decide membership.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// How `query` is read (default `literal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_mode: Option<QueryMode>,
    /// `any` (default) or `all` terms in one entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_match: Option<QueryMatch>,
    /// Which sessions; absent: the engine's default (`project`), never `global`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    /// The working directory that `session` and `project` resolve against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// `active` (default) or `all` branches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::branches"))]
    pub branches: Option<Branches>,
    /// Exact role filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// Exact tool name filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// Exact tool reference filter (`omp.grep`).
    #[serde(rename = "ref", default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Exact provider filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Exact action filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Exact outcome filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::outcome"))]
    pub outcome: Option<Outcome>,
    /// Entries at or after this time (RFC 3339 or `YYYY-MM-DD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    /// Entries at or before this time (RFC 3339, or `YYYY-MM-DD` for the whole day).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// Inclusive `[first, last]` entry indices of one session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_range: Option<[i64; 2]>,
    /// Hits per page (default 10, at most 100); the page stays under its JSON bound anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    /// Position of the page's first hit in the ranked stream (set by `next`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Integrity binding of a single-session call: the source's SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    /// Integrity binding of a single-session call: the selected lineage's fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage_fingerprint: Option<String>,
    /// Field groups (`in`): only text of these provenance groups matches the query; absent:
    /// every group.
    #[serde(rename = "in", default, skip_serializing_if = "Option::is_none")]
    pub in_groups: Option<Vec<FieldGroup>>,
}

/// A validated recall: the request plus its parsed values.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRecall {
    /// The request as given.
    pub request: RecallRequest,
    /// The trimmed query, `None` when absent or blank.
    pub query: Option<String>,
    /// The query mode.
    pub mode: QueryMode,
    /// The term matching.
    pub matching: QueryMatch,
    /// The scope (default `project`).
    pub scope: Scope,
    /// The branch selection.
    pub branches: Branches,
    /// `since` in Unix milliseconds.
    pub since_ms: Option<i64>,
    /// `until` in Unix milliseconds, inclusive (a bare date covers its whole day).
    pub until_ms: Option<i64>,
    /// The inclusive entry range.
    pub entry_range: Option<(usize, usize)>,
    /// Hits per page.
    pub page_size: u32,
    /// First hit's position.
    pub offset: u64,
    /// Structural filters ask for operations (tool I/O is not discounted).
    pub operations_requested: bool,
}

fn invalid(code: ErrorCode, msg: impl Into<String>, field: &str) -> Error {
    Error::new(code, msg).with_details(json!({ "field": field }))
}

fn parse_time(field: &str, s: &str, end_of_day: bool) -> Result<i64, Error> {
    let ms = parse_rfc3339_ms(s).ok_or_else(|| {
        invalid(
            ErrorCode::InvalidTime,
            format!("`{field}` is not an RFC 3339 time or a YYYY-MM-DD date: `{s}`"),
            field,
        )
    })?;
    if end_of_day && s.trim().len() == 10 {
        Ok(ms + 86_400_000 - 1)
    } else {
        Ok(ms)
    }
}

fn index(field: &str, v: i64) -> Result<usize, Error> {
    usize::try_from(v).map_err(|_| {
        Error::new(
            ErrorCode::IndexOutOfBounds,
            format!("`{field}` has a negative index {v}"),
        )
        .with_details(json!({ "field": field, "index": v }))
    })
}

fn shape_error(e: &serde_json::Error) -> Error {
    Error::new(ErrorCode::InvalidRequest, format!("invalid request: {e}"))
}

fn check_enum_field(
    v: &Value,
    field: &str,
    ok: impl Fn(&str) -> bool,
    code: ErrorCode,
) -> Result<(), Error> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) if ok(s) => Ok(()),
        Some(other) => Err(invalid(code, format!("invalid `{field}`: {other}"), field)),
    }
}

/// `in`: an array of known group names, with a message naming the bad value.
fn check_groups(v: &Value) -> Result<(), Error> {
    let bad = |msg: String| {
        Err(invalid(ErrorCode::InvalidRequest, msg, "in").with_details(
            json!({"field": "in", "groups": FieldGroup::ALL.map(FieldGroup::as_str)}),
        ))
    };
    match v.get("in") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(items)) => {
            for it in items {
                match it.as_str() {
                    Some(name) if FieldGroup::parse(name).is_some() => {}
                    _ => {
                        return bad(format!(
                            "unknown field group {it} in `in` (groups: text, thinking, tool_input, tool_output)"
                        ))
                    }
                }
            }
            Ok(())
        }
        Some(other) => bad(format!(
            "`in` is an array of field group names, not {other}"
        )),
    }
}

impl RecallRequest {
    /// Parses a request from JSON, with the error codes of the module docs.
    ///
    /// # Errors
    ///
    /// `invalid_query_mode`, `invalid_scope` or `invalid_request`.
    pub fn from_json(v: &Value) -> Result<RecallRequest, Error> {
        if !v.is_object() {
            return Err(Error::new(
                ErrorCode::InvalidRequest,
                "a recall request is a JSON object",
            ));
        }
        check_enum_field(
            v,
            "queryMode",
            |s| QueryMode::parse(s).is_some(),
            ErrorCode::InvalidQueryMode,
        )?;
        check_enum_field(
            v,
            "scope",
            |s| Scope::parse(s).is_some(),
            ErrorCode::InvalidScope,
        )?;
        check_groups(v)?;
        RecallRequest::deserialize(v).map_err(|e| shape_error(&e))
    }

    /// Checks values and parses times.
    ///
    /// # Errors
    ///
    /// `invalid_query_mode` (phrase, regex or fuzzy without a query), `invalid_time`,
    /// `index_out_of_bounds` (a negative `entryRange` endpoint), `invalid_request` (an
    /// inverted `entryRange`, `entryRange` outside a single-session scope, a `pageSize` out
    /// of 1..=100).
    pub fn validate(self) -> Result<ValidRecall, Error> {
        let query = self
            .query
            .as_deref()
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .map(str::to_owned);
        let mode = self.query_mode.unwrap_or_default();
        if query.is_none() && mode != QueryMode::Literal {
            return Err(invalid(
                ErrorCode::InvalidQueryMode,
                format!("queryMode `{}` needs a query", mode.as_str()),
                "queryMode",
            ));
        }
        let since_ms = self
            .since
            .as_deref()
            .map(|s| parse_time("since", s, false))
            .transpose()?;
        let until_ms = self
            .until
            .as_deref()
            .map(|s| parse_time("until", s, true))
            .transpose()?;
        if let (Some(a), Some(b)) = (since_ms, until_ms) {
            if a > b {
                return Err(invalid(
                    ErrorCode::InvalidTime,
                    "`since` is after `until`",
                    "since",
                ));
            }
        }
        let scope = self.scope.clone().unwrap_or(Scope::Project);
        let entry_range = match self.entry_range {
            None => None,
            Some([a, b]) => {
                if !scope.is_single_session() {
                    return Err(invalid(
                        ErrorCode::InvalidRequest,
                        "`entryRange` needs a single-session scope (`session` or `session:<id-or-path>`)",
                        "entryRange",
                    ));
                }
                let (a, b) = (index("entryRange", a)?, index("entryRange", b)?);
                if a > b {
                    return Err(invalid(
                        ErrorCode::InvalidRequest,
                        format!("`entryRange` [{a}, {b}] is inverted"),
                        "entryRange",
                    ));
                }
                Some((a, b))
            }
        };
        let page_size = self.page_size.unwrap_or(DEFAULT_PAGE_SIZE);
        if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
            return Err(invalid(
                ErrorCode::InvalidRequest,
                format!("`pageSize` must be 1..={MAX_PAGE_SIZE}, not {page_size}"),
                "pageSize",
            ));
        }
        if self.in_groups.as_ref().is_some_and(Vec::is_empty) {
            return Err(invalid(
                ErrorCode::InvalidRequest,
                "`in` names no field group (give one or more of text, thinking, tool_input, tool_output)",
                "in",
            ));
        }
        let operations_requested = self.tool.is_some()
            || self.reference.is_some()
            || self.provider.is_some()
            || self.action.is_some()
            || self.outcome.is_some()
            || self.role.as_deref() == Some("tool");
        Ok(ValidRecall {
            query,
            mode,
            matching: self.query_match.unwrap_or_default(),
            scope,
            branches: self.branches.unwrap_or_default(),
            since_ms,
            until_ms,
            entry_range,
            page_size,
            offset: self.offset.unwrap_or(0),
            operations_requested,
            request: self,
        })
    }
}

/// An `expand` request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExpandRequest {
    /// The session id or path.
    pub session: String,
    /// Entry indices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indices: Option<Vec<i64>>,
    /// Stable entry ids.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_ids: Option<Vec<String>>,
    /// Operation addresses (`<entryId>/<k>`); `operationAddresses` is accepted too.
    #[serde(
        default,
        alias = "operationAddresses",
        skip_serializing_if = "Option::is_none"
    )]
    pub addresses: Option<Vec<String>>,
    /// An inclusive `[first, last]` index range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<[i64; 2]>,
    /// Entries of context before the one anchor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<u32>,
    /// Entries of context after the one anchor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u32>,
    /// Bound on the response's text, in characters (default and at most 20,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_chars: Option<u32>,
    /// Integrity binding: the source's SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    /// Integrity binding: the selected lineage's fingerprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage_fingerprint: Option<String>,
    /// `active` (default) or `all` branches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "schema::branches"))]
    pub branches: Option<Branches>,
    /// Character offset into the first selected entry's text (chunk continuation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_offset: Option<u64>,
    /// Show credentials as the source has them instead of `[redacted:<kind>]` (the index
    /// policy's `redactSecrets`); default false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reveal: bool,
}

/// What an expansion selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// Entry indices.
    Indices(Vec<usize>),
    /// Stable entry ids.
    EntryIds(Vec<String>),
    /// Operation addresses.
    Addresses(Vec<String>),
    /// An inclusive index range.
    Range(usize, usize),
}

/// A validated expansion.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidExpand {
    /// The request as given.
    pub request: ExpandRequest,
    /// The selection.
    pub selector: Selector,
    /// Context before the anchor.
    pub before: usize,
    /// Context after the anchor.
    pub after: usize,
    /// Bound on the response's text, in characters.
    pub max_chars: usize,
    /// The branch selection.
    pub branches: Branches,
    /// Character offset into the first entry's text.
    pub text_offset: u64,
}

impl ExpandRequest {
    /// Parses a request from JSON.
    ///
    /// # Errors
    ///
    /// `invalid_request` for a shape error.
    pub fn from_json(v: &Value) -> Result<ExpandRequest, Error> {
        if !v.is_object() {
            return Err(Error::new(
                ErrorCode::InvalidRequest,
                "an expand request is a JSON object",
            ));
        }
        ExpandRequest::deserialize(v).map_err(|e| shape_error(&e))
    }

    /// Checks values: exactly one non-empty selector; `before`/`after` only around exactly
    /// one anchor; `maxChars` in 1..=20,000.
    ///
    /// # Errors
    ///
    /// `index_out_of_bounds` for a negative index (never clamped), `invalid_request`
    /// otherwise.
    pub fn validate(self) -> Result<ValidExpand, Error> {
        if self.session.trim().is_empty() {
            return Err(invalid(
                ErrorCode::InvalidRequest,
                "`session` is empty",
                "session",
            ));
        }
        let mut selectors = Vec::new();
        if let Some(v) = &self.indices {
            let ix = v
                .iter()
                .map(|&i| index("indices", i))
                .collect::<Result<Vec<_>, _>>()?;
            selectors.push(("indices", Selector::Indices(ix), v.len()));
        }
        if let Some(v) = &self.entry_ids {
            selectors.push(("entryIds", Selector::EntryIds(v.clone()), v.len()));
        }
        if let Some(v) = &self.addresses {
            selectors.push(("addresses", Selector::Addresses(v.clone()), v.len()));
        }
        if let Some([a, b]) = self.range {
            let (a, b) = (index("range", a)?, index("range", b)?);
            if a > b {
                return Err(invalid(
                    ErrorCode::InvalidRequest,
                    format!("`range` [{a}, {b}] is inverted"),
                    "range",
                ));
            }
            selectors.push(("range", Selector::Range(a, b), b - a + 1));
        }
        if selectors.len() != 1 {
            return Err(Error::new(
                ErrorCode::InvalidRequest,
                "give exactly one of `indices`, `entryIds`, `addresses`, `range`",
            ));
        }
        let Some((field, selector, count)) = selectors.pop() else {
            return Err(Error::new(ErrorCode::InvalidRequest, "no selector"));
        };
        if count == 0 {
            return Err(invalid(
                ErrorCode::InvalidRequest,
                format!("`{field}` is empty"),
                field,
            ));
        }
        let context = self.before.unwrap_or(0) > 0 || self.after.unwrap_or(0) > 0;
        if context && (count != 1 || matches!(selector, Selector::Range(..))) {
            return Err(invalid(
                ErrorCode::InvalidRequest,
                "`before`/`after` need exactly one anchor (one index, entry id or address)",
                "before",
            ));
        }
        let max_chars = self.max_chars.unwrap_or(DEFAULT_MAX_CHARS);
        if !(1..=DEFAULT_MAX_CHARS).contains(&max_chars) {
            return Err(invalid(
                ErrorCode::InvalidRequest,
                format!("`maxChars` must be 1..={DEFAULT_MAX_CHARS}, not {max_chars}"),
                "maxChars",
            ));
        }
        Ok(ValidExpand {
            selector,
            before: self.before.unwrap_or(0) as usize,
            after: self.after.unwrap_or(0) as usize,
            max_chars: max_chars as usize,
            branches: self.branches.unwrap_or_default(),
            text_offset: self.text_offset.unwrap_or(0),
            request: self,
        })
    }
}

/// The target of a [`Call`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallRef {
    /// `recall`.
    Recall,
    /// `expand`.
    Expand,
}

impl CallRef {
    /// `recall` or `expand`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CallRef::Recall => "recall",
            CallRef::Expand => "expand",
        }
    }
}

/// A complete call (`follow` of a hit, `next` of a page) that the caller passes back
/// unchanged: `{"ref": "recall" | "expand", "args": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Call {
    /// `recall` or `expand`.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The request, exactly as it will be run.
    pub args: Args,
}

impl Call {
    /// A `recall` call.
    ///
    /// # Errors
    ///
    /// `invalid_request` if the request does not serialize (it always does).
    pub fn recall(req: &RecallRequest) -> Result<Call, Error> {
        Ok(Call {
            reference: CallRef::Recall.as_str().to_owned(),
            args: serde_json::to_value(req)
                .map_err(|e| shape_error(&e))?
                .into(),
        })
    }

    /// An `expand` call.
    ///
    /// # Errors
    ///
    /// `invalid_request` if the request does not serialize (it always does).
    pub fn expand(req: &ExpandRequest) -> Result<Call, Error> {
        Ok(Call {
            reference: CallRef::Expand.as_str().to_owned(),
            args: serde_json::to_value(req)
                .map_err(|e| shape_error(&e))?
                .into(),
        })
    }

    /// The `expand` call of one entry by index, with `args_bound`: what [`Call::expand`]
    /// gives for an [`ExpandRequest`] of `session`, `indices: [index]`, `sourceHash`,
    /// `lineageFingerprint` and `branches`, with [`json_value_len_bound`] of its args. The
    /// args keep their parts ([`Args`]) and their bound is counted from them: a page made both
    /// with the serializer and a walk over a map for each of its entry hits.
    pub(crate) fn expand_entry(
        session: &str,
        index: u32,
        source_hash: &str,
        lineage: &str,
        branches: Option<Branches>,
    ) -> (Call, usize) {
        // Each key and value adds its key's string, a colon and a comma.
        let entry = |key: &str, value_bound: usize| json_str_len(key) + value_bound + 2;
        let index_bound = 2 + json_number_len(&serde_json::Number::from(index)) + 1;
        let bound = 2
            + entry(EXPAND_SESSION_KEY, json_str_len(session))
            + entry(EXPAND_INDICES_KEY, index_bound)
            + entry(SOURCE_HASH_KEY, json_str_len(source_hash))
            + entry(LINEAGE_KEY, json_str_len(lineage))
            + branches.map_or(0, |b| entry(EXPAND_BRANCHES_KEY, json_str_len(b.as_str())));
        let call = Call {
            reference: CallRef::Expand.as_str().to_owned(),
            args: Args::expand(session, index, source_hash, lineage, branches),
        };
        (call, bound)
    }

    /// Parses a call from JSON.
    ///
    /// # Errors
    ///
    /// `invalid_call` unless it is `{"ref", "args"}` with a known `ref` and object `args`.
    pub fn from_json(v: &Value) -> Result<Call, Error> {
        let call = Call::deserialize(v)
            .map_err(|e| Error::new(ErrorCode::InvalidCall, format!("invalid call: {e}")))?;
        call.target()?;
        if !call.args.is_object() {
            return Err(Error::new(
                ErrorCode::InvalidCall,
                "a call's `args` is a JSON object",
            ));
        }
        Ok(call)
    }

    /// Which operation the call runs.
    ///
    /// # Errors
    ///
    /// `invalid_call` for an unknown `ref`.
    pub fn target(&self) -> Result<CallRef, Error> {
        match self.reference.as_str() {
            "recall" => Ok(CallRef::Recall),
            "expand" => Ok(CallRef::Expand),
            other => Err(Error::new(
                ErrorCode::InvalidCall,
                format!("unknown call ref `{other}` (expected `recall` or `expand`)"),
            )
            .with_details(json!({ "ref": other }))),
        }
    }

    /// The `recall` request of a `recall` call; errors of the arguments keep their codes.
    ///
    /// # Errors
    ///
    /// `invalid_call` for another `ref`, else those of [`RecallRequest::from_json`].
    pub fn recall_request(&self) -> Result<RecallRequest, Error> {
        match self.target()? {
            CallRef::Recall => RecallRequest::from_json(&self.args),
            CallRef::Expand => Err(Error::new(ErrorCode::InvalidCall, "not a recall call")),
        }
    }

    /// The `expand` request of an `expand` call.
    ///
    /// # Errors
    ///
    /// `invalid_call` for another `ref`, else those of [`ExpandRequest::from_json`].
    pub fn expand_request(&self) -> Result<ExpandRequest, Error> {
        match self.target()? {
            CallRef::Expand => ExpandRequest::from_json(&self.args),
            CallRef::Recall => Err(Error::new(ErrorCode::InvalidCall, "not an expand call")),
        }
    }
}

/// The args of a [`Call`]: a JSON object, read as a [`Value`] (it dereferences to one) and
/// serialized as one. The calls a page's hits follow keep their parts instead (the fields of
/// the request that every session hit's call shares, and each hit's strings), are written
/// from them, and become a map only when read as a value: a page of ten hits built ten
/// maps of four or five keys, each key a string of its own, that most callers only write
/// out. (The browser build makes the map at once: the parts' writer would take room its size
/// limit does not have.)
#[derive(Clone)]
pub struct Args {
    /// The map, once built.
    #[cfg(not(target_arch = "wasm32"))]
    value: OnceLock<Value>,
    /// What the map is built from.
    #[cfg(not(target_arch = "wasm32"))]
    parts: ArgParts,
    /// The map.
    #[cfg(target_arch = "wasm32")]
    value: Value,
}

#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone)]
enum ArgParts {
    /// The value is set.
    Value,
    /// A session hit's `recall` call ([`SessionRecalls::call`]).
    Session(SessionArgs),
    /// An entry hit's `expand` call ([`Call::expand_entry`]).
    Expand(ExpandArgs),
}

/// The parts of a session's `recall` args: `rest`, and the scope, source hash and lineage.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone)]
struct SessionArgs {
    rest: Arc<serde_json::Map<String, Value>>,
    strings: Three,
}

/// The parts of an entry's `expand` args: the session, source hash and lineage as
/// `strings`.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone)]
struct ExpandArgs {
    strings: Three,
    index: u32,
    branches: Option<Branches>,
}

/// A call's three strings in one buffer: one allocation for a hit's call, not three.
#[cfg(not(target_arch = "wasm32"))]
#[derive(Clone)]
struct Three {
    text: String,
    /// Where the second and the third start in `text`.
    cuts: [usize; 2],
}

#[cfg(not(target_arch = "wasm32"))]
impl Three {
    /// `first` (`prefix` and then `rest`), `second` and `third`.
    fn new(prefix: &str, rest: &str, second: &str, third: &str) -> Three {
        let mut text =
            String::with_capacity(prefix.len() + rest.len() + second.len() + third.len());
        text.push_str(prefix);
        text.push_str(rest);
        let a = text.len();
        text.push_str(second);
        let b = text.len();
        text.push_str(third);
        Three { text, cuts: [a, b] }
    }

    /// The three strings (each cut is where one pushed string ends, a character boundary).
    fn get(&self) -> [&str; 3] {
        let [a, b] = self.cuts;
        [
            self.text.get(..a).unwrap_or_default(),
            self.text.get(a..b).unwrap_or_default(),
            self.text.get(b..).unwrap_or_default(),
        ]
    }
}

impl Args {
    /// The args of a session's `recall` call: `rest` with the session's scope, source hash
    /// and lineage.
    fn session(
        rest: &Arc<serde_json::Map<String, Value>>,
        file: &str,
        source_hash: &str,
        lineage: &str,
    ) -> Args {
        #[cfg(not(target_arch = "wasm32"))]
        return Args {
            value: OnceLock::new(),
            parts: ArgParts::Session(SessionArgs {
                rest: Arc::clone(rest),
                strings: Three::new(SCOPE_PREFIX, file, source_hash, lineage),
            }),
        };
        #[cfg(target_arch = "wasm32")]
        {
            let mut scope = String::with_capacity(SCOPE_PREFIX.len() + file.len());
            scope.push_str(SCOPE_PREFIX);
            scope.push_str(file);
            Args {
                value: session_value(rest, scope, source_hash, lineage),
            }
        }
    }

    /// The args of an entry's `expand` call.
    fn expand(
        session: &str,
        index: u32,
        source_hash: &str,
        lineage: &str,
        branches: Option<Branches>,
    ) -> Args {
        #[cfg(not(target_arch = "wasm32"))]
        return Args {
            value: OnceLock::new(),
            parts: ArgParts::Expand(ExpandArgs {
                strings: Three::new("", session, source_hash, lineage),
                index,
                branches,
            }),
        };
        #[cfg(target_arch = "wasm32")]
        Args {
            value: expand_value(session, index, source_hash, lineage, branches),
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl ArgParts {
    /// The map the parts stand for.
    fn build(&self) -> Value {
        match self {
            ArgParts::Value => Value::Null,
            ArgParts::Session(p) => {
                let [scope, source_hash, lineage] = p.strings.get();
                session_value(&p.rest, scope.to_owned(), source_hash, lineage)
            }
            ArgParts::Expand(p) => {
                let [session, source_hash, lineage] = p.strings.get();
                expand_value(session, p.index, source_hash, lineage, p.branches)
            }
        }
    }
}

/// The args of a session's `recall` call as a map.
fn session_value(
    rest: &serde_json::Map<String, Value>,
    scope: String,
    source_hash: &str,
    lineage: &str,
) -> Value {
    let mut m = rest.clone();
    m.insert(SCOPE_KEY.to_owned(), Value::String(scope));
    m.insert(
        SOURCE_HASH_KEY.to_owned(),
        Value::String(source_hash.to_owned()),
    );
    m.insert(LINEAGE_KEY.to_owned(), Value::String(lineage.to_owned()));
    Value::Object(m)
}

/// The args of an entry's `expand` call as a map.
fn expand_value(
    session: &str,
    index: u32,
    source_hash: &str,
    lineage: &str,
    branches: Option<Branches>,
) -> Value {
    let mut m = serde_json::Map::new();
    let s = |v: &str| Value::String(v.to_owned());
    m.insert(EXPAND_SESSION_KEY.to_owned(), s(session));
    m.insert(EXPAND_INDICES_KEY.to_owned(), json!([index]));
    m.insert(SOURCE_HASH_KEY.to_owned(), s(source_hash));
    m.insert(LINEAGE_KEY.to_owned(), s(lineage));
    if let Some(b) = branches {
        m.insert(EXPAND_BRANCHES_KEY.to_owned(), s(b.as_str()));
    }
    Value::Object(m)
}

impl std::ops::Deref for Args {
    type Target = Value;

    fn deref(&self) -> &Value {
        #[cfg(not(target_arch = "wasm32"))]
        return self.value.get_or_init(|| self.parts.build());
        #[cfg(target_arch = "wasm32")]
        &self.value
    }
}

impl From<Value> for Args {
    fn from(value: Value) -> Args {
        #[cfg(not(target_arch = "wasm32"))]
        return Args {
            value: OnceLock::from(value),
            parts: ArgParts::Value,
        };
        #[cfg(target_arch = "wasm32")]
        Args { value }
    }
}

impl PartialEq for Args {
    fn eq(&self, other: &Args) -> bool {
        **self == **other
    }
}

impl PartialEq<Value> for Args {
    fn eq(&self, other: &Value) -> bool {
        **self == *other
    }
}

impl From<Args> for Value {
    /// The map the args stand for.
    fn from(args: Args) -> Value {
        #[cfg(not(target_arch = "wasm32"))]
        return args
            .value
            .into_inner()
            .unwrap_or_else(|| args.parts.build());
        #[cfg(target_arch = "wasm32")]
        args.value
    }
}

impl fmt::Debug for Args {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for Args {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[cfg(not(target_arch = "wasm32"))]
        if self.value.get().is_none() {
            return self.serialize_parts(serializer);
        }
        (**self).serialize(serializer)
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Args {
    /// The map of the parts, written as the map [`ArgParts::build`] makes would be: its keys
    /// in byte order.
    fn serialize_parts<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.parts {
            ArgParts::Value => (**self).serialize(serializer),
            ArgParts::Session(p) => p.serialize(serializer),
            ArgParts::Expand(p) => p.serialize(serializer),
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl SessionArgs {
    /// The map of [`session_value`], written in its key order.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        // The three in byte order, each written before the first key of `rest` above it
        // (`rest` holds none of them).
        let [scope, source_hash, lineage] = self.strings.get();
        let three = [
            (LINEAGE_KEY, lineage),
            (SCOPE_KEY, scope),
            (SOURCE_HASH_KEY, source_hash),
        ];
        let mut three = three.iter().peekable();
        let mut map = serializer.serialize_map(Some(self.rest.len() + 3))?;
        for (k, v) in self.rest.iter() {
            while let Some((tk, tv)) = three.next_if(|(tk, _)| *tk < k.as_str()) {
                map.serialize_entry(tk, tv)?;
            }
            map.serialize_entry(k, v)?;
        }
        for (tk, tv) in three {
            map.serialize_entry(tk, tv)?;
        }
        map.end()
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl ExpandArgs {
    /// The map of [`expand_value`], written in its key order.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let n = 4 + usize::from(self.branches.is_some());
        let mut map = serializer.serialize_map(Some(n))?;
        if let Some(b) = self.branches {
            map.serialize_entry(EXPAND_BRANCHES_KEY, b.as_str())?;
        }
        let [session, source_hash, lineage] = self.strings.get();
        map.serialize_entry(EXPAND_INDICES_KEY, &[self.index])?;
        map.serialize_entry(LINEAGE_KEY, lineage)?;
        map.serialize_entry(EXPAND_SESSION_KEY, session)?;
        map.serialize_entry(SOURCE_HASH_KEY, source_hash)?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Args {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Args, D::Error> {
        Value::deserialize(deserializer).map(Args::from)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Args {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        <Value as schemars::JsonSchema>::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Value as schemars::JsonSchema>::json_schema(generator)
    }
}

/// The `recall` calls that run one request over one session each (the `follow` of a session
/// hit): [`Call::recall`] of the request with its `scope`, `sourceHash` and
/// `lineageFingerprint` set to the session's, built from one serialization of the rest of the
/// request instead of one per hit.
#[derive(Debug, Clone)]
pub(crate) struct SessionRecalls {
    /// The request's fields but the three of a session's, shared by every call.
    rest: Arc<serde_json::Map<String, Value>>,
    /// What [`json_value_len_bound`] gives for `rest`.
    rest_bound: usize,
}

/// The keys a session's recall call sets.
const SESSION_KEYS: [&str; 3] = [SCOPE_KEY, SOURCE_HASH_KEY, LINEAGE_KEY];
const SCOPE_KEY: &str = "scope";
const SOURCE_HASH_KEY: &str = "sourceHash";
const LINEAGE_KEY: &str = "lineageFingerprint";
/// The keys of an entry's expand call besides `sourceHash` and `lineageFingerprint`.
const EXPAND_SESSION_KEY: &str = "session";
const EXPAND_INDICES_KEY: &str = "indices";
const EXPAND_BRANCHES_KEY: &str = "branches";

impl SessionRecalls {
    /// The calls of `req` (its own scope and hashes are replaced by each session's). The
    /// request is taken whole: callers narrow a clone of theirs, and one clone is enough.
    ///
    /// # Errors
    ///
    /// `invalid_request` if the request does not serialize (it always does).
    pub(crate) fn new(mut rest: RecallRequest) -> Result<SessionRecalls, Error> {
        rest.scope = None;
        rest.source_hash = None;
        rest.lineage_fingerprint = None;
        match serde_json::to_value(&rest).map_err(|e| shape_error(&e))? {
            Value::Object(rest) => {
                // The three are `None`, which the request does not write.
                debug_assert!(SESSION_KEYS.iter().all(|k| !rest.contains_key(*k)));
                let rest_bound = json_value_len_bound_of_map(&rest);
                Ok(SessionRecalls {
                    rest: Arc::new(rest),
                    rest_bound,
                })
            }
            _ => Err(Error::new(
                ErrorCode::InvalidRequest,
                "invalid request: it does not serialize as an object",
            )),
        }
    }

    /// The call over the session of `file` at `source_hash` and `lineage`.
    pub(crate) fn call(&self, file: &str, source_hash: &str, lineage: &str) -> Call {
        Call {
            reference: CallRef::Recall.as_str().to_owned(),
            args: Args::session(&self.rest, file, source_hash, lineage),
        }
    }

    /// At least what [`json_value_len_bound`] gives for the args of [`SessionRecalls::call`]
    /// with the same session, without building them or reading the three strings: each byte
    /// counted as six ([`json_str_len_coarse`]; [`session_args_len`] with [`json_str_len`]
    /// gives the bound itself).
    pub(crate) fn args_coarse(&self, file: &str, source_hash: &str, lineage: &str) -> usize {
        session_args_len(
            self.rest_bound,
            json_str_len_coarse,
            [file, source_hash, lineage],
        )
    }

    /// What [`json_value_len_bound`] gives for the args without the three of a session.
    pub(crate) fn rest_bound(&self) -> usize {
        self.rest_bound
    }
}

/// The length of a session's `recall` args, `rest` and the session's file, source hash and
/// lineage fingerprint, each string's counted by `len`.
pub(crate) fn session_args_len(rest: usize, len: fn(&str) -> usize, parts: [&str; 3]) -> usize {
    // Each key and value adds its key's string, a colon and a comma.
    let keys: usize = SESSION_KEYS.iter().map(|k| json_str_len(k) + 2).sum();
    let [file, source_hash, lineage] = parts;
    rest + keys + len(file) + SCOPE_PREFIX.len() + len(source_hash) + len(lineage)
}

/// How an explicit scope starts ([`Scope::Explicit`] as a string).
const SCOPE_PREFIX: &str = "session:";

/// Stable coverage reason codes produced by the query engine (index and source readers add
/// their own: `max_entry_chars`, `duplicate_entry_id`, ...).
pub mod reason {
    /// More than 50,000 filtered hot entries.
    pub const CANDIDATE_ENTRY_BUDGET: &str = "candidate_entry_budget";
    /// More than 10,000 cold digests.
    pub const CANDIDATE_DIGEST_BUDGET: &str = "candidate_digest_budget";
    /// More than 10,000 ranked items.
    pub const CANDIDATE_ITEM_BUDGET: &str = "candidate_item_budget";
    /// `queryMatch: all` on a cold session: the vocabulary cannot prove one entry has all terms.
    pub const COLD_ALL_REQUIRES_HYDRATION: &str = "cold_all_requires_hydration";
    /// A phrase on a cold session: the vocabulary cannot prove adjacency (or, for a phrase
    /// of separators alone, holds nothing to look up).
    pub const COLD_PHRASE_REQUIRES_HYDRATION: &str = "cold_phrase_requires_hydration";
    /// A query plus structural filters on a cold session: not provably the same entry. Also
    /// an `outcome` filter without a query together with `role: tool` or `entryRange`: a
    /// result whose call is in the session defers to the call, which a digest cannot pair;
    /// and a time range over a cold session partly inside it, or inside it with records
    /// without a timestamp (which the range leaves out).
    pub const COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION: &str =
        "cold_structural_filter_requires_hydration";
    /// A regex that can match across token boundaries, or match empty text: cold
    /// vocabularies cannot see such a match.
    pub const COLD_REGEX_SPANS_TOKENS: &str = "cold_regex_spans_tokens";
    /// A regex with a start or end anchor on a cold session: a term matching it anchored to
    /// the term does not prove a match anchored to the text.
    pub const COLD_REGEX_ANCHOR_REQUIRES_HYDRATION: &str = "cold_regex_anchor_requires_hydration";
    /// The regex haystack byte budget ran out.
    pub const REGEX_HAYSTACK_BUDGET: &str = "regex_haystack_budget";
    /// A fuzzy term had more expansions than the cap.
    pub const FUZZY_EXPANSION_LIMIT: &str = "fuzzy_expansion_limit";
    /// A phrase or regex query met an entry whose stored text is cut at `maxEntryChars` and
    /// did not match its stored part: a match past the cut is not seen (every token is posted,
    /// so literal and fuzzy queries never give this).
    pub const MAX_ENTRY_CHARS: &str = "max_entry_chars";
    /// `in` on a cold session: its vocabulary does not say which field group holds a term.
    pub const COLD_FIELD_GROUP_REQUIRES_HYDRATION: &str = "cold_field_group_requires_hydration";
}

/// Whether an empty result is authoritative, and why not.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Coverage {
    /// Every eligible session was searched completely: an empty result is authoritative.
    pub complete: bool,
    /// Sessions whose index was searched.
    pub indexed_sessions: u64,
    /// Sessions the scope selects.
    pub eligible_sessions: u64,
    /// Sessions whose index is older than their source.
    pub stale_sessions: u64,
    /// Sessions whose index or search is incomplete.
    pub incomplete_sessions: u64,
    /// Stable reason codes, sorted, unique.
    pub reasons: Vec<String>,
    /// An error that cut the search short.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Error>,
}

impl Coverage {
    /// Complete coverage of no sessions yet.
    #[must_use]
    pub fn complete() -> Coverage {
        Coverage {
            complete: true,
            ..Coverage::default()
        }
    }

    /// Adds a reason (kept sorted and unique) and marks coverage incomplete.
    pub fn add_reason(&mut self, reason: &str) {
        self.complete = false;
        if let Err(i) = self.reasons.binary_search_by(|r| r.as_str().cmp(reason)) {
            self.reasons.insert(i, reason.to_owned());
        }
    }

    /// Sets the error and marks coverage incomplete.
    pub fn set_error(&mut self, error: Error) {
        self.complete = false;
        self.error = Some(error);
    }

    /// Adds another coverage's counts and reasons.
    pub fn merge(&mut self, other: &Coverage) {
        self.complete &= other.complete;
        self.indexed_sessions += other.indexed_sessions;
        self.eligible_sessions += other.eligible_sessions;
        self.stale_sessions += other.stale_sessions;
        self.incomplete_sessions += other.incomplete_sessions;
        for r in &other.reasons {
            self.add_reason(r);
        }
        if self.error.is_none() {
            self.error.clone_from(&other.error);
        }
    }
}

/// The kind of a hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HitKind {
    /// An exact entry (hot, or a hydrated session).
    Entry,
    /// A cold session candidate; its `follow` hydrates the session.
    Session,
}

/// A structural entry of a cold session that matched the filters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StructuralEntry {
    /// The entry's index.
    pub index: u64,
    /// The entry id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_id: Option<String>,
    /// The operation address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_address: Option<String>,
}

/// One ranked result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Hit {
    /// `entry` or `session`.
    pub kind: HitKind,
    /// The session id.
    pub session_id: String,
    /// The session's source file.
    pub file: String,
    /// The entry id (entry hits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_id: Option<String>,
    /// The entry index (entry hits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// The operation address of a tool call record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation_address: Option<String>,
    /// The role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The outcome of a tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// The entry's timestamp, or the session's last timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// The ranking score.
    pub score: f64,
    /// A bounded excerpt with highlights (entry hits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet: Option<Snippet>,
    /// Why an entry hit has no snippet: its matches lie past the stored `maxEntryChars` cut and
    /// its source could not be re-read as indexed (`stale_pointer`: the source changed or is
    /// gone; `source_unreadable`). Absent whenever there is a snippet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snippet_unavailable: Option<String>,
    /// Query terms found in a cold session's vocabulary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched_terms: Vec<String>,
    /// Structural entries of a cold session that matched the filters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched_structural_entries: Vec<StructuralEntry>,
    /// The field groups whose text matched the query (entry hits with a query).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched_in: Vec<FieldGroup>,
    /// The one call to pass back unchanged: `expand` for entries, `recall` for sessions.
    pub follow: Call,
}

impl Hit {
    /// At least the length of this hit as compact JSON, and close to it: every string is
    /// counted exactly (quotes, escapes), every key as if written, every number at its
    /// widest. A page counts its hits by this bound, once the coarse one
    /// ([`Hit::json_len_coarse_with`]) no longer shows it fitting, while the bounds show it
    /// fits ([`crate::engine::MAX_PAGE_CHARS`]), which costs a pass over the strings instead
    /// of serializing each hit.
    #[must_use]
    pub(crate) fn json_len_bound(&self) -> usize {
        self.json_len_bound_with(json_value_len_bound(&self.follow.args))
    }

    /// [`Hit::json_len_bound`] with the bound of its call's args given (from their parts:
    /// [`session_args_len`], [`Call::expand_entry`]).
    #[must_use]
    #[inline(never)]
    pub(crate) fn json_len_bound_with(&self, args_bound: usize) -> usize {
        self.json_len_by(json_str_len, args_bound)
    }

    /// [`Hit::json_len_bound_with`] without reading a string: each byte counted as six
    /// ([`json_str_len_coarse`]). A page counts its first hits so, while that shows it fits.
    #[must_use]
    pub(crate) fn json_len_coarse_with(&self, args_bound: usize) -> usize {
        self.json_len_by(json_str_len_coarse, args_bound)
    }

    /// The bound with each string counted by `s`.
    #[inline(always)]
    fn json_len_by(&self, s: impl Fn(&str) -> usize, args_bound: usize) -> usize {
        // The keys of a hit (218 bytes with quotes, colon and comma), of its snippet (37)
        // and of its call (17), braces included.
        const KEYS: usize = 512;
        // A `u64` or `usize`; an `f64` as serde_json writes it (shortest round trip).
        const INT: usize = 20;
        const FLOAT: usize = 24;
        let s = &s;
        let opt = |o: &Option<String>| o.as_deref().map_or(0, s);
        let snippet = self.snippet.as_ref().map_or(0, |sn| {
            s(&sn.text) + "false".len() + sn.highlights.len() * (2 * INT + 4)
        });
        let structural: usize = self
            .matched_structural_entries
            .iter()
            .map(|e| 64 + INT + opt(&e.entry_id) + opt(&e.operation_address))
            .sum();
        KEYS + s("session")
            + s(&self.session_id)
            + s(&self.file)
            + opt(&self.entry_id)
            + INT
            + opt(&self.operation_address)
            + opt(&self.role)
            + opt(&self.tool)
            + s("succeeded")
            + opt(&self.timestamp)
            + FLOAT
            + snippet
            + opt(&self.snippet_unavailable)
            + 2
            + self.matched_terms.iter().map(|t| s(t) + 1).sum::<usize>()
            + 2
            + structural
            + 2
            + self.matched_in.len() * (s("tool_output") + 1)
            + s(&self.follow.reference)
            + args_bound
    }
}

/// The length of `s` as a JSON string: its quotes, and each byte as serde_json writes it
/// (`\"`, `\\` and the short control escapes take two bytes, other control characters six).
pub(crate) fn json_str_len(s: &str) -> usize {
    /// What escaping `b` adds, without a branch: five for a control character, one for a
    /// short escape (four less than five for the short control escapes).
    fn extra(b: u8) -> u16 {
        let control = u16::from(b < 0x20);
        let short_control = u16::from(matches!(b, b'\x08' | b'\x0c' | b'\n' | b'\r' | b'\t'));
        let quote = u16::from(b == b'"' || b == b'\\');
        5 * control - 4 * short_control + quote
    }
    /// Bytes summed in one `u16`: each adds at most five.
    const BLOCK: usize = 4096;
    let bytes = s.as_bytes();
    // Most strings need no escape: one pass that the compiler runs many bytes at a time
    // tells. A string that needs some is summed many bytes at a time too (no branch per
    // byte), a block at a time so that the sum fits its lanes.
    let marked = bytes.iter().fold(0u8, |any, &b| {
        any | u8::from(b < 0x20 || b == b'"' || b == b'\\')
    });
    if marked == 0 {
        return 2 + bytes.len();
    }
    let escapes: usize = bytes
        .chunks(BLOCK)
        .map(|c| usize::from(c.iter().fold(0u16, |n, &b| n.wrapping_add(extra(b)))))
        .sum();
    2 + bytes.len() + escapes
}

/// At least [`json_str_len`] of `s`, without reading it: its quotes and six bytes for each of
/// its bytes (the longest escape, `\u001f`).
pub(crate) fn json_str_len_coarse(s: &str) -> usize {
    s.len().saturating_mul(6).saturating_add(2)
}

/// At least the length of `v` as compact JSON: strings exact, numbers exact.
fn json_value_len_bound(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(n) => json_number_len(n),
        Value::String(s) => json_str_len(s),
        Value::Array(a) => 2 + a.iter().map(|x| json_value_len_bound(x) + 1).sum::<usize>(),
        Value::Object(m) => json_value_len_bound_of_map(m),
    }
}

/// [`json_value_len_bound`] of an object.
fn json_value_len_bound_of_map(m: &serde_json::Map<String, Value>) -> usize {
    2 + m
        .iter()
        .map(|(k, x)| json_str_len(k) + json_value_len_bound(x) + 2)
        .sum::<usize>()
}

/// The length of `n` as serde_json writes it: an integer's digits (and sign) counted, a
/// float written.
fn json_number_len(n: &serde_json::Number) -> usize {
    fn digits(mut u: u64) -> usize {
        let mut d = 1;
        while u >= 10 {
            u /= 10;
            d += 1;
        }
        d
    }
    if let Some(u) = n.as_u64() {
        digits(u)
    } else if let Some(i) = n.as_i64() {
        1 + digits(i.unsigned_abs())
    } else {
        json_len(n)
    }
}

/// The length of `v` as compact JSON (0 if it does not serialize), counted as it is written
/// rather than built as a string.
pub(crate) fn json_len<T: Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    match serde_json::to_writer(&mut n, v) {
        Ok(()) => n.0,
        Err(_) => 0,
    }
}

/// One page of a recall.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Page {
    /// Retained hits before paging (entry hits plus session candidates).
    pub total: u64,
    /// This page's hits.
    pub hits: Vec<Hit>,
    /// The call for the following page, or null.
    pub next: Option<Call>,
    /// Coverage of the search.
    pub coverage: Coverage,
    /// The error of a failed call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Error>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A few thousand strings of every ASCII byte (quotes, backslashes, every control
    /// character), non-ASCII letters, U+2028 and an emoji, from a fixed seed.
    fn strings() -> Vec<String> {
        let pool: Vec<char> = (0u8..0x80)
            .map(char::from)
            .chain(['\u{e9}', '\u{df}', '\u{2028}', '\u{1f600}', 'a', 'b', ' '])
            .collect();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut out: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        for _ in 0..3000 {
            let n = (next() % 400) as usize;
            out.push(
                (0..n)
                    .map(|_| pool[(next() % pool.len() as u64) as usize])
                    .collect(),
            );
        }
        out
    }

    #[test]
    fn json_string_lengths_are_exact() {
        // Longer than a block of the sum, of the longest escape and of every kind.
        let long = [
            "\u{1}".repeat(13_000),
            "\\\"\n\u{1f}".repeat(5_000),
            format!("{}\u{7}", "\t".repeat(4_095)),
        ];
        for s in strings().into_iter().chain(long) {
            assert_eq!(
                json_str_len(&s),
                serde_json::to_string(&s).unwrap().len(),
                "{s:?}"
            );
        }
    }

    /// The bound is never below the hit's JSON, whichever fields are set, however long and
    /// escape-heavy its strings and however wide its numbers.
    #[test]
    fn hit_length_bounds_hold() {
        let strings = strings();
        let mut k = 0usize;
        let mut pick = || {
            k += 1;
            strings[(k * 7919) % strings.len()].clone()
        };
        for round in 0..600 {
            let some = |bit: usize| round >> (bit % 9) & 1 == 1;
            let follow = Call {
                reference: pick(),
                args: serde_json::json!({
                    pick(): pick(),
                    "n": [u64::MAX, i64::MIN, -1.234_567_890_123_456_7e-300, 0.1],
                    "nested": {pick(): [null, true, false, pick()]},
                })
                .into(),
            };
            let hit = Hit {
                kind: if some(0) {
                    HitKind::Session
                } else {
                    HitKind::Entry
                },
                session_id: pick(),
                file: pick(),
                entry_id: some(1).then(&mut pick),
                index: some(2).then_some(u64::MAX),
                operation_address: some(3).then(&mut pick),
                role: some(4).then(&mut pick),
                tool: some(5).then(&mut pick),
                outcome: some(6).then_some(Outcome::TimedOut),
                timestamp: some(7).then(&mut pick),
                score: if some(8) {
                    -1.234_567_890_123_456_7e-300
                } else {
                    f64::MAX
                },
                snippet: some(2).then(|| crate::snippet::Snippet {
                    text: pick(),
                    truncated: some(3),
                    highlights: vec![[usize::MAX, usize::MAX]; round % 5],
                }),
                snippet_unavailable: some(4).then(&mut pick),
                matched_terms: (0..round % 4).map(|_| pick()).collect(),
                matched_structural_entries: (0..round % 3)
                    .map(|_| StructuralEntry {
                        index: u64::MAX,
                        entry_id: Some(pick()),
                        operation_address: some(5).then(&mut pick),
                    })
                    .collect(),
                matched_in: vec![FieldGroup::ToolOutput; round % 5],
                follow,
            };
            let exact = serde_json::to_string(&hit).unwrap().len();
            assert_eq!(json_len(&hit), exact);
            assert!(
                hit.json_len_bound() >= exact,
                "{} < {exact}",
                hit.json_len_bound()
            );
        }
    }

    fn recall(v: Value) -> Result<ValidRecall, Error> {
        RecallRequest::from_json(&v)?.validate()
    }

    fn code(r: Result<impl std::fmt::Debug, Error>) -> ErrorCode {
        r.unwrap_err().code
    }

    #[test]
    fn recall_defaults() {
        let r = recall(json!({"query": " timeout "})).unwrap();
        assert_eq!(r.query.as_deref(), Some("timeout"));
        assert_eq!(r.mode, QueryMode::Literal);
        assert_eq!(r.matching, QueryMatch::Any);
        assert_eq!(r.scope, Scope::Project);
        assert_eq!(r.branches, Branches::Active);
        assert_eq!(r.page_size, DEFAULT_PAGE_SIZE);
        assert_eq!(r.offset, 0);
        assert!(!r.operations_requested);
        let r = recall(json!({})).unwrap();
        assert!(r.query.is_none());
    }

    #[test]
    fn recall_every_field() {
        let v = json!({
            "query": "a b", "queryMode": "fuzzy", "queryMatch": "all",
            "scope": "session:abc-123", "cwd": "/w", "branches": "all",
            "role": "assistant", "tool": "bash", "ref": "omp.grep", "provider": "omp",
            "action": "grep", "outcome": "timed_out", "since": "2025-01-01",
            "until": "2025-01-02T03:04:05Z", "entryRange": [2, 5], "pageSize": 20,
            "offset": 40, "sourceHash": "ab", "lineageFingerprint": "cd"
        });
        let req = RecallRequest::from_json(&v).unwrap();
        assert_eq!(serde_json::to_value(&req).unwrap(), v, "round trip");
        let r = req.validate().unwrap();
        assert_eq!(r.mode, QueryMode::Fuzzy);
        assert_eq!(r.matching, QueryMatch::All);
        assert_eq!(r.scope, Scope::Explicit("abc-123".into()));
        assert_eq!(r.entry_range, Some((2, 5)));
        assert_eq!(r.since_ms, Some(1_735_689_600_000));
        assert_eq!(r.until_ms, Some(1_735_787_045_000));
        assert!(r.operations_requested);
        assert_eq!(r.request.outcome, Some(Outcome::TimedOut));
    }

    #[test]
    fn recall_errors() {
        assert_eq!(
            code(recall(json!({"queryMode": "semantic", "query": "x"}))),
            ErrorCode::InvalidQueryMode
        );
        assert_eq!(
            code(recall(json!({"queryMode": "regex"}))),
            ErrorCode::InvalidQueryMode
        );
        assert_eq!(
            code(recall(json!({"scope": "everything"}))),
            ErrorCode::InvalidScope
        );
        assert_eq!(
            code(recall(json!({"scope": "session:"}))),
            ErrorCode::InvalidScope
        );
        assert_eq!(code(recall(json!({"scope": 3}))), ErrorCode::InvalidScope);
        assert_eq!(code(recall(json!({"bogus": 1}))), ErrorCode::InvalidRequest);
        assert_eq!(
            code(recall(json!({"outcome": "exploded"}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(code(recall(json!({"query": 5}))), ErrorCode::InvalidRequest);
        assert_eq!(code(recall(json!([1]))), ErrorCode::InvalidRequest);
        assert_eq!(
            code(recall(json!({"since": "yesterday"}))),
            ErrorCode::InvalidTime
        );
        assert_eq!(
            code(recall(
                json!({"since": "2025-02-01", "until": "2025-01-01"})
            )),
            ErrorCode::InvalidTime
        );
        assert_eq!(
            code(recall(json!({"scope": "session", "entryRange": [-1, 3]}))),
            ErrorCode::IndexOutOfBounds
        );
        assert_eq!(
            code(recall(json!({"scope": "session", "entryRange": [4, 3]}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(recall(json!({"scope": "project", "entryRange": [1, 3]}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(recall(json!({"pageSize": 0}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(recall(json!({"pageSize": 101}))),
            ErrorCode::InvalidRequest
        );
        let e = recall(json!({"since": "nope"})).unwrap_err();
        assert_eq!(e.details.unwrap()["field"], "since");
    }

    #[test]
    fn until_date_covers_the_day() {
        let r = recall(json!({"since": "2025-01-01", "until": "2025-01-01"})).unwrap();
        assert_eq!(r.until_ms.unwrap() - r.since_ms.unwrap(), 86_399_999);
    }

    #[test]
    fn expand_validation() {
        let ok = |v: Value| ExpandRequest::from_json(&v).and_then(ExpandRequest::validate);
        let e = ok(json!({"session": "s", "indices": [3], "before": 2, "after": 1})).unwrap();
        assert_eq!(e.selector, Selector::Indices(vec![3]));
        assert_eq!((e.before, e.after, e.max_chars), (2, 1, 20_000));
        let e = ok(json!({"session": "s", "operationAddresses": ["e1/0"]})).unwrap();
        assert_eq!(e.selector, Selector::Addresses(vec!["e1/0".into()]));
        let e = ok(
            json!({"session": "s", "range": [0, 4], "maxChars": 100, "textOffset": 7,
                          "sourceHash": "h", "lineageFingerprint": "l", "branches": "all"}),
        )
        .unwrap();
        assert_eq!(e.selector, Selector::Range(0, 4));
        assert_eq!(e.text_offset, 7);
        assert_eq!(e.branches, Branches::All);
        assert_eq!(code(ok(json!({"session": "s"}))), ErrorCode::InvalidRequest);
        assert_eq!(
            code(ok(json!({"session": "", "indices": [1]}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(ok(
                json!({"session": "s", "indices": [1], "entryIds": ["a"]})
            )),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(ok(json!({"session": "s", "indices": []}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(ok(json!({"session": "s", "indices": [-1]}))),
            ErrorCode::IndexOutOfBounds
        );
        assert_eq!(
            code(ok(json!({"session": "s", "range": [-2, 1]}))),
            ErrorCode::IndexOutOfBounds
        );
        assert_eq!(
            code(ok(json!({"session": "s", "range": [3, 1]}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(ok(json!({"session": "s", "indices": [1, 2], "before": 1}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(ok(json!({"session": "s", "range": [1, 1], "after": 1}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(ok(
                json!({"session": "s", "indices": [1], "maxChars": 20001})
            )),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(ok(json!({"session": "s", "indices": [1], "maxChars": 0}))),
            ErrorCode::InvalidRequest
        );
        assert_eq!(
            code(ok(json!({"session": "s", "indices": [1], "x": 0}))),
            ErrorCode::InvalidRequest
        );
    }

    /// A session's recall call built from the one serialization of its request is the call
    /// [`Call::recall`] gives for the request with that session's scope and hashes, whatever
    /// fields the request sets (its own scope and hashes replaced).
    #[test]
    fn session_recalls_are_the_calls_of_the_narrowed_request() {
        let every: RecallRequest = serde_json::from_value(json!({
            "query": "flaky timeout", "queryMode": "phrase", "queryMatch": "all",
            "scope": "global", "cwd": "/w", "branches": "all", "role": "tool",
            "tool": "bash", "ref": "r", "provider": "p", "action": "a", "outcome": "failed",
            "since": "2026-01-01", "until": "2026-12-01", "entryRange": [1, 2],
            "pageSize": 7, "offset": 20, "sourceHash": "old", "lineageFingerprint": "old",
            "in": ["text", "tool_output"]
        }))
        .unwrap();
        for req in [every, RecallRequest::default()] {
            let calls = SessionRecalls::new(req.clone()).unwrap();
            for (file, hash, lineage) in [("/s/a b.jsonl", "00ff", "11"), ("c\"\n", "", "x")] {
                let want = Call::recall(&RecallRequest {
                    scope: Some(Scope::Explicit(file.to_owned())),
                    source_hash: Some(hash.to_owned()),
                    lineage_fingerprint: Some(lineage.to_owned()),
                    ..req.clone()
                })
                .unwrap();
                assert_eq!(calls.call(file, hash, lineage), want);
                let bound = json_value_len_bound(&want.args);
                assert_eq!(
                    session_args_len(calls.rest_bound(), json_str_len, [file, hash, lineage]),
                    bound
                );
                assert!(calls.args_coarse(file, hash, lineage) >= bound);
                // Written from its parts (the request's keys and the three in byte order), as
                // the map would be.
                let call = calls.call(file, hash, lineage);
                assert_eq!(
                    serde_json::to_string(&call).unwrap(),
                    serde_json::to_string(&want).unwrap()
                );
                assert!(call.args.value.get().is_none());
                // Compared with and turned into the map, unbuilt as it is.
                assert!(call.args == *want.args);
                assert_eq!(Value::from(call.args), Value::from(want.args.clone()));
            }
        }
    }

    /// A number's length is counted as serde_json writes it.
    #[test]
    fn number_lengths_are_as_written() {
        let mut ns: Vec<Value> = vec![json!(0), json!(-0.0), json!(1.5), json!(-2.25e-300)];
        for k in 0..20u32 {
            let p = 10u64.pow(k);
            ns.extend([json!(p - 1), json!(p)]);
            for neg in [1 - i128::from(p), -i128::from(p)] {
                if let Ok(i) = i64::try_from(neg) {
                    ns.push(json!(i));
                }
            }
        }
        ns.extend([
            json!(u64::MAX),
            json!(i64::MIN),
            json!(i64::MAX),
            json!(f64::MAX),
        ]);
        for n in ns {
            let Value::Number(n) = n else { unreachable!() };
            assert_eq!(json_number_len(&n), n.to_string().len(), "{n}");
        }
    }

    #[test]
    fn calls_round_trip_unchanged() {
        let text = r#"{"ref":"recall","args":{"scope":"session:/tmp/a b.jsonl","query":"x","sourceHash":"00ff","lineageFingerprint":"11","offset":10,"unknownLater":{"k":[1,2]}}}"#;
        let v: Value = serde_json::from_str(text).unwrap();
        let call = Call::from_json(&v).unwrap();
        assert_eq!(serde_json::to_value(&call).unwrap(), v);
        let again: Value = serde_json::from_str(&serde_json::to_string(&call).unwrap()).unwrap();
        assert_eq!(again, v);
        assert_eq!(call.target().unwrap(), CallRef::Recall);
        // The args carry an unknown field: running the call refuses it, the call itself
        // still round-trips untouched.
        assert_eq!(code(call.recall_request()), ErrorCode::InvalidRequest);
        assert_eq!(code(call.expand_request()), ErrorCode::InvalidCall);

        let req = ExpandRequest {
            session: "s".into(),
            indices: Some(vec![4]),
            source_hash: Some("h".into()),
            ..ExpandRequest::default()
        };
        let call = Call::expand(&req).unwrap();
        let back: Call = serde_json::from_str(&serde_json::to_string(&call).unwrap()).unwrap();
        assert_eq!(back.expand_request().unwrap(), req);
        assert_eq!(
            serde_json::to_value(&call).unwrap(),
            json!({"ref": "expand", "args": {"session": "s", "indices": [4], "sourceHash": "h"}})
        );
        let r = RecallRequest {
            query: Some("q".into()),
            ..RecallRequest::default()
        };
        assert_eq!(Call::recall(&r).unwrap().recall_request().unwrap(), r);
    }

    #[test]
    fn bad_calls() {
        assert_eq!(
            code(Call::from_json(&json!({"ref": "walk", "args": {}}))),
            ErrorCode::InvalidCall
        );
        assert_eq!(
            code(Call::from_json(&json!({"ref": "recall"}))),
            ErrorCode::InvalidCall
        );
        assert_eq!(
            code(Call::from_json(&json!({"ref": "recall", "args": 1}))),
            ErrorCode::InvalidCall
        );
        assert_eq!(
            code(Call::from_json(
                &json!({"ref": "recall", "args": {}, "x": 1})
            )),
            ErrorCode::InvalidCall
        );
        assert_eq!(
            code(
                Call::from_json(&json!({"ref": "recall", "args": {"scope": "nowhere"}}))
                    .unwrap()
                    .recall_request()
            ),
            ErrorCode::InvalidScope
        );
    }

    #[test]
    fn coverage_reasons_and_merge() {
        let mut c = Coverage::complete();
        assert!(c.complete);
        c.add_reason(reason::CANDIDATE_ITEM_BUDGET);
        c.add_reason(reason::COLD_ALL_REQUIRES_HYDRATION);
        c.add_reason(reason::CANDIDATE_ITEM_BUDGET);
        assert!(!c.complete);
        assert_eq!(
            c.reasons,
            ["candidate_item_budget", "cold_all_requires_hydration"]
        );
        let mut total = Coverage::complete();
        total.indexed_sessions = 1;
        total.merge(&c);
        assert!(!total.complete);
        assert_eq!(total.reasons.len(), 2);
        let mut ok = Coverage::complete();
        ok.merge(&Coverage::complete());
        assert!(ok.complete);
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            v,
            json!({"complete": false, "indexedSessions": 0, "eligibleSessions": 0,
                   "staleSessions": 0, "incompleteSessions": 0,
                   "reasons": ["candidate_item_budget", "cold_all_requires_hydration"]})
        );
        c.set_error(Error::new(ErrorCode::RegexTooLarge, "big"));
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            v["error"],
            json!({"code": "regex_too_large", "message": "big"})
        );
        assert_eq!(serde_json::from_value::<Coverage>(v).unwrap(), c);
    }

    #[test]
    fn page_and_hit_json_names() {
        let follow = Call::expand(&ExpandRequest {
            session: "/s.jsonl".into(),
            indices: Some(vec![7]),
            ..ExpandRequest::default()
        })
        .unwrap();
        let hit = Hit {
            kind: HitKind::Entry,
            session_id: "sid".into(),
            file: "/s.jsonl".into(),
            entry_id: Some("e7".into()),
            index: Some(7),
            operation_address: Some("e6/0".into()),
            role: Some("tool".into()),
            tool: Some("bash".into()),
            outcome: Some(Outcome::Failed),
            timestamp: Some("2025-01-01T00:00:00.000Z".into()),
            score: 1.5,
            snippet: Some(Snippet {
                text: "a timeout".into(),
                truncated: false,
                highlights: vec![[2, 9]],
            }),
            snippet_unavailable: None,
            matched_terms: vec![],
            matched_structural_entries: vec![],
            matched_in: vec![FieldGroup::ToolOutput],
            follow,
        };
        let cold = Hit {
            kind: HitKind::Session,
            entry_id: None,
            index: None,
            operation_address: None,
            role: None,
            tool: None,
            outcome: None,
            snippet: None,
            snippet_unavailable: None,
            matched_terms: vec!["timeout".into()],
            matched_structural_entries: vec![StructuralEntry {
                index: 3,
                entry_id: Some("e3".into()),
                operation_address: None,
            }],
            follow: Call::recall(&RecallRequest {
                scope: Some(Scope::Explicit("/c.jsonl".into())),
                ..RecallRequest::default()
            })
            .unwrap(),
            ..hit.clone()
        };
        let page = Page {
            total: 2,
            hits: vec![hit, cold],
            next: None,
            coverage: Coverage::complete(),
            error: None,
        };
        let v = serde_json::to_value(&page).unwrap();
        assert_eq!(v["next"], Value::Null);
        assert!(v.get("error").is_none());
        let h = &v["hits"][0];
        for k in [
            "kind",
            "sessionId",
            "file",
            "entryId",
            "index",
            "operationAddress",
            "role",
            "tool",
            "outcome",
            "timestamp",
            "score",
            "snippet",
            "follow",
        ] {
            assert!(h.get(k).is_some(), "{k}");
        }
        assert_eq!(h["kind"], "entry");
        assert_eq!(h["outcome"], "failed");
        assert_eq!(h["matchedIn"], json!(["tool_output"]));
        let c = &v["hits"][1];
        assert_eq!(c["kind"], "session");
        assert_eq!(c["matchedTerms"], json!(["timeout"]));
        assert_eq!(
            c["matchedStructuralEntries"],
            json!([{"index": 3, "entryId": "e3"}])
        );
        assert_eq!(c["follow"]["args"]["scope"], "session:/c.jsonl");
        assert_eq!(serde_json::from_value::<Page>(v).unwrap(), page);
    }
    #[test]
    fn field_groups_parse_and_refuse_unknown_names() {
        let r = recall(json!({"query": "x", "in": ["tool_output", "thinking"]})).unwrap();
        assert_eq!(
            r.request.in_groups,
            Some(vec![FieldGroup::ToolOutput, FieldGroup::Thinking])
        );
        let back = serde_json::to_value(&r.request).unwrap();
        assert_eq!(back["in"], json!(["tool_output", "thinking"]));
        for bad in [
            json!({"in": ["prose"]}),
            json!({"in": "text"}),
            json!({"in": [1]}),
            json!({"in": []}),
        ] {
            let e = recall(bad.clone()).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidRequest, "{bad}");
            assert_eq!(e.details.unwrap()["field"], "in", "{bad}");
        }
        assert!(recall(json!({"in": null}))
            .unwrap()
            .request
            .in_groups
            .is_none());
        assert_eq!(
            FieldGroup::of_class(sessiondex_source::TextClass::Summary),
            FieldGroup::Text
        );
        let hit = serde_json::to_value(FieldGroup::ToolInput).unwrap();
        assert_eq!(hit, json!("tool_input"));
    }

    /// An entry's expand call built as a map is the serializer's, and its bound is the
    /// walk's over the args: strings that need escapes, indices from 0 to `u32::MAX`,
    /// each branches value and none.
    #[test]
    fn entry_calls_are_the_serialized_requests() {
        let strings = ["", "a/b.jsonl", "q\"uote\\ \u{1}\n\t", "日本", "0123abcdef"];
        let mut checked = 0;
        for session in strings {
            for hash in strings {
                for index in [0u32, 7, 10, 99_999, u32::MAX] {
                    for branches in [None, Some(Branches::Active), Some(Branches::All)] {
                        let (call, bound) =
                            Call::expand_entry(session, index, hash, "lin\teage", branches);
                        let want = Call::expand(&ExpandRequest {
                            session: session.to_owned(),
                            indices: Some(vec![i64::from(index)]),
                            source_hash: Some(hash.to_owned()),
                            lineage_fingerprint: Some("lin\teage".to_owned()),
                            branches,
                            ..ExpandRequest::default()
                        })
                        .unwrap();
                        // Written from its parts, as the map would be, then read as the map.
                        assert_eq!(
                            serde_json::to_string(&call).unwrap(),
                            serde_json::to_string(&want).unwrap()
                        );
                        assert!(call.args.value.get().is_none());
                        assert_eq!(call, want);
                        assert_eq!(bound, json_value_len_bound(&want.args));
                        assert!(bound >= json_len(&want.args));
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 5 * 5 * 5 * 3);
    }
}
