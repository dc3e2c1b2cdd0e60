//! Panics in the shipped library (built with `panic = "abort"`, cargo profile `malloc`), which
//! is `no_std`: no unwinder, no backtrace printer, no libgcc_s in every process it is preloaded
//! into. Builds that unwind (the dev, release and test profiles) link std and use its panic
//! runtime instead, and this module is not compiled.
//!
//! Invariants: a panic writes `heapworks-malloc: panicked at FILE:LINE:COL:` and its message
//! to standard error with `write(2)`, formatted into a stack buffer, and aborts:
//! nothing allocates, nothing unwinds. A panic while reporting a panic aborts at once. The
//! personality routine that the precompiled `core` refers to is a hidden alias of an abort, so
//! the library exports no Rust runtime symbol that could interpose on a Rust program's own.

use core::fmt::Write;
use core::panic::PanicInfo;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::stats::StackText;

/// Set by the first panic.
static PANICKED: AtomicBool = AtomicBool::new(false);

#[panic_handler]
fn panic(info: &PanicInfo<'_>) -> ! {
    if !PANICKED.swap(true, Ordering::Relaxed) {
        let mut text = StackText::new();
        // Writing into a StackText never fails (it drops what does not fit).
        let _ = writeln!(text, "heapworks-malloc: {info}");
        text.write_to(libc::STDERR_FILENO);
    }
    abort()
}

/// Ends the process with `SIGABRT` (glibc's `abort` flushes no streams and allocates nothing).
extern "C" fn abort() -> ! {
    // SAFETY: abort takes no arguments and does not return.
    unsafe { libc::abort() }
}

// `core`'s objects keep a reference to `rust_eh_personality` (a `DW.ref` word next to their
// unwind tables) even when the functions that would unwind are gone; with nothing to unwind,
// the routine aborts. Hidden, so it resolves inside the library and is not exported: a Rust
// program that unwinds (rustc's driver exports its own routine) keeps its personality.
core::arch::global_asm!(
    ".globl rust_eh_personality",
    ".hidden rust_eh_personality",
    ".set rust_eh_personality, {abort}",
    abort = sym abort,
);
