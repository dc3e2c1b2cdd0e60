//! Free indexes: the structures that file every free chunk by size, and the interface the heap
//! drives them through.
//!
//! A [`crate::Heap`] is generic over its index (`Heap<I = Bins>`); the heap never looks inside
//! one, and each index is monomorphised into the heap's code, so the default costs what the
//! heap cost before it had a choice. The indexes:
//! - [`Bins`] (the default): segregated bins with an occupancy bitmap, TLSF's good fit, a
//!   bounded best fit for large requests (invariants in `index/bins.rs`);
//! - [`SplayTree`]: one top-down splay tree keyed by size, chunks of a size already in the tree
//!   kept in a list hanging from its node, exact best fit (invariants in `index/splay.rs`);
//! - [`RedBlackTree`]: a red-black tree keyed by size with the same duplicate lists and no
//!   parent pointer, rebalanced bottom-up from a stack of the search path, exact best fit
//!   (invariants in `index/rbtree.rs`); three variants of it, each differing in one respect,
//!   for seed 003's questions: [`MirroredRedBlackTree`] writes the left and right cases apart
//!   instead of through a side index (`index/rbtree_mirrored.rs`), [`AddressRedBlackTree`]
//!   has no duplicate lists, one node per chunk keyed by (size, address)
//!   (`index/rbtree_address.rs`), [`ParentRedBlackTree`] keeps a parent pointer in every node
//!   instead of a stack of the path (`index/rbtree_parent.rs`);
//! - [`SegregatedLists`]: the classic baseline, one list per power of two of sizes and no
//!   bitmap, first fit in the request's own class (invariants in `index/segregated.rs`);
//! - [`Hybrid`]: the exact bins for small chunks, the splay tree from 2 KiB
//!   up (256 B on 32-bit targets), as dlmalloc has small bins and tree bins (invariants in
//!   `index/hybrid.rs`).
//!
//! Contract every index keeps (the heap relies on it, [`crate::Heap::check`] verifies it
//! through the index's own checks):
//! - Each free chunk is filed exactly once, under the size its header gives; nothing else is.
//! - An index writes only the link words of the chunks it files (the payload words after the
//!   header, never the header or the footer), and reads a filed chunk's size from its header.
//!   So the heap may move an entry to a chunk whose header it writes afterwards, and an entry
//!   taken out (or moved) is read completely before its replacement's links are written.
//! - `find` returns a chunk of at least the size asked for whenever a filed chunk is
//!   that large: a request the largest free chunk can serve never fails.
//! - A *slot* (a `usize` that `find` returns beside a chunk, or `slot_of`
//!   computes from a size) is whatever the index needs to take the entry out again in O(1)
//!   (a bin for the bins, the size for a tree); it is valid until the index next changes.

pub(crate) mod bins;
pub(crate) mod hybrid;
pub(crate) mod list;
pub(crate) mod rbtree;
pub(crate) mod rbtree_address;
pub(crate) mod rbtree_mirrored;
pub(crate) mod rbtree_parent;
pub(crate) mod segregated;
pub(crate) mod splay;
pub(crate) mod tree;

pub use bins::Bins;
pub use hybrid::Hybrid;
pub use rbtree::RedBlackTree;
pub use rbtree_address::AddressRedBlackTree;
pub use rbtree_mirrored::MirroredRedBlackTree;
pub use rbtree_parent::ParentRedBlackTree;
pub use segregated::SegregatedLists;
pub use splay::SplayTree;

use crate::error::{Corruption, CorruptionKind};

/// A free index a [`crate::Heap`] can be built on: [`Bins`] (the default), [`SplayTree`],
/// [`RedBlackTree`] (and its variants [`MirroredRedBlackTree`], [`AddressRedBlackTree`] and
/// [`ParentRedBlackTree`]),
/// [`Hybrid`] or [`SegregatedLists`]. Sealed: its methods are the heap's business.
pub trait FreeIndex: Index {}

impl<T: Index> FreeIndex for T {}

/// A bijection on addresses, summed into fingerprints of chunk sets: two sets of equal size
/// that differ in one chunk always get different sums.
pub(crate) fn mix(addr: usize) -> usize {
    (addr ^ (addr >> 17)).wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as usize)
}

/// A heap on the index `I` over `memory`, for the indexes' unit tests.
#[cfg(test)]
pub(crate) fn test_heap<I: FreeIndex>(memory: &mut [u128]) -> crate::Heap<I> {
    let mut heap = crate::Heap::<I>::empty();
    // SAFETY: the tests keep `memory` alive, and untouched, while the heap lives.
    unsafe { heap.claim(memory.as_mut_ptr().cast(), memory.len() * 16) }.unwrap();
    heap
}

