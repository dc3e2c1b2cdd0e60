//! Medium blocks in the thread caches: central-heap blocks above the small classes, kept per
//! thread by size so that `free(malloc(n))` of a medium `n` takes no lock.
//!
//! A freed medium block joins the bin of its usable size (8 bins per power of two, from 1 KiB
//! up); `malloc(n)` looks at the head of `n`'s bin and of the next one and takes the first that
//! holds `n` bytes with at most an eighth to spare, so a block served from the cache wastes no
//! more than that. Blocks keep their exact size: nothing is rounded up when it comes from the
//! central heap, so a program's memory grows by nothing but what it asks for. The budget is an
//! eighth of the thread's (`HEAPWORKS_TCACHE_KIB`): cached blocks of sizes the program no longer
//! asks for are resident memory nobody uses, which a small budget keeps small.
//!
//! Invariants:
//! - For every bin: `room + length of its list == limit(bin)` while the cache is live, and
//!   every listed block is a live central-heap block whose usable size maps to the bin.
//! - `cached_bytes` is the sum of the listed blocks' usable sizes, and it never exceeds the
//!   budget unless a single block does (so that a loop over one block larger than the budget
//!   still takes no lock): a thread keeps at most `max(budget, one block)` in medium blocks. A
//!   free that finds its bin full empties that bin into the central heap; one that finds the
//!   budget spent empties every bin.
//! - The cache lives in a block of the central heap, created when its thread's cache starts
//!   and given back, with every block it holds, when the thread exits; the thread cache keeps
//!   only a pointer to it (null: no medium cache, as with a budget of 0), because static TLS
//!   is scarce for a library loaded with `dlopen`.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::central::{self, Central};
use crate::stats::{add, COUNTERS};

const WORD: usize = core::mem::size_of::<usize>();
/// log2 of the bins per power of two.
const SUB_BINS_LOG2: u32 = 3;
const SUB_BINS: usize = 1 << SUB_BINS_LOG2;
/// log2 of the smallest key a bin holds (a key is a size plus a word: the chunk size).
const FIRST_OCTAVE: u32 = 10;
/// Bins from 1 KiB to 512 KiB keys, which covers every central-heap block a request up to
/// `LARGE_MIN` (plus realloc's headroom) can produce; larger blocks are not cached.
const BINS: usize = 9 * SUB_BINS;
/// The bytes one bin may hold, in blocks of its smallest size (at least one block).
const BIN_BYTES: usize = 32 << 10;
/// The most blocks one bin may hold.
const MAX_BIN_BLOCKS: usize = 16;

/// One thread's medium blocks, in a block of the central heap.
pub(crate) struct MediumCache {
    heads: [*mut u8; BINS],
    rooms: [u8; BINS],
    cached_bytes: usize,
    budget: usize,
}

/// The bin of a key of at least 1 KiB: its octave, then its top three bits below the leading
/// one.
#[inline(always)]
fn bin_of(key: usize) -> usize {
    let octave = usize::BITS - 1 - key.leading_zeros();
    let sub = (key >> (octave - SUB_BINS_LOG2)) & (SUB_BINS - 1);
    ((octave - FIRST_OCTAVE) as usize) * SUB_BINS + sub
}

/// The smallest key of `bin`.
fn bin_floor(bin: usize) -> usize {
    let octave = FIRST_OCTAVE as usize + bin / SUB_BINS;
    (SUB_BINS + bin % SUB_BINS) << (octave - SUB_BINS_LOG2 as usize)
}

/// How many blocks `bin` may hold.
fn limit(bin: usize) -> u8 {
    (BIN_BYTES / bin_floor(bin)).clamp(1, MAX_BIN_BLOCKS) as u8
}

/// Whether a block of `usable` bytes serves a request of `size` bytes with little waste.
#[inline(always)]
fn fits(usable: usize, size: usize) -> bool {
    usable >= size && usable - size <= size / 8
}

impl MediumCache {
    /// An empty medium cache of `budget` bytes in a new central-heap block; `None` for a budget
    /// of 0 or when the heap has no memory.
    pub(crate) fn create(central: &mut Central, budget: usize) -> Option<NonNull<MediumCache>> {
        if budget == 0 {
            return None;
        }
        let block = central
            .allocate(Layout::new::<MediumCache>())?
            .cast::<MediumCache>();
        let mut rooms = [0; BINS];
        for (bin, room) in rooms.iter_mut().enumerate() {
            *room = limit(bin);
        }
        let cache = MediumCache {
            heads: [core::ptr::null_mut(); BINS],
            rooms,
            cached_bytes: 0,
            budget,
        };
        // SAFETY: the block is fresh, ours, and laid out for a `MediumCache`.
        unsafe { block.write(cache) };
        Some(block)
    }

