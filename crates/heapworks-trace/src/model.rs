//! The trace model: one global sequence of allocation requests, each issued by a thread on a
//! block named by an id.
//!
//! Invariants, held by every [`Trace`] because [`Trace::push`] checks them:
//! - Operations are in one global order: an operation's index is its sequence number. Each
//!   thread's stream is the subsequence of its operations; cross-thread order is the global one.
//! - Ids are at most [`MAX_ID`], alignments are powers of two up to [`MAX_ALIGN`], a trace has
//!   at most [`MAX_THREADS`] distinct threads (replay runs one OS thread per stream) and at
//!   most [`MAX_OPS`] requests (so a hostile file cannot make a reader or a replay eat all
//!   memory: a replay's memory follows the requests and the ids live at once, never the
//!   largest id). Readers also refuse more than [`MAX_NOTES`] notes.
//! - Notes contain no line breaks.
//!
//! Ids behave like C pointer variables, as in seed 003's scripts: an id is *live* from the
//! request that allocates it until the request that frees it. A request on an id that is not
//! live acts on NULL (`free(NULL)` does nothing, `realloc(NULL, n)` allocates); allocating an
//! id that is still live overwrites it, and the old block leaks. [`Liveness`] applies exactly
//! these rules, for statistics and for replay.

use crate::slots::IdSlots;
use std::fmt;

/// Largest id a trace may use.
pub const MAX_ID: u32 = (1 << 26) - 1;
/// Largest alignment a trace may request.
pub const MAX_ALIGN: u64 = 1 << 32;
/// Most distinct threads a trace may have.
pub const MAX_THREADS: usize = 1024;
/// Most requests a trace may have (16 Mi: a replay holds about 100 bytes per request).
pub const MAX_OPS: usize = 1 << 24;
/// Most notes a trace file may carry (each one line).
pub const MAX_NOTES: usize = 1 << 16;

/// One request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Op {
    /// Thread that issued it.
    pub thread: u32,
    /// Block it names.
    pub id: u32,
    /// What it asks for.
    pub kind: OpKind,
}

/// The kinds of request, with their arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    /// `malloc(size)`: text `a <id> <size>`.
    Malloc {
        /// Bytes requested.
        size: u64,
    },
    /// `calloc`, zero-filled: text `c <id> <size>` with the total size in bytes.
    Calloc {
        /// Bytes requested (element count times element size).
        size: u64,
    },
    /// `memalign`, `posix_memalign`, `aligned_alloc`, `valloc` and `pvalloc`: text
    /// `m <id> <size> <align>`.
    Memalign {
        /// Bytes requested.
        size: u64,
        /// Alignment, a power of two.
        align: u64,
    },
    /// `realloc(block, size)`: text `r <id> <size>`.
    Realloc {
        /// New size in bytes.
        size: u64,
    },
    /// `free(block)`: text `f <id>`.
    Free,
}

impl OpKind {
    /// The size the request asks for, if it has one.
    pub fn size(&self) -> Option<u64> {
        match *self {
            OpKind::Malloc { size }
            | OpKind::Calloc { size }
            | OpKind::Memalign { size, .. }
            | OpKind::Realloc { size } => Some(size),
            OpKind::Free => None,
        }
    }
}

/// Why an operation cannot be part of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvalidOp {
    /// The id is larger than [`MAX_ID`].
    IdTooLarge(u64),
    /// The alignment is not a power of two, or larger than [`MAX_ALIGN`].
    BadAlignment(u64),
    /// The operation's thread would be one more than [`MAX_THREADS`].
    TooManyThreads,
    /// The operation would be one more than [`MAX_OPS`].
    TooManyOps,
}

impl fmt::Display for InvalidOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InvalidOp::IdTooLarge(id) => {
                write!(f, "id {id} is larger than the largest id {MAX_ID}")
            }
            InvalidOp::BadAlignment(align) => {
                write!(
                    f,
                    "alignment {align} is not a power of two between 1 and {MAX_ALIGN}"
                )
            }
            InvalidOp::TooManyThreads => write!(f, "more than {MAX_THREADS} threads"),
            InvalidOp::TooManyOps => write!(f, "more than {MAX_OPS} requests"),
        }
    }
}

