//! Instructions per call of each C malloc under callgrind (deterministic): `driver counts`
//! with the malloc preloaded, run once per malloc under `valgrind --tool=callgrind`.
//!
//! The driver warms every sequence up through functions named `warm_*`, then runs it again
//! through `measured_*`. From the profile, the calls out of `measured_fill` (malloc of 64 B,
//! 1000 live), `measured_empty` (their free) and `measured_grow` (realloc 16 B larger a step)
//! give their inclusive cost and their number, so a count per call covers the malloc
//! function and everything it calls, and nothing of the driver; the ping-pong pair is
//! `pingpong_loop`'s whole inclusive cost (loop included) divided by its iterations. Start-up
//! and the warm-up count nowhere.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::libraries::Library;
use super::{MallocWorkload, Output, Task};
use crate::instructions::{check_valgrind, inclusive_costs, outgoing_calls};
use crate::workloads::{Better, MetricSpec};

/// Rounds of 1000 mallocs then 1000 frees.
const ROUNDS: u64 = 20;
/// Iterations of the ping-pong loop.
const PINGPONG: u64 = 20_000;
/// Measured realloc steps (after half as many warm-up steps): 32 KB to 96 KB.
const STEPS: u64 = 4_000;

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
        run: Box::new(move |library, _seed| count(&driver, &scratch, library)),
    }
}

/// Runs the driver under callgrind with `library`; instructions per malloc, free, pair and
/// realloc step.
fn count(driver: &Path, scratch: &Path, library: &Library) -> Result<Vec<f64>, String> {
    let profile_path: PathBuf = scratch.join(format!("callgrind-{}.out", library.malloc));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", profile_path.display()))
        .args(["--compress-strings=no", "--compress-pos=no"])
        .arg(driver)
        .args(["counts", &ROUNDS.to_string(), &PINGPONG.to_string()])
        .arg(STEPS.to_string());
    let run = super::process::run(library.apply(&mut command));
    let profile = std::fs::read_to_string(&profile_path);
    let _ = std::fs::remove_file(&profile_path);
    run?;
    let profile = profile.map_err(|e| format!("no callgrind output: {e}"))?;
    per_call(&profile)
}

/// The four counts from a callgrind profile of `driver counts`.
pub fn per_call(profile: &str) -> Result<Vec<f64>, String> {
    let calls = outgoing_calls(profile);
    let per_call_of = |caller: &str| match calls.get(caller) {
        Some(&(count, cost)) if count > 0 => Ok(cost as f64 / count as f64),
        _ => Err(format!("the profile shows no calls out of {caller}")),
    };
    let pair = inclusive(&inclusive_costs(profile), "pingpong_loop")? / PINGPONG as f64;
    Ok(vec![
        per_call_of("measured_fill")?,
        per_call_of("measured_empty")?,
        pair,
        per_call_of("measured_grow")?,
    ])
}

fn inclusive(costs: &HashMap<String, u64>, function: &str) -> Result<f64, String> {
    costs
        .get(function)
        .map(|&cost| cost as f64)
        .ok_or_else(|| format!("the profile has no {function}"))
}
