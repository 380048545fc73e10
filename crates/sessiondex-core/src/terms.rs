//! Sorted term lists, front-coded: each term is stored as the length of the prefix it shares
//! with the term before it and the bytes that follow.
//!
//! A cold digest keeps its vocabulary this way, and a sync holds each session's vocabulary
//! and id keys this way until the catalog is written. Nothing looks a term up in these lists
//! at query time (the catalog's merged maps answer that), so they need only be small and
//! read in order; building one is a copy of the sorted terms, where an FST costs a node
//! registry and a hash of every node. The catalog's id key table is such lists too, one per
//! block of sixteen keys, looked up by each block's first key (`first_term`) and then in
//! the block (`position`).
//!
//! ```text
//! per term: header, then the suffix bytes
//!   header h < 0xF0   shared = h >> 4 (0..=14), suffix length = h & 0x0F (0..=15)
//!   header 0xFF       shared, suffix length: LEB128 u32 each
//! ```
//!
//! The encoding is canonical: the shared length is the whole common prefix, so a suffix
//! (but the first term's, which may be empty) is never empty and its first byte is above the
//! previous term's byte at that place. A reader checks this as it goes and gives
//! `index_corrupt` for a list that breaks it (terms out of order, repeated, or bytes that end
//! early or run on), never a panic.

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
        let shared = encode_after(&mut self.bytes, &self.prev, term)?;
        self.prev.truncate(shared);
        self.prev.extend_from_slice(&term[shared..]);
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

/// Appends `term` to `out` front-coded after `prev` (the term before it in its list, empty
/// for a list's first) and returns the length of the prefix they share. The caller keeps the
/// order: `term` above `prev`.
///
/// # Errors
///
/// `index_too_large` for a term past `u32` bytes.
pub(crate) fn encode_after(out: &mut Vec<u8>, prev: &[u8], term: &[u8]) -> Result<usize> {
    let shared = prev.iter().zip(term).take_while(|(a, b)| a == b).count();
    let suffix = &term[shared..];
    if shared < 15 && suffix.len() < 16 {
        out.push(((shared as u8) << 4) | suffix.len() as u8);
    } else {
        out.push(LONG);
        write_varint(out, crate::format::to_u32(shared)?);
        write_varint(out, crate::format::to_u32(suffix.len())?);
    }
    out.extend_from_slice(suffix);
    Ok(shared)
}

/// The term at `at` in a list's `bytes`: the length it shares with the term before it and
/// the suffix it adds; `at` moves past it.
///
/// # Errors
///
/// `index_corrupt` for a header that is invalid or not the short one where that would do,
/// or bytes that end early.
pub(crate) fn next_suffix<'a>(bytes: &'a [u8], at: &mut usize) -> Result<(usize, &'a [u8])> {
    let bad = || Error::corrupt("term list damaged");
    let h = *bytes.get(*at).ok_or_else(bad)?;
    *at += 1;
    let (shared, len) = match h {
        LONG => {
            let s = read_varint(bytes, at).ok_or_else(bad)? as usize;
            let l = read_varint(bytes, at).ok_or_else(bad)? as usize;
            if s < 15 && l < 16 {
                // A short header would have done.
                return Err(bad());
            }
            (s, l)
        }
        h if h < 0xF0 => (usize::from(h >> 4), usize::from(h & 0x0F)),
        _ => return Err(bad()),
    };
    let end = at.checked_add(len).ok_or_else(bad)?;
    let suffix = bytes.get(*at..end).ok_or_else(bad)?;
    *at = end;
    Ok((shared, suffix))
}

/// The first term of a list's `bytes`, read in place: it shares nothing, so it is stored
/// whole.
///
/// # Errors
///
/// `index_corrupt` when the bytes hold no first term as [`Cursor`] reads it.
pub(crate) fn first_term(bytes: &[u8]) -> Result<&[u8]> {
    match next_suffix(bytes, &mut 0)? {
        (0, term) => Ok(term),
        _ => Err(Error::corrupt("term list damaged")),
    }
}

