//! talc 5 through its raw `Talc` heap with a `Manual` source (no growth: the region is all).

use std::alloc::Layout;
use std::ptr;

use talc::base::Talc;
use talc::source::Manual;
use talc::DefaultBinning;

use super::{realloc_by_moving, RawHeap, SetupError};

/// talc's heap, driven like its own `GlobalAlloc` wrappers drive it.
pub struct TalcHeap(Talc<Manual, DefaultBinning>);

impl RawHeap for TalcHeap {
    fn unclaimed() -> Self {
        Self(Talc::new(Manual))
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        // SAFETY: the region is ours for the heap's life (this function's contract).
        unsafe { self.0.claim(base, len) }
            .map(drop)
            .ok_or_else(|| SetupError(format!("talc rejected a {len}-byte region")))
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        // SAFETY: the size is non-zero (this function's contract).
        unsafe { self.0.allocate(layout) }.map_or(ptr::null_mut(), |p| p.as_ptr())
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated here with `layout` (this function's contract).
        unsafe { self.0.deallocate(ptr, layout) }
    }

    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is live with `layout` and `new_size` is non-zero (contract).
        if unsafe { self.0.try_realloc_in_place(ptr, layout, new_size) } {
            return ptr;
        }
        // SAFETY: as above; growing in place failed, so the block moves.
        unsafe { realloc_by_moving(self, ptr, layout, new_size) }
    }
}
