//! The slab format of the small-object front: size classes, the slab header, slot tags.
//!
//! A slab is one allocated heap block whose payload holds a header and then equal slots:
//!
//! ```text
//! heap header | slab header (3 words)  | slot 0          | slot 1          | …
//!   (in use)  | next | scratch | seal   | tag | payload … | tag | payload … |
//!             ^ P                             ^ P + FIRST_SLOT
//! ```
//!
//! Invariants (verified by [`crate::FrontHeap::check`]):
//! - A slot is `stride(class)` bytes: a one-word *tag*, then a payload that is
//!   `GRANULE`-aligned (the header is `≡ WORD (mod GRANULE)` bytes long, as a heap header
//!   sits `≡ WORD (mod GRANULE)`). Slot `k`'s payload is at `P + FIRST_SLOT + k · stride`.
//! - A tag is `class << CLASS_SHIFT | offset | EMBEDDER_TAG`, plus `LIVE` while the slot is
//!   handed out in checked builds (release builds never write a tag after carving it), where
//!   `offset` is the distance from `P` to the slot's payload (a multiple of `GRANULE` below
//!   `1 << CLASS_SHIFT`, so the low bits are free). The heap never sets `EMBEDDER_TAG` in a
//!   block's header, so one load tells a slot from a heap block and names its class; the
//!   offset leads from a slot to its slab without a table.
//! - `seal` is [`seal`] of `P` and the class: it names the block a slab (a user block holding
//!   that exact word at that place would be taken for one: the odds are those of a random
//!   word matching, and only checked builds and the checker look).
//! - `next` links the slabs of a class (null-ended); `scratch` means nothing outside
//!   [`crate::FrontHeap::trim`], which counts a slab's free slots in it.
//! - A slab's slots are never written by the front after carving except through the free
//!   list threaded through the first payload word of free slots (and the `LIVE` bit of checked
//!   builds): a slot handed out is read (its link) but not written, so on Gear the page of a
//!   reused slot costs the allocator a read at most, and the program that fills it pays for
//!   dirtying it.

use core::mem::size_of;
use core::ptr::NonNull;

use crate::chunk::{EMBEDDER_TAG, GRANULE, IN_USE, SIZE_MASK, WORD};

/// The largest request the front serves (payload bytes): 256 B; with `--cfg
/// heapworks_small_state` 256 B less the tag, so that the largest slot is 256 B and the classes
/// fit in 16 cache counts (the state within 512 B on wasm32 too, whose `u64`s align to 8 B).
pub(crate) const MAX_SMALL: usize = if cfg!(heapworks_small_state) {
    256 - WORD
} else {
    256
};
/// The spacing of slot sizes: 16 B on every target (a granule on 64-bit targets, two on
/// 32-bit ones, where one class per granule would make 33 classes, and as many slabs touched).
pub(crate) const SPACING: usize = 16;
const SPACING_SHIFT: u32 = SPACING.trailing_zeros();
/// The number of size classes: one per `SPACING` of slot size, up to `MAX_SMALL` bytes of
/// payload.
pub(crate) const CLASSES: usize = (MAX_SMALL + WORD + SPACING - 1) >> SPACING_SHIFT;
/// Slot bytes a new slab aims at (the last class gets `MIN_SLOTS` slots, a little more).
const SLAB_BYTES: usize = 1024;
/// The fewest slots a slab holds.
const MIN_SLOTS: usize = 4;
/// Set in a tag while its slot is handed out, in checked builds only.
pub(crate) const LIVE: usize = IN_USE;
/// Set in every tag: what tells a slot from a heap block.
pub(crate) const TAG: usize = EMBEDDER_TAG;
/// Where a tag keeps the slot's class: above every offset a slab can hold.
const CLASS_SHIFT: u32 = 16;
/// The bits of a tag below the class: the offset and the flags.
const OFFSET_BITS: usize = (1 << CLASS_SHIFT) - 1;
/// Mixed into a slab's address to make its seal.
const SEAL: usize = 0x9E37_79B9_7F4A_7C15_u64 as usize;
/// The bits of the seal word that hold the class.
const CLASS_BITS: usize = 0xFF;

