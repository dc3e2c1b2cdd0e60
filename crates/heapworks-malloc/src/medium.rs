//! Medium blocks in the thread caches: core-heap blocks above the small classes, kept per
//! thread by size so that `free(malloc(n))` of a medium `n` takes no lock.
//!
//! A freed medium block joins the bin of its usable size (8 bins per power of two, from 1 KiB
//! up). `malloc(n)` takes the head of `n`'s bin if it holds `n` bytes with at most half as much
//! to spare; otherwise the first such block further down that bin or in the next four (whose
//! blocks reach at least 1.44 times `n`). Blocks keep their exact size: nothing is
//! rounded up when it comes from the core heap, so a program's memory grows by nothing but
//! what it asks for, and a block taken for a smaller request is not split (a split would take
//! an arena lock, which the cache is there to spare). The budget starts at an eighth of the
//! thread's (`HEAPWORKS_TCACHE_KIB`): cached blocks of sizes the program no longer asks for are
//! resident memory nobody uses, which a small budget keeps small. It doubles, up to four times
//! that, each time a cache that serves requests has given back 64 budgets' worth of its oldest
//! blocks: its thread churns through medium blocks of more sizes than the budget holds, and
//! every block it keeps spares a lock. (Of the trace corpus only gcc-cc1 grows it, once: peak
//! RSS 1.057 -> 1.065 times glibc's.)
//!
//! Measured on `threads.c mixed` (two threads, each freeing and allocating random 8 B to 4 KiB
//! blocks, 1024 live): taking only a block within an eighth of the request, from two bin heads,
//! and emptying every bin whenever the budget was spent sent 42 % of its medium requests to the
//! core heap (26 600 per million calls), and with the two vCPUs far apart (a 440 ns
//! cache-line round trip) its throughput fell from 136 to 54 Mops/s. Giving back only the oldest
//! blocks cut that to 20 400 per million, serving from any block up to half again as large to
//! 5 400 (112 Mops/s far apart, 165 close, glibc 100 and 101), with the trace corpus's peak
//! RSS unchanged, and growing the budget to 440 (185 Mops/s close).
//!
//! Invariants:
//! - For every bin: `room + length of its list == limit(bin)` while the cache is live, and
//!   every listed block is a live core-heap block whose usable size maps to the bin. A
//!   bin's list runs from the most recently freed block to the oldest.
//! - `budget` is the starting budget times 1, 2 or 4, and only grows.
//! - `cached_bytes` is the sum of the listed blocks' usable sizes, and it never exceeds the
//!   budget unless a single block does (so that a loop over one block larger than the budget
//!   still takes no lock): a thread keeps at most `max(budget, one block)` in medium blocks.
//! - A free that finds no room gives back, under one lock: everything if no block was taken
//!   from the cache since the last such free (the thread only frees medium blocks, as the
//!   consumer of another thread's do); otherwise the older half of the block's bin if that is
//!   full, and, while the budget lacks room for the block, the oldest block of each non-empty
//!   bin in turn until three quarters of the budget hold it. The rest stays for reuse.
//! - The cache lives in a block of the core heap, created when its thread's cache starts
//!   and given back, with every block it holds, when the thread exits; the thread cache keeps
//!   only a pointer to it (null: no medium cache, as with a budget of 0), because static TLS
//!   is scarce for a library loaded with `dlopen`.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::address_map;
use crate::core_heap::CoreHeap;
use crate::link;
use crate::size_class::{
    medium_class_bytes, medium_class_of_request, medium_class_of_usable, MEDIUM_CLASSES,
};
use crate::stats::{add, bump, COUNTERS};

