//! Statistics: event counters kept on the slow paths, printed at exit with `HEAPWORKS_STATS=1`.
//!
//! Invariants: counters only grow (relaxed atomics; a snapshot need not be consistent across
//! counters); the fast paths count nothing, so they cost nothing. The report is formatted into a
//! fixed stack buffer and written with `write(2)`: no stdio, no allocation.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicUsize, Ordering};

/// One counter per kind of slow-path event.
pub(crate) struct Counters {
    /// Thread caches refilled from the core heap.
    pub(crate) refills: AtomicUsize,
    /// Refills served by a transfer batch (blocks another flush left, not carved anew).
    pub(crate) batches_taken: AtomicUsize,
    /// Thread caches that sent blocks back to the core heap on overflow.
    pub(crate) flushes: AtomicUsize,
    /// Thread caches set up.
    pub(crate) caches_started: AtomicUsize,
    /// Thread caches emptied at thread exit.
    pub(crate) caches_retired: AtomicUsize,
    /// Requests served by the core heaps directly (medium sizes, alignment, dead threads).
    pub(crate) core_direct: AtomicUsize,
    /// Bytes committed to the core heap.
    pub(crate) segment_bytes: AtomicUsize,
    /// Address-space reservations made for the core heap.
    pub(crate) reservations: AtomicUsize,
    /// Times the core heap gave the unused pages of its free chunks back to the OS.
    pub(crate) trims: AtomicUsize,
    /// Bytes of free core-heap pages given back to the OS (a page may count more than once).
    pub(crate) trimmed_bytes: AtomicUsize,
    /// Medium requests the thread's medium cache could not serve.
    pub(crate) medium_from_core: AtomicUsize,
    /// Medium blocks the thread caches gave back to the core heap.
    pub(crate) medium_released: AtomicUsize,
    /// Times a thread's medium cache doubled its budget.
    pub(crate) medium_grown: AtomicUsize,
    /// Large mappings made for new blocks (blocks reused from a thread's slot are not counted:
    /// the fast paths count nothing).
    pub(crate) large_mapped: AtomicUsize,
    /// Large blocks served from the shared cache of freed mappings.
    pub(crate) large_reused: AtomicUsize,
    /// Large blocks resized with `mremap`.
    pub(crate) large_remaps: AtomicUsize,
    /// Large mappings returned to the OS.
    pub(crate) large_unmaps: AtomicUsize,
    /// Times the core heap's growth gave cached large mappings back to the OS.
    pub(crate) large_released_for_growth: AtomicUsize,
    /// Tiny slabs started in new address space.
    pub(crate) tiny_slabs: AtomicUsize,
    /// Empty tiny slabs whose pages were given back to the OS.
    pub(crate) tiny_discards: AtomicUsize,
    /// Flushed slot lists kept whole as their area's batches.
    pub(crate) slot_batches_given: AtomicUsize,
    /// Refills served by a batch of slots.
    pub(crate) slot_batches_taken: AtomicUsize,
    /// Times a refused mapping made the library give back address space it had reserved but
    /// not used (see [`crate::thread::make_room`]).
    pub(crate) room_made: AtomicUsize,
    /// Reallocations that stayed in place.
    pub(crate) realloc_in_place: AtomicUsize,
    /// Arenas claimed by starting threads (new or adopted after another thread's exit).
    pub(crate) arenas_adopted: AtomicUsize,
    /// Chains of blocks pushed onto another arena's remote list.
    pub(crate) remote_pushes: AtomicUsize,
    /// Blocks taken from remote lists and filed by their arena.
    pub(crate) remote_filed: AtomicUsize,
    /// Remote batches an owner took whole as its empty list.
    pub(crate) remote_batches_taken: AtomicUsize,
    /// Reallocations that moved the block.
    pub(crate) realloc_moved: AtomicUsize,
}

/// The process's counters.
pub(crate) static COUNTERS: Counters = Counters {
    refills: AtomicUsize::new(0),
    batches_taken: AtomicUsize::new(0),
    flushes: AtomicUsize::new(0),
    caches_started: AtomicUsize::new(0),
    caches_retired: AtomicUsize::new(0),
    core_direct: AtomicUsize::new(0),
    segment_bytes: AtomicUsize::new(0),
    reservations: AtomicUsize::new(0),
    trims: AtomicUsize::new(0),
    trimmed_bytes: AtomicUsize::new(0),
    medium_from_core: AtomicUsize::new(0),
    medium_released: AtomicUsize::new(0),
    medium_grown: AtomicUsize::new(0),
    large_mapped: AtomicUsize::new(0),
    large_reused: AtomicUsize::new(0),
    large_remaps: AtomicUsize::new(0),
    large_unmaps: AtomicUsize::new(0),
    large_released_for_growth: AtomicUsize::new(0),
    tiny_slabs: AtomicUsize::new(0),
    tiny_discards: AtomicUsize::new(0),
    slot_batches_given: AtomicUsize::new(0),
    slot_batches_taken: AtomicUsize::new(0),
    room_made: AtomicUsize::new(0),
    realloc_in_place: AtomicUsize::new(0),
    arenas_adopted: AtomicUsize::new(0),
    remote_pushes: AtomicUsize::new(0),
    remote_filed: AtomicUsize::new(0),
    remote_batches_taken: AtomicUsize::new(0),
    realloc_moved: AtomicUsize::new(0),
};

