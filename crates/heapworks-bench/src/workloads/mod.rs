//! The workloads, one module each, named for what it measures.
//!
//! A workload turns a [`Config`] into [`Case`]s. A case declares its metrics and knows how to
//! run one trial on one allocator over a region; the [`runner`](crate::runner) interleaves
//! trials allocator by allocator and aggregates them.

pub mod blocks;
pub mod heap_efficiency;
pub mod heap_exhaustion;
pub mod high_alignment;
pub mod insert_delete;
pub mod latency;
pub mod random_actions;
pub mod realloc_coalesce;
pub mod talc_method;
pub mod traces;
pub mod uniform_actions;
pub mod vec_growth;

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::contenders::{self, AllocatorId, UseAllocator};
use crate::region::Region;

crate::registry! {
    /// A workload of the suite.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum WorkloadId {
        /// talc's random actions: throughput of a random alloc/free/realloc mix.
        RandomActions = (
            "random_actions",
            "talc's random actions: successful alloc/free/realloc calls per second \
             (sizes biased small, 1/7 realloc, at least 300 live blocks)"
        ),
        /// talc's heap efficiency: how full the heap gets before the first failure.
        HeapEfficiency = (
            "heap_efficiency",
            "talc's heap efficiency: requested bytes live at the first failure, \
             as a share of the heap"
        ),
        /// Cost of single allocate and free calls, as percentiles.
        Latency = (
            "latency",
            "cost of single allocate and free calls during a random workload, \
             measured with a fenced cycle counter"
        ),
        /// Page-aligned tiny blocks against page-sized blocks at word alignment.
        HighAlignment = (
            "high_alignment",
            "time per allocate+free of 1 B blocks at align 4096 against 4 KiB blocks \
             at align 8, and their ratio"
        ),
        /// galloc's random actions: uniform sizes and alignments up to 1 KiB.
        UniformActions = (
            "uniform_actions",
            "galloc's random actions: uniform 100–1000 B blocks at align 1–1024, \
             realloc to 100–10000 B; successful calls per second"
        ),
        /// galloc's heap exhaustion: large blocks until failure, then free all.
        HeapExhaustion = (
            "heap_exhaustion",
            "galloc's heap exhaustion: 10–300 KB blocks until the first failure, then \
             free all; successful allocations per second and fill at failure"
        ),
        /// Free-structure insertion and removal: N frees then N allocations among live blocks.
        InsertDelete = (
            "insert_delete",
            "allocate 2N, then time N frees of every other block and N allocations \
             (free-structure insertion and removal)"
        ),
        /// Realloc of blocks whose neighbours are free (coalescing).
        ReallocCoalesce = (
            "realloc_coalesce",
            "allocate 2N, free every other, then time a realloc of every remaining \
             block up or down next to free neighbours"
        ),
        /// Many vectors growing to 1 MiB side by side.
        VecGrowth = (
            "vec_growth",
            "many vectors pushed from empty to 1 MiB, interleaved: realloc-heavy growth"
        ),
        /// Replays of real programs' allocation traces (the corpus in `traces/`).
        Traces = (
            "traces",
            "replays of real programs' allocation traces (gcc, g++, python3, perl, sqlite3, \
             vim, cargo, git, sort) and seed 003's scripts: time of the allocator calls, average and p99 \
             response, footprint and utilization (peak live bytes over footprint)"
        ),
        /// Instructions per call under valgrind (only with `--instructions`).
        Instructions = (
            "instructions",
            "instructions per allocate, free and realloc under callgrind: deterministic, \
             the regression gate"
        ),
    }
}

impl WorkloadId {
    /// The timed and measured workloads of a normal `heapworks bench`: all but the last,
    /// `Instructions`.
    pub const TIMED: &'static [WorkloadId] = {
        let (last, timed) = Self::ALL.split_last().unwrap();
        assert!(matches!(last, WorkloadId::Instructions));
        timed
    };

    /// The cases of this workload under `config` (none for [`WorkloadId::Instructions`],
    /// which is driven by [`crate::instructions`]); an error, with the reason, when the
    /// workload cannot run at all (a trace corpus that cannot be read or replayed).
    pub fn cases(self, config: &Config) -> Result<Vec<Case>, String> {
        Ok(match self {
            WorkloadId::RandomActions => random_actions::cases(config),
            WorkloadId::HeapEfficiency => heap_efficiency::cases(config),
            WorkloadId::Latency => latency::cases(config),
            WorkloadId::HighAlignment => high_alignment::cases(config),
            WorkloadId::UniformActions => uniform_actions::cases(config),
            WorkloadId::HeapExhaustion => heap_exhaustion::cases(config),
            WorkloadId::InsertDelete => insert_delete::cases(config),
            WorkloadId::ReallocCoalesce => realloc_coalesce::cases(config),
            WorkloadId::VecGrowth => vec_growth::cases(config),
            WorkloadId::Traces => traces::cases(config)?,
            WorkloadId::Instructions => Vec::new(),
        })
    }
}

/// How big a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Seconds: for tests and smoke checks (`--quick`).
    Tiny,
    /// About a minute for the whole suite on a 2-core machine.
    Default,
    /// Publication grade: every size, longer trials (`--full`).
    Full,
}

