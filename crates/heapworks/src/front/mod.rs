//! The small-object front: [`FrontHeap`], a [`Heap`] whose small requests are served from
//! size-classed slots in slabs, so that a small allocation is a pop from a list and a free a
//! push.
//!
//! **Classes.** Requests of up to [`FrontHeap::MAX_SMALL`] bytes (256) at alignment up to the
//! granule take a slot of their class: one class per 16 B of slot size (17 classes; 252 B and
//! 16 classes with `--cfg heapworks_small_state` on 32-bit targets), so the class is one add
//! and one shift. On 64-bit targets 16 B is the granule, so a slot is never
//! larger than the chunk the heap itself would have given (smaller for requests of up to 8
//! bytes: 16 B instead of the heap's 32 B minimum chunk); on 32-bit targets a slot may be 8 B
//! larger, since one class per 8 B granule (33 classes) spread wasm32's random churn of 8–256 B
//! blocks over as many slabs: 1.61× dlmalloc's gas against 1.23× with 16 B (`heapworks gas
//! --quick`), for 0.4 % more on the FT stress. Larger or over-aligned requests go to the heap.
//!
//! **Free slots per class: a list, and on wasm32 a small cache first.** A class threads its
//! free slots in a list through their first payload word: allocate pops, free pushes, neither
//! touches a slab header, and neither writes the slot's tag in release builds. Natively that is
//! all, and each fast path is a few predictable branches (slot or heap block, listed slot or new
//! slab) straight into the heap's own inlined path for heap blocks.
//! On wasm32 a class also keeps the last four slots freed in an array of the front's own state
//! (last in, first out), taken and filled before the list, and each fast path is one branch
//! (arithmetic merges its tests): Gear meters every straight-line block, and every page a
//! message touches costs far more than the instructions. The lists and caches are a few hundred
//! bytes of the front's state, on one page, and a program that allocates and frees a few blocks
//! of a class per message gets the same slots back without the allocator reading or writing
//! their pages at all (the program that fills a block pays for its page, not the allocator).
//! Through the list alone a slot handed out is read (its link), which costs the allocator a
//! first read of its page, and the slots a program reuses drift, from one message to the
//! next, to wherever the list leads. Natively the cache costs more than it saves: a random
//! workload drives its count up and down, so its tests mispredict (`TUNING.md`, "The front's
//! native fast paths"); `--cfg heapworks_front_cache` builds the wasm32 paths natively, for
//! their tests.
//!
//! **Slots are tagged, not headerless.** Each slot has a one-word tag in front, like a heap
//! block's header, with [`crate::EMBEDDER_TAG`] set (a bit the heap never sets in a header),
//! the slot's class and its offset in its slab (see `front/slab.rs`), written once when the
//! slab is carved. Truly headerless slots would need a side table to tell a slot from a heap
//! block by its address, since the core manages arbitrary regions it is handed and cannot
//! align slabs to a power of two without wasting up to a slab per slab. The tag keeps the
//! crate's promise of one word of overhead per block, makes `free(ptr)` without a size and
//! `usable_size` O(1) (one load decides slot or heap block and names the class), and leads a
//! checker to the slab; checked builds also keep a live bit in it, so they catch a double
//! free of a slot.
//!
//! **Slabs** are ordinary heap blocks of about 1 KiB (at least four slots), carved when a
//! class has no free slot. They go back to the heap, which coalesces them, when memory is
//! needed: [`FrontHeap::trim`] counts each slab's free slots in a walk of the free lists and
//! gives back every slab whose slots are all free, and the global allocators over a front
//! trim before they grow the heap or fail a request. Releasing a slab the moment its last
//! slot is freed would need a live count per slab or per class, kept on every call: two
//! stores and one more branch on each pair of calls (on Gear a store costs about 10 k gas and
//! a branch a metered block of about 20 k, against a cached allocate's 130 k) to give memory
//! back sooner than anyone asks for it. When no slab can be carved, a small request is served
//! by the heap directly, so a request the heap's largest free block can hold never fails, and
//! a failed request changes nothing. A front may also take its first slabs from memory of its
//! own ([`FrontHeap::with_static_slabs`], `front/statics.rs`).
//!
//! **Costs.** Natively, allocate: a size and alignment test (a heap-sized request goes to
//! [`Heap::allocate`] inline), the class, the list head and its link (19 instructions a 64 B
//! call, `bench --instructions`). Free: the tag load (a heap block goes to [`Heap::free`]
//! inline), the link write and the list head (10). On wasm32, allocate: one test of size,
//! alignment and cache, class, cache count and entry (or list head and one link read); free:
//! tag load (slot or heap block, and the class), cache count and entry (or link write and list
//! head). The one unavoidable cost is the branch between a slot and a heap block: a workload
//! that mixes the two at random mispredicts it. Realloc stays in place while the new size
//! fits the slot, and otherwise moves (a word copy) to another class or to a heap block; a
//! slot that grows moves to one with room for the next doubling (while that is small), so a
//! vector growing by doubling grows in place every other step.
//!
//! Invariants (beyond those of `front/slab.rs` and [`Heap`], verified by
//! [`FrontHeap::check`]):
//! - `slabs[c]` heads the list of every slab of class `c`, and only those.
//! - `cache[c][..cached[c]]` and the list `free[c]` hold the free slots of class `c`: exactly
//!   the slots of its slabs that are not handed out, each once in one of the two.
//! - Statistics are the heap's: a slab counts as in use, whole, while it is held.

