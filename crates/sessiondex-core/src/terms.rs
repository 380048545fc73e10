//! Sorted term lists, front-coded: each term is stored as the length of the prefix it shares
//! with the term before it and the bytes that follow.
//!
//! A cold digest keeps its vocabulary this way, and a sync holds each session's vocabulary
//! and id keys this way until the catalog is written. Nothing looks a term up in these lists
//! at query time (the catalog's merged maps answer that), so they need only be small and
//! read in order; building one is a copy of the sorted terms, where an FST costs a node
//! registry and a hash of every node.
//!
//! ```text
//! per term: header, then the suffix bytes
//!   header h < 0xF0   shared = h >> 4 (0..=14), suffix length = h & 0x0F (0..=15)
//!   header 0xFF       shared, suffix length: LEB128 u32 each
//! ```
//!
//! The encoding is canonical: the shared length is the whole common prefix, so a suffix is
//! never empty and its first byte is above the previous term's byte at that place. A reader
//! checks this as it goes and gives `index_corrupt` for a list that breaks it (terms out of
//! order, repeated, or bytes that end early or run on), never a panic.

use crate::catalog::{read_varint, write_varint};
use crate::error::{Error, Result};

/// The escape header: two varints follow.
const LONG: u8 = 0xFF;

/// A sorted list of distinct byte strings, front-coded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TermList<B = Vec<u8>> {
    bytes: B,
    len: usize,
}

/// Builds a [`TermList`] from terms given in strictly ascending byte order.
#[derive(Debug, Default)]
pub struct TermListBuilder {
    bytes: Vec<u8>,
    prev: Vec<u8>,
    len: usize,
}

impl TermListBuilder {
    /// An empty list.
    #[must_use]
    pub fn new() -> TermListBuilder {
        TermListBuilder::default()
    }

    /// Appends `term`.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when `term` is not above the term appended before it.
    pub fn insert(&mut self, term: &[u8]) -> Result<()> {
        if self.len > 0 && term <= self.prev.as_slice() {
            return Err(Error::corrupt("term list out of order"));
        }
        let shared = self
            .prev
            .iter()
            .zip(term)
            .take_while(|(a, b)| a == b)
            .count();
        let suffix = &term[shared..];
        if shared < 15 && suffix.len() < 16 {
            self.bytes.push(((shared as u8) << 4) | suffix.len() as u8);
        } else {
            self.bytes.push(LONG);
            write_varint(&mut self.bytes, crate::format::to_u32(shared)?);
            write_varint(&mut self.bytes, crate::format::to_u32(suffix.len())?);
        }
        self.bytes.extend_from_slice(suffix);
        self.prev.truncate(shared);
        self.prev.extend_from_slice(suffix);
        self.len += 1;
        Ok(())
    }

    /// The list.
    #[must_use]
    pub fn finish(self) -> TermList<Vec<u8>> {
        TermList {
            bytes: self.bytes,
            len: self.len,
        }
    }
}

impl TermList<Vec<u8>> {
    /// The list of `terms`, which must be strictly ascending.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when they are not.
    pub fn from_sorted<T: AsRef<[u8]>>(terms: impl IntoIterator<Item = T>) -> Result<Self> {
        let mut b = TermListBuilder::new();
        for t in terms {
            b.insert(t.as_ref())?;
        }
        Ok(b.finish())
    }
}

impl<B: AsRef<[u8]>> TermList<B> {
    /// The list of `len` terms encoded in `bytes`. Nothing is checked here: reading checks.
    pub fn new(bytes: B, len: usize) -> TermList<B> {
        TermList { bytes, len }
    }

    /// Number of terms.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the list holds no term.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The encoded bytes.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// A reader of the terms in order.
    #[must_use]
    pub fn cursor(&self) -> Cursor<'_> {
        Cursor {
            bytes: self.bytes.as_ref(),
            at: 0,
            left: self.len,
            cur: Vec::new(),
        }
    }

    /// True when the list holds `term` (reads the list up to where `term` would be).
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage.
    pub fn contains(&self, term: &[u8]) -> Result<bool> {
        let mut c = self.cursor();
        while let Some(t) = c.next_term()? {
            match t.cmp(term) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => return Ok(true),
                std::cmp::Ordering::Greater => return Ok(false),
            }
        }
        Ok(false)
    }

    /// Every term, as text.
    ///
    /// # Errors
    ///
    /// `index_corrupt` on damage or a term that is not UTF-8.
    pub fn to_strings(&self) -> Result<Vec<String>> {
        let mut out = Vec::with_capacity(self.len.min(self.as_bytes().len() / 2));
        let mut c = self.cursor();
        while let Some(t) = c.next_term()? {
            let s = std::str::from_utf8(t).map_err(|_| Error::corrupt("term not UTF-8"))?;
            out.push(s.to_owned());
        }
        Ok(out)
    }
}

/// Reads a [`TermList`] in order, checking it.
#[derive(Debug)]
pub struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
    left: usize,
    cur: Vec<u8>,
}

