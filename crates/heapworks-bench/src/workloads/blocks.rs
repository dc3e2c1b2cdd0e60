//! Live blocks held by a workload, and the sanity checks run on them after every trial:
//! alignment, and no two blocks overlapping, on a sample of up to [`SAMPLE`] blocks.

use std::alloc::{GlobalAlloc, Layout};

use crate::contenders::{Arena, RawHeap};
use crate::region::prefault_spare;

use super::Failure;

/// Most blocks checked for overlap after a trial (an even stride through the live set).
pub const SAMPLE: usize = 8192;

/// A block obtained from the allocator under test.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    /// Start of the block.
    pub ptr: *mut u8,
    /// The layout it was allocated (or last reallocated) with.
    pub layout: Layout,
}

impl Block {
    /// Allocates a block for `layout`; `None` when the allocator refuses.
    pub fn allocate<A: GlobalAlloc>(allocator: &A, layout: Layout) -> Option<Block> {
        // SAFETY: every workload asks for non-zero sizes.
        let ptr = unsafe { allocator.alloc(layout) };
        (!ptr.is_null()).then_some(Block { ptr, layout })
    }

    /// Resizes the block in place or by moving it; `false` (block unchanged) on failure.
    pub fn reallocate<A: GlobalAlloc>(&mut self, allocator: &A, new_size: usize) -> bool {
        // SAFETY: the block is live in `allocator` with `self.layout`; sizes are non-zero.
        let ptr = unsafe { allocator.realloc(self.ptr, self.layout, new_size) };
        if ptr.is_null() {
            return false;
        }
        self.ptr = ptr;
        self.layout = Layout::from_size_align(new_size, self.layout.align())
            .expect("realloc sizes stay far below isize::MAX");
        true
    }

    /// Frees the block.
    pub fn free<A: GlobalAlloc>(self, allocator: &A) {
        // SAFETY: the block is live in `allocator` with `self.layout` and is consumed here.
        unsafe { allocator.dealloc(self.ptr, self.layout) }
    }

    fn end(&self) -> usize {
        self.ptr as usize + self.layout.size()
    }
}

/// The live set of a workload.
#[derive(Debug, Default)]
pub struct LiveBlocks {
    blocks: Vec<Block>,
}

impl LiveBlocks {
    /// An empty set with room for `capacity` blocks, allocated and faulted in outside the
    /// timed region ([`prefault_spare`]).
    pub fn with_capacity(capacity: usize) -> Self {
        let mut blocks = Vec::with_capacity(capacity);
        let placeholder = Block {
            ptr: std::ptr::null_mut(),
            layout: Layout::new::<u8>(),
        };
        prefault_spare(&mut blocks, placeholder);
        Self { blocks }
    }

    /// Number of live blocks.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    /// Whether no block is live.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Adds a block.
    pub fn push(&mut self, block: Block) {
        self.blocks.push(block);
    }

    /// Adds the block, if there is one.
    pub fn extend(&mut self, block: Option<Block>) {
        self.blocks.extend(block);
    }

    /// Removes block `index`, moving the last block into its place.
    pub fn swap_remove(&mut self, index: usize) -> Block {
        self.blocks.swap_remove(index)
    }

    /// The block at `index`.
    pub fn get_mut(&mut self, index: usize) -> &mut Block {
        &mut self.blocks[index]
    }

    /// All blocks, in insertion order (modulo `swap_remove`).
    pub fn as_slice(&self) -> &[Block] {
        &self.blocks
    }

