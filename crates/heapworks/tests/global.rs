//! `LockedHeap` as this test program's `#[global_allocator]`, given its memory by
//! `with_region`: the test harness and the standard library allocate before any test runs, and
//! all of it goes through this heap. Misuse through `GlobalAlloc` must abort with its message,
//! neither unwinding nor deadlocking on the heap's lock (the panic message allocates).
//!
//! Not under Miri: the arena is large, since an abort prints a backtrace and symbolizing it
//! allocates tens of MiB. `tests/adapters.rs` covers `with_region` under Miri.
#![cfg(not(miri))]

use std::alloc::{GlobalAlloc, Layout};

use heapworks::LockedHeap;

const ARENA_LEN: usize = 512 << 20;
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
    if !cfg!(any(debug_assertions, feature = "checked")) {
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
