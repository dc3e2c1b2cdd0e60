//! # heapworks-trace
//!
//! Allocation traces of real programs and of synthetic scripts, and their replay against any
//! [`GlobalAlloc`](core::alloc::GlobalAlloc).
//!
//! - [`Trace`]: one global order of requests (malloc, calloc, aligned, realloc, free) issued by
//!   threads on blocks named by ids ([`model`]).
//! - Two formats, converted both ways without loss: the compact [`binary`] form (`.hwt`) and
//!   the [`text`] form, seed 003's script format (`a <id> <size>`, `r <id> <size>`, `f <id>`)
//!   extended for calloc, alignment and threads. [`read_trace`] and [`write_trace`] pick one.
//! - [`capture`]: runs a program under the `heapworks-capture` shim and turns what it recorded
//!   into one trace per process.
//! - [`replay`]: replays a trace against an allocator, timing ranges of requests, measuring
//!   utilization, and with `check` verifying every block.
//! - [`generate`]: seed 003's synthetic scripts (insert-delete, realloc-free).
//!
//! Invariants of the whole crate: malformed input of any kind is an error value naming where
//! it is wrong, never a panic; no input makes a reader or a replay use memory out of
//! proportion to it (files are read up to [`MAX_TRACE_BYTES`], traces hold at most
//! [`model::MAX_OPS`] requests, and replay tables hold one slot per id live at once).

pub mod binary;
pub mod bounded;
pub mod capture;
mod error;
pub mod generate;
mod ingest;
pub mod model;
mod raw;
pub mod replay;
mod slots;
pub mod text;
mod varint;

pub use error::{FormatError, Position, TraceIoError};
pub use model::{Op, OpKind, Trace, TraceStats};

use std::path::Path;

/// The two ways a trace can be stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// [`binary`]: compact, checksummed.
    Binary,
    /// [`text`]: seed 003's script format, extended.
    Text,
}

impl Format {
    /// The format a file name asks for: text for `.script`, `.txt` and `.rep`, else binary.
    pub fn for_path(path: &Path) -> Format {
        let extension = path.extension().and_then(|extension| extension.to_str());
        match extension {
            Some("script" | "txt" | "rep") => Format::Text,
            _ => Format::Binary,
        }
    }
}

/// Decodes a trace in either format (binary traces are told apart by their magic bytes).
pub fn decode(bytes: &[u8]) -> Result<Trace, FormatError> {
    if binary::is_binary(bytes) {
        binary::decode(bytes)
    } else {
        text::parse_bytes(bytes)
    }
}

/// Encodes `trace` in `format`.
pub fn encode(trace: &Trace, format: Format) -> Vec<u8> {
    match format {
        Format::Binary => binary::encode(trace),
        Format::Text => text::to_string(trace).into_bytes(),
    }
}

/// Largest trace file [`read_trace`] reads (256 MiB): a longer file, or a stream that never
/// ends such as `/dev/zero`, is an error once this many bytes were read.
pub const MAX_TRACE_BYTES: u64 = 1 << 28;

/// Reads a trace file in either format (at most [`MAX_TRACE_BYTES`]).
pub fn read_trace(path: &Path) -> Result<Trace, TraceIoError> {
    let bytes =
        bounded::read(path, MAX_TRACE_BYTES, "a trace").map_err(|source| TraceIoError::Io {
            path: path.to_owned(),
            source,
        })?;
    decode(&bytes).map_err(|source| TraceIoError::Format {
        path: path.to_owned(),
        source,
    })
}

/// Writes a trace file in the format its name asks for ([`Format::for_path`]).
pub fn write_trace(path: &Path, trace: &Trace) -> Result<(), TraceIoError> {
    let bytes = encode(trace, Format::for_path(path));
    std::fs::write(path, bytes).map_err(|source| TraceIoError::Io {
        path: path.to_owned(),
        source,
    })
}

/// Reads every trace in `dir` (files ending in `.hwt`, `.script`, `.txt` or `.rep`), sorted by
/// file name: the corpus in `traces/` for a benchmark or a test over every allocator. A
/// directory that holds no trace is an error ([`TraceIoError::NoTraces`]).
pub fn read_traces_in(dir: &Path) -> Result<Vec<(std::path::PathBuf, Trace)>, TraceIoError> {
    let io_error = |source| TraceIoError::Io {
        path: dir.to_owned(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error)? {
        let path = entry.map_err(io_error)?.path();
        let extension = path.extension().and_then(|extension| extension.to_str());
        if matches!(extension, Some("hwt" | "script" | "txt" | "rep")) {
            paths.push(path);
        }
    }
    if paths.is_empty() {
        return Err(TraceIoError::NoTraces {
            dir: dir.to_owned(),
        });
    }
    paths.sort();
    paths
        .into_iter()
        .map(|path| read_trace(&path).map(|trace| (path, trace)))
        .collect()
}
