//! The envelope shared by every index file: header, payload, checksum footer.
//!
//! ```text
//! offset  size  field
//! 0       4     magic: b"SDXH" hot shard, b"SDXC" cold digest, b"SDXK" catalog
//! 4       4     format version, u32 LE (FORMAT_VERSION)
//! 8       4     endianness mark: u32 0x0102_0304 written LE (bytes 04 03 02 01)
//! 12      4     header length, u32 LE (32)
//! 16      8     schema fingerprint, u64 LE (xxh3-64 of the kind's schema text)
//! 24      8     payload length, u64 LE
//! 32      n     payload (an rkyv archive, root at its end)
//! 32+n    8     checksum: xxh3-64 of bytes [0, 32+n), u64 LE
//! 40+n    8     total file length (48+n), u64 LE
//! ```
//!
//! The checksum is XXH3-64 rather than CRC-32: it is several times faster in portable code
//! (WASM has no CRC instructions, and opening a 100 MB shard hashes all of it), and its 64 bits
//! leave a 2^-64 chance for random damage to pass instead of 2^-32. CRC's guarantee for short
//! bursts is not needed: any change is caught with overwhelming probability.
//!
//! Opening checks, in order: length, magic, version (a future version may change everything
//! after byte 8), the rest of the header, the exact file length, the checksum, the schema
//! fingerprint, then rkyv validation of the payload; readers then check each FST's own CRC-32C
//! (`checked_fst`). No input panics.
//!
//! # Alignment
//!
//! rkyv reads integers in place, so the file bytes must start at an address aligned to
//! [`ALIGN`] (16) bytes; the header is 32 bytes, so the payload is aligned too. An mmap is
//! page-aligned and [`rkyv::util::AlignedVec`] is 16-aligned; a plain `Vec<u8>` usually but not
//! always is. Readers return [`ErrorKind::Unaligned`] otherwise: pass the bytes through
//! [`aligned`], which copies only when needed.

use std::ops::Range;

use rkyv::util::AlignedVec;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, ErrorKind, Result};

/// The format version this build writes and reads.
///
/// 2: hot shards post every token of an entry's indexed text, also past the stored
/// `max_entry_chars` cut (version 1 posted only the stored text, so its postings cannot be
/// trusted as complete: a version 1 index is refused and rebuilt).
///
/// 3: cold digests store their integer columns (string offsets, record indexes, string ids,
/// field starts and postings) at the narrowest width of 1, 2 or 4 bytes, and an operation
/// address `<entry id>/<k>` as the child number `k` (rebuilt on open) instead of a string.
///
/// 4: the catalog's merged term map covers hot sessions too, and it gains an id key map and
/// each hot shard's entry and token totals, so a term or id query opens only the sessions
/// that can answer it.
///
/// 5: the catalog's id map gains a key for each pair of structural values one record holds
/// together, so two structural filters find their sessions without reading digests.
///
/// 6: a cold digest's vocabulary and field keys are front-coded term lists
/// ([`crate::terms`]) instead of FSTs, which cost more to build than anything else in a
/// digest and were only ever read in order.
///
/// 7: a cold digest no longer holds its vocabulary, only how many terms it kept: the
/// catalog's merged term map, which cold recall already read, is the one copy (the digest's
/// was read only to build that map, and was most of a small session's digest).
///
/// 8: the catalog's posting starts are `u32`, and a posting list in most sessions is a
/// bitmap of every session instead of varint deltas (whichever is smaller).
///
/// 9: a cold digest no longer holds the session's summary: the catalog's row, the only place
/// it was read from, is the one copy.
///
/// 10: a hot shard lists the entries of each value of its string filter fields and outcome
/// (with their token totals), so a filter reads its value's list instead of a whole column.
///
/// 11: a hot entry's flags say whether its stored text and thinking are NFKC.
///
/// 12: a hot shard carries a term table that finds a term's ordinal by a hash.
///
/// 13: a session's summary (a hot shard's and the catalog's row) counts the records without a
/// timestamp, so a time range over a cold session can tell whether its first and last times
/// speak for every record.
///
/// 14: the catalog's id keys are a sorted table front-coded in blocks, not an FST.
pub const FORMAT_VERSION: u32 = 14;
/// Required alignment of the start of a file's bytes in memory.
pub const ALIGN: usize = 16;
/// Header length in bytes.
pub const HEADER_LEN: usize = 32;
/// Footer length in bytes.
pub const FOOTER_LEN: usize = 16;
/// The endianness mark as stored (0x0102_0304 little-endian).
pub const ENDIAN_MARK: [u8; 4] = [4, 3, 2, 1];