/// Whether a unit test that checks the heap after every step checks it after step `step`:
/// natively always; under Miri every 8th step, since there the checker's walk over every bin
/// is most of a test's time (CI's Miri run), and a fault is still caught a few steps on.
#[cfg(test)]
pub(crate) fn checks_after(step: usize) -> bool {
    !cfg!(miri) || step.is_multiple_of(8)
}

/// Allocates `count` blocks of `sizes` (in turn), then frees them in a scrambled order,
/// allocating a block again after about one free in four, and checks the heap after every
/// step (see `checks_after`), and at the end, until no block is left; returns how many free chunks the index then files. For the
/// indexes' unit tests: every kind of entry (duplicates, small chunks, new sizes) comes and
/// goes.
#[cfg(test)]
pub(crate) fn churn<I: FreeIndex>(
    heap: &mut crate::Heap<I>,
    sizes: &[usize],
    count: usize,
) -> usize {
    extern crate std;
    use core::alloc::Layout;
    let layout = |size| Layout::from_size_align(size, 8).unwrap();
    let mut blocks: std::vec::Vec<_> = (0..count)
        .map(|i| heap.allocate(layout(sizes[i % sizes.len()])).unwrap())
        .collect();
    let mut state = 7u64;
    let mut step = 0;
    while !blocks.is_empty() {
        step += 1;
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let block = blocks.swap_remove((state >> 33) as usize % blocks.len());
        // SAFETY: every block is live and freed once.
        unsafe { heap.free(block) };
        if checks_after(step) {
            heap.check().unwrap();
        }
        if state & 3 == 0 {
            let size = sizes[(state >> 40) as usize % sizes.len()];
            blocks.push(heap.allocate(layout(size)).unwrap());
            if checks_after(step) {
                heap.check().unwrap();
            }
        }
    }
    heap.check().unwrap();
    let mut free = 0;
    // SAFETY: the index is consistent (checked).
    unsafe { heap.index.for_each(|_, _| free += 1) };
    free
}

/// A corruption of the index at `addr`, outside any bin.
pub(crate) fn fault<T>(addr: usize, kind: CorruptionKind) -> Result<T, Corruption> {
    Err(Corruption {
        addr,
        bin: None,
        kind,
    })
}

/// Private, so its items may be `pub` in name: the sealed trait and what it mentions.
mod sealed {
    use crate::chunk::Chunk;
    use crate::error::{Corruption, CorruptionKind};

    /// What the walk of the regions found, and a way to walk them again: handed to
    /// [`Index::diagnose`].
    pub struct Walked {
        /// The number of free chunks.
        pub(crate) free_chunks: usize,
        /// The heap's first region record, for walking the chunks again ([`Walked::for_each`]).
        pub(crate) regions: Option<core::ptr::NonNull<crate::region::RegionRecord>>,
    }

    impl Walked {
        /// Calls `f(chunk, size, in_use)` for every chunk between each region's record chunk and
        /// sentinel: only after the walk of the checker passed.
        pub(crate) fn for_each(&self, mut f: impl FnMut(Chunk, usize, bool)) {
            let mut next = self.regions;
            while let Some(record) = next {
                // SAFETY: the regions passed the walk: the record chunk and every size up to the
                // sentinel are valid.
                unsafe {
                    let sentinel = record.as_ref().sentinel;
                    let mut chunk = Chunk::from_payload(record.cast()).next();
                    while chunk != sentinel {
                        let size = chunk.size();
                        f(chunk, size, chunk.is_in_use());
                        chunk = chunk.after(size);
                    }
                    next = record.as_ref().next;
                }
            }
        }

        /// Whether `chunk` is a free chunk met by the walk.
        pub(crate) fn is_free_chunk(&self, chunk: Chunk) -> bool {
            let mut found = false;
            self.for_each(|walked, _, in_use| found |= walked == chunk && !in_use);
            found
        }

        /// The first free chunk (in region order) that `filed` says is not in the index, as a
        /// [`CorruptionKind::LostChunk`]; `None` when every free chunk is filed.
        pub(crate) fn first_lost(
            &self,
            mut filed: impl FnMut(Chunk, usize) -> bool,
            bin_of: impl Fn(usize) -> Option<usize>,
        ) -> Option<Corruption> {
            let mut lost = None;
            self.for_each(|chunk, size, in_use| {
                if lost.is_none() && !in_use && !filed(chunk, size) {
                    lost = Some(Corruption {
                        addr: chunk.addr(),
                        bin: bin_of(size),
                        kind: CorruptionKind::LostChunk,
                    });
                }
            });
            lost
        }
    }

