//! The front's unit tests: where requests go, the slab life cycle and its hysteresis, realloc
//! across classes, out of memory, the checker's faults, and (in checked builds) misuse.

extern crate std;

use core::alloc::Layout;
use core::ptr::NonNull;
use std::vec;
use std::vec::Vec;

use super::slab::{self, Slab, CLASSES, LIVE, TAG};
use super::FrontHeap;
use crate::chunk::{GRANULE, WORD};
use crate::error::{Corruption, CorruptionKind};

/// A front over `bytes` of its own memory (the memory lives as long as the fixture).
struct Fixture {
    front: FrontHeap,
    _memory: Vec<u128>,
}

fn fixture(bytes: usize) -> Fixture {
    let mut memory = vec![0u128; bytes / 16];
    let mut front = FrontHeap::new();
    // SAFETY: `memory` outlives the front (both live in the fixture) and nothing else uses it.
    unsafe { front.claim(memory.as_mut_ptr().cast(), bytes) }.unwrap();
    Fixture {
        front,
        _memory: memory,
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
        self.front.check().unwrap();
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
    for size in [0, 1, 8, 9, 24, 81, 200, 256] {
        let ptr = f.alloc(size);
        assert!(is_slot(ptr), "{size} B should be a slot");
        assert_eq!(ptr.as_ptr().addr() % GRANULE, 0);
        assert_eq!(usable(ptr), slab::stride(slab::class_of(size)) - WORD);
        assert!(usable(ptr) >= size);
        f.front.check().unwrap();
    }
    let large = f.alloc(257);
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
    assert_eq!(f.front.slabs, 4);
    f.front.check().unwrap();
    for &block in blocks.iter().rev() {
        f.free(block);
    }
    // The hysteresis keeps the last slab of the class.
    assert_eq!(f.front.slabs, 1);
    f.front.trim();
    assert_eq!(f.front.slabs, 0);
    f.front.check().unwrap();
    assert_eq!(f.front.stats().in_use, 0);
    assert_eq!(f.front.stats().free, managed_free);
}

#[test]
fn a_class_oscillating_at_a_slab_boundary_keeps_its_slab() {
    let mut f = fixture(64 * 1024);
    let capacity = slab::capacity(slab::slab_bytes(0), 0);
    let _full: Vec<_> = (0..capacity).map(|_| f.alloc(8)).collect();
    assert_eq!(f.front.slabs, 1);
    let in_use = f.front.stats().in_use;
    let first = f.alloc(8);
    let after_carve = f.front.stats();
    assert!(after_carve.in_use > in_use);
    f.free(first);
    for _ in 0..10 {
        let again = f.alloc(8);
        assert_eq!(again, first, "the kept slab serves the next request");
        f.free(again);
        assert_eq!(f.front.stats(), after_carve, "no slab carved or released");
    }
    assert_eq!(f.front.slabs, 2);
}

#[test]
fn a_slab_that_empties_beside_another_goes_back_to_the_heap() {
    let mut f = fixture(64 * 1024);
    let capacity = slab::capacity(slab::slab_bytes(1), 1);
    let first: Vec<_> = (0..capacity).map(|_| f.alloc(20)).collect();
    let second = f.alloc(20);
    assert_ne!(slab_of(second), slab_of(first[0]));
    // The first slab regains a free slot and joins the list beside the second.
    f.free(first[0]);
    assert_eq!(f.front.slabs, 2);
    // The second empties while the first still has a free slot: released.
    f.free(second);
    assert_eq!(f.front.slabs, 1);
    for &block in &first[1..] {
        f.free(block);
    }
    assert_eq!(f.front.slabs, 1, "the class's last slab is kept");
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
        assert_eq!(usable(other), slab::stride(slab::class_of(100)) - WORD);
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

#[test]
fn the_checker_catches_a_wrong_live_count() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let slab = slab_of(a);
    // SAFETY: `slab` is a slab of the fixture.
    unsafe { (*slab.as_ptr()).live += 1 };
    f.assert_fault(slab.as_ptr().addr(), CorruptionKind::BadSlab);
}

#[test]
fn the_checker_catches_a_live_slot_in_the_free_list() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let slab = slab_of(a);
    // SAFETY: `slab` is a slab of the fixture; `a` becomes its free list's head while live,
    // and is linked to the rest of the list so the count still matches but for `a`.
    unsafe {
        let header = &mut *slab.as_ptr();
        let rest = header.free;
        slab::set_next_free(a, slab::next_free(NonNull::new(rest).unwrap()));
        header.free = a.as_ptr();
    }
    f.assert_fault(a.as_ptr().addr(), CorruptionKind::BadSlab);
}

#[test]
fn the_checker_catches_a_ring_in_a_free_list() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let slab = slab_of(a);
    // SAFETY: `slab` is a slab of the fixture with a free slot; it now links to itself.
    unsafe {
        let head = NonNull::new((*slab.as_ptr()).free).unwrap();
        slab::set_next_free(head, head.as_ptr());
    }
    f.assert_fault(slab.as_ptr().addr(), CorruptionKind::BadSlab);
}

#[test]
fn the_checker_catches_a_partial_slab_missing_from_its_list() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    let slab = slab_of(a);
    f.front.partial[slab::class_of(40)] = core::ptr::null_mut();
    let heads = core::ptr::from_ref(&f.front.partial).addr();
    f.assert_fault(heads, CorruptionKind::BadSlab);
    f.front.partial[slab::class_of(40)] = slab.as_ptr();
    f.front.check().unwrap();
}

#[test]
fn the_checker_catches_a_list_entry_of_another_class() {
    let mut f = fixture(64 * 1024);
    let a = f.alloc(40);
    f.front.partial.swap(slab::class_of(40), slab::class_of(8));
    f.assert_fault(slab_of(a).as_ptr().addr(), CorruptionKind::BadSlab);
}

#[test]
fn the_checker_catches_a_wrong_slab_count() {
    let mut f = fixture(64 * 1024);
    let _a = f.alloc(40);
    f.front.slabs += 1;
    let heads = core::ptr::from_ref(&f.front.partial).addr();
    f.assert_fault(heads, CorruptionKind::BadSlab);
}

#[test]
fn every_class_fills_and_empties_cleanly() {
    let mut f = fixture(256 * 1024);
    let mut blocks = Vec::new();
    // Miri spends its time on the checker's walk after every free.
    let per_class = if cfg!(miri) { 2 } else { 20 };
    for class in 0..CLASSES {
        let size = (slab::stride(class) - WORD).min(slab::MAX_SMALL);
        blocks.extend((0..per_class).map(|_| f.alloc(size)));
    }
    f.front.check().unwrap();
    assert!(blocks.iter().all(|&b| is_slot(b)));
    for block in blocks {
        f.free(block);
    }
    assert_eq!(f.front.slabs, CLASSES);
    f.front.trim();
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
        unsafe { a.cast::<usize>().write(slab::tag(GRANULE * 2, true)) };
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
        let first: Vec<_> = (0..capacity).map(|_| f.alloc(40)).collect();
        let lone = f.alloc(40);
        f.free(first[0]);
        f.free(lone);
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
        assert_ne!(
            // SAFETY: `a` is live.
            unsafe { slab::tag_of(a) } & LIVE,
            0
        );
        f.free(a);
    }
}
