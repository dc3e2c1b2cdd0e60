//! The firmware image over embedded-alloc's LLFF heap, on the region memory.x sets aside.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use embedded_alloc::LlffHeap;
use panic_halt as _;

#[global_allocator]
static HEAP: LlffHeap = LlffHeap::empty();

#[entry]
fn main() -> ! {
    let (base, len) = firmware_common::heap_region();
    // SAFETY: the linker reserved the region for the heap alone; initialized once, before any
    // allocation.
    unsafe { HEAP.init(base.addr(), len) };
    firmware_common::run()
}
