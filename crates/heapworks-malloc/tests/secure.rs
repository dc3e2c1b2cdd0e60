//! Secure mode (`HEAPWORKS_SECURE=1`, see the crate's `secure` module): the misuse the default
//! build catches, and also double frees of every size, writes after free, overflows into a
//! heap block's header or a freed neighbour, and foreign pointers; real programs run under it
//! with the same output as under glibc.

mod common;

use common::{
    assert_misuse_caught, assert_success, compile, run_in_mode, run_plain, Linkage, Mode,
};
use std::process::Command;

/// Runs `misuse ARGS` in secure mode; it must abort with a message containing `expected`.
fn caught(args: &[&str], expected: &str) {
    assert_misuse_caught(args, Mode::Secure, expected);
}

#[test]
fn double_frees_of_every_size() {
    for size in ["24", "64", "300", "1000", "4000", "100000", "1048576"] {
        caught(&["double", size], "double free of");
        caught(&["delayed", size], "double free of");
    }
}

#[test]
fn writes_after_free_are_found_when_the_quarantine_lets_the_block_go() {
    for size in ["24", "64", "300", "1000", "4000", "100000"] {
        caught(&["written", size], "write after free");
    }
}

#[test]
fn overflows_into_a_neighbour_are_caught() {
    // Slots (the canary word each ends with), heap blocks (the neighbour's header), a large
    // block (its guard page).
    for size in ["64", "300", "1000", "4000", "1048576"] {
        caught(&["overflow", size], "");
    }
}

#[test]
fn frees_after_the_thread_cache_is_gone_are_still_checked_and_wiped() {
    // A thread-exit destructor that runs after the library's frees with no cache: such a
    // free once went straight back to the heap, neither wiped nor held back.
    use std::os::unix::process::ExitStatusExt;
    let binary = compile("misuse.c", "cc", Linkage::Plain);
    for size in ["24", "64", "300", "1000", "4000", "100000"] {
        let output = run_in_mode(Command::new(&binary).args(["late", size]), Mode::Secure);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
        );
        assert_eq!(stdout, "late: wiped\n", "{size} B: {stderr}");
        assert_eq!(output.status.signal(), Some(libc::SIGABRT), "{size} B");
        assert!(
            stderr.contains("heapworks: double free of 0x"),
            "{size} B: {stderr}"
        );
    }
}

#[test]
fn wild_pointers_are_caught() {
    caught(&["wild"], "reading 0x");
}

#[test]
fn foreign_pointers_are_caught() {
    caught(&["stack"], "free of");
    caught(&["global"], "free of");
}

#[test]
fn programs_keep_their_output() {
    let sort = || {
        let mut command = Command::new("sort");
        command.arg(common::crate_dir().join("src/api.rs"));
        command
    };
    let glibc = run_plain(&mut sort());
    let ours = run_in_mode(&mut sort(), Mode::Secure);
    assert_success(&ours, "sort in secure mode");
    assert_eq!(ours.stdout, glibc.stdout);
}

#[test]
fn freed_large_blocks_held_back_keep_no_pages_resident() {
    // Secure mode holds the last 16 freed large mappings back, inaccessible, so that a second
    // free finds the freed mark; their pages must still go back to the OS. Twenty 40 MiB blocks,
    // each written whole and freed, kept 640 MiB resident before they did.
    let script = "b = None\n\
                  for i in range(20):\n    \
                      b = bytearray(40 << 20)\n    \
                      b[::4096] = b'\\x01' * (10 << 10)\n    \
                      del b\n\
                  print(int(open('/proc/self/statm').read().split()[1]) * 4096)";
    let mut python = Command::new("/usr/bin/python3");
    python.args(["-c", script]).env("HEAPWORKS_STATS", "1");
    let output = run_in_mode(&mut python, Mode::Secure);
    assert_success(&output, "python3 in secure mode");
    assert!(common::stat(&output, "large blocks:") >= 20);
    let resident: usize = String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .expect("python3 prints its resident bytes");
    assert!(
        resident < 128 << 20,
        "{resident} B resident after the blocks were freed"
    );
}

#[test]
fn blocks_freed_by_other_threads_come_back_to_their_owner() {
    // 200 rounds of 2048 blocks (slots, small and medium blocks) allocated by the main thread
    // and freed by a new thread each round: they wait on the main thread's remote stacks until
    // its refills file them. Secure mode's refills once never did, and kept 429 MB resident at
    // the end (the default build 4 MB).
    let binary = compile("owners.c", "cc", Linkage::Plain);
    let output = run_in_mode(Command::new(binary).arg("handback"), Mode::Secure);
    assert_success(&output, "owners handback in secure mode");
    let resident_kib: usize = String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("resident "))
        .expect("a resident line")
        .trim()
        .parse()
        .unwrap();
    assert!(
        resident_kib < 64 << 10,
        "{resident_kib} KiB resident after 200 rounds"
    );
}
