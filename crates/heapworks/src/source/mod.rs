//! Memory sources: where a heap finds more memory when it runs out, and [`SourcedHeap`], the
//! single-threaded `#[global_allocator]` that asks one.
//!
//! A [`MemorySource`] hands out blocks of address space (on wasm32, the tail of the memory the
//! module starts with, then whole 64 KiB pages). [`SourcedHeap`] serves every request from its
//! [`Heap`]; when the heap cannot, it asks the source for more, claims what it gets as a region
//! (or extends the last region in place when the new block starts where that region ends), and
//! tries once more.
//!
//! Invariants:
//! - At most one call into a `SourcedHeap` runs at a time (the promise of
//!   [`SourcedHeap::with_source`]; on wasm32 without threads there is only one thread).
//! - `last` names the region claimed last, `(base, size)`, exactly as the heap knows it; memory
//!   the source hands out at `base + size` extends that region, anything else becomes a region
//!   of its own.
//! - A source that refuses leaves the heap unchanged: the request returns null.
//! - Whole free pages are never given back to the source. On Gear a free page in the middle of
//!   a free chunk is never touched again (only a chunk's boundary words are), so it costs no
//!   page gas in later messages; giving it back would cost `free_range` now and `alloc` plus a
//!   first write when it is needed again (see the `gear` module).

#[cfg(all(target_arch = "wasm32", feature = "gear-memory"))]
mod gear;
#[cfg(all(
    target_arch = "wasm32",
    any(feature = "wasm-memory", feature = "gear-memory")
))]
mod pages;
#[cfg(all(target_arch = "wasm32", feature = "wasm-memory"))]
mod wasm32;

use core::alloc::{GlobalAlloc, Layout};
use core::cell::{Cell, UnsafeCell};
use core::ptr::{null_mut, NonNull};

#[cfg(all(target_arch = "wasm32", feature = "gear-memory"))]
pub use gear::{GearAlloc, GearFrontHeap, GearHeap, GearMemory};
#[cfg(all(
    target_arch = "wasm32",
    any(feature = "wasm-memory", feature = "gear-memory")
))]
pub use pages::{PageGrant, WasmPages};
#[cfg(all(target_arch = "wasm32", feature = "wasm-memory"))]
pub use wasm32::{MemoryGrow, WasmFrontHeap, WasmHeap, WasmMemory};

use crate::global::{self, Engine};
use crate::{FrontHeap, Heap};

/// Where a [`SourcedHeap`] gets more memory.
///
/// # Safety
/// Every block `grow` returns is valid for reads and writes, used by nothing else from then on,
/// never returned twice, and its pointer carries provenance for the whole block (and for any
/// later block that starts where it ends, so that one region can span both).
pub unsafe trait MemorySource {
    /// At least `min_bytes` more bytes, or `None` if the source refuses. The first call may
    /// return less (memory the program already owns, such as the rest of the page that holds
    /// the end of its static data): the heap then asks again.
    fn grow(&mut self, min_bytes: usize) -> Option<(NonNull<u8>, usize)>;
}

/// Bytes asked beyond a request's size and alignment: a region record, a chunk header and
/// the end sentinel when the new memory cannot extend the last region.
const GROWTH_MARGIN: usize = 256;

/// How many times one request may ask the source for memory (the first answer may be the
/// small tail of memory the program already owns).
const GROWTH_ROUNDS: usize = 2;

/// The stage of [`SourcedHeap::make_room`] after its last resort.
const LAST_RESORT: usize = GROWTH_ROUNDS + 2;

/// What [`SourcedHeap::make_room`] returns when no step is left.
const GIVE_UP: usize = usize::MAX;

/// A [`Heap`] without a lock that grows from a [`MemorySource`]: the `#[global_allocator]` of
/// single-threaded programs whose memory comes in pages (wasm32). `SourcedHeap<S, FrontHeap>`
/// serves from a [`FrontHeap`] instead ([`SourcedHeap::front_with_source`]).
pub struct SourcedHeap<S, H = Heap> {
    heap: UnsafeCell<H>,
    source: UnsafeCell<S>,
    /// The region claimed last, `(base, size)`.
    last: Cell<Option<(NonNull<u8>, usize)>>,
    /// Bytes obtained from the source in all.
    obtained: Cell<usize>,
    /// `obtained` when the engine last reclaimed its reserve before a growth.
    reclaimed_at: Cell<usize>,
}

// SAFETY: `with_source` makes the program promise that no two threads use the heap at once.
unsafe impl<S, H> Sync for SourcedHeap<S, H> {}

impl<S: MemorySource> SourcedHeap<S> {
    /// An empty heap that asks `source` for memory at its first request.
    ///
    /// # Safety
    /// The heap is never used from two threads at once, nor re-entered (from an interrupt
    /// handler, say) while a call is in progress.
    pub const unsafe fn with_source(source: S) -> Self {
        SourcedHeap {
            heap: UnsafeCell::new(Heap::new()),
            source: UnsafeCell::new(source),
            last: Cell::new(None),
            obtained: Cell::new(0),
            reclaimed_at: Cell::new(0),
        }
    }
}

