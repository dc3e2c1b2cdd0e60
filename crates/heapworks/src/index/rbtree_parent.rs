//! [`ParentRedBlackTree`]: [`crate::index::RedBlackTree`] with a parent pointer in every node
//! instead of a stack of the search path: the variant that answers seed 003's third question
//! (does giving up the parent pointer cost speed?). Everything else is the same: the node
//! layout, the colour bit, the duplicate lists, the list of the smallest chunks, the left and
//! right cases united through a side index, exact best fit.
//!
//! Invariants (verified by [`crate::Heap::check`], through [`Index::tally`] and
//! [`Index::check_filed`]), those of [`crate::index::RedBlackTree`] (order, colour in bit 0
//! of `left`, the red-black rules, duplicates, the smallest chunks' list) except how a node's
//! `prev` word reads:
//! - *Parent*: a node's `prev` word is its parent's address with bit 1 ([`NODE`]) set; the
//!   root's is [`NODE`] alone. A duplicate's `prev` names the chunk before it in its list, so
//!   bit 1 is clear (chunk headers are word-aligned): that bit is how `unlink` tells a node
//!   from a duplicate. A node thus needs no word more than in the tree without parents (six,
//!   [`TREE_MIN`]), and both trees file chunks of the same sizes.
//!
//! With the parent at hand, taking a node out needs no descent to it, and the fix-ups climb
//! through the parents; every operation on a node is O(log n) at worst; on a duplicate or a
//! chunk of `smallest`, O(1). The price is the parent words to keep right: a rotation writes
//! three more, a node's removal up to three more.

use core::ptr::{self, NonNull};

use crate::chunk::{Chunk, WORD};
use crate::error::Corruption;
use crate::index::list::{self, get, link, set, LEFT, NEXT, PREV, RIGHT};
use crate::index::rbtree::{
    child, colour, is_red, paint, raw, set_child, tally_red_black, Coloured, RED,
};
use crate::index::tree::{
    push_duplicate, size_tree_index, unlink_listed, Children, Walk, TREE_MIN,
};
#[cfg(doc)]
use crate::index::Index;

/// The bit of a node's `prev` word that marks it a node (the rest is its parent).
const NODE: usize = 2;
const _: () = assert!(
    WORD > NODE,
    "chunk headers are word-aligned, so bit 1 of a link is spare"
);

/// A red-black tree of free chunks keyed by size, with duplicate lists and a parent pointer
/// in every node (see the module docs). `Heap::<ParentRedBlackTree>::empty()` builds a heap on
/// it.
pub struct ParentRedBlackTree {
    /// The tree's root node.
    root: Option<Chunk>,
    /// The list of chunks too small for a node.
    smallest: Option<Chunk>,
}

/// The links of this tree: [`Coloured`] children, and `prev` words that name a parent when
/// their [`NODE`] bit is set.
struct WithParents;

impl Children for WithParents {
    #[inline(always)]
    unsafe fn child(node: Chunk, side: usize) -> Option<Chunk> {
        // SAFETY: forwarded from the caller.
        unsafe { Coloured::child(node, side) }
    }

    #[inline(always)]
    unsafe fn list_prev(chunk: Chunk) -> Option<Chunk> {
        // SAFETY: forwarded from the caller; a node's `prev` word is read as a parent instead.
        unsafe {
            if is_node(chunk) {
                None
            } else {
                get(chunk, PREV)
            }
        }
    }
}

/// The `prev` word of a free chunk, as a raw pointer (marks included).
#[inline(always)]
fn prev_word(chunk: Chunk) -> *mut *mut u8 {
    link(chunk, PREV).cast()
}

/// Whether the free chunk `chunk` (of a node's size) is a tree node.
///
/// # Safety
/// `chunk` is a free chunk.
#[inline(always)]
unsafe fn is_node(chunk: Chunk) -> bool {
    // SAFETY: forwarded from the caller.
    unsafe { prev_word(chunk).read().addr() & NODE != 0 }
}

/// The parent of `node` (`None` for the root).
///
/// # Safety
/// `node` is a tree node.
#[inline(always)]
unsafe fn parent(node: Chunk) -> Option<Chunk> {
    // SAFETY: forwarded from the caller.
    let word = unsafe { prev_word(node).read() };
    NonNull::new(word.map_addr(|addr| addr & !NODE)).map(Chunk::at)
}

