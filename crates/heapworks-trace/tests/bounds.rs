//! Resource bounds of the readers and the replay: memory follows what a trace holds (its
//! requests and the ids live at once), never a number it names; oversized input is refused
//! with the limit in the message.

use heapworks_trace::model::{Liveness, Op, OpKind, Trace, MAX_ID, MAX_NOTES, MAX_OPS};
use heapworks_trace::replay::{replay, validate, ReplayError, ReplayOptions};
use heapworks_trace::{binary, read_trace, text, TraceIoError, MAX_TRACE_BYTES};
use std::alloc::System;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "heapworks-trace-bounds-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn op(id: u32, kind: OpKind) -> Op {
    Op {
        thread: 0,
        id,
        kind,
    }
}

#[test]
fn liveness_holds_one_slot_per_live_id_whatever_the_ids() {
    let mut trace = Trace::new();
    for index in 0..1000 {
        let id = MAX_ID - index * 60_000;
        trace.push(op(id, OpKind::Malloc { size: 8 })).unwrap();
        trace.push(op(id, OpKind::Free)).unwrap();
    }
    for id in [MAX_ID, 7, MAX_ID / 2] {
        trace.push(op(id, OpKind::Malloc { size: 8 })).unwrap();
    }
    let mut liveness = Liveness::new(&trace);
    for (index, request) in trace.ops().iter().enumerate() {
        liveness.apply(request);
        if index == 1999 {
            assert_eq!(liveness.slots(), 1, "one id live at a time");
        }
    }
    assert_eq!(liveness.slots(), 3, "three ids live at once");
}

#[test]
fn sparse_ids_replay_with_slots_handed_from_id_to_id() {
    // Ids far apart, freed and allocated so that slots pass from one id to another, within a
    // thread and across threads (a block freed by thread 1 whose slot thread 0 takes next);
    // the checker verifies every block's contents and that no two live blocks overlap.
    let scripts = [
        "a 67108863 100\na 5 200\nr 67108863 300\nf 5\na 40000000 50\n\
         f 67108863\nc 12 64\nr 40000000 500\nf 12\nf 40000000\n",
        "a 67108863 100\nt 1\nf 67108863\nt 0\na 5 64\nt 1\na 3 16\nf 5\nt 0\nf 3\n",
    ];
    let options = ReplayOptions {
        check: true,
        ..ReplayOptions::default()
    };
    for script in scripts {
        let trace = text::parse(script).unwrap();
        for _ in 0..20 {
            let report = replay(&trace, &System, &options).unwrap();
            assert_eq!(report.ops, trace.len() as u64);
        }
    }
}

#[test]
fn oversized_trace_files_are_refused_before_they_are_read() {
    let dir = scratch("oversized");
    let path = dir.join("huge.hwt");
    // Sparse: no disk space, and a reader that checked the size reads none of it.
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(MAX_TRACE_BYTES + 1).unwrap();
    let error = read_trace(&path).unwrap_err();
    assert!(matches!(error, TraceIoError::Io { .. }), "{error}");
    assert!(
        error
            .to_string()
            .contains("larger than the 268435456 bytes a trace may have"),
        "{error}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_binary_trace_announcing_more_than_max_ops_is_refused_before_allocating() {
    let mut bytes = binary::MAGIC.to_vec();
    bytes.push(1); // version
    bytes.push(0); // no notes
    let mut count = MAX_OPS as u64 + 1;
    while count >= 0x80 {
        bytes.push(count as u8 | 0x80);
        count >>= 7;
    }
    bytes.push(count as u8);
    // Enough bytes after the count that only the request bound refuses it.
    bytes.resize(bytes.len() + 2 * MAX_OPS + 16, 0);
    let error = binary::decode(&bytes).unwrap_err();
    assert!(
        error.message.contains(&format!(
            "operation count {} exceeds {MAX_OPS}",
            MAX_OPS + 1
        )),
        "{error}"
    );
}

#[test]
fn too_many_notes_are_refused_in_both_formats() {
    let comments = "#\n".repeat(MAX_NOTES + 1);
    let error = text::parse(&format!("{comments}a 1 8\n")).unwrap_err();
    assert!(error.message.contains("comment lines"), "{error}");
    assert_eq!(
        error.position,
        heapworks_trace::Position::Line(MAX_NOTES as u64 + 1)
    );
    let mut trace = Trace::new();
    trace.add_note(&"\n".repeat(MAX_NOTES));
    assert_eq!(trace.notes().len(), MAX_NOTES + 1);
    let error = binary::decode(&binary::encode(&trace)).unwrap_err();
    assert!(
        error
            .message
            .contains(&format!("note count {} exceeds", MAX_NOTES + 1)),
        "{error}"
    );
}

#[test]
fn sizes_no_layout_describes_are_refused_before_any_allocator_call() {
    for size in [u64::MAX, isize::MAX as u64 + 1] {
        let trace = text::parse(&format!("a 1 {size}\nf 1\n")).unwrap();
        let error = validate(&trace, &ReplayOptions::default()).unwrap_err();
        assert!(
            matches!(error, ReplayError::Unrepresentable { op: 0, size: s, .. } if s == size),
            "{error}"
        );
    }
}
