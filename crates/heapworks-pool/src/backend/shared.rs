//! The shared-memory backend: every buffer is its own `memfd_create` file (where there is no
//! `memfd_create`, a POSIX `shm_open` object unlinked at once: the same thing), sized with
//! `ftruncate` to whole pages and mapped `MAP_SHARED`, so its pages are the file's and another
//! process that maps the same file (its descriptor passed over a Unix socket or inherited)
//! sees and writes the very same memory, with no copy.
//!
//! Mappings of 2 MiB and more start at 2 MiB boundaries and, with [`SharedMemory::huge_pages`]
//! (the default), are backed by huge pages as they are created, by `MADV_COLLAPSE`: the
//! kernel's fault-time policy for shared memory,
//! `/sys/kernel/mm/transparent_hugepage/shmem_enabled`, is `never` by default and ignores
//! `MADV_HUGEPAGE`, and shared buffers on 4 KiB pages were 1.17–1.47× slower to fill than
//! inline ones on huge pages (module `mapping`, and the crate's TUNING.md). A receiving
//! process's [`SharedMapping`] is placed at a 2 MiB boundary too, so that it maps the same
//! huge pages.
//!
//! A cached shared buffer keeps its descriptor open: a pool holds one descriptor per cached or
//! live shared buffer, bounded by its budget. `memfd_create` failing (no descriptors left:
//! `EMFILE`), `ftruncate` failing (`ENOSPC`, or a memory cgroup limit) and `mmap` failing are
//! each a [`PoolError::Os`] naming the call and the OS error.
//!
//! [`ShmHandle`] describes a buffer to another process: descriptor, offset, length and the
//! pool that made it. [`SharedMapping`] is the receiving side: it checks the descriptor is open
//! and the file long enough (`fstat`), then maps it shared.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

use super::mapping::{self, page_rounded, page_size};
use super::{Backend, Memory, Region};
use crate::error::PoolError;

/// Name of every pool file (shown in `/proc/PID/fd` and `/proc/PID/maps`).
const FILE_NAME: &CStr = c"heapworks-pool";

/// Buffers in shared memory, one memfd each.
#[derive(Debug, Clone, Copy)]
pub struct SharedMemory {
    /// Back buffers of 2 MiB and more with huge pages where the kernel can (default on): made
    /// huge with `MADV_COLLAPSE` when they are created, since the kernel's default policy for
    /// shared memory ignores `MADV_HUGEPAGE` (see the module's doc).
    pub huge_pages: bool,
}

impl Default for SharedMemory {
    fn default() -> Self {
        Self { huge_pages: true }
    }
}

impl Backend for SharedMemory {
    fn name(&self) -> &'static str {
        "shm"
    }

    fn allocate(&self, capacity: usize, _zeroed: bool) -> Result<Region, PoolError> {
        let len = page_rounded(capacity).ok_or(PoolError::TooLarge { len: capacity })?;
        let file = create_file(len)?;
        let ptr = map_shared(&file, 0, len, len)?;
        if self.huge_pages {
            mapping::make_huge(ptr, len);
        }
        Ok(Region {
            ptr,
            capacity: len,
            zeroed: true,
            memory: Memory::Shared(file),
        })
    }
}

/// A file of `len` bytes (zeros) with no name, known only by its descriptors, closed on exec.
fn create_file(len: usize) -> Result<OwnedFd, PoolError> {
    size_file(open_anonymous(len)?, len)
}

/// A `memfd_create` file; where the kernel has none (before Linux 3.17: `ENOSYS`), a POSIX
/// shared-memory object unlinked at once ([`open_unlinked_shm`]), which is the same thing.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn open_anonymous(len: usize) -> Result<OwnedFd, PoolError> {
    // SAFETY: the name is a NUL-terminated string; the flags are valid.
    let raw = unsafe { libc::memfd_create(FILE_NAME.as_ptr(), libc::MFD_CLOEXEC) };
    if raw >= 0 {
        // SAFETY: `raw` is a descriptor memfd_create just opened, owned by nobody else.
        return Ok(unsafe { OwnedFd::from_raw_fd(raw) });
    }
    match PoolError::last_os("memfd_create", len) {
        PoolError::Os { source, .. } if source.raw_os_error() == Some(libc::ENOSYS) => {
            open_unlinked_shm(len)
        }
        other => Err(other),
    }
}

/// Systems without `memfd_create`: a POSIX shared-memory object unlinked at once.
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn open_anonymous(len: usize) -> Result<OwnedFd, PoolError> {
    open_unlinked_shm(len)
}

