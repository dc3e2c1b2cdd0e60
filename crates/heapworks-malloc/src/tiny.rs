//! Slots: blocks with no header, cut from slabs in an address-space reservation of their own.
//! They serve every request of at most 128 bytes (tiny slots of 16 to 128 bytes, in steps of
//! 16), and the requests of each larger class up to 384 bytes once the class has proved hot
//! (promoted slots of the class's 144 to 384 bytes; [`crate::size_class`] says why they stop
//! there). A tiny block of `n` bytes thus costs `n` rounded up to 16 rather than the core's
//! `n + 8` rounded up to 16 (at least 32): half for blocks of up to 16 bytes, a quarter for 41
//! to 48. And a slot never passes through the core heap: a refill or a flush costs the slabs
//! about a dozen instructions a slot, where the core's allocate and free cost 60 to 90 a block
//! and coalesce.
//!
//! ```text
//! base               one area of STRIDE bytes per slot size, then one for the table
//! | 16 B | ... | 128 B | 144 B (class 9) | ... | 384 B (class 24) | table | end
//! ```
//!
//! Every slot class costs a program that uses it at least a page of its own, which is why
//! tiny slots stop at 128 bytes (16 classes, up to 256 B, raised git-log's peak RSS by 4 %, to
//! 1.13 times glibc's; 8 cost less than 1 %). A larger class's slots are therefore opened
//! only once the core heap has carved [`PROMOTE_AFTER_BYTES`] of fresh blocks for its
//! refills ([`note_carved`]): a program that uses a class a little keeps its blocks in the
//! core heap, where every size shares the same pages, while one that churns megabytes of it
//! (more than its thread cache holds) moves those blocks between its cache and the slabs
//! instead of through the core's allocate and free. Once open, an area stays open; the core
//! blocks of its class still in use keep circulating through the class's thread-cache lists
//! beside its slots (see [`crate::thread`]).
//!
//! A slot has no header, so nothing in front of it says what it is: its address does. The
//! region is reserved once, at a fixed address far below where the kernel places mappings
//! (`MAP_FIXED_NOREPLACE`, so nothing else is ever replaced), and [`end`] is one past it.
//! Under an address-space limit too tight for the whole region, or once a refused mapping
//! has made it give back its unused parts ([`Region::release_unused`]), only the slabs and
//! table rows in use are mapped, each at its place: the kernel places nothing there of its own
//! accord (it maps top-down from far above, and would have to exhaust that first).
//! `free` sends every pointer below `end` (NULL included: `end` starts at 1) to its slow path,
//! where [`area_of`] tells a slot from the rest and names its area (so its list and size) with
//! one addition and one shift; every other block of this library lies above `end` in
//! practice, and would only take that slow path if it did not. A slot's slab (so its
//! metadata) is its offset within its area shifted right: O(1), no lookup.
//!
//! Each slab belongs to the arena that started it ([`Slabs`], one per arena, under the arena's
//! lock; see [`crate::arena`]), which alone hands its slots out and takes them back; the
//! region's address space and every area's count of started slabs are shared ([`Region`],
//! under its own lock, taken once per slab started). Slots move between an arena's slabs and
//! its thread's cache in batches (see [`crate::thread`]). A flushed list is kept whole, as its
//! area's top batch, while the area's batches hold at most [`BATCH_MAX_BYTES`]; a refill takes
//! the top batch (or its first part) first: either costs O(1), not a dozen instructions and a
//! metadata update a slot. Otherwise a flushed slot
//! goes back to its slab, and a refill takes slots from the partial slab at the head of its area's
//! list, first from its free list (slots given back), then from its fresh part (never used since
//! the slab started, so nothing needs building until a batch asks). A slab that becomes empty stays
//! resident if fewer than [`EMPTY_KEPT`] others of its area are, else its pages go back to the OS
//! (`madvise(MADV_DONTNEED)`) and it restarts clean; either way the next slab a refill of its area
//! needs comes from those before new address space is committed. Resident empty slabs are thus
//! bounded by `EMPTY_KEPT` per area. An idle arena (the starter arena once only frees reach
//! it, see [`crate::arena::STARTER`]) gives back its batches' slots and every empty slab's pages
//! ([`Slabs::release_idle`]).
//!
//! Invariants, for each area (the region's parts under its lock, an arena's lists under the
//! arena's):
//! - Every started slab's entry in `SLAB_ARENAS` names the arena that started it, set before any of its
//!   slots is handed out and never changed; only that arena's lists hold it.
//! - The table's first `table_rows` rows (a row holds slab `i`'s metadata of every area) are
//!   committed, and so are the area's first `committed <= table_rows` slabs; `started <=
//!   committed` slabs have been used. Committed means readable and writable: made so by
//!   `mprotect`, or from the start when the region could be mapped writable whole, or by a
//!   mapping of its own when the region is held sparse (see [`Backing`]). Only committed
//!   parts of a sparse region are mapped.
//! - Once the region is reserved, `BASE_NEGATED` is its start negated and `END` one past it;
//!   before (and if it never is), `BASE_NEGATED` is `2^63`, which puts every user address more
//!   than `SPAN` past the start, and `END` is 1.
//! - A slab's slot is exactly one of: on its slab's free list, at or above its `fresh` mark, or
//!   out (handed to a thread cache or a program, or in one of its area's batches); `used`
//!   counts the slots out.
//! - An area's batches form a stack of null-terminated slot lists of the area, linked through
//!   the second word of each list's first slot, which also holds the list's length (see
//!   [`write_batch_header`]); `batch_slots` is the sum of the lengths, and `batch_slots` slots
//!   take at most [`BATCH_MAX_BYTES`]. A slab whose slots wait in batches does not empty, so
//!   the batches bound what they keep from being given back to the OS.
//! - An arena's partial list holds exactly its started slabs with `used > 0` and a slot to give (free
//!   list or fresh part), doubly linked; the empty stack holds `empty_count <= EMPTY_KEPT` slabs
//!   with `used == 0` whose pages are resident; the clean stack holds slabs with `used == 0`,
//!   `fresh == 0`, an empty free list and discarded pages. Every started slab is in exactly one
//!   of the three, or full (`used` is the area's slots per slab, in none).
//! - Links are slab indices plus one (0: none), so freshly committed rows of the table are all
//!   fresh slabs outside every list.
//! - A promotable class's area opens (its bit set in `OPEN`) once, for good, and only then do
//!   its class's refills take its slots (the tiny areas' refills always do).

