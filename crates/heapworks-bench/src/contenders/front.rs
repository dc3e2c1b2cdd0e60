//! heapworks with its small-object front (`FrontHeap`): one contender per free index under the
//! front, today the default index only (`heapworks_front`).
//!
//! Invariants: these contenders are not in [`AllocatorId::ALL`](super::AllocatorId::ALL), as
//! the index contenders are not: the front is opt-in in the core, so a normal `heapworks
//! bench` measures the `Heap` users get by default, and its at-a-glance verdicts compare
//! heapworks with its peers only, never with its own front. Any command takes one by name
//! (`--filter heapworks,heapworks_front`, `replay --alloc heapworks_front`), and
//! [`AllocatorId::nameable`](super::AllocatorId::nameable) lists them. Each runs through the
//! one heapworks adapter, [`HeapworksHeap`](super::heapworks::HeapworksHeap), on the front
//! (declared with `engine_contenders!` (in `heapworks.rs`)).

use heapworks::{Bins, FrontHeap};

use super::heapworks::engine_contenders;

engine_contenders! {
    /// heapworks with its small-object front, over one free index.
    pub enum FrontContender {
        /// The front over the default index, `Bins`.
        Bins(FrontHeap<Bins>) = ("heapworks_front", "heapworks (this workspace), FrontHeap (small-object front), Bins index"),
    }
}
