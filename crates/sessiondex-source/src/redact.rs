//! Secrets at ingest: well-known credential shapes replaced by `[redacted:<kind>]`.
//!
//! [`redact`] is a structural match on the shapes credentials have (a vendor's documented
//! prefix, a fixed alphabet and length, a PEM armour line, a URL's userinfo); it does not
//! classify prose. One forward pass over the bytes: each position's byte pair is looked up
//! in a table of the pairs a pattern can start with and only such a pair runs a matcher;
//! every matcher reads a bounded number of bytes except the private key block (which ends the
//! scan or jumps past its end), so the work is linear in the input. Clean text is returned
//! borrowed, without copying.
//!
//! `docs/secrets.md` lists every pattern with its source and what it does not catch.
//! The replacement never matches a pattern again, so redacting twice changes nothing.

use std::borrow::Cow;

/// The kind of a redacted credential; its [`SecretKind::as_str`] name appears in the
/// replacement `[redacted:<name>]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SecretKind {
    /// An AWS access key id (`AKIA…`, `ASIA…`, `ABIA…`, `ACCA…` + 16 upper-case letters or digits).
    AwsAccessKeyId,
    /// The value of a `secret_access_key` assignment (40 base64 characters).
    AwsSecretAccessKey,
    /// A GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    GithubToken,
    /// A GitLab personal access token (`glpat-`).
    GitlabToken,
    /// A Slack token (`xoxa-`, `xoxb-`, `xoxp-`, `xoxr-`, `xoxs-`).
    SlackToken,
    /// A Slack incoming webhook URL (`https://hooks.slack.com/services/…`).
    SlackWebhook,
    /// An OpenAI API key (`sk-…`, `sk-proj-…`).
    OpenaiKey,
    /// An Anthropic API key (`sk-ant-…`).
    AnthropicKey,
    /// A PEM private key block, armour lines included.
    PrivateKey,
    /// The token after `Bearer ` (as in an `Authorization: Bearer …` header).
    BearerToken,
    /// A JSON Web Token (`eyJ….eyJ….<signature>`).
    Jwt,
    /// The password of a URL's userinfo (`scheme://user:password@host`).
    UrlPassword,
}

impl SecretKind {
    /// Every kind, in the order `docs/secrets.md` lists them.
    pub const ALL: [SecretKind; 12] = [
        SecretKind::AwsAccessKeyId,
        SecretKind::AwsSecretAccessKey,
        SecretKind::GithubToken,
        SecretKind::GitlabToken,
        SecretKind::SlackToken,
        SecretKind::SlackWebhook,
        SecretKind::OpenaiKey,
        SecretKind::AnthropicKey,
        SecretKind::PrivateKey,
        SecretKind::BearerToken,
        SecretKind::Jwt,
        SecretKind::UrlPassword,
    ];

    /// The stable snake_case name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SecretKind::AwsAccessKeyId => "aws_access_key_id",
            SecretKind::AwsSecretAccessKey => "aws_secret_access_key",
            SecretKind::GithubToken => "github_token",
            SecretKind::GitlabToken => "gitlab_token",
            SecretKind::SlackToken => "slack_token",
            SecretKind::SlackWebhook => "slack_webhook",
            SecretKind::OpenaiKey => "openai_key",
            SecretKind::AnthropicKey => "anthropic_key",
            SecretKind::PrivateKey => "private_key",
            SecretKind::BearerToken => "bearer_token",
            SecretKind::Jwt => "jwt",
            SecretKind::UrlPassword => "url_password",
        }
    }

    /// The replacement text, `[redacted:<name>]`.
    #[must_use]
    pub fn marker(self) -> String {
        format!("[redacted:{}]", self.as_str())
    }
}

/// A found credential: the byte range replaced, and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// First byte replaced.
    pub start: usize,
    /// One past the last byte replaced.
    pub end: usize,
    /// What was found.
    pub kind: SecretKind,
}

