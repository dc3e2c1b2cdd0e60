//! Fuzzes operation sequences on the small-object front (`FrontHeap`) against the shadow
//! model: the first byte picks the arena size and the largest request (small requests, which
//! take slots, most of the time), the rest decode to operations (see
//! `heapworks_testkit::Op::decode_all`). Every step is verified (alignment, overlap, contents,
//! failed calls change nothing, a request the largest free block holds is served) and the
//! front, slabs included, is checked after every operation.
#![no_main]

use heapworks::Bins;
use heapworks_testkit::{Arena, Model, Op};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [shape, ops @ ..] = data else {
        return;
    };
    let arena_bytes = 1024 << (shape % 8);
    // Mostly within the front's classes (up to 256 B), sometimes beyond.
    let max_size = if shape / 8 % 4 == 0 { 4096 } else { 320 };
    let mut arena = Arena::new(arena_bytes);
    let bounds = arena.range();
    let mut front = arena.front_with::<Bins>();
    let mut model = Model::new(&mut front, bounds, 1);
    for op in Op::decode_all(ops, max_size) {
        model.apply(op);
    }
    model.free_all();
});