use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use crate::config;
use crate::link;
use crate::lock::{SpinGuard, SpinLock};
use crate::os;
use crate::size_class::{area_slot_bytes, PROMOTABLE, SLOT_AREAS, SLOT_CLASSES};
use crate::stats::{bump, COUNTERS};

/// Fresh blocks the core heap carves for a promotable class's refills before its slots
/// open. git-log's trace never opens one (even at 8 KiB: its 717 blocks of 129 to 1016 B
/// spread over 51 classes); the seed scripts' classes (about 900 blocks each) open within
/// their first 120 blocks, and python3's, gcc's and cargo's busiest few open too.
pub(crate) const PROMOTE_AFTER_BYTES: usize = 16 << 10;
pub(crate) const SLAB_SHIFT: u32 = 14;
/// A slab's bytes (16 KiB): what is emptied and given back at a time, and what every arena
/// starts per slot size it uses, so small: a thread's least cost per class (TUNING.md).
const SLAB_BYTES: usize = 1 << SLAB_SHIFT;
const STRIDE_SHIFT: u32 = 31;
/// The bytes of each area (2 GiB: 131072 slabs, 128 Mi slots of 16 B; beyond, the core serves
/// the area's requests).
const STRIDE: usize = 1 << STRIDE_SHIFT;
/// The bytes of the region: one area per slot list, then the table's.
const SPAN: usize = (SLOT_AREAS + 1) * STRIDE;
/// Slabs in each area.
const MAX_SLABS: usize = STRIDE / SLAB_BYTES;
/// Bytes of one row of the table: slab `i`'s metadata of every area.
const ROW_BYTES: usize = SLOT_AREAS * core::mem::size_of::<SlabMeta>();
/// Slabs committed at a time (1 MiB: untouched pages cost nothing but commit charge).
const COMMIT_SLABS: usize = 16;
/// An arena that has started this many slabs of an area has each new one made resident at
/// once (one system call, not 16 page faults): it will fill it, while an arena that uses the
/// area little keeps its slabs' untouched pages out of memory (counted per arena: each
/// thread's first slab of a size is mostly untouched).
const POPULATE_AFTER: usize = 4;
/// Empty slabs of an area kept resident for the next refills; the others are given back.
const EMPTY_KEPT: u32 = 4;
/// The bytes of slots an area keeps in batches, as flushed, for the next refills.
const BATCH_MAX_BYTES: usize = 128 << 10;
/// Where the region is asked for: 16 TiB, below the kernel's mapping area (which on x86-64
/// grows down from near 128 TiB, or up from about 43 TiB in the legacy layout) and above
/// where non-PIE executables, their `brk` heap and `MAP_32BIT` mappings live.
const HINT: usize = 0x1000_0000_0000;
/// `BASE_NEGATED` before the region is reserved: every address below `2^47` plus it lies more
/// than `SPAN` above 0 (modulo `2^64`), so [`area_of`] names no area for any pointer.
const NO_BASE_NEGATED: usize = 1 << 63;

const _: () = assert!(MAX_SLABS * ROW_BYTES <= STRIDE);
const _: () = assert!(HINT.is_multiple_of(STRIDE));
const _: () = assert!(SLOT_AREAS <= 64);

/// The region's start, negated (modulo `2^64`), once it is reserved; `NO_BASE_NEGATED` before
/// (and if it never is). Negated, so that [`area_of`] adds it to a pointer it still needs
/// rather than copying the pointer to subtract from it (one instruction fewer on `free`).
static BASE_NEGATED: AtomicUsize = AtomicUsize::new(NO_BASE_NEGATED);
/// One past the region's end once it is reserved; 1 before (and if it never is).
static END: AtomicUsize = AtomicUsize::new(1);
/// The promotable classes' areas whose slots serve their class (bit `a`: area `a`).
static OPEN: AtomicU64 = AtomicU64::new(0);
/// Bytes of fresh blocks the core heap has carved for each promotable class's refills (at
/// `area - SLOT_CLASSES`).
static CARVED: [AtomicUsize; PROMOTABLE] = [const { AtomicUsize::new(0) }; PROMOTABLE];

/// The bound `free` compares every pointer with: below it lie NULL and every slot.
#[inline(always)]
pub(crate) fn end() -> usize {
    END.load(Ordering::Relaxed)
}

/// The area `ptr` lies in: below `SLOT_AREAS` for a pointer in a slot area, as every slot
/// (live or not) is; at least `SLOT_AREAS` for any other (NULL and the table's area included,
/// and every pointer before the region exists).
#[inline(always)]
pub(crate) fn area_of(ptr: *mut u8) -> usize {
    ptr.addr()
        .wrapping_add(BASE_NEGATED.load(Ordering::Relaxed))
        >> STRIDE_SHIFT
}

/// Every slot starts on a multiple of `1 << SLOT_ALIGN_SHIFT` bytes from its slab (every slot
/// size is a multiple of 16, and slabs are page-aligned).
pub(crate) const SLOT_ALIGN_SHIFT: u32 = 4;

/// The tiny area `ptr` lies in, if it does and is 16-byte aligned (as every tiny slot's start
/// is); `None` for any other pointer (NULL, a misaligned one, a promoted slot). The offset
/// from the region's start is rotated right by 4, which moves a misaligned pointer's low bits
/// to the top: one comparison then tests the area and the alignment together, for the
/// instructions the area test took alone (`free`'s fast path).
/// With it, the pointer's granule index within its slab (16-byte steps from the slab's start).
#[inline(always)]
pub(crate) fn aligned_tiny_area(ptr: *mut u8) -> Option<(usize, usize)> {
    let rotated = ptr
        .addr()
        .wrapping_add(BASE_NEGATED.load(Ordering::Relaxed))
        .rotate_right(SLOT_ALIGN_SHIFT);
    (rotated < (SLOT_CLASSES * STRIDE) >> SLOT_ALIGN_SHIFT).then_some((
        rotated >> (STRIDE_SHIFT - SLOT_ALIGN_SHIFT),
        rotated & ((SLAB_BYTES >> SLOT_ALIGN_SHIFT) - 1),
    ))
}

/// Whether `ptr` lies in a slot area, as every slot does (and no other block).
#[inline(always)]
pub(crate) fn is_slot(ptr: *mut u8) -> bool {
    area_of(ptr) < SLOT_AREAS
}

