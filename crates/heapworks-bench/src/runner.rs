//! Runs a plan: picks workloads and allocators from `--filter`, plans every case, interleaves
//! trials allocator by allocator (trial 1 of every allocator, then trial 2, …) so that drift
//! of the machine hits all alike, and summarizes each cell as median, min and max. Instruction
//! counts (valgrind) run after the timed workloads.

use std::fmt;

use crate::contenders::AllocatorId;
use crate::instructions;
use crate::progress::Progress;
use crate::region::{Region, RegionError};
use crate::results::{Cell, Environment, Outcome, Results, Summary};
use crate::rng::derive_seed;
use crate::stats::{median, min_max};
use crate::workloads::{Case, Config, Failure, TrialOutcome, WorkloadId};

/// What a run measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Workloads, in report order.
    pub workloads: Vec<WorkloadId>,
    /// Allocators, in column order.
    pub allocators: Vec<AllocatorId>,
}

/// A `--filter` named something that is neither a workload nor an allocator (an empty name
/// when the filter, or a comma-separated part of it, names nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName(pub String);

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let workloads: Vec<&str> = WorkloadId::ALL.iter().map(|w| w.name()).collect();
        let allocators: Vec<&str> = AllocatorId::nameable().iter().map(|a| a.name()).collect();
        write!(
            f,
            "{}\n  workloads: {}\n  allocators: {}",
            unknown_term_message(&self.0, "workload or allocator"),
            workloads.join(", "),
            allocators.join(", ")
        )
    }
}

/// The first line of a `--filter` error: what the term is, or that it is empty.
pub fn unknown_term_message(term: &str, kinds: &str) -> String {
    if term.is_empty() {
        format!("--filter has an empty name: give {kinds} names, comma separated")
    } else {
        format!("unknown {kinds} `{term}`")
    }
}

impl std::error::Error for UnknownName {}

impl Selection {
    /// Every timed workload on every contender of [`AllocatorId::ALL`]: a normal `bench`.
    pub fn everything() -> Self {
        Self {
            workloads: WorkloadId::TIMED.to_vec(),
            allocators: AllocatorId::ALL.to_vec(),
        }
    }

    /// Reads filter terms (each a workload or allocator name; commas separate several).
    /// Without workload terms every timed workload runs; without allocator terms every
    /// allocator of [`AllocatorId::ALL`] does.
    pub fn from_filter(terms: &[String]) -> Result<Self, UnknownName> {
        Self::from_filter_or(terms, &Self::everything())
    }

    /// As [`from_filter`](Self::from_filter), but without workload (allocator) terms the
    /// workloads (allocators) of `defaults` run.
    pub fn from_filter_or(terms: &[String], defaults: &Selection) -> Result<Self, UnknownName> {
        let mut workloads = Vec::new();
        let mut allocators = Vec::new();
        let names = filter_terms(terms).ok_or_else(|| UnknownName(String::new()))?;
        for term in names {
            if let Some(workload) = WorkloadId::from_name(term) {
                workloads.push(workload);
            } else if let Some(allocator) = AllocatorId::from_name(term) {
                allocators.push(allocator);
            } else {
                return Err(UnknownName(term.to_string()));
            }
        }
        Ok(Self {
            workloads: in_canonical_order(workloads, &defaults.workloads, WorkloadId::ALL),
            allocators: in_canonical_order(
                allocators,
                &defaults.allocators,
                &AllocatorId::nameable(),
            ),
        })
    }

    /// Whether the valgrind-driven instruction counts are part of the run.
    pub fn wants_instructions(&self) -> bool {
        self.workloads.contains(&WorkloadId::Instructions)
    }

    /// The timed workloads of the selection.
    pub fn timed_workloads(&self) -> Vec<WorkloadId> {
        self.workloads
            .iter()
            .copied()
            .filter(|w| *w != WorkloadId::Instructions)
            .collect()
    }
}

/// The names of `--filter` arguments: commas separate several in one argument; `None` when a
/// name is empty (`--filter ""`, `--filter a,,b`), which is refused.
pub fn filter_terms(terms: &[String]) -> Option<Vec<&str>> {
    let names: Vec<&str> = terms
        .iter()
        .flat_map(|t| t.split(','))
        .map(str::trim)
        .collect();
    (!names.contains(&"")).then_some(names)
}

/// `picked` deduplicated in the order of `order`, or `default` when nothing was picked.
pub fn in_canonical_order<T: Copy + PartialEq>(
    picked: Vec<T>,
    default: &[T],
    order: &[T],
) -> Vec<T> {
    if picked.is_empty() {
        return default.to_vec();
    }
    order
        .iter()
        .copied()
        .filter(|item| picked.contains(item))
        .collect()
}

/// Why a selection that runs no trial is refused.
const NOTHING_TO_RUN: &str = "the selection runs nothing: none of the selected allocators takes \
     part in the selected workloads (the system allocator runs no arena-only workload; see \
     `heapworks list`)";

/// Number of (trial, allocator) runs of `cases`, for the progress bar.
pub fn trial_count(cases: &[Case], allocators: &[AllocatorId], config: &Config) -> u64 {
    let runs: usize = cases
        .iter()
        .map(|c| allocators.iter().filter(|&&a| c.admits(a)).count())
        .sum();
    (runs * config.trials) as u64
}

