//! Shadow-model testing of a C malloc through its API ([`CApi`]): the C layer's fuzz target
//! runs it against heapworks-malloc linked in-process, and the tests here against the C
//! library's malloc.
//!
//! A [`MallocModel`] applies [`MallocOp`]s and keeps a shadow of every live block. After each
//! call it verifies what a C program relies on:
//! - every block is non-NULL, aligned to 16 bytes and as asked, its `malloc_usable_size` is at
//!   least the size asked for and stays the same while the block lives, and its usable bytes
//!   overlap no other live block's;
//! - contents survive: a block's usable bytes carry its id's pattern (all of them up to
//!   [`FULLY_PATTERNED_MAX`]; above, the first and last 4 KiB and 16 bytes of every 4 KiB
//!   between, enough to see a lost or misplaced page at a cost that does not grow with the
//!   bytes), verified before every free and realloc, and across a realloc up to the smaller of
//!   the old and new requested sizes;
//! - `calloc`'s bytes are zero (the same bytes are checked);
//! - every request within the bound below succeeds; impossible ones fail with NULL and `ENOMEM`
//!   or `EINVAL` as the contract says (`posix_memalign` leaving `*memptr` untouched) and leave
//!   the block they name intact; the frees leave errno alone;
//! - calls run on one of [`THREADS`] threads, as the operations switch, strictly one at a time
//!   (see the `threads` module; `malloc_usable_size`, a query, runs on the model's), so blocks are freed
//!   and reallocated on threads other than the one that allocated them, and workers exit
//!   holding whatever their caches hold, some freeing blocks and allocating in a destructor
//!   that runs after the malloc's own (see `exit_work`).
//!
//! Invariants: the requested bytes of the live blocks never exceed [`LIVE_BYTES_MAX`] (a
//! request that would pass it is skipped), so a run stays within a fuzzer's memory limit;
//! [`MallocModel::finish`] frees every block and retires the workers, so runs are independent.

mod exit_work;
mod ops;
mod threads;

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::ops::Range;
use std::ptr::NonNull;

use exit_work::EXIT_FREES_MAX;
pub use ops::{EdgeCase, Entry, MallocOp, Resize};
pub use threads::THREADS;
use threads::{Call, Outcome, Threads, ERRNO_UNSET, MEMPTR_UNSET};

use crate::{fill, verify};

/// The most requested bytes live at once.
pub const LIVE_BYTES_MAX: usize = 64 << 20;
/// Blocks up to this size carry their pattern in every byte.
pub const FULLY_PATTERNED_MAX: usize = 64 << 10;
/// The alignment of every block (`alignof(max_align_t)` on x86-64).
const MALLOC_ALIGN: usize = 16;
const PAGE: usize = 4096;
/// Bytes of pattern at the start of each page inside a large block.
const PAGE_SAMPLE: usize = 16;

/// A C malloc's entry points.
#[derive(Clone, Copy)]
pub struct CApi {
    pub malloc: unsafe extern "C" fn(usize) -> *mut c_void,
    pub calloc: unsafe extern "C" fn(usize, usize) -> *mut c_void,
    pub realloc: unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void,
    pub reallocarray: unsafe extern "C" fn(*mut c_void, usize, usize) -> *mut c_void,
    pub free: unsafe extern "C" fn(*mut c_void),
    pub free_sized: unsafe extern "C" fn(*mut c_void, usize),
    pub free_aligned_sized: unsafe extern "C" fn(*mut c_void, usize, usize),
    pub posix_memalign: unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> c_int,
    pub aligned_alloc: unsafe extern "C" fn(usize, usize) -> *mut c_void,
    pub memalign: unsafe extern "C" fn(usize, usize) -> *mut c_void,
    pub valloc: unsafe extern "C" fn(usize) -> *mut c_void,
    pub pvalloc: unsafe extern "C" fn(usize) -> *mut c_void,
    pub malloc_usable_size: unsafe extern "C" fn(*mut c_void) -> usize,
}

/// Which free a block may be given to with its size (C23): `free_sized` for blocks of
/// `malloc`, `calloc` and `realloc`, `free_aligned_sized` for `aligned_alloc`'s, neither for
/// the other aligned entry points'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Plain,
    AlignedAlloc { align: usize },
    OtherAligned,
}

