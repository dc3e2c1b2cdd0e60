//! Statistics: what the heap holds.
//!
//! Bytes managed and in use are always kept (an add or subtract per call); free bytes and the
//! largest block are derived on demand, never stored. The high-water mark and the call counts
//! cost a compare and an increment per call, so they come with feature `counters`.
//!
//! Invariants: `in_use <= managed`; `peak_in_use >= in_use` at all times; the counters move only
//! when a call succeeds.

use crate::chunk::WORD;
use crate::index::FreeIndex;
use crate::Heap;

/// The counters a heap updates on every call (a handful of adds; always on).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counters {
    /// Bytes of all chunks in all regions (records and sentinels excluded).
    pub(crate) managed: usize,
    /// Bytes of allocated chunks, headers and rounding included.
    pub(crate) in_use: usize,
    pub(crate) peak_in_use: usize,
    pub(crate) allocations: u64,
    pub(crate) frees: u64,
    pub(crate) reallocs: u64,
}

impl Counters {
    pub(crate) const fn new() -> Counters {
        Counters {
            managed: 0,
            in_use: 0,
            peak_in_use: 0,
            allocations: 0,
            frees: 0,
            reallocs: 0,
        }
    }

    #[inline(always)]
    pub(crate) fn grow_in_use(&mut self, bytes: usize) {
        self.in_use += bytes;
        if cfg!(feature = "counters") && self.in_use > self.peak_in_use {
            self.peak_in_use = self.in_use;
        }
    }

    /// Counts one call in `count` (with feature `counters`).
    #[inline(always)]
    pub(crate) fn count_many(count: &mut u64, calls: u64) {
        if cfg!(feature = "counters") {
            *count += calls;
        }
    }

    #[inline(always)]
    pub(crate) fn count(count: &mut u64) {
        if cfg!(feature = "counters") {
            *count += 1;
        }
    }
}

/// A snapshot of a heap's statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Bytes taken by live blocks, headers and rounding included.
    pub in_use: usize,
    /// Bytes in free chunks (headers included).
    pub free: usize,
    /// The largest payload one request with alignment up to 16 B (8 B on 32-bit) can get now.
    pub largest_free: usize,
    /// The most bytes ever in use at once (since [`Heap::reset_peak`]); feature `counters`.
    pub peak_in_use: Option<usize>,
    /// Bytes the heap manages in all its regions (`in_use + free`).
    pub managed: usize,
    /// Successful allocations; feature `counters`.
    pub allocations: Option<u64>,
    /// Frees (including deallocations); feature `counters`.
    pub frees: Option<u64>,
    /// Successful reallocations (in place or moved); feature `counters`.
    pub reallocs: Option<u64>,
}

/// `value` when feature `counters` keeps it.
fn counted<T>(value: T) -> Option<T> {
    cfg!(feature = "counters").then_some(value)
}

impl<I: FreeIndex> Heap<I> {
    /// The heap's statistics. O(1) but for `largest_free`, which walks the highest
    /// non-empty bin.
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        // SAFETY: the index is consistent between calls.
        let largest_chunk = unsafe { self.index.largest() };
        Stats {
            in_use: c.in_use,
            free: c.managed - c.in_use,
            largest_free: largest_chunk.map_or(0, |size| size - WORD),
            peak_in_use: counted(c.peak_in_use),
            managed: c.managed,
            allocations: counted(c.allocations),
            frees: counted(c.frees),
            reallocs: counted(c.reallocs),
        }
    }

    /// Restarts the high-water mark from the bytes in use now.
    pub fn reset_peak(&mut self) {
        self.counters.peak_in_use = self.counters.in_use;
    }
}
