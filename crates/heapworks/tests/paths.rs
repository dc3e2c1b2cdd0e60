//! One test per path through the heap: split, coalescing, in-place resizing, alignment near the
//! edges, regions, exhaustion, and the defined results for odd requests.

use std::alloc::Layout;
use std::ptr::NonNull;

use heapworks::{ClaimError, Heap, GRANULE};
use heapworks_testkit::Arena;

const WORD: usize = std::mem::size_of::<usize>();

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).unwrap()
}

fn alloc(heap: &mut Heap, size: usize) -> NonNull<u8> {
    heap.allocate(layout(size)).expect("room for the block")
}

/// The chunk a request of `n` bytes takes: payload plus a one-word header, in granules.
fn chunk_size(n: usize) -> usize {
    (n + WORD).div_ceil(GRANULE) * GRANULE
}

/// What a statistic kept by feature `counters` reads.
fn counted<T>(value: T) -> Option<T> {
    cfg!(feature = "counters").then_some(value)
}

fn addr(ptr: NonNull<u8>) -> usize {
    ptr.as_ptr().addr()
}

/// Frees through C-style `free`, which needs no size.
fn free(heap: &mut Heap, ptr: NonNull<u8>) {
    // SAFETY: every pointer the tests free came from this heap and is freed once.
    unsafe { heap.free(ptr) }
}

#[test]
fn a_fresh_heap_is_one_free_chunk_and_splits_from_the_front() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let empty = heap.stats();
    assert_eq!(empty.in_use, 0);
    assert_eq!(empty.largest_free + WORD, empty.free);
    let a = alloc(&mut heap, 100);
    let b = alloc(&mut heap, 100);
    assert_eq!(addr(a) % GRANULE, 0);
    let chunk = chunk_size(100);
    assert_eq!(addr(b) - addr(a), chunk);
    let stats = heap.stats();
    assert_eq!(stats.in_use, 2 * chunk);
    assert_eq!(
        stats.largest_free + WORD,
        stats.free,
        "the rest stays one chunk"
    );
    heap.check().unwrap();
}

#[test]
fn a_run_carves_equal_blocks_back_to_back_and_each_frees_alone() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let empty = heap.stats();
    let mut run = Vec::new();
    assert_eq!(
        heap.allocate_run(layout(40), 10, |block| run.push(block)),
        10
    );
    let chunk = chunk_size(40);
    assert!(run
        .windows(2)
        .all(|pair| addr(pair[1]) - addr(pair[0]) == chunk));
    assert_eq!(heap.stats().in_use, 10 * chunk);
    assert_eq!(heap.stats().allocations, counted(10));
    heap.check().unwrap();
    // The rest of the chunk stayed free: a plain allocation lands right after the run.
    let after = alloc(&mut heap, 40);
    assert_eq!(addr(after), addr(run[9]) + chunk);
    for block in run.into_iter().rev().chain([after]) {
        free(&mut heap, block);
        heap.check().unwrap();
    }
    let whole = heap.stats();
    assert_eq!(whole.in_use, 0);
    assert_eq!(
        whole.largest_free, empty.largest_free,
        "the run merged back whole"
    );
    // Nothing asked, nothing made.
    assert_eq!(heap.allocate_run(layout(40), 0, |_| panic!("no block")), 0);
    assert_eq!(heap.stats(), whole);
}

