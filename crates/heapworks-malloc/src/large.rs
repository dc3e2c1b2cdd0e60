//! Large blocks: whole-page mappings with their size one load away, resized with `mremap`.
//!
//! ```text
//! base (page-aligned)                 ptr (16-aligned, or as asked)
//! | padding ... | [base] [len | TAG] | payload ..................................| base + len
//! ```
//!
//! Invariants: the two words before a large block's payload hold its mapping's base and its
//! length (whole pages) with `heapworks::EMBEDDER_TAG` set, a bit the core never sets in the
//! word before its own blocks, so `free` tells the kinds apart with one load and finds the size
//! in O(1). The payload runs to the end of the mapping. `realloc` moves the mapping with
//! `mremap` (the kernel moves page tables, not bytes) and keeps the payload's offset.
//!
//! Freed mappings are kept for reuse, so loops over multi-MiB blocks do not fault their pages
//! in again each time:
//! - Each thread's cache holds a [`LargeSlot`]: the thread's most recently freed mapping of at
//!   most [`SLOT_MAX_BYTES`], reused without a lock or an atomic by a request that fits it
//!   whole. A request that does not fit it hands it to the shared cache, and the thread's exit
//!   does too, so a thread keeps at most one such mapping.
//! - The shared cache, under a lock, holds at most `HEAPWORKS_LARGE_CACHE_MIB` (and at most
//!   [`CACHE_SLOTS`] ranges); beyond the bound the oldest are unmapped. A freed range that
//!   touches a cached one joins it, so a mapping split for one request is whole again for the
//!   next.
//! - When a core heap grows, as many bytes of cached mappings are unmapped
//!   ([`release_for_growth`]): a loop that reuses its large blocks does not grow the heap, so
//!   it keeps them, while a program that has moved on to other work does not keep their pages
//!   resident beside the heap's new ones.
//!
//! A request takes the smallest cached range that holds it: whole if that exceeds the length
//! needed by at most an eighth, else split, its tail staying cached (no system call: a freed
//! 16 MiB block serves two 8 MiB requests, not one with 8 MiB idle). When no cached range holds
//! it, the largest is grown with `mremap`, which keeps its resident pages, so a loop over
//! blocks of varying multi-MiB sizes faults in only what exceeds the largest so far. A range
//! may span two kernel mappings after joining, where `mremap` fails: then the request maps
//! fresh memory and `realloc` copies. System calls are made outside the cache lock (and leave
//! errno alone, see [`crate::os`], as `free` must).

use core::ptr::NonNull;

use heapworks::EMBEDDER_TAG;

use crate::config;
use crate::lock::SpinLock;
use crate::os::{self, PAGE};
use crate::stats::{bump, COUNTERS};

const WORD: usize = core::mem::size_of::<usize>();
/// The words in front of a payload: base, then tagged length.
const HEADER: usize = 2 * WORD;
/// Freed ranges kept at most.
const CACHE_SLOTS: usize = 16;
/// Ranges one visit to the shared cache can evict: every cached one and the two it adds.
const EVICTED_MAX: usize = CACHE_SLOTS + 2;
/// The longest mapping a thread's slot keeps (glibc's largest dynamic mmap threshold too).
const SLOT_MAX_BYTES: usize = 32 << 20;

const _: () = assert!(
    EMBEDDER_TAG < PAGE,
    "the tag must fit in a page-rounded length"
);

/// A range of whole pages of our anonymous read-write mappings (a block's, or a cached one):
/// its base and length in bytes. It may be part of one kernel mapping or, once joined, span two.
#[derive(Clone, Copy)]
pub(crate) struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

/// Ranges evicted from the shared cache under its lock, to unmap after releasing it.
struct Evicted {
    ranges: [Option<Mapping>; EVICTED_MAX],
    count: usize,
}

impl Evicted {
    const fn new() -> Evicted {
        Evicted {
            ranges: [None; EVICTED_MAX],
            count: 0,
        }
    }

    fn push(&mut self, range: Mapping) {
        self.ranges[self.count] = Some(range);
        self.count += 1;
    }

    /// Unmaps the evicted ranges.
    fn unmap_all(self) {
        for victim in self.ranges.into_iter().flatten() {
            // SAFETY: the range left the caches and nothing else refers to it.
            unsafe { os::unmap(victim.base, victim.len) };
            bump(&COUNTERS.large_unmaps);
        }
    }
}

