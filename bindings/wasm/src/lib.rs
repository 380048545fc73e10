//! `sessiondex-wasm`: the browser package of sessiondex.
//!
//! One class, [`SessionIndex`]: session files handed over as bytes are indexed in memory
//! ([`sessiondex_query::memory::MemoryIndex`]) and queried with the engine the CLI uses.
//! This crate converts and nothing more: requests arrive as JS objects in the wire form (the
//! camelCase JSON of `docs/query.md`) and go through the same `from_json` parsers as the CLI's
//! (so a malformed request gets its stable code); results come back as plain JS objects
//! serialized from the same Rust types as the CLI's `--json`; errors are `Error`s with a
//! `code` property (and `details` when there are any). See `docs/wasm.md`.
#![deny(missing_docs)]

use serde::Serialize;
use serde_json::Value;
use sessiondex_query::engine::{self, QueryContext};
use sessiondex_query::expand::{self, WalkRequest};
use sessiondex_query::memory::{MemoryConfig, MemoryIndex};
use sessiondex_query::request::{Call, CallRef, ExpandRequest, RecallRequest};
use sessiondex_query::sessions::{self, SessionsRequest};
use sessiondex_query::{Error, ErrorCode};
use sessiondex_source::{Branches, Record};
use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
/** Config keys (camelCase, as in a sessiondex config file); all optional. */
export interface SessionIndexConfig {
  maxSessions?: number; maxEntryChars?: number; indexThinking?: boolean;
  indexToolOutput?: boolean;
  /** How many of the newest sessions get hot shards; default: all of them. */
  hotSessions?: number | null;
  maxColdVocabularyBytes?: number; maxColdCacheBytes?: number;
  regexMaxPatternBytes?: number; regexMaxAutomatonBytes?: number; regexMaxHaystackBytes?: number;
  /** Replace credentials with `[redacted:<kind>]` (docs/secrets.md); default true. */
  redactSecrets?: boolean;
}
/** A `recall` request (docs/query.md). Without `scope` and `cwd` the scope is `global`. */
export interface RecallRequest {
  query?: string; queryMode?: "literal" | "phrase" | "regex" | "fuzzy"; queryMatch?: "any" | "all";
  scope?: string; cwd?: string; branches?: "active" | "all";
  role?: string; tool?: string; ref?: string; provider?: string; action?: string;
  outcome?: "succeeded" | "failed" | "aborted" | "timed_out";
  since?: string; until?: string; entryRange?: [number, number];
  pageSize?: number; offset?: number; sourceHash?: string; lineageFingerprint?: string;
  /** Field groups the query may match. */
  in?: ("text" | "thinking" | "tool_input" | "tool_output")[];
  [key: string]: unknown;
}
/** An `expand` request (docs/query.md). */
export interface ExpandRequest {
  session: string; indices?: number[]; range?: [number, number]; entryIds?: string[];
  addresses?: string[]; before?: number; after?: number; maxChars?: number; textOffset?: number;
  branches?: "active" | "all"; sourceHash?: string; lineageFingerprint?: string;
  /** Credentials as the source has them instead of `[redacted:<kind>]`. */
  reveal?: boolean;
  [key: string]: unknown;
}
/** A `follow` or `next` call, passed back unchanged. */
export interface Call { ref: "recall" | "expand"; args: Record<string, unknown>; }
export interface Coverage {
  complete: boolean; indexedSessions: number; eligibleSessions: number; staleSessions: number;
  incompleteSessions: number; reasons: string[]; error?: unknown;
}
export interface Snippet { text: string; truncated: boolean; highlights: [number, number][]; }
export interface Hit {
  kind: "entry" | "session"; sessionId: string; file: string; entryId?: string; index?: number;
  operationAddress?: string; role?: string; tool?: string; outcome?: string; timestamp?: string;
  score: number; snippet?: Snippet;
  /** Why an entry hit has no snippet: its matches lie past the stored cut and the source
   * held is no longer what was indexed (docs/query.md, Snippets and maxEntryChars). */
  snippetUnavailable?: "stale_pointer" | "source_unreadable";
  matchedTerms?: string[];
  matchedStructuralEntries?: unknown[];
  /** Field groups whose text matched (entry hits with a query). */
  matchedIn?: ("text" | "thinking" | "tool_input" | "tool_output")[]; follow: Call;
}
export interface Page { total: number; hits: Hit[]; next: Call | null; coverage: Coverage; }
export interface SessionRef {
  sessionId: string; file: string; format: string | null; branches: "active" | "all";
  sourceHash: string; lineageFingerprint: string; entries: number;
}
/** A normalized record (README: `sessiondex walk --json`). */
export interface SessionRecord { index: number; entryId: string; type: string; text: string; [key: string]: unknown; }
export interface ExpandedEntry extends SessionRecord {
  textRange: { start: number; end: number; total: number; complete: boolean };
}
export interface Expansion {
  session: SessionRef; entries: ExpandedEntry[]; next: Call | null; coverage: Coverage;
}
export interface SessionRow {
  sessionId: string; file: string; format: string | null; tier: "hot" | "cold";
  availability: "available" | "stale" | "missing"; entryCount: number; errorCount: number;
  complete: boolean; reasons?: string[]; [key: string]: unknown;
}
export interface SessionsRequest {
  id?: string; cwd?: string; createdSince?: string; createdUntil?: string; parent?: string;
  availability?: "available" | "stale" | "missing"; limit?: number;
}
export interface SessionsPage { total: number; sessions: SessionRow[]; coverage: Coverage; }
/** A session id or name, or `{session, branches?, range?, sourceHash?, lineageFingerprint?,
 * reveal?}` (`reveal`: credentials as the source has them instead of `[redacted:<kind>]`). */