/// Adds one to `counter`.
/// Counters are kept only when they will be printed: one shared cache line written by every
/// thread's slow paths would be a contention point of its own.
#[inline]
pub(crate) fn bump(counter: &AtomicUsize) {
    add(counter, 1);
}

/// Adds one to `counter` whether or not statistics are asked for: for events rare enough
/// (a thread's start and exit) to cost nothing, which may come before the constructor has
/// read the environment.
pub(crate) fn bump_always(counter: &AtomicUsize) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Adds `amount` to `counter`.
#[inline]
pub(crate) fn add(counter: &AtomicUsize, amount: usize) {
    if crate::config::stats_at_exit() {
        counter.fetch_add(amount, Ordering::Relaxed);
    }
}

/// A fixed buffer that `write!` fills, dropping what does not fit: text formatted without
/// allocating (the report here, a panic's message in the `panic` module).
pub(crate) struct StackText {
    bytes: [u8; 2048],
    len: usize,
}

impl StackText {
    /// An empty buffer.
    pub(crate) const fn new() -> Self {
        StackText {
            bytes: [0; 2048],
            len: 0,
        }
    }

    /// Writes the text to descriptor `fd` with `write(2)`.
    pub(crate) fn write_to(&self, fd: libc::c_int) {
        crate::os::write_all(fd, &self.bytes[..self.len]);
    }
}

impl Write for StackText {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        let room = self.bytes.len() - self.len;
        let taken = text.len().min(room);
        self.bytes[self.len..self.len + taken].copy_from_slice(&text.as_bytes()[..taken]);
        self.len += taken;
        Ok(())
    }
}

/// The core heaps' bytes in use, free and managed, summed over the arenas.
pub(crate) struct HeapTotals {
    pub(crate) in_use: usize,
    pub(crate) free: usize,
    pub(crate) managed: usize,
}

/// Writes the report to stderr, with the core heaps' totals.
pub(crate) fn print_report(heaps: HeapTotals) {
    let mut text = StackText::new();
    // Writing into a StackText never fails.
    let _ = write_report(&mut text, heaps);
    text.write_to(crate::config::stats_fd());
}

fn write_report(out: &mut StackText, heaps: HeapTotals) -> fmt::Result {
    let HeapTotals {
        in_use,
        free,
        managed,
    } = heaps;
    let c = &COUNTERS;
    let get = |counter: &AtomicUsize| counter.load(Ordering::Relaxed);
    writeln!(
        out,
        "heapworks-malloc statistics (pid {})",
        crate::os::pid()
    )?;
    writeln!(
        out,
        "  core heaps: {} B in use (cached blocks included), {} B free, {} B managed",
        in_use, free, managed
    )?;
    writeln!(
        out,
        "  segments: {} B committed in {} reservations (mmap, no brk)",
        get(&c.segment_bytes),
        get(&c.reservations)
    )?;
    writeln!(
        out,
        "  trims: {} times, {} B of free pages given back (madvise)",
        get(&c.trims),
        get(&c.trimmed_bytes)
    )?;
    writeln!(
        out,
        "  thread caches: {} started, {} retired, {} refills ({} with a transfer batch), {} flushes; {} direct core-heap requests",
        get(&c.caches_started),
        get(&c.caches_retired),
        get(&c.refills),
        get(&c.batches_taken),
        get(&c.flushes),
        get(&c.core_direct)
    )?;
    writeln!(
        out,
        "  medium blocks: {} requests served by the core heaps, {} cached blocks given back, {} budget doublings",
        get(&c.medium_from_core),
        get(&c.medium_released),
        get(&c.medium_grown)
    )?;
    writeln!(
        out,
        "  large blocks: {} mapped, {} reused from the shared cache, {} mremaps, {} unmaps ({} times cached ones made way for heap growth)",
        get(&c.large_mapped),
        get(&c.large_reused),
        get(&c.large_remaps),
        get(&c.large_unmaps),
        get(&c.large_released_for_growth)
    )?;
    writeln!(
        out,
        "  tiny slabs: {} started, {} emptied and given back, {} flushed lists kept as batches, {} refills from them (16 KiB slabs of 16 to 384 B slots)",
        get(&c.tiny_slabs),
        get(&c.tiny_discards),
        get(&c.slot_batches_given),
        get(&c.slot_batches_taken)
    )?;
    writeln!(
        out,
        "  address space: {} times unused reservations given back after a refused mapping",
        get(&c.room_made)
    )?;
    writeln!(
        out,
        "  arenas: {} claimed by starting threads, {} chains of remote frees pushed, {} blocks filed from them, {} taken whole as a list",
        get(&c.arenas_adopted),
        get(&c.remote_pushes),
        get(&c.remote_filed),
        get(&c.remote_batches_taken)
    )?;
    writeln!(
        out,
        "  realloc: {} in place, {} moved",
        get(&c.realloc_in_place),
        get(&c.realloc_moved)
    )
}
