//! What a replay reports, and the rows a plot of several allocators is drawn from.
//!
//! Invariants: times are nanoseconds of allocator calls alone (see the replay module); a
//! range's `ops` counts its timed calls, so `free(NULL)` requests are in no statistic; p99 is
//! the nearest-rank 99th percentile; utilization is present exactly when a footprint is.

use super::plan::Plan;
use super::run::{Outcome, NOT_TIMED};
use super::ReplayOptions;
use std::ops::Range;

/// Timing of one range of requests.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RangeReport {
    /// First request of the range.
    pub start: usize,
    /// One past its last request.
    pub end: usize,
    /// Allocator calls timed in the range.
    pub ops: u64,
    /// Their total time: the range's interval time.
    pub total_ns: u64,
    /// Average response time.
    pub average_ns: f64,
    /// 99th-percentile response time.
    pub p99_ns: u64,
    /// Slowest response.
    pub max_ns: u64,
}

/// Everything one replay of one trace against one allocator measured.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct ReplayReport {
    /// Requests in the trace.
    pub ops: u64,
    /// Threads replayed.
    pub threads: u64,
    /// One report per timed range, in order.
    pub ranges: Vec<RangeReport>,
    /// Most payload bytes live at once, as requested by the trace.
    pub peak_live_bytes: u64,
    /// Heap footprint, as measured by the options' [`super::Footprint`].
    pub footprint_bytes: Option<u64>,
    /// `peak_live_bytes / footprint_bytes`.
    pub utilization: Option<f64>,
    /// `free` requests on ids that were not live, replayed as `free(NULL)`.
    pub null_frees: u64,
    /// `realloc` requests on ids that were not live, replayed as malloc.
    pub null_reallocs: u64,
    /// Allocations over a live id, whose old block leaked until the end.
    pub leaked_blocks: u64,
    /// Blocks were checked (and so touched): times describe a heavier workload.
    pub checked: bool,
    /// Cost of the timer, taken off each call's time.
    pub timer_overhead_ns: u64,
    /// Wall time of the whole replay, waiting and bookkeeping included.
    pub wall_ns: u64,
}

/// One point of the comparison plots: interval time, average response and utilization of one
/// allocator on one range of one trace.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PlotRow {
    pub allocator: String,
    pub trace: String,
    pub start: usize,
    pub end: usize,
    pub interval_ns: u64,
    pub average_ns: f64,
    pub p99_ns: u64,
    pub utilization: Option<f64>,
}

impl ReplayReport {
    /// The plot rows of this report, one per range.
    pub fn plot_rows(&self, allocator: &str, trace: &str) -> Vec<PlotRow> {
        self.ranges
            .iter()
            .map(|range| PlotRow {
                allocator: allocator.to_owned(),
                trace: trace.to_owned(),
                start: range.start,
                end: range.end,
                interval_ns: range.total_ns,
                average_ns: range.average_ns,
                p99_ns: range.p99_ns,
                utilization: self.utilization,
            })
            .collect()
    }
}

/// Builds the report of a finished replay.
pub fn build(
    plan: &Plan,
    ranges: &[Range<usize>],
    outcome: Outcome,
    options: &ReplayOptions,
) -> ReplayReport {
    let utilization = outcome
        .footprint
        .filter(|&bytes| bytes > 0)
        .map(|bytes| plan.peak_live_bytes as f64 / bytes as f64);
    ReplayReport {
        ops: outcome.latencies.len() as u64,
        threads: plan.threads.len() as u64,
        ranges: ranges
            .iter()
            .map(|range| range_report(range.clone(), &outcome.latencies))
            .collect(),
        peak_live_bytes: plan.peak_live_bytes,
        footprint_bytes: outcome.footprint,
        utilization,
        null_frees: plan.null_frees,
        null_reallocs: plan.null_reallocs,
        leaked_blocks: plan.leaked_blocks,
        checked: options.check,
        timer_overhead_ns: outcome.timer_overhead_ns,
        wall_ns: outcome.wall_ns,
    }
}

fn range_report(range: Range<usize>, latencies: &[u32]) -> RangeReport {
    let mut timed: Vec<u32> = latencies[range.clone()]
        .iter()
        .copied()
        .filter(|&ns| ns != NOT_TIMED)
        .collect();
    timed.sort_unstable();
    let total_ns: u64 = timed.iter().map(|&ns| u64::from(ns)).sum();
    let ops = timed.len() as u64;
    let rank = |fraction: f64| {
        let index = ((fraction * ops as f64).ceil() as usize).clamp(1, timed.len().max(1)) - 1;
        timed.get(index).map_or(0, |&ns| u64::from(ns))
    };
    RangeReport {
        start: range.start,
        end: range.end,
        ops,
        total_ns,
        average_ns: if ops == 0 {
            0.0
        } else {
            total_ns as f64 / ops as f64
        },
        p99_ns: rank(0.99),
        max_ns: rank(1.0),
    }
}
