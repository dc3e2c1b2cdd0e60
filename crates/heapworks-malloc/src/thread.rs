//! The per-thread owner: each thread's cache in initial-exec TLS, the arena it owns, its start,
//! its exit (abandoning the arena) and the routing of every block that leaves the cache.
//!
//! Each thread owns one [`ThreadCache`] in static TLS: for every size class and every slot class
//! (see [`crate::tiny`]) a singly linked list of blocks (the link is the block's first word), the
//! room left on it, and its limit. `malloc` pops and `free` pushes without a lock or an atomic (15
//! and 22 instructions, pinned by `bench --malloc --instructions`). A block freed by any thread
//! joins the freeing thread's list, whoever owns it: the fast path does not look. Its owner is
//! asked only when the block leaves the cache, a list at a time: a full list either grows its limit
//! (when the block that overflows it is from the thread's own arena, within the thread's byte
//! budget: `HEAPWORKS_TCACHE_KIB`, or a share of [`SHARED_BUDGETS`] of it for a thread that starts
//! while more threads run, see [`budget_for`]) or sends its blocks back (half of them, or all of a
//! consumer's, see [`make_list_room`]), and those go to the arenas they came from ([`Router`]): the
//! thread's own arena's under its lock (left linked as the class's transfer batch when the core
//! heap has room for it, slots as their area's batch), any other arena's onto that arena's remote
//! list, one compare-and-swap a chain. An empty list first collects the blocks other threads freed
//! into the thread's arena for that list ([`collect_list`]: a compare-and-swap a batch, each
//! spliced onto the list), then refills from its arena under its lock: the class's transfer batch, or
//! fresh blocks, or slots from its slabs. When no slab can be had, a slot request takes a core
//! block of the class that holds as much. So does a promoted class's list (see
//! [`tiny::note_carved`]): it refills with slots of the class's area, and a flush sends its slots
//! to the slabs and its core blocks (those carved before the promotion, or when no slab could be
//! had) to the core heap. No lock is ever held while another is taken: an arena's growth is
//! reported by the core heap and the cached large mappings give as much back after the arena's lock
//! is released ([`with_arena`]).
//!
//! A thread claims an arena when its cache starts (see [`crate::arena`]) and at exit
//! ([`retire`]) sends every cached block home, then abandons its arena to the next thread that
//! starts. Threads past the arenas' count share one, as do threads past their exit.
//!
//! The cache also holds the thread's medium blocks ([`MediumCache`], an eighth of the budget) and
//! its most recently freed large mapping ([`LargeSlot`]); their modules say how they work.
//!
//! Invariants:
//! - For every list: `room + length of the list == limit`; every block on class `c`'s list is
//!   a core-heap block that holds `request_of_class(c)` bytes or a slot of the class's area
//!   (only once the class is promoted), every block on tiny slot class `k`'s list a slot of
//!   that class. (A core-heap block never joins a tiny slot list; lists below `MIN_CLASS`
//!   are unused.)
//! - The cache starts zeroed (`Uninit`: every list empty, every room 0, no medium cache, the
//!   large slot empty), so the fast paths fall into the slow paths, which set it up; `Dead`
//!   (after the thread's exit destructor) keeps them all so for good, and the slow paths then
//!   use a shared arena and the shared large cache directly.
//! - `arena` and `owns_arena` are set once, when the cache starts; while it is live and owns
//!   its arena, no other thread owns that arena.
//! - The TLS block stays about 1.2 KiB, which a library loaded with `dlopen` can still get:
//!   the medium cache lives in the core heap, behind a pointer.
//! - `limit * block size` summed over the classes never exceeds the thread's budget less the
//!   medium cache's share.
//!
//! The TLS variable is defined in assembly (`.tbss`) and reached through a `GOTTPOFF`
//! relocation, which is the initial-exec model on stable Rust: two instructions, never
//! `__tls_get_addr`, never an allocation. A thread-exit destructor is registered with a
//! `pthread_key_t` created without allocating.

use core::alloc::Layout;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arena::{self, Backends};
use crate::config;
use crate::core_heap;
use crate::fault;
use crate::large::{self, LargeSlot};
use crate::link;
use crate::medium::{MediumCache, SEARCH_BINS};
use crate::size_class::{
    area_of_list, class_of_request, class_of_usable, is_slot_list, list_block_bytes, list_of_area,
    list_offset, medium_class_bytes, medium_class_of_request, medium_class_of_usable,
    request_of_class, slot_area, slot_class_of_list, slot_list, slot_start_mask, LISTS,
    LIST_ENTRY_BYTES, MAX_CLASS, MEDIUM_CLASSES, MIN_CLASS,
};
use crate::stats::{bump, COUNTERS};
use crate::tiny;

/// Blocks a list may hold at first, by bytes (at least 2, at most 32 blocks).
const INITIAL_LIST_BYTES: usize = 2048;
/// Blocks a list may grow to hold, by bytes (at most `MAX_LIST_BLOCKS` blocks).
const MAX_LIST_BYTES: usize = 128 << 10;
const MAX_LIST_BLOCKS: u32 = 1024;
const _: () = assert!(
    MAX_LIST_BLOCKS <= u16::MAX as u32,
    "a list's limit is a u16"
);
/// Blocks fetched from the core heap at most per refill.
const MAX_REFILL: u32 = 64;
/// A promoted class's list holding less than this grows (within the budget) before it refills
/// from the slabs: a refill costs the slabs' lock and a call whatever its size, so batches of a
/// few slots paid it too often (allocator instructions of insert-delete-10k 4.40M against 4.51M
/// without, realloc-free-10k 4.97M against 5.11M). Tiny slot lists do not: growing them too put
/// git-log's peak RSS at 1.15 times glibc's, against 1.09.
const MIN_SLOT_LIST_BYTES: usize = 4096;
/// The medium cache gets this fraction of the thread's budget, the small lists the rest.
const MEDIUM_BUDGET_DIVISOR: usize = 8;
/// Threads share this many full budgets: a cache that starts while more threads than this
/// are live gets an equal share of them (many threads each keeping a full cache of blocks
/// nobody else may use is resident memory that grows with the thread count).
const SHARED_BUDGETS: usize = 8;
/// A thread's budget never shrinks below this fraction of the full one.
const MIN_BUDGET_DIVISOR: usize = 8;

/// One list: a class's, or a slot class's.
#[repr(C)]
struct Bin {
    head: *mut u8,
    room: u32,
    limit: u16,
    /// The list's last flush sent most of its blocks to other arenas: the thread frees what
    /// others allocate (a consumer), so the list is kept short (see [`make_list_room`]).
    sends_away: bool,
    /// A tiny slot list's: the bits of a slot's granule index within its slab that are zero
    /// at every slot start (see [`push_tiny_slot`]); 0 before the cache starts.
    slot_mask: u8,
}

/// Where a thread's cache is in its life.
#[repr(usize)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    // Never written: the zeroed TLS block is this state.
    #[allow(dead_code)]
    Uninit = 0,
    Live = 1,
    Dead = 2,
}

/// A thread's cache. Lives in TLS; all zeroes is the `Uninit` state.
#[repr(C)]
pub(crate) struct ThreadCache {
    /// Indexed by class (below `MIN_CLASS`: unused), then the slot classes' lists.
    bins: [Bin; LISTS],
    /// Bytes of budget not yet promised to any list's limit.
    budget_left: usize,
    state: State,
    /// The arena the thread allocates from (see [`crate::arena`]).
    arena: usize,
    /// Whether the thread owns its arena (else it shares it, and never gives it up).
    owns_arena: bool,
    /// Bytes the thread has taken from the starter arena (see [`arena::STARTER`]).
    starter_bytes: usize,
    /// The thread's medium cache (null: none).
    medium: *mut MediumCache,
    large: LargeSlot,
}

