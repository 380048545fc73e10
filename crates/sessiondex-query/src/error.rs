//! The one set of user-facing error codes, shared by every entry point.
//!
//! The CLI (`{"error": {"code", "message", ...}}`), the Python exceptions and the JS errors all
//! carry an [`ErrorCode`]; its [`ErrorCode::code`] string is stable: a code is never renamed
//! or reused, only added. [`Error`] pairs a code with a human message and optional structured
//! details (for example the candidate paths of `ambiguous_session`), and serializes as one
//! flat object: `{"code": "...", "message": "...", ...details}`.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A stable, snake_case, user-facing error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request is malformed: an unknown field, a wrong type, a missing or conflicting argument.
    InvalidRequest,
    /// `queryMode` is not one of `literal`, `phrase`, `regex`, `fuzzy`, or does not fit the request.
    InvalidQueryMode,
    /// `scope` is not `session`, `project`, `global` or `session:<id-or-path>`, or cannot be resolved.
    InvalidScope,
    /// `since`/`until` is not RFC 3339 or a date, or `since` is after `until`.
    InvalidTime,
    /// The regex pattern is longer than `regexMaxPatternBytes`.
    RegexPatternTooLong,
    /// The regex compiles to an automaton over the configured size limits.
    RegexTooLarge,
    /// The regex pattern has a syntax error or uses a feature the DFA engine does not support.
    InvalidRegex,
    /// No session matches the given id or path.
    SessionNotFound,
    /// More than one session has the given id; `details.candidates` lists their paths.
    AmbiguousSession,
    /// The session changed since the pointer was made (`sourceHash`/`lineageFingerprint` differ).
    StalePointer,
    /// No record has the given entry id or operation address.
    AddressNotFound,
    /// More than one record has the given entry id or operation address.
    AmbiguousAddress,
    /// An index or range endpoint lies outside the session's records (never clamped).
    IndexOutOfBounds,
    /// An index file failed its checks (checksum, version, truncation).
    IndexCorrupt,
    /// The index directory cannot be opened, locked or created.
    IndexUnavailable,
    /// A session source file cannot be read.
    SourceUnreadable,
    /// A source file is in no known session format.
    UnknownFormat,
    /// The configuration file or a flag holds an invalid value.
    InvalidConfig,
    /// A `follow`/`next` call is malformed or names an unknown `ref`.
    InvalidCall,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: [ErrorCode; 19] = [
        ErrorCode::InvalidRequest,
        ErrorCode::InvalidQueryMode,
        ErrorCode::InvalidScope,
        ErrorCode::InvalidTime,
        ErrorCode::RegexPatternTooLong,
        ErrorCode::RegexTooLarge,
        ErrorCode::InvalidRegex,
        ErrorCode::SessionNotFound,
        ErrorCode::AmbiguousSession,
        ErrorCode::StalePointer,
        ErrorCode::AddressNotFound,
        ErrorCode::AmbiguousAddress,
        ErrorCode::IndexOutOfBounds,
        ErrorCode::IndexCorrupt,
        ErrorCode::IndexUnavailable,
        ErrorCode::SourceUnreadable,
        ErrorCode::UnknownFormat,
        ErrorCode::InvalidConfig,
        ErrorCode::InvalidCall,
    ];

    /// The stable snake_case string.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InvalidQueryMode => "invalid_query_mode",
            ErrorCode::InvalidScope => "invalid_scope",
            ErrorCode::InvalidTime => "invalid_time",
            ErrorCode::RegexPatternTooLong => "regex_pattern_too_long",
            ErrorCode::RegexTooLarge => "regex_too_large",
            ErrorCode::InvalidRegex => "invalid_regex",
            ErrorCode::SessionNotFound => "session_not_found",
            ErrorCode::AmbiguousSession => "ambiguous_session",
            ErrorCode::StalePointer => "stale_pointer",
            ErrorCode::AddressNotFound => "address_not_found",
            ErrorCode::AmbiguousAddress => "ambiguous_address",
            ErrorCode::IndexOutOfBounds => "index_out_of_bounds",
            ErrorCode::IndexCorrupt => "index_corrupt",
            ErrorCode::IndexUnavailable => "index_unavailable",
            ErrorCode::SourceUnreadable => "source_unreadable",
            ErrorCode::UnknownFormat => "unknown_format",
            ErrorCode::InvalidConfig => "invalid_config",
            ErrorCode::InvalidCall => "invalid_call",
        }
    }

    /// Parses a stable code string.
    #[must_use]
    pub fn parse(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.code() == code)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ErrorCode::parse(&s)
            .ok_or_else(|| de::Error::custom(format_args!("unknown error code `{s}`")))
    }
}

