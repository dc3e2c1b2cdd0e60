//! Arenas: the memory a thread owns. Each arena is a core heap (see [`crate::core_heap`]) and a
//! set of slabs (see [`crate::tiny`]) behind a lock of its own, plus a lock-free list of
//! blocks that threads other than its owner freed.
//!
//! A process's first thread claims a free arena when its cache starts; any later thread starts
//! on the [`STARTER`] arena, which nobody owns, and claims a free one once it has taken
//! [`OWN_AFTER_BYTES`] from it. A thread gives its arena up (abandons it, with every block
//! still in use in it) when it exits; the next thread to claim one adopts it, memory and
//! pending frees included, so a program that starts and ends threads reuses the same memory
//! rather than leaking it. Up to [`MAX_ARENAS`] threads own an arena each; threads beyond
//! share one, picked by their thread pointer (correct either way: every use of an arena takes
//! its lock, which for an owner alone is never contended, one atomic exchange).
//!
//! A block goes back to the arena it came from: under that arena's lock when the freeing
//! thread owns it, else onto its [`Arena::remote`] list, a stack pushed by compare-and-swap (a
//! whole chain at a time) and taken whole by one exchange by whoever next locks the arena
//! ([`lock`]), which then files each block (a slot back to its slab, a small block into its
//! class's transfer batch, any other into the core heap). No thread ever waits for another's
//! lock to free a block, and no lock is shared by all threads on a steady path.
//!
//! Invariants:
//! - Bit `a` of [`CLAIMED`] is set while a thread owns arena `a`; an owned arena is used only
//!   by its owner and by sharers (threads beyond `MAX_ARENAS`, and threads past their exit),
//!   always under its lock, and by remote pushes, never under it.
//! - Every block on an arena's remote list belongs to that arena (the address map or the slab
//!   table says so) and is allocated in its backend's eyes; the list is linked through the
//!   blocks' first words (mangled, see [`crate::link`]).
//! - The lock is held by the forking thread across `fork` for every arena in index order (see
//!   [`crate::fork`]); no arena's lock is taken while another's is held.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use crate::address_map;
use crate::core_heap::CoreHeap;
use crate::link;
use crate::lock::{SpinGuard, SpinLock};
use crate::size_class::{
    area_of_list, class_of_usable, list_block_bytes, LISTS, MAX_CLASS, MIN_CLASS,
};
use crate::stats::{bump, COUNTERS};
use crate::tiny::{self, Slabs};

/// Arenas in all: one per thread up to this many live threads (a bit each of [`CLAIMED`]).
pub(crate) const MAX_ARENAS: usize = 64;

/// What an arena's lock guards.
pub(crate) struct Backends {
    /// Core-heap blocks: small classes not served by slots, medium blocks, aligned ones.
    pub(crate) core: CoreHeap,
    /// The arena's slabs of slots.
    pub(crate) slabs: Slabs,
}

/// The remote stacks of an arena: one per thread-cache list (indexed by list; those below
/// `MIN_CLASS` unused), then [`REMOTE_MEDIUM`]'s.
const REMOTE_STACKS: usize = LISTS + 1;
/// The remote stack of medium blocks (those no thread-cache list holds).
pub(crate) const REMOTE_MEDIUM: usize = LISTS;

/// One arena.
pub(crate) struct Arena {
    backends: SpinLock<Backends>,
    /// Blocks of this arena freed by threads that do not own it, by the thread-cache list
    /// they join (medium blocks last): the owner takes a list's stack when that list is empty.
    remote: [AtomicPtr<u8>; REMOTE_STACKS],
    /// About how many bytes wait on the remote stacks (counted before a push, so never less).
    remote_bytes: AtomicUsize,
}

// SAFETY: the backends are reached only under the lock, the remote stacks by atomics.
unsafe impl Sync for Arena {}

static ARENAS: [Arena; MAX_ARENAS] = {
    let mut arenas = [const {
        Arena {
            backends: SpinLock::new(Backends {
                core: CoreHeap::new(0),
                slabs: Slabs::new(0),
            }),
            remote: [const { AtomicPtr::new(core::ptr::null_mut()) }; REMOTE_STACKS],
            remote_bytes: AtomicUsize::new(0),
        }
    }; MAX_ARENAS];
    let mut at = 0;
    while at < MAX_ARENAS {
        arenas[at] = Arena {
            backends: SpinLock::new(Backends {
                core: CoreHeap::new(at),
                slabs: Slabs::new(at),
            }),
            remote: [const { AtomicPtr::new(core::ptr::null_mut()) }; REMOTE_STACKS],
            remote_bytes: AtomicUsize::new(0),
        };
        at += 1;
    }
    arenas
};

