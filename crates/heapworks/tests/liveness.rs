//! `Heap::looks_live`: the two-load check an embedder makes on a block it caches outside the
//! heap. Live blocks pass; a block freed into the heap fails, alone or merged into a free
//! neighbour on either side, until its memory is handed out again.

use std::alloc::Layout;

use heapworks::Heap;
use heapworks_testkit::Arena;

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 8).unwrap()
}

#[test]
fn freed_blocks_do_not_look_live_alone_or_merged() {
    let mut arena = Arena::new(16 * 1024);
    let mut heap = arena.heap();
    let a = heap.allocate(layout(100)).unwrap();
    let b = heap.allocate(layout(200)).unwrap();
    let c = heap.allocate(layout(300)).unwrap();
    let guard = heap.allocate(layout(100)).unwrap();
    // The rest of the region filled, so that the chunk A, B and C merge into below is the only
    // free memory: a request that fills it takes it whichever the index's order (the native
    // victim's own-bin head first, or wasm32's good fit and top, which skip the request's own
    // bin).
    while heap.allocate(layout(1024)).is_ok() {}
    while heap.allocate(layout(8)).is_ok() {}
    // SAFETY: the blocks are (or were) this heap's, whose region stays claimed throughout.
    unsafe {
        assert!(Heap::looks_live(a) && Heap::looks_live(b) && Heap::looks_live(c));
        heap.free(b);
        assert!(!Heap::looks_live(b), "a freed block, alone");
        assert!(Heap::looks_live(a) && Heap::looks_live(c));
        heap.free(a);
        assert!(
            !Heap::looks_live(a),
            "a freed block merged with its successor"
        );
        assert!(
            !Heap::looks_live(b),
            "a freed block merged into its predecessor"
        );
        heap.free(c);
        assert!(
            !Heap::looks_live(c),
            "a freed block merged into its predecessor"
        );
        // A, B and C merged into one free chunk, from A's header to the guard's, the heap's
        // only one: a request that fills it exactly takes it.
        let word = size_of::<usize>();
        let merged = guard.as_ptr().addr() - a.as_ptr().addr();
        let again = heap.allocate(layout(merged - word)).unwrap();
        assert_eq!(again, a);
        assert!(Heap::looks_live(again), "the memory handed out again");
    }
}