/// A new POSIX shared-memory object (`shm_open` with `O_EXCL`, under a name of this process
/// and a counter), unlinked as soon as it is open: like a memfd, it then lives only as long
/// as its descriptors and mappings, and a crash leaves nothing behind in `/dev/shm`.
fn open_unlinked_shm(len: usize) -> Result<OwnedFd, PoolError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    loop {
        let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("/heapworks-pool-{}-{serial}\0", std::process::id());
        let name = CStr::from_bytes_with_nul(name.as_bytes()).expect("one NUL, at the end");
        // SAFETY: `name` is NUL-terminated; the flags and mode are valid. O_EXCL: a name
        // left by another process is never opened.
        let raw = unsafe {
            libc::shm_open(
                name.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL,
                0o600 as libc::mode_t,
            )
        };
        if raw < 0 {
            let error = PoolError::last_os("shm_open", len);
            if matches!(&error, PoolError::Os { source, .. } if source.raw_os_error() == Some(libc::EEXIST))
            {
                continue;
            }
            return Err(error);
        }
        // SAFETY: `raw` was just opened by shm_open and is owned by nobody else.
        let file = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: unlinking a name this call created; the open descriptor keeps the object.
        unsafe { libc::shm_unlink(name.as_ptr()) };
        // SAFETY: setting the close-on-exec flag of a descriptor owned here.
        if unsafe { libc::fcntl(raw, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(PoolError::last_os("fcntl", len));
        }
        return Ok(file);
    }
}

/// Sizes `file` to `len` bytes (zeros).
fn size_file(file: OwnedFd, len: usize) -> Result<OwnedFd, PoolError> {
    let size = libc::off_t::try_from(len).map_err(|_| PoolError::TooLarge { len })?;
    // SAFETY: `file` is an open descriptor owned here; ftruncate only sets its size.
    if unsafe { libc::ftruncate(file.as_raw_fd(), size) } != 0 {
        return Err(PoolError::last_os("ftruncate", len));
    }
    Ok(file)
}

/// Maps `len` bytes of `file` from `offset`, shared and writable; `reported` is the length the
/// error names.
fn map_shared(
    file: &impl AsRawFd,
    offset: u64,
    len: usize,
    reported: usize,
) -> Result<NonNull<u8>, PoolError> {
    let offset = libc::off_t::try_from(offset).map_err(|_| PoolError::TooLarge { len })?;
    mapping::map(len, libc::MAP_SHARED, file.as_raw_fd(), offset)
        .map_err(|error| PoolError::os("mmap", reported, error))
}

/// A shared buffer described for another process. The descriptor is the exporting process's
/// (valid while the buffer lives); a receiver replaces it with its own number for the same
/// file ([`ShmHandle::with_fd`]) once it has received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShmHandle {
    /// The file's descriptor.
    pub fd: RawFd,
    /// Where the buffer starts in the file.
    pub offset: u64,
    /// The buffer's length in bytes.
    pub len: usize,
    /// The pool that made it ([`crate::Pool::id`]).
    pub pool: u64,
}

impl ShmHandle {
    /// The same buffer through descriptor `fd` (e.g. the number it was received under).
    pub fn with_fd(self, fd: RawFd) -> Self {
        Self { fd, ..self }
    }
}

/// A shared buffer mapped from a handle: the same pages as the exporter's buffer. Unmapped
/// when dropped; the descriptor stays the caller's.
#[derive(Debug)]
pub struct SharedMapping {
    ptr: NonNull<u8>,
    /// Bytes mapped (whole pages from the page-aligned start).
    mapped: usize,
    /// Where the buffer starts within the mapping.
    start: usize,
    /// The buffer's length.
    len: usize,
}

// SAFETY: the mapping is owned by this value and released only by its drop; access to its
// contents goes through `unsafe` accessors whose callers uphold the exclusion.
unsafe impl Send for SharedMapping {}
// SAFETY: as for `Send`; `&SharedMapping` gives only the address and the length.
unsafe impl Sync for SharedMapping {}

