//! The raw capture file: what the shim writes while the traced program runs.
//!
//! `heapworks_trace::capture` reads these files back and turns them into traces; this module
//! is the one definition of their layout, and `heapworks-trace/src/raw.rs` decodes exactly it
//! (the capture tests compile programs, trace them and compare, so a drift fails there).
//!
//! Invariants:
//! - One file per process image, named `<pid>.<n>.raw` in `$HEAPWORKS_CAPTURE_DIR`, `n` the
//!   first number free for that pid (an `exec` keeps the pid and gets the next `n`).
//! - Bytes `0..HEADER_BYTES` hold a [`Header`]; records follow from `HEADER_BYTES`, each
//!   `RECORD_BYTES` long, in the processor's byte order (little-endian on x86-64 and aarch64).
//! - Threads reserve runs of records ("chunks") at `HEADER_BYTES + Header::reserved`; only
//!   `Header::reserved` bytes of records count, whatever the file's length.
//! - A record's `op` is stored last: a record whose `op` is 0 was never completed (the unused
//!   tail of a chunk, or a thread stopped by `exec` or a signal) and is skipped.
//! - `seq` comes from one counter per process image: a call that hands out a block takes it
//!   after glibc returned, a call that gives a block back takes it (or `seq_release`, for
//!   realloc) before glibc is called, so a block's release always sorts before any later
//!   allocation of the same address, in whatever thread.

use core::sync::atomic::{AtomicU32, AtomicU64};

/// First bytes of every raw capture file.
pub const MAGIC: [u8; 8] = *b"HWCAPRAW";
/// Layout version; bumped on any change to [`Header`] or [`Record`].
pub const VERSION: u32 = 1;
/// Size of the header page; records start here.
pub const HEADER_BYTES: usize = 4096;
/// Size of one record.
pub const RECORD_BYTES: usize = 64;

/// The calls a record can describe.
#[repr(u32)]
#[derive(Clone, Copy)]
pub enum RawOp {
    /// `malloc(size)`.
    Malloc = 1,
    /// `calloc(size, arg)`: `size` elements of `arg` bytes.
    Calloc = 2,
    /// `realloc(ptr, size)`; `seq_release` was taken before glibc was called.
    Realloc = 3,
    /// `free(ptr)`.
    Free = 4,
    /// `memalign(arg, size)`.
    Memalign = 5,
    /// `posix_memalign(&ret, arg, size)`.
    PosixMemalign = 6,
    /// `aligned_alloc(arg, size)`.
    AlignedAlloc = 7,
    /// `valloc(size)`: page-aligned.
    Valloc = 8,
    /// `pvalloc(size)`: page-aligned, size rounded up to whole pages.
    Pvalloc = 9,
    /// `reallocarray(ptr, size, arg)`: `size` elements of `arg` bytes; `seq_release` as realloc.
    ReallocArray = 10,
}

/// The header page of a raw capture file.
#[repr(C)]
pub struct Header {
    /// [`MAGIC`].
    pub magic: [u8; 8],
    /// [`VERSION`].
    pub version: u32,
    /// [`RECORD_BYTES`].
    pub record_bytes: u32,
    /// Process id of the image that wrote the file.
    pub pid: u32,
    /// Its parent's process id.
    pub parent_pid: u32,
    /// `sysconf(_SC_PAGESIZE)`, for valloc and pvalloc.
    pub page_size: u32,
    /// 1 if the image began as the child of a `fork` of a traced process: it frees blocks that
    /// its parent allocated, which its own file never saw allocated.
    pub forked: u32,
    /// `CLOCK_MONOTONIC` nanoseconds when the file was created, to order the files of a run.
    pub start_ns: u64,
    /// Bytes of records reserved so far, counted from [`HEADER_BYTES`].
    pub reserved: AtomicU64,
    /// Calls that could not be recorded (no chunk could be mapped).
    pub dropped: AtomicU64,
    /// Length of the path in `exe`.
    pub exe_len: u32,
    /// Length of the arguments in `cmdline`.
    pub cmdline_len: u32,
    /// `/proc/self/exe`, cut to fit.
    pub exe: [u8; 1024],
    /// Allocator calls made while the same thread was inside a hook (forwarded unrecorded):
    /// 0 unless something the shim calls allocates, which it must not.
    pub reentered: AtomicU64,
    /// `/proc/self/cmdline` (arguments separated by NUL bytes), cut to fit.
    pub cmdline: [u8; 3000],
}

/// One recorded call.
#[repr(C)]
pub struct Record {
    /// Position of the call in the process's order of calls (see the module invariants).
    pub seq: u64,
    /// For realloc and reallocarray: the position taken before glibc was called, when the old
    /// block may be released.
    pub seq_release: u64,
    /// The pointer given to free, realloc or reallocarray.
    pub ptr: u64,
    /// The pointer returned (0 for free and for a failed call).
    pub ret: u64,
    /// The size argument (element count for calloc and reallocarray).
    pub size: u64,
    /// The second argument: alignment, or element size for calloc and reallocarray.
    pub arg: u64,
    /// Index of the calling thread within the process image, from 0 in order of first call.
    pub thread: u32,
    /// A [`RawOp`] code; written last, 0 while the record is incomplete.
    pub op: AtomicU32,
    /// Keeps records a power of two long, so chunks of whole pages hold whole records.
    pub padding: u64,
}

const _: () = assert!(core::mem::size_of::<Header>() == HEADER_BYTES);
const _: () = assert!(core::mem::size_of::<Record>() == RECORD_BYTES);
