//! A kernel's heap, the way a `no_std` kernel sets one up: heapworks' [`LockedHeap`] (a spin
//! lock: kernels have no OS lock to take) is the `#[global_allocator]`, over a static boot arena
//! that serves the allocations made before the memory map is read; the regions the memory map
//! reports free are added afterwards with [`add_memory`].
//!
//! Invariant: the boot arena is used by the heap alone, and so is every region given to
//! [`add_memory`].
#![no_std]

use heapworks::{ClaimError, LockedHeap, Stats};

/// The boot arena's size: enough for what runs before the memory map is read.
pub const BOOT_ARENA_LEN: usize = 1 << 20;

static mut BOOT_ARENA: [u8; BOOT_ARENA_LEN] = [0; BOOT_ARENA_LEN];

#[global_allocator]
// SAFETY: the boot arena is used by nothing but this heap.
static HEAP: LockedHeap =
    unsafe { LockedHeap::with_region(&raw mut BOOT_ARENA as *mut u8, BOOT_ARENA_LEN) };

/// Hands the heap a region of free memory (say, one the bootloader's memory map lists as usable
/// RAM); blocks too large for the boot arena then come from it.
///
/// # Safety
/// `[base, base + len)` is writable memory that nothing else uses, for as long as the kernel runs.
pub unsafe fn add_memory(base: *mut u8, len: usize) -> Result<(), ClaimError> {
    // SAFETY: forwarded from the caller.
    unsafe { HEAP.claim(base, len) }
}

/// The heap's statistics: bytes in use and free over every region.
pub fn heap_stats() -> Stats {
    HEAP.lock().stats()
}

/// Whether `ptr` lies in the boot arena.
pub fn in_boot_arena(ptr: *const u8) -> bool {
    let base = (&raw const BOOT_ARENA).addr();
    (base..base + BOOT_ARENA_LEN).contains(&ptr.addr())
}

/// Walks the whole heap and checks every chunk and free list (a kernel's debug command).
pub fn check_heap() -> bool {
    HEAP.lock().check().is_ok()
}
