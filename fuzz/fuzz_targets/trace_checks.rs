//! What every trace a reader accepted must satisfy, shared by the trace fuzz targets:
//!
//! - the model holds its bounds (requests, threads, notes) and round-trips through both
//!   formats unchanged (binary → trace → text → trace);
//! - its statistics are computed without a panic;
//! - if it can be replayed (sizes a `Layout` describes, few enough threads to spawn per input),
//!   it replays on a heapworks heap over a small arena: under `check` (every block aligned,
//!   inside the arena, disjoint from the others, contents kept) when the trace is consistent,
//!   else as C would (`free(NULL)`, leaks); the only failure allowed is out of memory, and
//!   afterwards the heap passes its own check with no byte in use.

use heapworks::LockedHeap;
use heapworks_testkit::Arena;
use heapworks_trace::model::{MAX_NOTES, MAX_OPS, MAX_THREADS};
use heapworks_trace::replay::{replay, validate, Footprint, ReplayError, ReplayOptions};
use heapworks_trace::{binary, text, Trace};

/// Bytes of the arena the heap manages.
const ARENA_BYTES: usize = 1 << 20;
/// Most threads a trace may have to be replayed (each is an OS thread, per input).
const MAX_REPLAY_THREADS: usize = 4;

/// Checks a trace a reader accepted.
pub fn check(trace: &Trace) {
    assert!(trace.len() <= MAX_OPS && trace.threads().len() <= MAX_THREADS);
    assert!(trace.notes().len() <= MAX_NOTES);
    let decoded = binary::decode(&binary::encode(trace)).expect("binary output decodes");
    assert_eq!(&decoded, trace, "binary round trip");
    let parsed = text::parse(&text::to_string(trace)).expect("text output parses");
    assert_eq!(&parsed, trace, "text round trip");
    let stats = trace.stats();
    assert_eq!(stats.ops, trace.len() as u64);
    if trace.threads().len() <= MAX_REPLAY_THREADS {
        replay_on_heapworks(trace);
    }
}

fn replay_on_heapworks(trace: &Trace) {
    let mut arena = Arena::new(ARENA_BYTES);
    let heap_range = arena.range();
    let heap: LockedHeap = LockedHeap::new();
    // SAFETY: the arena outlives the heap (both dropped at the end of this function, the heap
    // first) and nothing else uses its memory.
    unsafe { heap.claim(arena.base(), arena.len()) }.expect("the arena can be claimed");
    let checked = ReplayOptions {
        check: true,
        heap: Some(heap_range),
        footprint: Footprint::AddressSpan,
        ..ReplayOptions::default()
    };
    let as_c = ReplayOptions {
        check: false,
        ..checked.clone()
    };
    let Some(options) = [checked, as_c]
        .into_iter()
        .find(|options| validate(trace, options).is_ok())
    else {
        return;
    };
    match replay(trace, &heap, &options) {
        Ok(report) => assert_eq!(report.ops, trace.len() as u64),
        Err(ReplayError::OutOfMemory { .. }) => {}
        Err(error) => panic!("replay failed on heapworks: {error}"),
    }
    let heap = heap.lock();
    heap.check().expect("the heap is consistent after the replay");
    assert_eq!(heap.stats().in_use, 0, "the replay freed every block");
}
