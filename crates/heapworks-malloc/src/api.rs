//! The exported C functions: glibc's malloc family plus C23's `free_sized`.
//!
//! Invariants: every request is routed by size: up to `SLOT_MAX_REQUEST` bytes to a tiny slot
//! (see [`crate::tiny`]) through the calling thread's cache, up to `SMALL_MAX_REQUEST` bytes
//! through the calling thread's cache (a core block, or a slot once the class is promoted), up
//! to [`LARGE_MIN`] bytes through its medium cache to the core heap, above that to a page
//! mapping of its own. Slots are told by their address (below [`tiny::end`], which `free`
//! checks instead of NULL), other blocks by the word before them (see [`crate::large`]).
//! Failures return NULL with errno `ENOMEM` (impossible sizes, no memory) or `EINVAL` (bad
//! alignment); `free` never changes errno. Alignment is at least 16 bytes.

use core::alloc::Layout;
use core::ffi::{c_int, c_void};
use core::ptr::{null_mut, NonNull};

use heapworks::GRANULE;

use crate::address_map;
use crate::config;
use crate::core_heap;
use crate::fault;
use crate::large;
use crate::os::{self, PAGE};
use crate::secure;
use crate::size_class::{
    class_of_request, class_of_usable, guarded_list_of_request, is_slot_list,
    list_offset_of_request, slot_class_of_list, slot_class_of_request, MAX_CLASS, SLOT_AREAS,
    SLOT_MAX_REQUEST, SMALL_MAX_REQUEST,
};
use crate::stats::{bump, COUNTERS};
use crate::thread;
use crate::tiny;

/// The largest request that can succeed (glibc's limit too: `PTRDIFF_MAX`).
const MAX_REQUEST: usize = isize::MAX as usize;
/// Requests above this get a mapping of their own.
pub(crate) const LARGE_MIN: usize = 256 << 10;
/// A block grown in place by realloc takes `1 / GROWTH_HEADROOM_DIVISOR` more than asked.
const GROWTH_HEADROOM_DIVISOR: usize = 8;
/// A realloc that shrinks a block by less than this (or by less than half) keeps it as it is.
const SHRINK_SLACK: usize = 256;

/// Allocates `size` bytes aligned to 16; `malloc(0)` returns a unique minimal block.
///
/// # Safety
/// Always safe to call; unsafe only because it is the C ABI entry point.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    if size <= SMALL_MAX_REQUEST {
        // SAFETY: the list of a small request is a valid list.
        if let Some(block) = unsafe { thread::pop_at(list_offset_of_request(size)) } {
            return block.as_ptr().cast();
        }
    }
    allocate_slow(size)
}

/// `malloc` beyond the thread cache's fast path. `extern "C"` (hence never unwinding) so that
/// `malloc` reaches it with a tail jump and needs no stack frame of its own.
#[inline(never)]
extern "C" fn allocate_slow(size: usize) -> *mut c_void {
    let block = if size <= SLOT_MAX_REQUEST {
        allocate_slot_request(size)
    } else if size <= SMALL_MAX_REQUEST {
        thread::pop_slow(class_of_request(size))
    } else if size <= LARGE_MIN {
        thread::pop_medium(size).or_else(|| thread::allocate_medium(size))
    } else if size <= MAX_REQUEST {
        thread::allocate_large(size, GRANULE).map(|large| large.ptr)
    } else {
        None
    };
    out_of_memory_if_none(block)
}

/// A request of at most `SLOT_MAX_REQUEST` bytes beyond the fast path: its tiny slot, or in
/// secure mode the list that leaves a slot's canary word unused (as the fast path's table
/// does then, see [`crate::size_class::guard_slots`]).
fn allocate_slot_request(size: usize) -> Option<NonNull<u8>> {
    if !config::secure() {
        return thread::pop_slot(slot_class_of_request(size));
    }
    let list = guarded_list_of_request(size);
    if is_slot_list(list) {
        thread::pop_slot(slot_class_of_list(list))
    } else {
        thread::pop_slow(list)
    }
}

/// The block's pointer, or NULL with errno `ENOMEM`.
fn out_of_memory_if_none(block: Option<NonNull<u8>>) -> *mut c_void {
    match block {
        Some(block) => block.as_ptr().cast(),
        None => {
            os::set_errno(libc::ENOMEM);
            null_mut()
        }
    }
}

fn allocate_in_core(size: usize, align: usize) -> Option<NonNull<u8>> {
    thread::allocate_core(Layout::from_size_align(size, align).ok()?)
}

