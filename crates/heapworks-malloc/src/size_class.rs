//! Size classes: which requests the thread caches serve, and which cache list a block joins.
//!
//! Invariants: classes are one granule apart, like the core's chunk sizes, so a freed block's
//! usable size names its class with one shift and no table. A block on class `c`'s list can
//! hold `request_of_class(c) = c * GRANULE - WORD` bytes or more, and a request of
//! `SLOT_MAX_REQUEST < n <= SMALL_MAX_REQUEST` bytes maps to the smallest class whose blocks all
//! hold `n`. Requests of at most `SLOT_MAX_REQUEST` bytes take tiny slots instead (headerless,
//! see [`crate::tiny`]), whose lists follow the classes' in the thread caches: tiny slot class
//! `k`'s list is `slot_list(k) = MAX_CLASS + k`.
//!
//! Slot areas map onto lists by two offsets: the tiny slot classes' areas come first, area
//! `k - 1` holding class `k`'s slots (list `area + MAX_CLASS + 1`), then one area per
//! promotable class `FIRST_PROMOTABLE..=LAST_PROMOTABLE` (list `area - SLOT_CLASSES +
//! FIRST_PROMOTABLE`), whose `c * GRANULE`-byte slots hold its requests. So `free` tells a
//! tiny slot from anything else with one comparison and finds its list with an addressing
//! mode, and a promoted class's slot with one comparison more.

use core::sync::atomic::{AtomicPtr, Ordering};

use heapworks::GRANULE;

const WORD: usize = core::mem::size_of::<usize>();

/// Tiny slot classes: class `k` (1 to `SLOT_CLASSES`) has slots of `k * GRANULE` bytes (see
/// [`crate::tiny`]).
pub(crate) const SLOT_CLASSES: usize = 8;
/// The largest request a tiny slot serves.
pub(crate) const SLOT_MAX_REQUEST: usize = SLOT_CLASSES * GRANULE;
/// The bytes of one list's entry in a thread cache, whose lists come first in it (see
/// [`crate::thread`], which asserts both).
pub(crate) const LIST_ENTRY_BYTES: usize = 16;

/// The byte offset of list `list` in a thread cache.
pub(crate) const fn list_offset(list: usize) -> usize {
    list * LIST_ENTRY_BYTES
}

/// The smallest class of core blocks: two granules, the core's smallest chunk.
pub(crate) const MIN_CLASS: usize = 2;
/// The largest class the thread caches keep (1 KiB blocks).
pub(crate) const MAX_CLASS: usize = 64;
/// Entries in a per-class table indexed by class (entries below `MIN_CLASS` are unused).
pub(crate) const CLASS_SLOTS: usize = MAX_CLASS + 1;
/// The thread caches' lists: one per class (indexed by class), then one per tiny slot class.
pub(crate) const LISTS: usize = CLASS_SLOTS + SLOT_CLASSES;
/// The first class whose requests slots may serve once it is promoted (see [`crate::tiny`]):
/// the first above the tiny slots.
pub(crate) const FIRST_PROMOTABLE: usize = SLOT_CLASSES + 1;
/// The last class that may be promoted (384 B blocks), by measurement: promoting the classes
/// up to 512 B put realloc-free-10k's peak RSS at 1.13 to 1.16 times glibc's (its reallocs grow
/// blocks into freed neighbours in the core heap, which a slot cannot do, so freed slots sat
/// unused while grown blocks took fresh memory), up to 384 B at 1.02 times.
pub(crate) const LAST_PROMOTABLE: usize = 24;
/// Promotable classes: `FIRST_PROMOTABLE` to `LAST_PROMOTABLE`.
pub(crate) const PROMOTABLE: usize = LAST_PROMOTABLE + 1 - FIRST_PROMOTABLE;
/// Slot areas: one per tiny slot class, then one per promotable class.
pub(crate) const SLOT_AREAS: usize = SLOT_CLASSES + PROMOTABLE;
/// The largest request the thread caches serve.
pub(crate) const SMALL_MAX_REQUEST: usize = MAX_CLASS * GRANULE - WORD;

/// The thread-cache list serving a request of `n <= SMALL_MAX_REQUEST` bytes, at index `n`:
/// a slot class's list up to `SLOT_MAX_REQUEST`, a class's above, as the list's byte offset
/// (see [`list_offset`]) in words. `malloc` finds its list with one load and no
/// arithmetic: indexed by the request itself (no rounding to a step, two instructions fewer
/// than a table of 8-byte steps), a byte an entry (1 KiB in all; the offsets fit, see the
/// assertion), and the word count scaled back by the addressing mode; no branch on the size's
/// kind either, which a mix of slot and core sizes would mispredict.
static LISTS_OF_SIZE: [u8; SMALL_MAX_REQUEST + 1] = lists_of_size(false);
/// [`LISTS_OF_SIZE`] for secure mode, whose slot requests leave room for a canary (see
/// [`guarded_list_of_request`]).
static GUARDED_LISTS_OF_SIZE: [u8; SMALL_MAX_REQUEST + 1] = lists_of_size(true);
/// The table `malloc` reads: [`LISTS_OF_SIZE`], or from start-up in secure mode
/// [`GUARDED_LISTS_OF_SIZE`] ([`guard_slots`]). A pointer load where the address of one
/// table took an address computation: the same one instruction.
static LIST_OF_SIZE: AtomicPtr<u8> = AtomicPtr::new((&raw const LISTS_OF_SIZE).cast_mut().cast());