#[test]
fn a_run_stops_at_what_the_largest_chunk_holds() {
    let mut arena = Arena::new(4096);
    let mut heap = arena.heap();
    let size = 100;
    let chunk = chunk_size(size);
    // A block in front sized so that the free chunk after it leaves a one-granule tail once
    // cut into blocks: too small to be a chunk of its own.
    let whole = heap.stats().largest_free + WORD;
    let mut front = (whole - GRANULE) % chunk;
    if front < 4 * WORD {
        front += chunk;
    }
    alloc(&mut heap, front - WORD);
    let largest = heap.stats().largest_free + WORD;
    assert_eq!(largest % chunk, GRANULE);
    let mut made = Vec::new();
    let count = heap.allocate_run(layout(size), 1000, |block| made.push(block));
    assert_eq!(
        count,
        largest / chunk,
        "as many blocks as the one chunk holds"
    );
    assert_eq!(made.len(), count);
    heap.check().unwrap();
    // The last block took the tail.
    let tail = largest % chunk;
    // SAFETY: the blocks are live.
    assert_eq!(
        unsafe { Heap::usable_size(made[count - 1]) },
        chunk + tail - WORD
    );
    assert_eq!(heap.stats().free, 0);
    // A full heap makes no block and changes nothing.
    let full = heap.stats();
    assert_eq!(heap.allocate_run(layout(size), 8, |_| panic!("no room")), 0);
    assert_eq!(heap.stats(), full);
    heap.check().unwrap();
}

#[test]
fn an_over_aligned_run_is_made_one_aligned_block_at_a_time() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let aligned = Layout::from_size_align(24, 256).unwrap();
    let mut run = Vec::new();
    assert_eq!(heap.allocate_run(aligned, 5, |block| run.push(block)), 5);
    assert!(run.iter().all(|&block| addr(block).is_multiple_of(256)));
    heap.check().unwrap();
    for block in run {
        // SAFETY: each block came from this heap with `aligned`.
        unsafe { heap.deallocate(block, aligned) };
    }
    assert_eq!(heap.stats().in_use, 0);
}

#[test]
fn free_coalesces_right_left_and_both() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let blocks: Vec<_> = (0..6).map(|_| alloc(&mut heap, 200)).collect();
    let chunk = addr(blocks[1]) - addr(blocks[0]);
    // The rest of the arena taken, the merged chunks are the only room: a request of their
    // size lands there whatever the bins' granularity (coarser on 32-bit targets).
    let largest = heap.stats().largest_free;
    let rest = alloc(&mut heap, largest - WORD);
    // Right: free [1] then [0]; [0] merges with [1].
    free(&mut heap, blocks[1]);
    free(&mut heap, blocks[0]);
    heap.check().unwrap();
    let merged = alloc(&mut heap, 2 * chunk - WORD);
    assert_eq!(merged, blocks[0], "right coalescing makes one chunk");
    // Left: free [2] then [3]; [3] merges into [2].
    free(&mut heap, blocks[2]);
    free(&mut heap, blocks[3]);
    heap.check().unwrap();
    let merged_left = alloc(&mut heap, 2 * chunk - WORD);
    assert_eq!(merged_left, blocks[2], "left coalescing makes one chunk");
    // Both: free the two around the middle, then the middle.
    free(&mut heap, merged);
    free(&mut heap, blocks[4]);
    free(&mut heap, merged_left);
    heap.check().unwrap();
    let everything_before_5 = alloc(&mut heap, 5 * chunk - WORD);
    assert_eq!(everything_before_5, blocks[0], "both sides coalesce");
    free(&mut heap, everything_before_5);
    free(&mut heap, blocks[5]);
    free(&mut heap, rest);
    let stats = heap.stats();
    assert_eq!(stats.in_use, 0);
    assert_eq!(stats.largest_free + WORD, stats.free, "all one chunk again");
    heap.check().unwrap();
}

#[test]
fn realloc_grows_into_a_free_neighbour_in_place() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let a = alloc(&mut heap, 100);
    let b = alloc(&mut heap, 1000);
    let _guard = alloc(&mut heap, 16);
    free(&mut heap, b);
    // SAFETY: `a` is live with this layout.
    let grown = unsafe { heap.realloc(a, layout(100), 900) }.unwrap();
    assert_eq!(grown, a);
    // SAFETY: as above.
    assert!(unsafe { Heap::usable_size(a) } >= 900);
    heap.check().unwrap();
    // Growing past the free neighbour moves the block.
    // SAFETY: as above.
    let moved = unsafe { heap.realloc(a, layout(900), 5000) }.unwrap();
    assert_ne!(moved, a);
    assert_eq!(heap.stats().reallocs, counted(2));
    heap.check().unwrap();
}

/// A byte pattern whose order a misplaced copy would break.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

