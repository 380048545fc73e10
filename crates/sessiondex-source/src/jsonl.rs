//! Streaming JSON Lines: one line at a time, glued objects recovered, bad bytes counted.

use std::io::BufRead;

use serde_json::{Map, Value};

use crate::coverage::{ReadCoverage, ReasonCode};

/// Where an object came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    /// 1-based line number.
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    /// 1-based position of the object on its line (2+ only for glued objects).
    pub k: u32,
}

impl Loc {
    /// A stable id derived from the position, for formats whose entries have none:
    /// `l<line>` for the first object of a line, `l<line>.<k>` for a glued one.
    #[must_use]
    pub fn derived_id(&self) -> String {
        if self.k <= 1 {
            format!("l{}", self.line)
        } else {
            format!("l{}.{}", self.line, self.k)
        }
    }
}

/// Parses every JSON value on one line (without its terminator). Values that are objects are
/// passed to `f`; anything else, and a parse error, is counted as `malformed_line`.
///
/// Returns `false` when the line had a parse error (the objects before the error were still
/// delivered).
pub(crate) fn parse_line(
    bytes: &[u8],
    loc_line: u64,
    offset: u64,
    cov: &mut ReadCoverage,
    f: &mut dyn FnMut(Loc, Map<String, Value>),
) -> bool {
    let owned;
    let text: &str = match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => {
            cov.add(ReasonCode::InvalidUtf8, loc_line);
            owned = String::from_utf8_lossy(bytes).into_owned();
            &owned
        }
    };
    if is_blank(text) {
        return true;
    }
    let mut k = 0u32;
    let mut ok = true;
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    for item in &mut stream {
        match item {
            Ok(Value::Object(map)) => {
                k += 1;
                f(
                    Loc {
                        line: loc_line,
                        offset,
                        k,
                    },
                    map,
                );
            }
            Ok(_) => {
                k += 1;
                cov.add(ReasonCode::MalformedLine, loc_line);
            }
            Err(_) => {
                ok = false;
                break;
            }
        }
    }
    if !ok {
        cov.add(ReasonCode::MalformedLine, loc_line);
    }
    ok
}

