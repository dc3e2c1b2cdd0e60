//! Child processes of `bench --malloc` (and `heapworks torture`): the C programs compiled at
//! run time from this crate's `c/`, runs of any program with its output, runs that prove
//! the preloaded malloc is the one called, and measured runs (wall time and peak RSS, taken by
//! `measure.c` with `wait4`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::libraries::Library;

/// The C sources of the workload programs.
pub fn sources_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("c")
}

/// The compiled C programs.
#[derive(Debug, Clone)]
pub struct Programs {
    /// `driver`: the fixed sequences for callgrind and the `free(malloc(n))` loop.
    pub driver: PathBuf,
    /// `threads`: producer/consumer and mixed sizes on two threads.
    pub threads: PathBuf,
    /// `scaling`: thread workloads at any thread count.
    pub scaling: PathBuf,
    /// `replay`: a trace in text form replayed through malloc.
    pub replay: PathBuf,
    /// `measure`: runs a program and takes its wall time and peak RSS.
    pub measure: Measure,
}

impl Programs {
    /// Compiles the programs with `cc -O2` into `dir`.
    pub fn compile(dir: &Path) -> Result<Self, String> {
        let sources = sources_dir();
        let compile = |name: &str, extra: &[&str]| {
            let flags = [&["-O2", "-fno-ipa-icf"], extra].concat();
            compile_c(&sources, name, dir, &flags)
        };
        Ok(Self {
            driver: compile("driver", &[])?,
            threads: compile("threads", &["-pthread"])?,
            scaling: compile("scaling", &["-pthread"])?,
            replay: compile("replay", &[])?,
            measure: Measure {
                launcher: compile("measure", &[])?,
                result: dir.join("measure.out"),
            },
        })
    }
}

/// Compiles `sources/NAME.c` with `cc` and `flags` into `dir/NAME`; the binary's path.
pub fn compile_c(
    sources: &Path,
    name: &str,
    dir: &Path,
    flags: &[&str],
) -> Result<PathBuf, String> {
    let binary = dir.join(name);
    let mut command = Command::new("cc");
    command
        .args(flags)
        .arg("-o")
        .arg(&binary)
        .arg(sources.join(format!("{name}.c")));
    run(&mut command).map_err(|e| format!("cannot compile {name}.c with cc: {e}"))?;
    Ok(binary)
}

/// What a program wrote.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `command` to a successful exit with stdin empty; its output. An error names the exit
/// status and the last line of stderr.
pub fn run(command: &mut Command) -> Result<Captured, String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    let captured = Captured {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    if output.status.success() {
        Ok(captured)
    } else {
        Err(failure(command, &output.status.to_string(), &captured))
    }
}

/// Where [`run_bound`] keeps the dynamic linker's logs, in the run's scratch directory.
pub fn logs_dir(scratch: &Path) -> PathBuf {
    scratch.join("ld-debug")
}

/// Runs `command` under `library` once with `LD_DEBUG=bindings` (the dynamic linker's log in
/// `logs`), which must bind `malloc` to the preloaded library: the proof of interposition.
/// glibc, which preloads nothing, just runs.
pub fn run_bound(
    command: &mut Command,
    library: &Library,
    logs: &Path,
) -> Result<Captured, String> {
    library.apply(command);
    let Some(preload) = &library.preload else {
        return run(command);
    };
    let _ = std::fs::remove_dir_all(logs);
    std::fs::create_dir_all(logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    command
        .env("LD_DEBUG", "bindings")
        .env("LD_DEBUG_OUTPUT", logs.join("bindings"));
    let captured = run(command);
    let bound = malloc_bound_to(logs, preload);
    let _ = std::fs::remove_dir_all(logs);
    let captured = captured?;
    if bound {
        Ok(captured)
    } else {
        Err(format!(
            "not interposed: the dynamic linker bound no `malloc` to {}",
            preload.display()
        ))
    }
}

/// Whether a log of `LD_DEBUG=bindings` in `logs` binds `malloc` to `library`.
fn malloc_bound_to(logs: &Path, library: &Path) -> bool {
    let needle = format!(" to {} [", library.display());
    let Ok(entries) = std::fs::read_dir(logs) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let log = std::fs::read_to_string(entry.path()).unwrap_or_default();
        log.lines()
            .any(|line| line.contains(&needle) && line.contains("normal symbol `malloc'"))
    })
}

fn failure(command: &Command, status: &str, captured: &Captured) -> String {
    let last = captured.stderr.lines().rev().find(|l| !l.trim().is_empty());
    format!(
        "{:?} failed ({status}){}",
        command.get_program(),
        last.map_or_else(String::new, |l| format!(": {}", l.trim()))
    )
}

/// A program that ran to a successful exit under [`Measure`].
#[derive(Debug, Clone)]
pub struct Finished {
    /// From the fork to the reaping of the process.
    pub wall: Duration,
    /// The largest resident set of the process and of the children it waited for, in KiB.
    pub peak_rss_kib: u64,
    /// What it wrote on standard output.
    pub stdout: String,
}

impl Finished {
    /// Peak RSS in MiB.
    pub fn peak_rss_mib(&self) -> f64 {
        self.peak_rss_kib as f64 / 1024.0
    }
}

/// The `measure` launcher and the file it reports in. Programs are measured through it
/// because the kernel counts the resident set a child had before its exec (a copy of the
/// parent's) in its peak: forked from this large process, every peak would be at least ours.
#[derive(Debug, Clone)]
pub struct Measure {
    launcher: PathBuf,
    result: PathBuf,
}

impl Measure {
    /// Runs `command` (program, arguments, environment, directory) through the launcher.
    pub fn run(&self, command: &Command) -> Result<Finished, String> {
        let mut launcher = Command::new(&self.launcher);
        launcher
            .arg(&self.result)
            .arg(command.get_program())
            .args(command.get_args());
        if let Some(dir) = command.get_current_dir() {
            launcher.current_dir(dir);
        }
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => launcher.env(key, value),
                None => launcher.env_remove(key),
            };
        }
        let _ = std::fs::remove_file(&self.result);
        let captured = run(&mut launcher)?;
        let mut report = String::new();
        std::fs::File::open(&self.result)
            .and_then(|mut file| file.read_to_string(&mut report))
            .map_err(|e| format!("measure left no result: {e}"))?;
        let fields: Vec<u64> = report
            .split_whitespace()
            .filter_map(|f| f.parse().ok())
            .collect();
        let [code, wall_ns, peak_rss_kib] = fields[..] else {
            return Err(format!("measure wrote `{}`", report.trim()));
        };
        if code != 0 {
            return Err(failure(command, &describe_exit(code), &captured));
        }
        Ok(Finished {
            wall: Duration::from_nanos(wall_ns),
            peak_rss_kib,
            stdout: captured.stdout,
        })
    }
}

/// `exit status N`, or `killed by signal N` for a shell-style code above 128.
fn describe_exit(code: u64) -> String {
    if code > 128 {
        format!("killed by signal {}", code - 128)
    } else {
        format!("exit status {code}")
    }
}

/// The value after `key` on the line of `stdout` that starts with `key`, e.g. `ns` in
/// `ns 1234`.
pub fn field(stdout: &str, key: &str) -> Option<f64> {
    stdout.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        (words.next() == Some(key)).then(|| words.next()?.parse().ok())?
    })
}
