//! Every workload in its tiny configuration, on every allocator it admits, with sanity checks
//! on the numbers. Nothing here depends on how fast anything runs.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell as Counter;

use super::*;
use crate::contenders::{Arena, RawHeap};
use crate::rng::Rng;

fn tiny() -> Config {
    Config::at_scale(Scale::Tiny, 7)
}

/// Runs every case of `workload` once per admitted allocator; the outcomes with their labels.
fn run_all(workload: WorkloadId) -> Vec<(String, AllocatorId, Vec<MetricSpec>, Vec<f64>)> {
    run_all_but(workload, |_, _| false)
}

/// As [`run_all`], but failures for which `may_fail(allocator, failure)` holds are skipped.
fn run_all_but(
    workload: WorkloadId,
    may_fail: impl Fn(AllocatorId, &Failure) -> bool,
) -> Vec<(String, AllocatorId, Vec<MetricSpec>, Vec<f64>)> {
    let config = tiny();
    let mut region = Region::pretouched(mib(16)).unwrap();
    let mut outcomes = Vec::new();
    for case in workload.cases(&config).unwrap() {
        region.ensure_len(case.heap_len).unwrap();
        for &allocator in AllocatorId::ALL.iter().filter(|&&a| case.admits(a)) {
            let values = match (case.run)(allocator, &mut region, 11) {
                Ok(values) => values,
                Err(failure) if may_fail(allocator, &failure) => continue,
                Err(failure) => panic!("{workload}/{}/{allocator}: {failure}", case.name),
            };
            assert_eq!(values.len(), case.metrics.len(), "{workload}/{}", case.name);
            outcomes.push((case.name.clone(), allocator, case.metrics.clone(), values));
        }
    }
    assert!(!outcomes.is_empty(), "{workload} planned no case");
    outcomes
}

fn value<'a>(metrics: &[MetricSpec], values: &'a [f64], name: &str) -> &'a f64 {
    let index = metrics
        .iter()
        .position(|m| m.name == name)
        .unwrap_or_else(|| panic!("no metric {name}"));
    &values[index]
}

#[test]
fn every_timed_workload_plans_cases_at_every_scale() {
    for scale in [Scale::Tiny, Scale::Default, Scale::Full] {
        let config = Config::at_scale(scale, 1);
        for workload in WorkloadId::TIMED {
            let cases = workload.cases(&config).unwrap();
            assert!(!cases.is_empty(), "{workload} at {scale:?}");
            for case in cases {
                assert!(case.heap_len >= mib(4), "{workload}/{}", case.name);
                assert!(!case.metrics.is_empty() && case.metrics.iter().any(|m| m.primary));
            }
        }
    }
}

#[test]
fn random_actions_scores_are_positive() {
    for (case, allocator, metrics, values) in run_all(WorkloadId::RandomActions) {
        let throughput = *value(&metrics, &values, "throughput");
        assert!(
            throughput > 0.0 && throughput.is_finite(),
            "{case} {allocator}: {throughput}"
        );
        assert!(*value(&metrics, &values, "failed calls") >= 0.0);
        let in_place = metrics.iter().position(|m| m.name == "realloc in place");
        assert_eq!(in_place.is_some(), !case.contains("no realloc"), "{case}");
        if let Some(at) = in_place {
            assert!((0.0..=100.0).contains(&values[at]), "{case} {allocator}");
        }
    }
}

#[test]
fn heap_efficiency_is_a_share_of_the_heap() {
    for (case, allocator, metrics, values) in run_all(WorkloadId::HeapEfficiency) {
        let efficiency = *value(&metrics, &values, "efficiency");
        assert!(
            efficiency > 0.0 && efficiency <= 100.0,
            "{case} {allocator}: {efficiency}"
        );
        assert!(*value(&metrics, &values, "live blocks at failure") >= 1.0);
    }
}

#[test]
fn latencies_are_positive_and_ordered() {
    for (case, allocator, metrics, values) in run_all(WorkloadId::Latency) {
        for op in ["allocate", "free"] {
            let at = |p: &str| *value(&metrics, &values, &format!("{op} {p}"));
            assert!(at("p50") > 0.0, "{case} {allocator} {op}");
            assert!(
                at("p50") <= at("p90") && at("p90") <= at("p99"),
                "{allocator} {op}"
            );
            assert!(
                at("p99") <= at("p99.9") && at("p99.9") <= at("max"),
                "{allocator} {op}"
            );
        }
    }
}

#[test]
fn high_alignment_reports_both_shapes_and_their_ratio() {
    // buddy-alloc ignores alignment; its adapter refuses blocks that come back misaligned.
    let refuses_page_alignment = |allocator, failure: &Failure| {
        allocator == AllocatorId::BuddyAlloc && *failure == Failure::OutOfMemory
    };
    for (case, allocator, metrics, values) in
        run_all_but(WorkloadId::HighAlignment, refuses_page_alignment)
    {
        let low = *value(&metrics, &values, "4 KiB @ align 8");
        let high = *value(&metrics, &values, "1 B @ align 4096");
        let slowdown = *value(&metrics, &values, "slowdown");
        assert!(low > 0.0 && high > 0.0, "{case} {allocator}");
        assert!(
            (slowdown - high / low).abs() <= 1e-6 * slowdown.max(1.0),
            "{allocator}"
        );
    }
}