const fn lists_of_size(guarded: bool) -> [u8; SMALL_MAX_REQUEST + 1] {
    let mut lists = [0; SMALL_MAX_REQUEST + 1];
    let mut bytes = 0;
    while bytes <= SMALL_MAX_REQUEST {
        let list = if bytes > SLOT_MAX_REQUEST {
            class_of_request(bytes)
        } else if guarded {
            guarded_list_of_request(bytes)
        } else {
            slot_list(slot_class_of_request(bytes))
        };
        assert!(list < LISTS);
        let offset = list_offset(list);
        assert!(offset.is_multiple_of(WORD) && offset / WORD <= u8::MAX as usize);
        lists[bytes] = (offset / WORD) as u8;
        bytes += 1;
    }
    lists
}

/// The thread-cache list serving a request of `bytes <= SMALL_MAX_REQUEST`, as a byte offset
/// (see [`list_offset`]).
#[inline(always)]
pub(crate) fn list_offset_of_request(bytes: usize) -> usize {
    debug_assert!(bytes <= SMALL_MAX_REQUEST);
    // SAFETY: the pointer names one of the two tables, of `SMALL_MAX_REQUEST + 1` entries, and
    // `bytes <= SMALL_MAX_REQUEST` (the caller's promise).
    unsafe { *LIST_OF_SIZE.load(Ordering::Relaxed).add(bytes) as usize * WORD }
}

/// Secure mode: the list serving a request of `bytes <= SLOT_MAX_REQUEST`, which must leave a
/// slot's last word to its canary (see [`crate::tiny`]): the tiny slot class of `bytes +
/// WORD`, at least the 32-byte one (a free slot's first two words are its link and its
/// mark), or beyond the tiny slots the core class of `bytes`, whose blocks (and promoted
/// slots, `c * GRANULE` bytes for requests of at most `c * GRANULE - WORD`) leave that word
/// already.
pub(crate) const fn guarded_list_of_request(bytes: usize) -> usize {
    let slot_class = slot_class_of_request(bytes + WORD);
    if slot_class > SLOT_CLASSES {
        class_of_request(bytes)
    } else if slot_class < 2 {
        slot_list(2)
    } else {
        slot_list(slot_class)
    }
}

