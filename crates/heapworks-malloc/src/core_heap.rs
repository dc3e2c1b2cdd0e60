//! An arena's core heap: one `heapworks::Heap` grown by mmap'd segments (the arena's lock,
//! see [`crate::arena`], guards it; this module takes no lock and touches no thread state).
//!
//! Invariants: the heap's regions are reservations of address space (`PROT_NONE`, never `brk`),
//! aligned to [`address_map::GRANULE`] and recorded there as the arena's, each claimed by the
//! heap for its committed prefix only; committing more of the newest reservation extends its
//! region in place, and a request that does not fit starts a new one. Every block the heap
//! hands out stays allocated in the heap's eyes while a thread cache holds it, so a cached
//! block's header is always valid. Bytes newly committed are counted for the caller
//! ([`CoreHeap::take_new_commits`]), who makes cached large mappings give as many back.
//!
//! Blocks freed back to the arena wait in per-class transfer batches: a thread whose list of
//! a class is full may leave half of it, still linked, as that class's batch, blocks other
//! threads freed join it one by one when filed ([`CoreHeap::add_to_batch`]), and a thread
//! whose list is empty takes from the batch instead of carving new blocks (O(1) for a batch
//! that fits, no heap search). Invariants: a class has at most one batch, a null-terminated
//! list of `count` blocks of that class (`count == 0` exactly when the list is empty),
//! allocated in the heap's eyes; the batches hold at most [`TRANSFER_MAX_BYTES`] in all.
//!
//! Memory goes back lazily and bounded: after every [`TRIM_EVERY`] bytes freed into the heap,
//! the whole pages inside the unused spans of free chunks of at least [`TRIM_MIN_SPAN`] are
//! discarded (`madvise(MADV_DONTNEED)`, under the lock, so no block is carved from them
//! meanwhile). A hot loop thus refaults at most one trim's worth of pages per `TRIM_EVERY`
//! bytes it frees, while a program that frees a lot stops paying memory for it. A heap made
//! to give back when idle (the starter arena's, see [`crate::arena::STARTER`]) also trims,
//! spans from [`IDLE_MIN_SPAN`], once [`IDLE_TRIM_AFTER`] bytes have been freed into it with
//! no allocation between: the threads that took its memory have moved on, and what they
//! took comes back to nobody.

use core::alloc::Layout;
use core::ptr::NonNull;
use heapworks::{Heap, Misuse, Stats};

use crate::address_map::{self, GRANULE};
use crate::fault;
use crate::link;
use crate::os;
use crate::size_class::CLASS_SLOTS;
use crate::stats::{add, bump, COUNTERS};

/// Address space reserved at a time; pages cost nothing until committed and touched.
const RESERVATION: usize = 1 << 30;
/// The least committed at a time.
const MIN_COMMIT: usize = 2 << 20;
/// Bytes freed into the core heap between two trims.
const TRIM_EVERY: usize = 64 << 20;
/// Unused spans shorter than this stay resident: a few pages are not worth a syscall.
const TRIM_MIN_SPAN: usize = 256 << 10;
/// Bytes freed with no allocation between after which a heap that gives back when idle trims.
const IDLE_TRIM_AFTER: usize = 512 << 10;
/// An idle trim's least span: nobody allocates here, so the pages are not refaulted soon.
const IDLE_MIN_SPAN: usize = 16 << 10;
/// Bytes the transfer batches may hold in all (blocks kept out of the heap, so bounded).
const TRANSFER_MAX_BYTES: usize = 256 << 10;
/// Room for the core's region record, end sentinel, alignment padding and a block header.
const REGION_OVERHEAD: usize = 256;

/// The newest reservation: `[base, base + reserved)`, of which the first `committed` bytes are
/// readable, writable and claimed by the heap.
struct Reservation {
    base: NonNull<u8>,
    committed: usize,
    reserved: usize,
}

/// A class's transfer batch: `count` blocks linked from `head` through their first words.
#[derive(Clone, Copy)]
struct Batch {
    head: *mut u8,
    count: u32,
}

impl Batch {
    const EMPTY: Batch = Batch {
        head: core::ptr::null_mut(),
        count: 0,
    };
}

/// The heap, the reservation it grows into, and the transfer batches.
pub(crate) struct CoreHeap {
    /// The arena this heap belongs to (recorded in the address map for its reservations).
    arena: usize,
    /// Bytes committed since the caller last asked.
    new_commits: usize,
    heap: Heap,
    newest: Option<Reservation>,
    committed_total: usize,
    freed_since_trim: usize,
    /// Bytes freed since the last allocation or trim, and the count at which that trims
    /// (`usize::MAX`: never, for a heap that does not give back when idle).
    freed_idle: usize,
    idle_trim_at: usize,
    /// An idle trim ran since [`CoreHeap::take_idle_trimmed`] was last asked.
    idle_trimmed: bool,
    transfer: [Batch; CLASS_SLOTS],
    transfer_bytes: usize,
}