/// A live block in the shadow.
#[derive(Debug, Clone, Copy)]
struct LiveBlock {
    addr: usize,
    /// The bytes asked for.
    size: usize,
    /// `malloc_usable_size` when it was admitted; its pattern covers these bytes.
    usable: usize,
    id: u64,
    origin: Origin,
    /// The serial number of the thread that allocated it (or last reallocated it).
    thread: u64,
}

impl LiveBlock {
    fn ptr(&self) -> NonNull<u8> {
        NonNull::new(std::ptr::with_exposed_provenance_mut(self.addr)).expect("a block is not NULL")
    }
}

/// What a run did, for tests that want to see the work was real.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct MallocTally {
    pub allocations: u64,
    pub calloc_allocations: u64,
    pub aligned_allocations: u64,
    pub frees: u64,
    pub sized_frees: u64,
    pub reallocs: u64,
    pub reallocs_moved: u64,
    /// Frees and reallocs of a block on another thread than the one that allocated it.
    pub cross_thread_releases: u64,
    /// Workers that exited after freeing blocks (so, in a malloc with thread caches, holding
    /// cached blocks).
    pub workers_retired_with_frees: u64,
    /// Workers that freed blocks and ran probes in an exit destructor.
    pub exits_with_work: u64,
    /// Blocks freed by those destructors (counted in `frees` too).
    pub exit_frees: u64,
    pub edge_cases: u64,
    pub skipped_over_bound: u64,
    pub peak_live_bytes: usize,
    /// The largest block admitted, in requested bytes.
    pub largest_block: usize,
}

/// A malloc, the threads its calls run on, and the shadow of its live blocks.
pub struct MallocModel {
    threads: Threads,
    live: Vec<LiveBlock>,
    /// Live blocks by start address → end of their usable bytes, for overlap checks.
    spans: BTreeMap<usize, usize>,
    live_bytes: usize,
    next_id: u64,
    /// Per thread: whether it freed a block since its worker started.
    freed_since_start: [bool; THREADS],
    pub tally: MallocTally,
}

impl MallocModel {
    pub fn new(api: CApi) -> MallocModel {
        MallocModel {
            threads: Threads::new(api),
            live: Vec::new(),
            spans: BTreeMap::new(),
            live_bytes: 0,
            next_id: 1,
            freed_since_start: [false; THREADS],
            tally: MallocTally::default(),
        }
    }

    /// The number of live blocks.
    pub fn live_blocks(&self) -> usize {
        self.live.len()
    }

    /// Runs one operation and verifies its outcome.
    pub fn apply(&mut self, op: MallocOp) {
        match op {
            MallocOp::Allocate { size, entry } => self.allocate(size, entry),
            MallocOp::Free { slot, sized } => {
                if let Some(index) = self.index_of(slot) {
                    self.free_at(index, sized);
                }
            }
            MallocOp::Realloc { slot, resize } => self.realloc(slot, resize),
            MallocOp::ReallocArray { slot, count, size } => self.realloc_array(slot, count, size),
            MallocOp::Switch { thread } => self.threads.switch_to(thread),
            MallocOp::Retire {
                thread,
                exit_work,
                exit_frees,
                slot,
            } => {
                if exit_work {
                    self.give_exit_work(thread, exit_frees, slot);
                }
                self.retire(thread);
            }
            MallocOp::Edge { case, slot } => self.edge(case, slot),
            MallocOp::AllocateMany { size, count } => self.allocate_many(size, count),
            MallocOp::FreeMany { slot, count } => self.free_many(slot, count),
        }
    }

    /// Frees every live block (verifying each) on the current thread, retires the workers, and
    /// returns what the run did.
    pub fn finish(mut self) -> MallocTally {
        while let Some(last) = self.live.len().checked_sub(1) {
            self.free_at(last, false);
        }
        for thread in 1..THREADS {
            self.retire(thread);
        }
        self.tally
    }

