//! The errors the heap reports: failed requests, refused regions, misuse, corruption.
//!
//! Every error leaves the heap as it was: a failed call changes nothing.

use core::fmt;

/// A request the heap cannot serve: out of memory, or a size or alignment too large to
/// represent. The heap is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocError;

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("heapworks: out of memory or request too large")
    }
}

/// Why [`crate::Heap::claim`] or [`crate::Heap::extend`] refused a region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimError {
    /// The region cannot hold a region record, one minimal chunk and the end sentinel.
    TooSmall {
        /// The size offered.
        size: usize,
        /// The smallest size that works at this base address.
        needed: usize,
    },
    /// `base + size` wraps around the address space.
    Overflow,
    /// The base pointer is null.
    NullBase,
    /// The region overlaps one the heap already manages.
    Overlaps,
    /// `extend` named a base that is not the base of a claimed region.
    UnknownRegion,
    /// `extend` asked for a size below the region's current size.
    Shrinks,
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimError::TooSmall { size, needed } => {
                write!(
                    f,
                    "heapworks: region of {size} bytes is too small (needs {needed})"
                )
            }
            ClaimError::Overflow => f.write_str("heapworks: region wraps the address space"),
            ClaimError::NullBase => f.write_str("heapworks: region base is null"),
            ClaimError::Overlaps => f.write_str("heapworks: region overlaps a claimed region"),
            ClaimError::UnknownRegion => f.write_str("heapworks: no claimed region has that base"),
            ClaimError::Shrinks => f.write_str("heapworks: extend cannot shrink a region"),
        }
    }
}

/// A pointer handed to `free`, `deallocate` or `realloc` that this heap cannot take back.
///
/// Detected by [`crate::Heap::validate`], which checked builds (feature `checked`, or debug
/// assertions) run on every free and realloc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misuse {
    /// The pointer is not inside any region of this heap, or not at a payload boundary.
    Foreign {
        /// The pointer.
        addr: usize,
    },
    /// The block is already free.
    DoubleFree {
        /// The pointer.
        addr: usize,
    },
    /// The block's header does not describe a chunk that fits its region.
    CorruptHeader {
        /// The pointer.
        addr: usize,
        /// The header word found in front of it.
        header: usize,
    },
    /// The layout passed does not match the block (size above its usable size, or alignment
    /// the address does not have).
    LayoutMismatch {
        /// The pointer.
        addr: usize,
    },
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Misuse::Foreign { addr } => {
                write!(f, "heapworks: {addr:#x} was not allocated by this heap")
            }
            Misuse::DoubleFree { addr } => write!(f, "heapworks: double free of {addr:#x}"),
            Misuse::CorruptHeader { addr, header } => write!(
                f,
                "heapworks: corrupt header {header:#x} in front of block {addr:#x}"
            ),
            Misuse::LayoutMismatch { addr } => {
                write!(f, "heapworks: layout does not match block {addr:#x}")
            }
        }
    }
}

/// The first broken invariant [`crate::Heap::check`] found: where, and what was wrong.
///
/// `addr` is always an address in the heap's memory or metadata, never a placeholder:
/// - a chunk's header for a fault of one chunk (its size, flags, footer or links), and for a
///   free chunk missing from its bin's list ([`CorruptionKind::LostChunk`]);
/// - the record chunk for [`CorruptionKind::BadRegion`], the end sentinel for
///   [`CorruptionKind::BadSentinel`];
/// - for a bitmap fault, the first chunk of the bin's list when it has one, and otherwise the
///   heap's free index (the structure holding the bitmap and the lists' heads);
/// - the heap's counters for [`CorruptionKind::BadStats`].
///
/// `bin` names the bin involved in a fault of the free index ([`CorruptionKind::BadLink`],
/// [`CorruptionKind::BadBitmap`], [`CorruptionKind::BadSummary`],
/// [`CorruptionKind::LostChunk`]), and is `None` otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Corruption {
    /// The address involved (see above).
    pub addr: usize,
    /// The bin involved, for faults of the free index.
    pub bin: Option<usize>,
    /// What was wrong there.
    pub kind: CorruptionKind,
}

/// What [`Corruption`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorruptionKind {
    /// A region record is damaged (wrong header, sentinel outside the region).
    BadRegion,
    /// A chunk size is below the minimum or runs past the end, or stray header bits are set,
    /// or the free index records another size for a free chunk than its header gives.
    BadSize,
    /// `PREV_IN_USE` disagrees with the chunk before.
    BadPrevFlag,
    /// Two free chunks are adjacent (coalescing was missed).
    AdjacentFree,
    /// A free chunk's footer differs from its size.
    BadFooter,
    /// A free chunk's list links are inconsistent (a neighbour does not link back, a link is
    /// null, the next chunk belongs to another bin, or the chunk says it heads a list it does
    /// not head), or a list holds a chunk that is not a free chunk of its bin.
    BadLink,
    /// A bin's occupancy bit disagrees with its list, or the bit of a spare slot beyond the
    /// last bin is set.
    BadBitmap,
    /// A summary bit of the bitmap disagrees with the word of bin bits it stands for (set for
    /// an empty word, or a word beyond the map; clear for a non-empty one). `bin` is the first
    /// bin of that word. Allocation would skip or misread those bins.
    BadSummary,
    /// A free chunk is in no list (`addr` is that chunk), or the lists hold more entries than
    /// there are free chunks (`addr` is the entry found in excess).
    LostChunk,
    /// The end sentinel is damaged.
    BadSentinel,
    /// The default index's top (on wasm32: the free chunk kept out of the lists, whose footer
    /// is in the index) does not end at its region's end sentinel.
    BadTop,
    /// A slab of the small-object front ([`crate::FrontHeap`]) is inconsistent: a slot's tag,
    /// its free list or its live count, or a class list (an entry that is not a slab of the
    /// class with a free slot, a wrong `prev`, or entries not matching the slabs with a free
    /// slot). `addr` is the slab, the slot's tag, the list entry, or the front's list heads
    /// when the counts disagree.
    BadSlab,
    /// The statistics disagree with the walk: bytes in use or managed, or (with feature
    /// `counters`) the high-water mark outside `in_use..=managed`, or allocations minus frees
    /// not the number of allocated chunks.
    BadStats,
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.kind {
            CorruptionKind::BadRegion => "damaged region record",
            CorruptionKind::BadSize => "chunk size out of bounds",
            CorruptionKind::BadPrevFlag => "PREV_IN_USE flag disagrees with the chunk before",
            CorruptionKind::AdjacentFree => "two adjacent free chunks",
            CorruptionKind::BadFooter => "free chunk footer differs from its size",
            CorruptionKind::BadLink => "free list links inconsistent",
            CorruptionKind::BadBitmap => "bin's occupancy bit disagrees with its list",
            CorruptionKind::BadSummary => {
                "bitmap summary bit disagrees with the word of bins starting here"
            }
            CorruptionKind::LostChunk => "bins and heap walk disagree on the free chunks",
            CorruptionKind::BadSentinel => "damaged end sentinel",
            CorruptionKind::BadTop => "the free index's top does not end at the region's end",
            CorruptionKind::BadSlab => "small-object front's slab or class list inconsistent",
            CorruptionKind::BadStats => "statistics disagree with the heap walk",
        };
        write!(f, "heapworks: heap corrupt at {:#x}", self.addr)?;
        if let Some(bin) = self.bin {
            write!(f, " (bin {bin})")?;
        }
        write!(f, ": {what}")
    }
}
