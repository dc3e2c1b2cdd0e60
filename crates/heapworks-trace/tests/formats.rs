//! Binary and text formats: round trips, seed 003's scripts read and written exactly, and
//! malformed input turned into errors that name their place.

use heapworks_trace::model::{Op, OpKind, Trace, MAX_ID};
use heapworks_trace::{binary, decode, text, Format, Position};
use proptest::prelude::*;

fn op_kind() -> impl Strategy<Value = OpKind> {
    let size = prop_oneof![0u64..64, 0u64..100_000, any::<u64>()];
    prop_oneof![
        size.clone().prop_map(|size| OpKind::Malloc { size }),
        size.clone().prop_map(|size| OpKind::Calloc { size }),
        (size.clone(), 0u32..=32).prop_map(|(size, log2)| OpKind::Memalign {
            size,
            align: 1 << log2
        }),
        size.prop_map(|size| OpKind::Realloc { size }),
        Just(OpKind::Free),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let thread = prop_oneof![Just(0u32), 0u32..4, any::<u32>()];
    let id = prop_oneof![0u32..16, 0u32..=MAX_ID];
    (thread, id, op_kind()).prop_map(|(thread, id, kind)| Op { thread, id, kind })
}

fn trace() -> impl Strategy<Value = Trace> {
    let notes = prop::collection::vec("[^\r\n]{0,20}", 0..3);
    (notes, prop::collection::vec(op(), 0..200)).prop_map(|(notes, ops)| {
        let mut trace = Trace::new();
        for note in &notes {
            trace.add_note(note);
        }
        for op in ops {
            trace.push(op).expect("generated ops are valid");
        }
        trace
    })
}

proptest! {
    #[test]
    fn binary_round_trip(trace in trace()) {
        let bytes = binary::encode(&trace);
        prop_assert_eq!(binary::decode(&bytes).unwrap(), trace);
    }

    #[test]
    fn text_round_trip(trace in trace()) {
        let script = text::to_string(&trace);
        prop_assert_eq!(text::parse(&script).unwrap(), trace);
    }

    #[test]
    fn binary_to_text_to_binary_is_byte_exact(trace in trace()) {
        let bytes = binary::encode(&trace);
        let script = text::to_string(&binary::decode(&bytes).unwrap());
        prop_assert_eq!(binary::encode(&text::parse(&script).unwrap()), bytes);
    }

    #[test]
    fn damaged_binary_never_panics(
        trace in trace(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = binary::encode(&trace);
        for (at, bit) in flips {
            let index = at.index(bytes.len());
            bytes[index] ^= 1 << bit;
        }
        let _ = binary::decode(&bytes);
        let _ = binary::decode(&bytes[..cut.index(bytes.len())]);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = decode(&bytes);
        let mut magic = binary::MAGIC.to_vec();
        magic.extend_from_slice(&bytes);
        let _ = binary::decode(&magic);
    }
}

/// A seed 003 script, as the seed's harness reads it.
const SEED_SCRIPT: &str = "\
# insert and delete, three blocks
a 0 24
a 1 100

a 2 8
f 1
r 0 48
f 0
f 2
";

#[test]
fn seed_script_is_read_as_written() {
    let trace = text::parse(SEED_SCRIPT).unwrap();
    let ops: Vec<(u32, OpKind)> = trace.ops().iter().map(|op| (op.id, op.kind)).collect();
    assert_eq!(
        ops,
        [
            (0, OpKind::Malloc { size: 24 }),
            (1, OpKind::Malloc { size: 100 }),
            (2, OpKind::Malloc { size: 8 }),
            (1, OpKind::Free),
            (0, OpKind::Realloc { size: 48 }),
            (0, OpKind::Free),
            (2, OpKind::Free),
        ]
    );
    assert_eq!(trace.notes(), ["insert and delete, three blocks"]);
    assert_eq!(trace.threads(), [0]);
    let written = text::to_string(&trace);
    assert_eq!(written, SEED_SCRIPT.replace("\n\n", "\n"));
}

#[test]
fn extensions_are_read() {
    let script =
        "a 0 10\nt 3\nc 1 64\nm 2 100 4096\nt 0\nf 0\nt 3\nf 1 # trailing comment\n\tf 2\n";
    let trace = text::parse(script).unwrap();
    let ops = trace.ops();
    assert_eq!(
        ops[1],
        Op {
            thread: 3,
            id: 1,
            kind: OpKind::Calloc { size: 64 }
        }
    );
    assert_eq!(
        ops[2],
        Op {
            thread: 3,
            id: 2,
            kind: OpKind::Memalign {
                size: 100,
                align: 4096
            }
        }
    );
    assert_eq!(ops[3].thread, 0);
    assert_eq!(ops[5].thread, 3);
    assert_eq!(trace.threads(), [0, 3]);
    let stats = trace.stats();
    assert_eq!(
        (stats.mallocs, stats.callocs, stats.memaligns, stats.frees),
        (1, 1, 1, 3)
    );
    assert_eq!(stats.peak_live_bytes, 174);
}

#[test]
fn crlf_scripts_are_read() {
    let trace = text::parse("# note\r\na 0 1\r\nf 0\r\n").unwrap();
    assert_eq!(trace.len(), 2);
    assert_eq!(trace.notes(), ["note"]);
}

fn line_error(script: &str) -> (u64, String) {
    let error = text::parse(script).unwrap_err();
    let Position::Line(line) = error.position else {
        panic!("text errors name lines: {error}");
    };
    (line, error.to_string())
}

#[test]
fn text_errors_name_the_line() {
    let cases = [
        ("a 0 10\nx 1 2\n", 2, "unknown request `x`"),
        ("a 0\n", 1, "`a` takes 2 field(s)"),
        ("# c\n\na 0 ten\n", 3, "size `ten`"),
        ("a 0 1\nf 0 1\n", 2, "`f` takes 1 field(s)"),
        ("m 0 10 3\n", 1, "alignment 3 is not a power of two"),
        ("a 99999999999 1\n", 1, "larger than the largest id"),
        ("t -1\n", 1, "thread `-1`"),
        (
            "a 0 18446744073709551616\n",
            1,
            "size `18446744073709551616`",
        ),
    ];
    for (script, line, message) in cases {
        let (found_line, found) = line_error(script);
        assert_eq!(found_line, line, "{script:?}: {found}");
        assert!(found.contains(message), "{script:?}: {found}");
        assert!(found.starts_with(&format!("line {line}: ")), "{found}");
    }
    let error = text::parse_bytes(b"a 0 1\nf \xff\n").unwrap_err();
    assert_eq!(error.position, Position::Line(2));
}

fn sample_trace() -> Trace {
    let script =
        "# sample\na 0 24\nt 1\nc 1 4000\nm 2 100 64\nt 0\nr 0 300000\nf 1\nt 1\nf 0\nf 2\n";
    text::parse(script).unwrap()
}

#[test]
fn every_truncation_names_an_offset() {
    let bytes = binary::encode(&sample_trace());
    for cut in 0..bytes.len() {
        let error = binary::decode(&bytes[..cut]).unwrap_err();
        let Position::Byte(offset) = error.position else {
            panic!("binary errors name bytes: {error}");
        };
        assert!(offset <= cut as u64, "cut at {cut}: {error}");
        assert!(error.to_string().starts_with("byte offset "), "{error}");
    }
}

#[test]
fn every_single_bit_flip_is_an_error() {
    let bytes = binary::encode(&sample_trace());
    for index in 0..bytes.len() {
        for bit in 0..8 {
            let mut damaged = bytes.clone();
            damaged[index] ^= 1 << bit;
            let error = binary::decode(&damaged).unwrap_err();
            assert!(matches!(error.position, Position::Byte(_)), "{error}");
        }
    }
}

#[test]
fn padding_and_bad_headers_are_errors() {
    let mut bytes = binary::encode(&sample_trace());
    bytes.push(0);
    let error = binary::decode(&bytes).unwrap_err();
    assert!(error.to_string().contains("after the checksum"), "{error}");

    let error = binary::decode(b"HWTRACE?").unwrap_err();
    assert_eq!(error.position, Position::Byte(7));
    assert!(error.to_string().contains("wrong magic"), "{error}");

    let mut future = binary::MAGIC.to_vec();
    future.push(9);
    let error = binary::decode(&future).unwrap_err();
    assert!(error.to_string().contains("version 9"), "{error}");
}

#[test]
fn a_huge_announced_count_is_refused_without_allocating() {
    let mut bytes = binary::MAGIC.to_vec();
    bytes.extend_from_slice(&[1, 0]); // version 1, no notes
    bytes.extend_from_slice(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f]);
    let error = binary::decode(&bytes).unwrap_err();
    assert_eq!(error.position, Position::Byte(10));
    assert!(error.to_string().contains("operation count"), "{error}");
}

#[test]
fn binary_is_compact() {
    let mut trace = Trace::new();
    for id in 0..1000 {
        let kind = OpKind::Malloc {
            size: 16 + u64::from(id % 100),
        };
        trace
            .push(Op {
                thread: 0,
                id,
                kind,
            })
            .unwrap();
    }
    for id in 0..1000 {
        trace
            .push(Op {
                thread: 0,
                id,
                kind: OpKind::Free,
            })
            .unwrap();
    }
    let bytes = binary::encode(&trace);
    assert!(bytes.len() < 2000 * 4, "{} bytes for 2000 ops", bytes.len());
}

#[test]
fn formats_follow_file_names_and_content() {
    use std::path::Path;
    assert_eq!(Format::for_path(Path::new("x/insert.script")), Format::Text);
    assert_eq!(Format::for_path(Path::new("gcc.hwt")), Format::Binary);
    let trace = sample_trace();
    assert_eq!(decode(&binary::encode(&trace)).unwrap(), trace);
    assert_eq!(decode(text::to_string(&trace).as_bytes()).unwrap(), trace);
}