/// The arena every thread starts on, owned by none (its bit is always set): a thread claims
/// one of its own once it has taken [`OWN_AFTER_BYTES`] from it (see [`crate::thread`]), so
/// threads that allocate little (a short-lived worker, a thread that only waits) share one
/// arena's memory instead of each leaving an arena's worth behind.
pub(crate) const STARTER: usize = MAX_ARENAS - 1;
/// What a thread takes from the starter arena before it claims one of its own.
pub(crate) const OWN_AFTER_BYTES: usize = 1 << 20;

/// Bit `a`: arena `a` is owned by a live thread (or is the starter arena).
static CLAIMED: AtomicU64 = AtomicU64::new(1 << STARTER);

/// An arena for a starting thread: a free one claimed for its own (`owned`), else a shared
/// one picked by `hint` (its thread pointer).
pub(crate) fn claim(hint: usize) -> (usize, bool) {
    let mut claimed = CLAIMED.load(Ordering::Relaxed);
    while claimed != u64::MAX {
        let free = (!claimed).trailing_zeros() as usize;
        match CLAIMED.compare_exchange_weak(
            claimed,
            claimed | 1 << free,
            Ordering::Acquire,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                bump(&COUNTERS.arenas_adopted);
                return (free, true);
            }
            Err(now) => claimed = now,
        }
    }
    (claim_shared(hint), false)
}

/// The arena a thread without an own one shares, picked by `hint` (its thread pointer).
pub(crate) fn claim_shared(hint: usize) -> usize {
    (hint >> 12) % MAX_ARENAS
}

/// Gives up the ownership of `arena` (its thread exits): its memory waits for the next thread
/// to claim it.
pub(crate) fn abandon(arena: usize) {
    CLAIMED.fetch_and(!(1 << arena), Ordering::Release);
}

/// After `fork`, in the child: only the forking thread's arena is owned (the other threads
/// are gone, and their arenas are free to adopt).
pub(crate) fn keep_only(arena: Option<usize>) {
    CLAIMED.store(
        arena.map_or(0, |arena| 1 << arena) | 1 << STARTER,
        Ordering::Relaxed,
    );
}

/// Locks `arena`; one that nobody owns (the starter arena, an abandoned one) first files the
/// blocks other threads freed into it meanwhile, since no owner will collect them.
pub(crate) fn lock(arena: usize) -> SpinGuard<'static, Backends> {
    let mut guard = ARENAS[arena].backends.lock();
    if !owned(arena) {
        file_remote_all(arena, &mut guard);
    }
    guard
}

/// Whether a live thread owns `arena` (never the starter arena).
fn owned(arena: usize) -> bool {
    arena != STARTER && CLAIMED.load(Ordering::Relaxed) & 1 << arena != 0
}

/// Takes `arena`'s remote stack `stack` (a thread-cache list, or [`REMOTE_MEDIUM`]) whole
/// (null: empty), a stack of batches (see [`read_batch`]): its blocks are the caller's to
/// reuse or file. The caller then says how many bytes it took ([`note_taken`]).
pub(crate) fn take_remote(arena: usize, stack: usize) -> *mut u8 {
    let remote = &ARENAS[arena].remote[stack];
    if remote.load(Ordering::Relaxed).is_null() {
        return core::ptr::null_mut();
    }
    remote.swap(core::ptr::null_mut(), Ordering::Acquire)
}

/// The bytes a block on remote stack `stack` counts for: its list's block size, or a medium
/// block's usable size (the same when it is pushed and when it is taken).
///
/// # Safety
/// `block` is a live block that joins list `stack`, or a medium block.
pub(crate) unsafe fn stack_bytes(stack: usize, block: NonNull<u8>) -> usize {
    if stack == REMOTE_MEDIUM {
        // SAFETY: a medium block is a live core-heap block: its header is readable.
        unsafe { crate::core_heap::usable_size(block) }
    } else {
        list_block_bytes(stack)
    }
}

/// Counts `bytes` taken off `arena`'s remote stacks.
pub(crate) fn note_taken(arena: usize, bytes: usize) {
    ARENAS[arena]
        .remote_bytes
        .fetch_sub(bytes, Ordering::Relaxed);
}

/// Files every block waiting on `arena`'s remote stacks into its backends (`backends`, the
/// arena's, locked).
pub(crate) fn file_remote_all(arena: usize, backends: &mut Backends) {
    let mut filed = 0;
    for stack in MIN_CLASS..REMOTE_STACKS {
        // SAFETY: the stack's blocks are this arena's, allocated, given up by their freeing
        // threads; taking it made them ours alone.
        filed += unsafe { backends.file_remote(stack, take_remote(arena, stack)) };
    }
    note_taken(arena, filed);
}