export type WalkSelector = string | {
  session: string; branches?: "active" | "all"; range?: [number, number];
  sourceHash?: string; lineageFingerprint?: string; reveal?: boolean;
};
/** Thrown by every method: `code` is the stable error code of docs/query.md. */
export interface SessionIndexError extends Error { code: string; details?: Record<string, unknown>; }
"#;

#[wasm_bindgen(inline_js = "export function iterable(w) { \
    w[Symbol.iterator] = function () { return this; }; return w; }")]
extern "C" {
    /// Makes a [`RecordIterator`] a JS iterable (`for (const r of index.walk(...))`).
    fn iterable(w: RecordIterator) -> JsValue;
}

/// A sessiondex error as a JS `Error` with `code` (and `details`).
fn js_error(e: &Error) -> js_sys::Error {
    let err = js_sys::Error::new(&e.message);
    err.set_name("SessionIndexError");
    let _ = js_sys::Reflect::set(&err, &"code".into(), &e.code_str().into());
    if let Some(d) = &e.details {
        if let Ok(v) = to_js(d) {
            let _ = js_sys::Reflect::set(&err, &"details".into(), &v);
        }
    }
    err
}

fn invalid(code: ErrorCode, what: &str, e: impl std::fmt::Display) -> js_sys::Error {
    js_error(&Error::new(code, format!("{what}: {e}")))
}

/// A JS value in the wire form, as JSON (`undefined` and `null` are `null`).
fn to_json(v: &JsValue, code: ErrorCode) -> Result<Value, js_sys::Error> {
    if v.is_undefined() || v.is_null() {
        return Ok(Value::Null);
    }
    let text = js_sys::JSON::stringify(v)
        .map_err(|_| invalid(code, "invalid request", "not JSON-serializable"))?;
    let text: String = text.into();
    serde_json::from_str(&text).map_err(|e| invalid(code, "invalid request", e))
}

/// A result as a plain JS object, the way the CLI's JSON has it (maps as objects, `None` as
/// `null` where the CLI prints `null`, integers as numbers).
fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, js_sys::Error> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| invalid(ErrorCode::InvalidRequest, "cannot convert the result", e))
}

/// An in-memory index of session files: add files as bytes, then recall, expand, follow calls,
/// list and walk sessions. Nothing leaves the page.
#[wasm_bindgen]
#[derive(Debug)]
pub struct SessionIndex {
    inner: MemoryIndex,
}