/// Freed ranges of whole pages, oldest first.
struct Cache {
    slots: [Option<Mapping>; CACHE_SLOTS],
    count: usize,
    bytes: usize,
    /// Secure mode's freed guarded mappings (guard page included), a ring from `guarded_next`.
    guarded: [Option<Mapping>; GUARDED_HELD],
    guarded_next: usize,
}

// SAFETY: cached mappings belong to the cache alone; nothing ties them to a thread.
unsafe impl Send for Cache {}

/// A thread's most recently freed large mapping, kept in its thread cache. All zeroes (a null
/// base) is the empty slot.
#[repr(C)]
pub(crate) struct LargeSlot {
    base: *mut u8,
    len: usize,
}

impl LargeSlot {
    /// Takes the mapping if it serves a request of `len` bytes whole.
    #[inline(always)]
    fn take_fitting(&mut self, len: usize) -> Option<Mapping> {
        if !fits_whole(self.len, len) {
            return None;
        }
        self.take()
    }

    fn take(&mut self) -> Option<Mapping> {
        let base = NonNull::new(core::mem::replace(&mut self.base, core::ptr::null_mut()))?;
        Some(Mapping {
            base,
            len: core::mem::take(&mut self.len),
        })
    }

    /// Keeps `mapping` and returns the one it replaces.
    #[inline(always)]
    fn replace(&mut self, mapping: Mapping) -> Option<Mapping> {
        let previous = self.take();
        self.base = mapping.base.as_ptr();
        self.len = mapping.len;
        previous
    }
}

/// Whether a mapping of `available` bytes serves a request of `len` bytes with little waste.
#[inline(always)]
fn fits_whole(available: usize, len: usize) -> bool {
    available >= len && available - len <= len / 8
}

static CACHE: SpinLock<Cache> = SpinLock::new(Cache {
    slots: [None; CACHE_SLOTS],
    count: 0,
    bytes: 0,
    guarded: [None; GUARDED_HELD],
    guarded_next: 0,
});

/// Whether `block` (a live block of this library) is a large block.
///
/// # Safety
/// `block` is a live block handed out by this library.
#[inline(always)]
pub(crate) unsafe fn is_large(block: NonNull<u8>) -> bool {
    // SAFETY: every live block has a readable word before it: the core's header or ours.
    unsafe { block.cast::<usize>().sub(1).read() & EMBEDDER_TAG != 0 }
}

/// A large block and whether its memory is known to be zero (fresh from the kernel).
pub(crate) struct LargeBlock {
    pub(crate) ptr: NonNull<u8>,
    pub(crate) zeroed: bool,
}

/// Allocates a large block of `size` bytes aligned to `align` (a power of two, at least 16),
/// reusing the calling thread's `slot` (if it has one) or the shared cache.
pub(crate) fn allocate(
    size: usize,
    align: usize,
    slot: Option<&mut LargeSlot>,
) -> Option<LargeBlock> {
    if config::secure() {
        return allocate_guarded(size, align);
    }
    let front = if align <= PAGE {
        align.max(HEADER)
    } else {
        align + HEADER
    };
    let len = os::round_to_pages(size.checked_add(front)?)?;
    let (mapping, zeroed) = match reuse(len, slot) {
        Some(mapping) => (mapping, false),
        None => (map_fresh(len)?, true),
    };
    let base = mapping.base.as_ptr().addr();
    let payload = (base + HEADER + align - 1) & !(align - 1);
    // SAFETY: `payload - base <= front`, so the payload and its two header words lie inside
    // the mapping.
    let ptr = unsafe { mapping.base.add(payload - base) };
    // SAFETY: as above.
    unsafe { write_header(ptr, mapping) };
    Some(LargeBlock { ptr, zeroed })
}

/// Secure mode's large block: a fresh mapping whose block ends against a guard page (an
/// overflow faults at its first byte past the block's alignment slack), never reused.
fn allocate_guarded(size: usize, align: usize) -> Option<LargeBlock> {
    let len = os::round_to_pages(
        size.max(heapworks::GRANULE)
            .checked_add(2 * align.max(HEADER))?,
    )?;
    let base = os::map(len.checked_add(PAGE)?)?;
    // SAFETY: the page after `len` bytes is the mapping's last, unused.
    if !unsafe { os::protect_none(base.add(len), PAGE) } {
        // SAFETY: the mapping was just made and nothing uses it.
        unsafe { os::unmap(base, len + PAGE) };
        return None;
    }
    bump(&COUNTERS.large_mapped);
    let end = base.as_ptr().addr() + len;
    // At least a granule, so that even an empty block lies before the guard page.
    let payload = (end - size.max(heapworks::GRANULE)) & !(align - 1);
    // SAFETY: `payload - base >= len - size - align >= HEADER`, so the block and its header
    // lie inside the mapping's first `len` bytes.
    let ptr = unsafe { base.add(payload - base.as_ptr().addr()) };
    // SAFETY: as above.
    unsafe {
        write_header(ptr, Mapping { base, len });
        mark_header(ptr, GUARDED);
    }
    Some(LargeBlock { ptr, zeroed: true })
}

