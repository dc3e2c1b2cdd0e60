//! Real programs under `LD_PRELOAD`, and the trace corpus replayed through malloc: wall time
//! (or the replayer's own time of the requests) and peak RSS.
//!
//! Every program is first run once under glibc, untimed, for the reference output. Before its
//! trials, each preloaded malloc runs it once through [`process::run_bound`] (the proof of
//! interposition), and the output must equal glibc's; so must every timed run's. A program
//! that is not installed, or whose input cannot be made, gives `missing` or failed cells.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use heapworks_trace::{encode, read_traces_in, Format};

use super::libraries::Library;
use super::process::{self, Measure, Programs};
use super::{MallocWorkload, Output, Task};
use heapworks_bench::replay::trace_name;
use heapworks_bench::workloads::{Better, Config, MetricSpec};

/// Wall time of a program, from spawn to exit.
const WALL_TIME: MetricSpec = MetricSpec::primary("wall time", "ms", Better::Lower);
/// The replayer's time of the requests alone.
const REPLAY_TIME: MetricSpec = MetricSpec::primary("replay time", "ms", Better::Lower);
/// Largest resident set, from `wait4`.
const PEAK_RSS: MetricSpec = MetricSpec::primary("peak RSS", "MiB", Better::Lower);

/// How a program's time is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Timing {
    /// Wall time of the process.
    Wall,
    /// The program prints `ns <time>` itself; that line is left out of the comparison.
    Reported,
}

/// One program, ready to run under any malloc.
#[derive(Debug, Clone)]
struct Program {
    measure: Measure,
    executable: PathBuf,
    args: Vec<OsString>,
    env: Vec<(&'static str, OsString)>,
    dir: PathBuf,
    timing: Timing,
}

impl Program {
    fn new(measure: &Measure, executable: PathBuf, dir: &Path, timing: Timing) -> Self {
        Self {
            measure: measure.clone(),
            executable,
            args: Vec::new(),
            env: vec![("LC_ALL", "C".into())],
            dir: dir.to_path_buf(),
            timing,
        }
    }