/// The bytes of the slot `ptr` if it lies in a slot area; `None` for any other pointer, NULL
/// included.
#[inline(always)]
pub(crate) fn slot_bytes_of(ptr: *mut u8) -> Option<usize> {
    let area = area_of(ptr);
    (area < SLOT_AREAS).then(|| slot_bytes(area))
}

/// Whether the slots of promotable class's area `area` serve its class.
#[inline]
pub(crate) fn is_open(area: usize) -> bool {
    OPEN.load(Ordering::Relaxed) & (1 << area) != 0
}

/// Counts `bytes` of fresh blocks carved by the core heap for the class of promotable
/// area `area`, and opens the area once they reach [`PROMOTE_AFTER_BYTES`]. Returns whether
/// this call opened it. Called with the calling thread's arena lock held, so that its
/// arena sees the class open or closed throughout a flush (see [`crate::thread`]); another
/// arena's batch of the class, left before, is given back by that arena's next slot refill.
pub(crate) fn note_carved(area: usize, bytes: usize) -> bool {
    let before = CARVED[area - SLOT_CLASSES].fetch_add(bytes, Ordering::Relaxed);
    let opens = before < PROMOTE_AFTER_BYTES && before + bytes >= PROMOTE_AFTER_BYTES;
    if opens {
        OPEN.fetch_or(1 << area, Ordering::Relaxed);
    }
    opens
}

/// An area's slot size and slots per slab, by area: one load where the sizes' formula takes a
/// branch and `SLAB_BYTES / size` a division.
#[derive(Clone, Copy)]
struct Geometry {
    slot_bytes: u32,
    slots: u32,
    /// `ceil(2^32 / slot_bytes)`: an offset within a slab times it, shifted right by 32, is
    /// the offset divided by the slot size, exactly (see [`slot_index`]).
    reciprocal: u64,
}

static GEOMETRY: [Geometry; SLOT_AREAS] = {
    let mut geometry = [Geometry {
        slot_bytes: 0,
        slots: 0,
        reciprocal: 0,
    }; SLOT_AREAS];
    let mut area = 0;
    while area < SLOT_AREAS {
        let bytes = area_slot_bytes(area);
        geometry[area] = Geometry {
            slot_bytes: bytes as u32,
            slots: (SLAB_BYTES / bytes) as u32,
            reciprocal: (1u64 << 32).div_ceil(bytes as u64),
        };
        area += 1;
    }
    geometry
};

/// `within / slot_bytes(area)` for an offset `within < SLAB_BYTES`, by a multiplication: with
/// `r = ceil(2^32 / d) = (2^32 + e) / d`, the product exceeds `within / d` by
/// `within * e / (d * 2^32)`, below the `1 / d` a quotient's fraction leaves free when
/// `SLAB_BYTES * e < 2^32` (asserted below for every area).
#[inline(always)]
fn slot_index(area: usize, within: usize) -> usize {
    ((within as u64 * GEOMETRY[area].reciprocal) >> 32) as usize
}

const _: () = {
    let mut area = 0;
    while area < SLOT_AREAS {
        assert!(area_slot_bytes(area).is_multiple_of(1 << SLOT_ALIGN_SHIFT));
        let geometry = GEOMETRY[area];
        let excess = geometry.reciprocal * geometry.slot_bytes as u64 - (1 << 32);
        assert!(
            excess * (SLAB_BYTES as u64) < 1 << 32,
            "slot_index is exact"
        );
        // The slab's order (`SlabMeta::order`) keeps an index and a step in 16 bits each.
        assert!(geometry.slots <= 1 << 16);
        area += 1;
    }
};

/// The bytes of a slot of area `area` (`area < SLOT_AREAS`).
#[inline(always)]
fn slot_bytes(area: usize) -> usize {
    GEOMETRY[area].slot_bytes as usize
}

/// The slots of a slab of area `area`.
#[inline(always)]
fn slots(area: usize) -> u32 {
    GEOMETRY[area].slots
}

/// A slab's metadata, in the table.
#[repr(C)]
struct SlabMeta {
    /// Slots given back, linked through their first words (null: none).
    free: *mut u8,
    /// Slots out of the slab.
    used: u32,
    /// Slots at and above this index have not been handed out since the slab started (in
    /// secure mode's random order, see `order`: the number handed out of that order).
    fresh: u32,
    /// The next slab in its list (index plus one; 0: none).
    next: u32,
    /// The previous slab in the partial list (index plus one; 0: none).
    prev: u32,
    /// Secure mode: every slot of the slab ends with a canary word (see
    /// [`Slabs::order_fresh`]); set once, under the lock, before any slot is handed out, and
    /// read without it by [`checked_slot_bytes`].
    canaries: AtomicU32,
    /// Secure mode: the random order of the fresh slots (see [`Slabs::order_fresh`]), the
    /// step in the high 16 bits and the next slot's index in the low; 0: address order.
    order: u32,
}

const _: () = assert!(
    core::mem::size_of::<SlabMeta>() == 32,
    "the order fits the padding"
);

/// One arena's lists of one area's slabs.
struct Area {
    partial: u32,
    empty: u32,
    empty_count: u32,
    clean: u32,
    /// The first slot of the top batch (null: none).
    batches: *mut u8,
    /// Slots in all the batches.
    batch_slots: u32,
    /// Slabs this arena has started in the area.
    started: u32,
}

impl Area {
    const NEW: Area = Area {
        partial: 0,
        empty: 0,
        empty_count: 0,
        clean: 0,
        batches: core::ptr::null_mut(),
        batch_slots: 0,
        started: 0,
    };
}

/// How the region's address space is held.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Backing {
    /// Mapped readable and writable whole: committing costs no system call.
    Writable,
    /// Reserved whole without access: committing is an `mprotect`.
    Reserved,
    /// Only the committed parts are mapped (the address-space limit refused the whole):
    /// committing maps the range at its exact address, never replacing anything.
    Sparse,
}

/// Whether `ptr`, a pointer into the slot areas, is where a slot of its slab starts (an
/// interior pointer, or one past a slab's last slot, is not). Reads the address alone: no lock.
pub(crate) fn is_slot_start(ptr: NonNull<u8>) -> bool {
    let area = area_of(ptr.as_ptr());
    if area >= SLOT_AREAS {
        return false;
    }
    starts_slot(area, ptr.as_ptr().addr() & (SLAB_BYTES - 1))
}

