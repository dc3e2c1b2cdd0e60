//! The operating-system interface: page mappings, errno, the process id, and raw writes to
//! stderr.
//!
//! Invariants: nothing here allocates, takes a libc lock or calls back into malloc; each
//! function is one system call through libc's thin wrapper (which at most sets errno). Lengths
//! handed to the kernel are whole pages; mappings are private and anonymous, never `brk`.

use core::ptr::NonNull;

/// The page size on x86-64 Linux (the only target this crate's TLS and mappings support).
pub(crate) const PAGE: usize = 4096;

/// Rounds `bytes` up to whole pages, or `None` on overflow.
pub(crate) const fn round_to_pages(bytes: usize) -> Option<usize> {
    match bytes.checked_add(PAGE - 1) {
        Some(sum) => Some(sum & !(PAGE - 1)),
        None => None,
    }
}

fn mapping(len: usize, protection: libc::c_int) -> Option<NonNull<u8>> {
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE;
    // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing touches no
    // existing memory.
    let addr = unsafe { libc::mmap(core::ptr::null_mut(), len, protection, flags, -1, 0) };
    if addr == libc::MAP_FAILED {
        None
    } else {
        NonNull::new(addr.cast())
    }
}

/// Reserves `len` bytes (whole pages) of address space at exactly `addr` (page-aligned), as
/// [`reserve`] does, unless anything is mapped there: `MAP_FIXED_NOREPLACE` never replaces a
/// mapping, and a kernel older than 4.17, which takes the address as a hint only, is caught
/// by the check.
/// With `writable`, the range is readable and writable from the start (still charged nothing
/// until touched, under the kernel's default overcommit heuristic; a kernel that accounts
/// strictly refuses so large a writable mapping, and the caller then reserves it without).
pub(crate) fn reserve_at(addr: usize, len: usize, writable: bool) -> Option<NonNull<u8>> {
    let flags =
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED_NOREPLACE;
    let protection = if writable {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_NONE
    };
    let hint = core::ptr::without_provenance_mut(addr);
    // SAFETY: NOREPLACE fails rather than touch an existing mapping.
    let got = unsafe { libc::mmap(hint, len, protection, flags, -1, 0) };
    if got == libc::MAP_FAILED {
        return None;
    }
    let got = NonNull::new(got.cast::<u8>())?;
    if got.as_ptr().addr() != addr {
        // SAFETY: the mapping was just made elsewhere and nothing uses it.
        unsafe { unmap(got, len) };
        return None;
    }
    Some(got)
}

/// Maps `len` bytes (whole pages) of zeroed, readable and writable memory.
pub(crate) fn map(len: usize) -> Option<NonNull<u8>> {
    mapping(len, libc::PROT_READ | libc::PROT_WRITE)
}

/// Reserves `len` bytes (whole pages) of address space that cannot be touched until committed.
pub(crate) fn reserve(len: usize) -> Option<NonNull<u8>> {
    mapping(len, libc::PROT_NONE)
}

/// Makes `[addr, addr + len)` of a reservation readable and writable. Returns whether it could.
///
/// # Safety
/// The range lies in a reservation made by [`reserve`] and owned by the caller.
pub(crate) unsafe fn commit(addr: NonNull<u8>, len: usize) -> bool {
    let protection = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: the caller owns the range, which nothing references yet.
    unsafe { libc::mprotect(addr.as_ptr().cast(), len, protection) == 0 }
}

/// Gives the pages of `[addr, addr + len)` back to the OS, keeping the mapping: they read as
/// zero and cost no memory until touched again.
///
/// # Safety
/// The range is page-aligned, inside a read-write mapping owned by the caller, and holds
/// nothing anyone will read before writing.
pub(crate) unsafe fn discard(addr: NonNull<u8>, len: usize) {
    // SAFETY: forwarded from the caller. A failure only keeps the pages resident.
    unsafe { libc::madvise(addr.as_ptr().cast(), len, libc::MADV_DONTNEED) };
}

/// Makes the pages of `[addr, addr + len)` resident and writable now, in one system call,
/// rather than one page fault at a time as they are touched. A kernel without
/// `MADV_POPULATE_WRITE` (before 5.14) refuses, and the pages fault in as usual; errno is
/// kept either way.
///
/// # Safety
/// The range is page-aligned, inside a read-write mapping owned by the caller.
pub(crate) unsafe fn populate(addr: NonNull<u8>, len: usize) {
    let saved = errno();
    // SAFETY: forwarded from the caller; populating writes nothing the caller can see (the
    // pages read as zero, as they would when faulted in).
    unsafe { libc::madvise(addr.as_ptr().cast(), len, libc::MADV_POPULATE_WRITE) };
    set_errno(saved);
}

/// Unmaps `[addr, addr + len)`.
///
/// # Safety
/// The range is a mapping (or part of one) owned by the caller, not used after this call.
pub(crate) unsafe fn unmap(addr: NonNull<u8>, len: usize) {
    // SAFETY: forwarded from the caller. A failure (impossible for a range we mapped) would
    // only leak the range.
    unsafe { libc::munmap(addr.as_ptr().cast(), len) };
}

/// Resizes the range `[addr, addr + old_len)` to `new_len` bytes, moving it if it must.
/// Returns the new base, or `None` (the range unchanged) when the kernel refuses, as it does
/// for a range that spans two mappings.
///
/// # Safety
/// The range is a mapping, or part of one, owned by the caller; on success the old range is
/// gone.
pub(crate) unsafe fn remap(
    addr: NonNull<u8>,
    old_len: usize,
    new_len: usize,
) -> Option<NonNull<u8>> {
    // SAFETY: forwarded from the caller; MREMAP_MAYMOVE never clobbers other mappings.
    let moved =
        unsafe { libc::mremap(addr.as_ptr().cast(), old_len, new_len, libc::MREMAP_MAYMOVE) };
    if moved == libc::MAP_FAILED {
        None
    } else {
        NonNull::new(moved.cast())
    }
}

/// The calling thread's errno.
pub(crate) fn errno() -> libc::c_int {
    // SAFETY: `__errno_location` returns the calling thread's errno slot, valid for reads.
    unsafe { *libc::__errno_location() }
}

/// Sets the calling thread's errno.
pub(crate) fn set_errno(value: libc::c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno slot, valid for writes.
    unsafe { *libc::__errno_location() = value };
}

/// The process's id.
pub(crate) fn pid() -> libc::pid_t {
    // SAFETY: getpid only returns a number; it cannot fail.
    unsafe { libc::getpid() }
}

/// A private copy of standard error, which programs that close fd 2 before exit (coreutils
/// do) cannot take away. Returns the new descriptor, or fd 2 itself if it cannot be copied.
pub(crate) fn keep_stderr() -> libc::c_int {
    // SAFETY: F_DUPFD_CLOEXEC only creates a descriptor; it touches no memory.
    let copy = unsafe { libc::fcntl(libc::STDERR_FILENO, libc::F_DUPFD_CLOEXEC, 100) };
    if copy < 0 {
        libc::STDERR_FILENO
    } else {
        copy
    }
}

/// Writes `bytes` to descriptor `fd` with `write(2)`, retrying short writes.
pub(crate) fn write_all(fd: libc::c_int, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is valid for reads of its length.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if written <= 0 {
            return;
        }
        bytes = &bytes[written as usize..];
    }
}