/// Makes `node` a tree node whose parent is `to`.
///
/// # Safety
/// `node` is a free chunk of at least [`TREE_MIN`] bytes.
#[inline(always)]
unsafe fn set_parent(node: Chunk, to: Option<Chunk>) {
    let to = to.map_or(ptr::null_mut(), |chunk| {
        chunk.payload().as_ptr().wrapping_sub(WORD)
    });
    // SAFETY: forwarded from the caller.
    unsafe { prev_word(node).write(to.map_addr(|addr| addr | NODE)) }
}

/// The side of `parent` that `node` hangs from.
///
/// # Safety
/// `parent` is a tree node, and `node` is one of its children or, when `parent` has a null
/// child, null.
#[inline(always)]
unsafe fn side_of(parent: Chunk, node: Option<Chunk>) -> usize {
    // SAFETY: forwarded from the caller.
    if unsafe { child(parent, LEFT) } == node {
        LEFT
    } else {
        RIGHT
    }
}

impl ParentRedBlackTree {
    /// An empty tree.
    pub(crate) const fn new() -> ParentRedBlackTree {
        ParentRedBlackTree {
            root: None,
            smallest: None,
        }
    }

    /// The read-only view of the tree.
    #[inline(always)]
    fn walk(&self) -> Walk<WithParents> {
        Walk::of(self.root, self.smallest)
    }

    /// Puts `to` where `from` hangs: below `from`'s parent `parent`, or at the root; and makes
    /// `parent` the parent of `to`.
    ///
    /// # Safety
    /// `from` is a node of the tree whose parent is `parent`; `to`, if any, is a node.
    #[inline(always)]
    unsafe fn transplant(&mut self, from: Chunk, parent: Option<Chunk>, to: Option<Chunk>) {
        // SAFETY: forwarded from the caller.
        unsafe {
            match parent {
                None => self.root = to,
                Some(parent) => set_child(parent, side_of(parent, Some(from)), to),
            }
            if let Some(to) = to {
                set_parent(to, parent);
            }
        }
    }

    /// Rotates the child of `node` on `side` up into its place and returns it. Colours stay
    /// with their nodes.
    ///
    /// # Safety
    /// `node` is a tree node with a child on `side`.
    #[inline(always)]
    unsafe fn rotate(&mut self, node: Chunk, side: usize) -> Chunk {
        // SAFETY: forwarded from the caller; the child is a tree node too.
        unsafe {
            let up = child(node, side).unwrap_unchecked();
            let inner = child(up, side ^ 1);
            set_child(node, side, inner);
            if let Some(inner) = inner {
                set_parent(inner, Some(node));
            }
            self.transplant(node, parent(node), Some(up));
            set_child(up, side ^ 1, Some(node));
            set_parent(node, Some(up));
            up
        }
    }

