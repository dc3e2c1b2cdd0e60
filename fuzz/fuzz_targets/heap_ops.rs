//! Fuzzes operation sequences against the shadow model: the first byte picks the arena size and
//! the largest request, the rest decode to operations (see `heapworks_testkit::Op::decode_all`).
//! Every step is verified (alignment, overlap, contents, failed calls change nothing) and the
//! heap is checked after every operation.
#![no_main]

use heapworks_testkit::{Arena, Model, Op};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    let arena_bytes = 1024 << (shape % 8);
    let max_size = 64 << (shape / 8 % 10);
    let mut arena = Arena::new(arena_bytes);
    let bounds = arena.range();
    let mut heap = arena.heap();
    let mut model = Model::new(&mut heap, bounds, 1);
    for op in Op::decode_all(rest, max_size) {
        model.apply(op);
    }
    model.free_all();
});
