//! [`WasmPages`]: the shape every wasm32 memory source shares. Its memory is what the program
//! already owns past `__heap_base` (how far, the [`PageGrant`] says), then whole 64 KiB pages
//! from the grant (`memory.grow`, Gear's `alloc`); it hands that memory to the heap a Gear page
//! (16 KiB) at a time, so the heap's last free chunk, whose footer sits at the end of its
//! region, ends on a page the heap is using anyway: handing the heap the whole initial memory
//! at once made every split of that chunk write its footer on the memory's last page, one
//! more page Gear charges each message.
//!
//! Invariants:
//! - `[next, end)` is memory owned and not yet handed out (`next == end` when there is none);
//!   the tail past `__heap_base` becomes it at the first call, before any page is granted.
//! - Blocks are handed out in address order from `next`, each ending on a multiple of
//!   [`STEP`] or at `end`; granted pages that follow `end` extend the range, others replace
//!   it (the rest of the old range, too small for the request, is never handed out).
//! - A grant that refuses (`None`) hands out nothing.

use core::marker::PhantomData;
use core::ptr::NonNull;

use super::{MemorySource, SourcedHeap};
use crate::FrontHeap;

/// The size of a wasm page.
pub(super) const PAGE: usize = 64 * 1024;

/// How much memory is handed to the heap at a time, at least: a Gear page.
pub(super) const STEP: usize = 16 * 1024;

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
    /// Whether the tail past `__heap_base` was taken into `[next, end)`.
    tail_taken: bool,
    /// The first byte owned and not handed out.
    next: usize,
    /// The end of the memory owned.
    end: usize,
    grant: PhantomData<G>,
}

impl<G: PageGrant> WasmPages<G> {
    /// A source that has handed out nothing yet.
    pub const fn new() -> Self {
        WasmPages {
            tail_taken: false,
            next: 0,
            end: 0,
            grant: PhantomData,
        }
    }

    /// Makes `[next, end)` hold at least `min_bytes`, asking the grant for pages if needed.
    fn reserve(&mut self, min_bytes: usize) -> Option<()> {
        if !self.tail_taken {
            self.tail_taken = true;
            let base = (&raw const __heap_base).addr();
            self.next = base;
            self.end = G::tail_end(base).max(base);
        }
        let missing = min_bytes.saturating_sub(self.end - self.next);
        if missing == 0 {
            return Some(());
        }
        let pages = missing.div_ceil(PAGE);
        let first = G::grant(pages)?.checked_mul(PAGE)?;
        let end = first.checked_add(pages.checked_mul(PAGE)?)?;
        if first != self.end {
            self.next = first;
        }
        self.end = end;
        (self.end - self.next >= min_bytes).then_some(())
    }
}

impl<G: PageGrant> Default for WasmPages<G> {
    fn default() -> Self {
        Self::new()
    }
}

// SAFETY: the tail and every granted page are the program's to give (the promise of
// `PageGrant`) and handed out once, in address order; wasm32 pointers made from addresses
// reach the whole linear memory, so a later block extends a region's provenance too.
unsafe impl<G: PageGrant> MemorySource for WasmPages<G> {
    fn grow(&mut self, min_bytes: usize) -> Option<(NonNull<u8>, usize)> {
        self.reserve(min_bytes)?;
        let start = self.next;
        let wanted = start
            .checked_add(min_bytes)?
            .checked_next_multiple_of(STEP)?;
        let stop = wanted.min(self.end);
        self.next = stop;
        let base = NonNull::new(core::ptr::with_exposed_provenance_mut(start))?;
        Some((base, stop - start))
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

    /// An empty [`FrontHeap`] over the grant `G` whose classes take their first slabs from
    /// `[base, base + len)` as `plan` says ([`FrontHeap::with_static_slabs`]):
    ///
    /// ```ignore
    /// static mut CELLS: [u64; 28] = [0; 28];
    /// #[global_allocator]
    /// static ALLOCATOR: heapworks::WasmFrontHeap = unsafe {
    ///     heapworks::WasmFrontHeap::with_static_slabs(&raw mut CELLS as *mut u8, 224, &[(8, 2), (48, 2), (64, 1)])
    /// };
    /// ```
    ///
    /// # Safety
    /// As for [`FrontHeap::with_static_slabs`].
    pub const unsafe fn with_static_slabs(
        base: *mut u8,
        len: usize,
        plan: &'static [(usize, usize)],
    ) -> Self {
        // SAFETY: one thread (see `new`); the area is the caller's promise.
        unsafe {
            let front = FrontHeap::with_static_slabs(base, len, plan);
            SourcedHeap::with_front(WasmPages::new(), front)
        }
    }
}

#[cfg(not(target_feature = "atomics"))]
impl<G: PageGrant> Default for SourcedHeap<WasmPages<G>> {
    fn default() -> Self {
        Self::new()
    }
}
