//! Replay: timing ranges, utilization, C's NULL conventions, `check` mode catching broken
//! allocators, out-of-memory, and multi-threaded traces with cross-thread frees.

use core::alloc::{GlobalAlloc, Layout};
use heapworks_trace::generate;
use heapworks_trace::model::{Op, OpKind, Trace};
use heapworks_trace::replay::{
    replay, CheckFailure, Footprint, FootprintProbe, GlibcHeap, OpRange, ReplayError, ReplayOptions,
};
use heapworks_trace::text;
use std::alloc::System;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn checked() -> ReplayOptions<'static> {
    ReplayOptions {
        check: true,
        ..ReplayOptions::default()
    }
}

#[test]
fn seed_scripts_replay_with_their_ranges() {
    let n = 2000;
    let trace = generate::insert_delete(n, 1).unwrap();
    let n = n as usize;
    let ranges = [
        OpRange {
            start: 2 * n,
            end: Some(3 * n),
        },
        OpRange {
            start: 3 * n,
            end: Some(4 * n),
        },
        OpRange {
            start: 4 * n,
            end: None,
        },
    ];
    let options = ReplayOptions {
        ranges: &ranges,
        ..checked()
    };
    let report = replay(&trace, &System, &options).unwrap();
    assert_eq!(report.ops, 6 * n as u64);
    assert_eq!(report.ranges.len(), 3);
    for (range, asked) in report
        .ranges
        .iter()
        .zip([2 * n..3 * n, 3 * n..4 * n, 4 * n..6 * n])
    {
        assert_eq!(range.start..range.end, asked);
        assert_eq!(range.ops, asked.len() as u64);
        assert!(range.p99_ns <= range.max_ns);
        assert!(range.average_ns <= range.max_ns as f64);
        assert!(range.total_ns as f64 >= range.average_ns * range.ops as f64 - 1.0);
    }
    assert!(report.checked);
    assert_eq!(report.null_frees, 0);
    assert_eq!(report.peak_live_bytes, trace.stats().peak_live_bytes);
}

#[test]
fn realloc_free_replays_clean() {
    let trace = generate::realloc_free(3000, 2).unwrap();
    let report = replay(&trace, &System, &checked()).unwrap();
    assert_eq!(report.ranges[0].ops, trace.len() as u64);
    assert_eq!(trace.stats().reallocs, 3000);
}

#[test]
fn ranges_are_validated() {
    let trace = generate::insert_delete(10, 1).unwrap();
    let bad = [
        vec![OpRange {
            start: 5,
            end: Some(5),
        }],
        vec![OpRange {
            start: 0,
            end: Some(61),
        }],
        vec![
            OpRange {
                start: 0,
                end: Some(10),
            },
            OpRange {
                start: 9,
                end: None,
            },
        ],
    ];
    for ranges in bad {
        let options = ReplayOptions {
            ranges: &ranges,
            ..ReplayOptions::default()
        };
        let error = replay(&trace, &System, &options).unwrap_err();
        assert!(matches!(error, ReplayError::InvalidRange { .. }), "{error}");
    }
}

#[test]
fn null_requests_follow_c_by_default_and_fail_check() {
    let trace = text::parse("f 7\na 0 10\na 0 20\nr 3 30\nf 0\nf 0\n").unwrap();
    let report = replay(&trace, &System, &ReplayOptions::default()).unwrap();
    assert_eq!(report.null_frees, 2);
    assert_eq!(report.null_reallocs, 1);
    assert_eq!(report.leaked_blocks, 1);
    assert_eq!(report.ranges[0].ops, 4, "free(NULL) is not timed");
    assert_eq!(report.peak_live_bytes, 60);

    let error = replay(&trace, &System, &checked()).unwrap_err();
    assert_eq!(
        error,
        ReplayError::Trace {
            op: 0,
            message: "frees an id that is not live".into()
        }
    );
    let error = replay(&text::parse("a 0 1\na 0 1\n").unwrap(), &System, &checked()).unwrap_err();
    assert!(matches!(error, ReplayError::Trace { op: 1, .. }), "{error}");
}

/// A bump allocator over a fixed buffer that never reuses memory.
struct Bump {
    memory: Mutex<Vec<u8>>,
    next: AtomicUsize,
    last_start: AtomicUsize,
    fault: Fault,
}

#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Every block is handed out one byte past its alignment.
    Misalign,
    /// Every block starts 16 bytes into the previous one.
    Overlap,
    /// Writes into the previous block on each allocation.
    Scribble,
    /// realloc moves the block without copying it.
    ForgetfulRealloc,
    /// `alloc_zeroed` does not zero.
    DirtyCalloc,
}

impl Bump {
    fn new(bytes: usize, fault: Fault) -> Self {
        Self {
            memory: Mutex::new(vec![0; bytes]),
            next: AtomicUsize::new(0),
            last_start: AtomicUsize::new(0),
            fault,
        }
    }

