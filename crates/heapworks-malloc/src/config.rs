//! Settings from the environment, read once by the library constructor.
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `HEAPWORKS_STATS` | unset | `1`: print statistics at exit to the stderr the process started with |
//! | `HEAPWORKS_LARGE_CACHE_MIB` | 64 | freed large blocks kept mapped for reuse in the shared cache, in MiB (0: none, and no per-thread slot either; a slot keeps at most the smaller of this and 32 MiB) |
//! | `HEAPWORKS_SECURE` | unset | `1`: secure mode (see [`crate::secure`]): validation, zero on free, quarantine, random slot order, guard pages after large blocks; no thread caches and no reuse of large mappings |
//! | `HEAPWORKS_TCACHE_KIB` | 512 | most bytes one thread's cache may hold, in KiB (a thread that starts while more than eight run gets an equal share of eight such budgets, at least an eighth of one): seven eighths for small blocks, an eighth for medium ones (a thread that churns through medium blocks of many sizes may grow that to half, see `medium`, so its cache may hold up to 1.375 times this) |
//!
//! Invariants: values change only in [`load`], called by the constructor while the process is
//! still single-threaded; allocations made before it (by the dynamic loader or other
//! constructors) see the defaults. Reading uses `getenv`, which scans `environ` and never
//! allocates.

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};

static STATS_AT_EXIT: AtomicBool = AtomicBool::new(false);
/// Where the statistics go: a copy of stderr taken at load time.
static STATS_FD: AtomicI32 = AtomicI32::new(libc::STDERR_FILENO);
static LARGE_CACHE_BYTES: AtomicUsize = AtomicUsize::new(64 << 20);
static THREAD_CACHE_BYTES: AtomicUsize = AtomicUsize::new(512 << 10);

static SECURE: AtomicBool = AtomicBool::new(false);
/// Secure mode's secret (odd, never 0 nor an aligned address) and random state.
static SECRET: AtomicUsize = AtomicUsize::new(1);
static RANDOM: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

/// Whether secure mode is on.
#[inline(always)]
pub(crate) fn secure() -> bool {
    SECURE.load(Ordering::Relaxed)
}

/// Secure mode's per-process secret: what a quarantined block's second word holds.
pub(crate) fn secret() -> usize {
    SECRET.load(Ordering::Relaxed)
}

/// A pseudo-random number (xorshift64 on a shared state: racing threads only lose randomness).
pub(crate) fn random() -> u64 {
    let mut x = RANDOM.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    RANDOM.store(x, Ordering::Relaxed);
    x
}

/// Turns secure mode on, with a secret and a random seed from the kernel.
fn enable_secure() {
    let mut seed = [0u8; 16];
    // SAFETY: getrandom writes at most `seed.len()` bytes into the buffer; it never allocates.
    let got = unsafe { libc::getrandom(seed.as_mut_ptr().cast(), seed.len(), libc::GRND_NONBLOCK) };
    let (low, high) = seed.split_at(8);
    let mut secret = u64::from_ne_bytes(low.try_into().unwrap_or_default());
    let mut random = u64::from_ne_bytes(high.try_into().unwrap_or_default());
    if got != 16 {
        // No entropy yet (very early boot): a stack address and the process id.
        let local = 0u8;
        secret = (&raw const local).addr() as u64 ^ ((crate::os::pid() as u64) << 32);
        random = secret.rotate_left(29) ^ 0x9e37_79b9_7f4a_7c15;
    }
    SECRET.store(secret as usize | 1, Ordering::Relaxed);
    RANDOM.store(random | 1, Ordering::Relaxed);
    SECURE.store(true, Ordering::Relaxed);
    // Freed large mappings are never reused: unmapped at once.
    LARGE_CACHE_BYTES.store(0, Ordering::Relaxed);
}

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
    if variable(c"HEAPWORKS_SECURE") == Some(b"1") {
        enable_secure();
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
