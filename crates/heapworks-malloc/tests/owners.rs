//! Thread-owned memory (tests/c/owners.c): blocks freed after their owner exited, remote frees
//! racing the owner's exit, an exited thread's memory adopted by the next thread, and forks in
//! the middle of all of it. Every block's cookies are checked when it is freed.

mod common;

use common::{assert_success, compile, run_or_hang, stat_numbers, Linkage};
use std::process::{Command, Output};

fn run(mode: &str) -> Output {
    let binary = compile("owners.c", "cc", Linkage::Plain);
    let mut command = Command::new(&binary);
    command.arg(mode);
    command
        .env("LD_PRELOAD", common::library())
        .env("HEAPWORKS_STATS", "1");
    let output = run_or_hang(&mut command, 120);
    assert_success(&output, mode);
    assert!(String::from_utf8_lossy(&output.stdout).contains(&format!("{mode}: ok")));
    output
}

#[test]
fn blocks_outlive_the_threads_that_made_them() {
    let output = run("churn");
    let caches = stat_numbers(&output, "thread caches:");
    assert!(caches[0] > 100, "{} threads started", caches[0]);
    // Threads freed blocks of other arenas, whose owners took them back.
    let arenas = stat_numbers(&output, "arenas:");
    assert!(
        arenas[1] > 0 && arenas[2] > 0,
        "no remote frees: {arenas:?}"
    );
}

#[test]
fn remote_frees_race_the_owners_exit() {
    run("race");
}

#[test]
fn an_exited_threads_memory_is_adopted() {
    let reused = reused_percent(&run("adopt"));
    // The second thread adopts the first one's arena: its blocks come back (a thread that
    // took new memory instead would reuse none).
    assert!(reused >= 50, "{reused} % of the blocks reused");
}

fn reused_percent(output: &Output) -> usize {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("reused "))
        .expect("a reused line")
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_medium_request_takes_returned_blocks_of_the_next_classes() {
    // The blocks another thread freed wait on the owner's remote stack of their class; a
    // request of the class below finds its own stack empty and takes them (a thread that cut
    // new blocks instead would reuse none).
    let reused = reused_percent(&run("nextclass"));
    assert!(reused >= 50, "{reused} % of the blocks reused");
}

#[test]
fn forks_in_the_middle_of_thread_churn() {
    run("fork");
}