    fn range(&self) -> core::ops::Range<usize> {
        let memory = self.memory.lock().unwrap();
        let start = memory.as_ptr() as usize;
        start..start + memory.len()
    }
}

// SAFETY: blocks are carved from one buffer that lives as long as the allocator and are never
// handed out twice (except where a `Fault` says so, which is what the tests look for).
unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut memory = self.memory.lock().unwrap();
        let base = memory.as_mut_ptr() as usize;
        let previous = self.next.load(Ordering::Relaxed);
        let mut start = (base + previous).next_multiple_of(layout.align()) - base;
        if self.fault == Fault::Overlap && previous > 0 {
            start = self.last_start.load(Ordering::Relaxed) + 16;
        }
        if self.fault == Fault::Misalign {
            start += 1;
        }
        if self.fault == Fault::Scribble && previous > 0 {
            memory[previous - 1] ^= 0xff;
        }
        let end = start + layout.size();
        if end > memory.len() {
            return core::ptr::null_mut();
        }
        self.next.store(end, Ordering::Relaxed);
        self.last_start.store(start, Ordering::Relaxed);
        memory.as_mut_ptr().wrapping_add(start)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = self.alloc(layout);
        if self.fault != Fault::DirtyCalloc && !ptr.is_null() {
            // SAFETY: a fresh block of `layout.size()` bytes inside the buffer.
            core::ptr::write_bytes(ptr, 0, layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new_layout = Layout::from_size_align(new_size, layout.align()).unwrap();
        let moved = self.alloc(new_layout);
        if !moved.is_null() && self.fault != Fault::ForgetfulRealloc {
            // SAFETY: both blocks are in the buffer and at least this long; `copy` allows the
            // overlap a faulty mode can produce.
            core::ptr::copy(ptr, moved, layout.size().min(new_size));
        }
        moved
    }
}

fn check_failure(fault: Fault, script: &str) -> CheckFailure {
    let bump = Bump::new(1 << 16, fault);
    let options = ReplayOptions {
        heap: Some(bump.range()),
        ..checked()
    };
    match replay(&text::parse(script).unwrap(), &bump, &options) {
        Err(ReplayError::Check { failure, .. }) => failure,
        other => panic!("{script:?} with a faulty allocator: {other:?}"),
    }
}

#[test]
fn check_mode_catches_broken_allocators() {
    let script = "a 0 100\na 1 100\nr 0 200\nf 0\nf 1\n";
    let bump = Bump::new(1 << 16, Fault::None);
    let options = ReplayOptions {
        heap: Some(bump.range()),
        ..checked()
    };
    replay(&text::parse(script).unwrap(), &bump, &options).unwrap();

    assert!(matches!(
        check_failure(Fault::Misalign, script),
        CheckFailure::Misaligned { .. }
    ));
    assert!(matches!(
        check_failure(Fault::Overlap, script),
        CheckFailure::Overlap { other_op: 0, .. }
    ));
    assert!(matches!(
        check_failure(Fault::Scribble, script),
        CheckFailure::Corrupted {
            after_realloc: false,
            ..
        }
    ));
    assert!(matches!(
        check_failure(Fault::ForgetfulRealloc, script),
        CheckFailure::Corrupted {
            after_realloc: true,
            ..
        }
    ));
}