    /// The operations of a free index (see the module docs for the contract). Every `unsafe`
    /// method requires the index to be consistent (every entry a free chunk of claimed
    /// regions, filed under its header's size) besides what it states.
    pub trait Index: Sized {
        /// An empty index (all zeros where it can be, so a `static` heap costs no data).
        const EMPTY: Self;
        /// Requests below this size try [`Index::good_fit`] first, inline; larger ones, and
        /// those `good_fit` finds nothing for, go to [`Index::search`] out of line.
        const GOOD_FIT_BELOW: usize;

        /// Hands the index the heap's list sink (see [`crate::region`]), once, before the
        /// first chunk is filed. An index without a sink ignores it.
        ///
        /// # Safety
        /// `sink`'s link words are writable memory owned by the heap for as long as it lives,
        /// and used for nothing else.
        unsafe fn adopt_sink(&mut self, sink: Chunk);

        /// The slot of a filed chunk of `size` bytes.
        fn slot_of(size: usize) -> usize;

        /// Files a free chunk of `size` bytes.
        ///
        /// # Safety
        /// `chunk` is a free chunk of `size` bytes that is not filed.
        unsafe fn insert(&mut self, chunk: Chunk, size: usize);

        /// Takes the filed chunk `chunk` out, known by its slot.
        ///
        /// # Safety
        /// `chunk` is filed, and `slot` is its slot.
        unsafe fn unlink(&mut self, chunk: Chunk, slot: usize);

        /// [`Index::unlink`] for a chunk that is not the top (one with a chunk after it): an
        /// index that keeps a top skips the test.
        ///
        /// # Safety
        /// As for [`Index::unlink`], and `chunk` is not [`Index::is_top`].
        unsafe fn unlink_not_top(&mut self, chunk: Chunk, slot: usize) {
            // SAFETY: forwarded from the caller.
            unsafe { self.unlink(chunk, slot) }
        }

        /// [`Index::unlink`] for a chunk that [`Index::good_fit`] returned.
        ///
        /// # Safety
        /// `chunk` and `slot` came from `good_fit`, and the index has not changed since.
        unsafe fn unlink_head(&mut self, chunk: Chunk, slot: usize) {
            // SAFETY: forwarded from the caller.
            unsafe { self.unlink(chunk, slot) }
        }

        /// The entry of the filed chunk `from` (slot `slot`) now stands for a free chunk of
        /// `new_size` bytes at `to` (which may be `from`). Only link words are written; the
        /// caller writes `to`'s header and footer afterwards.
        ///
        /// # Safety
        /// `from` is filed under `slot`; `to`'s link words may overlap `from`'s header but not
        /// its links unless `to == from`; nothing else filed lies in `to`'s span.
        unsafe fn refile_in(&mut self, from: Chunk, slot: usize, to: Chunk, new_size: usize) {
            // SAFETY: forwarded from the caller; `from`'s links are all read while it is taken
            // out, before `to`'s are written.
            unsafe {
                self.unlink(from, slot);
                self.insert(to, new_size);
            }
        }

        /// [`Index::refile_in`] for a chunk that [`Index::good_fit`] returned.
        ///
        /// # Safety
        /// As for [`Index::refile_in`], with `from` and `slot` from `good_fit`.
        unsafe fn refile_head(&mut self, from: Chunk, slot: usize, to: Chunk, new_size: usize) {
            // SAFETY: forwarded from the caller.
            unsafe { self.refile_in(from, slot, to, new_size) }
        }

        /// The filed chunk `chunk`, of `old_size` bytes, now has `new_size` bytes where it
        /// stands (the caller writes its header afterwards).
        ///
        /// # Safety
        /// `chunk` is filed, of `old_size` bytes by its header.
        unsafe fn resize_entry(&mut self, chunk: Chunk, old_size: usize, new_size: usize) {
            // SAFETY: forwarded from the caller.
            unsafe { self.refile_in(chunk, Self::slot_of(old_size), chunk, new_size) }
        }

        /// Whether the filed chunk `chunk` is the index's *top*: a free chunk that ends at a
        /// region's end sentinel and has its footer in the index ([`Index::footer_word`]).
        /// Only the default index keeps one, on wasm32 (see `index/bins.rs`).
        fn is_top(&self, _chunk: Chunk) -> bool {
            false
        }

        /// The top and its size, if there is one.
        fn top(&self) -> Option<(Chunk, usize)> {
            None
        }

