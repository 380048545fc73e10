//! Read-only memory maps of index files (feature `mmap`).
//!
//! The crate's `unsafe` for reading: mapping a file. Readers stay safe code over `&[u8]`.
//! (The others are `syncfs` in `store`, a cache prefetch hint in `terms`, the allocator in
//! `alloc` and a thread's scheduling policy in `background`.)

use std::fs::File;
use std::path::Path;

use crate::error::{Error, Result};

/// A read-only memory map of a whole file; page-aligned, so it satisfies
/// [`crate::format::ALIGN`]. Use it as the bytes of [`crate::hot::HotShard::open`] and the
/// other readers.
#[derive(Debug)]
pub struct Mmap {
    map: Option<memmap2::Mmap>,
    /// The file, kept open so [`Mmap::unchanged`] can ask about the mapped inode itself.
    file: File,
    stamp: Stamp,
}

/// What a file's metadata says about its contents: an in-place write changes one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    #[cfg(unix)]
    ctime: (i64, i64),
    #[cfg(unix)]
    inode: (u64, u64),
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            #[cfg(unix)]
            ctime: (meta.ctime(), meta.ctime_nsec()),
            #[cfg(unix)]
            inode: (meta.dev(), meta.ino()),
        }
    }
}

impl Mmap {
    /// Maps `path` read-only. An empty file maps to empty bytes (mapping zero bytes fails on
    /// some platforms).
    ///
    /// # Errors
    ///
    /// `index_io` when the file cannot be opened or mapped.
    pub fn open(path: &Path) -> Result<Mmap> {
        let file = File::open(path).map_err(|e| Error::io(path, &e))?;
        let meta = file.metadata().map_err(|e| Error::io(path, &e))?;
        let stamp = Stamp::of(&meta);
        if meta.len() == 0 {
            return Ok(Mmap {
                map: None,
                file,
                stamp,
            });
        }
        // SAFETY: the store never modifies an index file in place: every write goes to a temp
        // file that is renamed over the target, so the inode mapped here keeps its bytes for
        // the life of the map. Another program truncating the file could still fault on
        // access; that is outside the store's contract (the index dir is 0700 and ours).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, &e))?;
        Ok(Mmap {
            map: Some(map),
            file,
            stamp,
        })
    }

    /// Whether the mapped file still has the length, modification and change times it had
    /// when it was mapped (one `fstat`). A reader that keeps a map across calls asks this
    /// before trusting bytes it checked earlier: a write in place (which the store never
    /// does, but another program might) changes the change time.
    #[must_use]
    pub fn unchanged(&self) -> bool {
        self.file
            .metadata()
            .is_ok_and(|m| Stamp::of(&m) == self.stamp)
    }

    /// Whether `path` names the very file this maps, unchanged: the store replaces files by
    /// renaming new ones over them, which gives the path another inode.
    #[must_use]
    pub fn is_current(&self, path: &Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| Stamp::of(&m) == self.stamp) && self.unchanged()
    }
}

impl AsRef<[u8]> for Mmap {
    fn as_ref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}
