//! The global allocator of the `sessiondex` command line and the benchmarks (feature
//! `mimalloc`): mimalloc, asked for a plain block whenever every block it hands out has the
//! alignment the layout needs.
//!
//! mimalloc's own Rust wrapper asks for every allocation with `mi_malloc_aligned`. Its aligned
//! path checks the alignment, and a block over 1 KiB whose size class is no power of two
//! takes a slow path that allocates more and aligns within it (some 200 instructions, where
//! `mi_malloc` takes a few dozen). A recall call of a rare term allocates about a hundred
//! times: `callgrind` of `sessiondex-bench probe` counted 6% fewer of its instructions with
//! plain blocks (docs/performance-history.md, Fifty-third run). One of the crate's five
//! `unsafe` sites, with mapping files in `mmap`, `syncfs` in `store`, the prefetch hint in
//! `terms` and a thread's scheduling policy in `background`.
//!
//! ```no_run
//! #[global_allocator]
//! static GLOBAL: sessiondex_core::alloc::Mimalloc = sessiondex_core::alloc::Mimalloc;
//! ```

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment of every block mimalloc hands out: its size classes are whole machine words,
/// and its pages start aligned to more than a word.
const BLOCK_ALIGN: usize = std::mem::size_of::<usize>();

/// mimalloc as a [`GlobalAlloc`]: plain blocks for alignments up to a machine word, aligned
/// ones above.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mimalloc;

// SAFETY: each method passes the layout's size (and its alignment when a plain block may not
// have it) to the mimalloc function of the same contract: a block of at least that size, at
// that alignment, or null. A block is freed and resized only by mimalloc, which takes any
// block it gave out, aligned or not.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        block(layout, false).cast()
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        block(layout, true).cast()
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a block this allocator gave out, all of them mimalloc's.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = if layout.align() <= BLOCK_ALIGN {
            // SAFETY: a block of mimalloc's; the new one is word-aligned as every block is.
            unsafe { mi::mi_realloc(ptr.cast::<c_void>(), new_size) }
        } else {
            // SAFETY: a block of mimalloc's, kept at the layout's alignment.
            unsafe { mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()) }
        };
        p.cast()
    }
}

/// A new block for `layout`, zeroed when `zero`: plain when every block has the alignment.
#[inline]
#[allow(unsafe_code)]
fn block(layout: Layout, zero: bool) -> *mut c_void {
    let (size, align) = (layout.size(), layout.align());
    // SAFETY: the four take any size (and an alignment that is a power of two, as a layout's
    // is) and give a block of it or null; a plain block is word-aligned (`BLOCK_ALIGN`).
    unsafe {
        match (align <= BLOCK_ALIGN, zero) {
            (true, false) => mi::mi_malloc(size),
            (true, true) => mi::mi_zalloc(size),
            (false, false) => mi::mi_malloc_aligned(size, align),
            (false, true) => mi::mi_zalloc_aligned(size, align),
        }
    }
}

#[cfg(test)]
#[allow(unsafe_code)]
mod tests {
    use super::*;

    /// Every size from 1 byte to 20 KiB in steps that cross mimalloc's size classes, at
    /// every alignment from 1 to 4 KiB: the block is at the alignment, holds what was written,
    /// starts zeroed when asked, and keeps its bytes through a resize up and down.
    #[test]
    fn blocks_have_the_alignment_and_keep_their_bytes() {
        let alloc = Mimalloc;
        let mut sizes: Vec<usize> = (1..=64).collect();
        sizes.extend((65..=20_480).step_by(37));
        sizes.extend([1024, 1025, 1536, 2048, 3000, 4096, 8192, 16_384]);
        let mut checked = 0;
        for &size in &sizes {
            for shift in 0..=12 {
                let align = 1usize << shift;
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a layout of non-zero size; each block is freed once, below.
                unsafe {
                    let p = alloc.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "{size} {align}");
                    for i in 0..size {
                        p.add(i).write(i as u8);
                    }
                    let grown = size * 3 + 5;
                    let q = alloc.realloc(p, layout, grown);
                    assert!(!q.is_null());
                    assert_eq!(q as usize % align, 0, "{size} {align} grown");
                    for i in 0..size {
                        assert_eq!(q.add(i).read(), i as u8);
                    }
                    let shrunk = size.div_ceil(2);
                    let grown_layout = Layout::from_size_align(grown, align).unwrap();
                    let r = alloc.realloc(q, grown_layout, shrunk);
                    assert!(!r.is_null());
                    assert_eq!(r as usize % align, 0, "{size} {align} shrunk");
                    for i in 0..shrunk {
                        assert_eq!(r.add(i).read(), i as u8);
                    }
                    alloc.dealloc(r, Layout::from_size_align(shrunk, align).unwrap());

                    let z = alloc.alloc_zeroed(layout);
                    assert!(!z.is_null());
                    assert_eq!(z as usize % align, 0, "{size} {align} zeroed");
                    assert!((0..size).all(|i| z.add(i).read() == 0));
                    alloc.dealloc(z, layout);
                }
                checked += 1;
            }
        }
        assert!(checked > 7_000, "{checked}");
    }
}
