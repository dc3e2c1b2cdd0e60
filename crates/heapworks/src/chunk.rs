//! Chunk layout: how a region is cut into chunks, and how one chunk is read and written.
//!
//! A region is a sequence of chunks, each starting with a one-word *header*:
//!
//! ```text
//!            header (1 word)          payload (GRANULE-aligned)
//! in use:   [ size | PREV_IN_USE | IN_USE ][ user data .................................. ]
//! free:     [ size | PREV_IN_USE          ][ next ][ prev ][ ... unused ... ][ footer = size ]
//! ```
//!
//! Invariants (verified by [`crate::Heap::check`]):
//! - A header lies at an address `≡ WORD (mod GRANULE)`, so every payload is `GRANULE`-aligned.
//! - `size` counts the header and is a multiple of `GRANULE`, at least [`MIN_CHUNK`]; the next
//!   chunk's header is at `header + size`.
//! - `PREV_IN_USE` is set exactly when the chunk before is in use. When it is clear, the word just
//!   before the header is the previous chunk's footer, which holds that chunk's size: this
//!   boundary tag is how `free` finds its left neighbour in O(1).
//! - A free chunk's footer (its last word) equals its size (but for the default index's top on
//!   wasm32, whose footer is a word of the index); its `next`/`prev` words link it into the
//!   list of its bin (see [`crate::index::bins`]). An allocated chunk has no footer: its
//!   payload runs up to the next header, so the overhead is exactly one word.
//! - Two free chunks are never adjacent: `free` coalesces at once.

use core::alloc::Layout;
use core::ptr::NonNull;

/// Bytes in a machine word: the header size.
pub(crate) const WORD: usize = core::mem::size_of::<usize>();
/// The allocation granularity and the guaranteed payload alignment: 16 B on 64-bit, 8 B on 32-bit.
pub(crate) const GRANULE: usize = 2 * WORD;
/// log2 of [`GRANULE`].
pub(crate) const GRANULE_SHIFT: u32 = GRANULE.trailing_zeros();
/// The smallest chunk: a free chunk needs a header, two links and a footer.
pub(crate) const MIN_CHUNK: usize = 4 * WORD;
/// Bytes of a free chunk that hold metadata: header, `next`, `prev` and footer.
pub(crate) const FREE_METADATA: usize = 4 * WORD;
/// Set in a header when this chunk is allocated (or is a region record or end sentinel).
pub(crate) const IN_USE: usize = 1;
/// Set in a header when the chunk before this one is in use.
pub(crate) const PREV_IN_USE: usize = 2;
/// A header bit the heap never sets (sizes are multiples of 8 or more, and only bits 0 and 1
/// are flags). Embedders may put a word with this bit set in front of blocks they manage
/// themselves, and tell them from the heap's blocks by the word before the payload.
pub(crate) const EMBEDDER_TAG: usize = 4;
/// The bits of a header that hold the size.
pub(crate) const SIZE_MASK: usize = !(GRANULE - 1);
/// The largest payload a request may ask for; anything above cannot be represented.
pub(crate) const MAX_REQUEST: usize = isize::MAX as usize - 2 * GRANULE;

/// The chunk size that serves a request for `layout`, which cannot overflow: a `Layout`'s size
/// is at most `isize::MAX`. The result may exceed every chunk a region can hold (and then no
/// search finds one), so it needs no bound of its own: one check fewer on every allocation.
#[inline(always)]
pub(crate) const fn chunk_size_for_layout(layout: Layout) -> usize {
    let size = (layout.size() + WORD + GRANULE - 1) & SIZE_MASK;
    if size < MIN_CHUNK {
        MIN_CHUNK
    } else {
        size
    }
}

/// The chunk size that serves a request of `bytes` payload bytes, or `None` when too large.
#[inline(always)]
pub(crate) const fn chunk_size_for(bytes: usize) -> Option<usize> {
    if bytes > MAX_REQUEST {
        return None;
    }
    let size = (bytes + WORD + GRANULE - 1) & SIZE_MASK;
    Some(if size < MIN_CHUNK { MIN_CHUNK } else { size })
}

/// Rounds `addr` up to a multiple of `align` (a power of two); `None` on overflow.
#[inline(always)]
pub(crate) const fn align_up(addr: usize, align: usize) -> Option<usize> {
    match addr.checked_add(align - 1) {
        Some(bumped) => Some(bumped & !(align - 1)),
        None => None,
    }
}

/// A pointer to a chunk's header.
///
/// All accessors are `unsafe`: the caller promises the pointer is a chunk header inside a
/// claimed region (or, for the link accessors, a free chunk).
///
/// Public in name only (this module is private), so the sealed free-index trait may mention it.
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Chunk(NonNull<u8>);

impl Chunk {
    /// The chunk whose header is at `header`.
    #[inline(always)]
    pub(crate) const fn at(header: NonNull<u8>) -> Chunk {
        Chunk(header)
    }

    /// The chunk that owns `payload`.
    ///
    /// # Safety
    /// `payload` was returned by [`Chunk::payload`].
    #[inline(always)]
    pub(crate) unsafe fn from_payload(payload: NonNull<u8>) -> Chunk {
        // SAFETY: a payload sits one word after its header, inside the same region.
        Chunk(unsafe { payload.sub(WORD) })
    }

