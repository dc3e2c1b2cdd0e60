//! The model against the C library's malloc (this test process does not link
//! heapworks-malloc, so its malloc is glibc's), and against broken mallocs it must catch.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::ThreadId;

use super::*;
use crate::Rng;

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn calloc(count: usize, size: usize) -> *mut c_void;
    fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    fn reallocarray(ptr: *mut c_void, count: usize, size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
    fn posix_memalign(memptr: *mut *mut c_void, align: usize, size: usize) -> c_int;
    fn aligned_alloc(align: usize, size: usize) -> *mut c_void;
    fn memalign(align: usize, size: usize) -> *mut c_void;
    fn valloc(size: usize) -> *mut c_void;
    fn pvalloc(size: usize) -> *mut c_void;
    fn malloc_usable_size(ptr: *mut c_void) -> usize;
}

/// `free_sized` (glibc 2.36 has none): the size is only a hint.
unsafe extern "C" fn free_sized_by_free(ptr: *mut c_void, _size: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(ptr) }
}

/// `free_aligned_sized` (glibc 2.36 has none): alignment and size are only hints.
unsafe extern "C" fn free_aligned_sized_by_free(ptr: *mut c_void, _align: usize, _size: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(ptr) }
}

const LIBC: CApi = CApi {
    malloc,
    calloc,
    realloc,
    reallocarray,
    free,
    free_sized: free_sized_by_free,
    free_aligned_sized: free_aligned_sized_by_free,
    posix_memalign,
    aligned_alloc,
    memalign,
    valloc,
    pvalloc,
    malloc_usable_size,
};

fn random_ops(seed: u64, count: usize) -> Vec<MallocOp> {
    let mut rng = Rng::new(seed);
    let bytes: Vec<u8> = (0..count * 4).map(|_| rng.next_u64() as u8).collect();
    MallocOp::decode_all(&bytes)
}

fn run(api: CApi, ops: &[MallocOp]) -> MallocTally {
    let mut model = MallocModel::new(api);
    for &op in ops {
        model.apply(op);
    }
    model.finish()
}

fn malloc_of(size: usize) -> MallocOp {
    MallocOp::Allocate {
        size,
        entry: Entry::Malloc,
    }
}

#[test]
fn the_c_library_malloc_passes_and_every_kind_of_work_happens() {
    let tally = run(LIBC, &random_ops(1, 3000));
    let MallocTally {
        allocations,
        calloc_allocations,
        aligned_allocations,
        sized_frees,
        reallocs_moved,
        cross_thread_releases,
        workers_retired_with_frees,
        exits_with_work,
        exit_frees,
        edge_cases,
        skipped_over_bound,
        largest_block,
        ..
    } = tally;
    let counts = [
        calloc_allocations,
        aligned_allocations,
        sized_frees,
        reallocs_moved,
        cross_thread_releases,
        workers_retired_with_frees,
        exits_with_work,
        exit_frees,
        edge_cases,
        skipped_over_bound,
    ];
    assert!(allocations > 800, "{tally:?}");
    assert!(counts.iter().all(|&count| count > 0), "{tally:?}");
    assert!(largest_block > 8 << 20, "{tally:?}");
}

#[test]
fn every_edge_case_holds_for_the_c_library() {
    let mut model = MallocModel::new(LIBC);
    for case in ops::EDGE_CASES {
        model.apply(MallocOp::Edge { case, slot: 7 });
    }
    model.apply(malloc_of(5000));
    for case in ops::EDGE_CASES {
        model.apply(MallocOp::Edge { case, slot: 7 });
        model.apply(malloc_of(100));
    }
    let tally = model.finish();
    assert_eq!(tally.edge_cases, 2 * ops::EDGE_CASES.len() as u64);
}

#[test]
fn finish_frees_everything() {
    let mut model = MallocModel::new(LIBC);
    for op in random_ops(2, 500) {
        model.apply(op);
    }
    assert!(model.live_blocks() > 0);
    let tally = model.finish();
    assert_eq!(tally.allocations, tally.frees, "{tally:?}");
}

/// The threads that called `malloc_on_record`.
static CALLERS: Mutex<Vec<ThreadId>> = Mutex::new(Vec::new());