/// The byte pairs a match can start with: a trigger byte and the bytes that may follow it
/// in some pattern (`AKIA`, `aws`, `secret`, `sk-`, `gh`, `glpat-`, `github_pat_`, `xox`,
/// `hooks.`, `-----`, `bearer`, `eyJ`, `://`). Every pattern is at least two bytes long, so a
/// position whose pair is not here, or the last byte, starts nothing.
const fn pairs() -> [u64; 1024] {
    let spec: [(&[u8], &[u8]); 10] = [
        (b"A", b"KSBCWw"),
        (b"a", b"Ww"),
        (b"Ss", b"Ee"),
        (b"s", b"k"),
        (b"g", b"hli"),
        (b"xh", b"o"),
        (b"-", b"-"),
        (b"Bb", b"Ee"),
        (b"e", b"y"),
        (b":", b"/"),
    ];
    let mut t = [0u64; 1024];
    let mut k = 0;
    while k < spec.len() {
        let (firsts, seconds) = spec[k];
        let mut f = 0;
        while f < firsts.len() {
            let mut n = 0;
            while n < seconds.len() {
                let pair = (firsts[f] as usize) << 8 | seconds[n] as usize;
                t[pair / 64] |= 1 << (pair % 64);
                n += 1;
            }
            f += 1;
        }
        k += 1;
    }
    t
}
static PAIR: [u64; 1024] = pairs();

/// Whether the pair `s[i]`, `s[i + 1]` can start a match.
fn pair_starts(s: &[u8], i: usize) -> bool {
    let Some(&next) = s.get(i + 1) else {
        return false;
    };
    let pair = usize::from(s[i]) << 8 | usize::from(next);
    PAIR[pair / 64] & (1 << (pair % 64)) != 0
}

/// How far into a token body a matcher looks for the digit some patterns require.
const DIGIT_WINDOW: usize = 64;

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `[A-Za-z0-9_-]`, the base64url alphabet most tokens use.
fn is_b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `[A-Za-z0-9/+]`, standard base64 without padding.
fn is_b64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'/' || b == b'+'
}

/// Characters of an opaque bearer token (RFC 6750 `b64token`).
fn is_b64token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// The character classes token bodies are runs of.
#[derive(Clone, Copy)]
enum Class {
    Alnum,
    AlnumUnderscore,
    AlnumDash,
    B64Url,
    B64,
    B64Token,
    WebhookPath,
}

impl Class {
    const COUNT: usize = 7;

    fn test(self, b: u8) -> bool {
        match self {
            Class::Alnum => is_alnum(b),
            Class::AlnumUnderscore => is_alnum(b) || b == b'_',
            Class::AlnumDash => is_alnum(b) || b == b'-',
            Class::B64Url => is_b64url(b),
            Class::B64 => is_b64(b),
            Class::B64Token => is_b64token(b),
            Class::WebhookPath => is_alnum(b) || matches!(b, b'/' | b'_' | b'+' | b'-'),
        }
    }
}

/// The text and, per class, the last run measured: a run that starts inside it ends where it
/// ends. Matchers that fail after measuring a long run (`sk-sk-sk-…` without a digit) would
/// otherwise measure it again from every trigger inside it.
struct Scan<'a> {
    s: &'a [u8],
    runs: [(usize, usize); Class::COUNT],
}

impl Scan<'_> {
    /// The end of the run of `class` bytes starting at `from`.
    fn run_end(&mut self, from: usize, class: Class) -> usize {
        let (start, end) = self.runs[class as usize];
        if start <= from && from < end {
            return end;
        }
        let mut i = from;
        while i < self.s.len() && class.test(self.s[i]) {
            i += 1;
        }
        self.runs[class as usize] = (from, i);
        i
    }
}

/// `s[at..]` starts with `lit` (ASCII, case-sensitive).
fn starts(s: &[u8], at: usize, lit: &[u8]) -> bool {
    s.len() >= at + lit.len() && &s[at..at + lit.len()] == lit
}

/// `s[at..]` starts with `lit` ignoring ASCII case (`lit` lower-case).
fn starts_ci(s: &[u8], at: usize, lit: &[u8]) -> bool {
    s.len() >= at + lit.len() && s[at..at + lit.len()].eq_ignore_ascii_case(lit)
}

/// No ASCII letter or digit just before `at`.
fn boundary_before(s: &[u8], at: usize) -> bool {
    at == 0 || !is_alnum(s[at - 1])
}

