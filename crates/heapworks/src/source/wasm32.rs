//! [`WasmMemory`]: the memory source of standard wasm32 programs, `memory.grow`.
//!
//! Invariants:
//! - The memory is everything from `__heap_base` to the end of the memory the module starts
//!   with, then pages from `memory.grow`, which appends them at the memory's end; it reaches
//!   the heap a Gear page at a time (see `pages.rs`), extending the heap's region in place
//!   unless someone else grew the memory meanwhile.
//! - `memory.grow` returning -1 (`usize::MAX`) is a refusal.

use core::arch::wasm32;

use super::pages::{PageGrant, WasmPages, PAGE};
use super::SourcedHeap;
use crate::FrontHeap;

/// Pages from `memory.grow`.
pub struct MemoryGrow;

// SAFETY: the initial memory past `__heap_base` and the pages `memory.grow` adds belong to the
// program, which gives them to its global allocator.
unsafe impl PageGrant for MemoryGrow {
    fn tail_end(_: usize) -> usize {
        wasm32::memory_size(0) * PAGE
    }

    fn grant(pages: usize) -> Option<usize> {
        Some(wasm32::memory_grow(0, pages)).filter(|&first| first != usize::MAX)
    }
}

/// Grows the wasm32 linear memory with `memory.grow`.
pub type WasmMemory = WasmPages<MemoryGrow>;

/// The `#[global_allocator]` of a single-threaded wasm32 program that grows with `memory.grow`:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: heapworks::WasmHeap = heapworks::WasmHeap::new();
/// ```
pub type WasmHeap = SourcedHeap<WasmMemory>;

/// [`WasmHeap`] with the small-object front ([`FrontHeap`]):
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: heapworks::WasmFrontHeap = heapworks::WasmFrontHeap::new();
/// ```
pub type WasmFrontHeap = SourcedHeap<WasmMemory, FrontHeap>;