#[test]
fn blocks_outside_the_heap_are_caught() {
    let bump = Bump::new(4096, Fault::None);
    let elsewhere = Bump::new(4096, Fault::None);
    let options = ReplayOptions {
        heap: Some(elsewhere.range()),
        ..checked()
    };
    let error = replay(&text::parse("a 0 8\n").unwrap(), &bump, &options).unwrap_err();
    assert!(
        matches!(
            error,
            ReplayError::Check {
                failure: CheckFailure::OutsideHeap { .. },
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn calloc_memory_must_be_zero() {
    let script = text::parse("c 0 64\n").unwrap();
    let bump = Bump::new(4096, Fault::None);
    bump.memory.lock().unwrap().fill(1);
    replay(&script, &bump, &checked()).unwrap();
    let dirty = Bump::new(4096, Fault::DirtyCalloc);
    dirty.memory.lock().unwrap().fill(1);
    let error = replay(&script, &dirty, &checked()).unwrap_err();
    assert!(
        matches!(
            error,
            ReplayError::Check {
                failure: CheckFailure::NotZeroed { offset: 0, .. },
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn out_of_memory_names_the_request() {
    let bump = Bump::new(1000, Fault::None);
    let error = replay(
        &text::parse("a 0 600\na 1 600\n").unwrap(),
        &bump,
        &ReplayOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        error,
        ReplayError::OutOfMemory {
            op: 1,
            thread: 0,
            size: 600,
            align: 16
        }
    );
}

#[test]
fn alignment_requests_are_honoured() {
    let trace =
        text::parse("m 0 100 4096\nm 1 10 64\nr 1 100000\nm 2 1 1\nf 0\nf 1\nf 2\n").unwrap();
    replay(&trace, &System, &checked()).unwrap();
}

#[test]
fn address_span_gives_utilization_on_an_arena() {
    let bump = Bump::new(1 << 16, Fault::None);
    let report = replay(
        &text::parse("a 0 1000\na 1 1000\nf 0\n").unwrap(),
        &bump,
        &ReplayOptions::default(),
    )
    .unwrap();
    assert_eq!(report.peak_live_bytes, 2000);
    assert_eq!(report.footprint_bytes, Some(2000 + 8));
    let utilization = report.utilization.unwrap();
    assert!(
        (utilization - 2000.0 / 2008.0).abs() < 1e-9,
        "{utilization}"
    );
}

#[test]
fn footprint_probes_are_sampled_at_the_peak() {
    struct Counting(AtomicUsize);
    impl FootprintProbe for Counting {
        fn sample(&self) -> Option<u64> {
            Some(self.0.fetch_add(1, Ordering::Relaxed) as u64 * 100 + 400)
        }
    }
    let probe = Counting(AtomicUsize::new(0));
    let options = ReplayOptions {
        footprint: Footprint::Probe(&probe),
        ..ReplayOptions::default()
    };
    let report = replay(
        &text::parse("a 0 100\na 1 100\nf 0\nf 1\n").unwrap(),
        &System,
        &options,
    )
    .unwrap();
    assert_eq!(
        probe.0.load(Ordering::Relaxed),
        2,
        "once at the peak, once at the end"
    );
    assert_eq!(report.footprint_bytes, Some(500));
    assert_eq!(report.utilization, Some(200.0 / 500.0));

    let unavailable = ReplayOptions {
        footprint: Footprint::Unavailable,
        ..ReplayOptions::default()
    };
    let report = replay(&text::parse("a 0 1\n").unwrap(), &System, &unavailable).unwrap();
    assert_eq!((report.footprint_bytes, report.utilization), (None, None));
}

#[test]
fn glibc_footprint_sees_a_large_trace() {
    let mut trace = Trace::new();
    for id in 0..64 {
        trace
            .push(Op {
                thread: 0,
                id,
                kind: OpKind::Malloc { size: 1 << 20 },
            })
            .unwrap();
    }
    let probe = GlibcHeap::new();
    let options = ReplayOptions {
        footprint: Footprint::Probe(&probe),
        ..ReplayOptions::default()
    };
    let report = replay(&trace, &System, &options).unwrap();
    let utilization = report.utilization.expect("glibc reports its heap");
    assert!((0.5..=1.01).contains(&utilization), "{utilization}");
}

/// Four threads; each allocates blocks that the next thread frees or reallocs.
fn cross_thread_trace(rounds: u32) -> Trace {
    let mut trace = Trace::new();
    let threads = 4;
    for round in 0..rounds {
        for thread in 0..threads {
            let id = round * threads + thread;
            let size = 16 + u64::from(id % 200);
            trace
                .push(Op {
                    thread,
                    id,
                    kind: OpKind::Malloc { size },
                })
                .unwrap();
        }
        for thread in 0..threads {
            let id = round * threads + (thread + 1) % threads;
            let kind = if round % 3 == 0 {
                OpKind::Realloc { size: 500 }
            } else {
                OpKind::Free
            };
            trace.push(Op { thread, id, kind }).unwrap();
        }
    }
    for round in (0..rounds).step_by(3) {
        for thread in 0..threads {
            let id = round * threads + thread;
            trace
                .push(Op {
                    thread: 3 - thread,
                    id,
                    kind: OpKind::Free,
                })
                .unwrap();
        }
    }
    trace
}

#[test]
fn threads_replay_with_cross_thread_frees() {
    let trace = cross_thread_trace(500);
    assert_eq!(trace.threads(), [0, 1, 2, 3]);
    let report = replay(&trace, &System, &checked()).unwrap();
    assert_eq!(report.threads, 4);
    assert_eq!(report.ranges[0].ops, trace.len() as u64);
    let report = replay(&trace, &System, &ReplayOptions::default()).unwrap();
    assert_eq!(report.null_frees, 0);
}

#[test]
fn a_failing_thread_stops_the_others() {
    let trace = cross_thread_trace(50);
    let bump = Bump::new(3000, Fault::None);
    let error = replay(&trace, &bump, &ReplayOptions::default()).unwrap_err();
    assert!(matches!(error, ReplayError::OutOfMemory { .. }), "{error}");
}

#[test]
fn unrepresentable_sizes_are_errors() {
    let trace = text::parse("a 0 18446744073709551615\n").unwrap();
    let error = replay(&trace, &System, &ReplayOptions::default()).unwrap_err();
    assert!(
        matches!(error, ReplayError::Unrepresentable { op: 0, .. }),
        "{error}"
    );
}
