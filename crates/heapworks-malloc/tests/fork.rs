//! fork in the situations that deadlock a careless malloc (tests/c/fork.c): while other threads
//! flush every stream and read lines (glibc's bug 19431: `getline` reallocs under its stream's
//! lock while `fflush(NULL)` holds the stream list's), and from signal handlers that interrupt
//! malloc, free and other forks in a single-threaded process. A hang fails the test.

mod common;

use common::{assert_success, compile, library, run_or_hang, Linkage};
use std::process::Command;

/// Runs `fork MODE` preloaded `runs` times; each run must finish and succeed.
fn fork_runs(mode: &str, runs: usize) {
    let binary = compile("fork.c", "cc", Linkage::Plain);
    for run in 0..runs {
        let output = run_or_hang(
            Command::new(&binary).arg(mode).env("LD_PRELOAD", library()),
            60,
        );
        assert_success(&output, &format!("fork {mode}, run {run}"));
        assert!(String::from_utf8_lossy(&output.stdout).contains(&format!("{mode}: ok")));
    }
}

#[test]
fn fork_while_threads_flush_and_read_lines() {
    fork_runs("stdio", 5);
}

#[test]
fn fork_from_signal_handlers_in_a_single_threaded_process() {
    fork_runs("signal", 5);
}
