//! Running one test of the calling test binary again in a child process, for tests whose
//! subject aborts the process (a misuse report): the parent sees how the child ended and what
//! it wrote to stderr, and a child that hangs (a deadlock) fails the test instead of stalling
//! the suite.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a child may run: many times what any of these tests needs; it measures nothing.
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs test `name` of this binary alone, with `marker` set in its environment (the test
/// does its misuse when it sees it), and returns how the child ended and its stderr. Panics
/// (naming `hang`) if the child runs past the timeout.
pub fn run_test_alone(name: &str, marker: &str, hang: &str) -> (ExitStatus, String) {
    let mut child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(marker, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the test binary");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if started.elapsed() > CHILD_TIMEOUT {
            let _ = child.kill();
            panic!("the child hung: {hang}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    (status, stderr)
}
