//! `heapworks bench --malloc`: heapworks-malloc against glibc, mimalloc, jemalloc and tcmalloc,
//! each `LD_PRELOAD`ed into the same programs, in one run. The C drivers live beside this code,
//! in `c/`; the engine it reports through (results, runner, callgrind driver) is
//! `heapworks-bench`, and the `heapworks` command only parses options and renders.
//!
//! - [`libraries`]: the columns and their shared libraries (heapworks-malloc built when
//!   needed; a missing peer is a `missing` column, not an error).
//! - [`process`]: the C workload programs of this crate's `c/`, compiled with
//!   `cc` into the target directory, and runs of any program: with the proof that the
//!   preloaded malloc is the one called, or with wall time and peak RSS.
//! - [`counts`]: instructions per call under callgrind.
//! - [`timed`]: `free(malloc(n))` for n = 50 B … 50 MB, and two threads.
//! - [`scaling`]: thread workloads at 2, 4 and 8 threads, throughput and peak RSS.
//! - [`real`] and [`inputs`]: python3, gcc, git, sort, make, perl and sqlite3 on generated
//!   inputs, and the trace corpus replayed through malloc; interposition and output checked.
//!
//! Every workload is a list of [`Task`]s. A task runs its check once per malloc (for every
//! task, [`process::run_bound`]: the dynamic linker must bind `malloc` to the preloaded
//! library), then its trials interleaved malloc by malloc (trial 1 of every malloc, then
//! trial 2, …, each trial starting one malloc further in the order, so that none always runs
//! first) with one seed per trial shared by all; each cell is the median of the trials. The
//! libraries are copied into the run's scratch directory when it starts and preloaded from
//! there, so a rebuild during the run (cargo's, into the same target directory) cannot
//! change what later trials load.
//! Results are the same cells as `bench`'s, so the table, JSON, CSV and HTML renderers print
//! them, with ratios to heapworks.

pub mod counts;
pub mod inputs;
pub mod libraries;
pub mod process;
pub mod real;
pub mod scaling;
pub mod timed;

use std::path::{Path, PathBuf};

use heapworks_bench::progress::Progress;

use heapworks_bench::results::{Cell, Environment, Outcome, Results};
use heapworks_bench::rng::derive_seed;
use heapworks_bench::runner::{filter_terms, in_canonical_order, summarize, unknown_term_message};
use heapworks_bench::workloads::{Config, MetricSpec};
use libraries::{CMalloc, Library, Lineup};
use process::Programs;

heapworks_bench::registry! {
    /// A workload of `bench --malloc`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum MallocWorkload {
        /// Instructions per call under callgrind.
        Instructions = (
            "malloc_instructions",
            "instructions per call under callgrind (deterministic), each malloc preloaded \
             into the same C driver: malloc and free of 64 B blocks with 1000 live, a \
             free(malloc(64)) ping-pong pair with its loop, realloc growing one block by \
             16 B a step"
        ),
        /// `free(malloc(n))` in a loop, n = 50 B … 50 MB.
        Sizes = (
            "malloc_sizes",
            "free(malloc(n)) in a loop, ns per iteration, n = 50 B … 50 MB (seed 004's \
             table; the blocks are not touched), and malloc-large's pattern: 20 blocks of \
             5–25 MiB live, each step freeing one and allocating another there with a byte \
             of every page written (time, minor page faults and system time per step, \
             from getrusage)"
        ),
        /// Two threads: producer/consumer and mixed sizes.
        Threads = (
            "malloc_threads",
            "2 threads, malloc and free calls per second: producer/consumer (one thread \
             allocates 8 B–4 KiB blocks and hands them over in batches, the other frees \
             them) and mixed sizes (each thread allocates and frees its own)"
        ),
        /// 2, 4 and 8 threads: a larson-like server, producers and consumers, thread churn.
        Scaling = (
            "malloc_scaling",
            "2, 4 and 8 threads (oversubscribed beyond the cores), malloc and free calls \
             per second and peak RSS: a larson-like server (lanes of short-lived threads, \
             each freeing what its predecessor allocated), producer/consumer pairs, one \
             producer feeding the rest, the rest feeding one consumer, and thread churn \
             (threads exit leaving blocks that later threads free)"
        ),
        /// Real programs: python3, gcc, git, sort, make, perl, sqlite3.
        Programs = (
            "malloc_programs",
            "real programs under LD_PRELOAD on generated inputs: wall time, and peak RSS \
             (wait4's ru_maxrss: the largest process of the run); every output checked \
             equal to glibc's"
        ),
        /// The trace corpus replayed through malloc.
        Traces = (
            "malloc_traces",
            "the trace corpus replayed through malloc by a C replayer (one thread, in the \
             trace's order, every page of every block touched once): time of the \
             requests and peak RSS; output checked as for the programs"
        ),
    }
}

