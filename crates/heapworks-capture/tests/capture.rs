//! The shim on real programs: C programs in `tests/programs` are compiled with the system C
//! compiler, run under the shim, and their traces compared with the calls they make.
//!
//! The shim is a cdylib, which cargo does not build for integration tests; the first test to
//! need it builds it ([`capture::build_shim`]) with the cargo running the tests, into the same
//! target directory and profile as the test itself.

use heapworks_trace::capture::{self, Capture, CaptureOptions, ProcessCapture};
use heapworks_trace::model::{Op, OpKind, Trace};
use heapworks_trace::replay::{replay, ReplayOptions};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// Builds the shim once per test run and returns its path.
fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| capture::build_shim().unwrap_or_else(|error| panic!("{error}")))
}

/// Compiles `tests/programs/<name>.c` into a fresh directory.
fn compile(name: &str) -> PathBuf {
    static COMPILED: AtomicU32 = AtomicU32::new(0);
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/programs/{name}.c"));
    let unique = COMPILED.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!(
        "heapworks-capture-test-{}-{unique}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let binary = dir.join(name);
    let status = Command::new("cc")
        .args(["-O0", "-pthread", "-o"])
        .arg(&binary)
        .arg(&source)
        .status()
        .expect("run the C compiler (cc)");
    assert!(status.success(), "compiling {name}.c failed");
    binary
}

/// Runs a test program under the shim; every process must be recorded whole, and the shim
/// must never have allocated inside a hook.
fn capture_program(name: &str) -> Capture {
    let options = CaptureOptions {
        shim: Some(shim().to_owned()),
        ..CaptureOptions::default()
    };
    let capture = capture::record(compile(name), &[] as &[&str], &options).unwrap();
    assert!(
        capture.status.success(),
        "{name} exited with {}",
        capture.status
    );
    for process in &capture.processes {
        let ingest = process.ingest;
        assert_eq!(
            (ingest.reentered_calls, ingest.dropped_calls),
            (0, 0),
            "{name}: {ingest:?}"
        );
    }
    capture
}

fn only_process(capture: &Capture) -> &ProcessCapture {
    assert_eq!(capture.processes.len(), 1, "{:#?}", capture.processes);
    &capture.processes[0]
}

fn op(id: u32, kind: OpKind) -> Op {
    Op {
        thread: 0,
        id,
        kind,
    }
}

#[test]
fn every_entry_point_is_recorded_exactly() {
    let capture = capture_program("known_calls");
    let process = only_process(&capture);
    let memalign = |size, align| OpKind::Memalign { size, align };
    let expected = [
        op(0, OpKind::Malloc { size: 1001 }),
        op(1, OpKind::Calloc { size: 91 }),
        op(0, OpKind::Realloc { size: 2002 }),
        op(2, memalign(3003, 64)),
        op(3, memalign(4096, 256)),
        op(4, memalign(5005, 32)),
        op(5, memalign(6006, 4096)),
        op(6, memalign(4096, 4096)),
        op(7, OpKind::Malloc { size: 110 }),
        op(7, OpKind::Realloc { size: 220 }),
        op(1, OpKind::Free),
        op(0, OpKind::Free),
        op(2, OpKind::Free),
        op(3, OpKind::Free),
        op(4, OpKind::Free),
        op(5, OpKind::Free),
        op(6, OpKind::Free),
        op(7, OpKind::Free),
        op(7, OpKind::Malloc { size: 10 }),
        op(7, OpKind::Free),
    ];
    assert_eq!(process.trace.ops(), expected);
    let ingest = process.ingest;
    assert_eq!(ingest.records, 22, "{ingest:?}");
    assert_eq!(
        (ingest.null_frees, ingest.failed_calls),
        (1, 1),
        "{ingest:?}"
    );
    assert_eq!(
        (
            ingest.unknown_blocks,
            ingest.implicit_frees,
            ingest.dropped_calls
        ),
        (0, 0, 0)
    );
    assert!(process.exe.ends_with("/known_calls"), "{}", process.exe);
    assert_eq!(process.args.len(), 1);
    assert!(!process.forked);
}

#[test]
fn threads_get_their_own_streams_and_cross_thread_frees_are_ordered() {
    let capture = capture_program("threads");
    let trace = &only_process(&capture).trace;
    let mut allocated_by = std::collections::HashMap::new();
    let mut workers = std::collections::BTreeSet::new();
    for (index, op) in trace.ops().iter().enumerate() {
        if let OpKind::Malloc { size } = op.kind {
            if (10_000..10_004).contains(&size) {
                workers.insert((op.thread, size));
                allocated_by.insert(op.id, (index, op.thread));
            }
        }
        if op.kind == OpKind::Free {
            if let Some((allocated_at, thread)) = allocated_by.remove(&op.id) {
                assert!(allocated_at < index);
                assert_eq!(op.thread, 0, "the main thread frees");
                assert_ne!(thread, 0, "workers allocate");
            }
        }
    }
    assert_eq!(
        workers.len(),
        4,
        "one size per worker, one worker per stream: {workers:?}"
    );
    let threads: std::collections::BTreeSet<u32> =
        workers.iter().map(|&(thread, _)| thread).collect();
    assert_eq!(threads.len(), 4);
    assert!(allocated_by.is_empty(), "every block was freed");
    let sizes = |size| {
        trace
            .ops()
            .iter()
            .filter(|op| op.kind == OpKind::Malloc { size })
            .count()
    };
    assert!((10_000..10_004).all(|size| sizes(size) == 100));
    let options = ReplayOptions {
        check: true,
        ..ReplayOptions::default()
    };
    let report = replay(trace, &std::alloc::System, &options).unwrap();
    assert_eq!(report.threads as usize, trace.threads().len());
}

fn has_malloc(trace: &Trace, size: u64) -> bool {
    trace
        .ops()
        .iter()
        .any(|op| op.kind == OpKind::Malloc { size })
}

#[test]
fn a_forked_child_writes_its_own_trace() {
    let capture = capture_program("forks");
    assert_eq!(capture.processes.len(), 2, "{:#?}", capture.processes);
    let (parent, child) = (&capture.processes[0], &capture.processes[1]);
    assert!(!parent.forked && child.forked);
    assert_eq!(child.parent_pid, parent.pid);
    for size in [7001, 7004] {
        assert!(has_malloc(&parent.trace, size) && !has_malloc(&child.trace, size));
    }
    for size in [7002, 7003] {
        assert!(has_malloc(&child.trace, size) && !has_malloc(&parent.trace, size));
    }
    assert_eq!(parent.trace.stats().frees, 2);
    assert_eq!(child.trace.stats().frees, 2);
    assert_eq!(child.ingest.unknown_blocks, 1, "the inherited block's free");
}

#[test]
fn records_survive_exec() {
    let capture = capture_program("execs");
    assert_eq!(capture.processes.len(), 2, "{:#?}", capture.processes);
    let (before, after) = (&capture.processes[0], &capture.processes[1]);
    assert_eq!(before.pid, after.pid);
    assert_eq!(before.trace.ops(), [op(0, OpKind::Malloc { size: 8001 })]);
    assert_eq!(
        after.trace.ops(),
        [op(0, OpKind::Malloc { size: 8002 }), op(0, OpKind::Free)]
    );
    assert_eq!(after.args, [after.args[0].clone(), "again".to_owned()]);
}

#[test]
fn run_writes_one_file_per_process() {
    let dir = std::env::temp_dir().join(format!("heapworks-capture-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("forks.hwt");
    let options = CaptureOptions {
        shim: Some(shim().to_owned()),
        max_ops: Some(3),
        ..CaptureOptions::default()
    };
    let summary = capture::run(compile("forks"), &[] as &[&str], &out, &options).unwrap();
    assert_eq!(summary.traces.len(), 2);
    assert_eq!(summary.traces[0].path, out);
    assert!(
        summary.traces[1].path.ends_with("forks.1-forks.hwt"),
        "{:?}",
        summary.traces[1].path
    );
    for written in &summary.traces {
        let trace = heapworks_trace::read_trace(&written.path).unwrap();
        assert_eq!(trace.len(), 3);
        assert_eq!(trace.stats(), written.stats);
    }
    assert_eq!(summary.traces[0].cut_ops, 1);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn without_a_capture_directory_the_shim_only_forwards() {
    let binary = compile("known_calls");
    let status = Command::new(binary)
        .env("LD_PRELOAD", shim())
        .env_remove(capture::DIR_ENV)
        .status()
        .unwrap();
    assert!(status.success());
}
