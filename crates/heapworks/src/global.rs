//! `GlobalAlloc` semantics on top of a [`Heap`], shared by every adapter.
//!
//! `GlobalAlloc` speaks in nullable raw pointers; the heap speaks in `Result`. These functions
//! translate one into the other and nothing more, so every adapter behaves the same.

use core::alloc::Layout;
use core::ptr::{null_mut, NonNull};

use crate::Heap;

#[inline(always)]
pub(crate) fn alloc(heap: &mut Heap, layout: Layout) -> *mut u8 {
    heap.allocate(layout).map_or(null_mut(), NonNull::as_ptr)
}

/// # Safety
/// `ptr` came from `alloc` or `realloc` on this heap with `layout`.
#[inline(always)]
pub(crate) unsafe fn dealloc(heap: &mut Heap, ptr: *mut u8, layout: Layout) {
    if let Some(ptr) = NonNull::new(ptr) {
        // SAFETY: forwarded from the caller.
        unsafe { heap.deallocate(ptr, layout) }
    }
}

/// # Safety
/// `ptr` came from `alloc` or `realloc` on this heap with `layout`.
#[inline(always)]
pub(crate) unsafe fn realloc(
    heap: &mut Heap,
    ptr: *mut u8,
    layout: Layout,
    new_size: usize,
) -> *mut u8 {
    let Some(ptr) = NonNull::new(ptr) else {
        return null_mut();
    };
    // SAFETY: forwarded from the caller.
    unsafe { heap.realloc(ptr, layout, new_size) }.map_or(null_mut(), NonNull::as_ptr)
}
