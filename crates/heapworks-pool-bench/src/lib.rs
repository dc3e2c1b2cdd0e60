//! `heapworks bench --pool`: heapworks-pool against allocating every tensor afresh, inline and
//! in shared memory, in one run (seed 002's experiment, and its future work).
//!
//! - [`variants`]: the columns: `fill_existing` (the baseline), `inline_without_pool`,
//!   `inline_fresh_mapping`, `inline_with_pool`, `shm_without_pool`, `shm_with_pool` (and,
//!   when named, `inline_with_pool_4k`, `shm_with_pool_4k`: both pools without huge pages).
//! - [`sizes`]: get-fill-drop of one size in a loop, 4 B to 100 MB.
//! - [`patterns`]: variable shapes (a text model's layers) and a working set above the budget,
//!   with hit rates, evictions and peak RSS.
//! - [`rss`]: the peak resident set of each variant in turn.
//! - [`peers`]: glibc, heapworks-malloc, mimalloc and jemalloc running `inline_without_pool`
//!   in a process of their own (`LD_PRELOAD`), as columns of `pool_sizes`.
//! - [`targets`]: the performance targets judged from a run's medians.
//!
//! Times are the measuring thread's CPU time ([`cpu_time`]), not wall-clock time: the machine
//! is shared. Every workload is a list of [`Task`]s. A task's trials are interleaved variant by variant
//! (trial 1 of every variant, then trial 2, …, each trial starting one variant further), with
//! one seed per trial shared by all; each cell is the median of the trials. Cells are the same
//! as `bench`'s, so the table, JSON, CSV and HTML renderers print them, with ratios to
//! `fill_existing`.

pub mod cpu_time;
pub mod instructions;
pub mod patterns;
pub mod peers;
pub mod probe;
pub mod rss;
pub mod sizes;
pub mod targets;
pub mod variants;

use heapworks_bench::progress::Progress;

use heapworks_bench::results::{Cell, Environment, Outcome, Results};
use heapworks_bench::rng::derive_seed;
use heapworks_bench::runner::{filter_terms, in_canonical_order, summarize};
use heapworks_bench::workloads::{Better, Config, MetricSpec};
use heapworks_malloc_bench::libraries::{CMalloc, Library};
use patterns::Pattern;
use variants::Variant;

/// Nanoseconds of CPU time per get-fill-drop ([`cpu_time`]).
pub const TIME_NS: MetricSpec = MetricSpec::primary("CPU time", "ns", Better::Lower);
/// Microseconds of CPU time per step of a pattern ([`cpu_time`]).
pub const STEP_US: MetricSpec = MetricSpec::primary("CPU time per step", "µs", Better::Lower);
/// Requests a pool served from its cache.
pub const HIT_RATE: MetricSpec = MetricSpec::primary("hit rate", "%", Better::Higher);
/// Buffers a pool evicted to stay within its budget.
pub const EVICTIONS: MetricSpec = MetricSpec::secondary("evictions", "count", Better::Lower);
/// Peak resident set above the one before the variant was set up.
pub const PEAK_RSS: MetricSpec = MetricSpec::primary("peak RSS", "MiB", Better::Lower);

heapworks_bench::registry! {
    /// A workload of `bench --pool`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum PoolWorkload {
        /// Get-fill-drop of one size in a loop.
        Sizes = (
            "pool_sizes",
            "seed 002's experiment: get a tensor of n f32, fill every element with a \
             non-default value, drop it, in a loop; CPU ns per round, 4 B to 100 MB"
        ),
        /// A text model's layers with varying sequence lengths.
        VariableShape = (
            "pool_variable_shape",
            "a text model's layer per step: hidden L×768, MLP L×3072 and attention \
             12×L×L f32 live at once, L drawn log-uniformly from 8 to 512 tokens, each \
             column in a process of its own, from its start and after warm-up steps; CPU \
             time per step, hit rate, evictions, peak RSS above the start"
        ),
        /// A working set twice the budget.
        BudgetPressure = (
            "pool_budget_pressure",
            "one tensor per step of 12 sizes from 1 MiB (25 % apart) drawn uniformly, \
             under a budget of half their total, each column in a process of its own, from \
             its start and after warm-up steps: CPU time per step, hit rate, evictions, \
             peak RSS above the start"
        ),
        /// Instructions per get-fill-drop under callgrind.
        Instructions = (
            "pool_instructions",
            "instructions per get-fill-drop under callgrind (deterministic; kernel work not \
             counted), 4 B to 1 MiB; run only when named"
        ),
    }
}

