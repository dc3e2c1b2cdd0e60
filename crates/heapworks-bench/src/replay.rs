//! Trace replay on the contenders: `heapworks replay`, its valgrind probe, and the `traces`
//! workload of `heapworks bench` all go through [`replay_on`].
//!
//! Each replay builds its allocator fresh over the shared pre-touched [`Region`] with
//! [`contenders::with_allocator`] (the system allocator behind the same lock as the arenas)
//! and runs [`heapworks_trace::replay::replay`] on it. Arenas report as footprint the span of
//! the blocks they handed out, the system allocator what glibc holds (`mallinfo2`).
//!
//! Invariants:
//! - An allocator that runs out of memory, or fails a `--check`, fails its own cells only.
//!   A trace the replayer refuses (a bad range, a request no layout describes, an
//!   inconsistent trace under `--check`) is a [`ReplayFailure::is_trace_fault`]: no allocator
//!   can replay it, and `heapworks replay` stops.
//! - Results are [`Cell`]s of workload [`WorkloadId::Traces`]: one case per timed range
//!   (`NAME [START..END)`) with the time metrics, and one per trace (`NAME`) with the memory
//!   metrics, so the table, the files and the HTML report render them as any workload.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use heapworks_trace::replay::{
    replay, resolve_ranges, Footprint, GlibcHeap, OpRange, RangeReport, ReplayError, ReplayOptions,
    ReplayReport,
};
use heapworks_trace::Trace;

use crate::contenders::{self, AllocatorId, Arena, RawHeap, SetupError, UseAllocator};
use crate::instructions::{probe_options, MeasuredArena};
use crate::region::physical_memory;
use crate::region::Region;
use crate::results::{Cell, Outcome};
use crate::runner::summarize;
use crate::workloads::{mib, Better, Failure, MetricSpec, WorkloadId};

/// Heap each arena gets by default: this many times the trace's peak live bytes …
pub const HEAP_FACTOR: u64 = 4;
/// … and at least this much …
pub const MIN_HEAP: usize = mib(8);
/// … and at most this much: a trace that needs more replays with `--heap`, or its arenas run
/// out of memory (each cell says so); the whole heap is touched before a replay.
pub const MAX_DEFAULT_HEAP: usize = mib(1024);

/// Total time of the allocator calls of a range.
pub const INTERVAL: MetricSpec = MetricSpec::primary("interval time", "ms", Better::Lower);
/// Mean time of one call in a range.
pub const AVERAGE: MetricSpec = MetricSpec::primary("average response", "ns", Better::Lower);
/// 99th-percentile time of one call in a range.
pub const P99: MetricSpec = MetricSpec::primary("p99 response", "ns", Better::Lower);
/// Most payload bytes the trace holds live at once (the same for every allocator).
pub const PEAK_LIVE: MetricSpec = MetricSpec::primary("peak live", "KiB", Better::Lower);
/// Memory the allocator used for it.
pub const FOOTPRINT: MetricSpec = MetricSpec::primary("footprint", "KiB", Better::Lower);
/// Peak live bytes over footprint.
pub const UTILIZATION: MetricSpec = MetricSpec::primary("utilization", "%", Better::Higher);

/// The metrics the report plots for traces (the others are in its tables).
pub const PLOTTED: [&MetricSpec; 3] = [&INTERVAL, &AVERAGE, &UTILIZATION];

/// The default heap for `trace`: [`HEAP_FACTOR`] × its peak live bytes, from [`MIN_HEAP`] to
/// [`MAX_DEFAULT_HEAP`], in whole MiB.
pub fn default_heap_len(trace: &Trace) -> usize {
    let peak = usize::try_from(trace.stats().peak_live_bytes).unwrap_or(usize::MAX);
    peak.saturating_mul(HEAP_FACTOR as usize)
        .clamp(MIN_HEAP, MAX_DEFAULT_HEAP)
        .next_multiple_of(mib(1))
}

/// One replay to run: a trace, the ranges to time, whether to check, the arenas' heap.
#[derive(Clone, Copy)]
pub struct ReplaySpec<'a> {
    /// The requests.
    pub trace: &'a Trace,
    /// Ranges to time; none for the whole trace.
    pub ranges: &'a [OpRange],
    /// Verify every block (and touch it: timings describe a heavier workload).
    pub check: bool,
    /// Bytes of the region each arena manages.
    pub heap_len: usize,
}