/// Frees a block from any function of this family; NULL is ignored. Keeps errno.
///
/// # Safety
/// `ptr` is NULL or a live block of this allocator, not used after this call.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn free(ptr: *mut c_void) {
    // Tiny slots first: the test of the area, with the alignment folded in, replaces the test
    // of `tiny::end` they took before, which pays for the slot-start test (see
    // `thread::push_tiny_slot`); other blocks pay both tests.
    if let Some((area, granule)) = tiny::aligned_tiny_area(ptr.cast()) {
        // SAFETY: a pointer in a slot area is not NULL, and one the caller frees is a live
        // slot of that area, whose start `push_tiny_slot` checks as far as its mask tells.
        return unsafe {
            thread::push_tiny_slot(NonNull::new_unchecked(ptr.cast()), area, granule)
        };
    }
    if ptr.addr() < tiny::end() {
        // SAFETY: forwarded from the caller.
        return unsafe { free_low(ptr) };
    }
    // SAFETY: `ptr` is at least `tiny::end()`, which is at least 1.
    let block = unsafe { NonNull::new_unchecked(ptr.cast::<u8>()) };
    // SAFETY: forwarded from the caller.
    unsafe { free_with_header(block) }
}

/// `free` of a pointer below [`tiny::end`]: NULL, a slot, or (only if the OS placed one
/// there) a block with a header.
///
/// # Safety
/// As for [`free`].
#[inline(never)]
unsafe extern "C" fn free_low(ptr: *mut c_void) {
    let ptr = ptr.cast::<u8>();
    // (`free` took the aligned tiny slots.)
    let area = tiny::area_of(ptr);
    if area < SLOT_AREAS {
        // A misaligned pointer is no slot's start (it would be pushed as a block that
        // overlaps live ones, and handed out by a later malloc).
        if !ptr.addr().is_multiple_of(1 << tiny::SLOT_ALIGN_SHIFT) {
            fault::not_a_slot_start(ptr);
        }
        // SAFETY: as above.
        return unsafe { thread::push_slot(NonNull::new_unchecked(ptr), area) };
    }
    let Some(block) = NonNull::new(ptr) else {
        return;
    };
    // SAFETY: forwarded from the caller; the block is not a slot.
    unsafe { free_with_header(block) }
}

/// `free` of a block with a header word: a core-heap block or a large one. Out of line, so
/// that its checks and calls cost `free`'s tiny-slot path no saved registers.
///
/// # Safety
/// `block` is a live block of this allocator other than a slot, not used after this call.
#[inline(never)]
unsafe extern "C" fn free_with_header(block: NonNull<u8>) {
    // Every block with a header starts on a granule: a pointer off one starts no block, and
    // the word before it is no header but bytes read askew, whose value is luck.
    if !block.as_ptr().addr().is_multiple_of(GRANULE) {
        fault::invalid_pointer("free", block.as_ptr());
    }
    // SAFETY: `block` is live and not a slot, so it has a header word.
    unsafe {
        if large::is_large(block) {
            return free_large(block);
        }
        let class = class_of_usable(core_heap::usable_size(block));
        if class > MAX_CLASS {
            return free_medium(block);
        }
        if !thread::push(block, class) {
            free_small_slow(block);
        }
    }
}

/// `free` of a small block whose list is full (or whose thread has no cache yet). Finds the
/// class again rather than taking it, which keeps `free`'s fast path shorter.
///
/// # Safety
/// `block` is a live small core-heap block, not used after this call.
#[inline(never)]
unsafe extern "C" fn free_small_slow(block: NonNull<u8>) {
    // SAFETY: forwarded from the caller.
    unsafe { thread::push_slow(block, class_of_usable(core_heap::usable_size(block))) }
}

/// # Safety
/// `block` is a live core-heap block above the small classes, not used after this call.
#[inline(never)]
unsafe extern "C" fn free_medium(block: NonNull<u8>) {
    if address_map::owner(block.as_ptr().addr()).is_none() {
        fault::invalid_pointer("free", block.as_ptr());
    }
    // SAFETY: the block lies in the core heap's span: its header word is readable.
    if unsafe { core_heap::usable_size(block) } > 2 * LARGE_MIN {
        // No medium block is that large: the header was overwritten (an overflow from the
        // block before, or an interior pointer's "header" is the program's data).
        fault::corrupted("free", block.as_ptr());
    }
    // SAFETY: the block is, or was, a core-heap block (the caller's promise; the span
    // check above rules out most other pointers), and the heap's regions are never given up.
    if !unsafe { heapworks::Heap::looks_live(block) } {
        // SAFETY: as above: its header is readable.
        fault::double_free(block.as_ptr(), unsafe { core_heap::usable_size(block) });
    }
    if config::secure() {
        // SAFETY: forwarded from the caller.
        if let Some((evicted, bytes)) = unsafe { secure::free(block) } {
            // SAFETY: the block left the quarantine, checked.
            unsafe { thread::release_evicted(evicted, bytes) };
        }
        return;
    }
    // SAFETY: forwarded from the caller.
    unsafe { thread::push_medium(block, core_heap::usable_size(block)) }
}

