//! The per-thread caches of medium blocks and large mappings (tests/c/caches.c): loops over one
//! size take no lock and map nothing again, the medium cache stays within its budget and goes
//! back when its thread exits, a freed mapping is split between smaller requests and joined
//! again, blocks of varying multi-MiB sizes reuse the pages already resident, and freed
//! mappings make way when the heap grows instead.

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
    let in_use = stat(&output, "core heaps:");
    assert!(in_use < 1 << 20, "{in_use} B still in use at exit");
    let medium = stat_numbers(&output, "medium blocks:");
    assert!(medium[1] > 2000);
    // A thread that only frees gives its whole cache back each time it is full, and its
    // budget never grows.
    assert_eq!(medium[2], 0, "the medium budget grew");
}

#[test]
fn medium_blocks_of_mixed_sizes_are_reused_by_their_thread() {
    // 100 000 steps over 64 slots, each freeing a block of 1 to 4 KiB and allocating another of
    // a random size there (about 160 KiB live, beyond the 64 KiB the cache may hold): freed
    // blocks serve later requests they hold with at most half to spare, and a full cache gives
    // back its oldest blocks, not all of them. Taking only blocks within an eighth of the
    // request and emptying the cache whenever it was full sent 40 000 requests to the central
    // heap; now about 2 000 go. Having given back 64 budgets' worth of blocks while serving
    // requests, the cache doubles its budget.
    let output = run("mixed", &[]);
    let medium = stat_numbers(&output, "medium blocks:");
    let (from_central, doublings) = (medium[0], medium[2]);
    assert!(
        from_central <= 10_000,
        "{from_central} of 100000 medium requests reached the central heap"
    );
    assert!(doublings >= 1, "the medium budget never grew");
}

#[test]
fn exiting_thread_gives_its_medium_cache_back() {
    // A budget of 8 MiB lets the thread keep 1 MiB of medium blocks until it exits.
    let output = run("exit", &[("HEAPWORKS_TCACHE_KIB", "8192")]);
    let in_use = stat(&output, "core heaps:");
    assert!(in_use < 256 << 10, "{in_use} B still in use at exit");
}

#[test]
fn freed_mapping_is_split_and_joined_again() {
    // 16 MiB freed, two 8 MiB blocks (one grown by realloc) and 16 MiB again: one mapping.
    let output = run("split", &[]);
    let mapped = stat(&output, "large blocks:");
    assert_eq!(mapped, 1, "{mapped} mappings made");
}

#[test]
fn cached_mappings_make_way_for_heap_growth() {
    let output = run("growth", &[]);
    // 12 MiB of freed mappings, resident, then 24 MiB of heap blocks: keeping the mappings
    // through the heap's growth would peak near 37 MiB, giving them back as it grows keeps
    // the peak near the heap's 24 MiB and the process's own couple of MiB.
    let stdout = String::from_utf8_lossy(&output.stdout);
    let maxrss_kib: usize = stdout
        .split_whitespace()
        .skip_while(|word| *word != "maxrss")
        .nth(1)
        .expect("maxrss")
        .parse()
        .unwrap();
    assert!(maxrss_kib < 31 << 10, "peak RSS {maxrss_kib} KiB");
    let large = stat_numbers(&output, "large blocks:");
    let (unmaps, made_way) = (large[3], large[4]);
    assert!(made_way >= 1, "the heap grew past cached mappings");
    assert!(unmaps >= 2, "{unmaps} mappings given back");
}

#[test]
fn varying_multi_mib_blocks_reuse_resident_pages() {
    let output = run("varying", &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let number_after = |label: &str| -> usize {
        let rest = &stdout[stdout.find(label).expect(label) + label.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    // Up to 25 MiB at once: about 6400 pages. Mapping each block afresh faults 100 times that;
    // keeping both an old mapping and a new one doubles the peak.
    let faults = number_after("faults");
    assert!(faults < 8_000, "{faults} page faults");
    let maxrss_kib = number_after("maxrss");
    assert!(maxrss_kib < 40 << 10, "peak RSS {maxrss_kib} KiB");
}

/// Medium requests that reached the core heaps when `members` other threads run while a
/// thread allocates and frees 8 blocks of 2 KiB ten times over.
fn medium_requests_in_a_crowd(members: &str) -> usize {
    let binary = compile("caches.c", "cc", Linkage::Plain);
    let output = run_preloaded(Command::new(&binary).args(["crowd", members]));
    assert_success(&output, "crowd");
    stat_numbers(&output, "medium blocks:")[0]
}

#[test]
fn threads_started_in_a_crowd_get_smaller_caches() {
    // Alone (with the main thread and one other), the thread's full budget keeps its 16 KiB of
    // medium blocks between rounds: only the first round reaches the core heap (9 requests,
    // stdio's buffer included). Among 64 threads its cache gets a share of eight budgets (an
    // eighth of one, so 8 KiB of medium blocks), and each round gives some blocks back to the
    // core heap and asks for them again (55 requests).
    let alone = medium_requests_in_a_crowd("1");
    let crowded = medium_requests_in_a_crowd("62");
    assert!(alone <= 12, "{alone} medium requests reached the core heap");
    assert!(
        crowded >= alone + 30,
        "{crowded} medium requests reached the core heap among 64 threads, {alone} alone"
    );
}
