//! [`RedBlackTree`]: every free chunk in one red-black tree keyed by size, exact best fit,
//! no parent pointer.
//!
//! A free chunk's first four payload words are its links (see [`crate::index::list`]):
//! `next`, `prev`, `left`, `right`, laid out as in every size tree ([`crate::index::tree`]).
//! Invariants (verified by [`crate::Heap::check`], through [`Index::tally`] and
//! [`Index::check_filed`]):
//! - *Order*: at most one chunk per size is a node of the binary search tree rooted at
//!   `root`; every size in a node's left subtree is smaller, every size in its right subtree
//!   larger; every node has at least [`TREE_MIN`] bytes.
//! - *Colour*: a node's colour is bit 0 of its `left` word (set: red), a bit no link uses, as
//!   chunk headers are word-aligned; the rest of the word is the left child. `right`, `next`
//!   and `prev` are plain links.
//! - *Red-black rules*: the root is black; a red node has no red child; every path from a
//!   node down to a null child passes the same number of black nodes (equal black heights).
//!   Hence the height (nodes on the longest path from the root) is at most 2·log2(n + 1) for
//!   n nodes.
//! - *Duplicates*: the other chunks of a node's size hang from it in a doubly linked list
//!   (`node.next` is the first, each `prev` names the chunk before it, the last `next` is
//!   null); their `left` and `right` words mean nothing. Taking a duplicate out is O(1) and
//!   leaves the tree alone; a search hands out a duplicate before the node.
//! - *`prev` null*: a node's `prev` is null, a duplicate's never: that is how `unlink` tells
//!   them apart without a parent pointer. The head of `smallest` also has a null `prev`.
//! - *Chunks too small for a node*: the chunks of [`MIN_CHUNK`] bytes, the one size below
//!   [`TREE_MIN`], sit in a null-ended list of their own, `smallest` (exact: one size), so no
//!   chunk is rounded up for the tree's sake.
//!
//! Searching is a plain descent to the least node of at least the size asked for (exact best
//! fit). Filing and taking a node out rebalance *bottom-up from a stack of the search path*:
//! the descent records each node and the side it took in a `Path`, a fixed array on the call
//! stack, and the fix-up climbs it instead of parent pointers. The array holds one entry more
//! than [`MAX_DEPTH`], the red-black height bound for the most nodes an address space can
//! hold: nodes are disjoint chunks of at least [`TREE_MIN`] bytes (at least 2^t bytes, t =
//! ⌊log2 TREE_MIN⌋), so a 2^B-byte address space holds n < 2^(B-t) of them and
//! 2·log2(n + 1) ≤ 2·(B - t), which is 118 on 64-bit targets (56 on 32-bit). The bound does not
//! count on distinct sizes, so it also holds for [`crate::index::AddressRedBlackTree`], one
//! node per chunk. The extra entry is for a removal's fix-up, which may push one when it
//! rotates a red sibling up.
//!
//! Every operation on a node is O(log n) at worst (no amortisation); on a duplicate or a chunk
//! of `smallest`, O(1).
//!
//! Why bottom-up rather than top-down: measured. The fix-ups (`fix_insert`, `fix_remove`) are
//! kept out of line so that callgrind counts them apart. Against an experimental top-down
//! insertion (one pass that splits every node with two red children on the way down and
//! rotates where two reds meet, so it needs no stack; not kept), on the probe of `bench
//! --instructions` (`valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect='*measured_*' heapworks instructions-probe --allocator heapworks_rbtree
//! --sequence uniform64|talc-large --seed 1`, with the bench contender `heapworks_rbtree`
//! registered for the run; deterministic, one run each), instructions per call:
//!
//! | sequence | insert, bottom-up / top-down | free, bottom-up / top-down |
//! |---|---|---|
//! | 64 B, 1000 live | 61.5 / 92.7 | 111 / 142 |
//! | talc mix ≤ 10000 B | 145 / 288 | 300 / 455 |
//!
//! A top-down pass reads both children's colours on every level of every descent (even one
//! that ends at a duplicate), where the bottom-up fix-up runs once per new node and costs
//! 18 instructions a call on 64 B blocks, 39 on the large mix. A top-down removal was not
//! tried: the bottom-up one's fix-up (15 and 63 instructions, run by 9 % and 40 % of
//! removals) is at most a fifth of a removal's cost, the most a top-down pass could save.