/// The position of `key` among the first `count` terms of a list's `bytes`, if it is one of
/// them, found without writing a term out: the terms are read in order while they are
/// below `key`, keeping the length `m` of the prefix the current term shares with `key`. A
/// term that shares more than `m` with the one before is below `key` too, one that shares
/// less is above it, and only one that shares exactly `m` is compared, from there on.
///
/// # Errors
///
/// `index_corrupt` for a term [`next_suffix`] refuses. The order of the terms is not checked
/// (a list out of order gives a wrong answer, not a panic): [`Cursor`] checks it.
pub(crate) fn position(bytes: &[u8], count: usize, key: &[u8]) -> Result<Option<usize>> {
    let mut at = 0;
    let mut m = 0;
    for i in 0..count {
        let (shared, suffix) = next_suffix(bytes, &mut at)?;
        if i > 0 && shared != m {
            if shared < m {
                return Ok(None);
            }
            continue;
        }
        let rest = key.get(m..).unwrap_or_default();
        let same = suffix.iter().zip(rest).take_while(|(a, b)| a == b).count();
        match (suffix.get(same), rest.get(same)) {
            (None, None) => return Ok(Some(i)),
            (Some(_), None) => return Ok(None),
            (Some(a), Some(b)) if a > b => return Ok(None),
            _ => m += same,
        }
    }
    Ok(None)
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
        Cursor::over(self.bytes.as_ref(), self.len)
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
    /// True once a term was read.
    started: bool,
}

impl<'a> Cursor<'a> {
    /// A reader of the list of `len` terms encoded in `bytes`.
    pub(crate) fn over(bytes: &'a [u8], len: usize) -> Cursor<'a> {
        Cursor {
            bytes,
            at: 0,
            left: len,
            cur: Vec::new(),
            started: false,
        }
    }

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
        let (shared, tail) = next_suffix(self.bytes, &mut self.at)?;
        // Canonical and ascending: the first term shares nothing (and may be empty); a later
        // one adds a non-empty suffix above the previous term's byte there (or past its end).
        let above = match (tail.first(), self.cur.get(shared)) {
            _ if !self.started => shared == 0,
            (None, _) => false,
            (Some(_), None) => shared == self.cur.len(),
            (Some(&a), Some(&b)) => a > b,
        };
        if !above {
            return Err(bad());
        }
        self.started = true;
        self.cur.truncate(shared);
        self.cur.extend_from_slice(tail);
        self.left -= 1;
        Ok(Some(&self.cur))
    }
}

/// The distinct terms of a stream of tokens, each numbered in the order first met. A term of
/// at most 16 bytes is kept inline in an open-addressed table (linear probing, at most half
/// full) as its length, its number and two words read from its ends, so a lookup hashes and
/// compares two words and follows no pointer; longer terms go to a hash map. Every term's
/// bytes are appended once to one buffer.
///
/// A cold digest's vocabulary is built this way (every token of a session passes through
/// it; it was a quarter of a build as a set of boxed strings), and so are a hot shard's
/// term numbers (they were a map of boxed strings too). One collector serves one session
/// after another ([`TermCollector::clear`]): its table grows once, not per session.
#[derive(Default)]
pub(crate) struct TermCollector {
    slots: Vec<Slot>,
    /// The slots in use, as filled.
    occupied: Vec<u32>,
    /// Every term's bytes, one after another.
    text: Vec<u8>,
    /// Where term `n` ends in `text` (it starts where term `n - 1` ends).
    ends: Vec<u32>,
    long: rustc_hash::FxHashMap<Box<[u8]>, u32>,
    /// The empty term's number, once met.
    empty: Option<u32>,
}

/// One table slot; `len` 0 is empty.
#[derive(Clone, Copy, Default)]
struct Slot {
    lo: u64,
    hi: u64,
    id: u32,
    len: u8,
}

/// The longest term kept inline.
const INLINE: usize = 16;

/// The largest table [`TermCollector::clear`] keeps (1.5 MiB of slots): a session with more
/// than 32,768 distinct short terms leaves a table that the next one would not fill, and it
/// is dropped instead.
const KEPT_SLOTS: usize = 1 << 16;

