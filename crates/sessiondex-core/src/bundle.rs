//! A bundle: one file that carries a whole in-memory index (a WASM page's `exportIndex`): the
//! sources, and per branch mode the catalog and every session's hot shard or cold digest, each
//! byte for byte as the store writes it.
//!
//! ```text
//! offset  size  field
//! 0       4     magic b"SDXB"
//! 4       4     bundle version, u32 LE (BUNDLE_VERSION)
//! 8       4     endianness mark: u32 0x0102_0304 written LE (bytes 04 03 02 01)
//! 12      4     header length, u32 LE (32)
//! 16      8     item count, u64 LE
//! 24      8     reserved, zero
//! 32      ...   items, each starting at a multiple of 16:
//!                 0   1  kind: 0 source, 1 catalog, 2 hot shard, 3 cold digest
//!                 1   1  branch mode: 0 active, 1 all, 255 none (sources)
//!                 2   2  reserved, zero
//!                 4   4  name length n, u32 LE (UTF-8: the source path; empty for a catalog)
//!                 8   8  data length d, u64 LE
//!                 16  n  name, zero-padded to a multiple of 16
//!                 ..  d  data, zero-padded to a multiple of 16
//! end-16  8     checksum: xxh3-64 of every byte before it, u64 LE
//! end-8   8     total length, u64 LE
//! ```
//!
//! Every item's data starts 16-aligned relative to the bundle, so a bundle loaded at an aligned
//! address could be read in place; [`read`] returns slices and callers copy them with
//! [`crate::format::copy_aligned`] before opening the index files (which check themselves).
//! Reading checks the envelope and every length, and never panics.

use sessiondex_source::Branches;
use xxhash_rust::xxh3::xxh3_64;

use crate::error::{Error, ErrorKind, Result};
use crate::format::{Aligned, ALIGN, ENDIAN_MARK, FOOTER_LEN, HEADER_LEN};
use crate::summary::{branches_code, branches_from};

/// The magic bytes of a bundle.
pub const MAGIC: [u8; 4] = *b"SDXB";
/// The bundle layout version this build writes and reads.
pub const BUNDLE_VERSION: u32 = 1;

/// What an item of a bundle holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// A session source, byte for byte.
    Source,
    /// The catalog of a branch mode.
    Catalog,
    /// A session's hot shard.
    Hot,
    /// A session's cold digest.
    Cold,
}

impl ItemKind {
    fn code(self) -> u8 {
        match self {
            ItemKind::Source => 0,
            ItemKind::Catalog => 1,
            ItemKind::Hot => 2,
            ItemKind::Cold => 3,
        }
    }

    fn from_code(c: u8) -> Result<ItemKind> {
        Ok(match c {
            0 => ItemKind::Source,
            1 => ItemKind::Catalog,
            2 => ItemKind::Hot,
            3 => ItemKind::Cold,
            _ => return Err(Error::corrupt(format!("unknown bundle item kind {c}"))),
        })
    }
}

/// One item of a bundle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item<'a> {
    /// What it holds.
    pub kind: ItemKind,
    /// Its branch mode (`None` for sources).
    pub branches: Option<Branches>,
    /// The source path it belongs to (empty for a catalog).
    pub name: &'a str,
    /// Its bytes.
    pub data: &'a [u8],
}

fn pad(out: &mut Aligned) {
    while !out.len().is_multiple_of(ALIGN) {
        out.push(0);
    }
}

/// Writes a bundle of `items`, in order.
///
/// # Errors
///
/// `index_too_large` when a name is longer than `u32::MAX` bytes.
pub fn write<'a>(items: impl IntoIterator<Item = Item<'a>>) -> Result<Aligned> {
    let items: Vec<Item<'a>> = items.into_iter().collect();
    let mut out = Aligned::new();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&BUNDLE_VERSION.to_le_bytes());
    out.extend_from_slice(&ENDIAN_MARK);
    out.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    out.extend_from_slice(&(items.len() as u64).to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes());
    for it in &items {
        let name_len = u32::try_from(it.name.len())
            .map_err(|_| Error::new(ErrorKind::TooLarge, "a bundle item name is too long"))?;
        out.push(it.kind.code());
        out.push(it.branches.map_or(255, branches_code));
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&name_len.to_le_bytes());
        out.extend_from_slice(&(it.data.len() as u64).to_le_bytes());
        out.extend_from_slice(it.name.as_bytes());
        pad(&mut out);
        out.extend_from_slice(it.data);
        pad(&mut out);
    }
    let sum = xxh3_64(out.as_slice());
    out.extend_from_slice(&sum.to_le_bytes());
    let total = out.len() as u64 + 8;
    out.extend_from_slice(&total.to_le_bytes());
    Ok(out)
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

fn padded(n: usize) -> Option<usize> {
    n.checked_add(ALIGN - 1).map(|v| v / ALIGN * ALIGN)
}

/// True when `bytes` start like a bundle.
#[must_use]
pub fn is_bundle(bytes: &[u8]) -> bool {
    bytes.get(..4) == Some(&MAGIC[..])
}

