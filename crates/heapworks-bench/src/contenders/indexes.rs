//! heapworks on each of its other free indexes: one contender per index, beside `heapworks`
//! itself (the default index, `Bins`, which every ratio is taken to).
//!
//! Invariants: an index joins the benchmark by ONE line of the
//! `engine_contenders!` (in `heapworks.rs`) below (the variant, the core's
//! heap on that index, the contender's name and description); the macro derives the registry
//! (names, descriptions, look-up) and the dispatch to
//! [`HeapworksHeap`](super::heapworks::HeapworksHeap) on that index from it. These contenders
//! are not in [`AllocatorId::ALL`](super::AllocatorId::ALL): a normal `heapworks bench` runs
//! without them; `bench --indexes` (the free-index study, [`crate::study`]) runs them all, and
//! any command takes one by name (`--filter heapworks_splay`, `replay --alloc …`).

use heapworks::{
    AddressRedBlackTree, Heap, Hybrid, MirroredRedBlackTree, ParentRedBlackTree, RedBlackTree,
    SegregatedLists, SplayTree,
};

use super::heapworks::engine_contenders;

engine_contenders! {
    /// heapworks on one of its free indexes other than the default.
    pub enum IndexContender {
        /// The top-down splay tree with duplicate lists.
        Splay(Heap<SplayTree>) = ("heapworks_splay", "heapworks (this workspace), SplayTree index"),
        /// The red-black tree with duplicate lists, no parent pointer.
        RedBlack(Heap<RedBlackTree>) = ("heapworks_rbtree", "heapworks (this workspace), RedBlackTree index"),
        /// The same red-black tree, its left and right cases written apart (seed 003, question 1).
        Mirrored(Heap<MirroredRedBlackTree>) = ("heapworks_rbtree_mirrored", "heapworks (this workspace), MirroredRedBlackTree index"),
        /// The same red-black tree without duplicate lists, keyed by (size, address) (question 2).
        Address(Heap<AddressRedBlackTree>) = ("heapworks_rbtree_address", "heapworks (this workspace), AddressRedBlackTree index"),
        /// The same red-black tree with a parent pointer instead of a path stack (question 3).
        Parent(Heap<ParentRedBlackTree>) = ("heapworks_rbtree_parent", "heapworks (this workspace), ParentRedBlackTree index"),
        /// The exact bins below 2 KiB and the splay tree above.
        Hybrid(Heap<Hybrid>) = ("heapworks_hybrid", "heapworks (this workspace), Hybrid index"),
        /// Seed 003's classic baseline.
        Segregated(Heap<SegregatedLists>) = ("heapworks_segregated", "heapworks (this workspace), SegregatedLists index"),
    }
}
