//! `heapworks trace` (capture a program's allocation trace under the `heapworks-capture` shim)
//! and `heapworks replay` (replay traces on the contenders, report as `heapworks bench` does).
//!
//! `replay` reads and validates every trace before it replays any, so a truncated or corrupt
//! file, or a request no allocator could be asked for (a size past `isize::MAX`), stops the
//! run at once with its path and byte offset, line or request. Each trace replays `--trials`
//! times on each allocator, interleaved as `bench` does (each trial replays on every allocator
//! in turn), each time in a fresh heap; cells are medians with their spread. Out-of-memory and
//! `--check` failures fail their cells and the run carries on (a `--check` failure still ends
//! with a non-zero exit).

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;
use heapworks_trace::capture::{self, CaptureOptions, CaptureSummary};
use heapworks_trace::replay::{validate, OpRange, ReplayOptions, ReplayReport};
use heapworks_trace::Trace;

use crate::cli::{publish, OutputArgs};
use crate::contenders::AllocatorId;
use crate::instructions::{self, ProbeJob};
use crate::options::{parse_max_ops, parse_size, parse_trials};
use crate::progress::{progress_bar, Bar};
use crate::region::Region;
use crate::replay::{self, ReplayFailure, ReplaySpec};
use crate::results::{Cell, Environment, Results, REPLAY_SCALE};
use crate::workloads::{Config, Scale, WorkloadId};

/// Arguments of `heapworks trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Where to write the trace (`.script`, `.txt`, `.rep`: text; anything else: binary).
    /// Other processes the command starts go beside it as `<stem>.<n>-<program>.<ext>`.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// Keep only the processes of this executable (e.g. `cc1` of a `gcc` run).
    #[arg(long, value_name = "NAME")]
    process: Option<String>,
    /// Keep only the first N requests of each process (at most 16777216).
    #[arg(long, value_name = "N", value_parser = parse_max_ops)]
    max_ops: Option<usize>,
    /// The command to trace, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<OsString>,
}

/// `heapworks trace`: runs the command under the shim and prints what was written.
pub fn trace(args: TraceArgs) -> Result<(), String> {
    let options = CaptureOptions {
        max_ops: args.max_ops,
        process: args.process.clone(),
        ..CaptureOptions::default()
    };
    let (program, program_args) = args.command.split_first().ok_or("no command to trace")?;
    let summary =
        capture::run(program, program_args, &args.output, &options).map_err(|e| e.to_string())?;
    eprint!("{}", capture_summary(&summary));
    if summary.traces.is_empty() {
        return Err("the command made no allocation request: no trace written".to_string());
    }
    Ok(())
}

/// What a capture did, one line for the command and one per trace written.
fn capture_summary(summary: &CaptureSummary) -> String {
    let threads: u64 = summary.traces.iter().map(|t| t.stats.threads).sum();
    let ops: u64 = summary.traces.iter().map(|t| t.stats.ops).sum();
    let mut text = format!(
        "{} in {:.3} s: {ops} requests, {threads} threads, {} processes traced\n",
        summary.status,
        summary.elapsed.as_secs_f64(),
        summary.traces.len()
    );
    for written in &summary.traces {
        let cut = match written.cut_ops {
            0 => String::new(),
            cut => format!(" ({cut} cut)"),
        };
        text.push_str(&format!(
            "wrote {}: pid {} {}: {} requests{cut}, {} threads, peak live {} B\n",
            written.path.display(),
            written.pid,
            written.args.join(" "),
            written.stats.ops,
            written.stats.threads,
            written.stats.peak_live_bytes
        ));
    }
    text
}

/// Trials per trace and allocator of `heapworks replay` without `--trials` (as `bench`).
pub const DEFAULT_REPLAY_TRIALS: usize = 3;