    /// Gives every cached block, then the cache's own block, back to the central heap (thread
    /// exit).
    ///
    /// # Safety
    /// `cache` was made by [`MediumCache::create`] with this heap and is not used afterwards.
    pub(crate) unsafe fn destroy(cache: NonNull<MediumCache>, central: &mut Central) {
        // SAFETY: the cache is live and ours until its block is freed, which ends its use.
        unsafe {
            (*cache.as_ptr()).release_all(central);
            central.free(cache.cast());
        }
    }

    /// Takes a cached block for a request of `size` bytes (above the small classes, at most
    /// `LARGE_MIN`).
    #[inline(always)]
    pub(crate) fn pop(&mut self, size: usize) -> Option<NonNull<u8>> {
        let bin = bin_of(size + WORD);
        self.pop_fitting(bin, size)
            .or_else(|| self.pop_fitting(bin + 1, size))
    }

    #[inline(always)]
    fn pop_fitting(&mut self, bin: usize, size: usize) -> Option<NonNull<u8>> {
        let block = NonNull::new(*self.heads.get(bin)?)?;
        // SAFETY: a listed block is a live central-heap block: its header is readable, and its
        // first word is the link.
        unsafe {
            let usable = central::usable_size(block);
            if !fits(usable, size) {
                return None;
            }
            self.heads[bin] = block.cast::<*mut u8>().read();
            self.rooms[bin] += 1;
            self.cached_bytes -= usable;
        }
        Some(block)
    }

    /// Caches a freed block of `usable` bytes if its bin has room and the budget allows.
    /// Returns whether it did.
    ///
    /// # Safety
    /// `block` is a live central-heap block of `usable` bytes, above the small classes, that
    /// the caller gives up.
    #[inline(always)]
    pub(crate) unsafe fn push(&mut self, block: NonNull<u8>, usable: usize) -> bool {
        let bin = bin_of(usable + WORD);
        if bin >= BINS || self.rooms[bin] == 0 || !self.within_budget(usable) {
            return false;
        }
        // SAFETY: the block is ours to link through its first word.
        unsafe { block.cast::<*mut u8>().write(self.heads[bin]) };
        self.heads[bin] = block.as_ptr();
        self.rooms[bin] -= 1;
        self.cached_bytes += usable;
        true
    }

    /// Whether `usable` more bytes keep the cache within its budget (or the cache is empty).
    #[inline(always)]
    fn within_budget(&self, usable: usize) -> bool {
        self.cached_bytes == 0 || self.cached_bytes + usable <= self.budget
    }

    /// `push` for a live cache that refused the block: empties the block's full bin, or every
    /// bin when the budget is spent, and tries again; a block the cache cannot hold goes to the
    /// central heap.
    ///
    /// # Safety
    /// As for [`MediumCache::push`]; the cache is live.
    pub(crate) unsafe fn push_after_release(
        &mut self,
        central: &mut Central,
        block: NonNull<u8>,
        usable: usize,
    ) {
        let bin = bin_of(usable + WORD);
        if bin < BINS {
            if self.rooms[bin] == 0 {
                self.release_bin(central, bin);
            }
            if !self.within_budget(usable) {
                self.release_all(central);
            }
        }
        // SAFETY: forwarded from the caller.
        if !unsafe { self.push(block, usable) } {
            // SAFETY: as above; the block is not cached.
            unsafe { central.free(block) };
        }
    }

    /// Gives every cached block back to the central heap.
    fn release_all(&mut self, central: &mut Central) {
        for bin in 0..BINS {
            self.release_bin(central, bin);
        }
    }

    fn release_bin(&mut self, central: &mut Central, bin: usize) {
        let mut released = 0;
        while let Some(block) = NonNull::new(self.heads[bin]) {
            // SAFETY: a listed block is live and ours: its first word is the link, its header
            // gives its size, and it is then given back.
            unsafe {
                self.heads[bin] = block.cast::<*mut u8>().read();
                self.cached_bytes -= central::usable_size(block);
                central.free(block);
            }
            self.rooms[bin] += 1;
            released += 1;
        }
        add(&COUNTERS.medium_released, released);
    }
}