#[wasm_bindgen]
impl SessionIndex {
    /// An empty index; `config` holds config keys (camelCase).
    ///
    /// # Errors
    ///
    /// `invalid_config` for an unknown key or a bad value.
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_param_type = "SessionIndexConfig | undefined")] config: JsValue,
    ) -> Result<SessionIndex, js_sys::Error> {
        Ok(SessionIndex {
            inner: MemoryIndex::new(parse_config(&config)?),
        })
    }

    /// Adds (or replaces) a session file under `name` (its format is detected from the
    /// content) and returns its `sessions` row.
    ///
    /// # Errors
    ///
    /// `unknown_format` when no reader recognizes it, `source_unreadable`.
    #[wasm_bindgen(js_name = addFile, unchecked_return_type = "SessionRow")]
    pub fn add_file(&mut self, name: &str, bytes: &[u8]) -> Result<JsValue, js_sys::Error> {
        let row = self.inner.add_file(name, bytes).map_err(|e| js_error(&e))?;
        to_js(&row)
    }

    /// Removes the file `name`; false when there was none.
    #[wasm_bindgen(js_name = removeFile)]
    pub fn remove_file(&mut self, name: &str) -> bool {
        self.inner.remove_file(name)
    }

    /// One ranked page of hits. Without `scope` and `cwd` the scope is `global` (a page has no
    /// working directory).
    ///
    /// # Errors
    ///
    /// Every code of a CLI recall (`invalid_request`, `regex_*`, `session_not_found`, ...).
    #[wasm_bindgen(unchecked_return_type = "Page")]
    pub fn recall(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "RecallRequest")] request: JsValue,
    ) -> Result<JsValue, js_sys::Error> {
        let mut o = match to_json(&request, ErrorCode::InvalidRequest)? {
            Value::Object(o) => o,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(invalid(
                    ErrorCode::InvalidRequest,
                    "invalid request",
                    format!("a recall request is an object, not {other}"),
                ))
            }
        };
        if !o.contains_key("scope") && !o.contains_key("cwd") {
            o.insert("scope".into(), Value::String("global".into()));
        }
        let req = RecallRequest::from_json(&Value::Object(o)).map_err(|e| js_error(&e))?;
        let page = self.run_recall(&req).map_err(|e| js_error(&e))?;
        to_js(&page)
    }

    /// Complete records of one session, re-read from the bytes held.
    ///
    /// # Errors
    ///
    /// Every code of a CLI expand (`stale_pointer`, `address_not_found`, ...).
    #[wasm_bindgen(unchecked_return_type = "Expansion")]
    pub fn expand(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "ExpandRequest")] request: JsValue,
    ) -> Result<JsValue, js_sys::Error> {
        let v = to_json(&request, ErrorCode::InvalidRequest)?;
        let req = ExpandRequest::from_json(&v).map_err(|e| js_error(&e))?;
        let x = self.run_expand(&req).map_err(|e| js_error(&e))?;
        to_js(&x)
    }

    /// Runs a hit's `follow` or a page's `next` call unchanged: a `Page` or an `Expansion`.
    ///
    /// # Errors
    ///
    /// `invalid_call`, then the codes of the call's target.
    #[wasm_bindgen(unchecked_return_type = "Page | Expansion")]
    pub fn call(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "Call")] follow_or_next: JsValue,
    ) -> Result<JsValue, js_sys::Error> {
        let v = to_json(&follow_or_next, ErrorCode::InvalidCall)?;
        let call = Call::from_json(&v).map_err(|e| js_error(&e))?;
        match call.target().map_err(|e| js_error(&e))? {
            CallRef::Recall => {
                let req = call.recall_request().map_err(|e| js_error(&e))?;
                to_js(&self.run_recall(&req).map_err(|e| js_error(&e))?)
            }
            CallRef::Expand => {
                let req = call.expand_request().map_err(|e| js_error(&e))?;
                to_js(&self.run_expand(&req).map_err(|e| js_error(&e))?)
            }
        }
    }

    /// The sessions held, newest first, optionally filtered by a `sessions` request.
    ///
    /// # Errors
    ///
    /// `invalid_request` for a malformed request, `invalid_time`.
    #[wasm_bindgen(unchecked_return_type = "SessionsPage")]
    pub fn sessions(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "SessionsRequest | undefined")] request: JsValue,
    ) -> Result<JsValue, js_sys::Error> {
        let v = to_json(&request, ErrorCode::InvalidRequest)?;
        let req: SessionsRequest = if v.is_null() {
            SessionsRequest::default()
        } else {
            serde_json::from_value(v)
                .map_err(|e| invalid(ErrorCode::InvalidRequest, "invalid request", e))?
        };
        let max = self.inner.config().max_sessions;
        let index = self
            .inner
            .index(Branches::Active)
            .map_err(|e| js_error(&e))?;
        let page = sessions::sessions(index, &req, max).map_err(|e| js_error(&e))?;
        to_js(&page)
    }

    /// An iterator over the complete records of one session's selection; it also has
    /// `session` and `coverage` properties.
    ///
    /// # Errors
    ///
    /// `session_not_found`, `ambiguous_session`, `stale_pointer`, `index_out_of_bounds`.
    #[wasm_bindgen(unchecked_return_type = "RecordIterator & IterableIterator<SessionRecord>")]
    pub fn walk(
        &mut self,
        #[wasm_bindgen(unchecked_param_type = "WalkSelector")] selector: JsValue,
    ) -> Result<JsValue, js_sys::Error> {
        let req = match selector.as_string() {
            Some(session) => WalkRequest {
                session,
                ..WalkRequest::default()
            },
            None => serde_json::from_value(to_json(&selector, ErrorCode::InvalidRequest)?)
                .map_err(|e| invalid(ErrorCode::InvalidRequest, "invalid walk selector", e))?,
        };
        let opts = self.inner.engine_options();
        let branches = req.branches.unwrap_or_default();
        let index = self.inner.index(branches).map_err(|e| js_error(&e))?;
        let w = expand::walk(index, &opts, &req).map_err(|e| js_error(&e))?;
        Ok(iterable(RecordIterator {
            session: to_js(&w.session)?,
            coverage: to_js(&w.coverage)?,
            records: w.collect::<Vec<Record>>().into_iter(),
        }))
    }

    /// The whole index as one bundle (sources, catalog, shards; see `docs/format.md`).
    ///
    /// # Errors
    ///
    /// `index_unavailable` / `index_corrupt` when the index cannot be built.
    #[wasm_bindgen(js_name = exportIndex)]
    pub fn export_index(&mut self) -> Result<Vec<u8>, js_sys::Error> {
        let b = self.inner.export().map_err(|e| js_error(&e))?;
        Ok(b.to_vec())
    }

    /// An index from the bytes of [`SessionIndex::export_index`]; `config` as for the
    /// constructor.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the bundle fails its checks, `invalid_config`.
    pub fn load(
        bytes: &[u8],
        #[wasm_bindgen(unchecked_param_type = "SessionIndexConfig | undefined")] config: JsValue,
    ) -> Result<SessionIndex, js_sys::Error> {
        let inner = MemoryIndex::load(bytes, parse_config(&config)?).map_err(|e| js_error(&e))?;
        Ok(SessionIndex { inner })
    }
}

