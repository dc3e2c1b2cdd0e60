//! Turns the records of one raw capture file into a [`Trace`]: pointers become ids, the two
//! halves of every realloc are ordered, and calls that changed nothing are left out.
//!
//! Invariants of the trace produced:
//! - It is consistent: every free and realloc names a live id, every allocation a free id.
//! - Its order is the order of the shim's sequence numbers, in which a block's release always
//!   precedes any reuse of its address (see the shim's `raw.rs`), so replaying the streams with
//!   cross-thread order kept is a valid schedule of the original program's calls.
//! - Ids are reused lowest-last-freed first, so they stay below the peak number of live blocks.
//!
//! Calls left out, and counted in [`IngestStats`]: failed allocations (NULL returned),
//! `free(NULL)`, and frees or reallocs of a pointer this process never saw allocated (in a
//! fork child, the blocks it inherited). `realloc(p, 0)`, which glibc treats as `free(p)`,
//! becomes a free; `realloc(NULL, n)` a malloc.

use crate::error::FormatError;
use crate::model::{Op, OpKind, Trace, MAX_ALIGN};
use crate::raw::{RawFile, RawOp, RawRecord};
use std::collections::HashMap;

/// What happened to the recorded calls of one process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct IngestStats {
    /// Calls recorded.
    pub records: u64,
    /// Requests in the trace.
    pub ops: u64,
    /// Allocations that returned NULL, left out.
    pub failed_calls: u64,
    /// `free(NULL)` calls, left out.
    pub null_frees: u64,
    /// Frees of pointers never seen allocated, left out; reallocs of such pointers become
    /// mallocs.
    pub unknown_blocks: u64,
    /// Addresses handed out again while still live (a release the shim did not see): a free
    /// is put in front of the new allocation.
    pub implicit_frees: u64,
    /// Calls the shim could not record (it ran out of file space).
    pub dropped_calls: u64,
    /// Calls that reached the shim while it was already handling one in the same thread: 0
    /// unless the shim allocated (a bug) or a signal handler allocated mid-call.
    pub reentered_calls: u64,
}

/// One half of a call, placed at one sequence number.
#[derive(Clone, Copy)]
enum Half {
    /// The block of `record.ret` comes into existence.
    Acquire,
    /// The block of `record.ptr` goes away (free, or `realloc(p, 0)`).
    Release,
    /// The block of `record.ptr` is given to realloc, which hands back `record.ret`.
    ResizeFrom,
    /// ...and `record.ret` comes back from it.
    ResizeTo,
}

/// Converts a raw file into a trace.
pub fn ingest(file: &RawFile) -> Result<(Trace, IngestStats), FormatError> {
    let mut ingest = Ingest {
        trace: Trace::new(),
        stats: IngestStats {
            records: file.records.len() as u64,
            dropped_calls: file.header.dropped,
            reentered_calls: file.header.reentered,
            ..IngestStats::default()
        },
        page_size: file.header.page_size.max(1),
        live: HashMap::new(),
        resizing: HashMap::new(),
        free_ids: Vec::new(),
        next_id: 0,
    };
    let mut halves = ingest.split_calls(&file.records);
    halves.sort_unstable_by_key(|&(seq, _, _)| seq);
    for (_, index, half) in halves {
        ingest.apply(&file.records[index], index, half)?;
    }
    ingest.stats.ops = ingest.trace.len() as u64;
    Ok((ingest.trace, ingest.stats))
}

struct Ingest {
    trace: Trace,
    stats: IngestStats,
    page_size: u64,
    /// Id of each live block, by address.
    live: HashMap<u64, u32>,
    /// Ids of blocks inside a realloc (released, result not yet seen), by record index;
    /// `None` for a realloc of an unknown pointer.
    resizing: HashMap<usize, Option<u32>>,
    free_ids: Vec<u32>,
    next_id: u32,
}

impl Ingest {
    /// The halves of each call that changed something, with the sequence number ordering each.
    fn split_calls(&mut self, records: &[RawRecord]) -> Vec<(u64, usize, Half)> {
        let mut halves = Vec::with_capacity(records.len());
        for (index, record) in records.iter().enumerate() {
            match record.op {
                RawOp::Free if record.ptr == 0 => self.stats.null_frees += 1,
                RawOp::Free => halves.push((record.seq, index, Half::Release)),
                RawOp::Realloc | RawOp::ReallocArray => {
                    self.split_resize(record, index, &mut halves)
                }
                _ if record.ret == 0 => self.stats.failed_calls += 1,
                _ => halves.push((record.seq, index, Half::Acquire)),
            }
        }
        halves
    }

