//! `heapworks gas [--out DIR] [ARGS...]`: runs the `heapworks-gas` program with `ARGS` and its
//! results written as JSON into the report directory, then draws the HTML report there;
//! `heapworks gas --render RESULTS.json` draws the report of an earlier run.
//!
//! heapworks-gas links Gear's instrumenter, which is GPL-3.0, so it is a program of its own
//! (crate `heapworks-gas`) and never linked into this MIT OR Apache-2.0 binary: this command
//! only finds it (beside this executable, as cargo builds both into one target directory, or
//! on `PATH`), runs it, and reads the JSON it writes (schema: the permissive crate
//! `heapworks-gas-results`). Invariants: a results file is read up to
//! [`heapworks_gas_results::MAX_BYTES`] and refused by name when malformed or foreign;
//! `ARGS` asking for help or the version are passed on untouched and draw nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;
use heapworks_gas_results::{Results, MAX_BYTES};

use crate::report::{self, Outputs};
use crate::report_dir::default_report_dir;

/// The program's name.
const PROGRAM: &str = "heapworks-gas";

#[derive(Debug, Args)]
pub struct GasArgs {
    /// Directory of the HTML report (default: $XDG_CACHE_HOME/heapworks/reports/gas, else
    /// ~/.cache/heapworks/reports/gas, else <temp dir>/heapworks/reports/gas); the run's
    /// results.json goes there too unless ARGS give heapworks-gas a --json of their own.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Draw the report of this results file (heapworks-gas --json) instead of running.
    #[arg(long, value_name = "RESULTS.json", conflicts_with = "args")]
    render: Option<PathBuf>,
    /// Arguments for heapworks-gas, after this command's own options (`heapworks gas -- --help`
    /// shows the program's help).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// `heapworks-gas` beside the running executable, else the bare name (looked up on `PATH`).
fn program() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(PROGRAM)))
        .filter(|beside| beside.is_file())
        .unwrap_or_else(|| PathBuf::from(PROGRAM))
}

/// Runs heapworks-gas (passing its failure on) and draws the report, or draws an earlier run's.
pub fn gas(args: GasArgs) -> Result<(), String> {
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| default_report_dir("gas"));
    if let Some(results) = &args.render {
        return render(results, &dir);
    }
    if asks_for_help(&args.args) {
        return run(&args.args);
    }
    let outputs = Outputs {
        html_dir: Some(dir.clone()),
        ..Outputs::default()
    };
    outputs.check_writable().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut program_args = args.args.clone();
    let results = match json_option(&args.args) {
        Some(path) => PathBuf::from(path),
        None => {
            let path = dir.join("results.json");
            program_args.push("--json".into());
            program_args.push(path.to_string_lossy().into_owned());
            path
        }
    };
    run(&program_args)?;
    render(&results, &dir)
}

/// Whether `args` ask heapworks-gas for its help or version (it then writes no results).
fn asks_for_help(args: &[String]) -> bool {
    args.iter()
        .any(|a| matches!(a.as_str(), "-h" | "--help" | "-V" | "--version"))
}

/// The path of a `--json PATH` or `--json=PATH` among `args`.
fn json_option(args: &[String]) -> Option<&str> {
    args.iter().enumerate().find_map(|(i, arg)| {
        if arg == "--json" {
            args.get(i + 1).map(String::as_str)
        } else {
            arg.strip_prefix("--json=")
        }
    })
}

fn run(args: &[String]) -> Result<(), String> {
    let program = program();
    let status = Command::new(&program).args(args).status().map_err(|e| {
        format!(
            "cannot run {}: {e}; build it with `cargo build --release -p heapworks-gas` \
             (a separate program: it is GPL-3.0)",
            program.display()
        )
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("heapworks-gas failed ({status})"))
    }
}

/// Reads a heapworks-gas results file, at most [`MAX_BYTES`].
pub fn read_results(path: &Path) -> Result<Results, String> {
    let text = report::read_text(path, MAX_BYTES, "heapworks-gas results file")?;
    Results::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Draws `dir/index.html` from the results file at `path`.
fn render(path: &Path, dir: &Path) -> Result<(), String> {
    let results = read_results(path)?;
    let outputs = Outputs {
        html_dir: Some(dir.to_path_buf()),
        ..Outputs::default()
    };
    outputs.check_writable().map_err(|e| e.to_string())?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let index = dir.join("index.html");
    report::write_atomically(&index, &report::gas::render(&results)).map_err(|e| e.to_string())?;
    eprintln!("wrote {}", index.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn finds_the_programs_own_json_option() {
        assert_eq!(
            json_option(&strings(&["--quick", "--json", "r.json"])),
            Some("r.json")
        );
        assert_eq!(json_option(&strings(&["--json=r.json"])), Some("r.json"));
        assert_eq!(json_option(&strings(&["--quick", "--csv", "r.csv"])), None);
        assert!(asks_for_help(&strings(&["--quick", "--help"])));
        assert!(!asks_for_help(&strings(&["--quick"])));
    }
}