/// Whether the first `len` bytes at `ptr` hold [`pattern`].
fn holds_pattern(ptr: NonNull<u8>, len: usize) -> bool {
    // SAFETY: the callers pass a live block of at least `len` bytes.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) };
    bytes.iter().enumerate().all(|(i, &b)| b == pattern(i))
}

/// Fills the heap with blocks of `left`, `middle` and `right` bytes and the rest, writes
/// [`pattern`] into the middle one, frees its neighbours and grows it to `new_size` bytes,
/// which only the three chunks together hold: the block slides back. Returns it.
fn slide_back(heap: &mut Heap, [left, middle, right]: [usize; 3], new_size: usize) -> NonNull<u8> {
    let left_block = alloc(heap, left);
    let middle_block = alloc(heap, middle);
    let right_block = alloc(heap, right);
    let rest = heap.stats().largest_free;
    let _fill = alloc(heap, rest);
    // SAFETY: `middle_block` is live with `middle` bytes.
    let bytes = unsafe { std::slice::from_raw_parts_mut(middle_block.as_ptr(), middle) };
    bytes
        .iter_mut()
        .enumerate()
        .for_each(|(i, b)| *b = pattern(i));
    free(heap, left_block);
    free(heap, right_block);
    // SAFETY: `middle_block` is live with this layout.
    let grown = unsafe { heap.realloc(middle_block, layout(middle), new_size) }.unwrap();
    assert_eq!(
        grown, left_block,
        "the block slid back into its left neighbour"
    );
    assert!(
        holds_pattern(grown, middle),
        "contents kept, in order, across the slide"
    );
    heap.check().unwrap();
    grown
}

#[test]
fn a_full_heap_grows_a_block_back_into_its_free_neighbours() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    // Neither neighbour alone, nor any other chunk, holds 5000 bytes; the three together do.
    let grown = slide_back(&mut heap, [2000, 2000, 2000], 5000);
    // Beyond the three, the request fails and the block stays as it was.
    // SAFETY: `grown` is live with this layout.
    assert!(unsafe { heap.realloc(grown, layout(5000), 7000) }.is_err());
    assert!(holds_pattern(grown, 2000));
    heap.check().unwrap();
}

#[test]
fn a_block_slides_back_a_shorter_distance_than_its_length() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    // The block and its right neighbour fall just short of 5000 bytes; with the small left
    // one they hold them. The copy overlaps its source: it moves back by the left chunk's
    // size, in many pieces.
    slide_back(&mut heap, [40, 3000, 1960], 5000);
}

#[test]
fn the_last_block_grows_into_the_free_tail() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let a = alloc(&mut heap, 64);
    // SAFETY: `a` is live.
    unsafe { heap.try_grow_in_place(a, 40_000) }.unwrap();
    // SAFETY: as above.
    assert!(unsafe { Heap::usable_size(a) } >= 40_000);
    // SAFETY: as above.
    assert!(unsafe { heap.try_grow_in_place(a, 80_000) }.is_err());
    heap.check().unwrap();
}

#[test]
fn shrinking_splits_off_the_tail_in_place() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let a = alloc(&mut heap, 1000);
    let guard = alloc(&mut heap, 16);
    // The rest of the region filled, so that the tail split off below is the only free memory:
    // a request that fills it takes it whichever the index's order (the native victim's
    // own-bin head first, or wasm32's good fit and top, which skip the request's own bin).
    while heap.allocate(layout(1024)).is_ok() {}
    while heap.allocate(layout(8)).is_ok() {}
    let before = heap.stats();
    // SAFETY: `a` is live with this layout.
    let shrunk = unsafe { heap.realloc(a, layout(1000), 100) }.unwrap();
    assert_eq!(shrunk, a);
    let after = heap.stats();
    assert!(after.in_use < before.in_use);
    // The tail is a free chunk right behind the shrunk block, up to the guard's header, the
    // heap's only one: a request filling it exactly takes it.
    // SAFETY: `a` is live.
    let tail_chunk = addr(guard) - WORD - (addr(a) + unsafe { Heap::usable_size(a) });
    let next = alloc(&mut heap, tail_chunk - WORD);
    // SAFETY: `a` is live.
    assert_eq!(addr(next), addr(a) + unsafe { Heap::usable_size(a) } + WORD);
    heap.check().unwrap();
}