impl SharedMapping {
    /// Maps the buffer `handle` describes. Fails with [`PoolError::BadHandle`] when the
    /// descriptor is not open or its file is shorter than `offset + len`, and with
    /// [`PoolError::Os`] when `mmap` refuses.
    pub fn map(handle: &ShmHandle) -> Result<Self, PoolError> {
        let end = handle
            .offset
            .checked_add(handle.len as u64)
            .ok_or_else(|| {
                bad(format!(
                    "offset {} + len {} overflows",
                    handle.offset, handle.len
                ))
            })?;
        let file_len = file_len(handle.fd)?;
        if file_len < end {
            return Err(bad(format!(
                "descriptor {} is a file of {file_len} B, shorter than offset {} + len {}",
                handle.fd, handle.offset, handle.len
            )));
        }
        if handle.len == 0 {
            return Err(bad("a handle of length 0 has nothing to map".to_string()));
        }
        let page = page_size() as u64;
        let aligned_offset = handle.offset / page * page;
        let start = (handle.offset - aligned_offset) as usize;
        let mapped =
            page_rounded(start + handle.len).ok_or(PoolError::TooLarge { len: handle.len })?;
        // SAFETY: `handle.fd` was checked open by `fstat` above; the mapping is the caller's
        // to use through the accessors below. Its address is a fresh one (no MAP_FIXED).
        let file = unsafe { std::os::fd::BorrowedFd::borrow_raw(handle.fd) };
        let ptr = map_shared(&file, aligned_offset, mapped, handle.len)?;
        Ok(Self {
            ptr,
            mapped,
            start,
            len: handle.len,
        })
    }

    /// The buffer's first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        // SAFETY: `start < mapped`: the offset within the first page of the mapping.
        unsafe { self.ptr.as_ptr().add(self.start) }
    }

    /// The buffer's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer is empty (never: a mapping has at least one byte).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer as elements of `T` (the trailing bytes short of a whole element left out).
    ///
    /// # Safety
    /// The memory is shared with other processes and other mappings: while the slice lives,
    /// no one may write the buffer (the exporting process's code included), and the start
    /// must be aligned for `T` (pool buffers are 64-byte aligned).
    pub unsafe fn as_slice<T: crate::Element>(&self) -> &[T] {
        debug_assert!(self.as_ptr().cast::<T>().is_aligned());
        // SAFETY: the caller guarantees alignment and no writer; the bytes are mapped for
        // `len` and every bit pattern is a valid `T` (`Element`'s contract).
        unsafe { std::slice::from_raw_parts(self.as_ptr().cast(), self.len / size_of::<T>()) }
    }

    /// The buffer as mutable elements of `T`.
    ///
    /// # Safety
    /// As for [`as_slice`](Self::as_slice), and no one else may read the buffer either while
    /// the slice lives.
    #[allow(clippy::mut_from_ref)] // the exclusion is the caller's promise, across processes
    pub unsafe fn as_mut_slice<T: crate::Element>(&self) -> &mut [T] {
        debug_assert!(self.as_ptr().cast::<T>().is_aligned());
        // SAFETY: as in `as_slice`, with exclusive access guaranteed by the caller.
        unsafe { std::slice::from_raw_parts_mut(self.as_ptr().cast(), self.len / size_of::<T>()) }
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: the whole mapping made in `map`, unmapped once, here.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.mapped) };
    }
}

fn bad(reason: String) -> PoolError {
    PoolError::BadHandle { reason }
}

/// The size of the file open as `fd`; a closed descriptor is a [`PoolError::BadHandle`].
fn file_len(fd: RawFd) -> Result<u64, PoolError> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a `stat` into the buffer on success and touches nothing else; a
    // descriptor that is not open fails with EBADF.
    if unsafe { libc::fstat(fd, stat.as_mut_ptr()) } != 0 {
        let error = std::io::Error::last_os_error();
        return Err(bad(format!("descriptor {fd}: {error}")));
    }
    // SAFETY: fstat succeeded, so it filled the structure.
    let stat = unsafe { stat.assume_init() };
    Ok(u64::try_from(stat.st_size).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fallback of systems without `memfd_create`, run here on purpose: an unlinked POSIX
    /// object whose two mappings share their pages, and whose name is gone at once.
    #[test]
    fn an_unlinked_posix_object_serves_as_a_shared_file() {
        let len = 3 * page_size();
        let file = size_file(open_unlinked_shm(len).unwrap(), len).unwrap();
        let prefix = format!("heapworks-pool-{}-", std::process::id());
        let names = std::fs::read_dir("/dev/shm").unwrap();
        assert!(!names
            .flatten()
            .any(|entry| entry.file_name().to_string_lossy().starts_with(&prefix)));
        // SAFETY: F_GETFD only reads the descriptor's flags.
        let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        let (one, two) = (
            map_shared(&file, 0, len, len).unwrap(),
            map_shared(&file, 0, len, len).unwrap(),
        );
        // SAFETY: both are whole mappings of `len` bytes made above, unmapped below.
        unsafe {
            one.as_ptr().add(len - 1).write(42);
            assert_eq!(two.as_ptr().add(len - 1).read(), 42);
            assert_eq!(two.as_ptr().read(), 0);
            libc::munmap(one.as_ptr().cast(), len);
            libc::munmap(two.as_ptr().cast(), len);
        }
    }
}