/// Bytes aligned to [`ALIGN`], as the builders return them.
pub type Aligned = AlignedVec<ALIGN>;

/// The kinds of index file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A hot shard ([`crate::hot`]).
    Hot,
    /// A cold digest ([`crate::cold`]).
    Cold,
    /// The corpus catalog ([`crate::catalog`]).
    Catalog,
}

impl FileKind {
    /// The four magic bytes.
    #[must_use]
    pub fn magic(self) -> [u8; 4] {
        match self {
            FileKind::Hot => *b"SDXH",
            FileKind::Cold => *b"SDXC",
            FileKind::Catalog => *b"SDXK",
        }
    }

    /// A short name (`hot`, `cold`, `catalog`), also the file extension in the store.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Hot => "hot",
            FileKind::Cold => "cold",
            FileKind::Catalog => "catalog",
        }
    }

    /// The schema fingerprint stored in the header: xxh3-64 of the rkyv features, the summary's
    /// schema and the kind's payload schema, joined by newlines (change a schema text whenever
    /// its struct changes). Hashed at compile time, so the texts take no room in the binary.
    #[must_use]
    pub fn schema_fingerprint(self) -> u64 {
        match self {
            FileKind::Hot => HOT_FINGERPRINT,
            FileKind::Cold => COLD_FINGERPRINT,
            FileKind::Catalog => CATALOG_FINGERPRINT,
        }
    }

    /// The kind whose magic starts `bytes`.
    #[must_use]
    pub fn sniff(bytes: &[u8]) -> Option<FileKind> {
        let magic = bytes.get(..4)?;
        [FileKind::Hot, FileKind::Cold, FileKind::Catalog]
            .into_iter()
            .find(|k| k.magic() == magic)
    }
}

/// The rkyv features every payload is written with (pinned in the workspace manifest).
const RKYV_LAYOUT: &str = "rkyv 0.8 little_endian aligned pointer_width_32";

/// The texts a kind's schema fingerprint hashes ([`FileKind::schema_fingerprint`]).
const fn schema_parts(payload: &'static str) -> [&'static str; 3] {
    [RKYV_LAYOUT, crate::summary::SUMMARY_SCHEMA, payload]
}

/// The length of `parts` joined by newlines.
const fn joined_len(parts: [&str; 3]) -> usize {
    parts[0].len() + parts[1].len() + parts[2].len() + 2
}

/// `parts` joined by newlines, `N` bytes ([`joined_len`]), at compile time.
const fn joined<const N: usize>(parts: [&str; 3]) -> [u8; N] {
    let mut out = [0u8; N];
    let mut at = 0;
    let mut p = 0;
    while p < parts.len() {
        if p > 0 {
            out[at] = b'\n';
            at += 1;
        }
        let b = parts[p].as_bytes();
        let mut i = 0;
        while i < b.len() {
            out[at] = b[i];
            at += 1;
            i += 1;
        }
        p += 1;
    }
    out
}

/// The schema fingerprint of a payload schema text, as a constant.
macro_rules! fingerprint {
    ($payload:expr) => {{
        const PARTS: [&str; 3] = schema_parts($payload);
        const TEXT: [u8; joined_len(PARTS)] = joined(PARTS);
        xxhash_rust::const_xxh3::xxh3_64(&TEXT)
    }};
}