/// The header at the start of a slab's payload.
#[repr(C)]
pub(crate) struct Slab {
    /// The next slab of the class, or null.
    pub(crate) next: *mut Slab,
    /// Free slots, while [`crate::FrontHeap::trim`] counts them; meaningless otherwise.
    pub(crate) scratch: usize,
    /// [`seal`] of the slab's address and class.
    pub(crate) seal: usize,
}

/// Bytes of the slab header.
pub(crate) const HEADER: usize = size_of::<Slab>();
/// The offset of slot 0's payload from the slab header.
pub(crate) const FIRST_SLOT: usize = HEADER + WORD;
const _: () = assert!(
    HEADER % GRANULE == WORD
        && CLASSES <= CLASS_BITS
        && SPACING.is_multiple_of(GRANULE)
        && slab_bytes(CLASSES - 1) + GRANULE <= OFFSET_BITS
);

/// The class of a request of `size <= MAX_SMALL` bytes at alignment up to `GRANULE`: its slot
/// is the heap chunk it would get, rounded to granules, but with no 32 B minimum. Any other
/// size gets some number.
#[inline(always)]
pub(crate) const fn class_of(size: usize) -> usize {
    // Wrapping, so that any size has a number (meaningless above `MAX_SMALL`) without a
    // panic path.
    (size.wrapping_add(WORD + SPACING - 1) >> SPACING_SHIFT).wrapping_sub(1)
}

/// Bytes of one slot of `class`, tag included.
#[inline(always)]
pub(crate) const fn stride(class: usize) -> usize {
    (class + 1) * SPACING
}

/// The payload bytes a new slab of `class` asks the heap for.
pub(crate) const fn slab_bytes(class: usize) -> usize {
    let stride = stride(class);
    let slots = if SLAB_BYTES / stride > MIN_SLOTS {
        SLAB_BYTES / stride
    } else {
        MIN_SLOTS
    };
    HEADER + slots * stride
}

/// The slots a slab whose block has `usable` payload bytes holds.
#[inline]
pub(crate) const fn capacity(usable: usize, class: usize) -> usize {
    // A checked division: the divisor is never zero, but saying so costs the compiler a proof
    // it cannot make, and the check has no panic path.
    match usable.saturating_sub(HEADER).checked_div(stride(class)) {
        Some(slots) => slots,
        None => 0,
    }
}

/// The word that marks the block at `slab` a slab of `class`.
#[inline(always)]
pub(crate) fn seal(slab: *const Slab, class: usize) -> usize {
    ((slab.addr() ^ SEAL) << 8) | class
}

/// The class a seal names (meaningful once the seal is verified).
#[inline(always)]
pub(crate) const fn class_in_seal(seal: usize) -> usize {
    seal & CLASS_BITS
}

/// The tag of the slot of `class` whose payload is `offset` bytes into its slab, not live.
#[inline(always)]
pub(crate) const fn tag(class: usize, offset: usize) -> usize {
    (class << CLASS_SHIFT) | offset | TAG
}

/// The offset a tag holds.
#[inline(always)]
pub(crate) const fn offset_in(tag: usize) -> usize {
    tag & OFFSET_BITS & SIZE_MASK
}

/// The class a tag names.
#[inline(always)]
pub(crate) const fn class_in(tag: usize) -> usize {
    tag >> CLASS_SHIFT
}

/// The word in front of a block's payload: a heap header or a slot tag.
///
/// # Safety
/// `ptr` is a payload of a heap block or a slot (the word before it is readable).
#[inline(always)]
pub(crate) unsafe fn tag_of(ptr: NonNull<u8>) -> usize {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.cast::<usize>().sub(1).read() }
}

/// # Safety
/// As for [`tag_of`].
#[inline(always)]
pub(crate) unsafe fn set_tag(ptr: NonNull<u8>, tag: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { ptr.cast::<usize>().sub(1).write(tag) }
}