    fn allocate(&mut self, size: usize, entry: Entry) {
        let (call, requested, align, origin) = match entry {
            Entry::Malloc => (Call::Malloc { size }, size, 1, Origin::Plain),
            Entry::Calloc { count } => {
                let each = size / count;
                let call = Call::Calloc { count, size: each };
                (call, count * each, 1, Origin::Plain)
            }
            Entry::ReallocNull => (Call::Realloc { addr: 0, size }, size, 1, Origin::Plain),
            Entry::PosixMemalign { align_log2 } => {
                let align = (1 << align_log2).max(std::mem::size_of::<usize>());
                let call = Call::PosixMemalign { align, size };
                (call, size, align, Origin::OtherAligned)
            }
            Entry::AlignedAlloc { align_log2 } => {
                let align = 1 << align_log2;
                let call = Call::AlignedAlloc { align, size };
                (call, size, align, Origin::AlignedAlloc { align })
            }
            Entry::Memalign { align_log2 } => {
                let align = 1 << align_log2;
                let call = Call::Memalign { align, size };
                (call, size, align, Origin::OtherAligned)
            }
            Entry::Valloc => (Call::Valloc { size }, size, PAGE, Origin::OtherAligned),
            Entry::Pvalloc => {
                let rounded = size.next_multiple_of(PAGE);
                (Call::Pvalloc { size }, rounded, PAGE, Origin::OtherAligned)
            }
        };
        if !self.has_room_for(requested) {
            self.tally.skipped_over_bound += 1;
            return;
        }
        let outcome = self.threads.call(call);
        if let Call::PosixMemalign { .. } = call {
            assert_eq!(outcome.status, 0, "{call:?} failed");
        }
        let zeroed = matches!(entry, Entry::Calloc { .. });
        self.admit_new(call, outcome, requested, align, origin, zeroed);
    }

    /// `count` `malloc`s of `size` in one batch, as many as the bound allows.
    fn allocate_many(&mut self, size: usize, count: usize) {
        let room = LIVE_BYTES_MAX - self.live_bytes;
        let fitting = count.min(room.checked_div(size).unwrap_or(count));
        self.tally.skipped_over_bound += (count - fitting) as u64;
        let call = Call::Malloc { size };
        let outcomes = self.threads.call_all(vec![call; fitting]);
        for outcome in outcomes {
            self.admit_new(call, outcome, size, 1, Origin::Plain, false);
        }
    }

    /// Records the block `call` returned (`outcome`), which must have succeeded.
    fn admit_new(
        &mut self,
        call: Call,
        outcome: Outcome,
        requested: usize,
        align: usize,
        origin: Origin,
        zeroed: bool,
    ) {
        self.assert_served(call, outcome.value, outcome.errno);
        let block = LiveBlock {
            addr: outcome.value,
            size: requested,
            usable: 0,
            id: self.new_id(),
            origin,
            thread: self.threads.current_serial(),
        };
        self.admit(block, align, zeroed, call);
        self.tally.allocations += 1;
        self.tally.calloc_allocations += u64::from(zeroed);
        self.tally.aligned_allocations += u64::from(origin != Origin::Plain);
    }

    fn realloc(&mut self, slot: usize, resize: Resize) {
        let Some(index) = self.index_of(slot) else {
            return;
        };
        let block = self.live[index];
        let size = match resize {
            Resize::To(size) => size,
            Resize::Scale { eighths, extra } => block.size * eighths / 8 + extra,
        };
        self.resize(
            index,
            Call::Realloc {
                addr: block.addr,
                size,
            },
        );
    }

    fn realloc_array(&mut self, slot: usize, count: usize, size: usize) {
        let Some(index) = self.index_of(slot) else {
            return;
        };
        let addr = self.live[index].addr;
        let each = size / count;
        self.resize(
            index,
            Call::ReallocArray {
                addr,
                count,
                size: each,
            },
        );
    }

