//! The platform allocator (`std::alloc::System`), unbounded: it ignores the region, and its
//! blocks must be freed explicitly, since dropping it reclaims nothing.

use std::alloc::{GlobalAlloc, Layout, System};

use super::{RawHeap, SetupError};

/// `std::alloc::System` behind the same lock as the arenas, so that single-threaded numbers
/// carry the same locking cost.
pub struct SystemHeap;

impl RawHeap for SystemHeap {
    const DROP_RECLAIMS_BLOCKS: bool = false;

    fn unclaimed() -> Self {
        SystemHeap
    }

    unsafe fn claim(&mut self, _base: *mut u8, _len: usize) -> Result<(), SetupError> {
        Ok(())
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        // SAFETY: the size is non-zero (this function's contract).
        unsafe { System.alloc(layout) }
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from `System` with `layout`; `new_size` is non-zero.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