// SAFETY: the reservation pointer names memory owned by the heap, which is `Send`; nothing is
// tied to a thread.
unsafe impl Send for CoreHeap {}

impl CoreHeap {
    /// An empty heap of arena `arena`, which gives its free pages back when idle if
    /// `trims_when_idle`.
    pub(crate) const fn new(arena: usize, trims_when_idle: bool) -> CoreHeap {
        CoreHeap {
            arena,
            new_commits: 0,
            heap: Heap::new(),
            newest: None,
            committed_total: 0,
            freed_since_trim: 0,
            freed_idle: 0,
            idle_trim_at: if trims_when_idle {
                IDLE_TRIM_AFTER
            } else {
                usize::MAX
            },
            idle_trimmed: false,
            transfer: [Batch::EMPTY; CLASS_SLOTS],
            transfer_bytes: 0,
        }
    }

    /// The heap's statistics.
    pub(crate) fn stats(&self) -> Stats {
        self.heap.stats()
    }

    /// Bytes committed since the last call (the caller makes cached large mappings give as
    /// many back, outside the arena's lock).
    pub(crate) fn take_new_commits(&mut self) -> usize {
        core::mem::take(&mut self.new_commits)
    }

    /// The usable size of `block` if it is a live block of the heap (`Heap::validate`);
    /// otherwise the fault is reported (a double free, a foreign pointer, a corrupt header)
    /// and the process aborts. `what` names the call (`free`, `realloc`).
    pub(crate) fn validate(&self, block: NonNull<u8>, what: &str) -> usize {
        match self.heap.validate(block) {
            // SAFETY: validated: a live block of the heap.
            Ok(()) => unsafe { usable_size(block) },
            Err(Misuse::DoubleFree { .. }) => {
                // SAFETY: a freed chunk keeps its size in its header.
                fault::double_free(block.as_ptr(), unsafe { usable_size(block) })
            }
            Err(Misuse::CorruptHeader { .. }) => fault::corrupted(what, block.as_ptr()),
            Err(_) => fault::invalid_pointer(what, block.as_ptr()),
        }
    }

    /// Allocates a block for `layout`, committing more memory when the heap is full.
    pub(crate) fn allocate(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        self.freed_idle = 0;
        if let Ok(block) = self.heap.allocate(layout) {
            return Some(block);
        }
        self.grow_for(layout)?;
        self.heap.allocate(layout).ok()
    }

    /// Allocates up to `count` blocks for `layout` and links them, in the order they are made,
    /// into a list through their first words that ends in `rest`. Returns the list's head
    /// (`rest` when no block could be made) and the number of blocks made. Blocks are carved
    /// as runs (`Heap::allocate_run`): one index search and update per free chunk used, not
    /// per block.
    pub(crate) fn allocate_list(
        &mut self,
        layout: Layout,
        count: u32,
        rest: *mut u8,
    ) -> (*mut u8, u32) {
        self.freed_idle = 0;
        let mut head = rest;
        let mut last: Option<NonNull<u8>> = None;
        let mut made = 0;
        let mut grown = false;
        while made < count {
            let wanted = (count - made) as usize;
            let run = self.heap.allocate_run(layout, wanted, |block| {
                match last {
                    // SAFETY: the previous fresh block is ours and at least a word long.
                    Some(last) => unsafe { link::set(last, block.as_ptr()) },
                    None => head = block.as_ptr(),
                }
                last = Some(block);
            });
            if run == 0 {
                // One growth per list: a heap grown for `layout` holds at least one block.
                if grown || self.grow_for(layout).is_none() {
                    break;
                }
                grown = true;
            }
            made += run as u32;
        }
        if let Some(last) = last {
            // SAFETY: as above.
            unsafe { link::set(last, rest) };
        }
        (head, made)
    }

    /// Keeps the `count` blocks of `class` linked from `head` (a null-terminated list of
    /// `block_bytes`-byte blocks) as the class's transfer batch, if it has none and the bound
    /// allows. Returns whether it did; if not, the list is still the caller's.
    ///
    /// # Safety
    /// The list's blocks are live core-heap blocks of `class` that the caller gives up.
    pub(crate) unsafe fn offer_batch(
        &mut self,
        class: usize,
        head: NonNull<u8>,
        count: u32,
        block_bytes: usize,
    ) -> bool {
        let bytes = count as usize * block_bytes;
        let slot = &mut self.transfer[class];
        if slot.count != 0 || self.transfer_bytes + bytes > TRANSFER_MAX_BYTES {
            return false;
        }
        *slot = Batch {
            head: head.as_ptr(),
            count,
        };
        self.transfer_bytes += bytes;
        true
    }