/// A user-facing error: a stable code, a message, and optional structured details.
///
/// Serializes as `{"code", "message", ...details}`: the fields of an object `details` are
/// spread beside `code` and `message` (a non-object `details` goes under `"details"`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct Error {
    /// The stable code.
    pub code: ErrorCode,
    /// A human-readable message; not stable, not for matching.
    pub message: String,
    /// Structured details (`candidates`, `limit`, `field`, ...).
    pub details: Option<Value>,
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with no details.
    #[must_use]
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
            details: None,
        }
    }

    /// The same error with `details` attached.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> Error {
        self.details = Some(details);
        self
    }

    /// The stable code string.
    #[must_use]
    pub fn code_str(&self) -> &'static str {
        self.code.code()
    }

    /// `{"error": {...}}`, the envelope the CLI prints with `--json` when a call failed.
    #[must_use]
    pub fn envelope(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "error".to_owned(),
            serde_json::to_value(self).unwrap_or(Value::Null),
        );
        Value::Object(m)
    }
}

impl Serialize for Error {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let extra = match &self.details {
            Some(Value::Object(o)) => o
                .iter()
                .filter(|(k, _)| k.as_str() != "code" && k.as_str() != "message")
                .count(),
            Some(_) => 1,
            None => 0,
        };
        let mut m = s.serialize_map(Some(2 + extra))?;
        m.serialize_entry("code", &self.code)?;
        m.serialize_entry("message", &self.message)?;
        match &self.details {
            Some(Value::Object(o)) => {
                for (k, v) in o {
                    if k != "code" && k != "message" {
                        m.serialize_entry(k, v)?;
                    }
                }
            }
            Some(v) => m.serialize_entry("details", v)?,
            None => {}
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for Error {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut obj = Map::<String, Value>::deserialize(d)?;
        let code = obj
            .remove("code")
            .ok_or_else(|| de::Error::missing_field("code"))?;
        let code = ErrorCode::deserialize(code).map_err(de::Error::custom)?;
        let message = match obj.remove("message") {
            Some(Value::String(s)) => s,
            Some(_) => return Err(de::Error::custom("`message` must be a string")),
            None => return Err(de::Error::missing_field("message")),
        };
        let details = if obj.is_empty() {
            None
        } else if obj.len() == 1 && obj.contains_key("details") {
            obj.remove("details")
        } else {
            Some(Value::Object(obj))
        };
        Ok(Error {
            code,
            message,
            details,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codes_are_unique_snake_case_and_parse_back() {
        let mut seen = std::collections::HashSet::new();
        for c in ErrorCode::ALL {
            let s = c.code();
            assert!(seen.insert(s), "duplicate {s}");
            assert!(
                s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{s}"
            );
            assert_eq!(ErrorCode::parse(s), Some(c));
            assert_eq!(serde_json::to_value(c).unwrap(), json!(s));
            assert_eq!(serde_json::from_value::<ErrorCode>(json!(s)).unwrap(), c);
            assert_eq!(c.to_string(), s);
        }
        assert!(serde_json::from_value::<ErrorCode>(json!("nope")).is_err());
    }

    #[test]
    fn required_codes_exist() {
        for s in [
            "invalid_request",
            "invalid_query_mode",
            "invalid_scope",
            "invalid_time",
            "regex_pattern_too_long",
            "regex_too_large",
            "invalid_regex",
            "session_not_found",
            "ambiguous_session",
            "stale_pointer",
            "address_not_found",
            "ambiguous_address",
            "index_out_of_bounds",
            "index_corrupt",
            "index_unavailable",
            "source_unreadable",
            "unknown_format",
            "invalid_config",
            "invalid_call",
        ] {
            assert!(ErrorCode::parse(s).is_some(), "{s}");
        }
    }

    #[test]
    fn error_serializes_flat_with_details() {
        let e = Error::new(ErrorCode::AmbiguousSession, "two sessions have id abc")
            .with_details(json!({"candidates": ["/a.jsonl", "/b.jsonl"]}));
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            json!({"code": "ambiguous_session", "message": "two sessions have id abc",
                   "candidates": ["/a.jsonl", "/b.jsonl"]})
        );
        assert_eq!(serde_json::from_value::<Error>(v).unwrap(), e);
        assert_eq!(e.envelope()["error"]["code"], "ambiguous_session");
        assert_eq!(e.to_string(), "ambiguous_session: two sessions have id abc");
    }

    #[test]
    fn error_without_details_and_non_object_details() {
        let e = Error::new(ErrorCode::StalePointer, "changed");
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v, json!({"code": "stale_pointer", "message": "changed"}));
        assert_eq!(serde_json::from_value::<Error>(v).unwrap(), e);

        let e = Error::new(ErrorCode::InvalidRequest, "x").with_details(json!([1, 2]));
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["details"], json!([1, 2]));
        assert_eq!(serde_json::from_value::<Error>(v).unwrap(), e);
    }

    #[test]
    fn details_cannot_shadow_code_or_message() {
        let e = Error::new(ErrorCode::InvalidCall, "m")
            .with_details(json!({"code": "other", "message": "other", "ref": "x"}));
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            json!({"code": "invalid_call", "message": "m", "ref": "x"})
        );
    }
}