/// Reads a bundle: checks magic, version, header, length and checksum, then every item.
///
/// # Errors
///
/// `index_corrupt` (bad magic, header, checksum, lengths, kinds, names) or
/// `index_version_mismatch`. Never panics.
pub fn read(bytes: &[u8]) -> Result<Vec<Item<'_>>> {
    let truncated = |what: &str| Error::new(ErrorKind::Truncated, what.to_owned());
    if bytes.len() < 8 {
        return Err(truncated("shorter than a bundle header"));
    }
    if !is_bundle(bytes) {
        return Err(Error::new(ErrorKind::BadMagic, "not a sessiondex bundle"));
    }
    let version = le_u32(bytes, 4).unwrap_or(0);
    if version != BUNDLE_VERSION {
        return Err(Error::new(
            ErrorKind::VersionMismatch {
                expected: BUNDLE_VERSION,
                found: version,
            },
            format!("bundle version {version}, this build reads {BUNDLE_VERSION}"),
        ));
    }
    if bytes.len() < HEADER_LEN + FOOTER_LEN {
        return Err(truncated("shorter than header and footer"));
    }
    if bytes[8..12] != ENDIAN_MARK || le_u32(bytes, 12) != Some(HEADER_LEN as u32) {
        return Err(Error::new(ErrorKind::BadHeader, "bad bundle header"));
    }
    let end = bytes.len() - FOOTER_LEN;
    if le_u64(bytes, end + 8) != Some(bytes.len() as u64) {
        return Err(truncated("the footer's length is not the bundle's"));
    }
    if le_u64(bytes, end) != Some(xxh3_64(&bytes[..end])) {
        return Err(Error::new(ErrorKind::ChecksumMismatch, "checksum mismatch"));
    }
    let count = le_u64(bytes, 16).unwrap_or(u64::MAX);
    let mut items = Vec::new();
    let mut at = HEADER_LEN;
    let bad = |what: &str| Error::corrupt(format!("bundle item: {what}"));
    for _ in 0..count {
        let head = bytes
            .get(at..at + 16)
            .filter(|_| at + 16 <= end)
            .ok_or_else(|| bad("header past the end"))?;
        let kind = ItemKind::from_code(head[0])?;
        let branches = match head[1] {
            255 => None,
            c => Some(branches_from(c)?),
        };
        if (kind == ItemKind::Source) != branches.is_none() {
            return Err(bad("a source has no branch mode, an index file has one"));
        }
        let name_len = le_u32(head, 4).ok_or_else(|| bad("name length"))? as usize;
        let data_len = usize::try_from(le_u64(head, 8).ok_or_else(|| bad("data length"))?)
            .map_err(|_| bad("data length"))?;
        let name_at = at + 16;
        let data_at = padded(name_len)
            .and_then(|n| name_at.checked_add(n))
            .ok_or_else(|| bad("name length"))?;
        let next = padded(data_len)
            .and_then(|d| data_at.checked_add(d))
            .filter(|&n| n <= end)
            .ok_or_else(|| bad("data past the end"))?;
        let name = std::str::from_utf8(&bytes[name_at..name_at + name_len])
            .map_err(|_| bad("name is not UTF-8"))?;
        items.push(Item {
            kind,
            branches,
            name,
            data: &bytes[data_at..data_at + data_len],
        });
        at = next;
    }
    if at != end {
        return Err(bad("bytes after the last item"));
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Aligned {
        write([
            Item {
                kind: ItemKind::Source,
                branches: None,
                name: "a.jsonl",
                data: b"{\"x\":1}\n",
            },
            Item {
                kind: ItemKind::Catalog,
                branches: Some(Branches::Active),
                name: "",
                data: &[7; 33],
            },
            Item {
                kind: ItemKind::Hot,
                branches: Some(Branches::All),
                name: "a.jsonl",
                data: &[],
            },
        ])
        .expect("bundle")
    }

    #[test]
    fn round_trip() {
        let b = sample();
        let items = read(&b).expect("read");
        assert_eq!(items.len(), 3);
        assert_eq!(items[0].name, "a.jsonl");
        assert_eq!(items[0].data, b"{\"x\":1}\n");
        assert_eq!(items[1].kind, ItemKind::Catalog);
        assert_eq!(items[1].data, &[7; 33]);
        assert_eq!(items[2].branches, Some(Branches::All));
        assert!(items[2].data.is_empty());
        for it in &items {
            let off = it.data.as_ptr() as usize - b.as_ptr() as usize;
            assert_eq!(off % ALIGN, 0);
        }
    }

    #[test]
    fn damage_is_an_error_never_a_panic() {
        let b = sample();
        for cut in 0..b.len() {
            assert!(read(&b[..cut]).is_err());
        }
        for i in 0..b.len() {
            let mut d = b.to_vec();
            d[i] ^= 0x5a;
            assert!(read(&d).is_err(), "byte {i}");
        }
        // Resealed with a lying item count or lengths: still no panic.
        for i in 16..b.len() - FOOTER_LEN {
            let mut d = b.to_vec();
            d[i] = 0xff;
            let end = d.len() - FOOTER_LEN;
            let sum = xxh3_64(&d[..end]);
            d[end..end + 8].copy_from_slice(&sum.to_le_bytes());
            let _ = read(&d);
        }
    }
}
