//! Instructions per call of each C malloc under callgrind (deterministic): `driver counts
//! SEQUENCE N` with the malloc preloaded, under `valgrind --tool=callgrind`, one fresh
//! process per sequence (run side by side: the counts do not depend on timing).
//!
//! The driver warms every sequence up through functions named `warm_*`, then runs it
//! through `measured_*`. From the profile, the calls out of `measured_fill` (malloc of 64 B,
//! 1000 live), `measured_empty` (their free) and `measured_grow` (realloc 16 B larger a step)
//! give their inclusive cost and their number, so a count per call covers the malloc
//! function and everything it calls, and nothing of the driver; the ping-pong pair is
//! `pingpong_loop`'s whole inclusive cost (loop included) divided by its iterations. Start-up
//! and the warm-up count nowhere.

use std::path::Path;
use std::process::Command;

use super::libraries::Library;
use super::{MallocWorkload, Output, Task};
use heapworks_bench::instructions::{check_valgrind, inclusive_costs, outgoing_calls};
use heapworks_bench::workloads::{Better, MetricSpec};

/// The driver's sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequence {
    /// 20 rounds of 1000 mallocs of 64 B, then their 1000 frees.
    Live1000,
    /// 20 000 × `free(malloc(64))` with 1000 blocks live.
    PingPong,
    /// 4000 reallocs of one block, 16 B larger a step (32 KB to 96 KB).
    Realloc16,
}

impl Sequence {
    /// Every sequence, in the order of the task's outputs.
    pub const ALL: [Sequence; 3] = [Sequence::Live1000, Sequence::PingPong, Sequence::Realloc16];

    fn flag(self) -> &'static str {
        match self {
            Sequence::Live1000 => "live1000",
            Sequence::PingPong => "pingpong",
            Sequence::Realloc16 => "realloc16",
        }
    }

    /// Rounds, iterations or steps.
    fn length(self) -> u64 {
        match self {
            Sequence::Live1000 => 20,
            Sequence::PingPong => 20_000,
            Sequence::Realloc16 => 4_000,
        }
    }

    /// The counts of this sequence in a callgrind profile of its run.
    pub fn per_call(self, profile: &str) -> Result<Vec<f64>, String> {
        let calls = outgoing_calls(profile);
        let per_call_of = |caller: &str| match calls.get(caller) {
            Some(&(count, cost)) if count > 0 => Ok(cost as f64 / count as f64),
            _ => Err(format!("the profile shows no calls out of {caller}")),
        };
        match self {
            Sequence::Live1000 => Ok(vec![
                per_call_of("measured_fill")?,
                per_call_of("measured_empty")?,
            ]),
            Sequence::PingPong => inclusive_costs(profile)
                .get("pingpong_loop")
                .map(|&cost| vec![cost as f64 / self.length() as f64])
                .ok_or_else(|| "the profile has no pingpong_loop".to_string()),
            Sequence::Realloc16 => Ok(vec![per_call_of("measured_grow")?]),
        }
    }
}

const CASE_64: &str = "64 B blocks, 1000 live";

/// The one task of the instruction counts: four numbers per malloc.
pub fn task(driver: &Path, scratch: &Path) -> Task {
    let driver_check = super::timed::driver_check(driver, scratch);
    let driver = driver.to_path_buf();
    let scratch = scratch.to_path_buf();
    Task {
        workload: MallocWorkload::Instructions,
        label: "instructions".into(),
        outputs: vec![
            Output::new(
                CASE_64,
                MetricSpec::primary("malloc", "instr/call", Better::Lower),
            ),
            Output::new(
                CASE_64,
                MetricSpec::primary("free", "instr/call", Better::Lower),
            ),
            Output::new(
                "ping-pong free(malloc(64)), loop included",
                MetricSpec::primary("pair", "instr/pair", Better::Lower),
            ),
            Output::new(
                "realloc +16 B a step, 32 KB to 96 KB",
                MetricSpec::primary("realloc", "instr/step", Better::Lower),
            ),
        ],
        deterministic: true,
        check: Some(Box::new(move |library| {
            check_valgrind().map_err(|_| {
                "missing: valgrind is not installed (Debian/Ubuntu: apt-get install valgrind)"
                    .to_string()
            })?;
            driver_check(library)
        })),
        run: Box::new(move |library, _seed| count_all(&driver, &scratch, library)),
    }
}

/// Runs every sequence under callgrind at once; their counts, in order.
fn count_all(driver: &Path, scratch: &Path, library: &Library) -> Result<Vec<f64>, String> {
    let counted: Vec<Result<Vec<f64>, String>> = std::thread::scope(|scope| {
        let runs = Sequence::ALL
            .map(|sequence| scope.spawn(move || count(driver, scratch, library, sequence)));
        runs.map(|run| run.join().expect("a callgrind run does not panic"))
            .into()
    });
    counted
        .into_iter()
        .collect::<Result<Vec<_>, _>>()
        .map(|counts| counts.concat())
}

/// Runs one sequence of the driver under callgrind with `library`; its counts.
fn count(
    driver: &Path,
    scratch: &Path,
    library: &Library,
    sequence: Sequence,
) -> Result<Vec<f64>, String> {
    let profile_path = scratch.join(format!(
        "callgrind-{}-{}.out",
        library.malloc,
        sequence.flag()
    ));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", profile_path.display()))
        .args(["--compress-strings=no", "--compress-pos=no"])
        .arg(driver)
        .args(["counts", sequence.flag(), &sequence.length().to_string()]);
    let run = super::process::run(library.apply(&mut command));
    let profile = std::fs::read_to_string(&profile_path);
    let _ = std::fs::remove_file(&profile_path);
    run?;
    let profile = profile.map_err(|e| format!("no callgrind output: {e}"))?;
    sequence.per_call(&profile)
}