/// # Safety
/// `block` is a live large block, not used after this call.
#[inline(never)]
unsafe extern "C" fn free_large(block: NonNull<u8>) {
    // SAFETY: forwarded from the caller.
    unsafe { thread::free_large(block) }
}

/// C23's `free_sized`: frees `ptr` (the size is not needed).
///
/// # Safety
/// As for [`free`].
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn free_sized(ptr: *mut c_void, _size: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(ptr) }
}

/// C23's `free_aligned_sized`: frees `ptr` (alignment and size are not needed).
///
/// # Safety
/// As for [`free`].
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn free_aligned_sized(ptr: *mut c_void, _alignment: usize, _size: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(ptr) }
}

/// Allocates `count * size` zeroed bytes; an overflowing product fails with `ENOMEM`.
///
/// # Safety
/// Always safe to call; unsafe only because it is the C ABI entry point.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    let Some(total) = count
        .checked_mul(size)
        .filter(|&total| total <= MAX_REQUEST)
    else {
        os::set_errno(libc::ENOMEM);
        return null_mut();
    };
    if total > LARGE_MIN {
        let block = thread::allocate_large(total, GRANULE);
        if let Some(large) = &block {
            if !large.zeroed {
                // SAFETY: the block holds `total` bytes.
                unsafe { large.ptr.write_bytes(0, total) };
            }
        }
        return out_of_memory_if_none(block.map(|large| large.ptr));
    }
    // Secure mode's slots end with a canary, which zeroing the whole slot would clear.
    if total <= SLOT_MAX_REQUEST && !config::secure() {
        return calloc_slot(slot_class_of_request(total));
    }
    // SAFETY: plain allocation.
    let block = unsafe { malloc(total) };
    if !block.is_null() {
        // SAFETY: the block holds `total` bytes.
        unsafe { block.cast::<u8>().write_bytes(0, total) };
    }
    block
}

/// `calloc` of at most `SLOT_MAX_REQUEST` bytes: a slot of `slot_class` zeroed whole by one
/// 16-byte store per granule, not a call to `memset`. (A core block served instead, when no slab can
/// be had, holds at least as much as the slot.)
#[inline(always)]
fn calloc_slot(slot_class: usize) -> *mut c_void {
    let Some(block) = thread::pop_slot(slot_class) else {
        return out_of_memory_if_none(None);
    };
    let granules = block.cast::<u128>();
    // SAFETY: the block is ours, 16-aligned and holds `slot_class` granules.
    unsafe {
        for granule in 0..slot_class {
            granules.add(granule).write(0);
        }
    }
    block.as_ptr().cast()
}

/// Resizes a block, in place when it can: heap blocks grow into a free neighbour and shrink by
/// splitting; large blocks move with `mremap`. `realloc(NULL, n)` is `malloc(n)`;
/// `realloc(p, 0)` frees `p` and returns NULL (glibc's behaviour). On failure (NULL, `ENOMEM`)
/// the block is untouched.
///
/// # Safety
/// `ptr` is NULL or a live block of this allocator; on success it is not used again.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    let Some(block) = NonNull::new(ptr.cast::<u8>()) else {
        // SAFETY: plain allocation.
        return unsafe { malloc(size) };
    };
    if size == 0 {
        // SAFETY: the caller gives the block up.
        unsafe { free(ptr) };
        return null_mut();
    }
    if size > MAX_REQUEST {
        os::set_errno(libc::ENOMEM);
        return null_mut();
    }
    // SAFETY: `block` is not NULL; its word before is readable unless it is a slot.
    if config::secure() && (tiny::is_slot(block.as_ptr()) || !unsafe { large::is_large(block) }) {
        // SAFETY: as above, and not a large block.
        unsafe { secure::check_live(block) };
    }
    if tiny::is_slot(block.as_ptr()) {
        let usable = tiny::usable_bytes(block);
        // SAFETY: `block` is a live slot of `usable` bytes.
        return unsafe { realloc_slot(block, usable, size) };
    }
    // SAFETY: `block` is live (the caller's promise) and has a header word.
    unsafe {
        if large::is_large(block) {
            match large::header(block) {
                large::Header::Live(_) => realloc_large(block, size),
                large::Header::Freed(len) => fault::freed_block("realloc", block.as_ptr(), len),
                large::Header::Invalid => fault::invalid_pointer("realloc", block.as_ptr()),
            }
        } else {
            realloc_heap_block(block, size)
        }
    }
}

