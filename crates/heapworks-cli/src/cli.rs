//! The command line: `heapworks bench`, `heapworks report`, `heapworks trace` and
//! `heapworks replay` (the last two in [`crate::trace_commands`]).

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::catalog;
use crate::contenders::{AllocatorId, FrontContender, IndexContender};
use crate::gas::{self, GasArgs};
use crate::gate;
use crate::instructions;
use crate::malloc_bench::libraries::{self, CMalloc};
use crate::malloc_bench::{self, MallocSelection, MallocWorkload};
use crate::options::{parse_duration, parse_tolerance, parse_trials};
use crate::pool_bench::{self, PoolSelection};
use crate::progress::progress_bar;
use crate::replay;
use crate::report::{self, summary, table, Outputs};
use crate::report_dir::default_report_dir;
use crate::results::Results;
use crate::runner::{self, Selection};
use crate::study;
use crate::torture_command::{torture_command, TortureArgs};
use crate::trace_commands::{self, ReplayArgs, TraceArgs};
use crate::workloads::{Config, Scale, WorkloadId};
use heapworks_bench::registry::Registry;

/// `heapworks --version`: the crate's version and the git revision it was built from.
pub fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        format!(
            "{} (revision {})",
            env!("CARGO_PKG_VERSION"),
            heapworks_bench::REVISION
        )
    })
}

#[derive(Debug, Parser)]
#[command(
    name = "heapworks",
    version = version(),
    about = "heapworks and its peers, side by side"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the benchmark suite and print the table (and write JSON, CSV, HTML).
    Bench(BenchArgs),
    /// Re-render the table and the HTML report from a results file.
    Report(ReportArgs),
    /// List the workloads and allocators that `--filter` accepts.
    List,
    /// Capture the allocation trace of a command: `heapworks trace -o FILE -- CMD ARGS...`.
    Trace(TraceArgs),
    /// Replay traces on the allocators and report as `bench` does.
    Replay(ReplayArgs),
    /// The malloc torture test: contract, threads, fork, exhaustion, seed 004's patterns and
    /// misuse under every C malloc, and the arenas in-process; a scorecard per allocator.
    Torture(TortureArgs),
    /// Gas per allocator call on wasm32 under Gear's price list: runs `heapworks-gas ARGS...`
    /// and draws its HTML report (`--render RESULTS.json`: the report of an earlier run).
    Gas(GasArgs),
    /// Internal: one fixed operation sequence, run under valgrind by `bench --instructions`.
    #[command(hide = true, name = "instructions-probe")]
    InstructionsProbe(ProbeCommandLine),
    /// Internal: one trace replay, run under valgrind by `replay --instructions`.
    #[command(hide = true, name = "replay-probe")]
    ReplayProbe(ProbeCommandLine),
    /// Internal: one measurement of `bench --pool` in a process of its own (a preloaded malloc,
    /// a fresh start, or under callgrind).
    #[command(hide = true, name = "pool-probe")]
    PoolProbe(ProbeCommandLine),
}

