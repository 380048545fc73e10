//! Session metadata stored in every tier and in the catalog, and timestamp conversion.

use std::collections::BTreeMap;

use rkyv::{Archive, Serialize};
use sessiondex_source::{Branches, Format, Selection, SessionLink, SessionMeta};

use crate::error::{Error, Result};

/// One coverage reason of an indexed session with how often it happened.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CoverageReason {
    /// The stable snake_case code (`malformed_line`, `max_entry_chars`, ...).
    pub code: String,
    /// How many times.
    pub count: u64,
}

/// Coverage of one indexed session: read, lineage and index reasons together.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Coverage {
    /// True when nothing was lost reading or indexing.
    pub complete: bool,
    /// Reasons sorted by code.
    pub reasons: Vec<CoverageReason>,
}

impl Coverage {
    /// Adds `count` occurrences of `code`; marks coverage incomplete.
    pub fn add(&mut self, code: &str, count: u64) {
        if count == 0 {
            return;
        }
        self.complete = false;
        match self.reasons.binary_search_by(|r| r.code.as_str().cmp(code)) {
            Ok(i) => self.reasons[i].count += count,
            Err(i) => self.reasons.insert(
                i,
                CoverageReason {
                    code: code.to_owned(),
                    count,
                },
            ),
        }
    }

    /// The count of `code`, 0 when absent.
    #[must_use]
    pub fn count(&self, code: &str) -> u64 {
        self.reasons
            .iter()
            .find(|r| r.code == code)
            .map_or(0, |r| r.count)
    }
}

/// The metadata of one indexed session (product.md, The index): what `sessions` lists.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionSummary {
    /// The session id.
    pub session_id: String,
    /// The source file path as the reader named it.
    pub file: String,
    /// The source format.
    pub format: Option<Format>,
    /// The source's own format version string.
    pub format_version: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Title.
    pub title: Option<String>,
    /// Creation time from the header (RFC 3339).
    pub created: Option<String>,
    /// Links to other sessions.
    pub links: Vec<SessionLink>,
    /// Branch mode of the selection.
    pub branches: Branches,
    /// The leaf the selection was walked from.
    pub leaf: Option<String>,
    /// SHA-256 (hex) lineage fingerprint of the selection.
    pub lineage_fingerprint: String,
    /// Earliest record timestamp, ms since the Unix epoch.
    pub first_ts: Option<i64>,
    /// Latest record timestamp, ms since the Unix epoch.
    pub last_ts: Option<i64>,
    /// Records in the selection.
    pub entry_count: u64,
    /// Records whose typed error flag is set.
    pub error_count: u64,
    /// Records without a timestamp that parses (a time range leaves them out; a cold
    /// session's first and last times say nothing about them).
    pub untimed_count: u64,
    /// Paths touched, in order of first appearance, deduplicated.
    pub files_touched: Vec<String>,
    /// Tool name -> calls, sorted by name.
    pub tool_histogram: Vec<(String, u64)>,
    /// Read, lineage and index coverage.
    pub coverage: Coverage,
    /// Source bytes the selection was read from (the reader's `complete_bytes`).
    pub source_bytes: u64,
    /// Bytes of the index file this summary was stored in (0 when not stored yet).
    pub cache_bytes: u64,
}

