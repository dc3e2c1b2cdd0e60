//! The front's unit tests: where requests go, the slab life cycle and its hysteresis, trim,
//! realloc across classes, out of memory, the checker's faults, and (in checked builds)
//! misuse.

extern crate std;

use core::alloc::Layout;
use core::ptr::NonNull;
use std::vec;
use std::vec::Vec;

use super::check::slab_count;
use super::slab::{self, Slab, CLASSES, TAG};
use super::FrontHeap;
use crate::chunk::{GRANULE, WORD};
use crate::error::{Corruption, CorruptionKind};
use crate::index::checks_after;

/// A front over `bytes` of its own memory (the memory lives as long as the fixture).
struct Fixture {
    front: FrontHeap,
    _memory: Vec<u128>,
    /// Frees so far, which pace the checker under Miri (`checks_after`).
    frees: usize,
}

fn fixture(bytes: usize) -> Fixture {
    let mut memory = vec![0u128; bytes / 16];
    let mut front = FrontHeap::new();
    // SAFETY: `memory` outlives the front (both live in the fixture) and nothing else uses it.
    unsafe { front.claim(memory.as_mut_ptr().cast(), bytes) }.unwrap();
    Fixture {
        front,
        _memory: memory,
        frees: 0,
    }
}

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).unwrap()
}

fn is_slot(ptr: NonNull<u8>) -> bool {
    // SAFETY: the tests pass live blocks of a fixture.
    unsafe { slab::tag_of(ptr) & TAG != 0 }
}

fn slab_of(ptr: NonNull<u8>) -> NonNull<Slab> {
    // SAFETY: the tests pass live slots of a fixture.
    unsafe { slab::slab_of(ptr, slab::tag_of(ptr)) }
}

fn usable(ptr: NonNull<u8>) -> usize {
    // SAFETY: the tests pass live blocks of a fixture.
    unsafe { FrontHeap::usable_size(ptr) }
}

impl Fixture {
    fn alloc(&mut self, size: usize) -> NonNull<u8> {
        self.front.allocate(layout(size)).unwrap()
    }

    fn free(&mut self, ptr: NonNull<u8>) {
        // SAFETY: the tests free live blocks of this front once.
        unsafe { self.front.free(ptr) };
        self.frees += 1;
        if checks_after(self.frees) {
            self.front.check().unwrap();
        }
    }

    fn assert_fault(&self, addr: usize, kind: CorruptionKind) {
        let found = self.front.check();
        assert_eq!(
            found,
            Err(Corruption {
                addr,
                bin: None,
                kind
            })
        );
    }
}

#[test]
fn small_requests_take_slots_of_their_class_and_large_ones_heap_blocks() {
    let mut f = fixture(64 * 1024);
    for size in [0, 1, 8, 9, 24, 81, 200, slab::MAX_SMALL] {
        let ptr = f.alloc(size);
        assert!(is_slot(ptr), "{size} B should be a slot");
        assert_eq!(ptr.as_ptr().addr() % GRANULE, 0);
        assert_eq!(usable(ptr), slab::stride(slab::class_of(size)) - WORD);
        assert!(usable(ptr) >= size);
        f.front.check().unwrap();
    }
    let large = f.alloc(slab::MAX_SMALL + 1);
    assert!(!is_slot(large));
    let aligned = f
        .front
        .allocate(Layout::from_size_align(16, 64).unwrap())
        .unwrap();
    assert!(!is_slot(aligned) && aligned.as_ptr().addr().is_multiple_of(64));
    f.front.check().unwrap();
}

#[test]
fn an_eight_byte_request_takes_sixteen_bytes() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(8);
    let b = f.alloc(8);
    assert_eq!(b.as_ptr().addr() - a.as_ptr().addr(), 16);
}