/// A heap holding a 40 000 B block `big` (its bytes 0x5a) and, apart from it, a free chunk of
/// `hole` bytes between two guards. With `short`, a filler takes the arena's free rest but
/// 40 KiB, leaving less than a quarter of the heap free; otherwise the rest stays free.
fn big_block_and_hole(heap: &mut Heap, hole: usize, short: bool) -> (NonNull<u8>, NonNull<u8>) {
    let big = alloc(heap, 40_000);
    // SAFETY: `big` is live with 40 000 bytes.
    unsafe { big.as_ptr().write_bytes(0x5a, 40_000) };
    let _guard = alloc(heap, 16);
    let spot = alloc(heap, hole);
    let _guard = alloc(heap, 16);
    if short {
        let _filler = alloc(heap, heap.stats().largest_free - 40 * 1024);
    }
    free(heap, spot);
    (big, spot)
}

#[test]
fn a_large_block_shrinks_into_a_tight_free_chunk_when_memory_runs_short() {
    let mut arena = Arena::new(256 * 1024);
    let mut heap = arena.heap();
    let (big, spot) = big_block_and_hole(&mut heap, 12_000, true);
    let before = heap.stats();
    assert!(before.free < before.managed / 4);
    // SAFETY: `big` is live with this layout.
    let moved = unsafe { heap.realloc(big, layout(40_000), 10_500) }.unwrap();
    assert_eq!(moved, spot, "the block took the smaller free chunk");
    // SAFETY: `moved` is live with at least 10 500 bytes.
    let bytes = unsafe { std::slice::from_raw_parts(moved.as_ptr(), 10_500) };
    assert!(bytes.iter().all(|&b| b == 0x5a), "contents kept");
    let stats = heap.stats();
    assert_eq!(
        stats.free,
        before.free + chunk_size(40_000) - chunk_size(10_500)
    );
    assert!(
        stats.largest_free >= chunk_size(40_000),
        "the old chunk was freed whole"
    );
    heap.check().unwrap();
}

#[test]
fn a_large_block_shrinks_in_place_otherwise() {
    // Plenty of free memory: no move, though the hole fits.
    let mut arena = Arena::new(256 * 1024);
    let mut heap = arena.heap();
    let (big, _) = big_block_and_hole(&mut heap, 12_000, false);
    // SAFETY: `big` is live with this layout.
    let shrunk = unsafe { heap.realloc(big, layout(40_000), 10_500) }.unwrap();
    assert_eq!(shrunk, big);
    heap.check().unwrap();
    // Memory short, but the hole would be left with 2 KiB or more.
    let mut arena = Arena::new(256 * 1024);
    let mut heap = arena.heap();
    let (big, _) = big_block_and_hole(&mut heap, 14_000, true);
    // SAFETY: as above.
    let shrunk = unsafe { heap.realloc(big, layout(40_000), 10_500) }.unwrap();
    assert_eq!(shrunk, big);
    // Below 8 KiB a block never moves, even into a chunk that it fills.
    let (small, spot) = big_block_and_hole(&mut heap, 5_000, false);
    let stats = heap.stats();
    assert!(stats.free < stats.managed / 4);
    // SAFETY: as above.
    let shrunk = unsafe { heap.realloc(small, layout(40_000), 4_900) }.unwrap();
    assert_ne!(shrunk, spot);
    assert_eq!(shrunk, small);
    heap.check().unwrap();
}

#[test]
fn try_shrink_in_place_never_moves() {
    let mut arena = Arena::new(256 * 1024);
    let mut heap = arena.heap();
    let (big, _) = big_block_and_hole(&mut heap, 12_000, true);
    let in_use = heap.stats().in_use;
    // SAFETY: `big` is live.
    unsafe { heap.try_shrink_in_place(big, 10_000) }.unwrap();
    // SAFETY: as above.
    assert!((10_000..10_000 + GRANULE).contains(&unsafe { Heap::usable_size(big) }));
    assert_eq!(
        heap.stats().in_use,
        in_use - (chunk_size(40_000) - chunk_size(10_000))
    );
    // SAFETY: as above.
    assert!(unsafe { heap.try_shrink_in_place(big, 20_000) }.is_err());
    heap.check().unwrap();
}

