//! [`WasmMemory`]: the memory source of standard wasm32 programs, `memory.grow`.
//!
//! Invariants:
//! - The first block is everything from `__heap_base` (the end of the static data and the
//!   stack, placed by the linker) to the end of the memory the module starts with; later
//!   blocks are whole 64 KiB pages from `memory.grow`, which appends them at the memory's end,
//!   so they extend the heap's region in place unless someone else grew the memory meanwhile.
//! - `memory.grow` returning -1 (`usize::MAX`) is a refusal: nothing is handed out.

use core::arch::wasm32;
use core::ptr::NonNull;

use super::{MemorySource, SourcedHeap};

/// The size of a wasm page.
const PAGE: usize = 64 * 1024;

extern "C" {
    /// Placed by the linker where the heap may start.
    static __heap_base: u8;
}

/// Grows the wasm32 linear memory with `memory.grow`.
pub struct WasmMemory {
    /// Whether the tail of the initial memory was handed out.
    tail_taken: bool,
}

impl WasmMemory {
    /// A source that has handed out nothing yet.
    pub const fn new() -> Self {
        WasmMemory { tail_taken: false }
    }

    /// `[__heap_base, end of memory)`, if not empty.
    fn initial_tail() -> Option<(NonNull<u8>, usize)> {
        let base = (&raw const __heap_base).cast_mut();
        let end = wasm32::memory_size(0) * PAGE;
        let size = end.checked_sub(base.addr())?;
        Some((NonNull::new(base)?, size)).filter(|_| size > 0)
    }
}

impl Default for WasmMemory {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the tail past `__heap_base` and every page `memory.grow` adds are used by nothing else
// in a program whose global allocator owns this source; wasm32 pointers made from addresses
// reach the whole linear memory.
unsafe impl MemorySource for WasmMemory {
    fn grow(&mut self, min_bytes: usize) -> Option<(NonNull<u8>, usize)> {
        if !self.tail_taken {
            self.tail_taken = true;
            if let Some(tail) = Self::initial_tail() {
                return Some(tail);
            }
        }
        let pages = min_bytes.div_ceil(PAGE);
        let first = wasm32::memory_grow(0, pages);
        if first == usize::MAX {
            return None;
        }
        let base = core::ptr::with_exposed_provenance_mut::<u8>(first.checked_mul(PAGE)?);
        Some((NonNull::new(base)?, pages * PAGE))
    }
}

/// The `#[global_allocator]` of a single-threaded wasm32 program that grows with `memory.grow`:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: heapworks::WasmHeap = heapworks::WasmHeap::new();
/// ```
pub type WasmHeap = SourcedHeap<WasmMemory>;

#[cfg(not(target_feature = "atomics"))]
impl SourcedHeap<WasmMemory> {
    /// An empty heap over `memory.grow`. Safe: wasm32 without the `atomics` feature has one
    /// thread and no interrupts, so no call can overlap another.
    pub const fn new() -> Self {
        // SAFETY: see above.
        unsafe { SourcedHeap::with_source(WasmMemory::new()) }
    }
}

#[cfg(not(target_feature = "atomics"))]
impl Default for SourcedHeap<WasmMemory> {
    fn default() -> Self {
        Self::new()
    }
}