core::arch::global_asm!(
    ".pushsection .tbss,\"awT\",@nobits",
    ".p2align 6",
    ".globl heapworks_malloc_thread_cache",
    ".hidden heapworks_malloc_thread_cache",
    ".type heapworks_malloc_thread_cache,@object",
    ".size heapworks_malloc_thread_cache, {size}",
    "heapworks_malloc_thread_cache:",
    ".zero {size}",
    ".popsection",
    size = const core::mem::size_of::<ThreadCache>(),
);

/// The calling thread's cache.
#[inline(always)]
fn current() -> *mut ThreadCache {
    let cache: *mut ThreadCache;
    // SAFETY: `fs:0` holds the thread pointer and the GOT slot the offset of our TLS block from
    // it (initial-exec, set by the dynamic linker before any code of ours runs). Neither value
    // changes during the thread's life, which is what `pure, nomem` promises.
    unsafe {
        core::arch::asm!(
            "mov {cache}, qword ptr fs:[0]",
            "add {cache}, qword ptr [rip + heapworks_malloc_thread_cache@GOTTPOFF]",
            cache = out(reg) cache,
            options(pure, nomem, nostack),
        );
    }
    cache
}

/// List `class` (a class, or `slot_list` of a slot class) in the calling thread's cache.
///
/// # Safety
/// `class < LISTS`.
#[inline(always)]
unsafe fn bin(class: usize) -> *mut Bin {
    // SAFETY: `class` indexes `bins` (the caller's promise); the cache is this thread's.
    unsafe { (&raw mut (*current()).bins).cast::<Bin>().add(class) }
}

const _: () = assert!(
    core::mem::offset_of!(ThreadCache, bins) == 0
        && core::mem::size_of::<Bin>() == LIST_ENTRY_BYTES,
    "size_class::list_offset must name the lists of a ThreadCache"
);

/// Pops a block from list `class` of the calling thread's cache.
///
/// # Safety
/// `MIN_CLASS <= class < LISTS`.
#[inline(always)]
pub(crate) unsafe fn pop(class: usize) -> Option<NonNull<u8>> {
    // SAFETY: forwarded from the caller.
    unsafe { pop_at(list_offset(class)) }
}

/// Pops a block from the list at byte offset `offset` of the calling thread's cache (the fast
/// path of `malloc`), clearing its free mark (see [`push_at`]).
///
/// # Safety
/// `offset` is `list_offset(class)` for some `MIN_CLASS <= class < LISTS`.
#[inline(always)]
pub(crate) unsafe fn pop_at(offset: usize) -> Option<NonNull<u8>> {
    // SAFETY: the offset names a list of this thread's cache; its blocks are free-listed, so
    // their first word is the link, and every block has a second word.
    unsafe {
        let bin = current().cast::<u8>().add(offset).cast::<Bin>();
        let block = NonNull::new((*bin).head)?;
        (*bin).head = link::next(block);
        (*bin).room += 1;
        block.cast::<usize>().add(1).write(0);
        Some(block)
    }
}

/// Pushes `block` on the calling thread's cache unless its list is full (the fast path of
/// `free`). Returns whether it did.
///
/// # Safety
/// `MIN_CLASS <= class < LISTS`, and `block` is a live block of list `class` (a slot of its
/// class for a slot list, else a core-heap block of `class`) that the caller gives up.
#[inline(always)]
pub(crate) unsafe fn push(block: NonNull<u8>, class: usize) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { push_at(block, list_offset(class)) }
}

/// [`push`] on the list at byte offset `offset` of the calling thread's cache. Addressing the
/// list by byte offset from the cache (as `pop_at` does), not through `bin`, lets the compiler
/// fold it into each access.
///
/// A pushed block is marked free: its second word holds the cache's address (a value no
/// program stores in its blocks; `pop_at` clears it). A block that comes with the mark is
/// refused, and the slow path ([`push_slow`]) looks for it in the list: found, it is a double
/// free. A refused push leaves the list's room one below its count (a decrement in memory and
/// a sign branch, two instructions where undoing it on the fast path took two more), which the
/// slow path restores.
///
/// # Safety
/// `offset` is `list_offset(class)` for a `class` that [`push`] may be called with.
#[inline(always)]
unsafe fn push_at(block: NonNull<u8>, offset: usize) -> bool {
    // SAFETY: the list belongs to this thread; the block is ours to link, and has a second
    // word.
    unsafe {
        let cache = current();
        let bin = cache.cast::<u8>().add(offset).cast::<Bin>();
        // Rooms are far below 2^31, so the sign says whether there was room.
        (*bin).room = (*bin).room.wrapping_sub(1);
        let mark = block.cast::<usize>().add(1);
        if ((*bin).room as i32) < 0 || mark.read() == cache.addr() {
            return false;
        }
        mark.write(cache.addr());
        link::set(block, (*bin).head);
        (*bin).head = block.as_ptr();
        true
    }
}

/// The calling thread's cache, set up if it was not yet; `None` once the thread's exit
/// destructor has retired it. Never called with an arena lock held (setting up takes it).
#[inline]
fn live_cache() -> Option<*mut ThreadCache> {
    let cache = current();
    // SAFETY: the cache is this thread's.
    match unsafe { (*cache).state } {
        // SAFETY: as above, and it is `Uninit`.
        State::Uninit => unsafe { start(cache) },
        State::Dead => return None,
        State::Live => {}
    }
    Some(cache)
}

/// `malloc`'s slow path for a small request: sets up the cache or refills the list, then pops.
pub(crate) fn pop_slow(class: usize) -> Option<NonNull<u8>> {
    let Some(cache) = live_cache() else {
        return allocate_direct(class);
    };
    if config::secure() {
        // SAFETY: the cache is this thread's and live.
        return unsafe {
            file_returned(cache);
            stash_from_core(class)
        };
    }
    // SAFETY: the cache is this thread's and live; `class` is a valid class (callers map
    // requests).
    unsafe {
        if collect_list(cache, class) {
            if let Some(block) = pop(class) {
                return Some(block);
            }
        }
        refill(cache, class)?;
        pop(class)
    }
}

/// Takes the blocks other threads freed into the calling thread's own arena for list `list`
/// onto that list, no lock taken: the batches on top of the list's remote stack, one
/// compare-and-swap each, while the list has room for them (its limit grown within the
/// budget), each spliced in O(1); the others wait for the list's next collection. A batch
/// too long for the list even when it is empty (a thread's flush of a list grown longer) is
/// taken all the same, as much as the list holds, the rest filed in the arena: a batch left
/// on top would keep every one below from the list. Returns whether any block joined it.
/// This is how a producer gets back what its consumers free: into the list it allocates
/// from, not through its arena.
///
/// # Safety
/// `cache` is the calling thread's live cache; `list` is a valid list.
unsafe fn collect_list(cache: *mut ThreadCache, list: usize) -> bool {
    // SAFETY: the cache is this thread's; the blocks taken are its arena's, of `list`,
    // given up.
    unsafe {
        if !(*cache).owns_arena {
            return false;
        }
        let arena = (*cache).arena;
        let bin = bin(list);
        let mut kept = 0;
        let fits = move |count| {
            while (*bin).room < count && grow_limit(cache, list) {}
            (*bin).room >= count || (*bin).head.is_null()
        };
        while let Some(batch) = arena::pop_batch(arena, list, fits) {
            if batch.count <= (*bin).room {
                link::set(batch.last, (*bin).head);
                (*bin).head = batch.first.as_ptr();
                (*bin).room -= batch.count;
                kept += batch.count;
                continue;
            }
            // The list is empty and shorter than the batch: it takes the batch's first
            // blocks, the others are filed.
            let room = (*bin).room;
            let rest = if room == 0 {
                batch.first.as_ptr()
            } else {
                let mut last = batch.first;
                for _ in 1..room {
                    last = NonNull::new_unchecked(link::next(last));
                }
                let rest = link::next(last);
                link::set(last, core::ptr::null_mut());
                (*bin).head = batch.first.as_ptr();
                (*bin).room = 0;
                kept += room;
                rest
            };
            with_arena_at(arena, |arena| arena.file_all(rest));
            break;
        }
        crate::stats::add(&COUNTERS.remote_batches_taken, kept as usize);
        arena::file_if_many(arena);
        kept > 0
    }
}