impl SessionSummary {
    /// Computes the summary of a selection.
    #[must_use]
    pub fn new(meta: &SessionMeta, sel: &Selection) -> SessionSummary {
        let mut first: Option<i64> = None;
        let mut last: Option<i64> = None;
        let mut files = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut tools: BTreeMap<String, u64> = BTreeMap::new();
        let mut errors = 0;
        let mut untimed = 0;
        // A failed call shows twice (the call child and its result record): count the call.
        // A failed result whose id only calls without the error carry (a log whose ids
        // repeat) counts itself, as recall's deference (docs/query.md, Membership).
        let calls: std::collections::HashSet<&str> = sel
            .records
            .iter()
            .filter(|r| r.kind == "tool_call" && r.is_error == Some(true))
            .filter_map(|r| r.call_id.as_deref())
            .collect();
        for r in &sel.records {
            if let Some(ms) = r.timestamp.as_deref().and_then(parse_rfc3339_ms) {
                first = Some(first.map_or(ms, |f| f.min(ms)));
                last = Some(last.map_or(ms, |l| l.max(ms)));
            } else {
                untimed += 1;
            }
            for f in &r.files_touched {
                if seen.insert(f.as_str()) {
                    files.push(f.clone());
                }
            }
            if let Some(t) = r.tool.as_ref().filter(|_| r.kind == "tool_call") {
                *tools.entry(t.clone()).or_default() += 1;
            }
            let paired_result =
                r.kind != "tool_call" && r.call_id.as_deref().is_some_and(|id| calls.contains(id));
            if r.is_error == Some(true) && !paired_result {
                errors += 1;
            }
        }
        let first = first.or_else(|| meta.first_ts.as_deref().and_then(parse_rfc3339_ms));
        let last = last.or_else(|| meta.last_ts.as_deref().and_then(parse_rfc3339_ms));
        let mut coverage = Coverage {
            complete: sel.coverage.complete,
            reasons: Vec::new(),
        };
        for r in &sel.coverage.reasons {
            let complete = coverage.complete;
            coverage.add(r.code.as_str(), r.count);
            // Informational reasons (unknown entry types) do not make a read incomplete.
            if !r.code.makes_incomplete() {
                coverage.complete = complete;
            }
        }
        SessionSummary {
            session_id: meta.session_id.clone(),
            file: meta.file.clone(),
            format: meta.format,
            format_version: meta.format_version.clone(),
            cwd: meta.cwd.clone(),
            title: meta.title.clone(),
            created: meta.created.clone(),
            links: meta.links.clone(),
            branches: sel.branches,
            leaf: sel.leaf.clone(),
            lineage_fingerprint: sel.lineage_fingerprint.clone(),
            first_ts: first,
            last_ts: last,
            entry_count: sel.records.len() as u64,
            error_count: errors,
            untimed_count: untimed,
            files_touched: files,
            tool_histogram: tools.into_iter().collect(),
            coverage,
            source_bytes: sel.coverage.complete_bytes,
            cache_bytes: 0,
        }
    }

    /// `cache_bytes / source_bytes` (`cacheSourceRatio`), 0 when no source bytes.
    #[must_use]
    pub fn cache_source_ratio(&self) -> f64 {
        if self.source_bytes == 0 {
            0.0
        } else {
            self.cache_bytes as f64 / self.source_bytes as f64
        }
    }
}

/// The archived form of a name and a count.
#[derive(Archive, Serialize, Debug)]
pub(crate) struct CountRaw {
    pub(crate) name: Vec<u8>,
    pub(crate) count: u64,
}

/// The archived form of a session link.
#[derive(Archive, Serialize, Debug)]
pub(crate) struct LinkRaw {
    kind: Vec<u8>,
    target: Vec<u8>,
}

/// The archived form of [`SessionSummary`]. Strings are bytes, UTF-8 checked when decoded, so
/// validating many of them (the catalog) costs no UTF-8 pass at open.
#[derive(Archive, Serialize, Debug, Default)]
pub(crate) struct SummaryRaw {
    session_id: Vec<u8>,
    file: Vec<u8>,
    format: u8,
    format_version: Option<Vec<u8>>,
    cwd: Option<Vec<u8>>,
    title: Option<Vec<u8>>,
    created: Option<Vec<u8>>,
    links: Vec<LinkRaw>,
    branches: u8,
    leaf: Option<Vec<u8>>,
    lineage_fingerprint: Vec<u8>,
    first_ts: Option<i64>,
    last_ts: Option<i64>,
    entry_count: u64,
    error_count: u64,
    untimed_count: u64,
    files_touched: Vec<Vec<u8>>,
    tool_histogram: Vec<CountRaw>,
    complete: bool,
    reasons: Vec<CountRaw>,
    source_bytes: u64,
    cache_bytes: u64,
}

/// Where `cache_bytes` is in an [`ArchivedSummaryRaw`]: a little-endian `u64`, the same width
/// whatever its value, so a file's own size can be written into it after serializing.
pub(crate) const ARCHIVED_CACHE_BYTES_AT: usize =
    std::mem::offset_of!(ArchivedSummaryRaw, cache_bytes);

/// The schema text of [`SummaryRaw`], part of each kind's schema fingerprint.
pub(crate) const SUMMARY_SCHEMA: &str = "summary{session_id:bytes file:bytes format:u8 \
format_version:opt<bytes> cwd:opt<bytes> title:opt<bytes> created:opt<bytes> \
links:[{kind:bytes,target:bytes}] branches:u8 leaf:opt<bytes> \
lineage_fingerprint:bytes first_ts:opt<i64> last_ts:opt<i64> entry_count:u64 error_count:u64 \
untimed_count:u64 files_touched:[bytes] tool_histogram:[{name:bytes,count:u64}] complete:bool \
reasons:[{code:bytes,count:u64}] source_bytes:u64 cache_bytes:u64}";

pub(crate) fn format_code(f: Option<Format>) -> u8 {
    match f {
        None => 0,
        Some(Format::Pi) => 1,
        Some(Format::Omp) => 2,
        Some(Format::ClaudeCode) => 3,
        Some(Format::Codex) => 4,
    }
}

