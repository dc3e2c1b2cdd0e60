//! good_memory_allocator ("galloc") through its raw `Allocator` heap.

use std::alloc::Layout;

use good_memory_allocator::Allocator;

use super::{RawHeap, SetupError};

/// galloc's heap. It keeps pointers to its own bins, which is why [`RawHeap::claim`] runs only
/// once the heap is at its final address.
pub struct GallocHeap(Allocator);

// SAFETY: the heap's raw pointers point into its own region and into itself; the value is only
// ever used by one thread at a time (under the arena's lock), so moving it across threads
// is sound.
unsafe impl Send for GallocHeap {}

impl RawHeap for GallocHeap {
    fn unclaimed() -> Self {
        Self(Allocator::empty())
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        // SAFETY: the region is ours and `self` no longer moves (this function's contract).
        unsafe { self.0.init(base as usize, len) };
        Ok(())
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        // SAFETY: the heap is initialized; galloc returns null when it cannot allocate.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` is a live block of this heap.
        unsafe { self.0.dealloc(ptr) }
    }

    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is a live block of this heap allocated with `layout`.
        unsafe { self.0.realloc(ptr, layout, new_size) }
    }
}
