//! heapworks on each of its other free indexes: one contender per index, beside `heapworks`
//! itself (the default index, `Bins`, which every ratio is taken to).
//!
//! Invariants: an index joins the benchmark by ONE line of [`index_contenders!`] below (the
//! variant, the core's index type, the contender's name and description); the macro derives
//! the registry (names, descriptions, look-up) and the dispatch to
//! [`HeapworksHeap`](super::heapworks::HeapworksHeap) on that index from it. These contenders
//! are not in [`AllocatorId::ALL`](super::AllocatorId::ALL): a normal `heapworks bench` runs
//! without them; `bench --indexes` (the free-index study, [`crate::study`]) runs them all, and
//! any command takes one by name (`--filter heapworks_splay`, `replay --alloc …`).

use super::heapworks::HeapworksHeap;
use super::{run_over, SetupError, UseAllocator};
use crate::region::Region;

/// Declares the index contenders, one line each: `Variant(IndexType) = ("name", "description")`,
/// `IndexType` an index of the core (`heapworks::IndexType`); the description says what is
/// measured, as a crate version does for a peer (the index's design is in its module's docs).
macro_rules! index_contenders {
    ($($(#[$meta:meta])* $variant:ident($index:ident) = ($name:expr, $description:expr)),* $(,)?) => {
        crate::registry! {
            /// heapworks on one of its free indexes other than the default.
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum IndexContender {
                $($(#[$meta])* $variant = ($name, $description),)*
            }
        }

        impl IndexContender {
            /// Builds heapworks on this index over the first `heap_len` bytes of `region` and
            /// runs `work` on it.
            pub fn with_heap<U: UseAllocator>(
                self,
                region: &mut Region,
                heap_len: usize,
                work: U,
            ) -> Result<U::Output, SetupError> {
                match self {
                    $(IndexContender::$variant => {
                        run_over::<HeapworksHeap<::heapworks::Heap<::heapworks::$index>>, U>(
                            region, heap_len, work,
                        )
                    })*
                }
            }
        }
    };
}

index_contenders! {
    /// The top-down splay tree with duplicate lists.
    Splay(SplayTree) = ("heapworks_splay", "heapworks (this workspace), SplayTree index"),
    /// The red-black tree with duplicate lists, no parent pointer.
    RedBlack(RedBlackTree) = ("heapworks_rbtree", "heapworks (this workspace), RedBlackTree index"),
    /// The exact bins below 2 KiB and the splay tree above.
    Hybrid(Hybrid) = ("heapworks_hybrid", "heapworks (this workspace), Hybrid index"),
    /// Seed 003's classic baseline.
    Segregated(SegregatedLists) = ("heapworks_segregated", "heapworks (this workspace), SegregatedLists index"),
}