use core::mem::MaybeUninit;
use core::ptr::{self, NonNull};

use crate::chunk::{Chunk, MIN_CHUNK, WORD};
use crate::error::{Corruption, CorruptionKind};
use crate::index::fault;
use crate::index::list::{self, get, link, set, LEFT, NEXT, PREV, RIGHT};
use crate::index::tree::{
    push_duplicate, size_tree_index, unlink_listed, Children, Tally, Walk, TREE_MIN,
};
#[cfg(doc)]
use crate::index::Index;

/// The colour bit of a node's `left` word: set for a red node.
pub(crate) const RED: usize = 1;
const _: () = assert!(
    WORD > RED,
    "chunk headers are word-aligned, so bit 0 of a link is spare"
);

/// The most nodes on a path from the root in any red-black tree of chunks: 2·log2(n + 1) for
/// the largest number n of nodes an address space holds (see the module docs).
pub(crate) const MAX_DEPTH: usize = 2 * (usize::BITS - TREE_MIN.ilog2()) as usize;

/// A path's capacity: a removal's fix-up may push one more entry than the descent.
pub(crate) const PATH_CAPACITY: usize = MAX_DEPTH + 1;

/// A red-black tree of free chunks keyed by size, with duplicate lists and no parent pointer
/// (see the module docs). `Heap::<RedBlackTree>::empty()` builds a heap on it.
pub struct RedBlackTree {
    /// The tree's root node.
    pub(super) root: Option<Chunk>,
    /// The list of chunks too small for a node.
    pub(super) smallest: Option<Chunk>,
}

/// Child links with the colour bit masked off.
pub(crate) struct Coloured;

impl Children for Coloured {
    #[inline(always)]
    unsafe fn child(node: Chunk, side: usize) -> Option<Chunk> {
        // SAFETY: forwarded from the caller.
        let word = unsafe { raw(node, side).read() };
        NonNull::new(word.map_addr(|addr| addr & !RED)).map(Chunk::at)
    }
}

/// Link word `side` of a node, read as a raw pointer (colour bit included).
#[inline(always)]
pub(crate) fn raw(node: Chunk, side: usize) -> *mut *mut u8 {
    link(node, side).cast()
}

/// The child of `node` on `side`.
///
/// # Safety
/// `node` is a tree node.
#[inline(always)]
pub(crate) unsafe fn child(node: Chunk, side: usize) -> Option<Chunk> {
    // SAFETY: forwarded from the caller.
    unsafe { Coloured::child(node, side) }
}

/// Sets the child of `node` on `side`, keeping its colour.
///
/// # Safety
/// `node` is a tree node.
#[inline(always)]
pub(crate) unsafe fn set_child(node: Chunk, side: usize, to: Option<Chunk>) {
    let word = raw(node, side);
    // SAFETY: a node has four link words; the colour bit is 0 in `right`.
    unsafe {
        let colour = word.read().addr() & RED;
        let to = to.map_or(ptr::null_mut(), |chunk| {
            chunk.payload().as_ptr().wrapping_sub(WORD)
        });
        word.write(to.map_addr(|addr| addr | colour));
    }
}

/// The colour bit of `node` (`RED` or 0).
///
/// # Safety
/// `node` is a tree node.
#[inline(always)]
pub(crate) unsafe fn colour(node: Chunk) -> usize {
    // SAFETY: forwarded from the caller.
    unsafe { raw(node, LEFT).read().addr() & RED }
}

/// Whether `node` is red (a null child is black).
///
/// # Safety
/// `node`, if any, is a tree node.
#[inline(always)]
pub(crate) unsafe fn is_red(node: Option<Chunk>) -> bool {
    // SAFETY: forwarded from the caller.
    node.is_some_and(|node| unsafe { colour(node) } == RED)
}