/// Whether offset `within` of a slab of area `area` is where one of its slots starts: a
/// multiple of the slot size (by [`slot_index`]'s multiplication) below the last slot's end.
#[inline(always)]
fn starts_slot(area: usize, within: usize) -> bool {
    let index = slot_index(area, within);
    index * slot_bytes(area) == within && index < slots(area) as usize
}

/// What a guarded slot's last word holds: the secret mixed with the word's address.
fn canary(word: *const usize) -> usize {
    config::secret() ^ word.addr()
}

/// The bytes a guarded slot keeps at its end for its canary (secure mode, see
/// [`Slabs::order_fresh`]).
pub(crate) const CANARY_BYTES: usize = core::mem::size_of::<usize>();

/// The smallest guarded slot: a free slot's first two words hold its link and its mark, so the
/// canary needs a third.
const GUARDED_MIN_BYTES: usize = 32;

/// The offset of `ptr` from the region's start (modulo `2^64`).
#[inline(always)]
fn region_offset(ptr: *mut u8) -> usize {
    ptr.addr()
        .wrapping_add(BASE_NEGATED.load(Ordering::Relaxed))
}

/// Whether the slab of slot `slot`, at region offset `offset`, is guarded (secure mode: its
/// slots end with a canary). Reads the table without the lock: a slab's flag is set once,
/// before any of its slots is handed out.
#[inline(always)]
fn is_guarded(slot: NonNull<u8>, offset: usize) -> bool {
    let (area, slab) = (
        offset >> STRIDE_SHIFT,
        (offset & (STRIDE - 1)) >> SLAB_SHIFT,
    );
    let table = slot
        .as_ptr()
        .wrapping_sub(offset)
        .wrapping_add(SLOT_AREAS * STRIDE)
        .cast::<SlabMeta>();
    // SAFETY: the slot lies in a started slab, whose metadata row is committed.
    unsafe {
        (*table.wrapping_add(slab * SLOT_AREAS + area))
            .canaries
            .load(Ordering::Relaxed)
            != 0
    }
}

/// The bytes slot `slot` (a pointer into a slot area) holds for its program: its size, less
/// its canary in a guarded slab (secure mode only: the default build reads no table here).
pub(crate) fn usable_bytes(slot: NonNull<u8>) -> usize {
    let offset = region_offset(slot.as_ptr());
    let size = slot_bytes(offset >> STRIDE_SHIFT);
    if config::secure() && is_guarded(slot, offset) {
        size - CANARY_BYTES
    } else {
        size
    }
}

/// Secure mode's check of a pointer passed to `free`: `None` when it lies in no slot area;
/// for a slot, its usable bytes (as [`usable_bytes`]) once it is known to start a slot of its
/// slab, and, in a guarded slab, to end with its canary unchanged; otherwise the fault is
/// reported (an interior or misaligned pointer, an overflow past the slot). The region offset,
/// the slab and the slot's index are computed once for all three tests, and the start test
/// takes a multiplication, not a division. An overflow runs from the slot's end, so it changes
/// the canary first; an underflow into the slot below changes that slot's canary, found when
/// it is freed.
#[inline(always)]
pub(crate) fn checked_slot_bytes(slot: NonNull<u8>) -> Option<usize> {
    let offset = region_offset(slot.as_ptr());
    let area = offset >> STRIDE_SHIFT;
    if area >= SLOT_AREAS {
        return None;
    }
    if !starts_slot(area, offset & (SLAB_BYTES - 1)) {
        crate::fault::invalid_pointer("free", slot.as_ptr());
    }
    let size = slot_bytes(area);
    if !is_guarded(slot, offset) {
        return Some(size);
    }
    let word = slot
        .as_ptr()
        .wrapping_add(size - CANARY_BYTES)
        .cast::<usize>();
    // SAFETY: the canary word lies in the slot, in a committed slab.
    if unsafe { word.read() } != canary(word) {
        crate::fault::overflow(slot.as_ptr(), size - CANARY_BYTES);
    }
    Some(size - CANARY_BYTES)
}

/// Whether `next`, a link read from a free slot of the slab at `slab`, is null or a slot start
/// of that slab (a refill checks every link it follows, at the cost of a subtraction and a
/// division by its area's constant: an overflow or a write after free that changed one is
/// caught before the list leads anywhere).
fn in_slab(next: *mut u8, slab: NonNull<u8>, size: usize) -> bool {
    let offset = next.addr().wrapping_sub(slab.as_ptr().addr());
    next.is_null() || (offset < SLAB_BYTES && offset.is_multiple_of(size))
}

/// Secure mode: links the next `run` fresh slots of the slab at `slab` (of area `area`, whose
/// metadata is `meta`) in the slab's random order (see [`Slabs::order_fresh`]) onto the list
/// `head`, each with its canary if the slab is guarded; returns the list's new head.
///
/// # Safety
/// The slab is started, its order drawn, `run` at most its fresh slots; the lock is held.
unsafe fn take_in_order(
    meta: &mut SlabMeta,
    slab: NonNull<u8>,
    area: usize,
    run: u32,
    mut head: *mut u8,
) -> *mut u8 {
    let (size, count) = (slot_bytes(area), slots(area) as usize);
    let guarded = meta.canaries.load(Ordering::Relaxed) != 0;
    let step = (meta.order >> 16) as usize;
    let mut at = (meta.order & 0xFFFF) as usize;
    for _ in 0..run {
        // SAFETY: `at < count`: the slot lies in the slab, and is fresh, so nobody's.
        unsafe {
            let slot = slab.add(at * size);
            if guarded {
                let word = slot.add(size - CANARY_BYTES).cast::<usize>();
                word.write(canary(word.as_ptr()));
            }
            link::set(slot, head);
            head = slot.as_ptr();
        }
        // `step <= count`: one subtraction brings the index back below the count.
        at += step;
        if at >= count {
            at -= count;
        }
    }
    meta.order = (step as u32) << 16 | at as u32;
    meta.fresh += run;
    meta.used += run;
    head
}

/// A random step in `1..=count` that shares no factor with `count` (so below it, but for 1).
fn step_prime_to(count: usize) -> usize {
    loop {
        let step = 1 + (config::random() % count as u64) as usize;
        let (mut a, mut b) = (step, count);
        while b != 0 {
            (a, b) = (b, a % b);
        }
        if a == 1 {
            return step;
        }
    }
}

/// Unmaps `[from, from + len)` of the region (nothing when `len` is 0).
///
/// # Safety
/// The range lies in the region and nothing in it is used.
unsafe fn release(from: NonNull<u8>, len: usize) {
    if len > 0 {
        // SAFETY: forwarded from the caller.
        unsafe { os::unmap(from, len) };
    }
}