impl PoolWorkload {
    /// The workloads a run measures unless others are named: all but the instruction
    /// counts, which take valgrind and minutes.
    pub const DEFAULT: &[PoolWorkload] = &[
        PoolWorkload::Sizes,
        PoolWorkload::VariableShape,
        PoolWorkload::BudgetPressure,
    ];
}

/// What a `bench --pool` run measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSelection {
    /// Workloads, in report order.
    pub workloads: Vec<PoolWorkload>,
    /// The variants' columns, in report order.
    pub variants: Vec<Variant>,
    /// The peers' columns, after the variants.
    pub peers: Vec<CMalloc>,
}

impl PoolSelection {
    /// Reads `--filter` terms, each a workload, a variant or a peer malloc (`glibc`,
    /// `heapworks`, `mimalloc`, `jemalloc`); no workload term means every workload, no
    /// variant or peer term every variant and peer.
    pub fn from_filter(terms: &[String]) -> Result<Self, String> {
        let mut workloads = Vec::new();
        let mut variants = Vec::new();
        let mut peers = Vec::new();
        let names = filter_terms(terms).ok_or_else(|| unknown_term(""))?;
        for term in names {
            if let Some(workload) = PoolWorkload::from_name(term) {
                workloads.push(workload);
            } else if let Some(variant) = Variant::from_name(term) {
                variants.push(variant);
            } else if let Some(peer) = CMalloc::from_name(term).filter(|m| peers::PEERS.contains(m))
            {
                peers.push(peer);
            } else {
                return Err(unknown_term(term));
            }
        }
        let every_column = variants.is_empty() && peers.is_empty();
        let variants = match every_column {
            true => Variant::DEFAULT.to_vec(),
            false => in_canonical_order(variants, &[], Variant::ALL),
        };
        let peers = match every_column {
            true => peers::PEERS.to_vec(),
            false => in_canonical_order(peers, &[], &peers::PEERS),
        };
        Ok(Self {
            workloads: in_canonical_order(workloads, PoolWorkload::DEFAULT, PoolWorkload::ALL),
            variants,
            peers,
        })
    }
}

fn unknown_term(term: &str) -> String {
    let workloads: Vec<&str> = PoolWorkload::ALL.iter().map(|w| w.name()).collect();
    let variants: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
    let peers: Vec<&str> = peers::PEERS.iter().map(|m| m.name()).collect();
    format!(
        "unknown --pool workload, variant or peer `{term}`\n  workloads: {}\n  variants: {}\n  \
         peers: {}",
        workloads.join(", "),
        variants.join(", "),
        peers.join(", ")
    )
}

/// A column of the report: a variant measured in this process, or a peer malloc measured in
/// a process of its own.
#[derive(Debug, Clone)]
pub enum Column {
    /// A variant.
    Variant(Variant),
    /// A peer with its library.
    Peer(Library),
    /// A peer whose library is missing, and why.
    Missing(CMalloc, String),
}

impl Column {
    /// The column's name in results.
    pub fn name(&self) -> String {
        match self {
            Column::Variant(variant) => variant.name().to_string(),
            Column::Peer(library) => peers::column_name(library.malloc),
            Column::Missing(malloc, _) => peers::column_name(*malloc),
        }
    }
}

/// One trial of a task in one column, with the trial's seed: a value per output, `None`
/// where the output does not apply to the column (a hit rate without a pool).
pub type RunFn = dyn Fn(&Column, u64) -> Result<Vec<Option<f64>>, String>;

/// A unit of work run under every variant.
pub struct Task {
    /// The workload it belongs to.
    pub workload: PoolWorkload,
    /// The report's case; also names the task's seeds.
    pub case: String,
    /// What each run reports, in order.
    pub outputs: Vec<MetricSpec>,
    /// Whether every trial gives the same values (instruction counts): then one is run.
    pub deterministic: bool,
    /// One trial.
    pub run: Box<RunFn>,
}

