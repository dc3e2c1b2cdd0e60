//! A spin lock with backoff, for the core heap and the large-block cache.
//!
//! Invariants: the data is reached only through a guard, and at most one guard exists at a
//! time. Waiters spin briefly, then yield the CPU with `sched_yield` (a bare system call), so a
//! preempted holder on a busy machine is not starved. No libc lock is ever taken. After `fork`
//! the child calls [`SpinLock::force_unlock`], the only way to release a lock without a guard.
//!
//! The flag has a cache line pair of its own: a waiter spinning on it then never takes away
//! the line of the data the holder is writing, which on a machine whose two CPUs are far apart
//! (a cache line's round trip 400-500 ns instead of 100-130) stretched every contended
//! critical section.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, Ordering};

/// Spins before yielding once.
const SPINS_BEFORE_YIELD: u32 = 64;

/// Mutual exclusion by spinning.
pub(crate) struct SpinLock<T> {
    locked: Flag,
    data: UnsafeCell<T>,
}

/// The lock's flag, alone in its 128 bytes (two cache lines: adjacent-line prefetchers fetch
/// lines in pairs).
#[repr(align(128))]
struct Flag(AtomicBool);

impl Deref for Flag {
    type Target = AtomicBool;
    fn deref(&self) -> &AtomicBool {
        &self.0
    }
}

// SAFETY: the data is reached only by the single guard holder, so sharing the lock between
// threads shares `T` only by moving access from thread to thread.
unsafe impl<T: Send> Sync for SpinLock<T> {}

/// Access to the data of a held lock; releases it when dropped.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
}

impl<T> SpinLock<T> {
    pub(crate) const fn new(data: T) -> SpinLock<T> {
        SpinLock {
            locked: Flag(AtomicBool::new(false)),
            data: UnsafeCell::new(data),
        }
    }

    /// Takes the lock, waiting as long as it takes.
    #[inline]
    pub(crate) fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        SpinGuard { lock: self }
    }

    /// Takes the lock if it is free at once.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        (!self.locked.load(Ordering::Relaxed)
            && self
                .locked
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok())
        // Lazily: a guard made and dropped on failure would release the holder's lock.
        .then(|| SpinGuard { lock: self })
    }

    #[cold]
    fn lock_contended(&self) {
        loop {
            for _ in 0..SPINS_BEFORE_YIELD {
                if !self.locked.load(Ordering::Relaxed)
                    && self
                        .locked
                        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                {
                    return;
                }
                core::hint::spin_loop();
            }
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        }
    }

    /// Takes the lock and keeps it without a guard (for `fork`'s prepare handler).
    pub(crate) fn lock_for_fork(&self) {
        core::mem::forget(self.lock());
    }

    /// Releases the lock whoever holds it.
    ///
    /// # Safety
    /// No guard is in use: only the fork handlers call this, on a lock taken by
    /// [`SpinLock::lock_for_fork`] (or held by a thread that does not exist in the child).
    pub(crate) unsafe fn force_unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the data exists.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard holds the lock, so no other reference to the data exists.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}
