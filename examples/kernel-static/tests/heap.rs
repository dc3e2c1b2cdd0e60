//! The kernel heap as this test program's allocator (the library's `#[global_allocator]`): the
//! harness's own allocations land in the boot arena, a request larger than the boot arena gets
//! null, and once the memory map's region is added, that region serves it.

use std::alloc::{alloc, dealloc, Layout};

use kernel_static::{add_memory, check_heap, heap_stats, in_boot_arena, BOOT_ARENA_LEN};

const MORE_LEN: usize = 4 << 20;
static mut MORE: [u8; MORE_LEN] = [0; MORE_LEN];

#[test]
fn boot_arena_then_added_memory() {
    let early: Vec<u64> = (0..1000).collect();
    assert!(
        in_boot_arena(early.as_ptr().cast()),
        "served by the boot arena"
    );

    let big = Layout::from_size_align(2 * BOOT_ARENA_LEN, 4096).unwrap();
    // SAFETY: non-zero size.
    assert!(
        unsafe { alloc(big) }.is_null(),
        "the boot arena is too small"
    );

    // SAFETY: `MORE` is used by nothing but the heap from now on.
    unsafe { add_memory(&raw mut MORE as *mut u8, MORE_LEN) }.unwrap();
    // SAFETY: non-zero size.
    let block = unsafe { alloc(big) };
    let more = (&raw const MORE).addr();
    assert!(
        (more..more + MORE_LEN).contains(&block.addr()),
        "served by the added region"
    );
    assert_eq!(block.addr() % 4096, 0);

    let stats = heap_stats();
    assert!(stats.in_use >= 2 * BOOT_ARENA_LEN);
    assert!(stats.in_use + stats.free <= BOOT_ARENA_LEN + MORE_LEN);
    assert!(check_heap());
    // SAFETY: allocated above with this layout.
    unsafe { dealloc(block, big) };
    assert!(check_heap());
}
