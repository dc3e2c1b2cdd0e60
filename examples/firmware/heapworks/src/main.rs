//! The firmware image over heapworks: a `CriticalSectionHeap` (interrupts masked while the heap
//! is locked, by cortex-m's single-core critical section) on the region memory.x sets aside.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use heapworks::CriticalSectionHeap;
use panic_halt as _;

#[global_allocator]
static HEAP: CriticalSectionHeap = CriticalSectionHeap::new();

#[entry]
fn main() -> ! {
    let (base, len) = firmware_common::heap_region();
    // SAFETY: the linker reserved the region for the heap alone; claimed once, before any
    // allocation.
    if unsafe { HEAP.claim(base, len) }.is_err() {
        firmware_common::halt();
    }
    firmware_common::run()
}
