//! The compact binary trace format (`.hwt`).
//!
//! Layout, every integer an unsigned LEB128 varint unless said otherwise:
//!
//! ```text
//! magic      8 bytes  "HWTRACE\x1a"
//! version    1
//! notes      count, then each: byte length, UTF-8 bytes
//! ops        total number of operations
//! streams    count, then one per thread, threads in increasing order:
//!              thread label, operation count, byte length, operations
//! checksum   8 bytes, little-endian FNV-1a 64 of every byte before it
//! ```
//!
//! An operation is a tag byte — kind in the low 3 bits (1 malloc, 2 calloc, 3 memalign,
//! 4 realloc, 5 free), in the high 5 bits the gap between its global sequence number and that
//! of the thread's previous operation, less one (31: the gap less 31 follows as a varint) —
//! then the id, then the size (all but free), then for memalign one byte, log2 of the
//! alignment. A single-threaded trace thus spends one byte on kind and order.
//!
//! Invariants: [`decode`] accepts exactly what [`encode`] produces: sequence numbers of all
//! streams together are `0..ops` each once, every stream is consumed to its last byte, and
//! the checksum matches. Any other input — truncated, bit-flipped, padded — is a
//! [`FormatError`] naming a byte offset; decoding never panics and never allocates more than
//! the input's length justifies, nor for more than [`MAX_OPS`] operations and [`MAX_NOTES`]
//! notes.

use crate::error::FormatError;
use crate::model::{check_align, check_id, Op, OpKind, Trace, MAX_NOTES, MAX_OPS, MAX_THREADS};
use crate::varint::{self, Cursor};

/// First bytes of a binary trace.
pub const MAGIC: [u8; 8] = *b"HWTRACE\x1a";
/// The format version this crate reads and writes.
pub const VERSION: u64 = 1;

const MALLOC: u8 = 1;
const CALLOC: u8 = 2;
const MEMALIGN: u8 = 3;
const REALLOC: u8 = 4;
const FREE: u8 = 5;
const GAP_ESCAPE: u64 = 31;
/// Fewest bytes an operation takes (tag and id).
const MIN_OP_BYTES: usize = 2;

/// Whether `bytes` start like a binary trace.
pub fn is_binary(bytes: &[u8]) -> bool {
    bytes.starts_with(&MAGIC)
}

/// Encodes `trace`.
pub fn encode(trace: &Trace) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    varint::put(&mut out, VERSION);
    varint::put(&mut out, trace.notes().len() as u64);
    for note in trace.notes() {
        varint::put(&mut out, note.len() as u64);
        out.extend_from_slice(note.as_bytes());
    }
    varint::put(&mut out, trace.len() as u64);
    varint::put(&mut out, trace.threads().len() as u64);
    for &thread in trace.threads() {
        let (count, stream) = encode_stream(trace, thread);
        varint::put(&mut out, u64::from(thread));
        varint::put(&mut out, count);
        varint::put(&mut out, stream.len() as u64);
        out.extend_from_slice(&stream);
    }
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

fn encode_stream(trace: &Trace, thread: u32) -> (u64, Vec<u8>) {
    let mut stream = Vec::new();
    let mut count = 0;
    let mut next_seq = 0u64;
    for (seq, op) in trace.ops().iter().enumerate() {
        if op.thread != thread {
            continue;
        }
        encode_op(&mut stream, op, seq as u64 - next_seq);
        next_seq = seq as u64 + 1;
        count += 1;
    }
    (count, stream)
}

fn encode_op(out: &mut Vec<u8>, op: &Op, gap: u64) {
    let kind = match op.kind {
        OpKind::Malloc { .. } => MALLOC,
        OpKind::Calloc { .. } => CALLOC,
        OpKind::Memalign { .. } => MEMALIGN,
        OpKind::Realloc { .. } => REALLOC,
        OpKind::Free => FREE,
    };
    out.push(kind | (gap.min(GAP_ESCAPE) as u8) << 3);
    if gap >= GAP_ESCAPE {
        varint::put(out, gap - GAP_ESCAPE);
    }
    varint::put(out, u64::from(op.id));
    if let Some(size) = op.kind.size() {
        varint::put(out, size);
    }
    if let OpKind::Memalign { align, .. } = op.kind {
        out.push(align.trailing_zeros() as u8);
    }
}

