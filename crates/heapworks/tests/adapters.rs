//! The adapters: `LockedHeap` as a shared `GlobalAlloc` (several threads), `UnsyncHeap`, and the
//! `allocator_api2` implementation.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::Arc;

use heapworks::{LockedHeap, UnsyncHeap};
use heapworks_testkit::Arena;

#[test]
fn locked_heap_serves_several_threads() {
    let mut arena = Arena::new(4 << 20);
    let heap: Arc<LockedHeap> = Arc::new(LockedHeap::new());
    // SAFETY: the arena outlives every use of the heap below (threads are joined).
    unsafe { heap.claim(arena.base(), arena.len()) }.unwrap();
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let heap = Arc::clone(&heap);
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
    let locked = heap.lock();
    locked.check().unwrap();
    assert_eq!(locked.stats().in_use, 0);
    let expected = if cfg!(miri) { 400 } else { 8000 };
    assert_eq!(
        locked.stats().allocations,
        cfg!(feature = "counters").then_some(expected)
    );
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
