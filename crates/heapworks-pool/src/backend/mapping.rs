//! Mappings placed for huge pages: the one way both mapped backends get their memory, so that
//! inline and shared buffers of a size sit on the same pages.
//!
//! A mapping of [`HUGE_PAGE`] bytes or more starts at a 2 MiB boundary: a region of twice the
//! slack is reserved (`PROT_NONE`), the mapping placed over its first aligned address with
//! `MAP_FIXED`, and the slack on either side unmapped. The kernel aligns anonymous mappings by
//! itself only when their length is a multiple of 2 MiB, and shared-memory files not at all
//! unless shared huge pages are on; a huge page can back only an aligned 2 MiB range, so a
//! 2.5 MiB class at a random address would often get none.
//!
//! Huge pages are then asked for in one of two ways:
//! - [`advise_huge`] (`MADV_HUGEPAGE`): private anonymous memory, where the kernel honours
//!   the advice at fault time when `/sys/kernel/mm/transparent_hugepage/enabled` is
//!   `madvise` or `always` (the usual settings);
//! - [`make_huge`]: shared memory, whose fault-time policy is
//!   `/sys/kernel/mm/transparent_hugepage/shmem_enabled`, `never` by default, which ignores
//!   the advice. One byte of each aligned 2 MiB range is written (a 4 KiB page each), then
//!   `MADV_COLLAPSE` (Linux 6.1) replaces those pages with huge ones, zero but for the byte
//!   written (also zero), synchronously, whatever `shmem_enabled` says short of `deny` (the
//!   administrator's switch that forbids huge pages in shared memory outright). A kernel that
//!   cannot (older, `deny`, no free huge page) leaves 4 KiB pages: slower, never wrong.

use std::io;
use std::ptr::{self, NonNull};

/// Size of a huge page on x86-64 and most arm64 kernels, and the size from which huge pages
/// are asked for.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// `MADV_COLLAPSE` (Linux 6.1; not in the `libc` crate yet).
#[cfg(any(target_os = "linux", target_os = "android"))]
const MADV_COLLAPSE: libc::c_int = 25;

/// The system's page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(size).unwrap_or(4096).max(4096)
}

/// `len` rounded up to whole pages; `None` on overflow.
pub(crate) fn page_rounded(len: usize) -> Option<usize> {
    len.checked_next_multiple_of(page_size())
}

/// Maps `len` bytes (whole pages) readable and writable with `flags` (`MAP_PRIVATE |
/// MAP_ANONYMOUS`, or `MAP_SHARED` of `fd` from `offset`), at a 2 MiB boundary when `len` is
/// at least [`HUGE_PAGE`].
pub(crate) fn map(
    len: usize,
    flags: libc::c_int,
    fd: libc::c_int,
    offset: libc::off_t,
) -> io::Result<NonNull<u8>> {
    if len < HUGE_PAGE {
        return mmap(ptr::null_mut(), len, flags, fd, offset);
    }
    let reservation = Reservation::new(len)?;
    let placed = mmap(
        reservation.start(),
        len,
        flags | libc::MAP_FIXED,
        fd,
        offset,
    );
    reservation.release_around(len, placed.is_ok());
    placed
}

/// An inaccessible reservation with room for `len` bytes from its first 2 MiB boundary.
struct Reservation {
    base: usize,
    span: usize,
}

impl Reservation {
    fn new(len: usize) -> io::Result<Self> {
        let span = len
            .checked_add(HUGE_PAGE - page_size())
            .ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))?;
        // SAFETY: a fresh inaccessible mapping at an address of the kernel's choice: it
        // cannot overlap or alter existing memory.
        let base = unsafe {
            libc::mmap(
                ptr::null_mut(),
                span,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            base: base as usize,
            span,
        })
    }

    /// The first 2 MiB boundary in the reservation.
    fn start(&self) -> *mut libc::c_void {
        self.base.next_multiple_of(HUGE_PAGE) as *mut libc::c_void
    }

    /// Unmaps the reservation but `start..start + len` when that range was `placed` (replaced
    /// by a mapping with `MAP_FIXED`), else all of it.
    fn release_around(self, len: usize, placed: bool) {
        let start = self.start() as usize;
        let end = self.base + self.span;
        let unmap = |from: usize, to: usize| {
            if to > from {
                // SAFETY: a page-aligned part of this reservation, which nothing refers to.
                unsafe { libc::munmap(from as *mut libc::c_void, to - from) };
            }
        };
        if placed {
            unmap(self.base, start);
            unmap(start + len, end);
        } else {
            unmap(self.base, end);
        }
    }
}

/// `mmap` with read and write access; `addr` is null, or the start of a range of a
/// [`Reservation`] with `MAP_FIXED` in `flags`.
fn mmap(
    addr: *mut libc::c_void,
    len: usize,
    flags: libc::c_int,
    fd: libc::c_int,
    offset: libc::off_t,
) -> io::Result<NonNull<u8>> {
    // SAFETY: without MAP_FIXED the kernel picks a fresh address, overlapping nothing; with
    // it, `addr..addr + len` lies in a reservation that `map` owns and that nothing refers
    // to. The kernel checks the descriptor and the range.
    let raw = unsafe {
        libc::mmap(
            addr,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            offset,
        )
    };
    if raw == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // A mapping at address 0 (possible only where vm.mmap_min_addr is 0) cannot be a
    // `NonNull`: it is refused (and leaked) rather than trusted.
    NonNull::new(raw.cast()).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOMEM))
}

