//! The trace corpus (`traces/`: gcc, python3, cargo, git and sort captured on this project's
//! machine, and seed 003's scripts) replayed on every allocator, as `heapworks replay` does
//! ([`crate::replay::replay_on`]): one case per trace, every request timed.
//!
//! The default and quick runs replay a prefix of each trace (the first
//! [`DEFAULT_PREFIX`] or [`QUICK_PREFIX`] requests, blocks still live at the cut freed
//! untimed) so that the whole suite stays about a minute, or seconds; `--full` replays every
//! trace whole. Arenas get [`crate::replay::default_heap_len`] of the replayed part. A
//! corpus that cannot be read (a missing directory, one with no trace, a corrupt trace) or a
//! trace no allocator could replay (a size no `Layout` describes) is an error, with the
//! reason, before anything runs.

use std::path::{Path, PathBuf};

use heapworks_trace::replay::{validate, ReplayOptions};
use heapworks_trace::{read_traces_in, Trace};

use super::{Better, Case, Config, Failure, MetricSpec, WorkloadId};
use crate::replay::{self, ReplaySpec, AVERAGE, INTERVAL, UTILIZATION};

/// Requests replayed of each trace in the default run.
pub const DEFAULT_PREFIX: usize = 10_000;
/// Requests replayed of each trace with `--quick`.
pub const QUICK_PREFIX: usize = 2_000;

const METRICS: [MetricSpec; 4] = [
    INTERVAL,
    AVERAGE,
    MetricSpec::secondary("p99 response", "ns", Better::Lower),
    UTILIZATION,
];

/// The corpus of this workspace: `traces/` at its root, where this crate was built from.
pub fn default_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces")
}

/// One case per trace of the configured corpus.
pub fn cases(config: &Config) -> Result<Vec<Case>, String> {
    let traces = read_traces_in(&config.traces).map_err(|e| format!("trace corpus: {e}"))?;
    traces
        .into_iter()
        .map(|(path, trace)| case(config, &path, trace))
        .collect()
}

fn case(config: &Config, path: &Path, mut trace: Trace) -> Result<Case, String> {
    let full_len = trace.len();
    if let Some(prefix) = config.pick(Some(QUICK_PREFIX), Some(DEFAULT_PREFIX), None) {
        trace.truncate(prefix);
    }
    let mut name = replay::trace_name(path);
    if trace.len() < full_len {
        name = format!("{name}, first {} of {full_len}", trace.len());
    }
    validate(&trace, &ReplayOptions::default())
        .map_err(|e| format!("trace corpus: {}: cannot be replayed: {e}", path.display()))?;
    let heap_len = replay::default_heap_len(&trace);
    Ok(Case {
        workload: WorkloadId::Traces,
        name,
        heap_len,
        arena_only: false,
        metrics: METRICS.to_vec(),
        run: Box::new(move |allocator, region, _seed| {
            let spec = ReplaySpec {
                trace: &trace,
                ranges: &[],
                check: false,
                heap_len,
            };
            let report = replay::replay_on(allocator, region, &spec).map_err(|f| f.to_failure())?;
            let whole = &report.ranges[0];
            let utilization = report
                .utilization
                .ok_or(Failure::SetupFailed("no footprint measured".to_string()))?;
            Ok(vec![
                whole.total_ns as f64 / 1e6,
                whole.average_ns,
                whole.p99_ns as f64,
                utilization * 100.0,
            ])
        }),
    })
}
