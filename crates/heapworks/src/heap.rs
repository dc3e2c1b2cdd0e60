//! The heap: allocation, release and in-place resizing over the chunks of its regions.
//!
//! Invariants (beyond those of [`crate::chunk`], [`crate::index`] and [`crate::region`],
//! all verified by [`Heap::check`]):
//! - Every free chunk is filed in the free index; no allocated chunk is.
//! - `counters.in_use` is the total size of allocated chunks (headers and rounding included),
//!   `counters.managed` the total size of all chunks (allocated and free) of all regions.
//! - A failed call changes nothing.
//!
//! Costs: `free` and in-place resizing are O(1). `allocate` is O(1) except for two fallback
//! walks, each taken only when no free chunk is large enough for the O(1) search:
//! - with the default index, a plain request walks its own bin ([`crate::index::bins`]): at
//!   most the free chunks whose
//!   sizes share the request's 1/64-octave band;
//! - an over-aligned request searches for `size + align + GRANULE` bytes, which always leaves
//!   room for the padding; failing that, it walks the chunks that might still fit at their
//!   actual addresses: at most the free chunks of sizes between `size` and that search size.
//!
//! Over-aligned requests give the padding in front back to the index, so they waste less than
//! `align` bytes and cost one more index insertion.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::chunk::{
    chunk_size_for, chunk_size_for_layout, Chunk, GRANULE, IN_USE, MIN_CHUNK, PREV_IN_USE,
    SIZE_MASK, WORD,
};
use crate::error::{AllocError, Misuse};
use crate::index::{Bins, FreeIndex};
use crate::region::RegionRecord;
use crate::stats::Counters;

/// A block shrinking to this size and up may move into a smaller free chunk when memory runs
/// short (`Heap::compacts_on_shrink`); measured in crates/heapworks/TUNING.md.
const MOVE_ON_SHRINK_FROM: usize = 8 << 10;
/// Such a move is made only into a chunk that it fills to within this many bytes.
const MOVE_LEAVES_LESS_THAN: usize = 2 << 10;
/// Whether shrinking blocks move at all: not on wasm32, whose heaps grow from a memory source
/// rather than run short, and where the copy writes pages that Gear charges per message; the
/// move's code is 2.4 KB there (crates/heapworks/TUNING.md).
const MOVES_ON_SHRINK: bool = !cfg!(target_arch = "wasm32");

/// Whether a free with no free neighbour takes its own inlined path, the merges out of line:
/// natively, where it spares the common free the merges' registers; not on wasm32, where the
/// call to the merges and the extra test cost more gas than they save
/// (crates/heapworks/TUNING.md).
const SPLITS_FREE: bool = !cfg!(target_arch = "wasm32");

/// Whether free and realloc validate their pointer first (feature `checked`, or debug builds).
pub(crate) const CHECKED: bool = cfg!(any(feature = "checked", debug_assertions));

/// An unsynchronized heap over the regions it has been handed.
///
/// ```
/// use core::alloc::Layout;
/// use heapworks::Heap;
///
/// let mut memory = vec![0u8; 64 * 1024];
/// let mut heap = Heap::new();
/// // SAFETY: `memory` outlives `heap` and nothing else uses it.
/// unsafe { heap.claim(memory.as_mut_ptr(), memory.len()) }.unwrap();
///
/// let layout = Layout::from_size_align(100, 8).unwrap();
/// let block = heap.allocate(layout).unwrap();
/// // SAFETY: `block` came from this heap with `layout`.
/// let block = unsafe { heap.realloc(block, layout, 400) }.unwrap();
/// unsafe { heap.free(block) };
/// assert_eq!(heap.stats().in_use, 0);
/// heap.check().unwrap();
/// ```
///
/// The heap is generic over its free index: `Heap` is `Heap<Bins>`, the default;
/// `Heap::<SplayTree>::empty()`, `Heap::<RedBlackTree>::empty()`, `Heap::<Hybrid>::empty()`
/// and so on build one over another index (see [`crate::index`]). Every method behaves the
/// same whatever the index; only speed and fragmentation differ.
pub struct Heap<I = Bins> {
    pub(crate) index: I,
    pub(crate) regions: Option<NonNull<RegionRecord>>,
    pub(crate) counters: Counters,
}

// SAFETY: a `Heap` owns its regions exclusively (the `claim` contract); nothing in it is tied to
// the thread that created it.
unsafe impl<I: FreeIndex> Send for Heap<I> {}

impl Default for Heap {
    fn default() -> Heap {
        Heap::new()
    }
}

impl Heap {
    /// An empty heap over the default index: every request fails until a region is claimed.
    pub const fn new() -> Heap {
        Heap::empty()
    }

    /// The bytes the block at `ptr` can hold (at least what was asked for).
    ///
    /// It reads only the block's header, so it needs no heap (nor its lock): a C `free` can
    /// size a block before deciding where it goes.
    ///
    /// # Safety
    /// `ptr` is a live block of some `Heap`.
    pub unsafe fn usable_size(ptr: NonNull<u8>) -> usize {
        // SAFETY: a live block has a valid header.
        unsafe { Chunk::from_payload(ptr).size() - WORD }
    }