/// Gives `node` the colour bit `colour` (`RED` or 0).
///
/// # Safety
/// `node` is a tree node.
#[inline(always)]
pub(crate) unsafe fn paint(node: Chunk, colour: usize) {
    let word = raw(node, LEFT);
    // SAFETY: forwarded from the caller.
    unsafe { word.write(word.read().map_addr(|addr| addr & !RED | colour)) }
}

/// Rotates the child of `node` on `side` up into its place and returns it; the caller links
/// it to `node`'s parent. Colours stay with their nodes.
///
/// # Safety
/// `node` is a tree node with a child on `side`.
#[inline(always)]
unsafe fn rotate(node: Chunk, side: usize) -> Chunk {
    // SAFETY: forwarded from the caller; the child is a tree node too.
    unsafe {
        let up = child(node, side).unwrap_unchecked();
        set_child(node, side, child(up, side ^ 1));
        set_child(up, side ^ 1, Some(node));
        up
    }
}

/// The nodes a descent passed, from the root down, with the side it took at each: the fix-ups'
/// way up, in place of parent pointers. Entries `0..len` are written.
pub(crate) struct Path {
    entries: [MaybeUninit<(Chunk, usize)>; PATH_CAPACITY],
    pub(crate) len: usize,
}

impl Path {
    #[inline(always)]
    pub(crate) fn new() -> Path {
        Path {
            entries: [const { MaybeUninit::uninit() }; PATH_CAPACITY],
            len: 0,
        }
    }

    /// Records `node` and the side taken from it.
    ///
    /// # Safety
    /// The path is shorter than `PATH_CAPACITY`: true of any path in a consistent tree (see
    /// [`MAX_DEPTH`]) plus a removal's one extra entry.
    #[inline(always)]
    pub(crate) unsafe fn push(&mut self, node: Chunk, side: usize) {
        debug_assert!(
            self.len < PATH_CAPACITY,
            "deeper than a red-black tree can be"
        );
        // SAFETY: the caller's promise.
        unsafe { self.entries.get_unchecked_mut(self.len) }.write((node, side));
        self.len += 1;
    }

    /// Entry `at`: a node and the side taken from it.
    ///
    /// # Safety
    /// `at < self.len`.
    #[inline(always)]
    pub(crate) unsafe fn at(&self, at: usize) -> (Chunk, usize) {
        debug_assert!(at < self.len);
        // SAFETY: entries below `len` are written.
        unsafe { self.entries.get_unchecked(at).assume_init() }
    }

    /// Overwrites entry `at`.
    ///
    /// # Safety
    /// `at < self.len`.
    #[inline(always)]
    pub(crate) unsafe fn set_at(&mut self, at: usize, node: Chunk, side: usize) {
        debug_assert!(at < self.len);
        // SAFETY: `at` is within the array.
        unsafe { self.entries.get_unchecked_mut(at) }.write((node, side));
    }
}

/// A red-black tree of chunks rebalanced bottom-up from a stack of its search path, whatever
/// way it reaches a node's links ([`RedBlackTree`] through a side index,
/// [`crate::index::MirroredRedBlackTree`] by name): its own descent, relinking and fix-ups,
/// and on top of them the filing and taking out that both trees share.
pub(crate) trait OnPath {
    /// The list of chunks too small for a node.
    fn smallest(&mut self) -> &mut Option<Chunk>;

    /// Descends from the root towards the key of `chunk`, of `size` bytes (its size, or for a
    /// tree keyed by address too, its size and address), recording every node passed in
    /// `path`; returns the node of that key (not recorded), if there is one.
    ///
    /// # Safety
    /// The tree is consistent; `path` is empty.
    unsafe fn descend(&self, chunk: Chunk, size: usize, path: &mut Path) -> Option<Chunk>;

    /// Makes `to` the node below the first `depth` entries of `path`: the root if `depth` is
    /// 0, else the child of entry `depth - 1` on its side.
    ///
    /// # Safety
    /// `depth <= path.len`; the entries are nodes of the tree.
    unsafe fn replace(&mut self, path: &Path, depth: usize, to: Option<Chunk>);

    /// Restores the red-black rules after a red leaf was linked below the last entry of
    /// `path`.
    ///
    /// # Safety
    /// `path` is the search path of the leaf; apart from a red parent of the leaf, the tree
    /// keeps the red-black rules.
    unsafe fn fix_insert(&mut self, path: &Path);

