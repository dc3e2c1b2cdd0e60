//! Size trees: what the two tree indexes ([`crate::index::SplayTree`] and
//! [`crate::index::RedBlackTree`]) share, whatever keeps them balanced: their node layout,
//! their duplicate lists, the list of chunks too small for a node, and their read-only walks.
//!
//! A tree node is a free chunk of at least [`TREE_MIN`] bytes whose four link words (see
//! [`crate::index::list`]) are `next` (its first duplicate), `prev` (null: that is what makes
//! it a node), `left` and `right` (its children, read through the tree's [`Children`], as a tree
//! may keep bits of its own in a link word). Invariants every size tree keeps:
//! - *Order*: at most one node per size; every size in a node's left subtree is smaller, every
//!   size in its right subtree larger.
//! - *Duplicates*: the other chunks of a node's size hang from it in a doubly linked list
//!   (`node.next` is the first, each `prev` names the chunk before it, the last `next` is
//!   null); their `left` and `right` words mean nothing. A chunk with a non-null `prev` is a
//!   duplicate: taking it out is O(1) and leaves the tree alone.
//! - *Chunks too small for a node*: only one chunk size, [`MIN_CHUNK`], is below
//!   [`TREE_MIN`]; those chunks sit in a null-ended list of their own, `smallest`, which is
//!   exact as it holds one size.
//!
//! The walks here never change the tree, so they suit every tree: they step from size to size
//! with a plain descent, O(distinct sizes × depth), bounded by a step limit where the tree may
//! be corrupt.
//!
//! [`crate::index::AddressRedBlackTree`] keeps no duplicate lists (one node per chunk, keyed by
//! size and address), so the *order* and *duplicates* invariants above are not its own: it
//! shares the node layout, the list `smallest`, [`size_tree_index`] and the walks that hold
//! without duplicates (`largest`, `check_filed`), and has its own descents by key.

use core::marker::PhantomData;

use crate::chunk::{Chunk, GRANULE, IN_USE, MIN_CHUNK, PREV_IN_USE, SIZE_MASK, WORD};
use crate::error::{Corruption, CorruptionKind};
use crate::index::list::{self, get, set, NEXT, PREV, RIGHT};
use crate::index::{fault, mix};

/// The smallest chunk a tree files as a node: header, `next`, `prev`, `left`, `right`, footer.
pub(crate) const TREE_MIN: usize = MIN_CHUNK + GRANULE;
const _: () = assert!(
    TREE_MIN == 6 * WORD,
    "one granule above MIN_CHUNK holds two links"
);

/// How a tree reads its link words: a node's child links, and a chunk's `prev` word (a tree
/// may keep bits of its own in a link word).
pub(crate) trait Children {
    /// The child of `node` on `side` ([`list::LEFT`] or [`RIGHT`]).
    ///
    /// # Safety
    /// `node` is a tree node: a free chunk of at least [`TREE_MIN`] bytes.
    unsafe fn child(node: Chunk, side: usize) -> Option<Chunk>;

    /// The chunk before `chunk` in its list: `None` for a tree node and for the head of the
    /// list of the smallest chunks, else the node or duplicate before it.
    ///
    /// # Safety
    /// `chunk` is a free chunk.
    #[inline(always)]
    unsafe fn list_prev(chunk: Chunk) -> Option<Chunk> {
        // SAFETY: forwarded from the caller; every free chunk has a `prev` word.
        unsafe { get(chunk, PREV) }
    }
}

/// Child links that are plain link words (the splay tree's).
pub(crate) struct Plain;

impl Children for Plain {
    #[inline(always)]
    unsafe fn child(node: Chunk, side: usize) -> Option<Chunk> {
        // SAFETY: forwarded from the caller; a node has four link words.
        unsafe { get(node, side) }
    }
}

/// The read-only view of a size tree: its root and its list of chunks too small for a node.
pub(crate) struct Walk<C: Children> {
    pub(crate) root: Option<Chunk>,
    pub(crate) smallest: Option<Chunk>,
    children: PhantomData<C>,
}

impl<C: Children> Walk<C> {
    /// The view of the tree at `root` and the list `smallest`.
    #[inline(always)]
    pub(crate) fn of(root: Option<Chunk>, smallest: Option<Chunk>) -> Walk<C> {
        Walk {
            root,
            smallest,
            children: PhantomData,
        }
    }

