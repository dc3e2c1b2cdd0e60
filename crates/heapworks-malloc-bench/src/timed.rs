//! The timed C workloads: `free(malloc(n))` in a loop for n = 50 B … 50 MB (seed 004's
//! table), malloc-large's pattern (20 blocks of 5 to 25 MiB live, each step replacing one and
//! writing a byte of each of its pages: time, page faults and system time per step), and two
//! threads, producer/consumer and mixed sizes (`threads.c`).
//!
//! A two-thread trial measures the allocator only while both threads have a CPU each: on a
//! machine with two, another process running meanwhile halves what a malloc that scales gets
//! and barely touches one that serializes, so a busy moment reorders the columns. `threads.c`
//! reports how long its threads waited for a CPU; a trial that waited more than
//! [`MAX_CPU_WAIT`] of the time is run again (at most [`THREADS_ATTEMPTS`] runs in all, the
//! least-waiting one kept), and the wait and the cache-line round trip between the two
//! threads (where the CPUs sat) are reported with every throughput, as secondary metrics.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::process;
use super::{CheckFn, MallocWorkload, Output, Task};
use heapworks_bench::workloads::{Better, Config, MetricSpec};

/// The block sizes of seed 004's table.
pub const SIZES: [u64; 7] = [50, 500, 5_000, 50_000, 500_000, 5_000_000, 50_000_000];

const PER_ITERATION: MetricSpec = MetricSpec::primary("free(malloc(n))", "ns", Better::Lower);
const THROUGHPUT: MetricSpec = MetricSpec::primary("throughput", "Mops/s", Better::Higher);
/// The share of the two threads' time spent ready to run but off a CPU.
pub const CPU_WAIT: MetricSpec = MetricSpec::secondary("CPU wait", "%", Better::Lower);
/// A cache line from one thread to the other and back, measured right after the run.
const ROUND_TRIP: MetricSpec = MetricSpec::secondary("cache-line round trip", "ns", Better::Lower);

/// The most a two-thread trial may wait for a CPU (a share of its threads' time) to count
/// as run on a machine to itself.
pub const MAX_CPU_WAIT: f64 = 0.05;
/// Runs of a two-thread trial at most, while it waits more than [`MAX_CPU_WAIT`].
pub const THREADS_ATTEMPTS: usize = 3;

/// `50 B`, `5 KB`, `50 MB`: decimal units, as seed 004 writes them.
pub fn size_label(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} B"),
        1_000..1_000_000 => format!("{} KB", bytes / 1_000),
        _ => format!("{} MB", bytes / 1_000_000),
    }
}

/// The check of a malloc in the driver: a short `driver sizes` run must call it
/// ([`process::run_bound`]).
pub fn driver_check(driver: &Path, scratch: &Path) -> Box<CheckFn> {
    let (driver, logs) = (driver.to_path_buf(), process::logs_dir(scratch));
    Box::new(move |library| {
        let mut command = Command::new(&driver);
        command.args(["sizes", "10"]);
        process::run_bound(&mut command, library, &logs).map(drop)
    })
}

/// The `free(malloc(n))` loop: one driver run per trial gives every size.
pub fn sizes_task(config: &Config, driver: &Path, scratch: &Path) -> Task {
    let iterations: u64 = config.pick(20_000, 200_000, 500_000);
    let check = driver_check(driver, scratch);
    let driver = driver.to_path_buf();
    Task {
        workload: MallocWorkload::Sizes,
        label: "free(malloc(n))".into(),
        outputs: SIZES
            .iter()
            .map(|&n| Output::new(&size_label(n), PER_ITERATION))
            .collect(),
        deterministic: false,
        check: Some(check),
        run: Box::new(move |library, _seed| {
            let mut command = Command::new(&driver);
            command.args(["sizes", &iterations.to_string()]);
            parse_sizes(&process::run(library.apply(&mut command))?.stdout)
        }),
    }
}

/// The driver's `<n> <ns>` lines, one per size of [`SIZES`] in order.
pub fn parse_sizes(stdout: &str) -> Result<Vec<f64>, String> {
    let values: Vec<(u64, f64)> = stdout
        .lines()
        .filter_map(|line| {
            let (n, ns) = line.split_once(' ')?;
            Some((n.parse().ok()?, ns.trim().parse().ok()?))
        })
        .collect();
    let sizes: Vec<u64> = values.iter().map(|(n, _)| *n).collect();
    if sizes != SIZES {
        return Err(format!("the driver printed sizes {sizes:?}"));
    }
    Ok(values.into_iter().map(|(_, ns)| ns).collect())
}

const LARGE_STEP: MetricSpec = MetricSpec::primary("step", "µs", Better::Lower);
const LARGE_FAULTS: MetricSpec = MetricSpec::primary("page faults", "per step", Better::Lower);
const LARGE_SYSTEM: MetricSpec = MetricSpec::primary("system time", "µs/step", Better::Lower);

