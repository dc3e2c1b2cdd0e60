//! Reader of the raw capture files written by the `heapworks-capture` shim.
//!
//! The layout is defined, with its invariants, in `heapworks-capture/src/raw.rs`: a 4096-byte
//! header, then 64-byte records; a record whose op is 0 was never completed and is skipped;
//! only `reserved` bytes of records count, cut to the file's length.
//!
//! Invariant: [`parse`] never panics; a malformed file is a [`FormatError`] at a byte offset.

use crate::error::FormatError;
use crate::model::MAX_OPS;

const MAGIC: [u8; 8] = *b"HWCAPRAW";
const VERSION: u32 = 1;
const HEADER_BYTES: usize = 4096;
const RECORD_BYTES: usize = 64;
const EXE_OFFSET: usize = 64;
const EXE_BYTES: usize = 1024;
const REENTERED_OFFSET: usize = EXE_OFFSET + EXE_BYTES;
const CMDLINE_OFFSET: usize = REENTERED_OFFSET + 8;
const CMDLINE_BYTES: usize = HEADER_BYTES - CMDLINE_OFFSET;
/// Largest raw file read: the header and a record for each of [`MAX_OPS`] requests (1 GiB).
pub const MAX_RAW_BYTES: u64 = (HEADER_BYTES + RECORD_BYTES * MAX_OPS) as u64;

/// The calls the shim records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawOp {
    Malloc,
    Calloc,
    Realloc,
    Free,
    Memalign,
    PosixMemalign,
    AlignedAlloc,
    Valloc,
    Pvalloc,
    ReallocArray,
}

impl RawOp {
    fn from_code(code: u32) -> Option<RawOp> {
        const OPS: [RawOp; 10] = [
            RawOp::Malloc,
            RawOp::Calloc,
            RawOp::Realloc,
            RawOp::Free,
            RawOp::Memalign,
            RawOp::PosixMemalign,
            RawOp::AlignedAlloc,
            RawOp::Valloc,
            RawOp::Pvalloc,
            RawOp::ReallocArray,
        ];
        OPS.get(usize::try_from(code).ok()?.checked_sub(1)?)
            .copied()
    }
}

/// Who wrote a raw file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawHeader {
    pub pid: u32,
    pub parent_pid: u32,
    pub page_size: u64,
    /// The image began as a fork child: it frees blocks its parent allocated.
    pub forked: bool,
    /// `CLOCK_MONOTONIC` nanoseconds at the file's creation.
    pub start_ns: u64,
    /// Calls the shim could not record.
    pub dropped: u64,
    /// Calls made from inside a hook (the shim allocating): must be 0.
    pub reentered: u64,
    pub exe: String,
    pub args: Vec<String>,
}

/// One recorded call (see the shim's `Record`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord {
    pub seq: u64,
    pub seq_release: u64,
    pub ptr: u64,
    pub ret: u64,
    pub size: u64,
    pub arg: u64,
    pub thread: u32,
    pub op: RawOp,
}

/// A whole raw file.
pub struct RawFile {
    pub header: RawHeader,
    pub records: Vec<RawRecord>,
}

/// Parses a raw capture file.
pub fn parse(bytes: &[u8]) -> Result<RawFile, FormatError> {
    if bytes.len() < HEADER_BYTES {
        return Err(FormatError::at_byte(
            bytes.len(),
            format!("raw capture file ends inside its {HEADER_BYTES}-byte header"),
        ));
    }
    let header = parse_header(bytes)?;
    let reserved = usize::try_from(u64_at(bytes, 40)).unwrap_or(usize::MAX);
    let end = HEADER_BYTES.saturating_add(reserved).min(bytes.len());
    let whole_records = (end - HEADER_BYTES) / RECORD_BYTES;
    let mut records = Vec::new();
    for index in 0..whole_records {
        let offset = HEADER_BYTES + index * RECORD_BYTES;
        if let Some(record) = parse_record(bytes, offset)? {
            records.push(record);
        }
    }
    Ok(RawFile { header, records })
}

fn parse_header(bytes: &[u8]) -> Result<RawHeader, FormatError> {
    if bytes[..8] != MAGIC {
        return Err(FormatError::at_byte(
            0,
            "not a heapworks raw capture file (wrong magic bytes)",
        ));
    }
    let version = u32_at(bytes, 8);
    if version != VERSION {
        return Err(FormatError::at_byte(
            8,
            format!("raw capture version {version} is not supported"),
        ));
    }
    let record_bytes = u32_at(bytes, 12);
    if record_bytes as usize != RECORD_BYTES {
        return Err(FormatError::at_byte(
            12,
            format!("record size {record_bytes} is not {RECORD_BYTES}"),
        ));
    }
    let exe_len = (u32_at(bytes, 56) as usize).min(EXE_BYTES);
    let cmdline_len = (u32_at(bytes, 60) as usize).min(CMDLINE_BYTES);
    let exe = &bytes[EXE_OFFSET..EXE_OFFSET + exe_len];
    let cmdline = &bytes[CMDLINE_OFFSET..CMDLINE_OFFSET + cmdline_len];
    Ok(RawHeader {
        pid: u32_at(bytes, 16),
        parent_pid: u32_at(bytes, 20),
        page_size: u64::from(u32_at(bytes, 24)),
        forked: u32_at(bytes, 28) != 0,
        start_ns: u64_at(bytes, 32),
        dropped: u64_at(bytes, 48),
        reentered: u64_at(bytes, REENTERED_OFFSET),
        exe: String::from_utf8_lossy(exe).into_owned(),
        args: cmdline
            .split(|&byte| byte == 0)
            .filter(|arg| !arg.is_empty())
            .map(|arg| String::from_utf8_lossy(arg).into_owned())
            .collect(),
    })
}

fn parse_record(bytes: &[u8], offset: usize) -> Result<Option<RawRecord>, FormatError> {
    let code = u32_at(bytes, offset + 52);
    if code == 0 {
        return Ok(None);
    }
    let op = RawOp::from_code(code).ok_or_else(|| {
        FormatError::at_byte(
            offset + 52,
            format!("unknown call code {code} in raw record"),
        )
    })?;
    Ok(Some(RawRecord {
        seq: u64_at(bytes, offset),
        seq_release: u64_at(bytes, offset + 8),
        ptr: u64_at(bytes, offset + 16),
        ret: u64_at(bytes, offset + 24),
        size: u64_at(bytes, offset + 32),
        arg: u64_at(bytes, offset + 40),
        thread: u32_at(bytes, offset + 48),
        op,
    }))
}

/// Reads a little-endian `u32`; callers pass offsets inside `bytes`.
fn u32_at(bytes: &[u8], offset: usize) -> u32 {
    let mut array = [0u8; 4];
    array.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(array)
}

/// Reads a little-endian `u64`; callers pass offsets inside `bytes`.
fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    let mut array = [0u8; 8];
    array.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(array)
}
