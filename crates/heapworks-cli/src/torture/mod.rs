//! `heapworks torture`: the malloc torture test seed 004 asked for, run against every C malloc
//! of `bench --malloc` (heapworks-malloc, glibc, mimalloc, jemalloc, tcmalloc, or a library
//! named with `--malloc-lib`) and against every arena allocator in-process.
//!
//! - [`cases`]: the sections (contract, threads, fork, exhaustion, patterns, misuse, arenas),
//!   their cases and the modes (quick, default, long).
//! - [`child`]: the C programs of `crates/heapworks-cli/torture/`, compiled at run time with
//!   `cc`, and runs under a timeout in their own process group.
//! - [`verdict`]: checks tallied into `pass` / `FAIL` / `hang`, misuse runs classified.
//! - [`arenas`]: the in-process torture of the arena allocators.
//! - [`scorecard`]: the cells, notes and the verdict on heapworks.
//!
//! Invariants: each run is a fresh process (a crash or hang harms only its own cell); the
//! mallocs are found, built and preloaded exactly as `bench --malloc` does (its
//! [`Lineup`], pinned into the run's scratch directory, with the same proof of interposition);
//! the command fails (non-zero exit) when heapworks fails a correctness check, never because
//! of the misuse section, which is a score.

pub mod arenas;
pub mod cases;
pub mod child;
pub mod scorecard;
pub mod verdict;

use std::path::PathBuf;

use clap::Args;

use crate::catalog;
use crate::cli::{announce, OutputArgs};
use crate::contenders::AllocatorId;
use crate::malloc_bench::libraries::{self, CMalloc, Lineup};
use crate::malloc_bench::Scratch;
use crate::progress::progress_bar;
use crate::report::table;
use crate::results::{Environment, Results};
use crate::runner::{filter_terms, in_canonical_order};
use crate::workloads::{Config, Scale};

use cases::{Mode, Section};
use child::Programs;
use scorecard::Context;

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

/// What a run covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Sections, in report order.
    pub sections: Vec<Section>,
    /// C mallocs, in report order.
    pub mallocs: Vec<CMalloc>,
    /// Arena allocators, in report order.
    pub arenas: Vec<AllocatorId>,
}

impl Selection {
    /// Reads `--filter` terms: sections, and allocator names (a name may be both a C malloc
    /// and an arena, as `heapworks` is). No section term means every section; no allocator
    /// term every allocator. A `--filter` with nothing in it is refused.
    pub fn from_filter(terms: &[String]) -> Result<Self, String> {
        let words = filter_terms(terms).ok_or_else(|| {
            "--filter has an empty name (see `heapworks torture --help`)".to_string()
        })?;
        let (mut sections, mut mallocs, mut arenas) = (Vec::new(), Vec::new(), Vec::new());
        for word in words {
            let section = Section::from_name(word);
            let malloc = CMalloc::from_name(word);
            let arena = AllocatorId::from_name(word);
            if section.is_none() && malloc.is_none() && arena.is_none() {
                return Err(unknown_term(word));
            }
            sections.extend(section);
            mallocs.extend(malloc);
            arenas.extend(arena);
        }
        let names_allocators = !mallocs.is_empty() || !arenas.is_empty();
        let (all_mallocs, all_arenas): (&[CMalloc], &[AllocatorId]) = if names_allocators {
            (&[], &[])
        } else {
            (CMalloc::ALL, AllocatorId::ALL)
        };
        Ok(Self {
            sections: in_canonical_order(sections, Section::ALL, Section::ALL),
            mallocs: in_canonical_order(mallocs, all_mallocs, CMalloc::ALL),
            arenas: in_canonical_order(arenas, all_arenas, AllocatorId::ALL),
        })
    }
}

fn unknown_term(term: &str) -> String {
    let sections: Vec<&str> = Section::ALL.iter().map(|s| s.name()).collect();
    let mallocs: Vec<&str> = CMalloc::ALL.iter().map(|m| m.name()).collect();
    let arenas: Vec<&str> = AllocatorId::ALL.iter().map(|a| a.name()).collect();
    format!(
        "unknown torture section or allocator `{term}`\n  sections: {}\n  mallocs: {}\n  \
         arenas: {}",
        sections.join(", "),
        mallocs.join(", "),
        arenas.join(", ")
    )
}