/// Runs the timed workloads of `selection` and returns every cell; an error, before any
/// trial, when a workload cannot run at all or the selection runs nothing.
pub fn run_timed(
    config: &Config,
    selection: &Selection,
    progress: &dyn Progress,
) -> Result<Vec<Cell>, String> {
    let mut cases: Vec<Case> = Vec::new();
    for workload in selection.timed_workloads() {
        cases.extend(workload.cases(config)?);
    }
    let trials = trial_count(&cases, &selection.allocators, config);
    if trials == 0 && !selection.wants_instructions() {
        return Err(NOTHING_TO_RUN.to_string());
    }
    progress.add_steps(trials);
    let mut region: Option<Region> = None;
    let mut cells = Vec::new();
    for case in &cases {
        let region = prepare_region(&mut region, case.heap_len).map_err(|e| e.to_string())?;
        cells.extend(run_case(
            case,
            config,
            &selection.allocators,
            region,
            progress,
        ));
    }
    Ok(cells)
}

fn prepare_region(region: &mut Option<Region>, len: usize) -> Result<&mut Region, RegionError> {
    match region {
        Some(existing) => existing.ensure_len(len)?,
        None => *region = Some(Region::pretouched(len)?),
    }
    Ok(region.as_mut().expect("set above"))
}

/// Runs every trial of one case, allocator by allocator within each trial.
fn run_case(
    case: &Case,
    config: &Config,
    allocators: &[AllocatorId],
    region: &mut Region,
    progress: &dyn Progress,
) -> Vec<Cell> {
    let participants: Vec<AllocatorId> = allocators
        .iter()
        .copied()
        .filter(|&a| case.admits(a))
        .collect();
    let mut outcomes: Vec<Vec<TrialOutcome>> = vec![Vec::new(); participants.len()];
    let label = format!("{}/{}", case.workload, case.name);
    for trial in 0..config.trials {
        let seed = derive_seed(config.seed, &label, trial);
        for (allocator, history) in participants.iter().zip(&mut outcomes) {
            progress.set_message(format!("{label} · {allocator}"));
            if !history.iter().any(Result::is_err) {
                history.push((case.run)(*allocator, region, seed));
            }
            progress.step_done();
        }
    }
    participants
        .iter()
        .zip(&outcomes)
        .flat_map(|(allocator, history)| cells_of(case, *allocator, history))
        .collect()
}

/// The cells of one allocator in one case: a summary per metric, or the failure everywhere.
fn cells_of(case: &Case, allocator: AllocatorId, history: &[TrialOutcome]) -> Vec<Cell> {
    let failure: Option<&Failure> = history.iter().find_map(|o| o.as_ref().err());
    case.metrics
        .iter()
        .enumerate()
        .map(|(index, metric)| {
            let outcome = match failure {
                Some(failure) => Outcome::Failed(failure.to_string()),
                None => summarize(
                    history
                        .iter()
                        .filter_map(|o| o.as_ref().ok()?.get(index).copied()),
                ),
            };
            Cell::of(
                case.workload.name(),
                &case.name,
                allocator.name(),
                metric,
                outcome,
            )
        })
        .collect()
}

/// Median, min and max of the finite values of a cell's trials.
pub fn summarize(values: impl Iterator<Item = f64>) -> Outcome {
    let values: Vec<f64> = values.filter(|v| v.is_finite()).collect();
    match (median(&values), min_max(&values)) {
        (Some(median), Some((min, max))) => Outcome::Measured(Summary {
            median,
            min,
            max,
            trials: values.len(),
        }),
        _ => Outcome::Failed("no samples".to_string()),
    }
}

/// Runs everything `selection` asks for (timed workloads, then instruction counts) and wraps
/// the cells with the environment.
pub fn run(
    config: &Config,
    selection: &Selection,
    progress: &dyn Progress,
) -> Result<Results, String> {
    let mut cells = run_timed(config, selection, progress)?;
    if selection.wants_instructions() {
        let counted = instructions::run(config, &selection.allocators, progress);
        cells.extend(counted.map_err(|e| e.to_string())?);
    }
    Ok(Results {
        environment: Environment::detect(config, &selection.allocators),
        cells,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_picks_workloads_and_allocators_in_canonical_order() {
        let selection =
            Selection::from_filter(&["talc,latency".into(), "heapworks".into()]).unwrap();
        assert_eq!(selection.workloads, vec![WorkloadId::Latency]);
        assert_eq!(
            selection.allocators,
            vec![AllocatorId::Heapworks, AllocatorId::Talc]
        );
    }

    #[test]
    fn empty_filter_means_everything_timed() {
        let selection = Selection::from_filter(&[]).unwrap();
        assert_eq!(selection.workloads, WorkloadId::TIMED);
        assert_eq!(selection.allocators, AllocatorId::ALL);
        assert!(!selection.wants_instructions());
    }

    #[test]
    fn unknown_names_are_reported_with_the_valid_ones() {
        let error = Selection::from_filter(&["jemalloc".into()]).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("`jemalloc`"));
        assert!(message.contains("random_actions") && message.contains("talc"));
    }
}
