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
use crate::index::list::{self, get, set, LEFT, NEXT, PREV, RIGHT};
use crate::index::rbtree::{
    child, colour, is_red, paint, raw, set_child, tally_red_black, Coloured, Path, RED,
};
use crate::index::tree::{push_duplicate, size_tree_index, unlink_listed, Walk, TREE_MIN};

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

    /// Descends from the root towards `size`, recording every node passed in `path`; returns
    /// the node of that size (not recorded), if there is one.
    ///
    /// # Safety
    /// The tree is consistent; `path` is empty.
    #[inline(always)]
    unsafe fn descend(&self, size: usize, path: &mut Path) -> Option<Chunk> {
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

    /// Makes `to` the node below the first `depth` entries of `path`: the root if `depth` is
    /// 0, else the child of entry `depth - 1` on its side.
    ///
    /// # Safety
    /// `depth <= path.len`; the entries are nodes of the tree.
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
            let mut path = Path::new();
            if let Some(node) = self.descend(size, &mut path) {
                push_duplicate(node, chunk);
                return;
            }
            set(chunk, NEXT, None);
            set(chunk, PREV, None);
            raw(chunk, LEFT).write(core::ptr::without_provenance_mut(RED));
            set(chunk, RIGHT, None);
            self.replace(&path, path.len, Some(chunk));
            self.fix_insert(&path);
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

    /// Takes the filed chunk `chunk` of `size` bytes out.
    ///
    /// # Safety
    /// `chunk` is filed, of `size` bytes by its header; the tree is consistent.
    pub(crate) unsafe fn unlink(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: filed chunks are free chunks with the link words of their size; a chunk of
        // the tree's sizes whose `prev` is null is a node (module invariants).
        unsafe {
            if unlink_listed::<Coloured>(&mut self.smallest, chunk, size) {
                return;
            }
            let mut path = Path::new();
            let node = self.descend(size, &mut path);
            debug_assert!(node == Some(chunk), "the node of its size is not the chunk");
            match get(chunk, NEXT) {
                Some(duplicate) => {
                    // The first duplicate takes the node's place, children and colour.
                    set(duplicate, PREV, None);
                    raw(duplicate, LEFT).write(raw(chunk, LEFT).read());
                    set_right(duplicate, right(chunk));
                    self.replace(&path, path.len, Some(duplicate));
                }
                None => self.remove_node(chunk, &mut path),
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

    /// The smallest filed chunk of at least `size` bytes, with its size: a duplicate if its
    /// size has any, else its node.
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
            let node = self.walk().ceiling(size, usize::MAX).ok()??;
            Some((get(node, NEXT).unwrap_or(node), node.size()))
        }
    }

    /// The checker's count: [`crate::index::RedBlackTree`]'s.
    fn tally_from(
        &self,
        min_node: usize,
        limit: usize,
    ) -> Result<Option<(usize, usize)>, Corruption> {
        // SAFETY: a node's `prev` word is inside it.
        let prev_is_null = |node, _parent| unsafe { get(node, PREV) }.is_none();
        tally_red_black(self.root, self.smallest, min_node, limit, prev_is_null)
    }
}

size_tree_index!(MirroredRedBlackTree);

#[cfg(test)]
mod tests {
    extern crate std;

    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::index::rbtree::tests::{payload, tree_of};
    use crate::index::{churn, test_heap};

    /// Blocks of many sizes, many of them equal, freed in a scrambled order and reallocated:
    /// both fix-ups run in both mirrors; the heap is checked after every step and finally
    /// holds one free chunk.
    #[test]
    fn duplicates_and_small_chunks_survive_churn() {
        let mut memory = vec![0u128; 32768];
        let mut heap = test_heap::<MirroredRedBlackTree>(&mut memory);
        let sizes: Vec<usize> = (0..40).map(|i| 8 + (i * 37 % 29) * 48).collect();
        assert_eq!(churn(&mut heap, &sizes, 200), 1);
    }

    /// Sizes filed in increasing and in decreasing order (each mirror's rotations) stay
    /// within the red-black height bound, and taking them out from the middle outwards keeps
    /// the rules (checked after every step).
    #[test]
    fn sorted_insertions_stay_balanced_both_ways() {
        let rising: Vec<usize> = (0..127).map(|i| TREE_MIN + i * 16).collect();
        let falling: Vec<usize> = rising.iter().rev().copied().collect();
        for sizes in [rising, falling] {
            let mut memory = vec![0u128; 16384];
            let (mut heap, chunks) = tree_of::<MirroredRedBlackTree>(&mut memory, &sizes);
            let mut height = 0;
            let mut stack = vec![(heap.index.root, 0)];
            while let Some((node, depth)) = stack.pop() {
                let Some(node) = node else {
                    height = height.max(depth);
                    continue;
                };
                // SAFETY: the tree is consistent (checked).
                unsafe {
                    stack.push((left(node), depth + 1));
                    stack.push((right(node), depth + 1));
                }
            }
            assert!(height <= 14, "height {height}");
            let mut order: Vec<usize> = (0..chunks.len()).collect();
            order.sort_by_key(|&i| i.abs_diff(chunks.len() / 2));
            for i in order {
                let got = heap.allocate(payload(sizes[i])).unwrap();
                assert_eq!(got, chunks[i].payload());
                heap.check().unwrap();
            }
            assert!(heap.index.root.is_none());
        }
    }
}