/// Decodes a binary trace.
pub fn decode(bytes: &[u8]) -> Result<Trace, FormatError> {
    let mut cursor = Cursor::new(bytes);
    read_magic(&mut cursor)?;
    let version = cursor.varint("format version")?;
    if version != VERSION {
        return Err(FormatError::at_byte(
            MAGIC.len(),
            format!("format version {version} is not supported (this reader knows {VERSION})"),
        ));
    }
    let notes = read_notes(&mut cursor)?;
    let slots = read_streams(&mut cursor)?;
    read_checksum(&mut cursor)?;
    if !cursor.is_empty() {
        return Err(cursor.error(format!("{} bytes after the checksum", cursor.remaining())));
    }
    let mut trace = Trace::new();
    for note in &notes {
        trace.add_note(note);
    }
    for (op, offset) in slots.into_iter().flatten() {
        trace
            .push(op)
            .map_err(|invalid| FormatError::at_byte(offset, invalid.to_string()))?;
    }
    Ok(trace)
}

fn read_magic(cursor: &mut Cursor) -> Result<(), FormatError> {
    for &expected in &MAGIC {
        let offset = cursor.offset();
        if cursor.byte("magic")? != expected {
            return Err(FormatError::at_byte(
                offset,
                "not a heapworks binary trace (wrong magic bytes)",
            ));
        }
    }
    Ok(())
}

fn read_notes(cursor: &mut Cursor) -> Result<Vec<String>, FormatError> {
    let most_notes = cursor.remaining().min(MAX_NOTES) as u64;
    let count = cursor.varint_at_most(most_notes, "note count")?;
    (0..count).map(|_| read_note(cursor)).collect()
}

fn read_note(cursor: &mut Cursor) -> Result<String, FormatError> {
    let length = cursor.varint_at_most(cursor.remaining() as u64, "note length")?;
    let bytes = cursor.split(length as usize, "note")?;
    let note = std::str::from_utf8(bytes.rest()).map_err(|error| {
        FormatError::at_byte(bytes.offset() + error.valid_up_to(), "note is not UTF-8")
    })?;
    if let Some(index) = note.find(['\n', '\r']) {
        return Err(FormatError::at_byte(
            bytes.offset() + index,
            "note contains a line break",
        ));
    }
    Ok(note.to_owned())
}

/// Operations decoded so far, by sequence number, with the offset each was read at.
type Slots = Vec<Option<(Op, usize)>>;

fn read_streams(cursor: &mut Cursor) -> Result<Slots, FormatError> {
    let most_ops = (cursor.remaining() / MIN_OP_BYTES).min(MAX_OPS) as u64;
    let op_count = cursor.varint_at_most(most_ops, "operation count")? as usize;
    let most_streams = op_count.min(MAX_THREADS) as u64;
    let stream_count = cursor.varint_at_most(most_streams, "stream count")?;
    let mut slots: Slots = vec![None; op_count];
    let mut placed = 0;
    let mut previous_thread = None;
    for _ in 0..stream_count {
        let thread_offset = cursor.offset();
        let thread = cursor.varint_at_most(u64::from(u32::MAX), "thread label")? as u32;
        if previous_thread.is_some_and(|previous| thread <= previous) {
            return Err(FormatError::at_byte(
                thread_offset,
                format!("stream of thread {thread} is out of order or repeated"),
            ));
        }
        previous_thread = Some(thread);
        placed += read_stream(cursor, thread, &mut slots)?;
    }
    if placed != op_count {
        return Err(cursor.error(format!(
            "streams hold {placed} operations but the header announced {op_count}"
        )));
    }
    Ok(slots)
}