/// Where blocks the cache gives up go (the thread's router to their arenas: see
/// [`crate::thread`]); each is a live core-heap block handed over for good.
pub(crate) type Release<'a> = &'a mut dyn FnMut(NonNull<u8>);
/// Bins: one per medium class (see [`crate::size_class`]).
const BINS: usize = MEDIUM_CLASSES;
/// The bytes one bin may hold, in blocks of its class (at least one block).
const BIN_BYTES: usize = 32 << 10;
/// Bins a request looks at: its class's, then the next ones' heads (the fifth class on holds
/// about half again the request, the most a block may waste serving it); a miss collects the
/// same classes' remote stacks (`thread::collect_medium`).
pub(crate) const SEARCH_BINS: usize = 5;
/// The budget doubles each time the cache, while it serves requests, has given back this many
/// budgets' worth of its oldest blocks: the thread churns through medium blocks of many sizes.
const GROW_AFTER: usize = 64;
/// The budget grows to at most this many times its start.
const MAX_GROWTH: usize = 4;
/// The most blocks one bin may hold.
const MAX_BIN_BLOCKS: usize = 16;

/// One thread's medium blocks, in a block of the core heap.
pub(crate) struct MediumCache {
    heads: [*mut u8; BINS],
    rooms: [u8; BINS],
    cached_bytes: usize,
    budget: usize,
    /// The most `budget` may grow to.
    max_budget: usize,
    /// Bytes [`MediumCache::release_oldest`] gave back since the budget last grew.
    given_back: usize,
    /// The bin [`MediumCache::release_oldest`] released last.
    next_victim: usize,
    /// Whether a block was taken from the cache since it last gave blocks back.
    served: bool,
}

/// How many blocks `bin` may hold.
fn limit(bin: usize) -> u8 {
    (BIN_BYTES / medium_class_bytes(bin)).clamp(1, MAX_BIN_BLOCKS) as u8
}

/// The bin a block of `usable` bytes joins: the class it serves (blocks larger than any class,
/// none in practice, join the last).
#[inline(always)]
fn bin_of_usable(usable: usize) -> usize {
    medium_class_of_usable(usable).min(BINS - 1)
}

