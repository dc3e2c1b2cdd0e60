//! `heapworks torture`'s command: its options, the scorecards printed and the files written;
//! the runs are the engine's ([`crate::torture`], the crate `heapworks-torture`).
//!
//! Invariants: the command exits non-zero exactly when heapworks failed a correctness check
//! ([`scorecard::heapworks_failures`]); the misuse section is a score, never a failure.

use std::path::PathBuf;

use clap::Args;

use crate::catalog;
use crate::cli::{announce, OutputArgs};
use crate::malloc_bench::libraries::{self, CMalloc};
use crate::progress::progress_bar;
use crate::report::table;
use crate::results::{Cell, Environment, Results};
use crate::torture::cases::{Mode, Section};
use crate::torture::{self, scorecard, Selection};

/// Most repetitions `--runs` accepts.
const MAX_RUNS: usize = 10_000;

/// `heapworks torture`'s options.
#[derive(Debug, Args)]
pub struct TortureArgs {
    /// CI's run: a few repetitions, about a minute for all five mallocs.
    #[arg(long, conflicts_with = "long")]
    quick: bool,
    /// The release run (about an hour): 100 runs of each fork scenario, long thread runs.
    #[arg(long)]
    long: bool,
    /// Sections (contract, threads, fork, exhaustion, patterns, misuse, arenas), mallocs
    /// (heapworks, glibc, mimalloc, jemalloc, tcmalloc) and arena allocators, comma separated.
    #[arg(long, value_name = "NAMES")]
    filter: Vec<String>,
    /// The library to preload for a malloc instead of the default one, e.g.
    /// `jemalloc=/opt/jemalloc/lib/libjemalloc.so` (repeatable).
    #[arg(long, value_name = "NAME=PATH", value_parser = libraries::parse_override)]
    malloc_lib: Vec<(CMalloc, PathBuf)>,
    /// Seed of the randomized sequences.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Runs of every check (1 to 10000), instead of the mode's.
    #[arg(long, value_parser = parse_runs)]
    runs: Option<usize>,
    #[command(flatten)]
    output: OutputArgs,
}

impl TortureArgs {
    fn mode(&self) -> Mode {
        match (self.quick, self.long) {
            (true, _) => Mode::Quick,
            (_, true) => Mode::Long,
            _ => Mode::Default,
        }
    }
}

/// `--runs`: 1 to [`MAX_RUNS`].
fn parse_runs(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(runs) if (1..=MAX_RUNS).contains(&runs) => Ok(runs),
        _ => Err(format!(
            "`{text}` is not a number of runs from 1 to {MAX_RUNS}"
        )),
    }
}

/// Runs `heapworks torture`: prints the scorecards and the notes, writes the files, and fails
/// when heapworks failed a correctness check.
pub fn torture_command(args: TortureArgs) -> Result<(), String> {
    let selection = Selection::from_filter(&args.filter)?;
    let outputs = args.output.outputs("torture");
    outputs.check_writable().map_err(|e| e.to_string())?;
    let mode = args.mode();
    let progress = progress_bar(0);
    let run = torture::run(
        &selection,
        mode,
        args.seed,
        args.runs,
        &args.malloc_lib,
        &progress,
    );
    progress.finish_and_clear();
    let mut results = run?;
    catalog::annotate(&mut results);
    print!("{}", render(&results));
    for note in scorecard::failure_notes(&results) {
        eprintln!("note: {note}");
    }
    eprintln!("note: {}", scorecard::timeout_note(mode));
    outputs.write(&results).map_err(|e| e.to_string())?;
    announce(&outputs);
    let failures = scorecard::heapworks_failures(&results);
    if failures.is_empty() {
        return Ok(());
    }
    Err(format!(
        "heapworks failed {} correctness check(s):\n  {}",
        failures.len(),
        failures.join("\n  ")
    ))
}

/// The scorecards for the terminal: the C mallocs', then the arenas' (each its own columns).
pub fn render(results: &Results) -> String {
    let arenas = Section::Arenas.name();
    let (arena_cells, malloc_cells): (Vec<_>, Vec<_>) = results
        .cells
        .iter()
        .cloned()
        .partition(|c| c.workload == arenas);
    let part = |cells: Vec<Cell>| {
        let names: Vec<&str> = cells.iter().map(|c| c.allocator.as_str()).collect();
        let versions = results
            .environment
            .versions
            .iter()
            .filter(|(name, _)| names.contains(&name.as_str()))
            .cloned()
            .collect();
        Results {
            environment: Environment {
                versions,
                ..results.environment.clone()
            },
            cells,
        }
    };
    let mut text = String::new();
    for cells in [malloc_cells, arena_cells] {
        if !cells.is_empty() {
            text.push_str(&table::render(&part(cells)));
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_bounded() {
        assert_eq!(parse_runs("100"), Ok(100));
        assert!(parse_runs("0").is_err());
        assert!(parse_runs("10001").is_err());
        assert!(parse_runs("many").is_err());
    }
}
