//! Replaying a trace against any [`GlobalAlloc`], as seed 003's `stats` and `ctest` do.
//!
//! [`replay`] runs every request of a trace against an allocator and reports, for each timed
//! range of requests (seed 003's `-r START END`), the total time spent in the allocator, the
//! average and 99th-percentile response time, and for the whole trace the utilization: the
//! most payload bytes live at once over the heap footprint.
//!
//! Invariants and conventions:
//! - Ranges are 0-based, half-open ranges of request indices in the trace's global order
//!   (`START..END`; no `END` means to the end). They may not overlap. No range means the whole
//!   trace.
//! - Only the allocator call is timed, each call alone (`Instant::now` before and after,
//!   less the timer's own cost measured at the start); waiting for another thread, checks and
//!   bookkeeping are not. A range's time is the sum of its calls' times.
//! - Each thread of the trace replays its stream on its own OS thread, in order; a request on
//!   an id waits until every earlier request on that id (in global order) is done, so a block
//!   allocated by one thread and freed by another is freed after it was allocated.
//! - Requests on ids that are not live follow C: `free` of such an id is `free(NULL)` (nothing
//!   is called or timed; counted in [`ReplayReport::null_frees`]), `realloc` allocates, and
//!   allocating a live id leaks its old block. With `check`, all three are trace errors.
//! - A NULL from the allocator ends the replay with [`ReplayError::OutOfMemory`].
//! - Whatever happens, every block still allocated when the replay stops is freed before
//!   [`replay`] returns (leaked ones included), so an allocator can be reused or dropped.
//! - Memory is not touched outside `check` mode, as in seed 003's timing runs; in `check` mode
//!   every block is filled with a pattern and verified at realloc and free, so timings of a
//!   checked run describe a different workload and are flagged by [`ReplayReport::checked`].

mod check;
mod footprint;
mod plan;
mod report;
mod run;

pub use check::CheckFailure;
pub use footprint::{Footprint, FootprintProbe, GlibcHeap};
pub use report::{PlotRow, RangeReport, ReplayReport};

use crate::model::Trace;
use core::alloc::GlobalAlloc;
use std::fmt;
use std::ops::Range;

/// A range of requests to time: `start..end`, or `start..` to the end of the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct OpRange {
    /// Index of the first request timed.
    pub start: usize,
    /// Index one past the last request timed; `None` for the end of the trace.
    pub end: Option<usize>,
}

/// How to replay.
#[derive(Clone)]
pub struct ReplayOptions<'a> {
    /// Ranges to time; empty for the whole trace.
    pub ranges: &'a [OpRange],
    /// Verify every block: alignment, inside `heap`, no overlap with any live block, payload
    /// preserved across realloc and until free, calloc memory zeroed.
    pub check: bool,
    /// Alignment of malloc, calloc and realloc requests, and the least of any request: 16, as
    /// glibc's malloc on 64-bit targets, unless set otherwise.
    pub malloc_align: usize,
    /// Where the allocator's blocks must lie, checked in `check` mode when given.
    pub heap: Option<Range<usize>>,
    /// How to measure the heap footprint for utilization.
    pub footprint: Footprint<'a>,
}

impl Default for ReplayOptions<'_> {
    fn default() -> Self {
        Self {
            ranges: &[],
            check: false,
            malloc_align: 16,
            heap: None,
            footprint: Footprint::AddressSpan,
        }
    }
}

