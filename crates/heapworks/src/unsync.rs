//! [`UnsyncHeap`]: a [`Heap`] as `#[global_allocator]` without a lock, for programs that have
//! one thread (most wasm32 programs, bare-metal firmware without interrupts that allocate).
//!
//! Invariant: at most one call into the heap runs at a time, which the program promises by
//! creating the value with the `unsafe` [`UnsyncHeap::new`] or [`UnsyncHeap::with_region`].
//! Misuse caught by a checked build is reported after the call's borrow of the heap ends.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

use crate::error::ClaimError;
use crate::global::{self, Engine, Reserve};
use crate::{FrontHeap, Heap};

/// A [`Heap`] with no lock, for single-threaded programs; `UnsyncHeap<FrontHeap>` serves
/// from a [`FrontHeap`] instead ([`UnsyncHeap::new_front`], [`UnsyncHeap::front_with_region`]).
pub struct UnsyncHeap<H = Heap> {
    heap: UnsafeCell<H>,
    /// Claimed at the first request the heap cannot serve.
    reserve: Reserve,
}

// SAFETY: `new` makes the program promise that no two threads ever use the heap at once.
unsafe impl<H> Sync for UnsyncHeap<H> {}

impl UnsyncHeap {
    /// An empty heap for a single-threaded program.
    ///
    /// # Safety
    /// The heap is never used from two threads at once (nor from an interrupt handler that may
    /// run while another call is in progress).
    pub const unsafe fn new() -> Self {
        UnsyncHeap {
            heap: UnsafeCell::new(Heap::new()),
            reserve: Reserve::none(),
        }
    }

    /// An empty heap for a single-threaded program that claims `[base, base + size)` at the
    /// first request it cannot serve, as [`crate::LockedHeap::with_region`] does.
    ///
    /// # Safety
    /// As for [`UnsyncHeap::new`] and [`Heap::claim`].
    pub const unsafe fn with_region(base: *mut u8, size: usize) -> Self {
        UnsyncHeap {
            heap: UnsafeCell::new(Heap::new()),
            // SAFETY: forwarded from the caller.
            reserve: unsafe { Reserve::new(base, size) },
        }
    }
}

impl UnsyncHeap<FrontHeap> {
    /// An empty [`FrontHeap`] for a single-threaded program.
    ///
    /// # Safety
    /// As for [`UnsyncHeap::new`].
    pub const unsafe fn new_front() -> Self {
        UnsyncHeap {
            heap: UnsafeCell::new(FrontHeap::new()),
            reserve: Reserve::none(),
        }
    }

    /// An empty [`FrontHeap`] for a single-threaded program that claims
    /// `[base, base + size)` at the first request it cannot serve.
    ///
    /// # Safety
    /// As for [`UnsyncHeap::with_region`].
    pub const unsafe fn front_with_region(base: *mut u8, size: usize) -> Self {
        UnsyncHeap {
            heap: UnsafeCell::new(FrontHeap::new()),
            // SAFETY: forwarded from the caller.
            reserve: unsafe { Reserve::new(base, size) },
        }
    }
}

impl<H: Engine> UnsyncHeap<H> {
    /// The heap itself (statistics, checks, claiming).
    ///
    /// # Safety
    /// No other reference to the heap is alive (no allocation is in progress).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn heap(&self) -> &mut H {
        // SAFETY: the caller promises exclusive access.
        unsafe { &mut *self.heap.get() }
    }

    /// Adds a region; see [`Heap::claim`].
    ///
    /// # Safety
    /// As for [`Heap::claim`], and no allocation is in progress.
    pub unsafe fn claim(&self, base: *mut u8, size: usize) -> Result<(), ClaimError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.heap().claim(base, size) }
    }
}

// SAFETY: as for `LockedHeap`; exclusive access comes from the single-thread promise of `new`.
unsafe impl<H: Engine> GlobalAlloc for UnsyncHeap<H> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded by the promise of `new`; no call is in progress.
        unsafe { global::alloc(self.heap(), &self.reserve, layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above, and the caller passes a block of this allocator with its layout.
        let outcome = unsafe { global::dealloc(self.heap(), ptr, layout) };
        if let Err(misuse) = outcome {
            global::abort_on(&misuse);
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above, and the caller passes a block of this allocator with its layout.
        let outcome = unsafe { global::realloc(self.heap(), &self.reserve, ptr, layout, new_size) };
        outcome.unwrap_or_else(|misuse| global::abort_on(&misuse))
    }
}