    /// All blocks, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [Block] {
        &mut self.blocks
    }

    /// Sum of the requested sizes of the live blocks.
    pub fn requested_bytes(&self) -> usize {
        self.blocks.iter().map(|block| block.layout.size()).sum()
    }

    /// Checks alignment and pairwise disjointness on an even sample of the live blocks.
    pub fn verify_sample(&self) -> Result<(), Failure> {
        let stride = self.blocks.len().div_ceil(SAMPLE).max(1);
        let mut sample: Vec<Block> = self.blocks.iter().step_by(stride).copied().collect();
        if let Some(bad) = sample
            .iter()
            .find(|b| !(b.ptr as usize).is_multiple_of(b.layout.align()))
        {
            return Err(Failure::Corrupted(format!(
                "block {:p} is not aligned to {}",
                bad.ptr,
                bad.layout.align()
            )));
        }
        sample.sort_unstable_by_key(|block| block.ptr as usize);
        match sample
            .windows(2)
            .find(|pair| pair[0].end() > pair[1].ptr as usize)
        {
            Some(pair) => Err(Failure::Corrupted(format!(
                "blocks {:p}+{} and {:p} overlap",
                pair[0].ptr,
                pair[0].layout.size(),
                pair[1].ptr
            ))),
            None => Ok(()),
        }
    }

    /// Frees every block if the heap needs it (the system allocator); arenas reclaim their
    /// blocks when dropped, which keeps slow frees out of the run time.
    pub fn release<H: RawHeap>(self, arena: &Arena<'_, H>) {
        if !H::DROP_RECLAIMS_BLOCKS {
            self.free_all(arena);
        }
    }

    /// Frees every block.
    pub fn free_all<A: GlobalAlloc>(self, allocator: &A) {
        for block in self.blocks {
            block.free(allocator);
        }
    }
}

/// Seed 003's utilization of an arena workload: the most requested bytes live at once over the
/// span of addresses the blocks took, from the lowest block's start to the highest block's
/// end. Fed, untimed, with live sets the workload holds anyway.
#[derive(Debug, Default)]
pub struct Utilization {
    low: Option<usize>,
    high: usize,
    peak_live: usize,
}

impl Utilization {
    /// Takes in `blocks`, live together at one moment: their addresses and requested bytes.
    pub fn include(&mut self, blocks: &[Block]) {
        for block in blocks {
            let start = block.ptr as usize;
            self.low = Some(self.low.map_or(start, |low| low.min(start)));
            self.high = self.high.max(block.end());
        }
        self.note_live(blocks.iter().map(|block| block.layout.size()).sum());
    }

    /// Takes in a moment at which `bytes` requested bytes were live.
    pub fn note_live(&mut self, bytes: usize) {
        self.peak_live = self.peak_live.max(bytes);
    }

    /// The utilization in percent (0 before any block was taken in).
    pub fn percent(&self) -> f64 {
        let span = self.low.map_or(0, |low| self.high - low);
        if span == 0 {
            return 0.0;
        }
        self.peak_live as f64 / span as f64 * 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(addr: usize, size: usize, align: usize) -> Block {
        Block {
            ptr: addr as *mut u8,
            layout: Layout::from_size_align(size, align).unwrap(),
        }
    }

    #[test]
    fn disjoint_aligned_blocks_pass() {
        let mut live = LiveBlocks::default();
        live.push(block(0x2000, 16, 16));
        live.push(block(0x1000, 0x1000, 8));
        assert_eq!(live.verify_sample(), Ok(()));
        assert_eq!(live.requested_bytes(), 0x1010);
    }

    #[test]
    fn overlap_is_caught() {
        let mut live = LiveBlocks::default();
        live.push(block(0x1000, 0x1001, 8));
        live.push(block(0x2000, 8, 8));
        assert!(matches!(live.verify_sample(), Err(Failure::Corrupted(_))));
    }

    #[test]
    fn utilization_is_the_peak_live_over_the_span() {
        let mut usage = Utilization::default();
        assert_eq!(usage.percent(), 0.0);
        usage.include(&[block(0x1000, 0x100, 8), block(0x1200, 0x100, 8)]);
        usage.include(&[block(0x1300, 0x100, 8)]);
        // 0x200 bytes live at most, over 0x1000..0x1400.
        assert_eq!(usage.percent(), 50.0);
        usage.note_live(0x400);
        assert_eq!(usage.percent(), 100.0);
    }

    #[test]
    fn misalignment_is_caught() {
        let mut live = LiveBlocks::default();
        live.push(block(0x1008, 8, 16));
        assert!(matches!(live.verify_sample(), Err(Failure::Corrupted(_))));
    }
}
