//! Capturing traces of real programs: runs a command with the `heapworks-capture` shim
//! preloaded and turns what it recorded into one trace per process image.
//!
//! Entry points: [`run`] (what `heapworks trace -o FILE -- CMD ...` does) and [`record`]
//! (the same, keeping the traces in memory). [`locate_shim`] finds the shim.
//!
//! Invariants:
//! - The command runs with `LD_PRELOAD` naming the shim (before any preload it already had)
//!   and `HEAPWORKS_CAPTURE_DIR` naming a fresh private directory, which is removed afterwards
//!   unless asked to keep it. Everything the command starts inherits both, so children and
//!   `exec`ed programs are traced too, each into its own raw file.
//! - Processes are listed in the order they started; the first is the command itself. An
//!   image that made no request (only `free(NULL)`, or none at all) is left out.
//! - Each trace's notes say which process it came from, with its arguments, and whether it
//!   was cut.
//! - The command's exit status is reported, not judged: a failing command still yields its
//!   traces.

use crate::error::FormatError;
use crate::ingest::{ingest, IngestStats};
use crate::model::{Trace, TraceStats};
use crate::{bounded, raw, write_trace, TraceIoError};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// Environment variable naming the shim to preload, overriding the search.
pub const SHIM_ENV: &str = "HEAPWORKS_CAPTURE_LIB";
/// File name of the shim cargo builds.
pub const SHIM_FILE: &str = "libheapworks_capture.so";
/// Environment variable through which the shim learns where to write.
pub const DIR_ENV: &str = "HEAPWORKS_CAPTURE_DIR";

/// How to capture.
#[derive(Clone, Debug, Default)]
pub struct CaptureOptions {
    /// The shim to preload; found with [`locate_shim`] when `None`.
    pub shim: Option<PathBuf>,
    /// Keep only the first requests of each process (long captures make slow replays).
    pub max_ops: Option<usize>,
    /// Keep only the processes whose executable's file name is this (`cc1` of a `gcc` run).
    pub process: Option<String>,
    /// Keep the raw files (in this directory, which must not exist yet) instead of a
    /// temporary one in `/dev/shm` (or the temporary directory) that is removed.
    pub raw_dir: Option<PathBuf>,
}

/// One traced process image.
#[derive(Clone, Debug)]
pub struct ProcessCapture {
    pub pid: u32,
    pub parent_pid: u32,
    /// It began as a `fork` child of a traced process.
    pub forked: bool,
    /// `/proc/self/exe` of the image.
    pub exe: String,
    /// Its arguments, the program name first.
    pub args: Vec<String>,
    /// What became of its recorded calls.
    pub ingest: IngestStats,
    /// Requests dropped by [`CaptureOptions::max_ops`].
    pub cut_ops: u64,
    /// The trace.
    pub trace: Trace,
}

impl ProcessCapture {
    /// A short name: the file name of the executable.
    pub fn name(&self) -> &str {
        self.exe.rsplit('/').next().unwrap_or(&self.exe)
    }
}

/// The outcome of [`record`].
#[derive(Clone, Debug)]
pub struct Capture {
    /// How the command ended.
    pub status: ExitStatus,
    /// Wall time of the command under the shim.
    pub elapsed: Duration,
    /// Every process image that was traced, in order of start.
    pub processes: Vec<ProcessCapture>,
}

/// One trace file written by [`run`].
#[derive(Clone, Debug)]
pub struct WrittenTrace {
    pub path: PathBuf,
    pub pid: u32,
    pub exe: String,
    pub args: Vec<String>,
    pub stats: TraceStats,
    pub ingest: IngestStats,
    pub cut_ops: u64,
}

/// The outcome of [`run`].
#[derive(Clone, Debug)]
pub struct CaptureSummary {
    pub status: ExitStatus,
    pub elapsed: Duration,
    /// The files written: the command's own trace first, at the path asked for.
    pub traces: Vec<WrittenTrace>,
}

