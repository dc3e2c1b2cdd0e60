//! The operating-system interface: page mappings, errno, the process id, and raw writes to
//! stderr.
//!
//! Invariants: nothing here allocates, takes a libc lock or calls back into malloc; each
//! function is one system call. The memory calls (`mmap`, `mprotect`, `madvise`, `munmap`,
//! `mremap`) are made with the `syscall` instruction itself, not libc's wrappers: they leave
//! errno alone (which `free` must keep), and they touch none of libc's code pages, which a
//! preloaded library would otherwise bring into a small program's resident set (the kernel
//! maps a file's cached pages around each one touched, up to 64 KiB at a time). Lengths handed
//! to the kernel are whole pages; mappings are private and anonymous, never `brk`.

use core::ptr::NonNull;

/// The page size on x86-64 Linux (the only target this crate's TLS and mappings support).
pub(crate) const PAGE: usize = 4096;

extern "C" {
    /// glibc's flag, true while the process has never had a second thread (GLIBC_2.32).
    static __libc_single_threaded: core::ffi::c_char;
}

/// Whether the process has only ever had one thread.
pub(crate) fn single_threaded() -> bool {
    // SAFETY: glibc's flag is a plain byte it writes only while the process is single-threaded
    // (or in a new child); reading it is what `<sys/single_threaded.h>` tells programs to do.
    unsafe { core::ptr::read_volatile(&raw const __libc_single_threaded) != 0 }
}

/// Rounds `bytes` up to whole pages, or `None` on overflow.
pub(crate) const fn round_to_pages(bytes: usize) -> Option<usize> {
    match bytes.checked_add(PAGE - 1) {
        Some(sum) => Some(sum & !(PAGE - 1)),
        None => None,
    }
}