/// Settings shared by every workload of a run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Seed of every random sequence; the same seed replays the same operations.
    pub seed: u64,
    /// Trials per case and allocator.
    pub trials: usize,
    /// Timed length of one trial of a time-boxed workload.
    pub duration: Duration,
    /// Size of the run.
    pub scale: Scale,
    /// The trace corpus of the [`WorkloadId::Traces`] workload.
    pub traces: PathBuf,
    /// Seed 003's N ([`WorkloadId::InsertDelete`], [`WorkloadId::ReallocCoalesce`]) when not
    /// the scale's: the free-index study ([`crate::study`]) gives its own.
    pub block_counts: Option<Vec<usize>>,
    /// The longest one trial may take when not the scale's ([`Config::trial_budget`]).
    pub budget: Option<Duration>,
}

impl Config {
    /// The settings of a run at `scale` with its usual trials and duration.
    pub fn at_scale(scale: Scale, seed: u64) -> Self {
        let (trials, duration_ms) = match scale {
            Scale::Tiny => (1, 5),
            Scale::Default => (3, 80),
            Scale::Full => (7, 200),
        };
        Self {
            seed,
            trials,
            duration: Duration::from_millis(duration_ms),
            scale,
            traces: traces::default_corpus(),
            block_counts: None,
            budget: None,
        }
    }

    /// Picks the value for this run's scale.
    pub fn pick<T>(&self, tiny: T, default: T, full: T) -> T {
        match self.scale {
            Scale::Tiny => tiny,
            Scale::Default => default,
            Scale::Full => full,
        }
    }

    /// The longest one trial of one allocator may take before it is reported as timed out:
    /// [`Config::budget`], else the scale's.
    pub fn trial_budget(&self) -> Duration {
        self.budget.unwrap_or_else(|| {
            self.pick(
                Duration::from_secs(2),
                Duration::from_secs(1),
                Duration::from_secs(20),
            )
        })
    }
}

/// Which direction of a metric is good.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Larger values are better (throughput, efficiency).
    Higher,
    /// Smaller values are better (time, latency, instructions).
    Lower,
}

/// One quantity a case reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSpec {
    /// Name, e.g. `throughput` or `p99`.
    pub name: &'static str,
    /// Unit, e.g. `Mops/s`.
    pub unit: &'static str,
    /// Which direction is good.
    pub better: Better,
    /// Whether the terminal table shows it (all metrics go to JSON, CSV and HTML).
    pub primary: bool,
}

impl MetricSpec {
    /// A metric shown in the terminal table.
    pub const fn primary(name: &'static str, unit: &'static str, better: Better) -> Self {
        Self {
            name,
            unit,
            better,
            primary: true,
        }
    }

    /// A metric kept for the files and the HTML report only.
    pub const fn secondary(name: &'static str, unit: &'static str, better: Better) -> Self {
        Self {
            name,
            unit,
            better,
            primary: false,
        }
    }
}

/// Why a trial produced no numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The allocator ran out of memory where the workload needs every call to succeed.
    OutOfMemory,
    /// The trial ran past its budget.
    TimedOut(Duration),
    /// Live blocks overlapped, were misaligned, or lost their contents.
    Corrupted(String),
    /// The allocator could not be built over the region.
    SetupFailed(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::OutOfMemory => f.write_str("out of memory"),
            Failure::TimedOut(budget) => write!(f, "timed out after {budget:?}"),
            Failure::Corrupted(what) => write!(f, "corrupted: {what}"),
            Failure::SetupFailed(why) => write!(f, "setup failed: {why}"),
        }
    }
}

/// What one trial of one allocator produced: one value per metric of its case, or a failure.
pub type TrialOutcome = Result<Vec<f64>, Failure>;

/// How one trial of a case runs: allocator, the shared region, and the trial's seed.
pub type TrialFn = dyn Fn(AllocatorId, &mut Region, u64) -> TrialOutcome;

/// One row group of the report: a workload under one set of parameters.
pub struct Case {
    /// The workload this case belongs to.
    pub workload: WorkloadId,
    /// Parameters in words, e.g. `max 1000 B, realloc`.
    pub name: String,
    /// Bytes of heap each arena contender gets.
    pub heap_len: usize,
    /// Whether the system allocator is excluded (the case needs a bounded heap).
    pub arena_only: bool,
    /// What each trial reports, in order.
    pub metrics: Vec<MetricSpec>,
    /// Runs one trial.
    pub run: Box<TrialFn>,
}

impl Case {
    /// Whether `allocator` takes part in this case.
    pub fn admits(&self, allocator: AllocatorId) -> bool {
        allocator.is_arena() || !self.arena_only
    }
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Case")
            .field("workload", &self.workload)
            .field("name", &self.name)
            .field("heap_len", &self.heap_len)
            .field("arena_only", &self.arena_only)
            .finish()
    }
}

/// Builds `allocator` over `region` and runs `work` on it, folding set-up errors into the
/// trial's outcome.
pub fn run_trial<U: UseAllocator<Output = TrialOutcome>>(
    allocator: AllocatorId,
    region: &mut Region,
    heap_len: usize,
    work: U,
) -> TrialOutcome {
    contenders::with_allocator(allocator, region, heap_len, work)
        .unwrap_or_else(|error| Err(Failure::SetupFailed(error.0)))
}

/// `MiB` bytes.
pub const fn mib(count: usize) -> usize {
    count << 20
}

#[cfg(test)]
mod tests;
