//! Tiny blocks: requests of at most 128 bytes get a slot with no header, of 16 to 128 bytes
//! in steps of 16, cut from slabs in an address-space reservation of their own. A block of `n`
//! bytes thus costs `n` rounded up to 16 rather than the core's `n + 8` rounded up to 16 (at
//! least 32): half for blocks of up to 16 bytes, a quarter for 41 to 48. And a slot never
//! passes through the core heap: a refill or a flush costs the slabs about a dozen
//! instructions a slot, where the core's allocate and free cost 60 to 90 a block and coalesce.
//!
//! ```text
//! base                 one area of STRIDE bytes for the table, then one per slot class
//! | table: SlabMeta of slab 0 of classes 1..=8, of slab 1, ... || slabs of 16 B || ... 128 B | end
//! ```
//!
//! Classes stop at 128 bytes by measurement: every class costs a program that uses it at
//! least a page of its own, and 16 classes (up to 256 B) raised git-log's peak RSS by 4 % (to
//! 1.13 times glibc's), where 8 cost less than 1 %.
//!
//! A slot has no header, so nothing in front of it says what it is: its address does. The
//! region is reserved once, at a fixed address far below where the kernel places mappings
//! (`MAP_FIXED_NOREPLACE`, so nothing else is ever replaced), and [`end`] is one past it.
//! `free` sends every pointer below `end` (NULL included: `end` starts at 1) to its slow path,
//! where [`areas_back`] tells a slot from the rest and names its class with one subtraction
//! and one shift; every other block of this library lies above `end` in practice, and would
//! only take that slow path if it did not. A slot's slab (so its metadata) is its offset
//! within its class's area shifted right: O(1), no lookup.
//!
//! Slots move between the slabs and the thread caches in batches under [`SLABS`]'s lock (see
//! [`crate::tcache`]): a refill takes slots from the partial slab at the head of its class's
//! list, first from its free list (slots given back), then from its fresh part (never used
//! since the slab started, so nothing needs building until a batch asks). A slab that becomes
//! empty stays resident if fewer than [`EMPTY_KEPT`] others of its class are, else its pages go
//! back to the OS (`madvise(MADV_DONTNEED)`) and it restarts clean; either way the next slab a
//! refill of its class needs comes from those before new address space is committed. Resident
//! empty slabs are thus bounded by `EMPTY_KEPT` per class.
//!
//! Invariants, under the lock, for each class:
//! - The table (all classes' metadata, interleaved) and the class's first `committed` slabs
//!   are committed (readable and writable), and `started <= committed` slabs have been used.
//! - Once the region is reserved, `END` is one past it and `LAST` its last byte; before (and
//!   if it never is), 1 and `usize::MAX`.
//! - A slab's slot is exactly one of: on its slab's free list, at or above its `fresh` mark, or
//!   out (handed to a thread cache or a program); `used` counts the slots out.
//! - The partial list holds exactly the started slabs with `used > 0` and a slot to give (free
//!   list or fresh part), doubly linked; the empty stack holds `empty_count <= EMPTY_KEPT` slabs
//!   with `used == 0` whose pages are resident; the clean stack holds slabs with `used == 0`,
//!   `fresh == 0`, an empty free list and discarded pages. Every started slab is in exactly one
//!   of the three, or full (`used` is the class's slots per slab, in none).
//! - Links are slab indices plus one (0: none), so the zeroed table of a new reservation is all
//!   fresh slabs outside every list.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};

use heapworks::GRANULE;

use crate::lock::{SpinGuard, SpinLock};
use crate::os;
use crate::stats::{bump, COUNTERS};

/// Slot classes: class `k` (1 to `SLOT_CLASSES`) has slots of `k * GRANULE` bytes.
pub(crate) const SLOT_CLASSES: usize = 8;
/// The largest request a slot serves.
pub(crate) const SLOT_MAX_REQUEST: usize = SLOT_CLASSES * GRANULE;
const SLAB_SHIFT: u32 = 16;
/// A slab's bytes (64 KiB): what is emptied and given back at a time.
const SLAB_BYTES: usize = 1 << SLAB_SHIFT;
const STRIDE_SHIFT: u32 = 31;
/// The bytes of each area (2 GiB: 32768 slabs, 128 Mi slots of 16 B; beyond, the core serves
/// the class's requests).
const STRIDE: usize = 1 << STRIDE_SHIFT;
/// The bytes of the region: the table's area, then one area per class.
const SPAN: usize = (SLOT_CLASSES + 1) * STRIDE;
/// Slabs in each class's area.
const MAX_SLABS: usize = STRIDE / SLAB_BYTES;
/// Bytes of the table (whole pages).
const TABLE_BYTES: usize =
    match os::round_to_pages(MAX_SLABS * SLOT_CLASSES * core::mem::size_of::<SlabMeta>()) {
        Some(bytes) => bytes,
        None => panic!("the table size overflows"),
    };