/// Whether the pair `c0`, `c1` may start a match: a superset of [`PAIR`] (letters but the
/// first `A` folded to lower case, `\r` and `\x1a` taken for `-` and `:`), written without branches so that a
/// loop over a block of pairs compiles to vector compares.
#[inline(always)]
fn pair_may_start(c0: u8, c1: u8) -> bool {
    let (l0, l1) = (c0 | 0x20, c1 | 0x20);
    let a = ((c0 == b'A') & ((l1 == b'k') | (l1 == b's') | (l1 == b'b') | (l1 == b'c')))
        | ((l0 == b'a') & (l1 == b'w'));
    let s = (l0 == b's') & ((l1 == b'e') | (l1 == b'k'));
    let g = (l0 == b'g') & ((l1 == b'h') | (l1 == b'l') | (l1 == b'i'));
    let o = ((l0 == b'x') | (l0 == b'h')) & (l1 == b'o');
    let e = ((l0 == b'b') & (l1 == b'e')) | ((l0 == b'e') & (l1 == b'y'));
    let punct = ((l0 == b'-') & (l1 == b'-')) | ((l0 == b':') & (l1 == b'/'));
    a | s | g | o | e | punct
}

/// Bytes per block of [`find`]'s scan.
const BLOCK: usize = 64;

/// Every credential in `text`, in order, not overlapping.
///
/// The scan looks at 64 byte pairs at a time (`pair_may_start`, vectorized) and tries a
/// match only where `PAIR` holds; `find_from` is the same scan one byte at a time.
#[must_use]
pub fn find(text: &str) -> Vec<Found> {
    let s = text.as_bytes();
    let mut scan = Scan {
        s,
        runs: [(0, 0); Class::COUNT],
    };
    let mut out = Vec::new();
    // The next position a match may start at, and the floor a match never reaches back
    // before (as in `find_from`).
    let (mut next, mut floor) = (0usize, 0usize);
    let mut flags = [0u8; BLOCK];
    let mut block = 0;
    // Whole blocks whose every pair is in `s` (the last byte has no pair and starts nothing).
    while block + BLOCK < s.len() {
        let (first, second) = (&s[block..block + BLOCK], &s[block + 1..=block + BLOCK]);
        for ((f, &c0), &c1) in flags.iter_mut().zip(first).zip(second) {
            *f = u8::from(pair_may_start(c0, c1));
        }
        // Each 8 flags (bytes 0 or 1) to 8 bits: the multiply moves byte k's bit to bit
        // 56 + k and nothing carries.
        let mut bits = 0u64;
        for (w, word) in flags.chunks_exact(8).enumerate() {
            let word = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
            bits |= (word.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * w);
        }
        while bits != 0 {
            let i = block + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            try_at(&mut scan, i, &mut next, &mut floor, &mut out);
        }
        block += BLOCK;
    }
    for i in block..s.len() {
        try_at(&mut scan, i, &mut next, &mut floor, &mut out);
    }
    out
}

/// One step of [`find`] at `i`: a match tried where [`PAIR`] says one can start and no
/// earlier match covers `i`.
#[inline(always)]
fn try_at(
    scan: &mut Scan<'_>,
    i: usize,
    next: &mut usize,
    floor: &mut usize,
    out: &mut Vec<Found>,
) {
    if i < *next || !pair_starts(scan.s, i) {
        return;
    }
    if let Some(f) = match_at(scan, i, *floor) {
        if f.end > i {
            out.push(f);
            *next = f.end;
            *floor = f.end;
        }
    }
}

/// [`find`] one byte at a time, trying a match only where `may_start` says one can start
/// (the tests' reference: `pair_starts` for `find`, every position for the table's proof).
#[cfg(test)]
fn find_from(text: &str, may_start: impl Fn(&[u8], usize) -> bool) -> Vec<Found> {
    let s = text.as_bytes();
    let mut scan = Scan {
        s,
        runs: [(0, 0); Class::COUNT],
    };
    let mut out = Vec::new();
    let mut i = 0;
    // Bytes before `floor` were already replaced or passed: a match never reaches back
    // before it.
    let mut floor = 0;
    while i < s.len() {
        if !may_start(s, i) {
            i += 1;
            continue;
        }
        match match_at(&mut scan, i, floor) {
            Some(f) if f.end > i => {
                out.push(f);
                i = f.end;
                floor = f.end;
            }
            _ => i += 1,
        }
    }
    out
}

