//! The process-wide side of the shim: this process image's raw file, its header page, the
//! order counter, and the chunks of the file that threads write their records into.
//!
//! Invariants:
//! - `STATE` moves `UNINIT → STARTING → READY | OFF` once per process image; the child of a
//!   `fork` starts again in [`after_fork_child`] (registered with `pthread_atfork` when the
//!   library is loaded) before the child runs any other code.
//! - While `READY`, `FD` is the open raw file, `HEADER` its mapped header page, and the file
//!   holds at least `CAPACITY` bytes of records after the header.
//! - The file is written only through `MAP_SHARED` mappings: what a thread wrote is in the
//!   page cache at once, so it outlives `exec`, `_exit` and signals without any flush.
//! - Nothing here allocates: paths are built in stack buffers and memory comes from `mmap`.
//!   Every libc call made here (getenv, open, ftruncate, mmap, fstat, readlink, read, close,
//!   clock_gettime, sysconf) is a system call wrapper or reads process state.

use crate::raw::{Header, Record, HEADER_BYTES, MAGIC, RECORD_BYTES, VERSION};
use crate::thread;
use core::ffi::c_void;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// Directory the capture runner asks raw files to be written to; unset means "record nothing".
pub const DIR_ENV: &[u8] = b"HEAPWORKS_CAPTURE_DIR\0";

const UNINIT: u32 = 0;
const STARTING: u32 = 1;
const READY: u32 = 2;
const OFF: u32 = 3;

/// Record bytes the file is created with; it doubles whenever a chunk reaches past its end.
const INITIAL_CAPACITY: u64 = 1 << 20;