#[test]
fn shrinking_hands_even_a_small_tail_to_a_free_neighbour() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let a = alloc(&mut heap, 120);
    let before = heap.stats().in_use;
    // SAFETY: `a` is live; its right neighbour is the free rest of the arena.
    unsafe { heap.realloc(a, layout(120), 100) }.unwrap();
    assert_eq!(
        heap.stats().in_use,
        before - (chunk_size(120) - chunk_size(100))
    );
    heap.check().unwrap();
}

#[test]
fn aligned_blocks_near_region_edges() {
    for align_log2 in 4..=13 {
        let align = 1 << align_log2;
        for offset in [0usize, 8, 24, 40, 72] {
            let mut arena = Arena::new(4 * align + 1024);
            let base = arena.base();
            let mut heap = Heap::new();
            // SAFETY: the arena outlives the heap; the offset keeps us inside it.
            unsafe { heap.claim(base.add(offset), arena.len() - offset) }.unwrap();
            let mut blocks = Vec::new();
            while let Ok(block) = heap.allocate(Layout::from_size_align(align / 2, align).unwrap())
            {
                assert_eq!(addr(block) % align, 0);
                blocks.push(block);
                heap.check().unwrap();
            }
            assert!(
                !blocks.is_empty(),
                "align {align} offset {offset}: nothing fit"
            );
            for block in blocks {
                free(&mut heap, block);
            }
            let stats = heap.stats();
            assert_eq!(stats.in_use, 0);
            assert_eq!(stats.largest_free + WORD, stats.free);
            heap.check().unwrap();
        }
    }
}

#[test]
fn regions_at_any_byte_offset_serve_every_path() {
    for offset in [1usize, 3, 5, 7, 9, 11, 13, 15] {
        let mut arena = Arena::new(32 * 1024 + 16);
        let mut heap = Heap::new();
        // SAFETY: the arena outlives the heap; the offset keeps the region inside it.
        unsafe { heap.claim(arena.base().add(offset), 32 * 1024) }.unwrap();
        let a = alloc(&mut heap, 100);
        let b = heap
            .allocate(Layout::from_size_align(200, 64).unwrap())
            .unwrap();
        assert_eq!(addr(a) % GRANULE, 0, "offset {offset}");
        assert_eq!(addr(b) % 64, 0, "offset {offset}");
        let c = alloc(&mut heap, 3000);
        free(&mut heap, a);
        // SAFETY: `c` is live with this layout.
        let c =
            unsafe { heap.realloc(c, Layout::from_size_align(3000, 8).unwrap(), 9000) }.unwrap();
        heap.check().unwrap();
        free(&mut heap, b);
        free(&mut heap, c);
        let stats = heap.stats();
        assert_eq!(stats.in_use, 0, "offset {offset}");
        assert_eq!(
            stats.largest_free + WORD,
            stats.free,
            "offset {offset}: all merged"
        );
        heap.check().unwrap();
    }
}

#[test]
fn aligned_padding_goes_back_to_the_index() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let _small = alloc(&mut heap, 8);
    let before = heap.stats();
    let block = heap
        .allocate(Layout::from_size_align(1, 4096).unwrap())
        .unwrap();
    assert_eq!(addr(block) % 4096, 0);
    let after = heap.stats();
    // Only the block itself is in use: the padding in front is free again.
    assert!(after.in_use - before.in_use < 4096);
    let filler = alloc(&mut heap, 64);
    assert!(addr(filler) < addr(block), "the padding in front is reused");
    heap.check().unwrap();
}

