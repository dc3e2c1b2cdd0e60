//! `heapworks gas ARGS...`: runs the `heapworks-gas` program with the same arguments.
//!
//! heapworks-gas links Gear's instrumenter, which is GPL-3.0, so it is a program of its own
//! (crate `heapworks-gas`) and never linked into this MIT OR Apache-2.0 binary: this command
//! only finds it (beside this executable, as cargo builds both into one target directory, or
//! on `PATH`) and runs it.

use std::path::PathBuf;
use std::process::Command;

use clap::Args;

/// The program's name.
const PROGRAM: &str = "heapworks-gas";

#[derive(Debug, Args)]
pub struct GasArgs {
    /// Arguments for heapworks-gas (`heapworks gas --help` shows its own help with `-- --help`).
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

/// Runs heapworks-gas and passes its failure on.
pub fn gas(args: GasArgs) -> Result<(), String> {
    let program = program();
    let status = Command::new(&program)
        .args(&args.args)
        .status()
        .map_err(|e| {
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
