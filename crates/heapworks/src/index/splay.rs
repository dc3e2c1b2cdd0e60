//! [`SplayTree`]: every free chunk in one top-down splay tree keyed by size, exact best fit.
//!
//! A free chunk's first four payload words are its links (see [`crate::index::list`]): `next`
//! and `prev` (as in the bins), then `left` and `right`. Invariants (verified by
//! [`crate::Heap::check`]):
//! - *Tree nodes*: at most one chunk per size is a node of the binary search tree rooted at
//!   `root`, ordered by size (every size in a node's left subtree is smaller, every size in
//!   its right subtree larger), each of at least [`TREE_MIN`] bytes (the tree's lower bound,
//!   raised by [`crate::index::Hybrid`]). A node's `prev` word is null: that is how `unlink`
//!   tells a node from a duplicate without a parent pointer.
//! - *Duplicates*: the other chunks of a node's size hang from it in a doubly linked list
//!   (`node.next` is the first, each `prev` names the chunk before it, the last `next` is
//!   null); their `left` and `right` words mean nothing. Taking a duplicate out is O(1) and
//!   leaves the tree alone, and a search hands out a duplicate before the node.
//! - *Chunks too small for a node*: a node needs a header, four links and a footer, six
//!   words ([`TREE_MIN`]); only one chunk size is smaller, [`MIN_CHUNK`] (four words). Those
//!   chunks sit in a doubly linked list of their own, `smallest` (`prev` null at its head).
//!   As the list holds one size only, it is exact: no chunk is lost to the tree's node size,
//!   and a request of that size takes the list's head without a search.
//!
//! Searching, filing and taking a node out splay: the node of the size looked for (or the
//! last node on its search path) is brought to the root by Sleator and Tarjan's top-down
//! splay, which needs no parent pointer and no stack, and costs O(log n) amortised. A search
//! for `size` bytes splays `size`; if the root is then smaller, the best fit is the least node
//! of its right subtree, which a second splay brings up. The best fit is exact: the smallest
//! free chunk that holds the request.
//!
//! Read-only walks (the checker, [`crate::Heap::for_each_unused_span`], over-aligned
//! requests' fallback) do not splay: they step from size to size with a plain descent, so
//! they cost O(distinct sizes × depth).

use crate::chunk::{Chunk, MIN_CHUNK};
use crate::error::{Corruption, CorruptionKind};
use crate::index::fault;
use crate::index::list::{self, get, link, set, LEFT, NEXT, PREV, RIGHT};
use crate::index::tree::{
    push_duplicate, size_tree_index, unlink_listed, Plain, Tally, Walk, TREE_MIN,
};

/// A top-down splay tree of free chunks keyed by size, with duplicate lists (see the module
/// docs). `Heap::<SplayTree>::empty()` builds a heap on it.
pub struct SplayTree {
    /// The tree's root node.
    root: Option<Chunk>,
    /// The list of chunks too small for a node.
    smallest: Option<Chunk>,
}

/// Top-down splay of the tree rooted at `root` around `key`: returns the new root, the node of
/// size `key` if there is one, otherwise the last node of `key`'s search path (the largest
/// node below `key` or the smallest above it).
///
/// # Safety
/// `root` is the root of a consistent tree of free chunks.
unsafe fn splay(root: Chunk, key: usize) -> Chunk {
    // The nodes found smaller than `key` make a left tree, the larger a right tree; each hook
    // is the empty link where the next such node goes (the right link of the left tree's
    // largest node, the left link of the right tree's smallest).
    let mut smaller: Option<Chunk> = None;
    let mut larger: Option<Chunk> = None;
    let mut smaller_hook: *mut Option<Chunk> = &raw mut smaller;
    let mut larger_hook: *mut Option<Chunk> = &raw mut larger;
    let mut node = root;
    // SAFETY: every node reached is a node of the tree, a free chunk of at least TREE_MIN
    // bytes with a valid header and four link words; the hooks point at the two locals or at
    // link words of such nodes.
    unsafe {
        loop {
            let size = node.size();
            if key < size {
                let Some(mut child) = get(node, LEFT) else {
                    break;
                };
                if key < child.size() {
                    // Zig-zig: rotate right first.
                    set(node, LEFT, get(child, RIGHT));
                    set(child, RIGHT, Some(node));
                    node = child;
                    let Some(grandchild) = get(node, LEFT) else {
                        break;
                    };
                    child = grandchild;
                }
                larger_hook.write(Some(node));
                larger_hook = link(node, LEFT);
                node = child;
            } else if key > size {
                let Some(mut child) = get(node, RIGHT) else {
                    break;
                };
                if key > child.size() {
                    // Zag-zag: rotate left first.
                    set(node, RIGHT, get(child, LEFT));
                    set(child, LEFT, Some(node));
                    node = child;
                    let Some(grandchild) = get(node, RIGHT) else {
                        break;
                    };
                    child = grandchild;
                }
                smaller_hook.write(Some(node));
                smaller_hook = link(node, RIGHT);
                node = child;
            } else {
                break;
            }
        }
        smaller_hook.write(get(node, LEFT));
        larger_hook.write(get(node, RIGHT));
        set(node, LEFT, smaller);
        set(node, RIGHT, larger);
    }
    node
}