#[test]
fn extend_grows_a_region_in_place() {
    let mut arena = Arena::new(64 * 1024);
    let base = arena.base();
    let mut heap = Heap::new();
    // SAFETY: the arena outlives the heap; we claim a prefix and extend within the arena.
    unsafe { heap.claim(base, 4096) }.unwrap();
    let mut blocks = Vec::new();
    while let Ok(block) = heap.allocate(layout(500)) {
        blocks.push(block);
    }
    let full = blocks.len();
    // A growth smaller than a chunk waits for the next one.
    // SAFETY: within the arena.
    unsafe { heap.extend(base, 4096 + 8) }.unwrap();
    heap.check().unwrap();
    // SAFETY: within the arena.
    unsafe { heap.extend(base, 32 * 1024) }.unwrap();
    heap.check().unwrap();
    while let Ok(block) = heap.allocate(layout(500)) {
        blocks.push(block);
    }
    assert!(blocks.len() > 6 * full);
    // Free the last block so the region ends in a free chunk, then extend again: it joins it.
    free(&mut heap, blocks.pop().unwrap());
    let before = heap.stats().largest_free;
    // SAFETY: within the arena.
    unsafe { heap.extend(base, 64 * 1024) }.unwrap();
    assert!(heap.stats().largest_free >= before + 30 * 1024);
    assert_eq!(
        // SAFETY: within the arena.
        unsafe { heap.extend(base, 1024) },
        Err(ClaimError::Shrinks)
    );
    assert_eq!(
        // SAFETY: never reaches memory: the base is unknown.
        unsafe { heap.extend(base.wrapping_add(16), 64 * 1024) },
        Err(ClaimError::UnknownRegion)
    );
    heap.check().unwrap();
}

#[test]
fn several_regions_serve_and_never_merge() {
    let mut first = Arena::new(8 * 1024);
    let mut second = Arena::new(8 * 1024);
    let mut heap = Heap::new();
    // SAFETY: both arenas outlive the heap and are disjoint.
    unsafe {
        heap.claim(first.base(), first.len()).unwrap();
        heap.claim(second.base(), second.len()).unwrap();
        assert_eq!(
            heap.claim(first.base().add(1024), 1024),
            Err(ClaimError::Overlaps)
        );
    }
    let mut blocks = Vec::new();
    while let Ok(block) = heap.allocate(layout(1000)) {
        blocks.push(block);
    }
    let in_first = blocks
        .iter()
        .filter(|b| first.range().contains(&addr(**b)))
        .count();
    let in_second = blocks
        .iter()
        .filter(|b| second.range().contains(&addr(**b)))
        .count();
    assert!(in_first > 0 && in_second > 0 && in_first + in_second == blocks.len());
    // A block the size of both regions together cannot exist.
    assert!(heap.allocate(layout(12 * 1024)).is_err());
    for block in blocks {
        free(&mut heap, block);
    }
    assert_eq!(heap.stats().in_use, 0);
    heap.check().unwrap();
}

#[test]
fn out_of_memory_is_an_error_and_changes_nothing() {
    let mut arena = Arena::new(16 * 1024);
    let mut heap = arena.heap();
    let a = alloc(&mut heap, 10_000);
    let before = heap.stats();
    assert!(heap.allocate(layout(10_000)).is_err());
    // More than the free ~6 KiB, at a high alignment (the near-exhaustion scan runs and fails).
    assert!(heap
        .allocate(Layout::from_size_align(7000, 4096).unwrap())
        .is_err());
    // SAFETY: `a` is live with this layout.
    assert!(unsafe { heap.realloc(a, layout(10_000), 20_000) }.is_err());
    let mut after = heap.stats();
    assert_eq!(after, before);
    heap.check().unwrap();
    free(&mut heap, a);
    after = heap.stats();
    assert_eq!(after.in_use, 0);
}

