//! The small-object front: [`FrontHeap`], a [`Heap`] whose small requests are served from
//! size-classed slots in slabs, so that a small allocation is a pop from a list and a free a
//! push.
//!
//! **Classes.** Requests of up to [`FrontHeap::MAX_SMALL`] bytes (256) at alignment up to the
//! granule take a slot of their class: one class per 16 B of slot size (17 classes), so the
//! class is one add and one shift. On 64-bit targets 16 B is the granule, so a slot is never
//! larger than the chunk the heap itself would have given (smaller for requests of up to 8
//! bytes: 16 B instead of the heap's 32 B minimum chunk); on 32-bit targets a slot may be 8 B
//! larger, since one class per 8 B granule (33 classes) spread wasm32's random churn of 8–256 B
//! blocks over as many slabs: 1.61× dlmalloc's gas against 1.23× with 16 B (`heapworks gas
//! --quick`), for 0.4 % more on the FT stress. Larger or over-aligned requests go to the heap.
//!
//! **Slots are tagged, not headerless.** Each slot has a one-word tag in front, like a heap
//! block's header, with [`crate::EMBEDDER_TAG`] set (a bit the heap never sets in a header)
//! and the slot's offset in its slab (see `front/slab.rs`). Truly headerless slots would need
//! a side table to tell a slot from a heap block by its address, since the core manages
//! arbitrary regions it is handed and cannot align slabs to a power of two without wasting up
//! to a slab per slab. The tag keeps the crate's promise of one word of overhead per block,
//! makes `free(ptr)` without a size O(1) (one load decides slot or heap block; the offset
//! leads to the slab), and carries a live bit, so checked builds catch a double free of a slot.
//!
//! **Slabs** are ordinary heap blocks of about 1 KiB (at least four slots), carved when a
//! class has no free slot and given back to the heap, which coalesces them, when their last
//! slot is freed, with one exception for hysteresis: a slab that empties while it is the only
//! slab of its class with a free slot is kept. So a class oscillating around one slot, or
//! around a slab boundary, does not carve and release a slab on every call; at most one empty
//! slab per class is kept, and [`FrontHeap::trim`] gives those back too. When no slab can be
//! carved, a small request is served by the heap directly, so a request the heap's largest
//! free block can hold never fails, and a failed request changes nothing.
//!
//! **Costs.** Allocate: class, list head, pop, live count, tag bit, and an unlink when the
//! slab fills. Free: tag load, slab address, push, live count, tag bit, and a relink when the
//! slab was full or a release when it empties. Realloc stays in place while the new size fits
//! the slot, and otherwise moves to another class or to a heap block.
//!
//! Invariants (beyond those of `front/slab.rs` and [`Heap`], verified by
//! [`FrontHeap::check`]):
//! - `partial[c]` heads the list of slabs of class `c` with a free slot; every such slab is in
//!   it, and only such slabs.
//! - `slabs` is the number of slabs (live heap blocks sealed as slabs).
//! - Statistics are the heap's: a slab counts as in use, whole, while it is held.

mod check;
mod slab;
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