impl Cursor<'_> {
    /// The next term, `None` after the last.
    ///
    /// # Errors
    ///
    /// `index_corrupt` when the bytes end early or run on past the last term, or a term is
    /// not above the one before it (or not encoded canonically).
    pub fn next_term(&mut self) -> Result<Option<&[u8]>> {
        let bad = || Error::corrupt("term list damaged");
        if self.left == 0 {
            return if self.at == self.bytes.len() {
                Ok(None)
            } else {
                Err(bad())
            };
        }
        let h = *self.bytes.get(self.at).ok_or_else(bad)?;
        self.at += 1;
        let (shared, suffix) = match h {
            LONG => {
                let s = read_varint(self.bytes, &mut self.at).ok_or_else(bad)? as usize;
                let l = read_varint(self.bytes, &mut self.at).ok_or_else(bad)? as usize;
                if s < 15 && l < 16 {
                    // A short header would have done.
                    return Err(bad());
                }
                (s, l)
            }
            h if h < 0xF0 => (usize::from(h >> 4), usize::from(h & 0x0F)),
            _ => return Err(bad()),
        };
        let end = self.at.checked_add(suffix).ok_or_else(bad)?;
        let tail = self.bytes.get(self.at..end).ok_or_else(bad)?;
        // Canonical and ascending: a non-empty suffix above the previous term's byte there
        // (or past its end). The first term (no previous: empty) shares nothing.
        let above = match (tail.first(), self.cur.get(shared)) {
            (None, _) => false,
            (Some(_), None) => shared == self.cur.len(),
            (Some(&a), Some(&b)) => a > b,
        };
        if !above {
            return Err(bad());
        }
        self.at = end;
        self.cur.truncate(shared);
        self.cur.extend_from_slice(tail);
        self.left -= 1;
        Ok(Some(&self.cur))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn list(terms: &[&str]) -> TermList {
        TermList::from_sorted(terms).unwrap()
    }

    fn read(l: &TermList<impl AsRef<[u8]>>) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        let mut c = l.cursor();
        while let Some(t) = c.next_term()? {
            out.push(t.to_vec());
        }
        Ok(out)
    }

    #[test]
    fn short_and_long_headers() {
        let long = "x".repeat(300);
        let longer = format!("{long}yz{}", "q".repeat(20));
        let terms = [
            "a",
            "ab",
            "abc",
            "b",
            "日本語",
            long.as_str(),
            longer.as_str(),
        ];
        let mut sorted = terms.to_vec();
        sorted.sort_unstable();
        let l = list(&sorted);
        assert_eq!(l.len(), 7);
        assert_eq!(l.to_strings().unwrap(), sorted);
        // "a": one header byte and one suffix byte; "ab" after it: shares one, adds one.
        assert_eq!(&l.as_bytes()[..4], &[0x01, b'a', 0x11, b'b']);
        for t in &sorted {
            assert!(l.contains(t.as_bytes()).unwrap(), "{t}");
        }
        for t in ["", "aa", "abcd", "c", "x", "zz"] {
            assert!(!l.contains(t.as_bytes()).unwrap(), "{t}");
        }
        assert!(list(&[]).cursor().next_term().unwrap().is_none());
    }

    #[test]
    fn out_of_order_terms_are_refused() {
        let mut b = TermListBuilder::new();
        b.insert(b"b").unwrap();
        assert_eq!(b.insert(b"a").unwrap_err().code(), "index_corrupt");
        assert_eq!(b.insert(b"b").unwrap_err().code(), "index_corrupt");
        b.insert(b"ba").unwrap();
        assert_eq!(b.finish().len(), 2);
    }

    #[test]
    fn damage_is_an_error() {
        let l = list(&["apple", "apply", "banana"]);
        let bytes = l.as_bytes().to_vec();
        let cases: Vec<(Vec<u8>, usize)> = vec![
            // One term more than the bytes hold.
            (bytes.clone(), 4),
            // Bytes left after the last term.
            (bytes.clone(), 2),
            // Cut inside a suffix.
            (bytes[..bytes.len() - 1].to_vec(), 3),
            // "apply" re-encoded as "apple" again (not above the one before).
            (
                {
                    let mut b = bytes.clone();
                    let at = b.iter().position(|&x| x == b'y').unwrap();
                    b[at] = b'e';
                    b
                },
                3,
            ),
            // A suffix starting with the previous term's byte there (not canonical).
            (vec![0x02, b'a', b'b', 0x12, b'b', b'c'], 2),
            // The first term claims a shared prefix.
            (vec![0x11, b'a'], 1),
            // A long header where a short one would do.
            (vec![LONG, 0, 1, b'a'], 1),
            // A reserved header.
            (vec![0xF3, b'a'], 1),
            // An empty suffix.
            (vec![0x01, b'a', 0x10], 2),
            // A long header whose varint never ends.
            (vec![LONG, 0x80, 0x80, 0x80, 0x80, 0x80], 1),
        ];
        for (i, (b, n)) in cases.into_iter().enumerate() {
            let err = read(&TermList::new(b, n)).unwrap_err();
            assert_eq!(err.code(), "index_corrupt", "case {i}");
        }
    }

    proptest! {
        #[test]
        fn round_trip(mut terms in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..40), 0..60)) {
            terms.sort_unstable();
            terms.dedup();
            let l = TermList::from_sorted(&terms).unwrap();
            prop_assert_eq!(read(&l).unwrap(), terms.clone());
            for t in &terms {
                prop_assert!(l.contains(t).unwrap());
            }
        }

        #[test]
        fn any_bytes_read_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..64), n in 0usize..20) {
            let l = TermList::new(bytes, n);
            if let Ok(terms) = read(&l) {
                // Whatever reads cleanly is the list's count of strictly ascending terms.
                prop_assert_eq!(terms.len(), n);
                prop_assert!(terms.windows(2).all(|w| w[0] < w[1]));
                prop_assert!(terms.iter().all(|t| !t.is_empty()));
            }
        }
    }
}
