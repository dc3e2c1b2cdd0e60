//! [`LockedHeap`]: a [`Heap`] (or a [`FrontHeap`]) behind a `lock_api` mutex, usable as
//! `#[global_allocator]`.
//!
//! Invariants: the heap and its reserve are only reached through the lock, so `&LockedHeap`
//! may be shared across threads; misuse caught by a checked build is reported after the lock is
//! released. The default lock is a spin lock (no OS needed); any `lock_api::RawMutex` works.

use core::alloc::{GlobalAlloc, Layout};

use lock_api::{Mutex, MutexGuard, RawMutex};

use crate::error::ClaimError;
use crate::global::{self, Engine, Reserve};
use crate::{FrontHeap, Heap};

/// A [`Heap`] behind a lock: `static A: LockedHeap = LockedHeap::new();` just works.
///
/// A hosted program allocates before `main` runs, so as its `#[global_allocator]` give it its
/// first region with [`LockedHeap::with_region`], claimed at the first request:
///
/// ```
/// use heapworks::LockedHeap;
///
/// static mut ARENA: [u8; 4 << 20] = [0; 4 << 20];
///
/// #[global_allocator]
/// // SAFETY: nothing else uses the arena.
/// static ALLOCATOR: LockedHeap =
///     unsafe { LockedHeap::with_region(&raw mut ARENA as *mut u8, 4 << 20) };
///
/// fn main() {
///     let v: Vec<u32> = (0..1000).collect();
///     assert_eq!(v.iter().sum::<u32>(), 499_500);
///     assert!(ALLOCATOR.lock().stats().in_use > 0);
/// }
/// ```
///
/// `LockedHeap<R, FrontHeap>` ([`LockedFrontHeap`]) serves from a [`FrontHeap`] (the
/// small-object front) instead: [`LockedHeap::new_front`], [`LockedHeap::front_with_region`].
pub struct LockedHeap<R: RawMutex = spin::mutex::SpinMutex<()>, H = Heap> {
    heap: Mutex<R, H>,
    /// Claimed under the lock at the first request the heap cannot serve.
    reserve: Reserve,
}

/// [`LockedHeap`] over a [`FrontHeap`] (the small-object front), with the same default lock.
pub type LockedFrontHeap<R = spin::mutex::SpinMutex<()>> = LockedHeap<R, FrontHeap>;

impl<R: RawMutex> LockedHeap<R> {
    /// An empty heap; claim memory before the first allocation.
    pub const fn new() -> Self {
        LockedHeap {
            heap: Mutex::const_new(R::INIT, Heap::new()),
            reserve: Reserve::none(),
        }
    }

    /// An empty heap that claims `[base, base + size)` at the first request it cannot serve
    /// (its first request, unless memory was claimed before). A region too small to claim
    /// leaves the heap empty: that request, like every other the heap cannot serve, fails.
    ///
    /// # Safety
    /// As for [`Heap::claim`]: the region is valid, unused by anything else, for as long as the
    /// heap lives.
    pub const unsafe fn with_region(base: *mut u8, size: usize) -> Self {
        LockedHeap {
            heap: Mutex::const_new(R::INIT, Heap::new()),
            // SAFETY: forwarded from the caller.
            reserve: unsafe { Reserve::new(base, size) },
        }
    }
}

impl<R: RawMutex> LockedHeap<R, FrontHeap> {
    /// An empty [`FrontHeap`] behind a lock; claim memory before the first allocation.
    pub const fn new_front() -> Self {
        LockedHeap {
            heap: Mutex::const_new(R::INIT, FrontHeap::new()),
            reserve: Reserve::none(),
        }
    }

