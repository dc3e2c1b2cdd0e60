//! The front's checker: the heap's own check, then every slab (found by walking the heap's
//! chunks, so a full slab, which is in no list, is verified too) and every class list.
//!
//! What it verifies, after [`Heap::check`] passed (the first violation is returned, as a
//! [`CorruptionKind::BadSlab`] at the slab's header, or at the slot or list entry at fault):
//! 1. Each slab (a live heap block sealed as one): every slot's tag is its offset with
//!    `EMBEDDER_TAG`, and `LIVE` or not; as many slots are live as its `live` count says; its
//!    free list holds exactly the other slots (each inside the slab, on the slot grid, not
//!    live; the walk is bounded by the free count, so a ring ends it).
//! 2. Each class list: every entry a slab of its class with a free slot, its `prev` the entry
//!    before (null at the head); as many entries in all lists as slabs with a free slot (with
//!    1., every such slab is listed exactly once).
//! 3. The number of slabs found is the front's count.
//!
//! O(chunks + slots) on a sound heap. It trusts nothing it reads: slab sizes come from the
//! checked heap, list walks are bounded, and list entries are validated as live heap blocks
//! before they are read.

use core::ptr::{self, NonNull};

use super::slab::{self, Slab, FIRST_SLOT, LIVE, TAG};
use super::FrontHeap;
use crate::chunk::{Chunk, WORD};
use crate::error::{Corruption, CorruptionKind};
use crate::index::{fault, FreeIndex};
use crate::Heap;

/// What the walk of all slabs found.
#[derive(Default)]
struct Found {
    slabs: usize,
    /// Slabs with a free slot.
    partial: usize,
}

fn bad_slab<T>(addr: usize) -> Result<T, Corruption> {
    fault(addr, CorruptionKind::BadSlab)
}

impl<I: FreeIndex> FrontHeap<I> {
    /// Verifies the heap ([`Heap::check`]), every slab and every class list of the front, and
    /// returns the first violation found (see [`Corruption`]). O(chunks + slots).
    pub fn check(&self) -> Result<(), Corruption> {
        self.heap.check()?;
        let mut found = Found::default();
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
        let listed = self.check_lists(found.partial)?;
        if listed != found.partial || found.slabs != self.slabs {
            return bad_slab(ptr::from_ref(&self.partial).addr());
        }
        Ok(())
    }

    /// Checks the live heap block at `block` if it is a slab.
    ///
    /// # Safety
    /// `block` is a live block of the checked heap.
    unsafe fn check_block(&self, block: NonNull<u8>, found: &mut Found) -> Result<(), Corruption> {
        // SAFETY: forwarded from the caller.
        let Some(class) = (unsafe { self.slab_at(block) }) else {
            return Ok(());
        };
        found.slabs += 1;
        // SAFETY: the block is a slab: its header and its slots lie inside it.
        unsafe {
            let capacity = slab::capacity(Heap::usable_size(block), class);
            let header = &*block.cast::<Slab>().as_ptr();
            let live = check_tags(block, class, capacity)?;
            if live != header.live {
                return bad_slab(block.as_ptr().addr());
            }
            check_free_list(block, class, capacity, capacity - live)?;
            if live < capacity {
                found.partial += 1;
            }
        }
        Ok(())
    }

    /// Walks every class list (bounded by `partial` entries in all) and returns how many
    /// entries they hold.
    fn check_lists(&self, partial: usize) -> Result<usize, Corruption> {
        let mut listed = 0;
        for (class, &head) in self.partial.iter().enumerate() {
            let mut prev: *mut Slab = ptr::null_mut();
            let mut cursor = head;
            while let Some(entry) = NonNull::new(cursor) {
                let addr = entry.as_ptr().addr();
                listed += 1;
                if listed > partial || self.heap.validate(entry.cast()).is_err() {
                    return bad_slab(addr);
                }
                // SAFETY: `entry` is a live heap block; it is read as a slab only once sealed.
                unsafe {
                    if self.slab_at(entry.cast()) != Some(class) {
                        return bad_slab(addr);
                    }
                    let header = &*entry.as_ptr();
                    if header.prev != prev || header.free.is_null() {
                        return bad_slab(addr);
                    }
                    prev = entry.as_ptr();
                    cursor = header.next;
                }
            }
        }
        Ok(listed)
    }
}

/// Checks every slot's tag of the slab at `block` and returns how many are live.
///
/// # Safety
/// `block` is a slab of `class` holding `capacity` slots.
unsafe fn check_tags(
    block: NonNull<u8>,
    class: usize,
    capacity: usize,
) -> Result<usize, Corruption> {
    let mut live = 0;
    for k in 0..capacity {
        let offset = FIRST_SLOT + k * slab::stride(class);
        // SAFETY: slot `k` lies inside the slab.
        let (slot, tag) = unsafe {
            let slot = block.byte_add(offset);
            (slot, slab::tag_of(slot))
        };
        if tag & !LIVE != slab::tag(offset, false) {
            return bad_slab(slot.as_ptr().addr() - WORD);
        }
        live += tag & LIVE;
    }
    Ok(live)
}

/// Checks that the free list of the slab at `block` holds exactly `free` slots, each inside the
/// slab, on its grid and not live.
///
/// # Safety
/// `block` is a slab of `class` holding `capacity` slots.
unsafe fn check_free_list(
    block: NonNull<u8>,
    class: usize,
    capacity: usize,
    free: usize,
) -> Result<(), Corruption> {
    let start = block.as_ptr().addr();
    let stride = slab::stride(class);
    // SAFETY: the header is the slab's first words.
    let mut cursor = unsafe { (*block.cast::<Slab>().as_ptr()).free };
    for _ in 0..free {
        let Some(slot) = NonNull::new(cursor) else {
            return bad_slab(start);
        };
        let offset = slot.as_ptr().addr().wrapping_sub(start);
        let on_grid = offset >= FIRST_SLOT
            && (offset - FIRST_SLOT).is_multiple_of(stride)
            && (offset - FIRST_SLOT) / stride < capacity;
        if !on_grid {
            return bad_slab(start);
        }
        // SAFETY: `slot` is one of the slab's slots (on its grid, inside it).
        unsafe {
            if slab::tag_of(slot) & (LIVE | TAG) != TAG {
                return bad_slab(slot.as_ptr().addr());
            }
            cursor = slab::next_free(slot);
        }
    }
    if !cursor.is_null() {
        return bad_slab(start);
    }
    Ok(())
}