        /// Files a free chunk of `size` bytes that ends at a region's end sentinel: as the top
        /// in an index that keeps one (the old top, if any, is then filed as any chunk),
        /// otherwise as [`Index::insert`] does.
        ///
        /// # Safety
        /// As for [`Index::insert`], and the chunk ends at a region's sentinel.
        unsafe fn set_top(&mut self, chunk: Chunk, size: usize) {
            // SAFETY: forwarded from the caller.
            unsafe { self.insert(chunk, size) }
        }

        /// Whether `slot`, as [`Index::good_fit`] or [`Index::search`] return it, is the
        /// top's.
        fn is_top_slot(_slot: usize) -> bool {
            false
        }

        /// Where the footer of the free chunk `chunk` of `size` bytes is written: its last
        /// word, or when `top` says it is the top (its entry moved from the top's, the caller
        /// having asked [`Index::is_top`] or [`Index::is_top_slot`] before the move, so that
        /// on wasm32 the choice folds into the move's own test) a word of the index.
        ///
        /// # Safety
        /// `[chunk, chunk + size)` lies inside one region.
        unsafe fn footer_word(&mut self, chunk: Chunk, size: usize, _top: bool) -> *mut usize {
            // SAFETY: forwarded from the caller.
            unsafe { chunk.footer_word(size) }
        }

        /// A filed chunk of at least `size` bytes that is cheap to find, with its slot; for
        /// `size < GOOD_FIT_BELOW`. `None` sends the request to [`Index::search`].
        fn good_fit(&mut self, size: usize) -> Option<(Chunk, usize)>;

        /// A filed chunk of at least `size` bytes, with its slot, for a request that
        /// [`Index::good_fit`] did not serve (or is too large for it). `None` only when no
        /// filed chunk has `size` bytes.
        ///
        /// # Safety
        /// The index is consistent.
        unsafe fn search(&mut self, size: usize) -> Option<(Chunk, usize)>;

        /// The chunk a single request of `size` bytes would get, with its slot (as
        /// `good_fit`, then `search`).
        ///
        /// # Safety
        /// The index is consistent.
        unsafe fn find(&mut self, size: usize) -> Option<(Chunk, usize)>;

        /// Some filed chunk of at least `min_size` bytes that `fits` accepts (it gets the
        /// chunk and its size), with its slot: the slow path of over-aligned requests.
        ///
        /// # Safety
        /// The index is consistent.
        unsafe fn first_fit(
            &mut self,
            min_size: usize,
            fits: impl FnMut(Chunk, usize) -> bool,
        ) -> Option<(Chunk, usize)>;

        /// Calls `f` with every filed chunk and its size.
        ///
        /// # Safety
        /// The index is consistent.
        unsafe fn for_each(&self, f: impl FnMut(Chunk, usize));

        /// The size of the largest filed chunk, if any.
        ///
        /// # Safety
        /// The index is consistent.
        unsafe fn largest(&self) -> Option<usize>;

        /// Checks the entry of one free chunk that the region walk met (its links agree with
        /// their neighbours'). It trusts nothing: links are read only as far as the first
        /// words of the chunks they name.
        ///
        /// # Safety
        /// `chunk` is a free chunk of `size` bytes (at least `MIN_CHUNK`) inside a region.
        unsafe fn check_filed(&self, chunk: Chunk, size: usize) -> Result<(), Corruption>;

        /// Checks the index's own invariants, reading at most `limit` entries, and returns how
        /// many chunks it files and the wrapping sum of [`super::mix`] over their addresses;
        /// `None` when it files more than `limit`. Bounded by `limit`, so a corrupt index cannot
        /// make it loop.
        fn tally(&self, limit: usize) -> Result<Option<(usize, usize)>, Corruption>;

        /// Whether the free chunk `chunk` of `size` bytes is filed, looking at no more than
        /// `limit` entries (for naming a lost chunk on a corrupt heap).
        fn files(&self, chunk: Chunk, size: usize, limit: usize) -> bool;

        /// Names the fault when the index does not file exactly the free chunks of the walk:
        /// the first free chunk (in region order) that it does not file, or else the index
        /// itself (it files an entry in excess).
        fn diagnose(&self, walked: &Walked) -> Corruption {
            let filed = |chunk, size| self.files(chunk, size, walked.free_chunks);
            walked.first_lost(filed, |_| None).unwrap_or(Corruption {
                addr: core::ptr::from_ref(self).addr(),
                bin: None,
                kind: CorruptionKind::LostChunk,
            })
        }
    }
}

pub(crate) use sealed::{Index, Walked};
