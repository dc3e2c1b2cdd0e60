//! [`GearMemory`]: the memory source of Gear (Vara) programs, Gear's `alloc` syscall.
//!
//! Gear forbids `memory.grow` in programs: a program asks the node for 64 KiB wasm pages with
//! `env.alloc(pages) -> u32` (the first page's number, or `u32::MAX` when refused), as Gear's
//! own allocator does.
//!
//! Invariants:
//! - The first block is the rest of the page that holds `__heap_base` (the pages before it are
//!   the program's static memory); later blocks are whole pages from `alloc`, which extend the
//!   heap's region in place when they follow it.
//! - `u32::MAX` from `alloc` is a refusal: nothing is handed out.
//! - Pages are never given back with `env.free_range`: by Gear's price list it never saves gas.
//!   A page inside a free chunk is not touched while it stays free, so it costs nothing in later
//!   messages; releasing it costs `free_range` (≈0.87 M + 36 k a page) now, and `alloc`
//!   (≈1.37 M) plus a first write (≈34 M) when the heap needs it again.

use core::ptr::NonNull;

use super::{MemorySource, SourcedHeap};

/// The size of a wasm page, Gear's allocation unit.
const PAGE: usize = 64 * 1024;

extern "C" {
    /// Placed by the linker where the heap may start.
    static __heap_base: u8;
}

mod syscalls {
    #[link(wasm_import_module = "env")]
    extern "C" {
        /// Allocates `pages` wasm pages; the first one's number, or `u32::MAX`.
        pub(super) fn alloc(pages: u32) -> u32;
    }
}

/// Grows a Gear program's memory with the `alloc` syscall.
pub struct GearMemory {
    /// Whether the rest of the page holding `__heap_base` was handed out.
    tail_taken: bool,
}

impl GearMemory {
    /// A source that has handed out nothing yet.
    pub const fn new() -> Self {
        GearMemory { tail_taken: false }
    }

    /// `[__heap_base, end of its page)`, if not empty.
    fn page_tail() -> Option<(NonNull<u8>, usize)> {
        let base = (&raw const __heap_base).cast_mut();
        let size = base.addr().next_multiple_of(PAGE) - base.addr();
        Some((NonNull::new(base)?, size)).filter(|_| size > 0)
    }
}

impl Default for GearMemory {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the rest of `__heap_base`'s page and every page `alloc` grants are used by nothing
// else in a program whose global allocator owns this source; wasm32 pointers made from
// addresses reach the whole linear memory.
unsafe impl MemorySource for GearMemory {
    fn grow(&mut self, min_bytes: usize) -> Option<(NonNull<u8>, usize)> {
        if !self.tail_taken {
            self.tail_taken = true;
            if let Some(tail) = Self::page_tail() {
                return Some(tail);
            }
        }
        let pages = u32::try_from(min_bytes.div_ceil(PAGE)).ok()?;
        // SAFETY: Gear's `alloc` syscall has this signature and no precondition.
        let first = unsafe { syscalls::alloc(pages) };
        if first == u32::MAX {
            return None;
        }
        let base = (first as usize).checked_mul(PAGE)?;
        let size = (pages as usize).checked_mul(PAGE)?;
        Some((
            NonNull::new(core::ptr::with_exposed_provenance_mut(base))?,
            size,
        ))
    }
}

/// The `#[global_allocator]` of a Gear program:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOCATOR: heapworks::GearHeap = heapworks::GearHeap::new();
/// ```
pub type GearHeap = SourcedHeap<GearMemory>;

#[cfg(not(target_feature = "atomics"))]
impl SourcedHeap<GearMemory> {
    /// An empty heap over Gear's `alloc`. Safe: Gear runs programs on wasm32 without threads,
    /// so no call can overlap another.
    pub const fn new() -> Self {
        // SAFETY: see above.
        unsafe { SourcedHeap::with_source(GearMemory::new()) }
    }
}

#[cfg(not(target_feature = "atomics"))]
impl Default for SourcedHeap<GearMemory> {
    fn default() -> Self {
        Self::new()
    }
}
