//! heapworks with its small-object front (`FrontHeap`): one contender per free index under the
//! front, today the default index only (`heapworks_front`).
//!
//! Invariants: these contenders are not in [`AllocatorId::ALL`](super::AllocatorId::ALL), as
//! the index contenders are not: the front is opt-in in the core, so a normal `heapworks
//! bench` measures the `Heap` users get by default, and its at-a-glance verdicts compare
//! heapworks with its peers only, never with its own front. Any command takes one by name
//! (`--filter heapworks,heapworks_front`, `replay --alloc heapworks_front`), and
//! [`AllocatorId::nameable`](super::AllocatorId::nameable) lists them. Each runs through the
//! one heapworks adapter, [`HeapworksHeap`](super::heapworks::HeapworksHeap), on the front.

use super::heapworks::HeapworksFrontHeap;
use super::{run_over, SetupError, UseAllocator};
use crate::region::Region;

crate::registry! {
    /// heapworks with its small-object front, over one free index.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum FrontContender {
        /// The front over the default index, `Bins`.
        Bins = ("heapworks_front", "heapworks (this workspace), FrontHeap (small-object front), Bins index"),
    }
}

impl FrontContender {
    /// Builds heapworks with this front over the first `heap_len` bytes of `region` and runs
    /// `work` on it.
    pub fn with_heap<U: UseAllocator>(
        self,
        region: &mut Region,
        heap_len: usize,
        work: U,
    ) -> Result<U::Output, SetupError> {
        match self {
            FrontContender::Bins => run_over::<HeapworksFrontHeap, U>(region, heap_len, work),
        }
    }
}
