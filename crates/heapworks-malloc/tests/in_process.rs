//! Rust tests in a process that runs on heapworks-malloc: linking the rlib makes its `malloc`
//! the process's, so the test harness, std's collections and threads all allocate through it.

/// The exports, called through pointers the optimizer cannot see through: it takes functions
/// named `malloc`, `free` and so on for the C library's, and in release builds folds
/// `malloc(SIZE_MAX) == NULL` to false and takes a read of the word before a block for one out
/// of its bounds.
mod hw {
    use heapworks_malloc as exports;
    use std::ffi::c_void;
    use std::hint::black_box;

    pub unsafe fn malloc(size: usize) -> *mut c_void {
        let malloc: unsafe extern "C" fn(usize) -> *mut c_void = exports::malloc;
        // SAFETY: forwarded from the caller.
        unsafe { black_box(malloc)(size) }
    }

    pub unsafe fn free(ptr: *mut c_void) {
        let free: unsafe extern "C" fn(*mut c_void) = exports::free;
        // SAFETY: forwarded from the caller.
        unsafe { black_box(free)(ptr) }
    }

    pub unsafe fn calloc(count: usize, size: usize) -> *mut c_void {
        let calloc: unsafe extern "C" fn(usize, usize) -> *mut c_void = exports::calloc;
        // SAFETY: forwarded from the caller.
        unsafe { black_box(calloc)(count, size) }
    }

    pub unsafe fn realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
        let realloc: unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void = exports::realloc;
        // SAFETY: forwarded from the caller.
        unsafe { black_box(realloc)(ptr, size) }
    }

    pub unsafe fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
        let aligned_alloc: unsafe extern "C" fn(usize, usize) -> *mut c_void =
            exports::aligned_alloc;
        // SAFETY: forwarded from the caller.
        unsafe { black_box(aligned_alloc)(align, size) }
    }

    pub unsafe fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> i32 {
        let posix_memalign: unsafe extern "C" fn(*mut *mut c_void, usize, usize) -> i32 =
            exports::posix_memalign;
        // SAFETY: forwarded from the caller.
        unsafe { black_box(posix_memalign)(out, align, size) }
    }

    pub unsafe fn malloc_usable_size(ptr: *mut c_void) -> usize {
        let usable: unsafe extern "C" fn(*mut c_void) -> usize = exports::malloc_usable_size;
        // SAFETY: forwarded from the caller.
        unsafe { black_box(usable)(ptr) }
    }
}
use std::ffi::c_void;

/// Whether this process's `malloc` is ours: a large block carries our tagged header.
#[test]
fn process_runs_on_heapworks() {
    // SAFETY: plain allocation calls through the C ABI.
    unsafe {
        let ours = hw::malloc(1 << 20);
        let words = ours.cast::<usize>();
        let tagged = words.sub(1).read() & heapworks::EMBEDDER_TAG != 0;
        hw::free(ours);
        assert!(tagged);
        // A Box goes through the same malloc: its usable size is reported by ours.
        let boxed = Box::new([7u8; 100]);
        let raw = Box::into_raw(boxed);
        assert!(hw::malloc_usable_size(raw.cast()) >= 100);
        drop(Box::from_raw(raw));
    }
}

/// Runs `check` in a forked child and asserts that it returned true. The child has one thread,
/// so no other test (nor the harness) can take the free space a layout check relies on.
fn in_single_threaded_child(check: fn() -> bool) {
    // SAFETY: the child only calls heapworks-malloc (fork-safe: its locks are reset in the
    // child) and `_exit`; the parent waits for it.
    unsafe {
        let pid = libc::fork();
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            libc::_exit(if check() { 0 } else { 1 });
        }
        let mut status = 0;
        assert_eq!(libc::waitpid(pid, &mut status, 0), pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "the check failed in the child (status {status:#x})"
        );
    }
}

#[test]
fn realloc_grows_and_shrinks_in_place() {
    in_single_threaded_child(|| {
        // SAFETY: the block is used within its size and freed once.
        unsafe {
            let p = hw::malloc(100_000).cast::<u8>();
            p.write_bytes(3, 100_000);
            // A fresh medium block grows into the free space after it.
            let grown = hw::realloc(p.cast(), 104_096).cast::<u8>();
            // A shrink stays in place and keeps the contents.
            let shrunk = hw::realloc(grown.cast(), 10_000).cast::<u8>();
            let kept = *shrunk.add(9_999) == 3;
            hw::free(shrunk.cast());
            grown == p && shrunk == p && kept
        }
    });
}

#[test]
fn calloc_zeroes_recycled_blocks() {
    for size in [16usize, 200, 5_000, 100_000, 3_000_000] {
        // SAFETY: blocks are used within their sizes and freed once.
        unsafe {
            let dirty = hw::malloc(size).cast::<u8>();
            dirty.write_bytes(0xff, size);
            hw::free(dirty.cast());
            let zeroed = hw::calloc(size, 1).cast::<u8>();
            assert!(std::slice::from_raw_parts(zeroed, size)
                .iter()
                .all(|&b| b == 0));
            hw::free(zeroed.cast());
        }
    }
}

#[test]
fn errno_and_invalid_requests() {
    // SAFETY: failing calls return null; the one valid block is freed.
    unsafe {
        assert!(hw::malloc(usize::MAX).is_null());
        assert_eq!(*libc::__errno_location(), libc::ENOMEM);
        assert!(hw::aligned_alloc(48, 64).is_null());
        assert_eq!(*libc::__errno_location(), libc::EINVAL);
        let mut out: *mut c_void = std::ptr::null_mut();
        assert_eq!(hw::posix_memalign(&mut out, 3, 8), libc::EINVAL);
        assert_eq!(hw::posix_memalign(&mut out, 4096, 8), 0);
        assert_eq!(out as usize % 4096, 0);
        *libc::__errno_location() = 99;
        hw::free(out);
        assert_eq!(*libc::__errno_location(), 99);
    }
}

/// Threads allocate, hand boxes to each other over channels and exit while others run.
#[test]
fn threads_share_and_exit() {
    let (sender, receiver) = std::sync::mpsc::channel::<(u64, Vec<u64>)>();
    let producers: Vec<_> = (0..4u64)
        .map(|t| {
            let sender = sender.clone();
            std::thread::spawn(move || {
                for i in 0..2_000u64 {
                    let v: Vec<u64> = (0..(i % 300)).map(|k| k ^ t).collect();
                    sender.send((t, v)).unwrap();
                }
            })
        })
        .collect();
    drop(sender);
    let consumer = std::thread::spawn(move || {
        let mut count = 0;
        for (t, v) in receiver {
            for (k, x) in v.iter().enumerate() {
                assert_eq!(*x, k as u64 ^ t);
            }
            count += 1;
        }
        count
    });
    for producer in producers {
        producer.join().unwrap();
    }
    assert_eq!(consumer.join().unwrap(), 8_000);
}