/// Two words that, with the length, identify a term of 1 to [`INLINE`] bytes: the first and
/// last 8 bytes (overlapping when shorter than 16), the first and last 4 (shorter than 8), or
/// the first, middle and last byte (shorter than 4). Each covers every byte of the term.
fn words(t: &[u8]) -> (u64, u64) {
    let n = t.len();
    let w8 = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&t[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let w4 = |at: usize| {
        let mut b = [0u8; 4];
        b.copy_from_slice(&t[at..at + 4]);
        u64::from(u32::from_le_bytes(b))
    };
    if n >= 8 {
        (w8(0), w8(n - 8))
    } else if n >= 4 {
        (w4(0), w4(n - 4))
    } else if n > 0 {
        let b = |i: usize| u64::from(t[i]);
        (b(0) | b(n / 2) << 8 | b(n - 1) << 16, 0)
    } else {
        (0, 0)
    }
}

/// A folded multiply of the two words (the length mixed into one).
fn slot_hash(lo: u64, hi: u64, len: u8) -> u64 {
    let a = lo ^ 0x243f_6a88_85a3_08d3;
    let b = hi ^ u64::from(len).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x1319_8a2e_0370_7344;
    let full = u128::from(a) * u128::from(b);
    (full as u64) ^ ((full >> 64) as u64)
}

/// How many short tokens [`TermCollector::insert_tokens`] queues: each one's slot is asked
/// for this many lookups before its own. A power of two.
const AHEAD: usize = 16;

/// A term of 1 to [`INLINE`] bytes as the table keys it: its words, length and hash.
#[derive(Clone, Copy, Default)]
struct Pending {
    lo: u64,
    hi: u64,
    len: u8,
    hash: u64,
}

impl Pending {
    /// `t` as a table key; `None` for the empty term and those longer than [`INLINE`].
    #[inline]
    fn of(t: &[u8]) -> Option<Pending> {
        let n = t.len();
        if n == 0 || n > INLINE {
            return None;
        }
        let (lo, hi) = words(t);
        #[allow(clippy::cast_possible_truncation)] // At most `INLINE`.
        let len = n as u8;
        Some(Pending {
            lo,
            hi,
            len,
            hash: slot_hash(lo, hi, len),
        })
    }

    /// The term's bytes, read back from its words (they cover every byte, see [`words`]),
    /// and how many there are.
    fn bytes(self) -> ([u8; INLINE], usize) {
        let n = usize::from(self.len);
        let mut b = [0u8; INLINE];
        if n >= 8 {
            b[..8].copy_from_slice(&self.lo.to_le_bytes());
            b[n - 8..n].copy_from_slice(&self.hi.to_le_bytes());
        } else if n >= 4 {
            b[..4].copy_from_slice(&self.lo.to_le_bytes()[..4]);
            b[n - 4..n].copy_from_slice(&self.hi.to_le_bytes()[..4]);
        } else if n > 0 {
            let w = self.lo.to_le_bytes();
            b[0] = w[0];
            b[n / 2] = w[1];
            b[n - 1] = w[2];
        }
        (b, n)
    }
}

/// Asks the processor to bring the cache line at `p` in, ahead of a load from it; nothing
/// on other targets.
#[inline(always)]
fn prefetch<T>(p: &T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: a prefetch is a hint: it changes no memory and cannot fault, and `p` is a
    // reference, so the address is valid anyway. The intrinsic is `unsafe` only as a
    // `target_feature` function (SSE, which every x86_64 target has).
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(p).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl TermCollector {
    /// Notes `t`; its number (the count of distinct terms met before it).
    ///
    /// # Errors
    ///
    /// `index_too_large` past 4 GiB of term bytes.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, t: &[u8]) -> Result<u32> {
        match Pending::of(t) {
            Some(p) => self.look_up(p),
            None => self.insert_other(t),
        }
    }

    /// Notes every token of `text` ([`crate::for_each_token`]), in order, and hands `f` each
    /// one's number (the count of distinct terms met before it) or the error of one too
    /// many (`index_too_large` past 4 GiB of term bytes). The table slot of a short token is
    /// asked of the processor's cache some tokens before it is looked up ([`AHEAD`]): a
    /// lookup's first load, which misses the first-level cache when a session has many
    /// terms, is then under way while the tokens before it are looked up.
    pub(crate) fn insert_tokens(&mut self, text: &str, mut f: impl FnMut(Result<u32>)) {
        let mut ring = [Pending::default(); AHEAD];
        // Tokens queued, and tokens looked up, so far; each is in `ring` at its count
        // modulo `AHEAD`.
        let (mut queued, mut done) = (0usize, 0usize);
        crate::for_each_token(text, |t| {
            let Some(p) = Pending::of(t.as_bytes()) else {
                // The queue first, so `f` gets the numbers in order.
                while done < queued {
                    f(self.look_up(ring[done % AHEAD]));
                    done += 1;
                }
                f(self.insert_other(t.as_bytes()));
                return;
            };
            if queued - done == AHEAD {
                f(self.look_up(ring[done % AHEAD]));
                done += 1;
            }
            if !self.slots.is_empty() {
                // Where the lookup starts unless the table grows first.
                prefetch(&self.slots[self.first_slot(p.hash)]);
            }
            ring[queued % AHEAD] = p;
            queued += 1;
        });
        while done < queued {
            f(self.look_up(ring[done % AHEAD]));
            done += 1;
        }
    }

    /// Notes a term of 1 to [`INLINE`] bytes, given as its words; its number.
    #[inline]
    fn look_up(&mut self, p: Pending) -> Result<u32> {
        if (self.occupied.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let Pending { lo, hi, len, hash } = p;
        let mask = self.slots.len() - 1;
        let mut i = self.first_slot(hash);
        loop {
            let s = self.slots[i];
            if s.len == 0 {
                let (bytes, n) = p.bytes();
                let id = self.push(&bytes[..n])?;
                self.slots[i] = Slot { lo, hi, id, len };
                self.occupied.push(i as u32);
                return Ok(id);
            }
            if s.lo == lo && s.hi == hi && s.len == len {
                return Ok(s.id);
            }
            i = (i + 1) & mask;
        }
    }

    /// Notes the empty term or one longer than [`INLINE`] bytes; its number.
    #[inline(never)]
    fn insert_other(&mut self, t: &[u8]) -> Result<u32> {
        if t.is_empty() {
            if let Some(id) = self.empty {
                return Ok(id);
            }
            let id = self.push(t)?;
            self.empty = Some(id);
            return Ok(id);
        }
        if let Some(&id) = self.long.get(t) {
            return Ok(id);
        }
        let id = self.push(t)?;
        self.long.insert(t.into(), id);
        Ok(id)
    }

    /// Appends a new term's bytes; its number.
    fn push(&mut self, t: &[u8]) -> Result<u32> {
        let id = crate::format::to_u32(self.ends.len())?;
        self.text.extend_from_slice(t);
        self.ends.push(crate::format::to_u32(self.text.len())?);
        Ok(id)
    }

    /// How many distinct terms.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The slot a hash starts probing at: its high bits.
    fn first_slot(&self, h: u64) -> usize {
        (h >> (64 - self.slots.len().trailing_zeros())) as usize
    }

    fn grow(&mut self) {
        let len = (self.slots.len() * 2).max(1024);
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); len]);
        let mask = len - 1;
        for k in &mut self.occupied {
            let s = old[*k as usize];
            let mut i = (slot_hash(s.lo, s.hi, s.len) >> (64 - len.trailing_zeros())) as usize;
            while self.slots[i].len != 0 {
                i = (i + 1) & mask;
            }
            self.slots[i] = s;
            *k = i as u32;
        }
    }

    /// Forgets every term, keeping the table (up to [`KEPT_SLOTS`]) for the next session:
    /// only the slots in use are emptied.
    pub(crate) fn clear(&mut self) {
        if self.slots.len() > KEPT_SLOTS {
            *self = TermCollector::default();
            return;
        }
        for &k in &self.occupied {
            self.slots[k as usize].len = 0;
        }
        self.occupied.clear();
        self.text.clear();
        self.ends.clear();
        self.long.clear();
        self.empty = None;
    }

    /// Every distinct term with its number, in byte order. Each is sorted with its first 8
    /// bytes as a big-endian number (zero-padded), so most comparisons are one of two words;
    /// equal numbers compare the bytes.
    pub(crate) fn sorted_with_ids(&self) -> Vec<(&[u8], u32)> {
        let mut keyed: Vec<(u64, &[u8], u32)> = Vec::with_capacity(self.ends.len());
        keyed.extend(self.terms().zip(0u32..).map(|(t, id)| (sort_key(t), t, id)));
        sort_keyed(&mut keyed);
        keyed.into_iter().map(|(_, t, id)| (t, id)).collect()
    }

    /// Every distinct term, in byte order (as [`TermCollector::sorted_with_ids`], without the
    /// numbers: a smaller sort).
    pub(crate) fn sorted(&self) -> Vec<&[u8]> {
        let mut keyed: Vec<(u64, &[u8])> = Vec::with_capacity(self.ends.len());
        keyed.extend(self.terms().map(|t| (sort_key(t), t)));
        keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        keyed.into_iter().map(|(_, t)| t).collect()
    }

    /// Every distinct term, by number.
    fn terms(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let end = end as usize;
            let t = self.text.get(start..end).unwrap_or_default();
            start = end;
            t
        })
    }
}

