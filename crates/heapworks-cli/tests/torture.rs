//! `heapworks torture` end to end: the quick torture passes under glibc's own malloc (the
//! reference every check was written against), and the misuse classifier tells a caught, a
//! silent, a crashed and a corrupting program apart on tiny C programs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use heapworks_cli::results::Outcome;
use heapworks_cli::torture::child::{self, End};
use heapworks_cli::torture::verdict::Misuse;

/// A scratch directory under the target directory, emptied on creation.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("heapworks-torture-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn quick_torture_passes_under_glibc() {
    let dir = scratch("glibc");
    let json = dir.join("torture.json");
    let output = Command::new(env!("CARGO_BIN_EXE_heapworks"))
        .args([
            "torture",
            "--quick",
            "--filter",
            "glibc",
            "--no-html",
            "--json",
        ])
        .arg(&json)
        .output()
        .expect("binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let text = std::fs::read_to_string(&json).unwrap();
    let results = heapworks_cli::report::json::parse(&text).unwrap();
    let mut verdicts = 0;
    for cell in &results.cells {
        assert_eq!(cell.allocator, "glibc");
        match (&cell.outcome, cell.workload.as_str()) {
            (Outcome::Verdict(verdict), "misuse") => {
                assert!(!verdict.is_empty());
            }
            (Outcome::Verdict(verdict), section) => {
                verdicts += 1;
                assert!(
                    verdict.starts_with("pass"),
                    "{section}/{}: {verdict}",
                    cell.case
                );
            }
            (Outcome::Measured(summary), _) => assert!(summary.median >= 0.0),
            (Outcome::Failed(why), _) => panic!("{}/{}: {why}", cell.workload, cell.case),
        }
    }
    assert!(verdicts >= 20, "only {verdicts} checks ran");
    assert!(stdout.contains("heapworks torture"), "{stdout}");
    assert!(stdout.contains("score"), "{stdout}");
}

/// Compiles a tiny C program whose `main` body is `body` into `dir`.
fn tiny_program(dir: &Path, name: &str, body: &str) -> PathBuf {
    let source = dir.join(format!("{name}.c"));
    let binary = dir.join(name);
    let text = format!(
        "#include <signal.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n\
         int main(void) {{ {body} }}\n"
    );
    std::fs::write(&source, text).unwrap();
    let status = Command::new("cc")
        .arg("-o")
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cannot compile {name}");
    binary
}

fn classify(binary: &Path) -> Misuse {
    let ran = child::run(&mut Command::new(binary), Duration::from_secs(10)).unwrap();
    Misuse::classify(&ran)
}

#[test]
fn the_classifier_tells_caught_silent_crashed_and_corrupted_apart() {
    let dir = scratch("classifier");
    let caught = tiny_program(
        &dir,
        "caught",
        "fputs(\"free(): double free detected\\n\", stderr); abort();",
    );
    let silent = tiny_program(&dir, "silent", "return 0;");
    let crashed = tiny_program(&dir, "crashed", "raise(SIGSEGV); return 0;");
    let unrelated = tiny_program(
        &dir,
        "unrelated",
        "fputs(\"panicked at tcache.rs: attempt to divide by zero\\n\", stderr); abort();",
    );
    let corrupted = tiny_program(
        &dir,
        "corrupted",
        "puts(\"corrupted: malloc returned 0x10 twice\"); return 3;",
    );
    assert_eq!(
        classify(&caught),
        Misuse::Caught("free(): double free detected".into())
    );
    assert_eq!(classify(&silent), Misuse::Silent);
    assert_eq!(classify(&crashed), Misuse::Crashed("SIGSEGV".into()));
    assert!(matches!(classify(&unrelated), Misuse::Crashed(_)));
    assert_eq!(
        classify(&corrupted),
        Misuse::Corrupted("malloc returned 0x10 twice".into())
    );
}

#[test]
fn a_hung_child_and_its_children_are_killed_at_the_timeout() {
    let dir = scratch("hang");
    let hang = tiny_program(&dir, "hang", "fork(); for (;;) pause();");
    let ran = child::run(&mut Command::new(hang), Duration::from_millis(300)).unwrap();
    assert_eq!(ran.end, End::Hung);
    assert!(ran.elapsed < Duration::from_secs(5));
    assert_eq!(Misuse::classify(&ran), Misuse::Hung);
}
