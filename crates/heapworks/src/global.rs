//! `GlobalAlloc` semantics on top of a [`Heap`], shared by every adapter.
//!
//! `GlobalAlloc` speaks in nullable raw pointers; the heap speaks in `Result`. These functions
//! translate one into the other, claim an adapter's [`Reserve`] at the first request the heap
//! cannot serve (or reclaim what the engine holds in reserve, a front's free slabs, and try
//! again), and hand misuse caught by a checked build back to the adapter, so every adapter
//! behaves the same.
//!
//! Invariants:
//! - Every function here runs with exclusive access to the heap and its reserve (under the
//!   adapter's lock, or by the single-thread promise of [`crate::UnsyncHeap`]).
//! - A reserve is claimed at most once: taking it leaves it empty, whether the claim succeeds
//!   or not.
//! - Misuse is reported only after the adapter has released the heap ([`abort_on`]), and never
//!   by unwinding out of a `GlobalAlloc` method.

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::{null_mut, NonNull};

use crate::error::{AllocError, ClaimError, Misuse};
use crate::{FrontHeap, Heap};

/// What an adapter serves requests from: a [`Heap`] or a [`FrontHeap`] (over the default
/// index). Public in name only (this module is private), so adapters may be generic over it.
pub trait Engine {
    /// The engine with no region.
    const EMPTY: Self;
    /// See [`Heap::allocate`].
    fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError>;
    /// See [`Heap::deallocate_or_misuse`].
    ///
    /// # Safety
    /// As there.
    unsafe fn deallocate_or_misuse(
        &mut self,
        ptr: NonNull<u8>,
        layout: Layout,
    ) -> Result<(), Misuse>;
    /// See [`Heap::resize_or_misuse`].
    ///
    /// # Safety
    /// As there.
    unsafe fn resize_or_misuse(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<Result<NonNull<u8>, AllocError>, Misuse>;
    /// See [`Heap::claim`].
    ///
    /// # Safety
    /// As there.
    unsafe fn claim(&mut self, base: *mut u8, size: usize) -> Result<(), ClaimError>;
    /// See [`Heap::extend`].
    ///
    /// # Safety
    /// As there.
    unsafe fn extend(&mut self, base: *mut u8, new_size: usize) -> Result<(), ClaimError>;
    /// Gives memory held in reserve back to the heap ([`FrontHeap::trim`]); whether any was.
    /// Adapters call it before they grow the heap or fail a request.
    fn reclaim(&mut self) -> bool;
}

/// Implements [`Engine`] by forwarding to the type's own methods of the same names.
macro_rules! forward_engine {
    ($ty:ident, $reclaim:expr) => {
        impl Engine for $ty {
            const EMPTY: $ty = $ty::new();

            #[inline(always)]
            fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
                $ty::allocate(self, layout)
            }

            #[inline(always)]
            unsafe fn deallocate_or_misuse(
                &mut self,
                ptr: NonNull<u8>,
                layout: Layout,
            ) -> Result<(), Misuse> {
                // SAFETY: forwarded from the caller.
                unsafe { $ty::deallocate_or_misuse(self, ptr, layout) }
            }

            #[inline(always)]
            unsafe fn resize_or_misuse(
                &mut self,
                ptr: NonNull<u8>,
                old: Layout,
                new: Layout,
            ) -> Result<Result<NonNull<u8>, AllocError>, Misuse> {
                // SAFETY: forwarded from the caller.
                unsafe { $ty::resize_or_misuse(self, ptr, old, new) }
            }

            unsafe fn claim(&mut self, base: *mut u8, size: usize) -> Result<(), ClaimError> {
                // SAFETY: forwarded from the caller.
                unsafe { $ty::claim(self, base, size) }
            }

            unsafe fn extend(&mut self, base: *mut u8, new_size: usize) -> Result<(), ClaimError> {
                // SAFETY: forwarded from the caller.
                unsafe { $ty::extend(self, base, new_size) }
            }

            #[cold]
            fn reclaim(&mut self) -> bool {
                $reclaim(self)
            }
        }
    };
}

// A heap holds nothing in reserve; a front its slabs' free slots.
forward_engine!(Heap, |_: &mut Heap| false);
forward_engine!(FrontHeap, |front: &mut FrontHeap| front.trim() > 0);

/// A region an adapter claims at the first request its heap cannot serve: the way to give a
/// `static` allocator its memory before `main` runs (a hosted program allocates before `main`).
pub(crate) struct Reserve {
    region: Cell<Option<(NonNull<u8>, usize)>>,
}

// SAFETY: the reserve is read and written only by the functions of this module, which run with
// exclusive access to it (the module's first invariant).
unsafe impl Sync for Reserve {}
// SAFETY: the region it names is memory the adapter's creator gave away for good.
unsafe impl Send for Reserve {}