#[test]
fn galloc_workloads_report_throughput_and_fill() {
    for (case, allocator, metrics, values) in run_all(WorkloadId::UniformActions) {
        assert!(
            *value(&metrics, &values, "throughput") > 0.0,
            "{case} {allocator}"
        );
    }
    for (case, allocator, metrics, values) in run_all(WorkloadId::HeapExhaustion) {
        assert!(
            *value(&metrics, &values, "throughput") > 0.0,
            "{case} {allocator}"
        );
        let fill = *value(&metrics, &values, "fill at failure");
        assert!(fill > 0.0 && fill <= 100.0, "{case} {allocator}: {fill}");
    }
}

#[test]
fn insert_delete_times_add_up() {
    for (case, allocator, metrics, values) in run_all(WorkloadId::InsertDelete) {
        let blocks: f64 = case.trim_start_matches("N = ").parse().unwrap();
        let total_ms = *value(&metrics, &values, "total");
        let response = *value(&metrics, &values, "response");
        let free = *value(&metrics, &values, "free response");
        let allocate = *value(&metrics, &values, "allocate response");
        assert!(total_ms > 0.0 && response > 0.0, "{allocator}");
        let tolerance = 1e-6 * total_ms;
        assert!(
            (response * 2.0 * blocks / 1e6 - total_ms).abs() <= tolerance,
            "{allocator}"
        );
        assert!(
            ((free + allocate) * blocks / 1e6 - total_ms).abs() <= tolerance,
            "{allocator}"
        );
    }
}

#[test]
fn realloc_coalesce_reports_time_and_in_place_share() {
    for (case, allocator, metrics, values) in run_all(WorkloadId::ReallocCoalesce) {
        assert!(
            *value(&metrics, &values, "total") > 0.0,
            "{case} {allocator}"
        );
        let in_place = *value(&metrics, &values, "in place");
        assert!((0.0..=100.0).contains(&in_place), "{allocator}: {in_place}");
    }
}

#[test]
fn vec_growth_keeps_contents_and_reports_time() {
    for (case, allocator, metrics, values) in run_all(WorkloadId::VecGrowth) {
        assert!(
            *value(&metrics, &values, "total") > 0.0,
            "{case} {allocator}"
        );
        let in_place = *value(&metrics, &values, "in place");
        assert!((0.0..=100.0).contains(&in_place), "{allocator}: {in_place}");
    }
}

/// A `GlobalAlloc` that counts the calls it forwards and the ones refused.
struct Counting<'a, A> {
    inner: &'a A,
    calls: Counter<u64>,
    refused: Counter<u64>,
}

impl<A: GlobalAlloc> Counting<'_, A> {
    fn record(&self, ptr: *mut u8) -> *mut u8 {
        self.calls.set(self.calls.get() + 1);
        if ptr.is_null() {
            self.refused.set(self.refused.get() + 1);
        }
        ptr
    }
}

// SAFETY: every call is forwarded unchanged to a real allocator.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<'_, A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded from the caller's contract.
        self.record(unsafe { self.inner.alloc(layout) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.calls.set(self.calls.get() + 1);
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded from the caller's contract.
        self.record(unsafe { self.inner.realloc(ptr, layout, new_size) })
    }
}

struct CountRandomActions;

impl crate::contenders::UseAllocator for CountRandomActions {
    type Output = (random_actions::Tally, u64, u64);

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> Self::Output {
        let counting = Counting {
            inner: arena,
            calls: Counter::new(0),
            refused: Counter::new(0),
        };
        let params = random_actions::Params {
            max_size: 30_000,
            realloc: true,
            threads: 1,
            duration: std::time::Duration::from_millis(5),
        };
        let mut live = blocks::LiveBlocks::with_capacity(1024);
        let tally = random_actions::run_steps(
            &counting,
            &params,
            &mut Rng::new(5),
            &mut live,
            params.duration,
        );
        live.free_all(arena);
        (tally, counting.calls.get(), counting.refused.get())
    }
}

#[test]
fn random_actions_operation_counts_add_up() {
    // A 1 MiB heap with blocks up to 90 KB: some calls are refused, and must be counted so.
    let mut region = Region::pretouched(mib(1)).unwrap();
    for &allocator in AllocatorId::ALL.iter().filter(|a| a.is_arena()) {
        let (tally, calls, refused) =
            crate::contenders::with_allocator(allocator, &mut region, mib(1), CountRandomActions)
                .unwrap();
        assert!(tally.successes > 0, "{allocator}");
        assert!(
            0 < tally.reallocs && tally.reallocs <= tally.successes,
            "{allocator}: {tally:?}"
        );
        assert!(tally.reallocs_in_place <= tally.reallocs, "{allocator}");
        assert_eq!(
            tally.successes + tally.failures,
            calls,
            "{allocator}: every call scored once"
        );
        assert_eq!(
            tally.failures, refused,
            "{allocator}: every refusal counted as a failure"
        );
    }
}