    /// Adds `block` (of `block_bytes` bytes) to the transfer batch of `class` if the bound
    /// allows. Returns whether it did; if not, the block is still the caller's.
    ///
    /// # Safety
    /// `block` is a live core-heap block of `class` that the caller gives up.
    pub(crate) unsafe fn add_to_batch(
        &mut self,
        class: usize,
        block: NonNull<u8>,
        block_bytes: usize,
    ) -> bool {
        if self.transfer_bytes + block_bytes > TRANSFER_MAX_BYTES {
            return false;
        }
        let slot = &mut self.transfer[class];
        // SAFETY: the block is the caller's to link.
        unsafe { link::set(block, slot.head) };
        slot.head = block.as_ptr();
        slot.count += 1;
        self.transfer_bytes += block_bytes;
        true
    }

    /// The number of blocks in the transfer batch of `class`, 0 when it has none.
    pub(crate) fn batch_len(&self, class: usize) -> u32 {
        self.transfer[class].count
    }

    /// Takes up to `max` blocks of the transfer batch of `class`, of `block_bytes`-byte
    /// blocks: a null-terminated list and its length (the rest stays the batch).
    pub(crate) fn take_batch(
        &mut self,
        class: usize,
        block_bytes: usize,
        max: u32,
    ) -> Option<(NonNull<u8>, u32)> {
        let slot = &mut self.transfer[class];
        let first = NonNull::new(slot.head)?;
        let taken = slot.count.min(max.max(1));
        // SAFETY: the batch's blocks are linked through their first words and ours.
        unsafe {
            let mut last = first;
            for _ in 1..taken {
                last = NonNull::new_unchecked(link::next(last));
            }
            slot.head = link::next(last);
            link::set(last, core::ptr::null_mut());
        }
        slot.count -= taken;
        self.transfer_bytes -= taken as usize * block_bytes;
        Some((first, taken))
    }

    /// Frees a block of this heap.
    ///
    /// # Safety
    /// `block` is a live block of the core heap, not used after this call.
    #[inline]
    pub(crate) unsafe fn free(&mut self, block: NonNull<u8>) {
        // SAFETY: forwarded from the caller.
        let bytes = unsafe { Heap::usable_size(block) };
        // SAFETY: forwarded from the caller.
        unsafe { self.heap.free(block) };
        self.freed_since_trim += bytes;
        self.freed_idle += bytes;
        if self.freed_since_trim >= TRIM_EVERY {
            self.trim(TRIM_MIN_SPAN);
        } else if self.freed_idle >= self.idle_trim_at {
            self.free_batches();
            self.trim(IDLE_MIN_SPAN);
            self.idle_trimmed = true;
        }
    }

    /// Whether an idle trim ran since the last call (the arena then releases its slabs'
    /// spare slots too).
    pub(crate) fn take_idle_trimmed(&mut self) -> bool {
        core::mem::take(&mut self.idle_trimmed)
    }

    /// Frees every transfer batch's blocks into the heap (an idle heap's: nobody will take
    /// them, and freed they coalesce and their pages can be given back).
    #[cold]
    fn free_batches(&mut self) {
        for class in 0..CLASS_SLOTS {
            let mut at = core::mem::replace(&mut self.transfer[class], Batch::EMPTY).head;
            while let Some(block) = NonNull::new(at) {
                // SAFETY: a batch's blocks are live heap blocks linked through their first
                // words, ours to free.
                unsafe {
                    at = link::next(block);
                    self.heap.free(block);
                }
            }
        }
        self.transfer_bytes = 0;
    }

    /// Gives the whole pages of the heap's unused spans of at least `min_span` bytes back to
    /// the OS.
    #[cold]
    fn trim(&mut self, min_span: usize) {
        self.freed_since_trim = 0;
        self.freed_idle = 0;
        let mut trimmed = 0;
        self.heap.for_each_unused_span(|start, len| {
            if len < min_span {
                return;
            }
            let addr = start.as_ptr().addr();
            let Some(first) = os::round_to_pages(addr) else {
                return;
            };
            let end = (addr + len) & !(os::PAGE - 1);
            if first < end {
                // SAFETY: the pages lie inside a free chunk's unused span, in a committed
                // segment, and the heap keeps nothing there; the lock is held, so no block is
                // carved from them before the call returns.
                unsafe { os::discard(start.add(first - addr), end - first) };
                trimmed += end - first;
            }
        });
        bump(&COUNTERS.trims);
        add(&COUNTERS.trimmed_bytes, trimmed);
    }

