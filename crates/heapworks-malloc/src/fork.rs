//! Fork safety: every lock is held across `fork`, so the child never inherits one mid-update.
//!
//! Invariants: the prepare handler takes the central lock, then the large-cache lock, then the
//! tiny-slab lock, the order in which other code nests them (only the large-cache lock is ever
//! taken with another held: the central heap's growth takes it, see
//! [`crate::large::release_for_growth`]), so the order cannot deadlock; the parent and child
//! handlers release them. In the child only the forking thread exists: its cache stays valid,
//! and the caches of the other threads are simply never used again (their blocks stay
//! allocated in the central heap, their large slots mapped: a bounded leak, at most the other
//! threads' cache budgets and one large mapping each).

/// Registers the handlers (from the library constructor; `pthread_atfork` itself may allocate,
/// which is fine there).
pub(crate) fn register() {
    // SAFETY: the handlers are `extern "C"` functions that live as long as the process.
    unsafe {
        libc::pthread_atfork(Some(prepare), Some(release), Some(release));
    }
}

extern "C" fn prepare() {
    crate::central::lock_for_fork();
    crate::large::lock_for_fork();
    crate::tiny::lock_for_fork();
}

extern "C" fn release() {
    // SAFETY: `prepare` took the three locks in this thread and no guard exists for them.
    unsafe {
        crate::tiny::unlock_after_fork();
        crate::large::unlock_after_fork();
        crate::central::unlock_after_fork();
    }
}
