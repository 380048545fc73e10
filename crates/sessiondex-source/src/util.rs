//! Small shared helpers for the format readers: timestamps, tool names, typed file paths.

use serde_json::{Map, Value};

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Parses an RFC 3339 / ISO 8601 date-time (`2025-12-17T19:39:21.535Z`, offsets, a space for
/// `T`, a bare date) into Unix milliseconds.
#[must_use]
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    let b = s.trim().as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = b.get(r)?;
        if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let y = num(0..4)?;
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') {
        return None;
    }
    let mo = num(5..7)?;
    let d = num(8..10)?;
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    if b.len() == 10 {
        return Some(days * 86_400_000);
    }
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let h = num(11..13)?;
    let mi = num(14..16)?;
    let (sec, mut i) = if b.get(16) == Some(&b':') {
        (num(17..19)?, 19)
    } else {
        (0, 16)
    };
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') || b.get(i) == Some(&b',') {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        let frac = &b[start..i];
        if frac.is_empty() {
            return None;
        }
        for k in 0..3 {
            ms = ms * 10 + frac.get(k).map_or(0, |c| i64::from(c - b'0'));
        }
    }
    let offset_min = match b.get(i) {
        None => 0,
        Some(b'Z' | b'z') if i + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) => {
            let oh = num(i + 1..i + 3)?;
            let om = match b.get(i + 3) {
                Some(b':') => num(i + 4..i + 6)?,
                Some(_) => num(i + 3..i + 5)?,
                None => 0,
            };
            let v = oh * 60 + om;
            if *sign == b'+' {
                v
            } else {
                -v
            }
        }
        _ => return None,
    };
    Some(((days * 24 + h) * 60 + mi) * 60_000 + sec * 1000 + ms - offset_min * 60_000)
}

/// Unix milliseconds as year, month, day, hour, minute, second and millisecond (UTC).
fn ms_fields(ms: i64) -> [i64; 7] {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, rem) = (rem / 3_600_000, rem % 3_600_000);
    let (mi, rem) = (rem / 60_000, rem % 60_000);
    [y, m, d, h, mi, rem / 1000, rem % 1000]
}

/// Formats Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
#[must_use]
pub fn format_ms(ms: i64) -> String {
    let [y, m, d, h, mi, s, milli] = ms_fields(ms);
    if !(0..=9999).contains(&y) {
        return format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z");
    }
    // Every record's timestamp comes through here: digits written in place, not through
    // the formatting machinery (which was 2% of a build over large sessions).
    let mut out = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut v: i64| {
        for k in (at..at + width).rev() {
            out[k] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, y);
    put(5, 2, m);
    put(8, 2, d);
    put(11, 2, h);
    put(14, 2, mi);
    put(17, 2, s);
    put(20, 3, milli);
    std::str::from_utf8(&out)
        .map(str::to_owned)
        .unwrap_or_default()
}

/// A timestamp value as the sources write it (RFC 3339 string, Unix seconds or milliseconds)
/// normalized to `YYYY-MM-DDTHH:MM:SS.mmmZ`.
#[must_use]
pub fn normalize_ts(v: &Value) -> Option<String> {
    let ms = match v {
        Value::String(s) => parse_rfc3339_ms(s)?,
        Value::Number(n) => {
            let f = n.as_f64()?;
            if !f.is_finite() || f < 0.0 {
                return None;
            }
            // Below 10^11 a number is seconds (that is the year 5138 in seconds).
            #[allow(clippy::cast_possible_truncation)]
            if f < 1e11 {
                (f * 1000.0) as i64
            } else if f < 1e14 {
                f as i64
            } else {
                return None;
            }
        }
        _ => return None,
    };
    Some(format_ms(ms))
}

/// Splits a tool name into `(ref, provider, action)`.
///
/// - `mcp__<server>__<tool>` gives provider `<server>`, action `<tool>`.
/// - `<provider>.<action>` (split at the first dot) gives those two.
/// - anything else is its own action with no provider.
///
/// `ref` is always the full name.
#[must_use]
pub fn split_tool(name: &str) -> (String, Option<String>, String) {
    if let Some(rest) = name.strip_prefix("mcp__") {
        if let Some((server, action)) = rest.split_once("__") {
            if !server.is_empty() && !action.is_empty() {
                return (name.to_owned(), Some(server.to_owned()), action.to_owned());
            }
        }
    }
    if let Some((provider, action)) = name.split_once('.') {
        if !provider.is_empty() && !action.is_empty() {
            return (
                name.to_owned(),
                Some(provider.to_owned()),
                action.to_owned(),
            );
        }
    }
    (name.to_owned(), None, name.to_owned())
}

/// Argument keys whose string value is a file path.
pub const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "filepath",
    "notebook_path",
    "notebookPath",
    "target_file",
    "targetFile",
    "source_path",
    "destination_path",
];

