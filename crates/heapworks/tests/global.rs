//! `LockedHeap` as this test program's `#[global_allocator]`, given its memory by
//! `with_region`: the test harness and the standard library allocate before any test runs, and
//! all of it goes through this heap. Misuse through `GlobalAlloc` must abort with its message,
//! neither unwinding nor deadlocking on the heap's lock (the panic message allocates).
//!
//! Under Miri only with `--cfg heapworks_miri_global` (CI's own step:
//! `RUSTFLAGS="--cfg heapworks_miri_global" MIRIFLAGS="-Zmiri-strict-provenance
//! -Zmiri-disable-stacked-borrows" cargo +nightly miri test -p heapworks --all-features --test
//! global`), on a smaller arena, without the abort (Miri cannot spawn the child). Checked
//! builds reach a block's header through its region's provenance, so the header reads pass
//! Stacked Borrows too; what does not is the standard library freeing a `Box` while it is a
//! protected function argument (a thread's start closure): the heap writes its free-list links
//! into the freed bytes through the region's pointer, which Stacked and Tree Borrows both
//! reject for any allocator written in Rust that keeps its links in freed memory, as they do
//! not model the global allocator's entry points (rust-lang/miri#2686, #2104). Hence the
//! aliasing model off for this test, with strict provenance still on.

#![cfg(any(not(miri), heapworks_miri_global))]

use std::alloc::{GlobalAlloc, Layout};

use heapworks::LockedHeap;

/// Large natively: an abort prints a backtrace, and symbolizing it allocates tens of MiB.
const ARENA_LEN: usize = if cfg!(miri) { 4 << 20 } else { 512 << 20 };
static mut ARENA: [u8; ARENA_LEN] = [0; ARENA_LEN];

#[global_allocator]
// SAFETY: nothing else uses the arena.
static ALLOCATOR: LockedHeap =
    unsafe { LockedHeap::with_region(&raw mut ARENA as *mut u8, ARENA_LEN) };

/// Set in the child process that commits the misuse.
const MISUSE_CHILD: &str = "HEAPWORKS_TEST_DOUBLE_FREE";

#[test]
fn the_region_is_claimed_at_the_first_request() {
    let held: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    let heap = ALLOCATOR.lock();
    let arena = (&raw const ARENA).addr();
    assert!(heap.stats().in_use > 0);
    assert!(heap.stats().in_use + heap.stats().free <= ARENA_LEN);
    let inside = held
        .iter()
        .all(|s| (arena..arena + ARENA_LEN).contains(&s.as_ptr().addr()));
    assert!(inside, "every block lies in the arena");
    heap.check().unwrap();
}

#[test]
fn a_request_beyond_the_region_gets_null() {
    let layout = Layout::from_size_align(ARENA_LEN, 8).unwrap();
    // SAFETY: non-zero size.
    let block = unsafe { ALLOCATOR.alloc(layout) };
    assert!(block.is_null());
    ALLOCATOR.lock().check().unwrap();
}

#[test]
fn misuse_through_global_alloc_aborts_with_its_message() {
    if cfg!(miri) || !cfg!(any(debug_assertions, feature = "checked")) {
        return; // only checked builds detect misuse
    }
    if std::env::var_os(MISUSE_CHILD).is_some() {
        free_twice();
    }
    let (status, stderr) = heapworks_testkit::child::run_test_alone(
        "misuse_through_global_alloc_aborts_with_its_message",
        MISUSE_CHILD,
        "after the double free (a deadlock on the heap's lock?)",
    );
    assert!(
        !status.success(),
        "the double free went unnoticed: {stderr}"
    );
    assert!(stderr.contains("heapworks: double free of 0x"), "{stderr}");
    assert!(
        stderr.contains("cannot unwind"),
        "aborts instead of unwinding: {stderr}"
    );
}

fn free_twice() -> ! {
    let layout = Layout::from_size_align(48, 8).unwrap();
    // SAFETY: non-zero size; the second free is the misuse under test, which a checked build
    // detects before touching the heap.
    unsafe {
        let block = ALLOCATOR.alloc(layout);
        assert!(!block.is_null());
        ALLOCATOR.dealloc(block, layout);
        ALLOCATOR.dealloc(block, layout);
    }
    unreachable!("a checked build aborts at the second free");
}