const HOT_FINGERPRINT: u64 = fingerprint!(crate::hot::SCHEMA);
const COLD_FINGERPRINT: u64 = fingerprint!(crate::cold::SCHEMA);
const CATALOG_FINGERPRINT: u64 = fingerprint!(crate::catalog::SCHEMA);

/// True when `bytes` starts at an address aligned to [`ALIGN`].
#[must_use]
pub fn is_aligned(bytes: &[u8]) -> bool {
    (bytes.as_ptr() as usize).is_multiple_of(ALIGN)
}

/// Bytes that are aligned to [`ALIGN`]: borrowed when they already were, else an aligned copy.
#[derive(Debug)]
pub enum MaybeAligned<'a> {
    /// The input, already aligned.
    Borrowed(&'a [u8]),
    /// An aligned copy.
    Owned(Aligned),
}

impl AsRef<[u8]> for MaybeAligned<'_> {
    fn as_ref(&self) -> &[u8] {
        match self {
            MaybeAligned::Borrowed(b) => b,
            MaybeAligned::Owned(v) => v.as_slice(),
        }
    }
}

/// `bytes` aligned for the readers, copying only when they are not.
#[must_use]
pub fn aligned(bytes: &[u8]) -> MaybeAligned<'_> {
    if is_aligned(bytes) {
        MaybeAligned::Borrowed(bytes)
    } else {
        MaybeAligned::Owned(copy_aligned(bytes))
    }
}

/// An aligned copy of `bytes`.
#[must_use]
pub fn copy_aligned(bytes: &[u8]) -> Aligned {
    let mut v = Aligned::with_capacity(bytes.len());
    v.extend_from_slice(bytes);
    v
}

/// Wraps a payload in header and footer.
#[cfg(test)]
pub(crate) fn seal(kind: FileKind, payload: &[u8]) -> Aligned {
    let mut out = Aligned::with_capacity(HEADER_LEN + payload.len() + FOOTER_LEN);
    out.extend_from_slice(&[0; HEADER_LEN]);
    out.extend_from_slice(payload);
    seal_in_place(kind, out)
}

/// A payload written after [`HEADER_LEN`] bytes of room ([`to_sealable`]) wrapped in header
/// and footer where it lies: the header fills the room and the footer is appended, so no
/// payload byte is copied (a copy was 53 MB of a 200 MB build's writes).
pub(crate) fn seal_in_place(kind: FileKind, mut out: Aligned) -> Aligned {
    debug_assert!(out.len() >= HEADER_LEN, "no room for the header");
    let payload_len = out.len().saturating_sub(HEADER_LEN);
    let total = HEADER_LEN + payload_len + FOOTER_LEN;
    // magic, version, endianness mark, header length, schema fingerprint, payload length
    let header = [
        u64::from(u32::from_le_bytes(kind.magic())) | u64::from(FORMAT_VERSION) << 32,
        u64::from(u32::from_le_bytes(ENDIAN_MARK)) | (HEADER_LEN as u64) << 32,
        kind.schema_fingerprint(),
        payload_len as u64,
    ];
    for (room, word) in out.chunks_exact_mut(8).zip(header) {
        room.copy_from_slice(&word.to_le_bytes());
    }
    let sum = xxh3_64(out.as_slice());
    out.extend_from_slice(&sum.to_le_bytes());
    out.extend_from_slice(&(total as u64).to_le_bytes());
    out
}

