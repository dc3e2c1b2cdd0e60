//! [`CriticalSectionLock`]: a `lock_api::RawMutex` made of a `critical-section` critical section,
//! the lock for single-core microcontrollers, where a spin lock is wrong: an interrupt handler
//! that allocates while the code it interrupted holds a spin lock would spin forever.
//!
//! Invariants:
//! - The heap is locked exactly while `held` is set; `held` and `restore` are read and written
//!   only inside a critical section, which the lock keeps from `lock` to `unlock`. Nothing else
//!   can run meanwhile (interrupts are masked on a single-core MCU; other threads wait in the
//!   `std` implementation), so a `lock` that finds `held` set was called by the holder itself:
//!   a re-entrant allocation (say, from a panic handler that allocates), reported as such
//!   rather than left to deadlock with interrupts off.
//! - Each guard releases the critical section it acquired, in the context that acquired it (the
//!   guard is not `Send`).

use core::cell::Cell;

use critical_section::RestoreState;
use lock_api::{GuardNoSend, RawMutex};

use crate::LockedHeap;

/// A [`LockedHeap`] behind a critical section (feature `critical-section`): the heap for
/// single-core MCUs whose interrupt handlers may allocate. Every call masks interrupts (or
/// whatever the program's `critical-section` implementation does) for its duration.
///
/// The program links one `critical-section` implementation, such as `cortex-m`'s feature
/// `critical-section-single-core`:
///
/// ```no_run
/// use heapworks::CriticalSectionHeap;
///
/// #[global_allocator]
/// static HEAP: CriticalSectionHeap = CriticalSectionHeap::new();
///
/// fn init_heap(base: *mut u8, len: usize) {
///     // SAFETY: `[base, base + len)` is RAM that nothing else uses (a region the linker
///     // script sets aside), and this runs once, before the first allocation.
///     unsafe { HEAP.claim(base, len) }.ok();
/// }
/// # fn main() {}
/// ```
pub type CriticalSectionHeap = LockedHeap<CriticalSectionLock>;

/// A raw mutex held by keeping a critical section open from lock to unlock.
///
/// Locking it again from the code that holds it (a re-entrant allocation) aborts with a message
/// naming the fault, since nothing could ever release it.
pub struct CriticalSectionLock {
    held: Cell<bool>,
    /// What `critical_section::release` needs to restore, set while `held`.
    restore: Cell<RestoreState>,
}

// SAFETY: the cells are touched only inside a critical section (the module's first invariant),
// which excludes every other context that could reach the lock.
unsafe impl Sync for CriticalSectionLock {}

// SAFETY: `lock` and `try_lock` return only after setting `held` inside the critical section they
// keep open, and fail or abort while it is set, so at most one holder exists; `unlock` closes that
// same critical section (the guard is `GuardNoSend`).
unsafe impl RawMutex for CriticalSectionLock {
    #[allow(clippy::declare_interior_mutable_const)] // the `lock_api` way to build a mutex
    const INIT: Self = CriticalSectionLock {
        held: Cell::new(false),
        restore: Cell::new(RestoreState::invalid()),
    };

    type GuardMarker = GuardNoSend;

    #[inline]
    fn lock(&self) {
        if !self.try_lock() {
            reentered();
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        // SAFETY: released below if the lock is taken already, otherwise by `unlock` through
        // the guard, in this context.
        let restore = unsafe { critical_section::acquire() };
        if self.held.get() {
            // SAFETY: the section acquired just above, and nothing acquired since.
            unsafe { critical_section::release(restore) };
            return false;
        }
        self.held.set(true);
        self.restore.set(restore);
        true
    }

    #[inline]
    unsafe fn unlock(&self) {
        let restore = self.restore.replace(RestoreState::invalid());
        self.held.set(false);
        // SAFETY: the caller holds the lock, so `restore` is what its `acquire` returned, in this
        // context; critical sections opened since were closed by their own guards.
        unsafe { critical_section::release(restore) };
    }
}

/// Reports a lock taken by its own holder. `extern "C"`: the panic cannot unwind out of it, so
/// it aborts after printing (or halts, under `panic = "abort"` firmware handlers).
#[cold]
#[inline(never)]
extern "C" fn reentered() -> ! {
    panic!("heapworks: the critical-section heap was locked again by its holder (an allocation re-entered the allocator)")
}