    /// Reallocates the block at `index` with `call` (a `realloc` or a `reallocarray` that
    /// cannot overflow) and verifies that its contents moved with it.
    fn resize(&mut self, index: usize, call: Call) {
        let new_size = match call {
            Call::Realloc { size, .. } => size,
            Call::ReallocArray { count, size, .. } => count * size,
            _ => unreachable!("resize takes a realloc, not {call:?}"),
        };
        let old_size = self.live[index].size;
        if new_size > old_size && !self.has_room_for(new_size - old_size) {
            self.tally.skipped_over_bound += 1;
            return;
        }
        let block = self.take(index, "realloc");
        let outcome = self.threads.call(call);
        self.note_release(&block);
        if new_size == 0 && outcome.value == 0 {
            // glibc's `realloc(p, 0)`: `p` is freed.
            self.tally.frees += 1;
            return;
        }
        self.assert_served(call, outcome.value, outcome.errno);
        self.tally.reallocs += 1;
        self.tally.reallocs_moved += u64::from(outcome.value != block.addr);
        let moved = LiveBlock {
            addr: outcome.value,
            size: new_size,
            origin: Origin::Plain,
            thread: self.threads.current_serial(),
            ..block
        };
        let kept = block.size.min(new_size);
        for range in patterned(block.usable) {
            let range = range.start.min(kept)..range.end.min(kept);
            verify(moved.ptr(), range, block.id, "after realloc");
        }
        self.admit(moved, 1, false, call);
    }

    fn free_at(&mut self, index: usize, sized: bool) {
        let (block, call) = self.take_for_free(index, sized);
        let outcome = self.threads.call(call);
        self.note_free(&block, call, outcome);
    }

    /// Frees of up to `count` blocks, each from `slot`, in one batch.
    fn free_many(&mut self, slot: usize, count: usize) {
        let mut blocks = Vec::new();
        let mut calls = Vec::new();
        for _ in 0..count {
            let Some(index) = self.index_of(slot) else {
                break;
            };
            let (block, call) = self.take_for_free(index, false);
            blocks.push(block);
            calls.push(call);
        }
        let outcomes = self.threads.call_all(calls.clone());
        for ((block, call), outcome) in blocks.iter().zip(calls).zip(outcomes) {
            self.note_free(block, call, outcome);
        }
    }

    /// Takes the block at `index` out of the shadow (checked intact) and names the free for it:
    /// with `sized`, the sized free its origin allows.
    fn take_for_free(&mut self, index: usize, sized: bool) -> (LiveBlock, Call) {
        let block = self.take(index, "free");
        let addr = block.addr;
        let call = match (sized, block.origin) {
            (true, Origin::Plain) => Call::FreeSized {
                addr,
                size: block.size,
            },
            (true, Origin::AlignedAlloc { align }) => Call::FreeAlignedSized {
                addr,
                align,
                size: block.size,
            },
            _ => Call::Free { addr },
        };
        (block, call)
    }

    /// Checks a free's outcome (errno kept) and counts it.
    fn note_free(&mut self, block: &LiveBlock, call: Call, outcome: Outcome) {
        assert_eq!(outcome.errno, ERRNO_UNSET, "{call:?} changed errno");
        self.note_release(block);
        self.tally.frees += 1;
        self.tally.sized_frees += u64::from(!matches!(call, Call::Free { .. }));
    }

    fn retire(&mut self, thread: usize) {
        if self.threads.retire(thread) && std::mem::take(&mut self.freed_since_start[thread]) {
            self.tally.workers_retired_with_frees += 1;
        }
    }

    /// Hands worker `thread`, if it runs, up to `count` blocks from `slot` on to free in its
    /// exit destructor, which also runs probes.
    fn give_exit_work(&mut self, thread: usize, count: usize, slot: usize) {
        if !self.threads.is_running(thread) {
            return;
        }
        let serial = self.threads.serial_of(thread);
        let mut frees = [0; EXIT_FREES_MAX];
        for addr in frees.iter_mut().take(count) {
            let Some(index) = self.index_of(slot) else {
                break;
            };
            let block = self.take(index, "free at thread exit");
            *addr = block.addr;
            self.freed_since_start[thread] = true;
            self.tally.cross_thread_releases += u64::from(block.thread != serial);
            self.tally.exit_frees += 1;
            self.tally.frees += 1;
        }
        let previous = self.threads.current();
        self.threads.switch_to(thread);
        self.threads.call(Call::AtExit { frees });
        self.threads.switch_to(previous);
        self.tally.exits_with_work += 1;
    }