    /// The chunk whose header is at `addr`, reached through this chunk's provenance (that of
    /// its region) rather than through a pointer a caller handed in.
    ///
    /// # Safety
    /// `addr` is a header address inside this chunk's region.
    #[inline(always)]
    pub(crate) unsafe fn with_addr(self, addr: usize) -> Chunk {
        // SAFETY: a header address in a region is never zero.
        Chunk(
            self.0
                .with_addr(unsafe { core::num::NonZeroUsize::new_unchecked(addr) }),
        )
    }

    /// The header's address as an integer, for comparisons and reports.
    #[inline(always)]
    pub(crate) fn addr(self) -> usize {
        self.0.as_ptr().addr()
    }

    /// The payload handed to the user.
    #[inline(always)]
    pub(crate) fn payload(self) -> NonNull<u8> {
        // SAFETY: every chunk is at least MIN_CHUNK bytes, so the payload is inside it.
        unsafe { self.0.add(WORD) }
    }

    /// The chunk `bytes` after this one.
    ///
    /// # Safety
    /// The result lies inside the same region (at most at its end sentinel).
    #[inline(always)]
    pub(crate) unsafe fn after(self, bytes: usize) -> Chunk {
        // SAFETY: the caller keeps the result inside the region.
        Chunk(unsafe { self.0.add(bytes) })
    }