#[test]
fn a_request_the_largest_chunk_can_serve_never_fails() {
    // Pairs of chunk sizes that share one 1/64-octave sub-bin: 4112 and 4096 B (below the
    // bounded best fit, so the good fit finds no bin above and walks this one), and 9200 and
    // 9120 B (searched by the bounded best fit).
    for (big_size, small_size) in [(4100, 4080), (9180, 9100)] {
        let mut arena = Arena::new(64 * 1024);
        let mut heap = arena.heap();
        // The larger chunk is freed first, then the smaller one becomes the bin's head. Asking
        // for all of the larger one must still succeed: a good fit that only looks at bins
        // above the request's own would fail here.
        let big = alloc(&mut heap, big_size);
        let _separator = alloc(&mut heap, 64);
        let small = alloc(&mut heap, small_size);
        let mut rest = Vec::new();
        while let Ok(block) = heap.allocate(layout(64)) {
            rest.push(block);
        }
        free(&mut heap, big);
        free(&mut heap, small);
        let largest = heap.stats().largest_free;
        assert_eq!(largest, chunk_size(big_size) - WORD);
        let again = heap
            .allocate(layout(largest))
            .expect("the largest chunk serves it");
        assert_eq!(again, big);
        heap.check().unwrap();
    }
}

#[test]
fn a_heap_may_move_after_it_claimed_memory() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let a = alloc(&mut heap, 100);
    let b = alloc(&mut heap, 3000);
    free(&mut heap, a);
    // Its lists end in a sink inside the region, not inside the heap value.
    let mut moved = Box::new(heap);
    moved.check().unwrap();
    let c = alloc(&mut moved, 100);
    assert_eq!(
        c, a,
        "the freed chunk is found through the moved heap's index"
    );
    free(&mut moved, b);
    free(&mut moved, c);
    moved.check().unwrap();
    assert_eq!(moved.stats().in_use, 0);
}

#[test]
fn odd_sizes_have_defined_results() {
    let mut arena = Arena::new(16 * 1024);
    let mut heap = arena.heap();
    // Zero-size requests get distinct minimal blocks.
    let z1 = heap.allocate(layout(0)).unwrap();
    let z2 = heap.allocate(layout(0)).unwrap();
    assert_ne!(z1, z2);
    // Realloc to zero shrinks in place to a minimal block.
    let a = alloc(&mut heap, 500);
    // SAFETY: `a` is live with this layout.
    let shrunk = unsafe { heap.realloc(a, layout(500), 0) }.unwrap();
    assert_eq!(shrunk, a);
    // Sizes near usize::MAX: refused, heap unchanged.
    let before = heap.stats();
    let huge = Layout::from_size_align(isize::MAX as usize - 15, 16).unwrap();
    assert!(heap.allocate(huge).is_err());
    // The largest sizes a `Layout` allows round to chunk sizes above `isize::MAX`: no chunk is
    // that large, so every search comes back empty.
    for align in [8, 16, 64] {
        let largest = Layout::from_size_align(isize::MAX as usize + 1 - align, align).unwrap();
        assert!(heap.allocate(largest).is_err());
        // SAFETY: `a` is live with its current layout.
        assert!(unsafe { heap.realloc(a, layout(0), largest.size()) }.is_err());
    }
    // SAFETY: `a` is live with its current layout.
    assert!(unsafe { heap.realloc(a, layout(0), usize::MAX - 64) }.is_err());
    // SAFETY: as above.
    assert!(unsafe { heap.try_grow_in_place(a, usize::MAX) }.is_err());
    assert_eq!(heap.stats(), before);
    // A huge alignment no region can satisfy.
    let beyond_any_region = 1usize << (usize::BITS - 2);
    assert!(heap
        .allocate(Layout::from_size_align(8, beyond_any_region).unwrap())
        .is_err());
    // A non-power-of-two alignment cannot even be expressed: `Layout` refuses it, so no raw
    // entry point of the heap ever sees one.
    assert!(Layout::from_size_align(8, 24).is_err());
    heap.check().unwrap();
}

