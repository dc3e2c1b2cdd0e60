//! Checked builds (debug assertions or feature `checked`) catch misuse before it corrupts the
//! heap: double frees, foreign pointers, corrupt headers and layout mismatches each panic with a
//! clear message, and the heap is left exactly as it was.
#![cfg(any(debug_assertions, feature = "checked"))]

use std::alloc::Layout;
use std::panic::{catch_unwind, AssertUnwindSafe};

use heapworks::{Heap, Misuse};
use heapworks_testkit::Arena;

const WORD: usize = std::mem::size_of::<usize>();

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).unwrap()
}

/// Runs `misuse` and returns its panic message, asserting the heap is unchanged and sound.
fn panic_message(heap: &mut Heap, misuse: impl FnOnce(&mut Heap)) -> String {
    let before = heap.stats();
    let payload = catch_unwind(AssertUnwindSafe(|| misuse(heap))).expect_err("misuse detected");
    assert_eq!(heap.stats(), before, "the heap changed");
    heap.check().expect("the heap is still sound");
    payload
        .downcast_ref::<String>()
        .cloned()
        .expect("a formatted message")
}

#[test]
fn double_free_is_caught_even_after_coalescing() {
    let mut arena = Arena::new(16 * 1024);
    let mut heap = arena.heap();
    let a = heap.allocate(layout(100)).unwrap();
    let b = heap.allocate(layout(100)).unwrap();
    let _guard = heap.allocate(layout(100)).unwrap();
    // SAFETY: first frees of live blocks; `b` then merges into `a`'s chunk.
    unsafe {
        heap.free(a);
        heap.free(b);
    }
    // SAFETY (of the misuse itself): checked builds validate before touching anything.
    let message = panic_message(&mut heap, |heap| unsafe { heap.free(a) });
    assert!(message.contains("double free"), "{message}");
    // SAFETY (of the misuse itself): as above.
    let message = panic_message(&mut heap, |heap| unsafe { heap.free(b) });
    assert!(message.contains("double free"), "{message}");
}

#[test]
fn foreign_pointers_are_caught() {
    let mut arena = Arena::new(16 * 1024);
    let mut heap = arena.heap();
    let a = heap.allocate(layout(100)).unwrap();
    let mut elsewhere = [0u128; 4];
    let outside = std::ptr::NonNull::from(&mut elsewhere[2]).cast::<u8>();
    // SAFETY (of the misuse itself): checked builds validate before touching anything.
    let message = panic_message(&mut heap, |heap| unsafe { heap.free(outside) });
    assert!(message.contains("not allocated by this heap"), "{message}");
    // SAFETY: as above; `a + WORD` is inside the heap but not a payload boundary.
    let inside = unsafe { a.add(WORD) };
    // SAFETY (of the misuse itself): as above.
    let message = panic_message(&mut heap, |heap| unsafe { heap.free(inside) });
    assert!(message.contains("not allocated by this heap"), "{message}");
    let message = panic_message(&mut heap, |heap| {
        // SAFETY: as above.
        let _ = unsafe { heap.realloc(outside, layout(8), 64) };
    });
    assert!(message.contains("not allocated by this heap"), "{message}");
    assert_eq!(
        heap.validate(outside),
        Err(Misuse::Foreign {
            addr: outside.as_ptr().addr()
        })
    );
}

#[test]
fn a_corrupt_header_is_caught() {
    let mut arena = Arena::new(16 * 1024);
    let mut heap = arena.heap();
    let a = heap.allocate(layout(100)).unwrap();
    // SAFETY: overwrite the header word in front of `a` (inside the arena) with a size that runs
    // past the region.
    let header = unsafe { a.cast::<usize>().sub(1) };
    // SAFETY: the header word is inside the arena, and readable.
    let saved = unsafe { header.read() };
    // SAFETY: as above; the heap is corrupt until the header is restored below.
    unsafe { header.write((1 << 30) | 1) };
    // SAFETY (of the misuse itself): checked builds validate before touching anything.
    let message = panic_message_no_check(&mut heap, |heap| unsafe { heap.free(a) });
    assert!(message.contains("corrupt header"), "{message}");
    assert!(heap.check().is_err(), "the checker sees the corruption too");
    // SAFETY: restore the header; the heap is whole again.
    unsafe { header.write(saved) };
    heap.check().unwrap();
}

/// As `panic_message`, for a heap whose corruption the test made itself.
fn panic_message_no_check(heap: &mut Heap, misuse: impl FnOnce(&mut Heap)) -> String {
    let payload = catch_unwind(AssertUnwindSafe(|| misuse(heap))).expect_err("misuse detected");
    payload.downcast_ref::<String>().cloned().unwrap()
}

#[test]
fn a_layout_that_does_not_match_is_caught() {
    let mut arena = Arena::new(16 * 1024);
    let mut heap = arena.heap();
    let a = heap.allocate(layout(100)).unwrap();
    // SAFETY (of the misuse itself): checked builds validate before touching anything.
    let message = panic_message(&mut heap, |heap| unsafe {
        heap.deallocate(a, layout(5000))
    });
    assert!(message.contains("layout does not match"), "{message}");
    // SAFETY: the right layout frees it.
    unsafe { heap.deallocate(a, layout(100)) };
    heap.check().unwrap();
}

#[test]
fn the_checker_reports_a_broken_footer_with_its_address() {
    let mut arena = Arena::new(16 * 1024);
    let mut heap = arena.heap();
    let a = heap.allocate(layout(100)).unwrap();
    let b = heap.allocate(layout(100)).unwrap();
    let _guard = heap.allocate(layout(100)).unwrap();
    // SAFETY: `a` is live; once freed, its last word is its footer, just before `b`'s header.
    unsafe { heap.free(a) };
    // SAFETY: two words before `b`'s payload is `a`'s footer, inside the arena.
    let footer = unsafe { b.cast::<usize>().sub(2) };
    // SAFETY: as above; the test corrupts the footer on purpose.
    unsafe { footer.write(footer.read() + 16) };
    let corruption = heap.check().unwrap_err();
    assert_eq!(corruption.kind, heapworks::CorruptionKind::BadFooter);
    assert_eq!(corruption.addr, a.as_ptr().addr() - WORD);
    assert!(corruption.to_string().contains("footer"));
}