/// Argument keys whose array-of-strings value lists file paths.
pub const PATHS_KEYS: &[&str] = &["paths", "file_paths", "filePaths", "files"];

/// Paths named by typed keys of a tool's arguments (top level, and one level into arrays of
/// objects such as multi-edit lists). Never parses commands or prose.
#[must_use]
pub fn files_from_args(args: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut push = |s: &str| {
        let s = s.trim();
        if !s.is_empty() && !out.iter().any(|o| o == s) {
            out.push(s.to_owned());
        }
    };
    let visit = |obj: &Map<String, Value>, push: &mut dyn FnMut(&str)| {
        for key in PATH_KEYS {
            if let Some(Value::String(s)) = obj.get(*key) {
                push(s);
            }
        }
        for key in PATHS_KEYS {
            if let Some(Value::Array(items)) = obj.get(*key) {
                for item in items {
                    if let Value::String(s) = item {
                        push(s);
                    }
                }
            }
        }
    };
    if let Value::Object(obj) = args {
        visit(obj, &mut push);
        for v in obj.values() {
            if let Value::Array(items) = v {
                for item in items {
                    if let Value::Object(inner) = item {
                        visit(inner, &mut push);
                    }
                }
            }
        }
    }
    out
}

/// The string of a JSON value: strings as they are, anything else as compact JSON.
#[must_use]
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A string field of an object.
#[must_use]
pub fn str_field<'a>(obj: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    obj.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        let ms = parse_rfc3339_ms("2025-12-17T19:39:21.535Z").unwrap();
        assert_eq!(format_ms(ms), "2025-12-17T19:39:21.535Z");
        assert_eq!(parse_rfc3339_ms("2025-12-17T21:39:21.535+02:00"), Some(ms));
        assert_eq!(format_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            normalize_ts(&serde_json::json!(1_766_000_357_542_i64)).unwrap(),
            "2025-12-17T19:39:17.542Z"
        );
        assert_eq!(
            normalize_ts(&serde_json::json!(1_747_130_400)).unwrap(),
            "2025-05-13T10:00:00.000Z"
        );
        assert!(parse_rfc3339_ms("yesterday").is_none());
        assert!(parse_rfc3339_ms("2025-13-01T00:00:00Z").is_none());
    }

    proptest::proptest! {
        /// The digits written in place equal the formatting machinery's, in and past the
        /// four-digit years, and parse back (which checks the fields themselves).
        #[test]
        fn formatted_timestamps_equal_format(ms in -400_000_000_000_000i64..400_000_000_000_000) {
            let [y, m, d, h, mi, s, milli] = ms_fields(ms);
            let want = format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z");
            proptest::prop_assert_eq!(format_ms(ms), want.clone());
            if (0..=9999).contains(&y) {
                proptest::prop_assert_eq!(parse_rfc3339_ms(&want), Some(ms));
            }
        }
    }

    #[test]
    fn tool_names_split() {
        assert_eq!(
            split_tool("mcp__github__create_issue"),
            (
                "mcp__github__create_issue".into(),
                Some("github".into()),
                "create_issue".into()
            )
        );
        assert_eq!(
            split_tool("omp.grep"),
            ("omp.grep".into(), Some("omp".into()), "grep".into())
        );
        assert_eq!(split_tool("Bash"), ("Bash".into(), None, "Bash".into()));
    }

    #[test]
    fn files_come_from_typed_keys_only() {
        let args = serde_json::json!({
            "file_path": "/a.rs",
            "command": "cat /etc/passwd",
            "edits": [{"path": "/b.rs"}, {"path": "/a.rs"}],
            "paths": ["/c.rs"]
        });
        assert_eq!(files_from_args(&args), vec!["/a.rs", "/c.rs", "/b.rs"]);
    }
}