/// A buffer of [`to_sealable`] sealed as a file of `kind` whose archived summary records the
/// file's own size: `summary_at` is where the summary is in `R`, the payload's root. The size
/// is known once the payload is: the summary's `cache_bytes` is a fixed-width `u64`, written
/// into the payload before sealing.
pub(crate) fn seal_sized<R: rkyv::Portable>(
    kind: FileKind,
    mut out: Aligned,
    summary_at: usize,
) -> Result<(Aligned, u64)> {
    let payload_len = out.len().saturating_sub(HEADER_LEN);
    let size = (HEADER_LEN + payload_len + FOOTER_LEN) as u64;
    let at = HEADER_LEN
        + rkyv::api::root_position::<R>(payload_len)
        + summary_at
        + crate::summary::ARCHIVED_CACHE_BYTES_AT;
    out.get_mut(at..at + 8)
        .ok_or_else(|| Error::new(ErrorKind::TooLarge, "summary outside its payload"))?
        .copy_from_slice(&size.to_le_bytes());
    Ok((seal_in_place(kind, out), size))
}

/// Rewrites the payload length and the checksum footer of `bytes` so that the envelope's
/// length and checksum checks pass whatever the payload holds: `bytes[..32]` is kept as the
/// header (its payload length replaced), `bytes[32..len - 16]` is the payload, and the footer is
/// recomputed. Inputs shorter than header and footer come back unchanged (aligned).
///
/// For fuzzing and tests only: it lets damaged payloads reach rkyv validation and the readers
/// instead of stopping at the checksum. Nothing that writes index files calls it.
#[must_use]
pub fn reseal(bytes: &[u8]) -> Aligned {
    let mut out = copy_aligned(bytes);
    let total = out.len();
    if total < HEADER_LEN + FOOTER_LEN {
        return out;
    }
    let end = total - FOOTER_LEN;
    out[24..32].copy_from_slice(&((end - HEADER_LEN) as u64).to_le_bytes());
    let sum = xxh3_64(&out[..end]);
    out[end..end + 8].copy_from_slice(&sum.to_le_bytes());
    out[end + 8..].copy_from_slice(&(total as u64).to_le_bytes());
    out
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Checks the envelope of a file of `kind` and returns the payload's byte range.
pub(crate) fn unseal(kind: FileKind, bytes: &[u8]) -> Result<Range<usize>> {
    let truncated = |what: &str| Error::new(ErrorKind::Truncated, what.to_owned());
    if bytes.len() < 8 {
        return Err(truncated("shorter than a header"));
    }
    if bytes[..4] != kind.magic() {
        return Err(Error::new(
            ErrorKind::BadMagic,
            format!("not a {} file", kind.as_str()),
        ));
    }
    let version = le_u32(bytes, 4).unwrap_or(0);
    if version != FORMAT_VERSION {
        return Err(Error::new(
            ErrorKind::VersionMismatch {
                expected: FORMAT_VERSION,
                found: version,
            },
            format!("format version {version}, this build reads {FORMAT_VERSION}"),
        ));
    }
    if bytes.len() < HEADER_LEN + FOOTER_LEN {
        return Err(truncated("shorter than header and footer"));
    }
    if bytes[8..12] != ENDIAN_MARK {
        return Err(Error::new(ErrorKind::BadHeader, "bad endianness mark"));
    }
    if le_u32(bytes, 12) != Some(HEADER_LEN as u32) {
        return Err(Error::new(ErrorKind::BadHeader, "bad header length"));
    }
    let payload_len = le_u64(bytes, 24).unwrap_or(u64::MAX);
    let expected_total = payload_len
        .checked_add((HEADER_LEN + FOOTER_LEN) as u64)
        .ok_or_else(|| Error::new(ErrorKind::BadHeader, "payload length overflows"))?;
    let actual = bytes.len() as u64;
    if actual < expected_total {
        return Err(truncated(&format!(
            "{actual} bytes, header says {expected_total}"
        )));
    }
    if actual > expected_total {
        return Err(Error::new(
            ErrorKind::Corrupt,
            format!("{actual} bytes, header says {expected_total}"),
        ));
    }
    // `expected_total` equals `bytes.len()`, so this fits in usize.
    let end = HEADER_LEN + payload_len as usize;
    let stored_total = le_u64(bytes, end + 8);
    if stored_total != Some(expected_total) {
        return Err(Error::new(ErrorKind::Corrupt, "footer length mismatch"));
    }
    let stored_sum = le_u64(bytes, end).unwrap_or(0);
    if xxh3_64(&bytes[..end]) != stored_sum {
        return Err(Error::new(ErrorKind::ChecksumMismatch, "checksum mismatch"));
    }
    if le_u64(bytes, 16) != Some(kind.schema_fingerprint()) {
        return Err(Error::new(
            ErrorKind::SchemaMismatch,
            "schema fingerprint differs from this build's",
        ));
    }
    if !is_aligned(bytes) {
        return Err(Error::new(
            ErrorKind::Unaligned,
            format!("bytes must be {ALIGN}-byte aligned; copy them with format::aligned"),
        ));
    }
    Ok(HEADER_LEN..end)
}

/// Validates the rkyv archive in `payload`.
pub(crate) fn access<'a, T>(payload: &'a [u8]) -> Result<&'a T>
where
    T: rkyv::Portable
        + for<'b> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'b, rkyv::rancor::Error>>,
{
    rkyv::access::<T, rkyv::rancor::Error>(payload)
        .map_err(|e| Error::corrupt(format!("payload does not validate: {e}")))
}