/// Takes the blocks of medium class `class` other threads freed into the calling thread's own
/// arena into its medium cache, as [`collect_list`] takes a list's: the batches on top of the
/// class's remote stack while the cache holds them; if it has none, those of the first of the
/// next classes whose stack has some, as far as the cache's search reaches
/// ([`SEARCH_BINS`]), since their blocks serve the request as well: a producer
/// whose consumers return blocks of all sizes would otherwise cut a new block while blocks
/// that hold it wait unused on those stacks (peak RSS, TUNING.md). Returns whether any block
/// joined the cache.
///
/// # Safety
/// `cache` is the calling thread's live cache.
unsafe fn collect_medium(cache: *mut ThreadCache, class: usize) -> bool {
    // SAFETY: the cache is this thread's; the blocks taken are its arena's, of `class`, given
    // up.
    unsafe {
        let Some(mut medium) = medium_cache(cache).filter(|_| (*cache).owns_arena) else {
            return false;
        };
        if config::secure() {
            file_returned(cache);
            return false;
        }
        let arena = (*cache).arena;
        let medium = medium.as_mut();
        let mut kept = false;
        for bin in class..(class + SEARCH_BINS).min(MEDIUM_CLASSES) {
            while let Some(batch) = arena::pop_batch(arena, arena::medium_stack(bin), |count| {
                medium.has_room(bin, count)
            }) {
                medium.splice(bin, batch.first, batch.last, batch.count);
                kept = true;
            }
            if kept {
                break;
            }
        }
        arena::file_if_many(arena);
        kept
    }
}

/// The thread-cache list a live slot or core block joins (`None`: a medium block).
///
/// # Safety
/// `block` is a live block of this allocator, not a large one.
unsafe fn list_of_block(block: NonNull<u8>) -> Option<usize> {
    if tiny::is_slot(block.as_ptr()) {
        return Some(list_of_area(tiny::area_of(block.as_ptr())));
    }
    // SAFETY: forwarded from the caller: a core block's header is readable.
    let class = class_of_usable(unsafe { core_heap::usable_size(block) });
    (class <= MAX_CLASS).then_some(class)
}

/// Takes a slot of `slot_class` from the calling thread's list of it, refilled from the slabs;
/// a core block that holds as much when no slab can be had.
#[inline(always)]
pub(crate) fn pop_slot(slot_class: usize) -> Option<NonNull<u8>> {
    // SAFETY: a slot class's list is a valid list.
    match unsafe { pop(slot_list(slot_class)) } {
        Some(slot) => Some(slot),
        None => pop_slot_slow(slot_class),
    }
}

#[inline(never)]
fn pop_slot_slow(slot_class: usize) -> Option<NonNull<u8>> {
    let list = slot_list(slot_class);
    let area = slot_area(slot_class);
    let fallback = class_of_request(list_block_bytes(list)).max(MIN_CLASS);
    let Some(cache) = live_cache() else {
        let (slot, taken) = with_arena(|arena| arena.slabs.take(area, 1, core::ptr::null_mut()));
        if taken == 0 {
            return allocate_direct(fallback);
        }
        bump(&COUNTERS.core_direct);
        return NonNull::new(slot);
    };
    if config::secure() {
        // SAFETY: the cache is this thread's and live.
        unsafe { file_returned(cache) };
        let (head, taken) =
            with_arena(|arena| arena.slabs.take(area, SECURE_STASH, core::ptr::null_mut()));
        if taken == 0 {
            return allocate_direct(fallback);
        }
        // SAFETY: the list is this thread's, empty, and the slots taken are linked.
        return unsafe { fill_stash(list, head, taken) };
    }
    // SAFETY: the cache is this thread's and live; the lists are valid.
    unsafe {
        if collect_list(cache, list) {
            if let Some(slot) = pop(list) {
                return Some(slot);
            }
        }
        if refill_from_slabs(cache, list, area) {
            return pop(list);
        }
        pop(fallback).or_else(|| pop_slow(fallback))
    }
}

/// Fills the empty list `list` with slots of `area` from the slabs. Returns whether it got any.
///
/// # Safety
/// `cache` is the calling thread's live cache; `list` is its list of `area`'s slots.
unsafe fn refill_from_slabs(cache: *mut ThreadCache, list: usize, area: usize) -> bool {
    // SAFETY: the list is this thread's; slots taken are linked through their first words.
    unsafe {
        // Like a class's list, a slot list grows when frees overflow it, and otherwise only a
        // promoted class's, up to `MIN_SLOT_LIST_BYTES`. Growing it on every refill took
        // budget the classes' lists then lacked (more flushes to the core heap): allocator
        // instructions of insert-delete-10k 6.99M against 6.08M without, realloc-free-10k
        // 6.35M against 6.17M (python3 5.86M against 5.90M). A refill fills the whole list
        // instead (a slab's slots cost a dozen instructions each, not a core block's 60 to 90,
        // so an overflow's flush is cheap): insert-delete-10k 4.47M against 4.79M filling half,
        // realloc-free-10k 5.08M against 5.41M, python3 5.26M against 5.37M.
        let bin = bin(list);
        while !is_slot_list(list)
            && list_bytes(list, (*bin).limit as u32) < MIN_SLOT_LIST_BYTES
            && grow_limit(cache, list)
        {}
        let wanted = (*bin).room.clamp(1, MAX_REFILL);
        bump(&COUNTERS.refills);
        let (head, taken) = with_arena(|arena| {
            // Another arena's thread may have promoted the class after this arena's flushes
            // left it a batch, which no refill takes any more: its blocks go back to the heap.
            if !is_slot_list(list) && arena.core.batch_len(list) > 0 {
                if let Some((batch, count)) =
                    arena.core.take_batch(list, block_bytes(list), u32::MAX)
                {
                    release_list(&mut arena.core, &mut batch.as_ptr(), count);
                }
            }
            arena.slabs.take(area, wanted, (*bin).head)
        });
        (*bin).head = head;
        (*bin).room -= taken;
        note_taken(cache, list_bytes(list, taken));
        taken > 0
    }
}

/// `free`'s slow path for a small block: sets up the cache or makes room on the list, then
/// pushes.
///
/// # Safety
/// As for [`push`].
pub(crate) unsafe fn push_slow(block: NonNull<u8>, class: usize) {
    // SAFETY: the cache is this thread's; the block is the caller's to give up.
    unsafe {
        if class < MIN_CLASS {
            fault::invalid_pointer("free", block.as_ptr());
        }
        // The fast path's refused push took one from the room.
        let bin = bin(class);
        (*bin).room = (*bin).room.wrapping_add(1);
        let cache = live_cache();
        if let Some(cache) = cache {
            let mark = block.cast::<usize>().add(1);
            if mark.read() == cache.addr() {
                if list_holds(class, block) {
                    fault::double_free(block.as_ptr(), list_block_bytes(class));
                }
                // The program's own data looked like the mark.
                mark.write(0);
            }
        }
        // Secure mode's checks and quarantine hold for a free after the thread's cache is
        // gone too (a free in a later thread-exit destructor).
        if config::secure() {
            if let Some((evicted, bytes)) = crate::secure::free(block) {
                release_evicted(evicted, bytes);
            }
            return;
        }
        let Some(cache) = cache else {
            return release_one(block);
        };
        if push_or_restore(block, class) {
            return;
        }
        make_list_room(cache, class, block);
        if !push_or_restore(block, class) {
            release_one(block);
        }
    }
}