/// Arguments of `heapworks replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Trace files (binary `.hwt` or text scripts).
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    /// Allocators, comma separated (default: every one; see `heapworks list`).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    alloc: Vec<String>,
    /// Time requests START..END (0-based, END excluded) of each trace; repeatable, no
    /// overlaps. Without it the whole trace is timed.
    #[arg(short = 'r', num_args = 2, value_names = ["START", "END"])]
    range: Vec<usize>,
    /// Verify every block: alignment, inside the heap, no overlap, contents kept; freeing an
    /// id that is not live is a trace error (otherwise it is `free(NULL)`).
    #[arg(long)]
    check: bool,
    /// Also count instructions per call under valgrind (callgrind).
    #[arg(long)]
    instructions: bool,
    /// Bytes of heap each arena gets, e.g. `64M`, `1G`, at most the machine's memory (default:
    /// 4 × the trace's peak live bytes, at least 8 MiB and at most 1 GiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    heap: Option<usize>,
    /// Timed replays per trace and allocator, at most 1000 (default 3), interleaved: each
    /// trial replays on every allocator in turn; cells are medians with their spread.
    #[arg(long, value_parser = parse_trials, default_value_t = DEFAULT_REPLAY_TRIALS)]
    trials: usize,
    #[command(flatten)]
    output: OutputArgs,
}

/// `heapworks replay`: replays every trace on every allocator and reports.
pub fn replay(args: ReplayArgs) -> Result<(), String> {
    let allocators = parse_allocators(&args.alloc)?;
    let ranges: Vec<OpRange> = args
        .range
        .chunks(2)
        .map(|pair| OpRange {
            start: pair[0],
            end: Some(pair[1]),
        })
        .collect();
    let outputs = args.output.outputs("replay");
    outputs.check_writable().map_err(|e| e.to_string())?;
    if args.instructions {
        instructions::check_valgrind().map_err(|e| e.to_string())?;
    }
    let traces = read_traces(&args.traces)?;
    let options = ReplayOptions {
        ranges: &ranges,
        check: args.check,
        ..ReplayOptions::default()
    };
    for (path, trace) in &traces {
        validate(trace, &options).map_err(|e| format!("cannot replay {}: {e}", path.display()))?;
    }
    let progress = progress_bar((traces.len() * allocators.len() * args.trials) as u64);
    let run = Run {
        ranges: &ranges,
        check: args.check,
        heap: args.heap,
        trials: args.trials,
        allocators: &allocators,
        progress: &progress,
    };
    let replayed = run.replay_all(&traces);
    let counted = match (&replayed, args.instructions) {
        (Ok(_), true) => run.count_instructions(&traces),
        _ => Ok(Vec::new()),
    };
    progress.finish_and_clear();
    let (mut cells, check_failures) = replayed?;
    cells.extend(counted?);
    let mut results = Results {
        environment: replay_environment(&allocators, args.trials),
        cells,
    };
    publish(&mut results, &outputs)?;
    match check_failures.as_slice() {
        [] => Ok(()),
        failures => Err(format!("--check failed:\n  {}", failures.join("\n  "))),
    }
}

/// Every trace, read before anything runs.
fn read_traces(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Trace)>, String> {
    paths
        .iter()
        .map(|path| {
            heapworks_trace::read_trace(path)
                .map(|trace| (path.clone(), trace))
                .map_err(|e| format!("cannot replay {e}"))
        })
        .collect()
}

/// `--alloc` names, or every allocator when none is given.
fn parse_allocators(names: &[String]) -> Result<Vec<AllocatorId>, String> {
    if names.is_empty() {
        return Ok(AllocatorId::ALL.to_vec());
    }
    names
        .iter()
        .map(|name| {
            AllocatorId::from_name(name.trim()).ok_or_else(|| {
                let known: Vec<&str> = AllocatorId::nameable().iter().map(|a| a.name()).collect();
                format!("unknown allocator `{name}` (known: {})", known.join(", "))
            })
        })
        .collect()
}

/// The environment block of a replay: `trials` per cell, no time box.
fn replay_environment(allocators: &[AllocatorId], trials: usize) -> Environment {
    let config = Config {
        trials,
        duration: std::time::Duration::ZERO,
        ..Config::at_scale(Scale::Default, 0)
    };
    Environment {
        scale: REPLAY_SCALE.to_string(),
        ..Environment::detect(&config, allocators)
    }
}

/// One `heapworks replay` run.
struct Run<'a> {
    ranges: &'a [OpRange],
    check: bool,
    heap: Option<usize>,
    trials: usize,
    allocators: &'a [AllocatorId],
    progress: &'a Bar,
}

