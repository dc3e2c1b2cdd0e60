//! [`LockedHeap`]: a [`Heap`] behind a `lock_api` mutex, usable as `#[global_allocator]`.
//!
//! Invariant: the heap is only reached through the lock, so `&LockedHeap` may be shared across
//! threads. The default lock is a spin lock (no OS needed); any `lock_api::RawMutex` works.

use core::alloc::{GlobalAlloc, Layout};

use lock_api::{Mutex, MutexGuard, RawMutex};

use crate::error::ClaimError;
use crate::{global, Heap};

/// A [`Heap`] behind a lock: `static A: LockedHeap = LockedHeap::new();` just works.
pub struct LockedHeap<R: RawMutex = spin::mutex::SpinMutex<()>> {
    heap: Mutex<R, Heap>,
}

impl<R: RawMutex> LockedHeap<R> {
    /// An empty heap; claim memory before the first allocation.
    pub const fn new() -> Self {
        LockedHeap {
            heap: Mutex::const_new(R::INIT, Heap::new()),
        }
    }

    /// Locks the heap for direct use (statistics, checks, several calls under one lock).
    pub fn lock(&self) -> MutexGuard<'_, R, Heap> {
        self.heap.lock()
    }

    /// Adds a region; see [`Heap::claim`].
    ///
    /// # Safety
    /// As for [`Heap::claim`].
    pub unsafe fn claim(&self, base: *mut u8, size: usize) -> Result<(), ClaimError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.lock().claim(base, size) }
    }
}

impl<R: RawMutex> Default for LockedHeap<R> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: every method forwards to the heap under the lock; `Heap` returns blocks that fit the
// layout and keeps them disjoint, and `global` maps failure to null.
unsafe impl<R: RawMutex> GlobalAlloc for LockedHeap<R> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        global::alloc(&mut self.lock(), layout)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block of this allocator with its layout.
        unsafe { global::dealloc(&mut self.lock(), ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a block of this allocator with its layout.
        unsafe { global::realloc(&mut self.lock(), ptr, layout, new_size) }
    }
}

#[cfg(feature = "allocator-api2")]
mod api2 {
    //! `allocator_api2::alloc::Allocator` for `&LockedHeap`, on stable Rust.

    use core::alloc::Layout;
    use core::ptr::NonNull;

    use allocator_api2::alloc::{AllocError, Allocator};
    use lock_api::RawMutex;

    use super::LockedHeap;

    fn slice(ptr: NonNull<u8>, len: usize) -> NonNull<[u8]> {
        NonNull::slice_from_raw_parts(ptr, len)
    }

    // SAFETY: blocks come from the locked heap, fit their layouts, stay valid until deallocated,
    // and grow/shrink keep the contents as the heap's resize does.
    unsafe impl<R: RawMutex> Allocator for &LockedHeap<R> {
        fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            let ptr = self.lock().allocate(layout).map_err(|_| AllocError)?;
            Ok(slice(ptr, layout.size()))
        }

        unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
            // SAFETY: forwarded from the caller.
            unsafe { self.lock().deallocate(ptr, layout) }
        }

        unsafe fn grow(
            &self,
            ptr: NonNull<u8>,
            old: Layout,
            new: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            // SAFETY: forwarded from the caller.
            let ptr = unsafe { self.lock().grow(ptr, old, new) }.map_err(|_| AllocError)?;
            Ok(slice(ptr, new.size()))
        }

        unsafe fn shrink(
            &self,
            ptr: NonNull<u8>,
            old: Layout,
            new: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            // SAFETY: forwarded from the caller.
            let ptr = unsafe { self.lock().shrink(ptr, old, new) }.map_err(|_| AllocError)?;
            Ok(slice(ptr, new.size()))
        }
    }
}
