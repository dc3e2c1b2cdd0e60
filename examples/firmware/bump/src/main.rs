//! The baseline image: the same program over a bump allocator that never frees (a dozen
//! instructions), so that another image's size minus this one's is its allocator's footprint.
#![no_std]
#![no_main]

use core::alloc::{GlobalAlloc, Layout};
use core::cell::Cell;
use core::ptr::null_mut;

use cortex_m_rt::entry;
use critical_section::Mutex;
use panic_halt as _;

/// The unused part of the heap region: `[next, end)`.
struct Bump {
    next: Mutex<Cell<usize>>,
    end: Mutex<Cell<usize>>,
}

// SAFETY: blocks are carved from the unused part of the region, under a critical section, and
// never handed out twice; failure is null.
unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        critical_section::with(|cs| {
            let (base, _) = firmware_common::heap_region();
            let next = self.next.borrow(cs);
            let start = next.get().next_multiple_of(layout.align());
            match start.checked_add(layout.size()) {
                Some(end) if end <= self.end.borrow(cs).get() => {
                    next.set(end);
                    base.with_addr(start)
                }
                _ => null_mut(),
            }
        })
    }

    unsafe fn dealloc(&self, _: *mut u8, _: Layout) {}
}

#[global_allocator]
static HEAP: Bump = Bump {
    next: Mutex::new(Cell::new(0)),
    end: Mutex::new(Cell::new(0)),
};

#[entry]
fn main() -> ! {
    let (base, len) = firmware_common::heap_region();
    critical_section::with(|cs| {
        HEAP.next.borrow(cs).set(base.addr());
        HEAP.end.borrow(cs).set(base.addr() + len);
    });
    firmware_common::run()
}