/// Terms numbered and keyed by [`sort_key`], sorted in byte order: most comparisons are one
/// of two words, and only equal keys compare the bytes.
pub(crate) fn sort_keyed(keyed: &mut [(u64, &[u8], u32)]) {
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
}

/// A term's first 8 bytes as a big-endian number (zero-padded): the order of the numbers is
/// the terms' byte order wherever they differ.
pub(crate) fn sort_key(t: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = t.len().min(8);
    b[..n].copy_from_slice(&t[..n]);
    u64::from_be_bytes(b)
}

thread_local! {
    /// This thread's collector, kept from one build to the next.
    static COLLECTOR: std::cell::Cell<Option<TermCollector>> = const { std::cell::Cell::new(None) };
}

/// The most term bytes a kept collector may hold room for ([`with_collector`]).
const KEPT_TEXT: usize = 1 << 20;

/// Runs `f` with this thread's collector, empty (its table kept from the last call). It is
/// emptied after `f` and kept only when small (a table of up to [`KEPT_SLOTS`] slots, room
/// for up to [`KEPT_TEXT`] term bytes): a thread that built a large session's terms does not
/// hold them until its next build. (Only an emptied collector is kept; one whose `f`
/// panicked is dropped.)
pub(crate) fn with_collector<T>(f: impl FnOnce(&mut TermCollector) -> T) -> T {
    let mut c = COLLECTOR.take().unwrap_or_default();
    let out = f(&mut c);
    c.clear();
    if c.text.capacity() <= KEPT_TEXT {
        COLLECTOR.set(Some(c));
    }
    out
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
        // The empty term (an empty id's key) can only come first.
        let l = list(&["", "a"]);
        assert_eq!(l.as_bytes(), &[0x00, 0x01, b'a']);
        assert_eq!(read(&l).unwrap(), [b"".to_vec(), b"a".to_vec()]);
        assert!(l.contains(b"").unwrap());
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
            // The empty term twice.
            (vec![0x00, 0x00], 2),
            // A long header whose varint never ends.
            (vec![LONG, 0x80, 0x80, 0x80, 0x80, 0x80], 1),
        ];
        for (i, (b, n)) in cases.into_iter().enumerate() {
            let err = read(&TermList::new(b, n)).unwrap_err();
            assert_eq!(err.code(), "index_corrupt", "case {i}");
        }
    }

    #[test]
    fn collector_keeps_each_term_once() {
        let mut c = TermCollector::default();
        let long = "abcdefghijklmnopq";
        let terms = [
            "a",
            "b",
            "ab",
            "ba",
            "abc",
            "acc",
            "abcd",
            "abce",
            "abcdefgh",
            "abcdefgi",
            "abcdefghijklmnop",
            "bbcdefghijklmnop",
            long,
            "",
            "日本語",
        ];
        for _ in 0..3 {
            for t in terms {
                c.insert(t.as_bytes()).unwrap();
            }
        }
        let mut want: Vec<&[u8]> = terms.iter().map(|t| t.as_bytes()).collect();
        want.sort_unstable();
        assert_eq!(c.sorted(), want);
    }

    proptest! {
        /// A key's position in a list, found without writing its terms out, is where it
        /// stands among them, or `None` when it is none of them: terms of 0 to 40 bytes over
        /// a few letters (long shared prefixes, suffixes past a short header), keys in the
        /// list, between its terms, before and after them; and the first term read in place
        /// is the first the cursor gives.
        #[test]
        fn position_is_where_the_key_stands(
            terms in prop::collection::btree_set(prop::collection::vec(prop::sample::select(vec![0u8, b'a', b'b', 0xff]), 0..40), 1..20),
            keys in prop::collection::vec(prop::collection::vec(prop::sample::select(vec![0u8, b'a', b'b', 0xff]), 0..40), 0..20),
        ) {
            let terms: Vec<Vec<u8>> = terms.into_iter().collect();
            let l = TermList::from_sorted(&terms).unwrap();
            prop_assert_eq!(first_term(l.as_bytes()).unwrap(), terms[0].as_slice());
            for key in terms.iter().chain(&keys) {
                let want = terms.iter().position(|t| t == key);
                prop_assert_eq!(position(l.as_bytes(), l.len(), key).unwrap(), want);
            }
        }

        /// The collector's terms are the distinct inputs, sorted, each numbered in the order
        /// first met: short terms that differ in one byte anywhere (so every byte must
        /// count), long ones, the empty one, past the table's growth; cleared and filled
        /// again with the same terms and others, it holds only the second set, numbered
        /// from 0 again.
        #[test]
        fn collector_is_a_sorted_numbered_set(
            terms in prop::collection::vec(prop::collection::vec(prop::sample::select(vec![0u8, b'a', b'b', 0xff]), 0..20), 0..3000),
            split in 0usize..3000,
        ) {
            // What the collector should hold: each distinct term with its first-met number.
            let numbered = |ts: &mut dyn Iterator<Item = &Vec<u8>>| {
                let mut m: std::collections::BTreeMap<Vec<u8>, u32> = std::collections::BTreeMap::new();
                let mut given = Vec::new();
                for t in ts {
                    let next = m.len() as u32;
                    given.push(*m.entry(t.clone()).or_insert(next));
                }
                (m.into_iter().collect::<Vec<_>>(), given)
            };
            let got = |c: &TermCollector| -> Vec<(Vec<u8>, u32)> {
                c.sorted_with_ids().into_iter().map(|(t, id)| (t.to_vec(), id)).collect()
            };
            let mut c = TermCollector::default();
            let given: Vec<u32> = terms.iter().map(|t| c.insert(t).unwrap()).collect();
            let (want, want_given) = numbered(&mut terms.iter());
            prop_assert_eq!(given, want_given);
            prop_assert_eq!(c.len(), want.len());
            prop_assert_eq!(got(&c), want.clone());
            let sorted: Vec<Vec<u8>> = c.sorted().into_iter().map(<[u8]>::to_vec).collect();
            prop_assert_eq!(sorted, want.into_iter().map(|(t, _)| t).collect::<Vec<_>>());
            c.clear();
            let second = &terms[split.min(terms.len())..];
            let given: Vec<u32> = second.iter().rev().map(|t| c.insert(t).unwrap()).collect();
            let (want, want_given) = numbered(&mut second.iter().rev());
            prop_assert_eq!(given, want_given);
            prop_assert_eq!(got(&c), want);
        }

        /// Tokens noted a text at a time, each short one's slot asked for ahead of its
        /// lookup, are numbered in the order first met, in order, and the collector holds
        /// them, byte for byte: tokens of 1 to 16 bytes and longer (the queue is emptied before each long
        /// one), upper case and non-ASCII (lowered, the general tokenizer), many texts into
        /// one collector, past the table's growth.
        #[test]
        fn tokens_noted_ahead_as_one_at_a_time(
            texts in prop::collection::vec(
                prop::collection::vec(
                    (
                        prop::collection::vec(prop::sample::select(vec!['a', 'b', 'Z', '0', '_', 'é']), 1..24),
                        prop::sample::select(vec![" ", ", ", "\n", "-", "/"]),
                    ),
                    0..200,
                ),
                1..12,
            ),
        ) {
            let texts: Vec<String> = texts
                .iter()
                .map(|words| words.iter().flat_map(|(w, sep)| w.iter().copied().chain(sep.chars())).collect())
                .collect();
            let mut ahead = TermCollector::default();
            // Each distinct token with its first-met number.
            let mut numbers: std::collections::BTreeMap<Vec<u8>, u32> = std::collections::BTreeMap::new();
            for text in &texts {
                let mut got = Vec::new();
                ahead.insert_tokens(text, |id| got.push(id.unwrap()));
                let mut want = Vec::new();
                crate::for_each_token(text, |t| {
                    let next = numbers.len() as u32;
                    want.push(*numbers.entry(t.as_bytes().to_vec()).or_insert(next));
                });
                prop_assert_eq!(got, want);
            }
            let held: Vec<(Vec<u8>, u32)> =
                ahead.sorted_with_ids().into_iter().map(|(t, id)| (t.to_vec(), id)).collect();
            prop_assert_eq!(held, numbers.into_iter().collect::<Vec<_>>());
        }

        #[test]
        fn round_trip(mut terms in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..60)) {
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
                prop_assert!(terms.iter().skip(1).all(|t| !t.is_empty()));
            }
        }
    }
}