static STATE: AtomicU32 = AtomicU32::new(UNINIT);
static FD: AtomicI32 = AtomicI32::new(-1);
static HEADER: AtomicPtr<Header> = AtomicPtr::new(ptr::null_mut());
static FILE_DEVICE: AtomicU64 = AtomicU64::new(0);
static FILE_INODE: AtomicU64 = AtomicU64::new(0);
static CAPACITY: AtomicU64 = AtomicU64::new(0);
static GROW_LOCK: AtomicBool = AtomicBool::new(false);
static SEQ: AtomicU64 = AtomicU64::new(0);
static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Registers [`after_fork_child`] when the library is loaded (before `main`, and before any
/// fork could be under way).
#[used]
#[link_section = ".init_array"]
static REGISTER_FORK_HANDLER: extern "C" fn() = register_fork_handler;

extern "C" fn register_fork_handler() {
    // SAFETY: `after_fork_child` is an `extern "C" fn()` that lives as long as the process.
    // pthread_atfork may allocate: the shim's own calls are not the program's, so they are not
    // recorded.
    thread::without_recording(|| unsafe {
        libc::pthread_atfork(None, None, Some(after_fork_child))
    });
}

/// Whether recording is on, without starting it: the fast path of every hook.
pub fn is_ready() -> bool {
    STATE.load(Ordering::Acquire) == READY
}

/// Whether calls are being recorded; opens this image's raw file on the first call.
pub fn ready() -> bool {
    let state = STATE.load(Ordering::Acquire);
    if state != UNINIT {
        return if state == STARTING {
            wait_for_start()
        } else {
            state == READY
        };
    }
    match STATE.compare_exchange(UNINIT, STARTING, Ordering::Acquire, Ordering::Acquire) {
        Ok(_) => finish_start(false),
        Err(STARTING) => wait_for_start(),
        Err(state) => state == READY,
    }
}

fn finish_start(forked: bool) -> bool {
    let started = open_raw_file(forked);
    STATE.store(if started { READY } else { OFF }, Ordering::Release);
    started
}

fn wait_for_start() -> bool {
    loop {
        match STATE.load(Ordering::Acquire) {
            STARTING => core::hint::spin_loop(),
            state => return state == READY,
        }
    }
}

/// The next position in this image's order of calls.
pub fn next_seq() -> u64 {
    // Relaxed is enough: one atomic counter's modification order agrees with every
    // happens-before edge (a free in one thread, then a malloc of the same address in another,
    // are ordered through glibc's own locks), and that is the only order the counter serves.
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// A fresh thread index for this image.
pub fn next_thread() -> u32 {
    NEXT_THREAD.fetch_add(1, Ordering::Relaxed)
}

/// Counts forks: a thread state from an older generation belongs to the parent's file.
pub fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Notes a call that could not be recorded.
pub fn count_dropped() {
    count_in_header(|header| &header.dropped);
}

/// Notes a call made from inside a hook.
pub fn count_reentered() {
    count_in_header(|header| &header.reentered);
}

fn count_in_header(counter: impl FnOnce(&Header) -> &AtomicU64) {
    let header = HEADER.load(Ordering::Acquire);
    if !header.is_null() {
        // SAFETY: a non-null HEADER is the header page mapped in `open_raw_file`, unmapped only
        // in a fork child before any other code runs there; the counters are atomics.
        counter(unsafe { &*header }).fetch_add(1, Ordering::Relaxed);
    }
}

/// Maps `bytes` more bytes of records for the calling thread; `None` if the file cannot grow.
pub fn reserve_chunk(bytes: u64) -> Option<*mut Record> {
    let header = HEADER.load(Ordering::Acquire);
    if header.is_null() {
        return None;
    }
    // SAFETY: as in `count_dropped`.
    let offset = unsafe { (*header).reserved.fetch_add(bytes, Ordering::Relaxed) };
    if !ensure_capacity(offset + bytes) {
        return None;
    }
    map_records(offset, bytes)
}

fn map_records(offset: u64, bytes: u64) -> Option<*mut Record> {
    let file_offset = libc::off_t::try_from(HEADER_BYTES as u64 + offset).ok()?;
    // SAFETY: a fresh shared mapping of a range the file holds (ensured by the caller); the
    // kernel picks the address, so no existing mapping is touched. MAP_POPULATE maps every
    // page in this one call instead of one page fault per 64 records.
    let addr = unsafe {
        libc::mmap(
            ptr::null_mut(),
            bytes as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            FD.load(Ordering::Relaxed),
            file_offset,
        )
    };
    (addr != libc::MAP_FAILED).then_some(addr.cast::<Record>())
}

fn ensure_capacity(needed: u64) -> bool {
    if CAPACITY.load(Ordering::Acquire) >= needed {
        return true;
    }
    while GROW_LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    let grown = CAPACITY.load(Ordering::Acquire) >= needed || grow_file(needed);
    GROW_LOCK.store(false, Ordering::Release);
    grown
}

fn grow_file(needed: u64) -> bool {
    if !still_our_file() {
        return false;
    }
    let capacity = needed.max(CAPACITY.load(Ordering::Relaxed) * 2);
    let Ok(length) = libc::off_t::try_from(HEADER_BYTES as u64 + capacity) else {
        return false;
    };
    // SAFETY: FD is this image's raw file (checked just above); growing it only adds zeros.
    let grown = unsafe { libc::ftruncate(FD.load(Ordering::Relaxed), length) } == 0;
    if grown {
        CAPACITY.store(capacity, Ordering::Release);
    }
    grown
}

/// A traced program may close descriptors it did not open and reuse the number: never resize
/// a file that is not ours.
fn still_our_file() -> bool {
    file_identity(FD.load(Ordering::Relaxed)).is_some_and(|(device, inode)| {
        device == FILE_DEVICE.load(Ordering::Relaxed) && inode == FILE_INODE.load(Ordering::Relaxed)
    })
}

fn file_identity(fd: i32) -> Option<(u64, u64)> {
    let mut stat = core::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes a whole `stat` into the buffer when it returns 0.
    let status = unsafe { libc::fstat(fd, stat.as_mut_ptr()) };
    // SAFETY: fstat succeeded, so the buffer is initialized.
    (status == 0).then(|| unsafe { (stat.assume_init().st_dev, stat.assume_init().st_ino) })
}

/// Child side of `fork`: the inherited mappings belong to the parent's file, so the child gets
/// a file of its own, a fresh order counter and fresh thread indices.
extern "C" fn after_fork_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
    GROW_LOCK.store(false, Ordering::Relaxed);
    let state = STATE.load(Ordering::Acquire);
    if state != READY && state != STARTING {
        return;
    }
    forget_parent_file();
    STATE.store(STARTING, Ordering::Relaxed);
    thread::without_recording(|| finish_start(true));
}

fn forget_parent_file() {
    let header = HEADER.swap(ptr::null_mut(), Ordering::AcqRel);
    if !header.is_null() {
        // SAFETY: the header page was mapped by `open_raw_file` and nothing in the child uses
        // it any more (HEADER is now null).
        unsafe { libc::munmap(header.cast::<c_void>(), HEADER_BYTES) };
    }
    // SAFETY: the child's copy of the descriptor; the parent's stays open.
    unsafe { libc::close(FD.swap(-1, Ordering::Relaxed)) };
}

fn open_raw_file(forked: bool) -> bool {
    if !thread::state_fits() || page_size() > HEADER_BYTES {
        return false;
    }
    let Some(fd) = create_file() else {
        return false;
    };
    let Some((device, inode)) = file_identity(fd) else {
        return false;
    };
    let Some(header) = map_header(fd) else {
        return false;
    };
    fill_header(header, forked);
    FILE_DEVICE.store(device, Ordering::Relaxed);
    FILE_INODE.store(inode, Ordering::Relaxed);
    FD.store(fd, Ordering::Relaxed);
    CAPACITY.store(INITIAL_CAPACITY, Ordering::Relaxed);
    SEQ.store(0, Ordering::Relaxed);
    NEXT_THREAD.store(0, Ordering::Relaxed);
    HEADER.store(header, Ordering::Release);
    true
}

fn page_size() -> usize {
    // SAFETY: sysconf only reads a constant of the system.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(usize::MAX)
}

/// Creates `$HEAPWORKS_CAPTURE_DIR/<pid>.<n>.raw` with the first free `n`, holding the header
/// page and `INITIAL_CAPACITY` bytes of (sparse) records.
fn create_file() -> Option<i32> {
    // SAFETY: DIR_ENV is NUL-terminated; getenv returns null or a NUL-terminated string owned
    // by the environment, read here before anything could change it.
    let dir = unsafe { libc::getenv(DIR_ENV.as_ptr().cast()) };
    if dir.is_null() {
        return None;
    }
    // SAFETY: `dir` is a non-null NUL-terminated string (see above).
    let dir = unsafe { core::ffi::CStr::from_ptr(dir) }.to_bytes();
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() } as u32;
    for image in 0..10_000 {
        match try_create(dir, pid, image) {
            Created::File(fd) => return Some(fd),
            Created::NameTaken => continue,
            Created::Failed => return None,
        }
    }
    None
}