impl<S: MemorySource> SourcedHeap<S, FrontHeap> {
    /// An empty [`FrontHeap`] that asks `source` for memory at its first request.
    ///
    /// # Safety
    /// As for [`SourcedHeap::with_source`].
    pub const unsafe fn front_with_source(source: S) -> Self {
        // SAFETY: forwarded from the caller.
        unsafe { SourcedHeap::with_front(source, FrontHeap::new()) }
    }

    /// `front` (with no region yet, as [`FrontHeap::with_static_slabs`] makes one) that asks
    /// `source` for memory at its first request.
    ///
    /// # Safety
    /// As for [`SourcedHeap::with_source`].
    pub const unsafe fn with_front(source: S, front: FrontHeap) -> Self {
        SourcedHeap {
            heap: UnsafeCell::new(front),
            source: UnsafeCell::new(source),
            last: Cell::new(None),
            obtained: Cell::new(0),
            reclaimed_at: Cell::new(0),
        }
    }
}

impl<S: MemorySource, H: Engine> SourcedHeap<S, H> {
    /// The heap itself (statistics, checks).
    ///
    /// # Safety
    /// No other reference to the heap is alive (no allocation is in progress).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn heap(&self) -> &mut H {
        // SAFETY: the caller promises exclusive access.
        unsafe { &mut *self.heap.get() }
    }

    /// The memory source.
    ///
    /// # Safety
    /// No other reference to the source is alive (no allocation is in progress).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn source(&self) -> &mut S {
        // SAFETY: the caller promises exclusive access.
        unsafe { &mut *self.source.get() }
    }

    /// Asks the source for memory enough to serve `layout` and adds it to the heap; `false` if
    /// the source refused, the request cannot be sized, or the heap refused the block.
    ///
    /// # Safety
    /// Exclusive access to the heap and the source (the promise of `with_source`).
    #[cold]
    #[inline(never)]
    unsafe fn take_more(&self, layout: Layout) -> bool {
        let Some(wanted) = layout
            .size()
            .checked_add(layout.align())
            .and_then(|bytes| bytes.checked_add(GROWTH_MARGIN))
        else {
            return false;
        };
        // SAFETY: exclusive access, from the caller.
        let Some((base, size)) = unsafe { self.source() }.grow(wanted) else {
            return false;
        };
        self.obtained.set(self.obtained.get().saturating_add(size));
        // SAFETY: exclusive access, from the caller.
        let heap = unsafe { self.heap() };
        match self.last.get() {
            Some((last_base, last_size))
                if last_base.as_ptr().addr().checked_add(last_size)
                    == Some(base.as_ptr().addr()) =>
            {
                let grown = last_size + size;
                // SAFETY: the source gave `[base, base + size)` away for good and promises that
                // the region's base pointer carries provenance for it.
                let extended = unsafe { heap.extend(last_base.as_ptr(), grown) }.is_ok();
                if extended {
                    self.last.set(Some((last_base, grown)));
                }
                extended
            }
            _ => {
                // SAFETY: the source gave the block away for good, with provenance.
                let claimed = unsafe { heap.claim(base.as_ptr(), size) }.is_ok();
                if claimed {
                    self.last.set(Some((base, size)));
                }
                claimed
            }
        }
    }

    /// One step of the slow path of a request the heap could not serve, before the next
    /// attempt: `stage` counts the steps taken (0 before the first). The first step reclaims
    /// what the engine holds in reserve (a front's free slabs) when the heap has doubled since
    /// the last time; then up to [`GROWTH_ROUNDS`] growths; when the source refuses, a last
    /// reclaim. Returns the next stage, or [`GIVE_UP`] when no step is left that could help.
    ///
    /// The caller loops over its own attempt and this step, so that the attempt's code (a
    /// realloc's whole resize) is in the module once; and every value passed either way is
    /// one word, so the slow path, like the fast paths, needs no stack frame in linear memory:
    /// on wasm32 a frame there is a store to a page that Gear charges per message, and a
    /// program's first allocation takes this path.
    ///
    /// # Safety
    /// Exclusive access to the heap and the source (the promise of `with_source`).
    #[cold]
    #[inline(never)]
    unsafe fn make_room(&self, layout: Layout, stage: usize) -> usize {
        let mut stage = stage;
        if stage == 0 {
            stage = 1;
            // SAFETY: exclusive access, from the caller.
            if self.reclaim_due() && unsafe { self.heap() }.reclaim() {
                return stage;
            }
        }
        // `stage - 1` growths so far.
        // SAFETY: exclusive access, from the caller.
        if stage <= GROWTH_ROUNDS && unsafe { self.take_more(layout) } {
            return stage + 1;
        }
        // The source refused, or growth did not help: what the engine holds in reserve is the
        // last resort.
        // SAFETY: as above.
        if stage != LAST_RESORT && unsafe { self.heap() }.reclaim() {
            return LAST_RESORT;
        }
        GIVE_UP
    }

    /// [`GlobalAlloc::alloc`]'s slow path: the attempts of [`SourcedHeap::make_room`].
    ///
    /// # Safety
    /// Exclusive access to the heap and the source (the promise of `with_source`).
    #[cold]
    #[inline(never)]
    unsafe fn alloc_slow(&self, layout: Layout) -> *mut u8 {
        let mut stage = 0;
        loop {
            // SAFETY: exclusive access, from the caller; no borrow of the heap is alive.
            stage = unsafe { self.make_room(layout, stage) };
            if stage == GIVE_UP {
                return null_mut();
            }
            // SAFETY: as above.
            if let Ok(block) = unsafe { self.heap() }.allocate(layout) {
                return block.as_ptr();
            }
        }
    }

    /// [`GlobalAlloc::realloc`]'s slow path: the attempts of [`SourcedHeap::make_room`]. A
    /// failed attempt leaves the block live and unchanged.
    ///
    /// # Safety
    /// As for [`SourcedHeap::try_resize`].
    #[cold]
    #[inline(never)]
    unsafe fn realloc_slow(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> *mut u8 {
        let mut stage = 0;
        loop {
            // SAFETY: exclusive access, from the caller; no borrow of the heap is alive.
            stage = unsafe { self.make_room(new, stage) };
            if stage == GIVE_UP {
                return null_mut();
            }
            // SAFETY: as above; the block is still live with layout `old`.
            let moved = unsafe { self.try_resize(ptr, old, new) };
            if !moved.is_null() {
                return moved;
            }
        }
    }

    /// An attempt to resize the live block at `ptr` from `old` to `new`, after growth: the
    /// moved block, or null with the block unchanged. The first attempt, before any growth,
    /// validated the block (a checked build reports misuse there), and growth changes no
    /// block: misuse cannot show up here, and if it did it would count as out of memory.
    ///
    /// `realloc`'s first attempt is its own inlined copy of this code: calling this one
    /// instead would save 3.1 KB of wasm32 code but cost every realloc a call (5.6 k gas,
    /// a quarter of a small in-place realloc's; see TUNING.md).
    ///
    /// # Safety
    /// Exclusive access to the heap (the promise of `with_source`); `ptr` is a live block of
    /// the heap allocated with `old`.
    unsafe fn try_resize(&self, ptr: NonNull<u8>, old: Layout, new: Layout) -> *mut u8 {
        // SAFETY: forwarded from the caller.
        match unsafe { self.heap().resize_or_misuse(ptr, old, new) } {
            Ok(Ok(moved)) => moved.as_ptr(),
            Ok(Err(_)) | Err(_) => null_mut(),
        }
    }

    /// Whether the heap has doubled since the engine last reclaimed its reserve (and so it is
    /// reclaimed now, before growing): a reclaim walks what the engine holds (a front's slabs
    /// and free slots), so reclaiming at every growth would cost the square of the heap's
    /// size, and reclaiming at doublings costs a constant per byte grown.
    fn reclaim_due(&self) -> bool {
        let obtained = self.obtained.get();
        let due = obtained - self.reclaimed_at.get() >= self.reclaimed_at.get();
        if due {
            self.reclaimed_at.set(obtained);
        }
        due
    }
}