    /// Resizes a block in place to hold `new_size` bytes. Returns whether it could.
    ///
    /// # Safety
    /// `block` is a live block of the core heap.
    pub(crate) unsafe fn resize_in_place(&mut self, block: NonNull<u8>, new_size: usize) -> bool {
        // SAFETY: `block` is live (the caller's promise); both calls resize it in place only.
        unsafe {
            if new_size > Heap::usable_size(block) {
                self.heap.try_grow_in_place(block, new_size).is_ok()
            } else {
                self.heap.try_shrink_in_place(block, new_size).is_ok()
            }
        }
    }

    /// Commits (and if needed reserves) enough memory for `layout`. When the kernel refuses,
    /// the caller gives back the address space reserved but unused everywhere (see
    /// [`crate::thread::make_room`]) and tries once more.
    fn grow_for(&mut self, layout: Layout) -> Option<()> {
        let needed = layout
            .size()
            .checked_add(layout.align())?
            .checked_add(REGION_OVERHEAD)?;
        let step = os::round_to_pages(needed.max(MIN_COMMIT).max(self.committed_total / 8))?;
        if self.commit_in_newest(step) {
            return Some(());
        }
        self.start_reservation(step)
    }

    /// Commits `step` more bytes of the newest reservation and extends its region.
    fn commit_in_newest(&mut self, step: usize) -> bool {
        let Some(newest) = self.newest.as_mut() else {
            return false;
        };
        if newest.reserved - newest.committed < step {
            return false;
        }
        // SAFETY: the range lies inside the reservation, past its committed prefix.
        let start = unsafe { newest.base.add(newest.committed) };
        // SAFETY: the reservation is ours and the range is not yet in use.
        if !unsafe { os::commit(start, step) } {
            return false;
        }
        let new_size = newest.committed + step;
        // SAFETY: `[base, base + new_size)` is committed, owned by the heap alone, and `base` is
        // the pointer the region was claimed with.
        if unsafe { self.heap.extend(newest.base.as_ptr(), new_size) }.is_err() {
            return false;
        }
        newest.committed = new_size;
        self.note_committed(step);
        true
    }

    /// Reserves a new range of address space and claims its first `step` bytes. The range is
    /// [`RESERVATION`] bytes, or as much down to `step` as the address-space limit allows
    /// (halving each time it refuses). The newest reservation's unused tail goes first: it was
    /// too short for `step`, and only the newest is ever grown into.
    fn start_reservation(&mut self, step: usize) -> Option<()> {
        self.release_unused_tail();
        let least = step.checked_next_multiple_of(GRANULE)?;
        let mut reserved = least.max(RESERVATION);
        let base = loop {
            if let Some(base) = os::reserve_aligned(reserved, GRANULE) {
                break base;
            }
            if reserved == least {
                return None;
            }
            reserved = (reserved / 2).next_multiple_of(GRANULE).max(least);
        };
        // SAFETY: `base` starts a fresh reservation of `reserved >= step` bytes.
        let claimed = unsafe { os::commit(base, step) }
            // SAFETY: the committed range is ours alone; the mapping's pointer covers it.
            && unsafe { self.heap.claim(base.as_ptr(), step) }.is_ok();
        if !claimed || !address_map::record(base.as_ptr().addr(), reserved, Some(self.arena)) {
            // SAFETY: the reservation was just made and nothing uses it.
            unsafe { os::unmap(base, reserved) };
            return None;
        }
        self.newest = Some(Reservation {
            base,
            committed: step,
            reserved,
        });
        bump(&COUNTERS.reservations);
        self.note_committed(step);
        Some(())
    }

    /// Unmaps the newest reservation's uncommitted tail past the granule its committed part
    /// ends in (the address map covers whole granules), and forgets it in the map.
    pub(crate) fn release_unused_tail(&mut self) {
        let Some(newest) = self.newest.as_mut() else {
            return;
        };
        let kept = newest.committed.next_multiple_of(GRANULE);
        if newest.reserved > kept {
            // SAFETY: the tail lies inside the reservation, past everything committed, and
            // nothing uses it.
            unsafe {
                let tail = newest.base.add(kept);
                os::unmap(tail, newest.reserved - kept);
                address_map::record(tail.as_ptr().addr(), newest.reserved - kept, None);
            }
            newest.reserved = kept;
        }
    }

    /// Counts `bytes` newly committed, for the statistics and [`CoreHeap::take_new_commits`].
    fn note_committed(&mut self, bytes: usize) {
        self.committed_total += bytes;
        self.new_commits += bytes;
        add(&COUNTERS.segment_bytes, bytes);
    }
}

/// The usable size of a live core-heap block, read from its header without the lock.
///
/// # Safety
/// `block` is a live block of the core heap (allocated, possibly sitting in a thread cache).
#[inline(always)]
pub(crate) unsafe fn usable_size(block: NonNull<u8>) -> usize {
    // SAFETY: `block` is a live block of the core heap; `Heap::usable_size` reads only its
    // header.
    unsafe { Heap::usable_size(block) }
}