    /// The node of the least size at or above `key`, found by a plain descent of at most
    /// `limit` steps (`Err` past it, on a corrupt tree).
    ///
    /// # Safety
    /// The tree's links point at readable chunks (true of a consistent tree; on a corrupt one,
    /// the checker's stated limit).
    pub(crate) unsafe fn ceiling(&self, key: usize, limit: usize) -> Result<Option<Chunk>, ()> {
        let mut found = None;
        let mut cursor = self.root;
        for _ in 0..=limit {
            let Some(node) = cursor else {
                return Ok(found);
            };
            // SAFETY: forwarded from the caller.
            let size = unsafe { node.size() };
            if size == key {
                return Ok(Some(node));
            }
            // SAFETY: as above.
            cursor = unsafe { C::child(node, if key < size { list::LEFT } else { RIGHT }) };
            if key < size {
                found = Some(node);
            }
        }
        Err(())
    }

    /// The smallest filed chunk of at least `size` bytes, with its size: a duplicate if its
    /// size has any, else its node (exact best fit by a plain descent, for a tree that does not
    /// restructure itself on a search).
    ///
    /// # Safety
    /// The tree is consistent.
    #[inline(always)]
    pub(crate) unsafe fn best_fit(&self, size: usize) -> Option<(Chunk, usize)> {
        if size < TREE_MIN {
            if let Some(found) = self.smallest_entry() {
                return Some(found);
            }
        }
        // SAFETY: the tree is consistent (the caller's promise): the descent ends.
        unsafe {
            let node = self.ceiling(size, usize::MAX).ok()??;
            Some((get(node, NEXT).unwrap_or(node), node.size()))
        }
    }