/// A slot keeps a request that fits it, unless that would leave more unused than a heap
/// block keeps (see [`realloc_heap_block`]: never for a tiny slot), and moves for any other.
///
/// # Safety
/// `block` is a live slot of `usable` bytes; `0 < size <= MAX_REQUEST`.
unsafe fn realloc_slot(block: NonNull<u8>, usable: usize, size: usize) -> *mut c_void {
    if size <= usable && usable - size < SHRINK_SLACK.max(usable / 2) {
        bump(&COUNTERS.realloc_in_place);
        return block.as_ptr().cast();
    }
    // SAFETY: the slot holds `usable` bytes.
    unsafe { move_block(block, usable, size) }
}

/// # Safety
/// `block` is a live core-heap block; `0 < size <= MAX_REQUEST`.
unsafe fn realloc_heap_block(block: NonNull<u8>, size: usize) -> *mut c_void {
    // SAFETY: `block` is live.
    let usable = unsafe { core_heap::usable_size(block) };
    let keeps = size <= usable && usable - size < SHRINK_SLACK.max(usable / 2);
    // SAFETY: `block` is live; resizing in place keeps it so.
    if keeps || (size <= LARGE_MIN && unsafe { resize_with_headroom(block, usable, size) }) {
        bump(&COUNTERS.realloc_in_place);
        return block.as_ptr().cast();
    }
    // SAFETY: a shrink always succeeds in place above, so this grows.
    unsafe { move_block(block, usable, size) }
}

/// Resizes a heap block in place. A block that grows in place takes an eighth more than asked
/// when its neighbour has it, so a block grown step by step (a buffer appended to) reaches the
/// core heap once per eighth of its size instead of at every step.
///
/// # Safety
/// `block` is a live core-heap block of `usable` bytes; `size <= LARGE_MIN`.
unsafe fn resize_with_headroom(block: NonNull<u8>, usable: usize, size: usize) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe {
        thread::resize_in_place(block, |heap| {
            (size > usable && heap.resize_in_place(block, size + size / GROWTH_HEADROOM_DIVISOR))
                || heap.resize_in_place(block, size)
        })
    }
}

/// # Safety
/// `block` is a live large block; `0 < size <= MAX_REQUEST`.
unsafe fn realloc_large(block: NonNull<u8>, size: usize) -> *mut c_void {
    // Secure mode's large blocks end against a guard page and are never resized in place.
    if size <= LARGE_MIN / 2 || config::secure() {
        // SAFETY: `block` is live; small sizes move back to the heap.
        return unsafe { move_block(block, large::usable_size(block), size) };
    }
    // SAFETY: `block` is live (and stays so when `large::realloc` fails).
    let resized = unsafe { large::realloc(block, size) }.or_else(|| {
        thread::make_room();
        // SAFETY: as above.
        unsafe { large::realloc(block, size) }
    });
    if let Some(resized) = resized {
        bump(&COUNTERS.realloc_in_place);
        return resized.as_ptr().cast();
    }
    // The kernel refused (no room, or a reused range spans two kernel mappings): a shrink keeps
    // the block as it is, a growth copies.
    // SAFETY: `block` is live.
    let usable = unsafe { large::usable_size(block) };
    if size <= usable {
        return block.as_ptr().cast();
    }
    // SAFETY: `block` is live and holds `usable` bytes.
    unsafe { move_block(block, usable, size) }
}

/// Moves a block's first `min(usable, size)` bytes to a new block of `size` bytes.
///
/// # Safety
/// `block` is a live block holding `usable` bytes.
unsafe fn move_block(block: NonNull<u8>, usable: usize, size: usize) -> *mut c_void {
    // SAFETY: plain allocation.
    let moved = unsafe { malloc(size) };
    if !moved.is_null() {
        // SAFETY: both blocks are live, distinct, and hold the bytes copied; the old one is
        // then given up.
        unsafe {
            core::ptr::copy_nonoverlapping(block.as_ptr(), moved.cast(), usable.min(size));
            free(block.as_ptr().cast());
        }
        bump(&COUNTERS.realloc_moved);
    }
    moved
}