impl std::error::Error for InvalidOp {}

/// Checks an id read from input before it is turned into an [`Op`].
pub fn check_id(id: u64) -> Result<u32, InvalidOp> {
    u32::try_from(id)
        .ok()
        .filter(|&id| id <= MAX_ID)
        .ok_or(InvalidOp::IdTooLarge(id))
}

/// Checks an alignment read from input.
pub fn check_align(align: u64) -> Result<u64, InvalidOp> {
    if align.is_power_of_two() && align <= MAX_ALIGN {
        Ok(align)
    } else {
        Err(InvalidOp::BadAlignment(align))
    }
}

/// A sequence of requests, with free-form notes (provenance, how to capture it again).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    notes: Vec<String>,
    ops: Vec<Op>,
    /// Distinct thread labels, sorted.
    threads: Vec<u32>,
}

impl Trace {
    /// An empty trace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `op` as the last request.
    pub fn push(&mut self, op: Op) -> Result<(), InvalidOp> {
        if self.ops.len() == MAX_OPS {
            return Err(InvalidOp::TooManyOps);
        }
        check_id(u64::from(op.id))?;
        if let OpKind::Memalign { align, .. } = op.kind {
            check_align(align)?;
        }
        if let Err(slot) = self.threads.binary_search(&op.thread) {
            if self.threads.len() == MAX_THREADS {
                return Err(InvalidOp::TooManyThreads);
            }
            self.threads.insert(slot, op.thread);
        }
        self.ops.push(op);
        Ok(())
    }

    /// Adds a note; a text with line breaks becomes one note per line (carriage returns are
    /// dropped).
    pub fn add_note(&mut self, note: &str) {
        let lines = note.split('\n');
        self.notes.extend(lines.map(|line| line.replace('\r', "")));
    }

    /// The requests, in global order.
    pub fn ops(&self) -> &[Op] {
        &self.ops
    }

    /// The notes.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The distinct thread labels, sorted.
    pub fn threads(&self) -> &[u32] {
        &self.threads
    }

    /// Number of requests.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether there are no requests.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Keeps only the first `len` requests (blocks still live at the end stay live).
    pub fn truncate(&mut self, len: usize) {
        self.ops.truncate(len);
        let mut threads: Vec<u32> = self.ops.iter().map(|op| op.thread).collect();
        threads.sort_unstable();
        threads.dedup();
        self.threads = threads;
    }

    /// Counts and sizes of the requests.
    pub fn stats(&self) -> TraceStats {
        let mut stats = TraceStats {
            ops: self.ops.len() as u64,
            threads: self.threads.len() as u64,
            ..TraceStats::default()
        };
        let mut liveness = Liveness::new(self);
        for op in &self.ops {
            stats.count(op);
            liveness.apply(op);
        }
        stats.peak_live_bytes = liveness.peak_bytes();
        stats
    }
}

/// What a trace asks for, in numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TraceStats {
    /// Requests.
    pub ops: u64,
    /// Distinct threads.
    pub threads: u64,
    /// `malloc` requests.
    pub mallocs: u64,
    /// `calloc` requests.
    pub callocs: u64,
    /// Aligned requests.
    pub memaligns: u64,
    /// `realloc` requests.
    pub reallocs: u64,
    /// `free` requests.
    pub frees: u64,
    /// Bytes asked for by allocations and reallocs, added up.
    pub requested_bytes: u64,
    /// Most bytes live at once (sizes as requested).
    pub peak_live_bytes: u64,
}

impl TraceStats {
    fn count(&mut self, op: &Op) {
        let counter = match op.kind {
            OpKind::Malloc { .. } => &mut self.mallocs,
            OpKind::Calloc { .. } => &mut self.callocs,
            OpKind::Memalign { .. } => &mut self.memaligns,
            OpKind::Realloc { .. } => &mut self.reallocs,
            OpKind::Free => &mut self.frees,
        };
        *counter += 1;
        self.requested_bytes = self
            .requested_bytes
            .saturating_add(op.kind.size().unwrap_or(0));
    }
}

