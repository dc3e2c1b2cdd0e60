//! linked_list_allocator through its raw `Heap` (first fit; no realloc of its own).

use std::alloc::Layout;
use std::ptr::{self, NonNull};

use linked_list_allocator::Heap;

use super::{RawHeap, SetupError};

/// linked_list_allocator's heap; realloc moves the block (the crate has no in-place realloc).
pub struct LinkedListHeap(Heap);

impl RawHeap for LinkedListHeap {
    fn unclaimed() -> Self {
        Self(Heap::empty())
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        // SAFETY: the region is ours for the heap's life (this function's contract).
        unsafe { self.0.init(base, len) };
        Ok(())
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        self.0
            .allocate_first_fit(layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live, non-null block of this heap with `layout`.
        unsafe { self.0.deallocate(NonNull::new_unchecked(ptr), layout) }
    }
}
