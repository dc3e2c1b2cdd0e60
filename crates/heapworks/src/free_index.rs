//! The free index: every free chunk, filed by size in doubly linked bin lists.
//!
//! Invariants (verified by [`crate::Heap::check`]):
//! - Each free chunk is in exactly one list, the one of [`bin_of`]`(its size)`.
//! - `heads[b]` is the first chunk of bin `b`'s list, or the [sink](SINK) when it is empty.
//!   Every list ends in the sink, and `x.next.prev == x` along every list up to the sink.
//! - The first chunk's `prev` link is not a pointer but the *head tag* of its bin, `2b + 1`:
//!   odd, where every chunk address is even. Unlinking a chunk thus learns from the chunk alone
//!   whether it heads its list and which bin's head to update, with no size-to-bin arithmetic.
//! - The occupancy bitmap has bin `b` set exactly when `heads[b]` is not the sink.
//! - The sink is never written: its header reads as a free chunk of size 0 (which fits no
//!   request) and its `next` link is itself, so a walk may run past a list's end without a test.
//!
//! Why a sink rather than null links: with mixed sizes, "is this chunk the last of its list?",
//! "is it the first?" and "was the bin empty?" are coin tosses for the branch predictor. With
//! the sink and the head tags, inserting and unlinking are straight-line code: a write that
//! would land in the sink is steered to a scratch word, and one meant for the head tag to the
//! bin's head, by conditional moves.
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
//! free stays in the same bin, moves its entry in place ([`FreeIndex::refile_shrunk`]), which
//! spares the bitmap.

use core::hint::select_unpredictable;
use core::ptr::{self, NonNull};

use crate::bins::{bin_of, is_exact, stays_when_grown, stays_when_shrunk};
use crate::bitmap::{Bitmap, BIN_SLOTS};
use crate::chunk::Chunk;

/// How many chunks of a bin beyond the exact ones a search compares for the best fit.
const FIT_SCAN: usize = 4;

/// The words of the sink: a header of size 0, then `next` (itself), `prev` and a footer.
#[repr(C, align(16))]
struct SinkWords {
    header: usize,
    next: *const SinkWords,
    prev: usize,
    footer: usize,
}

// SAFETY: the sink is immutable (nothing ever writes through a pointer to it), so sharing it
// between threads is sound even though it holds a raw pointer.
unsafe impl Sync for SinkWords {}

/// The chunk that ends every list and stands for "no chunk" (see the module docs).
static SINK: SinkWords = SinkWords {
    header: 0,
    next: &SINK,
    prev: 0,
    footer: 0,
};

/// The sink as a chunk.
#[inline(always)]
const fn sink() -> Chunk {
    // SAFETY: the address of a static is never null. The pointer is only ever read through.
    Chunk::at(unsafe { NonNull::new_unchecked((&raw const SINK).cast::<u8>().cast_mut()) })
}

/// The `prev` link of the first chunk of `bin`'s list (see the module docs).
#[inline(always)]
pub(crate) fn head_tag(bin: usize) -> Chunk {
    // SAFETY: `2 * bin + 1` is not zero. The tag is compared and decoded, never dereferenced.
    Chunk::at(unsafe { NonNull::new_unchecked(ptr::without_provenance_mut(2 * bin + 1)) })
}

/// `chunk`, or `None` for the sink.
#[inline(always)]
pub(crate) fn listed(chunk: Chunk) -> Option<Chunk> {
    (chunk != sink()).then_some(chunk)
}

pub(crate) struct FreeIndex {
    occupancy: Bitmap,
    heads: [Chunk; BIN_SLOTS],
    /// Where the back link meant for the sink is written (never read).
    scratch: Chunk,
}

impl FreeIndex {
    pub(crate) const fn new() -> FreeIndex {
        FreeIndex {
            occupancy: Bitmap::new(),
            heads: [sink(); BIN_SLOTS],
            scratch: sink(),
        }
    }

    /// Where to write the back link of `chunk`: its `prev` word, or the scratch word when
    /// `chunk` is the sink.
    #[inline(always)]
    fn back_link_of(&mut self, chunk: Chunk) -> *mut Chunk {
        select_unpredictable(
            chunk == sink(),
            &raw mut self.scratch,
            chunk.prev_free_slot(),
        )
    }

    /// Where to write the forward link that pointed at a chunk whose `prev` link is `prev`:
    /// `prev`'s `next` word, or its bin's head when `prev` is a head tag. Also returns the bin
    /// when it is a head tag (0 otherwise), for the bitmap.
    #[inline(always)]
    fn forward_link_from(&mut self, prev: Chunk) -> (*mut Chunk, Option<usize>) {
        let tag = prev.addr();
        let is_head = tag & 1 != 0;
        let bin = select_unpredictable(is_head, tag >> 1, 0);
        let slot = select_unpredictable(
            is_head,
            // In bounds: a head tag names a bin, and `bin` is 0 otherwise.
            self.heads.as_mut_ptr().wrapping_add(bin),
            prev.next_free_slot(),
        );
        (slot, is_head.then_some(bin))
    }