fn format_from(code: u8) -> Result<Option<Format>> {
    Ok(match code {
        0 => None,
        1 => Some(Format::Pi),
        2 => Some(Format::Omp),
        3 => Some(Format::ClaudeCode),
        4 => Some(Format::Codex),
        _ => return Err(Error::corrupt(format!("unknown format code {code}"))),
    })
}

pub(crate) fn branches_code(b: Branches) -> u8 {
    match b {
        Branches::Active => 0,
        Branches::All => 1,
    }
}

pub(crate) fn branches_from(code: u8) -> Result<Branches> {
    match code {
        0 => Ok(Branches::Active),
        1 => Ok(Branches::All),
        _ => Err(Error::corrupt(format!("unknown branch mode {code}"))),
    }
}

fn bytes(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn counts<'a>(it: impl Iterator<Item = (&'a str, u64)>) -> Vec<CountRaw> {
    it.map(|(n, c)| CountRaw {
        name: bytes(n),
        count: c,
    })
    .collect()
}

impl SummaryRaw {
    pub(crate) fn from(s: &SessionSummary) -> SummaryRaw {
        SummaryRaw {
            session_id: bytes(&s.session_id),
            file: bytes(&s.file),
            format: format_code(s.format),
            format_version: s.format_version.as_deref().map(bytes),
            cwd: s.cwd.as_deref().map(bytes),
            title: s.title.as_deref().map(bytes),
            created: s.created.as_deref().map(bytes),
            links: s
                .links
                .iter()
                .map(|l| LinkRaw {
                    kind: bytes(&l.kind),
                    target: bytes(&l.target),
                })
                .collect(),
            branches: branches_code(s.branches),
            leaf: s.leaf.as_deref().map(bytes),
            lineage_fingerprint: bytes(&s.lineage_fingerprint),
            first_ts: s.first_ts,
            last_ts: s.last_ts,
            entry_count: s.entry_count,
            error_count: s.error_count,
            untimed_count: s.untimed_count,
            files_touched: s.files_touched.iter().map(|f| bytes(f)).collect(),
            tool_histogram: counts(s.tool_histogram.iter().map(|(n, c)| (n.as_str(), *c))),
            complete: s.coverage.complete,
            reasons: counts(
                s.coverage
                    .reasons
                    .iter()
                    .map(|r| (r.code.as_str(), r.count)),
            ),
            source_bytes: s.source_bytes,
            cache_bytes: s.cache_bytes,
        }
    }
}

pub(crate) fn string(b: &rkyv::vec::ArchivedVec<u8>) -> Result<String> {
    String::from_utf8(b.as_slice().to_vec())
        .map_err(|_| Error::corrupt("metadata string is not UTF-8"))
}

fn opt_string(
    b: &rkyv::option::ArchivedOption<rkyv::vec::ArchivedVec<u8>>,
) -> Result<Option<String>> {
    b.as_ref().map(string).transpose()
}

fn decode_counts(v: &rkyv::vec::ArchivedVec<ArchivedCountRaw>) -> Result<Vec<(String, u64)>> {
    v.iter()
        .map(|c| Ok((string(&c.name)?, c.count.to_native())))
        .collect()
}

