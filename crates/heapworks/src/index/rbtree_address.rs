//! [`AddressRedBlackTree`]: [`crate::index::RedBlackTree`] without the duplicate lists, for
//! seed 003's second question (does keeping duplicate sizes in a list pay?).
//!
//! Every free chunk of a tree size is a node of its own, keyed by *(size, address)*, so every
//! key is unique. The descent, the fix-ups and the removal are `RedBlackTree`'s own code (this
//! tree wraps one and differs only in its descent's key), so the duplicate lists are the one
//! difference between the two.
//!
//! Invariants (verified by [`crate::Heap::check`], through [`Index::tally`] and
//! [`Index::check_filed`]):
//! - *Order*: every chunk of at least [`TREE_MIN`] bytes is exactly one node of the binary
//!   search tree rooted at `root`; every key *(size, address)* in a node's left subtree is
//!   smaller (a smaller size, or the same size at a lower address), every key in its right
//!   subtree larger.
//! - *No lists*: a node's `next` and `prev` words are null; `left` and `right` are its
//!   children, bit 0 of `left` its colour (set: red), as in `RedBlackTree`.
//! - *Red-black rules*: the root is black; a red node has no red child; every path from a
//!   node down to a null child passes the same number of black nodes (equal black heights).
//!   Hence the height is at most 2·log2(n + 1) for n nodes, n now the number of free chunks
//!   rather than of distinct sizes (at most [`MAX_DEPTH`], which `RedBlackTree`'s path stack
//!   is sized for).
//! - *Chunks too small for a node*: the chunks of [`MIN_CHUNK`] bytes sit in `RedBlackTree`'s
//!   list `smallest` (not a duplicate list: there is no node to hang them from).
//!
//! Search: the node of the smallest key at or above *(size, 0)*: the smallest size that fits,
//! and of that size the chunk at the lowest address (address-ordered best fit, which packs
//! the low end of a region and leaves the free space above it in larger pieces: among the
//! least fragmenting policies in Wilson, Johnstone, Neely and Boles' survey, 1995). Filing and
//! taking out are `RedBlackTree`'s bottom-up fix-ups from a stack of the search path; taking a
//! chunk out always descends to its node and always rebalances. Every operation is O(log n)
//! for n free chunks, against O(log d) for d distinct sizes (and O(1) for a duplicate) with
//! the lists. Measured (`docs/free-indexes.md`, question 2): 4–155 % more instructions per
//! call than `RedBlackTree` on `bench --instructions`' sequences, growing with log n on seed
//! 003's workloads, for a density no better.

use crate::chunk::Chunk;
use crate::error::Corruption;
use crate::index::list::{self, get, NEXT, PREV, RIGHT};
use crate::index::rbtree::{child, tally_red_black_by, Coloured, OnPath, Path, RedBlackTree};
use crate::index::tree::{size_tree_index, Walk, TREE_MIN};
#[cfg(doc)]
use crate::{
    chunk::MIN_CHUNK,
    index::{rbtree::MAX_DEPTH, Index},
};

/// A red-black tree of free chunks keyed by (size, address), one node per chunk, no parent
/// pointer (see the module docs). `Heap::<AddressRedBlackTree>::empty()` builds a heap on it.
pub struct AddressRedBlackTree {
    /// The tree whose fix-ups and fields this one uses.
    tree: RedBlackTree,
}

/// The key of a node: its size, then its address.
fn by_address(node: Chunk, size: usize) -> (usize, usize) {
    (size, node.addr())
}

/// The node of the least key at or above `key`, found by a plain descent from `root` of at
/// most `limit` steps (`Err` past it, on a corrupt tree).
///
/// # Safety
/// The tree's links point at readable chunks (true of a consistent tree; on a corrupt one, the
/// checker's stated limit).
unsafe fn ceiling(
    root: Option<Chunk>,
    key: (usize, usize),
    limit: usize,
) -> Result<Option<Chunk>, ()> {
    let mut found = None;
    let mut cursor = root;
    for _ in 0..=limit {
        let Some(node) = cursor else {
            return Ok(found);
        };
        // SAFETY: forwarded from the caller.
        let below = key <= by_address(node, unsafe { node.size() });
        if below {
            found = Some(node);
        }
        // SAFETY: as above.
        cursor = unsafe { child(node, if below { list::LEFT } else { RIGHT }) };
    }
    Err(())
}

