//! The shipped library's fixed cost in every process it serves: built `no_std` with panics
//! that abort, it brings no library but libc (no unwinder: no libgcc_s) and exports no Rust
//! runtime symbol that could interpose on a Rust program's own.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

#[test]
fn preloaded_it_brings_only_libc() {
    // The loader lists what a run would map, as ldd does, and runs nothing.
    let output = Command::new("/bin/true")
        .env("LD_PRELOAD", common::library())
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .output()
        .expect("run /bin/true");
    common::assert_success(&output, "listing the loaded objects");
    let listing = String::from_utf8_lossy(&output.stdout);
    let objects: Vec<&str> = listing
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| !name.starts_with("linux-vdso") && !name.starts_with("/lib64/ld-linux"))
        .collect();
    assert_eq!(
        objects.len(),
        2,
        "expected the library and libc:\n{listing}"
    );
    assert!(objects[0].ends_with("libheapworks_malloc.so"), "{listing}");
    assert_eq!(objects[1], "libc.so.6", "{listing}");
}

#[test]
fn exports_no_rust_runtime_symbol() {
    let path = CString::new(common::library().as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path; loading runs only the library's constructor.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW) };
    assert!(!handle.is_null(), "dlopen failed");
    for name in ["rust_eh_personality", "rust_begin_unwind", "_Unwind_Resume"] {
        let symbol = CString::new(name).unwrap();
        // SAFETY: a live handle and a NUL-terminated name.
        let found = unsafe { libc::dlsym(handle, symbol.as_ptr()) };
        assert!(found.is_null(), "the library exports {name}");
    }
    // The exports are there: the lookup itself works.
    // SAFETY: as above.
    assert!(!unsafe { libc::dlsym(handle, c"malloc".as_ptr()) }.is_null());
}