/// Why one replay produced no report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayFailure {
    /// The allocator could not be built over the region.
    Setup(SetupError),
    /// The replay stopped.
    Replay(ReplayError),
}

impl ReplayFailure {
    /// Whether the trace (or how it was asked to be replayed) is at fault, not the allocator.
    pub fn is_trace_fault(&self) -> bool {
        matches!(
            self,
            ReplayFailure::Replay(
                ReplayError::InvalidRange { .. }
                    | ReplayError::InvalidAlignment(_)
                    | ReplayError::Trace { .. }
                    | ReplayError::Unrepresentable { .. }
            )
        )
    }

    /// Whether the allocator handed out a bad block under `--check`.
    pub fn is_check_failure(&self) -> bool {
        matches!(self, ReplayFailure::Replay(ReplayError::Check { .. }))
    }

    /// The failure as a trial of `heapworks bench` reports it.
    pub fn to_failure(&self) -> Failure {
        match self {
            ReplayFailure::Replay(ReplayError::OutOfMemory { .. }) => Failure::OutOfMemory,
            ReplayFailure::Replay(error) if self.is_check_failure() => {
                Failure::Corrupted(error.to_string())
            }
            ReplayFailure::Replay(error) => Failure::SetupFailed(error.to_string()),
            ReplayFailure::Setup(error) => Failure::SetupFailed(error.to_string()),
        }
    }
}

impl fmt::Display for ReplayFailure {
    /// Starts as the table's failure statuses expect (`out of memory`, `corrupted`, …).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayFailure::Setup(error) => write!(f, "setup failed: {error}"),
            ReplayFailure::Replay(error) if self.is_check_failure() => {
                write!(f, "corrupted: {error}")
            }
            ReplayFailure::Replay(error) => error.fmt(f),
        }
    }
}

/// Replays `spec` on a fresh `allocator` over `region` (which must hold `spec.heap_len`).
pub fn replay_on(
    allocator: AllocatorId,
    region: &mut Region,
    spec: &ReplaySpec<'_>,
) -> Result<ReplayReport, ReplayFailure> {
    let glibc = GlibcHeap::new();
    let base = region.base() as usize;
    let options = ReplayOptions {
        ranges: spec.ranges,
        check: spec.check,
        heap: allocator.is_arena().then(|| base..base + spec.heap_len),
        footprint: if allocator.is_arena() {
            Footprint::AddressSpan
        } else {
            Footprint::Probe(&glibc)
        },
        ..ReplayOptions::default()
    };
    let work = Replayer {
        trace: spec.trace,
        options,
    };
    contenders::with_allocator(allocator, region, spec.heap_len, work)
        .map_err(ReplayFailure::Setup)?
        .map_err(ReplayFailure::Replay)
}

/// A replay, generic over the contender's heap.
struct Replayer<'a> {
    trace: &'a Trace,
    options: ReplayOptions<'a>,
}

impl UseAllocator for Replayer<'_> {
    type Output = Result<ReplayReport, ReplayError>;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> Self::Output {
        replay(self.trace, arena, &self.options)
    }
}

/// The cells of the trials of the trace called `name` on `allocator` (one report per trial,
/// summarized as `bench` does: median, min and max): time metrics per range, memory metrics
/// for the trace; every cell failed if a trial did (only the memory cells if the ranges
/// themselves are invalid).
pub fn cells(
    name: &str,
    spec: &ReplaySpec<'_>,
    allocator: AllocatorId,
    outcome: &Result<Vec<ReplayReport>, ReplayFailure>,
) -> Vec<Cell> {
    let workload = WorkloadId::Traces.name();
    let mut cells = Vec::new();
    let ranges = resolve_ranges(spec.ranges, spec.trace.len()).unwrap_or_default();
    for (index, range) in ranges.into_iter().enumerate() {
        let case = range_case(name, &range);
        let per_range: [(&MetricSpec, RangeValue); 3] = [
            (&INTERVAL, |r| r.total_ns as f64 / 1e6),
            (&AVERAGE, |r| r.average_ns),
            (&P99, |r| r.p99_ns as f64),
        ];
        for (metric, value) in per_range {
            let outcome = summarize_trials(outcome, |report| Some(value(&report.ranges[index])));
            cells.push(Cell::of(workload, &case, allocator.name(), metric, outcome));
        }
    }
    let per_trace: [(&MetricSpec, ReportValue); 3] = [
        (&PEAK_LIVE, |r| Some(kib(r.peak_live_bytes))),
        (&FOOTPRINT, |r| r.footprint_bytes.map(kib)),
        (&UTILIZATION, |r| r.utilization.map(percent)),
    ];
    for (metric, value) in per_trace {
        let outcome = summarize_trials(outcome, value);
        cells.push(Cell::of(workload, name, allocator.name(), metric, outcome));
    }
    cells
}

