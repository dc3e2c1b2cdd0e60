//! The scorecard: every case run under every C malloc (and the arenas in-process), as cells of
//! the result model, so that the table, JSON, CSV and HTML renderers print it; the notes that
//! explain each failed check; and the verdict on heapworks.
//!
//! Invariants: one verdict cell per (case, malloc), plus the misuse score (caught cases) per
//! malloc and the realloc in-place percentages; a malloc whose library is missing or not
//! interposed has its reason in every cell; a check fails for heapworks exactly when its
//! verdict is not `pass` (or `n/a`) in a correctness section.

use std::process::Command;

use heapworks_bench::progress::Progress;

use heapworks_bench::contenders::AllocatorId;
use heapworks_bench::results::{Cell, Outcome, Results, Summary};
use heapworks_bench::rng::derive_seed;
use heapworks_bench::workloads::{Better, MetricSpec};
use heapworks_malloc_bench::libraries::{Library, Lineup};
use heapworks_malloc_bench::process::{self, field};

use super::arenas;
use super::cases::{Case, CaseKind, Mode, Program, Section, MISUSES, MISUSE_SIZES, SEED};
use super::child::{self, Programs};
use super::verdict::{check_failure, Misuse, Tally};

/// The metric of a verdict cell.
const VERDICT: MetricSpec = MetricSpec::primary("verdict", "runs", Better::Higher);
/// The metric of a misuse outcome.
const OUTCOME: MetricSpec = MetricSpec::primary("outcome", "", Better::Higher);
/// Caught misuses, per malloc.
const CAUGHT: MetricSpec = MetricSpec::primary("caught", "cases", Better::Higher);
/// Realloc steps that kept the address.
const IN_PLACE: MetricSpec = MetricSpec::primary("in place", "% of steps", Better::Higher);
/// The case name of the misuse score.
pub const SCORE_CASE: &str = "score";

/// What every run of a case shares.
pub struct Context<'a> {
    /// The compiled programs.
    pub programs: &'a Programs,
    /// How hard the run is.
    pub mode: Mode,
    /// Seed of the run.
    pub seed: u64,
    /// Where the interposition check keeps its logs.
    pub scratch: &'a std::path::Path,
}

/// Runs `cases` under every malloc of `lineup`; a malloc that fails the interposition check
/// gets the reason in every cell.
pub fn run_mallocs(
    cases: &[Case],
    lineup: &Lineup,
    context: &Context<'_>,
    progress: &dyn Progress,
) -> Vec<Cell> {
    let mut cells = Vec::new();
    let mut columns: Vec<(&str, Result<&Library, String>)> = lineup
        .present
        .iter()
        .map(|library| {
            (
                library.malloc.name(),
                interposed(library, context).map(|()| library),
            )
        })
        .collect();
    columns.extend(
        lineup
            .missing
            .iter()
            .map(|(malloc, why)| (malloc.name(), Err(why.clone()))),
    );
    for case in cases {
        for (name, library) in &columns {
            progress.set_message(format!("{} {} · {name}", case.section.name(), case.name));
            match library {
                Ok(library) => cells.extend(run_case(case, library, context)),
                Err(why) => cells.extend(failed_cells(case, name, why)),
            }
            progress.step_done();
        }
    }
    for (name, _) in &columns {
        cells.extend(misuse_score(&cells, name));
    }
    cells
}

/// The proof that the preloaded malloc is the one called: `patterns sizes 1` under
/// `LD_DEBUG=bindings` must bind `malloc` to the library (glibc: it just runs).
fn interposed(library: &Library, context: &Context<'_>) -> Result<(), String> {
    let mut command = Command::new(context.programs.path(Program::Patterns));
    command.args(["sizes", "1"]);
    process::run_bound(&mut command, library, &process::logs_dir(context.scratch)).map(|_| ())
}

/// The command of one run of `case`.
fn command(case: &Case, library: &Library, context: &Context<'_>, run: usize) -> Command {
    let seed = derive_seed(context.seed, &case.name, run).to_string();
    let mut command = Command::new(context.programs.path(case.program));
    command
        .args(case.args.iter().map(|a| if a == SEED { &seed } else { a }))
        .env("LIBC_FATAL_STDERR_", "1");
    library.apply(&mut command);
    command
}

fn run_case(case: &Case, library: &Library, context: &Context<'_>) -> Vec<Cell> {
    let malloc = library.malloc.name();
    let timeout = case.timeout;
    if case.kind == CaseKind::Misuse {
        let outcome = match child::run(&mut command(case, library, context, 0), timeout) {
            Ok(ran) => Outcome::Verdict(Misuse::classify(&ran).verdict()),
            Err(why) => Outcome::Failed(why),
        };
        return vec![cell(case, malloc, &OUTCOME, outcome)];
    }
    let mut tally = Tally::default();
    let mut steps = None;
    for run in 0..case.runs {
        let ran = match child::run(&mut command(case, library, context, run), timeout) {
            Ok(ran) => ran,
            Err(why) => return failed_cells(case, malloc, &why),
        };
        let failure = check_failure(&ran, timeout.as_secs());
        if failure.is_none() && case.kind == CaseKind::ReallocSteps {
            steps = Some(ran.stdout.clone());
        }
        tally.add(failure, ran.end == child::End::Hung);
        if tally.failed() >= context.mode.max_failures() {
            break;
        }
    }
    let mut cells = vec![cell(
        case,
        malloc,
        &VERDICT,
        Outcome::Verdict(tally.verdict(case.runs)),
    )];
    if case.kind == CaseKind::ReallocSteps {
        cells.extend(in_place_cells(case, malloc, steps.as_deref()));
    }
    cells
}

