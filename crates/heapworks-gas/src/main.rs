//! The `heapworks-gas` command: see the library's documentation and the README.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use heapworks_gas::report::{self, GuestResults, Results};
use heapworks_gas::{guests, measure, programs, scenario};

/// The most wasm pages a guest may grow to (Gear's limit is 32768, 2 GiB).
const MAX_PAGES: u32 = 16384;

/// The guest the summary compares with.
const REFERENCE: &str = "dlmalloc-0.2.14";

#[derive(Parser, Debug)]
#[command(
    name = "heapworks-gas",
    about = "Gas per allocator call under Gear's price list"
)]
struct Options {
    /// Fewer repetitions: seconds, for CI.
    #[arg(long)]
    quick: bool,
    /// Guests to run, comma-separated (default: all); names as printed.
    #[arg(long, value_delimiter = ',')]
    guests: Vec<String>,
    /// Print the seed's table for every guest and scenario.
    #[arg(long)]
    tables: bool,
    /// Write the results as JSON (schema `heapworks-gas-results/1`, crate
    /// heapworks-gas-results; `heapworks gas --render` draws its HTML report).
    #[arg(long, value_name = "PATH")]
    json: Option<PathBuf>,
    /// Write the results as CSV.
    #[arg(long, value_name = "PATH")]
    csv: Option<PathBuf>,
    /// Fail if a heapworks guest's allocation gas on any scenario exceeds this baseline's
    /// (a JSON file of an earlier run in the same mode) by more than --tolerance.
    #[arg(long, value_name = "BASELINE")]
    gate: Option<PathBuf>,
    /// The gate's tolerance in percent.
    #[arg(long, default_value_t = 0.5, value_parser = parse_tolerance)]
    tolerance: f64,
}

fn parse_tolerance(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("not a number: {text:?}"))?;
    if (0.0..=1000.0).contains(&value) {
        Ok(value)
    } else {
        Err("the tolerance is a percentage from 0 to 1000".into())
    }
}

fn main() -> ExitCode {
    match run(Options::parse()) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("heapworks-gas: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(options: Options) -> Result<ExitCode, String> {
    for name in &options.guests {
        if !guests::GUESTS.iter().any(|g| g.name == name) {
            let known: Vec<_> = guests::GUESTS.iter().map(|g| g.name).collect();
            return Err(format!(
                "unknown guest {name:?}; the guests are {}",
                known.join(", ")
            ));
        }
    }
    let dir = guests::build()?;
    let programs_dir = guests::build_programs()?;
    let scenarios = scenario::micro(options.quick);
    let programs = programs::seed_scenarios(options.quick);
    let mut results = Results::new(
        options.quick,
        "Gear instruction weights v1900; page and syscall prices of ANCHORS §3 (v2000)",
        REFERENCE,
    );
    for guest in guests::GUESTS {
        if !options.guests.is_empty() && !options.guests.iter().any(|n| n == guest.name) {
            continue;
        }
        let path = dir.join(guest.file);
        let wasm = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let code_bytes_oz = guests::optimized_size(&path)
            .inspect_err(|e| eprintln!("heapworks-gas: code size after -Oz not measured: {e}"))
            .ok();
        let mut outcomes = Vec::new();
        for scenario in &scenarios {
            let outcome = measure::run(&wasm, scenario, MAX_PAGES)
                .map_err(|e| format!("{} on {:?}: {e}", guest.name, scenario.name))?;
            outcomes.push((scenario.name.clone(), outcome));
        }
        let program_path = programs_dir.join(guest.file);
        let program_wasm =
            std::fs::read(&program_path).map_err(|e| format!("{}: {e}", program_path.display()))?;
        for p in &programs {
            let outcome =
                measure::run_program(&program_wasm, p.entry, &p.messages, p.execution, MAX_PAGES)
                    .map_err(|e| format!("{} on {:?}: {e}", guest.name, p.name))?;
            outcomes.push((p.name.clone(), outcome));
        }
        results.guests.push(GuestResults {
            guest: guest.name.into(),
            code_bytes: wasm.len() as u64,
            code_bytes_oz,
            scenarios: outcomes,
        });
    }
    for metric in &report::METRICS {
        println!("{}", report::summary(&results, REFERENCE, metric));
    }
    println!("{}", report::code_sizes(&results));
    if options.tables {
        for guest in &results.guests {
            for (scenario, outcome) in &guest.scenarios {
                print!("{}", report::seed_table(&guest.guest, scenario, outcome));
            }
        }
    }
    if let Some(path) = &options.json {
        std::fs::write(path, results.to_json()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &options.csv {
        std::fs::write(path, report::csv(&results))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &options.gate {
        return gate(&results, path, options.tolerance);
    }
    Ok(ExitCode::SUCCESS)
}

fn gate(results: &Results, path: &PathBuf, tolerance: f64) -> Result<ExitCode, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .len();
    if size > heapworks_gas_results::MAX_BYTES {
        return Err(format!(
            "{}: {size} bytes, more than a results file holds",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let baseline = Results::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let ours: Vec<&str> = guests::GUESTS
        .iter()
        .filter(|g| g.ours)
        .map(|g| g.name)
        .collect();
    let regressions = report::gate(results, &baseline, &ours, tolerance)?;
    if regressions.is_empty() {
        println!(
            "gate: heapworks' gas within {tolerance}% of {} on every scenario",
            path.display()
        );
        Ok(ExitCode::SUCCESS)
    } else {
        for line in &regressions {
            eprintln!("gate: {line}");
        }
        Ok(ExitCode::FAILURE)
    }
}