/// The slab that holds the slot at `ptr`, whose tag is `tag`.
///
/// # Safety
/// `ptr` is a slot's payload and `tag` its tag.
#[inline(always)]
pub(crate) unsafe fn slab_of(ptr: NonNull<u8>, tag: usize) -> NonNull<Slab> {
    // SAFETY: the tag's offset leads back to the slab header, inside the same block.
    unsafe { ptr.byte_sub(offset_in(tag)).cast() }
}

/// The next free slot after the free slot `slot` (null at the end of the list).
///
/// # Safety
/// `slot` is a free slot.
#[inline(always)]
pub(crate) unsafe fn next_free(slot: NonNull<u8>) -> *mut u8 {
    // SAFETY: a free slot keeps the link in its first payload word.
    unsafe { slot.cast::<*mut u8>().read() }
}

/// # Safety
/// `slot` is a slot's payload.
#[inline(always)]
pub(crate) unsafe fn set_next_free(slot: NonNull<u8>, next: *mut u8) {
    // SAFETY: every payload holds at least one word.
    unsafe { slot.cast::<*mut u8>().write(next) }
}

/// The payload of slot `k` of the slab at `slab`, of `class`.
///
/// # Safety
/// Slot `k` lies inside the slab.
#[inline(always)]
pub(crate) unsafe fn slot(slab: NonNull<Slab>, class: usize, k: usize) -> NonNull<u8> {
    // SAFETY: forwarded from the caller.
    unsafe { slab.cast::<u8>().byte_add(FIRST_SLOT + k * stride(class)) }
}

/// Makes the block at `block`, of `usable` payload bytes, a slab of `class` linked before
/// `next`, its slots tagged and threaded in address order in front of `rest` (so the first
/// slots handed out are the lowest). Returns the slab and its first slot.
///
/// # Safety
/// `block` is an allocated heap block of `usable >= slab_bytes(class)` bytes, owned by the caller.
pub(crate) unsafe fn carve(
    block: NonNull<u8>,
    usable: usize,
    class: usize,
    next: *mut Slab,
    rest: *mut u8,
) -> (NonNull<Slab>, NonNull<u8>) {
    let slab = block.cast::<Slab>();
    // SAFETY: every slot lies inside the block (`capacity`); the header is its first words.
    unsafe {
        let mut link = rest;
        for k in (0..capacity(usable, class)).rev() {
            let slot = slot(slab, class, k);
            set_tag(slot, tag(class, FIRST_SLOT + k * stride(class)));
            set_next_free(slot, link);
            link = slot.as_ptr();
        }
        slab.write(Slab {
            next,
            scratch: 0,
            seal: seal(slab.as_ptr(), class),
        });
        (slab, slot(slab, class, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_sixteen_bytes_apart_and_cover_every_small_size() {
        assert_eq!(class_of(0), 0);
        assert_eq!(class_of(SPACING - WORD), 0);
        assert_eq!(class_of(SPACING - WORD + 1), 1);
        assert_eq!(class_of(MAX_SMALL), CLASSES - 1);
        for size in 0..=MAX_SMALL {
            let class = class_of(size);
            assert!(stride(class) - WORD >= size, "slot too small for {size}");
            assert!(
                class == 0 || stride(class - 1) - WORD < size,
                "class too large"
            );
        }
    }

    #[test]
    fn slabs_hold_at_least_the_minimum_and_about_a_kilobyte() {
        for class in 0..CLASSES {
            let bytes = slab_bytes(class);
            assert!(capacity(bytes, class) >= MIN_SLOTS);
            assert!(bytes <= HEADER + SLAB_BYTES.max(MIN_SLOTS * stride(class)));
        }
    }

    #[test]
    fn tags_keep_the_class_and_offset_and_never_look_like_a_heap_header() {
        for class in [0, 2, CLASSES - 1] {
            let offset = FIRST_SLOT + 3 * stride(class);
            assert_eq!(offset % GRANULE, 0);
            let t = tag(class, offset);
            assert_eq!(offset_in(t), offset);
            assert_eq!(offset_in(t | LIVE), offset);
            assert_eq!(class_in(t | LIVE), class);
            assert_ne!(t & TAG, 0);
            assert_eq!(t & LIVE, 0);
        }
    }
}