/// `text` with every credential replaced by `[redacted:<kind>]`; borrowed when there is none.
#[must_use]
pub fn redact(text: &str) -> Cow<'_, str> {
    let found = find(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for f in found {
        // Every match starts and ends next to an ASCII byte (or the text's ends), so these
        // are char boundaries; `get` keeps that a checked fact rather than a panic.
        out.push_str(text.get(last..f.start).unwrap_or(""));
        out.push_str("[redacted:");
        out.push_str(f.kind.as_str());
        out.push(']');
        last = f.end;
    }
    out.push_str(text.get(last..).unwrap_or(""));
    Cow::Owned(out)
}

/// Redacts `s` in place; true when anything changed.
pub fn redact_in_place(s: &mut String) -> bool {
    if let Cow::Owned(r) = redact(s) {
        *s = r;
        true
    } else {
        false
    }
}

/// Redacts every string inside a JSON value, in place.
pub fn redact_json(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            redact_in_place(s);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(redact_json),
        serde_json::Value::Object(o) => o.values_mut().for_each(redact_json),
        _ => {}
    }
}

fn found(start: usize, end: usize, kind: SecretKind) -> Option<Found> {
    Some(Found { start, end, kind })
}

/// The match that the trigger byte at `i` starts (or, looking back no further than `floor`,
/// ends a scheme of).
fn match_at(sc: &mut Scan<'_>, i: usize, floor: usize) -> Option<Found> {
    let s = sc.s;
    match s[i] {
        b'A' => aws_key_id(s, i).or_else(|| secret_access_key(sc, i)),
        b'a' | b'S' => secret_access_key(sc, i),
        b's' => anthropic_or_openai(sc, i).or_else(|| secret_access_key(sc, i)),
        b'g' => github(sc, i).or_else(|| gitlab(sc, i)),
        b'x' => slack_token(sc, i),
        b'h' => slack_webhook(sc, i, floor),
        b'-' => private_key(s, i),
        b'B' | b'b' => bearer(sc, i),
        b'e' => jwt(sc, i),
        b':' => url_password(s, i),
        _ => None,
    }
}

/// `(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}`, alone (no letter or digit on either side).
fn aws_key_id(s: &[u8], i: usize) -> Option<Found> {
    let prefix = [b"AKIA", b"ASIA", b"ABIA", b"ACCA"]
        .iter()
        .any(|p| starts(s, i, *p));
    if !prefix || !boundary_before(s, i) {
        return None;
    }
    let body = s.get(i + 4..i + 20)?;
    if !body
        .iter()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    {
        return None;
    }
    if s.get(i + 20).is_some_and(|b| is_alnum(*b)) {
        return None;
    }
    found(i, i + 20, SecretKind::AwsAccessKeyId)
}

/// `[aws_]secret[_-]?access[_-]?key` (any case), optional quotes, `=` or `:`, optional quotes,
/// then 40 base64 characters: the value is replaced, the name kept.
fn secret_access_key(sc: &mut Scan<'_>, i: usize) -> Option<Found> {
    let s = sc.s;
    let mut j = i;
    if starts_ci(s, j, b"aws") {
        j += 3;
        if matches!(s.get(j), Some(b'_' | b'-')) {
            j += 1;
        }
    } else if !boundary_before(s, i) && s[i - 1] != b'_' {
        // `secret…` inside a longer word is not a key name (`aws_` before it is handled by
        // the match starting at `a`).
        return None;
    }
    for (k, part) in [&b"secret"[..], b"access", b"key"].iter().enumerate() {
        if k > 0 && matches!(s.get(j), Some(b'_' | b'-')) {
            j += 1;
        }
        if !starts_ci(s, j, part) {
            return None;
        }
        j += part.len();
    }
    let quote = |b: u8| matches!(b, b'"' | b'\'' | b'\\' | b' ' | b'\t');
    let limit = j + 8;
    while j < s.len() && j < limit && quote(s[j]) {
        j += 1;
    }
    if !matches!(s.get(j), Some(b'=' | b':')) {
        return None;
    }
    j += 1;
    let limit = j + 8;
    while j < s.len() && j < limit && quote(s[j]) {
        j += 1;
    }
    let end = sc.run_end(j, Class::B64);
    if end - j != 40 || s.get(end) == Some(&b'=') {
        return None;
    }
    found(j, end, SecretKind::AwsSecretAccessKey)
}

