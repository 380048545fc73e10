//! Source identity: what decides whether an index record of a source may be reused.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use sha2::{Digest, Sha256};

pub use sessiondex_core::catalog::SourceIdentity;

/// The stat part of an identity, cheap to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ns.
    pub mtime_ns: i64,
    /// Change time, ns.
    pub ctime_ns: i64,
    /// Inode.
    pub inode: u64,
}

impl Stat {
    /// Reads the stat of `path`.
    ///
    /// # Errors
    ///
    /// The I/O error of `metadata`.
    pub fn of(path: &Path) -> io::Result<Stat> {
        let m = std::fs::metadata(path)?;
        Ok(Stat::from_metadata(&m))
    }

    /// The stat part of file metadata.
    #[must_use]
    pub fn from_metadata(m: &std::fs::Metadata) -> Stat {
        let mtime_ns = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
        #[cfg(unix)]
        let (ctime_ns, inode) = {
            use std::os::unix::fs::MetadataExt;
            (
                m.ctime()
                    .saturating_mul(1_000_000_000)
                    .saturating_add(m.ctime_nsec()),
                m.ino(),
            )
        };
        #[cfg(not(unix))]
        let (ctime_ns, inode) = (0, 0);
        Stat {
            size: m.len(),
            mtime_ns,
            ctime_ns,
            inode,
        }
    }
}

impl Stat {
    /// Whether `identity` was taken from a file with exactly this stat: then its content is
    /// taken as unchanged without hashing. Any difference (a same-size rewrite with the mtime
    /// put back still moves ctime) requires the hash.
    #[must_use]
    pub fn matches(&self, identity: &SourceIdentity) -> bool {
        self.size == identity.size
            && self.mtime_ns == identity.mtime_ns
            && self.ctime_ns == identity.ctime_ns
            && self.inode == identity.inode
    }
}

/// A reader that hashes (SHA-256) every byte it passes on, so that a source is read once for
/// both parsing and its `sourceHash`.
#[derive(Debug)]
pub struct HashingReader<R> {
    inner: R,
    hasher: Sha256,
    len: u64,
}

impl<R: Read> HashingReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        HashingReader {
            inner,
            hasher: Sha256::new(),
            len: 0,
        }
    }

    /// Reads what is left (so that the hash covers the whole input) and returns the hex
    /// SHA-256 and the byte count.
    ///
    /// # Errors
    ///
    /// I/O errors of the inner reader.
    pub fn finish(mut self) -> io::Result<(String, u64)> {
        io::copy(
            &mut self.inner,
            &mut HashSink(&mut self.hasher, &mut self.len),
        )?;
        Ok((hex(&self.hasher.finalize()), self.len))
    }
}

struct HashSink<'a>(&'a mut Sha256, &'a mut u64);

impl io::Write for HashSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        *self.1 += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
}

/// SHA-256 of a file's first `len` bytes (the whole file when `len` is `None`), hex.
///
/// # Errors
///
/// I/O errors; a file shorter than `len` is `UnexpectedEof`.
pub fn hash_file(path: &Path, len: Option<u64>) -> io::Result<String> {
    let mut f = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut left = len.unwrap_or(u64::MAX);
    while left > 0 {
        let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        let n = f.read(&mut buf[..want])?;
        if n == 0 {
            if len.is_some() {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            break;
        }
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    Ok(hex(&hasher.finalize()))
}

/// SHA-256 of bytes, hex.
#[must_use]
pub fn hash_bytes(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_whole_and_prefix() {
        let dir = std::env::temp_dir().join(format!("sdx-id-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("f");
        std::fs::write(&p, b"hello world").unwrap();
        assert_eq!(hash_file(&p, None).unwrap(), hash_bytes(b"hello world"));
        assert_eq!(hash_file(&p, Some(5)).unwrap(), hash_bytes(b"hello"));
        assert_eq!(
            hash_file(&p, Some(50)).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