/// Advises transparent huge pages for a mapping of `len` bytes made by [`map`]: honoured at
/// fault time for private anonymous memory where THP is `madvise` or `always`. Its failure
/// (no THP in this kernel) only loses the advice.
pub(crate) fn advise_huge(ptr: NonNull<u8>, len: usize) {
    // SAFETY: advice on a whole mapping owned by the caller; MADV_HUGEPAGE changes no
    // contents.
    unsafe { libc::madvise(ptr.as_ptr().cast(), len, libc::MADV_HUGEPAGE) };
}

/// Backs every aligned 2 MiB range of a fresh, still all-zero shared mapping of `len` bytes
/// made by [`map`] with a huge page where the kernel can (see the module's doc); the memory
/// stays all zeros. Returns whether the kernel did.
pub(crate) fn make_huge(ptr: NonNull<u8>, len: usize) -> bool {
    if len < HUGE_PAGE {
        return false;
    }
    advise_huge(ptr, len);
    let whole = len / HUGE_PAGE * HUGE_PAGE;
    for offset in (0..whole).step_by(HUGE_PAGE) {
        // SAFETY: `offset < len`, inside the caller's mapping; writing the zero already there
        // changes nothing but makes the page present, which MADV_COLLAPSE needs.
        unsafe { ptr.as_ptr().add(offset).write_volatile(0) };
    }
    collapse(ptr, whole)
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn collapse(ptr: NonNull<u8>, len: usize) -> bool {
    // SAFETY: MADV_COLLAPSE on the caller's mapping moves its contents to huge pages,
    // leaving every byte as it was.
    unsafe { libc::madvise(ptr.as_ptr().cast(), len, MADV_COLLAPSE) == 0 }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn collapse(_: NonNull<u8>, _: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kilobytes of `field` (e.g. `ShmemPmdMapped:`) in the smaps entry of the mapping that
    /// starts at `start`.
    fn smaps_kib(start: usize, field: &str) -> Option<u64> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let header = format!("{start:x}-");
        let entry = smaps.split_once(&*header)?.1;
        let line = entry.lines().find(|line| line.starts_with(field))?;
        line[field.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()
    }

    fn shared_file(len: usize) -> std::os::fd::OwnedFd {
        use std::os::fd::FromRawFd;
        // SAFETY: a NUL-terminated name and valid flags; the descriptor is owned below.
        let raw = unsafe { libc::memfd_create(c"mapping-test".as_ptr(), libc::MFD_CLOEXEC) };
        assert!(raw >= 0, "{}", io::Error::last_os_error());
        // SAFETY: `raw` was just opened and is owned by nobody else; ftruncate sets its size.
        unsafe {
            assert_eq!(libc::ftruncate(raw, len as libc::off_t), 0);
            std::os::fd::OwnedFd::from_raw_fd(raw)
        }
    }

    fn unmap(ptr: NonNull<u8>, len: usize) {
        // SAFETY: a whole mapping made by the test, unmapped once.
        unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
    }

    #[test]
    fn large_mappings_start_at_a_huge_page_boundary_and_small_ones_are_plain() {
        use std::os::fd::AsRawFd;
        let private = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        for len in [HUGE_PAGE, HUGE_PAGE + HUGE_PAGE / 4, 7 * HUGE_PAGE / 2] {
            let ptr = map(len, private, -1, 0).unwrap();
            assert_eq!(ptr.as_ptr() as usize % HUGE_PAGE, 0, "{len}");
            unmap(ptr, len);
            let file = shared_file(len);
            let ptr = map(len, libc::MAP_SHARED, file.as_raw_fd(), 0).unwrap();
            assert_eq!(ptr.as_ptr() as usize % HUGE_PAGE, 0, "{len}");
            unmap(ptr, len);
        }
        let small = map(64 << 10, private, -1, 0).unwrap();
        unmap(small, 64 << 10);
        assert!(map(usize::MAX - 4095, private, -1, 0).is_err());
    }

    /// Shared memory made huge keeps its zeros; where the kernel says it collapsed the
    /// range, the mapping's huge pages show in smaps (on this kernel with `shmem_enabled`
    /// at `never`, which would give none by advice alone).
    #[test]
    fn shared_memory_made_huge_is_zero_and_on_huge_pages_when_the_kernel_says_so() {
        use std::os::fd::AsRawFd;
        let len = 5 * HUGE_PAGE / 2;
        let file = shared_file(len);
        let ptr = map(len, libc::MAP_SHARED, file.as_raw_fd(), 0).unwrap();
        let collapsed = make_huge(ptr, len);
        // SAFETY: the whole mapping, just made, read only here.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), len) };
        assert!(bytes.iter().all(|&b| b == 0));
        if collapsed {
            let huge = smaps_kib(ptr.as_ptr() as usize, "ShmemPmdMapped:");
            // Two whole huge pages; the last half page stays on 4 KiB pages.
            assert_eq!(huge, Some(((2 * HUGE_PAGE) >> 10) as u64));
        }
        unmap(ptr, len);
        assert!(!make_huge(NonNull::dangling(), HUGE_PAGE - 1));
    }
}