/// `gh[pousr]_[A-Za-z0-9]{30,}` or `github_pat_[A-Za-z0-9_]{22,}`.
fn github(sc: &mut Scan<'_>, i: usize) -> Option<Found> {
    let s = sc.s;
    if !boundary_before(s, i) {
        return None;
    }
    if starts(s, i, b"github_pat_") {
        let end = sc.run_end(i + 11, Class::AlnumUnderscore);
        return (end - (i + 11) >= 22).then_some(Found {
            start: i,
            end,
            kind: SecretKind::GithubToken,
        });
    }
    if s.get(i + 1) != Some(&b'h')
        || !matches!(s.get(i + 2), Some(b'p' | b'o' | b'u' | b's' | b'r'))
        || s.get(i + 3) != Some(&b'_')
    {
        return None;
    }
    let end = sc.run_end(i + 4, Class::Alnum);
    if end - (i + 4) < 30 || s.get(end) == Some(&b'_') {
        return None;
    }
    found(i, end, SecretKind::GithubToken)
}

/// `glpat-[A-Za-z0-9_-]{20,}`.
fn gitlab(sc: &mut Scan<'_>, i: usize) -> Option<Found> {
    let s = sc.s;
    if !starts(s, i, b"glpat-") || !boundary_before(s, i) {
        return None;
    }
    let end = sc.run_end(i + 6, Class::B64Url);
    (end - (i + 6) >= 20).then_some(Found {
        start: i,
        end,
        kind: SecretKind::GitlabToken,
    })
}

/// `xox[abprs]-[A-Za-z0-9-]{10,}`.
fn slack_token(sc: &mut Scan<'_>, i: usize) -> Option<Found> {
    let s = sc.s;
    if !starts(s, i, b"xox")
        || !matches!(s.get(i + 3), Some(b'a' | b'b' | b'p' | b'r' | b's'))
        || s.get(i + 4) != Some(&b'-')
        || !boundary_before(s, i)
    {
        return None;
    }
    let end = sc.run_end(i + 5, Class::AlnumDash);
    (end - (i + 5) >= 10).then_some(Found {
        start: i,
        end,
        kind: SecretKind::SlackToken,
    })
}

/// `[http[s]://]hooks.slack.com/(services|workflows|triggers)/[A-Za-z0-9/_+-]{10,}`: the whole
/// URL (its scheme too when it is there and not already passed).
fn slack_webhook(sc: &mut Scan<'_>, i: usize, floor: usize) -> Option<Found> {
    let s = sc.s;
    if !starts(s, i, b"hooks.slack.com/") {
        return None;
    }
    let path = i + 16;
    let kind_len = [&b"services/"[..], b"workflows/", b"triggers/"]
        .iter()
        .find(|p| starts(s, path, p))
        .map(|p| p.len())?;
    let body = path + kind_len;
    let end = sc.run_end(body, Class::WebhookPath);
    if end - body < 10 {
        return None;
    }
    let mut start = i;
    for scheme in [&b"https://"[..], b"http://"] {
        if i >= floor + scheme.len() && &s[i - scheme.len()..i] == scheme {
            start = i - scheme.len();
            break;
        }
    }
    found(start, end, SecretKind::SlackWebhook)
}

/// `sk-ant-[A-Za-z0-9_-]{20,}` (Anthropic), else `sk-[A-Za-z0-9_-]{20,}` with a digit in it
/// (OpenAI, `sk-proj-…` and the other project and service account forms included).
fn anthropic_or_openai(sc: &mut Scan<'_>, i: usize) -> Option<Found> {
    let s = sc.s;
    if !starts(s, i, b"sk-") || !boundary_before(s, i) {
        return None;
    }
    if starts(s, i, b"sk-ant-") {
        let end = sc.run_end(i + 7, Class::B64Url);
        if end - (i + 7) >= 20 {
            return found(i, end, SecretKind::AnthropicKey);
        }
        return None;
    }
    let end = sc.run_end(i + 3, Class::B64Url);
    let body = &s[i + 3..end];
    if body.len() >= 20 && has_digit(body) {
        return found(i, end, SecretKind::OpenaiKey);
    }
    None
}

