//! [`GearMemory`]: the memory source of Gear (Vara) programs, Gear's `alloc` syscall.
//!
//! Gear forbids `memory.grow` in programs: a program asks the node for 64 KiB wasm pages with
//! `env.alloc(pages) -> u32` (the first page's number, or `u32::MAX` when refused), as Gear's
//! own allocator does.
//!
//! Invariants:
//! - The memory is the rest of the page that holds `__heap_base` (the pages before it are the
//!   program's static memory), then whole pages from `alloc`; it reaches the heap a Gear page
//!   at a time (see `pages.rs`), extending the heap's region in place while it follows it.
//! - `u32::MAX` from `alloc` is a refusal.
//! - Pages are never given back with `env.free_range`: by Gear's price list it never saves gas.
//!   A page inside a free chunk is not touched while it stays free, so it costs nothing in later
//!   messages; releasing it costs `free_range` (≈0.87 M + 36 k a page) now, and `alloc`
//!   (≈1.37 M) plus a first write (≈34 M) when the heap needs it again.

use super::pages::{PageGrant, WasmPages, PAGE};
use super::SourcedHeap;
use crate::FrontHeap;

mod syscalls {
    #[link(wasm_import_module = "env")]
    extern "C" {
        /// Allocates `pages` wasm pages; the first one's number, or `u32::MAX`.
        pub(super) fn alloc(pages: u32) -> u32;
    }
}

/// Pages from Gear's `alloc` syscall.
pub struct GearAlloc;

// SAFETY: the rest of `__heap_base`'s page and the pages `alloc` grants belong to the program,
// which gives them to its global allocator.
unsafe impl PageGrant for GearAlloc {
    fn tail_end(heap_base: usize) -> usize {
        heap_base.next_multiple_of(PAGE)
    }

    fn grant(pages: usize) -> Option<usize> {
        let pages = u32::try_from(pages).ok()?;
        // SAFETY: Gear's `alloc` syscall has this signature and no precondition.
        let first = unsafe { syscalls::alloc(pages) };
        (first != u32::MAX).then_some(first as usize)
    }
}

/// Grows a Gear program's memory with the `alloc` syscall.
pub type GearMemory = WasmPages<GearAlloc>;

/// The `#[global_allocator]` of a Gear program:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: heapworks::GearHeap = heapworks::GearHeap::new();
/// ```
pub type GearHeap = SourcedHeap<GearMemory>;

/// [`GearHeap`] with the small-object front ([`FrontHeap`]).
pub type GearFrontHeap = SourcedHeap<GearMemory, FrontHeap>;
