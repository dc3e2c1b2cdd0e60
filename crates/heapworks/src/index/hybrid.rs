//! [`Hybrid`]: exact bins for small chunks, a splay tree for the rest, as dlmalloc keeps small
//! bins and tree bins.
//!
//! Invariants (verified by [`crate::Heap::check`]):
//! - Every free chunk below [`TREE_FROM`] bytes is in the [`Bins`] part, whose own invariants
//!   hold (see [`crate::index::bins`]); below `TREE_FROM` every bin is exact (one size), so
//!   its good fit, the first non-empty bin at or above the request's, is the best fit. No bin
//!   at or above `TREE_FROM`'s holds a chunk.
//! - Every free chunk of `TREE_FROM` bytes or more is in the [`SplayTree`] part, whose own
//!   invariants hold (see [`crate::index::splay`]): an exact best fit by size. No chunk of the
//!   tree is below `TREE_FROM`, so it never needs its list of too-small chunks.
//! - A slot below `TREE_FROM` is a bin of the bins part; any other slot is the size of a chunk
//!   filed in the tree (sizes there are at least `TREE_FROM`, above every bin number).
//!
//! A request below `TREE_FROM` takes the bins' good fit inline, exactly as the default index
//! does; when no bin at or above its own has a chunk, it takes the tree's smallest chunk. A
//! larger request is the tree's exact best fit: the smallest free chunk that holds it, the
//! choice that keeps dlmalloc dense under large reallocations.

use crate::bins::{bin_of, EXACT_LIMIT};
use crate::chunk::Chunk;
use crate::error::{Corruption, CorruptionKind};
use crate::index::splay::SplayTree;
use crate::index::{Bins, Index};

/// Chunks from this size up go to the tree: the first size above the exact bins.
pub(crate) const TREE_FROM: usize = EXACT_LIMIT;

/// The exact bins below 2 KiB (256 B on 32-bit targets) and a splay tree above.
/// `Heap::<Hybrid>::empty()` builds a heap on it.
pub struct Hybrid {
    bins: Bins,
    tree: SplayTree,
}

/// Whether a slot names a tree entry (by its size) rather than a bin.
#[inline(always)]
const fn in_tree(slot_or_size: usize) -> bool {
    slot_or_size >= TREE_FROM
}

impl Index for Hybrid {
    const EMPTY: Hybrid = Hybrid {
        bins: Bins::new(),
        tree: SplayTree::new(),
    };
    const GOOD_FIT_BELOW: usize = TREE_FROM;

    unsafe fn adopt_sink(&mut self, sink: Chunk) {
        // SAFETY: forwarded from the caller.
        unsafe { self.bins.adopt_sink(sink) }
    }

    #[inline(always)]
    fn slot_of(size: usize) -> usize {
        if in_tree(size) {
            size
        } else {
            bin_of(size)
        }
    }

