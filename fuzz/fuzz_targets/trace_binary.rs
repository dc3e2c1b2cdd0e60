//! Fuzzes the binary `.hwt` reader: the first byte's low bits say whether to put the magic
//! bytes in front of the rest (bit 0) and whether to end it with its correct checksum (bit 1),
//! so that inputs reach the decoder's every field rather than stopping at the magic or the
//! checksum. `binary::decode` must return a trace or an error naming a byte offset inside the
//! input, never panic or allocate without bound; every trace it accepts must pass
//! [`trace_checks::check`] (round trips, and a checked replay on heapworks).
#![no_main]

mod trace_checks;

use heapworks_trace::{binary, Position};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    let mut input = Vec::with_capacity(rest.len() + 16);
    if shape & 1 != 0 {
        input.extend_from_slice(&binary::MAGIC);
    }
    input.extend_from_slice(rest);
    if shape & 2 != 0 {
        let checksum = binary::checksum(&input);
        input.extend_from_slice(&checksum.to_le_bytes());
    }
    match binary::decode(&input) {
        Ok(trace) => trace_checks::check(&trace),
        Err(error) => {
            let Position::Byte(offset) = error.position else {
                panic!("a binary error names a byte offset: {error}");
            };
            assert!(offset <= input.len() as u64, "{error}");
        }
    }
});