/// An FST of a payload, its own CRC-32C checked.
///
/// The fst crate decodes nodes without bounds checks and panics on malformed ones (it has no
/// validating reader). The envelope checksum catches damage; this second checksum, over the FST
/// bytes alone, also refuses a payload edited and resealed, which fuzzing found panicking in
/// fst's node decoder. An FST forged with both checksums recomputed can still make fst panic.
pub(crate) fn checked_fst(bytes: &[u8]) -> Result<fst::raw::Fst<&[u8]>> {
    let f = fst::raw::Fst::new(bytes)?;
    f.verify()?;
    Ok(f)
}

/// The serializer of every payload: rkyv's high-level one, into [`Aligned`].
type PayloadSerializer<'a> = rkyv::api::high::HighSerializer<
    Aligned,
    rkyv::ser::allocator::ArenaHandle<'a>,
    rkyv::rancor::Error,
>;

/// Serializes a payload.
pub(crate) fn to_payload<T>(value: &T) -> Result<Aligned>
where
    T: for<'a> rkyv::Serialize<PayloadSerializer<'a>>,
{
    rkyv::to_bytes::<rkyv::rancor::Error>(value)
        .map_err(|e| Error::new(ErrorKind::TooLarge, format!("serializing: {e}")))
}

/// `value` serialized as [`to_payload`] does, after [`HEADER_LEN`] bytes of room for its
/// envelope's header ([`seal_in_place`]). The payload's bytes are the same: positions are
/// counted from the buffer's start, and the room is a multiple of every alignment.
pub(crate) fn to_sealable<T>(value: &T) -> Result<Aligned>
where
    T: for<'a> rkyv::Serialize<PayloadSerializer<'a>>,
{
    let mut room = Aligned::new();
    room.extend_from_slice(&[0; HEADER_LEN]);
    rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(value, room)
        .map_err(|e| Error::new(ErrorKind::TooLarge, format!("serializing: {e}")))
}

/// A column located in a payload: byte offset and element count.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Col {
    off: usize,
    len: usize,
}

impl Col {
    /// Locates a validated archived slice inside `base`.
    pub(crate) fn of<T>(base: &[u8], slice: &[T]) -> Col {
        Col {
            off: (slice.as_ptr() as usize).wrapping_sub(base.as_ptr() as usize),
            len: slice.len(),
        }
    }

    /// Element count.
    pub(crate) fn len(self) -> usize {
        self.len
    }

    fn elem(self, base: &[u8], width: usize, i: usize) -> Option<&[u8]> {
        if i >= self.len {
            return None;
        }
        let at = self.off.checked_add(i.checked_mul(width)?)?;
        base.get(at..at.checked_add(width)?)
    }