#[test]
fn slots_fill_a_slab_then_a_new_one_is_carved_and_everything_goes_back() {
    let mut f = fixture(64 * 1024);
    let managed_free = f.front.stats().free;
    let capacity = slab::capacity(slab::slab_bytes(3), 3);
    let blocks: Vec<_> = (0..3 * capacity + 1).map(|_| f.alloc(50)).collect();
    assert!(blocks.iter().all(|&b| is_slot(b)));
    assert_eq!(slab_count(&f.front), 4);
    f.front.check().unwrap();
    for &block in blocks.iter().rev() {
        f.free(block);
    }
    // Slabs stay until memory is needed, or a trim.
    assert_eq!(slab_count(&f.front), 4);
    assert_eq!(f.front.trim(), 4);
    assert_eq!(slab_count(&f.front), 0);
    f.front.check().unwrap();
    assert_eq!(f.front.stats().in_use, 0);
    assert_eq!(f.front.stats().free, managed_free);
}

#[test]
fn a_class_oscillating_around_one_slot_keeps_its_slab() {
    let mut f = fixture(64 * 1024);
    let first = f.alloc(8);
    f.free(first);
    let kept = f.front.stats();
    assert_eq!(slab_count(&f.front), 1);
    for _ in 0..10 {
        let again = f.alloc(8);
        assert_eq!(again, first, "the kept slab serves the next request");
        f.free(again);
        assert_eq!(f.front.stats(), kept, "no slab carved or released");
    }
    f.front.trim();
    assert_eq!(slab_count(&f.front), 0);
    assert_eq!(f.front.stats().in_use, 0);
}

#[test]
fn the_last_slot_freed_is_the_next_handed_out() {
    let mut f = fixture(64 * 1024);
    let capacity = slab::capacity(slab::slab_bytes(1), 1);
    let first: Vec<_> = (0..capacity).map(|_| f.alloc(20)).collect();
    let second = f.alloc(20);
    assert_ne!(slab_of(second), slab_of(first[0]));
    f.free(first[3]);
    f.free(second);
    assert_eq!(f.alloc(20), second);
    assert_eq!(f.alloc(20), first[3]);
}

/// The last `CACHED` slots freed wait in the front's state, untouched: their first word keeps
/// what the program wrote (on Gear, the allocator neither reads nor writes their pages), and
/// they come back last in, first out; the next ones freed go onto the list.
// The cache is the wasm32 paths' (`--cfg heapworks_front_cache` natively).
#[cfg(all(heapworks_front_cache, not(heapworks_small_state)))]
#[test]
fn freed_slots_wait_untouched_in_the_cache_then_go_onto_the_list() {
    let mut f = fixture(64 * 1024);
    let class = slab::class_of(24);
    let blocks: Vec<_> = (0..super::CACHED + 2).map(|_| f.alloc(24)).collect();
    for (k, &block) in blocks.iter().enumerate() {
        // SAFETY: the block is live with at least a word.
        unsafe { block.cast::<usize>().write(0x5eed_0000 + k) };
    }
    let list_before = f.front.free[class];
    for &block in &blocks[..super::CACHED] {
        f.free(block);
    }
    assert_eq!(usize::from(f.front.cached[class]), super::CACHED);
    assert_eq!(
        f.front.free[class], list_before,
        "nothing went onto the list"
    );
    for (k, &block) in blocks[..super::CACHED].iter().enumerate() {
        // SAFETY: a cached slot is free memory of the fixture; reading it is a test's peek.
        assert_eq!(unsafe { block.cast::<usize>().read() }, 0x5eed_0000 + k);
    }
    f.free(blocks[super::CACHED]);
    assert_eq!(
        f.front.free[class],
        blocks[super::CACHED].as_ptr(),
        "the cache was full"
    );
    for &block in blocks[..super::CACHED].iter().rev() {
        assert_eq!(f.alloc(24), block);
    }
    assert_eq!(f.alloc(24), blocks[super::CACHED]);
}

/// Checked builds catch a slot both cached and listed (the free slots then outnumber the
/// slots not live; the walk stops at the first slot past the count).
#[cfg(all(
    any(debug_assertions, feature = "checked"),
    heapworks_front_cache,
    not(heapworks_small_state)
))]
#[test]
fn the_checker_catches_a_slot_both_cached_and_listed() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    f.free(a);
    let class = slab::class_of(40);
    assert_eq!(f.front.cached[class], 1);
    // SAFETY: `a` is a free slot; it is threaded onto the list as well.
    unsafe { slab::set_next_free(a, f.front.free[class]) };
    f.front.free[class] = a.as_ptr();
    let found = f.front.check().unwrap_err();
    assert_eq!(found.kind, CorruptionKind::BadSlab);
}

