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
    area_of_list, class_of_usable, list_block_bytes, medium_class_bytes, LISTS, MAX_CLASS,
    MEDIUM_CLASSES, MIN_CLASS,
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
/// `MIN_CLASS` unused), then one per medium class (see [`medium_stack`]).
const REMOTE_STACKS: usize = LISTS + MEDIUM_CLASSES;

/// The remote stack of medium class `class`'s blocks.
pub(crate) const fn medium_stack(class: usize) -> usize {
    LISTS + class
}

/// One arena.
pub(crate) struct Arena {
    backends: SpinLock<Backends>,
    /// Blocks of this arena freed by threads that do not own it, by the thread-cache list
    /// they join (medium blocks last): the owner takes a list's stack when that list is empty.
    remote: [AtomicPtr<u8>; REMOTE_STACKS],
    /// About how many bytes wait on the remote stacks (counted before a push, so never less).
    remote_bytes: AtomicUsize,
    /// Bit `s`: the owner took a batch off stack `s` since it last filed stacks (see
    /// [`file_if_many`]). Written by the owner alone.
    taken_from: [AtomicU64; REMOTE_STACKS.div_ceil(64)],
    /// Waiting bytes at which the owner files the stacks it has not taken from.
    file_at: AtomicUsize,
}

// SAFETY: the backends are reached only under the lock, the remote stacks by atomics.
unsafe impl Sync for Arena {}

static ARENAS: [Arena; MAX_ARENAS] = {
    let mut arenas = [const {
        Arena {
            backends: SpinLock::new(Backends {
                core: CoreHeap::new(0, false),
                slabs: Slabs::new(0),
            }),
            remote: [const { AtomicPtr::new(core::ptr::null_mut()) }; REMOTE_STACKS],
            remote_bytes: AtomicUsize::new(0),
            taken_from: [const { AtomicU64::new(0) }; REMOTE_STACKS.div_ceil(64)],
            file_at: AtomicUsize::new(REMOTE_FILE_AFTER),
        }
    }; MAX_ARENAS];
    let mut at = 0;
    while at < MAX_ARENAS {
        arenas[at] = Arena {
            backends: SpinLock::new(Backends {
                core: CoreHeap::new(at, at == STARTER),
                slabs: Slabs::new(at),
            }),
            remote: [const { AtomicPtr::new(core::ptr::null_mut()) }; REMOTE_STACKS],
            remote_bytes: AtomicUsize::new(0),
            taken_from: [const { AtomicU64::new(0) }; REMOTE_STACKS.div_ceil(64)],
            file_at: AtomicUsize::new(REMOTE_FILE_AFTER),
        };
        at += 1;
    }
    arenas
};

/// The arena every thread starts on, owned by none (its bit is always set): a thread claims
/// one of its own once it has taken [`OWN_AFTER_BYTES`] from it (see [`crate::thread`]), so
/// threads that allocate little (a short-lived worker, a thread that only waits) share one
/// arena's memory instead of each leaving an arena's worth behind. Its core heap gives its
/// free pages back when only frees reach it (see [`crate::core_heap`]): what threads took
/// before claiming their own arenas comes back to nobody.
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
                // A thread that files an unowned arena's remote stacks does it under the lock,
                // having checked that nobody owns it: once this lock is had, none is still at
                // it, and none will start (see `pop_batch`).
                drop(ARENAS[free].backends.lock());
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
    file_if_unowned(arena, &mut guard);
    guard
}

/// Files `arena`'s remote stacks (its lock held, as `backends`) if nobody owns it: only then
/// may a thread other than the owner take them (see [`pop_batch`]).
fn file_if_unowned(arena: usize, backends: &mut Backends) {
    if !owned(arena) {
        file_remote_all(arena, backends);
        backends.release_if_idle();
    }
}

/// Whether a live thread owns `arena` (never the starter arena).
fn owned(arena: usize) -> bool {
    arena != STARTER && CLAIMED.load(Ordering::Relaxed) & 1 << arena != 0
}

/// Takes `arena`'s remote stack `stack` (a thread-cache list's, or a medium class's) whole
/// (null: empty), a stack of batches (see [`read_batch`]): its blocks are the caller's to
/// reuse or file. Only the arena's owner calls this, or a thread holding its lock while
/// nobody owns it.
fn take_remote(arena: usize, stack: usize) -> *mut u8 {
    let remote = &ARENAS[arena].remote[stack];
    if remote.load(Ordering::Relaxed).is_null() {
        return core::ptr::null_mut();
    }
    remote.swap(core::ptr::null_mut(), Ordering::Acquire)
}

/// Pops the top batch of `arena`'s remote stack `stack` if `fits` takes its length (a list's
/// room, grown if it can be), counting its bytes taken. Only the arena's owner calls this:
/// while it owns the arena no other thread takes batches (pushers only push; stacks are
/// taken whole only by the owner, or under the lock while nobody owns the arena, and a
/// claiming thread takes the lock once, see [`claim`]), so the top it read is still on the
/// stack, its header unchanged, when the compare-and-swap meets it (no ABA).
pub(crate) fn pop_batch(
    arena: usize,
    stack: usize,
    mut fits: impl FnMut(u32) -> bool,
) -> Option<RemoteBatch> {
    let remote = &ARENAS[arena].remote[stack];
    let mut head = remote.load(Ordering::Acquire);
    loop {
        let first = NonNull::new(head)?;
        // SAFETY: `first` is on the stack, which only this thread removes from.
        let (batch, next) = unsafe { read_batch(first) };
        if !fits(batch.count) {
            return None;
        }
        match remote.compare_exchange_weak(head, next, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => {
                note_taken(arena, batch.count as usize * stack_bytes(stack));
                let taken = &ARENAS[arena].taken_from[stack / 64];
                // The owner alone writes it: no read-modify-write needed.
                let bits = taken.load(Ordering::Relaxed);
                if bits & 1 << (stack % 64) == 0 {
                    taken.store(bits | 1 << (stack % 64), Ordering::Relaxed);
                }
                return Some(batch);
            }
            Err(now) => head = now,
        }
    }
}

