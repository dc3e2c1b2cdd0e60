//! `SourcedHeap`: growing from a memory source, in place when the new memory follows the last
//! region, as a region of its own when it does not, and a refusing source (null, heap unchanged);
//! the same over a `FrontHeap`.

use std::alloc::{GlobalAlloc, Layout};
use std::ptr::NonNull;

use heapworks::{MemorySource, SourcedHeap};
use heapworks_testkit::Arena;

/// The source's unit, a stand-in for wasm's 64 KiB page.
const PAGE: usize = 4096;

/// Hands out pages of an arena in address order, `gap` pages apart, at most `budget` pages.
struct Pages {
    arena: Arena,
    next: usize,
    gap: usize,
    budget: usize,
    grants: usize,
}

impl Pages {
    fn new(pages: usize, gap: usize, budget: usize) -> Pages {
        Pages {
            arena: Arena::new(pages * PAGE),
            next: 0,
            gap,
            budget,
            grants: 0,
        }
    }
}

// SAFETY: each page range is handed out once, from an arena the source owns for as long as
// the heap lives (the heap owns the source).
unsafe impl MemorySource for Pages {
    fn grow(&mut self, min_bytes: usize) -> Option<(NonNull<u8>, usize)> {
        let pages = min_bytes.div_ceil(PAGE);
        if pages > self.budget || (self.next + pages) * PAGE > self.arena.len() {
            return None;
        }
        self.budget -= pages;
        self.grants += 1;
        // SAFETY: inside the arena (checked above).
        let base = unsafe { self.arena.base().add(self.next * PAGE) };
        self.next += pages + self.gap;
        Some((NonNull::new(base)?, pages * PAGE))
    }
}

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).unwrap()
}

/// Allocates a small block, then 1.5 pages, then 1.2 pages; returns how many times the heap
/// asked its source.
fn grants_for_three_blocks(gap: usize) -> usize {
    // SAFETY: the heap is used by this thread only.
    let heap = unsafe { SourcedHeap::with_source(Pages::new(64, gap, 64)) };
    for size in [100, PAGE * 3 / 2, PAGE * 6 / 5] {
        // SAFETY: non-zero size.
        let block = unsafe { heap.alloc(layout(size)) };
        assert!(!block.is_null(), "{size} B refused");
        // SAFETY: the block holds `size` bytes.
        unsafe { block.write_bytes(0xa5, size) };
    }
    // SAFETY: no call is in progress.
    unsafe { heap.heap() }.check().unwrap();
    // SAFETY: as above.
    unsafe { heap.source() }.grants
}

#[test]
fn contiguous_memory_extends_the_last_region_in_place() {
    // The 1.2-page block fits in what is left of the extended region: two requests only.
    assert_eq!(grants_for_three_blocks(0), 2);
}

#[test]
fn memory_apart_from_the_last_region_becomes_a_region_of_its_own() {
    // Each region keeps its own leftovers: the 1.2-page block needs a third grant.
    assert_eq!(grants_for_three_blocks(1), 3);
}

#[test]
fn a_refusing_source_gives_null_and_leaves_the_heap_unchanged() {
    // SAFETY: the heap is used by this thread only.
    let heap = unsafe { SourcedHeap::with_source(Pages::new(8, 0, 2)) };
    // SAFETY: non-zero size.
    let kept = unsafe { heap.alloc(layout(1000)) };
    assert!(!kept.is_null());
    // SAFETY: no call is in progress.
    let before = unsafe { heap.heap() }.stats();
    for size in [3 * PAGE, usize::MAX / 4, isize::MAX as usize - 7] {
        // SAFETY: non-zero size.
        assert!(
            unsafe { heap.alloc(layout(size)) }.is_null(),
            "{size} B served"
        );
        // SAFETY: a live block with its layout; growing it past the budget fails.
        assert!(unsafe { heap.realloc(kept, layout(1000), size) }.is_null());
    }
    // SAFETY: no call is in progress.
    let after = unsafe { heap.heap() }.stats();
    assert_eq!(
        (before.in_use, before.managed),
        (after.in_use, after.managed)
    );
    // SAFETY: as above.
    unsafe { heap.heap() }.check().unwrap();
    // SAFETY: a live block with its layout.
    unsafe { heap.dealloc(kept, layout(1000)) };
}

#[test]
fn realloc_grows_through_the_source_and_keeps_the_contents() {
    for gap in [0, 1] {
        // SAFETY: the heap is used by this thread only.
        let heap = unsafe { SourcedHeap::with_source(Pages::new(256, gap, 256)) };
        let mut size = 100;
        // SAFETY: non-zero size.
        let mut block = unsafe { heap.alloc(layout(size)) };
        // SAFETY: the block holds `size` bytes.
        unsafe { block.write_bytes(7, size) };
        while size < 64 * 1024 {
            let new_size = size * 2;
            // SAFETY: a live block with its layout.
            block = unsafe { heap.realloc(block, layout(size), new_size) };
            assert!(!block.is_null());
            // SAFETY: the first `size` bytes were kept; the block holds `new_size`.
            unsafe {
                assert!((0..size).all(|i| *block.add(i) == 7));
                block.write_bytes(7, new_size);
            }
            size = new_size;
        }
        // SAFETY: no call is in progress.
        unsafe { heap.heap() }.check().unwrap();
        // SAFETY: a live block with its layout.
        unsafe { heap.dealloc(block, layout(size)) };
        // SAFETY: no call is in progress.
        assert_eq!(unsafe { heap.heap() }.stats().in_use, 0);
    }
}

#[test]
fn a_sourced_front_grows_for_its_slabs_and_refuses_cleanly() {
    // SAFETY: the heap is used by this thread only.
    let heap = unsafe { SourcedHeap::front_with_source(Pages::new(8, 0, 3)) };
    let mut blocks = Vec::new();
    loop {
        // SAFETY: non-zero size.
        let block = unsafe { heap.alloc(layout(48)) };
        if block.is_null() {
            break;
        }
        // SAFETY: the block holds 48 bytes.
        unsafe { block.write_bytes(0x5a, 48) };
        blocks.push(block);
    }
    // Three pages of 64 B slots, less the region's framing and the slab headers.
    assert!(blocks.len() > 150, "{} blocks", blocks.len());
    // SAFETY: no call is in progress.
    unsafe { heap.heap() }.check().unwrap();
    // SAFETY: no call is in progress.
    assert_eq!(
        unsafe { heap.source() }.grants,
        3,
        "a page a grant, the whole budget"
    );
    for block in blocks {
        // SAFETY: each block is live with that layout, freed once.
        unsafe { heap.dealloc(block, layout(48)) };
    }
    // SAFETY: no call is in progress.
    let front = unsafe { heap.heap() };
    front.trim();
    front.check().unwrap();
    assert_eq!(front.stats().in_use, 0);
}