/// A live block, as requested.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Bytes requested.
    pub size: u64,
    /// Alignment requested (1 for malloc, calloc and realloc of such a block).
    pub align: u64,
}

/// What a request does to the blocks, under the rules in the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Allocates a block for an id that was not live.
    Allocate,
    /// Allocates a block for an id that was live; the old block leaks.
    AllocateOverLive {
        /// The block that leaks.
        old: Block,
    },
    /// Resizes the live block (which keeps its alignment).
    Resize {
        /// The block before.
        old: Block,
    },
    /// Frees the live block.
    Release {
        /// The block freed.
        old: Block,
    },
    /// `realloc` of an id that is not live: allocates, as `realloc(NULL, n)`.
    ResizeNull,
    /// `free` of an id that is not live: does nothing, as `free(NULL)`.
    ReleaseNull,
}

/// Tracks which ids are live and how many bytes they hold, request by request.
///
/// Memory follows the trace, never the largest id it names: compact ids index its table
/// directly; sparse ones hold a dense slot while they are live, given back when freed.
#[derive(Debug)]
pub struct Liveness {
    slots: IdSlots,
    /// Each slot's live block, `None` when its id is not live.
    blocks: Vec<Option<Block>>,
    /// Wide enough that no trace can overflow it (at most 2^64 requests of under 2^64 bytes).
    live_bytes: u128,
    peak_bytes: u128,
    peak_index: Option<usize>,
    applied: usize,
}

/// What a request did, and the slot its id held for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// What the request does to the blocks.
    pub effect: Effect,
    /// The id's slot: below [`Liveness::slots`], held by no other id while this one is live
    /// (a request that leaves a sparse id not live may give the slot to a later id).
    pub slot: usize,
}

impl Liveness {
    /// Tracking for `trace`'s ids, none of them live.
    pub fn new(trace: &Trace) -> Self {
        let largest_id = trace.ops.iter().map(|op| op.id).max().unwrap_or(0);
        Self {
            slots: IdSlots::new(largest_id, trace.len()),
            blocks: Vec::new(),
            live_bytes: 0,
            peak_bytes: 0,
            peak_index: None,
            applied: 0,
        }
    }

    /// Applies the next request and tells what it does.
    pub fn apply(&mut self, op: &Op) -> Applied {
        let slot = self.slots.slot(op.id, op.kind.size().is_some());
        if slot >= self.blocks.len() {
            self.blocks.resize(slot + 1, None);
        }
        let old = self.blocks[slot];
        let effect = match (op.kind, old) {
            (OpKind::Free, None) => Effect::ReleaseNull,
            (OpKind::Free, Some(old)) => Effect::Release { old },
            (OpKind::Realloc { .. }, None) => Effect::ResizeNull,
            (OpKind::Realloc { .. }, Some(old)) => Effect::Resize { old },
            (_, None) => Effect::Allocate,
            (_, Some(old)) => Effect::AllocateOverLive { old },
        };
        let block = op.kind.size().map(|size| Block {
            size,
            align: match (op.kind, effect) {
                (OpKind::Memalign { align, .. }, _) => align,
                (_, Effect::Resize { old }) => old.align,
                _ => 1,
            },
        });
        self.blocks[slot] = block;
        let freed = match effect {
            Effect::Resize { old } | Effect::Release { old } => u128::from(old.size),
            _ => 0,
        };
        let added = u128::from(op.kind.size().unwrap_or(0));
        self.live_bytes = self.live_bytes - freed + added;
        if self.live_bytes > self.peak_bytes {
            self.peak_bytes = self.live_bytes;
            self.peak_index = Some(self.applied);
        }
        self.applied += 1;
        Applied { effect, slot }
    }

    /// Slots handed out so far: the size of a table indexed by [`Applied::slot`].
    pub fn slots(&self) -> usize {
        self.slots.count()
    }

    /// Most bytes live so far.
    pub fn peak_bytes(&self) -> u64 {
        u64::try_from(self.peak_bytes).unwrap_or(u64::MAX)
    }

    /// Index of the request after which the most bytes were live (the first such).
    pub fn peak_index(&self) -> Option<usize> {
        self.peak_index
    }
}
