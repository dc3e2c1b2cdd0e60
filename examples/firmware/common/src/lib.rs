//! What every firmware image shares, so that the images differ only in their allocator: the heap
//! region the linker sets aside (memory.x) and a workload that allocates, grows, shrinks and
//! frees through `alloc`'s collections.
#![no_std]

extern crate alloc;

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::vec::Vec;
use core::hint::black_box;

extern "C" {
    // Defined by memory.x: the bounds of the `.heap` section.
    static mut __heap_start: u8;
    static mut __heap_end: u8;
}

/// The heap region memory.x sets aside: its base and length in bytes.
pub fn heap_region() -> (*mut u8, usize) {
    let start = &raw mut __heap_start;
    let end = &raw mut __heap_end;
    (start, end.addr() - start.addr())
}

/// Stops the core: the images' answer to a heap that cannot be set up.
pub fn halt() -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}

/// Allocates, reallocates and frees as a small firmware does (buffers that grow, a queue, a
/// map of records), a few rounds; returns a checksum so nothing is optimized away.
pub fn exercise() -> u32 {
    let mut sum = 0u32;
    for round in 0..black_box(4u32) {
        let mut samples: Vec<u32> = Vec::new();
        for i in 0..black_box(200) {
            samples.push(i * round);
        }
        samples.shrink_to_fit();
        let mut queue: VecDeque<Box<[u8]>> = VecDeque::new();
        for i in 0..black_box(32usize) {
            queue.push_back(alloc::vec![i as u8; 16 + i * 8].into_boxed_slice());
            if i % 3 == 0 {
                sum = sum.wrapping_add(queue.pop_front().map_or(0, |b| b.len() as u32));
            }
        }
        let mut records: BTreeMap<u32, Vec<u8>> = BTreeMap::new();
        for i in 0..black_box(64u32) {
            records.insert(
                i.wrapping_mul(2654435761) % 1000,
                alloc::vec![0; (i % 7) as usize],
            );
        }
        records.retain(|k, _| k % 2 == 0);
        sum = sum.wrapping_add(samples.iter().sum::<u32>() + records.len() as u32);
    }
    black_box(sum)
}

/// The images' main loop after the heap is set up: the workload, then sleep.
pub fn run() -> ! {
    black_box(exercise());
    halt()
}
