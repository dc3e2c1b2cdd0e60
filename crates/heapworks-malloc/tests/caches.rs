//! The per-thread caches of medium blocks and large mappings (tests/c/caches.c): loops over one
//! size take no lock and map nothing again, the medium cache stays within its budget and goes
//! back when its thread exits, and a reused mapping is cut down to the size asked for.

mod common;

use common::{assert_success, compile, run_preloaded, stat, stat_numbers, Linkage};
use std::process::{Command, Output};

fn run(mode: &str, envs: &[(&str, &str)]) -> Output {
    let binary = compile("caches.c", "cc", Linkage::Plain);
    let output = run_preloaded(Command::new(&binary).arg(mode).envs(envs.iter().copied()));
    assert_success(&output, mode);
    assert!(String::from_utf8_lossy(&output.stdout).contains(&format!("{mode}: ok")));
    output
}

#[test]
fn loops_over_one_size_stay_in_the_thread() {
    let output = run("loops", &[]);
    // 10 000 iterations at each of 5 KB, 50 KB and 200 KB: only the first of each (and stdio's
    // buffer) reaches the central heap.
    let from_central = stat(&output, "medium blocks:");
    assert!(
        from_central <= 10,
        "{from_central} medium requests reached the central heap"
    );
    // 500 KB and 5 MB: one mapping each, then the thread's slot serves every iteration.
    let large = stat_numbers(&output, "large blocks:");
    let (mapped, reused_shared) = (large[0], large[1]);
    assert!(mapped <= 2, "{mapped} mappings made");
    assert!(
        reused_shared <= 2,
        "{reused_shared} blocks came from the shared cache"
    );
}

#[test]
fn medium_cache_stays_within_its_budget() {
    // 3000 blocks of 1 KiB to 200 KiB (about 300 MB) freed: the cache keeps at most an eighth
    // of the 512 KiB budget plus one block, and the central heap gets the rest back.
    let output = run("bounded", &[]);
    let in_use = stat(&output, "central heap:");
    assert!(in_use < 1 << 20, "{in_use} B still in use at exit");
    assert!(stat_numbers(&output, "medium blocks:")[1] > 2000);
}

#[test]
fn exiting_thread_gives_its_medium_cache_back() {
    // A budget of 8 MiB lets the thread keep 1 MiB of medium blocks until it exits.
    let output = run("exit", &[("HEAPWORKS_TCACHE_KIB", "8192")]);
    let in_use = stat(&output, "central heap:");
    assert!(in_use < 256 << 10, "{in_use} B still in use at exit");
}

#[test]
fn reused_mapping_is_cut_down_to_size() {
    run("shrink", &[]);
}