mod check;
mod slab;
mod statics;
#[cfg(test)]
mod tests;

use core::alloc::Layout;
use core::ptr::{null_mut, NonNull};

use crate::chunk::{GRANULE, WORD};
use crate::error::{AllocError, ClaimError, Misuse};
use crate::heap::{layout_fits, report, CHECKED};
use crate::index::{Bins, FreeIndex};
use crate::stats::Stats;
use crate::Heap;
use slab::{Slab, CLASSES, FIRST_SLOT, HEADER, LIVE, MAX_SMALL, TAG};
use statics::StaticSlabs;

/// A [`Heap`] with a small-object front: requests of up to [`FrontHeap::MAX_SMALL`] bytes at
/// alignment up to the granule take a slot of their size class (one class per 16 B) from
/// a slab, a heap block of about 1 KiB; a malloc is a pop from the class's list of free
/// slots, a free a push.
///
/// Slots are **tagged, not headerless**: each has a one-word tag in front (with
/// [`crate::EMBEDDER_TAG`] set, its class and its offset in its slab), so `free` needs no
/// size and tells a slot from a heap block with one load, at the heap's own overhead of one
/// word per block. [`FrontHeap::trim`] gives every slab whose slots are all free back to the
/// heap (the global allocators do before they grow or fail). Statistics are the heap's, in
/// which a held slab counts as in use. `INTERNALS.md` has the layout and the measured costs.
///
/// ```
/// use core::alloc::Layout;
/// use heapworks::FrontHeap;
///
/// let mut memory = vec![0u8; 64 * 1024];
/// let mut heap = FrontHeap::new();
/// // SAFETY: `memory` outlives `heap` and nothing else uses it.
/// unsafe { heap.claim(memory.as_mut_ptr(), memory.len()) }.unwrap();
///
/// let small = heap.allocate(Layout::from_size_align(24, 8).unwrap()).unwrap();
/// // SAFETY: `small` came from this heap; a free needs no size.
/// unsafe { heap.free(small) };
/// heap.trim();
/// assert_eq!(heap.stats().in_use, 0);
/// heap.check().unwrap();
/// ```
pub struct FrontHeap<I = Bins> {
    heap: Heap<I>,
    /// Per class, how many free slots `cache` holds (and zeros up to `COUNTS`).
    cached: [u8; COUNTS],
    /// Per class, the free slots freed last, kept here rather than threaded through their
    /// slots (last in, first out).
    cache: [[*mut u8; CACHED]; CLASSES],
    /// Per class, the other free slots (linked through their first payload word).
    free: [*mut u8; CLASSES],
    /// Per class, its slabs (linked through their headers).
    slabs: [*mut Slab; CLASSES],
    /// Slabs carved from memory of the front's own before the heap is asked (none by default).
    statics: StaticSlabs,
}

/// Whether the fast paths branch on what they serve (a slot or a heap block, listed or new):
/// natively, where a predictable branch costs less than the arithmetic that merges tests, and
/// where a cache's count, which a random workload moves up and down, makes its tests
/// unpredictable. On wasm32 every branch is a metered block, and the cache keeps a message's
/// slots off the pages Gear charges; `--cfg heapworks_front_cache` builds the wasm32 paths
/// natively, for their tests (crates/heapworks/TUNING.md, "The front's native fast paths").
const BRANCHING: bool = !cfg!(any(target_arch = "wasm32", heapworks_front_cache));
/// The free slots a class keeps in the front's own state: none natively (`BRANCHING`), and none
/// with `--cfg heapworks_small_state`, which keeps the state under 512 B.
const CACHED: usize = if BRANCHING || cfg!(heapworks_small_state) {
    0
} else {
    4
};
/// Cache counts kept: one per class, up to a power of two, so that a class computed from a
/// request too large for a slot, or from a heap block's header, indexes a count once masked
/// (the fast paths test range and cache in one branch).
const COUNTS: usize = CLASSES.next_power_of_two();
const _: () = assert!(CACHED <= u8::MAX as usize);
// `--cfg heapworks_small_state` keeps a front's whole state (the heap's bins, counters and the
// front's lists) within 512 B on every 32-bit target, checked where it is built: 480 B on i686,
// 496 B on wasm32 (whose `u64`s align to 8 B). That a `static` front starts all zeros (`.bss`)
// is checked on the wasm32 guests (`heapworks-gas/tests/guest_module.rs`).
#[cfg(all(heapworks_small_state, target_pointer_width = "32"))]
const _: () = assert!(core::mem::size_of::<FrontHeap>() <= 512);

// SAFETY: the slabs are blocks of the heap, which the `FrontHeap` owns as it owns the heap.
unsafe impl<I: FreeIndex> Send for FrontHeap<I> {}

