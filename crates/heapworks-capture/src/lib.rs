//! # heapworks-capture
//!
//! An `LD_PRELOAD` shim (`libheapworks_capture.so`) that records every malloc-family call of a
//! program, in every thread and every process it forks or execs, for `heapworks_trace` to turn
//! into allocation traces. Run programs under it with `heapworks_trace::capture::run` (or
//! `heapworks trace -o FILE -- CMD ...`); by hand:
//!
//! ```text
//! HEAPWORKS_CAPTURE_DIR=/tmp/raw LD_PRELOAD=target/release/libheapworks_capture.so CMD ...
//! ```
//!
//! Invariants of the exported functions:
//! - Each forwards to glibc's `__libc_*` allocator, so the program's memory is glibc's.
//! - A call made while the same thread is already inside a hook is forwarded unrecorded
//!   (reentrancy guard in initial-exec TLS, see `thread.rs`).
//! - No hook allocates: records go to file-backed `mmap` chunks (see `recorder.rs`), which is
//!   also why nothing needs flushing at exit, exec or a crash.
//! - errno after a hook is what glibc left; `free` never changes it.
//! - Without `HEAPWORKS_CAPTURE_DIR` in the environment the shim records nothing and only
//!   forwards.
//!
//! The file layout is defined in `raw.rs`.

mod glibc;
mod raw;
mod recorder;
mod thread;

use core::ffi::{c_int, c_void};
use raw::RawOp;
use thread::{Call, Hook};

/// Records a call that hands out a block: the order position is taken after glibc returned.
fn record_allocation(
    op: RawOp,
    size: usize,
    arg: usize,
    call: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    let Some(hook) = Hook::enter() else {
        return call();
    };
    let ret = call();
    hook.record(&Call {
        op,
        seq: recorder::next_seq(),
        seq_release: 0,
        ptr: 0,
        ret: ret as usize,
        size,
        arg,
    });
    ret
}

/// Records a call that may move a block: the old block may be released from before glibc is
/// called, the new one exists only after it returned.
fn record_resize(
    op: RawOp,
    ptr: *mut c_void,
    size: usize,
    arg: usize,
    call: impl FnOnce() -> *mut c_void,
) -> *mut c_void {
    let Some(hook) = Hook::enter() else {
        return call();
    };
    let seq_release = recorder::next_seq();
    let ret = call();
    hook.record(&Call {
        op,
        seq: recorder::next_seq(),
        seq_release,
        ptr: ptr as usize,
        ret: ret as usize,
        size,
        arg,
    });
    ret
}

/// # Safety
/// As C `malloc`.
#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    // SAFETY: glibc's malloc, any size is valid.
    record_allocation(RawOp::Malloc, size, 0, || unsafe {
        glibc::__libc_malloc(size)
    })
}

/// # Safety
/// As C `calloc`.
#[no_mangle]
pub unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    // SAFETY: glibc's calloc checks the product for overflow itself.
    record_allocation(RawOp::Calloc, count, size, || unsafe {
        glibc::__libc_calloc(count, size)
    })
}

/// # Safety
/// As C `memalign`.
#[no_mangle]
pub unsafe extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    // SAFETY: glibc's memalign validates the alignment itself.
    record_allocation(RawOp::Memalign, size, align, || unsafe {
        glibc::__libc_memalign(align, size)
    })
}

/// # Safety
/// As C `aligned_alloc`.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    // SAFETY: glibc's aligned_alloc is its memalign (the same function in glibc 2.36).
    record_allocation(RawOp::AlignedAlloc, size, align, || unsafe {
        glibc::__libc_memalign(align, size)
    })
}

/// # Safety
/// As C `valloc`.
#[no_mangle]
pub unsafe extern "C" fn valloc(size: usize) -> *mut c_void {
    // SAFETY: glibc's valloc, any size is valid.
    record_allocation(RawOp::Valloc, size, 0, || unsafe {
        glibc::__libc_valloc(size)
    })
}

/// # Safety
/// As C `pvalloc`.
#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: usize) -> *mut c_void {
    // SAFETY: glibc's pvalloc, any size is valid.
    record_allocation(RawOp::Pvalloc, size, 0, || unsafe {
        glibc::__libc_pvalloc(size)
    })
}

/// # Safety
/// As C `posix_memalign`: `out` must be writable when 0 is returned.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> c_int {
    if !align.is_power_of_two() || align < core::mem::size_of::<*mut c_void>() {
        return libc::EINVAL;
    }
    // SAFETY: __errno_location is this thread's errno; posix_memalign reports through its
    // return value and leaves errno alone.
    let errno = unsafe { *libc::__errno_location() };
    // SAFETY: glibc's memalign with an alignment checked above.
    let block = record_allocation(RawOp::PosixMemalign, size, align, || unsafe {
        glibc::__libc_memalign(align, size)
    });
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    if block.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller passes a writable `out`.
    unsafe { *out = block };
    0
}

/// # Safety
/// As C `realloc`.
#[no_mangle]
pub unsafe extern "C" fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: the caller passes null or a live block, as glibc's realloc requires.
    record_resize(RawOp::Realloc, ptr, size, 0, || unsafe {
        glibc::__libc_realloc(ptr, size)
    })
}

/// # Safety
/// As C `reallocarray`.
#[no_mangle]
pub unsafe extern "C" fn reallocarray(ptr: *mut c_void, count: usize, size: usize) -> *mut c_void {
    let Some(bytes) = count.checked_mul(size) else {
        // SAFETY: this thread's errno; reallocarray reports overflow as ENOMEM.
        unsafe { *libc::__errno_location() = libc::ENOMEM };
        return core::ptr::null_mut();
    };
    // SAFETY: as in `realloc`.
    record_resize(RawOp::ReallocArray, ptr, count, size, || unsafe {
        glibc::__libc_realloc(ptr, bytes)
    })
}

/// # Safety
/// As C `free`.
#[no_mangle]
pub unsafe extern "C" fn free(ptr: *mut c_void) {
    if let Some(hook) = Hook::enter() {
        hook.record(&Call {
            op: RawOp::Free,
            seq: recorder::next_seq(),
            seq_release: 0,
            ptr: ptr as usize,
            ret: 0,
            size: 0,
            arg: 0,
        });
    }
    // SAFETY: the caller passes null or a live block; glibc's free preserves errno.
    unsafe { glibc::__libc_free(ptr) }
}

/// # Safety
/// As C `malloc_usable_size`.
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(ptr: *mut c_void) -> usize {
    // SAFETY: the caller passes null or a live block, which is glibc's.
    glibc::usable_size_function().map_or(0, |usable_size| unsafe { usable_size(ptr) })
}
