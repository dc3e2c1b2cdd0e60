//! dlmalloc over a fixed region: its system-allocator hook hands out the whole region once,
//! then reports the system as out of memory; nothing is ever given back.

use std::alloc::Layout;
use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

use dlmalloc::Dlmalloc;

use super::{RawHeap, SetupError};

/// The "system" dlmalloc draws from: one region, handed out on the first request.
pub struct FixedRegion {
    base: AtomicPtr<u8>,
    len: AtomicUsize,
}

impl FixedRegion {
    const PAGE: usize = 4096;

    fn take(&self, wanted: usize) -> (*mut u8, usize) {
        let len = self.len.load(Ordering::Relaxed);
        if wanted > len {
            return (ptr::null_mut(), 0);
        }
        let base = self.base.swap(ptr::null_mut(), Ordering::Relaxed);
        if base.is_null() {
            (ptr::null_mut(), 0)
        } else {
            (base, len)
        }
    }
}

// SAFETY: memory is handed out once and never moved, remapped or reclaimed; every "give back"
// request is refused, which dlmalloc's contract allows.
unsafe impl dlmalloc::Allocator for FixedRegion {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        let (base, len) = self.take(size);
        (base, len, 0)
    }

    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        ptr::null_mut()
    }

    fn free_part(&self, _ptr: *mut u8, _old: usize, _new: usize) -> bool {
        false
    }

    fn free(&self, _ptr: *mut u8, _size: usize) -> bool {
        false
    }

    fn can_release_part(&self, _flags: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        false
    }

    fn page_size(&self) -> usize {
        Self::PAGE
    }
}

/// dlmalloc's heap with [`FixedRegion`] as its system.
pub struct DlmallocHeap(Dlmalloc<FixedRegion>);

impl RawHeap for DlmallocHeap {
    fn unclaimed() -> Self {
        Self(Dlmalloc::new_with_allocator(FixedRegion {
            base: AtomicPtr::new(ptr::null_mut()),
            len: AtomicUsize::new(0),
        }))
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        let system = self.0.allocator();
        system.len.store(len, Ordering::Relaxed);
        system.base.store(base, Ordering::Relaxed);
        Ok(())
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        // SAFETY: the size is non-zero and the alignment a power of two (Layout).
        unsafe { self.0.malloc(layout.size(), layout.align()) }
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `malloc` with this size and alignment.
        unsafe { self.0.free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this heap with `layout`; `new_size` is non-zero.
        unsafe { self.0.realloc(ptr, layout.size(), layout.align(), new_size) }
    }
}