impl SplayTree {
    /// An empty tree.
    pub(crate) const fn new() -> SplayTree {
        SplayTree {
            root: None,
            smallest: None,
        }
    }

    /// Files a free chunk of `size` bytes.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes that is not filed.
    pub(crate) unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: `chunk` and every filed chunk are free chunks with the link words of their
        // size; the tree is consistent.
        unsafe {
            if size < TREE_MIN {
                list::push(&mut self.smallest, chunk);
                return;
            }
            set(chunk, PREV, None);
            let Some(root) = self.root else {
                set(chunk, NEXT, None);
                set(chunk, LEFT, None);
                set(chunk, RIGHT, None);
                self.root = Some(chunk);
                return;
            };
            let root = splay(root, size);
            let root_size = root.size();
            if size == root_size {
                push_duplicate(root, chunk);
                self.root = Some(root);
                return;
            }
            set(chunk, NEXT, None);
            if size < root_size {
                set(chunk, LEFT, get(root, LEFT));
                set(chunk, RIGHT, Some(root));
                set(root, LEFT, None);
            } else {
                set(chunk, RIGHT, get(root, RIGHT));
                set(chunk, LEFT, Some(root));
                set(root, RIGHT, None);
            }
            self.root = Some(chunk);
        }
    }

    /// Takes the filed chunk `chunk` of `size` bytes out.
    ///
    /// # Safety
    /// `chunk` is filed, of `size` bytes by its header.
    pub(crate) unsafe fn unlink(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: filed chunks are free chunks with the link words of their size; a chunk
        // whose `prev` is null is the head of `smallest` or a tree node (module invariants).
        unsafe {
            if unlink_listed::<Plain>(&mut self.smallest, chunk, size) {
                return;
            }
            let next = get(chunk, NEXT);
            debug_assert!(self.root.is_some(), "a tree node in an empty tree");
            let root = splay(self.root.unwrap_unchecked(), size);
            debug_assert!(root == chunk, "the node of its size is not the chunk");
            let (left, right) = (get(root, LEFT), get(root, RIGHT));
            self.root = match next {
                Some(duplicate) => {
                    set(duplicate, PREV, None);
                    set(duplicate, LEFT, left);
                    set(duplicate, RIGHT, right);
                    Some(duplicate)
                }
                None => match left {
                    // Every size on the left is below `size`: splaying it brings the largest
                    // up, with no right child.
                    Some(left) => {
                        let top = splay(left, size);
                        set(top, RIGHT, right);
                        Some(top)
                    }
                    None => right,
                },
            };
        }
    }

    /// The smallest filed chunk of at least `size` bytes, with its size: a duplicate if its
    /// size has any, else its node, which is left at the root.
    ///
    /// # Safety
    /// The tree is consistent.
    pub(crate) unsafe fn best_fit(&mut self, size: usize) -> Option<(Chunk, usize)> {
        if size < TREE_MIN {
            if let Some(found) = self.walk().smallest_entry() {
                return Some(found);
            }
        }
        // SAFETY: the tree is consistent (the caller's promise).
        unsafe {
            let mut root = splay(self.root?, size);
            self.root = Some(root);
            let mut root_size = root.size();
            if root_size < size {
                // The splay left every size above `size` on the right; its least node fits
                // best. Splayed to the top of that subtree it has no left child, and one
                // rotation makes it the root.
                let least = splay(get(root, RIGHT)?, size);
                set(root, RIGHT, None);
                set(least, LEFT, Some(root));
                root = least;
                root_size = root.size();
                self.root = Some(root);
            }
            Some((get(root, NEXT).unwrap_or(root), root_size))
        }
    }

    /// The read-only view of the tree, for the walks that do not splay.
    #[inline(always)]
    pub(crate) fn walk(&self) -> Walk<Plain> {
        Walk::of(self.root, self.smallest)
    }

    /// The tree's part of [`Index::tally`]: every chunk it files is a free chunk of its node's
    /// size, every node at least `min_node` bytes and marked as a node, each reached by a
    /// search for its size; `smallest` holds free chunks of [`MIN_CHUNK`] bytes. Reads at most
    /// `limit` entries (and `limit + 1` steps per descent).
    pub(crate) fn tally_from(
        &self,
        min_node: usize,
        limit: usize,
    ) -> Result<Option<(usize, usize)>, Corruption> {
        let mut tally = Tally::new(limit);
        if !tally.take_list(self.smallest, MIN_CHUNK)? {
            return Ok(None);
        }
        let walk = self.walk();
        let mut key = 0;
        loop {
            // SAFETY: every chunk walked was reached through non-null links and is read only
            // as far as its first words before `take` verified its header; the descent stops
            // after `limit + 1` steps.
            let Ok(found) = (unsafe { walk.ceiling(key, limit) }) else {
                return fault(self.root.map_or(0, Chunk::addr), CorruptionKind::BadLink);
            };
            let Some(node) = found else { break };
            // SAFETY: as above.
            let (size, prev) = unsafe { (node.size(), get(node, PREV)) };
            if size < min_node || prev.is_some() {
                return fault(node.addr(), CorruptionKind::BadLink);
            }
            if !tally.take_list(Some(node), size)? {
                return Ok(None);
            }
            key = size + 1;
        }
        Ok(tally.result())
    }
}