/// Reads one thread's stream into `slots`; returns how many operations it held.
fn read_stream(cursor: &mut Cursor, thread: u32, slots: &mut Slots) -> Result<usize, FormatError> {
    let most_ops = (cursor.remaining() / MIN_OP_BYTES) as u64;
    let count = cursor.varint_at_most(most_ops, "stream operation count")?;
    let length = cursor.varint_at_most(cursor.remaining() as u64, "stream length")?;
    let mut stream = cursor.split(length as usize, "stream")?;
    let mut next_seq = 0u64;
    for _ in 0..count {
        let offset = stream.offset();
        let (gap, op) = read_op(&mut stream, thread)?;
        let seq = next_seq
            .checked_add(gap)
            .filter(|&seq| seq < slots.len() as u64);
        let Some(seq) = seq else {
            return Err(FormatError::at_byte(
                offset,
                format!(
                    "sequence gap {gap} leaves the trace's {} operations",
                    slots.len()
                ),
            ));
        };
        let slot = &mut slots[seq as usize];
        if slot.is_some() {
            return Err(FormatError::at_byte(
                offset,
                format!("sequence number {seq} is used twice"),
            ));
        }
        *slot = Some((op, offset));
        next_seq = seq + 1;
    }
    if !stream.is_empty() {
        return Err(stream.error(format!(
            "stream of thread {thread} has {} bytes after its {count} operations",
            stream.remaining()
        )));
    }
    Ok(count as usize)
}

/// Reads one operation: the gap before its sequence number, and the operation.
fn read_op(stream: &mut Cursor, thread: u32) -> Result<(u64, Op), FormatError> {
    let tag_offset = stream.offset();
    let tag = stream.byte("operation tag")?;
    let mut gap = u64::from(tag >> 3);
    if gap == GAP_ESCAPE {
        gap = GAP_ESCAPE.saturating_add(stream.varint("sequence gap")?);
    }
    let id_offset = stream.offset();
    let id = check_id(stream.varint("id")?)
        .map_err(|invalid| FormatError::at_byte(id_offset, invalid.to_string()))?;
    let kind = match tag & 7 {
        MALLOC => OpKind::Malloc {
            size: stream.varint("size")?,
        },
        CALLOC => OpKind::Calloc {
            size: stream.varint("size")?,
        },
        REALLOC => OpKind::Realloc {
            size: stream.varint("size")?,
        },
        MEMALIGN => read_memalign(stream)?,
        FREE => OpKind::Free,
        unknown => {
            return Err(FormatError::at_byte(
                tag_offset,
                format!("unknown operation kind {unknown}"),
            ))
        }
    };
    Ok((gap, Op { thread, id, kind }))
}

fn read_memalign(stream: &mut Cursor) -> Result<OpKind, FormatError> {
    let size = stream.varint("size")?;
    let offset = stream.offset();
    let log2 = stream.byte("alignment")?;
    let align = 1u64
        .checked_shl(u32::from(log2))
        .ok_or_else(|| FormatError::at_byte(offset, format!("alignment 2^{log2} is too large")))?;
    let align =
        check_align(align).map_err(|invalid| FormatError::at_byte(offset, invalid.to_string()))?;
    Ok(OpKind::Memalign { size, align })
}

fn read_checksum(cursor: &mut Cursor) -> Result<(), FormatError> {
    let offset = cursor.offset();
    let computed = checksum(cursor.consumed());
    let stored = cursor.u64_le("checksum")?;
    if stored != computed {
        return Err(FormatError::at_byte(
            offset,
            format!("checksum {stored:#018x} does not match the data before it ({computed:#018x}): the trace is corrupt"),
        ));
    }
    Ok(())
}

/// The checksum a trace ends with: FNV-1a, 64 bits, of every byte before it (any single
/// changed byte changes it).
pub fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