impl Default for FrontHeap {
    fn default() -> FrontHeap {
        FrontHeap::new()
    }
}

impl FrontHeap {
    /// An empty front over a heap with the default index.
    pub const fn new() -> FrontHeap {
        FrontHeap::empty()
    }

    /// An empty front whose classes take their first slab, where `plan` names them, from
    /// `[base, base + len)` before they ask the heap: each `(size, slots)` entry of the plan is
    /// a slab of `slots` slots of the class of `size`-byte requests, laid out in plan order
    /// (an entry that does not fit is skipped). Seed 000's static buffers in front of Gear's
    /// allocator are such plans; `heapworks gas` measures them. Static slabs are never given
    /// back, and the heap's statistics do not count them.
    ///
    /// ```
    /// use core::alloc::Layout;
    /// use heapworks::FrontHeap;
    ///
    /// static mut CELLS: [u64; 32] = [0; 32];
    /// // SAFETY: `CELLS` is used by this front alone, for as long as it lives.
    /// let mut heap =
    ///     unsafe { FrontHeap::with_static_slabs(&raw mut CELLS as *mut u8, 256, &[(8, 4), (40, 2)]) };
    /// let block = heap.allocate(Layout::from_size_align(40, 8).unwrap()).unwrap();
    /// assert!(block.as_ptr().addr().wrapping_sub(&raw const CELLS as usize) < 256);
    /// ```
    ///
    /// # Safety
    /// The area is valid for reads and writes, and used by nothing else, for as long as the
    /// front lives (the front may move; the area may not).
    pub const unsafe fn with_static_slabs(
        base: *mut u8,
        len: usize,
        plan: &'static [(usize, usize)],
    ) -> FrontHeap {
        let mut front = FrontHeap::empty();
        // SAFETY: forwarded from the caller.
        front.statics = unsafe { StaticSlabs::new(base, len, plan) };
        front
    }

    /// The bytes the block at `ptr` can hold (at least what was asked for). Like
    /// [`Heap::usable_size`], it needs no heap.
    ///
    /// # Safety
    /// `ptr` is a live block of some `FrontHeap`.
    pub unsafe fn usable_size(ptr: NonNull<u8>) -> usize {
        // SAFETY: a live block has a header or a tag in front.
        unsafe {
            let tag = slab::tag_of(ptr);
            if tag & TAG == 0 {
                return Heap::usable_size(ptr);
            }
            slab::stride(slab::class_in(tag)) - WORD
        }
    }
}

impl<I: FreeIndex> FrontHeap<I> {
    /// The largest request (in bytes) served from a slot.
    pub const MAX_SMALL: usize = MAX_SMALL;

    /// An empty front over a heap on the free index `I`.
    pub const fn empty() -> FrontHeap<I> {
        FrontHeap {
            heap: Heap::empty(),
            cached: [0; COUNTS],
            cache: [[null_mut(); CACHED]; CLASSES],
            free: [null_mut(); CLASSES],
            slabs: [null_mut(); CLASSES],
            statics: StaticSlabs::NONE,
        }
    }