/// The arena a block of ours belongs to, and whether it is a slot: a slot's by its slab, a
/// core-heap block's by the address map. `None` for an address in no arena's memory. Reads
/// two tables that are written once per slab or reservation, never the block.
#[inline(always)]
pub(crate) fn owner(block: NonNull<u8>) -> Option<(usize, bool)> {
    if tiny::is_slot(block.as_ptr()) {
        Some((tiny::arena_of_slot(block), true))
    } else {
        address_map::owner(block.as_ptr().addr()).map(|arena| (arena, false))
    }
}

/// A batch of a remote stack: `count` blocks linked from `first` to `last` through their
/// first words and null-terminated.
pub(crate) struct RemoteBatch {
    pub(crate) first: NonNull<u8>,
    pub(crate) last: NonNull<u8>,
    pub(crate) count: u32,
}

/// The most blocks one remote batch holds (its length fits the header's top 16 bits).
pub(crate) const REMOTE_BATCH_MAX: u32 = u16::MAX as u32;
/// A remote batch's header, in its first block's second word: the next batch's first block
/// mangled with this block's address (see [`crate::link`]) in the low 48 bits (an address
/// lies below `2^47`), and the length from bit 48. A batch of two blocks or more keeps its
/// last block's address, mangled with the second block's, in the second block's second
/// word: the owner splices the batch onto a list in O(1).
const COUNT_SHIFT: u32 = 48;

/// Reads the header of the remote batch that starts at `first`: the batch, and the next
/// batch's first block (null: none).
///
/// # Safety
/// `first` starts a batch taken from a remote list ([`take_remote`]).
pub(crate) unsafe fn read_batch(first: NonNull<u8>) -> (RemoteBatch, *mut u8) {
    // SAFETY: every block has a second word; a batch's first keeps the header there.
    let word = unsafe { first.cast::<usize>().add(1).read() };
    let mangled = word & ((1 << COUNT_SHIFT) - 1);
    // The next batch's address was exposed when the header was written.
    let next = core::ptr::with_exposed_provenance_mut(mangled ^ first.as_ptr().addr());
    let count = (word >> COUNT_SHIFT) as u32;
    let last = if count < 2 {
        first
    } else {
        // SAFETY: a batch of two or more blocks: the second keeps the last's address.
        unsafe {
            let second = NonNull::new_unchecked(link::next(first));
            let mangled = second.cast::<usize>().add(1).read() ^ second.as_ptr().addr();
            NonNull::new(core::ptr::with_exposed_provenance_mut(mangled)).unwrap_or(first)
        }
    };
    let batch = RemoteBatch { first, last, count };
    (batch, next)
}

/// Pushes the chain `first ..= last` of `count` blocks (at most [`REMOTE_BATCH_MAX`], linked
/// through first words, `last`'s link about to be overwritten) of `bytes` bytes in all onto
/// `arena`'s remote stack `stack` as a batch: every block joins the thread-cache list
/// `stack` (or is a medium block, [`REMOTE_MEDIUM`]), and the owner that takes the stack when
/// that list is empty splices each batch onto it reading three blocks, not every block. When
/// more than [`REMOTE_FILE_AFTER`] bytes wait on the arena's stacks (an owner that no longer
/// allocates does not take them), or the arena has no owner, and its lock is free, files
/// them at once.
///
/// # Safety
/// Every block of the chain belongs to `arena`, is allocated in its backend's eyes, joins
/// list `stack` (or is a medium block), and is given up by the caller.
pub(crate) unsafe fn push_remote(
    arena: usize,
    stack: usize,
    first: NonNull<u8>,
    last: NonNull<u8>,
    count: u32,
    bytes: usize,
) {
    debug_assert!(count <= REMOTE_BATCH_MAX);
    let pending = &ARENAS[arena];
    // Counted first, so that an owner's `note_taken` never takes the count below zero.
    let waiting = pending.remote_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
    let remote = &pending.remote[stack];
    let mut head = remote.load(Ordering::Relaxed);
    // SAFETY: the chain's blocks are the caller's to link and write.
    unsafe {
        link::set(last, core::ptr::null_mut());
        if count >= 2 {
            let second = NonNull::new_unchecked(link::next(first));
            let mangled = last.as_ptr().expose_provenance() ^ second.as_ptr().addr();
            second.cast::<usize>().add(1).write(mangled);
        }
    }
    loop {
        let mangled = head.expose_provenance() ^ first.as_ptr().addr();
        // SAFETY: `first` is the caller's; its second word takes the header.
        unsafe {
            first
                .cast::<usize>()
                .add(1)
                .write(mangled | (count as usize) << COUNT_SHIFT)
        };
        match remote.compare_exchange_weak(
            head,
            first.as_ptr(),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => break,
            Err(now) => head = now,
        }
    }
    bump(&COUNTERS.remote_pushes);
    // An abandoned arena, or the starter one, has nobody to collect: its memory serves again
    // only once filed.
    if !owned(arena) || waiting >= REMOTE_FILE_AFTER {
        if let Some(mut guard) = pending.backends.try_lock() {
            file_remote_all(arena, &mut guard);
        }
    }
}