/// `-----BEGIN <label>PRIVATE KEY<rest>-----` through the matching `-----END …-----` line (or
/// the end of the text when the block is cut off). `<label>` and `<rest>` are upper-case
/// letters, digits and spaces (`RSA `, `OPENSSH `, `EC `, `ENCRYPTED `, PGP's ` BLOCK`).
fn private_key(s: &[u8], i: usize) -> Option<Found> {
    if !starts(s, i, b"-----BEGIN ") {
        return None;
    }
    let label_end = armour_label(s, i + 11)?;
    let label = &s[i + 11..label_end];
    if !contains(label, b"PRIVATE KEY") {
        return None;
    }
    let body = label_end + 5;
    let Some(at) = memchr::memmem::find(&s[body..], b"-----END ") else {
        return found(i, s.len(), SecretKind::PrivateKey);
    };
    let end_label = body + at + 9;
    let end = armour_label(s, end_label).map_or(end_label, |e| e + 5);
    found(i, end, SecretKind::PrivateKey)
}

/// The end of an armour label at `from` (`[A-Z0-9 ]{1,64}` then `-----`).
fn armour_label(s: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    while j < s.len()
        && j - from < 64
        && (s[j].is_ascii_uppercase() || s[j].is_ascii_digit() || s[j] == b' ')
    {
        j += 1;
    }
    (j > from && starts(s, j, b"-----")).then_some(j)
}