    /// An empty [`FrontHeap`] behind a lock that claims `[base, base + size)` at the first
    /// request it cannot serve, as [`LockedHeap::with_region`] does.
    ///
    /// # Safety
    /// As for [`LockedHeap::with_region`].
    pub const unsafe fn front_with_region(base: *mut u8, size: usize) -> Self {
        LockedHeap {
            heap: Mutex::const_new(R::INIT, FrontHeap::new()),
            // SAFETY: forwarded from the caller.
            reserve: unsafe { Reserve::new(base, size) },
        }
    }
}

impl<R: RawMutex, H: Engine> LockedHeap<R, H> {
    /// Locks the heap for direct use (statistics, checks, several calls under one lock).
    pub fn lock(&self) -> MutexGuard<'_, R, H> {
        self.heap.lock()
    }

    /// Locks the heap if no one holds it: for code that must not wait (an interrupt handler
    /// that may have interrupted the holder).
    pub fn try_lock(&self) -> Option<MutexGuard<'_, R, H>> {
        self.heap.try_lock()
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
// layout and keeps them disjoint, and `global` maps failure to null. Misuse aborts after the
// guard (a temporary of the statement that locks) is dropped, so it never unwinds.
unsafe impl<R: RawMutex, H: Engine> GlobalAlloc for LockedHeap<R, H> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the lock gives exclusive access to the heap and its reserve.
        unsafe { global::alloc(&mut *self.lock(), &self.reserve, layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block of this allocator with its layout.
        let outcome = unsafe { global::dealloc(&mut *self.lock(), ptr, layout) };
        if let Err(misuse) = outcome {
            global::abort_on(&misuse);
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a block of this allocator with its layout; the lock gives
        // exclusive access to the heap and its reserve.
        let outcome =
            unsafe { global::realloc(&mut *self.lock(), &self.reserve, ptr, layout, new_size) };
        outcome.unwrap_or_else(|misuse| global::abort_on(&misuse))
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
    use crate::global::{self, Engine};
    use crate::heap::report;

    fn slice(ptr: NonNull<u8>, len: usize) -> NonNull<[u8]> {
        NonNull::slice_from_raw_parts(ptr, len)
    }

    // SAFETY: blocks come from the locked heap, fit their layouts, stay valid until deallocated,
    // and grow/shrink keep the contents as the heap's resize does. Misuse is reported (by a
    // panic) after the lock is released.
    unsafe impl<R: RawMutex, H: Engine> Allocator for &LockedHeap<R, H> {
        fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            // SAFETY: the lock gives exclusive access to the heap and its reserve.
            let ptr = unsafe { global::alloc(&mut *self.lock(), &self.reserve, layout) };
            let ptr = NonNull::new(ptr).ok_or(AllocError)?;
            Ok(slice(ptr, layout.size()))
        }

        unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
            // SAFETY: forwarded from the caller.
            let outcome = unsafe { self.lock().deallocate_or_misuse(ptr, layout) };
            outcome.unwrap_or_else(|misuse| report(misuse));
        }

        unsafe fn grow(
            &self,
            ptr: NonNull<u8>,
            old: Layout,
            new: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            // SAFETY: forwarded from the caller.
            unsafe { self.resize(ptr, old, new) }
        }

        unsafe fn shrink(
            &self,
            ptr: NonNull<u8>,
            old: Layout,
            new: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            // SAFETY: forwarded from the caller.
            unsafe { self.resize(ptr, old, new) }
        }
    }

    impl<R: RawMutex, H: Engine> LockedHeap<R, H> {
        /// # Safety
        /// As for `Allocator::grow` and `Allocator::shrink`.
        unsafe fn resize(
            &self,
            ptr: NonNull<u8>,
            old: Layout,
            new: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            // SAFETY: forwarded from the caller; the lock gives exclusive access to the heap
            // and its reserve.
            let outcome =
                unsafe { global::resize(&mut *self.lock(), &self.reserve, ptr, old, new) };
            let ptr = outcome
                .unwrap_or_else(|misuse| report(misuse))
                .map_err(|_| AllocError)?;
            Ok(slice(ptr, new.size()))
        }
    }
}
