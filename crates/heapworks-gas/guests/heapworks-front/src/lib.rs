//! The heapworks guest with the small-object front, `FrontHeap`, growing with `memory.grow`
//! (see `entries`).
#![no_std]

entries::guest!(heapworks::WasmFrontHeap = heapworks::WasmFrontHeap::new());
