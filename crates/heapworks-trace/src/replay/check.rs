//! `check` mode: verifies every block the allocator hands out, as seed 003's `ctest` does.
//!
//! Invariants:
//! - `live` holds every block handed out and not yet given back, keyed by start address; its
//!   blocks never overlap (a block that would is refused before it is added).
//! - A block is taken out of `live` *before* the allocator is asked to free or move it, and
//!   added only *after* the allocator returned it, so another thread can never see a block the
//!   allocator already reused.
//! - Every live block is filled with a pattern derived from the index of the request that
//!   produced it; it is verified whole before realloc and free, and after a realloc its first
//!   `min(old, new)` bytes must still hold the old pattern. calloc blocks must be zero first.
//! - Memory is only read after this module wrote it (or after calloc zeroed it).

use core::alloc::Layout;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::Mutex;

/// What was wrong with a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckFailure {
    /// The block is not aligned as requested.
    Misaligned { addr: usize, align: usize },
    /// The block is not inside the heap given in the options.
    OutsideHeap { addr: usize, size: usize },
    /// The block overlaps a live block, handed out by request `other_op`.
    Overlap {
        addr: usize,
        size: usize,
        other_addr: usize,
        other_size: usize,
        other_op: usize,
    },
    /// A byte of a live block changed while the allocator held the block's neighbourhood (or,
    /// after a realloc, was not carried over).
    Corrupted {
        addr: usize,
        offset: usize,
        after_realloc: bool,
    },
    /// calloc memory that is not zero.
    NotZeroed { addr: usize, offset: usize },
    /// The block to free or move is not one the checker saw handed out.
    Unknown { addr: usize },
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CheckFailure::Misaligned { addr, align } => {
                write!(f, "block {addr:#x} is not aligned to {align}")
            }
            CheckFailure::OutsideHeap { addr, size } => {
                write!(f, "block {addr:#x} of {size} bytes is outside the heap")
            }
            CheckFailure::Overlap {
                addr,
                size,
                other_addr,
                other_size,
                other_op,
            } => write!(
                f,
                "block {addr:#x} of {size} bytes overlaps live block {other_addr:#x} of \
                 {other_size} bytes (from request {other_op})"
            ),
            CheckFailure::Corrupted {
                addr,
                offset,
                after_realloc,
            } => {
                let when = if after_realloc {
                    "was not preserved by realloc"
                } else {
                    "changed"
                };
                write!(f, "payload byte {offset} of block {addr:#x} {when}")
            }
            CheckFailure::NotZeroed { addr, offset } => {
                write!(f, "byte {offset} of calloc block {addr:#x} is not zero")
            }
            CheckFailure::Unknown { addr } => {
                write!(f, "block {addr:#x} was never handed out")
            }
        }
    }
}

#[derive(Clone, Copy)]
struct LiveBlock {
    size: usize,
    /// Index of the request that produced the block: the pattern's seed.
    op: usize,
}

/// The checker of one replay.
pub struct Checker {
    live: Mutex<BTreeMap<usize, LiveBlock>>,
    heap: Option<Range<usize>>,
}

/// A block taken out of the checker for realloc: what its pattern was.
pub struct Released {
    size: usize,
    op: usize,
}

impl Checker {
    pub fn new(heap: Option<Range<usize>>) -> Self {
        Self {
            live: Mutex::new(BTreeMap::new()),
            heap,
        }
    }

    /// A block handed out by request `op`.
    ///
    /// # Safety
    /// `ptr` must be a block of `layout` just returned by the allocator, not yet used.
    pub unsafe fn allocated(
        &self,
        op: usize,
        ptr: *mut u8,
        layout: Layout,
        zeroed: bool,
    ) -> Result<(), CheckFailure> {
        let addr = ptr as usize;
        self.check_placement(addr, layout)?;
        if zeroed {
            // SAFETY: calloc memory of `layout.size()` bytes is initialized (to zero).
            if let Some(offset) = unsafe { first_nonzero(ptr, layout.size()) } {
                return Err(CheckFailure::NotZeroed { addr, offset });
            }
        }
        // SAFETY: the block is ours and `layout.size()` bytes long.
        unsafe { fill(ptr, layout.size(), op) };
        self.insert(
            addr,
            LiveBlock {
                size: layout.size(),
                op,
            },
        )
    }

    /// A block about to be freed or moved: verified and taken out.
    ///
    /// # Safety
    /// `ptr` must be a live block this checker was told about.
    pub unsafe fn releasing(&self, ptr: *mut u8) -> Result<Released, CheckFailure> {
        let addr = ptr as usize;
        let block = self
            .lock()
            .remove(&addr)
            .ok_or(CheckFailure::Unknown { addr })?;
        // SAFETY: the block is live, `block.size` bytes, and was filled by `fill`.
        if let Some(offset) = unsafe { first_mismatch(ptr, block.size, block.op) } {
            return Err(CheckFailure::Corrupted {
                addr,
                offset,
                after_realloc: false,
            });
        }
        Ok(Released {
            size: block.size,
            op: block.op,
        })
    }

