//! Secure mode (`HEAPWORKS_SECURE=1`): every free is validated, wiped and held back before
//! its memory serves again.
//!
//! What it does, beyond the default build's checks:
//! - **Every free takes the slow path**: the thread caches' lists become stashes of blocks to
//!   hand out, whose room is biased so that `free`'s fast path always refuses (see
//!   `tcache::SECURE_EMPTY`); `malloc`'s fast path pops from them as usual. The fast paths'
//!   code is unchanged, so the default build pays nothing for this mode.
//! - **Validation before anything is written**: a slot must start a slot of its slab; a heap
//!   block must pass the core's `Heap::validate` (in one of the heap's regions, on a payload
//!   boundary, in use, its header and its neighbour's consistent: a double free after the
//!   quarantine, and overflows into a header, are caught there).
//! - **Zero on free, then quarantine**: a freed block's bytes are zeroed, its second word set to
//!   a per-process random secret ([`secret`]), and it waits in a FIFO of at most
//!   [`QUARANTINE_BLOCKS`] blocks and [`QUARANTINE_BYTES`] bytes. A second free while it waits
//!   finds the secret (a double free); when it leaves, any byte that is no longer zero is a
//!   write after free (or an overflow from a neighbour), reported before the block serves
//!   again; it then joins the freeing thread's stash (marked, so a free of it is a double free)
//!   or goes back to its slab or the central heap.
//! - **Slabs**: a slab's slots are handed out in a random order, every free-list link a refill
//!   follows is checked to stay in its slab, and emptied slabs stay resident (see
//!   [`crate::tiny`]).
//! - **Large blocks**: end against a guard page (an overflow faults at once), are never reused
//!   or resized in place, and when freed are made inaccessible but for their header page and
//!   held in a ring of 16 before they are unmapped (a second free is caught, a use faults).
//!
//! Invariants: the quarantine's lock is never held while another is taken (a block leaving it
//! is handed back after the lock is released), so it adds no lock order; the fork handlers take
//! it last. A block in the quarantine is allocated in its owner's (the heap's or the slabs')
//! eyes, zero but for the secret in its second word.

use core::ptr::NonNull;

use crate::config::secret;
use crate::lock::SpinLock;
use crate::{central, fault, tiny};

/// Blocks the quarantine holds at most.
pub(crate) const QUARANTINE_BLOCKS: usize = 1024;
/// Bytes the quarantine holds at most.
pub(crate) const QUARANTINE_BYTES: usize = 4 << 20;

/// A block waiting in the quarantine.
#[derive(Clone, Copy)]
struct Held {
    block: *mut u8,
    bytes: usize,
}

/// The FIFO of freed blocks: a ring of `count` entries from `first`.
struct Quarantine {
    ring: [Held; QUARANTINE_BLOCKS],
    first: usize,
    count: usize,
    bytes: usize,
}

// SAFETY: the ring names blocks owned by the allocator; nothing ties them to a thread.
unsafe impl Send for Quarantine {}

static QUARANTINE: SpinLock<Quarantine> = SpinLock::new(Quarantine {
    ring: [Held {
        block: core::ptr::null_mut(),
        bytes: 0,
    }; QUARANTINE_BLOCKS],
    first: 0,
    count: 0,
    bytes: 0,
});

impl Quarantine {
    /// Adds a block; returns the oldest when the ring or the byte bound is over its limit.
    fn hold(&mut self, held: Held) -> Option<Held> {
        let released = if self.count == QUARANTINE_BLOCKS
            || (self.count > 0 && self.bytes + held.bytes > QUARANTINE_BYTES)
        {
            let oldest = self.ring[self.first];
            self.first = (self.first + 1) % QUARANTINE_BLOCKS;
            self.count -= 1;
            self.bytes -= oldest.bytes;
            Some(oldest)
        } else {
            None
        };
        self.ring[(self.first + self.count) % QUARANTINE_BLOCKS] = held;
        self.count += 1;
        self.bytes += held.bytes;
        released
    }
}

/// Frees a small or medium block (a slot or a central-heap block) in secure mode: validates
/// it, catches a second free, zeroes it and holds it back. Returns the block that leaves the
/// quarantine for it, checked unwritten and its mark cleared, with its bytes: the caller
/// gives it back to its owner.
///
/// # Safety
/// `block` is what the program passed to `free`, not NULL, and not a large block.
pub(crate) unsafe fn free(block: NonNull<u8>) -> Option<(NonNull<u8>, usize)> {
    let bytes = match tiny::slot_bytes_of(block.as_ptr()) {
        Some(bytes) => {
            if !tiny::is_slot_start(block) {
                fault::invalid_pointer("free", block.as_ptr());
            }
            bytes
        }
        None => central::lock().validate(block, "free"),
    };
    // SAFETY: a valid block of `bytes >= 16` bytes (every block holds two words), which the
    // program gives up.
    unsafe {
        let mark = block.cast::<usize>().add(1);
        if mark.read() == secret() {
            fault::double_free(block.as_ptr(), bytes);
        }
        block.write_bytes(0, bytes);
        mark.write(secret());
    }
    let released = QUARANTINE.lock().hold(Held {
        block: block.as_ptr(),
        bytes,
    })?;
    // SAFETY: the block was held since it was freed, so it is still allocated.
    unsafe { Some((check_unwritten(released), released.bytes)) }
}

/// Aborts unless `block`, a small or medium block passed to `realloc`, is live: a slot's
/// start or a central-heap block, not waiting in the quarantine.
///
/// # Safety
/// `block` is not NULL and not a large block.
pub(crate) unsafe fn check_live(block: NonNull<u8>) {
    let bytes = match tiny::slot_bytes_of(block.as_ptr()) {
        Some(bytes) => {
            if !tiny::is_slot_start(block) {
                fault::invalid_pointer("realloc", block.as_ptr());
            }
            bytes
        }
        None => central::lock().validate(block, "realloc"),
    };
    // SAFETY: a valid block has a second word.
    if unsafe { block.cast::<usize>().add(1).read() } == secret() {
        fault::freed_block("realloc", block.as_ptr(), bytes);
    }
}

/// Checks that a block leaving the quarantine is as it was left (zero but for the secret in
/// its second word), reporting a write after free otherwise, and clears the secret.
///
/// # Safety
/// `held` left the quarantine: a valid block, freed by the program and held since.
unsafe fn check_unwritten(held: Held) -> NonNull<u8> {
    // SAFETY: `held.bytes` bytes of the block are ours to read and write.
    unsafe {
        let block = NonNull::new_unchecked(held.block);
        let words = core::slice::from_raw_parts(block.as_ptr().cast::<usize>(), held.bytes / 8);
        let clean = words
            .iter()
            .enumerate()
            .all(|(index, &word)| word == if index == 1 { secret() } else { 0 });
        if !clean {
            fault::written_after_free(block.as_ptr(), held.bytes);
        }
        block.cast::<usize>().add(1).write(0);
        block
    }
}

/// Holds the quarantine's lock across `fork` (prepare handler).
pub(crate) fn lock_for_fork() {
    QUARANTINE.lock_for_fork();
}

/// Releases the quarantine's lock after `fork`.
///
/// # Safety
/// Called only by the fork handlers, after [`lock_for_fork`].
pub(crate) unsafe fn unlock_after_fork() {
    // SAFETY: forwarded from the caller.
    unsafe { QUARANTINE.force_unlock() };
}
