//! What each workload of every `heapworks` command measures and how a report draws it,
//! written into the results before they are rendered or saved, so that the renderer
//! ([`crate::report`]) reads nothing but the results model.
//!
//! Invariants: a workload the results already describe (a results file re-rendered) keeps its
//! description and plot; every other workload of the results gets them from the registries of
//! `bench`, `bench --malloc`, `bench --pool` and `torture`.

use heapworks_bench::registry::Registry;
use heapworks_bench::results::{Plot, Results, WorkloadInfo};

use crate::malloc_bench::MallocWorkload;
use crate::pool_bench::{sizes, PoolWorkload};
use crate::replay;
use crate::torture::cases::Section;
use crate::workloads::{insert_delete, WorkloadId};

/// Describes every workload of `results` that they do not describe yet.
pub fn annotate(results: &mut Results) {
    for workload in results.workloads() {
        let described = results.environment.workloads.iter();
        if described.clone().any(|(name, _)| *name == workload) {
            continue;
        }
        let info = WorkloadInfo {
            description: description(&workload).to_string(),
            plot: plot(&workload, results),
        };
        results.environment.workloads.push((workload, info));
    }
}

/// What a workload measures: a `bench`, `bench --malloc` or `bench --pool` workload, or a
/// section of `heapworks torture`.
fn description(name: &str) -> &'static str {
    described::<WorkloadId>(name)
        .or_else(|| described::<MallocWorkload>(name))
        .or_else(|| described::<Section>(name))
        .or_else(|| described::<PoolWorkload>(name))
        .unwrap_or("")
}

/// The description of the entry of registry `R` called `name`.
fn described<R: Registry>(name: &str) -> Option<&'static str> {
    R::find(name).map(R::description)
}

/// Latency gets percentile lines per operation, `bench --pool`'s sizes time against size,
/// seed 003's workloads time against N (log-log), a trace replay bars of interval time,
/// average response and utilization only; every other workload bars of its primary metrics.
fn plot(name: &str, results: &Results) -> Plot {
    let seed_003 = [WorkloadId::InsertDelete, WorkloadId::ReallocCoalesce];
    if seed_003.iter().any(|w| w.name() == name) {
        return Plot::Growth {
            axis: "N (blocks)".to_string(),
            metrics: ["total", "response", "p99 response"]
                .map(String::from)
                .to_vec(),
            cases: cases_with(results, name, insert_delete::blocks_of),
        };
    }
    if name == WorkloadId::Latency.name() {
        return Plot::Percentiles(vec!["allocate".to_string(), "free".to_string()]);
    }
    if name == WorkloadId::Traces.name() {
        return Plot::BarsOf(replay::PLOTTED.iter().map(|m| m.name.to_string()).collect());
    }
    if name == PoolWorkload::Sizes.name() {
        return Plot::AgainstSize(cases_with(results, name, sizes::bytes_of));
    }
    Plot::Bars
}

/// The cases of `workload` in `results` that `x_of` reads a number from, each once, with it.
fn cases_with(
    results: &Results,
    workload: &str,
    x_of: impl Fn(&str) -> Option<usize>,
) -> Vec<(String, f64)> {
    let mut cases: Vec<(String, f64)> = Vec::new();
    for cell in results.cells.iter().filter(|c| c.workload == workload) {
        let x = x_of(&cell.case);
        if let Some(x) = x.filter(|_| !cases.iter().any(|(c, _)| *c == cell.case)) {
            cases.push((cell.case.clone(), x as f64));
        }
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;
    use heapworks_bench::results::{Cell, Outcome, Summary};

    fn cell(workload: &str, case: &str) -> Cell {
        let metric =
            crate::workloads::MetricSpec::primary("m", "ns", crate::workloads::Better::Lower);
        Cell::of(
            workload,
            case,
            "a",
            &metric,
            Outcome::Measured(Summary::single(1.0)),
        )
    }

    #[test]
    fn every_workload_is_described_once_and_kept_when_described() {
        let mut results = Results {
            cells: vec![
                cell("latency", "c"),
                cell("traces", "t"),
                cell("latency", "d"),
            ],
            ..Results::default()
        };
        results.environment.workloads.push((
            "traces".to_string(),
            WorkloadInfo {
                description: "kept".to_string(),
                plot: Plot::Bars,
            },
        ));
        annotate(&mut results);
        annotate(&mut results);
        let latency = results.workload_info("latency");
        assert_eq!(latency.description, WorkloadId::Latency.description());
        assert!(matches!(latency.plot, Plot::Percentiles(_)));
        assert_eq!(results.workload_info("traces").description, "kept");
        assert_eq!(results.environment.workloads.len(), 2);
    }
}