#[test]
fn bad_regions_are_refused_without_touching_memory() {
    let mut arena = Arena::new(4096);
    let mut heap = Heap::new();
    // SAFETY: refused claims never touch memory.
    unsafe {
        assert!(matches!(
            heap.claim(arena.base(), 16),
            Err(ClaimError::TooSmall { size: 16, .. })
        ));
        assert_eq!(
            heap.claim(std::ptr::null_mut(), 4096),
            Err(ClaimError::NullBase)
        );
        assert_eq!(
            heap.claim(std::ptr::without_provenance_mut(usize::MAX - 64), 4096),
            Err(ClaimError::Overflow)
        );
    }
    assert!(arena.heap().allocate(layout(8)).is_ok());
    assert!(
        Heap::new().allocate(layout(8)).is_err(),
        "an empty heap has nothing"
    );
}

#[test]
fn statistics_follow_every_call() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let a = alloc(&mut heap, 1000);
    let b = alloc(&mut heap, 3000);
    let peak = heap.stats().in_use;
    free(&mut heap, b);
    // SAFETY: `a` is live with this layout.
    let a = unsafe { heap.realloc(a, layout(1000), 10) }.unwrap();
    let stats = heap.stats();
    let counts = (stats.allocations, stats.frees, stats.reallocs);
    assert_eq!(counts, (counted(2), counted(1), counted(1)));
    assert_eq!(stats.peak_in_use, counted(peak));
    assert!(stats.in_use < peak);
    heap.reset_peak();
    assert_eq!(heap.stats().peak_in_use, counted(heap.stats().in_use));
    free(&mut heap, a);
    assert_eq!(heap.stats().in_use, 0);
}

#[test]
fn grow_and_shrink_may_change_alignment() {
    let mut arena = Arena::new(64 * 1024);
    let mut heap = arena.heap();
    let a = alloc(&mut heap, 100);
    // SAFETY: `a` is live with `layout(100)`.
    let grown =
        unsafe { heap.grow(a, layout(100), Layout::from_size_align(200, 1024).unwrap()) }.unwrap();
    assert_eq!(addr(grown) % 1024, 0);
    let shrink_to = Layout::from_size_align(50, 1024).unwrap();
    // SAFETY: `grown` is live with align 1024.
    let shrunk = unsafe {
        heap.shrink(
            grown,
            Layout::from_size_align(200, 1024).unwrap(),
            shrink_to,
        )
    }
    .unwrap();
    assert_eq!(shrunk, grown, "shrinking keeps an aligned block in place");
    heap.check().unwrap();
}

#[test]
fn unused_spans_of_free_chunks_may_be_overwritten() {
    let mut arena = Arena::new(256 * 1024);
    let mut heap = arena.heap();
    let sizes = [40, 700, 3000, 90, 5000, 16, 1200, 256];
    let blocks: Vec<(NonNull<u8>, usize)> = (0..40)
        .map(|i| {
            let size = sizes[i % sizes.len()];
            let block = alloc(&mut heap, size);
            // SAFETY: the block is live with `size` bytes.
            unsafe { block.as_ptr().write_bytes(i as u8, size) };
            (block, size)
        })
        .collect();
    for &(block, _) in blocks.iter().step_by(3) {
        free(&mut heap, block);
    }
    let mut spans = Vec::new();
    heap.for_each_unused_span(|start, len| spans.push((start, len)));
    let unused: usize = spans.iter().map(|&(_, len)| len).sum();
    let stats = heap.stats();
    assert!(unused <= stats.free && unused + spans.len() * 4 * WORD >= stats.free - 4 * WORD);
    for &(start, len) in &spans {
        // SAFETY: the heap keeps nothing in these bytes.
        unsafe { start.as_ptr().write_bytes(0xa5, len) };
    }
    heap.check().unwrap();
    for (i, &(block, size)) in blocks.iter().enumerate().filter(|(i, _)| i % 3 != 0) {
        // SAFETY: the block is still live.
        let bytes = unsafe { std::slice::from_raw_parts(block.as_ptr(), size) };
        assert!(
            bytes.iter().all(|&b| b == i as u8),
            "live block {i} untouched"
        );
    }
    // The heap goes on serving and merging over the scribbled bytes.
    let big = alloc(&mut heap, 100_000);
    for &(block, _) in blocks.iter().skip(1).step_by(3) {
        free(&mut heap, block);
    }
    free(&mut heap, big);
    heap.check().unwrap();
}