/// When more than the arena's bound of bytes wait on `arena`'s remote stacks, files those
/// of the stacks the owner took no batch from since it last did (the lists and classes it no
/// longer allocates from, whose stacks only grow), and sets the bound to twice what is left,
/// at least [`REMOTE_FILE_AFTER`]: the stacks it does take from are its working set. Called
/// by the owner, at a collection, with no lock held.
pub(crate) fn file_if_many(arena: usize) {
    let pending = &ARENAS[arena];
    if pending.remote_bytes.load(Ordering::Relaxed) < pending.file_at.load(Ordering::Relaxed) {
        return;
    }
    let mut backends = pending.backends.lock();
    let mut filed = 0;
    for (word, taken) in pending.taken_from.iter().enumerate() {
        let bits = taken.swap(0, Ordering::Relaxed);
        for bit in 0..64 {
            let stack = word * 64 + bit;
            if (MIN_CLASS..REMOTE_STACKS).contains(&stack) && bits & 1 << bit == 0 {
                // SAFETY: as in `file_remote_all`; the caller owns the arena.
                filed += unsafe { backends.file_remote(stack, take_remote(arena, stack)) };
            }
        }
    }
    note_taken(arena, filed);
    let left = pending.remote_bytes.load(Ordering::Relaxed);
    pending
        .file_at
        .store(REMOTE_FILE_AFTER.max(2 * left), Ordering::Relaxed);
}

/// The bytes a block on remote stack `stack` counts for: its list's block size, or its medium
/// class's (the same when it is pushed and when it is taken, and read from no block).
pub(crate) const fn stack_bytes(stack: usize) -> usize {
    if stack >= LISTS {
        medium_class_bytes(stack - LISTS)
    } else {
        list_block_bytes(stack)
    }
}

/// Counts `bytes` taken off `arena`'s remote stacks.
fn note_taken(arena: usize, bytes: usize) {
    ARENAS[arena]
        .remote_bytes
        .fetch_sub(bytes, Ordering::Relaxed);
}

/// Files every block waiting on `arena`'s remote stacks into its backends (`backends`, the
/// arena's, locked). Only its owner calls this, or a thread holding its lock while nobody
/// owns it.
pub(crate) fn file_remote_all(arena: usize, backends: &mut Backends) {
    // Counted before a push: nothing counted, nothing waits (and no stack needs a look).
    if ARENAS[arena].remote_bytes.load(Ordering::Relaxed) == 0 {
        return;
    }
    let mut filed = 0;
    for stack in MIN_CLASS..REMOTE_STACKS {
        // SAFETY: the stack's blocks are this arena's, allocated, given up by their freeing
        // threads; taking it made them ours alone.
        filed += unsafe { backends.file_remote(stack, take_remote(arena, stack)) };
    }
    note_taken(arena, filed);
}

/// Files every block waiting on `arena`'s remote stacks into its backends, if any waits (one
/// load when none does). Called by the owner, with no lock held: secure mode's refills, which
/// take from the arena only (see `thread::file_returned`).
pub(crate) fn file_remote_if_any(arena: usize) {
    if ARENAS[arena].remote_bytes.load(Ordering::Relaxed) != 0 {
        file_remote_all(arena, &mut ARENAS[arena].backends.lock());
    }
}

/// Blocks of ours in one aligned span of `2^SAME_OWNER_SHIFT` bytes (a slab; an address-map
/// granule is larger) have the same [`owner`].
pub(crate) const SAME_OWNER_SHIFT: u32 = tiny::SLAB_SHIFT;
const _: () = assert!(SAME_OWNER_SHIFT <= address_map::GRANULE_SHIFT);

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
/// `stack` (or medium class, [`medium_stack`]), and the owner that pops the stack's batches
/// when that list is empty splices each onto it reading three blocks, not every block. When
/// the arena has no owner and its lock is free, files them at once.
///
/// # Safety
/// Every block of the chain belongs to `arena`, is allocated in its backend's eyes, joins
/// list or medium class `stack`, and is given up by the caller.
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
    pending.remote_bytes.fetch_add(bytes, Ordering::Relaxed);
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
    if !owned(arena) {
        if let Some(mut guard) = pending.backends.try_lock() {
            file_if_unowned(arena, &mut guard);
        }
    }
}

/// Bytes waiting on an arena's remote stacks past which its owner files those it does not
/// take from (see [`file_if_many`]): bounds what the stacks of lists it no longer allocates
/// from hold unusable.
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
    /// After frees: when the core heap found itself idle and gave its pages back (the starter
    /// arena's, see [`STARTER`]), the slabs give back their spare slots and empty slabs too.
    pub(crate) fn release_if_idle(&mut self) {
        if self.core.take_idle_trimmed() {
            self.slabs.release_idle();
        }
    }

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
    /// As for [`Backends::file_all`], for every batch's blocks, which join list or medium
    /// class `stack`.
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
                    bytes += stack_bytes(stack);
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