enum Created {
    File(i32),
    /// An earlier image of this pid (before an `exec`) holds the name.
    NameTaken,
    Failed,
}

fn try_create(dir: &[u8], pid: u32, image: u32) -> Created {
    let mut path = PathBuf::new();
    let complete = path.push(dir)
        && path.push(b"/")
        && path.push_decimal(pid)
        && path.push(b".")
        && path.push_decimal(image)
        && path.push(b".raw\0");
    if !complete {
        return Created::Failed;
    }
    let flags = libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC;
    // SAFETY: the path is NUL-terminated (pushed last above).
    let fd = unsafe { libc::open(path.bytes.as_ptr().cast(), flags, 0o600) };
    if fd < 0 {
        return if errno() == libc::EEXIST {
            Created::NameTaken
        } else {
            Created::Failed
        };
    }
    // SAFETY: a descriptor just opened for writing.
    let sized = unsafe { libc::ftruncate(fd, (HEADER_BYTES as u64 + INITIAL_CAPACITY) as i64) };
    if sized == 0 {
        Created::File(fd)
    } else {
        // SAFETY: the descriptor opened above, not shared with anything.
        unsafe { libc::close(fd) };
        Created::Failed
    }
}

fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno, always valid to read.
    unsafe { *libc::__errno_location() }
}

fn map_header(fd: i32) -> Option<*mut Header> {
    // SAFETY: a fresh shared mapping of the file's first page, which exists (ftruncate above).
    let addr = unsafe {
        libc::mmap(
            ptr::null_mut(),
            HEADER_BYTES,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    (addr != libc::MAP_FAILED).then_some(addr.cast::<Header>())
}

fn fill_header(header: *mut Header, forked: bool) {
    // SAFETY: `header` is a writable mapping of the new file's first HEADER_BYTES (the size of
    // `Header`), zero-filled as the file is new; nothing else sees it before HEADER is stored.
    let header = unsafe { &mut *header };
    header.magic = MAGIC;
    header.version = VERSION;
    header.record_bytes = RECORD_BYTES as u32;
    // SAFETY: getpid and getppid cannot fail.
    (header.pid, header.parent_pid) = unsafe { (libc::getpid() as u32, libc::getppid() as u32) };
    header.page_size = page_size() as u32;
    header.forked = u32::from(forked);
    header.start_ns = monotonic_ns();
    header.exe_len = read_link(b"/proc/self/exe\0", &mut header.exe);
    header.cmdline_len = read_file(b"/proc/self/cmdline\0", &mut header.cmdline);
}

fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

fn read_link(path: &[u8], out: &mut [u8]) -> u32 {
    // SAFETY: `path` is NUL-terminated; readlink writes at most `out.len()` bytes into `out`.
    let length =
        unsafe { libc::readlink(path.as_ptr().cast(), out.as_mut_ptr().cast(), out.len()) };
    u32::try_from(length).unwrap_or(0)
}

fn read_file(path: &[u8], out: &mut [u8]) -> u32 {
    // SAFETY: `path` is NUL-terminated.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return 0;
    }
    let mut filled = 0;
    while filled < out.len() {
        let rest = &mut out[filled..];
        // SAFETY: read writes at most `rest.len()` bytes into `rest`.
        let count = unsafe { libc::read(fd, rest.as_mut_ptr().cast(), rest.len()) };
        match usize::try_from(count) {
            Ok(count) if count > 0 => filled += count,
            _ => break,
        }
    }
    // SAFETY: the descriptor opened above.
    unsafe { libc::close(fd) };
    filled as u32
}

/// A NUL-terminated path built on the stack.
struct PathBuf {
    bytes: [u8; 4096],
    length: usize,
}

impl PathBuf {
    fn new() -> Self {
        Self {
            bytes: [0; 4096],
            length: 0,
        }
    }

    /// Appends `part`; false if it does not fit.
    fn push(&mut self, part: &[u8]) -> bool {
        let end = self.length + part.len();
        if end > self.bytes.len() {
            return false;
        }
        self.bytes[self.length..end].copy_from_slice(part);
        self.length = end;
        true
    }

    fn push_decimal(&mut self, value: u32) -> bool {
        let mut digits = [0u8; 10];
        let mut start = digits.len();
        let mut rest = value;
        loop {
            start -= 1;
            digits[start] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        self.push(&digits[start..])
    }
}
