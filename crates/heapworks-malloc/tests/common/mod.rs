//! Shared test helpers: the library built by cargo, C programs compiled with the system
//! compiler, and runs with or without the library preloaded.
#![allow(dead_code)] // each test file uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// The crate's directory.
pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The target directory of the running test (`target/<profile>/deps/<test>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.ancestors()
        .nth(3)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// `libheapworks_malloc.so` as shipped (cargo profile `malloc`: release with
/// `panic = "abort"`, so `no_std`), built once per test run with the cargo running the tests
/// into the same target directory (a no-op when it is up to date).
pub fn library() -> &'static Path {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let target_dir = target_dir();
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "--profile",
                "malloc",
                "-p",
                "heapworks-malloc",
                "--lib",
                "--target-dir",
            ])
            .arg(&target_dir)
            .status()
            .expect("run cargo build for the library");
        assert!(status.success(), "building heapworks-malloc failed");
        target_dir.join("malloc/libheapworks_malloc.so")
    })
}

/// A fresh scratch directory under the system temp directory.
pub fn scratch_dir(tag: &str) -> PathBuf {
    static COUNT: AtomicU32 = AtomicU32::new(0);
    let unique = COUNT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "heapworks-malloc-{tag}-{}-{unique}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// How a compiled test program gets the library.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Linkage {
    /// Not linked: run it with `LD_PRELOAD` (or without, under glibc).
    Plain,
    /// Linked against `libheapworks_malloc.so` (found through an rpath).
    Linked,
}

/// Compiles `tests/c/<file>` with `compiler` (`cc` or `c++`) and returns the binary.
pub fn compile(file: &str, compiler: &str, linkage: Linkage) -> PathBuf {
    let source = crate_dir().join("tests/c").join(file);
    let binary = scratch_dir("bin").join(file.replace('.', "_"));
    let mut command = Command::new(compiler);
    command
        .args(["-O1", "-Wall", "-pthread", "-I"])
        .arg(crate_dir().join("include"))
        .arg("-o")
        .arg(&binary)
        .arg(&source);
    if linkage == Linkage::Linked {
        let dir = library().parent().unwrap();
        command
            .arg(format!("-L{}", dir.display()))
            .arg("-lheapworks_malloc")
            .arg(format!("-Wl,-rpath,{}", dir.display()));
    }
    let output = command.output().expect("run the C compiler");
    assert!(
        output.status.success(),
        "compiling {file} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    binary
}

/// Runs `command` with the library preloaded and `HEAPWORKS_STATS=1`.
pub fn run_preloaded(command: &mut Command) -> Output {
    command
        .env("LD_PRELOAD", library())
        .env("HEAPWORKS_STATS", "1")
        .output()
        .expect("run the program")
}

/// Runs `command` under glibc's malloc.
pub fn run_plain(command: &mut Command) -> Output {
    command
        .env_remove("LD_PRELOAD")
        .output()
        .expect("run the program")
}

/// Asserts the run succeeded, showing its output otherwise.
pub fn assert_success(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The statistics report in a run's stderr (proof the library served the process), with the
/// number after `label` on its line, e.g. `stat(&output, "large blocks:")`.
pub fn stat(output: &Output, label: &str) -> usize {
    stat_numbers(output, label)[0]
}

/// Every number on the statistics line that starts with `label`, in order.
pub fn stat_numbers(output: &Output, label: &str) -> Vec<usize> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("heapworks-malloc statistics"),
        "no heapworks statistics: the library was not interposed\n{stderr}"
    );
    let line = stderr
        .lines()
        .find(|line| line.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no {label} line in\n{stderr}"));
    let numbers: Vec<usize> = line.trim_start()[label.len()..]
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|word| word.parse().ok())
        .collect();
    assert!(!numbers.is_empty(), "no number after {label} in {line}");
    numbers
}

/// Makes `command` start under an address-space limit (`RLIMIT_AS`, what `ulimit -v` sets) of
/// `bytes`.
pub fn limit_address_space(command: &mut Command, bytes: u64) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        })
    }
}

/// Runs `command` (set up by the caller: preloaded or not) to its end, or kills it and every
/// process it started after `seconds` and fails the test as a hang: a deadlock must fail, not
/// stall the suite. The limit is many times a normal run's length; it measures nothing.
pub fn run_or_hang(command: &mut Command, seconds: u64) -> Output {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut child = command
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the program");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while child.try_wait().expect("wait for the program").is_none() {
        if std::time::Instant::now() > deadline {
            // SAFETY: kill only sends a signal, to the group the child leads.
            unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) };
            let output = child.wait_with_output().expect("reap the program");
            panic!(
                "the program hung for {seconds} s (deadlock?)\nstdout:\n{}",
                String::from_utf8_lossy(&output.stdout)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect the output")
}

/// Which mode of the library a misuse run preloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Default,
    /// `HEAPWORKS_SECURE=1`.
    Secure,
}

/// Runs `program` (set up with its arguments) with the library preloaded in `mode`.
pub fn run_in_mode(program: &mut Command, mode: Mode) -> Output {
    program.env("LD_PRELOAD", library());
    match mode {
        Mode::Default => program.env_remove("HEAPWORKS_SECURE"),
        Mode::Secure => program.env("HEAPWORKS_SECURE", "1"),
    };
    program.output().expect("run the program")
}

/// Runs `tests/c/misuse.c ARGS` in `mode` and asserts that the library caught the misuse: the
/// run aborted with a message of ours containing `expected` and naming an address.
pub fn assert_misuse_caught(args: &[&str], mode: Mode, expected: &str) {
    use std::os::unix::process::ExitStatusExt;
    let binary = compile("misuse.c", "cc", Linkage::Plain);
    let output = run_in_mode(Command::new(binary).args(args), mode);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        output.status.signal(),
        Some(libc::SIGABRT),
        "{args:?} was not caught ({}); stderr:\n{stderr}",
        output.status
    );
    assert!(
        stderr.contains(&format!("heapworks: {expected}")) && stderr.contains(" 0x"),
        "{args:?}: the message does not name the fault and the address:\n{stderr}"
    );
}