unsafe extern "C" fn malloc_on_record(size: usize) -> *mut c_void {
    CALLERS.lock().unwrap().push(std::thread::current().id());
    // SAFETY: forwarded.
    unsafe { malloc(size) }
}

#[test]
fn calls_run_on_the_thread_switched_to_and_retired_workers_restart() {
    let api = CApi {
        malloc: malloc_on_record,
        ..LIBC
    };
    let ops = [
        malloc_of(8),
        MallocOp::Switch { thread: 1 },
        malloc_of(8),
        MallocOp::Switch { thread: 2 },
        malloc_of(8),
        MallocOp::Retire {
            thread: 1,
            exit_work: false,
            exit_frees: 0,
            slot: 0,
        },
        MallocOp::Switch { thread: 1 },
        malloc_of(8),
        MallocOp::Free {
            slot: 0,
            sized: false,
        },
    ];
    let tally = run(api, &ops);
    let callers = CALLERS.lock().unwrap().clone();
    assert_eq!(callers.len(), 4);
    assert_eq!(callers[0], std::thread::current().id());
    assert_eq!(
        callers.iter().collect::<HashSet<_>>().len(),
        4,
        "{callers:?}"
    );
    assert_eq!(tally.cross_thread_releases, 3, "{tally:?}");
    assert_eq!(tally.workers_retired_with_frees, 1, "{tally:?}");
}

/// `realloc` that moves the block without copying it.
unsafe extern "C" fn realloc_forgetting(ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the new block is taken before the old is freed, so they differ.
    unsafe {
        let moved = malloc(size);
        free(ptr);
        moved
    }
}

#[test]
#[should_panic(expected = "lost its contents")]
fn a_realloc_that_loses_the_contents_is_caught() {
    let api = CApi {
        realloc: realloc_forgetting,
        ..LIBC
    };
    let grow = MallocOp::Realloc {
        slot: 0,
        resize: Resize::To(200),
    };
    run(api, &[malloc_of(100), grow]);
}

/// `calloc` that leaves its bytes dirty.
unsafe extern "C" fn calloc_dirty(count: usize, size: usize) -> *mut c_void {
    // SAFETY: the block holds `count * size` bytes (the model asks for no overflow here).
    unsafe {
        let block = malloc(count * size);
        block.cast::<u8>().write_bytes(0xa5, count * size);
        block
    }
}

#[test]
#[should_panic(expected = "is not zero")]
fn a_calloc_that_does_not_zero_is_caught() {
    let api = CApi {
        calloc: calloc_dirty,
        ..LIBC
    };
    let op = MallocOp::Allocate {
        size: 64,
        entry: Entry::Calloc { count: 2 },
    };
    run(api, &[op]);
}

/// The one block `malloc_one_block` hands out, whatever is asked.
static ONE_BLOCK: AtomicUsize = AtomicUsize::new(0);

/// `malloc` that gives every caller the same 4 KiB block (never freed).
unsafe extern "C" fn malloc_one_block(size: usize) -> *mut c_void {
    assert!(size <= 4096);
    if ONE_BLOCK.load(Ordering::Relaxed) == 0 {
        // SAFETY: plain allocation.
        let block = unsafe { malloc(4096) };
        ONE_BLOCK.store(block.expose_provenance(), Ordering::Relaxed);
    }
    std::ptr::with_exposed_provenance_mut(ONE_BLOCK.load(Ordering::Relaxed))
}

unsafe extern "C" fn free_nothing(_ptr: *mut c_void) {}

#[test]
#[should_panic(expected = "inside")]
fn overlapping_blocks_are_caught() {
    let api = CApi {
        malloc: malloc_one_block,
        free: free_nothing,
        ..LIBC
    };
    run(api, &[malloc_of(32), malloc_of(48)]);
}

/// `free` that sets errno.
unsafe extern "C" fn free_setting_errno(ptr: *mut c_void) {
    // SAFETY: forwarded; errno is the calling thread's.
    unsafe {
        free(ptr);
        *libc::__errno_location() = libc::ENOMEM;
    }
}

#[test]
#[should_panic(expected = "changed errno")]
fn a_free_that_changes_errno_is_caught() {
    let api = CApi {
        free: free_setting_errno,
        ..LIBC
    };
    run(
        api,
        &[
            malloc_of(24),
            MallocOp::Free {
                slot: 0,
                sized: false,
            },
        ],
    );
}
