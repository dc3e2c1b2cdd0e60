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
//! Freed mappings wait in a bounded cache (`HEAPWORKS_LARGE_CACHE_MIB`, at most
//! [`CACHE_SLOTS`] of them) for reuse, so loops over multi-MiB blocks do not fault their pages
//! in again each time; beyond the bound the oldest are unmapped. System calls are made outside
//! the cache lock.

use core::ptr::NonNull;

use heapworks::EMBEDDER_TAG;

use crate::config;
use crate::lock::SpinLock;
use crate::os::{self, PAGE};
use crate::stats::{bump, COUNTERS};

const WORD: usize = core::mem::size_of::<usize>();
/// The words in front of a payload: base, then tagged length.
const HEADER: usize = 2 * WORD;
/// Freed mappings kept at most.
const CACHE_SLOTS: usize = 16;
/// A cached mapping is used whole if it is at most this many times the length needed.
const REUSE_SLACK_FACTOR: usize = 4;

const _: () = assert!(
    EMBEDDER_TAG < PAGE,
    "the tag must fit in a page-rounded length"
);

/// A mapping: its base and length in bytes (whole pages).
#[derive(Clone, Copy)]
struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

/// Freed mappings, oldest first.
struct Cache {
    slots: [Option<Mapping>; CACHE_SLOTS],
    count: usize,
    bytes: usize,
}

// SAFETY: cached mappings belong to the cache alone; nothing ties them to a thread.
unsafe impl Send for Cache {}

static CACHE: SpinLock<Cache> = SpinLock::new(Cache {
    slots: [None; CACHE_SLOTS],
    count: 0,
    bytes: 0,
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

/// Allocates a large block of `size` bytes aligned to `align` (a power of two, at least 16).
pub(crate) fn allocate(size: usize, align: usize) -> Option<LargeBlock> {
    let front = if align <= PAGE {
        align.max(HEADER)
    } else {
        align + HEADER
    };
    let len = os::round_to_pages(size.checked_add(front)?)?;
    let (mapping, zeroed) = match take_cached(len) {
        Some(mapping) => (mapping, false),
        None => (
            Mapping {
                base: os::map(len)?,
                len,
            },
            true,
        ),
    };
    let base = mapping.base.as_ptr().addr();
    let payload = (base + HEADER + align - 1) & !(align - 1);
    // SAFETY: `payload - base <= front`, so the payload and its two header words lie inside
    // the mapping.
    let ptr = unsafe { mapping.base.add(payload - base) };
    // SAFETY: as above.
    unsafe { write_header(ptr, mapping) };
    bump(&COUNTERS.large_allocations);
    Some(LargeBlock { ptr, zeroed })
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

/// Frees a large block: into the cache, or back to the OS.
///
/// # Safety
/// `block` is a live large block, not used after this call.
pub(crate) unsafe fn free(block: NonNull<u8>) {
    // SAFETY: forwarded from the caller.
    let mapping = unsafe { mapping_of(block) };
    let mut evicted = [None; CACHE_SLOTS + 1];
    CACHE
        .lock()
        .insert(mapping, config::large_cache_bytes(), &mut evicted);
    for victim in evicted.into_iter().flatten() {
        // SAFETY: evicted mappings left the cache and nothing else refers to them.
        unsafe { os::unmap(victim.base, victim.len) };
        bump(&COUNTERS.large_unmaps);
    }
}

/// Resizes a large block to hold `new_size` bytes with `mremap`, keeping its contents. Returns
/// the (possibly moved) block, or `None` with the block untouched.
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
    // SAFETY: the mapping is the block's own, whole; on success the old range is gone.
    let base = unsafe { os::remap(mapping.base, mapping.len, len) }?;
    bump(&COUNTERS.large_remaps);
    // SAFETY: the payload keeps its offset inside the resized mapping, which holds it.
    unsafe {
        let moved = base.add(offset);
        write_header(moved, Mapping { base, len });
        Some(moved)
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

/// # Safety
/// `block` is a live large block.
unsafe fn mapping_of(block: NonNull<u8>) -> Mapping {
    // SAFETY: a large block's two header words are readable and describe its mapping.
    unsafe {
        let words = block.cast::<usize>();
        let base = words.sub(2).read();
        let len = words.sub(1).read() & !EMBEDDER_TAG;
        let base_ptr = block.with_addr(core::num::NonZeroUsize::new_unchecked(base));
        Mapping {
            base: base_ptr,
            len,
        }
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

/// Takes a cached mapping of at least `len` bytes, cut down to `len` when it is much larger.
fn take_cached(len: usize) -> Option<Mapping> {
    let mapping = CACHE.lock().take_best_fit(len)?;
    bump(&COUNTERS.large_reused);
    if mapping.len / REUSE_SLACK_FACTOR <= len {
        return Some(mapping);
    }
    // SAFETY: the mapping left the cache and is ours; shrinking with mremap never moves it.
    match unsafe { os::remap(mapping.base, mapping.len, len) } {
        Some(base) => Some(Mapping { base, len }),
        None => Some(mapping),
    }
}

impl Cache {
    /// Removes and returns the smallest cached mapping of at least `len` bytes.
    fn take_best_fit(&mut self, len: usize) -> Option<Mapping> {
        let mut best: Option<usize> = None;
        for (index, slot) in self.slots[..self.count].iter().enumerate() {
            let Some(mapping) = slot else { continue };
            let better = best.is_none_or(|b| self.slots[b].is_some_and(|m| mapping.len < m.len));
            if mapping.len >= len && better {
                best = Some(index);
            }
        }
        let index = best?;
        let mapping = self.slots[index].take()?;
        self.slots.copy_within(index + 1..self.count, index);
        self.count -= 1;
        self.slots[self.count] = None;
        self.bytes -= mapping.len;
        Some(mapping)
    }

    /// Adds `mapping`, then evicts the oldest mappings into `evicted` until the cache holds at
    /// most `limit` bytes in at most `CACHE_SLOTS` mappings.
    fn insert(
        &mut self,
        mapping: Mapping,
        limit: usize,
        evicted: &mut [Option<Mapping>; CACHE_SLOTS + 1],
    ) {
        let mut victims = 0;
        if mapping.len > limit {
            evicted[victims] = Some(mapping);
            return;
        }
        if self.count == CACHE_SLOTS {
            evicted[victims] = self.pop_oldest();
            victims += 1;
        }
        self.slots[self.count] = Some(mapping);
        self.count += 1;
        self.bytes += mapping.len;
        while self.bytes > limit && victims < evicted.len() {
            evicted[victims] = self.pop_oldest();
            victims += 1;
        }
    }

    fn pop_oldest(&mut self) -> Option<Mapping> {
        let oldest = self.slots[0].take()?;
        self.slots.copy_within(1..self.count, 0);
        self.count -= 1;
        self.slots[self.count] = None;
        self.bytes -= oldest.len;
        Some(oldest)
    }
}