    /// Starts loading the cache line `bytes` after this chunk's header (natively on x86-64;
    /// elsewhere nothing): the header after a block, which allocation and free read and write
    /// only once this chunk's own header has given its size; or, with `bytes` 0, the header of
    /// a bin's next head, which the bin's next request reads first. Issued early, the cache
    /// misses overlap instead of following each other (crates/heapworks/TUNING.md,
    /// "Memory-level parallelism"). Any address is allowed: a prefetch reads nothing the program
    /// sees.
    #[inline(always)]
    pub(crate) fn prefetch_after(self, bytes: usize) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        // SAFETY: a prefetch never faults and changes no memory, whatever the address.
        unsafe {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.0.as_ptr().wrapping_add(bytes).cast());
        }
        #[cfg(not(all(target_arch = "x86_64", not(miri))))]
        let _ = bytes;
    }

    /// The chunk `bytes` before this one.
    ///
    /// # Safety
    /// The result lies inside the same region.
    #[inline(always)]
    pub(crate) unsafe fn before(self, bytes: usize) -> Chunk {
        // SAFETY: the caller keeps the result inside the region.
        Chunk(unsafe { self.0.sub(bytes) })
    }

    /// # Safety
    /// `self` is a chunk header inside a claimed region.
    #[inline(always)]
    pub(crate) unsafe fn header(self) -> usize {
        // SAFETY: headers are word-aligned and inside the region.
        unsafe { self.0.cast::<usize>().read() }
    }

    /// # Safety
    /// `self` is a chunk header inside a claimed region.
    #[inline(always)]
    pub(crate) unsafe fn set_header(self, header: usize) {
        // SAFETY: headers are word-aligned and inside the region.
        unsafe { self.0.cast::<usize>().write(header) }
    }

    /// # Safety
    /// `self` is a chunk header inside a claimed region.
    #[inline(always)]
    pub(crate) unsafe fn size(self) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { self.header() & SIZE_MASK }
    }

    /// # Safety
    /// `self` is a chunk header inside a claimed region.
    #[inline(always)]
    pub(crate) unsafe fn is_in_use(self) -> bool {
        // SAFETY: forwarded from the caller.
        unsafe { self.header() & IN_USE != 0 }
    }

    /// The chunk that follows this one.
    ///
    /// # Safety
    /// `self` is a chunk header with a valid size.
    #[inline(always)]
    pub(crate) unsafe fn next(self) -> Chunk {
        // SAFETY: a valid size ends at the next header (at most the end sentinel).
        unsafe { self.after(self.size()) }
    }

    /// Sets or clears `PREV_IN_USE` in this header, keeping the rest.
    ///
    /// # Safety
    /// `self` is a chunk header inside a claimed region.
    #[inline(always)]
    pub(crate) unsafe fn set_prev_in_use(self, prev_in_use: bool) {
        // SAFETY: forwarded from the caller.
        unsafe {
            let header = self.header() & !PREV_IN_USE;
            self.set_header(header | if prev_in_use { PREV_IN_USE } else { 0 });
        }
    }

    /// The size of the free chunk just before this one, read from its footer.
    ///
    /// # Safety
    /// This chunk's `PREV_IN_USE` flag is clear.
    #[inline(always)]
    pub(crate) unsafe fn prev_free_size(self) -> usize {
        // SAFETY: a free predecessor keeps its size in the word before our header.
        unsafe { self.0.sub(WORD).cast::<usize>().read() }
    }

    /// Makes this a free chunk of `size` bytes: header (keeping `prev_in_use`) and footer.
    ///
    /// # Safety
    /// `[self, self + size)` lies inside one region and belongs to no other chunk.
    #[inline(always)]
    pub(crate) unsafe fn write_free(self, size: usize, prev_in_use: bool) {
        // SAFETY: the footer is the last word of the chunk, inside it by the caller's promise.
        unsafe {
            self.set_header(size | if prev_in_use { PREV_IN_USE } else { 0 });
            self.0.add(size - WORD).cast::<usize>().write(size);
        }
    }

    /// The last word of a chunk of `size` bytes here: a free chunk's footer.
    ///
    /// # Safety
    /// `[self, self + size)` lies inside one region.
    #[inline(always)]
    pub(crate) unsafe fn footer_word(self, size: usize) -> *mut usize {
        // SAFETY: the footer is the last word of the chunk, inside it by the caller's promise.
        unsafe { self.0.add(size - WORD).cast::<usize>().as_ptr() }
    }

    /// The footer of a free chunk.
    ///
    /// # Safety
    /// `self` is a free chunk with a valid size.
    pub(crate) unsafe fn footer(self) -> usize {
        // SAFETY: the footer is the last word of the chunk.
        unsafe { self.0.add(self.size() - WORD).cast::<usize>().read() }
    }

    /// The bytes of this free chunk of `size` bytes that hold no metadata: all but the
    /// header, the two link words and the footer. `None` when there are none.
    #[inline]
    pub(crate) fn unused_span(self, size: usize) -> Option<(NonNull<u8>, usize)> {
        let len = size.checked_sub(FREE_METADATA)?;
        // SAFETY: the span starts after the link words, inside the chunk.
        (len > 0).then(|| (unsafe { self.0.add(3 * WORD) }, len))
    }

    /// The chunk after this free one in its bin's list (or the list's sink).
    ///
    /// # Safety
    /// `self` is a free chunk.
    #[inline(always)]
    pub(crate) unsafe fn next_free(self) -> Chunk {
        // SAFETY: a free chunk keeps its `next` link in the first payload word.
        unsafe { self.next_link().read() }
    }

    /// The chunk before this free one in its bin's list (or the list's sink).
    ///
    /// # Safety
    /// `self` is a free chunk.
    #[inline(always)]
    pub(crate) unsafe fn prev_free(self) -> Chunk {
        // SAFETY: a free chunk keeps its `prev` link in the second payload word.
        unsafe { self.prev_link().read() }
    }

    /// # Safety
    /// `self` is a free chunk.
    #[inline(always)]
    pub(crate) unsafe fn set_next_free(self, next: Chunk) {
        // SAFETY: see `next_free`.
        unsafe { self.next_link().write(next) }
    }

    /// # Safety
    /// `self` is a free chunk or a list sink.
    #[inline(always)]
    pub(crate) unsafe fn set_prev_free(self, prev: Chunk) {
        // SAFETY: see `prev_free`.
        unsafe { self.prev_link().write(prev) }
    }

    /// Where a free chunk keeps its `next` link: the first payload word. Computing the address
    /// reads nothing.
    #[inline(always)]
    pub(crate) fn next_link(self) -> *mut Chunk {
        self.0.as_ptr().wrapping_add(WORD).cast()
    }

    /// Where a free chunk keeps its `prev` link: the second payload word.
    #[inline(always)]
    fn prev_link(self) -> *mut Chunk {
        self.0.as_ptr().wrapping_add(2 * WORD).cast()
    }

    /// The pseudo-chunk whose `prev` link word is the word at `slot` (a list sink).
    ///
    /// # Safety
    /// The two words before `slot` belong to the same allocation.
    pub(crate) unsafe fn with_prev_link_at(slot: NonNull<usize>) -> Chunk {
        // SAFETY: forwarded from the caller.
        Chunk(unsafe { slot.cast::<u8>().sub(2 * WORD) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_sizes_cover_header_and_round_to_granule() {
        assert_eq!(chunk_size_for(0), Some(MIN_CHUNK));
        assert_eq!(chunk_size_for(1), Some(MIN_CHUNK));
        assert_eq!(chunk_size_for(MIN_CHUNK - WORD), Some(MIN_CHUNK));
        assert_eq!(
            chunk_size_for(MIN_CHUNK - WORD + 1),
            Some(MIN_CHUNK + GRANULE)
        );
        for bytes in 0..1000 {
            let size = chunk_size_for(bytes).unwrap();
            assert_eq!(size % GRANULE, 0);
            assert!(size - WORD >= bytes, "payload too small for {bytes}");
            assert!(size < (bytes + WORD + GRANULE).max(MIN_CHUNK + 1));
        }
    }

    #[test]
    fn impossible_sizes_are_refused() {
        assert_eq!(chunk_size_for(usize::MAX), None);
        assert_eq!(chunk_size_for(MAX_REQUEST + 1), None);
        assert!(chunk_size_for(MAX_REQUEST).is_some());
    }

    #[test]
    fn align_up_rounds_and_detects_overflow() {
        assert_eq!(align_up(0, 16), Some(0));
        assert_eq!(align_up(1, 16), Some(16));
        assert_eq!(align_up(4096, 4096), Some(4096));
        assert_eq!(align_up(usize::MAX - 3, 16), None);
    }
}
