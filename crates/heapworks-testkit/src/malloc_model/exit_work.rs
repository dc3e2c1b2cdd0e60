//! Work a worker thread does while it exits, in a thread-specific-data destructor: it frees
//! blocks the model handed it, then allocates, grows and frees probes of every size kind. A
//! malloc with thread caches typically retires a thread's cache in a destructor of its own; one
//! created before this module's key (a library's is, at load time) runs first, so these calls
//! find the thread's cache gone, as calls from other libraries' destructors do in real programs.
//!
//! Invariants: the key is created once per process and its destructor runs on the exiting
//! thread before `pthread_join` (so the model's `Threads::retire`) returns. The destructor
//! cannot unwind: a probe that fails prints what failed and aborts the process.

use std::ffi::c_void;
use std::sync::OnceLock;

use super::CApi;

/// The most blocks a thread frees at exit.
pub(crate) const EXIT_FREES_MAX: usize = 3;

/// Probe sizes: a tiny slot, a promotable class, a small class, medium, large.
const PROBES: [usize; 5] = [24, 200, 800, 5000, 300_000];

/// What a thread does at exit.
pub(crate) struct ExitWork {
    pub api: CApi,
    /// Blocks to free (0: none).
    pub frees: [usize; EXIT_FREES_MAX],
}

/// Arranges for `work` to run when the calling thread exits.
pub(crate) fn run_at_exit(work: ExitWork) {
    static KEY: OnceLock<libc::pthread_key_t> = OnceLock::new();
    let key = *KEY.get_or_init(|| {
        let mut key = 0;
        // SAFETY: `key` is valid for writes; the destructor matches the key's value (below).
        let created = unsafe { libc::pthread_key_create(&mut key, Some(exit_destructor)) };
        assert_eq!(created, 0, "pthread_key_create failed");
        key
    });
    let value = Box::into_raw(Box::new(work));
    // SAFETY: `key` is live; the destructor takes the box back.
    let set = unsafe { libc::pthread_setspecific(key, value.cast()) };
    assert_eq!(set, 0, "pthread_setspecific failed");
}

extern "C" fn exit_destructor(value: *mut c_void) {
    // SAFETY: the key's only values are boxes made by `run_at_exit`, each given to one
    // destructor call.
    let work = unsafe { Box::from_raw(value.cast::<ExitWork>()) };
    let api = work.api;
    // SAFETY: the model handed these blocks over live and forgot them; 0 is NULL.
    unsafe {
        for addr in work.frees {
            (api.free)(std::ptr::with_exposed_provenance_mut(addr));
        }
    }
    for size in PROBES {
        probe(&api, size);
    }
}

/// Allocates a block of `size` zeroed bytes, checks and fills it, grows it to twice that and
/// checks its contents moved, then frees it.
fn probe(api: &CApi, size: usize) {
    // SAFETY: the block is used within its size and freed once.
    unsafe {
        let block = (api.calloc)(1, size).cast::<u8>();
        assert_at_exit(!block.is_null(), "calloc failed", size);
        let bytes = std::slice::from_raw_parts_mut(block, size);
        assert_at_exit(
            bytes.iter().all(|&b| b == 0),
            "calloc's block not zero",
            size,
        );
        bytes.fill(0x5a);
        let grown = (api.realloc)(block.cast(), 2 * size).cast::<u8>();
        assert_at_exit(!grown.is_null(), "realloc failed", size);
        let kept = std::slice::from_raw_parts(grown, size);
        assert_at_exit(
            kept.iter().all(|&b| b == 0x5a),
            "realloc lost contents",
            size,
        );
        (api.free)(grown.cast());
    }
}

/// Aborts with `what` unless `holds`: a destructor cannot unwind.
fn assert_at_exit(holds: bool, what: &str, size: usize) {
    if !holds {
        eprintln!("malloc model: at thread exit, {what} (probe of {size} bytes)");
        std::process::abort();
    }
}
