//! The adapters: `LockedHeap` as a shared `GlobalAlloc` (several threads; over a `Heap` and over
//! a `FrontHeap`), `UnsyncHeap` (over a `Heap` and over a `FrontHeap`), and the
//! `allocator_api2` implementation.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::Arc;

use heapworks::{LockedFrontHeap, LockedHeap, UnsyncHeap};
use heapworks_testkit::Arena;

#[test]
fn locked_heap_serves_several_threads() {
    let mut arena = Arena::new(4 << 20);
    let heap: Arc<LockedHeap> = Arc::new(LockedHeap::new());
    // SAFETY: the arena outlives every use of the heap below (threads are joined).
    unsafe { heap.claim(arena.base(), arena.len()) }.unwrap();
    let allocations = churn_on_four_threads(&heap);
    let locked = heap.lock();
    locked.check().unwrap();
    assert_eq!(locked.stats().in_use, 0);
    assert_eq!(
        locked.stats().allocations,
        cfg!(feature = "counters").then_some(allocations)
    );
}

#[test]
fn a_locked_front_serves_several_threads() {
    let mut arena = Arena::new(4 << 20);
    // SAFETY: the arena outlives every use of the heap below (threads are joined).
    let heap: Arc<LockedFrontHeap> =
        Arc::new(unsafe { LockedHeap::front_with_region(arena.base(), arena.len()) });
    churn_on_four_threads(&heap);
    let mut locked = heap.lock();
    locked.check().unwrap();
    assert!(locked.trim() > 0, "the small blocks came from slabs");
    assert_eq!(locked.stats().in_use, 0);
}

