//! Which arena owns an address of the core heaps: a two-level map of [`GRANULE`]-byte granules
//! of the address space to arena numbers.
//!
//! Invariants: every reservation an arena's core heap makes is aligned to [`GRANULE`] and a
//! whole number of granules long, and is [`record`]ed before any block of it is handed out;
//! a granule's entry is the owning arena's number plus one (0: none of ours). Entries are
//! written once per reservation and cleared only when the reservation is given back (its
//! blocks are then gone), so a lookup needs no lock: two loads. The top level is a static
//! array of pointers to leaves (one per GiB); a leaf is a page mapped on first use (installed by
//! compare-and-swap) and never unmapped. Lookups of foreign pointers (the stack's, a global's) find 0, so `free` tells
//! them from blocks of ours exactly, not by a range.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use crate::os;

/// log2 of the bytes one entry covers.
pub(crate) const GRANULE_SHIFT: u32 = 21;
/// The bytes one entry covers (2 MiB, the core heaps' least commit).
pub(crate) const GRANULE: usize = 1 << GRANULE_SHIFT;
/// log2 of the bytes one leaf covers (1 GiB).
const LEAF_SHIFT: u32 = 30;
const LEAF_ENTRIES: usize = 1 << (LEAF_SHIFT - GRANULE_SHIFT);
/// User addresses on x86-64 lie below 2^47.
const LEAVES: usize = 1 << (47 - LEAF_SHIFT);

type Leaf = [AtomicU8; LEAF_ENTRIES];

static TOP: [AtomicPtr<Leaf>; LEAVES] = [const { AtomicPtr::new(core::ptr::null_mut()) }; LEAVES];

/// The arena owning the core-heap address `addr`, if any.
#[inline]
pub(crate) fn owner(addr: usize) -> Option<usize> {
    let leaf = TOP.get(addr >> LEAF_SHIFT)?.load(Ordering::Acquire);
    if leaf.is_null() {
        return None;
    }
    let entry = (addr >> GRANULE_SHIFT) & (LEAF_ENTRIES - 1);
    // SAFETY: a non-null leaf is a mapped page of entries that is never unmapped.
    let value = unsafe { (*leaf)[entry].load(Ordering::Relaxed) };
    (value as usize).checked_sub(1)
}

/// Records `[base, base + len)` (granule-aligned, whole granules) as owned by `arena` (`None`:
/// forgotten). Returns false when a leaf could not be mapped (the caller gives the range up).
pub(crate) fn record(base: usize, len: usize, arena: Option<usize>) -> bool {
    debug_assert!(base.is_multiple_of(GRANULE) && len.is_multiple_of(GRANULE));
    let value = arena.map_or(0, |arena| arena as u8 + 1);
    let mut at = base;
    while at < base + len {
        let Some(leaf) = leaf_for(at, arena.is_some()) else {
            return arena.is_none();
        };
        let entry = (at >> GRANULE_SHIFT) & (LEAF_ENTRIES - 1);
        // SAFETY: the leaf is mapped for good.
        unsafe { (*leaf.as_ptr())[entry].store(value, Ordering::Release) };
        at += GRANULE;
    }
    true
}

/// The leaf covering `addr`, mapped first if `create`.
fn leaf_for(addr: usize, create: bool) -> Option<NonNull<Leaf>> {
    let top = TOP.get(addr >> LEAF_SHIFT)?;
    if let Some(leaf) = NonNull::new(top.load(Ordering::Acquire)) {
        return Some(leaf);
    }
    if !create {
        return None;
    }
    const _: () = assert!(core::mem::size_of::<Leaf>() <= os::PAGE);
    // Installed by compare-and-swap (no lock, so nothing for `fork` to hold): a thread that
    // loses the race unmaps its page and takes the winner's.
    let page = os::map(os::PAGE)?.cast::<Leaf>();
    match top.compare_exchange(
        core::ptr::null_mut(),
        page.as_ptr(),
        Ordering::AcqRel,
        Ordering::Acquire,
    ) {
        Ok(_) => Some(page),
        Err(winner) => {
            // SAFETY: the page was just mapped and nobody else saw it.
            unsafe { os::unmap(page.cast(), os::PAGE) };
            NonNull::new(winner)
        }
    }
}