/// A digit among the first [`DIGIT_WINDOW`] bytes.
fn has_digit(body: &[u8]) -> bool {
    body.iter().take(DIGIT_WINDOW).any(u8::is_ascii_digit)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `bearer` (any case, alone) then spaces then a token of 16+ `b64token` characters with a
/// digit in it: the token is replaced, `Bearer ` kept.
fn bearer(sc: &mut Scan<'_>, i: usize) -> Option<Found> {
    let s = sc.s;
    if !starts_ci(s, i, b"bearer") || !boundary_before(s, i) {
        return None;
    }
    let mut j = i + 6;
    let spaces = j;
    while j < s.len() && j - spaces < 8 && s[j] == b' ' {
        j += 1;
    }
    if j == spaces {
        return None;
    }
    let end = sc.run_end(j, Class::B64Token);
    let token = &s[j..end];
    if token.len() >= 16 && has_digit(token) {
        return found(j, end, SecretKind::BearerToken);
    }
    None
}

/// `eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`: a JWS in compact form whose
/// header and payload are base64url JSON objects.
fn jwt(sc: &mut Scan<'_>, i: usize) -> Option<Found> {
    let s = sc.s;
    if !starts(s, i, b"eyJ") || !boundary_before(s, i) {
        return None;
    }
    let head = sc.run_end(i + 3, Class::B64Url);
    if head - i < 13 || s.get(head) != Some(&b'.') || !starts(s, head + 1, b"eyJ") {
        return None;
    }
    let payload = sc.run_end(head + 4, Class::B64Url);
    if payload - (head + 1) < 13 || s.get(payload) != Some(&b'.') {
        return None;
    }
    let end = sc.run_end(payload + 1, Class::B64Url);
    found(i, end, SecretKind::Jwt)
}

/// `<scheme>://<user>:<password>@<host>`: the password is replaced. `<scheme>` is a URL scheme
/// just before `://`; `<user>` has no `:/@?#` or space, `<password>` no `/@?#` or space, each
/// at most 256 bytes.
fn url_password(s: &[u8], i: usize) -> Option<Found> {
    if !starts(s, i, b"://") || i == 0 || !s[i - 1].is_ascii_alphanumeric() {
        return None;
    }
    let userinfo = |b: u8| !matches!(b, b'/' | b'@' | b'?' | b'#') && !b.is_ascii_whitespace();
    let user_start = i + 3;
    let mut j = user_start;
    while j < s.len() && j - user_start < 256 && userinfo(s[j]) && s[j] != b':' {
        j += 1;
    }
    if j == user_start || s.get(j) != Some(&b':') {
        return None;
    }
    let pw_start = j + 1;
    j = pw_start;
    while j < s.len() && j - pw_start < 256 && userinfo(s[j]) {
        j += 1;
    }
    if j == pw_start || s.get(j) != Some(&b'@') {
        return None;
    }
    // A host follows: a letter, digit or `[` (an IPv6 literal).
    if !s
        .get(j + 1)
        .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'[')
    {
        return None;
    }
    if starts(s, pw_start, b"[redacted:") {
        return None;
    }
    found(pw_start, j, SecretKind::UrlPassword)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_is_borrowed() {
        assert!(matches!(
            redact("nothing to see: a://b, sk-1"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn replaces_and_is_idempotent() {
        let t = "x AKIAIOSFODNN7EXAMPLE y";
        let r = redact(t);
        assert_eq!(r, "x [redacted:aws_access_key_id] y");
        assert!(matches!(redact(&r), Cow::Borrowed(_)));
    }

    /// Pieces of every pattern, near misses and separators, so that random texts built of
    /// them hold matches, cut matches and matches next to each other.
    const PIECES: [&str; 40] = [
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
        "IOSFODNN7EXAMPLE",
        "aws_",
        "AWS-",
        "Aws",
        "secret",
        "SECRET_",
        "access",
        "-ACCESS",
        "key",
        "Key",
        "=",
        "':",
        "\"",
        " ",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "sk-",
        "sk-ant-",
        "proj-",
        "ghp_",
        "gho_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxs-",
        "hooks.slack.com/",
        "services/",
        "https://",
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "-----END RSA PRIVATE KEY-----",
        "Bearer ",
        "bearer  ",
        "eyJ",
        ".",
        "://u:",
        "pw@host",
        "a1B2c3D4e5F6g7H8i9J0_-",
    ];

    proptest::proptest! {
        /// The pair table skips only positions where no matcher finds anything: the scan
        /// gives what trying every position gives.
        #[test]
        fn pair_table_skips_no_match(picks in proptest::collection::vec(0..PIECES.len(), 0..24)) {
            let text: String = picks.iter().map(|&k| PIECES[k]).collect();
            proptest::prop_assert_eq!(find(&text), find_from(&text, |_, _| true));
        }
    }

    proptest::proptest! {
        /// The block scan tries the positions the byte scan tries, in the same order: the
        /// same matches wherever the pieces fall against the 64-byte blocks (the filler shifts
        /// them; `sesesese` is dense in pairs that start no match).
        #[test]
        fn block_scan_is_the_byte_scan(
            shift in 0usize..130,
            picks in proptest::collection::vec(0..PIECES.len(), 0..48),
        ) {
            let mut text: String = "se".repeat(shift / 2);
            text.push_str(&"x".repeat(shift % 2));
            text.extend(picks.iter().map(|&k| PIECES[k]));
            proptest::prop_assert_eq!(find(&text), find_from(&text, pair_starts));
        }
    }

    #[test]
    fn vector_filter_keeps_every_table_pair() {
        for pair in 0..=u16::MAX {
            let [c0, c1] = pair.to_be_bytes();
            let s = [c0, c1];
            if pair_starts(&s, 0) {
                assert!(pair_may_start(c0, c1), "{c0:#04x} {c1:#04x}");
            }
        }
    }

    #[test]
    fn pair_table_covers_every_planted_kind() {
        // One of each kind, alone: each needs its own pair in the table.
        let planted = [
            "AKIAIOSFODNN7EXAMPLE",
            // `aws` joined to `secret`: only the match from `a` finds these.
            "AWSSecretAccessKey=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "awssecret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "SECRET_ACCESS_KEY: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "ghp_a1B2c3D4e5F6g7H8i9J0a1B2c3D4e5F6g7H8",
            "github_pat_a1B2c3D4e5F6g7H8i9J0a1B2c3",
            "glpat-a1B2c3D4e5F6g7H8i9J0",
            "xoxb-a1B2c3D4e5F6",
            "hooks.slack.com/services/T000/B000/XXXX",
            "sk-ant-a1B2c3D4e5F6g7H8i9J0",
            "sk-a1B2c3D4e5F6g7H8i9J0",
            "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----",
            "Bearer a1B2c3D4e5F6g7H8i9J0",
            "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.sig",
            "postgres://user:hunter2@db",
        ];
        for text in planted {
            assert_eq!(find(text).len(), 1, "{text}");
            // Every case of the first three bytes (`aws`, `Bearer` and `secret` match in any
            // case, the others in one): the table agrees with trying every position.
            for flips in 0..8 {
                let variant: String = text
                    .char_indices()
                    .map(|(i, c)| {
                        if i < 3 && flips & (1 << i) != 0 {
                            if c.is_ascii_lowercase() {
                                c.to_ascii_uppercase()
                            } else {
                                c.to_ascii_lowercase()
                            }
                        } else {
                            c
                        }
                    })
                    .collect();
                assert_eq!(
                    find(&variant),
                    find_from(&variant, |_, _| true),
                    "{variant}"
                );
            }
        }
    }
}