impl Reserve {
    /// No region held back.
    pub(crate) const fn none() -> Reserve {
        Reserve {
            region: Cell::new(None),
        }
    }

    /// `[base, base + size)`, claimed at the first request that fails (a null `base` holds
    /// nothing back).
    ///
    /// # Safety
    /// As for [`Heap::claim`], from now on.
    pub(crate) const unsafe fn new(base: *mut u8, size: usize) -> Reserve {
        let region = match NonNull::new(base) {
            Some(base) => Some((base, size)),
            None => None,
        };
        Reserve {
            region: Cell::new(region),
        }
    }

    /// Claims the held-back region for `heap`; `false` if there was none or it was refused.
    ///
    /// # Safety
    /// The caller has exclusive access to the reserve and `heap` is the adapter's heap.
    #[cold]
    #[inline(never)]
    unsafe fn claim_into(&self, heap: &mut impl Engine) -> bool {
        let Some((base, size)) = self.region.take() else {
            return false;
        };
        // SAFETY: the creator of the reserve promised that the region may be claimed.
        unsafe { heap.claim(base.as_ptr(), size) }.is_ok()
    }
}

/// # Safety
/// The caller has exclusive access to `heap` and `reserve`, which belong to one adapter.
#[inline(always)]
pub(crate) unsafe fn alloc(heap: &mut impl Engine, reserve: &Reserve, layout: Layout) -> *mut u8 {
    match heap.allocate(layout) {
        Ok(block) => block.as_ptr(),
        // SAFETY: forwarded from the caller.
        Err(_) if unsafe { reserve.claim_into(heap) } || heap.reclaim() => {
            alloc_or_null(heap, layout)
        }
        Err(_) => null_mut(),
    }
}

fn alloc_or_null(heap: &mut impl Engine, layout: Layout) -> *mut u8 {
    heap.allocate(layout).map_or(null_mut(), NonNull::as_ptr)
}

/// # Safety
/// `ptr` came from `alloc` or `realloc` on this heap with `layout` (checked builds detect
/// otherwise and return the misuse, leaving the heap unchanged).
#[inline(always)]
pub(crate) unsafe fn dealloc(
    heap: &mut impl Engine,
    ptr: *mut u8,
    layout: Layout,
) -> Result<(), Misuse> {
    match NonNull::new(ptr) {
        // SAFETY: forwarded from the caller.
        Some(ptr) => unsafe { heap.deallocate_or_misuse(ptr, layout) },
        None => Ok(()),
    }
}

/// # Safety
/// As for [`dealloc`], and the caller has exclusive access to `reserve`, which belongs to the
/// same adapter as `heap`.
#[inline(always)]
pub(crate) unsafe fn realloc(
    heap: &mut impl Engine,
    reserve: &Reserve,
    ptr: *mut u8,
    layout: Layout,
    new_size: usize,
) -> Result<*mut u8, Misuse> {
    let Some(ptr) = NonNull::new(ptr) else {
        return Ok(null_mut());
    };
    let Ok(new) = Layout::from_size_align(new_size, layout.align()) else {
        return Ok(null_mut());
    };
    // SAFETY: forwarded from the caller.
    let moved = unsafe { resize(heap, reserve, ptr, layout, new) }?;
    Ok(moved.map_or(null_mut(), NonNull::as_ptr))
}

/// Resizes the block at `ptr` from `old` to `new`, claiming the reserve when the heap cannot.
///
/// # Safety
/// As for [`realloc`], with a non-null `ptr`.
#[inline(always)]
pub(crate) unsafe fn resize(
    heap: &mut impl Engine,
    reserve: &Reserve,
    ptr: NonNull<u8>,
    old: Layout,
    new: Layout,
) -> Result<Result<NonNull<u8>, AllocError>, Misuse> {
    // SAFETY: forwarded from the caller.
    match unsafe { heap.resize_or_misuse(ptr, old, new) }? {
        // SAFETY: forwarded from the caller; the block is still live after a failed resize.
        Err(_) if unsafe { reserve.claim_into(heap) } || heap.reclaim() => unsafe {
            heap.resize_or_misuse(ptr, old, new)
        },
        outcome => Ok(outcome),
    }
}

/// Reports misuse caught inside a `GlobalAlloc` method, after the adapter released the heap:
/// the panic prints its message (which may allocate: the heap is unchanged and free to use),
/// and since it cannot unwind out of an `extern "C"` function, the program then aborts. A
/// `GlobalAlloc` must never unwind.
#[cold]
#[inline(never)]
pub(crate) extern "C" fn abort_on(misuse: &Misuse) -> ! {
    panic!("{misuse}")
}
