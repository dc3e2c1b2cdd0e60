//! Static slabs: memory of a front's own (a `static` array beside the allocator, say) carved
//! into slabs of the classes a plan names, which a class takes before it asks the heap for its
//! first slab. They answer seed 000's question (Gear's allocator keeps a small static buffer of
//! cells in front of dlmalloc, and tried it removed, doubled, and split into several buffers of
//! 1–32-unit cells) as configurations of the front: a plan of `(request size, slots)` pairs is
//! such a buffer, in the front's own state's neighbourhood.
//!
//! Invariants:
//! - The plan's entries lie in the area in plan order, each at the next `GRANULE` boundary
//!   after the one before, as a slab header and its slots; an entry that does not fit, asks for
//!   a size above `MAX_SMALL` or no slot, or names a class an earlier entry named, is ignored.
//! - `carved` has bit `c` set exactly when the slab of class `c` was carved (and then it is in
//!   the front's slab list of `c`, whose slots it holds like any slab). Static slabs are never
//!   given to the heap: trim keeps them, and the heap's statistics do not count them.

use core::ptr::NonNull;

use super::slab::{self, Slab, CLASSES, HEADER, MAX_SMALL};
use crate::chunk::GRANULE;

/// A front's static area and its plan.
#[derive(Clone, Copy)]
pub(crate) struct StaticSlabs {
    /// The area's first byte (slabs start at the first `GRANULE` boundary from here).
    base: *mut u8,
    /// The area's bytes.
    len: usize,
    /// `(request size, slots)` per planned slab, in the area's order (an option, so that no
    /// plan is a null word: a `static` front stays all zeros, in `.bss`).
    plan: Option<&'static [(usize, usize)]>,
    /// Bit `c`: the static slab of class `c` is carved.
    carved: u32,
}

const _: () = assert!(CLASSES <= u32::BITS as usize);

impl StaticSlabs {
    /// No area.
    pub(crate) const NONE: StaticSlabs = StaticSlabs {
        base: core::ptr::null_mut(),
        len: 0,
        plan: None,
        carved: 0,
    };

    /// The area `[base, base + len)` under `plan`.
    ///
    /// # Safety
    /// The area is valid for reads and writes, and used by nothing else, for as long as the
    /// front that holds it lives (it is not part of the front, which may move).
    pub(crate) const unsafe fn new(
        base: *mut u8,
        len: usize,
        plan: &'static [(usize, usize)],
    ) -> Self {
        StaticSlabs {
            base,
            len,
            plan: Some(plan),
            carved: 0,
        }
    }

    /// The offset from `base` of the first `GRANULE` boundary, and the bytes from there.
    fn aligned(&self) -> (usize, usize) {
        let skip = self.base.addr().wrapping_neg() % GRANULE;
        (skip, self.len.saturating_sub(skip))
    }

    /// Whether `addr` lies in the area.
    #[inline]
    pub(crate) fn holds(&self, addr: usize) -> bool {
        addr.wrapping_sub(self.base.addr()) < self.len
    }

    /// The planned slab of `class`: its offset from `base` and payload bytes (header and
    /// slots), if the plan gives the class one that fits.
    fn planned(&self, class: usize) -> Option<(usize, usize)> {
        let (skip, room) = self.aligned();
        let mut offset = 0;
        let mut named = 0u32;
        for &(size, slots) in self.plan.unwrap_or(&[]) {
            let of = slab::class_of(size);
            if size > MAX_SMALL || slots == 0 || named & (1 << of) != 0 {
                continue;
            }
            named |= 1 << of;
            let bytes = slots.checked_mul(slab::stride(of))?.checked_add(HEADER)?;
            let end = offset + bytes;
            if end > room {
                continue;
            }
            if of == class {
                return Some((skip + offset, bytes));
            }
            offset = end.next_multiple_of(GRANULE);
        }
        None
    }

    /// The slab at `offset` from `base`.
    fn slab_at(&self, offset: usize) -> NonNull<u8> {
        // SAFETY: a planned slab lies inside the area, whose base is not null.
        unsafe { NonNull::new_unchecked(self.base.wrapping_add(offset)) }
    }

    /// Takes the static slab of `class`, if the plan has one not yet carved: its block and
    /// payload bytes, for [`slab::carve`].
    pub(crate) fn take(&mut self, class: usize) -> Option<(NonNull<u8>, usize)> {
        if class >= CLASSES || self.carved & (1 << class) != 0 {
            return None;
        }
        let (offset, bytes) = self.planned(class)?;
        self.carved |= 1 << class;
        Some((self.slab_at(offset), bytes))
    }

    /// The payload bytes of `slab` if it is the carved static slab of `class`.
    pub(crate) fn usable(&self, slab: NonNull<Slab>, class: usize) -> Option<usize> {
        if class >= CLASSES || self.carved & (1 << class) == 0 {
            return None;
        }
        let (offset, bytes) = self.planned(class)?;
        (self.slab_at(offset).cast() == slab).then_some(bytes)
    }

    /// Every carved static slab: class, slab, payload bytes.
    pub(crate) fn carved(&self) -> impl Iterator<Item = (usize, NonNull<Slab>, usize)> + '_ {
        (0..CLASSES).filter_map(|class| {
            let (offset, bytes) = self.planned(class)?;
            let carved = self.carved & (1 << class) != 0;
            carved.then(|| (class, self.slab_at(offset).cast(), bytes))
        })
    }
}
