//! The library loads with `dlopen` (a program may load a module linked against it): its
//! initial-exec TLS block must fit in what glibc keeps for such libraries.

mod common;

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;

#[test]
fn library_loads_with_dlopen() {
    let path = CString::new(common::library().as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; loading runs the library's constructor, which only reads
    // the environment and registers its thread-exit key and fork handlers.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW) };
    if handle.is_null() {
        // SAFETY: dlerror returns the message of the failed dlopen, NUL-terminated.
        let error = unsafe { CStr::from_ptr(libc::dlerror()) };
        panic!("dlopen failed: {}", error.to_string_lossy());
    }
}
