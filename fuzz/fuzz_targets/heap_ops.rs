//! Fuzzes operation sequences against the shadow model: the first byte picks the arena size and
//! the largest request, the second the free index (bins, splay tree, hybrid, segregated lists,
//! and the red-black trees: stack, mirrored, parent, without duplicate lists), the rest decode to
//! operations (see `heapworks_testkit::Op::decode_all`). Every step is verified (alignment,
//! overlap, contents, failed calls change nothing) and the heap is checked after every operation.
#![no_main]

use heapworks::{
    AddressRedBlackTree, Bins, FreeIndex, Hybrid, MirroredRedBlackTree, ParentRedBlackTree,
    RedBlackTree, SegregatedLists, SplayTree,
};
use heapworks_testkit::{Arena, Model, Op};
use libfuzzer_sys::fuzz_target;

fn run<I: FreeIndex>(arena_bytes: usize, max_size: usize, ops: &[u8]) {
    let mut arena = Arena::new(arena_bytes);
    let bounds = arena.range();
    let mut heap = arena.heap_with::<I>();
    let mut model = Model::new(&mut heap, bounds, 1);
    for op in Op::decode_all(ops, max_size) {
        model.apply(op);
    }
    model.free_all();
}

fuzz_target!(|data: &[u8]| {
    let [shape, index, ops @ ..] = data else {
        return;
    };
    let arena_bytes = 1024 << (shape % 8);
    let max_size = 64 << (shape / 8 % 10);
    match index % 8 {
        0 => run::<Bins>(arena_bytes, max_size, ops),
        1 => run::<SplayTree>(arena_bytes, max_size, ops),
        2 => run::<Hybrid>(arena_bytes, max_size, ops),
        3 => run::<SegregatedLists>(arena_bytes, max_size, ops),
        4 => run::<RedBlackTree>(arena_bytes, max_size, ops),
        5 => run::<MirroredRedBlackTree>(arena_bytes, max_size, ops),
        6 => run::<ParentRedBlackTree>(arena_bytes, max_size, ops),
        _ => run::<AddressRedBlackTree>(arena_bytes, max_size, ops),
    }
});
