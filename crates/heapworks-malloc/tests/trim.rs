//! Giving memory back, in a process of its own: its central heap sees no other test's blocks,
//! and its resident size is its own.

use heapworks_malloc as hw;

/// Resident memory of this process, from `/proc/self/statm`.
fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

#[test]
fn freed_medium_blocks_give_their_pages_back() {
    const BLOCK: usize = 200 << 10;
    const COUNT: usize = 400;
    // SAFETY: every block is used within its size and freed once.
    unsafe {
        let blocks: Vec<*mut u8> = (0..COUNT)
            .map(|_| {
                let block = hw::malloc(BLOCK).cast::<u8>();
                assert!(!block.is_null());
                block.write_bytes(1, BLOCK);
                block
            })
            .collect();
        let touched = resident_bytes();
        for &block in &blocks {
            hw::free(block.cast());
        }
        let after = resident_bytes();
        // 80 MB freed crosses the trim threshold; other tests in this process allocate little.
        assert!(
            touched - after.min(touched) >= 40 << 20,
            "resident {touched} B before the frees, {after} B after"
        );
        // The discarded pages serve again, zeroed by the kernel or rewritten by us.
        let again = hw::malloc(BLOCK).cast::<u8>();
        again.write_bytes(2, BLOCK);
        assert_eq!(*again.add(BLOCK - 1), 2);
        hw::free(again.cast());
    }
}