    /// The bytes of a `u8` column.
    pub(crate) fn bytes(self, base: &[u8]) -> Option<&[u8]> {
        base.get(self.off..self.off.checked_add(self.len)?)
    }

    /// The bytes of a column of `width`-byte elements.
    pub(crate) fn raw(self, base: &[u8], width: usize) -> Option<&[u8]> {
        base.get(self.off..self.off.checked_add(self.len.checked_mul(width)?)?)
    }

    /// Element `i` of a `u8` column.
    pub(crate) fn u8(self, base: &[u8], i: usize) -> Option<u8> {
        self.elem(base, 1, i).map(|b| b[0])
    }

    /// Element `i` of a `u32` column.
    pub(crate) fn u32(self, base: &[u8], i: usize) -> Option<u32> {
        Some(u32::from_le_bytes(self.elem(base, 4, i)?.try_into().ok()?))
    }

    /// Element `i` of a `u64` column.
    pub(crate) fn u64(self, base: &[u8], i: usize) -> Option<u64> {
        Some(u64::from_le_bytes(self.elem(base, 8, i)?.try_into().ok()?))
    }

    /// Element `i` of an `i64` column.
    pub(crate) fn i64(self, base: &[u8], i: usize) -> Option<i64> {
        Some(i64::from_le_bytes(self.elem(base, 8, i)?.try_into().ok()?))
    }

    /// The range `[offsets[i], offsets[i+1])` of an offsets column, checked to be ordered.
    pub(crate) fn span(self, base: &[u8], i: usize) -> Option<Range<usize>> {
        let a = self.u32(base, i)? as usize;
        let b = self.u32(base, i.checked_add(1)?)? as usize;
        (a <= b).then_some(a..b)
    }
}

/// The id of an absent optional string in a string-id column.
pub(crate) const NONE: u32 = u32::MAX;

/// `b` as text when it is UTF-8. A recall checks every stored text it reads (a phrase's
/// candidates, a page's snippets), megabytes a call for a common phrase: `simdutf8` checks
/// with vector instructions where the CPU has them (and `std`'s check otherwise, as in the
/// browser build), the same answer as `std::str::from_utf8`.
#[inline]
pub(crate) fn utf8(b: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(b).ok()
}

/// A string table in a payload: bytes plus `n+1` offsets.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct StrCol {
    pub(crate) bytes: Col,
    pub(crate) offsets: Col,
}

impl StrCol {
    /// String `i`, UTF-8 checked.
    pub(crate) fn get(self, base: &[u8], i: usize) -> Result<&str> {
        let b = self.get_bytes(base, i)?;
        utf8(b).ok_or_else(|| Error::corrupt(format!("string {i} is not UTF-8")))
    }

    /// The bytes of string `i`, not checked as UTF-8.
    pub(crate) fn get_bytes(self, base: &[u8], i: usize) -> Result<&[u8]> {
        let span = self
            .offsets
            .span(base, i)
            .ok_or_else(|| Error::corrupt(format!("string {i} out of range")))?;
        let all = self
            .bytes
            .bytes(base)
            .ok_or_else(|| Error::corrupt("string bytes out of range"))?;
        all.get(span)
            .ok_or_else(|| Error::corrupt(format!("string {i} out of range")))
    }

    /// String `id` or `None` for [`NONE`].
    pub(crate) fn opt(self, base: &[u8], id: u32) -> Result<Option<&str>> {
        if id == NONE {
            Ok(None)
        } else {
            self.get(base, id as usize).map(Some)
        }
    }
}

/// Builds a string table with interning.
#[derive(Debug, Default)]
pub(crate) struct StrTableBuilder {
    pub(crate) bytes: Vec<u8>,
    pub(crate) offsets: Vec<u32>,
    index: rustc_hash::FxHashMap<Box<str>, u32>,
}

