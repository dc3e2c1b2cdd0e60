//! The free index: every free chunk, filed by size in doubly linked bin lists.
//!
//! Invariants (verified by [`crate::Heap::check`]):
//! - Each free chunk is in exactly one list, the one of [`bin_of`]`(its size)`.
//! - `heads[b]` is the first chunk of bin `b`'s list; the first chunk's `prev` link is `None`,
//!   and `x.next.prev == x` along every list.
//! - The occupancy bitmap has bin `b` set exactly when `heads[b]` is `Some`.
//!
//! Finding a chunk for a request of `size` bytes ([`FreeIndex::find`]):
//! 1. If the request's bin is exact, the head of the first non-empty bin at or above it: O(1).
//! 2. Otherwise the smallest fitting chunk among the first `FIT_SCAN` (4) of the request's own
//!    bin, then the smallest among the first four of the first non-empty bin above it, whose
//!    every chunk fits: O(1), a bounded best fit that keeps large free chunks whole.
//! 3. Only when both fail is the request's own bin scanned for a fitting chunk (first fit).
//!    This happens only when no larger free chunk exists at all; it walks one bin's list, so a
//!    request that the largest free chunk could serve never fails. The worst case is bounded
//!    by the number of free chunks whose sizes share the request's sub-bin (a 1/8-octave band).
//!
//! `find` does not take the chunk out: the heap then either unlinks it or, when the part left
//! free stays in the same bin, moves its entry in place ([`FreeIndex::refile`]), which spares
//! the bitmap and the bin computation. A bin is computed on unlinking only when the chunk heads
//! its list.

use crate::bins::{bin_of, in_bin, is_exact, is_exact_size};
use crate::bitmap::{Bitmap, BIN_SLOTS};
use crate::chunk::Chunk;

/// How many chunks of a bin beyond the exact ones a search compares for the best fit.
const FIT_SCAN: usize = 4;

pub(crate) struct FreeIndex {
    occupancy: Bitmap,
    heads: [Option<Chunk>; BIN_SLOTS],
}

impl FreeIndex {
    pub(crate) const fn new() -> FreeIndex {
        FreeIndex {
            occupancy: Bitmap::new(),
            heads: [None; BIN_SLOTS],
        }
    }

