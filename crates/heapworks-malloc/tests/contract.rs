//! The C contract (tests/c/contract.c) against the library, linked and preloaded, and C++
//! `operator new`/`delete` reaching it through libstdc++.

mod common;

use common::{assert_success, compile, run_plain, run_preloaded, stat, Linkage};
use std::process::Command;

const GROUPS: [&str; 7] = [
    "zero sizes and NULL: ok",
    "impossible sizes: ok",
    "alignment APIs: ok",
    "usable sizes: ok",
    "realloc in place: ok",
    "calloc zeroes recycled memory: ok",
    "free keeps errno: ok",
];

fn assert_all_groups(stdout: &[u8]) {
    let stdout = String::from_utf8_lossy(stdout);
    for group in GROUPS {
        assert!(stdout.contains(group), "missing `{group}` in\n{stdout}");
    }
}

#[test]
fn contract_linked() {
    let binary = compile("contract.c", "cc", Linkage::Linked);
    let output = run_plain(Command::new(&binary).env("HEAPWORKS_STATS", "1"));
    assert_success(&output, "contract (linked)");
    assert_all_groups(&output.stdout);
    assert!(stat(&output, "large blocks:") > 0);
}

#[test]
fn contract_preloaded() {
    let binary = compile("contract.c", "cc", Linkage::Linked);
    let output = run_preloaded(&mut Command::new(&binary));
    assert_success(&output, "contract (preloaded)");
    assert_all_groups(&output.stdout);
}

#[test]
fn cxx_new_and_delete_reach_malloc() {
    let binary = compile("cxx_new.cpp", "c++", Linkage::Plain);
    let output = run_preloaded(&mut Command::new(&binary));
    assert_success(&output, "c++ program");
    assert!(String::from_utf8_lossy(&output.stdout).contains("c++ new/delete: ok"));
    // The only large request in the program is `new char[4 << 20]`.
    assert!(
        stat(&output, "large blocks:") >= 1,
        "operator new did not reach malloc"
    );
}