    fn edge(&mut self, case: EdgeCase, slot: usize) {
        self.tally.edge_cases += 1;
        let index = self.index_of(slot);
        let addr = index.map_or(0, |index| self.live[index].addr);
        match case {
            EdgeCase::FreeNull => {
                let outcome = self.threads.call(Call::Free { addr: 0 });
                assert_eq!(outcome.errno, ERRNO_UNSET, "free(NULL) changed errno");
            }
            EdgeCase::MallocTooLarge => self.expect_failure(Call::Malloc {
                size: usize::MAX - slot,
            }),
            EdgeCase::CallocOverflow => self.expect_failure(Call::Calloc {
                count: (usize::MAX >> 1) + 1 + slot,
                size: 2,
            }),
            EdgeCase::ReallocTooLarge => self.expect_failure(Call::Realloc {
                addr,
                size: isize::MAX as usize + 1 + slot,
            }),
            EdgeCase::ReallocArrayOverflow => self.expect_failure(Call::ReallocArray {
                addr,
                count: usize::MAX / 2,
                size: 3 + slot % 5,
            }),
            EdgeCase::PosixMemalignBadAlign => {
                let align = [0, 4, 24, 48, 3 << 20][slot % 5];
                self.expect_posix_memalign_failure(align, 64, libc::EINVAL);
            }
            EdgeCase::PosixMemalignTooLarge => {
                self.expect_posix_memalign_failure(64, usize::MAX - 4095 - slot, libc::ENOMEM);
            }
            EdgeCase::MemalignBadAlign => {
                let call = Call::Memalign {
                    align: (usize::MAX >> 1) + 2 + slot,
                    size: 64,
                };
                let outcome = self.threads.call(call);
                assert_eq!(outcome.value, 0, "{call:?} succeeded");
                assert_eq!(
                    outcome.errno,
                    libc::EINVAL,
                    "{call:?} failed with another errno"
                );
            }
            EdgeCase::PvallocTooLarge => self.expect_failure(Call::Pvalloc {
                size: usize::MAX - slot,
            }),
            EdgeCase::AlignedAllocTooLarge => self.expect_failure(Call::AlignedAlloc {
                align: 64,
                size: usize::MAX - 4095 - slot,
            }),
            EdgeCase::UsableSizeNull => assert_eq!(self.usable_size(0), 0),
            EdgeCase::ReallocToZero => {
                if let Some(index) = index {
                    self.resize(index, Call::Realloc { addr, size: 0 });
                }
            }
        }
        if let (Some(index), EdgeCase::ReallocTooLarge | EdgeCase::ReallocArrayOverflow) =
            (index, case)
        {
            let block = self.live[index];
            self.check_intact(&block, "a failed realloc");
        }
    }

    /// Makes `call`, which must fail with NULL and `ENOMEM`.
    fn expect_failure(&mut self, call: Call) {
        let outcome = self.threads.call(call);
        assert_eq!(outcome.value, 0, "{call:?} succeeded");
        assert_eq!(
            outcome.errno,
            libc::ENOMEM,
            "{call:?} failed with another errno"
        );
    }

    /// Makes a `posix_memalign` that must fail with `status` and leave `*memptr` alone.
    fn expect_posix_memalign_failure(&mut self, align: usize, size: usize, status: c_int) {
        let call = Call::PosixMemalign { align, size };
        let outcome = self.threads.call(call);
        assert_eq!(outcome.status, status, "{call:?}");
        assert_eq!(outcome.value, MEMPTR_UNSET, "{call:?} wrote *memptr");
    }

    /// Panics unless `call` returned a block: every request within the bound must be served.
    fn assert_served(&self, call: Call, addr: usize, errno: c_int) {
        assert_ne!(
            addr,
            0,
            "{call:?} failed (errno {errno}) with {} bytes in {} blocks live",
            self.live_bytes,
            self.live.len()
        );
    }