/// Slabs committed at a time (1 MiB: untouched pages cost nothing but commit charge).
const COMMIT_SLABS: usize = 16;
/// A class that has started this many slabs has each new one made resident at once (one
/// system call, not 16 page faults): it will fill it, while a class that is used little keeps
/// its slabs' untouched pages out of memory.
const POPULATE_AFTER: usize = 4;
/// Empty slabs of a class kept resident for the next refills; the others are given back.
const EMPTY_KEPT: u32 = 4;
/// Where the region is asked for: 16 TiB, below the kernel's mapping area (which on x86-64
/// grows down from near 128 TiB, or up from about 43 TiB in the legacy layout) and above
/// where non-PIE executables, their `brk` heap and `MAP_32BIT` mappings live.
const HINT: usize = 0x1000_0000_0000;

const _: () = assert!(TABLE_BYTES <= STRIDE);
const _: () = assert!(HINT.is_multiple_of(STRIDE));

/// One past the region's end once it is reserved; 1 before (and if it never is).
static END: AtomicUsize = AtomicUsize::new(1);
/// The region's last byte once it is reserved; before, `usize::MAX`, which lies more than
/// `SPAN` above every user address.
static LAST: AtomicUsize = AtomicUsize::new(usize::MAX);

/// The bound `free` compares every pointer with: below it lie NULL and every slot.
#[inline(always)]
pub(crate) fn end() -> usize {
    END.load(Ordering::Relaxed)
}

/// How many areas back from the region's last one `ptr` lies: below `SLOT_CLASSES` for a
/// pointer in a class's area (that of class `SLOT_CLASSES - back`), at least `SLOT_CLASSES`
/// for any other (NULL and the table's area included, and every pointer before the region
/// exists).
#[inline(always)]
pub(crate) fn areas_back(ptr: *mut u8) -> usize {
    LAST.load(Ordering::Relaxed).wrapping_sub(ptr.addr()) >> STRIDE_SHIFT
}

/// The class (1 to `SLOT_CLASSES`) of `ptr` if it lies in a class's area, as every slot (live
/// or not) does; `None` for any other pointer, NULL included.
#[inline(always)]
pub(crate) fn class_of(ptr: *mut u8) -> Option<usize> {
    let back = areas_back(ptr);
    (back < SLOT_CLASSES).then(|| SLOT_CLASSES - back)
}

/// The bytes of a slot of class `class`, which is also what it can hold.
#[inline(always)]
pub(crate) const fn slot_bytes(class: usize) -> usize {
    class * GRANULE
}

/// The slots of a slab of class `class`.
const fn slots(class: usize) -> u32 {
    (SLAB_BYTES / slot_bytes(class)) as u32
}

/// A slab's metadata, in its class's table.
#[repr(C)]
struct SlabMeta {
    /// Slots given back, linked through their first words (null: none).
    free: *mut u8,
    /// Slots out of the slab.
    used: u32,
    /// Slots at and above this index have not been handed out since the slab started.
    fresh: u32,
    /// The next slab in its list (index plus one; 0: none).
    next: u32,
    /// The previous slab in the partial list (index plus one; 0: none).
    prev: u32,
}

/// One class's slabs.
struct Class {
    /// Slabs ever started (a prefix of the area).
    started: usize,
    /// Slabs committed (a prefix, at least `started`).
    committed: usize,
    partial: u32,
    empty: u32,
    empty_count: u32,
    clean: u32,
}

impl Class {
    const NEW: Class = Class {
        started: 0,
        committed: 0,
        partial: 0,
        empty: 0,
        empty_count: 0,
        clean: 0,
    };
}

/// The region and its classes' lists.
pub(crate) struct Slabs {
    /// The region's start (null: not reserved yet).
    base: *mut u8,
    /// The reservation was tried and failed: the core serves tiny requests.
    failed: bool,
    classes: [Class; SLOT_CLASSES],
}

// SAFETY: the region belongs to the allocator alone; nothing ties it to a thread.
unsafe impl Send for Slabs {}

static SLABS: SpinLock<Slabs> = SpinLock::new(Slabs {
    base: core::ptr::null_mut(),
    failed: false,
    classes: [Class::NEW; SLOT_CLASSES],
});

/// Locks the slabs.
pub(crate) fn lock() -> SpinGuard<'static, Slabs> {
    SLABS.lock()
}

/// Holds the slab lock across `fork` (prepare handler).
pub(crate) fn lock_for_fork() {
    SLABS.lock_for_fork();
}

/// Releases the slab lock after `fork` (parent and child handlers).
///
/// # Safety
/// Called only by the fork handlers, after [`lock_for_fork`].
pub(crate) unsafe fn unlock_after_fork() {
    // SAFETY: forwarded from the caller.
    unsafe { SLABS.force_unlock() };
}

