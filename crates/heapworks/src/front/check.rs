//! The front's checker: the heap's own check, then every slab (found by walking the heap's
//! chunks and the carved static slabs, so a slab missing from its class's list is found too)
//! and every class's lists.
//!
//! What it verifies, after [`Heap::check`] passed (the first violation is returned, as a
//! [`CorruptionKind::BadSlab`] at the slab's header, or at the slot or list entry at fault):
//! 1. Each slab (a live heap block sealed as one): every slot's tag is its class and offset
//!    with `EMBEDDER_TAG`, and `LIVE` or not (checked builds only; release builds never set
//!    it).
//! 2. Each class's slab list: every entry a slab of its class (bounded by the slabs the heap
//!    walk found, so a ring ends it); as many entries in all lists as slabs found.
//! 3. Each class's cache and free list: every entry a slot of a slab of its class, not live
//!    (in checked builds), the walk bounded by the class's slots (so a ring is caught); in
//!    checked builds the slots neither cached nor listed are exactly those whose tags are live
//!    (so a slot cached or listed twice is caught too).
//!
//! O(chunks + slots) on a sound heap. It trusts nothing it reads: slab sizes come from the
//! checked heap, list walks are bounded, and list entries are validated as live heap blocks
//! or slots of one before they are read.

use core::ptr::{self, NonNull};

use super::slab::{self, CLASSES, LIVE};
use super::FrontHeap;
use crate::chunk::{Chunk, WORD};
use crate::error::{Corruption, CorruptionKind};
use crate::heap::CHECKED;
use crate::index::{fault, FreeIndex};
use crate::Heap;

/// What the walk of all slabs found, per class.
#[derive(Default, Clone, Copy)]
struct Tally {
    slabs: usize,
    /// Slots in all the class's slabs.
    slots: usize,
    /// Slots whose tags say live (checked builds).
    live: usize,
}

fn bad_slab<T>(addr: usize) -> Result<T, Corruption> {
    fault(addr, CorruptionKind::BadSlab)
}

impl<I: FreeIndex> FrontHeap<I> {
    /// Verifies the heap ([`Heap::check`]), every slab and every class's lists of the front,
    /// and returns the first violation found (see [`Corruption`]). O(chunks + slots).
    pub fn check(&self) -> Result<(), Corruption> {
        self.heap.check()?;
        let mut found = [Tally::default(); CLASSES];
        for record in self.heap.regions() {
            // SAFETY: the heap's check passed, so its regions' chunks may be walked: the record
            // is the payload of its record chunk, every size leads to the next chunk and the
            // walk ends at the sentinel.
            unsafe {
                let sentinel = record.as_ref().sentinel;
                let mut chunk = Chunk::from_payload(record.cast()).next();
                while chunk != sentinel {
                    if chunk.is_in_use() {
                        self.check_block(chunk.payload(), &mut found)?;
                    }
                    chunk = chunk.next();
                }
            }
        }
        for (class, slab, usable) in self.statics.carved() {
            // SAFETY: a carved static slab lies in the area, which the front owns.
            unsafe { self.tally_slab(slab.cast(), class, usable, &mut found)? };
        }
        for (class, tally) in found.iter().enumerate() {
            self.check_slab_list(class, tally.slabs)?;
            self.check_free_list(class, tally)?;
        }
        Ok(())
    }

    /// Checks the live heap block at `block` if it is a slab, and counts it.
    ///
    /// # Safety
    /// `block` is a live block of the checked heap.
    unsafe fn check_block(
        &self,
        block: NonNull<u8>,
        found: &mut [Tally; CLASSES],
    ) -> Result<(), Corruption> {
        // SAFETY: forwarded from the caller.
        let Some(class) = (unsafe { self.slab_at(block) }) else {
            return Ok(());
        };
        // SAFETY: the block is a slab, a live heap block of these payload bytes.
        unsafe { self.tally_slab(block, class, Heap::usable_size(block), found) }
    }

