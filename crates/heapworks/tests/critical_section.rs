//! `CriticalSectionHeap` (feature `critical-section`) over `critical-section`'s `std`
//! implementation (a process-wide re-entrant lock), as a `GlobalAlloc` shared by threads: threads
//! are excluded from each other, a holder's `try_lock` fails, and a holder that locks again
//! aborts with its message instead of deadlocking. (examples/firmware uses it as the
//! `#[global_allocator]` of a Cortex-M image.)
#![cfg(feature = "critical-section")]

use std::alloc::{GlobalAlloc, Layout};
use std::sync::Arc;

use heapworks::CriticalSectionHeap;
use heapworks_testkit::Arena;

/// Set in the child process that locks the heap twice.
const REENTRY_CHILD: &str = "HEAPWORKS_TEST_REENTRY";

/// A heap over `arena`, which must outlive every use of it.
fn heap_over(arena: &mut Arena) -> Arc<CriticalSectionHeap> {
    let heap = Arc::new(CriticalSectionHeap::new());
    // SAFETY: the callers keep the arena alive until the heap's last use.
    unsafe { heap.claim(arena.base(), arena.len()) }.unwrap();
    heap
}

#[test]
fn threads_share_the_heap() {
    let mut arena = Arena::new(4 << 20);
    let heap = heap_over(&mut arena);
    let rounds = if cfg!(miri) { 60 } else { 3000 };
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let heap = Arc::clone(&heap);
            std::thread::spawn(move || {
                let mut held = Vec::new();
                for i in 0..rounds {
                    let layout = Layout::from_size_align(8 + (i * 29) % 700, 8).unwrap();
                    // SAFETY: non-zero size; every block is freed once, with its layout.
                    let block = unsafe { heap.alloc(layout) };
                    assert!(!block.is_null());
                    // SAFETY: the block holds `layout.size()` bytes.
                    unsafe { block.write_bytes(t, layout.size()) };
                    held.push((block, layout));
                    if i % 3 == 0 {
                        let (block, layout) = held.swap_remove(i % held.len());
                        // SAFETY: every byte was written with this thread's mark.
                        let mine = (0..layout.size()).all(|k| unsafe { *block.add(k) } == t);
                        assert!(mine, "another thread wrote here");
                        // SAFETY: a live block with its layout.
                        unsafe { heap.dealloc(block, layout) };
                    }
                }
                for (block, layout) in held {
                    // SAFETY: a live block with its layout.
                    unsafe { heap.dealloc(block, layout) };
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    let heap = heap.lock();
    assert_eq!(heap.stats().in_use, 0);
    heap.check().unwrap();
}

#[test]
fn the_holder_cannot_take_the_lock_again() {
    let mut arena = Arena::new(64 << 10);
    let heap = heap_over(&mut arena);
    let guard = heap.lock();
    assert!(heap.try_lock().is_none());
    drop(guard);
    assert!(heap.try_lock().is_some());
}

#[test]
fn a_request_beyond_the_region_gets_null() {
    let mut arena = Arena::new(64 << 10);
    let heap = heap_over(&mut arena);
    let layout = Layout::from_size_align(1 << 20, 8).unwrap();
    // SAFETY: non-zero size.
    assert!(unsafe { heap.alloc(layout) }.is_null());
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process")]
fn reentry_aborts_with_its_message() {
    if std::env::var_os(REENTRY_CHILD).is_some() {
        let mut arena = Arena::new(64 << 10);
        let heap = heap_over(&mut arena);
        let _held = heap.lock();
        let _again = heap.lock();
        unreachable!("the second lock aborts");
    }
    let (status, stderr) = heapworks_testkit::child::run_test_alone(
        "reentry_aborts_with_its_message",
        REENTRY_CHILD,
        "on the second lock",
    );
    assert!(!status.success(), "the second lock went through: {stderr}");
    assert!(
        stderr.contains("locked again by its holder"),
        "names the fault: {stderr}"
    );
}
