//! The front with seed 000's static buffer: Gear's allocator (gear-dlmalloc 0.2.1, galloc)
//! keeps cells of 1, 1, 6, 6 and 8 units of 8 B (8, 8, 48, 48 and 64 B) in its own state; here
//! they are the first slabs of those classes, in a `static` beside the allocator (see
//! `FrontHeap::with_static_slabs`).
#![no_std]

/// The area: the cells' slots, plus a slab header and a tag per slot (288 B on wasm32).
static mut CELLS: [u64; 36] = [0; 36];

entries::guest!(
    heapworks::WasmFrontHeap = unsafe {
        // SAFETY: `CELLS` is used by this allocator alone.
        heapworks::WasmFrontHeap::with_static_slabs(
            &raw mut CELLS as *mut u8,
            288,
            &[(8, 2), (48, 2), (64, 1)],
        )
    }
);