/// The arguments of a hidden probe command, read by the engine (which writes them).
#[derive(Debug, Args)]
struct ProbeCommandLine {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

#[derive(Debug, Args)]
struct BenchArgs {
    /// A tiny run that finishes in seconds (smoke test).
    #[arg(long, conflicts_with = "full")]
    quick: bool,
    /// The publication-grade run: every size, 7 trials of 200 ms.
    #[arg(long)]
    full: bool,
    /// Workloads and/or allocators to run, comma separated (see `heapworks list`).
    #[arg(long, value_name = "NAMES")]
    filter: Vec<String>,
    /// Seed of every random sequence.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Trials per case and allocator, at most 1000 (default 3; 1 with --quick; 7 with --full).
    #[arg(long, value_parser = parse_trials)]
    trials: Option<usize>,
    /// Timed length of a time-boxed trial, e.g. `80ms`, `0.2s` (a bare number is ms; at most
    /// 60 s; default 80 ms, 5 ms with --quick, 200 ms with --full).
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// Only the instruction counts under valgrind (same as `--filter instructions`, or
    /// `--filter malloc_instructions` with --malloc).
    #[arg(long)]
    instructions: bool,
    /// heapworks-malloc against glibc, mimalloc, jemalloc and tcmalloc, each LD_PRELOADed into
    /// the same programs: instructions per call, free(malloc(n)), 2 threads, real programs
    /// and the trace corpus (`--filter` takes the malloc_* workloads and these names).
    #[arg(long, conflicts_with = "gate")]
    malloc: bool,
    /// With --malloc: the library to preload for a malloc instead of the default one, e.g.
    /// `jemalloc=/opt/jemalloc/lib/libjemalloc.so` (repeatable).
    #[arg(long, value_name = "NAME=PATH", requires = "malloc", value_parser = libraries::parse_override)]
    malloc_lib: Vec<(CMalloc, PathBuf)>,
    /// heapworks-pool against fresh allocations, inline and in shared memory, and against
    /// glibc, heapworks-malloc, mimalloc and jemalloc preloaded: get-fill-drop from 4 B to
    /// 100 MB, variable shapes, a budget under pressure (`--filter` takes the pool_*
    /// workloads, the variant names and the peers' malloc names).
    #[arg(long, conflicts_with_all = ["gate", "malloc", "instructions"])]
    pool: bool,
    /// The free-index study: heapworks on every free index (heapworks = the default bins,
    /// heapworks_splay, …) with dlmalloc and talc, on seed 003's insert-delete and
    /// realloc-coalesce at N = 5k … 1M, the trace corpus, heap efficiency, random actions and
    /// (not with --quick) instructions per call; --quick: N = 500 … 2000, seconds. `--filter`
    /// still picks workloads or allocators.
    #[arg(long, conflicts_with_all = ["gate", "malloc", "pool"])]
    indexes: bool,
    #[command(flatten)]
    output: OutputArgs,
    /// Fail if heapworks' instruction counts grew past `--tolerance` against this results file
    /// (implies --instructions).
    #[arg(long, value_name = "BASELINE.json")]
    gate: Option<PathBuf>,
    /// Allowed growth of an instruction count under --gate, in percent (0 to 1000).
    #[arg(long, value_name = "PERCENT", default_value_t = 1.0, requires = "gate", value_parser = parse_tolerance)]
    tolerance: f64,
    /// The trace corpus the `traces` workload replays (default: the workspace's `traces/`).
    #[arg(long, value_name = "DIR")]
    traces: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// A results file written by `heapworks bench --json` (or the report's results.json).
    results: PathBuf,
    /// Directory of the HTML report (default: $XDG_CACHE_HOME/heapworks/reports/report, else
    /// ~/.cache/heapworks/reports/report, else <temp dir>/heapworks/reports/report).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Parses the command line and runs it; the process's exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Bench(args) => bench(args),
        Command::Report(args) => rerender(&args),
        Command::List => {
            print!("{}", listing());
            Ok(())
        }
        Command::Trace(args) => trace_commands::trace(args),
        Command::Replay(args) => trace_commands::replay(args),
        Command::Torture(args) => torture_command(args),
        Command::Gas(args) => gas::gas(args),
        Command::InstructionsProbe(probe) => instructions::ProbeArgs::parse(&probe.args)
            .and_then(|args| instructions::probe(&args))
            .map_err(|e| e.to_string()),
        Command::ReplayProbe(probe) => {
            replay::ProbeArgs::parse(&probe.args).and_then(|args| replay::probe(&args))
        }
        Command::PoolProbe(probe) => pool_bench::probe::ProbeArgs::parse(&probe.args)
            .and_then(|args| pool_bench::probe::run(&args)),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Where a run writes its results: shared by `bench` and `replay`.
#[derive(Args, Debug)]
pub struct OutputArgs {
    /// Also write the results as a JSON array of records.
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Also write the results as CSV.
    #[arg(long, value_name = "PATH")]
    csv: Option<PathBuf>,
    /// Directory of the HTML report (default: $XDG_CACHE_HOME/heapworks/reports/<command>, else
    /// ~/.cache/heapworks/reports/<command>, else <temp dir>/heapworks/reports/<command>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Do not write the HTML report.
    #[arg(long)]
    no_html: bool,
}

impl OutputArgs {
    /// The files and directory these options ask for, the report of `command` going to its
    /// [`default_report_dir`] without `--out`.
    pub fn outputs(&self, command: &str) -> Outputs {
        let html_dir = self
            .out
            .clone()
            .unwrap_or_else(|| default_report_dir(command));
        Outputs {
            json: self.json.clone(),
            csv: self.csv.clone(),
            html_dir: (!self.no_html).then_some(html_dir),
        }
    }
}

fn bench(args: BenchArgs) -> Result<(), String> {
    if args.malloc {
        return bench_malloc(&args);
    }
    if args.pool {
        return bench_pool(&args);
    }
    let mut config = config_of(&args);
    let defaults = if args.indexes {
        config = study::configure(config);
        study::selection(&config)
    } else {
        Selection::everything()
    };
    let mut filter = args.filter.clone();
    let baseline = args.gate.as_deref().map(read_results).transpose()?;
    if args.instructions || baseline.is_some() {
        filter.push(WorkloadId::Instructions.name().to_string());
    }
    let selection = Selection::from_filter_or(&filter, &defaults).map_err(|e| e.to_string())?;
    let outputs = args.output.outputs("bench");
    outputs.check_writable().map_err(|e| e.to_string())?;
    if selection.wants_instructions() {
        instructions::check_valgrind().map_err(|e| e.to_string())?;
    }
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; timings are not meaningful (use `cargo run --release`)");
    }
    let mut results = run_selection(&config, &selection)?;
    publish(&mut results, &outputs)?;
    match baseline {
        Some(baseline) => apply_gate(&results, &baseline, args.tolerance),
        None => Ok(()),
    }
}

/// `bench --malloc`: the C mallocs preloaded into the same programs.
fn bench_malloc(args: &BenchArgs) -> Result<(), String> {
    let mut filter = args.filter.clone();
    if args.instructions {
        filter.push(MallocWorkload::Instructions.name().to_string());
    }
    let selection = MallocSelection::from_filter(&filter)?;
    let outputs = args.output.outputs("bench");
    outputs.check_writable().map_err(|e| e.to_string())?;
    let progress = progress_bar(0);
    let results = malloc_bench::run(&config_of(args), &selection, &args.malloc_lib, &progress);
    progress.finish_and_clear();
    let mut results = results?;
    for note in malloc_bench::failure_notes(&results) {
        eprintln!("note: {note}");
    }
    publish(&mut results, &outputs)
}

/// `bench --pool`: heapworks-pool against fresh allocations.
fn bench_pool(args: &BenchArgs) -> Result<(), String> {
    let selection = PoolSelection::from_filter(&args.filter)?;
    let outputs = args.output.outputs("bench");
    outputs.check_writable().map_err(|e| e.to_string())?;
    let progress = progress_bar(0);
    let mut results = pool_bench::run(&config_of(args), &selection, &progress);
    progress.finish_and_clear();
    let notes = pool_bench::failure_notes(&results);
    for note in notes.iter().chain(&pool_bench::targets::notes(&results)) {
        eprintln!("note: {note}");
    }
    publish(&mut results, &outputs)
}

/// Describes the workloads of `results` ([`catalog::annotate`]), prints the table, writes the
/// files of `outputs`, and ends with the at-a-glance summary (coloured on a terminal).
pub fn publish(results: &mut Results, outputs: &Outputs) -> Result<(), String> {
    catalog::annotate(results);
    let results = &*results;
    print!("{}", table::render(results));
    outputs.write(results).map_err(|e| e.to_string())?;
    announce(outputs);
    print!(
        "{}",
        summary::render_text(results, std::io::stdout().is_terminal())
    );
    Ok(())
}

fn apply_gate(results: &Results, baseline: &Results, tolerance: f64) -> Result<(), String> {
    let verdict = gate::compare(results, baseline, tolerance)?;
    for change in &verdict.improvements {
        eprintln!("gate: improved {change} (refresh the baseline)");
    }
    if verdict.regressions.is_empty() {
        eprintln!(
            "gate: {} instruction counts within {tolerance}% of the baseline",
            verdict.compared
        );
        return Ok(());
    }
    let lines: Vec<String> = verdict
        .regressions
        .iter()
        .map(|c| format!("  {c}"))
        .collect();
    Err(format!(
        "instruction counts regressed past {tolerance}%:\n{}",
        lines.join("\n")
    ))
}

fn run_selection(config: &Config, selection: &Selection) -> Result<Results, String> {
    let progress = progress_bar(0);
    let results = runner::run(config, selection, &progress);
    progress.finish_and_clear();
    results
}

fn config_of(args: &BenchArgs) -> Config {
    let scale = match (args.quick, args.full) {
        (true, _) => Scale::Tiny,
        (_, true) => Scale::Full,
        _ => Scale::Default,
    };
    let mut config = Config::at_scale(scale, args.seed);
    config.trials = args.trials.unwrap_or(config.trials);
    config.duration = args.duration.unwrap_or(config.duration);
    config.traces = args.traces.clone().unwrap_or(config.traces);
    config
}

/// Tells on stderr which files a run wrote.
pub fn announce(outputs: &Outputs) {
    let written = outputs.json.iter().chain(&outputs.csv);
    for path in written {
        eprintln!("wrote {}", path.display());
    }
    if let Some(dir) = &outputs.html_dir {
        eprintln!("wrote {}", dir.join("index.html").display());
    }
}

fn rerender(args: &ReportArgs) -> Result<(), String> {
    let mut results = read_results(&args.results)?;
    let outputs = Outputs {
        html_dir: Some(
            args.out
                .clone()
                .unwrap_or_else(|| default_report_dir("report")),
        ),
        ..Outputs::default()
    };
    outputs.check_writable().map_err(|e| e.to_string())?;
    publish(&mut results, &outputs)
}

/// Largest results file `report` and `--gate` read (128 MiB, about 450 000 records).
pub const MAX_RESULTS_BYTES: u64 = 1 << 27;

fn read_results(path: &Path) -> Result<Results, String> {
    let text = report::read_text(path, MAX_RESULTS_BYTES, "heapworks results file")?;
    report::json::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn listing() -> String {
    format!(
        "workloads:\n{}allocators:\n{}heapworks on its other free indexes (bench --indexes, \
         or by name):\n{}heapworks with its small-object front (by name):\n{}bench --malloc \
         workloads:\n{}bench --malloc mallocs:\n{}",
        WorkloadId::listing(18),
        AllocatorId::listing(18),
        IndexContender::listing(20),
        FrontContender::listing(20),
        MallocWorkload::listing(19),
        CMalloc::listing(19)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
