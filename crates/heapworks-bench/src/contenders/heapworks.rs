//! heapworks, the allocator under test, through its raw unsynchronized `Heap`, on the default
//! free index or another one.

use std::alloc::Layout;
use std::ptr::{self, NonNull};

use heapworks::{Bins, FreeIndex, Heap};

use super::{RawHeap, SetupError};

/// heapworks' heap on the free index `I`.
pub struct HeapworksHeap<I: FreeIndex = Bins>(Heap<I>);

impl<I: FreeIndex> RawHeap for HeapworksHeap<I> {
    fn unclaimed() -> Self {
        Self(Heap::empty())
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        // SAFETY: the region is ours for the heap's life (this function's contract).
        unsafe { self.0.claim(base, len) }
            .map_err(|error| SetupError(format!("heapworks rejected the region: {error:?}")))
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        self.0
            .allocate(layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live, non-null block of this heap with `layout`.
        unsafe { self.0.deallocate(NonNull::new_unchecked(ptr), layout) }
    }

    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is a live, non-null block of this heap with `layout`.
        unsafe {
            self.0
                .realloc(NonNull::new_unchecked(ptr), layout, new_size)
        }
        .map_or(ptr::null_mut(), NonNull::as_ptr)
    }
}
