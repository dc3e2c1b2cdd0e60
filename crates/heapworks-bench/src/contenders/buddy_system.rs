//! buddy_system_allocator through its raw `Heap<32>` (no realloc of its own).

use std::alloc::Layout;
use std::ptr::{self, NonNull};

use buddy_system_allocator::Heap;

use super::{RawHeap, SetupError};

/// The buddy heap with 32 orders (blocks up to 2 GiB).
pub struct BuddySystemHeap(Heap<32>);

impl RawHeap for BuddySystemHeap {
    fn unclaimed() -> Self {
        Self(Heap::new())
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        // SAFETY: the region is ours, disjoint from anything else (this function's contract).
        unsafe { self.0.init(base as usize, len) };
        Ok(())
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        self.0
            .alloc(layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live, non-null block of this heap with `layout`.
        unsafe { self.0.dealloc(NonNull::new_unchecked(ptr), layout) }
    }
}