/// What a `bench --malloc` run measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MallocSelection {
    /// Workloads, in report order.
    pub workloads: Vec<MallocWorkload>,
    /// Columns, in report order.
    pub columns: Vec<CMalloc>,
}

impl MallocSelection {
    /// Reads `--filter` terms, each a workload or a malloc; no workload term means every
    /// workload, no malloc term every malloc.
    pub fn from_filter(terms: &[String]) -> Result<Self, String> {
        let mut workloads = Vec::new();
        let mut columns = Vec::new();
        let names = filter_terms(terms).ok_or_else(|| unknown_term(""))?;
        for term in names {
            if let Some(workload) = MallocWorkload::from_name(term) {
                workloads.push(workload);
            } else if let Some(malloc) = CMalloc::from_name(term) {
                columns.push(malloc);
            } else {
                return Err(unknown_term(term));
            }
        }
        Ok(Self {
            workloads: in_canonical_order(workloads, MallocWorkload::ALL, MallocWorkload::ALL),
            columns: in_canonical_order(columns, CMalloc::ALL, CMalloc::ALL),
        })
    }
}

fn unknown_term(term: &str) -> String {
    let workloads: Vec<&str> = MallocWorkload::ALL.iter().map(|w| w.name()).collect();
    let mallocs: Vec<&str> = CMalloc::ALL.iter().map(|m| m.name()).collect();
    format!(
        "{}\n  workloads: {}\n  mallocs: {}",
        unknown_term_message(term, "--malloc workload or malloc"),
        workloads.join(", "),
        mallocs.join(", ")
    )
}

/// One value a task reports per run.
#[derive(Debug, Clone)]
pub struct Output {
    /// Case of the report.
    pub case: String,
    /// Metric of the report.
    pub metric: MetricSpec,
}

impl Output {
    /// The value of `metric` in `case`.
    pub fn new(case: &str, metric: MetricSpec) -> Self {
        Self {
            case: case.to_string(),
            metric,
        }
    }
}

/// One run of a task under one malloc, with the trial's seed: a value per output.
pub type RunFn = dyn Fn(&Library, u64) -> Result<Vec<f64>, String>;
/// The check of a malloc before the trials; an error keeps it out of the task.
pub type CheckFn = dyn Fn(&Library) -> Result<(), String>;

/// A unit of work run under every malloc.
pub struct Task {
    /// The workload it belongs to.
    pub workload: MallocWorkload,
    /// What the progress bar shows; also names the task's seeds.
    pub label: String,
    /// What each run reports, in order.
    pub outputs: Vec<Output>,
    /// Whether one run is exact (instruction counts): then it runs once, whatever the trials.
    pub deterministic: bool,
    /// Runs once per malloc before the trials.
    pub check: Option<Box<CheckFn>>,
    /// One trial.
    pub run: Box<RunFn>,
}