/// Four threads allocate, check and free blocks of 16–515 B through `heap`; returns how many
/// allocations they made.
fn churn_on_four_threads<H: GlobalAlloc + Send + Sync + 'static>(heap: &Arc<H>) -> u64 {
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let heap = Arc::clone(heap);
            std::thread::spawn(move || {
                let mut blocks = Vec::new();
                for i in 0..if cfg!(miri) { 100 } else { 2000usize } {
                    let layout = Layout::from_size_align(16 + (i * 37) % 500, 8).unwrap();
                    // SAFETY: non-zero size; blocks are freed once with their layout.
                    let p = unsafe { heap.alloc(layout) };
                    assert!(!p.is_null());
                    // SAFETY: `p` holds `layout.size()` bytes.
                    unsafe { p.write_bytes(t, layout.size()) };
                    blocks.push((p, layout));
                    if i % 3 == 0 {
                        let (p, layout) = blocks.swap_remove(i % blocks.len());
                        // SAFETY: every byte was written with this thread's mark.
                        assert!((0..layout.size()).all(|k| unsafe { *p.add(k) } == t));
                        // SAFETY: live block with its layout.
                        unsafe { heap.dealloc(p, layout) };
                    }
                }
                for (p, layout) in blocks {
                    // SAFETY: live block with its layout.
                    unsafe { heap.dealloc(p, layout) };
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    if cfg!(miri) {
        400
    } else {
        8000
    }
}

#[test]
fn global_alloc_reports_failure_as_null() {
    let mut arena = Arena::new(8 * 1024);
    let heap: LockedHeap = LockedHeap::new();
    // SAFETY: the arena outlives the heap.
    unsafe { heap.claim(arena.base(), arena.len()) }.unwrap();
    let layout = Layout::from_size_align(100_000, 8).unwrap();
    // SAFETY: non-zero size.
    assert!(unsafe { heap.alloc(layout) }.is_null());
    let small = Layout::from_size_align(100, 8).unwrap();
    // SAFETY: non-zero size; the block is live for the realloc.
    unsafe {
        let p = heap.alloc(small);
        assert!(
            heap.realloc(p, small, 100_000).is_null(),
            "failed realloc is null"
        );
        let q = heap.realloc(p, small, 200);
        assert!(!q.is_null());
        heap.dealloc(q, Layout::from_size_align(200, 8).unwrap());
    }
    heap.lock().check().unwrap();
}

#[test]
fn unsync_heap_serves_one_thread() {
    let mut arena = Arena::new(64 * 1024);
    // SAFETY: this test uses the heap from one thread only.
    let heap = unsafe { UnsyncHeap::new() };
    // SAFETY: the arena outlives the heap; no allocation is in progress.
    unsafe { heap.claim(arena.base(), arena.len()) }.unwrap();
    let layout = Layout::from_size_align(64, 64).unwrap();
    // SAFETY: non-zero size; freed once.
    unsafe {
        let p = heap.alloc(layout);
        assert_eq!(p.addr() % 64, 0);
        heap.dealloc(p, layout);
        assert_eq!(heap.heap().stats().in_use, 0);
        heap.heap().check().unwrap();
    }
}

#[cfg(feature = "allocator-api2")]
#[test]
fn allocator_api2_collections_run_on_the_locked_heap() {
    use allocator_api2::vec::Vec as ApiVec;

    let mut arena = Arena::new(1 << 20);
    let heap: LockedHeap = LockedHeap::new();
    // SAFETY: the arena outlives the heap and the vector.
    unsafe { heap.claim(arena.base(), arena.len()) }.unwrap();
    {
        let mut v = ApiVec::new_in(&heap);
        for i in 0..10_000u32 {
            v.push(i);
        }
        v.truncate(10);
        v.shrink_to_fit();
        assert_eq!(v.iter().sum::<u32>(), 45);
    }
    heap.lock().check().unwrap();
    assert_eq!(heap.lock().stats().in_use, 0);
}

#[test]
fn with_region_claims_its_region_at_the_first_request() {
    let mut arena = Arena::new(64 * 1024);
    // SAFETY: the arena outlives the heap and nothing else uses it.
    let heap: LockedHeap = unsafe { LockedHeap::with_region(arena.base(), arena.len()) };
    assert_eq!(
        heap.lock().stats().free,
        0,
        "nothing is claimed before a request"
    );
    let layout = Layout::from_size_align(100, 8).unwrap();
    // SAFETY: non-zero size; the block is freed once, with its layout.
    unsafe {
        let p = heap.alloc(layout);
        assert!(!p.is_null());
        assert!((arena.base().addr()..arena.base().addr() + arena.len()).contains(&p.addr()));
        let q = heap.realloc(p, layout, 1000);
        assert!(!q.is_null());
        heap.dealloc(q, Layout::from_size_align(1000, 8).unwrap());
    }
    let locked = heap.lock();
    locked.check().unwrap();
    assert!(locked.stats().free > 60 * 1024);
}

#[test]
fn with_region_serves_a_realloc_the_claimed_memory_cannot() {
    let mut reserve = Arena::new(64 * 1024);
    let mut first = Arena::new(4096);
    // SAFETY: both arenas outlive the heap and nothing else uses them.
    let heap: LockedHeap = unsafe { LockedHeap::with_region(reserve.base(), reserve.len()) };
    // SAFETY: as above.
    unsafe { heap.claim(first.base(), first.len()) }.unwrap();
    let small = Layout::from_size_align(64, 8).unwrap();
    // SAFETY: non-zero size; the block is live for the realloc and freed once.
    unsafe {
        let p = heap.alloc(small);
        assert!((first.base().addr()..first.base().addr() + 4096).contains(&p.addr()));
        p.write_bytes(7, 64);
        let grown = heap.realloc(p, small, 30_000);
        assert!(!grown.is_null(), "the realloc claimed the reserve");
        assert!((0..64).all(|i| *grown.add(i) == 7));
        heap.dealloc(grown, Layout::from_size_align(30_000, 8).unwrap());
    }
    heap.lock().check().unwrap();
}

#[test]
fn with_region_too_small_leaves_every_request_failing() {
    let mut arena = Arena::new(64);
    // SAFETY: the arena outlives the heap and nothing else uses it.
    let heap: LockedHeap = unsafe { LockedHeap::with_region(arena.base(), 8) };
    let layout = Layout::from_size_align(8, 8).unwrap();
    // SAFETY: non-zero size.
    assert!(unsafe { heap.alloc(layout) }.is_null());
    // SAFETY: as above; the reserve was used up by the first request.
    assert!(unsafe { heap.alloc(layout) }.is_null());
    heap.lock().check().unwrap();
}

#[test]
fn unsync_with_region_claims_at_the_first_request() {
    let mut arena = Arena::new(64 * 1024);
    // SAFETY: one thread; the arena outlives the heap and nothing else uses it.
    let heap = unsafe { UnsyncHeap::with_region(arena.base(), arena.len()) };
    let layout = Layout::from_size_align(300, 32).unwrap();
    // SAFETY: non-zero size; freed once; no allocation in progress when the heap is looked at.
    unsafe {
        let p = heap.alloc(layout);
        assert!(!p.is_null() && p.addr() % 32 == 0);
        heap.dealloc(p, layout);
        heap.heap().check().unwrap();
        assert_eq!(heap.heap().stats().in_use, 0);
    }
}

#[test]
fn unsync_front_serves_small_blocks_from_slots_and_claims_at_the_first_request() {
    let mut arena = Arena::new(64 * 1024);
    // SAFETY: one thread; the arena outlives the heap and nothing else uses it.
    let heap = unsafe { UnsyncHeap::front_with_region(arena.base(), arena.len()) };
    let small = Layout::from_size_align(24, 8).unwrap();
    // SAFETY: non-zero sizes; each block is freed once with its current layout; no allocation
    // is in progress when the heap is looked at.
    unsafe {
        let a = heap.alloc(small);
        let b = heap.alloc(small);
        assert!(!a.is_null() && !b.is_null());
        assert_eq!(b.addr() - a.addr(), 32, "neighbouring 32 B slots");
        a.write_bytes(7, 24);
        let grown = heap.realloc(a, small, 2000);
        assert!(!grown.is_null());
        assert!((0..24).all(|i| *grown.add(i) == 7));
        heap.dealloc(grown, Layout::from_size_align(2000, 8).unwrap());
        heap.dealloc(b, small);
        heap.heap().check().unwrap();
        heap.heap().trim();
        assert_eq!(heap.heap().stats().in_use, 0);
    }
}

#[test]
fn a_full_unsync_front_gives_its_free_slabs_back_before_it_fails() {
    let mut arena = Arena::new(64 * 1024);
    // SAFETY: one thread; the arena outlives the heap and nothing else uses it.
    let heap = unsafe { UnsyncHeap::front_with_region(arena.base(), arena.len()) };
    let small = Layout::from_size_align(40, 8).unwrap();
    // SAFETY: non-zero sizes; each block is freed once with its layout; no allocation is in
    // progress when the heap is looked at.
    unsafe {
        // Fill the arena with slots, then free them all: the slabs stay with the front.
        let mut blocks = Vec::new();
        loop {
            let block = heap.alloc(small);
            if block.is_null() {
                break;
            }
            blocks.push(block);
        }
        for &block in &blocks {
            heap.dealloc(block, small);
        }
        assert!(heap.heap().stats().largest_free < 16 * 1024);
        // A large request finds the slabs given back and coalesced (and, where a slab was, a
        // block that checked builds do not take for a slab).
        let large = Layout::from_size_align(32 * 1024, 8).unwrap();
        let block = heap.alloc(large);
        assert!(!block.is_null(), "the free slabs were not reclaimed");
        heap.dealloc(block, large);
        heap.heap().check().unwrap();
    }
}

#[cfg(feature = "allocator-api2")]
#[test]
fn allocator_misuse_is_reported_after_the_lock_is_released() {
    use allocator_api2::alloc::Allocator;

    if !cfg!(any(debug_assertions, feature = "checked")) {
        return; // only checked builds detect misuse
    }
    let mut arena = Arena::new(64 * 1024);
    let heap: LockedHeap = LockedHeap::new();
    // SAFETY: the arena outlives the heap.
    unsafe { heap.claim(arena.base(), arena.len()) }.unwrap();
    let allocator = &heap;
    let layout = Layout::from_size_align(48, 8).unwrap();
    let block = allocator.allocate(layout).unwrap().cast::<u8>();
    // SAFETY: a live block with its layout.
    unsafe { allocator.deallocate(block, layout) };
    let second = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the misuse under test: a checked build detects it before touching the heap.
        unsafe { allocator.deallocate(block, layout) }
    }));
    let message = second.expect_err("double free detected");
    let message = message
        .downcast_ref::<String>()
        .expect("a formatted message");
    assert!(message.contains("double free"), "{message}");
    let locked = heap
        .try_lock()
        .expect("the lock was released before the report");
    locked.check().unwrap();
}