    /// Takes the node `node`, which has no duplicate, out of the tree; `path` holds its
    /// ancestors.
    ///
    /// # Safety
    /// `path` is `node`'s search path in a consistent tree.
    unsafe fn remove_node(&mut self, node: Chunk, path: &mut Path);

    /// Files a free chunk of `size` bytes.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes that is not filed; the tree is consistent.
    #[inline(always)]
    unsafe fn file(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: `chunk` and every filed chunk are free chunks with the link words of their
        // size; the tree is consistent.
        unsafe {
            if size < TREE_MIN {
                list::push(self.smallest(), chunk);
                return;
            }
            let mut path = Path::new();
            if let Some(node) = self.descend(chunk, size, &mut path) {
                push_duplicate(node, chunk);
                return;
            }
            set(chunk, NEXT, None);
            set(chunk, PREV, None);
            raw(chunk, LEFT).write(ptr::without_provenance_mut(RED));
            set(chunk, RIGHT, None);
            self.replace(&path, path.len, Some(chunk));
            self.fix_insert(&path);
        }
    }

    /// Takes the filed chunk `chunk` of `size` bytes out.
    ///
    /// # Safety
    /// `chunk` is filed, of `size` bytes by its header; the tree is consistent.
    #[inline(always)]
    unsafe fn take_out(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: filed chunks are free chunks with the link words of their size; a chunk of
        // the tree's sizes whose `prev` is null is a node (module invariants).
        unsafe {
            if unlink_listed::<Coloured>(self.smallest(), chunk, size) {
                return;
            }
            let mut path = Path::new();
            let node = self.descend(chunk, size, &mut path);
            debug_assert!(node == Some(chunk), "the node of its size is not the chunk");
            match get(chunk, NEXT) {
                Some(duplicate) => {
                    // The first duplicate takes the node's place, children and colour.
                    set(duplicate, PREV, None);
                    raw(duplicate, LEFT).write(raw(chunk, LEFT).read());
                    set(duplicate, RIGHT, get(chunk, RIGHT));
                    self.replace(&path, path.len, Some(duplicate));
                }
                None => self.remove_node(chunk, &mut path),
            }
        }
    }
}

