//! Size classes: which requests the thread caches serve, and which cache list a block joins.
//!
//! Invariants: classes are one granule apart, like the core's chunk sizes, so a freed block's
//! usable size names its class with one shift and no table. A block on class `c`'s list can
//! hold `request_of_class(c) = c * GRANULE - WORD` bytes or more, and a request of
//! `SLOT_MAX_REQUEST < n <= SMALL_MAX_REQUEST` bytes maps to the smallest class whose blocks all
//! hold `n`. Requests of at most `SLOT_MAX_REQUEST` bytes take headerless slots instead (see
//! [`crate::tiny`]), whose lists follow the classes' in the thread caches, largest slots first:
//! slot class `k`'s list is `slot_list(k) = MAX_CLASS + 1 + SLOT_CLASSES - k`, which is
//! `MAX_CLASS + 1 + tiny::areas_back(slot)` for a slot of it, so `free` finds a slot's list
//! with a shift and an addressing mode.

use heapworks::GRANULE;

use crate::tcache;
use crate::tiny::{slot_bytes, SLOT_CLASSES, SLOT_MAX_REQUEST};

const WORD: usize = core::mem::size_of::<usize>();

/// The smallest class of core blocks: two granules, the core's smallest chunk.
pub(crate) const MIN_CLASS: usize = 2;
/// The largest class the thread caches keep (1 KiB blocks).
pub(crate) const MAX_CLASS: usize = 64;
/// Entries in a per-class table indexed by class (entries below `MIN_CLASS` are unused).
pub(crate) const CLASS_SLOTS: usize = MAX_CLASS + 1;
/// The thread caches' lists: one per class (indexed by class), then one per slot class.
pub(crate) const LISTS: usize = CLASS_SLOTS + SLOT_CLASSES;
/// The largest request the thread caches serve.
pub(crate) const SMALL_MAX_REQUEST: usize = MAX_CLASS * GRANULE - WORD;

/// Entries of [`LIST_OF_EIGHTHS`]: one per 8 bytes of request up to `SMALL_MAX_REQUEST`.
const EIGHTHS: usize = SMALL_MAX_REQUEST.div_ceil(8) + 1;

/// Where in the thread cache the list lies that serves requests of `8 * j - 7` to `8 * j`
/// bytes, at index `j` (0: `malloc(0)`): a slot class's list up to `SLOT_MAX_REQUEST`, a
/// class's above (as a byte offset, see [`tcache::list_offset`], which spares `malloc` a
/// multiply). Every boundary between lists falls on a multiple of 8, so `malloc` finds its list
/// with one load and no branch on the size's kind, which a mix of slot and core sizes would
/// mispredict.
static LIST_OF_EIGHTHS: [u16; EIGHTHS] = {
    let mut lists = [0; EIGHTHS];
    let mut eighth = 0;
    while eighth < EIGHTHS {
        let bytes = eighth * 8;
        let list = if bytes <= SLOT_MAX_REQUEST {
            slot_list(slot_class_of_request(bytes))
        } else {
            class_of_request(bytes)
        };
        assert!(list < LISTS);
        lists[eighth] = tcache::list_offset(list) as u16;
        eighth += 1;
    }
    lists
};

/// The thread-cache list serving a request of `bytes <= SMALL_MAX_REQUEST`, as a byte offset
/// (see [`tcache::list_offset`]).
#[inline(always)]
pub(crate) fn list_offset_of_request(bytes: usize) -> usize {
    debug_assert!(bytes <= SMALL_MAX_REQUEST);
    // SAFETY: `bytes <= SMALL_MAX_REQUEST` (the caller's promise), so the index is in bounds.
    unsafe { *LIST_OF_EIGHTHS.get_unchecked(bytes.div_ceil(8)) as usize }
}

/// The slot class (see [`crate::tiny`]) serving a request of `bytes <= SLOT_MAX_REQUEST`.
#[inline(always)]
pub(crate) const fn slot_class_of_request(bytes: usize) -> usize {
    let class = bytes.div_ceil(GRANULE);
    if class == 0 {
        1
    } else {
        class
    }
}

/// The thread-cache list of slot class `slot_class`.
#[inline(always)]
pub(crate) const fn slot_list(slot_class: usize) -> usize {
    MAX_CLASS + 1 + SLOT_CLASSES - slot_class
}

/// The thread-cache list of a slot `back` areas back from the last class's (see
/// [`crate::tiny::areas_back`]; `back < SLOT_CLASSES`).
#[inline(always)]
pub(crate) const fn slot_list_back(back: usize) -> usize {
    MAX_CLASS + 1 + back
}

/// Whether thread-cache list `list` holds slots rather than core blocks.
#[inline(always)]
pub(crate) const fn is_slot_list(list: usize) -> bool {
    list > MAX_CLASS
}

/// The bytes of a block on thread-cache list `list`.
pub(crate) const fn list_block_bytes(list: usize) -> usize {
    if is_slot_list(list) {
        slot_bytes(MAX_CLASS + 1 + SLOT_CLASSES - list)
    } else {
        list * GRANULE
    }
}

/// The class of core blocks serving a request of `bytes <= SMALL_MAX_REQUEST` (for at most 8
/// bytes, 1: callers raise it to `MIN_CLASS`).
#[inline(always)]
pub(crate) const fn class_of_request(bytes: usize) -> usize {
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