/// A scratch directory under the target directory, removed when dropped: compiled programs,
/// generated inputs, profiles and logs of one run (of `bench --malloc` or `torture`).
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// `<target>/<purpose>/run-<pid>`, emptied.
    pub fn create(purpose: &str) -> Result<Self, String> {
        let dir = libraries::target_dir()?
            .join(purpose)
            .join(format!("run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Self(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `selection` with the libraries found (and `overrides`); missing ones are reported as
/// `missing` (see [`failure_notes`]).
pub fn run(
    config: &Config,
    selection: &MallocSelection,
    overrides: &[(CMalloc, PathBuf)],
    progress: &dyn Progress,
) -> Result<Results, String> {
    let scratch = Scratch::create("heapworks-malloc-bench")?;
    let lineup = Lineup::find(&selection.columns, overrides).pinned(&scratch.0.join("libraries"));
    let programs = Programs::compile(&scratch.0)?;
    let tasks = plan(config, &selection.workloads, &programs, &scratch.0)?;
    progress.add_steps(steps(&tasks, &lineup, config.trials));
    let cells = tasks
        .iter()
        .flat_map(|task| run_task(task, &lineup, config, progress))
        .collect();
    Ok(Results {
        environment: Environment {
            versions: lineup.versions(),
            ..Environment::detect(config, &[])
        },
        cells,
    })
}

/// The tasks of `workloads`, in report order; an error when the trace corpus cannot be read.
fn plan(
    config: &Config,
    workloads: &[MallocWorkload],
    programs: &Programs,
    scratch: &Path,
) -> Result<Vec<Task>, String> {
    let mut tasks = Vec::new();
    for workload in workloads {
        match workload {
            MallocWorkload::Instructions => tasks.push(counts::task(&programs.driver, scratch)),
            MallocWorkload::Sizes => {
                tasks.push(timed::sizes_task(config, &programs.driver, scratch));
                tasks.push(timed::large_task(config, &programs.driver, scratch));
            }
            MallocWorkload::Threads => {
                tasks.extend(timed::threads_tasks(config, &programs.threads, scratch))
            }
            MallocWorkload::Scaling => {
                tasks.extend(scaling::tasks(config, &programs.scaling, scratch))
            }
            MallocWorkload::Programs => {
                tasks.extend(real::program_tasks(config, &programs.measure, scratch))
            }
            MallocWorkload::Traces => tasks.extend(real::trace_tasks(config, programs, scratch)?),
        }
    }
    Ok(tasks)
}

/// Checks and trials of the whole run, for the progress bar.
fn steps(tasks: &[Task], lineup: &Lineup, trials: usize) -> u64 {
    let per_malloc: usize = tasks
        .iter()
        .map(|t| usize::from(t.check.is_some()) + if t.deterministic { 1 } else { trials })
        .sum();
    (per_malloc * lineup.present.len()) as u64
}

/// What one malloc gave in one task: the values of every trial, or why it has none.
type History = Result<Vec<Vec<f64>>, String>;

/// Checks every malloc, runs the trials interleaved, and summarizes each output.
fn run_task(task: &Task, lineup: &Lineup, config: &Config, progress: &dyn Progress) -> Vec<Cell> {
    let mut histories: Vec<History> = lineup
        .present
        .iter()
        .map(|library| {
            let checked = task.check.as_ref().map_or(Ok(()), |check| {
                progress.set_message(format!("{} · {} · check", task.label, library.malloc));
                let checked = check(library);
                progress.step_done();
                checked
            });
            checked.map(|()| Vec::new())
        })
        .collect();
    let trials = if task.deterministic { 1 } else { config.trials };
    let count = lineup.present.len();
    for trial in 0..trials {
        let seed = derive_seed(config.seed, &task.label, trial);
        for index in trial_order(count, trial) {
            let (library, history) = (&lineup.present[index], &mut histories[index]);
            progress.set_message(format!("{} · {}", task.label, library.malloc));
            if let Ok(values) = history {
                match (task.run)(library, seed) {
                    Ok(trial_values) => values.push(trial_values),
                    Err(why) => *history = Err(why),
                }
            }
            progress.step_done();
        }
    }
    let present = lineup.present.iter().map(|l| l.malloc).zip(histories);
    let missing = lineup.missing.iter().map(|(m, why)| (*m, Err(why.clone())));
    present
        .chain(missing)
        .flat_map(|(malloc, history)| cells_of(task, malloc, &history))
        .collect()
}

/// The mallocs' order in trial `trial` (indices into `count` columns): each trial starts one
/// column further, so that no malloc always runs first after another task, or right after the
/// same neighbour.
fn trial_order(count: usize, trial: usize) -> impl Iterator<Item = usize> {
    (0..count).map(move |k| (trial + k) % count)
}

/// The cells of one malloc in one task: a summary per output, or the failure everywhere.
fn cells_of(task: &Task, malloc: CMalloc, history: &History) -> Vec<Cell> {
    task.outputs
        .iter()
        .enumerate()
        .map(|(index, output)| {
            let outcome = match history {
                Ok(trials) => summarize(trials.iter().filter_map(|v| v.get(index).copied())),
                Err(why) => Outcome::Failed(why.clone()),
            };
            Cell::of(
                task.workload.name(),
                &output.case,
                malloc.name(),
                &output.metric,
                outcome,
            )
        })
        .collect()
}

/// The notes of a run: its failures, one line per malloc and reason with the cases it hit
/// (what the table's short `missing` and `failed` cells stand for), then a line per
/// two-thread case whose threads waited for a CPU more than [`timed::MAX_CPU_WAIT`] of the
/// time in some malloc's median trial (another process had the machine even after the
/// retries: those throughputs are not the allocators' alone).
pub fn failure_notes(results: &Results) -> Vec<String> {
    let mut notes = failures(results);
    notes.extend(busy_notes(results));
    notes
}

/// The two-thread cases that ran on a busy machine, with the mallocs and their waits.
fn busy_notes(results: &Results) -> Vec<String> {
    let mut cases: Vec<(&str, Vec<String>)> = Vec::new();
    for cell in &results.cells {
        let Some(wait) = cell.median() else {
            continue;
        };
        if cell.workload != MallocWorkload::Threads.name()
            || cell.metric != timed::CPU_WAIT.name
            || wait <= timed::MAX_CPU_WAIT * 100.0
        {
            continue;
        }
        let waited = format!("{} {wait:.0} %", cell.allocator);
        match cases.iter_mut().find(|(case, _)| *case == cell.case) {
            Some((_, mallocs)) => mallocs.push(waited),
            None => cases.push((&cell.case, vec![waited])),
        }
    }
    cases
        .into_iter()
        .map(|(case, mallocs)| {
            format!(
                "{case}: the threads waited for a CPU (other processes were running) in the \
                 median trial of {}; those throughputs are not the allocators' alone",
                mallocs.join(", ")
            )
        })
        .collect()
}

fn failures(results: &Results) -> Vec<String> {
    let mut failures: Vec<(&str, &str, Vec<&str>)> = Vec::new();
    for cell in &results.cells {
        let Outcome::Failed(why) = &cell.outcome else {
            continue;
        };
        match failures
            .iter_mut()
            .find(|(malloc, reason, _)| *malloc == cell.allocator && *reason == why)
        {
            Some((_, _, cases)) if cases.contains(&cell.case.as_str()) => {}
            Some((_, _, cases)) => cases.push(&cell.case),
            None => failures.push((&cell.allocator, why, vec![&cell.case])),
        }
    }
    failures
        .into_iter()
        .map(|(malloc, why, cases)| match cases.as_slice() {
            [one] => format!("{malloc}: {why} ({one})"),
            [first, rest @ ..] => format!("{malloc}: {why} ({first} and {} more)", rest.len()),
            [] => unreachable!("a failure has a case"),
        })
        .collect()
}

#[cfg(test)]
mod tests;
