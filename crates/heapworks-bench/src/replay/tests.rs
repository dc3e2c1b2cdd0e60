//! Replays of the corpus and of small traces on every contender, through the same path as
//! `heapworks replay`.

use super::*;

fn corpus() -> Vec<(PathBuf, Trace)> {
    heapworks_trace::read_traces_in(&crate::workloads::traces::default_corpus()).unwrap()
}

/// `count` blocks of `size` bytes allocated, then freed.
fn fill_and_free(count: u32, size: u64) -> Trace {
    heapworks_trace::generate::fill_then_free(count, size).unwrap()
}

fn spec(trace: &Trace) -> ReplaySpec<'_> {
    ReplaySpec {
        trace,
        ranges: &[],
        check: true,
        heap_len: default_heap_len(trace),
    }
}

/// Requests of each trace that linked_list replays in the default test run: its first fit
/// walks every free block, which takes 85 s for the whole corpus in a debug build.
const LINKED_LIST_PREFIX: usize = 20_000;

/// Replays every trace (cut to `prefix` requests if given) under `--check` on `allocators`, in
/// the default heap: no allocator hands out a bad block or runs out of memory.
fn replay_corpus_checked(allocators: &[AllocatorId], prefix: Option<usize>) {
    let mut region = Region::pretouched(MIN_HEAP).unwrap();
    for (path, mut trace) in corpus() {
        trace.truncate(prefix.unwrap_or(usize::MAX));
        let spec = spec(&trace);
        region.ensure_len(spec.heap_len).unwrap();
        for &allocator in allocators {
            match replay_on(allocator, &mut region, &spec) {
                Ok(report) => {
                    assert!(report.checked);
                    let utilization = report.utilization.unwrap();
                    assert!(utilization > 0.0 && utilization <= 1.0, "{utilization}");
                }
                Err(failure) => panic!("{} on {allocator}: {failure}", path.display()),
            }
        }
    }
}

#[test]
fn whole_corpus_replays_checked_on_every_arena_but_linked_list() {
    let arenas: Vec<AllocatorId> = AllocatorId::ALL
        .iter()
        .copied()
        .filter(|a| a.is_arena() && *a != AllocatorId::LinkedList)
        .collect();
    replay_corpus_checked(&arenas, None);
}

#[test]
fn corpus_prefixes_replay_checked_on_linked_list() {
    replay_corpus_checked(&[AllocatorId::LinkedList], Some(LINKED_LIST_PREFIX));
}

#[test]
#[ignore = "85 s in a debug build; run with --ignored, or in release"]
fn whole_corpus_replays_checked_on_linked_list() {
    replay_corpus_checked(&[AllocatorId::LinkedList], None);
}

#[test]
fn running_out_of_memory_fails_only_the_cells_of_that_allocator() {
    let trace = fill_and_free(100, 1 << 20);
    let spec = ReplaySpec {
        heap_len: mib(8),
        ..spec(&trace)
    };
    let mut region = Region::pretouched(spec.heap_len).unwrap();
    let outcome = replay_on(AllocatorId::Talc, &mut region, &spec).map(|report| vec![report]);
    let failure = outcome.as_ref().unwrap_err();
    assert!(!failure.is_trace_fault() && !failure.is_check_failure());
    assert_eq!(failure.to_failure(), Failure::OutOfMemory);
    let cells = cells("big", &spec, AllocatorId::Talc, &outcome);
    assert_eq!(
        cells.len(),
        6,
        "3 time metrics for the range, 3 memory metrics"
    );
    for cell in cells {
        let Outcome::Failed(why) = &cell.outcome else {
            panic!("{cell:?} should have failed")
        };
        assert!(why.starts_with("out of memory at request 7"), "{why}");
    }
}

#[test]
fn ranges_make_cases_and_bad_ranges_are_trace_faults() {
    let trace = fill_and_free(100, 64);
    let ranges = [
        OpRange {
            start: 100,
            end: Some(200),
        },
        OpRange {
            start: 0,
            end: Some(50),
        },
    ];
    let spec = ReplaySpec {
        ranges: &ranges,
        ..spec(&trace)
    };
    let mut region = Region::pretouched(spec.heap_len).unwrap();
    let outcome = replay_on(AllocatorId::Heapworks, &mut region, &spec).map(|report| vec![report]);
    let cells = cells("t", &spec, AllocatorId::Heapworks, &outcome);
    let cases: Vec<&str> = cells.iter().map(|c| c.case.as_str()).collect();
    assert_eq!(
        cases,
        [
            "t [0..50)",
            "t [0..50)",
            "t [0..50)",
            "t [100..200)",
            "t [100..200)",
            "t [100..200)"
        ]
        .into_iter()
        .chain(["t"; 3])
        .collect::<Vec<_>>()
    );
    assert!(cells.iter().all(|c| c.median().is_some()), "{cells:?}");
    let interval = |case: &str| {
        let cell = cells
            .iter()
            .find(|c| c.case == case && c.metric == INTERVAL.name);
        cell.and_then(Cell::median).unwrap()
    };
    assert!(interval("t [0..50)") > 0.0 && interval("t [100..200)") > 0.0);

    let past_the_end = [OpRange {
        start: 150,
        end: Some(201),
    }];
    let spec = ReplaySpec {
        ranges: &past_the_end,
        ..spec
    };
    let failure = replay_on(AllocatorId::Heapworks, &mut region, &spec).unwrap_err();
    assert!(failure.is_trace_fault(), "{failure}");
}

#[test]
fn trials_are_summarized_as_median_min_and_max() {
    let trace = fill_and_free(200, 48);
    let spec = spec(&trace);
    let mut region = Region::pretouched(spec.heap_len).unwrap();
    let reports: Vec<ReplayReport> = (0..3)
        .map(|_| replay_on(AllocatorId::Heapworks, &mut region, &spec).unwrap())
        .collect();
    let intervals: Vec<f64> = reports
        .iter()
        .map(|r| r.ranges[0].total_ns as f64 / 1e6)
        .collect();
    let cells = cells("t", &spec, AllocatorId::Heapworks, &Ok(reports));
    let interval = cells.iter().find(|c| c.metric == INTERVAL.name).unwrap();
    let Outcome::Measured(summary) = interval.outcome else {
        panic!("{interval:?}")
    };
    assert_eq!(summary.trials, 3);
    assert_eq!(Some(summary.median), crate::stats::median(&intervals));
    assert_eq!(
        Some((summary.min, summary.max)),
        crate::stats::min_max(&intervals)
    );
    let footprint = cells.iter().find(|c| c.metric == FOOTPRINT.name).unwrap();
    assert!(matches!(footprint.outcome, Outcome::Measured(s) if s.trials == 3));
}