/// Makes system call `number` with up to six arguments (unused ones 0); returns the kernel's
/// result (a negated errno on failure, which is left out of errno).
///
/// # Safety
/// The call and its arguments must be safe to make: the caller's promises for the memory it
/// names.
unsafe fn syscall6(number: libc::c_long, args: [usize; 6]) -> isize {
    let result: isize;
    // SAFETY: the Linux x86-64 system call convention: number in rax, arguments in rdi, rsi,
    // rdx, r10, r8 and r9; the kernel clobbers rcx and r11 and returns in rax. What the call does
    // to memory is the caller's promise.
    unsafe {
        core::arch::asm!(
            "syscall",
            inlateout("rax") number as isize => result,
            in("rdi") args[0],
            in("rsi") args[1],
            in("rdx") args[2],
            in("r10") args[3],
            in("r8") args[4],
            in("r9") args[5],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    result
}

/// Whether a system call's result is an error (a negated errno).
fn failed(result: isize) -> bool {
    (-4095..0).contains(&result)
}

/// `mmap` of an anonymous private range: `hint` (0: the kernel's choice), `len` bytes,
/// `protection`, `flags` on top of `MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE`. Fails with
/// the kernel's errno.
fn map_anonymous(
    hint: usize,
    len: usize,
    protection: libc::c_int,
    flags: libc::c_int,
) -> Result<NonNull<u8>, libc::c_int> {
    debug_assert_eq!(
        flags & libc::MAP_FIXED,
        0,
        "MAP_FIXED would replace mappings"
    );
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | flags;
    // SAFETY: a new anonymous mapping touches no existing memory unless `flags` says
    // `MAP_FIXED`, which no caller passes (NOREPLACE fails rather than replace).
    let result = unsafe {
        syscall6(
            libc::SYS_mmap,
            [
                hint,
                len,
                protection as usize,
                flags as usize,
                usize::MAX,
                0,
            ],
        )
    };
    if failed(result) {
        return Err(-result as libc::c_int);
    }
    NonNull::new(core::ptr::with_exposed_provenance_mut(result as usize)).ok_or(libc::ENOMEM)
}

fn mapping(len: usize, protection: libc::c_int) -> Option<NonNull<u8>> {
    map_anonymous(0, len, protection, 0).ok()
}

/// Reserves `len` bytes (whole pages) of address space at exactly `addr` (page-aligned), as
/// [`reserve`] does, unless anything is mapped there: `MAP_FIXED_NOREPLACE` never replaces a
/// mapping, and a kernel older than 4.17, which takes the address as a hint only, is caught
/// by the check.
/// With `writable`, the range is readable and writable from the start (still charged nothing
/// until touched, under the kernel's default overcommit heuristic; a kernel that accounts
/// strictly refuses so large a writable mapping, and the caller then reserves it without).
/// Fails with `EEXIST` when something is mapped in the range, `ENOMEM` when the address
/// space (or data) limit refuses it: the kernel checks the range before the limits, so
/// `ENOMEM` means the range was free.
pub(crate) fn reserve_at(
    addr: usize,
    len: usize,
    writable: bool,
) -> Result<NonNull<u8>, libc::c_int> {
    let protection = if writable {
        libc::PROT_READ | libc::PROT_WRITE
    } else {
        libc::PROT_NONE
    };
    let got = map_anonymous(addr, len, protection, libc::MAP_FIXED_NOREPLACE)?;
    if got.as_ptr().addr() != addr {
        // SAFETY: the mapping was just made elsewhere and nothing uses it.
        unsafe { unmap(got, len) };
        return Err(libc::EEXIST);
    }
    Ok(got)
}

/// Maps `len` bytes (whole pages) of zeroed, readable and writable memory.
pub(crate) fn map(len: usize) -> Option<NonNull<u8>> {
    mapping(len, libc::PROT_READ | libc::PROT_WRITE)
}

/// Reserves `len` bytes (whole pages) of address space that cannot be touched until committed.
pub(crate) fn reserve(len: usize) -> Option<NonNull<u8>> {
    mapping(len, libc::PROT_NONE)
}

/// Reserves `len` bytes (a multiple of `align`, a power of two of at least a page) of address
/// space aligned to `align`, as [`reserve`] does: `len + align - PAGE` are reserved and the
/// misaligned head and tail given back.
pub(crate) fn reserve_aligned(len: usize, align: usize) -> Option<NonNull<u8>> {
    let padded = len.checked_add(align - PAGE)?;
    let base = reserve(padded)?;
    let addr = base.as_ptr().addr();
    let head = addr.next_multiple_of(align) - addr;
    let tail = padded - head - len;
    // SAFETY: the head and the tail are parts of the mapping just made, which nobody uses.
    unsafe {
        if head > 0 {
            unmap(base, head);
        }
        let aligned = base.add(head);
        if tail > 0 {
            unmap(aligned.add(len), tail);
        }
        Some(aligned)
    }
}

/// Makes `[addr, addr + len)` of a reservation readable and writable. Returns whether it could.
///
/// # Safety
/// The range lies in a reservation made by [`reserve`] and owned by the caller.
pub(crate) unsafe fn commit(addr: NonNull<u8>, len: usize) -> bool {
    let protection = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: the caller owns the range, which nothing references yet.
    let result = unsafe {
        syscall6(
            libc::SYS_mprotect,
            [addr.as_ptr().addr(), len, protection as usize, 0, 0, 0],
        )
    };
    result == 0
}

/// Makes `[addr, addr + len)` inaccessible (a guard page: any access faults). Returns whether
/// it could.
///
/// # Safety
/// The range is page-aligned, inside a mapping owned by the caller, and holds nothing anyone
/// will use.
pub(crate) unsafe fn protect_none(addr: NonNull<u8>, len: usize) -> bool {
    // SAFETY: forwarded from the caller.
    let result = unsafe {
        syscall6(
            libc::SYS_mprotect,
            [addr.as_ptr().addr(), len, libc::PROT_NONE as usize, 0, 0, 0],
        )
    };
    result == 0
}

/// Gives the pages of `[addr, addr + len)` back to the OS, keeping the mapping: they read as
/// zero and cost no memory until touched again.
///
/// # Safety
/// The range is page-aligned, inside a read-write mapping owned by the caller, and holds
/// nothing anyone will read before writing.
pub(crate) unsafe fn discard(addr: NonNull<u8>, len: usize) {
    // SAFETY: forwarded from the caller. A failure only keeps the pages resident.
    unsafe { advise(addr, len, libc::MADV_DONTNEED) };
}

/// Makes the pages of `[addr, addr + len)` resident and writable now, in one system call,
/// rather than one page fault at a time as they are touched. A kernel without
/// `MADV_POPULATE_WRITE` (before 5.14) refuses, and the pages fault in as usual.
///
/// # Safety
/// The range is page-aligned, inside a read-write mapping owned by the caller.
pub(crate) unsafe fn populate(addr: NonNull<u8>, len: usize) {
    // SAFETY: forwarded from the caller; populating writes nothing the caller can see (the
    // pages read as zero, as they would when faulted in).
    unsafe { advise(addr, len, libc::MADV_POPULATE_WRITE) };
}

/// `madvise(addr, len, advice)`; a failure is ignored.
///
/// # Safety
/// As for the advice given: the caller's promises for the range.
unsafe fn advise(addr: NonNull<u8>, len: usize, advice: libc::c_int) {
    // SAFETY: forwarded from the caller.
    unsafe {
        syscall6(
            libc::SYS_madvise,
            [addr.as_ptr().addr(), len, advice as usize, 0, 0, 0],
        )
    };
}

/// Unmaps `[addr, addr + len)`.
///
/// # Safety
/// The range is a mapping (or part of one) owned by the caller, not used after this call.
pub(crate) unsafe fn unmap(addr: NonNull<u8>, len: usize) {
    // SAFETY: forwarded from the caller. A failure (impossible for a range we mapped) would
    // only leak the range.
    unsafe { syscall6(libc::SYS_munmap, [addr.as_ptr().addr(), len, 0, 0, 0, 0]) };
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
    let moved = unsafe {
        syscall6(
            libc::SYS_mremap,
            [
                addr.as_ptr().addr(),
                old_len,
                new_len,
                libc::MREMAP_MAYMOVE as usize,
                0,
                0,
            ],
        )
    };
    if failed(moved) {
        return None;
    }
    NonNull::new(core::ptr::with_exposed_provenance_mut(moved as usize))
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