#[cfg(all(heapworks_front_cache, not(heapworks_small_state)))]
#[test]
fn the_checker_catches_a_cached_address_that_is_no_slot() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let b = f.alloc(300);
    f.free(a);
    let class = slab::class_of(40);
    f.front.cache[class][0] = b.as_ptr();
    f.assert_fault(b.as_ptr().addr(), CorruptionKind::BadSlab);
}

#[test]
fn trim_gives_back_exactly_the_slabs_whose_slots_are_all_free() {
    let mut f = fixture(64 * 1024);
    let capacity = slab::capacity(slab::slab_bytes(2), 2);
    let blocks: Vec<_> = (0..3 * capacity).map(|_| f.alloc(40)).collect();
    assert_eq!(slab_count(&f.front), 3);
    // Empty the middle slab and half of the last one.
    for &block in &blocks[capacity..2 * capacity + capacity / 2] {
        f.free(block);
    }
    assert_eq!(slab_count(&f.front), 3, "the class still has live slots");
    f.front.trim();
    f.front.check().unwrap();
    assert_eq!(slab_count(&f.front), 2);
    // The half-free slab's slots still serve, the trimmed slab's are gone.
    let again: Vec<_> = (0..capacity / 2).map(|_| f.alloc(40)).collect();
    assert_eq!(slab_count(&f.front), 2);
    for &block in again.iter().chain(&blocks[..capacity]) {
        f.free(block);
    }
    for &block in &blocks[2 * capacity + capacity / 2..] {
        f.free(block);
    }
    assert_eq!(f.front.trim(), 2);
    assert_eq!(slab_count(&f.front), 0);
    assert_eq!(f.front.stats().in_use, 0);
}

#[test]
fn realloc_stays_in_its_slot_while_it_fits_and_moves_otherwise() {
    let mut f = fixture(64 * 1024);
    let ptr = f.alloc(20);
    // SAFETY: each call passes the live block with the layout it has.
    unsafe {
        ptr.as_ptr().write_bytes(0xAB, 20);
        let same = f.front.realloc(ptr, layout(20), usable(ptr)).unwrap();
        assert_eq!(same, ptr);
        let other = f.front.realloc(same, layout(usable(ptr)), 100).unwrap();
        assert!(is_slot(other) && other != ptr);
        // Grown: room for the next doubling.
        assert_eq!(usable(other), slab::stride(slab::class_of(200)) - WORD);
        let wider = f.front.realloc(other, layout(100), 200).unwrap();
        assert_eq!(wider, other, "the doubling fits in place");
        let other = f.front.realloc(wider, layout(200), 100).unwrap();
        assert_eq!(other, wider, "a shrink stays in place");
        assert!((0..20).all(|i| *other.as_ptr().add(i) == 0xAB));
        f.front.check().unwrap();
        let heap_block = f.front.realloc(other, layout(100), 1000).unwrap();
        assert!(!is_slot(heap_block));
        assert!((0..20).all(|i| *heap_block.as_ptr().add(i) == 0xAB));
        f.front.check().unwrap();
        let shrunk = f.front.realloc(heap_block, layout(1000), 10).unwrap();
        assert_eq!(shrunk, heap_block, "a heap block shrinks in place");
        assert!(f.front.try_grow_in_place(shrunk, 12).is_ok());
        f.free(shrunk);
    }
    f.front.trim();
    assert_eq!(f.front.stats().in_use, 0);
}

#[test]
fn try_grow_in_place_of_a_slot_succeeds_only_within_it() {
    let mut f = fixture(64 * 1024);
    let ptr = f.alloc(30);
    // SAFETY: `ptr` is live.
    unsafe {
        assert!(f.front.try_grow_in_place(ptr, usable(ptr)).is_ok());
        assert!(f.front.try_grow_in_place(ptr, usable(ptr) + 1).is_err());
    }
    f.free(ptr);
}