/// Secure mode's lists are stashes of blocks to hand out, refilled a batch at a time under
/// one lock, whose room is biased far below zero ([`SECURE_EMPTY`] less the blocks on it):
/// `malloc`'s fast path pops from them as usual (adding one), while `free`'s fast path always
/// finds the room negative and leaves every free to the slow path, which validates, wipes and
/// quarantines the block (see [`crate::secure`]). Blocks leaving the quarantine join the
/// freeing thread's stash, which holds at most [`SECURE_STASH_MAX`] (see [`release_evicted`]).
const SECURE_EMPTY: u32 = 0xC000_0000;
/// Blocks a secure-mode refill takes at once.
const SECURE_STASH: u32 = 32;
/// The most blocks a secure-mode stash holds.
const SECURE_STASH_MAX: u32 = 256;

/// Secure mode's collection: the blocks other threads freed into the calling thread's own
/// arena are filed into it (slots to their slabs or batches, other blocks to the core heap or
/// its transfer batches, at most 256 KiB, which secure refills leave alone), where the refills
/// find them. A stash is not a list that [`collect_list`] can splice into, and without this
/// those blocks waited on the remote stacks for good (200 rounds of 2048 blocks freed by
/// another thread kept 429 MB resident; tests/secure.rs).
///
/// # Safety
/// `cache` is the calling thread's live cache.
unsafe fn file_returned(cache: *mut ThreadCache) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if (*cache).owns_arena {
            arena::file_remote_if_any((*cache).arena);
        }
    }
}

/// Secure mode: fills the empty list of `class` with fresh core-heap blocks, then pops.
///
/// # Safety
/// The calling thread's cache is live.
unsafe fn stash_from_core(class: usize) -> Option<NonNull<u8>> {
    let (head, made) = with_arena_or_room(|arena| {
        arena
            .core
            .allocate_list(layout_of_class(class), SECURE_STASH, core::ptr::null_mut())
    });
    bump(&COUNTERS.refills);
    // SAFETY: the list is this thread's and empty; the blocks made are linked.
    unsafe { fill_stash(class, head, made) }
}

/// Secure mode: makes the `count` blocks linked from `head` the empty list `list`'s stash,
/// then pops one.
///
/// # Safety
/// `list` is an empty list of the calling thread's live cache; the blocks are its class's.
unsafe fn fill_stash(list: usize, head: *mut u8, count: u32) -> Option<NonNull<u8>> {
    // SAFETY: forwarded from the caller.
    unsafe {
        let bin = bin(list);
        (*bin).head = head;
        (*bin).room = SECURE_EMPTY - count;
        pop(list)
    }
}

/// Secure mode: a block out of the quarantine (checked and wiped) joins the calling thread's
/// stash of its list, marked as a cached block (so a free of it is caught as a double free);
/// a stash of [`SECURE_STASH_MAX`] blocks first sends half of them back to their slabs or
/// heaps ([`flush`]). A block of no list (a medium one) goes back to the core heap.
///
/// # Safety
/// `block` is a block of `bytes` bytes out of the quarantine, allocated in its owner's eyes.
pub(crate) unsafe fn release_evicted(block: NonNull<u8>, bytes: usize) {
    let list = if tiny::is_slot(block.as_ptr()) {
        Some(list_of_area(tiny::area_of(block.as_ptr())))
    } else {
        Some(class_of_usable(bytes)).filter(|class| (MIN_CLASS..=MAX_CLASS).contains(class))
    };
    // SAFETY: the list is this thread's; the block is ours to link and mark.
    unsafe {
        if let (Some(list), Some(cache)) = (list, live_cache()) {
            let bin = bin(list);
            if SECURE_EMPTY - (*bin).room >= SECURE_STASH_MAX {
                // The program frees more of this list than it takes: half the stash goes
                // home in one walk, not each block under a lock of its own.
                flush(list, SECURE_STASH_MAX / 2);
            }
            block.cast::<usize>().add(1).write(cache.addr());
            link::set(block, (*bin).head);
            (*bin).head = block.as_ptr();
            (*bin).room -= 1;
            return;
        }
        release_one(block);
    }
}

/// [`push`] for the slow paths: a refused push's decrement of the room undone.
///
/// # Safety
/// As for [`push`].
unsafe fn push_or_restore(block: NonNull<u8>, class: usize) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe {
        if push(block, class) {
            return true;
        }
        let bin = bin(class);
        (*bin).room = (*bin).room.wrapping_add(1);
        false
    }
}

/// Whether `block` is on the calling thread's list of `class` (a walk of at most the list's
/// limit, so a corrupted list cannot make it loop).
///
/// # Safety
/// `class` is a valid list of this thread's live cache.
unsafe fn list_holds(class: usize, block: NonNull<u8>) -> bool {
    // SAFETY: the list is this thread's; its blocks' first words are links.
    unsafe {
        let bin = bin(class);
        let mut at = (*bin).head;
        // A secure-mode stash may hold more than the limit.
        for _ in 0..=((*bin).limit as u32).max(SECURE_STASH_MAX) {
            if at.is_null() {
                return false;
            }
            if at == block.as_ptr() {
                return true;
            }
            at = link::next(NonNull::new_unchecked(at));
        }
        false
    }
}

/// `free` of a slot of area `area`, whose list is `list_of_area(area)`.
///
/// # Safety
/// `area < SLOT_AREAS`; `slot` is a live slot of that area that the caller gives up.
#[inline(always)]
pub(crate) unsafe fn push_slot(slot: NonNull<u8>, area: usize) {
    // SAFETY: forwarded from the caller: the list is the area's.
    unsafe {
        if !push(slot, list_of_area(area)) {
            push_slot_slow(slot);
        }
    }
}

/// `free` of a pointer 16-byte aligned in tiny slot area `area`, `granule` 16-byte steps
/// into its slab: refused as no slot's start when a bit of `granule` that every slot start of
/// the area has clear is set (all interior pointers of the power-of-two sizes, 16 to 128 B;
/// for the others, those the size's power-of-two factor tells), else [`push_slot`]. The test
/// reads the list's mask beside its room, in the line the push touches anyway.
///
/// # Safety
/// `area < SLOT_CLASSES`; `slot` lies in that area, and the caller gives it up.
#[inline(always)]
pub(crate) unsafe fn push_tiny_slot(slot: NonNull<u8>, area: usize, granule: usize) {
    let offset = list_offset(list_of_area(area));
    // SAFETY: the offset names the area's list, a slot list of this thread's cache (addressed
    // by byte offset, as `push_at` does, so that both fold it into their accesses).
    unsafe {
        let bin = current().cast::<u8>().add(offset).cast::<Bin>();
        if granule as u8 & (*bin).slot_mask != 0 {
            crate::fault::not_a_slot_start(slot.as_ptr());
        }
        if !push_at(slot, offset) {
            push_slot_slow(slot);
        }
    }
}

/// [`push_slot`] on a full list. Finds the list again from the slot, so that the fast path
/// keeps nothing for it but the slot (one instruction fewer).
///
/// # Safety
/// `slot` is a live slot that the caller gives up.
#[inline(never)]
unsafe fn push_slot_slow(slot: NonNull<u8>) {
    let list = list_of_area(tiny::area_of(slot.as_ptr()));
    // SAFETY: forwarded from the caller: the list is the slot's area's.
    unsafe { push_slow(slot, list) }
}