impl StrTableBuilder {
    pub(crate) fn new() -> Self {
        StrTableBuilder {
            bytes: Vec::new(),
            offsets: vec![0],
            index: rustc_hash::FxHashMap::default(),
        }
    }

    /// The id of `s`, adding it when new.
    pub(crate) fn intern(&mut self, s: &str) -> Result<u32> {
        if let Some(&id) = self.index.get(s) {
            return Ok(id);
        }
        let id = u32::try_from(self.offsets.len() - 1)
            .ok()
            .filter(|&id| id != NONE)
            .ok_or_else(|| Error::new(ErrorKind::TooLarge, "more than 2^32-1 strings"))?;
        self.bytes.extend_from_slice(s.as_bytes());
        self.offsets.push(to_u32(self.bytes.len())?);
        self.index.insert(s.into(), id);
        Ok(id)
    }

    /// The id of `s`, or [`NONE`].
    pub(crate) fn opt(&mut self, s: Option<&str>) -> Result<u32> {
        s.map_or(Ok(NONE), |s| self.intern(s))
    }
}

/// Appends a string to a bytes + offsets pair.
pub(crate) fn push_str(bytes: &mut Vec<u8>, offsets: &mut Vec<u32>, s: &str) -> Result<()> {
    bytes.extend_from_slice(s.as_bytes());
    offsets.push(to_u32(bytes.len())?);
    Ok(())
}

