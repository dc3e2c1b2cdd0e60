//! Thread workloads at 2, 4 and 8 threads (`scaling.c`): a larson-like server of short-lived
//! threads, producer/consumer pairs, fan-out and fan-in, and thread churn. Throughput and the
//! process's peak RSS per malloc.
//!
//! On a machine with fewer cores than threads the threads are oversubscribed: the figures
//! then say what contention costs when a server has more runnable threads than CPUs (a lock
//! holder descheduled, cache lines moving between the threads that share a core's time), not
//! how the malloc would scale on as many cores. Nothing is rerun for another process's load
//! (unlike the two-thread workload): every malloc's trials interleave, so a busy moment costs
//! one trial of each in turn.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::process;
use super::{MallocWorkload, Output, Task};
use heapworks_bench::workloads::{Better, Config, MetricSpec};

const THROUGHPUT: MetricSpec = MetricSpec::primary("throughput", "Mops/s", Better::Higher);
const PEAK_RSS: MetricSpec = MetricSpec::primary("peak RSS", "MiB", Better::Lower);

/// The workloads of `scaling.c`, with what each case is called.
const WORKLOADS: [(&str, &str); 5] = [
    ("larson", "larson-like server"),
    ("pairs", "producer/consumer pairs"),
    ("fanout", "fan-out, 1 producer"),
    ("fanin", "fan-in, 1 consumer"),
    ("churn", "thread churn"),
];

/// Thread counts of every workload.
pub const THREADS: [usize; 3] = [2, 4, 8];

/// One task per workload and thread count, each time-boxed to the run's trial duration.
pub fn tasks(config: &Config, scaling: &Path, scratch: &Path) -> Vec<Task> {
    WORKLOADS
        .iter()
        .flat_map(|&(mode, name)| {
            THREADS
                .iter()
                .map(move |&threads| (mode, format!("{name}, {threads} threads"), threads))
        })
        .map(|(mode, case, threads)| {
            task(config, scaling.to_path_buf(), scratch, mode, &case, threads)
        })
        .collect()
}

fn task(
    config: &Config,
    program: PathBuf,
    scratch: &Path,
    mode: &'static str,
    case: &str,
    threads: usize,
) -> Task {
    let micros = config.duration.as_micros().max(1).to_string();
    let (checked, logs) = (program.clone(), process::logs_dir(scratch));
    Task {
        workload: MallocWorkload::Scaling,
        label: case.into(),
        outputs: vec![Output::new(case, THROUGHPUT), Output::new(case, PEAK_RSS)],
        deterministic: false,
        check: Some(Box::new(move |library| {
            let mut command = Command::new(&checked);
            command.args([mode, "2", "1000", "1"]);
            process::run_bound(&mut command, library, &logs).map(drop)
        })),
        run: Box::new(move |library, seed| {
            let mut command = Command::new(&program);
            command.args([mode, &threads.to_string(), &micros, &seed.to_string()]);
            let run = parse(&process::run(library.apply(&mut command))?.stdout)?;
            Ok(vec![run.throughput, run.peak_rss_mib])
        }),
    }
}

/// One run of `scaling.c`.
#[derive(Debug, Clone, PartialEq)]
pub struct ScalingRun {
    /// malloc and free calls per second, in millions.
    pub throughput: f64,
    /// The process's peak resident set, MiB.
    pub peak_rss_mib: f64,
}

/// Reads `scaling.c`'s output: `ops`, `ns` and `maxrss_kib` lines.
pub fn parse(stdout: &str) -> Result<ScalingRun, String> {
    let field = |key| process::field(stdout, key);
    match (field("ops"), field("ns"), field("maxrss_kib")) {
        (Some(ops), Some(ns), Some(kib)) if ns > 0.0 && ops > 0.0 => Ok(ScalingRun {
            throughput: ops / ns * 1e3,
            peak_rss_mib: kib / 1024.0,
        }),
        _ => Err(format!("unexpected output: {}", stdout.trim())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_gives_throughput_and_peak_rss() {
        let run = parse("ops 3000000\nns 200000000\nmaxrss_kib 5120\n").unwrap();
        assert_eq!(run.throughput, 15.0);
        assert_eq!(run.peak_rss_mib, 5.0);
    }

    #[test]
    fn a_run_without_calls_or_time_is_an_error() {
        for stdout in [
            "ops 0\nns 5\nmaxrss_kib 1\n",
            "ops 5\nns 0\nmaxrss_kib 1\n",
            "ops 5\n",
        ] {
            assert!(parse(stdout).is_err(), "{stdout}");
        }
    }

    #[test]
    fn every_workload_runs_at_every_thread_count() {
        let config = Config::at_scale(heapworks_bench::workloads::Scale::Tiny, 1);
        let tasks = tasks(&config, Path::new("scaling"), Path::new("/tmp"));
        assert_eq!(tasks.len(), WORKLOADS.len() * THREADS.len());
        assert_eq!(tasks[0].label, "larson-like server, 2 threads");
        assert_eq!(tasks[14].label, "thread churn, 8 threads");
    }
}