impl ArchivedSummaryRaw {
    pub(crate) fn decode(&self) -> Result<SessionSummary> {
        let links = self
            .links
            .iter()
            .map(|l| {
                Ok(SessionLink {
                    kind: string(&l.kind)?,
                    target: string(&l.target)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(SessionSummary {
            session_id: string(&self.session_id)?,
            file: string(&self.file)?,
            format: format_from(self.format)?,
            format_version: opt_string(&self.format_version)?,
            cwd: opt_string(&self.cwd)?,
            title: opt_string(&self.title)?,
            created: opt_string(&self.created)?,
            links,
            branches: branches_from(self.branches)?,
            leaf: opt_string(&self.leaf)?,
            lineage_fingerprint: string(&self.lineage_fingerprint)?,
            first_ts: self.first_ts.as_ref().map(|t| t.to_native()),
            last_ts: self.last_ts.as_ref().map(|t| t.to_native()),
            entry_count: self.entry_count.to_native(),
            error_count: self.error_count.to_native(),
            untimed_count: self.untimed_count.to_native(),
            files_touched: self
                .files_touched
                .iter()
                .map(string)
                .collect::<Result<_>>()?,
            tool_histogram: decode_counts(&self.tool_histogram)?,
            coverage: Coverage {
                complete: self.complete,
                reasons: decode_counts(&self.reasons)?
                    .into_iter()
                    .map(|(code, count)| CoverageReason { code, count })
                    .collect(),
            },
            source_bytes: self.source_bytes.to_native(),
            cache_bytes: self.cache_bytes.to_native(),
        })
    }
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn digits(s: &[u8]) -> Option<i64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0i64, |a, &d| a * 10 + i64::from(d - b'0')))
}

/// Milliseconds since the Unix epoch of an RFC 3339 timestamp
/// (`YYYY-MM-DDTHH:MM:SS[.fff...](Z|±HH:MM)`); fractions beyond ms are truncated.
#[must_use]
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (h, mi, se) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0i64;
    if b[i] == b'.' {
        i += 1;
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            if i - start < 3 {
                ms = ms * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..3 {
            ms *= 10;
        }
    }
    let offset_min = match b.get(i..)? {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), oh1, oh2, b':', om1, om2] => {
            let oh = digits(&[*oh1, *oh2])?;
            let om = digits(&[*om1, *om2])?;
            let v = oh * 60 + om;
            if *sign == b'-' {
                -v
            } else {
                v
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset_min * 60;
    Some(secs * 1000 + ms)
}

/// "00" to "99", two bytes each.
const TWO_DIGITS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The canonical form `YYYY-MM-DDTHH:MM:SS.mmmZ` of a millisecond timestamp, for years
/// 0000-9999.
#[must_use]
pub fn format_rfc3339_ms(ms: i64) -> Option<String> {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    if !(0..=9999).contains(&y) {
        return None;
    }
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    // Written two digits at a time from a table (a page formats a time per hit; `format!`
    // was most of it, then a division per digit). Every value written is below 100.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let two = |v: i64| {
        let at = (v as usize % 100) * 2;
        [TWO_DIGITS[at], TWO_DIGITS[at + 1]]
    };
    let mut out = *b"0000-00-00T00:00:00.000Z";
    for (at, v) in [
        (0, y / 100),
        (2, y % 100),
        (5, m),
        (8, d),
        (11, h),
        (14, mi),
        (17, s),
        (21, milli % 100),
    ] {
        out[at..at + 2].copy_from_slice(&two(v));
    }
    out[20] = two(milli / 100)[1];
    // Every byte is an ASCII digit or separator: one copy, no char-by-char pushes.
    std::str::from_utf8(&out).ok().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The digit-by-digit form is the `format!` one, over years 0000-9999.
    #[test]
    fn formatted_times_are_the_padded_fields() {
        let mut ms = -62_167_219_200_000i64; // 0000-01-01
        let last = 253_402_300_799_999i64; // 9999-12-31T23:59:59.999
        let step = 7_919_999_999_977i64 / 64;
        while ms <= last {
            for t in [ms, ms + 999, ms + 86_399_999] {
                let days = t.div_euclid(86_400_000);
                let rem = t.rem_euclid(86_400_000);
                let (y, m, d) = civil_from_days(days);
                let want = format!(
                    "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
                    rem / 3_600_000,
                    rem / 60_000 % 60,
                    rem / 1000 % 60,
                    rem % 1000
                );
                if (0..=9999).contains(&y) {
                    assert_eq!(format_rfc3339_ms(t).as_deref(), Some(want.as_str()), "{t}");
                }
            }
            ms += step;
        }
        assert_eq!(format_rfc3339_ms(last + 1), None);
        assert_eq!(format_rfc3339_ms(-62_167_219_200_001), None);
    }

    #[test]
    fn timestamps_round_trip() {
        let s = "2025-12-17T19:39:21.535Z";
        let ms = parse_rfc3339_ms(s).unwrap();
        assert_eq!(ms, 1_766_000_361_535);
        assert_eq!(format_rfc3339_ms(ms).unwrap(), s);
        assert_eq!(parse_rfc3339_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_ms("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_rfc3339_ms("1969-12-31T23:59:59.999Z"), Some(-1));
        assert_eq!(format_rfc3339_ms(-1).unwrap(), "1969-12-31T23:59:59.999Z");
        assert_eq!(
            parse_rfc3339_ms("2024-02-29T00:00:00.123456Z").map(|m| m % 1000),
            Some(123)
        );
        assert_eq!(parse_rfc3339_ms("yesterday"), None);
        assert_eq!(parse_rfc3339_ms("2024-13-01T00:00:00Z"), None);
        for ms in [
            0i64,
            951_782_400_000,
            4_102_444_800_000,
            -62_135_596_800_000,
        ] {
            assert_eq!(parse_rfc3339_ms(&format_rfc3339_ms(ms).unwrap()), Some(ms));
        }
    }

    #[test]
    fn coverage_add_keeps_sorted() {
        let mut c = Coverage {
            complete: true,
            reasons: vec![],
        };
        c.add("b", 1);
        c.add("a", 2);
        c.add("b", 3);
        assert!(!c.complete);
        assert_eq!(c.count("b"), 4);
        assert_eq!(c.reasons[0].code, "a");
    }
}