/// Cells, and the `--check` failures to end the run with.
type Replayed = (Vec<Cell>, Vec<String>);

impl Run<'_> {
    fn spec<'t>(&'t self, trace: &'t Trace) -> ReplaySpec<'t> {
        ReplaySpec {
            trace,
            ranges: self.ranges,
            check: self.check,
            heap_len: self.heap.unwrap_or_else(|| replay::default_heap_len(trace)),
        }
    }

    fn replay_all(&self, traces: &[(PathBuf, Trace)]) -> Result<Replayed, String> {
        let mut region: Option<Region> = None;
        let mut cells = Vec::new();
        let mut check_failures = Vec::new();
        for (path, trace) in traces {
            let spec = self.spec(trace);
            let region = match &mut region {
                Some(existing) => existing.ensure_len(spec.heap_len).map(|()| existing),
                None => Region::pretouched(spec.heap_len).map(|new| region.insert(new)),
            }
            .map_err(|e| e.to_string())?;
            let name = replay::trace_name(path);
            let outcomes = self.replay_trials(&name, region, &spec);
            for (&allocator, outcome) in self.allocators.iter().zip(&outcomes) {
                match outcome {
                    Err(failure) if failure.is_trace_fault() => {
                        return Err(format!("{}: {failure}", path.display()))
                    }
                    Err(failure) if failure.is_check_failure() => {
                        check_failures.push(format!("{name} on {allocator}: {failure}"));
                    }
                    _ => {}
                }
                cells.extend(replay::cells(&name, &spec, allocator, outcome));
            }
        }
        Ok((cells, check_failures))
    }

    /// Every trial of one trace, interleaved: each trial replays on every allocator in turn,
    /// in a fresh heap. An allocator that fails stops there (its failure is its outcome); a
    /// trace fault stops the trace at once.
    fn replay_trials(
        &self,
        name: &str,
        region: &mut Region,
        spec: &ReplaySpec<'_>,
    ) -> Vec<Result<Vec<ReplayReport>, ReplayFailure>> {
        let mut outcomes: Vec<Result<Vec<ReplayReport>, ReplayFailure>> =
            self.allocators.iter().map(|_| Ok(Vec::new())).collect();
        for _ in 0..self.trials {
            for (&allocator, outcome) in self.allocators.iter().zip(&mut outcomes) {
                self.progress.set_message(format!("{name} · {allocator}"));
                self.progress.inc(1);
                let Ok(reports) = outcome else { continue };
                match replay::replay_on(allocator, region, spec) {
                    Ok(report) => reports.push(report),
                    Err(failure) if failure.is_trace_fault() => return vec![Err(failure)],
                    Err(failure) => *outcome = Err(failure),
                }
            }
        }
        outcomes
    }

    fn count_instructions(&self, traces: &[(PathBuf, Trace)]) -> Result<Vec<Cell>, String> {
        let jobs: Vec<(String, AllocatorId, ProbeJob)> = traces
            .iter()
            .flat_map(|(path, trace)| {
                let heap_len = self.spec(trace).heap_len;
                let name = replay::trace_name(path);
                self.allocators.iter().map(move |&allocator| {
                    let job = ProbeJob {
                        label: format!("{name} · {allocator}"),
                        args: replay::ProbeArgs::command_line(path, allocator, heap_len),
                    };
                    (name.clone(), allocator, job)
                })
            })
            .collect();
        let probes: Vec<ProbeJob> = jobs.iter().map(|(_, _, job)| job.clone()).collect();
        let counted =
            instructions::count_jobs(&probes, self.progress).map_err(|e| e.to_string())?;
        Ok(jobs
            .into_iter()
            .zip(counted)
            .flat_map(|((name, allocator, _), counted)| {
                instructions::cells(WorkloadId::Traces.name(), &name, allocator, counted)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocator_names() {
        assert_eq!(
            parse_allocators(&["talc".into(), "system".into()]),
            Ok(vec![AllocatorId::Talc, AllocatorId::System])
        );
        assert_eq!(parse_allocators(&[]).unwrap(), AllocatorId::ALL);
        let error = parse_allocators(&["jemalloc".into()]).unwrap_err();
        assert!(
            error.contains("`jemalloc`") && error.contains("rlsf"),
            "{error}"
        );
    }
}