/// A batch's header, in the second word of its first slot: the next batch's first slot (null:
/// none), mangled with the first slot's address as every link is (see [`crate::link`]), in
/// the low 48 bits and the batch's length above, which a slot's address (below `2^47`) and a
/// list's length (at most `MAX_LIST_BLOCKS`) leave room for.
const BATCH_LEN_SHIFT: u32 = 48;

/// Reads the header of the batch whose first slot is `first`: the next batch and the length.
///
/// # Safety
/// `first` is the first slot of a batch.
unsafe fn read_batch_header(first: NonNull<u8>) -> (*mut u8, u32) {
    // SAFETY: every slot has at least two words; a batch's first keeps the header in its second.
    let word = unsafe { first.cast::<usize>().add(1).read() };
    let mangled = word & ((1 << BATCH_LEN_SHIFT) - 1);
    // The next batch's address was exposed when the header was written.
    let next = core::ptr::with_exposed_provenance_mut(mangled ^ first.as_ptr().addr());
    (next, (word >> BATCH_LEN_SHIFT) as u32)
}

/// Writes the header of the batch whose first slot is `first`.
///
/// # Safety
/// `first` is a slot out of its slab that the caller owns.
unsafe fn write_batch_header(first: NonNull<u8>, next: *mut u8, len: u32) {
    let mangled = next.expose_provenance() ^ first.as_ptr().addr();
    // SAFETY: as in `read_batch_header`.
    unsafe {
        first
            .cast::<usize>()
            .add(1)
            .write(mangled | (len as usize) << BATCH_LEN_SHIFT)
    };
}

/// The region's start (null: not reserved yet); written once, under [`REGION`]'s lock.
static BASE: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());

/// The region's address space and every area's prefix of started slabs, shared by the
/// arenas: taken only to start a slab (once per 16 KiB of new slots) or give back unused
/// address space.
pub(crate) struct Region {
    /// The reservation was tried and failed: the core serves every request.
    failed: bool,
    /// How the region's address space is held, so how a part of it is committed.
    backing: Backing,
    /// Rows of the table committed.
    table_rows: usize,
    /// Slabs ever started in each area (a prefix of the area).
    started: [usize; SLOT_AREAS],
    /// Slabs committed in each area (a prefix, at least `started`).
    committed: [usize; SLOT_AREAS],
}

static REGION: SpinLock<Region> = SpinLock::new(Region {
    failed: false,
    backing: Backing::Writable,
    table_rows: 0,
    started: [0; SLOT_AREAS],
    committed: [0; SLOT_AREAS],
});

/// Locks the region (to give back unused address space).
pub(crate) fn region() -> SpinGuard<'static, Region> {
    REGION.lock()
}

/// Holds the region lock across `fork` (prepare handler).
pub(crate) fn lock_for_fork() {
    REGION.lock_for_fork();
}

/// Releases the region lock after `fork` (parent and child handlers).
///
/// # Safety
/// Called only by the fork handlers, after [`lock_for_fork`].
pub(crate) unsafe fn unlock_after_fork() {
    // SAFETY: forwarded from the caller.
    unsafe { REGION.force_unlock() };
}

/// The arena whose lists hold the slab of `slot`, a slot out of its slab.
pub(crate) fn arena_of_slot(slot: NonNull<u8>) -> usize {
    let offset = slot.as_ptr().addr() - BASE.load(Ordering::Relaxed).addr();
    let (area, index) = (
        offset >> STRIDE_SHIFT,
        (offset & (STRIDE - 1)) >> SLAB_SHIFT,
    );
    SLAB_ARENAS[index * SLOT_AREAS + area].load(Ordering::Relaxed) as usize
}

/// The arena that started each slab, whose lists hold it for good (see [`crate::arena`]),
/// indexed as the table is: written once when the slab starts, then only read, by every
/// thread that frees one of its slots. Apart from the table, whose lines the owners write at
/// every refill: a thread routing another arena's slots would otherwise miss on each. In the
/// library's zeroed data: a page of it is resident only once a slab it names has started.
static SLAB_ARENAS: [AtomicU8; MAX_SLABS * SLOT_AREAS] =
    [const { AtomicU8::new(0) }; MAX_SLABS * SLOT_AREAS];
const _: () = assert!(crate::arena::MAX_ARENAS <= u8::MAX as usize + 1);

/// The first slot of slab `index` of `area` (meaningful once the region is reserved).
fn slab(area: usize, index: usize) -> NonNull<u8> {
    let slab = BASE
        .load(Ordering::Relaxed)
        .wrapping_add(area * STRIDE + index * SLAB_BYTES);
    NonNull::new(slab).unwrap_or(NonNull::dangling())
}

/// The metadata of slab `index` of `area` (valid to use once its row is committed). The
/// table interleaves the areas (slab 0 of every area, then slab 1, ...), so a program that
/// uses each area a little touches one page of it, not one per area.
#[inline(always)]
fn meta_of(area: usize, index: usize) -> *mut SlabMeta {
    table().wrapping_add(index * SLOT_AREAS + area)
}

/// The table: the slabs' metadata, in the area after the slots'.
fn table() -> *mut SlabMeta {
    BASE.load(Ordering::Relaxed)
        .wrapping_add(SLOT_AREAS * STRIDE)
        .cast::<SlabMeta>()
}

/// One arena's slabs: for each area the lists of the slabs it started (see the module docs),
/// and its batches. Guarded by the arena's lock.
pub(crate) struct Slabs {
    /// The arena these lists belong to.
    arena: u32,
    areas: [Area; SLOT_AREAS],
}

impl Slabs {
    /// An arena's empty lists.
    pub(crate) const fn new(arena: usize) -> Slabs {
        Slabs {
            arena: arena as u32,
            areas: [Area::NEW; SLOT_AREAS],
        }
    }