/// A [`Heap`] with a small-object front: requests of up to [`FrontHeap::MAX_SMALL`] bytes at
/// alignment up to the granule take a slot of their size class (one class per 16 B) from
/// a slab, a heap block of about 1 KiB; a malloc is a pop from the class's list, a free a push.
///
/// Slots are **tagged, not headerless**: each has a one-word tag in front (with
/// [`crate::EMBEDDER_TAG`] set and its offset in its slab), so `free` needs no size and tells
/// a slot from a heap block with one load, at the heap's own overhead of one word per block.
/// A slab goes back to the heap when its last slot is freed, unless it is the only slab of
/// its class with a free slot (hysteresis: at most one empty slab per class is kept;
/// [`FrontHeap::trim`] returns those). Statistics are the heap's, in which a held slab counts
/// as in use. `INTERNALS.md` has the layout and the measured costs.
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
    /// Per class, the slabs with a free slot.
    partial: [*mut Slab; CLASSES],
    /// Slabs held.
    slabs: usize,
}

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

    /// The bytes the block at `ptr` can hold (at least what was asked for). Like
    /// [`Heap::usable_size`], it needs no heap.
    ///
    /// # Safety
    /// `ptr` is a live block of some `FrontHeap`.
    pub unsafe fn usable_size(ptr: NonNull<u8>) -> usize {
        // SAFETY: a live block has a header or a tag in front; a tag leads to its slab.
        unsafe {
            let tag = slab::tag_of(ptr);
            if tag & TAG == 0 {
                return Heap::usable_size(ptr);
            }
            let class = slab::class_in(slab::slab_of(ptr, tag).as_ref().seal);
            slab::stride(class) - WORD
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
            partial: [null_mut(); CLASSES],
            slabs: 0,
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
    #[inline]
    pub fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        if layout.size() > MAX_SMALL || layout.align() > GRANULE {
            return self.allocate_from_heap(layout);
        }
        let class = slab::class_of(layout.size());
        // SAFETY: `class_of` of a size up to `MAX_SMALL` is below `CLASSES`.
        let head = unsafe { *self.partial.get_unchecked(class) };
        match NonNull::new(head) {
            // SAFETY: a listed slab is a slab of this class with a free slot.
            Some(slab) => Ok(unsafe { self.pop(slab, class) }),
            None => self.allocate_refill(class, layout),
        }
    }

    /// A heap block for `layout`: out of line, so the slot path needs no registers saved.
    #[inline(never)]
    fn allocate_from_heap(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        self.heap.allocate(layout)
    }

    /// Takes the first free slot of `slab`, which heads the list of `class`.
    ///
    /// # Safety
    /// `slab` is the head of `partial[class]`.
    #[inline(always)]
    unsafe fn pop(&mut self, slab: NonNull<Slab>, class: usize) -> NonNull<u8> {
        // SAFETY: a listed slab has a free slot, whose first word links the next one.
        unsafe {
            let header = slab.as_ptr();
            let slot = NonNull::new_unchecked((*header).free);
            (*header).free = slab::next_free(slot);
            (*header).live += 1;
            slab::set_tag(slot, slab::tag_of(slot) | LIVE);
            if (*header).free.is_null() {
                self.pop_head(slab, class);
            }
            slot
        }
    }

    /// Carves a new slab for `class` and takes its first slot; when the heap has no room for a
    /// slab, serves `layout` from the heap directly.
    #[inline(never)]
    fn allocate_refill(&mut self, class: usize, layout: Layout) -> Result<NonNull<u8>, AllocError> {
        let bytes = slab::slab_bytes(class);
        // SAFETY: `bytes` is a few KiB at most and GRANULE a power of two.
        let slab_layout = unsafe { Layout::from_size_align_unchecked(bytes, GRANULE) };
        let Ok(block) = self.heap.allocate(slab_layout) else {
            return self.heap.allocate(layout);
        };
        // SAFETY: `block` is a fresh heap block of at least `bytes` bytes, owned by the front;
        // once carved and linked it heads the list of `class`.
        unsafe {
            let slab = slab::carve(block, Heap::usable_size(block), class);
            self.slabs += 1;
            self.push(slab, class);
            Ok(self.pop(slab, class))
        }
    }

    /// Links `slab` at the head of the list of `class`.
    ///
    /// # Safety
    /// `slab` is a slab of `class` in no list.
    #[inline(always)]
    unsafe fn push(&mut self, slab: NonNull<Slab>, class: usize) {
        let Some(head) = self.partial.get_mut(class) else {
            return;
        };
        // SAFETY: `slab` and the old head are slabs of this front.
        unsafe {
            let header = slab.as_ptr();
            (*header).prev = null_mut();
            (*header).next = *head;
            if let Some(old) = NonNull::new(*head) {
                (*old.as_ptr()).prev = slab.as_ptr();
            }
        }
        *head = slab.as_ptr();
    }

    /// Takes `slab`, the head of the list of `class`, out of it.
    ///
    /// # Safety
    /// `slab` heads the list of `class`.
    #[inline(always)]
    unsafe fn pop_head(&mut self, slab: NonNull<Slab>, class: usize) {
        // SAFETY: the head and the slab after it are slabs of this front.
        unsafe {
            let next = (*slab.as_ptr()).next;
            *self.partial.get_unchecked_mut(class) = next;
            if let Some(next) = NonNull::new(next) {
                (*next.as_ptr()).prev = null_mut();
            }
        }
    }

    /// Takes `slab` out of the list of `class`.
    ///
    /// # Safety
    /// `slab` is in the list of `class`.
    unsafe fn unlink(&mut self, slab: NonNull<Slab>, class: usize) {
        // SAFETY: listed slabs and their neighbours are slabs of this front.
        unsafe {
            let header = slab.as_ptr();
            match NonNull::new((*header).prev) {
                Some(prev) => (*prev.as_ptr()).next = (*header).next,
                None => {
                    if let Some(head) = self.partial.get_mut(class) {
                        *head = (*header).next;
                    }
                }
            }
            if let Some(next) = NonNull::new((*header).next) {
                (*next.as_ptr()).prev = (*header).prev;
            }
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
        // SAFETY: a live block has a header or a tag in front.
        unsafe {
            let tag = slab::tag_of(ptr);
            if tag & TAG == 0 {
                self.free_heap_block(ptr);
            } else {
                self.release_slot(ptr, tag);
            }
        }
    }

    /// Frees a heap block: out of line, so the slot path needs no registers saved.
    ///
    /// # Safety
    /// `ptr` is a live heap block of this front.
    #[inline(never)]
    unsafe fn free_heap_block(&mut self, ptr: NonNull<u8>) {
        // SAFETY: forwarded from the caller.
        unsafe { self.heap.free(ptr) }
    }

    /// Puts the live slot at `ptr` back on its slab's list.
    ///
    /// # Safety
    /// `ptr` is a live slot of this front and `tag` its tag.
    #[inline(always)]
    unsafe fn release_slot(&mut self, ptr: NonNull<u8>, tag: usize) {
        // SAFETY: the tag leads to the slot's slab, a live block of the heap.
        unsafe {
            slab::set_tag(ptr, tag & !LIVE);
            let slab = slab::slab_of(ptr, tag);
            let header = slab.as_ptr();
            let was_full = (*header).free.is_null();
            slab::set_next_free(ptr, (*header).free);
            (*header).free = ptr.as_ptr();
            (*header).live -= 1;
            if was_full {
                self.push(slab, slab::class_in((*header).seal));
            }
            if (*header).live == 0 && !((*header).prev.is_null() && (*header).next.is_null()) {
                self.release_slab(slab);
            }
        }
    }

    /// Gives an empty slab back to the heap.
    ///
    /// # Safety
    /// `slab` is an empty slab of this front, in its class's list.
    #[inline(never)]
    unsafe fn release_slab(&mut self, slab: NonNull<Slab>) {
        // SAFETY: the slab is a listed slab and a live heap block, unused once unlinked.
        unsafe {
            self.unlink(slab, slab::class_in((*slab.as_ptr()).seal));
            self.slabs -= 1;
            self.heap.free(slab.cast());
        }
    }

    /// Gives every empty slab back to the heap (the hysteresis keeps one per class).
    pub fn trim(&mut self) {
        for class in 0..CLASSES {
            let mut cursor = self.partial.get(class).copied().unwrap_or(null_mut());
            while let Some(slab) = NonNull::new(cursor) {
                // SAFETY: listed slabs are slabs of this front; the next one is read before
                // this one is released.
                unsafe {
                    cursor = (*slab.as_ptr()).next;
                    if (*slab.as_ptr()).live == 0 {
                        self.release_slab(slab);
                    }
                }
            }
        }
    }

    /// Resizes a block to `new_size` bytes, keeping its alignment and contents.
    ///
    /// A slot stays in place while `new_size` fits it; otherwise the block moves to a slot of
    /// another class or to a heap block. A heap block is resized as [`Heap::realloc`] does. On
    /// failure the old block is untouched.
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
                return self.heap.resize_or_misuse(ptr, old, new);
            }
            let fits = new.size() <= FrontHeap::usable_size(ptr)
                && ptr.as_ptr().addr() & (new.align() - 1) == 0;
            if fits {
                return Ok(Ok(ptr));
            }
            let Ok(moved) = self.allocate(new) else {
                return Ok(Err(AllocError));
            };
            let keep = old.size().min(new.size());
            core::ptr::copy_nonoverlapping(ptr.as_ptr(), moved.as_ptr(), keep);
            self.release_slot(ptr, tag);
            Ok(Ok(moved))
        }
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
    /// block as [`Heap::validate`] checks it (and not a slab itself), a slot by its tag (live,
    /// on its slab's slot grid) and its slab (a live heap block sealed as a slab). A slot freed
    /// twice is a [`Misuse::DoubleFree`] while its slab is held; once the slab went back to the
    /// heap, the address is [`Misuse::Foreign`].
    pub fn validate(&self, ptr: NonNull<u8>) -> Result<(), Misuse> {
        let addr = ptr.as_ptr().addr();
        let foreign = Misuse::Foreign { addr };
        if !addr.is_multiple_of(GRANULE) || self.heap.region_holding(addr).is_none() {
            return Err(foreign);
        }
        // SAFETY: `ptr` lies inside a region after its first chunk's header, so the word
        // before it is readable.
        let tag = unsafe { slab::tag_of(ptr) };
        if tag & TAG == 0 {
            self.heap.validate(ptr)?;
            // SAFETY: `ptr` is a live heap block.
            return match unsafe { self.slab_at(ptr) } {
                Some(_) => Err(foreign),
                None => Ok(()),
            };
        }
        let offset = slab::offset_in(tag);
        let stray = tag & (GRANULE - 1) & !(TAG | LIVE);
        if stray != 0 || offset < FIRST_SLOT || offset > addr {
            return Err(foreign);
        }
        // SAFETY: the offset stays inside the region: it is at most `addr` less the region's
        // start, checked next, before anything there is read.
        let candidate = unsafe { ptr.byte_sub(offset) };
        if self
            .heap
            .region_holding(candidate.as_ptr().addr())
            .is_none()
            || self.heap.validate(candidate).is_err()
        {
            return Err(foreign);
        }
        // SAFETY: `candidate` is a live heap block.
        let Some(class) = (unsafe { self.slab_at(candidate) }) else {
            return Err(foreign);
        };
        // SAFETY: as above.
        let usable = unsafe { Heap::usable_size(candidate) };
        let stride = slab::stride(class);
        let on_grid = (offset - FIRST_SLOT).is_multiple_of(stride)
            && offset - WORD + stride <= HEADER + slab::capacity(usable, class) * stride;
        if !on_grid {
            return Err(foreign);
        }
        if tag & LIVE == 0 {
            return Err(Misuse::DoubleFree { addr });
        }
        Ok(())
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
            let class = slab::class_in(seal);
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