#[test]
fn without_room_for_a_slab_small_requests_are_heap_blocks_and_failures_change_nothing() {
    let mut f = fixture(4 * 1024);
    let big = f.alloc(f.front.stats().largest_free - 400);
    let small = f.alloc(100);
    assert!(!is_slot(small), "no room for a slab of 100 B slots");
    f.front.check().unwrap();
    let before = f.front.stats();
    assert!(f.front.allocate(layout(before.largest_free + 1)).is_err());
    assert_eq!(f.front.stats(), before);
    let mut taken = Vec::new();
    while let Ok(block) = f.front.allocate(layout(200)) {
        taken.push(block);
    }
    let before = f.front.stats();
    assert!(f.front.allocate(layout(200)).is_err());
    assert_eq!(f.front.stats(), before);
    // SAFETY: `small` is live with that layout; the move cannot be served.
    unsafe {
        assert!(f.front.realloc(small, layout(100), 300).is_err());
    }
    assert_eq!(f.front.stats(), before);
    f.front.check().unwrap();
    for block in taken.into_iter().chain([small, big]) {
        f.free(block);
    }
}

#[test]
fn the_checker_catches_a_corrupt_tag() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let _b = f.alloc(40);
    // SAFETY: `a` is a live slot; its tag is the word before it.
    unsafe { slab::set_tag(a, slab::tag_of(a) + GRANULE) };
    f.assert_fault(a.as_ptr().addr() - WORD, CorruptionKind::BadSlab);
}

/// Checked builds catch a live slot in a free list (release builds keep no live bit to see it
/// by), whether it is added to the list or swapped in for a free one.
#[cfg(any(debug_assertions, feature = "checked"))]
#[test]
fn the_checker_catches_a_live_slot_in_the_free_list() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let class = slab::class_of(40);
    // SAFETY: `a` is a live slot; it becomes the free list's head while live.
    unsafe { slab::set_next_free(a, f.front.free[class]) };
    f.front.free[class] = a.as_ptr();
    f.assert_fault(a.as_ptr().addr(), CorruptionKind::BadSlab);
}

#[cfg(any(debug_assertions, feature = "checked"))]
#[test]
fn the_checker_catches_a_free_slot_missing_from_its_list() {
    let mut f = fixture(64 * 1024);
    let _a = f.alloc(40);
    let class = slab::class_of(40);
    let head = NonNull::new(f.front.free[class]).unwrap();
    // SAFETY: `head` is a free slot; the list now starts after it.
    f.front.free[class] = unsafe { slab::next_free(head) };
    let list = core::ptr::from_ref(&f.front.free[class]).addr();
    f.assert_fault(list, CorruptionKind::BadSlab);
}

#[cfg(any(debug_assertions, feature = "checked"))]
#[test]
fn the_checker_catches_a_live_slot_swapped_into_the_free_list() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let class = slab::class_of(40);
    // SAFETY: `a` replaces the free list's head, linked to the rest past it.
    unsafe {
        let rest = NonNull::new(f.front.free[class]).unwrap();
        slab::set_next_free(a, slab::next_free(rest));
    }
    f.front.free[class] = a.as_ptr();
    f.assert_fault(a.as_ptr().addr(), CorruptionKind::BadSlab);
}

#[test]
fn the_checker_catches_a_ring_in_a_free_list() {
    let mut f = fixture(64 * 1024);
    let _a = f.alloc(40);
    let class = slab::class_of(40);
    let head = NonNull::new(f.front.free[class]).unwrap();
    // SAFETY: `head` is a free slot of the fixture; it now links to itself.
    unsafe { slab::set_next_free(head, head.as_ptr()) };
    f.assert_fault(head.as_ptr().addr(), CorruptionKind::BadSlab);
}

#[test]
fn the_checker_catches_a_slot_of_another_class_in_a_free_list() {
    let mut f = fixture(64 * 1024);
    let _a = f.alloc(40);
    let _b = f.alloc(8);
    f.front.free.swap(slab::class_of(40), slab::class_of(8));
    let wrong = f.front.free[slab::class_of(8)].addr();
    f.assert_fault(wrong, CorruptionKind::BadSlab);
}

