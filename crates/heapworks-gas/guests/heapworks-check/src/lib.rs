//! The heapworks guest of the wasm32 tests (not measured): the entry points of every guest
//! plus `gas_check`, the heap checker, so a host can verify the heap after every step.
#![no_std]

entries::guest!(heapworks::WasmHeap = heapworks::WasmHeap::new());

/// 1 if the heap passes its checker, 0 if not.
#[no_mangle]
pub extern "C" fn gas_check() -> i32 {
    // SAFETY: the host calls one entry at a time, so no allocation is in progress.
    i32::from(unsafe { ALLOCATOR.heap() }.check().is_ok())
}