size_tree_index!(SplayTree);

#[cfg(test)]
mod tests {
    extern crate std;

    use core::alloc::Layout;
    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::chunk::WORD;
    use crate::index::{churn, test_heap};

    /// Blocks of many sizes, many of them equal, freed in a scrambled order and reallocated:
    /// the tree, its duplicate lists and the smallest chunks' list all change; the heap is
    /// checked after every step and finally holds one free chunk.
    #[test]
    fn duplicates_and_small_chunks_survive_churn() {
        let mut memory = vec![0u128; 8192];
        let mut heap = test_heap::<SplayTree>(&mut memory);
        let sizes = [8usize, 24, 40, 100, 24, 8, 300, 40, 8, 1000, 100, 24];
        assert_eq!(churn(&mut heap, &sizes, 60), 1);
    }

    /// The search is an exact best fit: among free chunks of 96, 160 and 112 bytes kept apart
    /// by live blocks, a request for 100 bytes of chunk gets the 112-byte one.
    #[test]
    fn the_search_takes_the_smallest_chunk_that_fits() {
        let mut memory = vec![0u128; 1024];
        let mut heap = test_heap::<SplayTree>(&mut memory);
        let payload = |chunk: usize| Layout::from_size_align(chunk - WORD, 8).unwrap();
        let separator = payload(MIN_CHUNK);
        let holes: Vec<_> = [96, 160, 112]
            .iter()
            .map(|&chunk| {
                let hole = heap.allocate(payload(chunk)).unwrap();
                heap.allocate(separator).unwrap();
                hole
            })
            .collect();
        for &hole in &holes {
            // SAFETY: every hole is a live block, freed once.
            unsafe { heap.free(hole) };
        }
        let block = heap.allocate(payload(112)).unwrap();
        assert_eq!(block, holes[2]);
        heap.check().unwrap();
    }

    /// A corrupt node link is caught: a tree node that claims to be a duplicate.
    #[test]
    fn a_node_marked_as_duplicate_is_reported() {
        let mut memory = vec![0u128; 1024];
        let mut heap = test_heap::<SplayTree>(&mut memory);
        let block = heap
            .allocate(Layout::from_size_align(200, 8).unwrap())
            .unwrap();
        heap.allocate(Layout::from_size_align(8, 8).unwrap())
            .unwrap();
        // SAFETY: `block` is live; once free, its chunk is a tree node with four link words.
        let chunk = unsafe {
            heap.free(block);
            Chunk::from_payload(block)
        };
        heap.check().unwrap();
        // SAFETY: as above; the chunk names itself as its predecessor.
        unsafe { set(chunk, PREV, Some(chunk)) };
        assert_eq!(heap.check().unwrap_err().kind, CorruptionKind::BadLink);
    }
}