/// Gives one block of a list back to its arena, bypassing the cache.
///
/// # Safety
/// As for [`push`].
unsafe fn release_one(block: NonNull<u8>) {
    let mut router = Router::new(thread_arena());
    // SAFETY: forwarded from the caller.
    unsafe {
        router.add(block);
        router.finish();
    }
}

/// Takes a medium block for a request of `size` bytes (above the small classes, at most
/// `LARGE_MIN`) from the calling thread's cache.
#[inline(always)]
pub(crate) fn pop_medium(size: usize) -> Option<NonNull<u8>> {
    // SAFETY: the medium cache is this thread's and nothing else refers to it meanwhile.
    unsafe { medium_cache(current())?.as_mut().pop(size) }
}

/// A medium request the medium cache's fast path could not serve: the cache again after
/// collecting the blocks of its class other threads freed into the arena, else a block of
/// its class's bytes from the arena's core heap.
pub(crate) fn allocate_medium(size: usize) -> Option<NonNull<u8>> {
    let class = medium_class_of_request(size);
    let bytes = medium_class_bytes(class);
    if let Some(cache) = live_cache() {
        // SAFETY: the cache is this thread's and live.
        unsafe {
            if collect_medium(cache, class) {
                if let Some(block) = pop_medium(size) {
                    return Some(block);
                }
            }
            note_taken(cache, bytes);
        }
    }
    bump(&COUNTERS.medium_from_core);
    allocate_core(Layout::from_size_align(bytes, heapworks::GRANULE).ok()?)
}

/// The medium cache of `cache`, if it has one.
///
/// # Safety
/// `cache` is the calling thread's cache.
#[inline(always)]
unsafe fn medium_cache(cache: *mut ThreadCache) -> Option<NonNull<MediumCache>> {
    // SAFETY: forwarded from the caller.
    NonNull::new(unsafe { (*cache).medium })
}

/// Caches a freed medium block in the calling thread's cache, making room if needed, or gives
/// it to the core heap.
///
/// # Safety
/// `block` is a live core-heap block of `usable` bytes, above the small classes, that the
/// caller gives up.
#[inline(always)]
pub(crate) unsafe fn push_medium(block: NonNull<u8>, usable: usize) {
    // SAFETY: the medium cache is this thread's; the block is the caller's to give up.
    unsafe {
        let pushed =
            medium_cache(current()).is_some_and(|mut medium| medium.as_mut().push(block, usable));
        if !pushed {
            push_medium_slow(block, usable);
        }
    }
}

/// # Safety
/// As for [`push_medium`].
#[cold]
unsafe fn push_medium_slow(block: NonNull<u8>, usable: usize) {
    let cache = live_cache();
    let mut router = Router::new(thread_arena());
    // SAFETY: the cache is this thread's and live; the block is the caller's to give up, and
    // every block the cache releases goes to its arena.
    unsafe {
        match cache.and_then(|cache| medium_cache(cache)) {
            Some(mut medium) => {
                medium
                    .as_mut()
                    .push_after_release(block, usable, &mut |released| router.add(released))
            }
            None => router.add(block),
        }
        router.finish();
    }
}

/// The calling thread's large-mapping slot, open for a freed mapping; `None` once retired.
#[inline(always)]
fn live_large_slot() -> Option<&'static mut LargeSlot> {
    // SAFETY: the cache is this thread's, and the slot is used by one call at a time.
    live_cache().map(|cache| unsafe { &mut (*cache).large })
}

/// The calling thread's large-mapping slot if its cache is live, without setting it up.
fn large_slot_if_live() -> Option<&'static mut LargeSlot> {
    let cache = current();
    // SAFETY: as in `live_large_slot`.
    unsafe { ((*cache).state == State::Live).then(|| &mut (*cache).large) }
}

/// Allocates a large block of `size` bytes aligned to `align`, reusing the calling thread's
/// freed mapping or the shared cache's; when the kernel refuses its mapping, the address
/// space reserved but unused is given back (see [`make_room`]) and it is tried once more.
pub(crate) fn allocate_large(size: usize, align: usize) -> Option<large::LargeBlock> {
    large::allocate(size, align, live_large_slot()).or_else(|| {
        make_room();
        large::allocate(size, align, live_large_slot())
    })
}

/// Frees a large block into the calling thread's slot or the shared cache.
///
/// # Safety
/// `block` is a live large block, not used after this call.
pub(crate) unsafe fn free_large(block: NonNull<u8>) {
    // SAFETY: forwarded from the caller.
    unsafe { large::free(block, live_large_slot()) }
}

/// Gives back every byte of address space reserved but unused: each arena's newest
/// reservation's tail, the slots' region past what its slabs use, and the cached large
/// mappings (and those secure mode holds back). The kernel refused a mapping, and under an
/// address-space limit (`ulimit -v`) these are what stand in the way of a program's request
/// that glibc's malloc would serve. Takes one lock at a time.
pub(crate) fn make_room() {
    bump(&COUNTERS.room_made);
    arena::for_each(|arena| arena.core.release_unused_tail());
    tiny::region().release_unused();
    large::release_for_growth(usize::MAX, large_slot_if_live());
    large::release_guarded();
}

/// The arena the calling thread uses: its own while its cache is live, else (before it
/// starts, or after its exit) a shared one picked by its thread's address.
fn thread_arena() -> usize {
    let cache = current();
    // SAFETY: the cache is this thread's.
    unsafe {
        if (*cache).state == State::Live {
            (*cache).arena
        } else {
            arena::claim_shared(cache.addr())
        }
    }
}

/// Runs `work` on the calling thread's arena under its lock; then, if that grew its core
/// heap, cached large mappings give as many bytes back (see [`large::release_for_growth`]).
fn with_arena<R>(work: impl FnOnce(&mut Backends) -> R) -> R {
    with_arena_at(thread_arena(), work)
}

/// [`with_arena`] on arena `at`.
fn with_arena_at<R>(at: usize, work: impl FnOnce(&mut Backends) -> R) -> R {
    let mut arena = arena::lock(at);
    let result = work(&mut arena);
    arena.release_if_idle();
    let grown = arena.core.take_new_commits();
    drop(arena);
    if grown > 0 {
        large::release_for_growth(grown, large_slot_if_live());
    }
    result
}

/// [`with_arena`] for core-heap allocations: when `work` got nothing (the kernel refused more
/// memory), gives back what is reserved but unused everywhere (see [`make_room`]) and runs it
/// once more.
fn with_arena_or_room<R: Outcome>(mut work: impl FnMut(&mut Backends) -> R) -> R {
    let result = with_arena(&mut work);
    if result.succeeded() {
        return result;
    }
    make_room();
    with_arena(work)
}

/// What [`with_arena_or_room`] runs: whether it got memory.
trait Outcome {
    fn succeeded(&self) -> bool;
}

impl<T> Outcome for Option<T> {
    fn succeeded(&self) -> bool {
        self.is_some()
    }
}

impl<T> Outcome for (T, u32) {
    fn succeeded(&self) -> bool {
        self.1 > 0
    }
}

/// Blocks of several lists on their way out of a thread's caches (a medium cache emptied, a
/// block released alone), sorted by arena: those of the thread's own arena are filed under its
/// lock at [`Router::finish`]; any other arena's are chained by the list they join (read from
/// each block) and pushed onto that list's remote stack of their arena. (A list's flush routes
/// its blocks itself, knowing their list: see [`flush`].)
struct Router {
    own: usize,
    mine: Run,
    chains: Chains,
}

impl Router {
    fn new(own: usize) -> Router {
        Router {
            own,
            mine: Run::EMPTY,
            chains: Chains::new(),
        }
    }

