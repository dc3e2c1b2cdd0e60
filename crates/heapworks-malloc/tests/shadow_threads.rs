//! Shadow-model stress at 8 threads at once, in a process that runs on heapworks-malloc (the
//! rlib linked in): every live block of every thread is in one shadow map of address ranges,
//! checked for overlap when it is made and for its contents before it is freed or resized;
//! blocks are handed between threads, which come and go (each lane a succession of short-lived
//! threads), so most frees are remote and many owners have exited. Under ThreadSanitizer it is
//! also a data-race check of the remote lists and arenas:
//!
//! ```sh
//! RUSTFLAGS="-Zsanitizer=thread --cfg heapworks_unexported" \
//! TSAN_OPTIONS="halt_on_error=1 suppressions=$PWD/crates/heapworks-malloc/tests/tsan.supp" \
//! cargo +nightly test -Zbuild-std --target x86_64-unknown-linux-gnu -p heapworks-malloc \
//!     --test shadow_threads
//! ```
//!
//! (the cfg keeps the library's functions off the `malloc` symbols, which the sanitizer's
//! runtime owns; the suppressions name the one known, benign race).

use heapworks_malloc as hw;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

const LANES: usize = 8;
const STEPS_PER_THREAD: usize = 3_000;
const THREADS_PER_LANE: usize = 12;
const LIVE_PER_THREAD: usize = 64;

/// A live block: its address, size and the byte it is filled with.
#[derive(Clone, Copy)]
struct Block {
    addr: usize,
    size: usize,
    fill: u8,
}

/// Every live block's range, start to end.
static SHADOW: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());
/// Blocks handed from one thread to another.
static EXCHANGE: Mutex<Vec<Block>> = Mutex::new(Vec::new());
static FAILED: AtomicBool = AtomicBool::new(false);

fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// 1 B to 300 KiB, small sizes far more often (slots, classes, medium, a few large).
fn size(state: &mut u64) -> usize {
    let r = next(state);
    1 + (r >> 8) as usize % (8 << (r % 16))
}

/// Records a new block, asserting it overlaps no live one.
fn record(block: Block) {
    assert!(
        block.addr != 0 && block.addr.is_multiple_of(16),
        "bad block {:#x}",
        block.addr
    );
    // SAFETY: a live block of ours.
    let usable = unsafe { hw::malloc_usable_size(block.addr as *mut _) };
    assert!(usable >= block.size, "usable {usable} < {}", block.size);
    let mut shadow = SHADOW.lock().unwrap();
    let end = block.addr + block.size;
    if let Some((&start, &before_end)) = shadow.range(..end).next_back() {
        assert!(
            before_end <= block.addr,
            "{:#x}..{end:#x} overlaps live {start:#x}..{before_end:#x}",
            block.addr
        );
    }
    shadow.insert(block.addr, end);
}

/// Checks a block's contents and forgets it (before it is freed or moved).
fn forget(block: Block) {
    // SAFETY: the block is live and `size` bytes long.
    let bytes = unsafe { std::slice::from_raw_parts(block.addr as *const u8, block.size) };
    assert!(
        bytes.iter().all(|&b| b == block.fill),
        "block {:#x} ({} B) lost its contents",
        block.addr,
        block.size
    );
    assert!(SHADOW.lock().unwrap().remove(&block.addr).is_some());
}

fn allocate(state: &mut u64) -> Block {
    let size = size(state);
    let fill = next(state) as u8;
    // SAFETY: plain allocation; the block is filled within its size.
    let addr = unsafe {
        let p = match next(state) % 4 {
            0 => hw::calloc(1, size),
            1 => {
                let mut p = std::ptr::null_mut();
                assert_eq!(hw::posix_memalign(&mut p, 64, size), 0);
                assert!((p as usize).is_multiple_of(64));
                p
            }
            _ => hw::malloc(size),
        };
        assert!(!p.is_null(), "no memory for {size} B");
        p.cast::<u8>().write_bytes(fill, size);
        p as usize
    };
    let block = Block { addr, size, fill };
    record(block);
    block
}

fn release(block: Block) {
    forget(block);
    // SAFETY: the block is live and given up.
    unsafe { hw::free(block.addr as *mut _) };
}

fn resize(block: Block, state: &mut u64) -> Block {
    forget(block);
    let size = size(state);
    // SAFETY: the block is live; on success it is replaced by the result.
    let addr = unsafe { hw::realloc(block.addr as *mut _, size) } as usize;
    assert!(addr != 0, "realloc to {size} B failed");
    let kept = block.size.min(size);
    // SAFETY: the block holds `size` bytes, of which the first `kept` were moved.
    unsafe {
        let bytes = std::slice::from_raw_parts(addr as *const u8, kept);
        assert!(
            bytes.iter().all(|&b| b == block.fill),
            "realloc lost contents"
        );
        (addr as *mut u8).write_bytes(block.fill, size);
    }
    let moved = Block {
        addr,
        size,
        fill: block.fill,
    };
    record(moved);
    moved
}

fn worker(seed: u64) {
    let mut state = seed | 1;
    let mut live: Vec<Block> = Vec::with_capacity(LIVE_PER_THREAD);
    for _ in 0..STEPS_PER_THREAD {
        match next(&mut state) % 8 {
            0..=2 if live.len() < LIVE_PER_THREAD => live.push(allocate(&mut state)),
            3 if !live.is_empty() => {
                let at = next(&mut state) as usize % live.len();
                live[at] = resize(live[at], &mut state);
            }
            4 if !live.is_empty() => {
                let at = next(&mut state) as usize % live.len();
                EXCHANGE.lock().unwrap().push(live.swap_remove(at));
            }
            5 => {
                let taken = EXCHANGE.lock().unwrap().pop();
                if let Some(block) = taken {
                    release(block);
                }
            }
            _ if !live.is_empty() => {
                let at = next(&mut state) as usize % live.len();
                release(live.swap_remove(at));
            }
            _ => {}
        }
    }
    // Half the survivors are left to other threads: the owner exits before they are freed.
    for (at, block) in live.into_iter().enumerate() {
        if at % 2 == 0 {
            EXCHANGE.lock().unwrap().push(block);
        } else {
            release(block);
        }
    }
}

#[test]
fn eight_threads_against_one_shadow() {
    let lanes: Vec<_> = (0..LANES as u64)
        .map(|lane| {
            std::thread::spawn(move || {
                for round in 0..THREADS_PER_LANE as u64 {
                    let seed = lane * 1_000_003 + round * 7_919 + 1;
                    let worker = std::thread::spawn(move || worker(seed));
                    if worker.join().is_err() {
                        FAILED.store(true, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for lane in lanes {
        lane.join().unwrap();
    }
    assert!(!FAILED.load(Ordering::Relaxed), "a worker failed a check");
    let left: Vec<Block> = std::mem::take(&mut *EXCHANGE.lock().unwrap());
    for block in left {
        release(block);
    }
    assert!(
        SHADOW.lock().unwrap().is_empty(),
        "blocks leaked from the shadow"
    );
}