#[test]
fn the_checker_catches_a_slab_missing_from_its_list() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let class = slab::class_of(40);
    f.front.slabs[class] = core::ptr::null_mut();
    let heads = core::ptr::from_ref(&f.front.slabs[class]).addr();
    f.assert_fault(heads, CorruptionKind::BadSlab);
    f.front.slabs[class] = slab_of(a).as_ptr();
    f.front.check().unwrap();
}

#[test]
fn the_checker_catches_a_slab_in_the_list_of_another_class() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let _b = f.alloc(8);
    f.front.slabs.swap(slab::class_of(40), slab::class_of(8));
    f.assert_fault(slab_of(a).as_ptr().addr(), CorruptionKind::BadSlab);
}

#[test]
fn every_class_fills_and_empties_cleanly() {
    let mut f = fixture(256 * 1024);
    let mut blocks = Vec::new();
    // Miri spends its time on the checker's walk after every free.
    let per_class: usize = if cfg!(miri) { 2 } else { 20 };
    for class in 0..CLASSES {
        let size = (slab::stride(class) - WORD).min(slab::MAX_SMALL);
        blocks.extend((0..per_class).map(|_| f.alloc(size)));
    }
    f.front.check().unwrap();
    assert!(blocks.iter().all(|&b| is_slot(b)));
    for block in blocks {
        f.free(block);
    }
    let slabs: usize = (0..CLASSES)
        .map(|class| per_class.div_ceil(slab::capacity(slab::slab_bytes(class), class)))
        .sum();
    assert_eq!(slab_count(&f.front), slabs);
    assert_eq!(f.front.trim(), slabs);
    assert_eq!(f.front.stats().in_use, 0);
}

/// Checked builds: misuse panics with a message naming the address, the front unchanged.
#[cfg(any(debug_assertions, feature = "checked"))]
mod misuse {
    use std::format;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::string::String;

    use super::*;
    use crate::error::Misuse;

    fn caught(f: &mut Fixture, misuse: impl FnOnce(&mut FrontHeap)) -> String {
        let before = f.front.stats();
        let payload = catch_unwind(AssertUnwindSafe(|| misuse(&mut f.front))).expect_err("caught");
        assert_eq!(f.front.stats(), before, "the front changed");
        f.front.check().expect("still sound");
        payload
            .downcast_ref::<String>()
            .cloned()
            .expect("a message")
    }

    #[test]
    fn a_double_free_of_a_slot_is_caught() {
        let mut f = fixture(64 * 1024);
        let a = f.alloc(24);
        let _b = f.alloc(24);
        f.free(a);
        assert_eq!(
            f.front.validate(a),
            Err(Misuse::DoubleFree {
                addr: a.as_ptr().addr()
            })
        );
        // SAFETY: misuse on purpose; checked builds validate before touching anything.
        let message = caught(&mut f, |front| unsafe { front.free(a) });
        assert_eq!(
            message,
            format!("heapworks: double free of {:#x}", a.as_ptr().addr())
        );
    }

    #[test]
    fn slot_addresses_never_handed_out_are_caught() {
        let mut f = fixture(64 * 1024);
        let a = f.alloc(100);
        let slab = slab_of(a);
        // SAFETY: addresses inside the slab, never handed out.
        let (inside, header, past) = unsafe {
            (
                a.byte_add(GRANULE),
                slab.cast::<u8>(),
                a.byte_add(slab::slab_bytes(slab::class_of(100)) * 2),
            )
        };
        // The slot's payload holds a word that looks like a tag with a wrong offset.
        // SAFETY: `a` is live with at least 100 bytes.
        unsafe {
            a.cast::<usize>()
                .write(slab::tag(slab::class_of(100), GRANULE * 2) | 1)
        };
        for wrong in [inside, header, past] {
            let addr = wrong.as_ptr().addr();
            assert!(f.front.validate(wrong).is_err(), "{addr:#x} passed");
            // SAFETY: misuse on purpose, caught as above.
            let message = caught(&mut f, |front| unsafe { front.free(wrong) });
            assert!(message.contains(&format!("{addr:#x}")), "{message}");
        }
        assert_eq!(
            f.front.validate(header),
            Err(Misuse::Foreign {
                addr: header.as_ptr().addr()
            })
        );
    }

