//! A wasm32 module (`wasm32-unknown-unknown`, no JavaScript glue) whose `#[global_allocator]`
//! is heapworks over a static arena in the module's linear memory.
//!
//! heapworks has no wasm memory source yet (nothing calls `memory.grow` to claim more), so the
//! heap is the 4 MiB arena below and no larger: a request it cannot serve returns null, and
//! `alloc`'s collections then trap. A wasm module runs on one thread, hence [`UnsyncHeap`] (no
//! lock).
#![no_std]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use heapworks::UnsyncHeap;

const ARENA_LEN: usize = 4 << 20;
static mut ARENA: [u8; ARENA_LEN] = [0; ARENA_LEN];

#[global_allocator]
// SAFETY: the module runs on one thread and never allocates from its panic handler (it traps),
// so no two calls into the heap overlap; the arena is used by the heap alone.
static HEAP: UnsyncHeap = unsafe { UnsyncHeap::with_region(&raw mut ARENA as *mut u8, ARENA_LEN) };

/// The number of primes below `n`, by a sieve in a heap-allocated vector (the primes are
/// collected too, so the heap serves a growing vector as well).
#[no_mangle]
pub extern "C" fn primes_below(n: u32) -> u32 {
    let n = n as usize;
    let mut composite = vec![false; n];
    let mut primes = Vec::new();
    for i in 2..n {
        if !composite[i] {
            primes.push(i as u32);
            if let Some(square) = i.checked_mul(i) {
                (square..n).step_by(i).for_each(|j| composite[j] = true);
            }
        }
    }
    primes.len() as u32
}

/// Bytes the heap has in use (0 once every collection is dropped).
#[no_mangle]
pub extern "C" fn heap_in_use() -> u32 {
    // SAFETY: no allocation is in progress (single thread, called from outside).
    unsafe { HEAP.heap() }.stats().in_use as u32
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    core::arch::wasm32::unreachable()
}