/// Secure mode, at start-up: `malloc` routes each slot request by
/// [`guarded_list_of_request`]. Blocks handed out before keep their slots, which have no
/// canary (their slabs are not marked guarded).
pub(crate) fn guard_slots() {
    LIST_OF_SIZE.store(
        (&raw const GUARDED_LISTS_OF_SIZE).cast_mut().cast(),
        Ordering::Relaxed,
    );
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

/// The thread-cache list of tiny slot class `slot_class`.
#[inline(always)]
pub(crate) const fn slot_list(slot_class: usize) -> usize {
    MAX_CLASS + slot_class
}

/// The tiny slot class whose list is `list` (a slot list, see [`is_slot_list`]).
#[inline(always)]
pub(crate) const fn slot_class_of_list(list: usize) -> usize {
    list - MAX_CLASS
}

/// The bits of a granule index within a slab that are clear at every slot start of tiny slot
/// class `slot_class` (slots of `slot_class` granules, from the slab's start): those below the
/// class's power-of-two factor (all of a slot's granules but its first, for the power-of-two
/// classes).
pub(crate) const fn slot_start_mask(slot_class: usize) -> u8 {
    ((1 << slot_class.trailing_zeros()) - 1) as u8
}

/// The slot area of tiny slot class `slot_class`.
#[inline(always)]
pub(crate) const fn slot_area(slot_class: usize) -> usize {
    slot_class - 1
}

/// The thread-cache list of the slots of area `area` (`area < SLOT_AREAS`).
#[inline(always)]
pub(crate) const fn list_of_area(area: usize) -> usize {
    if area < SLOT_CLASSES {
        area + MAX_CLASS + 1
    } else {
        area - SLOT_CLASSES + FIRST_PROMOTABLE
    }
}

/// The slot area of list `list`'s slots: `None` for a class that is never promoted.
#[inline(always)]
pub(crate) const fn area_of_list(list: usize) -> Option<usize> {
    if list > MAX_CLASS {
        Some(list - MAX_CLASS - 1)
    } else if FIRST_PROMOTABLE <= list && list <= LAST_PROMOTABLE {
        Some(list - FIRST_PROMOTABLE + SLOT_CLASSES)
    } else {
        None
    }
}

/// Whether thread-cache list `list` is a tiny slot class's (which holds slots only).
#[inline(always)]
pub(crate) const fn is_slot_list(list: usize) -> bool {
    list > MAX_CLASS
}

/// The bytes of a block on thread-cache list `list`: a tiny slot's, or a class's chunk (which
/// is also the size of a promotable class's slots).
pub(crate) const fn list_block_bytes(list: usize) -> usize {
    if is_slot_list(list) {
        slot_class_of_list(list) * GRANULE
    } else {
        list * GRANULE
    }
}

/// The bytes of a slot of area `area` (`area < SLOT_AREAS`), which is also what it can hold.
#[inline(always)]
pub(crate) const fn area_slot_bytes(area: usize) -> usize {
    list_block_bytes(list_of_area(area))
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

/// log2 of the medium classes per power of two.
const MEDIUM_STEPS_LOG2: u32 = 3;
/// log2 of the smallest medium key (a key is a block's usable size plus a word: its chunk).
const MEDIUM_FIRST_OCTAVE: u32 = 10;
/// Medium classes, eight per power of two of the key from 1 KiB to 512 KiB, which covers
/// every core-heap block a request up to `LARGE_MIN` (plus realloc's headroom) can produce.
/// Class `b`'s key is [`medium_class_key`]`(b)`, an eighth of its power of two past the
/// previous class's: a request rounded up to its class wastes less than an eighth.
pub(crate) const MEDIUM_CLASSES: usize = 9 << MEDIUM_STEPS_LOG2;

/// The medium class a core block of `usable` bytes (above the small classes) serves: the
/// largest whose key its own reaches. At least `MEDIUM_CLASSES` for a block larger than any
/// class (none is: the callers clamp).
#[inline(always)]
pub(crate) const fn medium_class_of_usable(usable: usize) -> usize {
    let key = usable + WORD;
    let octave = usize::BITS - 1 - key.leading_zeros();
    let step = (key >> (octave - MEDIUM_STEPS_LOG2)) & ((1 << MEDIUM_STEPS_LOG2) - 1);
    (((octave - MEDIUM_FIRST_OCTAVE) as usize) << MEDIUM_STEPS_LOG2) + step
}

/// The medium class serving a request of `bytes` (`SMALL_MAX_REQUEST < bytes`): the smallest
/// whose blocks hold it, so monotonic in `bytes`; its blocks hold less than an eighth of a
/// power of two more (both checked at every class's edges below).
#[inline(always)]
pub(crate) const fn medium_class_of_request(bytes: usize) -> usize {
    let key = bytes + WORD;
    // The key rounded up to a step of its power of two (a power of two itself stays).
    let octave = usize::BITS - 1 - (key - 1).leading_zeros();
    let step = 1 << (octave - MEDIUM_STEPS_LOG2);
    medium_class_of_usable(((key + step - 1) & !(step - 1)) - WORD)
}

/// The key (chunk size) of medium class `class`.
#[inline(always)]
pub(crate) const fn medium_class_key(class: usize) -> usize {
    let octave = MEDIUM_FIRST_OCTAVE as usize + (class >> MEDIUM_STEPS_LOG2);
    let steps = 1 << MEDIUM_STEPS_LOG2;
    (steps + (class & (steps - 1))) << (octave - MEDIUM_STEPS_LOG2 as usize)
}

/// The usable bytes of a block made for medium class `class`: what each of its requests gets.
#[inline(always)]
pub(crate) const fn medium_class_bytes(class: usize) -> usize {
    medium_class_key(class) - WORD
}

// Every class's edges: its own blocks join it, a request of its bytes maps to it and one byte
// more to the next; the first request above the small classes maps to class 1 (class 0's key,
// 1 KiB, is the last small class's chunk: it holds only blocks of odd sizes, made by aligned
// requests or grown by realloc, and serves no request). The functions are step functions of
// the key, so these pin them everywhere.
const _: () = {
    assert!(medium_class_key(0) == MAX_CLASS * GRANULE);
    assert!(medium_class_of_request(SMALL_MAX_REQUEST + 1) == 1);
    let mut class = 0;
    while class < MEDIUM_CLASSES {
        let bytes = medium_class_bytes(class);
        assert!(medium_class_of_usable(bytes) == class);
        assert!(medium_class_of_request(bytes) == class);
        if class + 1 < MEDIUM_CLASSES {
            assert!(medium_class_of_request(bytes + 1) == class + 1);
            assert!(medium_class_of_usable(medium_class_bytes(class + 1) - 1) == class);
            // Less than an eighth of the power of two wasted.
            let octave = usize::BITS - 1 - (bytes + WORD).leading_zeros();
            assert!(medium_class_bytes(class + 1) - bytes <= 1 << (octave - MEDIUM_STEPS_LOG2));
        }
        class += 1;
    }
};