/// malloc-large's pattern: `driver large STEPS` per trial.
pub fn large_task(config: &Config, driver: &Path, scratch: &Path) -> Task {
    let steps: u64 = config.pick(20, 200, 500);
    let check = driver_check(driver, scratch);
    let driver = driver.to_path_buf();
    let case = "5–25 MiB blocks, 20 live";
    Task {
        workload: MallocWorkload::Sizes,
        label: case.into(),
        outputs: vec![
            Output::new(case, LARGE_STEP),
            Output::new(case, LARGE_FAULTS),
            Output::new(case, LARGE_SYSTEM),
        ],
        deterministic: false,
        check: Some(check),
        run: Box::new(move |library, _seed| {
            let mut command = Command::new(&driver);
            command.args(["large", &steps.to_string()]);
            parse_large(&process::run(library.apply(&mut command))?.stdout)
        }),
    }
}

/// The driver's `ns`, `faults` and `system_ns` lines: µs per step, faults per step, system
/// µs per step.
pub fn parse_large(stdout: &str) -> Result<Vec<f64>, String> {
    let field = |key| process::field(stdout, key);
    match (field("ns"), field("faults"), field("system_ns")) {
        (Some(ns), Some(faults), Some(system)) if ns > 0.0 => {
            Ok(vec![ns / 1e3, faults, system / 1e3])
        }
        _ => Err(format!("unexpected output: {}", stdout.trim())),
    }
}

/// The two-thread workloads, each time-boxed to the run's trial duration.
pub fn threads_tasks(config: &Config, threads: &Path, scratch: &Path) -> Vec<Task> {
    [
        ("prodcons", "producer/consumer, 2 threads"),
        ("mixed", "mixed sizes, 2 threads"),
    ]
    .into_iter()
    .map(|(mode, case)| threads_task(config, threads.to_path_buf(), scratch, mode, case))
    .collect()
}

fn threads_task(
    config: &Config,
    threads: PathBuf,
    scratch: &Path,
    mode: &'static str,
    case: &str,
) -> Task {
    let micros = config.duration.as_micros().max(1).to_string();
    let (program, logs) = (threads.clone(), process::logs_dir(scratch));
    Task {
        workload: MallocWorkload::Threads,
        label: case.into(),
        outputs: vec![
            Output::new(case, THROUGHPUT),
            Output::new(case, CPU_WAIT),
            Output::new(case, ROUND_TRIP),
        ],
        deterministic: false,
        check: Some(Box::new(move |library| {
            let mut command = Command::new(&program);
            command.args([mode, "1000", "1"]);
            process::run_bound(&mut command, library, &logs).map(drop)
        })),
        run: Box::new(move |library, seed| {
            let mut kept: Option<ThreadsRun> = None;
            for _ in 0..THREADS_ATTEMPTS {
                let mut command = Command::new(&threads);
                command.args([mode, &micros, &seed.to_string()]);
                let run = parse_threads(&process::run(library.apply(&mut command))?.stdout)?;
                let had_the_machine = run.cpu_wait <= MAX_CPU_WAIT;
                if kept.as_ref().is_none_or(|k| run.cpu_wait < k.cpu_wait) {
                    kept = Some(run);
                }
                if had_the_machine {
                    break;
                }
            }
            let kept = kept.expect("at least one attempt");
            Ok(vec![
                kept.throughput,
                kept.cpu_wait * 100.0,
                kept.roundtrip_ns,
            ])
        }),
    }
}

/// One run of `threads.c`.
#[derive(Debug, Clone, PartialEq)]
pub struct ThreadsRun {
    /// malloc and free calls per second, in millions.
    pub throughput: f64,
    /// The share of the threads' time spent ready to run but off a CPU, 0 to 1 (0 where the
    /// kernel keeps no schedstat).
    pub cpu_wait: f64,
    /// Nanoseconds per cache-line round trip between two threads after the run.
    pub roundtrip_ns: f64,
}

/// Reads `threads.c`'s output: `ops`, `ns`, `wait_ns`, `run_ns` and `roundtrip_ns` lines.
pub fn parse_threads(stdout: &str) -> Result<ThreadsRun, String> {
    let field = |key| process::field(stdout, key);
    match (
        field("ops"),
        field("ns"),
        field("wait_ns"),
        field("run_ns"),
        field("roundtrip_ns"),
    ) {
        (Some(ops), Some(ns), Some(wait), Some(run), Some(roundtrip_ns)) if ns > 0.0 => {
            Ok(ThreadsRun {
                throughput: ops / ns * 1e3,
                cpu_wait: if wait + run > 0.0 {
                    wait / (wait + run)
                } else {
                    0.0
                },
                roundtrip_ns,
            })
        }
        _ => Err(format!("unexpected output: {}", stdout.trim())),
    }
}