/// Why a replay stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplayError {
    /// A timing range is empty, reaches past the trace, or overlaps another.
    InvalidRange { range: OpRange, reason: String },
    /// `malloc_align` is not a power of two.
    InvalidAlignment(usize),
    /// In `check` mode: the trace itself is inconsistent at request `op`.
    Trace { op: usize, message: String },
    /// Request `op` asks for a size and alignment no `Layout` can describe.
    Unrepresentable { op: usize, size: u64, align: u64 },
    /// The allocator returned NULL for request `op`.
    OutOfMemory {
        op: usize,
        thread: u32,
        size: usize,
        align: usize,
    },
    /// In `check` mode: the allocator gave a bad block at request `op`.
    Check {
        op: usize,
        thread: u32,
        failure: CheckFailure,
    },
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::InvalidRange { range, reason } => match range.end {
                Some(end) => write!(f, "range {}..{end}: {reason}", range.start),
                None => write!(f, "range {}..: {reason}", range.start),
            },
            ReplayError::InvalidAlignment(align) => {
                write!(f, "malloc alignment {align} is not a power of two")
            }
            ReplayError::Trace { op, message } => {
                write!(f, "trace error at request {op}: {message}")
            }
            ReplayError::Unrepresentable { op, size, align } => write!(
                f,
                "request {op}: {size} bytes aligned to {align} cannot be asked of a GlobalAlloc"
            ),
            ReplayError::OutOfMemory {
                op,
                thread,
                size,
                align,
            } => write!(
                f,
                "out of memory at request {op} (thread {thread}): {size} bytes aligned to {align}"
            ),
            ReplayError::Check {
                op,
                thread,
                failure,
            } => {
                write!(
                    f,
                    "check failed at request {op} (thread {thread}): {failure}"
                )
            }
        }
    }
}

impl std::error::Error for ReplayError {}

/// Replays `trace` against `alloc`.
///
/// `alloc` should be fresh (a new heap) for utilization to mean anything; it is left with no
/// block allocated.
pub fn replay<A: GlobalAlloc + Sync>(
    trace: &Trace,
    alloc: &A,
    options: &ReplayOptions,
) -> Result<ReplayReport, ReplayError> {
    let (ranges, plan) = prepare(trace, options)?;
    let outcome = run::run(&plan, alloc, options)?;
    Ok(report::build(&plan, &ranges, outcome, options))
}

/// Checks, without calling any allocator, what [`replay`] checks before its first call: the
/// options, the ranges, and that every request has a size and alignment a `Layout` describes
/// (and, with `check`, that the trace is consistent). A trace that passes fails a replay only
/// through its allocator (out of memory, or a check failure).
pub fn validate(trace: &Trace, options: &ReplayOptions) -> Result<(), ReplayError> {
    prepare(trace, options).map(drop)
}

/// The resolved ranges and the plan of a replay.
fn prepare(
    trace: &Trace,
    options: &ReplayOptions,
) -> Result<(Vec<Range<usize>>, plan::Plan), ReplayError> {
    if !options.malloc_align.is_power_of_two() {
        return Err(ReplayError::InvalidAlignment(options.malloc_align));
    }
    let ranges = resolve_ranges(options.ranges, trace.len())?;
    let plan = plan::build(trace, options)?;
    Ok((ranges, plan))
}

/// Checks the ranges of a trace of `len` requests and gives them as `start..end`, sorted (the
/// whole trace when there are none): the ranges a [`ReplayReport`] reports, in its order.
pub fn resolve_ranges(ranges: &[OpRange], len: usize) -> Result<Vec<Range<usize>>, ReplayError> {
    if ranges.is_empty() {
        return Ok(std::iter::once(0..len).collect());
    }
    let invalid = |range: OpRange, reason: String| ReplayError::InvalidRange { range, reason };
    let mut resolved: Vec<(Range<usize>, OpRange)> = Vec::with_capacity(ranges.len());
    for &range in ranges {
        let end = range.end.unwrap_or(len);
        if end > len {
            return Err(invalid(range, format!("the trace has {len} requests")));
        }
        if range.start >= end {
            return Err(invalid(range, "the range is empty".to_owned()));
        }
        resolved.push((range.start..end, range));
    }
    resolved.sort_by_key(|(range, _)| range.start);
    for pair in resolved.windows(2) {
        if pair[1].0.start < pair[0].0.end {
            return Err(invalid(pair[1].1, "it overlaps another range".to_owned()));
        }
    }
    Ok(resolved.into_iter().map(|(range, _)| range).collect())
}