    fn args<A: Into<OsString>>(mut self, args: impl IntoIterator<Item = A>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    fn env(mut self, key: &'static str, value: impl Into<OsString>) -> Self {
        self.env.push((key, value.into()));
        self
    }

    /// The command, with no malloc chosen yet.
    fn command(&self) -> Command {
        let mut command = Command::new(&self.executable);
        command
            .args(&self.args)
            .current_dir(&self.dir)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// Runs under glibc's malloc; the output to compare with.
    fn reference(&self) -> Result<String, String> {
        let mut command = self.command();
        let captured = process::run(command.env_remove("LD_PRELOAD"))?;
        Ok(self.comparable(&captured.stdout))
    }

    /// The output without the lines that may differ between runs.
    fn comparable(&self, stdout: &str) -> String {
        match self.timing {
            Timing::Wall => stdout.to_string(),
            Timing::Reported => stdout
                .lines()
                .filter(|line| !line.starts_with("ns "))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// One timed run under `library`: time in ms and peak RSS in MiB.
    fn trial(&self, library: &Library, reference: &str) -> Result<Vec<f64>, String> {
        let finished = self.measure.run(library.apply(&mut self.command()))?;
        self.same_output(&finished.stdout, reference)?;
        let ms = match self.timing {
            Timing::Wall => finished.wall.as_secs_f64() * 1e3,
            Timing::Reported => {
                process::field(&finished.stdout, "ns").ok_or("the replayer printed no time")? / 1e6
            }
        };
        Ok(vec![ms, finished.peak_rss_mib()])
    }

    fn same_output(&self, stdout: &str, reference: &str) -> Result<(), String> {
        if self.comparable(stdout) == reference {
            Ok(())
        } else {
            Err("output differs from glibc's".into())
        }
    }

    /// The untimed check of `library`: `malloc` bound to it, the output glibc's.
    fn check(&self, library: &Library, reference: &str, logs: &Path) -> Result<(), String> {
        let captured = process::run_bound(&mut self.command(), library, logs)?;
        self.same_output(&captured.stdout, reference)
    }
}

/// The task of one program: a check per malloc, then trials of time and peak RSS.
fn task(
    workload: MallocWorkload,
    case: String,
    program: Result<Program, String>,
    logs: &Path,
) -> Task {
    let time = match workload {
        MallocWorkload::Traces => REPLAY_TIME,
        _ => WALL_TIME,
    };
    let outputs = vec![Output::new(&case, time), Output::new(&case, PEAK_RSS)];
    let prepared = Rc::new(program.and_then(|program| {
        let reference = program
            .reference()
            .map_err(|e| format!("setup failed: under glibc, {e}"))?;
        Ok((program, reference))
    }));
    let for_trials = Rc::clone(&prepared);
    let logs = logs.to_path_buf();
    Task {
        workload,
        label: case,
        outputs,
        deterministic: false,
        check: Some(Box::new(move |library| {
            let (program, reference) = prepared.as_ref().as_ref().map_err(Clone::clone)?;
            program.check(library, reference, &logs)
        })),
        run: Box::new(move |library, _seed| {
            let (program, reference) = for_trials.as_ref().as_ref().map_err(Clone::clone)?;
            program.trial(library, reference)
        }),
    }
}

/// Sizes of the programs' work at one scale.
struct Sizes {
    python_records: u64,
    gcc_functions: usize,
    git_commits: u64,
    sort_lines: u64,
    make_targets: usize,
    perl_items: u64,
    sqlite_rows: u64,
}

/// With `--quick`: each program well under a second.
const QUICK: Sizes = Sizes {
    python_records: 8_000,
    gcc_functions: 20,
    git_commits: 60,
    sort_lines: 50_000,
    make_targets: 500,
    perl_items: 20_000,
    sqlite_rows: 10_000,
};

/// Otherwise: each program under a second or so.
const DEFAULT: Sizes = Sizes {
    python_records: 40_000,
    gcc_functions: 100,
    git_commits: 300,
    sort_lines: 400_000,
    make_targets: 10_000,
    perl_items: 200_000,
    sqlite_rows: 100_000,
};

/// The real programs: python3, gcc, git, sort, make, perl and sqlite3, their inputs made in
/// `dir`.
pub fn program_tasks(config: &Config, measure: &Measure, dir: &Path) -> Vec<Task> {
    let sizes = config.pick(&QUICK, &DEFAULT, &DEFAULT);
    let logs = process::logs_dir(dir);
    let programs = [
        (
            format!(
                "python3, {} records (PYTHONMALLOC=malloc)",
                sizes.python_records
            ),
            python(measure, dir, sizes.python_records),
        ),
        (
            format!("gcc -O2 -S, {} functions", sizes.gcc_functions),
            gcc(measure, dir, sizes.gcc_functions),
        ),
        (
            format!("git log -p, {} commits", sizes.git_commits),
            git(measure, dir, sizes.git_commits),
        ),
        (
            format!("sort, {} lines", sizes.sort_lines),
            sort(measure, dir, sizes.sort_lines),
        ),
        (
            format!("make -n, {} targets", sizes.make_targets),
            make(measure, dir, sizes.make_targets),
        ),
        (
            format!("perl, {} items", sizes.perl_items),
            perl(measure, dir, sizes.perl_items),
        ),
        (
            format!("sqlite3, {} rows", sizes.sqlite_rows),
            sqlite(measure, dir, sizes.sqlite_rows),
        ),
    ];
    programs
        .into_iter()
        .map(|(case, program)| task(MallocWorkload::Programs, case, program, &logs))
        .collect()
}

/// An installed program: `/usr/bin/NAME` (Debian's, not a shim earlier on `PATH`), else the
/// first on `PATH`.
fn installed(name: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::iter::once(PathBuf::from("/usr/bin"))
        .chain(std::env::split_paths(&path))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| format!("missing: `{name}` is not installed"))
}

/// Writes a generated input.
fn write_input(path: &Path, contents: &str) -> Result<(), String> {
    std::fs::write(path, contents).map_err(|e| format!("setup failed: {}: {e}", path.display()))
}

fn python(measure: &Measure, dir: &Path, records: u64) -> Result<Program, String> {
    let script = process::sources_dir().join("allocations.py");
    Ok(
        Program::new(measure, installed("python3")?, dir, Timing::Wall)
            .args([script])
            .args([records.to_string()])
            .env("PYTHONMALLOC", "malloc")
            .env("PYTHONHASHSEED", "0")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    )
}

fn gcc(measure: &Measure, dir: &Path, functions: usize) -> Result<Program, String> {
    let source = dir.join("generated.c");
    write_input(&source, &super::inputs::c_source(functions))?;
    Ok(Program::new(measure, installed("gcc")?, dir, Timing::Wall)
        .args(["-O2", "-S", "-o", "-"])
        .args([source]))
}

fn git(measure: &Measure, dir: &Path, commits: u64) -> Result<Program, String> {
    let git = installed("git")?;
    let repo = dir.join("repo");
    let program = Program::new(measure, git, &repo, Timing::Wall)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", dir);
    let stream = dir.join("repo.fast-import");
    write_input(&stream, &super::inputs::git_stream(commits))?;
    std::fs::create_dir_all(&repo).map_err(|e| format!("setup failed: {e}"))?;
    let setup = |args: &[&str], stdin: Option<&Path>| -> Result<(), String> {
        let mut command = program.command();
        command.args(args).env_remove("LD_PRELOAD");
        if let Some(file) = stdin {
            let file = std::fs::File::open(file).map_err(|e| format!("setup failed: {e}"))?;
            command.stdin(file);
        }
        let status = command.status().map_err(|e| format!("setup failed: {e}"))?;
        status
            .success()
            .then_some(())
            .ok_or_else(|| format!("setup failed: git {} ({status})", args.join(" ")))
    };
    setup(&["init", "--quiet", "--initial-branch=main"], None)?;
    setup(&["fast-import", "--quiet"], Some(&stream))?;
    Ok(program.args(["--no-pager", "log", "-p", "--no-color"]))
}

fn sort(measure: &Measure, dir: &Path, lines: u64) -> Result<Program, String> {
    let input = dir.join("lines.txt");
    write_input(&input, &super::inputs::sort_lines(lines))?;
    Ok(Program::new(measure, installed("sort")?, dir, Timing::Wall).args([input]))
}

fn make(measure: &Measure, dir: &Path, targets: usize) -> Result<Program, String> {
    let makefile = dir.join("Makefile.bench");
    write_input(&makefile, &super::inputs::makefile(targets))?;
    Ok(Program::new(measure, installed("make")?, dir, Timing::Wall)
        .args(["-n", "-r", "-f"])
        .args([makefile]))
}

fn perl(measure: &Measure, dir: &Path, items: u64) -> Result<Program, String> {
    let script = dir.join("workload.pl");
    write_input(&script, &super::inputs::perl_script(items))?;
    Ok(Program::new(measure, installed("perl")?, dir, Timing::Wall).args([script]))
}

fn sqlite(measure: &Measure, dir: &Path, rows: u64) -> Result<Program, String> {
    let script = dir.join("workload.sql");
    write_input(&script, &super::inputs::sql_script(rows))?;
    Ok(
        Program::new(measure, installed("sqlite3")?, dir, Timing::Wall)
            .args([":memory:".into(), format!(".read {}", script.display())]),
    )
}

/// The trace corpus of `config`, each trace converted to text in `dir` and replayed by
/// the C replayer; a corpus that cannot be read is an error, with the reason.
pub fn trace_tasks(config: &Config, programs: &Programs, dir: &Path) -> Result<Vec<Task>, String> {
    let logs = process::logs_dir(dir);
    let traces = read_traces_in(&config.traces).map_err(|e| format!("trace corpus: {e}"))?;
    Ok(traces
        .into_iter()
        .map(|(path, trace)| {
            let name = trace_name(&path);
            let case = format!("{name}, {} requests", trace.len());
            let script = dir.join(format!("{name}.script"));
            let program = std::fs::write(&script, encode(&trace, Format::Text))
                .map_err(|e| format!("setup failed: {}: {e}", script.display()))
                .map(|()| {
                    Program::new(
                        &programs.measure,
                        programs.replay.clone(),
                        dir,
                        Timing::Reported,
                    )
                    .args([script])
                });
            task(MallocWorkload::Traces, case, program, &logs)
        })
        .collect())
}
