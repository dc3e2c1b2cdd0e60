//! [`WasmPages`]: the shape every wasm32 memory source shares. The first block is memory the
//! program already owns past `__heap_base` (how far, the [`PageGrant`] says); later blocks are
//! whole 64 KiB pages from the grant (`memory.grow`, Gear's `alloc`).
//!
//! Invariants:
//! - The tail is handed out at most once, before any page.
//! - A grant that refuses (`None`) hands out nothing.

use core::marker::PhantomData;
use core::ptr::NonNull;

use super::{MemorySource, SourcedHeap};
use crate::FrontHeap;

/// The size of a wasm page.
pub(super) const PAGE: usize = 64 * 1024;

extern "C" {
    /// Placed by the linker where the heap may start (past the static data and the stack).
    static __heap_base: u8;
}

/// How a wasm32 program gets pages.
///
/// # Safety
/// `tail_end` and every block `grant` reports are memory the program may hand to its global
/// allocator for good, and used by nothing else.
pub unsafe trait PageGrant {
    /// Where the memory the program owns from `__heap_base` on ends.
    fn tail_end(heap_base: usize) -> usize;
    /// `pages` new pages; the first one's number, or `None` if refused.
    fn grant(pages: usize) -> Option<usize>;
}

/// A wasm32 memory source over the grant `G`.
pub struct WasmPages<G> {
    /// Whether the tail past `__heap_base` was handed out.
    tail_taken: bool,
    grant: PhantomData<G>,
}

impl<G: PageGrant> WasmPages<G> {
    /// A source that has handed out nothing yet.
    pub const fn new() -> Self {
        WasmPages {
            tail_taken: false,
            grant: PhantomData,
        }
    }

    /// `[__heap_base, G::tail_end(__heap_base))`, if not empty.
    fn tail() -> Option<(NonNull<u8>, usize)> {
        let base = (&raw const __heap_base).cast_mut();
        let size = G::tail_end(base.addr()).checked_sub(base.addr())?;
        Some((NonNull::new(base)?, size)).filter(|_| size > 0)
    }
}

impl<G: PageGrant> Default for WasmPages<G> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the tail and every granted page are the program's to give (the promise of
// `PageGrant`) and handed out once; wasm32 pointers made from addresses reach the whole linear
// memory, so a later page extends a region's provenance too.
unsafe impl<G: PageGrant> MemorySource for WasmPages<G> {
    fn grow(&mut self, min_bytes: usize) -> Option<(NonNull<u8>, usize)> {
        if !self.tail_taken {
            self.tail_taken = true;
            if let Some(tail) = Self::tail() {
                return Some(tail);
            }
        }
        let pages = min_bytes.div_ceil(PAGE);
        let base = G::grant(pages)?.checked_mul(PAGE)?;
        let base = NonNull::new(core::ptr::with_exposed_provenance_mut(base))?;
        Some((base, pages.checked_mul(PAGE)?))
    }
}

#[cfg(not(target_feature = "atomics"))]
impl<G: PageGrant> SourcedHeap<WasmPages<G>> {
    /// An empty heap over the grant `G`. Safe: wasm32 without the `atomics` feature has one
    /// thread and no interrupts, so no call can overlap another.
    pub const fn new() -> Self {
        // SAFETY: see above.
        unsafe { SourcedHeap::with_source(WasmPages::new()) }
    }
}

#[cfg(not(target_feature = "atomics"))]
impl<G: PageGrant> SourcedHeap<WasmPages<G>, FrontHeap> {
    /// An empty [`FrontHeap`] over the grant `G`. Safe for the same reason as
    /// [`SourcedHeap::new`].
    pub const fn new() -> Self {
        // SAFETY: see above.
        unsafe { SourcedHeap::front_with_source(WasmPages::new()) }
    }
}

#[cfg(not(target_feature = "atomics"))]
impl<G: PageGrant> Default for SourcedHeap<WasmPages<G>> {
    fn default() -> Self {
        Self::new()
    }
}
