//! Fuzzes the C layer: operation sequences on heapworks-malloc's API (every entry point, sizes
//! from tiny slots to 40 MiB mappings, alignments up to 64 KiB, three threads taking turns)
//! against the shadow model of `heapworks_testkit::malloc_model`, which checks every block's
//! placement, alignment, usable size and contents and frees everything at the end of each input.
//!
//! The rlib linked in makes heapworks-malloc the process's malloc, libFuzzer's included, so the
//! target must run without a sanitizer: `cargo +nightly fuzz run malloc_ops -s none`. It checks
//! at start-up that std's allocations reach heapworks-malloc, and refuses to run otherwise.
#![no_main]

use heapworks_malloc as hw;
use heapworks_testkit::malloc_model::{CApi, MallocModel, MallocOp};
use libfuzzer_sys::fuzz_target;

const HEAPWORKS: CApi = CApi {
    malloc: hw::malloc,
    calloc: hw::calloc,
    realloc: hw::realloc,
    reallocarray: hw::reallocarray,
    free: hw::free,
    free_sized: hw::free_sized,
    free_aligned_sized: hw::free_aligned_sized,
    posix_memalign: hw::posix_memalign,
    aligned_alloc: hw::aligned_alloc,
    memalign: hw::memalign,
    valloc: hw::valloc,
    pvalloc: hw::pvalloc,
    malloc_usable_size: hw::malloc_usable_size,
};

/// Panics unless the process's `malloc` is heapworks-malloc's: a 1 MiB vector (std's allocator
/// calls the C `malloc` symbol) must be a large block, whose header word carries heapworks' tag.
fn assert_process_runs_on_heapworks() {
    let buffer: Vec<u8> = Vec::with_capacity(1 << 20);
    // Opaque to the optimizer, so the allocation is made and the header read is not folded.
    let block = std::hint::black_box(buffer.as_ptr());
    // SAFETY: a live block of the process's malloc; if it is heapworks-malloc's, the word
    // before it is its header, and a sanitizer's or glibc's blocks have a readable word there
    // too (a chunk header or redzone), so the read is in bounds either way.
    let header = unsafe { block.cast::<usize>().sub(1).read() };
    assert!(
        header & heapworks::EMBEDDER_TAG != 0,
        "the process's malloc is not heapworks-malloc (header word {header:#x}); \
         run with `-s none`"
    );
    // SAFETY: a live block of heapworks-malloc (checked above).
    let usable = unsafe { hw::malloc_usable_size(block.cast_mut().cast()) };
    assert!(usable >= 1 << 20, "usable size {usable}");
    eprintln!("malloc_ops: the process runs on heapworks-malloc");
}

fuzz_target!(
    init: assert_process_runs_on_heapworks(),
    |data: &[u8]| {
        let mut model = MallocModel::new(HEAPWORKS);
        for op in MallocOp::decode_all(data) {
            model.apply(op);
        }
        model.finish();
    }
);