    /// Whether the headers around `ptr` say it is a live block: its own header in use, of a
    /// size of at least a chunk, and the next chunk's header saying its predecessor is in use
    /// (a block freed into a heap clears that bit, even when it merged into a free chunk
    /// before it). Two loads, no lock and no region look-up, for an embedder that caches
    /// blocks outside the heap and wants a cheap check on a free; [`Heap::validate`] is the
    /// full check.
    ///
    /// # Safety
    /// `ptr` is, or was, a block of a `Heap` whose regions are all still claimed (so a
    /// stale header's size still names a header inside them).
    pub unsafe fn looks_live(ptr: NonNull<u8>) -> bool {
        // SAFETY: the caller's promise: the header before `ptr` and the one its size names
        // lie in a region that is still the heap's.
        unsafe {
            let chunk = Chunk::from_payload(ptr);
            let header = chunk.header();
            let size = header & SIZE_MASK;
            header & IN_USE != 0
                && size >= MIN_CHUNK
                && chunk.after(size).header() & PREV_IN_USE != 0
        }
    }
}

impl<I: FreeIndex> Heap<I> {
    /// An empty heap over the free index `I`: every request fails until a region is claimed.
    pub const fn empty() -> Heap<I> {
        Heap {
            index: I::EMPTY,
            regions: None,
            counters: Counters::new(),
        }
    }

