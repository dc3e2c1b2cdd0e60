//! The heapworks guest (see `entries`).
#![no_std]

entries::guest!(heapworks::WasmHeap = heapworks::WasmHeap::new());