    /// The block realloc returned for request `op`, from the `old` one.
    ///
    /// # Safety
    /// `ptr` must be the block of `layout` that realloc just returned for `old`.
    pub unsafe fn reallocated(
        &self,
        op: usize,
        old: Released,
        ptr: *mut u8,
        layout: Layout,
    ) -> Result<(), CheckFailure> {
        let addr = ptr as usize;
        self.check_placement(addr, layout)?;
        let kept = old.size.min(layout.size());
        // SAFETY: realloc carried over (initialized) the first `kept` bytes.
        if let Some(offset) = unsafe { first_mismatch(ptr, kept, old.op) } {
            return Err(CheckFailure::Corrupted {
                addr,
                offset,
                after_realloc: true,
            });
        }
        // SAFETY: the block is ours and `layout.size()` bytes long.
        unsafe { fill(ptr, layout.size(), op) };
        self.insert(
            addr,
            LiveBlock {
                size: layout.size(),
                op,
            },
        )
    }

    fn check_placement(&self, addr: usize, layout: Layout) -> Result<(), CheckFailure> {
        if !addr.is_multiple_of(layout.align()) {
            return Err(CheckFailure::Misaligned {
                addr,
                align: layout.align(),
            });
        }
        let inside = self.heap.as_ref().is_none_or(|heap| {
            addr >= heap.start
                && addr
                    .checked_add(layout.size())
                    .is_some_and(|end| end <= heap.end)
        });
        if !inside {
            return Err(CheckFailure::OutsideHeap {
                addr,
                size: layout.size(),
            });
        }
        Ok(())
    }

    /// Adds a block unless it overlaps one: live blocks never overlap, so only the last block
    /// starting before this one's end can.
    fn insert(&self, addr: usize, block: LiveBlock) -> Result<(), CheckFailure> {
        let end = addr.saturating_add(block.size);
        let mut live = self.lock();
        if let Some((&other_addr, other)) = live.range(..end).next_back() {
            if other_addr + other.size > addr {
                return Err(CheckFailure::Overlap {
                    addr,
                    size: block.size,
                    other_addr,
                    other_size: other.size,
                    other_op: other.op,
                });
            }
        }
        live.insert(addr, block);
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, LiveBlock>> {
        // A panic elsewhere cannot leave the map half-updated: every update is one call.
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The pattern's word at byte `offset` (a multiple of 8) of the block from request `op`:
/// distinct per request and per position, so a stray write or a copy from the wrong place
/// shows. Plain loops over whole words keep checking fast even in unoptimized test builds.
fn pattern_word(op: usize, offset: usize) -> u64 {
    let seed = (op as u64 ^ 0x5bd1_e995).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    seed ^ (offset as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// # Safety
/// `ptr..ptr + size` must be writable.
unsafe fn fill(ptr: *mut u8, size: usize, op: usize) {
    let mut offset = 0;
    while offset + 8 <= size {
        // SAFETY: `offset + 8 <= size`, inside the block; unaligned writes need no alignment.
        unsafe {
            ptr.add(offset)
                .cast::<u64>()
                .write_unaligned(pattern_word(op, offset))
        };
        offset += 8;
    }
    let tail = pattern_word(op, offset).to_ne_bytes();
    // SAFETY: the last `size - offset < 8` bytes of the block.
    unsafe { core::ptr::copy_nonoverlapping(tail.as_ptr(), ptr.add(offset), size - offset) };
}

/// # Safety
/// `ptr..ptr + size` must be readable and initialized.
unsafe fn first_mismatch(ptr: *const u8, size: usize, op: usize) -> Option<usize> {
    let mut offset = 0;
    while offset + 8 <= size {
        // SAFETY: `offset + 8 <= size`, inside the block.
        let found = unsafe { ptr.add(offset).cast::<u64>().read_unaligned() };
        let expected = pattern_word(op, offset);
        if found != expected {
            return Some(
                offset + first_different_byte(found.to_ne_bytes(), expected.to_ne_bytes()),
            );
        }
        offset += 8;
    }
    // SAFETY: the last `size - offset < 8` bytes of the block.
    let tail = unsafe { core::slice::from_raw_parts(ptr.add(offset), size - offset) };
    let expected = pattern_word(op, offset).to_ne_bytes();
    let differs = tail
        .iter()
        .zip(expected)
        .position(|(&found, expected)| found != expected);
    differs.map(|within| offset + within)
}

fn first_different_byte(found: [u8; 8], expected: [u8; 8]) -> usize {
    (0..8)
        .find(|&index| found[index] != expected[index])
        .unwrap_or(0)
}

/// # Safety
/// `ptr..ptr + size` must be readable and initialized.
unsafe fn first_nonzero(ptr: *const u8, size: usize) -> Option<usize> {
    // SAFETY: guaranteed by the caller.
    let bytes = unsafe { core::slice::from_raw_parts(ptr, size) };
    bytes.iter().position(|&byte| byte != 0)
}
