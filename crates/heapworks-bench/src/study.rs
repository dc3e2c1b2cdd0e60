//! The free-index study (issue 16, seed `003_…`): heapworks on every free index, with dlmalloc
//! and talc as the reference peers, on seed 003's experiments at its N, the trace corpus,
//! talc's heap efficiency and random actions, and (valgrind) instructions per call.
//!
//! The study is a [`Selection`] and a [`Config`] of the ordinary runner, nothing more: cells,
//! medians of interleaved trials with fixed seeds, ratios to `heapworks` (the default index,
//! `Bins`) and failures are those of every `heapworks bench` run.
//!
//! Invariants:
//! - The contenders are [`AllocatorId::heapworks_on_every_index`] and [`PEERS`]: an index
//!   added to [`crate::contenders::indexes`] joins the study with no change here.
//! - Seed 003's workloads run at [`BLOCK_COUNTS`] (the seed's N), or [`QUICK_BLOCK_COUNTS`] in
//!   the quick mode; every trial is bounded by [`TRIAL_BUDGET`] (a quadratic index times out
//!   instead of running for hours, and says so in its cell).
//! - The quick mode (`Scale::Tiny`) runs no instruction counts and finishes in seconds.

use std::time::Duration;

use crate::contenders::AllocatorId;
use crate::runner::Selection;
use crate::workloads::{Config, Scale, WorkloadId};

/// Seed 003's N: free-index insertions and removals (or coalescing reallocs) per trial.
pub const BLOCK_COUNTS: [usize; 6] = [5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000];
/// The N of the quick mode: three points, enough for an N axis, in milliseconds.
pub const QUICK_BLOCK_COUNTS: [usize; 3] = [500, 1_000, 2_000];
/// The longest one trial of one contender may take (outside the quick mode, which keeps the
/// tiny scale's budget). An O(N log N) index needs under 2 s at N = 1 000 000 on a slow
/// machine; a trial past this budget is reported as timed out.
pub const TRIAL_BUDGET: Duration = Duration::from_secs(20);
/// The reference peers: dlmalloc (size-ordered tries for large chunks: exact best fit) and
/// talc (bins and a bitmap).
pub const PEERS: [AllocatorId; 2] = [AllocatorId::Dlmalloc, AllocatorId::Talc];
/// The timed workloads of the study, in report order.
pub const WORKLOADS: [WorkloadId; 5] = [
    WorkloadId::InsertDelete,
    WorkloadId::ReallocCoalesce,
    WorkloadId::Traces,
    WorkloadId::HeapEfficiency,
    WorkloadId::RandomActions,
];

/// The study's default selection: its workloads (with the instruction counts outside the
/// quick mode) on heapworks on every index and the peers.
pub fn selection(config: &Config) -> Selection {
    let mut workloads = WORKLOADS.to_vec();
    if config.scale != Scale::Tiny {
        workloads.push(WorkloadId::Instructions);
    }
    let mut allocators = AllocatorId::heapworks_on_every_index();
    allocators.extend(PEERS);
    Selection {
        workloads,
        allocators,
    }
}

/// `config` set up for the study: the seed's N (or the quick mode's) and its trial budget.
pub fn configure(mut config: Config) -> Config {
    if config.scale == Scale::Tiny {
        config.block_counts = Some(QUICK_BLOCK_COUNTS.to_vec());
    } else {
        config.block_counts = Some(BLOCK_COUNTS.to_vec());
        config.budget = Some(TRIAL_BUDGET);
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contenders::IndexContender;
    use crate::workloads::insert_delete;

    #[test]
    fn every_index_and_both_peers_take_part() {
        let selection = selection(&Config::at_scale(Scale::Default, 1));
        let names: Vec<&str> = selection.allocators.iter().map(|a| a.name()).collect();
        assert_eq!(names[0], "heapworks");
        for index in IndexContender::ALL {
            assert!(names.contains(&index.name()), "{names:?}");
        }
        assert!(names.contains(&"dlmalloc") && names.contains(&"talc"));
        assert!(selection.wants_instructions());
        assert!(!super::selection(&Config::at_scale(Scale::Tiny, 1)).wants_instructions());
    }

    #[test]
    fn seed_workloads_run_at_the_study_n() {
        let config = configure(Config::at_scale(Scale::Full, 1));
        assert_eq!(insert_delete::block_counts(&config), BLOCK_COUNTS);
        assert_eq!(config.trial_budget(), TRIAL_BUDGET);
        let quick = configure(Config::at_scale(Scale::Tiny, 1));
        assert_eq!(insert_delete::block_counts(&quick), QUICK_BLOCK_COUNTS);
        let cases = WorkloadId::ReallocCoalesce.cases(&quick).unwrap();
        let n: Vec<Option<usize>> = cases
            .iter()
            .map(|c| insert_delete::blocks_of(&c.name))
            .collect();
        assert_eq!(n, QUICK_BLOCK_COUNTS.map(Some));
    }

    #[test]
    fn a_normal_run_keeps_its_contenders() {
        let everything = Selection::everything();
        assert!(everything
            .allocators
            .iter()
            .all(|a| !matches!(a, AllocatorId::HeapworksOn(_))));
        assert!(Selection::from_filter(&["heapworks_splay".into()])
            .unwrap()
            .allocators
            .contains(&AllocatorId::HeapworksOn(IndexContender::Splay)));
    }
}