    /// Calls `f` with every filed chunk of at least `min_size` bytes and its size, by
    /// increasing size, until it returns `true`; returns that chunk and size.
    ///
    /// # Safety
    /// The tree is consistent.
    pub(crate) unsafe fn find_in_order(
        &self,
        min_size: usize,
        mut f: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<(Chunk, usize)> {
        // SAFETY: filed chunks are free chunks with the link words of their size.
        unsafe {
            if let Some(found) = self.find_in_smallest(min_size, &mut f) {
                return Some(found);
            }
            let mut key = min_size;
            while let Ok(Some(node)) = self.ceiling(key, usize::MAX) {
                let size = node.size();
                let mut cursor = Some(node);
                while let Some(chunk) = cursor {
                    if f(chunk, size) {
                        return Some((chunk, size));
                    }
                    cursor = get(chunk, NEXT);
                }
                key = size + 1;
            }
            None
        }
    }

    /// Calls `f` with every chunk of the list of the smallest chunks and its size, if they
    /// have `min_size` bytes, until it returns `true`; returns that chunk and size.
    ///
    /// # Safety
    /// The tree is consistent.
    pub(crate) unsafe fn find_in_smallest(
        &self,
        min_size: usize,
        mut f: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<(Chunk, usize)> {
        let mut cursor = self.smallest.filter(|_| min_size < TREE_MIN);
        while let Some(chunk) = cursor {
            if f(chunk, MIN_CHUNK) {
                return Some((chunk, MIN_CHUNK));
            }
            // SAFETY: the list's chunks are free chunks with a `next` word.
            cursor = unsafe { get(chunk, NEXT) };
        }
        None
    }

    /// The size of the largest filed chunk.
    ///
    /// # Safety
    /// The tree is consistent.
    pub(crate) unsafe fn largest(&self) -> Option<usize> {
        // SAFETY: tree nodes are free chunks with four link words.
        unsafe {
            let Some(mut node) = self.root else {
                return self.smallest.map(|_| MIN_CHUNK);
            };
            while let Some(right) = C::child(node, RIGHT) {
                node = right;
            }
            Some(node.size())
        }
    }

    /// Checks the entry of one free chunk the region walk met: its list neighbours link back
    /// and share its size; a chunk with no `prev` below [`TREE_MIN`] heads `smallest` (one of
    /// the tree's size is a node, whose place the tree's tally verifies).
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes inside a region.
    pub(crate) unsafe fn check_filed(&self, chunk: Chunk, size: usize) -> Result<(), Corruption> {
        let bad_link = fault(chunk.addr(), CorruptionKind::BadLink);
        // SAFETY: a free chunk's first two link words are inside it; a non-null link is read
        // only as far as the first words of the chunk it names (the checker's stated limit).
        unsafe {
            let (next, prev) = (get(chunk, NEXT), C::list_prev(chunk));
            match prev {
                None if size < TREE_MIN && self.smallest != Some(chunk) => return bad_link,
                Some(prev) if get(prev, NEXT) != Some(chunk) || prev.size() != size => {
                    return bad_link;
                }
                _ => {}
            }
            if let Some(next) = next {
                if C::list_prev(next) != Some(chunk) || next.size() != size {
                    return bad_link;
                }
            }
        }
        Ok(())
    }

    /// The head of the list of chunks too small for a node, with its size.
    #[inline(always)]
    pub(crate) fn smallest_entry(&self) -> Option<(Chunk, usize)> {
        self.smallest.map(|chunk| (chunk, MIN_CHUNK))
    }

    /// Whether the free chunk `chunk` of `size` bytes is filed, within `limit` entries.
    pub(crate) fn files(&self, chunk: Chunk, size: usize, limit: usize) -> bool {
        // SAFETY: the checker's walk passed, so the links followed within `limit` entries
        // were read by the tree's tally already.
        unsafe {
            let first = if size < TREE_MIN {
                self.smallest
            } else {
                match self.ceiling(size, limit) {
                    Ok(Some(node)) if node.size() == size => Some(node),
                    _ => None,
                }
            };
            list::holds(first, chunk, limit)
        }
    }
}

/// The [`crate::index::Index`] of a size tree: the same for every one, as a tree differs only
/// in its inherent `new`, `walk`, `insert`, `unlink`, `best_fit` (exact best fit) and
/// `tally_from(min_node, limit)` (its part of the checker's count, nodes of at least
/// `min_node` bytes), which this calls. The slot of an entry is its size; only the list of
/// the smallest chunks is worth a look inline.
macro_rules! size_tree_index {
    ($tree:ty) => {
        impl $crate::index::Index for $tree {
            const EMPTY: $tree = <$tree>::new();
            const GOOD_FIT_BELOW: usize = $crate::index::tree::TREE_MIN;

            unsafe fn adopt_sink(&mut self, _sink: $crate::chunk::Chunk) {}

            #[inline(always)]
            fn slot_of(size: usize) -> usize {
                size
            }

            unsafe fn insert(&mut self, chunk: $crate::chunk::Chunk, size: usize) {
                // SAFETY: forwarded from the caller.
                unsafe { <$tree>::insert(self, chunk, size) }
            }

            unsafe fn unlink(&mut self, chunk: $crate::chunk::Chunk, slot: usize) {
                // SAFETY: forwarded from the caller; the slot is the chunk's size.
                unsafe { <$tree>::unlink(self, chunk, slot) }
            }

            #[inline(always)]
            fn good_fit(&mut self, _size: usize) -> Option<($crate::chunk::Chunk, usize)> {
                self.walk().smallest_entry()
            }

            unsafe fn search(&mut self, size: usize) -> Option<($crate::chunk::Chunk, usize)> {
                // SAFETY: forwarded from the caller.
                unsafe { self.best_fit(size) }
            }

            unsafe fn find(&mut self, size: usize) -> Option<($crate::chunk::Chunk, usize)> {
                // SAFETY: forwarded from the caller.
                unsafe { self.best_fit(size) }
            }

            unsafe fn first_fit(
                &mut self,
                min_size: usize,
                fits: impl FnMut($crate::chunk::Chunk, usize) -> bool,
            ) -> Option<($crate::chunk::Chunk, usize)> {
                // SAFETY: forwarded from the caller.
                unsafe { self.walk().find_in_order(min_size, fits) }
            }

            unsafe fn for_each(&self, mut f: impl FnMut($crate::chunk::Chunk, usize)) {
                // SAFETY: forwarded from the caller.
                unsafe {
                    self.walk().find_in_order(0, |chunk, size| {
                        f(chunk, size);
                        false
                    });
                }
            }

            unsafe fn largest(&self) -> Option<usize> {
                // SAFETY: forwarded from the caller.
                unsafe { self.walk().largest() }
            }

            unsafe fn check_filed(
                &self,
                chunk: $crate::chunk::Chunk,
                size: usize,
            ) -> Result<(), $crate::error::Corruption> {
                // SAFETY: forwarded from the caller.
                unsafe { self.walk().check_filed(chunk, size) }
            }

            fn tally(
                &self,
                limit: usize,
            ) -> Result<Option<(usize, usize)>, $crate::error::Corruption> {
                self.tally_from($crate::index::tree::TREE_MIN, limit)
            }

            fn files(&self, chunk: $crate::chunk::Chunk, size: usize, limit: usize) -> bool {
                self.walk().files(chunk, size, limit)
            }
        }
    };
}
pub(crate) use size_tree_index;

/// Files `chunk` as the first duplicate of the node `node`.
///
/// # Safety
/// `node` is a tree node; `chunk` is a free chunk of its size that is not filed.
#[inline(always)]
pub(crate) unsafe fn push_duplicate(node: Chunk, chunk: Chunk) {
    // SAFETY: both are free chunks with `next` and `prev` words, as is the node's list.
    unsafe {
        let first = get(node, NEXT);
        set(chunk, NEXT, first);
        set(chunk, PREV, Some(node));
        if let Some(first) = first {
            set(first, PREV, Some(chunk));
        }
        set(node, NEXT, Some(chunk));
    }
}

/// Takes the filed chunk `chunk` of `size` bytes out if a list holds it (`smallest`, or its
/// node's duplicates), in O(1); `false` when it is a tree node, which the tree takes out.
///
/// # Safety
/// `chunk` is filed in a consistent size tree, read through `C`, whose list of the smallest
/// chunks is `smallest`, of `size` bytes by its header.
#[inline(always)]
pub(crate) unsafe fn unlink_listed<C: Children>(
    smallest: &mut Option<Chunk>,
    chunk: Chunk,
    size: usize,
) -> bool {
    // SAFETY: filed chunks are free chunks with the link words of their size; of the tree's
    // sizes, a chunk with a list predecessor is a duplicate (module invariants).
    unsafe {
        if size < TREE_MIN {
            list::remove(smallest, chunk);
            return true;
        }
        let Some(prev) = C::list_prev(chunk) else {
            return false;
        };
        let next = get(chunk, NEXT);
        set(prev, NEXT, next);
        if let Some(next) = next {
            set(next, PREV, Some(prev));
        }
        true
    }
}

/// The checker's count of filed chunks: how many, the wrapping sum of [`mix`] over their
/// addresses, and the bound on entries it reads.
pub(crate) struct Tally {
    pub(crate) count: usize,
    pub(crate) fingerprint: usize,
    limit: usize,
}

impl Tally {
    /// A count that stops past `limit` entries.
    pub(crate) fn new(limit: usize) -> Tally {
        Tally {
            count: 0,
            fingerprint: 0,
            limit,
        }
    }

    /// The result of [`crate::index::Index::tally`] once the walk is done.
    pub(crate) fn result(&self) -> Option<(usize, usize)> {
        Some((self.count, self.fingerprint))
    }

    /// Counts `chunk`, which a list of `size` holds: its header must be a free chunk's of
    /// that size. `Ok(false)` once past the limit.
    pub(crate) fn take(&mut self, chunk: Chunk, size: usize) -> Result<bool, Corruption> {
        self.count += 1;
        // SAFETY: the chunk was reached through non-null links; only its header is read.
        let header = unsafe { chunk.header() };
        let free_of_size = header & SIZE_MASK == size && header & IN_USE == 0;
        if !free_of_size || header & !SIZE_MASK & !PREV_IN_USE != 0 {
            return fault(chunk.addr(), CorruptionKind::BadLink);
        }
        self.fingerprint = self.fingerprint.wrapping_add(mix(chunk.addr()));
        Ok(self.count <= self.limit)
    }

    /// Counts the list that starts at `first`, all of whose chunks have `size` bytes.
    /// `Ok(false)` once past the limit.
    pub(crate) fn take_list(
        &mut self,
        first: Option<Chunk>,
        size: usize,
    ) -> Result<bool, Corruption> {
        let mut cursor = first;
        while let Some(chunk) = cursor {
            if !self.take(chunk, size)? {
                return Ok(false);
            }
            // SAFETY: `take` verified the chunk is a free chunk, with a `next` word.
            cursor = unsafe { get(chunk, NEXT) };
        }
        Ok(true)
    }
}