    #[inline(always)]
    unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller; each part gets the sizes of its invariant.
        unsafe {
            if in_tree(size) {
                self.tree.insert(chunk, size);
            } else {
                self.bins.insert(chunk, size);
            }
        }
    }

    #[inline(always)]
    unsafe fn unlink(&mut self, chunk: Chunk, slot: usize) {
        // SAFETY: forwarded from the caller; the slot names the part the chunk is in.
        unsafe {
            if in_tree(slot) {
                self.tree.unlink(chunk, slot);
            } else {
                self.bins.unlink(chunk, slot);
            }
        }
    }

    #[inline(always)]
    unsafe fn unlink_head(&mut self, chunk: Chunk, slot: usize) {
        // SAFETY: `good_fit` returns the first chunk of a bin.
        unsafe { self.bins.unlink_head(chunk, slot) }
    }

    #[inline(always)]
    unsafe fn refile_in(&mut self, from: Chunk, slot: usize, to: Chunk, new_size: usize) {
        // SAFETY: forwarded from the caller; an entry that changes part is taken out (its
        // links read) before the new one is filed.
        unsafe {
            if !in_tree(slot) && !in_tree(new_size) {
                self.bins.refile_in(from, slot, to, new_size);
            } else {
                Index::unlink(self, from, slot);
                Index::insert(self, to, new_size);
            }
        }
    }

    #[inline(always)]
    unsafe fn refile_head(&mut self, from: Chunk, slot: usize, to: Chunk, new_size: usize) {
        // SAFETY: `good_fit` returns the first chunk of a bin; as for `refile_in` otherwise.
        unsafe {
            if in_tree(new_size) {
                self.bins.unlink_head(from, slot);
                self.tree.insert(to, new_size);
            } else {
                self.bins.refile_head(from, slot, to, new_size);
            }
        }
    }

    #[inline(always)]
    unsafe fn resize_entry(&mut self, chunk: Chunk, old_size: usize, new_size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe {
            if !in_tree(old_size) && !in_tree(new_size) {
                self.bins.resize_entry(chunk, old_size, new_size);
            } else {
                Index::unlink(self, chunk, Hybrid::slot_of(old_size));
                Index::insert(self, chunk, new_size);
            }
        }
    }

    #[inline(always)]
    fn good_fit(&mut self, size: usize) -> Option<(Chunk, usize)> {
        self.bins.good_fit(size)
    }

    unsafe fn search(&mut self, size: usize) -> Option<(Chunk, usize)> {
        // Below TREE_FROM the bins are exact, so a request `good_fit` did not serve has no
        // chunk in the bins: every tree chunk holds it, and the best fit is the smallest.
        // SAFETY: forwarded from the caller.
        unsafe { self.tree.best_fit(size) }
    }

    unsafe fn find(&mut self, size: usize) -> Option<(Chunk, usize)> {
        if size < TREE_FROM {
            if let Some(found) = self.bins.good_fit(size) {
                return Some(found);
            }
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.tree.best_fit(size) }
    }

    unsafe fn first_fit(
        &mut self,
        min_size: usize,
        mut fits: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<(Chunk, usize)> {
        // SAFETY: forwarded from the caller.
        unsafe {
            match self.bins.first_fit(bin_of(min_size), &mut fits) {
                Some(found) => Some(found),
                None => self
                    .tree
                    .walk()
                    .find_in_order(min_size.max(TREE_FROM), fits),
            }
        }
    }

    unsafe fn for_each(&self, mut f: impl FnMut(Chunk, usize)) {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.bins.for_each(&mut f);
            Index::for_each(&self.tree, f);
        }
    }

    unsafe fn largest(&self) -> Option<usize> {
        // SAFETY: forwarded from the caller.
        unsafe { self.tree.walk().largest().or_else(|| self.bins.largest()) }
    }

    unsafe fn check_filed(&self, chunk: Chunk, size: usize) -> Result<(), Corruption> {
        // SAFETY: forwarded from the caller.
        unsafe {
            if in_tree(size) {
                self.tree.walk().check_filed(chunk, size)
            } else {
                self.bins.check_links(chunk, size)
            }
        }
    }

    fn tally(&self, limit: usize) -> Result<Option<(usize, usize)>, Corruption> {
        if let Some((chunk, bin)) = self.bins.good_fit(TREE_FROM) {
            return Err(Corruption {
                addr: chunk.addr(),
                bin: Some(bin),
                kind: CorruptionKind::BadBitmap,
            });
        }
        let Some((in_bins, bins_print)) = self.bins.tally_lists(limit)? else {
            return Ok(None);
        };
        let tree = self.tree.tally_from(TREE_FROM, limit - in_bins)?;
        Ok(tree
            .map(|(in_tree, tree_print)| (in_bins + in_tree, bins_print.wrapping_add(tree_print))))
    }

    fn files(&self, chunk: Chunk, size: usize, limit: usize) -> bool {
        if in_tree(size) {
            self.tree.walk().files(chunk, size, limit)
        } else {
            Index::files(&self.bins, chunk, size, limit)
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use core::alloc::Layout;
    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::chunk::WORD;
    use crate::index::test_heap;

    /// Large requests take the exact best fit from the tree, small ones the bins' good fit:
    /// among free chunks of 4, 2.5 and 3 KiB, a request for 2.5 KiB of chunk gets the 2.5 KiB
    /// one even though it was freed in the middle, and the heap stays sound.
    #[test]
    fn large_requests_take_the_best_fit_from_the_tree() {
        let mut memory = vec![0u128; 4096];
        let mut heap = test_heap::<Hybrid>(&mut memory);
        let payload = |chunk: usize| Layout::from_size_align(chunk - WORD, 8).unwrap();
        let holes: Vec<_> = [4096, 2560, 3072]
            .iter()
            .map(|&chunk| {
                let hole = heap.allocate(payload(chunk)).unwrap();
                heap.allocate(payload(64)).unwrap();
                hole
            })
            .collect();
        for &hole in &holes {
            // SAFETY: every hole is a live block, freed once.
            unsafe { heap.free(hole) };
        }
        heap.check().unwrap();
        assert_eq!(heap.allocate(payload(2560)).unwrap(), holes[1]);
        assert_eq!(heap.allocate(payload(3000 & !15)).unwrap(), holes[2]);
        heap.check().unwrap();
    }

    /// A chunk of the tree's sizes filed in a bin (5000 B of payload, a 5008 B chunk) breaks
    /// the hybrid's invariant, and the checker says so.
    #[test]
    fn a_large_chunk_in_the_bins_is_reported() {
        let mut memory = vec![0u128; 4096];
        let mut heap = test_heap::<Hybrid>(&mut memory);
        let block = heap
            .allocate(Layout::from_size_align(5000, 8).unwrap())
            .unwrap();
        heap.allocate(Layout::from_size_align(8, 8).unwrap())
            .unwrap();
        // SAFETY: `block` is live; freed, its chunk is filed in the tree, then moved to a bin
        // by hand.
        unsafe {
            heap.free(block);
            let chunk = Chunk::from_payload(block);
            let size = chunk.size();
            heap.index.tree.unlink(chunk, size);
            heap.index.bins.insert(chunk, size);
        }
        // The walk meets the chunk first: its links are a bin list's, which the tree's link
        // check rejects. The index's own check names the misplaced bin.
        assert_eq!(heap.check().unwrap_err().kind, CorruptionKind::BadLink);
        let fault = heap.index.tally(usize::MAX).unwrap_err();
        assert_eq!(fault.kind, CorruptionKind::BadBitmap);
        assert_eq!(fault.bin, Some(bin_of(5008)));
    }
}