/// Freed large blocks of secure mode held back (their mappings, guard pages included, in the
/// shared cache's ring) before they are unmapped, so that a second free finds the freed mark
/// rather than faulting.
const GUARDED_HELD: usize = 16;

/// Frees a guarded block: marks its header freed, makes every page of the mapping but the
/// header's inaccessible (a write after free faults), and holds the mapping in a ring of
/// [`GUARDED_HELD`], unmapping the one it replaces.
///
/// # Safety
/// `block` is a live guarded block whose mapping (guard page excluded) is `mapping`.
unsafe fn quarantine_guarded(block: NonNull<u8>, mapping: Mapping) {
    let whole = Mapping {
        base: mapping.base,
        len: mapping.len + PAGE,
    };
    // SAFETY: the header lies in the mapping; the pages around its own are the block's, which
    // nobody may use any more.
    unsafe {
        let header_page = (block.as_ptr().addr() - HEADER) & !(PAGE - 1);
        let header_page = block.with_addr(core::num::NonZeroUsize::new_unchecked(header_page));
        mark_header(block, FREED);
        let before = header_page.as_ptr().addr() - mapping.base.as_ptr().addr();
        if before > 0 {
            seal(mapping.base, before);
        }
        let after = header_page.add(PAGE);
        let end = mapping.base.as_ptr().addr() + mapping.len;
        if end > after.as_ptr().addr() {
            seal(after, end - after.as_ptr().addr());
        }
    }
    let replaced = {
        let mut cache = CACHE.lock();
        let next = cache.guarded_next;
        cache.guarded_next = (next + 1) % GUARDED_HELD;
        cache.guarded[next].replace(whole)
    };
    if let Some(old) = replaced {
        bump(&COUNTERS.large_unmaps);
        // SAFETY: the held mapping was the freed block's alone.
        unsafe { os::unmap(old.base, old.len) };
    }
}

/// Gives a held block's pages back to the OS and makes them inaccessible: a held mapping keeps
/// only its header page resident (without the discard, 16 held blocks of 40 MiB that had been
/// written kept 640 MiB resident).
///
/// # Safety
/// The range is page-aligned, inside a freed guarded block's mapping, and holds nothing anyone
/// may use.
unsafe fn seal(addr: NonNull<u8>, len: usize) {
    // SAFETY: forwarded from the caller; the mapping is still read-write when discarded.
    unsafe {
        os::discard(addr, len);
        os::protect_none(addr, len);
    }
}

/// A new mapping of `len` bytes (whole pages), zeroed by the kernel.
#[cold]
fn map_fresh(len: usize) -> Option<Mapping> {
    let base = os::map(len)?;
    bump(&COUNTERS.large_mapped);
    Some(Mapping { base, len })
}

/// A freed mapping for a request of `len` bytes: the thread's slot if it fits whole, else the
/// shared cache's best fit (the slot's mapping joining the shared cache first).
#[inline(always)]
fn reuse(len: usize, slot: Option<&mut LargeSlot>) -> Option<Mapping> {
    let Some(slot) = slot else {
        return take_shared(len, None);
    };
    if let Some(mapping) = slot.take_fitting(len) {
        return Some(mapping);
    }
    take_shared(len, slot.take())
}

/// The bytes a large block can hold.
///
/// # Safety
/// `block` is a live large block.
pub(crate) unsafe fn usable_size(block: NonNull<u8>) -> usize {
    // SAFETY: forwarded from the caller.
    let mapping = unsafe { mapping_of(block) };
    mapping.base.as_ptr().addr() + mapping.len - block.as_ptr().addr()
}

