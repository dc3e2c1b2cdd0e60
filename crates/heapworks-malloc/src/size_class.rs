//! Size classes: which requests the thread caches serve, and which cache list a block joins.
//!
//! Invariants: classes are one granule apart, like the core's chunk sizes, so a freed block's
//! usable size names its class with one shift and no table. A block on class `c`'s list can hold
//! `request_of_class(c) = c * GRANULE - WORD` bytes or more, and a request of
//! `n <= SMALL_MAX_REQUEST` bytes maps to the smallest class whose blocks all hold `n`.

use heapworks::GRANULE;

const WORD: usize = core::mem::size_of::<usize>();

/// The smallest class: two granules, the core's smallest block (24 usable bytes).
pub(crate) const MIN_CLASS: usize = 2;
/// The largest class the thread caches keep (1 KiB blocks).
pub(crate) const MAX_CLASS: usize = 64;
/// Entries in a per-class table indexed by class (entries below `MIN_CLASS` are unused).
pub(crate) const CLASS_SLOTS: usize = MAX_CLASS + 1;
/// The largest request the thread caches serve.
pub(crate) const SMALL_MAX_REQUEST: usize = MAX_CLASS * GRANULE - WORD;

/// The class serving a request of `bytes <= SMALL_MAX_REQUEST`.
#[inline(always)]
pub(crate) fn class_of_request(bytes: usize) -> usize {
    (bytes + WORD).div_ceil(GRANULE).max(MIN_CLASS)
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