/// A time metric of one timed range of one trial.
type RangeValue = fn(&RangeReport) -> f64;
/// A memory metric of one trial, if it was measured.
type ReportValue = fn(&ReplayReport) -> Option<f64>;

/// Median, min and max of `value` over the trials' reports; the failure if a trial failed, or
/// `no footprint measured` if a trial has no value.
fn summarize_trials(
    outcome: &Result<Vec<ReplayReport>, ReplayFailure>,
    value: impl Fn(&ReplayReport) -> Option<f64>,
) -> Outcome {
    match outcome {
        Err(error) => Outcome::Failed(error.to_string()),
        Ok(reports) => match reports.iter().map(value).collect::<Option<Vec<f64>>>() {
            Some(values) => summarize(values.into_iter()),
            None => Outcome::Failed("no footprint measured".to_string()),
        },
    }
}
/// The case of a timed range.
pub fn range_case(name: &str, range: &Range<usize>) -> String {
    format!("{name} [{}..{})", range.start, range.end)
}

fn kib(bytes: u64) -> f64 {
    bytes as f64 / 1024.0
}

fn percent(fraction: f64) -> f64 {
    fraction * 100.0
}

/// The name a trace file goes by in the report: its file name.
pub fn trace_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Arguments of the hidden `replay-probe` command, run under callgrind by
/// `heapworks replay --instructions`: `--allocator NAME --heap BYTES --trace PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeArgs {
    /// Allocator to replay on.
    allocator: String,
    /// Bytes of heap.
    heap: usize,
    /// The trace.
    trace: PathBuf,
}

impl ProbeArgs {
    /// The probe's command line for one (trace, allocator), after the executable.
    pub fn command_line(trace: &Path, allocator: AllocatorId, heap_len: usize) -> Vec<String> {
        vec![
            "replay-probe".to_string(),
            "--allocator".to_string(),
            allocator.name().to_string(),
            "--heap".to_string(),
            heap_len.to_string(),
            "--trace".to_string(),
            trace.display().to_string(),
        ]
    }

    /// Reads the arguments after the probe's command name; the heap at most the machine's
    /// memory, as `--heap` of `heapworks replay`.
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let [allocator, heap, trace] =
            probe_options(args, ["--allocator", "--heap", "--trace"]).map_err(|e| e.to_string())?;
        let heap: usize = heap
            .parse()
            .map_err(|_| format!("`{heap}` is not a number of bytes"))?;
        if heap == 0 || heap as u64 > physical_memory() {
            return Err(format!("a heap of {heap} bytes cannot be replayed here"));
        }
        Ok(Self {
            allocator: allocator.to_string(),
            heap,
            trace: PathBuf::from(trace),
        })
    }
}

/// The hidden `replay-probe` command: replays a trace through [`MeasuredArena`] (nothing
/// timed, nothing checked) and prints the call counts.
pub fn probe(args: &ProbeArgs) -> Result<(), String> {
    let allocator = AllocatorId::from_name(&args.allocator)
        .ok_or_else(|| format!("unknown allocator `{}`", args.allocator))?;
    let trace = heapworks_trace::read_trace(&args.trace).map_err(|e| e.to_string())?;
    let mut region = Region::pretouched(args.heap).map_err(|e| e.to_string())?;
    let work = MeasuredReplayer { trace: &trace };
    let counts = contenders::with_allocator(allocator, &mut region, args.heap, work)
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    println!("{counts}");
    Ok(())
}

/// A replay whose allocator calls callgrind counts.
struct MeasuredReplayer<'a> {
    trace: &'a Trace,
}

impl UseAllocator for MeasuredReplayer<'_> {
    type Output = Result<crate::instructions::CallCounts, ReplayError>;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> Self::Output {
        let measured = MeasuredArena::new(arena);
        let options = ReplayOptions {
            footprint: Footprint::Unavailable,
            ..ReplayOptions::default()
        };
        replay(self.trace, &measured, &options)?;
        Ok(measured.calls())
    }
}

#[cfg(test)]
mod tests;