/// Runs `heapworks torture`: prints the scorecards and the notes, writes the files, and fails
/// when heapworks failed a correctness check.
pub fn torture(args: TortureArgs) -> Result<(), String> {
    let selection = Selection::from_filter(&args.filter)?;
    let outputs = args.output.outputs("torture");
    outputs.check_writable().map_err(|e| e.to_string())?;
    let mode = args.mode();
    let mut results = run(&selection, mode, args.seed, args.runs, &args.malloc_lib)?;
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

/// Runs every case of `selection` and returns the scorecard.
pub fn run(
    selection: &Selection,
    mode: Mode,
    seed: u64,
    runs: Option<usize>,
    overrides: &[(CMalloc, PathBuf)],
) -> Result<Results, String> {
    let cases = cases::plan(&selection.sections, mode, runs);
    let wants_arenas =
        selection.sections.contains(&Section::Arenas) && !selection.arenas.is_empty();
    let progress = progress_bar(0);
    let mut cells = Vec::new();
    let mut versions = Vec::new();
    if !cases.is_empty() && !selection.mallocs.is_empty() {
        let scratch = Scratch::create("heapworks-torture")?;
        let lineup =
            Lineup::find(&selection.mallocs, overrides).pinned(&scratch.0.join("libraries"));
        let programs = Programs::compile(&scratch.0)?;
        let columns = lineup.present.len() + lineup.missing.len();
        progress.inc_length((cases.len() * columns) as u64);
        let context = Context {
            programs: &programs,
            mode,
            seed,
            scratch: &scratch.0,
        };
        cells.extend(scorecard::run_mallocs(&cases, &lineup, &context, &progress));
        versions.extend(lineup.versions());
    }
    if wants_arenas {
        progress.inc_length(selection.arenas.len() as u64);
        cells.extend(scorecard::run_arenas(
            &selection.arenas,
            mode,
            seed,
            &progress,
        ));
        for id in &selection.arenas {
            add_version(&mut versions, id.name(), id.crate_version());
        }
    }
    progress.finish_and_clear();
    if cells.is_empty() {
        return Err("the filter selects no case to run".into());
    }
    let config = Config::at_scale(Scale::Default, seed);
    Ok(Results {
        environment: Environment {
            scale: mode.scale_name().to_string(),
            trials: 1,
            duration_ms: 0.0,
            versions,
            ..Environment::detect(&config, &[])
        },
        cells,
    })
}

/// Adds `name`'s version; a name that is both a C malloc and an arena (heapworks) keeps one
/// entry with both versions, so that it stays one column of the files' reports.
fn add_version(versions: &mut Vec<(String, String)>, name: &str, version: &str) {
    match versions.iter_mut().find(|(known, _)| known == name) {
        Some((_, known)) => *known = format!("{known} / arena: {version}"),
        None => versions.push((name.to_string(), version.to_string())),
    }
}

/// The scorecards for the terminal: the C mallocs', then the arenas' (each its own columns).
pub fn render(results: &Results) -> String {
    let arenas = Section::Arenas.name();
    let (arena_cells, malloc_cells): (Vec<_>, Vec<_>) = results
        .cells
        .iter()
        .cloned()
        .partition(|c| c.workload == arenas);
    let part = |cells: Vec<crate::results::Cell>| {
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

    fn terms(text: &str) -> Vec<String> {
        vec![text.to_string()]
    }

    #[test]
    fn filters_pick_sections_and_allocators() {
        let all = Selection::from_filter(&[]).unwrap();
        assert_eq!(all.sections, Section::ALL);
        assert_eq!(all.mallocs, CMalloc::ALL);
        let picked = Selection::from_filter(&terms("fork,glibc")).unwrap();
        assert_eq!(picked.sections, [Section::Fork]);
        assert_eq!(picked.mallocs, [CMalloc::Glibc]);
        assert!(picked.arenas.is_empty());
        let both = Selection::from_filter(&terms("heapworks")).unwrap();
        assert_eq!(both.mallocs, [CMalloc::Heapworks]);
        assert_eq!(both.arenas, [AllocatorId::Heapworks]);
        assert!(Selection::from_filter(&terms("fork,nonesuch")).is_err());
        assert!(Selection::from_filter(&terms(" , ")).is_err());
    }

    #[test]
    fn runs_are_bounded() {
        assert_eq!(parse_runs("100"), Ok(100));
        assert!(parse_runs("0").is_err());
        assert!(parse_runs("10001").is_err());
        assert!(parse_runs("many").is_err());
    }
}
