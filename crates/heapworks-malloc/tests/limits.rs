//! malloc under an address-space limit (tests/c/limits.c): what glibc's malloc serves under
//! `ulimit -v`, ours must too (each case is run under glibc first, to prove it fair), and
//! exhaustion gives NULL with ENOMEM and recovers after frees.

mod common;

use common::{
    assert_success, compile, limit_address_space, run_plain, run_preloaded, stat, Linkage,
};
use std::process::{Command, Output};

/// Runs `limits ARGS` under `limit` bytes of address space (none: unlimited), under glibc and
/// then preloaded; both must succeed. Returns the preloaded run.
fn under_both(args: &[&str], limit: Option<u64>) -> Output {
    let binary = compile("limits.c", "cc", Linkage::Plain);
    let command = || {
        let mut command = Command::new(&binary);
        command.args(args);
        if let Some(bytes) = limit {
            limit_address_space(&mut command, bytes);
        }
        command
    };
    assert_success(&run_plain(&mut command()), &format!("glibc: {args:?}"));
    let output = run_preloaded(&mut command());
    assert_success(&output, &format!("heapworks: {args:?}"));
    output
}

#[test]
fn small_blocks_under_a_500_mb_limit() {
    under_both(&["small"], Some(500_000 << 10));
}

#[test]
fn a_block_of_1800_mib_under_a_2_gb_limit() {
    let output = under_both(&["huge", "1800"], Some(2_000_000 << 10));
    assert!(
        stat(&output, "address space:") >= 1,
        "no reservation gave way"
    );
}

#[test]
fn a_limit_lowered_after_start_up() {
    under_both(&["later", "500000"], None);
}

#[test]
fn exhaustion_fails_with_enomem_and_recovers() {
    under_both(&["exhaust"], Some(500_000 << 10));
}