/// Why a capture failed.
#[derive(Debug)]
pub enum CaptureError {
    /// The shim was not found; build it with `cargo build --release -p heapworks-capture`.
    ShimNotFound { searched: Vec<PathBuf> },
    /// The command could not be started.
    Spawn {
        program: OsString,
        source: std::io::Error,
    },
    /// A file or directory could not be used.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A raw file the shim wrote is malformed.
    Raw { path: PathBuf, source: FormatError },
    /// A trace could not be written.
    Write(TraceIoError),
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::ShimNotFound { searched } => {
                write!(f, "{SHIM_FILE} not found (looked at ")?;
                for (index, path) in searched.iter().enumerate() {
                    let separator = if index == 0 { "" } else { ", " };
                    write!(f, "{separator}{}", path.display())?;
                }
                write!(
                    f,
                    "); build it with `cargo build --release -p heapworks-capture` or set {SHIM_ENV}"
                )
            }
            CaptureError::Spawn { program, source } => {
                write!(f, "cannot run {}: {source}", program.to_string_lossy())
            }
            CaptureError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            CaptureError::Raw { path, source } => write!(f, "{}: {source}", path.display()),
            CaptureError::Write(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for CaptureError {}

/// Finds the shim: `$HEAPWORKS_CAPTURE_LIB`, else beside the running executable or one
/// directory up (where cargo puts it when the executable is a test, example or tool of the
/// same build).
pub fn locate_shim() -> Result<PathBuf, CaptureError> {
    if let Some(path) = std::env::var_os(SHIM_ENV) {
        return Ok(PathBuf::from(path));
    }
    let exe = std::env::current_exe().map_err(|source| CaptureError::Io {
        path: PathBuf::from("/proc/self/exe"),
        source,
    })?;
    let searched: Vec<PathBuf> = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(SHIM_FILE))
        .collect();
    match searched.iter().find(|path| path.is_file()) {
        Some(found) => Ok(found.clone()),
        None => Err(CaptureError::ShimNotFound { searched }),
    }
}

/// Builds the shim with cargo for the build the running executable belongs to — a test,
/// example or tool in `<target>/<profile>/` or `<target>/<profile>/{deps,examples}/` of this
/// workspace — and returns its path. Meant for tests and development checkouts (cargo does
/// not build a cdylib for another package's tests); needs `cargo` (`$CARGO` or on `PATH`) and
/// this workspace's sources where they were when this crate was compiled.
pub fn build_shim() -> Result<PathBuf, CaptureError> {
    let exe = std::env::current_exe().map_err(|source| CaptureError::Io {
        path: PathBuf::from("/proc/self/exe"),
        source,
    })?;
    let mut profile_dir = exe.parent().unwrap_or(Path::new("/"));
    if profile_dir.ends_with("deps") || profile_dir.ends_with("examples") {
        profile_dir = profile_dir.parent().unwrap_or(Path::new("/"));
    }
    let profile = profile_dir
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("debug");
    let profile = if profile == "debug" { "dev" } else { profile };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../heapworks-capture/Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .args(["build", "--quiet", "--profile", profile, "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(profile_dir.parent().unwrap_or(Path::new("/")));
    let status = command.status().map_err(|source| CaptureError::Spawn {
        program: cargo,
        source,
    })?;
    let shim = profile_dir.join(SHIM_FILE);
    if !status.success() || !shim.is_file() {
        return Err(CaptureError::ShimNotFound {
            searched: vec![shim],
        });
    }
    Ok(shim)
}

/// Runs `program args...` under the shim and returns every process's trace.
pub fn record<S: AsRef<OsStr>>(
    program: impl AsRef<OsStr>,
    args: &[S],
    options: &CaptureOptions,
) -> Result<Capture, CaptureError> {
    let shim = match &options.shim {
        Some(shim) => shim.clone(),
        None => locate_shim()?,
    };
    let shim =
        std::fs::canonicalize(&shim).map_err(|source| CaptureError::Io { path: shim, source })?;
    let raw_dir = RawDir::create(options.raw_dir.clone())?;
    let mut command = Command::new(program.as_ref());
    command
        .args(args)
        .env("LD_PRELOAD", preload_list(&shim))
        .env(DIR_ENV, &raw_dir.path);
    let started = Instant::now();
    let status = command.status().map_err(|source| CaptureError::Spawn {
        program: program.as_ref().to_owned(),
        source,
    })?;
    let elapsed = started.elapsed();
    let mut processes = read_raw_dir(&raw_dir.path, options.max_ops)?;
    processes.retain(|process| {
        let wanted = options
            .process
            .as_ref()
            .is_none_or(|name| process.name() == name);
        wanted && !process.trace.is_empty()
    });
    Ok(Capture {
        status,
        elapsed,
        processes,
    })
}

/// Runs `program args...` under the shim and writes one trace per process: the first (the
/// command itself, or the first kept by [`CaptureOptions::process`]) at `out`, the others
/// beside it as `<stem>.<n>-<executable>.<extension>`. The format follows `out`'s extension
/// ([`crate::Format::for_path`]).
pub fn run<S: AsRef<OsStr>>(
    program: impl AsRef<OsStr>,
    args: &[S],
    out: &Path,
    options: &CaptureOptions,
) -> Result<CaptureSummary, CaptureError> {
    let capture = record(program, args, options)?;
    let mut traces = Vec::with_capacity(capture.processes.len());
    for (index, process) in capture.processes.into_iter().enumerate() {
        let path = trace_path(out, index, process.name());
        write_trace(&path, &process.trace).map_err(CaptureError::Write)?;
        traces.push(WrittenTrace {
            path,
            pid: process.pid,
            stats: process.trace.stats(),
            exe: process.exe,
            args: process.args,
            ingest: process.ingest,
            cut_ops: process.cut_ops,
        });
    }
    Ok(CaptureSummary {
        status: capture.status,
        elapsed: capture.elapsed,
        traces,
    })
}

fn preload_list(shim: &Path) -> OsString {
    let mut list = shim.as_os_str().to_owned();
    if let Some(existing) = std::env::var_os("LD_PRELOAD").filter(|existing| !existing.is_empty()) {
        list.push(":");
        list.push(existing);
    }
    list
}

/// The path of the `index`-th process's trace (the command itself is 0).
fn trace_path(out: &Path, index: usize, name: &str) -> PathBuf {
    if index == 0 {
        return out.to_owned();
    }
    let stem = out.file_stem().unwrap_or_default().to_string_lossy();
    let safe_name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut file = format!("{stem}.{index}-{safe_name}");
    if let Some(extension) = out.extension() {
        file.push('.');
        file.push_str(&extension.to_string_lossy());
    }
    out.with_file_name(file)
}

/// Reads every raw file in `dir` into a trace, in order of process start.
pub fn read_raw_dir(
    dir: &Path,
    max_ops: Option<usize>,
) -> Result<Vec<ProcessCapture>, CaptureError> {
    let io_error = |source| CaptureError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error)? {
        let path = entry.map_err(io_error)?.path();
        if path.extension().is_some_and(|extension| extension == "raw") {
            files.push(read_raw_file(&path, max_ops)?);
        }
    }
    files.sort_by_key(|(start_ns, process)| (*start_ns, process.pid));
    Ok(files.into_iter().map(|(_, process)| process).collect())
}

fn read_raw_file(
    path: &Path,
    max_ops: Option<usize>,
) -> Result<(u64, ProcessCapture), CaptureError> {
    let bytes =
        bounded::read(path, raw::MAX_RAW_BYTES, "a raw capture file").map_err(|source| {
            CaptureError::Io {
                path: path.to_owned(),
                source,
            }
        })?;
    let raw_error = |source| CaptureError::Raw {
        path: path.to_owned(),
        source,
    };
    let file = raw::parse(&bytes).map_err(raw_error)?;
    let (mut trace, ingest) = ingest(&file).map_err(raw_error)?;
    let full_len = trace.len();
    if let Some(max_ops) = max_ops {
        trace.truncate(max_ops);
    }
    let header = file.header;
    trace.add_note(&format!(
        "captured by heapworks-capture from pid {}: {}",
        header.pid,
        header.args.join(" ")
    ));
    if trace.len() < full_len {
        trace.add_note(&format!(
            "cut to its first {} of {full_len} requests",
            trace.len()
        ));
    }
    let process = ProcessCapture {
        pid: header.pid,
        parent_pid: header.parent_pid,
        forked: header.forked,
        exe: header.exe,
        args: header.args,
        ingest,
        cut_ops: (full_len - trace.len()) as u64,
        trace,
    };
    Ok((header.start_ns, process))
}

/// The directory raw files are written to; removed on drop unless the caller named it.
struct RawDir {
    path: PathBuf,
    keep: bool,
}

impl RawDir {
    fn create(asked: Option<PathBuf>) -> Result<RawDir, CaptureError> {
        let keep = asked.is_some();
        let path = match asked {
            Some(path) => create(path)?,
            None => create(temporary_dir_name(Path::new(MEMORY_DIR)))
                .or_else(|_| create(temporary_dir_name(&std::env::temp_dir())))?,
        };
        let path = std::fs::canonicalize(&path).map_err(|source| CaptureError::Io {
            path: path.clone(),
            source,
        })?;
        Ok(RawDir { path, keep })
    }
}

impl Drop for RawDir {
    fn drop(&mut self) {
        if !self.keep {
            // Best effort: a leftover temporary directory is harmless.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Where raw files go unless asked otherwise: memory-backed, so the shim's records cost no
/// disk writes (about 3 points less overhead than `/tmp` on a gcc run).
const MEMORY_DIR: &str = "/dev/shm";

fn create(path: PathBuf) -> Result<PathBuf, CaptureError> {
    match std::fs::create_dir(&path) {
        Ok(()) => Ok(path),
        Err(source) => Err(CaptureError::Io { path, source }),
    }
}

fn temporary_dir_name(base: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.subsec_nanos());
    let name = format!(
        "heapworks-capture-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    base.join(name)
}
