//! The firmware image over talc, behind heapworks' critical-section lock (the lock the heapworks
//! image uses), on the region memory.x sets aside.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use heapworks::CriticalSectionLock;
use panic_halt as _;
use talc::source::Manual;
use talc::TalcLock;

#[global_allocator]
static HEAP: TalcLock<CriticalSectionLock, Manual> = TalcLock::new(Manual);

#[entry]
fn main() -> ! {
    let (base, len) = firmware_common::heap_region();
    // SAFETY: the linker reserved the region for the heap alone; claimed once, before any
    // allocation.
    if unsafe { HEAP.lock().claim(base, len) }.is_none() {
        firmware_common::halt();
    }
    firmware_common::run()
}