/// Frees a large block: into the calling thread's `slot` if it has one (its previous mapping,
/// if any, moving to the shared cache), or into the shared cache, or back to the OS. Keeps
/// errno.
///
/// # Safety
/// `block` is a live large block, not used after this call.
#[inline(always)]
pub(crate) unsafe fn free(block: NonNull<u8>, slot: Option<&mut LargeSlot>) {
    // SAFETY: the caller's block has a header; it stays readable while it is cached.
    let mapping = match unsafe { header(block) } {
        Header::Live(mapping) => mapping,
        Header::Freed(len) => crate::fault::double_free(block.as_ptr(), len),
        Header::Invalid => crate::fault::invalid_pointer("free", block.as_ptr()),
    };
    // SAFETY: the caller's block has a header.
    if unsafe { header_words(block) }.1 & GUARDED != 0 {
        // SAFETY: the mapping and its guard page are the block's alone, given up.
        return unsafe { quarantine_guarded(block, mapping) };
    }
    // SAFETY: the header lies in the mapping, which stays mapped while it is cached (an
    // unmapped one faults on a second free: caught by the kernel, never reused silently).
    unsafe { mark_header(block, FREED) };
    let shared = if mapping.len <= slot_max_bytes() {
        match slot {
            Some(slot) => slot.replace(mapping),
            None => Some(mapping),
        }
    } else {
        Some(mapping)
    };
    if let Some(mapping) = shared {
        share(mapping);
    }
}

/// The longest mapping a thread's slot may keep: none when large blocks are not cached.
#[inline(always)]
fn slot_max_bytes() -> usize {
    config::large_cache_bytes().min(SLOT_MAX_BYTES)
}

/// Empties a retiring thread's slot into the shared cache.
pub(crate) fn retire_slot(slot: &mut LargeSlot) {
    if let Some(mapping) = slot.take() {
        share(mapping);
    }
}

/// Puts a freed mapping in the shared cache, unmapping what the bound evicts. Keeps errno.
#[cold]
fn share(mapping: Mapping) {
    let mut evicted = Evicted::new();
    CACHE
        .lock()
        .insert(mapping, config::large_cache_bytes(), &mut evicted);
    evicted.unmap_all();
}

/// Resizes a large block to hold `new_size` bytes with `mremap`, keeping its contents. Returns
/// the (possibly moved) block, or `None` with the block untouched (out of memory, or a range
/// that spans two kernel mappings).
///
/// # Safety
/// `block` is a live large block.
pub(crate) unsafe fn realloc(block: NonNull<u8>, new_size: usize) -> Option<NonNull<u8>> {
    // SAFETY: forwarded from the caller.
    let mapping = unsafe { mapping_of(block) };
    let offset = block.as_ptr().addr() - mapping.base.as_ptr().addr();
    let len = os::round_to_pages(new_size.checked_add(offset)?)?;
    if len == mapping.len {
        return Some(block);
    }
    // SAFETY: the range is the block's own (the kernel splits a mapping it is part of); on
    // success the old range is gone.
    let base = unsafe { os::remap(mapping.base, mapping.len, len) }?;
    bump(&COUNTERS.large_remaps);
    // SAFETY: the payload keeps its offset inside the resized mapping, which holds it.
    unsafe {
        let moved = base.add(offset);
        write_header(moved, Mapping { base, len });
        Some(moved)
    }
}

/// Gives back at least `bytes` of cached mappings if there are as many (the shared cache's
/// oldest first, then the calling thread's slot), because the core heap has just grown by
/// `bytes`: a program whose heap grows is not reusing its freed large blocks at the moment, and
/// keeping their pages resident while the heap takes new ones would raise its peak RSS by as
/// much (sqlite building an index after freeing its 2 MiB buffers: 1.2 times glibc's). A loop
/// that reuses its large blocks does not grow the heap, so it keeps them. Called with no
/// other lock held; `slot` is the calling thread's, if it has one.
pub(crate) fn release_for_growth(bytes: usize, slot: Option<&mut LargeSlot>) {
    let mut evicted = Evicted::new();
    let mut released = 0;
    {
        let mut cache = CACHE.lock();
        while released < bytes && cache.count > 0 {
            released += cache.len_at(0);
            cache.evict_oldest(&mut evicted);
        }
    }
    if released < bytes {
        if let Some(mapping) = slot.and_then(LargeSlot::take) {
            evicted.push(mapping);
        }
    }
    if evicted.count > 0 {
        bump(&COUNTERS.large_released_for_growth);
    }
    evicted.unmap_all();
}