    /// Takes `block` to route.
    ///
    /// # Safety
    /// `block` is a live block of this allocator (not a large one) that the caller gives up.
    unsafe fn add(&mut self, block: NonNull<u8>) {
        let (arena, _) = owner_of(block);
        // SAFETY: the block is ours to link, and live: its header is readable.
        unsafe {
            if arena == self.own {
                return self.mine.add(block, block, 1);
            }
            let stack = match list_of_block(block) {
                Some(list) => list,
                None => arena::medium_stack(
                    medium_class_of_usable(core_heap::usable_size(block)).min(MEDIUM_CLASSES - 1),
                ),
            };
            self.chains.add(arena, stack, block, block, 1);
        }
    }

    /// Pushes the other arenas' chains onto their remote stacks and files the own arena's
    /// blocks under its lock.
    ///
    /// # Safety
    /// Every block added was given up.
    unsafe fn finish(self) {
        // SAFETY: forwarded from the caller.
        unsafe { self.chains.push_all() };
        if self.mine.count > 0 {
            let head = self.mine.head;
            // SAFETY: the list's blocks are the own arena's, given up.
            with_arena_at(self.own, |arena| unsafe { arena.file_all(head) });
        }
    }
}

/// Chains of blocks on their way to other arenas' remote stacks, a chain per arena and stack.
struct Chains {
    chains: [Chain; ROUTER_CHAINS],
    open: usize,
}

/// A chain of blocks of one arena and one remote stack, linked through their first words.
#[derive(Clone, Copy)]
struct Chain {
    arena: usize,
    stack: usize,
    first: *mut u8,
    last: *mut u8,
    count: u32,
    bytes: usize,
}

/// Chains kept at once (a flush's blocks come from one arena, or a few when a thread frees
/// what several produced); a block of one more pushes the oldest chain early.
const ROUTER_CHAINS: usize = 4;

impl Chains {
    fn new() -> Chains {
        Chains {
            chains: [Chain {
                arena: 0,
                stack: 0,
                first: core::ptr::null_mut(),
                last: core::ptr::null_mut(),
                count: 0,
                bytes: 0,
            }; ROUTER_CHAINS],
            open: 0,
        }
    }

    /// Adds the `len` blocks linked from `first` to `last` (whose link is overwritten) to the
    /// chain of `arena`'s remote stack `stack`.
    ///
    /// # Safety
    /// The blocks are live blocks of `arena` that join list or medium class `stack`, given up
    /// by the caller.
    #[inline(always)]
    unsafe fn add(
        &mut self,
        arena: usize,
        stack: usize,
        first: NonNull<u8>,
        last: NonNull<u8>,
        len: u32,
    ) {
        let bytes = len as usize * arena::stack_bytes(stack);
        // SAFETY: the blocks are ours to link.
        unsafe {
            if let Some(chain) = self.chains[..self.open].iter_mut().find(|chain| {
                chain.arena == arena
                    && chain.stack == stack
                    && chain.count + len <= arena::REMOTE_BATCH_MAX
            }) {
                link::set(last, chain.first);
                chain.first = first.as_ptr();
                chain.count += len;
                chain.bytes += bytes;
                return;
            }
            if self.open == ROUTER_CHAINS {
                self.open -= 1;
                self.chains[self.open].push();
            }
        }
        self.chains[self.open] = Chain {
            arena,
            stack,
            first: first.as_ptr(),
            last: last.as_ptr(),
            count: len,
            bytes,
        };
        self.open += 1;
    }

    /// Pushes every chain onto its arena's remote stack.
    ///
    /// # Safety
    /// Every block added was given up.
    unsafe fn push_all(&self) {
        for chain in &self.chains[..self.open] {
            // SAFETY: forwarded from the caller; an open chain is not empty.
            unsafe { chain.push() };
        }
    }
}

impl Chain {
    /// Pushes the chain onto its arena's remote stack.
    ///
    /// # Safety
    /// The chain is not empty, and its blocks are given up.
    unsafe fn push(&self) {
        // SAFETY: forwarded from the caller.
        unsafe {
            arena::push_remote(
                self.arena,
                self.stack,
                NonNull::new_unchecked(self.first),
                NonNull::new_unchecked(self.last),
                self.count,
                self.bytes,
            )
        }
    }
}

/// Counts `bytes` taken from the calling thread's arena; a thread on the starter arena claims
/// one of its own once it has taken [`arena::OWN_AFTER_BYTES`] (or, when every arena is
/// owned, a shared one).
///
/// # Safety
/// `cache` is the calling thread's live cache, and no arena lock is held.
unsafe fn note_taken(cache: *mut ThreadCache, bytes: usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if (*cache).arena != arena::STARTER {
            return;
        }
        (*cache).starter_bytes += bytes;
        if (*cache).starter_bytes >= arena::OWN_AFTER_BYTES {
            let (arena, owns) = arena::claim(cache.addr());
            (*cache).arena = arena;
            (*cache).owns_arena = owns;
        }
    }
}

/// Allocates a core-heap block for `layout` from the calling thread's arena (medium requests
/// its medium cache could not serve, aligned ones).
pub(crate) fn allocate_core(layout: Layout) -> Option<NonNull<u8>> {
    with_arena_or_room(|arena| arena.core.allocate(layout))
}

/// Runs `resize` on the core heap of `block`'s arena, under its lock (a block may be resized
/// in place by any thread).
///
/// # Safety
/// `block` is a live core-heap block.
pub(crate) unsafe fn resize_in_place(
    block: NonNull<u8>,
    mut resize: impl FnMut(&mut core_heap::CoreHeap) -> bool,
) -> bool {
    let Some(owner) = crate::address_map::owner(block.as_ptr().addr()) else {
        return false;
    };
    with_arena_at(owner, |arena| resize(&mut arena.core))
}

/// The arena the calling thread owns, if it does (for `fork`'s child, where it is the only
/// thread left).
pub(crate) fn owned_arena() -> Option<usize> {
    let cache = current();
    // SAFETY: the cache is this thread's.
    unsafe { ((*cache).state == State::Live && (*cache).owns_arena).then_some((*cache).arena) }
}

/// Serves a small request straight from the thread's arena (for a thread past its exit).
fn allocate_direct(class: usize) -> Option<NonNull<u8>> {
    bump(&COUNTERS.core_direct);
    with_arena_or_room(|arena| arena.core.allocate(layout_of_class(class)))
}

fn layout_of_class(class: usize) -> Layout {
    // The size is at most SMALL_MAX_REQUEST and the alignment the granule: always valid.
    Layout::from_size_align(request_of_class(class), heapworks::GRANULE)
        .unwrap_or(Layout::new::<u128>())
}

/// Sets up an `Uninit` cache: limits, budget, medium cache and the exit destructor.
///
/// # Safety
/// `cache` is the calling thread's cache, in the `Uninit` state; no arena's lock is held
/// (creating the medium cache takes its arena's).
unsafe fn start(cache: *mut ThreadCache) {
    // SAFETY: the cache is this thread's.
    unsafe {
        // A process's first thread claims its arena at once: a single-threaded program keeps
        // all its memory in one arena. Threads started later begin on the starter arena.
        let (arena, owns) = if crate::os::single_threaded() {
            arena::claim(cache.addr())
        } else {
            (arena::STARTER, false)
        };
        (*cache).arena = arena;
        (*cache).owns_arena = owns;
        let thread_budget = budget_for(live_caches() + 1);
        let medium_budget = thread_budget / MEDIUM_BUDGET_DIVISOR;
        (*cache).medium = with_arena_at(arena, |arena| {
            MediumCache::create(&mut arena.core, medium_budget)
        })
        .map_or(core::ptr::null_mut(), NonNull::as_ptr);
        let mut budget = thread_budget - medium_budget;
        for class in MIN_CLASS..LISTS {
            let limit = initial_limit(class);
            let bin = bin(class);
            (*bin).limit = limit as u16;
            if is_slot_list(class) {
                (*bin).slot_mask = slot_start_mask(slot_class_of_list(class));
            }
            (*bin).room = if config::secure() {
                SECURE_EMPTY
            } else {
                limit
            };
            budget = budget.saturating_sub(list_bytes(class, limit));
        }
        (*cache).budget_left = budget;
        // Live before the key is set: setting it may allocate (for high key numbers), which
        // must find the cache ready.
        (*cache).state = State::Live;
    }
    register_exit_destructor();
    crate::stats::bump_always(&COUNTERS.caches_started);
}