/// `n` as `u32`, or [`ErrorKind::TooLarge`].
pub(crate) fn to_u32(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::new(ErrorKind::TooLarge, format!("{n} exceeds u32")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fingerprints hashed at compile time are the hash of the texts joined at run time.
    #[test]
    fn schema_fingerprints_hash_the_joined_texts() {
        for (kind, payload) in [
            (FileKind::Hot, crate::hot::SCHEMA),
            (FileKind::Cold, crate::cold::SCHEMA),
            (FileKind::Catalog, crate::catalog::SCHEMA),
        ] {
            let text = format!(
                "{RKYV_LAYOUT}\n{}\n{payload}",
                crate::summary::SUMMARY_SCHEMA
            );
            assert_eq!(kind.schema_fingerprint(), xxh3_64(text.as_bytes()));
        }
    }

    /// `utf8` answers as `std::str::from_utf8` does, on strings shorter and longer than a
    /// vector block, with a bad byte, a cut character or an overlong form at every place.
    #[test]
    fn utf8_is_std_from_utf8() {
        let good =
            "ascii text, café, 日本語, 🚀 and more ascii to pass one block of bytes. ".repeat(3);
        let bad: [&[u8]; 4] = [b"\xff", b"\xe6\x97", b"\xc0\xaf", b"\xed\xa0\x80"];
        for len in (0..good.len()).step_by(7) {
            let prefix = good.as_bytes().get(..len).unwrap();
            assert_eq!(utf8(prefix), std::str::from_utf8(prefix).ok(), "{len}");
            for b in bad {
                let mut v = prefix.to_vec();
                v.extend_from_slice(b);
                v.extend_from_slice(good.as_bytes());
                assert_eq!(utf8(&v), None, "{len} {b:?}");
                assert!(std::str::from_utf8(&v).is_err());
            }
        }
    }

    #[test]
    fn envelope_round_trip_and_errors() {
        let mut payload = Aligned::new();
        payload.extend_from_slice(b"hello world");
        let file = seal(FileKind::Cold, &payload);
        let r = unseal(FileKind::Cold, &file).unwrap();
        assert_eq!(&file[r], b"hello world");
        assert_eq!(FileKind::sniff(&file), Some(FileKind::Cold));
        let e = unseal(FileKind::Hot, &file).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BadMagic);
        assert_eq!(e.code(), "index_corrupt");
        let mut v = copy_aligned(&file);
        v[4] = FORMAT_VERSION as u8 + 1;
        let e = unseal(FileKind::Cold, &v).unwrap_err();
        assert_eq!(e.code(), "index_version_mismatch");
        let e = unseal(FileKind::Cold, &file[..file.len() - 1]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Truncated);
        let mut v = copy_aligned(&file);
        v[HEADER_LEN] ^= 1;
        let e = unseal(FileKind::Cold, &v).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ChecksumMismatch);
    }

    /// A payload serialized after the header's room is the payload serialized alone, byte
    /// for byte (alignment padding included), and sealing it in place lays out the envelope
    /// field by field: magic, version, endianness mark, header length, schema fingerprint,
    /// payload length, then the payload, its checksum and the total length. (`compat` checks
    /// every file kind's builder against committed files.)
    #[test]
    fn a_payload_sealed_in_place_is_the_payload_sealed_alone() {
        let value: (u8, Vec<u64>, String, Vec<u16>) =
            (7, vec![1, u64::MAX, 3], "term text".to_owned(), vec![9; 5]);
        let alone = to_payload(&value).unwrap();
        let sealable = to_sealable(&value).unwrap();
        assert_eq!(&sealable[HEADER_LEN..], alone.as_slice());
        let file = seal_in_place(FileKind::Cold, sealable);
        let mut want = Vec::new();
        want.extend_from_slice(&FileKind::Cold.magic());
        want.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        want.extend_from_slice(&ENDIAN_MARK);
        want.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
        want.extend_from_slice(&FileKind::Cold.schema_fingerprint().to_le_bytes());
        want.extend_from_slice(&(alone.len() as u64).to_le_bytes());
        want.extend_from_slice(&alone);
        let sum = xxh3_64(&want);
        want.extend_from_slice(&sum.to_le_bytes());
        want.extend_from_slice(&((want.len() + 8) as u64).to_le_bytes());
        assert_eq!(file.as_slice(), want.as_slice());
        let r = unseal(FileKind::Cold, &file).unwrap();
        assert_eq!(&file[r], alone.as_slice());
    }

    #[test]
    fn unaligned_input_is_refused_and_copied() {
        let file = seal(FileKind::Hot, b"x");
        let mut shifted = Aligned::new();
        shifted.push(0);
        shifted.extend_from_slice(&file);
        let e = unseal(FileKind::Hot, &shifted[1..]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unaligned);
        let fixed = aligned(&shifted[1..]);
        assert!(unseal(FileKind::Hot, fixed.as_ref()).is_ok());
    }

    #[test]
    fn reseal_lets_a_changed_payload_through_the_envelope() {
        let file = seal(FileKind::Hot, b"hello world");
        assert_eq!(reseal(&file).as_slice(), file.as_slice());
        let mut v = copy_aligned(&file);
        v[HEADER_LEN] = b'j';
        assert_eq!(
            unseal(FileKind::Hot, &v).unwrap_err().kind(),
            ErrorKind::ChecksumMismatch
        );
        let v = reseal(&v);
        let r = unseal(FileKind::Hot, &v).unwrap();
        assert_eq!(&v[r], b"jello world");
        // A longer payload: the length field follows it.
        let mut longer = file[..HEADER_LEN].to_vec();
        longer.extend_from_slice(b"a longer payload");
        longer.extend_from_slice(&[0; FOOTER_LEN]);
        let v = reseal(&longer);
        let r = unseal(FileKind::Hot, &v).unwrap();
        assert_eq!(&v[r], b"a longer payload");
        assert_eq!(reseal(b"short").as_slice(), b"short");
    }

    #[test]
    fn fingerprints_differ_per_kind() {
        assert_ne!(
            FileKind::Hot.schema_fingerprint(),
            FileKind::Cold.schema_fingerprint()
        );
        assert_ne!(
            FileKind::Cold.schema_fingerprint(),
            FileKind::Catalog.schema_fingerprint()
        );
    }
}