    /// Files a free chunk of `size` bytes.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes that is not filed; the tree is consistent.
    pub(crate) unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: `chunk` and every filed chunk are free chunks with the link words of their
        // size; the tree is consistent.
        unsafe {
            if size < TREE_MIN {
                list::push(&mut self.smallest, chunk);
                return;
            }
            let mut above = None;
            let mut side = LEFT;
            let mut cursor = self.root;
            while let Some(node) = cursor {
                let node_size = node.size();
                if size == node_size {
                    push_duplicate(node, chunk);
                    return;
                }
                side = if size < node_size { LEFT } else { RIGHT };
                above = Some(node);
                cursor = child(node, side);
            }
            set(chunk, NEXT, None);
            set_parent(chunk, above);
            raw(chunk, LEFT).write(ptr::without_provenance_mut(RED));
            set(chunk, RIGHT, None);
            match above {
                None => self.root = Some(chunk),
                Some(above) => set_child(above, side, Some(chunk)),
            }
            self.fix_insert(chunk);
        }
    }

    /// Restores the red-black rules after the red leaf `node` was linked in: recolours up
    /// the parents while the red node's parent and uncle are red, then rotates at most twice.
    ///
    /// # Safety
    /// `node` is a red node of the tree; apart from its parent being red, the tree keeps the
    /// red-black rules.
    #[inline(never)]
    unsafe fn fix_insert(&mut self, mut node: Chunk) {
        // SAFETY: every chunk reached is a node of the tree: a red parent is not the root, so
        // it has a parent.
        unsafe {
            loop {
                let Some(mut above) = parent(node) else {
                    paint(node, 0);
                    return;
                };
                if colour(above) != RED {
                    return;
                }
                let grandparent = parent(above).unwrap_unchecked();
                let above_side = side_of(grandparent, Some(above));
                let uncle = child(grandparent, above_side ^ 1);
                if let Some(uncle) = uncle.filter(|&uncle| colour(uncle) == RED) {
                    paint(above, 0);
                    paint(uncle, 0);
                    paint(grandparent, RED);
                    node = grandparent;
                    continue;
                }
                if side_of(above, Some(node)) != above_side {
                    above = self.rotate(above, above_side ^ 1);
                }
                self.rotate(grandparent, above_side);
                paint(above, 0);
                paint(grandparent, RED);
                return;
            }
        }
    }

    /// Takes the filed chunk `chunk` of `size` bytes out.
    ///
    /// # Safety
    /// `chunk` is filed, of `size` bytes by its header; the tree is consistent.
    pub(crate) unsafe fn unlink(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: filed chunks are free chunks with the link words of their size; a chunk of
        // the tree's sizes is a node exactly when its `prev` word says so (module invariants).
        unsafe {
            if unlink_listed::<WithParents>(&mut self.smallest, chunk, size) {
                return;
            }
            match get(chunk, NEXT) {
                Some(duplicate) => {
                    // The first duplicate takes the node's place: parent, children, colour.
                    let above = parent(chunk);
                    prev_word(duplicate).write(prev_word(chunk).read());
                    raw(duplicate, LEFT).write(raw(chunk, LEFT).read());
                    set(duplicate, RIGHT, get(chunk, RIGHT));
                    for side in [LEFT, RIGHT] {
                        if let Some(below) = child(chunk, side) {
                            set_parent(below, Some(duplicate));
                        }
                    }
                    match above {
                        None => self.root = Some(duplicate),
                        Some(above) => {
                            set_child(above, side_of(above, Some(chunk)), Some(duplicate))
                        }
                    }
                }
                None => self.remove_node(chunk),
            }
        }
    }

    /// Takes the node `node`, which has no duplicate, out of the tree.
    ///
    /// # Safety
    /// `node` is a node of a consistent tree.
    unsafe fn remove_node(&mut self, node: Chunk) {
        // SAFETY: every chunk reached is a node of the tree.
        unsafe {
            let (left, right) = (child(node, LEFT), child(node, RIGHT));
            let above = parent(node);
            // The subtree that may come out one black short (it may be empty), and its parent.
            let (short, short_parent, removed_black) = match (left, right) {
                (Some(left), Some(right)) => {
                    // The successor, the least node on the right, takes the node's place and
                    // colour; the hole is where the successor was.
                    let mut successor = right;
                    while let Some(smaller) = child(successor, LEFT) {
                        successor = smaller;
                    }
                    let removed_black = colour(successor) != RED;
                    let short = child(successor, RIGHT);
                    let short_parent = if successor == right {
                        successor
                    } else {
                        let successor_parent = parent(successor).unwrap_unchecked();
                        set_child(successor_parent, LEFT, short);
                        if let Some(short) = short {
                            set_parent(short, Some(successor_parent));
                        }
                        set_child(successor, RIGHT, Some(right));
                        set_parent(right, Some(successor));
                        successor_parent
                    };
                    raw(successor, LEFT).write(raw(node, LEFT).read());
                    set_parent(left, Some(successor));
                    self.transplant(node, above, Some(successor));
                    (short, Some(short_parent), removed_black)
                }
                (only, None) | (None, only) => {
                    self.transplant(node, above, only);
                    (only, above, colour(node) != RED)
                }
            };
            if removed_black {
                self.fix_remove(short, short_parent);
            }
        }
    }

    /// Restores the equal black heights after a black node left the subtree `short` (which may
    /// be empty) below `above` (`None`: `short` is the whole tree), one black short.
    ///
    /// # Safety
    /// `short` hangs below `above` (or is the root); the tree keeps the red-black rules apart
    /// from that one subtree.
    #[inline(never)]
    unsafe fn fix_remove(&mut self, mut short: Option<Chunk>, mut above: Option<Chunk>) {
        // SAFETY: the short subtree's sibling has a black height of at least one, so it is a
        // node, as is a red node's or a red-childed node's child; every chunk reached is a node.
        unsafe {
            loop {
                if let Some(red) = short.filter(|&node| colour(node) == RED) {
                    paint(red, 0);
                    return;
                }
                let Some(parent_node) = above else {
                    return;
                };
                let side = side_of(parent_node, short);
                let mut sibling = child(parent_node, side ^ 1).unwrap_unchecked();
                if colour(sibling) == RED {
                    // Rotate the red sibling up: the parent turns red, the new sibling black.
                    paint(sibling, 0);
                    paint(parent_node, RED);
                    self.rotate(parent_node, side ^ 1);
                    sibling = child(parent_node, side ^ 1).unwrap_unchecked();
                }
                let far = child(sibling, side ^ 1);
                let near = child(sibling, side);
                if !is_red(far) && !is_red(near) {
                    // The sibling's side gives up a black too: the parent's subtree is short.
                    paint(sibling, RED);
                    short = Some(parent_node);
                    above = parent(parent_node);
                    continue;
                }
                if !is_red(far) {
                    let near = near.unwrap_unchecked();
                    paint(near, 0);
                    paint(sibling, RED);
                    sibling = self.rotate(sibling, side);
                }
                paint(sibling, colour(parent_node));
                paint(parent_node, 0);
                paint(child(sibling, side ^ 1).unwrap_unchecked(), 0);
                self.rotate(parent_node, side ^ 1);
                return;
            }
        }
    }

    /// The smallest filed chunk of at least `size` bytes, with its size (see [`Walk::best_fit`]).
    ///
    /// # Safety
    /// The tree is consistent.
    pub(crate) unsafe fn best_fit(&self, size: usize) -> Option<(Chunk, usize)> {
        // SAFETY: forwarded from the caller.
        unsafe { self.walk().best_fit(size) }
    }

    /// The checker's count ([`Index::tally`] with nodes of at least `min_node` bytes): as for
    /// the tree without parents, and every node's `prev` word names its parent.
    fn tally_from(
        &self,
        min_node: usize,
        limit: usize,
    ) -> Result<Option<(usize, usize)>, Corruption> {
        // SAFETY: a node's `prev` word is inside it.
        let names_parent = |node, above| unsafe { is_node(node) && parent(node) == above };
        tally_red_black(self.root, self.smallest, min_node, limit, names_parent)
    }
}