/// `grown in place` and `shrunk in place` from the program's step counts.
fn in_place_cells(case: &Case, malloc: &str, stdout: Option<&str>) -> Vec<Cell> {
    [("grown", "grow"), ("shrunk", "shrink")]
        .iter()
        .map(|(label, key)| {
            let percent = stdout.and_then(|out| {
                let steps = field(out, &format!("{key}_steps"))?;
                let moves = field(out, &format!("{key}_moves"))?;
                (steps > 0.0).then(|| (steps - moves) * 100.0 / steps)
            });
            let outcome = percent.map_or_else(
                || Outcome::Failed("no step counts (the run failed)".into()),
                |p| Outcome::Measured(Summary::single(p)),
            );
            let mut cell = cell(case, malloc, &IN_PLACE, outcome);
            cell.case = format!("{} {label}", case.name);
            cell
        })
        .collect()
}

fn cell(case: &Case, malloc: &str, metric: &MetricSpec, outcome: Outcome) -> Cell {
    Cell::of(case.section.name(), &case.name, malloc, metric, outcome)
}

fn failed_cells(case: &Case, malloc: &str, why: &str) -> Vec<Cell> {
    let metric = if case.kind == CaseKind::Misuse {
        &OUTCOME
    } else {
        &VERDICT
    };
    vec![cell(case, malloc, metric, Outcome::Failed(why.to_string()))]
}

/// The misuse score of `malloc`: how many misuse cases it caught, out of how many ran.
fn misuse_score(cells: &[Cell], malloc: &str) -> Option<Cell> {
    let misuse = Section::Misuse.name();
    let ran: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.workload == misuse && c.allocator == malloc)
        .collect();
    if ran.is_empty() {
        return None;
    }
    let caught = ran
        .iter()
        .filter(|c| matches!(&c.outcome, Outcome::Verdict(v) if v.starts_with("caught")))
        .count();
    let outcome = if ran.iter().all(|c| matches!(c.outcome, Outcome::Failed(_))) {
        ran[0].outcome.clone()
    } else {
        Outcome::Measured(Summary::single(caught as f64))
    };
    let unit = format!("of {}", MISUSES.len() * MISUSE_SIZES.len());
    let mut cell = Cell::of(misuse, SCORE_CASE, malloc, &CAUGHT, outcome);
    cell.unit = unit;
    Some(cell)
}

/// The arena rows: every allocator of `ids` tortured in-process.
pub fn run_arenas(
    ids: &[AllocatorId],
    mode: Mode,
    seed: u64,
    progress: &dyn Progress,
) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &id in ids {
        progress.set_message(format!("arenas · {id}"));
        let outcomes = arenas::torture(id, derive_seed(seed, id.name(), 0), mode.thread_ops());
        for (case, outcome) in arenas::CASES.iter().zip(outcomes) {
            let metric = match outcome {
                Outcome::Measured(_) => &IN_PLACE,
                _ => &VERDICT,
            };
            cells.push(Cell::of(
                Section::Arenas.name(),
                case,
                id.name(),
                metric,
                outcome,
            ));
        }
        progress.step_done();
    }
    cells
}

/// Whether `cell` is a failed correctness check.
fn is_failed_check(cell: &Cell) -> bool {
    let correctness = Section::from_name(&cell.workload).is_some_and(Section::is_correctness);
    let failed = match &cell.outcome {
        Outcome::Verdict(v) => !(v.starts_with("pass") || v.starts_with("n/a")),
        Outcome::Failed(_) => true,
        Outcome::Measured(_) => false,
    };
    correctness && failed
}

fn describe(cell: &Cell) -> String {
    let text = match &cell.outcome {
        Outcome::Verdict(v) | Outcome::Failed(v) => v.clone(),
        Outcome::Measured(s) => format!("{}", s.median),
    };
    format!(
        "{}/{} · {}: {text}",
        cell.workload, cell.case, cell.allocator
    )
}

/// A line per failed correctness check, every malloc and arena.
pub fn failure_notes(results: &Results) -> Vec<String> {
    results
        .cells
        .iter()
        .filter(|c| is_failed_check(c))
        .map(describe)
        .collect()
}

/// The correctness checks heapworks (the C malloc or the arena) failed.
pub fn heapworks_failures(results: &Results) -> Vec<String> {
    results
        .cells
        .iter()
        .filter(|c| c.allocator == AllocatorId::Heapworks.name() && is_failed_check(c))
        .map(describe)
        .collect()
}

/// How the runs were bounded, for the notes.
pub fn timeout_note(mode: Mode) -> String {
    format!(
        "a fork run had {} s, any other run {} s, before it counted as a hang; a check \
         stopped after {} failed run(s)",
        mode.fork_timeout().as_secs(),
        super::cases::CHECK_TIMEOUT.as_secs(),
        mode.max_failures()
    )
}
