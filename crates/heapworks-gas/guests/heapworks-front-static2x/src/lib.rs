//! The front with seed 000's static buffer doubled (its second variant): twice galloc's cells
//! of 8, 48 and 64 B, as the first slabs of those classes (see `FrontHeap::with_static_slabs`).
#![no_std]

/// The area: the cells' slots, plus a slab header and a tag per slot (528 B on wasm32).
static mut CELLS: [u64; 66] = [0; 66];

entries::guest!(
    heapworks::WasmFrontHeap = unsafe {
        // SAFETY: `CELLS` is used by this allocator alone.
        heapworks::WasmFrontHeap::with_static_slabs(
            &raw mut CELLS as *mut u8,
            528,
            &[(8, 4), (48, 4), (64, 2)],
        )
    }
);
