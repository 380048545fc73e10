//! Read-only memory maps of index files (feature `mmap`).
//!
//! The only `unsafe` of the crate: mapping a file. Readers stay safe code over `&[u8]`.

use std::fs::File;
use std::path::Path;

use crate::error::{Error, Result};

/// A read-only memory map of a whole file; page-aligned, so it satisfies
/// [`crate::format::ALIGN`]. Use it as the bytes of [`crate::hot::HotShard::open`] and the
/// other readers.
#[derive(Debug)]
pub struct Mmap {
    map: Option<memmap2::Mmap>,
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
        let len = file.metadata().map_err(|e| Error::io(path, &e))?.len();
        if len == 0 {
            return Ok(Mmap { map: None });
        }
        // SAFETY: the store never modifies an index file in place: every write goes to a temp
        // file that is renamed over the target, so the inode mapped here keeps its bytes for
        // the life of the map. Another program truncating the file could still fault on
        // access; that is outside the store's contract (the index dir is 0700 and ours).
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| Error::io(path, &e))?;
        Ok(Mmap { map: Some(map) })
    }
}

impl AsRef<[u8]> for Mmap {
    fn as_ref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}
