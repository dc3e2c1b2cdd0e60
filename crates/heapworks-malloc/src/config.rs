//! Settings from the environment, read once by the library constructor.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `HEAPWORKS_STATS` | unset | `1`: print statistics at exit to the stderr the process started with |
//! | `HEAPWORKS_LARGE_CACHE_MIB` | 64 | freed large blocks kept mapped for reuse in the shared cache, in MiB (0: none, and no per-thread slot either; a slot keeps at most the smaller of this and 32 MiB) |
//! | `HEAPWORKS_TCACHE_KIB` | 512 | most bytes one thread's cache may hold, in KiB: seven eighths for small blocks, an eighth for medium ones (a thread that churns through medium blocks of many sizes may grow that to half, see `medium`, so its cache may hold up to 1.375 times this) |
//!
//! Invariants: values change only in [`load`], called by the constructor while the process is
//! still single-threaded; allocations made before it (by the dynamic loader or other
//! constructors) see the defaults. Reading uses `getenv`, which scans `environ` and never
//! allocates.

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};

static STATS_AT_EXIT: AtomicBool = AtomicBool::new(false);
/// Where the statistics go: a copy of stderr taken at load time.
static STATS_FD: AtomicI32 = AtomicI32::new(libc::STDERR_FILENO);
static LARGE_CACHE_BYTES: AtomicUsize = AtomicUsize::new(64 << 20);
static THREAD_CACHE_BYTES: AtomicUsize = AtomicUsize::new(512 << 10);

/// Whether to print statistics at exit.
pub(crate) fn stats_at_exit() -> bool {
    STATS_AT_EXIT.load(Ordering::Relaxed)
}

/// The descriptor the statistics are written to.
pub(crate) fn stats_fd() -> libc::c_int {
    STATS_FD.load(Ordering::Relaxed)
}

/// The most bytes of freed large blocks to keep mapped.
pub(crate) fn large_cache_bytes() -> usize {
    LARGE_CACHE_BYTES.load(Ordering::Relaxed)
}

/// The most bytes one thread cache may hold.
pub(crate) fn thread_cache_bytes() -> usize {
    THREAD_CACHE_BYTES.load(Ordering::Relaxed)
}

/// Reads the environment.
pub(crate) fn load() {
    if let Some(value) = variable(c"HEAPWORKS_STATS") {
        if value == b"1" {
            STATS_AT_EXIT.store(true, Ordering::Relaxed);
            STATS_FD.store(crate::os::keep_stderr(), Ordering::Relaxed);
        }
    }
    if let Some(mib) = variable(c"HEAPWORKS_LARGE_CACHE_MIB").and_then(parse_decimal) {
        LARGE_CACHE_BYTES.store(mib.saturating_mul(1 << 20), Ordering::Relaxed);
    }
    if let Some(kib) = variable(c"HEAPWORKS_TCACHE_KIB").and_then(parse_decimal) {
        THREAD_CACHE_BYTES.store(kib.saturating_mul(1 << 10), Ordering::Relaxed);
    }
}

/// The bytes of an environment variable, if set.
fn variable(name: &core::ffi::CStr) -> Option<&'static [u8]> {
    // SAFETY: `name` is NUL-terminated; getenv returns null or a NUL-terminated string in the
    // environment, which the process does not free while we run our constructor.
    unsafe {
        let value = libc::getenv(name.as_ptr());
        if value.is_null() {
            None
        } else {
            Some(core::ffi::CStr::from_ptr(value).to_bytes())
        }
    }
}

/// A decimal number of at most 18 digits.
fn parse_decimal(text: &[u8]) -> Option<usize> {
    if text.is_empty() || text.len() > 18 || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(
        text.iter()
            .fold(0, |n, digit| n * 10 + usize::from(digit - b'0')),
    )
}
