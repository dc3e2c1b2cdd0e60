//! The front with seed 000's several static buffers (its third variant, the best combination
//! it found): cells of 1, 2, 4, 6, 8 and 32 units (read as galloc's units of 8 B: 8, 16, 32,
//! 48, 64 and 256 B), 2, 2, 4, 4, 8 and 4 of them, as the first slabs of those classes (see
//! `FrontHeap::with_static_slabs`).
#![no_std]

/// The area: the cells' slots, plus a slab header and a tag per slot (2368 B on wasm32).
static mut CELLS: [u64; 296] = [0; 296];

entries::guest!(
    heapworks::WasmFrontHeap = unsafe {
        // SAFETY: `CELLS` is used by this allocator alone.
        heapworks::WasmFrontHeap::with_static_slabs(
            &raw mut CELLS as *mut u8,
            2368,
            &[(8, 2), (16, 2), (32, 4), (48, 4), (64, 8), (256, 4)],
        )
    }
);