    /// Allocates a block for `layout`.
    ///
    /// A zero-size request gets a unique minimal block. Fails with [`AllocError`] when no free
    /// chunk can hold the request, leaving the heap unchanged.
    #[inline]
    pub fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let block = self.allocate_uncounted(layout)?;
        Counters::count(&mut self.counters.allocations);
        Ok(block)
    }

    #[inline(always)]
    fn allocate_uncounted(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let size = chunk_size_for_layout(layout);
        if layout.align() > GRANULE {
            return self.allocate_aligned(size, layout.align());
        }
        if size < I::GOOD_FIT_BELOW {
            if let Some((head, slot)) = self.index.good_fit(size) {
                // The header after the block, which `take` writes, loads beside the head's own.
                head.prefetch_after(size);
                // SAFETY: `good_fit` found `head`, a free chunk of at least `size` bytes filed
                // under `slot`.
                unsafe {
                    if I::is_top_slot(slot) {
                        // The same take, compiled apart: with the slot known, the index's own
                        // tests of it fold away (each a metered block on wasm32).
                        return Ok(self.take(head, Filed::Head(head, slot), size));
                    }
                    return Ok(self.take(head, Filed::Head(head, slot), size));
                }
            }
        }
        self.allocate_searched(size)
    }

    /// Allocation by the index's search: for a large request (the default index's bounded
    /// best fit first), or a small one whose good fit found nothing (the walk of its own bin).
    #[inline(never)]
    fn allocate_searched(&mut self, size: usize) -> Result<NonNull<u8>, AllocError> {
        // A heap with no region yet (a global allocator's first request) fails before the
        // search, whose answer on wasm32 is returned through a stack frame in linear memory:
        // a page Gear charges, in the first message, to the allocator.
        if self.regions.is_none() {
            return Err(AllocError);
        }
        // SAFETY: the index holds only free chunks of claimed regions.
        let found = unsafe { self.index.search(size) };
        let (chunk, slot) = found.ok_or(AllocError)?;
        // SAFETY: `chunk` is a free chunk filed under `slot`, of at least `size` bytes.
        unsafe { Ok(self.take(chunk, Filed::Entry(chunk, slot), size)) }
    }

    /// Allocates `size` bytes at the start of the free chunk `chunk`, which `filed` describes.
    ///
    /// # Safety
    /// `chunk` is a free chunk of at least `size` bytes; `filed` is its index entry.
    #[inline(always)]
    unsafe fn take(&mut self, chunk: Chunk, filed: Filed, size: usize) -> NonNull<u8> {
        // SAFETY: forwarded from the caller: the chunk is a span whose right neighbour is in
        // use, holding only its own entry.
        unsafe {
            let header = chunk.header();
            let available = header & SIZE_MASK;
            let taken = self.occupy_span(chunk, header & PREV_IN_USE, filed, available, size);
            self.counters.grow_in_use(taken);
        }
        chunk.payload()
    }

    /// Allocates up to `count` blocks for `layout` back to back in the free chunk a single
    /// request would get, and calls `each` with every block made, in address order. Returns how
    /// many it made: `count`, or as many as that chunk holds (0 only when not even one block
    /// fits anywhere).
    ///
    /// A run costs one index search and one index update in all, plus a header write per
    /// block, where `count` calls of [`Heap::allocate`] cost one of each per block: for
    /// refilling caches of equal blocks. Each block is an ordinary block of the heap, freed on
    /// its own. Over-aligned layouts (above 16 B on 64-bit targets) are served one
    /// [`Heap::allocate`] at a time. The heap is consistent before `each` first runs; if `each`
    /// panics, the blocks not yet passed to it stay allocated.
    ///
    /// ```
    /// use core::alloc::Layout;
    /// use heapworks::Heap;
    ///
    /// let mut memory = vec![0u8; 64 * 1024];
    /// let mut heap = Heap::new();
    /// // SAFETY: `memory` outlives `heap` and nothing else uses it.
    /// unsafe { heap.claim(memory.as_mut_ptr(), memory.len()) }.unwrap();
    ///
    /// let layout = Layout::from_size_align(48, 8).unwrap();
    /// let mut blocks = Vec::new();
    /// assert_eq!(heap.allocate_run(layout, 32, |block| blocks.push(block)), 32);
    /// for block in blocks {
    ///     // SAFETY: every block came from this heap with `layout`.
    ///     unsafe { heap.deallocate(block, layout) };
    /// }
    /// assert_eq!(heap.stats().in_use, 0);
    /// ```
    pub fn allocate_run(
        &mut self,
        layout: Layout,
        count: usize,
        mut each: impl FnMut(NonNull<u8>),
    ) -> usize {
        if layout.align() > GRANULE {
            return (0..count)
                .map_while(|_| self.allocate(layout).ok())
                .map(&mut each)
                .count();
        }
        if count == 0 {
            return 0;
        }
        let size = chunk_size_for_layout(layout);
        // The chunk a single request would take: a run fills the same holes single blocks
        // would, rather than cutting into a larger chunk.
        // SAFETY: the index holds only free chunks of claimed regions.
        let Some((chunk, bin)) = (unsafe { self.index.find(size) }) else {
            return 0;
        };
        // SAFETY: `chunk` is a free chunk filed in `bin` holding at least one block of `size`;
        // the span becomes one allocated chunk, which is then cut into `made` chunks whose
        // headers are all written before `each` sees any block.
        unsafe {
            let header = chunk.header();
            let available = header & SIZE_MASK;
            let made = count.min(available / size);
            let filed = Filed::Entry(chunk, bin);
            let taken =
                self.occupy_span(chunk, header & PREV_IN_USE, filed, available, made * size);
            self.counters.grow_in_use(taken);
            Counters::count_many(&mut self.counters.allocations, made as u64);
            if made > 1 {
                chunk.set_header(size | (header & PREV_IN_USE) | IN_USE);
                let mut block = chunk.after(size);
                for _ in 2..made {
                    block.set_header(size | PREV_IN_USE | IN_USE);
                    block = block.after(size);
                }
                // The last block keeps what the span had too little of to split off.
                block.set_header((taken - (made - 1) * size) | PREV_IN_USE | IN_USE);
            }
            let mut block = chunk;
            for _ in 0..made {
                each(block.payload());
                block = block.after(size);
            }
            made
        }
    }

    /// Allocates `size` bytes aligned to `align` (above `GRANULE`): finds a chunk with room for
    /// the padding, cuts the padding off in front as a free chunk of its own, and occupies the
    /// rest.
    #[inline(never)]
    fn allocate_aligned(&mut self, size: usize, align: usize) -> Result<NonNull<u8>, AllocError> {
        let search = size
            .checked_add(align)
            .and_then(|s| s.checked_add(GRANULE))
            .ok_or(AllocError)?;
        // SAFETY: the index holds only free chunks of claimed regions.
        let (chunk, bin) = unsafe {
            match self.index.find(search) {
                Some(found) => found,
                // No chunk has room at every address: walk those of sizes in `size..search`
                // (bins from here up hold no larger chunk), one of which may have room at its
                // actual address.
                None => self
                    .index
                    .first_fit(size, |chunk, chunk_size| {
                        front_padding(chunk, align).is_some_and(|pad| pad + size <= chunk_size)
                    })
                    .ok_or(AllocError)?,
            }
        };
        let padding = front_padding(chunk, align).ok_or(AllocError)?;
        // SAFETY: `padding + size` fits the chunk and the padding is zero or at least MIN_CHUNK,
        // so the padding and the aligned rest are both valid chunks inside the one found.
        unsafe {
            let header = chunk.header();
            let available = header & SIZE_MASK;
            let (block, prev_flag) = if padding == 0 {
                (chunk, header & PREV_IN_USE)
            } else {
                if self.index.is_top(chunk) {
                    // The top's entry stays for the rest, which still ends at the sentinel;
                    // the padding is filed as a chunk of its own.
                    self.index.insert(chunk, padding);
                } else {
                    self.index.refile_in(chunk, bin, chunk, padding);
                }
                chunk.write_free(padding, header & PREV_IN_USE != 0);
                (chunk.after(padding), 0)
            };
            let filed = if padding == 0 || self.index.is_top(chunk) {
                Filed::Entry(chunk, bin)
            } else {
                Filed::Nothing
            };
            let taken = self.occupy_span(block, prev_flag, filed, available - padding, size);
            self.counters.grow_in_use(taken);
            Ok(block.payload())
        }
    }

    /// Makes the `available` bytes at `block` an allocated block of `needed` bytes, the rest a
    /// free tail (or part of the block when too small for a chunk). `filed` is the index entry
    /// of the free chunk the span consumes, if any: it moves to the tail, or goes. Returns the
    /// size the block ends up with.
    ///
    /// # Safety
    /// `[block, block + available)` is one span whose right neighbour is in use; the free chunk
    /// of `filed` lies inside it; nothing else in the span is filed; `needed <= available`;
    /// `prev_flag` is `PREV_IN_USE` or 0 for the chunk before `block`.
    #[inline(always)]
    unsafe fn occupy_span(
        &mut self,
        block: Chunk,
        prev_flag: usize,
        filed: Filed,
        available: usize,
        needed: usize,
    ) -> usize {
        let spare = available - needed;
        // SAFETY: the tail lies inside the span; the index entry is moved before the tail's
        // header and footer are written (the index contract, see `crate::index`).
        unsafe {
            if spare >= MIN_CHUNK {
                let tail = block.after(needed);
                match filed {
                    Filed::Head(head, bin) => {
                        self.index.refile_head(head, bin, tail, spare);
                        self.write_filed_free(tail, spare, I::is_top_slot(bin));
                    }
                    Filed::Entry(entry, bin) => {
                        let top = self.index.is_top(entry);
                        self.index.refile_in(entry, bin, tail, spare);
                        self.write_filed_free(tail, spare, top);
                    }
                    Filed::Nothing => {
                        self.index.insert(tail, spare);
                        tail.write_free(spare, true);
                    }
                }
                block.set_header(needed | prev_flag | IN_USE);
                needed
            } else {
                match filed {
                    Filed::Head(head, bin) => self.index.unlink_head(head, bin),
                    Filed::Entry(entry, bin) => self.index.unlink(entry, bin),
                    Filed::Nothing => {}
                }
                block.set_header(available | prev_flag | IN_USE);
                block.after(available).set_prev_in_use(true);
                available
            }
        }
    }

    /// Writes the header of the free chunk `chunk` of `size` bytes, whose left neighbour is in
    /// use, and its footer where the index keeps it: in the index when `top` says the chunk's
    /// entry was moved from the top's (see [`crate::index::bins`]). The entry is filed or moved
    /// already.
    ///
    /// # Safety
    /// `[chunk, chunk + size)` lies inside one region and belongs to no other chunk.
    #[inline(always)]
    unsafe fn write_filed_free(&mut self, chunk: Chunk, size: usize, top: bool) {
        // SAFETY: forwarded from the caller.
        unsafe {
            chunk.set_header(size | PREV_IN_USE);
            self.index.footer_word(chunk, size, top).write(size);
        }
    }

    /// Frees a block given only its address, as C's `free` does.
    ///
    /// # Safety
    /// `ptr` was returned by this heap and is not used after this call. Checked builds detect a
    /// double free, a foreign pointer or a corrupt header and panic with the reason instead of
    /// corrupting the heap.
    #[inline]
    pub unsafe fn free(&mut self, ptr: NonNull<u8>) {
        // SAFETY: forwarded from the caller.
        let chunk = unsafe { self.block_chunk(ptr) }.unwrap_or_else(|misuse| report(misuse));
        // SAFETY: forwarded from the caller (and checked above in checked builds).
        unsafe { self.release_block(chunk) }
    }

    /// Frees a block allocated with `layout` (which only checked builds look at).
    ///
    /// # Safety
    /// As for [`Heap::free`], and `layout` is the one the block was allocated with.
    #[inline]
    pub unsafe fn deallocate(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller.
        if let Err(misuse) = unsafe { self.deallocate_or_misuse(ptr, layout) } {
            report(misuse);
        }
    }

    /// [`Heap::deallocate`], handing misuse that a checked build caught back to the caller
    /// (with the heap unchanged) instead of panicking: an adapter reports it only after it has
    /// released its lock, since reporting may allocate.
    ///
    /// # Safety
    /// As for [`Heap::deallocate`], except that misuse is allowed in checked builds.
    #[inline(always)]
    pub(crate) unsafe fn deallocate_or_misuse(
        &mut self,
        ptr: NonNull<u8>,
        layout: Layout,
    ) -> Result<(), Misuse> {
        // SAFETY: forwarded from the caller.
        let chunk = unsafe { self.block_chunk_for(ptr, layout)? };
        // The layout gives the next header's line before the header gives the size: that
        // header starts less than a granule past the payload's end (a block whose chunk the
        // layout sizes), so the word `GRANULE - 1` bytes past `chunk + size` shares its line.
        chunk.prefetch_after(layout.size() + (GRANULE - 1));
        // SAFETY: forwarded from the caller (and checked above in checked builds).
        unsafe { self.release_block(chunk) };
        Ok(())
    }

    /// # Safety
    /// `chunk` is a live block of this heap.
    #[inline(always)]
    unsafe fn release_block(&mut self, chunk: Chunk) {
        // SAFETY: a live block has a valid header.
        unsafe {
            let size = chunk.size();
            self.counters.in_use -= size;
            self.release(chunk, size);
        }
        Counters::count(&mut self.counters.frees);
    }

    /// Returns `size` bytes at `chunk` to the free index, merging with free neighbours. The
    /// merged chunk keeps a neighbour's index entry when it stays in that neighbour's bin.
    ///
    /// Natively (`SPLITS_FREE`), most frees have no free neighbour (both flags say "in use"):
    /// that path files the chunk and writes its header, footer and the next header's flag, and
    /// is all that is inlined; a merge goes out of line, so the common path saves no registers
    /// it does not use. On wasm32 the whole of [`Heap::release_merging`] is inlined instead.
    ///
    /// # Safety
    /// `chunk` is an allocated chunk of `size` bytes.
    #[inline(always)]
    unsafe fn release(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: neighbours are found through the header size, valid for an allocated chunk;
        // with both in use, the chunk alone is filed, before its header and footer are written.
        unsafe {
            let header = chunk.header();
            let next = chunk.after(size);
            let next_header = next.header();
            if SPLITS_FREE && (header & PREV_IN_USE != 0) & (next_header & IN_USE != 0) {
                next.set_header(next_header & !PREV_IN_USE);
                self.index.insert(chunk, size);
                chunk.write_free(size, true);
            } else {
                self.release_merging(chunk, size);
            }
        }
    }

    /// [`Heap::release`] of any chunk (natively, of one with a free neighbour): the merged
    /// chunk takes a neighbour's index entry (moved in place when it stays in that neighbour's
    /// bin).
    ///
    /// # Safety
    /// `chunk` is an allocated chunk of `size` bytes.
    #[cfg_attr(target_arch = "wasm32", inline(always))]
    #[cfg_attr(not(target_arch = "wasm32"), inline(never))]
    unsafe fn release_merging(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: neighbours are found through the header size and the boundary tag, both valid
        // for an allocated chunk; free neighbours are filed in the index, and each entry is
        // moved before the merged chunk's header and footer are written.
        unsafe {
            let header = chunk.header();
            if CHECKED {
                // A stale header must not look allocated once this chunk merges leftwards.
                chunk.set_header(header & !IN_USE);
            }
            let next = chunk.after(size);
            let next_header = next.header();
            let next_is_free = next_header & IN_USE == 0;
            let next_size = if next_is_free {
                next_header & SIZE_MASK
            } else {
                0
            };
            if !next_is_free {
                next.set_header(next_header & !PREV_IN_USE);
            }
            let total = size + next_size;
            if header & PREV_IN_USE == 0 {
                let prev_size = chunk.prev_free_size();
                let prev = chunk.before(prev_size);
                if next_is_free && self.index.is_top(next) {
                    // The merged chunk ends where the top did: it becomes the top.
                    self.index.unlink_not_top(prev, I::slot_of(prev_size));
                    self.index
                        .refile_in(next, I::slot_of(next_size), prev, prev_size + total);
                    self.write_filed_free(prev, prev_size + total, true);
                    return;
                }
                if next_is_free {
                    self.index.unlink_not_top(next, I::slot_of(next_size));
                }
                self.index.resize_entry(prev, prev_size, prev_size + total);
                prev.write_free(prev_size + total, true);
            } else if next_is_free {
                let top = self.index.is_top(next);
                self.index
                    .refile_in(next, I::slot_of(next_size), chunk, total);
                self.write_filed_free(chunk, total, top);
            } else {
                self.index.insert(chunk, size);
                chunk.write_free(size, true);
            }
        }
    }

    /// Resizes a block to `new_size` bytes, keeping its alignment and contents.
    ///
    /// Growing stays in place when a free right neighbour has the room; otherwise it allocates,
    /// copies `min(old.size(), new_size)` bytes and frees the old block. Shrinking splits off
    /// the tail in place, except when memory runs short (less than a quarter of the heap
    /// free): then a block shrinking to 8 KiB or more moves into a smaller free chunk that it
    /// fills to within 2 KiB, if there is one, so that free space stays in fewer, larger chunks
    /// ([`Heap::try_shrink_in_place`] never moves; on wasm32 no shrink moves). On failure the old block is untouched.
    /// `new_size == 0` shrinks to a minimal block.
    ///
    /// # Safety
    /// `ptr` is a live block of this heap allocated with `old`.
    #[inline]
    pub unsafe fn realloc(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new_size: usize,
    ) -> Result<NonNull<u8>, AllocError> {
        let new = Layout::from_size_align(new_size, old.align()).map_err(|_| AllocError)?;
        // SAFETY: forwarded from the caller.
        unsafe { self.resize(ptr, old, new) }
    }

    /// Grows a block to `new` (which may ask for a larger alignment), as
    /// `Allocator::grow` does. The same as [`Heap::realloc`] otherwise.
    ///
    /// # Safety
    /// As for [`Heap::realloc`].
    pub unsafe fn grow(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<u8>, AllocError> {
        debug_assert!(new.size() >= old.size());
        // SAFETY: forwarded from the caller.
        unsafe { self.resize(ptr, old, new) }
    }

    /// Shrinks a block to `new`, as `Allocator::shrink` does: as [`Heap::realloc`] shrinks, so
    /// in place unless `new` asks for an alignment the block lacks or a large block moves into a
    /// smaller free chunk.
    ///
    /// # Safety
    /// As for [`Heap::realloc`].
    pub unsafe fn shrink(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<u8>, AllocError> {
        debug_assert!(new.size() <= old.size());
        // SAFETY: forwarded from the caller.
        unsafe { self.resize(ptr, old, new) }
    }

    #[inline(always)]
    unsafe fn resize(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<u8>, AllocError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.resize_or_misuse(ptr, old, new) }.unwrap_or_else(|misuse| report(misuse))
    }

    /// Resizes a block as [`Heap::grow`] and [`Heap::shrink`] do, handing misuse that a checked
    /// build caught back to the caller (with the heap unchanged) instead of panicking; see
    /// [`Heap::deallocate_or_misuse`].
    ///
    /// # Safety
    /// As for [`Heap::realloc`], except that misuse is allowed in checked builds.
    #[inline(always)]
    pub(crate) unsafe fn resize_or_misuse(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<Result<NonNull<u8>, AllocError>, Misuse> {
        // SAFETY: forwarded from the caller.
        let chunk = unsafe { self.block_chunk_for(ptr, old)? };
        // SAFETY: forwarded from the caller (and checked above in checked builds).
        Ok(unsafe { self.resize_valid(ptr, chunk, old, new) })
    }

    /// # Safety
    /// `ptr` is a live block of this heap allocated with `old`, and `chunk` its chunk.
    #[inline(always)]
    unsafe fn resize_valid(
        &mut self,
        ptr: NonNull<u8>,
        chunk: Chunk,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<u8>, AllocError> {
        let needed = chunk_size_for_layout(new);
        let keeps_alignment = ptr.as_ptr().addr() & (new.align() - 1) == 0;
        if keeps_alignment {
            // SAFETY: `ptr` is a live block of this heap allocated with `old` (the caller's
            // promise).
            unsafe {
                let size = chunk.size();
                if needed <= size {
                    let moved = if self.compacts_on_shrink(needed, new.align()) {
                        let keep = old.size().min(new.size());
                        self.move_to_smaller_chunk(ptr, chunk, size, needed, keep)
                    } else {
                        None
                    };
                    if moved.is_none() {
                        self.shrink_in_place(chunk, size, needed);
                    }
                    Counters::count(&mut self.counters.reallocs);
                    return Ok(moved.unwrap_or(ptr));
                }
                if self.grow_into_next(chunk, size, needed) {
                    Counters::count(&mut self.counters.reallocs);
                    return Ok(ptr);
                }
            }
        }
        let Ok(moved) = self.allocate_uncounted(new) else {
            // SAFETY: `chunk` is the live block at `ptr`, allocated with `old`.
            let slid =
                unsafe { self.slide_back(ptr, chunk, old, new, needed) }.ok_or(AllocError)?;
            Counters::count(&mut self.counters.reallocs);
            return Ok(slid);
        };
        // SAFETY: the new block is distinct from the old one and both hold at least the bytes
        // copied; the old one is live until released here.
        unsafe {
            let keep = old.size().min(new.size());
            self.move_out(ptr, chunk, chunk.size(), moved, keep);
        }
        Counters::count(&mut self.counters.reallocs);
        Ok(moved)
    }

    /// Copies the first `keep` bytes of the live block `ptr` (of chunk `chunk`, `size` bytes)
    /// to `to` and frees the block.
    ///
    /// # Safety
    /// `to` is a live block distinct from `ptr`; both hold at least `keep` bytes.
    #[inline(always)]
    unsafe fn move_out(
        &mut self,
        ptr: NonNull<u8>,
        chunk: Chunk,
        size: usize,
        to: NonNull<u8>,
        keep: usize,
    ) {
        // SAFETY: forwarded from the caller: distinct blocks, so the copy does not overlap.
        unsafe {
            core::ptr::copy_nonoverlapping(ptr.as_ptr(), to.as_ptr(), keep);
            self.counters.in_use -= size;
            self.release(chunk, size);
        }
    }

    /// Whether a block shrinking to a chunk of `needed` bytes at alignment `align` should try
    /// [`Heap::move_to_smaller_chunk`]: a large block (see [`MOVE_ON_SHRINK_FROM`]), at the
    /// granule's alignment, in a heap with less than a quarter of its memory free. Only when
    /// memory runs short is a tight hole worth a copy.
    #[inline(always)]
    fn compacts_on_shrink(&self, needed: usize, align: usize) -> bool {
        let Counters {
            managed, in_use, ..
        } = self.counters;
        MOVES_ON_SHRINK
            && needed >= MOVE_ON_SHRINK_FROM
            && align <= GRANULE
            && (managed - in_use) < managed / 4
    }

    /// Moves a shrinking block into a free chunk that it fills to within
    /// [`MOVE_LEAVES_LESS_THAN`] bytes and that is smaller than its own, when the index finds
    /// one for `needed` bytes: the whole old chunk is then freed (and merges with its free
    /// neighbours) instead of leaving a tail behind, and a hole too small for most large
    /// requests is filled, so free space stays in fewer, larger chunks. The first `keep` bytes
    /// are copied from `ptr`. `None`, and nothing changed, when no such chunk is found (the
    /// free right neighbour does not count: shrinking in place gives it the tail anyway).
    ///
    /// # Safety
    /// `chunk` is the chunk of the live block `ptr`, of `size >= needed` bytes holding at least
    /// `keep` bytes of payload; `needed` is a chunk size for a request aligned to at most
    /// `GRANULE`.
    #[inline(never)]
    unsafe fn move_to_smaller_chunk(
        &mut self,
        ptr: NonNull<u8>,
        chunk: Chunk,
        size: usize,
        needed: usize,
        keep: usize,
    ) -> Option<NonNull<u8>> {
        // SAFETY: the index holds only free chunks, all distinct from the live block, so the
        // copy does not overlap; the block is released only after its contents are copied.
        unsafe {
            let (target, slot) = self.index.find(needed)?;
            let target_size = target.size();
            if target_size >= size
                || target_size - needed >= MOVE_LEAVES_LESS_THAN
                || target == chunk.after(size)
            {
                return None;
            }
            let moved = self.take(target, Filed::Entry(target, slot), needed);
            self.move_out(ptr, chunk, size, moved, keep);
            Some(moved)
        }
    }

    /// The last resort of a growing realloc that found no free chunk to move to: the block
    /// slides back into its free left neighbour, taking its free right neighbour too, when the
    /// three together hold `needed` bytes at `new`'s alignment. Only a heap close to full gets
    /// here, so the copy (the spans overlap, see [`copy_down`]) is never on a fast path.
    ///
    /// # Safety
    /// `chunk` is the chunk of the live block `ptr`, allocated with `old`, of fewer than
    /// `needed` bytes.
    #[cold]
    unsafe fn slide_back(
        &mut self,
        ptr: NonNull<u8>,
        chunk: Chunk,
        old: Layout,
        new: Layout,
        needed: usize,
    ) -> Option<NonNull<u8>> {
        // SAFETY: the neighbours are found through the boundary tag and the header size, both
        // valid for an allocated chunk; free neighbours are unlinked before their words are
        // overwritten, and the merged span's right neighbour is in use (no two free chunks
        // are adjacent).
        unsafe {
            let header = chunk.header();
            if header & PREV_IN_USE != 0 {
                return None;
            }
            let size = header & SIZE_MASK;
            let prev_size = chunk.prev_free_size();
            let prev = chunk.before(prev_size);
            let prev_header = prev.header();
            let next_header = chunk.after(size).header();
            let next_size = if next_header & IN_USE == 0 {
                next_header & SIZE_MASK
            } else {
                0
            };
            let total = (prev_header & SIZE_MASK) + size + next_size;
            let aligned = prev.payload().as_ptr().addr() & (new.align() - 1) == 0;
            if total < needed || !aligned {
                return None;
            }
            self.index.unlink_not_top(prev, I::slot_of(prev_size));
            if next_size != 0 {
                self.index.unlink(chunk.after(size), I::slot_of(next_size));
            }
            let keep = old.size().min(new.size());
            copy_down(ptr.as_ptr(), prev.payload().as_ptr(), keep);
            // `occupy_span` expects a span that was free, whose right neighbour says so.
            chunk.after(size + next_size).set_prev_in_use(false);
            let taken = self.occupy_span(
                prev,
                prev_header & PREV_IN_USE,
                Filed::Nothing,
                total,
                needed,
            );
            self.counters.in_use -= size;
            self.counters.grow_in_use(taken);
            Some(prev.payload())
        }
    }

    /// Shrinks a block to `new_size` bytes without moving it: the tail goes to a free right
    /// neighbour, or becomes a free chunk when it is large enough for one (otherwise the block
    /// keeps it). Fails, changing nothing, when the block holds fewer than `new_size` bytes.
    ///
    /// # Safety
    /// `ptr` is a live block of this heap.
    pub unsafe fn try_shrink_in_place(
        &mut self,
        ptr: NonNull<u8>,
        new_size: usize,
    ) -> Result<(), AllocError> {
        // SAFETY: forwarded from the caller.
        let chunk = unsafe { self.block_chunk(ptr) }.unwrap_or_else(|misuse| report(misuse));
        let needed = chunk_size_for(new_size).ok_or(AllocError)?;
        // SAFETY: `ptr` is a live block (the caller's promise, checked above in checked builds).
        unsafe {
            let size = chunk.size();
            if needed > size {
                return Err(AllocError);
            }
            self.shrink_in_place(chunk, size, needed);
        }
        Ok(())
    }

    /// Grows a block to hold `new_size` bytes without moving it, if its right neighbour is free
    /// and large enough. A block that already holds `new_size` bytes succeeds unchanged.
    ///
    /// # Safety
    /// `ptr` is a live block of this heap.
    pub unsafe fn try_grow_in_place(
        &mut self,
        ptr: NonNull<u8>,
        new_size: usize,
    ) -> Result<(), AllocError> {
        // SAFETY: forwarded from the caller.
        let chunk = unsafe { self.block_chunk(ptr) }.unwrap_or_else(|misuse| report(misuse));
        let needed = chunk_size_for(new_size).ok_or(AllocError)?;
        // SAFETY: `ptr` is a live block (the caller's promise, checked above in checked builds).
        unsafe {
            let size = chunk.size();
            if needed <= size || self.grow_into_next(chunk, size, needed) {
                Ok(())
            } else {
                Err(AllocError)
            }
        }
    }

    /// Cuts an allocated chunk of `size` bytes down to `needed`, handing the tail to a free right
    /// neighbour, or filing it on its own when it makes a chunk; otherwise the block keeps it.
    ///
    /// # Safety
    /// `chunk` is an allocated chunk of `size >= needed` bytes.
    unsafe fn shrink_in_place(&mut self, chunk: Chunk, size: usize, needed: usize) {
        // SAFETY: the tail lies inside the chunk; a free neighbour is filed in the index and its
        // entry is moved before the tail's header and footer are written.
        unsafe {
            let spare = size - needed;
            let next = chunk.after(size);
            let next_header = next.header();
            let tail = chunk.after(needed);
            if next_header & IN_USE == 0 {
                if spare == 0 {
                    return;
                }
                let next_size = next_header & SIZE_MASK;
                let slot = I::slot_of(next_size);
                let top = self.index.is_top(next);
                self.index.refile_in(next, slot, tail, spare + next_size);
                self.write_filed_free(tail, spare + next_size, top);
            } else if spare >= MIN_CHUNK {
                self.index.insert(tail, spare);
                tail.write_free(spare, true);
                next.set_header(next_header & !PREV_IN_USE);
            } else {
                return;
            }
            chunk.set_header(needed | (chunk.header() & (PREV_IN_USE | IN_USE)));
            self.counters.in_use -= spare;
        }
    }

    /// Grows an allocated chunk of `size` bytes to at least `needed` by taking from its free
    /// right neighbour. Returns whether it could.
    ///
    /// # Safety
    /// `chunk` is an allocated chunk of `size < needed` bytes.
    #[inline(always)]
    unsafe fn grow_into_next(&mut self, chunk: Chunk, size: usize, needed: usize) -> bool {
        // SAFETY: the neighbour is found through the valid header size; when free it is filed in
        // the index, and the merged span is one chunk whose right neighbour is in use.
        unsafe {
            let next = chunk.after(size);
            let next_header = next.header();
            let next_size = next_header & SIZE_MASK;
            if next_header & IN_USE != 0 || size + next_size < needed {
                return false;
            }
            let prev_flag = chunk.header() & PREV_IN_USE;
            let filed = Filed::Entry(next, I::slot_of(next_size));
            let taken = self.occupy_span(chunk, prev_flag, filed, size + next_size, needed);
            self.counters.in_use -= size;
            self.counters.grow_in_use(taken);
        }
        true
    }

    /// Checks that `ptr` is a live block of this heap, without changing anything.
    ///
    /// Detects pointers outside every region or off a payload boundary, blocks already free,
    /// and headers that do not describe a chunk fitting its region. A pointer into a region that
    /// was freed and whose memory now belongs to another live block cannot be told apart from
    /// that block: no one-word design can.
    pub fn validate(&self, ptr: NonNull<u8>) -> Result<(), Misuse> {
        self.validated_chunk(ptr).map(drop)
    }

    /// The chunk of the block at `ptr`, which checked builds validate first (see
    /// [`Heap::validated_chunk`]); unchecked builds take the header from `ptr` itself.
    ///
    /// # Safety
    /// `ptr` is a live block of this heap, or in checked builds any pointer.
    #[inline(always)]
    unsafe fn block_chunk(&self, ptr: NonNull<u8>) -> Result<Chunk, Misuse> {
        if CHECKED {
            self.validated_chunk(ptr)
        } else {
            // SAFETY: forwarded from the caller.
            Ok(unsafe { Chunk::from_payload(ptr) })
        }
    }

    /// [`Heap::block_chunk`], and in checked builds that `layout` fits the block.
    ///
    /// # Safety
    /// As for [`Heap::block_chunk`], and `layout` is the block's.
    #[inline(always)]
    unsafe fn block_chunk_for(&self, ptr: NonNull<u8>, layout: Layout) -> Result<Chunk, Misuse> {
        // SAFETY: forwarded from the caller.
        let chunk = unsafe { self.block_chunk(ptr)? };
        if CHECKED {
            // SAFETY: validated by `block_chunk`.
            layout_fits(ptr, layout, unsafe { chunk.size() } - WORD)?;
        }
        Ok(chunk)
    }

    /// [`Heap::validate`], returning the block's chunk. The chunk is reached through the
    /// provenance of the region holding it, not through `ptr`: a caller's pointer may grant
    /// access to the payload alone (a `Box`'s does, under Rust's aliasing rules), while the
    /// header lies just before it.
    fn validated_chunk(&self, ptr: NonNull<u8>) -> Result<Chunk, Misuse> {
        let addr = ptr.as_ptr().addr();
        let foreign = Misuse::Foreign { addr };
        if !addr.is_multiple_of(GRANULE) {
            return Err(foreign);
        }
        let region = self.region_holding(addr).ok_or(foreign)?;
        // SAFETY: `ptr` lies inside a region, after its first chunk's header and before its
        // sentinel, so the word before it is readable through the region's provenance; the
        // neighbour is read only after its address is checked against the sentinel.
        unsafe {
            let chunk = region.sentinel.with_addr(addr - WORD);
            let header = chunk.header();
            if header & IN_USE == 0 {
                return Err(Misuse::DoubleFree { addr });
            }
            let size = header & SIZE_MASK;
            let corrupt = Misuse::CorruptHeader { addr, header };
            if size < MIN_CHUNK || size > region.sentinel.addr() - chunk.addr() {
                return Err(corrupt);
            }
            if chunk.after(size).header() & PREV_IN_USE == 0 {
                return Err(corrupt);
            }
            Ok(chunk)
        }
    }
}

/// Whether `layout` fits the valid block at `ptr`, of `usable` bytes: its size at most
/// `usable`, its alignment one the address has.
pub(crate) fn layout_fits(ptr: NonNull<u8>, layout: Layout, usable: usize) -> Result<(), Misuse> {
    let addr = ptr.as_ptr().addr();
    if layout.size() > usable || addr & (layout.align() - 1) != 0 {
        return Err(Misuse::LayoutMismatch { addr });
    }
    Ok(())
}

/// The index entry of the free chunk that a span being occupied consumes.
#[derive(Clone, Copy)]
enum Filed {
    /// The span holds no filed chunk.
    Nothing,
    /// This chunk, filed under this slot.
    Entry(Chunk, usize),
    /// This chunk, found by the index's good fit under this slot.
    Head(Chunk, usize),
}

/// Copies `len` bytes from `src` down to `dst`, which lies before it, the two ranges possibly
/// overlapping: front to back in pieces no longer than the distance between them, so that each
/// piece is a copy of disjoint ranges whose source no earlier piece overwrote. Used instead of
/// `core::ptr::copy` so that `memmove` (1.8 KB of wasm32 code) is not linked for one cold path.
///
/// # Safety
/// `dst < src`, and both ranges are valid for `len` bytes.
unsafe fn copy_down(src: *const u8, dst: *mut u8, len: usize) {
    let distance = src.addr() - dst.addr();
    let mut done = 0;
    while done < len {
        let piece = distance.min(len - done);
        // SAFETY: `[dst + done, dst + done + piece)` ends at or before `src + done`, where the
        // piece read starts, and every earlier piece wrote below `dst + done`.
        unsafe { core::ptr::copy_nonoverlapping(src.add(done), dst.add(done), piece) };
        done += piece;
    }
}

/// The padding to put in front of `chunk`'s payload so it is aligned to `align` (a power of two
/// above `GRANULE`): zero, or at least `MIN_CHUNK` so the padding can be a free chunk.
fn front_padding(chunk: Chunk, align: usize) -> Option<usize> {
    let payload = chunk.payload().as_ptr().addr();
    let aligned = crate::chunk::align_up(payload, align)?;
    let padding = aligned - payload;
    // `align >= 2 * GRANULE == MIN_CHUNK`, so one more step of `align` always makes room.
    Some(if padding != 0 && padding < MIN_CHUNK {
        padding + align
    } else {
        padding
    })
}

/// Reports misuse caught by a checked build: it panics rather than corrupt the heap, which the
/// misuse left unchanged. The adapters report only after releasing the heap (the panic's
/// message may allocate), and a `GlobalAlloc`, which must not unwind, through
/// [`crate::global::abort_on`].
#[cold]
#[inline(never)]
pub(crate) fn report(misuse: Misuse) -> ! {
    panic!("{misuse}")
}