/// Caches started and not yet retired (racing starts and exits may make it a little off,
/// which only moves a budget by a share).
fn live_caches() -> usize {
    let started = COUNTERS.caches_started.load(Ordering::Relaxed);
    started.saturating_sub(COUNTERS.caches_retired.load(Ordering::Relaxed))
}

/// The byte budget of a cache that starts while `live` caches (its own included) run: the full
/// budget while at most [`SHARED_BUDGETS`] threads run, then an equal share of that many full
/// budgets, but at least a [`MIN_BUDGET_DIVISOR`]th of one. Fixed for the cache's life.
fn budget_for(live: usize) -> usize {
    let full = config::thread_cache_bytes();
    (full.saturating_mul(SHARED_BUDGETS) / live.max(1)).clamp(full / MIN_BUDGET_DIVISOR, full)
}

fn initial_limit(class: usize) -> u32 {
    (INITIAL_LIST_BYTES / block_bytes(class)).clamp(2, 32) as u32
}

fn max_limit(class: usize) -> u32 {
    ((MAX_LIST_BYTES / block_bytes(class)) as u32).min(MAX_LIST_BLOCKS)
}

fn block_bytes(class: usize) -> usize {
    list_block_bytes(class)
}

fn list_bytes(class: usize, blocks: u32) -> usize {
    block_bytes(class) * blocks as usize
}

/// The slot area serving the refills of class `class`: `Some` once the class is promoted (see
/// [`tiny::note_carved`]); never for a tiny slot class's list (whose area is not a promotable
/// class's, so never opens: its refills always come from the slabs).
fn open_area(class: usize) -> Option<usize> {
    area_of_list(class).filter(|&area| tiny::is_open(area))
}

/// Fills the empty list of `class`: from the slabs if the class is promoted and they have
/// slots; else from the core heap, with the class's transfer batch, whole, if the list's
/// limit can be grown to hold it within the thread's budget (a thread that allocates what
/// another frees thus takes a batch per lock), else with up to `MAX_REFILL` fresh blocks, which
/// count towards the class's promotion.
///
/// # Safety
/// `cache` is the calling thread's live cache, whose list of `class` is empty.
unsafe fn refill(cache: *mut ThreadCache, class: usize) -> Option<()> {
    // SAFETY: the list is this thread's; fresh blocks are linked through their first word.
    unsafe {
        if let Some(area) = open_area(class) {
            if refill_from_slabs(cache, class, area) {
                return Some(());
            }
        }
        let bin = bin(class);
        bump(&COUNTERS.refills);
        let (head, fetched) = with_arena_or_room(|arena| {
            let heap = &mut arena.core;
            let batch = heap.batch_len(class);
            while batch > (*bin).room && grow_limit(cache, class) {}
            if let Some((head, count)) = heap.take_batch(class, block_bytes(class), (*bin).room) {
                bump(&COUNTERS.batches_taken);
                return (head.as_ptr(), count);
            }
            let wanted = ((*bin).limit as u32 / 2).clamp(1, MAX_REFILL);
            let (head, made) = heap.allocate_list(layout_of_class(class), wanted, (*bin).head);
            let carved = list_bytes(class, made);
            if area_of_list(class).is_some_and(|area| tiny::note_carved(area, carved)) {
                // Promoted: no refill takes the class's batch any more.
                if let Some((batch, count)) = heap.take_batch(class, block_bytes(class), u32::MAX) {
                    release_list(heap, &mut batch.as_ptr(), count);
                }
            }
            (head, made)
        });
        (*bin).head = head;
        (*bin).room -= fetched;
        note_taken(cache, list_bytes(class, fetched));
        (fetched > 0).then_some(())
    }
}

/// Makes room on the full list of `class` for `freed`: doubles its limit if the budget allows,
/// otherwise sends half its blocks back to their arenas. A list whose last flush sent most of
/// its blocks to other arenas is a consumer's instead, and so is one that overflows on
/// another arena's block: it sends all of them, and shrinks back to its initial limit. Its
/// blocks are then still in the cache when they go (a consumer's list grown to hundreds of
/// blocks was sent back cold, a miss per block), and a thread that only frees others' blocks
/// does not hold its budget's worth of them (nor grows to it before its first flush: peak RSS
/// at 8 threads, TUNING.md).
///
/// # Safety
/// `cache` is the calling thread's live cache; `class` is a valid class; `freed` is a live
/// block of this allocator (its arena is looked up).
unsafe fn make_list_room(cache: *mut ThreadCache, class: usize, freed: NonNull<u8>) {
    // SAFETY: the cache is this thread's.
    unsafe {
        let bin = bin(class);
        if (*bin).sends_away || owner_of(freed).0 != (*cache).arena {
            flush(class, u32::MAX);
            let initial = initial_limit(class);
            let limit = (*bin).limit as u32;
            if limit > initial {
                (*cache).budget_left += list_bytes(class, limit - initial);
                (*bin).limit = initial as u16;
                (*bin).room -= limit - initial;
            }
        } else if !grow_limit(cache, class) {
            flush(class, ((*bin).limit as u32).div_ceil(2));
        }
    }
}

/// Doubles the limit of the list of `class` (at most `max_limit`) if the thread's budget
/// allows. Returns whether it grew.
///
/// # Safety
/// `cache` is the calling thread's live cache; `class` is a valid class.
unsafe fn grow_limit(cache: *mut ThreadCache, class: usize) -> bool {
    // SAFETY: the cache is this thread's.
    unsafe {
        let bin = bin(class);
        let limit = (*bin).limit as u32;
        let grown = (limit * 2).min(max_limit(class));
        let extra = list_bytes(class, grown - limit);
        if grown > limit && extra <= (*cache).budget_left {
            (*cache).budget_left -= extra;
            (*bin).limit = grown as u16;
            (*bin).room += grown - limit;
            true
        } else {
            false
        }
    }
}

/// Sends up to `count` blocks from the front of the list of `class` back to their arenas, in
/// one walk of the list ([`sort_out`]), then the own arena's under its lock ([`give_back_own`]).
///
/// # Safety
/// `class` is a valid class whose list is the calling thread's.
unsafe fn flush(class: usize, count: u32) {
    // SAFETY: forwarded from the caller.
    unsafe {
        let own = sort_out(class, count);
        if own.count() > 0 {
            with_arena_at(thread_arena(), |arena| give_back_own(arena, class, own));
        }
    }
}

/// The own arena's blocks taken off a list by [`sort_out`]: its slots and its core blocks.
struct OwnBlocks {
    slots: Run,
    core: Run,
}

impl OwnBlocks {
    fn count(&self) -> u32 {
        self.slots.count + self.core.count
    }
}