    /// Takes up to `count` slots of area `area` and links them into a list through their
    /// first words that ends in `rest`. Returns the list's head (`rest` when no slot could be
    /// had) and the number of slots taken.
    pub(crate) fn take(&mut self, area: usize, count: u32, rest: *mut u8) -> (*mut u8, u32) {
        if rest.is_null() && count > 0 {
            if let Some(batch) = self.take_batch(area, count) {
                return batch;
            }
        }
        let size = slot_bytes(area);
        let slots = slots(area);
        let mut head = rest;
        let mut taken = 0;
        while taken < count {
            let Some(index) = self.partial_or_new(area) else {
                break;
            };
            let slab = slab(area, index);
            if config::secure() {
                // SAFETY: `index` names a started slab; the lock is held.
                unsafe { self.order_fresh(area, index) };
            }
            // SAFETY: `index` names a started slab, whose metadata and slots are committed;
            // the lock is held, and its free-listed and fresh slots are nobody's.
            unsafe {
                let meta = &mut *meta_of(area, index);
                while taken < count {
                    let Some(slot) = NonNull::new(meta.free) else {
                        break;
                    };
                    meta.free = link::next(slot);
                    if !in_slab(meta.free, slab, size) {
                        crate::fault::corrupted_link(slot.as_ptr());
                    }
                    link::set(slot, head);
                    head = slot.as_ptr();
                    taken += 1;
                    meta.used += 1;
                }
                // Fresh slots in address order: the list runs up the slab.
                let run = (count - taken).min(slots - meta.fresh);
                if run > 0 && meta.order != 0 {
                    head = take_in_order(meta, slab, area, run, head);
                    taken += run;
                } else if run > 0 {
                    let first = slab.add(meta.fresh as usize * size);
                    let mut slot = first;
                    for _ in 1..run {
                        let next = slot.add(size);
                        link::set(slot, next.as_ptr());
                        slot = next;
                    }
                    link::set(slot, head);
                    head = first.as_ptr();
                    meta.fresh += run;
                    meta.used += run;
                    taken += run;
                }
                if meta.free.is_null() && meta.fresh == slots {
                    self.unlink_partial(area, index);
                }
            }
        }
        (head, taken)
    }

    /// Takes the top batch of `area`, or its first `count` slots if it holds more (the rest
    /// stays the top batch): a null-terminated list and its length. `None` when the area has
    /// no batch.
    fn take_batch(&mut self, area: usize, count: u32) -> Option<(*mut u8, u32)> {
        let first = NonNull::new(self.areas[area].batches)?;
        // SAFETY: the top batch is a null-terminated list of slots out of their slabs, which
        // the lock makes ours; its first slot holds the header.
        unsafe {
            let (next, len) = read_batch_header(first);
            let taken = len.min(count);
            let rest = if taken == len {
                next
            } else {
                let mut last = first;
                for _ in 1..taken {
                    last = NonNull::new_unchecked(link::next(last));
                }
                let rest = NonNull::new_unchecked(link::next(last));
                link::set(last, core::ptr::null_mut());
                write_batch_header(rest, next, len - taken);
                rest.as_ptr()
            };
            let state = &mut self.areas[area];
            state.batches = rest;
            state.batch_slots -= taken;
            bump(&COUNTERS.slot_batches_taken);
            Some((first.as_ptr(), taken))
        }
    }

    /// Gives back the `count` slots on the null-terminated list at `head`, all of one area:
    /// whole, as the area's new top batch, while its batches stay within [`BATCH_MAX_BYTES`];
    /// else each to its slab.
    ///
    /// # Safety
    /// The list holds exactly `count` slots of one area, out of their slabs, that the caller
    /// gives up.
    pub(crate) unsafe fn give_back(&mut self, head: *mut u8, count: u32) {
        let Some(first) = NonNull::new(head) else {
            return;
        };
        let area = area_of(head);
        let state = &mut self.areas[area];
        let batched = (state.batch_slots + count) as usize * slot_bytes(area);
        if batched <= BATCH_MAX_BYTES {
            // SAFETY: the slots are the caller's to give up; the first holds the header.
            unsafe { write_batch_header(first, state.batches, count) };
            state.batches = head;
            state.batch_slots += count;
            bump(&COUNTERS.slot_batches_given);
            return;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.give_back_each(head, count) }
    }

    /// Gives back up to `count` slots of the null-terminated list at `head`, each to its slab.
    ///
    /// # Safety
    /// The list's first `count` entries (or all) are slots out of their slabs that the caller
    /// gives up.
    unsafe fn give_back_each(&mut self, mut head: *mut u8, count: u32) {
        let mut given = 0;
        while given < count {
            let Some(slot) = NonNull::new(head) else {
                break;
            };
            // SAFETY: a listed slot's first word is the link; the slot is then given back.
            unsafe {
                head = link::next(slot);
                self.give_back_one(slot);
            }
            given += 1;
        }
    }

    /// Secure mode: draws the random order in which a slab that starts hands out its slots
    /// (the order `start + k * step` modulo their count for a random start and a random step
    /// prime to the count, which visits each once), kept as its next index and step
    /// ([`SlabMeta::order`]), so that a program cannot predict which slot neighbours which.
    /// The slots are visited as they are handed out ([`take_in_order`]), which writes each
    /// one's canary then: no slot is touched before it is used, and a refill follows no links
    /// through a cold slab. A slab whose first slots were handed out before secure mode was
    /// on has its other slots shuffled onto its free list at once ([`Slabs::shuffle_fresh`]).
    ///
    /// # Safety
    /// The slab is started and the lock held.
    unsafe fn order_fresh(&mut self, area: usize, index: usize) {
        // SAFETY: forwarded from the caller.
        let meta = unsafe { &mut *meta_of(area, index) };
        if meta.fresh != 0 {
            if meta.order == 0 {
                // SAFETY: forwarded from the caller.
                unsafe { self.shuffle_fresh(area, index) };
            }
            return;
        }
        let count = slots(area) as usize;
        if slot_bytes(area) >= GUARDED_MIN_BYTES {
            meta.canaries.store(1, Ordering::Relaxed);
        }
        let start = (config::random() % count as u64) as u32;
        meta.order = (step_prime_to(count) as u32) << 16 | start;
    }