// SAFETY: blocks come from the heap, which hands out each block once with the requested layout;
// exclusive access comes from the single-thread promise of `with_source`. Misuse caught by a
// checked build is reported after the heap's borrow ends.
unsafe impl<S: MemorySource, H: Engine> GlobalAlloc for SourcedHeap<S, H> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // The fast path calls the heap directly: its result is one word, so no frame in
        // linear memory is needed (see `with_growth`).
        // SAFETY: single-threaded by the promise of `with_source`.
        match unsafe { self.heap() }.allocate(layout) {
            Ok(block) => block.as_ptr(),
            // SAFETY: as above.
            Err(_) => unsafe { self.alloc_slow(layout) },
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `GlobalAlloc::dealloc` is given a block this allocator handed out, never
        // null; single-threaded, and the caller passes the block's layout.
        let outcome = unsafe {
            let ptr = NonNull::new_unchecked(ptr);
            self.heap().deallocate_or_misuse(ptr, layout)
        };
        if let Err(misuse) = outcome {
            global::abort_on(&misuse);
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `GlobalAlloc::realloc` is given a block this allocator handed out, never null.
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        // SAFETY: `GlobalAlloc::realloc` promises that `new_size` rounded up to the alignment
        // does not overflow `isize`, which is all a `Layout` asks of it.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: single-threaded; the caller passes a live block with its layout.
        match unsafe { self.heap().resize_or_misuse(ptr, layout, new) } {
            Ok(Ok(moved)) => moved.as_ptr(),
            // SAFETY: as above; the block stays live after a failed resize.
            Ok(Err(_)) => unsafe { self.realloc_slow(ptr, layout, new) },
            Err(misuse) => global::abort_on(&misuse),
        }
    }
}
