//! glibc's own allocator entry points, which the hooks forward to.
//!
//! Invariants: the `__libc_*` names are glibc's public aliases of its allocator (they are what
//! a replacement malloc is meant to call), so forwarding to them never comes back into the
//! shim. `malloc_usable_size` has no such alias; it is looked up once with
//! `dlsym(RTLD_NEXT, ..)` while recording is off, as dlsym may allocate.

use crate::thread;
use core::ffi::c_void;
use core::sync::atomic::{AtomicPtr, Ordering};

extern "C" {
    pub fn __libc_malloc(size: usize) -> *mut c_void;
    pub fn __libc_free(ptr: *mut c_void);
    pub fn __libc_calloc(count: usize, size: usize) -> *mut c_void;
    pub fn __libc_realloc(ptr: *mut c_void, size: usize) -> *mut c_void;
    pub fn __libc_memalign(align: usize, size: usize) -> *mut c_void;
    pub fn __libc_valloc(size: usize) -> *mut c_void;
    pub fn __libc_pvalloc(size: usize) -> *mut c_void;
}

type UsableSize = unsafe extern "C" fn(*mut c_void) -> usize;

static USABLE_SIZE: AtomicPtr<c_void> = AtomicPtr::new(core::ptr::null_mut());

/// glibc's `malloc_usable_size`, or `None` if it cannot be found.
pub fn usable_size_function() -> Option<UsableSize> {
    let mut found = USABLE_SIZE.load(Ordering::Acquire);
    if found.is_null() {
        // SAFETY: RTLD_NEXT with a NUL-terminated name: the next definition after this library.
        found = thread::without_recording(|| unsafe {
            libc::dlsym(libc::RTLD_NEXT, c"malloc_usable_size".as_ptr())
        });
        USABLE_SIZE.store(found, Ordering::Release);
    }
    // SAFETY: a non-null result is glibc's malloc_usable_size, which has this signature.
    (!found.is_null()).then(|| unsafe { core::mem::transmute::<*mut c_void, UsableSize>(found) })
}