    fn split_resize(
        &mut self,
        record: &RawRecord,
        index: usize,
        halves: &mut Vec<(u64, usize, Half)>,
    ) {
        let bytes = resize_bytes(record);
        match (record.ptr, record.ret) {
            (0, 0) => self.stats.failed_calls += 1,
            (0, _) => halves.push((record.seq, index, Half::Acquire)),
            (_, 0) if bytes == 0 => halves.push((record.seq_release, index, Half::Release)),
            (_, 0) => self.stats.failed_calls += 1,
            _ => {
                halves.push((record.seq_release, index, Half::ResizeFrom));
                halves.push((record.seq, index, Half::ResizeTo));
            }
        }
    }

    fn apply(&mut self, record: &RawRecord, index: usize, half: Half) -> Result<(), FormatError> {
        match half {
            Half::Acquire => {
                let id = self.acquire(record)?;
                self.emit(record, id, self.allocation_kind(record))
            }
            Half::Release => match self.live.remove(&record.ptr) {
                Some(id) => {
                    self.free_ids.push(id);
                    self.emit(record, id, OpKind::Free)
                }
                None => {
                    self.stats.unknown_blocks += 1;
                    Ok(())
                }
            },
            Half::ResizeFrom => {
                let id = self.live.remove(&record.ptr);
                if id.is_none() {
                    self.stats.unknown_blocks += 1;
                }
                self.resizing.insert(index, id);
                Ok(())
            }
            Half::ResizeTo => self.finish_resize(record, index),
        }
    }

    fn finish_resize(&mut self, record: &RawRecord, index: usize) -> Result<(), FormatError> {
        let size = resize_bytes(record);
        match self.resizing.remove(&index).flatten() {
            Some(id) => {
                self.claim_address(record)?;
                self.live.insert(record.ret, id);
                self.emit(record, id, OpKind::Realloc { size })
            }
            None => {
                let id = self.acquire(record)?;
                self.emit(record, id, OpKind::Malloc { size })
            }
        }
    }

    /// Gives `record.ret` a fresh id.
    fn acquire(&mut self, record: &RawRecord) -> Result<u32, FormatError> {
        self.claim_address(record)?;
        let id = self.free_ids.pop().unwrap_or_else(|| {
            self.next_id += 1;
            self.next_id - 1
        });
        self.live.insert(record.ret, id);
        Ok(id)
    }

    /// If `record.ret` is still live, its release was missed: frees it first.
    fn claim_address(&mut self, record: &RawRecord) -> Result<(), FormatError> {
        if let Some(stale) = self.live.remove(&record.ret) {
            self.stats.implicit_frees += 1;
            self.free_ids.push(stale);
            self.emit(record, stale, OpKind::Free)?;
        }
        Ok(())
    }

    fn allocation_kind(&self, record: &RawRecord) -> OpKind {
        let page = self.page_size;
        match record.op {
            RawOp::Calloc => OpKind::Calloc {
                size: record.size.saturating_mul(record.arg),
            },
            RawOp::Memalign | RawOp::PosixMemalign | RawOp::AlignedAlloc => OpKind::Memalign {
                size: record.size,
                align: glibc_alignment(record.arg),
            },
            RawOp::Valloc => OpKind::Memalign {
                size: record.size,
                align: glibc_alignment(page),
            },
            RawOp::Pvalloc => OpKind::Memalign {
                size: record.size.max(1).div_ceil(page).saturating_mul(page),
                align: glibc_alignment(page),
            },
            RawOp::Realloc | RawOp::ReallocArray => OpKind::Malloc {
                size: resize_bytes(record),
            },
            // A free never acquires a block; it is listed only to make the match exhaustive.
            RawOp::Malloc | RawOp::Free => OpKind::Malloc { size: record.size },
        }
    }

    fn emit(&mut self, record: &RawRecord, id: u32, kind: OpKind) -> Result<(), FormatError> {
        let op = Op {
            thread: record.thread,
            id,
            kind,
        };
        self.trace
            .push(op)
            .map_err(|invalid| FormatError::at_byte(0, format!("record {}: {invalid}", record.seq)))
    }
}

/// Bytes a realloc or reallocarray asks for.
fn resize_bytes(record: &RawRecord) -> u64 {
    match record.op {
        RawOp::ReallocArray => record.size.saturating_mul(record.arg),
        _ => record.size,
    }
}

/// The alignment glibc actually gives: memalign rounds up to a power of two.
fn glibc_alignment(requested: u64) -> u64 {
    requested
        .max(1)
        .checked_next_power_of_two()
        .unwrap_or(MAX_ALIGN)
        .min(MAX_ALIGN)
}
