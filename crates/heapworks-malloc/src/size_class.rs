//! Size classes: which requests the thread caches serve, and which cache list a block joins.
//!
//! Invariants: classes are one granule apart, like the core's chunk sizes, so a freed block's
//! usable size names its class with one shift and no table. A block on class `c`'s list can hold
//! `request_of_class(c) = c * GRANULE - WORD` bytes or more, and a request of
//! `n <= SMALL_MAX_REQUEST` bytes maps to the smallest class whose blocks all hold `n`.

use heapworks::GRANULE;

const WORD: usize = core::mem::size_of::<usize>();

/// The class of requests of at most 8 bytes. The core has no one-granule blocks, so its list
/// holds two-granule blocks taken from [`MIN_CLASS`]'s list or the central heap; frees never
/// reach it (a freed two-granule block joins `MIN_CLASS`). Keeping it saves `malloc` a `max`.
pub(crate) const TINY_CLASS: usize = 1;
/// The smallest class a freed block joins: two granules, the core's smallest block.
pub(crate) const MIN_CLASS: usize = 2;
/// The largest class the thread caches keep (1 KiB blocks).
pub(crate) const MAX_CLASS: usize = 64;
/// Entries in a per-class table indexed by class (entries below `MIN_CLASS` are unused).
pub(crate) const CLASS_SLOTS: usize = MAX_CLASS + 1;
/// The largest request the thread caches serve.
pub(crate) const SMALL_MAX_REQUEST: usize = MAX_CLASS * GRANULE - WORD;

/// The class serving a request of `bytes <= SMALL_MAX_REQUEST` (`TINY_CLASS` up to 8 bytes).
#[inline(always)]
pub(crate) fn class_of_request(bytes: usize) -> usize {
    (bytes + WORD).div_ceil(GRANULE)
}

/// The class whose list a block of `usable` bytes joins (above `MAX_CLASS`: none).
#[inline(always)]
pub(crate) fn class_of_usable(usable: usize) -> usize {
    (usable + WORD) / GRANULE
}

/// The request that fills a block of class `class` exactly.
pub(crate) const fn request_of_class(class: usize) -> usize {
    class * GRANULE - WORD
}

/// The class whose blocks a class's list holds: its own, but `MIN_CLASS` for `TINY_CLASS`.
pub(crate) const fn block_class(class: usize) -> usize {
    if class < MIN_CLASS {
        MIN_CLASS
    } else {
        class
    }
}