/// The read-only view of the tree: the walks of [`Walk`] that hold for one node per chunk, and
/// its own where `Walk` counts on one node per size.
pub(crate) struct AddressWalk {
    walk: Walk<Coloured>,
}

impl AddressWalk {
    /// See [`Walk::smallest_entry`].
    #[inline(always)]
    pub(crate) fn smallest_entry(&self) -> Option<(Chunk, usize)> {
        self.walk.smallest_entry()
    }

    /// The size of the largest filed chunk.
    ///
    /// # Safety
    /// The tree is consistent.
    pub(crate) unsafe fn largest(&self) -> Option<usize> {
        // SAFETY: forwarded from the caller; the rightmost node has the largest size.
        unsafe { self.walk.largest() }
    }

    /// Checks the entry of one free chunk the region walk met (see [`Walk::check_filed`]: a
    /// node has no list neighbours, so only `smallest` has links to check here).
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes inside a region.
    pub(crate) unsafe fn check_filed(&self, chunk: Chunk, size: usize) -> Result<(), Corruption> {
        // SAFETY: forwarded from the caller.
        unsafe { self.walk.check_filed(chunk, size) }
    }

    /// Calls `f` with every filed chunk of at least `min_size` bytes and its size, by
    /// increasing key, until it returns `true`; returns that chunk and size. Each step is a
    /// descent to the next key: O(n log n) for all n chunks, no stack.
    ///
    /// # Safety
    /// The tree is consistent.
    pub(crate) unsafe fn find_in_order(
        &self,
        min_size: usize,
        mut f: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<(Chunk, usize)> {
        // SAFETY: the tree is consistent: its chunks are free chunks with the link words of
        // their size, and its descents end.
        unsafe {
            let smallest = self.walk.find_in_smallest(min_size, &mut f);
            if smallest.is_some() {
                return smallest;
            }
            let mut key = (min_size, 0);
            while let Ok(Some(node)) = ceiling(self.walk.root, key, usize::MAX) {
                let size = node.size();
                if f(node, size) {
                    return Some((node, size));
                }
                key = (size, node.addr() + 1);
            }
            None
        }
    }

    /// Whether the free chunk `chunk` of `size` bytes is filed, within `limit` entries.
    pub(crate) fn files(&self, chunk: Chunk, size: usize, limit: usize) -> bool {
        if size < TREE_MIN {
            return list::holds(self.walk.smallest, chunk, limit);
        }
        // SAFETY: the checker's walk passed, so the links followed within `limit` steps were
        // read by the tree's tally already.
        let node = unsafe { ceiling(self.walk.root, by_address(chunk, size), limit) };
        node == Ok(Some(chunk))
    }
}

impl AddressRedBlackTree {
    /// An empty tree.
    pub(crate) const fn new() -> AddressRedBlackTree {
        AddressRedBlackTree {
            tree: RedBlackTree::new(),
        }
    }

    /// The read-only view of the tree.
    #[inline(always)]
    fn walk(&self) -> AddressWalk {
        AddressWalk {
            walk: Walk::of(self.tree.root, self.tree.smallest),
        }
    }

    /// Files a free chunk of `size` bytes: always a new node (its key is new).
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes that is not filed; the tree is consistent.
    pub(crate) unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { OnPath::file(self, chunk, size) }
    }

    /// Takes the filed chunk `chunk` of `size` bytes out: always a node, with no list.
    ///
    /// # Safety
    /// `chunk` is filed, of `size` bytes by its header; the tree is consistent.
    pub(crate) unsafe fn unlink(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { OnPath::take_out(self, chunk, size) }
    }