impl SessionIndex {
    fn run_recall(&mut self, req: &RecallRequest) -> Result<sessiondex_query::Page, Error> {
        let valid = req.clone().validate()?;
        let opts = self.inner.engine_options();
        let index = self.inner.index(valid.branches)?;
        engine::recall(index, &opts, &QueryContext::default(), req)
    }

    fn run_expand(&mut self, req: &ExpandRequest) -> Result<sessiondex_query::Expansion, Error> {
        let opts = self.inner.engine_options();
        let index = self.inner.index(req.branches.unwrap_or_default())?;
        expand::expand(index, &opts, req)
    }
}

fn parse_config(v: &JsValue) -> Result<MemoryConfig, js_sys::Error> {
    match to_json(v, ErrorCode::InvalidConfig)? {
        Value::Null => Ok(MemoryConfig::default()),
        v => serde_json::from_value(v)
            .map_err(|e| invalid(ErrorCode::InvalidConfig, "invalid config", e)),
    }
}

/// The records of a walk, one `next()` at a time (a JS iterator and iterable).
#[wasm_bindgen]
#[derive(Debug)]
pub struct RecordIterator {
    session: JsValue,
    coverage: JsValue,
    records: std::vec::IntoIter<Record>,
}

#[wasm_bindgen]
impl RecordIterator {
    /// The session read (`SessionRef`).
    #[wasm_bindgen(getter, unchecked_return_type = "SessionRef")]
    pub fn session(&self) -> JsValue {
        self.session.clone()
    }

    /// Coverage of reading it.
    #[wasm_bindgen(getter, unchecked_return_type = "Coverage")]
    pub fn coverage(&self) -> JsValue {
        self.coverage.clone()
    }

    /// `{value, done}` as the iterator protocol has it.
    ///
    /// # Errors
    ///
    /// Only if a record cannot be converted (it always can).
    #[wasm_bindgen(js_name = next, unchecked_return_type = "IteratorResult<SessionRecord, undefined>")]
    pub fn next_result(&mut self) -> Result<JsValue, js_sys::Error> {
        let out = js_sys::Object::new();
        let (value, done) = match self.records.next() {
            Some(r) => (to_js(&r)?, false),
            None => (JsValue::UNDEFINED, true),
        };
        js_sys::Reflect::set(&out, &"value".into(), &value)
            .and_then(|_| js_sys::Reflect::set(&out, &"done".into(), &done.into()))
            .map_err(|_| invalid(ErrorCode::InvalidRequest, "walk", "cannot build a result"))?;
        Ok(out.into())
    }
}