/// Runs `selection`.
pub fn run(config: &Config, selection: &PoolSelection, progress: &dyn Progress) -> Results {
    let tasks: Vec<Task> = selection
        .workloads
        .iter()
        .flat_map(|workload| match workload {
            PoolWorkload::Sizes => sizes::tasks(config),
            PoolWorkload::VariableShape => patterns::tasks(config, Pattern::VariableShape),
            PoolWorkload::BudgetPressure => patterns::tasks(config, Pattern::BudgetPressure),
            PoolWorkload::Instructions => instructions::tasks(config),
        })
        .collect();
    let lineup = peers::lineup(&selection.peers);
    let columns: Vec<Column> = selection
        .variants
        .iter()
        .map(|&v| Column::Variant(v))
        .chain(lineup.present.iter().cloned().map(Column::Peer))
        .chain(
            lineup
                .missing
                .iter()
                .map(|(m, why)| Column::Missing(*m, why.clone())),
        )
        .collect();
    let trials: usize = tasks
        .iter()
        .map(|task| if task.deterministic { 1 } else { config.trials })
        .sum();
    progress.add_steps((trials * columns.len()) as u64);
    let cells = tasks
        .iter()
        .flat_map(|task| run_task(task, &columns, config, progress))
        .collect();
    let mut environment = Environment::detect(config, &[]);
    let peer_versions = lineup.versions().into_iter().filter_map(|(name, version)| {
        let malloc = CMalloc::from_name(&name)?;
        Some((
            peers::column_name(malloc),
            format!("{}: {version}", peers::column_name(malloc)),
        ))
    });
    environment.versions = selection
        .variants
        .iter()
        .map(|v| (v.name().to_string(), format!("{v}: {}", v.description())))
        .chain(peer_versions)
        .collect();
    Results { environment, cells }
}

/// What one column gave in one task: the values of every trial, or why it has none.
type History = Result<Vec<Vec<Option<f64>>>, String>;

/// Runs the trials interleaved and summarizes each output.
fn run_task(
    task: &Task,
    columns: &[Column],
    config: &Config,
    progress: &dyn Progress,
) -> Vec<Cell> {
    let label = format!("{}/{}", task.workload.name(), task.case);
    let mut histories: Vec<History> = columns.iter().map(|_| Ok(Vec::new())).collect();
    let trials = if task.deterministic { 1 } else { config.trials };
    for trial in 0..trials {
        let seed = derive_seed(config.seed, &label, trial);
        for k in 0..columns.len() {
            let index = (trial + k) % columns.len();
            progress.set_message(format!("{label} · {}", columns[index].name()));
            if let Ok(values) = &mut histories[index] {
                match (task.run)(&columns[index], seed) {
                    Ok(trial_values) => values.push(trial_values),
                    Err(why) => histories[index] = Err(why),
                }
            }
            progress.step_done();
        }
    }
    columns
        .iter()
        .zip(&histories)
        .flat_map(|(column, history)| cells_of(task, &column.name(), history))
        .collect()
}

/// The cells of one column in one task: a summary per output that applies to it, or the
/// failure everywhere.
fn cells_of(task: &Task, column: &str, history: &History) -> Vec<Cell> {
    task.outputs
        .iter()
        .enumerate()
        .filter_map(|(index, metric)| {
            let outcome = match history {
                Ok(trials) => {
                    let values: Vec<f64> = trials.iter().filter_map(|v| v[index]).collect();
                    if values.is_empty() && !trials.is_empty() {
                        return None; // the output does not apply to this column
                    }
                    summarize(values.into_iter())
                }
                Err(why) => Outcome::Failed(why.clone()),
            };
            Some(Cell::of(
                task.workload.name(),
                &task.case,
                column,
                metric,
                outcome,
            ))
        })
        .collect()
}

/// The notes of a run's failures, one line per variant, case and reason.
pub fn failure_notes(results: &Results) -> Vec<String> {
    let mut notes: Vec<String> = Vec::new();
    for cell in &results.cells {
        if let Outcome::Failed(why) = &cell.outcome {
            let note = format!("{} · {}: {why}", cell.allocator, cell.case);
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
    }
    notes
}

#[cfg(test)]
mod tests;