impl MediumCache {
    /// An empty medium cache of `budget` bytes in a new core-heap block; `None` for a budget
    /// of 0 or when the heap has no memory.
    pub(crate) fn create(heap: &mut CoreHeap, budget: usize) -> Option<NonNull<MediumCache>> {
        if budget == 0 {
            return None;
        }
        let block = heap
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
            max_budget: budget.saturating_mul(MAX_GROWTH),
            given_back: 0,
            next_victim: 0,
            served: false,
        };
        // SAFETY: the block is fresh, ours, and laid out for a `MediumCache`.
        unsafe { block.write(cache) };
        Some(block)
    }

    /// Gives every cached block, then the cache's own block, to `release` (thread exit).
    ///
    /// # Safety
    /// `cache` was made by [`MediumCache::create`] and is not used afterwards.
    pub(crate) unsafe fn destroy(cache: NonNull<MediumCache>, release: Release<'_>) {
        // SAFETY: the cache is live and ours until its block is released, which ends its use.
        unsafe {
            (*cache.as_ptr()).release_all(release);
            release(cache.cast());
        }
    }

    /// Takes a cached block for a request of `size` bytes (above the small classes, at most
    /// `LARGE_MIN`): the head of its class's bin, else of the next bins' (every block of a bin
    /// holds its class's bytes, so no block is looked at but the one taken).
    #[inline(always)]
    pub(crate) fn pop(&mut self, size: usize) -> Option<NonNull<u8>> {
        let bin = medium_class_of_request(size);
        match NonNull::new(*self.heads.get(bin)?) {
            // SAFETY: the head is on the bin's list and follows nothing.
            Some(head) => Some(unsafe { self.unlink(bin, head) }),
            None => self.pop_searching(bin),
        }
    }

    /// `pop` of an empty bin: the head of the first non-empty bin of the next
    /// [`SEARCH_BINS`]` - 1`.
    #[inline(never)]
    fn pop_searching(&mut self, first: usize) -> Option<NonNull<u8>> {
        for bin in first + 1..(first + SEARCH_BINS).min(BINS) {
            if let Some(head) = NonNull::new(self.heads[bin]) {
                // SAFETY: as in `pop`.
                return Some(unsafe { self.unlink(bin, head) });
            }
        }
        None
    }

    /// Takes `block`, the head of `bin`'s list, off it.
    ///
    /// # Safety
    /// `block` is the head of `bin`'s list.
    #[inline(always)]
    unsafe fn unlink(&mut self, bin: usize, block: NonNull<u8>) -> NonNull<u8> {
        // SAFETY: forwarded from the caller; the blocks' first words are the links.
        unsafe {
            let rest = link::next(block);
            // A link that leads out of the core heap was overwritten (a write after free,
            // or an overflow from the block before): caught before it is followed.
            if !rest.is_null() && address_map::owner(rest.addr()).is_none() {
                crate::fault::corrupted_link(block.as_ptr());
            }
            self.heads[bin] = rest;
            block.cast::<usize>().add(1).write(0);
            self.rooms[bin] += 1;
            self.cached_bytes -= medium_class_bytes(bin);
            self.served = true;
            block
        }
    }

    /// Caches a freed block of `usable` bytes if its bin has room and the budget allows.
    /// Returns whether it did.
    ///
    /// # Safety
    /// `block` is a live core-heap block of `usable` bytes, above the small classes, that
    /// the caller gives up.
    #[inline(always)]
    pub(crate) unsafe fn push(&mut self, block: NonNull<u8>, usable: usize) -> bool {
        let bin = bin_of_usable(usable);
        // SAFETY: the block is ours to mark through its second word (see `thread::push_at`:
        // the cache's address marks a cached block). The mark is checked before anything can
        // refuse the block: a refusal may give the cached twin back to the heap first.
        let mark = unsafe { block.cast::<usize>().add(1) };
        let me = (self as *const MediumCache).addr();
        // SAFETY: as above.
        if unsafe { mark.read() } == me && self.bin_holds(bin, block) {
            crate::fault::double_free(block.as_ptr(), usable);
        }
        let bytes = medium_class_bytes(bin);
        if self.rooms[bin] == 0 || !self.within_budget(bytes) {
            return false;
        }
        // SAFETY: the block is ours to link through its first word and mark.
        unsafe {
            mark.write(me);
            link::set(block, self.heads[bin]);
        }
        self.heads[bin] = block.as_ptr();
        self.rooms[bin] -= 1;
        self.cached_bytes += bytes;
        true
    }

    /// Whether `bin` has room for `count` more blocks and the budget allows them; an empty
    /// bin takes as many as it has room for even past the budget (so that the blocks other
    /// threads freed into the thread's arena reach the bin that asks for them, not the arena's
    /// heap: the cache then holds at most one bin's bytes more than its budget).
    pub(crate) fn has_room(&self, bin: usize, count: u32) -> bool {
        self.rooms[bin] as u32 >= count
            && (self.heads[bin].is_null()
                || self.within_budget(count as usize * medium_class_bytes(bin)))
    }

    /// Takes the `count` blocks of medium class `bin` linked from `first` to `last` (whose
    /// link is overwritten) onto the bin's list, in O(1): reading no block, writing `last`'s
    /// link (blocks other threads freed into the thread's arena, see [`crate::thread`]).
    ///
    /// # Safety
    /// [`MediumCache::has_room`] said so; the blocks are live core-heap blocks that join
    /// `bin` (see [`bin_of_usable`]), linked through their first words, which the caller
    /// gives up.
    pub(crate) unsafe fn splice(
        &mut self,
        bin: usize,
        first: NonNull<u8>,
        last: NonNull<u8>,
        count: u32,
    ) {
        debug_assert!(self.has_room(bin, count));
        // SAFETY: forwarded from the caller.
        unsafe { link::set(last, self.heads[bin]) };
        self.heads[bin] = first.as_ptr();
        self.rooms[bin] -= count as u8;
        self.cached_bytes += count as usize * medium_class_bytes(bin);
    }

    /// Whether `block` is on the list of `bin` (a walk of at most its limit).
    fn bin_holds(&self, bin: usize, block: NonNull<u8>) -> bool {
        let mut at = self.heads[bin];
        for _ in 0..=limit(bin) {
            if at.is_null() {
                return false;
            }
            if at == block.as_ptr() {
                return true;
            }
            // SAFETY: a cached block's first word links to the next one.
            at = unsafe { link::next(NonNull::new_unchecked(at)) };
        }
        false
    }

    /// Whether `bytes` more keep the cache within its budget (or the cache is empty).
    #[inline(always)]
    fn within_budget(&self, bytes: usize) -> bool {
        self.cached_bytes == 0 || self.cached_bytes + bytes <= self.budget
    }

    /// `push` for a live cache that refused the block: gives back what the module docs say
    /// (everything for a thread that only frees; else the older half of a full bin and the
    /// oldest blocks while the budget lacks room, down to three quarters of it so that one lock
    /// pays for several frees), then tries again; a block the cache cannot hold goes to the
    /// core heap. Emptying every bin whenever the budget was spent left a thread that frees
    /// and allocates medium blocks of mixed sizes with an empty cache most of the time.
    ///
    /// # Safety
    /// As for [`MediumCache::push`]; the cache is live.
    pub(crate) unsafe fn push_after_release(
        &mut self,
        block: NonNull<u8>,
        usable: usize,
        release: Release<'_>,
    ) {
        let bin = bin_of_usable(usable);
        if !self.served {
            // No block was taken from the cache since it last gave any back: the thread only
            // frees medium blocks (a consumer of another thread's), so keeping some serves
            // nobody, and giving all back at once takes the lock once a budget.
            self.release_all(release);
        } else {
            if self.rooms[bin] == 0 {
                let keep = (limit(bin) / 2) as usize;
                self.release_tail(release, bin, keep);
            }
            let bytes = medium_class_bytes(bin);
            if !self.within_budget(bytes) {
                self.release_oldest(release, bytes);
            }
        }
        self.served = false;
        // SAFETY: forwarded from the caller.
        if !unsafe { self.push(block, usable) } {
            // The block is not cached: it goes.
            release(block);
        }
    }

    /// Gives back the oldest block of each non-empty bin in turn, from the one after the bin
    /// last released, until `bytes` more fit in three quarters of the budget or the cache is
    /// empty.
    fn release_oldest(&mut self, release: Release<'_>, bytes: usize) {
        let target = self.budget - self.budget / 4;
        let cached = self.cached_bytes;
        let mut bin = self.next_victim;
        while self.cached_bytes != 0 && self.cached_bytes + bytes > target {
            bin = (bin + 1) % BINS;
            if !self.heads[bin].is_null() {
                let len = (limit(bin) - self.rooms[bin]) as usize;
                self.release_tail(release, bin, len - 1);
            }
        }
        self.next_victim = bin;
        self.given_back += cached - self.cached_bytes;
        if self.given_back >= self.budget.saturating_mul(GROW_AFTER)
            && self.budget < self.max_budget
        {
            self.budget = self.budget.saturating_mul(2).min(self.max_budget);
            self.given_back = 0;
            bump(&COUNTERS.medium_grown);
        }
    }
    /// Gives every cached block back to the core heap.
    fn release_all(&mut self, release: Release<'_>) {
        for bin in 0..BINS {
            self.release_tail(release, bin, 0);
        }
    }

    /// Gives back the blocks of `bin` after its first `keep` (the older ones: a bin's list runs
    /// from the most recently freed block).
    fn release_tail(&mut self, release: Release<'_>, bin: usize, keep: usize) {
        // SAFETY: a listed block is live and ours: its first word is the link, its header
        // gives its size, and blocks cut off the list are given back.
        unsafe {
            let mut rest = self.heads[bin];
            let mut last = None;
            for _ in 0..keep {
                let Some(block) = NonNull::new(rest) else {
                    return;
                };
                last = Some(block);
                rest = link::next(block);
            }
            match last {
                Some(last) => link::set(last, core::ptr::null_mut()),
                None => self.heads[bin] = core::ptr::null_mut(),
            }
            let mut released = 0;
            while let Some(block) = NonNull::new(rest) {
                rest = link::next(block);
                self.cached_bytes -= medium_class_bytes(bin);
                release(block);
                released += 1;
            }
            self.rooms[bin] += released as u8;
            add(&COUNTERS.medium_released, released);
        }
    }
}