/// A line holding nothing but JSON whitespace (space, tab, CR, LF): skipped, no record and no
/// reason. Other whitespace (a vertical tab, a form feed, U+2028, ...) is no JSON and makes the
/// line `malformed_line`, as any other stray character does.
fn is_blank(text: &str) -> bool {
    text.bytes()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// Would this line parse without error? Used to decide whether an unterminated last line is a
/// partial tail.
fn parses(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    is_blank(&text)
        || serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .all(|v| v.is_ok())
}

/// What [`read_lines`] hands to its callback.
pub(crate) enum LineEvent<'a> {
    /// A line that does not start like JSON, offered raw; the callback returns `true` to take it.
    Raw(u64, &'a [u8]),
    /// One JSON object.
    Object(Loc, Map<String, Value>),
}

/// The line loop behind [`read_objects`]: non-JSON-looking lines are offered raw first
/// (oh-my-pi's title line), and counted as malformed only if the callback declines them.
///
/// Every consumed line, blank ones included, counts once in `cov.lines`, so when `cov` starts
/// at zero, `first_line + cov.lines` is the number of the next line; a partial tail is not
/// counted. Returns whether the last consumed line had no newline (`None` when no line was
/// consumed): a later read that continues at `cov.complete_bytes` starts inside that line.
pub(crate) fn read_lines<R: BufRead>(
    mut reader: R,
    start: u64,
    first_line: u64,
    cov: &mut ReadCoverage,
    f: &mut dyn FnMut(LineEvent<'_>) -> bool,
) -> std::io::Result<Option<bool>> {
    let mut buf = Vec::new();
    let mut offset = start;
    let mut line = first_line;
    let mut open = None;
    loop {
        // A line that lies whole in the reader's buffer is read there; one that runs past it
        // is gathered into `buf`.
        let whole = {
            let avail = reader.fill_buf()?;
            if avail.is_empty() {
                break;
            }
            match memchr::memchr(b'\n', avail) {
                Some(nl) => {
                    let step = one_line(&avail[..=nl], line, offset, cov, f);
                    Some((nl + 1, step))
                }
                None => None,
            }
        };
        let (n, step) = match whole {
            Some((n, step)) => {
                reader.consume(n);
                (n, step)
            }
            None => {
                buf.clear();
                let n = reader.read_until(b'\n', &mut buf)?;
                (n, one_line(&buf, line, offset, cov, f))
            }
        };
        let Some(terminated) = step else {
            break;
        };
        cov.lines += 1;
        offset += n as u64;
        cov.complete_bytes = offset;
        line += 1;
        open = Some(!terminated);
    }
    Ok(open)
}

/// One line of [`read_lines`] (with its newline, if it has one): offered raw or parsed.
/// Returns whether it had a newline, or `None` for a partial tail (not consumed as a line).
fn one_line(
    raw: &[u8],
    line: u64,
    offset: u64,
    cov: &mut ReadCoverage,
    f: &mut dyn FnMut(LineEvent<'_>) -> bool,
) -> Option<bool> {
    let terminated = raw.last() == Some(&b'\n');
    let mut body = raw;
    if terminated {
        body = &body[..body.len() - 1];
    }
    if body.last() == Some(&b'\r') {
        body = &body[..body.len() - 1];
    }
    let first = body.iter().find(|c| !c.is_ascii_whitespace());
    let looks_json = first.is_none_or(|c| matches!(c, b'{' | b'[' | b'"') || c.is_ascii_digit());
    let taken = !looks_json && terminated && f(LineEvent::Raw(line, body));
    if !taken {
        if !terminated && !parses(body) {
            cov.add(ReasonCode::PartialTail, line);
            return None;
        }
        parse_line(body, line, offset, cov, &mut |loc, obj| {
            f(LineEvent::Object(loc, obj));
        });
    }
    Some(terminated)
}

/// Reads JSON Lines from `reader`, starting at byte `start` and line number `first_line`
/// (1-based), calling `f` for every object.
///
/// A last line without a newline that does not parse is a partial tail: it is not delivered,
/// it is reported as `partial_tail`, and `cov.complete_bytes` stops before it.
///
/// # Errors
///
/// Only I/O errors of `reader`.
pub fn read_objects<R: BufRead>(
    reader: R,
    start: u64,
    first_line: u64,
    cov: &mut ReadCoverage,
    f: &mut dyn FnMut(Loc, Map<String, Value>),
) -> std::io::Result<()> {
    read_lines(reader, start, first_line, cov, &mut |ev| {
        if let LineEvent::Object(loc, obj) = ev {
            f(loc, obj);
        }
        false
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    type Objects = Vec<(Loc, Map<String, Value>)>;

    fn collect(input: &[u8]) -> (Objects, ReadCoverage) {
        let mut out = Vec::new();
        let mut cov = ReadCoverage::new();
        read_objects(input, 0, 1, &mut cov, &mut |l, m| out.push((l, m))).unwrap();
        (out, cov)
    }

    #[test]
    fn glued_objects_are_both_recovered() {
        let (out, cov) = collect(b"{\"a\":1}{\"b\":2}\n{\"c\":3}\n");
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].0.k, 2);
        assert_eq!(out[1].0.derived_id(), "l1.2");
        assert!(cov.complete);
        assert_eq!(cov.complete_bytes, 23);
    }

    #[test]
    fn partial_tail_is_not_delivered() {
        let (out, cov) = collect(b"{\"a\":1}\n{\"b\":");
        assert_eq!(out.len(), 1);
        assert_eq!(cov.count(ReasonCode::PartialTail), 1);
        assert_eq!(cov.count(ReasonCode::MalformedLine), 0);
        assert_eq!(cov.complete_bytes, 8);
    }

    #[test]
    fn unterminated_complete_last_line_is_read() {
        let (out, cov) = collect(b"{\"a\":1}\n{\"b\":2}");
        assert_eq!(out.len(), 2);
        assert!(cov.complete);
        assert_eq!(cov.complete_bytes, 15);
    }

    #[test]
    fn non_objects_and_garbage_are_counted() {
        let (out, cov) = collect(b"\"massive error\"\n42\n[1]\nnot json\n{\"ok\":true}\n");
        assert_eq!(out.len(), 1);
        assert_eq!(cov.count(ReasonCode::MalformedLine), 4);
        assert!(!cov.complete);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_kept() {
        let (out, cov) = collect(b"{\"t\":\"a\xffb\"}\n");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].1["t"], "a\u{fffd}b");
        assert_eq!(cov.count(ReasonCode::InvalidUtf8), 1);
    }

    /// Every event of [`read_lines`], its coverage and its result, reading through a buffer of
    /// `cap` bytes (`title` lines are taken raw).
    fn events(input: &[u8], cap: usize) -> (Vec<String>, ReadCoverage, Option<bool>) {
        let mut out = Vec::new();
        let mut cov = ReadCoverage::new();
        let reader = std::io::BufReader::with_capacity(cap, input);
        let open = read_lines(reader, 0, 1, &mut cov, &mut |ev| match ev {
            LineEvent::Raw(line, body) => {
                out.push(format!("raw {line} {}", String::from_utf8_lossy(body)));
                body.starts_with(b"title")
            }
            LineEvent::Object(loc, obj) => {
                out.push(format!("{loc:?} {}", Value::Object(obj)));
                false
            }
        })
        .unwrap();
        (out, cov, open)
    }

    proptest::proptest! {
        /// Lines read where they lie in the reader's buffer and lines gathered across its end
        /// give the same events, counts and offsets, at every buffer size.
        #[test]
        fn buffer_size_changes_nothing(
            picks in proptest::collection::vec(0usize..9, 0..16),
            cap in 1usize..48,
        ) {
            const LINES: [&str; 9] = [
                "{\"a\":1}\n",
                "{\"a\":1}{\"b\":[2,3]}\r\n",
                "\n",
                "title of the session\n",
                "not json\n",
                "{\"t\":\"caf\u{e9} \u{1F600} a longer text that runs past small buffers\"}\n",
                "[1]\n",
                "{\"b\":",
                "{\"c\":3}",
            ];
            let input: String = picks.iter().map(|&k| LINES[k]).collect();
            let whole = events(input.as_bytes(), 1 << 16);
            let small = events(input.as_bytes(), cap);
            proptest::prop_assert_eq!(&small.0, &whole.0);
            proptest::prop_assert_eq!(&small.1, &whole.1);
            proptest::prop_assert_eq!(small.2, whole.2);
        }
    }

    #[test]
    fn crlf_and_blank_lines() {
        let (out, cov) = collect(b"{\"a\":1}\r\n\r\n{\"b\":2}\r\n");
        assert_eq!(out.len(), 2);
        assert!(cov.complete);
        assert_eq!(out[1].0.line, 3);
    }

    /// Whitespace that is not JSON's (a vertical tab, a form feed, U+2028, a no-break space)
    /// alone on a line is a malformed line, not a blank one: the records around it are kept
    /// and the coverage says a line was lost.
    #[test]
    fn other_whitespace_alone_is_malformed() {
        for junk in ["\u{b}", "\u{c}", "\u{2028}", "\u{a0}", " \t\u{b} "] {
            let input = format!("{{\"a\":1}}\n{junk}\n{{\"b\":2}}\n");
            let (out, cov) = collect(input.as_bytes());
            assert_eq!(out.len(), 2, "{junk:?}");
            assert_eq!(cov.count(ReasonCode::MalformedLine), 1, "{junk:?}");
            assert!(!cov.complete, "{junk:?}");
        }
        let (out, cov) = collect(b"{\"a\":1}\n \t \r\n{\"b\":2}\n");
        assert_eq!(out.len(), 2);
        assert!(cov.complete);
    }
}
