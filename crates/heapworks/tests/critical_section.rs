//! `CriticalSectionHeap` (feature `critical-section`) as this test program's
//! `#[global_allocator]`, over `critical-section`'s `std` implementation (a process-wide
//! re-entrant lock): threads are excluded from each other, a holder's `try_lock` fails, and a
//! holder that locks again aborts with its message instead of deadlocking.
#![cfg(feature = "critical-section")]

use std::alloc::{GlobalAlloc, Layout};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use heapworks::CriticalSectionHeap;

const ARENA_LEN: usize = 64 << 20;
static mut ARENA: [u8; ARENA_LEN] = [0; ARENA_LEN];

#[global_allocator]
// SAFETY: nothing else uses the arena.
static HEAP: CriticalSectionHeap =
    unsafe { CriticalSectionHeap::with_region(&raw mut ARENA as *mut u8, ARENA_LEN) };

/// Set in the child process that locks the heap twice.
const REENTRY_CHILD: &str = "HEAPWORKS_TEST_REENTRY";

#[test]
fn threads_share_the_heap() {
    let rounds = if cfg!(miri) { 50 } else { 5000 };
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut held: Vec<Vec<u8>> = Vec::new();
                for i in 0..rounds {
                    held.push(vec![t; 8 + (i * 29) % 700]);
                    if i % 3 == 0 {
                        let block = held.swap_remove(i % held.len());
                        assert!(block.iter().all(|&b| b == t), "another thread wrote here");
                    }
                }
                held.len()
            })
        })
        .collect();
    let kept: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert!(kept > 0);
    HEAP.lock().check().unwrap();
}

#[test]
fn the_holder_cannot_take_the_lock_again() {
    let guard = HEAP.lock();
    assert!(HEAP.try_lock().is_none());
    drop(guard);
    assert!(HEAP.try_lock().is_some());
}

#[test]
fn a_request_beyond_the_region_gets_null() {
    let layout = Layout::from_size_align(ARENA_LEN, 8).unwrap();
    // SAFETY: non-zero size.
    let block = unsafe { HEAP.alloc(layout) };
    assert!(block.is_null());
}

#[test]
#[cfg_attr(miri, ignore = "spawns a process")]
fn reentry_aborts_with_its_message() {
    if std::env::var_os(REENTRY_CHILD).is_some() {
        let _held = HEAP.lock();
        let _again = HEAP.lock();
        unreachable!("the second lock aborts");
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["reentry_aborts_with_its_message", "--exact", "--nocapture"])
        .env(REENTRY_CHILD, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("the child hung on the second lock");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success(), "the second lock went through: {stderr}");
    assert!(
        stderr.contains("locked again by its holder"),
        "names the fault: {stderr}"
    );
}
