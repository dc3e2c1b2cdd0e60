//! The corpus in `traces/`: every trace reads, is internally consistent, and replays under
//! `check` against the system allocator (the CLI's tests do the same for every allocator).

use heapworks_trace::model::{OpKind, Trace};
use heapworks_trace::replay::{replay, ReplayError, ReplayOptions};
use heapworks_trace::{binary, read_traces_in, text, Format};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn corpus() -> Vec<(PathBuf, Trace)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces");
    read_traces_in(&dir).unwrap_or_else(|error| panic!("{error}"))
}

/// Frees of a block by a thread other than the one that allocated it.
fn cross_thread_frees(trace: &Trace) -> usize {
    let mut owner = HashMap::new();
    let mut count = 0;
    for op in trace.ops() {
        match op.kind {
            OpKind::Free => {
                if owner
                    .remove(&op.id)
                    .is_some_and(|thread| thread != op.thread)
                {
                    count += 1;
                }
            }
            OpKind::Realloc { .. } => {}
            _ => {
                owner.insert(op.id, op.thread);
            }
        }
    }
    count
}

#[test]
fn the_whole_corpus_replays_under_check() {
    let files = corpus();
    assert!(files.len() >= 7, "{} traces", files.len());
    let mut threaded = 0;
    for (path, trace) in &files {
        let options = ReplayOptions {
            check: true,
            ..ReplayOptions::default()
        };
        let report = replay(trace, &std::alloc::System, &options)
            .unwrap_or_else(|error: ReplayError| panic!("{}: {error}", path.display()));
        assert_eq!(
            report.null_frees + report.null_reallocs + report.leaked_blocks,
            0,
            "{}",
            path.display()
        );
        assert!(
            !trace.notes().is_empty(),
            "{} says where it came from",
            path.display()
        );
        if trace.threads().len() > 1 {
            threaded += 1;
            println!(
                "{}: {} cross-thread frees",
                path.display(),
                cross_thread_frees(trace)
            );
        }
    }
    assert!(threaded >= 1, "the corpus has a multi-threaded trace");
}

#[test]
fn corpus_files_are_stored_as_their_extension_says() {
    for (path, trace) in corpus() {
        let bytes = std::fs::read(&path).unwrap();
        let rewritten = match Format::for_path(&path) {
            Format::Binary => binary::encode(&trace),
            Format::Text => text::to_string(&trace).into_bytes(),
        };
        assert!(
            rewritten == bytes,
            "{} is not in canonical form",
            path.display()
        );
    }
}
