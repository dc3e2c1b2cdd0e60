//! Multi-threaded stress with verification (tests/c/stress.c): cookies checked at free, blocks
//! handed between threads, threads created and destroyed, forks while other threads allocate.

mod common;

use common::{assert_success, compile, run_preloaded, stat_numbers, Linkage};
use std::process::Command;

#[test]
fn threads_handoffs_churn_and_fork() {
    let binary = compile("stress.c", "cc", Linkage::Plain);
    // The library is the optimized build whatever the tests' profile (common::library).
    let output = run_preloaded(Command::new(&binary).arg("300000"));
    assert_success(&output, "stress");
    assert!(String::from_utf8_lossy(&output.stdout).contains("stress: ok"));
    // Threads were created and destroyed, and gave their caches back.
    let caches = stat_numbers(&output, "thread caches:");
    assert!(caches[0] > 5);
    // Blocks freed by one thread reached another's refills as whole transfer batches
    // (started, retired, refills, of which with a transfer batch, ...).
    assert!(caches[3] > 0, "no refill took a transfer batch: {caches:?}");
}

#[test]
fn stress_with_tiny_caches_flushes_often() {
    let binary = compile("stress.c", "cc", Linkage::Plain);
    let output = run_preloaded(
        Command::new(&binary)
            .arg("30000")
            .env("HEAPWORKS_TCACHE_KIB", "0")
            .env("HEAPWORKS_LARGE_CACHE_MIB", "0"),
    );
    assert_success(&output, "stress with tiny caches");
    assert!(String::from_utf8_lossy(&output.stdout).contains("stress: ok"));
}