impl Slabs {
    /// Takes up to `count` slots of class `class` and links them into a list through their
    /// first words that ends in `rest`. Returns the list's head (`rest` when no slot could be
    /// had) and the number of slots taken.
    pub(crate) fn take(&mut self, class: usize, count: u32, rest: *mut u8) -> (*mut u8, u32) {
        let size = slot_bytes(class);
        let slots = slots(class);
        let mut head = rest;
        let mut taken = 0;
        while taken < count {
            let Some(index) = self.partial_or_new(class) else {
                break;
            };
            let slab = self.slab(class, index);
            // SAFETY: `index` names a started slab, whose metadata and slots are committed;
            // the lock is held, and its free-listed and fresh slots are nobody's.
            unsafe {
                let meta = &mut *self.meta(class, index);
                while taken < count {
                    let Some(slot) = NonNull::new(meta.free) else {
                        break;
                    };
                    meta.free = slot.cast::<*mut u8>().read();
                    slot.cast::<*mut u8>().write(head);
                    head = slot.as_ptr();
                    taken += 1;
                    meta.used += 1;
                }
                // Fresh slots in address order: the list runs up the slab.
                let run = (count - taken).min(slots - meta.fresh);
                if run > 0 {
                    let first = slab.add(meta.fresh as usize * size);
                    let mut slot = first;
                    for _ in 1..run {
                        let next = slot.add(size);
                        slot.cast::<*mut u8>().write(next.as_ptr());
                        slot = next;
                    }
                    slot.cast::<*mut u8>().write(head);
                    head = first.as_ptr();
                    meta.fresh += run;
                    meta.used += run;
                    taken += run;
                }
                if meta.free.is_null() && meta.fresh == slots {
                    self.unlink_partial(class, index);
                }
            }
        }
        (head, taken)
    }

    /// Gives back up to `count` slots of the null-terminated list at `head`.
    ///
    /// # Safety
    /// The list's first `count` entries (or all) are slots out of their slabs that the caller
    /// gives up.
    pub(crate) unsafe fn give_back(&mut self, mut head: *mut u8, count: u32) {
        let mut given = 0;
        while given < count {
            let Some(slot) = NonNull::new(head) else {
                break;
            };
            // SAFETY: a listed slot's first word is the link; the slot is then given back.
            unsafe {
                head = slot.cast::<*mut u8>().read();
                self.give_back_one(slot);
            }
            given += 1;
        }
    }

    /// Gives back one slot.
    ///
    /// # Safety
    /// `slot` is a slot out of its slab that the caller gives up.
    pub(crate) unsafe fn give_back_one(&mut self, slot: NonNull<u8>) {
        let offset = slot.as_ptr().addr() - self.base.addr();
        let class = offset >> STRIDE_SHIFT;
        let index = (offset & (STRIDE - 1)) >> SLAB_SHIFT;
        // SAFETY: a slot out of its slab lies in a started slab, whose metadata is committed;
        // the lock is held.
        unsafe {
            let meta = &mut *self.meta(class, index);
            let was_full = meta.free.is_null() && meta.fresh == slots(class);
            slot.cast::<*mut u8>().write(meta.free);
            meta.free = slot.as_ptr();
            meta.used -= 1;
            if meta.used == 0 {
                if !was_full {
                    self.unlink_partial(class, index);
                }
                self.retire_empty(class, index);
            } else if was_full {
                self.link_partial(class, index);
            }
        }
    }

    /// The slab of `class` at the head of its partial list, or else an empty, clean or new one
    /// put there.
    fn partial_or_new(&mut self, class: usize) -> Option<usize> {
        let state = &self.classes[class - 1];
        if state.partial != 0 {
            return Some(state.partial as usize - 1);
        }
        let index = if state.empty != 0 {
            let top = state.empty as usize - 1;
            let rest = self.pop(class, top);
            let state = &mut self.classes[class - 1];
            state.empty = rest;
            state.empty_count -= 1;
            top
        } else if state.clean != 0 {
            let top = state.clean as usize - 1;
            self.classes[class - 1].clean = self.pop(class, top);
            top
        } else {
            self.start_new(class)?
        };
        self.link_partial(class, index);
        Some(index)
    }

    /// Starts the next slab of `class` (reserving the region first), committing as needed.
    fn start_new(&mut self, class: usize) -> Option<usize> {
        if self.base.is_null() && !self.reserve() {
            return None;
        }
        let state = &self.classes[class - 1];
        let (started, committed) = (state.started, state.committed);
        if started == MAX_SLABS {
            return None;
        }
        if started == committed {
            let step = COMMIT_SLABS.min(MAX_SLABS - committed);
            // SAFETY: the range lies in the class's area, past its committed part.
            if !unsafe { os::commit(self.slab(class, committed), step * SLAB_BYTES) } {
                return None;
            }
            self.classes[class - 1].committed += step;
        }
        if started >= POPULATE_AFTER {
            // SAFETY: the slab is committed and nothing uses it yet.
            unsafe { os::populate(self.slab(class, started), SLAB_BYTES) };
        }
        bump(&COUNTERS.tiny_slabs);
        self.classes[class - 1].started += 1;
        Some(started)
    }

