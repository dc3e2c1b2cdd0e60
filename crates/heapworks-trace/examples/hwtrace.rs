//! The trace chores `heapworks` has no command for, used to build `traces/` (see its README);
//! capturing and replaying are `heapworks trace` and `heapworks replay`:
//!
//! ```text
//! hwtrace convert IN OUT [--truncate N] [--note TEXT]
//! hwtrace generate insert-delete|realloc-free N OUT [--seed S]
//! hwtrace stats TRACE...
//! ```
//!
//! Formats follow file names: `.script`, `.txt` and `.rep` are text, anything else binary.

use heapworks_trace::{generate, read_trace, write_trace, Trace};
use std::path::Path;
use std::process::ExitCode;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("convert") => convert_command(&args[1..]),
        Some("generate") => generate_command(&args[1..]),
        Some("stats") => stats_command(&args[1..]),
        _ => Err("usage: hwtrace convert|generate|stats ... (see the source)".into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("hwtrace: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Takes the value after `flag` out of `args`, if the flag is there.
fn take_option(args: &mut Vec<String>, flag: &str) -> Result<Option<String>> {
    let Some(position) = args.iter().position(|arg| arg == flag) else {
        return Ok(None);
    };
    if position + 1 >= args.len() {
        return Err(format!("{flag} needs a value").into());
    }
    let value = args.remove(position + 1);
    args.remove(position);
    Ok(Some(value))
}

fn convert_command(args: &[String]) -> Result<()> {
    let mut args = args.to_vec();
    let truncate: Option<usize> = take_option(&mut args, "--truncate")?
        .map(|n| n.parse())
        .transpose()?;
    let note = take_option(&mut args, "--note")?;
    let [input, output] = args.as_slice() else {
        return Err("convert IN OUT [--truncate N] [--note TEXT]".into());
    };
    let mut trace = read_trace(Path::new(input))?;
    if let Some(len) = truncate {
        trace.truncate(len);
    }
    if let Some(note) = note {
        trace.add_note(&note);
    }
    write_trace(Path::new(output), &trace)?;
    print_stats(output, &trace);
    Ok(())
}

fn generate_command(args: &[String]) -> Result<()> {
    let mut args = args.to_vec();
    let seed: u64 = take_option(&mut args, "--seed")?.map_or(Ok(1), |seed| seed.parse())?;
    let [kind, n, output] = args.as_slice() else {
        return Err("generate insert-delete|realloc-free N OUT [--seed S]".into());
    };
    let n: u32 = n.parse()?;
    let trace = match kind.as_str() {
        "insert-delete" => generate::insert_delete(n, seed)?,
        "realloc-free" => generate::realloc_free(n, seed)?,
        other => return Err(format!("unknown script kind {other}").into()),
    };
    write_trace(Path::new(output), &trace)?;
    print_stats(output, &trace);
    Ok(())
}

fn stats_command(paths: &[String]) -> Result<()> {
    for path in paths {
        print_stats(path, &read_trace(Path::new(path))?);
    }
    Ok(())
}

fn print_stats(name: &str, trace: &Trace) {
    let stats = trace.stats();
    println!(
        "{name}: {} ops, {} threads: {} malloc, {} calloc, {} aligned, {} realloc, {} free; \
         {} B requested, peak live {} B",
        stats.ops,
        stats.threads,
        stats.mallocs,
        stats.callocs,
        stats.memaligns,
        stats.reallocs,
        stats.frees,
        stats.requested_bytes,
        stats.peak_live_bytes
    );
}
