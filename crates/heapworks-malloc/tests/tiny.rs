//! Slots, the headerless blocks of requests up to 128 bytes and of promoted classes up to 384
//! bytes (tests/c/tiny.c): alignment, usable sizes, realloc and calloc; frees from another
//! thread and from a forked child; slabs that empty go back to the OS and serve later
//! requests; core blocks serve those requests when the slots' region cannot be had, and slots
//! still serve under an address-space limit too tight for the whole region;
//! classes promoted to slots once they carve enough core blocks, and only those up to 384 B.

mod common;

use common::{assert_success, compile, limit_address_space, run_preloaded, stat_numbers, Linkage};
use std::process::{Command, Output};

fn run(mode: &str) -> Output {
    run_with(
        mode,
        &mut Command::new(compile("tiny.c", "cc", Linkage::Plain)),
    )
}

fn run_with(mode: &str, command: &mut Command) -> Output {
    let output = run_preloaded(command.arg(mode));
    assert_success(&output, mode);
    assert!(String::from_utf8_lossy(&output.stdout).contains(&format!("{mode}: ok")));
    output
}

#[test]
fn slots_are_aligned_sized_and_zeroed() {
    let output = run("shape");
    let started = stat_numbers(&output, "tiny slabs:")[0];
    assert!(
        started >= 8,
        "{started} slabs: the slots did not serve every class"
    );
}

#[test]
fn slots_freed_by_other_threads_and_forked_children_are_reused() {
    let output = run("threads");
    // 200 000 blocks of 1 to 128 B (72 B slots on average) need about 880 slabs of 16 KiB;
    // the second round reuses them.
    let started = stat_numbers(&output, "tiny slabs:")[0];
    assert!(started < 1200, "{started} slabs started");
}

#[test]
fn hot_classes_up_to_384_bytes_move_to_slots() {
    let output = run("promoted");
    // 16 promoted classes of 300 blocks (at least 136 B) per size: at least a slab each.
    let started = stat_numbers(&output, "tiny slabs:")[0];
    assert!(started >= 16, "{started} slabs started");
}

#[test]
fn emptied_slabs_go_back_and_serve_again() {
    let output = run("reuse");
    // 1.6 million blocks of 16 B: 1563 slabs of 16 KiB (25 MiB). Freed, all but a few go back
    // to the OS; the second round takes them again instead of new ones.
    let slabs = stat_numbers(&output, "tiny slabs:");
    let (started, given_back) = (slabs[0], slabs[1]);
    assert!(started < 1600, "{started} slabs started");
    assert!(given_back > 2800, "{given_back} slabs given back");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let rss: Vec<usize> = stdout
        .lines()
        .find_map(|line| line.strip_prefix("rss "))
        .expect("an rss line")
        .split_whitespace()
        .map(|number| number.parse().unwrap())
        .collect();
    let (peak, after_free, at_exit) = (rss[0], rss[1], rss[2]);
    assert!(peak > 24 << 10, "peak RSS {peak} KiB");
    assert!(
        after_free < peak - (20 << 10) && at_exit < peak - (20 << 10),
        "RSS after the frees {after_free} KiB, at exit {at_exit} KiB, peak {peak} KiB"
    );
}

#[test]
fn flushed_slot_lists_serve_later_refills_whole() {
    let output = run("batches");
    // 40 000 slots of each of two classes freed by one thread: whatever its cache cannot hold
    // goes back in batches (2.5 MiB in all, of which an area keeps 128 KiB as batches), and
    // the next thread's refills take them first.
    let slabs = stat_numbers(&output, "tiny slabs:");
    let (given, taken) = (slabs[2], slabs[3]);
    assert!(given >= 10, "{given} lists kept as batches");
    assert!(taken >= 10, "{taken} refills from batches");
}

#[test]
fn core_blocks_serve_tiny_requests_without_the_region() {
    let output = run("fallback");
    let started = stat_numbers(&output, "tiny slabs:")[0];
    assert_eq!(started, 0, "slabs started in an occupied region");
}

#[test]
fn slots_serve_under_an_address_space_limit() {
    // 3 GiB of address space: room for the central heap, not for the slots' 50 GiB region
    // (25 areas of 2 GiB), which is then mapped piece by piece as slabs start.
    let mut command = Command::new(compile("tiny.c", "cc", Linkage::Plain));
    let output = run_with("shape", limit_address_space(&mut command, 3 << 30));
    let started = stat_numbers(&output, "tiny slabs:")[0];
    assert!(started > 0, "no slab started under the limit");
}