/// Takes up to `count` blocks from the front of the list of `class` in one walk: other arenas'
/// go onto their remote stacks of the list, a chain per arena; the own arena's are returned,
/// for [`give_back_own`]. Notes whether most went to other arenas (see [`make_list_room`]).
///
/// # Safety
/// `class` is a valid class whose list is the calling thread's.
unsafe fn sort_out(class: usize, count: u32) -> OwnBlocks {
    let own_arena = thread_arena();
    let mut own = OwnBlocks {
        slots: Run::EMPTY,
        core: Run::EMPTY,
    };
    let mut chains = Chains::new();
    // SAFETY: the list is this thread's, and its blocks are live blocks of `class`, linked
    // through their first words; each run is given up as it is cut.
    unsafe {
        let bin = bin(class);
        let mut at = (*bin).head;
        let mut taken = 0;
        // A run: blocks in a row on the list of one arena and kind (slot or not), still
        // linked as the list links them, so sorting them writes one link a run, not a block.
        while let Some(first) = NonNull::new(at).filter(|_| taken < count) {
            let owner = owner_of(first);
            let (mut last, mut len) = (first, 1);
            at = link::next(first);
            while let Some(next) = NonNull::new(at).filter(|_| taken + len < count) {
                let near =
                    (next.as_ptr().addr() ^ last.as_ptr().addr()) >> arena::SAME_OWNER_SHIFT == 0;
                if !near && owner_of(next) != owner {
                    break;
                }
                (last, len) = (next, len + 1);
                at = link::next(next);
            }
            taken += len;
            match owner {
                (arena, _) if arena != own_arena => chains.add(arena, class, first, last, len),
                (_, true) => own.slots.add(first, last, len),
                (_, false) => own.core.add(first, last, len),
            }
        }
        (*bin).head = at;
        (*bin).room += taken;
        chains.push_all();
        let kept = own.count();
        (*bin).sends_away = kept < taken - kept;
    }
    bump(&COUNTERS.flushes);
    own
}

/// Gives the own arena's blocks of `class` that [`sort_out`] took back to `arena` (the calling
/// thread's, locked): slots to the slabs (as a batch when they have room) and core blocks as
/// the class's transfer batch if the heap takes it (never for a promoted class, whose refills
/// do not look for one), else block by block.
///
/// # Safety
/// `own` holds live blocks of `class` of `arena` that nobody else uses.
unsafe fn give_back_own(arena: &mut Backends, class: usize, own: OwnBlocks) {
    // SAFETY: forwarded from the caller.
    unsafe {
        if own.slots.count > 0 {
            arena.slabs.give_back(own.slots.head, own.slots.count);
        }
        // Asked under the arena's lock, under which a class is promoted (and its batch
        // dropped), so no batch is left to a promoted class.
        let batched = own.core.count > 0
            && open_area(class).is_none()
            && arena.core.offer_batch(
                class,
                NonNull::new_unchecked(own.core.head),
                own.core.count,
                block_bytes(class),
            );
        if !batched {
            release_list(&mut arena.core, &mut { own.core.head }, own.core.count);
        }
    }
}

/// The arena of a block on the way out of a thread's cache, and whether it is a slot; a
/// pointer in no arena's memory (a foreign pointer passed to `free`) is reported.
#[inline(always)]
fn owner_of(block: NonNull<u8>) -> (usize, bool) {
    match arena::owner(block) {
        Some(owner) => owner,
        None => fault::invalid_pointer("free", block.as_ptr()),
    }
}

/// A list of blocks linked through their first words, null-terminated, and its length.
struct Run {
    head: *mut u8,
    count: u32,
}

impl Run {
    const EMPTY: Run = Run {
        head: core::ptr::null_mut(),
        count: 0,
    };

    /// Puts the `len` blocks linked from `first` to `last` (whose link is overwritten) at the
    /// front.
    ///
    /// # Safety
    /// The blocks are the caller's to link.
    #[inline(always)]
    unsafe fn add(&mut self, first: NonNull<u8>, last: NonNull<u8>, len: u32) {
        // SAFETY: forwarded from the caller.
        unsafe { link::set(last, self.head) };
        self.head = first.as_ptr();
        self.count += len;
    }
}

/// Frees up to `count` blocks from the front of the list at `head` into the core heap.
/// Returns how many.
///
/// # Safety
/// The list's blocks are live core-heap blocks that nobody else uses.
unsafe fn release_list(heap: &mut core_heap::CoreHeap, head: &mut *mut u8, count: u32) -> u32 {
    let mut released = 0;
    while released < count {
        let Some(block) = NonNull::new(*head) else {
            break;
        };
        // SAFETY: a listed block's first word is the link; the block is then given back.
        unsafe {
            *head = link::next(block);
            heap.free(block);
        }
        released += 1;
    }
    released
}

/// Empties the calling thread's cache into the core heap for good (thread exit).
fn retire() {
    let cache = current();
    // SAFETY: the cache is this thread's; emptied lists get room 0 so nothing is pushed again.
    unsafe {
        if (*cache).state != State::Live {
            return;
        }
        // Every list is sorted out first, then the own arena's blocks go back under one
        // lock: a short-lived thread had cached a few blocks of many classes, and a lock per
        // class made its exit contend with every starting thread on the starter arena.
        let mut own: [OwnBlocks; LISTS] = [const {
            OwnBlocks {
                slots: Run::EMPTY,
                core: Run::EMPTY,
            }
        }; LISTS];
        for (class, blocks) in own.iter_mut().enumerate().skip(MIN_CLASS) {
            *blocks = sort_out(class, u32::MAX);
            let bin = bin(class);
            (*bin).room = 0;
            (*bin).limit = 0;
        }
        if own.iter().any(|blocks| blocks.count() > 0) {
            with_arena_at((*cache).arena, |arena| {
                for (class, blocks) in own.into_iter().enumerate() {
                    if blocks.count() > 0 {
                        give_back_own(arena, class, blocks);
                    }
                }
            });
        }
        let mut router = Router::new((*cache).arena);
        if let Some(medium) = medium_cache(cache) {
            (*cache).medium = core::ptr::null_mut();
            MediumCache::destroy(medium, &mut |block| router.add(block));
        }
        router.finish();
        large::retire_slot(&mut (*cache).large);
        (*cache).state = State::Dead;
        // The arena's memory, blocks still in use included, waits for the next thread; what
        // other threads freed into it is filed first, since no owner will take it now.
        if (*cache).owns_arena {
            let own = (*cache).arena;
            with_arena_at(own, |arena| arena::file_remote_all(own, arena));
            arena::abandon(own);
        }
    }
    crate::stats::bump_always(&COUNTERS.caches_retired);
}

/// The pthread key whose destructor retires a thread's cache, plus one (0: not created yet).
static EXIT_KEY: AtomicUsize = AtomicUsize::new(0);
/// Marks the key as being created by some thread.
const KEY_CREATING: usize = usize::MAX;

/// Creates the exit key if needed (called from the constructor too, so it gets a low number).
pub(crate) fn exit_key() -> Option<libc::pthread_key_t> {
    loop {
        match EXIT_KEY.load(Ordering::Acquire) {
            0 => {
                if EXIT_KEY
                    .compare_exchange(0, KEY_CREATING, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return create_exit_key();
                }
            }
            KEY_CREATING => core::hint::spin_loop(),
            key_plus_one => return Some((key_plus_one - 1) as libc::pthread_key_t),
        }
    }
}

fn create_exit_key() -> Option<libc::pthread_key_t> {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is valid for writes; glibc creates keys with atomics only, no allocation.
    let created = unsafe { libc::pthread_key_create(&mut key, Some(exit_destructor)) } == 0;
    let stored = if created { key as usize + 1 } else { 0 };
    EXIT_KEY.store(stored, Ordering::Release);
    created.then_some(key)
}

extern "C" fn exit_destructor(_value: *mut libc::c_void) {
    retire();
}

/// Arranges for this thread's cache to be retired when the thread exits.
fn register_exit_destructor() {
    let Some(key) = exit_key() else {
        return;
    };
    // Any non-null value makes glibc run the destructor; the cache itself is found through TLS.
    let marker = NonNull::<u8>::dangling().as_ptr().cast();
    // SAFETY: `key` is a live key; the value is never dereferenced.
    unsafe { libc::pthread_setspecific(key, marker) };
}