    /// Reserves the region at [`HINT`] and commits the classes' tables. Returns whether it
    /// could (once it could not, it never tries again).
    #[cold]
    fn reserve(&mut self) -> bool {
        if self.failed {
            return false;
        }
        let reserved = os::reserve_at(HINT, SPAN).filter(|&base| {
            // SAFETY: the table lies at the start of the fresh reservation.
            let committed = unsafe { os::commit(base, TABLE_BYTES) };
            if !committed {
                // SAFETY: the reservation was just made and nothing uses it.
                unsafe { os::unmap(base, SPAN) };
            }
            committed
        });
        let Some(base) = reserved else {
            self.failed = true;
            return false;
        };
        self.base = base.as_ptr();
        END.store(base.as_ptr().addr() + SPAN, Ordering::Relaxed);
        LAST.store(base.as_ptr().addr() + SPAN - 1, Ordering::Relaxed);
        true
    }

    /// An empty slab: kept resident if few others of its class are, else its pages go back
    /// and it restarts.
    fn retire_empty(&mut self, class: usize, index: usize) {
        let state = &self.classes[class - 1];
        if state.empty_count < EMPTY_KEPT {
            let top = self.push(class, index, state.empty);
            let state = &mut self.classes[class - 1];
            state.empty = top;
            state.empty_count += 1;
            return;
        }
        // `free` gets here, which must keep errno.
        let saved = os::errno();
        // SAFETY: the slab is started (committed) and empty: no slot of it is out, and its
        // free list is dropped with its pages.
        unsafe {
            os::discard(self.slab(class, index), SLAB_BYTES);
            let meta = &mut *self.meta(class, index);
            meta.free = core::ptr::null_mut();
            meta.fresh = 0;
        }
        os::set_errno(saved);
        bump(&COUNTERS.tiny_discards);
        let top = self.push(class, index, self.classes[class - 1].clean);
        self.classes[class - 1].clean = top;
    }

    fn link_partial(&mut self, class: usize, index: usize) {
        let old = self.classes[class - 1].partial;
        // SAFETY: started slabs' metadata is committed; the lock is held.
        unsafe {
            let meta = &mut *self.meta(class, index);
            meta.next = old;
            meta.prev = 0;
            if old != 0 {
                (*self.meta(class, old as usize - 1)).prev = index as u32 + 1;
            }
        }
        self.classes[class - 1].partial = index as u32 + 1;
    }

    fn unlink_partial(&mut self, class: usize, index: usize) {
        // SAFETY: as in `link_partial`; the slab is on the partial list.
        unsafe {
            let meta = &mut *self.meta(class, index);
            let (next, prev) = (meta.next, meta.prev);
            meta.next = 0;
            meta.prev = 0;
            if next != 0 {
                (*self.meta(class, next as usize - 1)).prev = prev;
            }
            if prev != 0 {
                (*self.meta(class, prev as usize - 1)).next = next;
            } else {
                self.classes[class - 1].partial = next;
            }
        }
    }

    /// Links slab `index` of `class` on top of the stack whose top is `top`; returns the new
    /// top.
    fn push(&mut self, class: usize, index: usize, top: u32) -> u32 {
        // SAFETY: started slabs' metadata is committed; the lock is held.
        unsafe { (*self.meta(class, index)).next = top };
        index as u32 + 1
    }

    /// Unlinks slab `index` of `class`, the top of a stack; returns the new top.
    fn pop(&mut self, class: usize, index: usize) -> u32 {
        // SAFETY: as in `push`.
        unsafe { core::mem::take(&mut (*self.meta(class, index)).next) }
    }

    /// The first slot of slab `index` of `class` (meaningful once the region is reserved).
    fn slab(&self, class: usize, index: usize) -> NonNull<u8> {
        let slab = self.base.wrapping_add(class * STRIDE + index * SLAB_BYTES);
        NonNull::new(slab).unwrap_or(NonNull::dangling())
    }

    /// The metadata of slab `index` of `class` (valid to use once the table is committed).
    /// The table interleaves the classes (slab 0 of every class, then slab 1, ...), so a
    /// program that uses each class a little touches one page of it, not one per class.
    fn meta(&self, class: usize, index: usize) -> *mut SlabMeta {
        let entry = index * SLOT_CLASSES + class - 1;
        self.base
            .wrapping_add(entry * core::mem::size_of::<SlabMeta>())
            .cast()
    }
}