    /// Secure mode: puts the slots of slab `index` of `area` not yet handed out on its free
    /// list in a random order, so that a program cannot predict which slot neighbours which:
    /// the order `start + k * step` (modulo their count) for a random start and a random step
    /// prime to the count, which visits each once. Each gets a canary ([`canary`]) in its last
    /// word (slots of at least [`GUARDED_MIN_BYTES`]), which secure mode's requests leave
    /// unused (see `size_class::guarded_list_of_request`), so that an overflow past a slot is
    /// found when the slot is freed ([`checked_slot_bytes`]). A slab is marked guarded only when
    /// it starts (its first slots handed out before secure mode was on have no canary).
    ///
    /// # Safety
    /// The slab is started and the lock held.
    unsafe fn shuffle_fresh(&mut self, area: usize, index: usize) {
        let size = slot_bytes(area);
        let slab = slab(area, index);
        // SAFETY: forwarded from the caller; the fresh slots are nobody's.
        unsafe {
            let meta = &mut *meta_of(area, index);
            let from = meta.fresh as usize;
            let all = slots(area) as usize;
            if from == all {
                return;
            }
            let guarded = size >= GUARDED_MIN_BYTES;
            if guarded && from == 0 {
                meta.canaries.store(1, Ordering::Relaxed);
            }
            let count = all - from;
            let start = (config::random() % count as u64) as usize;
            let step = step_prime_to(count);
            let mut head = meta.free;
            // `start + k * step` modulo `count`, by steps: `step <= count`, so one subtraction
            // brings each back below `count`, where a division a slot took 20 to 40 cycles.
            let mut at = start;
            for _ in 0..count {
                let slot = slab.add((from + at) * size);
                at += step;
                if at >= count {
                    at -= count;
                }
                if guarded {
                    let word = slot.add(size - CANARY_BYTES).cast::<usize>();
                    word.write(canary(word.as_ptr()));
                }
                link::set(slot, head);
                head = slot.as_ptr();
            }
            meta.free = head;
            meta.fresh = all as u32;
        }
    }

    /// Gives back one slot.
    ///
    /// # Safety
    /// `slot` is a slot out of its slab that the caller gives up.
    #[inline(always)]
    pub(crate) unsafe fn give_back_one(&mut self, slot: NonNull<u8>) {
        let offset = slot.as_ptr().addr() - BASE.load(Ordering::Relaxed).addr();
        let area = offset >> STRIDE_SHIFT;
        let index = (offset & (STRIDE - 1)) >> SLAB_SHIFT;
        // SAFETY: a slot out of its slab lies in a started slab, whose metadata is committed;
        // the lock is held.
        unsafe {
            let meta = &mut *meta_of(area, index);
            // Most slots go back to a slab that keeps others out and is on the partial list
            // already (it has a free list), which changes no list.
            if meta.used > 1 && !meta.free.is_null() {
                link::set(slot, meta.free);
                meta.free = slot.as_ptr();
                meta.used -= 1;
            } else {
                self.give_back_to_edge(slot, area, index);
            }
        }
    }

    /// Gives back a slot of slab `index` of `area` that is the slab's last out, or its first
    /// back since the slab last had none to give (it may be full).
    ///
    /// # Safety
    /// As for [`Slabs::give_back_one`].
    #[cold]
    #[inline(never)]
    unsafe fn give_back_to_edge(&mut self, slot: NonNull<u8>, area: usize, index: usize) {
        // SAFETY: forwarded from the caller.
        unsafe {
            let meta = &mut *meta_of(area, index);
            let was_full = meta.free.is_null() && meta.fresh == slots(area);
            link::set(slot, meta.free);
            meta.free = slot.as_ptr();
            meta.used -= 1;
            if meta.used == 0 {
                if !was_full {
                    self.unlink_partial(area, index);
                }
                self.retire_empty(area, index);
            } else if was_full {
                self.link_partial(area, index);
            }
        }
    }

    /// The slab of `area` at the head of its partial list, or else an empty, clean or new one
    /// put there.
    fn partial_or_new(&mut self, area: usize) -> Option<usize> {
        let state = &self.areas[area];
        if state.partial != 0 {
            return Some(state.partial as usize - 1);
        }
        let index = if state.empty != 0 {
            let top = state.empty as usize - 1;
            let rest = self.pop(area, top);
            let state = &mut self.areas[area];
            state.empty = rest;
            state.empty_count -= 1;
            top
        } else if state.clean != 0 {
            let top = state.clean as usize - 1;
            self.areas[area].clean = self.pop(area, top);
            top
        } else {
            let populate = state.started as usize >= POPULATE_AFTER;
            let index = REGION.lock().start_new(area, self.arena, populate)?;
            self.areas[area].started += 1;
            index
        };
        self.link_partial(area, index);
        Some(index)
    }

    /// Gives every batch's slots back to their slabs and the pages of every empty slab back
    /// to the OS (an idle arena's: nobody will take them).
    pub(crate) fn release_idle(&mut self) {
        if config::secure() {
            return;
        }
        for area in 0..SLOT_AREAS {
            while let Some((head, count)) = self.take_batch(area, u32::MAX) {
                // SAFETY: a batch's slots are out of their slabs, and ours under the lock.
                unsafe { self.give_back_each(head, count) };
            }
            while self.areas[area].empty != 0 {
                let index = self.areas[area].empty as usize - 1;
                self.areas[area].empty = self.pop(area, index);
                self.areas[area].empty_count -= 1;
                self.discard(area, index);
            }
        }
    }

    /// An empty slab: kept resident if few others of its area are, else its pages go back
    /// and it restarts.
    fn retire_empty(&mut self, area: usize, index: usize) {
        let state = &self.areas[area];
        // Secure mode keeps every empty slab: restarting one shuffles (so touches) all of it.
        if state.empty_count < EMPTY_KEPT || config::secure() {
            let top = self.push(area, index, state.empty);
            let state = &mut self.areas[area];
            state.empty = top;
            state.empty_count += 1;
            return;
        }
        self.discard(area, index);
    }

    /// Gives the pages of slab `index` of `area`, empty and in no list, back to the OS and
    /// puts it on the clean stack.
    fn discard(&mut self, area: usize, index: usize) {
        // SAFETY: the slab is started (committed) and empty: no slot of it is out, and its
        // free list is dropped with its pages.
        unsafe {
            os::discard(slab(area, index), SLAB_BYTES);
            let meta = &mut *meta_of(area, index);
            meta.free = core::ptr::null_mut();
            meta.fresh = 0;
        }
        bump(&COUNTERS.tiny_discards);
        let top = self.push(area, index, self.areas[area].clean);
        self.areas[area].clean = top;
    }

    fn link_partial(&mut self, area: usize, index: usize) {
        let old = self.areas[area].partial;
        // SAFETY: started slabs' metadata is committed; the lock is held.
        unsafe {
            let meta = &mut *meta_of(area, index);
            meta.next = old;
            meta.prev = 0;
            if old != 0 {
                (*meta_of(area, old as usize - 1)).prev = index as u32 + 1;
            }
        }
        self.areas[area].partial = index as u32 + 1;
    }