    /// Adds a region; see [`Heap::claim`].
    ///
    /// # Safety
    /// As for [`Heap::claim`].
    pub unsafe fn claim(&mut self, base: *mut u8, size: usize) -> Result<(), ClaimError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.heap.claim(base, size) }
    }

    /// Grows a region in place; see [`Heap::extend`].
    ///
    /// # Safety
    /// As for [`Heap::extend`].
    pub unsafe fn extend(&mut self, base: *mut u8, new_size: usize) -> Result<(), ClaimError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.heap.extend(base, new_size) }
    }

    /// The heap behind the front (slabs are live blocks of it).
    pub fn heap(&self) -> &Heap<I> {
        &self.heap
    }

    /// The heap's statistics: a slab counts as in use while it is held.
    pub fn stats(&self) -> Stats {
        self.heap.stats()
    }

    /// Allocates a block for `layout`: a slot for a small one, a heap block otherwise (or when
    /// no slab can be carved). Fails with [`AllocError`] only when the heap cannot serve the
    /// request itself, and then changes nothing.
    #[inline(always)]
    pub fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if BRANCHING {
            return self.allocate_by_branch(layout);
        }
        // One test for the size, the alignment and the cache: an over-aligned request counts
        // as larger than any slot, and the class of a larger one, masked, is a count never
        // used (the branch leaves for `allocate_uncached` first).
        let over_aligned = usize::from(layout.align() > GRANULE) << (MAX_SMALL.ilog2() + 1);
        let key = layout.size() | over_aligned;
        let class = slab::class_of(key) & (COUNTS - 1);
        // SAFETY: `class < COUNTS`; below, `key <= MAX_SMALL`, so `class < CLASSES`, and the
        // class caches `cached` free slots of its own.
        unsafe {
            let cached = *self.cached.get_unchecked(class);
            // Arithmetic, not `||`: one branch (Gear meters every straight-line block).
            if key + (usize::from(cached == 0) << (MAX_SMALL.ilog2() + 1)) > MAX_SMALL {
                return self.allocate_uncached(layout);
            }
            let cached = cached - 1;
            *self.cached.get_unchecked_mut(class) = cached;
            let slot = *self
                .cache
                .get_unchecked(class)
                .get_unchecked(usize::from(cached));
            let slot = NonNull::new_unchecked(slot);
            if CHECKED {
                slab::set_tag(slot, slab::tag_of(slot) | LIVE);
            }
            Ok(slot)
        }
    }

    /// [`FrontHeap::allocate`] when the class's cache is empty (a slot from its list, or a new
    /// slab) or the request is not small (a heap block): out of line, so the cached path needs
    /// no registers saved.
    #[inline(never)]
    fn allocate_uncached(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        self.allocate_by_branch(layout)
    }

    /// A heap block for a request larger than a slot or over-aligned; else a slot of its class
    /// from the class's free list, or from a new slab. The native fast path, inlined.
    #[inline(always)]
    fn allocate_by_branch(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() > MAX_SMALL || layout.align() > GRANULE {
            return self.heap.allocate(layout);
        }
        let class = slab::class_of(layout.size());
        // SAFETY: `class_of` of a size up to `MAX_SMALL` is below `CLASSES`.
        let head = unsafe { *self.free.get_unchecked(class) };
        match NonNull::new(head) {
            // SAFETY: a listed slot is a free slot of this class.
            Some(slot) => Ok(unsafe { self.pop(slot, class) }),
            None => self.allocate_refill(class, layout),
        }
    }

    /// Hands out `slot`, the head of the free list of `class`.
    ///
    /// # Safety
    /// `slot` heads `free[class]`, and `class < CLASSES`.
    #[inline(always)]
    unsafe fn pop(&mut self, slot: NonNull<u8>, class: usize) -> NonNull<u8> {
        // SAFETY: a free slot keeps the next one's address in its first word; `class` is a
        // class (the caller's promise).
        unsafe {
            *self.free.get_unchecked_mut(class) = slab::next_free(slot);
            if CHECKED {
                slab::set_tag(slot, slab::tag_of(slot) | LIVE);
            }
        }
        slot
    }

    /// Carves a new slab for `class`, whose free list is empty, and hands out its first slot;
    /// when the heap has no room for a slab, serves `layout` from the heap directly.
    #[inline(never)]
    fn allocate_refill(&mut self, class: usize, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let (block, usable) = match self.statics.take(class) {
            Some(planned) => planned,
            None => {
                let bytes = slab::slab_bytes(class);
                // SAFETY: `bytes` is a few KiB at most and GRANULE a power of two.
                let slab_layout = unsafe { Layout::from_size_align_unchecked(bytes, GRANULE) };
                let Ok(block) = self.heap.allocate(slab_layout) else {
                    return self.heap.allocate(layout);
                };
                // SAFETY: `block` is a live heap block.
                (block, unsafe { Heap::usable_size(block) })
            }
        };
        // SAFETY: `block` is a fresh heap block, or the static slab the plan gives the class,
        // of `usable` bytes, owned by the front; carved, it heads the slab list of `class` and
        // its slots the (empty) free list.
        unsafe {
            let slabs = self.slabs.get_unchecked_mut(class);
            let (slab, first) = slab::carve(block, usable, class, *slabs, null_mut());
            *slabs = slab.as_ptr();
            Ok(self.pop(first, class))
        }
    }

    /// Frees a block given only its address, as C's `free` does.
    ///
    /// # Safety
    /// `ptr` was returned by this front and is not used after this call. Checked builds detect
    /// a double free, a foreign pointer (a slot address never handed out included) or a
    /// corrupt header and panic with the reason instead of corrupting the heap.
    #[inline]
    pub unsafe fn free(&mut self, ptr: NonNull<u8>) {
        if CHECKED {
            if let Err(misuse) = self.validate(ptr) {
                report(misuse);
            }
        }
        // SAFETY: forwarded from the caller (and checked above in checked builds).
        unsafe { self.release_block(ptr) }
    }

    /// Frees a block allocated with `layout` (which only checked builds look at).
    ///
    /// # Safety
    /// As for [`FrontHeap::free`], and `layout` is the one the block was allocated with.
    #[inline]
    pub unsafe fn deallocate(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller.
        if let Err(misuse) = unsafe { self.deallocate_or_misuse(ptr, layout) } {
            report(misuse);
        }
    }

    /// [`FrontHeap::deallocate`], handing misuse a checked build caught back to the caller.
    ///
    /// # Safety
    /// As for [`FrontHeap::deallocate`], except that misuse is allowed in checked builds.
    #[inline(always)]
    pub(crate) unsafe fn deallocate_or_misuse(
        &mut self,
        ptr: NonNull<u8>,
        layout: Layout,
    ) -> Result<(), Misuse> {
        if CHECKED {
            self.validate_layout(ptr, layout)?;
        }
        // SAFETY: forwarded from the caller (and checked above in checked builds).
        unsafe { self.release_block(ptr) };
        Ok(())
    }

    /// # Safety
    /// `ptr` is a live block of this front.
    #[inline(always)]
    unsafe fn release_block(&mut self, ptr: NonNull<u8>) {
        // SAFETY: a live block has a header or a tag in front. One test for both: a heap
        // block's header, read as a tag, names a class that masked is a count never used
        // (the branch leaves for `release_uncached` first); a slot's tag names its class.
        unsafe {
            let tag = slab::tag_of(ptr);
            if BRANCHING {
                return self.release_by_branch(ptr, tag);
            }
            let class = slab::class_in(tag) & (COUNTS - 1);
            let cached = *self.cached.get_unchecked(class);
            // Arithmetic, not `||`: one branch (Gear meters every straight-line block).
            let heap_block = (tag & TAG) ^ TAG;
            #[allow(
                clippy::absurd_extreme_comparisons,
                reason = "no cache with --cfg heapworks_small_state"
            )]
            if heap_block * (CACHED + 1) + usize::from(cached) >= CACHED {
                self.release_uncached(ptr, tag);
                return;
            }
            self.cache_slot(ptr, tag, class, cached);
        }
    }

    /// Puts the live slot at `ptr` (of tag `tag`) into the cache of `class`, which holds
    /// `cached < CACHED` slots.
    ///
    /// # Safety
    /// As said, and `class` is the slot's class.
    #[inline(always)]
    unsafe fn cache_slot(&mut self, ptr: NonNull<u8>, tag: usize, class: usize, cached: u8) {
        // SAFETY: a slot's class is below `CLASSES` and the cache has room at `cached`.
        unsafe {
            if CHECKED {
                slab::set_tag(ptr, tag & !LIVE);
            }
            let entry = self.cache.get_unchecked_mut(class);
            *entry.get_unchecked_mut(usize::from(cached)) = ptr.as_ptr();
            *self.cached.get_unchecked_mut(class) = cached + 1;
        }
    }

    /// Frees a heap block, or threads a slot whose class's cache is full onto its list: out of
    /// line, so the cached path needs no registers saved.
    ///
    /// # Safety
    /// `ptr` is a live block of this front and `tag` the word before it, or for a heap block
    /// any word without `TAG`.
    #[inline(never)]
    unsafe fn release_uncached(&mut self, ptr: NonNull<u8>, tag: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.release_by_branch(ptr, tag) }
    }

    /// Frees a heap block, or threads a slot onto its class's free list. The native fast path,
    /// inlined.
    ///
    /// # Safety
    /// As for [`FrontHeap::release_uncached`].
    #[inline(always)]
    unsafe fn release_by_branch(&mut self, ptr: NonNull<u8>, tag: usize) {
        // SAFETY: forwarded from the caller; a slot's class is below `CLASSES`.
        unsafe {
            if tag & TAG == 0 {
                self.heap.free(ptr);
                return;
            }
            if CHECKED {
                slab::set_tag(ptr, tag & !LIVE);
            }
            self.push(ptr, slab::class_in(tag));
        }
    }

    /// Puts the live slot at `ptr` into its class's cache, or onto its free list when the cache
    /// is full.
    ///
    /// # Safety
    /// `ptr` is a live slot of this front and `tag` its tag.
    #[inline(always)]
    unsafe fn release_slot(&mut self, ptr: NonNull<u8>, tag: usize) {
        let class = slab::class_in(tag);
        // SAFETY: a tag's class is below `CLASSES` (the slab format's invariant).
        unsafe {
            let cached = *self.cached.get_unchecked(class);
            #[allow(
                clippy::absurd_extreme_comparisons,
                reason = "no cache with --cfg heapworks_small_state"
            )]
            if usize::from(cached) < CACHED {
                self.cache_slot(ptr, tag, class, cached);
            } else {
                self.release_uncached(ptr, tag);
            }
        }
    }

    /// Threads the free slot `ptr` onto the free list of `class`.
    ///
    /// # Safety
    /// `ptr` is a free slot of `class`, in no list nor cache, and `class < CLASSES`.
    #[inline(always)]
    unsafe fn push(&mut self, ptr: NonNull<u8>, class: usize) {
        // SAFETY: forwarded from the caller; the slot's first word is free to hold the link.
        unsafe {
            let head = self.free.get_unchecked_mut(class);
            slab::set_next_free(ptr, *head);
            *head = ptr.as_ptr();
        }
    }

    /// Empties the caches onto the free lists (so that every free slot is listed).
    fn flush_caches(&mut self) {
        for class in 0..CLASSES {
            // SAFETY: `class` is a class; cached slots are free slots of it, in no list.
            unsafe {
                while *self.cached.get_unchecked(class) > 0 {
                    let cached = self.cached.get_unchecked_mut(class);
                    *cached -= 1;
                    let n = usize::from(*cached);
                    let slot = *self.cache.get_unchecked(class).get_unchecked(n);
                    self.push(NonNull::new_unchecked(slot), class);
                }
            }
        }
    }

    /// Gives back to the heap, which coalesces them, every slab whose slots are all free, found
    /// by counting each slab's free slots in a walk of the free lists; returns how many, in
    /// O(slabs and free slots). The global allocators over a front call it before they grow
    /// the heap or fail a request.
    pub fn trim(&mut self) -> usize {
        self.flush_caches();
        // SAFETY: each `class` is a class; the lists hold slabs and free slots of the front.
        (0..CLASSES)
            .map(|class| unsafe { self.trim_class(class) })
            .sum()
    }

    /// [`FrontHeap::trim`] for one class.
    ///
    /// # Safety
    /// `class < CLASSES`.
    unsafe fn trim_class(&mut self, class: usize) -> usize {
        // SAFETY: `class` is a class (the caller's promise); every listed slab is a slab of
        // `class` and every listed slot a free slot of one of them (the front's invariants), so
        // tags lead to listed slabs; the scratch words are the front's to use here.
        unsafe {
            let mut free = *self.free.get_unchecked(class);
            let mut slabs = *self.slabs.get_unchecked(class);
            let mut cursor = slabs;
            while let Some(slab) = NonNull::new(cursor) {
                (*slab.as_ptr()).scratch = 0;
                cursor = (*slab.as_ptr()).next;
            }
            let mut cursor = free;
            while let Some(slot) = NonNull::new(cursor) {
                (*slab::slab_of(slot, slab::tag_of(slot)).as_ptr()).scratch += 1;
                cursor = slab::next_free(slot);
            }
            // A static slab stays with the front, free or not.
            let statics = self.statics;
            let all_free = |slab: NonNull<Slab>| {
                !statics.holds(slab.as_ptr().addr())
                    && (*slab.as_ptr()).scratch
                        == slab::capacity(Heap::usable_size(slab.cast()), class)
            };
            // Unlink the slots of the slabs about to go.
            let mut kept: Option<NonNull<u8>> = None;
            let mut cursor = free;
            while let Some(slot) = NonNull::new(cursor) {
                cursor = slab::next_free(slot);
                if all_free(slab::slab_of(slot, slab::tag_of(slot))) {
                    match kept {
                        Some(before) => slab::set_next_free(before, cursor),
                        None => free = cursor,
                    }
                } else {
                    kept = Some(slot);
                }
            }
            let mut released = 0;
            let mut kept: Option<NonNull<Slab>> = None;
            let mut cursor = slabs;
            while let Some(slab) = NonNull::new(cursor) {
                cursor = (*slab.as_ptr()).next;
                if all_free(slab) {
                    match kept {
                        Some(before) => (*before.as_ptr()).next = cursor,
                        None => slabs = cursor,
                    }
                    // A block the heap hands out later at this address must not read as a slab.
                    (*slab.as_ptr()).seal = 0;
                    // Through the free path's own out-of-line call (a slab is a heap block,
                    // which a tag without `TAG` says), not a second copy of the heap's merge.
                    self.release_uncached(slab.cast(), 0);
                    released += 1;
                } else {
                    kept = Some(slab);
                }
            }
            *self.free.get_unchecked_mut(class) = free;
            *self.slabs.get_unchecked_mut(class) = slabs;
            released
        }
    }

    /// Resizes a block to `new_size` bytes, keeping its alignment and contents.
    ///
    /// A slot stays in place while `new_size` fits it; otherwise the block moves to a slot of
    /// another class (one with room for twice `new_size` when it grows, while that is small) or
    /// to a heap block. A heap block is resized as [`Heap::realloc`] does. On failure the old
    /// block is untouched.
    ///
    /// # Safety
    /// `ptr` is a live block of this front allocated with `old`.
    #[inline]
    pub unsafe fn realloc(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new_size: usize,
    ) -> Result<NonNull<u8>, AllocError> {
        let new = Layout::from_size_align(new_size, old.align()).map_err(|_| AllocError)?;
        // SAFETY: forwarded from the caller.
        unsafe { self.resize_or_misuse(ptr, old, new) }.unwrap_or_else(|misuse| report(misuse))
    }

    /// Resizes a block from `old` to `new` (which may ask for another alignment), handing
    /// misuse a checked build caught back to the caller.
    ///
    /// # Safety
    /// As for [`FrontHeap::realloc`], except that misuse is allowed in checked builds.
    #[inline(always)]
    pub(crate) unsafe fn resize_or_misuse(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<Result<NonNull<u8>, AllocError>, Misuse> {
        if CHECKED {
            self.validate_layout(ptr, old)?;
        }
        // SAFETY: `ptr` is a live block allocated with `old` (the caller's promise, checked
        // above in checked builds).
        unsafe {
            let tag = slab::tag_of(ptr);
            if tag & TAG == 0 {
                return Ok(self.resize_heap_block(ptr, old, new));
            }
            let usable = slab::stride(slab::class_in(tag)) - WORD;
            let fits = new.size() <= usable && ptr.as_ptr().addr() & (new.align() - 1) == 0;
            if fits {
                return Ok(Ok(ptr));
            }
            // A slot that grows moves to a slot with room for the next doubling too, while
            // that is small: a vector growing by doubling then grows in place every other step.
            let doubled = new.size().saturating_mul(2);
            let room = if new.size() > usable && doubled <= MAX_SMALL {
                doubled
            } else {
                new.size()
            };
            // SAFETY: `room` is `new`'s size or a size up to `MAX_SMALL`, at `new`'s alignment.
            let target = Layout::from_size_align_unchecked(room, new.align());
            // Without room for the doubling, the size asked for (which the heap may still
            // serve: the largest free block's promise).
            let moved = self
                .allocate(target)
                .or_else(|_| self.allocate_uncached(new));
            let Ok(moved) = moved else {
                return Ok(Err(AllocError));
            };
            copy_words(ptr, moved, old.size().min(new.size()));
            self.release_slot(ptr, tag);
            Ok(Ok(moved))
        }
    }

    /// Resizes a heap block as the heap does: out of line, so the slot path needs no
    /// registers saved (nor, on wasm32, a stack frame).
    ///
    /// # Safety
    /// `ptr` is a live heap block of this front allocated with `old`.
    #[inline(never)]
    unsafe fn resize_heap_block(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<u8>, AllocError> {
        // SAFETY: forwarded from the caller; validated already in checked builds, so the
        // heap finds no misuse.
        unsafe { self.heap.resize_or_misuse(ptr, old, new) }.unwrap_or(Err(AllocError))
    }

    /// Grows a block to hold `new_size` bytes without moving it: a slot succeeds when the size
    /// fits it, a heap block as [`Heap::try_grow_in_place`] does.
    ///
    /// # Safety
    /// `ptr` is a live block of this front.
    pub unsafe fn try_grow_in_place(
        &mut self,
        ptr: NonNull<u8>,
        new_size: usize,
    ) -> Result<(), AllocError> {
        if CHECKED {
            if let Err(misuse) = self.validate(ptr) {
                report(misuse);
            }
        }
        // SAFETY: `ptr` is a live block (the caller's promise, checked in checked builds).
        unsafe {
            if slab::tag_of(ptr) & TAG == 0 {
                self.heap.try_grow_in_place(ptr, new_size)
            } else if new_size <= FrontHeap::usable_size(ptr) {
                Ok(())
            } else {
                Err(AllocError)
            }
        }
    }

    /// [`Heap::allocate_run`]: the blocks of a run are heap blocks (a run is what a cache of
    /// its own asks for, which the front would only duplicate).
    pub fn allocate_run(
        &mut self,
        layout: Layout,
        count: usize,
        each: impl FnMut(NonNull<u8>),
    ) -> usize {
        self.heap.allocate_run(layout, count, each)
    }

    /// Checks that `ptr` is a live block of this front, without changing anything: a heap
    /// block as [`Heap::validate`] checks it (and not a slab itself), a slot by its tag (its
    /// class and offset, on its slab's slot grid), its slab (a live heap block sealed as a
    /// slab of that class) and that it is not free: by the live bit checked builds keep in
    /// the tag, or else by a walk of the class's free list. A slot freed twice is a
    /// [`Misuse::DoubleFree`] while its slab is held; once the slab went back to the heap, the
    /// address is [`Misuse::Foreign`].
    pub fn validate(&self, ptr: NonNull<u8>) -> Result<(), Misuse> {
        let addr = ptr.as_ptr().addr();
        let foreign = Misuse::Foreign { addr };
        let in_static = self.statics.holds(addr.wrapping_sub(WORD));
        if !addr.is_multiple_of(GRANULE) || !in_static && self.heap.region_holding(addr).is_none() {
            return Err(foreign);
        }
        // SAFETY: `ptr` lies inside a region after its first chunk's header, or its tag in the
        // static area, so the word before it is readable.
        let tag = unsafe { slab::tag_of(ptr) };
        if tag & TAG == 0 {
            if in_static {
                return Err(foreign);
            }
            self.heap.validate(ptr)?;
            // SAFETY: `ptr` is a live heap block.
            return match unsafe { self.slab_at(ptr) } {
                Some(_) => Err(foreign),
                None => Ok(()),
            };
        }
        let (class, _) = self.slab_of_tagged(ptr, tag).ok_or(foreign)?;
        let live = if CHECKED {
            tag & LIVE != 0
        } else {
            !self.is_listed_free(ptr, class)
        };
        if live {
            Ok(())
        } else {
            Err(Misuse::DoubleFree { addr })
        }
    }

    /// The class and slab of the slot at `ptr` (a payload address inside a region), whose tag
    /// is `tag`, if the tag is a slot's tag whose offset leads to a live heap block sealed as a
    /// slab of the tag's class, with the slot on its grid; `None` otherwise. Reads only
    /// validated memory.
    fn slab_of_tagged(&self, ptr: NonNull<u8>, tag: usize) -> Option<(usize, NonNull<Slab>)> {
        let addr = ptr.as_ptr().addr();
        let offset = slab::offset_in(tag);
        let class = slab::class_in(tag);
        let stray = tag & (GRANULE - 1) & !(TAG | LIVE);
        if stray != 0 || class >= CLASSES || offset < FIRST_SLOT || offset > addr {
            return None;
        }
        // SAFETY: the offset stays inside the region or the static area: it is at most `addr`
        // less the start, checked next, before anything there is read.
        let candidate = unsafe { ptr.byte_sub(offset) };
        let usable = match self.statics.usable(candidate.cast(), class) {
            Some(usable) => usable,
            None => {
                self.heap.region_holding(candidate.as_ptr().addr())?;
                self.heap.validate(candidate).ok()?;
                // SAFETY: `candidate` is a live heap block.
                if unsafe { self.slab_at(candidate) } != Some(class) {
                    return None;
                }
                // SAFETY: as above.
                unsafe { Heap::usable_size(candidate) }
            }
        };
        let stride = slab::stride(class);
        let on_grid = (offset - FIRST_SLOT).is_multiple_of(stride)
            && offset - WORD + stride <= HEADER + slab::capacity(usable, class) * stride;
        on_grid.then_some((class, candidate.cast()))
    }

    /// Whether the slot at `ptr` is in the cache or the free list of `class`: a walk bounded by
    /// the slots the heap could hold, so even a corrupt list ends.
    fn is_listed_free(&self, ptr: NonNull<u8>, class: usize) -> bool {
        let cached = self.cached.get(class).map_or(0, |&n| usize::from(n));
        let cache = self
            .cache
            .get(class)
            .and_then(|cache| cache.get(..cached))
            .unwrap_or(&[]);
        if cache.contains(&ptr.as_ptr()) {
            return true;
        }
        let bound = self.heap.stats().managed / slab::stride(class);
        let mut cursor = self.free.get(class).copied().unwrap_or(null_mut());
        for _ in 0..bound {
            let Some(slot) = NonNull::new(cursor) else {
                return false;
            };
            if slot == ptr {
                return true;
            }
            // SAFETY: listed slots are free slots of the front, holding their link.
            cursor = unsafe { slab::next_free(slot) };
        }
        false
    }

    /// The class of the slab whose block is the live heap block at `block`, or `None` when
    /// the block is not sealed as a slab.
    ///
    /// # Safety
    /// `block` is a live heap block of this front's heap.
    unsafe fn slab_at(&self, block: NonNull<u8>) -> Option<usize> {
        // SAFETY: a live block's usable bytes are readable; the seal is read only if the block
        // is large enough for a slab header.
        unsafe {
            if Heap::usable_size(block) < HEADER {
                return None;
            }
            let seal = (*block.cast::<Slab>().as_ptr()).seal;
            let class = slab::class_in_seal(seal);
            (class < CLASSES && seal == slab::seal(block.cast().as_ptr(), class)).then_some(class)
        }
    }

    /// [`FrontHeap::validate`], and that `layout` fits the block.
    fn validate_layout(&self, ptr: NonNull<u8>, layout: Layout) -> Result<(), Misuse> {
        self.validate(ptr)?;
        // SAFETY: validated just above.
        layout_fits(ptr, layout, unsafe { FrontHeap::usable_size(ptr) })
    }
}

/// Copies `bytes` from `src` to `dst`, rounded up to whole words: 16 bytes a step, the last
/// step overlapping the one before (so the tail needs no loop of its own), and short blocks in
/// two overlapping 8-byte steps. A slot moves in a few loads and stores, where `memcpy` on
/// wasm32 without bulk memory copies short blocks a byte at a time; and the loop tests at its
/// bottom, since Gear meters every straight-line block (about 20 k gas each, a test at the top
/// of a loop makes two blocks per step).
///
/// # Safety
/// `src` and `dst` are distinct live blocks (slots or heap blocks: `GRANULE`-aligned, with
/// usable sizes of whole words) of at least `bytes` usable bytes each.
#[inline(always)]
unsafe fn copy_words(src: NonNull<u8>, dst: NonNull<u8>, bytes: usize) {
    /// Copies the `N` bytes at `offset`, which may be unaligned.
    ///
    /// # Safety
    /// Both blocks hold `offset + N` bytes.
    #[inline(always)]
    unsafe fn step<T: Copy>(src: NonNull<u8>, dst: NonNull<u8>, offset: usize) {
        // SAFETY: forwarded from the caller.
        unsafe {
            let value = src.byte_add(offset).cast::<T>().read_unaligned();
            dst.byte_add(offset).cast::<T>().write_unaligned(value);
        }
    }
    let end = bytes.div_ceil(WORD) * WORD;
    // SAFETY: both blocks hold `end` bytes (their usable sizes are whole words of at least
    // `bytes`); every step lies below `end`.
    unsafe {
        if end >= 16 {
            let mut offset = 0;
            loop {
                step::<[u64; 2]>(src, dst, offset);
                offset += 16;
                if offset + 16 > end {
                    break;
                }
            }
            step::<[u64; 2]>(src, dst, end - 16);
        } else if end >= 8 {
            step::<u64>(src, dst, 0);
            step::<u64>(src, dst, end - 8);
        } else if end > 0 {
            step::<usize>(src, dst, 0);
        }
    }
}