    /// Files a free chunk of `size` bytes at the head of its bin.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes that is in no list.
    #[inline(always)]
    pub(crate) unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        let bin = bin_of(size);
        let old_head = self.heads[bin];
        // SAFETY: `chunk` and `old_head` are free chunks (or the sink, steered to scratch), so
        // their link words are theirs to write.
        unsafe {
            chunk.next_free_slot().write(old_head);
            chunk.prev_free_slot().write(head_tag(bin));
            self.back_link_of(old_head).write(chunk);
        }
        self.heads[bin] = chunk;
        self.occupancy.set(bin);
    }

    /// Takes a free chunk out of its list.
    ///
    /// # Safety
    /// `chunk` is a free chunk filed in this index.
    #[inline(always)]
    pub(crate) unsafe fn unlink(&mut self, chunk: Chunk) {
        // SAFETY: `chunk` and its list neighbours are free chunks of this index (or the sink and
        // a head tag, whose writes are steered to scratch and the bin's head).
        unsafe {
            let next = chunk.next_free();
            let prev = chunk.prev_free();
            self.back_link_of(next).write(prev);
            let (forward, head_of) = self.forward_link_from(prev);
            forward.write(next);
            let bin = head_of.unwrap_or(0);
            self.occupancy
                .clear_if(bin, head_of.is_some() && next == sink());
        }
    }

    /// The entry of the free chunk `from`, of `old_size` bytes, now stands for a free chunk of
    /// `new_size >= old_size` bytes at `to` (a merge): moved in place when the bin stays the
    /// same, re-filed otherwise.
    ///
    /// # Safety
    /// As for [`FreeIndex::refile_shrunk`], with `from` of `old_size` bytes.
    #[inline(always)]
    pub(crate) unsafe fn refile_grown(
        &mut self,
        from: Chunk,
        old_size: usize,
        to: Chunk,
        new_size: usize,
    ) {
        let stays = stays_when_grown(bin_of(old_size), new_size);
        // SAFETY: forwarded from the caller.
        unsafe { self.refile(from, to, new_size, stays) }
    }

    /// The entry of the free chunk `from`, filed in `bin`, now stands for a free chunk of
    /// `new_size` bytes (no more than before) at `to` (a split): moved in place when the bin
    /// stays the same, re-filed otherwise. Only link words are written; the caller writes
    /// `to`'s header and footer afterwards.
    ///
    /// # Safety
    /// `from` is filed in `bin`; `to`'s link words may overlap `from`'s header but not its links
    /// unless `to == from`.
    #[inline(always)]
    pub(crate) unsafe fn refile_shrunk(
        &mut self,
        from: Chunk,
        bin: usize,
        to: Chunk,
        new_size: usize,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe { self.refile(from, to, new_size, stays_when_shrunk(bin, new_size)) }
    }

    /// # Safety
    /// As for [`FreeIndex::refile_shrunk`]; `stays` tells whether `new_size` maps to `from`'s bin.
    #[inline(always)]
    unsafe fn refile(&mut self, from: Chunk, to: Chunk, new_size: usize, stays: bool) {
        // SAFETY: forwarded from the caller; `from`'s links are read before `to`'s are written.
        unsafe {
            if !stays {
                self.unlink(from);
                self.insert(to, new_size);
            } else if from != to {
                self.relocate(from, to);
            }
        }
    }

    /// Moves the list entry of `from` to `to`.
    ///
    /// # Safety
    /// As for [`FreeIndex::refile_shrunk`].
    #[inline(always)]
    unsafe fn relocate(&mut self, from: Chunk, to: Chunk) {
        // SAFETY: `from` and its list neighbours are free chunks (or the sink, steered away);
        // links are read first.
        unsafe {
            let next = from.next_free();
            let prev = from.prev_free();
            to.next_free_slot().write(next);
            to.prev_free_slot().write(prev);
            self.back_link_of(next).write(to);
            self.forward_link_from(prev).0.write(to);
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
            let best = unsafe { self.best_of_first(bin, size) };
            if best != sink() {
                return Some((best, bin));
            }
        }
        let first_fitting_bin = bin + usize::from(!is_exact(bin));
        if let Some(found) = self.occupancy.first_at_or_above(first_fitting_bin) {
            if is_exact(found) {
                return Some((self.heads[found], found));
            }
            // SAFETY: forwarded from the caller; every chunk of `found` fits, so the best of
            // its first chunks is a chunk, not the sink.
            return Some((unsafe { self.best_of_first(found, size) }, found));
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.first_fit(bin, |_, chunk_size| chunk_size >= size) }
    }

    /// The smallest chunk of at least `size` bytes among the first `FIT_SCAN` of `bin`'s list,
    /// or the sink. Straight-line code: the sink fits nothing and leads to itself.
    ///
    /// # Safety
    /// The index is consistent.
    #[inline(always)]
    unsafe fn best_of_first(&self, bin: usize, size: usize) -> Chunk {
        let mut best = sink();
        let mut best_size = usize::MAX;
        let mut cursor = self.heads[bin];
        for _ in 0..FIT_SCAN {
            // SAFETY: listed chunks are free chunks with valid headers and links; the sink
            // reads as size 0 and links to itself.
            let chunk_size = unsafe { cursor.size() };
            let better = chunk_size >= size && chunk_size < best_size;
            best = select_unpredictable(better, cursor, best);
            best_size = select_unpredictable(better, chunk_size, best_size);
            // SAFETY: as above.
            cursor = unsafe { cursor.next_free() };
        }
        best
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
            while let Some(chunk) = listed(cursor) {
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
            while let Some(chunk) = listed(cursor) {
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
        while let Some(chunk) = listed(cursor) {
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
        listed(self.heads[bin])
    }

    /// Whether the bitmap has `bin` marked non-empty (for the checker).
    pub(crate) fn is_marked(&self, bin: usize) -> bool {
        self.occupancy.is_set(bin)
    }
}