impl RedBlackTree {
    /// An empty tree.
    pub(crate) const fn new() -> RedBlackTree {
        RedBlackTree {
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
    /// entry of `path` (the root if the path is empty), one black short.
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
                if let Some(short) = child(parent, side).filter(|&short| colour(short) == RED) {
                    paint(short, 0);
                    return;
                }
                let mut sibling = child(parent, side ^ 1).unwrap_unchecked();
                if colour(sibling) == RED {
                    // Rotate the red sibling up: the parent turns red, the new sibling black.
                    paint(sibling, 0);
                    paint(parent, RED);
                    rotate(parent, side ^ 1);
                    self.replace(path, path.len - 1, Some(sibling));
                    path.set_at(path.len - 1, sibling, side);
                    path.push(parent, side);
                    sibling = child(parent, side ^ 1).unwrap_unchecked();
                }
                let far = child(sibling, side ^ 1);
                let near = child(sibling, side);
                if !is_red(far) && !is_red(near) {
                    // The sibling's side gives up a black too: the parent's subtree is short.
                    paint(sibling, RED);
                    path.len -= 1;
                    continue;
                }
                if !is_red(far) {
                    let near = near.unwrap_unchecked();
                    paint(near, 0);
                    paint(sibling, RED);
                    rotate(sibling, side);
                    set_child(parent, side ^ 1, Some(near));
                    sibling = near;
                }
                paint(sibling, colour(parent));
                paint(parent, 0);
                paint(child(sibling, side ^ 1).unwrap_unchecked(), 0);
                rotate(parent, side ^ 1);
                self.replace(path, path.len - 1, Some(sibling));
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

    /// The checker's count ([`Index::tally`] with nodes of at least `min_node` bytes): the
    /// list of the smallest chunks, then every node and its duplicates.
    fn tally_from(
        &self,
        min_node: usize,
        limit: usize,
    ) -> Result<Option<(usize, usize)>, Corruption> {
        tally_red_black(self.root, self.smallest, min_node, limit, prev_is_null)
    }
}

/// The checker's test of a node's `prev` word in a tree without parents: null.
pub(crate) fn prev_is_null(node: Chunk, _parent: Option<Chunk>) -> bool {
    // SAFETY: the checker calls this on nodes only, whose `prev` word is inside them.
    unsafe { get(node, PREV) }.is_none()
}

/// The checker's count of a red-black tree of chunks with duplicate lists ([`Index::tally`]):
/// [`tally_red_black_by`] with the nodes ordered by size alone.
pub(crate) fn tally_red_black(
    root: Option<Chunk>,
    smallest: Option<Chunk>,
    min_node: usize,
    limit: usize,
    prev_word_ok: impl Fn(Chunk, Option<Chunk>) -> bool,
) -> Result<Option<(usize, usize)>, Corruption> {
    let by_size = |_, size| (size, 0);
    tally_red_black_by(root, smallest, min_node, limit, by_size, prev_word_ok)
}

/// The checker's count of a red-black tree of chunks ([`Index::tally`]): the list of the
/// smallest chunks, then a walk of every node with a stack of pending subtrees (no
/// recursion), verifying order by `key(node, size)` (unique keys, increasing from left to
/// right), node size (at least `min_node`), the colour rules and equal black heights, and that
/// `prev_word_ok(node, parent)` accepts each node's `prev` word, and counting each node's
/// duplicate list.
pub(crate) fn tally_red_black_by(
    root: Option<Chunk>,
    smallest: Option<Chunk>,
    min_node: usize,
    limit: usize,
    key: impl Fn(Chunk, usize) -> (usize, usize),
    prev_word_ok: impl Fn(Chunk, Option<Chunk>) -> bool,
) -> Result<Option<(usize, usize)>, Corruption> {
    let mut tally = Tally::new(limit);
    let complete = tally.take_list(smallest, MIN_CHUNK)?
        && tally_tree(&mut tally, root, min_node, key, prev_word_ok)?;
    Ok(complete.then(|| tally.result()).flatten())
}

/// The tree's part of [`tally_red_black_by`]; `Ok(false)` once past the tally's limit.
fn tally_tree(
    tally: &mut Tally,
    root: Option<Chunk>,
    min_node: usize,
    key: impl Fn(Chunk, usize) -> (usize, usize),
    prev_word_ok: impl Fn(Chunk, Option<Chunk>) -> bool,
) -> Result<bool, Corruption> {
    let Some(root) = root else {
        return Ok(true);
    };
    /// A subtree still to walk: its root and that root's parent, the exclusive bounds of its
    /// keys, the black nodes above it, whether its parent is red.
    #[derive(Clone, Copy)]
    struct Pending {
        node: Chunk,
        parent: Option<Chunk>,
        above: (usize, usize),
        below: (usize, usize),
        blacks: usize,
        red_parent: bool,
    }
    // A preorder walk keeps at most one pending right subtree per level: a tree deeper than
    // `MAX_DEPTH`, which breaks the red-black rules, overflows the stack.
    let mut stack = [None::<Pending>; PATH_CAPACITY];
    stack[0] = Some(Pending {
        node: root,
        parent: None,
        above: (0, 0),
        below: (usize::MAX, usize::MAX),
        blacks: 0,
        red_parent: false,
    });
    let mut len = 1usize;
    let mut leaf_blacks = None;
    while let Some(Some(pending)) = len.checked_sub(1).and_then(|top| stack.get(top)) {
        len -= 1;
        let node = pending.node;
        let bad = fault(node.addr(), CorruptionKind::BadLink);
        // SAFETY: the node was reached through non-null links; its header and link words are
        // read only once its header says it is a free chunk of a node's size (the checker's
        // stated limit).
        let (node_key, red) = unsafe {
            let size = node.size();
            let node_key = key(node, size);
            if node_key <= pending.above || node_key >= pending.below || size < min_node {
                return bad;
            }
            if !tally.take_list(Some(node), size)? {
                return Ok(false);
            }
            if !prev_word_ok(node, pending.parent) {
                return bad;
            }
            (node_key, colour(node) == RED)
        };
        if red && (pending.red_parent || node == root) {
            return bad;
        }
        let blacks = pending.blacks + usize::from(!red);
        let sides = [
            (RIGHT, node_key, pending.below),
            (LEFT, pending.above, node_key),
        ];
        for (side, above, below) in sides {
            // SAFETY: as above.
            match unsafe { child(node, side) } {
                None if *leaf_blacks.get_or_insert(blacks) != blacks => return bad,
                None => {}
                Some(next) => {
                    let Some(slot) = stack.get_mut(len) else {
                        return bad;
                    };
                    *slot = Some(Pending {
                        node: next,
                        parent: Some(node),
                        above,
                        below,
                        blacks,
                        red_parent: red,
                    });
                    len += 1;
                }
            }
        }
    }
    Ok(true)
}

impl OnPath for RedBlackTree {
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
                let side = if size < node_size { LEFT } else { RIGHT };
                path.push(node, side);
                cursor = child(node, side);
            }
        }
        None
    }

    #[inline(always)]
    unsafe fn replace(&mut self, path: &Path, depth: usize, to: Option<Chunk>) {
        if depth == 0 {
            self.root = to;
        } else {
            // SAFETY: forwarded from the caller.
            unsafe {
                let (parent, side) = path.at(depth - 1);
                set_child(parent, side, to);
            }
        }
    }

    /// Restores the red-black rules after a red leaf was linked below the last entry of
    /// `path`: recolours up the path while the new red node's parent and uncle are red, then
    /// rotates at most twice.
    ///
    /// # Safety
    /// `path` is the search path of the leaf; apart from a red parent of the leaf, the tree
    /// keeps the red-black rules.
    #[inline(never)]
    unsafe fn fix_insert(&mut self, path: &Path) {
        // The red node that may have a red parent sits below the first `depth` entries.
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
                let uncle = child(grandparent, parent_side ^ 1);
                if let Some(uncle) = uncle.filter(|&uncle| colour(uncle) == RED) {
                    paint(parent, 0);
                    paint(uncle, 0);
                    paint(grandparent, RED);
                    depth -= 2;
                    continue;
                }
                let mut top = parent;
                if side != parent_side {
                    top = rotate(parent, side);
                    set_child(grandparent, parent_side, Some(top));
                }
                rotate(grandparent, parent_side);
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
            let (left, right) = (child(node, LEFT), child(node, RIGHT));
            let removed_black = match (left, right) {
                (Some(_), Some(right)) => {
                    // The successor, the least node on the right, takes the node's place and
                    // colour; the hole is where the successor was.
                    path.push(node, RIGHT);
                    let mut successor = right;
                    while let Some(smaller) = child(successor, LEFT) {
                        path.push(successor, LEFT);
                        successor = smaller;
                    }
                    let removed_black = colour(successor) != RED;
                    if successor != right {
                        let (parent, _) = path.at(path.len - 1);
                        set_child(parent, LEFT, child(successor, RIGHT));
                        set_child(successor, RIGHT, Some(right));
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

size_tree_index!(RedBlackTree);

#[cfg(test)]
pub(crate) mod tests {
    extern crate std;

    use core::alloc::Layout;
    use core::ptr::NonNull;
    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::index::{checks_after, churn, test_heap, FreeIndex};
    use crate::Heap;

    /// The layout whose block takes a chunk of `chunk` bytes.
    pub(crate) fn payload(chunk: usize) -> Layout {
        Layout::from_size_align(chunk - WORD, 8).unwrap()
    }

    /// Frees chunks of `sizes` bytes (in that order), kept apart by live blocks, in a heap
    /// on the index `I` with no other free chunk: the index then holds exactly those chunks.
    /// Returns the heap and the chunks.
    pub(crate) fn tree_of<I: FreeIndex>(
        memory: &mut [u128],
        sizes: &[usize],
    ) -> (Heap<I>, Vec<Chunk>) {
        let mut heap = test_heap::<I>(memory);
        let holes: Vec<NonNull<u8>> = sizes
            .iter()
            .map(|&size| {
                let hole = heap.allocate(payload(size)).unwrap();
                heap.allocate(payload(MIN_CHUNK)).unwrap();
                hole
            })
            .collect();
        let rest = heap.stats().largest_free;
        heap.allocate(Layout::from_size_align(rest, 8).unwrap())
            .unwrap();
        assert_eq!(heap.stats().free, 0);
        let chunks = holes
            .into_iter()
            .map(|hole| {
                // SAFETY: every hole is a live block, freed once.
                unsafe {
                    heap.free(hole);
                    Chunk::from_payload(hole)
                }
            })
            .collect();
        heap.check().unwrap();
        (heap, chunks)
    }

    /// Blocks of many sizes, many of them equal, freed in a scrambled order and reallocated on
    /// a heap over the tree `I`: the rotations of both fix-ups, the duplicate lists and the
    /// smallest chunks' list all run; the heap is checked after every step and finally holds
    /// one free chunk.
    pub(crate) fn assert_survives_churn<I: FreeIndex>() {
        let mut memory = vec![0u128; 32768];
        let mut heap = test_heap::<I>(&mut memory);
        let sizes: Vec<usize> = (0..40).map(|i| 8 + (i * 37 % 29) * 48).collect();
        assert_eq!(churn(&mut heap, &sizes, 200), 1);
    }

    #[test]
    fn duplicates_and_small_chunks_survive_churn() {
        assert_survives_churn::<RedBlackTree>();
    }

    /// Asserts that the red-black tree at `root`, of `nodes` nodes, is at most 2·log2(n + 1)
    /// levels high.
    pub(crate) fn assert_within_height_bound(root: Option<Chunk>, nodes: usize) {
        let mut height = 0;
        let mut stack = vec![(root, 0)];
        while let Some((node, depth)) = stack.pop() {
            let Some(node) = node else {
                height = height.max(depth);
                continue;
            };
            // SAFETY: the tree is consistent (the callers check the heap first).
            unsafe {
                stack.push((child(node, LEFT), depth + 1));
                stack.push((child(node, RIGHT), depth + 1));
            }
        }
        let bound = 2 * (nodes + 1).next_power_of_two().ilog2() as usize;
        assert!(height <= bound, "height {height}");
    }

    /// Files chunks of `sizes` (see `tree_of`) in a red-black tree on the index `I`, whose
    /// root `root` gives; asserts that the tree stays within the red-black height bound, then
    /// takes the chunks out again from the middle outwards (each request of a chunk's size
    /// getting that chunk), checking the heap after every step, until the tree is empty.
    pub(crate) fn assert_balanced_through<I: FreeIndex>(
        sizes: &[usize],
        root: impl Fn(&Heap<I>) -> Option<Chunk>,
    ) {
        let mut memory = vec![0u128; 16384];
        let (mut heap, chunks) = tree_of::<I>(&mut memory, sizes);
        assert_within_height_bound(root(&heap), sizes.len());
        let mut order: Vec<usize> = (0..chunks.len()).collect();
        order.sort_by_key(|&i| i.abs_diff(chunks.len() / 2));
        for (step, i) in order.into_iter().enumerate() {
            let got = heap.allocate(payload(sizes[i])).unwrap();
            assert_eq!(
                got,
                chunks[i].payload(),
                "best fit takes the chunk of the exact size"
            );
            if checks_after(step) {
                heap.check().unwrap();
            }
        }
        heap.check().unwrap();
        assert!(root(&heap).is_none());
    }

    /// Many distinct sizes filed in increasing order (the case that makes an unbalanced tree
    /// a list) stay within the red-black height bound, and taking them out again keeps the
    /// rules.
    #[test]
    fn sorted_insertions_stay_balanced() {
        let sizes: Vec<usize> = (0..127).map(|i| TREE_MIN + i * 16).collect();
        assert_balanced_through::<RedBlackTree>(&sizes, |heap| heap.index.root);
    }

    /// The search is an exact best fit: among free chunks of 96, 160 and 112 bytes kept apart
    /// by live blocks, a request for 100 bytes of chunk gets the 112-byte one; a duplicate is
    /// handed out before its node.
    #[test]
    fn the_search_takes_the_smallest_chunk_that_fits() {
        let mut memory = vec![0u128; 1024];
        let (mut heap, chunks) = tree_of::<RedBlackTree>(&mut memory, &[96, 160, 112, 112]);
        let block = heap.allocate(payload(112)).unwrap();
        assert_eq!(block, chunks[3].payload());
        let block = heap.allocate(payload(112)).unwrap();
        assert_eq!(block, chunks[2].payload());
        heap.check().unwrap();
        // SAFETY: a block of this heap, freed once.
        unsafe { heap.free(block) };
        heap.check().unwrap();
    }

    /// Out of memory changes nothing: a request above the largest free chunk fails, and the
    /// tree and its chunks are as they were.
    #[test]
    fn a_request_too_large_fails_and_changes_nothing() {
        let mut memory = vec![0u128; 1024];
        let (mut heap, _) = tree_of::<RedBlackTree>(&mut memory, &[96, 160, 112]);
        let before = heap.stats();
        assert!(heap.allocate(payload(176)).is_err());
        assert_eq!(heap.stats(), before);
        heap.check().unwrap();
        assert!(heap.allocate(payload(160)).is_ok());
    }

    /// Sizes `b`, `a`, `c` filed in that order make a black root with two red children.
    const B: usize = 160;
    const A: usize = 96;
    const C: usize = 224;

    /// Builds the tree of `sizes` (see `tree_of`), breaks it with `corrupt`, and asserts
    /// that the checker reports a broken link at the chunk of `sizes[culprit]`.
    fn assert_reported(sizes: &[usize], corrupt: impl FnOnce(&[Chunk]), culprit: usize) {
        let mut memory = vec![0u128; 1024];
        let (heap, chunks) = tree_of::<RedBlackTree>(&mut memory, sizes);
        corrupt(&chunks);
        let fault = heap.check().unwrap_err();
        assert_eq!(fault.kind, CorruptionKind::BadLink);
        assert_eq!(fault.addr, chunks[culprit].addr());
    }

    /// A red root breaks the colour rules; the checker names it.
    #[test]
    fn a_red_root_is_reported() {
        // SAFETY: the chunk is a node of the tree.
        assert_reported(&[B, A, C], |chunks| unsafe { paint(chunks[0], RED) }, 0);
    }

    /// A red node with a red child breaks the colour rules; the checker names the child.
    #[test]
    fn a_red_child_of_a_red_node_is_reported() {
        // The fourth, smallest size recolours: a black root, two black children, and the new
        // node red below `A`.
        let paint_parent_red = |chunks: &[Chunk]| {
            // SAFETY: the chunks are nodes of the tree.
            unsafe {
                assert_eq!(child(chunks[1], LEFT), Some(chunks[3]));
                assert_eq!((colour(chunks[1]), colour(chunks[3])), (0, RED));
                paint(chunks[1], RED);
            }
        };
        assert_reported(&[B, A, C, 48], paint_parent_red, 3);
    }

    /// Unequal black heights are reported, at the node whose null link is short.
    #[test]
    fn unequal_black_heights_are_reported() {
        // SAFETY: the chunk is a node of the tree.
        assert_reported(&[B, A, C], |chunks| unsafe { paint(chunks[1], 0) }, 2);
    }

    /// Children swapped break the order; the checker names the first node out of it.
    #[test]
    fn a_broken_order_is_reported() {
        let swap_children = |chunks: &[Chunk]| {
            // SAFETY: the chunks are nodes of the tree.
            unsafe {
                set_child(chunks[0], LEFT, Some(chunks[2]));
                set_child(chunks[0], RIGHT, Some(chunks[1]));
            }
        };
        assert_reported(&[B, A, C], swap_children, 2);
    }

    /// A tree node that claims to be a duplicate (naming itself as its predecessor) is
    /// reported.
    #[test]
    fn a_node_marked_as_duplicate_is_reported() {
        // SAFETY: the chunk is a node of the tree.
        let mark = |chunks: &[Chunk]| unsafe { set(chunks[1], PREV, Some(chunks[1])) };
        assert_reported(&[B, A, C], mark, 1);
    }
}