    /// Files a free chunk of `size` bytes at the head of its bin.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes that is in no list.
    #[inline(always)]
    pub(crate) unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        let bin = bin_of(size);
        let old_head = self.heads[bin];
        // SAFETY: `chunk` and `old_head` are free chunks, so they carry link words.
        unsafe {
            chunk.set_next_free(old_head);
            chunk.set_prev_free(None);
            match old_head {
                Some(old_head) => old_head.set_prev_free(Some(chunk)),
                // The bin was empty: only now does its bit change.
                None => self.occupancy.set(bin),
            }
        }
        self.heads[bin] = Some(chunk);
    }

    /// Takes a free chunk out of `bin`'s list.
    ///
    /// # Safety
    /// `chunk` is a free chunk filed in `bin`.
    #[inline(always)]
    pub(crate) unsafe fn unlink(&mut self, chunk: Chunk, bin: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlink_with(chunk, || bin) }
    }

    /// Takes a free chunk of `size` bytes out of its list. Its bin is computed only if the
    /// chunk heads its list.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes filed in this index.
    #[inline(always)]
    pub(crate) unsafe fn remove(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlink_with(chunk, || bin_of(size)) }
    }

    /// # Safety
    /// `chunk` is a free chunk filed in the bin `bin()` returns.
    #[inline(always)]
    unsafe fn unlink_with(&mut self, chunk: Chunk, bin: impl FnOnce() -> usize) {
        // SAFETY: `chunk` and its list neighbours are free chunks of this index.
        unsafe {
            let next = chunk.next_free();
            let prev = chunk.prev_free();
            if let Some(next) = next {
                next.set_prev_free(prev);
            }
            match prev {
                Some(prev) => prev.set_next_free(next),
                None => {
                    let bin = bin();
                    self.heads[bin] = next;
                    if next.is_none() {
                        self.occupancy.clear(bin);
                    }
                }
            }
        }
    }

    /// The entry of the free chunk `from`, of `old_size` bytes, now stands for a free chunk of
    /// `new_size` bytes at `to` (see [`FreeIndex::refile_in`]). A chunk of an exact bin always
    /// changes bin, so its bin is computed only if it heads its list.
    ///
    /// # Safety
    /// As for [`FreeIndex::refile_in`], with `from` of `old_size` bytes.
    #[inline(always)]
    pub(crate) unsafe fn refile(
        &mut self,
        from: Chunk,
        old_size: usize,
        to: Chunk,
        new_size: usize,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe {
            if is_exact_size(old_size) {
                self.remove(from, old_size);
                self.insert(to, new_size);
            } else {
                self.refile_in(from, bin_of(old_size), to, new_size);
            }
        }
    }

    /// The entry of the free chunk `from`, filed in `bin`, now stands for a free chunk of
    /// `new_size` bytes at `to`: moved in place when the bin stays the same, re-filed otherwise.
    /// Only link words are written; the caller writes `to`'s header and footer afterwards.
    ///
    /// # Safety
    /// `from` is filed in `bin`; `to`'s link words may overlap `from`'s header but not its links
    /// unless `to == from`.
    #[inline(always)]
    pub(crate) unsafe fn refile_in(&mut self, from: Chunk, bin: usize, to: Chunk, new_size: usize) {
        // SAFETY: forwarded from the caller; `from`'s links are read before `to`'s are written.
        unsafe {
            // A chunk of an exact bin changes bin whenever its size changes.
            if is_exact(bin) || !in_bin(bin, new_size) {
                self.unlink(from, bin);
                self.insert(to, new_size);
            } else if from != to {
                self.relocate(from, to, bin);
            }
        }
    }

    /// Moves the list entry of `from` (filed in `bin`) to `to`.
    ///
    /// # Safety
    /// As for [`FreeIndex::refile_in`].
    #[inline(always)]
    unsafe fn relocate(&mut self, from: Chunk, to: Chunk, bin: usize) {
        // SAFETY: `from` and its list neighbours are free chunks; links are read first.
        unsafe {
            let next = from.next_free();
            let prev = from.prev_free();
            to.set_next_free(next);
            to.set_prev_free(prev);
            if let Some(next) = next {
                next.set_prev_free(Some(to));
            }
            match prev {
                Some(prev) => prev.set_next_free(Some(to)),
                None => self.heads[bin] = Some(to),
            }
        }
    }

    /// A free chunk of at least `size` bytes and its bin, still filed (see the module docs).
    ///
    /// # Safety
    /// The index is consistent (every listed chunk is a free chunk of its bin).
    #[inline(always)]
    pub(crate) unsafe fn find(&self, size: usize) -> Option<(Chunk, usize)> {
        let bin = bin_of(size);
        if !is_exact(bin) {
            // SAFETY: forwarded from the caller.
            if let Some(best) = unsafe { self.best_of_first(bin, size) } {
                return Some((best, bin));
            }
        }
        let first_fitting_bin = if is_exact(bin) { bin } else { bin + 1 };
        if let Some(found) = self.occupancy.first_at_or_above(first_fitting_bin) {
            if is_exact(found) {
                return Some((self.heads[found]?, found));
            }
            // SAFETY: forwarded from the caller.
            return unsafe { self.best_of_first(found, size) }.map(|c| (c, found));
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.first_fit(bin, |_, chunk_size| chunk_size >= size) }
    }

    /// The smallest chunk of at least `size` bytes among the first `FIT_SCAN` of `bin`'s list.
    ///
    /// # Safety
    /// The index is consistent.
    #[inline(always)]
    unsafe fn best_of_first(&self, bin: usize, size: usize) -> Option<Chunk> {
        let mut best: Option<(Chunk, usize)> = None;
        let mut cursor = self.heads[bin];
        for _ in 0..FIT_SCAN {
            let Some(chunk) = cursor else { break };
            // SAFETY: listed chunks are free chunks with valid headers and links.
            let chunk_size = unsafe { chunk.size() };
            if chunk_size >= size && best.is_none_or(|(_, best_size)| chunk_size < best_size) {
                best = Some((chunk, chunk_size));
            }
            // SAFETY: as above.
            cursor = unsafe { chunk.next_free() };
        }
        best.map(|(chunk, _)| chunk)
    }

    /// The first chunk, scanning bins upward from `first_bin`, that `fits` accepts, with its
    /// bin. `fits` gets the chunk and its size. This is the slow path: it walks lists.
    ///
    /// # Safety
    /// The index is consistent.
    #[cold]
    pub(crate) unsafe fn first_fit(
        &self,
        first_bin: usize,
        mut fits: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<(Chunk, usize)> {
        let mut bin = self.occupancy.first_at_or_above(first_bin)?;
        loop {
            let mut cursor = self.heads[bin];
            while let Some(chunk) = cursor {
                // SAFETY: listed chunks are free chunks with valid headers and links.
                let size = unsafe { chunk.size() };
                if fits(chunk, size) {
                    return Some((chunk, bin));
                }
                // SAFETY: as above.
                cursor = unsafe { chunk.next_free() };
            }
            bin = self.occupancy.first_at_or_above(bin + 1)?;
        }
    }

    /// Calls `f` with every free chunk and its size, bin by bin. O(free chunks + bins).
    ///
    /// # Safety
    /// The index is consistent.
    pub(crate) unsafe fn for_each(&self, mut f: impl FnMut(Chunk, usize)) {
        let mut next_bin = self.occupancy.first_at_or_above(0);
        while let Some(bin) = next_bin {
            let mut cursor = self.heads[bin];
            while let Some(chunk) = cursor {
                // SAFETY: listed chunks are free chunks with valid headers and links.
                unsafe {
                    f(chunk, chunk.size());
                    cursor = chunk.next_free();
                }
            }
            next_bin = self.occupancy.first_at_or_above(bin + 1);
        }
    }

    /// The size of the largest free chunk, if any. Walks the highest non-empty bin only.
    ///
    /// # Safety
    /// The index is consistent.
    pub(crate) unsafe fn largest(&self) -> Option<usize> {
        let bin = self.occupancy.last()?;
        let mut largest = 0;
        let mut cursor = self.heads[bin];
        while let Some(chunk) = cursor {
            // SAFETY: listed chunks are free chunks with valid headers and links.
            unsafe {
                largest = largest.max(chunk.size());
                cursor = chunk.next_free();
            }
        }
        Some(largest)
    }

    /// The head of `bin`'s list (for the checker).
    pub(crate) fn head(&self, bin: usize) -> Option<Chunk> {
        self.heads[bin]
    }

    /// Whether the bitmap has `bin` marked non-empty (for the checker).
    pub(crate) fn is_marked(&self, bin: usize) -> bool {
        self.occupancy.is_set(bin)
    }
}