    #[test]
    fn a_slot_of_a_released_slab_is_foreign() {
        let mut f = fixture(64 * 1024);
        let capacity = slab::capacity(slab::slab_bytes(2), 2);
        let blocks: Vec<_> = (0..capacity + 1).map(|_| f.alloc(40)).collect();
        for &block in &blocks {
            f.free(block);
        }
        f.front.trim();
        let lone = blocks[capacity];
        // SAFETY: misuse on purpose, caught as above.
        let message = caught(&mut f, |front| unsafe { front.free(lone) });
        assert!(message.contains("not allocated by this heap"), "{message}");
    }

    #[test]
    fn a_layout_larger_than_the_slot_is_a_mismatch() {
        let mut f = fixture(64 * 1024);
        let a = f.alloc(24);
        let too_big = layout(usable(a) + 1);
        // SAFETY: misuse on purpose, caught as above.
        let message = caught(&mut f, |front| unsafe { front.deallocate(a, too_big) });
        assert!(message.contains("layout does not match"), "{message}");
    }

    #[test]
    fn a_live_tag_bit_follows_the_slot() {
        let mut f = fixture(64 * 1024);
        let a = f.alloc(24);
        // SAFETY: `a` is live.
        assert_ne!(unsafe { slab::tag_of(a) } & super::super::slab::LIVE, 0);
        f.free(a);
        // SAFETY: `a`'s slab is held (its class's only one).
        assert_eq!(unsafe { slab::tag_of(a) } & super::super::slab::LIVE, 0);
    }
}

/// A front with static slabs: a planned class's first slab comes from the area (the next one
/// from the heap), an unplanned class's from the heap; entries that do not fit are skipped;
/// the checker verifies static slabs too; trim keeps them; their slots validate.
#[test]
fn static_slabs_serve_planned_classes_first_and_stay() {
    static PLAN: [(usize, usize); 3] = [(8, 4), (40, 2), (200, 8)];
    let mut area = vec![0u128; 16];
    let mut memory = vec![0u128; 64 * 1024 / 16];
    // SAFETY: `area` and `memory` outlive the front and nothing else uses them.
    let mut front = unsafe {
        let mut front = FrontHeap::with_static_slabs(area.as_mut_ptr().cast(), 256, &PLAN);
        front.claim(memory.as_mut_ptr().cast(), 64 * 1024).unwrap();
        front
    };
    let in_area = |ptr: NonNull<u8>| ptr.as_ptr().addr().wrapping_sub(area.as_ptr().addr()) < 256;
    let in_use = front.stats().in_use;
    let small: Vec<_> = (0..5).map(|_| front.allocate(layout(8)).unwrap()).collect();
    assert!(
        small[..4].iter().all(|&p| in_area(p)),
        "four static slots of 8 B"
    );
    assert!(!in_area(small[4]), "then a heap slab");
    let mid: Vec<_> = (0..2)
        .map(|_| front.allocate(layout(40)).unwrap())
        .collect();
    assert!(mid.iter().all(|&p| in_area(p)));
    let large = front.allocate(layout(200)).unwrap();
    assert!(!in_area(large), "eight 208 B slots do not fit: skipped");
    front.check().unwrap();
    for &ptr in small.iter().chain(&mid).chain([&large]) {
        assert_eq!(front.validate(ptr), Ok(()));
        // SAFETY: each block is live and freed once.
        unsafe { front.free(ptr) };
        front.check().unwrap();
    }
    // The heap's slabs go back; the static ones stay (and do not count in the heap's stats).
    assert_eq!(front.trim(), 2);
    assert_eq!(slab_count(&front), 2);
    assert_eq!(front.stats().in_use, in_use);
    assert!(in_area(front.allocate(layout(8)).unwrap()));
    front.check().unwrap();
}
