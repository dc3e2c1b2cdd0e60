//! The free index: every free chunk, filed by size in doubly linked bin lists.
//!
//! Invariants (verified by [`crate::Heap::check`]):
//! - Each free chunk is in exactly one list, the one of [`bin_of`]`(its size)`.
//! - `heads[b]` is the first chunk of bin `b`'s list; the first chunk's `prev` link is `None`,
//!   and `x.next.prev == x` along every list.
//! - The occupancy bitmap has bin `b` set exactly when `heads[b]` is `Some`.
//!
//! Finding a chunk for a request of `size` bytes:
//! 1. If the request's bin is exact, the first non-empty bin at or above it serves: O(1).
//! 2. Otherwise the head of the request's own bin is tried, then the first non-empty bin above
//!    it, whose every chunk fits: O(1).
//! 3. Only when both fail is the request's own bin scanned for a fitting chunk (first fit).
//!    This happens only when no larger free chunk exists at all; it walks one bin's list, so a
//!    request that the largest free chunk could serve never fails. The worst case is bounded
//!    by the number of free chunks whose sizes share the request's sub-bin (a 1/8-octave band).

use crate::bins::{bin_of, is_exact, BIN_COUNT};
use crate::bitmap::Bitmap;
use crate::chunk::Chunk;

pub(crate) struct FreeIndex {
    occupancy: Bitmap,
    heads: [Option<Chunk>; BIN_COUNT],
}

impl FreeIndex {
    pub(crate) const fn new() -> FreeIndex {
        FreeIndex {
            occupancy: Bitmap::new(),
            heads: [None; BIN_COUNT],
        }
    }

    /// Files a free chunk of `size` bytes (its header and footer already written).
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
            if let Some(old_head) = old_head {
                old_head.set_prev_free(Some(chunk));
            }
        }
        self.heads[bin] = Some(chunk);
        self.occupancy.set(bin);
    }

    /// Takes a free chunk of `size` bytes out of its list.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes filed in this index.
    #[inline(always)]
    pub(crate) unsafe fn remove(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: `chunk` and its list neighbours are free chunks of this index.
        unsafe {
            let next = chunk.next_free();
            let prev = chunk.prev_free();
            if let Some(next) = next {
                next.set_prev_free(prev);
            }
            match prev {
                Some(prev) => prev.set_next_free(next),
                None => self.unlink_head(bin_of(size), next),
            }
        }
    }

    /// Replaces the head of `bin` by `next`, clearing the bin's bit when it empties.
    #[inline(always)]
    fn unlink_head(&mut self, bin: usize, next: Option<Chunk>) {
        self.heads[bin] = next;
        if next.is_none() {
            self.occupancy.clear(bin);
        }
    }

    /// Takes out a free chunk of at least `size` bytes (see the module docs for the search).
    ///
    /// # Safety
    /// The index is consistent (every listed chunk is a free chunk of its bin).
    #[inline(always)]
    pub(crate) unsafe fn take_at_least(&mut self, size: usize) -> Option<Chunk> {
        let bin = bin_of(size);
        if !is_exact(bin) {
            if let Some(head) = self.heads[bin] {
                // SAFETY: listed chunks are free chunks with valid headers.
                if unsafe { head.size() } >= size {
                    // SAFETY: `head` heads `bin`.
                    unsafe { self.pop_head(bin, head) };
                    return Some(head);
                }
            }
        }
        let first_fitting_bin = if is_exact(bin) { bin } else { bin + 1 };
        if let Some(found) = self.occupancy.first_at_or_above(first_fitting_bin) {
            let head = self.heads[found]?;
            // SAFETY: `head` heads `found`.
            unsafe { self.pop_head(found, head) };
            return Some(head);
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.take_first_fit(bin, |_, chunk_size| chunk_size >= size) }
    }

    /// Takes out the first chunk, scanning bins upward from `first_bin`, that `fits` accepts.
    /// `fits` gets the chunk and its size. This is the slow path: it walks lists.
    ///
    /// # Safety
    /// The index is consistent.
    pub(crate) unsafe fn take_first_fit(
        &mut self,
        first_bin: usize,
        mut fits: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<Chunk> {
        let mut bin = self.occupancy.first_at_or_above(first_bin)?;
        loop {
            let mut cursor = self.heads[bin];
            while let Some(chunk) = cursor {
                // SAFETY: listed chunks are free chunks with valid headers and links.
                let size = unsafe { chunk.size() };
                if fits(chunk, size) {
                    // SAFETY: `chunk` is filed in this index with this size.
                    unsafe { self.remove(chunk, size) };
                    return Some(chunk);
                }
                // SAFETY: as above.
                cursor = unsafe { chunk.next_free() };
            }
            bin = self.occupancy.first_at_or_above(bin + 1)?;
        }
    }

    /// # Safety
    /// `head` is the head of `bin`'s list.
    #[inline(always)]
    unsafe fn pop_head(&mut self, bin: usize, head: Chunk) {
        // SAFETY: `head` and its successor are free chunks of this index.
        unsafe {
            let next = head.next_free();
            if let Some(next) = next {
                next.set_prev_free(None);
            }
            self.unlink_head(bin, next);
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

    /// Whether the bitmap's two levels agree (for the checker).
    pub(crate) fn bitmap_is_consistent(&self) -> bool {
        self.occupancy.summary_is_consistent()
    }
}