/// Unmaps every freed guarded mapping secure mode holds back (the kernel refused a mapping:
/// see [`crate::thread::make_room`]).
pub(crate) fn release_guarded() {
    let held = core::mem::replace(&mut CACHE.lock().guarded, [None; GUARDED_HELD]);
    for mapping in held.into_iter().flatten() {
        bump(&COUNTERS.large_unmaps);
        // SAFETY: a held mapping was a freed block's alone, and is no longer held.
        unsafe { os::unmap(mapping.base, mapping.len) };
    }
}

/// Holds the cache lock across `fork` (prepare handler).
pub(crate) fn lock_for_fork() {
    CACHE.lock_for_fork();
}

/// Releases the cache lock after `fork`.
///
/// # Safety
/// Called only by the fork handlers, after [`lock_for_fork`].
pub(crate) unsafe fn unlock_after_fork() {
    // SAFETY: forwarded from the caller.
    unsafe { CACHE.force_unlock() };
}

/// Marks a freed large block's length word (set while its mapping waits in a cache, cleared
/// when a block is written into it again): a second free of it is caught. A length is whole
/// pages, so its low bits are free.
const FREED: usize = 1;
/// Marks the length word of a block whose mapping is followed by a guard page (secure mode):
/// its length excludes the guard, which goes with it when it is unmapped.
const GUARDED: usize = 2;
/// Every bit of a length word that is not the length.
const MARKS: usize = EMBEDDER_TAG | FREED | GUARDED;

/// What the header of a block whose tag says large tells: its mapping, or why it cannot be one.
pub(crate) enum Header {
    Live(Mapping),
    /// Freed, its mapping (of this many bytes) waiting in a cache.
    Freed(usize),
    Invalid,
}

/// Reads and checks the header of `block`, whose tag says large: the mapping it names must be
/// whole pages that hold the block's header, with the block past it. A pointer that is not a
/// block of ours but whose previous word has the tag fails these checks (unless it forges
/// them all).
///
/// # Safety
/// The two words before `block` are readable.
pub(crate) unsafe fn header(block: NonNull<u8>) -> Header {
    // SAFETY: forwarded from the caller.
    let (base, word) = unsafe { header_words(block) };
    let len = word & !MARKS;
    let offset = block.as_ptr().addr().wrapping_sub(base);
    let fits = base != 0
        && base.is_multiple_of(PAGE)
        && len.is_multiple_of(PAGE)
        && (HEADER..len).contains(&offset);
    if !fits {
        return Header::Invalid;
    }
    if word & FREED != 0 {
        return Header::Freed(len);
    }
    // SAFETY: `base` is not 0.
    let base = block.with_addr(unsafe { core::num::NonZeroUsize::new_unchecked(base) });
    Header::Live(Mapping { base, len })
}

/// # Safety
/// `block` is a live large block.
unsafe fn mapping_of(block: NonNull<u8>) -> Mapping {
    // SAFETY: a large block's two header words are readable and describe its mapping.
    unsafe {
        let (base, word) = header_words(block);
        let base_ptr = block.with_addr(core::num::NonZeroUsize::new_unchecked(base));
        Mapping {
            base: base_ptr,
            len: word & !MARKS,
        }
    }
}

/// A large block's two header words: its mapping's base, and its length with the marks.
///
/// # Safety
/// The two words before `block` are readable.
unsafe fn header_words(block: NonNull<u8>) -> (usize, usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let words = block.cast::<usize>();
        (words.sub(2).read(), words.sub(1).read())
    }
}

/// Adds `marks` (`FREED`, `GUARDED`) to a large block's length word.
///
/// # Safety
/// `block` is a large block whose header the caller may write.
unsafe fn mark_header(block: NonNull<u8>, marks: usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let word = block.cast::<usize>().sub(1);
        word.write(word.read() | marks);
    }
}

/// # Safety
/// `ptr - HEADER .. ptr` lies inside `mapping`, which the block owns.
unsafe fn write_header(ptr: NonNull<u8>, mapping: Mapping) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let words = ptr.cast::<usize>();
        words.sub(2).write(mapping.base.as_ptr().addr());
        words.sub(1).write(mapping.len | EMBEDDER_TAG);
    }
}

