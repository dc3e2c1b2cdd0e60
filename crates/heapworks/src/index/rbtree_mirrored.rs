//! [`MirroredRedBlackTree`]: [`crate::index::RedBlackTree`] with the left and right cases
//! written out apart, each reading and writing its links by name, instead of one case reading
//! `child[side]` and `child[side ^ 1]`: the variant that answers seed 003's first question
//! (is uniting the left and right cases through an array of links slower?). Everything else
//! is the same: the node layout, the colour bit, the duplicate lists, the list of the smallest
//! chunks, no parent pointer, fix-ups bottom-up from a stack of the search path, exact best
//! fit; the invariants are [`crate::index::RedBlackTree`]'s, and so is the checker.
//!
//! Where the united tree computes which link word to touch from a side (an address computed
//! from a number, or a conditional move), this one branches on the side once and then touches
//! links at fixed offsets; it has twice the fix-up code.

use crate::chunk::Chunk;
use crate::error::Corruption;
use crate::index::list::{LEFT, RIGHT};
use crate::index::rbtree::{
    child, colour, is_red, paint, prev_is_null, raw, set_child, tally_red_black, Coloured, OnPath,
    Path, RED,
};
use crate::index::tree::{size_tree_index, Walk};

/// A red-black tree of free chunks keyed by size, with duplicate lists, no parent pointer, and
/// the left and right cases written apart (see the module docs).
/// `Heap::<MirroredRedBlackTree>::empty()` builds a heap on it.
pub struct MirroredRedBlackTree {
    /// The tree's root node.
    root: Option<Chunk>,
    /// The list of chunks too small for a node.
    smallest: Option<Chunk>,
}

/// The left child of `node`.
///
/// # Safety
/// `node` is a tree node.
#[inline(always)]
unsafe fn left(node: Chunk) -> Option<Chunk> {
    // SAFETY: forwarded from the caller.
    unsafe { child(node, LEFT) }
}

/// The right child of `node`.
///
/// # Safety
/// `node` is a tree node.
#[inline(always)]
unsafe fn right(node: Chunk) -> Option<Chunk> {
    // SAFETY: forwarded from the caller.
    unsafe { child(node, RIGHT) }
}

/// Sets the left child of `node`, keeping its colour.
///
/// # Safety
/// `node` is a tree node.
#[inline(always)]
unsafe fn set_left(node: Chunk, to: Option<Chunk>) {
    // SAFETY: forwarded from the caller.
    unsafe { set_child(node, LEFT, to) }
}

/// Sets the right child of `node`.
///
/// # Safety
/// `node` is a tree node.
#[inline(always)]
unsafe fn set_right(node: Chunk, to: Option<Chunk>) {
    // SAFETY: forwarded from the caller.
    unsafe { set_child(node, RIGHT, to) }
}

/// Rotates the right child of `node` up into its place and returns it; the caller links it to
/// `node`'s parent.
///
/// # Safety
/// `node` is a tree node with a right child.
#[inline(always)]
unsafe fn rotate_left(node: Chunk) -> Chunk {
    // SAFETY: forwarded from the caller; the child is a tree node too.
    unsafe {
        let up = right(node).unwrap_unchecked();
        set_right(node, left(up));
        set_left(up, Some(node));
        up
    }
}

/// Rotates the left child of `node` up into its place and returns it; the caller links it to
/// `node`'s parent.
///
/// # Safety
/// `node` is a tree node with a left child.
#[inline(always)]
unsafe fn rotate_right(node: Chunk) -> Chunk {
    // SAFETY: forwarded from the caller; the child is a tree node too.
    unsafe {
        let up = left(node).unwrap_unchecked();
        set_left(node, right(up));
        set_right(up, Some(node));
        up
    }
}

impl MirroredRedBlackTree {
    /// An empty tree.
    pub(crate) const fn new() -> MirroredRedBlackTree {
        MirroredRedBlackTree {
            root: None,
            smallest: None,
        }
    }

    /// The read-only view of the tree.
    #[inline(always)]
    fn walk(&self) -> Walk<Coloured> {
        Walk::of(self.root, self.smallest)
    }