    fn unlink_partial(&mut self, area: usize, index: usize) {
        // SAFETY: as in `link_partial`; the slab is on the partial list.
        unsafe {
            let meta = &mut *meta_of(area, index);
            let (next, prev) = (meta.next, meta.prev);
            meta.next = 0;
            meta.prev = 0;
            if next != 0 {
                (*meta_of(area, next as usize - 1)).prev = prev;
            }
            if prev != 0 {
                (*meta_of(area, prev as usize - 1)).next = next;
            } else {
                self.areas[area].partial = next;
            }
        }
    }

    /// Links slab `index` of `area` on top of the stack whose top is `top`; returns the new
    /// top.
    fn push(&mut self, area: usize, index: usize, top: u32) -> u32 {
        // SAFETY: started slabs' metadata is committed; the lock is held.
        unsafe { (*meta_of(area, index)).next = top };
        index as u32 + 1
    }

    /// Unlinks slab `index` of `area`, the top of a stack; returns the new top.
    fn pop(&mut self, area: usize, index: usize) -> u32 {
        // SAFETY: as in `push`.
        unsafe { core::mem::take(&mut (*meta_of(area, index)).next) }
    }
}

impl Region {
    /// Starts the next slab of `area` (reserving the region first), committing as needed,
    /// for `arena`; made resident at once if `populate`.
    fn start_new(&mut self, area: usize, arena: u32, populate: bool) -> Option<usize> {
        if BASE.load(Ordering::Relaxed).is_null() && !self.reserve() {
            return None;
        }
        let (started, committed) = (self.started[area], self.committed[area]);
        if started == MAX_SLABS {
            return None;
        }
        if started == committed {
            let step = COMMIT_SLABS.min(MAX_SLABS - committed);
            if !self.commit_rows(committed + step) {
                return None;
            }
            // SAFETY: the range lies in the area, past its committed part.
            if !unsafe { self.commit(slab(area, committed), step * SLAB_BYTES) } {
                return None;
            }
            self.committed[area] += step;
        }
        if populate {
            // SAFETY: the slab is committed and nothing uses it yet.
            unsafe { os::populate(slab(area, started), SLAB_BYTES) };
        }
        bump(&COUNTERS.tiny_slabs);
        self.started[area] += 1;
        SLAB_ARENAS[started * SLOT_AREAS + area].store(arena as u8, Ordering::Relaxed);
        Some(started)
    }

    /// Commits the table's rows up to `rows` (whole pages). Returns whether it could.
    fn commit_rows(&mut self, rows: usize) -> bool {
        if rows <= self.table_rows {
            return true;
        }
        let table = table().cast::<u8>();
        let (Some(from), Some(to)) = (
            os::round_to_pages(self.table_rows * ROW_BYTES),
            os::round_to_pages(rows * ROW_BYTES),
        ) else {
            return false;
        };
        if to > from {
            let start = NonNull::new(table.wrapping_add(from)).unwrap_or(NonNull::dangling());
            // SAFETY: the range lies in the table's area (`MAX_SLABS` rows fit), past its
            // committed part.
            if !unsafe { self.commit(start, to - from) } {
                return false;
            }
        }
        self.table_rows = to / ROW_BYTES;
        true
    }

    /// Makes `len` bytes at `start` readable and writable, unless the whole region already is.
    /// Returns whether they are.
    ///
    /// # Safety
    /// The range lies in the region, in a part nobody uses yet.
    unsafe fn commit(&self, start: NonNull<u8>, len: usize) -> bool {
        match self.backing {
            Backing::Writable => true,
            // SAFETY: forwarded from the caller.
            Backing::Reserved => unsafe { os::commit(start, len) },
            Backing::Sparse => os::reserve_at(start.as_ptr().addr(), len, true).is_ok(),
        }
    }

    /// Gives back the region's address space that no slab or table row uses (its areas past
    /// their committed slabs, the table past its committed rows), when the kernel refused
    /// another mapping: under an address-space limit, a reservation of tens of GiB is what
    /// stands in the way. The region stays ours in name (`END` is unchanged) and becomes
    /// [`Backing::Sparse`]: later commits map their range at its exact address.
    pub(crate) fn release_unused(&mut self) {
        if BASE.load(Ordering::Relaxed).is_null() || self.backing == Backing::Sparse {
            return;
        }
        for area in 0..SLOT_AREAS {
            let from = slab(area, self.committed[area]);
            let len = (MAX_SLABS - self.committed[area]) * SLAB_BYTES;
            // SAFETY: slabs past the committed ones are used by nothing.
            unsafe { release(from, len) };
        }
        let used = os::round_to_pages(self.table_rows * ROW_BYTES).unwrap_or(STRIDE);
        let table = NonNull::new(table().cast::<u8>().wrapping_add(used));
        // SAFETY: the table's area past its committed rows is used by nothing.
        unsafe { release(table.unwrap_or(NonNull::dangling()), STRIDE - used) };
        self.backing = Backing::Sparse;
    }

    /// Reserves the region at [`HINT`], writable whole if the kernel allows (as it does unless
    /// it accounts commit strictly), which spares a system call (and a split of the mapping) at
    /// every commit: at start-up, when each class used opens its area, those took about a
    /// tenth of a millisecond. Under an address-space limit that refuses the whole region, it
    /// is held [`Backing::Sparse`] from the start. Returns whether it could (once it could
    /// not, because something else is mapped there, it never tries again).
    #[cold]
    fn reserve(&mut self) -> bool {
        if self.failed {
            return false;
        }
        let backing = match os::reserve_at(HINT, SPAN, true) {
            Ok(_) => Backing::Writable,
            Err(_) => match os::reserve_at(HINT, SPAN, false) {
                Ok(_) => Backing::Reserved,
                // The range was free: the limit refused it.
                Err(libc::ENOMEM) => Backing::Sparse,
                Err(_) => {
                    self.failed = true;
                    return false;
                }
            },
        };
        self.backing = backing;
        // The region's addresses: mapped at exactly `HINT` (or, sparse, mapped there as
        // committed), by system calls whose results carry no provenance of their own.
        let base = core::ptr::with_exposed_provenance_mut::<u8>(HINT);
        BASE.store(base, Ordering::Relaxed);
        BASE_NEGATED.store(HINT.wrapping_neg(), Ordering::Relaxed);
        END.store(HINT + SPAN, Ordering::Relaxed);
        true
    }
}