size_tree_index!(ParentRedBlackTree);

#[cfg(test)]
mod tests {
    extern crate std;

    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::error::CorruptionKind;
    use crate::index::rbtree::tests::{assert_balanced_through, assert_survives_churn, tree_of};

    /// Blocks of many sizes, many of them equal, freed in a scrambled order and reallocated:
    /// both fix-ups' rotations, the duplicate lists (a duplicate taking its node's place
    /// included) and the smallest chunks' list all run; the heap is checked after every step
    /// and finally holds one free chunk.
    #[test]
    fn duplicates_and_small_chunks_survive_churn() {
        assert_survives_churn::<ParentRedBlackTree>();
    }

    /// Sorted insertions stay within the red-black height bound, and taking the nodes out
    /// from the middle outwards keeps the rules and the parents right (checked every step).
    #[test]
    fn sorted_insertions_stay_balanced() {
        let sizes: Vec<usize> = (0..127).map(|i| TREE_MIN + i * 16).collect();
        assert_balanced_through::<ParentRedBlackTree>(&sizes, |heap| heap.index.root);
    }

    /// A node whose `prev` word names the wrong parent is reported, at that node.
    #[test]
    fn a_wrong_parent_is_reported() {
        let mut memory = vec![0u128; 1024];
        let (heap, chunks) = tree_of::<ParentRedBlackTree>(&mut memory, &[160, 96, 224]);
        // SAFETY: the chunks are nodes of the tree; the root is the 160-byte one.
        unsafe {
            assert_eq!(parent(chunks[1]), Some(chunks[0]));
            set_parent(chunks[1], Some(chunks[2]));
        }
        let fault = heap.check().unwrap_err();
        assert_eq!(fault.kind, CorruptionKind::BadLink);
        assert_eq!(fault.addr, chunks[1].addr());
    }

    /// A node that lost its mark reads as a duplicate: the checker reports it.
    #[test]
    fn a_node_without_its_mark_is_reported() {
        let mut memory = vec![0u128; 1024];
        let (heap, chunks) = tree_of::<ParentRedBlackTree>(&mut memory, &[160, 96, 224]);
        // SAFETY: the chunk is a node of the tree.
        unsafe { set(chunks[2], PREV, Some(chunks[0])) };
        let fault = heap.check().unwrap_err();
        assert_eq!(fault.kind, CorruptionKind::BadLink);
        assert_eq!(fault.addr, chunks[2].addr());
    }
}