    /// Checks the tags of the slab at `block`, of `class` and `usable` payload bytes, and
    /// counts it.
    ///
    /// # Safety
    /// `block` is a slab of `class` whose header and slots lie in its `usable` bytes.
    unsafe fn tally_slab(
        &self,
        block: NonNull<u8>,
        class: usize,
        usable: usize,
        found: &mut [Tally; CLASSES],
    ) -> Result<(), Corruption> {
        let capacity = slab::capacity(usable, class);
        let tally = &mut found[class];
        tally.slabs += 1;
        tally.slots += capacity;
        for k in 0..capacity {
            // SAFETY: slot `k` lies inside the slab.
            let (slot, tag) = unsafe {
                let slot = slab::slot(block.cast(), class, k);
                (slot, slab::tag_of(slot))
            };
            let expected = slab::tag(class, slot.as_ptr().addr() - block.as_ptr().addr());
            if tag & !LIVE != expected || (!CHECKED && tag & LIVE != 0) {
                return bad_slab(slot.as_ptr().addr() - WORD);
            }
            tally.live += tag & LIVE;
        }
        Ok(())
    }

    /// Walks the slab list of `class`, which must hold exactly the `slabs` slabs of the class
    /// the heap walk found (each entry is validated as such before it is read).
    fn check_slab_list(&self, class: usize, slabs: usize) -> Result<(), Corruption> {
        let mut listed = 0;
        let mut cursor = self.slabs[class];
        while let Some(entry) = NonNull::new(cursor) {
            let addr = entry.as_ptr().addr();
            listed += 1;
            if listed > slabs {
                return bad_slab(addr);
            }
            if self.statics.usable(entry, class).is_none() {
                if self.heap.validate(entry.cast()).is_err() {
                    return bad_slab(addr);
                }
                // SAFETY: `entry` is a live heap block; it is read as a slab only once sealed.
                if unsafe { self.slab_at(entry.cast()) } != Some(class) {
                    return bad_slab(addr);
                }
            }
            // SAFETY: `entry` is a slab of the class (a static one, or sealed and live).
            cursor = unsafe { (*entry.as_ptr()).next };
        }
        if listed != slabs {
            return bad_slab(ptr::from_ref(&self.slabs[class]).addr());
        }
        Ok(())
    }

    /// Checks that `slot` is a free slot of `class` (validated before anything there is read).
    fn check_free_slot(&self, slot: NonNull<u8>, class: usize) -> Result<(), Corruption> {
        let addr = slot.as_ptr().addr();
        let in_static = self.statics.holds(addr.wrapping_sub(WORD));
        if !in_static && self.heap.region_holding(addr).is_none() {
            return bad_slab(addr);
        }
        // SAFETY: `slot` lies inside a region after its first chunk's header, so the word
        // before it is readable.
        let tag = unsafe { slab::tag_of(slot) };
        let on_slab = self.slab_of_tagged(slot, tag).map(|(c, _)| c) == Some(class);
        if !on_slab || tag & LIVE != 0 {
            return bad_slab(addr);
        }
        Ok(())
    }

    /// Walks the cache and the free list of `class`, whose slabs hold the slots `tally`
    /// counted.
    fn check_free_list(&self, class: usize, tally: &Tally) -> Result<(), Corruption> {
        let cached = usize::from(self.cached[class]);
        let cache = self.cache[class].get(..cached);
        let Some(cache) = cache.filter(|cache| cache.len() <= tally.slots) else {
            return bad_slab(ptr::from_ref(&self.cached[class]).addr());
        };
        for &slot in cache {
            let Some(slot) = NonNull::new(slot) else {
                return bad_slab(ptr::from_ref(&self.cache[class]).addr());
            };
            self.check_free_slot(slot, class)?;
        }
        let mut free = cached;
        let mut cursor = self.free[class];
        while let Some(slot) = NonNull::new(cursor) {
            free += 1;
            if free > tally.slots {
                return bad_slab(slot.as_ptr().addr());
            }
            self.check_free_slot(slot, class)?;
            // SAFETY: `slot` is a free slot of the class, holding its link.
            cursor = unsafe { slab::next_free(slot) };
        }
        if CHECKED && tally.slots - free != tally.live {
            return bad_slab(ptr::from_ref(&self.free[class]).addr());
        }
        Ok(())
    }
}

/// The number of slabs the front holds (for tests).
#[cfg(test)]
pub(super) fn slab_count<I: FreeIndex>(front: &FrontHeap<I>) -> usize {
    front
        .slabs
        .iter()
        .map(|&head| {
            core::iter::successors(NonNull::new(head), |slab: &NonNull<slab::Slab>| {
                // SAFETY: listed slabs are slabs of the front.
                NonNull::new(unsafe { (*slab.as_ptr()).next })
            })
            .count()
        })
        .sum()
}
