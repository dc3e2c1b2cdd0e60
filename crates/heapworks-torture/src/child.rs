//! Child processes of `heapworks torture`: the C programs compiled into the run's scratch
//! directory (with [`heapworks_malloc_bench::process::compile_c`]), and runs of a program under
//! a timeout.
//!
//! Invariants: every run is the leader of its own process group, and when it ends (or its
//! time is up) the whole group is killed before the leader is reaped, so no child it forked
//! outlives the run and the group id cannot have been reused. Output is captured up to
//! [`OUTPUT_CAP`] bytes per stream (the rest is read and dropped, so a chatty child never
//! blocks on a full pipe).

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use heapworks_malloc_bench::process::compile_c;

use super::cases::Program;

/// Bytes kept of each of a child's output streams.
pub const OUTPUT_CAP: usize = 64 << 10;

/// How often a running child is polled.
const POLL: Duration = Duration::from_millis(2);

/// The C sources of the torture programs.
pub fn sources_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("c")
}

/// The compiled torture programs.
#[derive(Debug, Clone)]
pub struct Programs(HashMap<Program, PathBuf>);

impl Programs {
    /// Compiles every program into `dir`. `-fno-builtin` keeps the compiler from folding
    /// `free(malloc(n))` or a `malloc(SIZE_MAX)` away: every call must reach the malloc.
    pub fn compile(dir: &Path) -> Result<Self, String> {
        let sources = sources_dir();
        let flags = ["-O2", "-g", "-fno-builtin", "-pthread", "-w"];
        let mut binaries = HashMap::new();
        for program in Program::ALL {
            let binary = compile_c(&sources, program.stem(), dir, &flags)?;
            binaries.insert(program, binary);
        }
        Ok(Self(binaries))
    }

    /// The binary of `program`.
    pub fn path(&self, program: Program) -> &Path {
        &self.0[&program]
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Exited with this status.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
    /// Still running when its time was up (then killed with its group).
    Hung,
}

/// A finished run: how it ended and what it wrote.
#[derive(Debug, Clone)]
pub struct Ran {
    /// How it ended.
    pub end: End,
    /// Standard output (at most [`OUTPUT_CAP`] bytes).
    pub stdout: String,
    /// Standard error (at most [`OUTPUT_CAP`] bytes).
    pub stderr: String,
    /// From the start to the end (or the kill).
    pub elapsed: Duration,
}

/// Runs `command` (stdin empty, output captured) in its own process group, for at most
/// `timeout`.
pub fn run(command: &mut Command, timeout: Duration) -> Result<Ran, String> {
    let start = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let end = wait_until(&mut child, start + timeout);
    kill_group(child.id());
    let status = child.wait().map_err(|e| format!("wait: {e}"))?;
    let end = end.unwrap_or_else(|| end_of(status));
    Ok(Ran {
        end,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        elapsed: start.elapsed(),
    })
}

/// Waits for `child` to exit without reaping it (so its process group stays valid);
/// `Some(Hung)` when `deadline` passes first.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<End> {
    let pid = child.id() as libc::id_t;
    loop {
        // SAFETY: `info` is a plain struct the kernel fills; WNOWAIT leaves the child
        // unreaped, so `child.wait()` still owns reaping it.
        let exited = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let flags = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
            libc::waitid(libc::P_PID, pid, &mut info, flags) == 0 && info.si_pid() != 0
        };
        if exited {
            return None;
        }
        if Instant::now() >= deadline {
            return Some(End::Hung);
        }
        thread::sleep(POLL);
    }
}

/// Kills every process of the group led by `leader` (an unreaped child of ours).
fn kill_group(leader: u32) {
    // SAFETY: kill has no memory effects; the group is ours (the leader is unreaped, so its
    // id names no other group).
    unsafe {
        libc::kill(-(leader as libc::pid_t), libc::SIGKILL);
    }
}

fn end_of(status: std::process::ExitStatus) -> End {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => End::Exited(code),
        (None, Some(signal)) => End::Signaled(signal),
        (None, None) => End::Exited(-1),
    }
}

/// Reads a stream to its end on a thread, keeping the first [`OUTPUT_CAP`] bytes.
fn drain(stream: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    thread::spawn(move || {
        let Some(mut stream) = stream else {
            return String::new();
        };
        let mut kept = Vec::new();
        let mut buffer = [0u8; 8192];
        while let Ok(count) = stream.read(&mut buffer) {
            if count == 0 {
                break;
            }
            let room = OUTPUT_CAP.saturating_sub(kept.len());
            kept.extend_from_slice(&buffer[..count.min(room)]);
        }
        String::from_utf8_lossy(&kept).into_owned()
    })
}

/// A signal's name, e.g. `SIGSEGV`.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGABRT => "SIGABRT",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGKILL => "SIGKILL",
        _ => return format!("signal {signal}"),
    };
    name.to_string()
}