    /// The filed chunk of the smallest key at or above `(size, 0)`, with its size (the list of
    /// the smallest chunks first, for a request it fits).
    ///
    /// # Safety
    /// The tree is consistent.
    pub(crate) unsafe fn best_fit(&self, size: usize) -> Option<(Chunk, usize)> {
        if size < TREE_MIN {
            if let Some(found) = self.walk().smallest_entry() {
                return Some(found);
            }
        }
        // SAFETY: the tree is consistent (the caller's promise): the descent ends.
        unsafe {
            let node = ceiling(self.tree.root, (size, 0), usize::MAX).ok()??;
            Some((node, node.size()))
        }
    }

    /// The checker's count ([`Index::tally`] with nodes of at least `min_node` bytes):
    /// `RedBlackTree`'s, ordered by (size, address), every node with null `next` and `prev`.
    fn tally_from(
        &self,
        min_node: usize,
        limit: usize,
    ) -> Result<Option<(usize, usize)>, Corruption> {
        tally_red_black_by(
            self.tree.root,
            self.tree.smallest,
            min_node,
            limit,
            by_address,
            has_no_list,
        )
    }
}

/// The checker's test of a node's list words: both null (no duplicates, not a duplicate).
fn has_no_list(node: Chunk, _parent: Option<Chunk>) -> bool {
    // SAFETY: the checker calls this on nodes only, whose `next` and `prev` words are inside
    // them.
    unsafe { get(node, NEXT).is_none() && get(node, PREV).is_none() }
}

impl OnPath for AddressRedBlackTree {
    #[inline(always)]
    fn smallest(&mut self) -> &mut Option<Chunk> {
        &mut self.tree.smallest
    }

    /// `RedBlackTree`'s descent, by (size, address): it finds `chunk` itself when it is filed,
    /// and nothing when it is not.
    #[inline(always)]
    unsafe fn descend(&self, chunk: Chunk, size: usize, path: &mut Path) -> Option<Chunk> {
        let mut cursor = self.tree.root;
        // SAFETY: nodes are free chunks with valid headers and four link words; a path in a
        // consistent tree fits the array.
        unsafe {
            while let Some(node) = cursor {
                if node == chunk {
                    return Some(node);
                }
                let smaller = (size, chunk.addr()) < by_address(node, node.size());
                let side = if smaller { list::LEFT } else { RIGHT };
                path.push(node, side);
                cursor = child(node, side);
            }
        }
        None
    }

    #[inline(always)]
    unsafe fn replace(&mut self, path: &Path, depth: usize, to: Option<Chunk>) {
        // SAFETY: forwarded from the caller.
        unsafe { OnPath::replace(&mut self.tree, path, depth, to) }
    }

    #[inline(always)]
    unsafe fn fix_insert(&mut self, path: &Path) {
        // SAFETY: forwarded from the caller.
        unsafe { OnPath::fix_insert(&mut self.tree, path) }
    }

    #[inline(always)]
    unsafe fn remove_node(&mut self, node: Chunk, path: &mut Path) {
        // SAFETY: forwarded from the caller.
        unsafe { OnPath::remove_node(&mut self.tree, node, path) }
    }
}

size_tree_index!(AddressRedBlackTree);

#[cfg(test)]
mod tests {
    extern crate std;

    use core::ptr::NonNull;
    use std::vec::Vec;

    use super::*;
    use crate::error::CorruptionKind;
    use crate::index::list::set;
    use crate::index::rbtree::tests::{
        assert_balanced_through, assert_survives_churn, assert_within_height_bound, payload,
        tree_of,
    };

    #[test]
    fn chunks_of_many_sizes_survive_churn() {
        assert_survives_churn::<AddressRedBlackTree>();
    }

    /// Many distinct sizes filed in decreasing order stay within the red-black height bound,
    /// and taking them out again keeps the rules.
    #[test]
    fn sorted_insertions_stay_balanced() {
        let sizes: Vec<usize> = (0..127).rev().map(|i| TREE_MIN + i * 16).collect();
        assert_balanced_through::<AddressRedBlackTree>(&sizes, |heap| heap.index.tree.root);
    }

