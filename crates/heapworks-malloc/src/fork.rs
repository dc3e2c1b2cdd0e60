//! Fork safety: every lock is held across `fork` in a process with threads, taken in an order
//! that cannot deadlock with stdio, and none is taken in a single-threaded process.
//!
//! Invariants:
//! - A process with other threads: the prepare handler takes stdio's list lock
//!   (`_IO_list_lock`), then every arena's lock in index order, then the slot region's, then
//!   the large-cache lock, then secure mode's quarantine lock. No lock of ours is ever taken
//!   while another is held (an arena's growth reports what it committed and the large cache
//!   gives as much back after the arena's lock is released; see [`crate::thread`]), so any
//!   order would do for them; the list lock must come first. Taking stdio's lock first is the
//!   order glibc's own `fork` uses for its malloc locks:
//!   a thread that holds a `FILE`'s lock may be waiting for ours (`getline` reallocs under its
//!   `FILE` lock), and a thread flushing every stream holds the list lock while it waits for
//!   that `FILE`. Holding our locks first and then waiting in `fork` for the list lock closed
//!   that cycle; now the forking thread waits for the list lock before it holds anything of
//!   ours. The remote lists and the address map take no lock: a push or a leaf install is one
//!   compare-and-swap, complete or not done at the fork.
//! - The list lock is recursive, so glibc's `fork` taking it again after our handler is fine;
//!   the parent handler releases our hold on it after glibc has released its own, and in the
//!   child glibc resets it, so the child handler leaves it alone.
//! - A single-threaded process (`__libc_single_threaded`, as glibc decides for its own locks)
//!   takes nothing: no other thread can be mid-update, and the only holder of a lock could be
//!   this very thread, interrupted by a signal whose handler forks (waiting for it would hang
//!   forever). A child then inherits exactly the state its thread left.
//! - [`OWNER`] names the thread (by its thread pointer, the same in the child) that holds the
//!   locks for a fork, and [`NESTED`] counts the forks that thread started from signal handlers
//!   while holding them: those take nothing more and release nothing, and the outermost fork's
//!   handlers release everything. Only the owner reads or writes [`NESTED`].
//!
//! In the child only the forking thread exists: its cache and its arena stay valid; the other
//! threads' arenas are released for adoption (see [`crate::arena::keep_only`]), and their
//! caches are simply never used again (their blocks stay allocated in their arenas, their
//! large slots mapped: a bounded leak, at most the other threads' cache budgets and one large
//! mapping each).

use core::sync::atomic::{AtomicUsize, Ordering};

extern "C" {
    /// glibc's lock of its list of streams (recursive; exported since GLIBC_2.2.5).
    fn _IO_list_lock();
    fn _IO_list_unlock();
}

/// The thread pointer of the thread holding every lock for a fork; 0 when none does.
static OWNER: AtomicUsize = AtomicUsize::new(0);
/// Forks started from signal handlers by [`OWNER`] while it holds the locks.
static NESTED: AtomicUsize = AtomicUsize::new(0);

/// Registers the handlers (from the library constructor; `pthread_atfork` itself may allocate,
/// which is fine there).
pub(crate) fn register() {
    // SAFETY: the handlers are `extern "C"` functions that live as long as the process.
    unsafe {
        libc::pthread_atfork(
            Some(prepare),
            Some(release_in_parent),
            Some(release_in_child),
        );
    }
}

/// The calling thread's thread pointer: unique among live threads, and kept by the child of
/// a `fork`.
fn thread_pointer() -> usize {
    let pointer: usize;
    // SAFETY: `fs:0` holds the thread pointer on x86-64 Linux; reading it has no side effect.
    unsafe {
        core::arch::asm!(
            "mov {pointer}, qword ptr fs:[0]",
            pointer = out(reg) pointer,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    pointer
}

extern "C" fn prepare() {
    let me = thread_pointer();
    if OWNER.load(Ordering::Relaxed) == me {
        NESTED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if crate::os::single_threaded() {
        return;
    }
    // SAFETY: glibc's recursive stream-list lock, released by `release_in_parent` (and reset by
    // glibc in the child).
    unsafe { _IO_list_lock() };
    crate::arena::lock_all_for_fork();
    crate::tiny::lock_for_fork();
    crate::large::lock_for_fork();
    crate::secure::lock_for_fork();
    OWNER.store(me, Ordering::Relaxed);
}

/// Whether the calling thread's fork is the outermost one that took the locks (so its handler
/// releases them); a nested one is counted down instead.
fn outermost_owner() -> bool {
    if OWNER.load(Ordering::Relaxed) != thread_pointer() {
        return false;
    }
    if NESTED.load(Ordering::Relaxed) > 0 {
        NESTED.fetch_sub(1, Ordering::Relaxed);
        return false;
    }
    OWNER.store(0, Ordering::Relaxed);
    true
}

/// Releases our locks, which `prepare` took in this thread (no guard exists for them).
///
/// # Safety
/// Only the fork handlers call this, when [`outermost_owner`] said so.
unsafe fn unlock_ours() {
    // SAFETY: forwarded from the caller.
    unsafe {
        crate::secure::unlock_after_fork();
        crate::large::unlock_after_fork();
        crate::tiny::unlock_after_fork();
        crate::arena::unlock_all_after_fork();
    }
}

extern "C" fn release_in_parent() {
    if outermost_owner() {
        // SAFETY: `prepare` took the locks in this thread, and the list lock once more than
        // glibc, which has released its own hold by now.
        unsafe {
            unlock_ours();
            _IO_list_unlock();
        }
    }
}

extern "C" fn release_in_child() {
    if outermost_owner() {
        // The other threads are gone: their arenas are free for adoption.
        crate::arena::keep_only(crate::thread::owned_arena());
        // SAFETY: `prepare` took the locks in the thread that is the child's only one; glibc
        // has reset the list lock itself.
        unsafe { unlock_ours() };
    }
}
