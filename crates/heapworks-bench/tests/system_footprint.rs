//! The system allocator's footprint in a replay is glibc's own count (`mallinfo2`), which is
//! process-wide: a test thread beside the replay that frees memory would lower it mid-replay.
//! So this test is the only one in its process.

use heapworks_bench::contenders::AllocatorId;
use heapworks_bench::region::Region;
use heapworks_bench::replay::{default_heap_len, replay_on, ReplaySpec, MIN_HEAP};
use heapworks_trace::generate::fill_then_free;

#[test]
fn system_replays_checked_with_glibc_footprint() {
    let trace = fill_then_free(1000, 100).unwrap();
    let spec = ReplaySpec {
        trace: &trace,
        ranges: &[],
        check: true,
        heap_len: default_heap_len(&trace),
    };
    let mut region = Region::pretouched(MIN_HEAP).unwrap();
    let report = replay_on(AllocatorId::System, &mut region, &spec).unwrap();
    assert!(report.checked);
    assert!(report.peak_live_bytes >= 100_000);
    assert!(report.footprint_bytes.unwrap() >= report.peak_live_bytes);
}