    /// Chunks of one size are one node each, filed in increasing address order (the case
    /// that makes an unbalanced tree keyed by address a list): the tree stays within the
    /// height bound, and requests of that size get them from the lowest address up.
    #[test]
    fn equal_sizes_are_nodes_taken_by_lowest_address() {
        let sizes = [96; 100];
        let mut memory = std::vec![0u128; 16384];
        let (mut heap, chunks) = tree_of::<AddressRedBlackTree>(&mut memory, &sizes);
        assert_within_height_bound(heap.index.tree.root, sizes.len());
        for chunk in &chunks {
            // SAFETY: a free chunk filed as a node.
            assert_eq!(unsafe { get(*chunk, NEXT) }, None, "no duplicate lists");
        }
        let mut by_address: Vec<NonNull<u8>> = chunks.iter().map(|c| c.payload()).collect();
        by_address.sort();
        for (step, expected) in by_address.into_iter().enumerate() {
            assert_eq!(heap.allocate(payload(96)).unwrap(), expected);
            if crate::index::checks_after(step) {
                heap.check().unwrap();
            }
        }
        heap.check().unwrap();
        assert!(heap.index.tree.root.is_none());
    }

    /// Best fit takes the smallest size that fits first, and of it the lowest address.
    #[test]
    fn the_search_takes_the_smallest_size_then_the_lowest_address() {
        let mut memory = std::vec![0u128; 1024];
        let (mut heap, chunks) =
            tree_of::<AddressRedBlackTree>(&mut memory, &[160, 112, 96, 112, 112]);
        assert_eq!(heap.allocate(payload(100)).unwrap(), chunks[1].payload());
        assert_eq!(heap.allocate(payload(100)).unwrap(), chunks[3].payload());
        assert_eq!(heap.allocate(payload(96)).unwrap(), chunks[2].payload());
        heap.check().unwrap();
    }

    /// Out of memory changes nothing.
    #[test]
    fn a_request_too_large_fails_and_changes_nothing() {
        let mut memory = std::vec![0u128; 1024];
        let (mut heap, _) = tree_of::<AddressRedBlackTree>(&mut memory, &[96, 160, 160]);
        let before = heap.stats();
        assert!(heap.allocate(payload(176)).is_err());
        assert_eq!(heap.stats(), before);
        heap.check().unwrap();
    }

    /// A node that grew a duplicate list (another filed chunk of its size hung from it) is
    /// reported.
    #[test]
    fn a_node_with_a_list_is_reported() {
        let mut memory = std::vec![0u128; 1024];
        let (heap, chunks) = tree_of::<AddressRedBlackTree>(&mut memory, &[96, 96, 96]);
        let root = heap.index.tree.root.unwrap();
        let leaf = *chunks.iter().find(|&&chunk| chunk != root).unwrap();
        // SAFETY: both chunks are nodes of the tree.
        unsafe { set(root, NEXT, Some(leaf)) };
        let fault = heap.check().unwrap_err();
        assert_eq!(fault.kind, CorruptionKind::BadLink);
        assert_eq!(fault.addr, root.addr());
    }

    /// Two nodes of one size out of address order break the order; the checker names one.
    #[test]
    fn a_broken_address_order_is_reported() {
        let mut memory = std::vec![0u128; 1024];
        let (heap, _) = tree_of::<AddressRedBlackTree>(&mut memory, &[96, 96, 96]);
        let root = heap.index.tree.root.unwrap();
        // SAFETY: the root of three nodes has two children, nodes of the tree.
        let (left, right) = unsafe { (child(root, list::LEFT), child(root, RIGHT)) };
        // SAFETY: as above; the colours stay with the nodes' `left` words.
        unsafe {
            crate::index::rbtree::set_child(root, list::LEFT, right);
            crate::index::rbtree::set_child(root, RIGHT, left);
        }
        let fault = heap.check().unwrap_err();
        assert_eq!(fault.kind, CorruptionKind::BadLink);
        assert_eq!(Some(fault.addr), right.map(Chunk::addr));
    }
}