/// `realloc(ptr, count * size)`, failing with `ENOMEM` when the product overflows.
///
/// # Safety
/// As for [`realloc`].
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn reallocarray(ptr: *mut c_void, count: usize, size: usize) -> *mut c_void {
    match count.checked_mul(size) {
        // SAFETY: forwarded from the caller.
        Some(total) => unsafe { realloc(ptr, total) },
        None => {
            os::set_errno(libc::ENOMEM);
            null_mut()
        }
    }
}

/// Allocates `size` bytes aligned to `align` (a power of two).
fn allocate_aligned(align: usize, size: usize) -> *mut c_void {
    if align <= GRANULE {
        // SAFETY: plain allocation.
        return unsafe { malloc(size) };
    }
    let block = if size > MAX_REQUEST - align {
        None
    } else if size > LARGE_MIN || align > PAGE {
        thread::allocate_large(size, align).map(|large| large.ptr)
    } else {
        bump(&COUNTERS.core_direct);
        allocate_in_core(size, align)
    };
    out_of_memory_if_none(block)
}

/// POSIX: stores a block of `size` bytes aligned to `align` in `*memptr` and returns 0; returns
/// `EINVAL` unless `align` is a power of two and a multiple of `sizeof(void *)`, `ENOMEM` when
/// out of memory (leaving `*memptr` and errno alone).
///
/// # Safety
/// `memptr` is valid for a pointer write.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn posix_memalign(
    memptr: *mut *mut c_void,
    align: usize,
    size: usize,
) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(core::mem::size_of::<*mut c_void>()) {
        return libc::EINVAL;
    }
    let saved = os::errno();
    let block = allocate_aligned(align, size);
    if block.is_null() {
        os::set_errno(saved);
        return libc::ENOMEM;
    }
    // SAFETY: the caller's promise.
    unsafe { memptr.write(block) };
    0
}

/// C17: a block of `size` bytes aligned to `align`; NULL with `EINVAL` unless `align` is a power
/// of two (as glibc 2.38 and later; 2.36 rounded it up).
///
/// # Safety
/// Always safe to call; unsafe only because it is the C ABI entry point.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    if !align.is_power_of_two() {
        os::set_errno(libc::EINVAL);
        return null_mut();
    }
    allocate_aligned(align, size)
}

/// glibc's `memalign`: alignments up to 16 are plain `malloc`; others that are not a power of
/// two round up to the next one; one above `SIZE_MAX / 2 + 1` fails with `EINVAL`.
///
/// # Safety
/// Always safe to call; unsafe only because it is the C ABI entry point.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    match align.checked_next_power_of_two() {
        Some(align) => allocate_aligned(align, size),
        None => {
            os::set_errno(libc::EINVAL);
            null_mut()
        }
    }
}

/// A page-aligned block of `size` bytes.
///
/// # Safety
/// Always safe to call; unsafe only because it is the C ABI entry point.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn valloc(size: usize) -> *mut c_void {
    allocate_aligned(PAGE, size)
}

/// A page-aligned block of `size` bytes rounded up to whole pages (overflow: `ENOMEM`).
///
/// # Safety
/// Always safe to call; unsafe only because it is the C ABI entry point.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn pvalloc(size: usize) -> *mut c_void {
    match os::round_to_pages(size) {
        Some(rounded) => allocate_aligned(PAGE, rounded),
        None => {
            os::set_errno(libc::ENOMEM);
            null_mut()
        }
    }
}

/// The bytes the block can hold (at least what was asked for); 0 for NULL.
///
/// # Safety
/// `ptr` is NULL or a live block of this allocator.
#[cfg_attr(not(heapworks_unexported), no_mangle)]
pub unsafe extern "C" fn malloc_usable_size(ptr: *mut c_void) -> usize {
    let Some(block) = NonNull::new(ptr.cast::<u8>()) else {
        return 0;
    };
    if tiny::is_slot(block.as_ptr()) {
        return tiny::usable_bytes(block);
    }
    // A pointer that is not a block of ours has no usable size: 0, as glibc answers for one
    // it can tell is not its own. Below the slots' region lies nothing of ours but slots.
    if block.as_ptr().addr() < tiny::end() {
        return 0;
    }
    // SAFETY: a pointer of ours has a header word, and one the checks reject is not read
    // further than the two words before it (the caller's pointer into readable memory).
    unsafe {
        if large::is_large(block) {
            match large::header(block) {
                large::Header::Live(_) => large::usable_size(block),
                _ => 0,
            }
        } else if address_map::owner(block.as_ptr().addr()).is_some() {
            core_heap::usable_size(block)
        } else {
            0
        }
    }
}