    /// Files a free chunk of `size` bytes.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes that is not filed; the tree is consistent.
    pub(crate) unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { OnPath::file(self, chunk, size) }
    }

    /// Takes the filed chunk `chunk` of `size` bytes out.
    ///
    /// # Safety
    /// `chunk` is filed, of `size` bytes by its header; the tree is consistent.
    pub(crate) unsafe fn unlink(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { OnPath::take_out(self, chunk, size) }
    }

    /// Restores the equal black heights after a black node left the subtree below the last
    /// entry of `path` (the root if the path is empty), one black short, as
    /// [`crate::index::RedBlackTree`] does, one case for a short left subtree and its mirror.
    ///
    /// # Safety
    /// The path's entries are nodes of the tree, each the child of the one before on its
    /// side; the tree keeps the red-black rules apart from that one subtree, and the path has
    /// room for one more entry.
    #[inline(never)]
    unsafe fn fix_remove(&mut self, path: &mut Path) {
        // SAFETY: the short subtree's sibling has a black height of at least one, so it is a
        // node, as is a red node's or a red-childed node's child; every entry is a node.
        unsafe {
            loop {
                if path.len == 0 {
                    if let Some(root) = self.root {
                        paint(root, 0);
                    }
                    return;
                }
                let (parent, side) = path.at(path.len - 1);
                let short = if side == LEFT {
                    left(parent)
                } else {
                    right(parent)
                };
                if let Some(short) = short.filter(|&short| colour(short) == RED) {
                    paint(short, 0);
                    return;
                }
                let done = if side == LEFT {
                    self.fix_short_left(path, parent)
                } else {
                    self.fix_short_right(path, parent)
                };
                if done {
                    return;
                }
                path.len -= 1;
            }
        }
    }

    /// One step of [`MirroredRedBlackTree::fix_remove`] when the short subtree is `parent`'s
    /// left, `parent` the path's last entry: `true` when the tree is mended, `false` when
    /// `parent`'s own subtree is now the short one.
    ///
    /// # Safety
    /// As for [`MirroredRedBlackTree::fix_remove`].
    #[inline(always)]
    unsafe fn fix_short_left(&mut self, path: &mut Path, parent: Chunk) -> bool {
        // SAFETY: as in `fix_remove`.
        unsafe {
            let mut sibling = right(parent).unwrap_unchecked();
            if colour(sibling) == RED {
                paint(sibling, 0);
                paint(parent, RED);
                rotate_left(parent);
                self.replace(path, path.len - 1, Some(sibling));
                path.set_at(path.len - 1, sibling, LEFT);
                path.push(parent, LEFT);
                sibling = right(parent).unwrap_unchecked();
            }
            let (far, near) = (right(sibling), left(sibling));
            if !is_red(far) && !is_red(near) {
                paint(sibling, RED);
                return false;
            }
            if !is_red(far) {
                let near = near.unwrap_unchecked();
                paint(near, 0);
                paint(sibling, RED);
                rotate_right(sibling);
                set_right(parent, Some(near));
                sibling = near;
            }
            paint(sibling, colour(parent));
            paint(parent, 0);
            paint(right(sibling).unwrap_unchecked(), 0);
            rotate_left(parent);
            self.replace(path, path.len - 1, Some(sibling));
            true
        }
    }

    /// The mirror of [`MirroredRedBlackTree::fix_short_left`], for a short right subtree.
    ///
    /// # Safety
    /// As for [`MirroredRedBlackTree::fix_remove`].
    #[inline(always)]
    unsafe fn fix_short_right(&mut self, path: &mut Path, parent: Chunk) -> bool {
        // SAFETY: as in `fix_remove`.
        unsafe {
            let mut sibling = left(parent).unwrap_unchecked();
            if colour(sibling) == RED {
                paint(sibling, 0);
                paint(parent, RED);
                rotate_right(parent);
                self.replace(path, path.len - 1, Some(sibling));
                path.set_at(path.len - 1, sibling, RIGHT);
                path.push(parent, RIGHT);
                sibling = left(parent).unwrap_unchecked();
            }
            let (far, near) = (left(sibling), right(sibling));
            if !is_red(far) && !is_red(near) {
                paint(sibling, RED);
                return false;
            }
            if !is_red(far) {
                let near = near.unwrap_unchecked();
                paint(near, 0);
                paint(sibling, RED);
                rotate_left(sibling);
                set_left(parent, Some(near));
                sibling = near;
            }
            paint(sibling, colour(parent));
            paint(parent, 0);
            paint(left(sibling).unwrap_unchecked(), 0);
            rotate_right(parent);
            self.replace(path, path.len - 1, Some(sibling));
            true
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

    /// The checker's count: [`crate::index::RedBlackTree`]'s.
    fn tally_from(
        &self,
        min_node: usize,
        limit: usize,
    ) -> Result<Option<(usize, usize)>, Corruption> {
        tally_red_black(self.root, self.smallest, min_node, limit, prev_is_null)
    }
}

impl OnPath for MirroredRedBlackTree {
    #[inline(always)]
    fn smallest(&mut self) -> &mut Option<Chunk> {
        &mut self.smallest
    }

    #[inline(always)]
    unsafe fn descend(&self, _chunk: Chunk, size: usize, path: &mut Path) -> Option<Chunk> {
        let mut cursor = self.root;
        // SAFETY: nodes are free chunks with valid headers and four link words; a path in a
        // consistent tree fits the array.
        unsafe {
            while let Some(node) = cursor {
                let node_size = node.size();
                if size == node_size {
                    return Some(node);
                }
                if size < node_size {
                    path.push(node, LEFT);
                    cursor = left(node);
                } else {
                    path.push(node, RIGHT);
                    cursor = right(node);
                }
            }
        }
        None
    }

    #[inline(always)]
    unsafe fn replace(&mut self, path: &Path, depth: usize, to: Option<Chunk>) {
        if depth == 0 {
            self.root = to;
            return;
        }
        // SAFETY: forwarded from the caller.
        unsafe {
            let (parent, side) = path.at(depth - 1);
            if side == LEFT {
                set_left(parent, to);
            } else {
                set_right(parent, to);
            }
        }
    }

    /// Restores the red-black rules after a red leaf was linked below the last entry of
    /// `path`, as [`crate::index::RedBlackTree`] does, one case for a parent on the left and
    /// its mirror for one on the right.
    ///
    /// # Safety
    /// `path` is the search path of the leaf; apart from a red parent of the leaf, the tree
    /// keeps the red-black rules.
    #[inline(never)]
    unsafe fn fix_insert(&mut self, path: &Path) {
        let mut depth = path.len;
        // SAFETY: every entry is a node of the tree; `depth` only falls, and only while at
        // least two entries (parent and grandparent) are above the red node.
        unsafe {
            while depth >= 2 {
                let (parent, side) = path.at(depth - 1);
                if colour(parent) != RED {
                    return;
                }
                let (grandparent, parent_side) = path.at(depth - 2);
                let top = if parent_side == LEFT {
                    if let Some(uncle) = right(grandparent).filter(|&u| colour(u) == RED) {
                        paint(parent, 0);
                        paint(uncle, 0);
                        paint(grandparent, RED);
                        depth -= 2;
                        continue;
                    }
                    let mut top = parent;
                    if side == RIGHT {
                        top = rotate_left(parent);
                        set_left(grandparent, Some(top));
                    }
                    rotate_right(grandparent);
                    top
                } else {
                    if let Some(uncle) = left(grandparent).filter(|&u| colour(u) == RED) {
                        paint(parent, 0);
                        paint(uncle, 0);
                        paint(grandparent, RED);
                        depth -= 2;
                        continue;
                    }
                    let mut top = parent;
                    if side == LEFT {
                        top = rotate_right(parent);
                        set_right(grandparent, Some(top));
                    }
                    rotate_left(grandparent);
                    top
                };
                paint(top, 0);
                paint(grandparent, RED);
                self.replace(path, depth - 2, Some(top));
                return;
            }
            if let Some(root) = self.root.filter(|_| depth == 0) {
                paint(root, 0);
            }
        }
    }

    /// Takes the node `node`, which has no duplicate, out of the tree; `path` holds its
    /// ancestors.
    ///
    /// # Safety
    /// `path` is `node`'s search path in a consistent tree.
    unsafe fn remove_node(&mut self, node: Chunk, path: &mut Path) {
        let depth = path.len;
        // SAFETY: every node reached is a node of the tree; the path grows by the successor's
        // ancestors, which a consistent tree bounds.
        unsafe {
            let removed_black = match (left(node), right(node)) {
                (Some(_), Some(right_child)) => {
                    // The successor, the least node on the right, takes the node's place and
                    // colour; the hole is where the successor was.
                    path.push(node, RIGHT);
                    let mut successor = right_child;
                    while let Some(smaller) = left(successor) {
                        path.push(successor, LEFT);
                        successor = smaller;
                    }
                    let removed_black = colour(successor) != RED;
                    if successor != right_child {
                        let (parent, _) = path.at(path.len - 1);
                        set_left(parent, right(successor));
                        set_right(successor, Some(right_child));
                    }
                    raw(successor, LEFT).write(raw(node, LEFT).read());
                    self.replace(path, depth, Some(successor));
                    path.set_at(depth, successor, RIGHT);
                    removed_black
                }
                (only, None) | (None, only) => {
                    self.replace(path, depth, only);
                    colour(node) != RED
                }
            };
            if removed_black {
                self.fix_remove(path);
            }
        }
    }
}

size_tree_index!(MirroredRedBlackTree);

#[cfg(test)]
mod tests {
    extern crate std;

    use std::vec::Vec;

    use super::*;
    use crate::index::rbtree::tests::{assert_balanced_through, assert_survives_churn};
    use crate::index::tree::TREE_MIN;

    /// Blocks of many sizes, many of them equal, freed in a scrambled order and reallocated:
    /// both fix-ups run in both mirrors; the heap is checked after every step and finally
    /// holds one free chunk.
    #[test]
    fn duplicates_and_small_chunks_survive_churn() {
        assert_survives_churn::<MirroredRedBlackTree>();
    }

    /// Sizes filed in increasing and in decreasing order (each mirror's rotations) stay
    /// within the red-black height bound, and taking them out from the middle outwards keeps
    /// the rules (checked after every step).
    #[test]
    fn sorted_insertions_stay_balanced_both_ways() {
        let rising: Vec<usize> = (0..127).map(|i| TREE_MIN + i * 16).collect();
        let falling: Vec<usize> = rising.iter().rev().copied().collect();
        for sizes in [rising, falling] {
            assert_balanced_through::<MirroredRedBlackTree>(&sizes, |heap| heap.index.root);
        }
    }
}
