//! Fuzzes the text script reader: arbitrary bytes go to `text::parse_bytes`, which must return
//! a trace or an error naming a line, never panic or allocate without bound; every trace it
//! accepts must pass [`trace_checks::check`] (round trips, and a checked replay on heapworks).
#![no_main]

mod trace_checks;

use heapworks_trace::{text, Position};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match text::parse_bytes(data) {
        Ok(trace) => trace_checks::check(&trace),
        Err(error) => assert!(matches!(error.position, Position::Line(_)), "{error}"),
    }
});