/// A mapping of `len` bytes from the shared cache, after adding `spilled` (a thread slot's
/// mapping) to it: the best fit, whole or split, else the largest range grown to `len`.
#[cold]
fn take_shared(len: usize, spilled: Option<Mapping>) -> Option<Mapping> {
    let limit = config::large_cache_bytes();
    let mut evicted = Evicted::new();
    let (fit, largest) = {
        let mut cache = CACHE.lock();
        if let Some(mapping) = spilled {
            cache.insert(mapping, limit, &mut evicted);
        }
        match cache.take_best_fit(len) {
            Some(range) => (Some(cache.keep_tail(range, len, limit, &mut evicted)), None),
            None => (None, cache.take_largest()),
        }
    };
    evicted.unmap_all();
    if fit.is_some() {
        bump(&COUNTERS.large_reused);
        return fit;
    }
    grow(largest?, len)
}

/// Grows a range that left the cache to `len` bytes with `mremap`; gives it back to the cache
/// if the kernel refuses (it spans two kernel mappings).
fn grow(range: Mapping, len: usize) -> Option<Mapping> {
    // SAFETY: the range left the cache and is ours alone; on success the old range is gone.
    match unsafe { os::remap(range.base, range.len, len) } {
        Some(base) => {
            bump(&COUNTERS.large_reused);
            bump(&COUNTERS.large_remaps);
            Some(Mapping { base, len })
        }
        None => {
            share(range);
            None
        }
    }
}

impl Cache {
    /// Removes and returns the smallest cached range of at least `len` bytes.
    fn take_best_fit(&mut self, len: usize) -> Option<Mapping> {
        let index = (0..self.count)
            .filter(|&index| self.len_at(index) >= len)
            .min_by_key(|&index| self.len_at(index))?;
        self.remove(index)
    }

    /// Removes and returns the longest cached range.
    fn take_largest(&mut self) -> Option<Mapping> {
        let index = (0..self.count).max_by_key(|&index| self.len_at(index))?;
        self.remove(index)
    }

    /// `range` if it serves `len` bytes whole, else its first `len` bytes, the rest cached.
    fn keep_tail(
        &mut self,
        range: Mapping,
        len: usize,
        limit: usize,
        evicted: &mut Evicted,
    ) -> Mapping {
        if fits_whole(range.len, len) {
            return range;
        }
        // SAFETY: `len < range.len`, so the tail starts inside the range.
        let tail_base = unsafe { range.base.add(len) };
        let tail = Mapping {
            base: tail_base,
            len: range.len - len,
        };
        self.insert(tail, limit, evicted);
        Mapping {
            base: range.base,
            len,
        }
    }

    /// Adds `range`, joined with the cached ranges it touches, then evicts the oldest ranges
    /// until the cache holds at most `limit` bytes in at most `CACHE_SLOTS` ranges.
    fn insert(&mut self, range: Mapping, limit: usize, evicted: &mut Evicted) {
        let range = self.join_neighbours(range);
        if range.len > limit {
            evicted.push(range);
            return;
        }
        if self.count == CACHE_SLOTS {
            self.evict_oldest(evicted);
        }
        self.slots[self.count] = Some(range);
        self.count += 1;
        self.bytes += range.len;
        while self.bytes > limit && self.evict_oldest(evicted) {}
    }

    /// `range` extended by the cached ranges right before and after it, which leave the cache.
    fn join_neighbours(&mut self, mut range: Mapping) -> Mapping {
        while let Some(index) = (0..self.count).find(|&index| self.touches(index, range)) {
            let Some(neighbour) = self.remove(index) else {
                break;
            };
            if neighbour.base < range.base {
                range.base = neighbour.base;
            }
            range.len += neighbour.len;
        }
        range
    }

    fn touches(&self, index: usize, range: Mapping) -> bool {
        self.slots[index].is_some_and(|cached| {
            let (start, end) = (
                cached.base.as_ptr().addr(),
                cached.base.as_ptr().addr() + cached.len,
            );
            end == range.base.as_ptr().addr() || start == range.base.as_ptr().addr() + range.len
        })
    }

    fn len_at(&self, index: usize) -> usize {
        self.slots[index].map_or(0, |range| range.len)
    }

    /// Moves the oldest range to `evicted`. Returns whether there was one.
    fn evict_oldest(&mut self, evicted: &mut Evicted) -> bool {
        let oldest = self.remove(0);
        if let Some(range) = oldest {
            evicted.push(range);
        }
        oldest.is_some()
    }

    /// Removes the range at `index < count`, keeping the others in order.
    fn remove(&mut self, index: usize) -> Option<Mapping> {
        let removed = self.slots[index].take()?;
        self.slots.copy_within(index + 1..self.count, index);
        self.count -= 1;
        self.slots[self.count] = None;
        self.bytes -= removed.len;
        Some(removed)
    }
}
