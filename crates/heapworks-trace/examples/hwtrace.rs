//! A small command-line front end to the library, used to build `traces/` (see its README)
//! until `heapworks trace` and `heapworks replay` take over:
//!
//! ```text
//! hwtrace capture [--max-ops N] [--process NAME] [--keep-raw DIR] -o OUT -- CMD ARGS...
//! hwtrace convert IN OUT [--truncate N] [--note TEXT]
//! hwtrace generate insert-delete|realloc-free N OUT [--seed S]
//! hwtrace stats TRACE...
//! hwtrace replay [--check] [-r START [END]]... TRACE...     (against the system allocator)
//! ```
//!
//! Formats follow file names: `.script`, `.txt` and `.rep` are text, anything else binary.
//! `capture` reports on standard error, so the command's own output can be redirected.

use heapworks_trace::capture::{self, CaptureOptions};
use heapworks_trace::replay::{replay, Footprint, GlibcHeap, OpRange, ReplayOptions};
use heapworks_trace::{generate, read_trace, write_trace, Trace};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.first().map(String::as_str) {
        Some("capture") => capture_command(&args[1..]),
        Some("convert") => convert_command(&args[1..]),
        Some("generate") => generate_command(&args[1..]),
        Some("stats") => stats_command(&args[1..]),
        Some("replay") => replay_command(&args[1..]),
        _ => {
            Err("usage: hwtrace capture|convert|generate|stats|replay ... (see the source)".into())
        }
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

fn capture_command(args: &[String]) -> Result<()> {
    let split = args
        .iter()
        .position(|arg| arg == "--")
        .ok_or("capture needs `-- CMD ...`")?;
    let mut own = args[..split].to_vec();
    let command = &args[split + 1..];
    let out = take_option(&mut own, "-o")?.ok_or("capture needs -o OUT")?;
    let options = CaptureOptions {
        max_ops: take_option(&mut own, "--max-ops")?
            .map(|n| n.parse())
            .transpose()?,
        raw_dir: take_option(&mut own, "--keep-raw")?.map(PathBuf::from),
        process: take_option(&mut own, "--process")?,
        ..CaptureOptions::default()
    };
    let (program, program_args) = command.split_first().ok_or("capture needs a command")?;
    let summary = capture::run(program, program_args, Path::new(&out), &options)?;
    eprintln!(
        "{} in {:.3} s: {} process image(s)",
        summary.status,
        summary.elapsed.as_secs_f64(),
        summary.traces.len()
    );
    for written in &summary.traces {
        let stats = written.stats;
        eprintln!(
            "{}: {} ({}), {} ops ({} cut), {} threads, peak live {} B; {:?}",
            written.path.display(),
            written.exe,
            written.args.join(" "),
            stats.ops,
            written.cut_ops,
            stats.threads,
            stats.peak_live_bytes,
            written.ingest
        );
    }
    Ok(())
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

fn replay_command(args: &[String]) -> Result<()> {
    let mut check = false;
    let mut ranges = Vec::new();
    let mut paths = Vec::new();
    let mut rest = args.iter().peekable();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--check" => check = true,
            "-r" => {
                let start = rest.next().ok_or("-r needs START")?.parse()?;
                let end = rest.next_if(|next| next.parse::<usize>().is_ok());
                let end = end.map(|end| end.parse()).transpose()?;
                ranges.push(OpRange { start, end });
            }
            path => paths.push(path.to_owned()),
        }
    }
    let probe = GlibcHeap::new();
    let options = ReplayOptions {
        ranges: &ranges,
        check,
        footprint: Footprint::Probe(&probe),
        ..ReplayOptions::default()
    };
    for path in &paths {
        let trace = read_trace(Path::new(path))?;
        let report = replay(&trace, &std::alloc::System, &options)?;
        for range in &report.ranges {
            println!(
                "{path} [{}..{}): {} calls, {:.3} ms, average {:.1} ns, p99 {} ns",
                range.start,
                range.end,
                range.ops,
                range.total_ns as f64 / 1e6,
                range.average_ns,
                range.p99_ns
            );
        }
        println!(
            "{path}: peak live {} B, footprint {:?} B, utilization {:?}, wall {:.3} ms{}",
            report.peak_live_bytes,
            report.footprint_bytes,
            report.utilization,
            report.wall_ns as f64 / 1e6,
            if report.checked { ", checked" } else { "" }
        );
    }
    Ok(())
}