    /// Verifies a new block's placement, checks it is zeroed if it must be, fills it with its
    /// pattern and records it.
    fn admit(&mut self, mut block: LiveBlock, align: usize, zeroed: bool, call: Call) {
        let start = block.addr;
        let align = align.max(MALLOC_ALIGN);
        assert_eq!(
            start % align,
            0,
            "{call:?} returned {start:#x}, not {align}-aligned"
        );
        block.usable = self.usable_size(start);
        assert!(
            block.usable >= block.size,
            "{call:?} returned {start:#x} with {} usable bytes",
            block.usable
        );
        let end = start
            .checked_add(block.usable.max(1))
            .expect("a block's usable bytes end below the top of memory");
        if let Some((&prev_start, &prev_end)) = self.spans.range(..=start).next_back() {
            assert!(
                prev_end <= start,
                "{call:?} returned {start:#x}..{end:#x}, inside {prev_start:#x}..{prev_end:#x}"
            );
        }
        if let Some((&next_start, &next_end)) = self.spans.range(start..).next() {
            assert!(
                end <= next_start,
                "{call:?} returned {start:#x}..{end:#x}, over {next_start:#x}..{next_end:#x}"
            );
        }
        if zeroed {
            assert_zeroed(block.ptr(), block.size, call);
        }
        for range in patterned(block.usable) {
            fill(block.ptr(), range, block.id);
        }
        self.spans.insert(start, end);
        self.live.push(block);
        self.live_bytes += block.size;
        self.tally.peak_live_bytes = self.tally.peak_live_bytes.max(self.live_bytes);
        self.tally.largest_block = self.tally.largest_block.max(block.size);
    }

    /// Removes the block at `index` from the shadow after checking it is intact.
    fn take(&mut self, index: usize, when: &str) -> LiveBlock {
        let block = self.live.swap_remove(index);
        self.spans.remove(&block.addr);
        self.live_bytes -= block.size;
        self.check_intact(&block, when);
        block
    }

    /// Panics unless `block`'s usable size is unchanged and its pattern intact.
    fn check_intact(&mut self, block: &LiveBlock, when: &str) {
        let usable = self.usable_size(block.addr);
        assert_eq!(
            usable, block.usable,
            "block {} at {:#x}: usable size changed (before {when})",
            block.id, block.addr
        );
        for range in patterned(block.usable) {
            verify(block.ptr(), range, block.id, when);
        }
    }

    /// Counts a free or realloc of `block` on the current thread.
    fn note_release(&mut self, block: &LiveBlock) {
        self.freed_since_start[self.threads.current()] = true;
        self.tally.cross_thread_releases +=
            u64::from(block.thread != self.threads.current_serial());
    }

    fn usable_size(&self, addr: usize) -> usize {
        self.threads.call_here(Call::UsableSize { addr }).value
    }

    fn has_room_for(&self, bytes: usize) -> bool {
        bytes <= LIVE_BYTES_MAX - self.live_bytes
    }

    fn index_of(&self, slot: usize) -> Option<usize> {
        (!self.live.is_empty()).then(|| slot % self.live.len())
    }

    fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }
}

/// The byte ranges of a block of `len` bytes that carry its pattern (see the module's doc).
fn patterned(len: usize) -> impl Iterator<Item = Range<usize>> {
    let sampled = len > FULLY_PATTERNED_MAX;
    let (head, middle, tail) = if sampled {
        (0..PAGE, PAGE..len - PAGE, len - PAGE..len)
    } else {
        (0..len, 0..0, len..len)
    };
    let samples = middle
        .step_by(PAGE)
        .map(|offset| offset..offset + PAGE_SAMPLE);
    std::iter::once(head)
        .chain(samples)
        .chain(std::iter::once(tail))
}

/// Panics unless the patterned bytes of the first `len` of `ptr`'s are zero.
fn assert_zeroed(ptr: NonNull<u8>, len: usize, call: Call) {
    for range in patterned(len) {
        // SAFETY: the block holds at least `len` bytes, so the range, and calloc initialized
        // them.
        let bytes =
            unsafe { std::slice::from_raw_parts(ptr.as_ptr().add(range.start), range.len()) };
        if let Some(offset) = bytes.iter().position(|&byte| byte != 0) {
            panic!("{call:?}: byte {} is not zero", range.start + offset);
        }
    }
}

#[cfg(test)]
mod tests;