/// Bytes waiting on an arena's remote stacks past which a pushing thread files them itself,
/// if the arena's lock is free: bounds what an idle owner's arena holds unusable.
const REMOTE_FILE_AFTER: usize = 2 << 20;

/// Runs `each` on every arena in turn, under its lock (never two at once).
pub(crate) fn for_each(mut each: impl FnMut(&mut Backends)) {
    for arena in 0..MAX_ARENAS {
        each(&mut lock(arena));
    }
}

/// The usable size of `block` if it is a live core-heap block of its arena (checked under the
/// arena's lock); otherwise the fault is reported and the process aborts. `what` names the
/// call (`free`, `realloc`).
pub(crate) fn validate(block: NonNull<u8>, what: &str) -> usize {
    match address_map::owner(block.as_ptr().addr()) {
        Some(arena) => lock(arena).core.validate(block, what),
        None => crate::fault::invalid_pointer(what, block.as_ptr()),
    }
}

/// Holds every arena's lock across `fork`, in index order (prepare handler).
pub(crate) fn lock_all_for_fork() {
    for arena in &ARENAS {
        arena.backends.lock_for_fork();
    }
}

/// Releases every arena's lock after `fork` (parent and child handlers).
///
/// # Safety
/// Called only by the fork handlers, after [`lock_all_for_fork`].
pub(crate) unsafe fn unlock_all_after_fork() {
    for arena in ARENAS.iter().rev() {
        // SAFETY: forwarded from the caller.
        unsafe { arena.backends.force_unlock() };
    }
}

impl Backends {
    /// Files every block of the null-terminated list at `head`: slots back to their slabs,
    /// small core blocks into their class's transfer batch while it has room, the rest into
    /// the core heap.
    ///
    /// # Safety
    /// The list's blocks are this arena's, allocated, and the caller's to give up.
    pub(crate) unsafe fn file_all(&mut self, mut head: *mut u8) {
        let mut filed = 0;
        while let Some(block) = NonNull::new(head) {
            // SAFETY: forwarded from the caller; a listed block's first word is the link.
            unsafe {
                head = link::next(block);
                self.file(block);
            }
            filed += 1;
        }
        crate::stats::add(&COUNTERS.remote_filed, filed);
    }

    /// Files every batch of remote stack `stack`, taken whole (see [`take_remote`]). Returns
    /// their bytes as the stack counts them ([`stack_bytes`]).
    ///
    /// # Safety
    /// As for [`Backends::file_all`], for every batch's blocks, which join list `stack` (or
    /// are medium blocks).
    unsafe fn file_remote(&mut self, stack: usize, mut batches: *mut u8) -> usize {
        let mut bytes = 0;
        while let Some(first) = NonNull::new(batches) {
            // SAFETY: forwarded from the caller; a batch's blocks are linked.
            unsafe {
                let (batch, next) = read_batch(first);
                batches = next;
                let mut head = batch.first.as_ptr();
                while let Some(block) = NonNull::new(head) {
                    head = link::next(block);
                    bytes += stack_bytes(stack, block);
                    self.file(block);
                }
                crate::stats::add(&COUNTERS.remote_filed, batch.count as usize);
            }
        }
        bytes
    }

    /// Files one block of this arena (see [`Backends::file_all`]).
    ///
    /// # Safety
    /// `block` is this arena's, allocated, and the caller's to give up.
    pub(crate) unsafe fn file(&mut self, block: NonNull<u8>) {
        // SAFETY: forwarded from the caller.
        unsafe {
            if tiny::is_slot(block.as_ptr()) {
                return self.slabs.give_back_one(block);
            }
            let class = class_of_usable(crate::core_heap::usable_size(block));
            // A promoted class's refills take slots, never its batch.
            if (MIN_CLASS..=MAX_CLASS).contains(&class)
                && area_of_list(class).is_none_or(|area| !tiny::is_open(area))
                && self
                    .core
                    .add_to_batch(class, block, list_block_bytes(class))
            {
                return;
            }
            self.core.free(block);
        }
    }
}
