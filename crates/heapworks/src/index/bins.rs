//! The default free index, [`Bins`]: every free chunk, filed by size in doubly linked bin lists.
//!
//! Invariants (verified by [`crate::Heap::check`]):
//! - Each free chunk is either the *victim* (below) or in exactly one list, the one of
//!   [`bin_of`]`(its size)`; the victim is in no list, and `victim_size` is its size (0 when
//!   there is no victim).
//! - Every list ends in the heap's *sink*, and its first chunk's `prev` link is the sink too;
//!   `heads[b]` is the first chunk of bin `b`, or the sink or `None` when the bin is empty (a
//!   heap starts all zeros, so a `static` heap costs no initialised data); and
//!   `x.next.prev == x` along every list.
//! - The occupancy bitmap has bin `b` set exactly when `heads[b]` is a chunk other than the
//!   sink.
//!
//! The sink is two words of the first region's record (see [`crate::region`]): a pseudo-chunk
//! whose `prev` word absorbs the writes that a list end would otherwise need a branch to skip,
//! and whose `next` word is never written. With it, filing, unfiling and moving an entry take
//! no data-dependent branch but one (not on wasm32), taken when a list empties, to clear its
//! bitmap bit: the word to update for a chunk's predecessor is either that chunk's `next` or
//! the bin's head, picked without a jump. The sink lives in region memory, not in the heap, so the heap may
//! still be moved after a claim.
//!
//! **The victim** (after dlmalloc's "designated victim"): the rest of the chunk that the last small
//! request split is kept out of the lists, in two words of the index. Real programs carve runs of
//! blocks from one free chunk and give the last ones back to it: with that chunk in a list, each
//! carve moved its entry to another bin (a list unlink, a list insert and two bitmap writes, as its
//! bins are mostly singletons) and each merge back did so again; as the victim, a carve or a merge
//! rewrites one or two words. A small request takes, as dlmalloc's do, the head of its own bin if
//! it fits (an exact fit below 2 KiB), else the victim if it fits, else the head of the first
//! non-empty bin above its own: the victim is preferred to a tighter fit in a larger bin, which
//! keeps a run of requests in one chunk. A victim above `VICTIM_FIRST_MAX` (most often the
//! heap's untouched end) comes after the lists instead, as dlmalloc's top chunk does: freed
//! chunks serve before fresh memory. Splitting a listed chunk for such a request makes its rest
//! the victim, the old victim joining the lists; the victim taken whole leaves none until the next
//! such split. Only the [`Index`] methods (the default heap's) keep a victim; the inherent methods
//! work on the lists alone, which is how [`crate::index::Hybrid`] uses them (its victim stays
//! empty). The order was measured on the trace corpus (crates/heapworks/TUNING.md). On wasm32
//! the index keeps no victim (`KEEPS_VICTIM`, measured there too) but a top in its place.
//!
//! **The top** (on wasm32 instead of the victim, in the victim's two words; `KEEPS_TOP`): the
//! free chunk that ends at a region's end sentinel, as the heap files it (a region's first
//! chunk, a growth of the region, a free that merges into the top), is kept out of the lists,
//! as dlmalloc keeps its top chunk. Requests take the tighter of TLSF's good fit in the lists
//! and the top, as a victim is taken natively (`tighter_fit`, for small requests and large
//! ones alike, the latter after their bounded best fit); the top last of all would carve fresh memory for
//! requests the lists' larger chunks serve, placing the blocks of a Gear program differently
//! and costing pages (crates/heapworks/TUNING.md). A split of the top rewrites the block's
//! header, the top's header and the top's word, where a listed chunk's rest is re-filed in
//! another bin. The top has no footer in its region: its footer word is `victim_size`
//! ([`Index::footer_word`]), which the heap writes as it writes any footer, so its size is in
//! the state and no split writes the region's last page. Invariants (verified by the heap's
//! checker): the top is a free chunk in no list, it ends at a region's sentinel, and
//! `victim_size` is its size. A top that joins the lists (when another chunk becomes the top)
//! gets its footer written first. A free chunk that ends at a sentinel without being the top
//! (the top carved whole, then a block before the sentinel freed) stays in the lists until a
//! growth of the region makes it the top again.
//!
//! Finding a chunk for a request of `size` bytes ([`Bins::find`]) is TLSF's *good fit*: the head of
//! the first non-empty bin at or above [`ceil_bin_of`]`(size)`, whose every chunk fits, or the
//! victim if it fits and is smaller: one masked bit scan (two with the bitmap's summary), no list
//! walk, and the only chunk touched is the one taken. (A small request's fast path prefers the
//! victim, above.) Bins are 1/64 of an octave wide, so skipping the request's own bin costs little
//! fit. Requests of at least [`BEST_FIT_FROM`] bytes (rare, and followed by a copy or a fill of as
//! many bytes) first look at the first [`BEST_FIT_SCAN`] chunks of their own bin for the smallest
//! that fits: large blocks are what fragmentation strands, and this bounded best fit keeps the heap
//! as dense as dlmalloc's exact best fit does. Only when no bin above has a chunk is the request's
//! own bin walked to its end (first fit): that happens only when no free chunk is larger than the
//! request's 1/64-octave band, and it makes sure that a request the largest free chunk could serve
//! never fails. The walk is bounded by the number of free chunks whose sizes share that band: O(1)
//! for most heaps, O(free chunks) at worst (a heap whose free chunks all lie just below the
//! request's size, in its band).
//!
//! `find` does not take the chunk out: the heap then either unlinks it or, when the part left
//! free stays in the same bin, moves its entry in place ([`Bins::refile`]), which spares
//! the bitmap.

mod check;

use core::hint::select_unpredictable;

use crate::bins::{bin_of, ceil_bin_of};
use crate::bitmap::{Bitmap, BIN_SLOTS};
use crate::chunk::Chunk;
use crate::error::Corruption;
use crate::index::{Index, Walked};

/// Requests from this size up look for a best fit in their own bin first.
pub(crate) const BEST_FIT_FROM: usize = 8 << 10;
/// How many chunks of its own bin such a request compares.
pub(crate) const BEST_FIT_SCAN: usize = 4;

/// The default free index: segregated bins (exact up to 2 KiB on 64-bit targets, 64 per
/// octave above), an occupancy bitmap over them, TLSF's good fit and a bounded best fit for
/// large requests. See the module docs of `heapworks::index` for the others.
pub struct Bins {
    occupancy: Bitmap,
    heads: [Option<Chunk>; BIN_SLOTS],
    sink: Option<Chunk>,
    /// The victim, filed outside the lists (see the module docs), when there is one.
    victim: Option<Chunk>,
    /// The victim's size, 0 when there is none.
    victim_size: usize,
}

/// The slot of the victim: no bin's.
const VICTIM: usize = BIN_SLOTS;
/// The largest victim that a small request takes before the lists: a larger one is taken only
/// when no bin above the request's has a chunk. A victim that large is most often the heap's
/// untouched end, and taken first it would serve every request that misses its own bin from
/// fresh memory while the chunks freed before wait in the lists: a sweep through the whole
/// region, with a cold line for every block (talc's random actions at 1000 B ran at 0.55× talc's
/// speed so). Measured in crates/heapworks/TUNING.md ("The victim's place").
const VICTIM_FIRST_MAX: usize = 64 << 10;

/// Whether the index keeps a victim: not on wasm32, where the victim's checks cost more gas
/// than its carves save (measured in crates/heapworks/TUNING.md); there the index is the lists
/// with TLSF's good fit, and the victim's two words keep the top instead.
const KEEPS_VICTIM: bool = !KEEPS_TOP;

/// Whether the victim's words keep the *top* (see the module docs): on wasm32, where a split of
/// the heap's free end then rewrites a header and a word of the state instead of re-filing its
/// rest, and the end's footer is a word of the state instead of one on the region's last page
/// (both pages Gear charges per message; crates/heapworks/TUNING.md). `--cfg heapworks_top`
/// builds it natively, for the tests.
pub(crate) const KEEPS_TOP: bool = cfg!(any(target_arch = "wasm32", heapworks_top));

impl Bins {
    /// An index with no sink yet: every list operation waits for [`Bins::adopt_sink`].
    pub(crate) const fn new() -> Bins {
        Bins {
            occupancy: Bitmap::new(),
            heads: [None; BIN_SLOTS],
            sink: None,
            victim: None,
            victim_size: 0,
        }
    }

    /// Makes `sink` the end of every list. Called once, before the first chunk is filed.
    ///
    /// # Safety
    /// `sink`'s `prev` link word is writable memory owned by the heap for as long as it lives,
    /// and used for nothing else.
    pub(crate) unsafe fn adopt_sink(&mut self, sink: Chunk) {
        self.sink = Some(sink);
    }

    /// The sink.
    ///
    /// # Safety
    /// A sink was adopted: true for every list operation, as only a claimed region holds free
    /// chunks.
    #[inline(always)]
    unsafe fn sink(&self) -> Chunk {
        debug_assert!(
            self.sink.is_some(),
            "a list operation before the first claim"
        );
        // SAFETY: forwarded from the caller.
        unsafe { self.sink.unwrap_unchecked() }
    }

    /// `chunk`, unless it is the sink or missing.
    #[inline(always)]
    fn listed(&self, chunk: Option<Chunk>) -> Option<Chunk> {
        chunk.filter(|&chunk| Some(chunk) != self.sink)
    }

    /// Bin `bin`'s head word, read without a bounds check (a hint alone does not remove it at
    /// every optimization level, and a release build of the allocator has no panic path).
    ///
    /// # Safety
    /// `bin < BIN_SLOTS`: true of every bin this index computes or finds (see [`assert_a_bin`]).
    #[inline(always)]
    unsafe fn head_word(&self, bin: usize) -> Option<Chunk> {
        debug_assert!(bin < BIN_SLOTS);
        // SAFETY: forwarded from the caller.
        unsafe { *self.heads.get_unchecked(bin) }
    }

    /// Bin `bin`'s head word, to write.
    ///
    /// # Safety
    /// As for [`Bins::head_word`].
    #[inline(always)]
    unsafe fn head_word_mut(&mut self, bin: usize) -> &mut Option<Chunk> {
        debug_assert!(bin < BIN_SLOTS);
        // SAFETY: forwarded from the caller.
        unsafe { self.heads.get_unchecked_mut(bin) }
    }

    /// The word that points at `chunk` from before it in `bin`'s list: its predecessor's
    /// `next` link, or the bin's head when `prev` is the sink. Chosen without a branch.
    ///
    /// # Safety
    /// `bin < BIN_SLOTS` (the bin of a listed chunk).
    #[inline(always)]
    unsafe fn link_to(&mut self, prev: Chunk, bin: usize) -> *mut Chunk {
        // `Option<Chunk>` is a nullable pointer with `Chunk`'s layout: writing a chunk into the
        // slot makes it `Some`.
        // SAFETY: forwarded from the caller.
        let head: *mut Chunk = (unsafe { self.head_word_mut(bin) } as *mut Option<Chunk>).cast();
        select_unpredictable(Some(prev) == self.sink, head, prev.next_link())
    }

    /// Files a free chunk of `size` bytes at the head of its bin.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes that is in no list.
    #[inline(always)]
    pub(crate) unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.insert_in::<false>(chunk, bin_of(size)) }
    }

    /// Files a free chunk at the head of `bin`. `MOVED` says the chunk's entry left another bin
    /// for this one (a split's rest, or a merge, that changed bins): on wasm32 such a filing
    /// then writes the bitmap's summary without a branch, as the new bin's word, a sparse one
    /// of large chunks, is often empty, and the branch to mark it would be a metered block of
    /// its own (crates/heapworks/TUNING.md).
    ///
    /// # Safety
    /// `chunk` is a free chunk that is in no list, of a size that maps to `bin`.
    #[inline(always)]
    unsafe fn insert_in<const MOVED: bool>(&mut self, chunk: Chunk, bin: usize) {
        // SAFETY: a size's bin is below BIN_COUNT (`bin_of`'s promise).
        unsafe { assert_a_bin(bin) };
        // SAFETY: a free chunk exists, so a region was claimed and the sink adopted. `chunk` is
        // a free chunk, `old_head` a free chunk or the sink, so both carry link words. `bin` is
        // a size's bin, asserted above.
        unsafe {
            let sink = self.sink();
            let old_head = self.head_word(bin).unwrap_or(sink);
            chunk.set_next_free(old_head);
            chunk.set_prev_free(sink);
            old_head.set_prev_free(chunk);
            *self.head_word_mut(bin) = Some(chunk);
        }
        // Marked whether or not the bin had a chunk before: a test of that is a coin toss
        // under a random workload (crates/heapworks/TUNING.md, "The bitmap written without a
        // branch on the list").
        if MOVED && cfg!(target_arch = "wasm32") {
            self.occupancy.set_with_summary(bin);
        } else {
            self.occupancy.set(bin);
        }
    }

    /// Takes a free chunk out of `bin`'s list.
    ///
    /// # Safety
    /// `chunk` is a free chunk filed in `bin`.
    #[inline(always)]
    pub(crate) unsafe fn unlink(&mut self, chunk: Chunk, bin: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlink_entry::<false>(chunk, bin) }
    }

    /// Takes a free chunk out of `bin`'s list; `AT_HEAD` promises it is the list's first chunk,
    /// which spares choosing the word that points at it and reading the head back.
    ///
    /// # Safety
    /// `chunk` is a free chunk filed in `bin`, and its first chunk if `AT_HEAD`.
    #[inline(always)]
    unsafe fn unlink_entry<const AT_HEAD: bool>(&mut self, chunk: Chunk, bin: usize) {
        // SAFETY: `chunk` is filed in `bin`, so `bin` is a bin.
        unsafe { assert_a_bin(bin) };
        // SAFETY: `chunk` is listed, so its neighbours are listed chunks or the sink.
        let emptied = unsafe {
            let next = chunk.next_free();
            if AT_HEAD {
                // The bin's next request starts by reading `next`'s header; the `prev` write
                // below loads that line only if the two share it, which one chunk in four's
                // do not (crates/heapworks/TUNING.md).
                next.prefetch_after(0);
                *self.head_word_mut(bin) = Some(next);
                next.set_prev_free(self.sink());
                next == self.sink()
            } else {
                let prev = chunk.prev_free();
                next.set_prev_free(prev);
                self.link_to(prev, bin).write(next);
                if KEEPS_VICTIM {
                    (Some(prev) == self.sink) & (next == self.sink())
                } else {
                    self.head_word(bin) == self.sink
                }
            }
        };
        // Without a branch: whether a take empties its bin is a coin toss under a random
        // workload, and on wasm32 a branch is a metered block (crates/heapworks/TUNING.md).
        self.occupancy.clear_if(bin, emptied);
    }

    /// The entry of the free chunk `from`, filed in `bin`, now stands for a free chunk of
    /// `new_size` bytes at `to`: moved in place when the bin stays the same, re-filed otherwise.
    /// Only link words are written; the caller writes `to`'s header and footer afterwards.
    ///
    /// # Safety
    /// `from` is filed in `bin`; `to`'s link words may overlap `from`'s header but not its links
    /// unless `to == from`.
    #[inline(always)]
    pub(crate) unsafe fn refile_in(&mut self, from: Chunk, bin: usize, to: Chunk, new_size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.refile_entry::<false>(from, bin, to, new_size) }
    }

    /// [`Bins::refile_in`] for `from` at the head of its list (as [`Bins::good_fit`]
    /// finds it).
    ///
    /// # Safety
    /// As for [`Bins::refile_in`], and `from` is the first chunk of `bin`'s list.
    #[inline(always)]
    pub(crate) unsafe fn refile_head(
        &mut self,
        from: Chunk,
        bin: usize,
        to: Chunk,
        new_size: usize,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe { self.refile_entry::<true>(from, bin, to, new_size) }
    }

    /// Takes the first chunk of `bin`'s list out.
    ///
    /// # Safety
    /// `chunk` is the first chunk of `bin`'s list.
    #[inline(always)]
    pub(crate) unsafe fn unlink_head(&mut self, chunk: Chunk, bin: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { self.unlink_entry::<true>(chunk, bin) }
    }

    /// The free chunk `chunk`, filed for `old_size` bytes, now has `new_size` bytes (it grew
    /// or shrank where it stands): re-filed only if its bin changed.
    ///
    /// # Safety
    /// `chunk` is filed in the bin of `old_size`.
    #[inline(always)]
    pub(crate) unsafe fn resize_entry(&mut self, chunk: Chunk, old_size: usize, new_size: usize) {
        let (old_bin, new_bin) = (bin_of(old_size), bin_of(new_size));
        if new_bin != old_bin {
            // SAFETY: forwarded from the caller; the chunk is out of every list when re-filed.
            unsafe {
                self.unlink(chunk, old_bin);
                self.insert_in::<false>(chunk, new_bin);
            }
        }
    }

    /// [`Bins::refile_in`], knowing whether `from` heads its list.
    ///
    /// # Safety
    /// As for [`Bins::refile_in`], and `from` heads its list if `AT_HEAD`.
    #[inline(always)]
    unsafe fn refile_entry<const AT_HEAD: bool>(
        &mut self,
        from: Chunk,
        bin: usize,
        to: Chunk,
        new_size: usize,
    ) {
        // SAFETY: forwarded from the caller; `from`'s links are read before `to`'s are written.
        unsafe {
            let new_bin = bin_of(new_size);
            if new_bin != bin {
                self.unlink_entry::<AT_HEAD>(from, bin);
                self.insert_in::<true>(to, new_bin);
            } else {
                self.relocate::<AT_HEAD>(from, to, bin);
            }
        }
    }

    /// Moves the list entry of `from` (filed in `bin`, at its head if `AT_HEAD`) to `to`
    /// (which may be `from`).
    ///
    /// # Safety
    /// As for [`Bins::refile_entry`].
    #[inline(always)]
    unsafe fn relocate<const AT_HEAD: bool>(&mut self, from: Chunk, to: Chunk, bin: usize) {
        // SAFETY: `from` is filed in `bin`, so `bin` is a bin.
        unsafe { assert_a_bin(bin) };
        // SAFETY: `from` is listed, so its neighbours are listed chunks or the sink; its links
        // are read before `to`'s are written.
        unsafe {
            let next = from.next_free();
            to.set_next_free(next);
            next.set_prev_free(to);
            if AT_HEAD {
                to.set_prev_free(self.sink());
                *self.head_word_mut(bin) = Some(to);
            } else {
                let prev = from.prev_free();
                to.set_prev_free(prev);
                self.link_to(prev, bin).write(to);
            }
        }
    }

    /// [`Bins::find`]'s last step, for when no bin above the request's has a chunk: the
    /// first chunk of its own bin that holds `size` bytes.
    ///
    /// # Safety
    /// The index is consistent.
    pub(crate) unsafe fn last_resort(&self, size: usize) -> Option<(Chunk, usize)> {
        // SAFETY: forwarded from the caller.
        unsafe { self.first_fit(bin_of(size), |_, chunk_size| chunk_size >= size) }
    }

    /// The head of the first non-empty bin whose every chunk holds `size` bytes, and that bin:
    /// [`Bins::find`] for a request below [`BEST_FIT_FROM`] when a larger chunk exists.
    #[inline(always)]
    pub(crate) fn good_fit(&self, size: usize) -> Option<(Chunk, usize)> {
        let bin = self.occupancy.first_at_or_above(ceil_bin_of(size))?;
        debug_assert!(
            // SAFETY: the bitmap names slots below `BIN_SLOTS`.
            self.listed(unsafe { self.head_word(bin) }).is_some(),
            "bin {bin} marked but empty"
        );
        // SAFETY: a bin marked in the bitmap heads a list of at least one chunk (this module's
        // invariant, kept by every list operation and verified by the checker).
        // The bitmap names slots below `BIN_SLOTS`.
        Some((unsafe { self.head_word(bin).unwrap_unchecked() }, bin))
    }

    /// The smallest chunk of at least `size` bytes among the first [`BEST_FIT_SCAN`] of `bin`,
    /// the request's own bin, with that bin.
    ///
    /// # Safety
    /// The index is consistent; `bin` is `bin_of(size)`.
    #[inline(never)]
    unsafe fn best_fit_in_own_bin(&self, size: usize, bin: usize) -> Option<(Chunk, usize)> {
        let mut best: Option<(Chunk, usize)> = None;
        // SAFETY: a size's bin is below BIN_COUNT (`bin_of`'s promise).
        let mut cursor = unsafe { self.head_word(bin) };
        for _ in 0..BEST_FIT_SCAN {
            let Some(chunk) = self.listed(cursor) else {
                break;
            };
            // SAFETY: listed chunks are free chunks with valid headers and links.
            let chunk_size = unsafe { chunk.size() };
            if chunk_size >= size && best.is_none_or(|(_, best_size)| chunk_size < best_size) {
                best = Some((chunk, chunk_size));
            }
            // SAFETY: as above.
            cursor = Some(unsafe { chunk.next_free() });
        }
        best.map(|(chunk, _)| (chunk, bin))
    }

    /// The first chunk, scanning bins upward from `first_bin`, that `fits` accepts, with its
    /// bin. `fits` gets the chunk and its size. This is the slow path: it walks lists.
    ///
    /// # Safety
    /// The index is consistent.
    #[cold]
    pub(crate) unsafe fn first_fit(
        &self,
        first_bin: usize,
        mut fits: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<(Chunk, usize)> {
        let mut bin = self.occupancy.first_at_or_above(first_bin)?;
        loop {
            // SAFETY: the bitmap names slots below `BIN_SLOTS`.
            let mut cursor = unsafe { self.head_word(bin) };
            while let Some(chunk) = self.listed(cursor) {
                // SAFETY: listed chunks are free chunks with valid headers and links.
                let size = unsafe { chunk.size() };
                if fits(chunk, size) {
                    return Some((chunk, bin));
                }
                // SAFETY: as above.
                cursor = Some(unsafe { chunk.next_free() });
            }
            bin = self.occupancy.first_at_or_above(bin + 1)?;
        }
    }

    /// Calls `f` with every free chunk and its size, bin by bin. O(free chunks + bins).
    ///
    /// # Safety
    /// The index is consistent.
    pub(crate) unsafe fn for_each(&self, mut f: impl FnMut(Chunk, usize)) {
        let mut next_bin = self.occupancy.first_at_or_above(0);
        while let Some(bin) = next_bin {
            // SAFETY: the bitmap names slots below `BIN_SLOTS`.
            let mut cursor = unsafe { self.head_word(bin) };
            while let Some(chunk) = self.listed(cursor) {
                // SAFETY: listed chunks are free chunks with valid headers and links.
                unsafe {
                    f(chunk, chunk.size());
                    cursor = Some(chunk.next_free());
                }
            }
            next_bin = self.occupancy.first_at_or_above(bin + 1);
        }
    }

    /// The size of the largest free chunk, if any. Walks the highest non-empty bin only.
    ///
    /// # Safety
    /// The index is consistent.
    pub(crate) unsafe fn largest(&self) -> Option<usize> {
        let bin = self.occupancy.last()?;
        let mut largest = 0;
        // SAFETY: the bitmap names slots below `BIN_SLOTS`.
        let mut cursor = unsafe { self.head_word(bin) };
        while let Some(chunk) = self.listed(cursor) {
            // SAFETY: listed chunks are free chunks with valid headers and links.
            unsafe {
                largest = largest.max(chunk.size());
                cursor = Some(chunk.next_free());
            }
        }
        Some(largest)
    }

    /// The head of `bin`'s list (for the checker).
    pub(crate) fn head(&self, bin: usize) -> Option<Chunk> {
        self.listed(self.heads[bin])
    }

    /// The chunk after `chunk` in its list (for the checker).
    ///
    /// # Safety
    /// `chunk` is a free chunk.
    pub(crate) unsafe fn next_of(&self, chunk: Chunk) -> Option<Chunk> {
        // SAFETY: forwarded from the caller.
        self.listed(Some(unsafe { chunk.next_free() }))
    }

    /// The chunk before `chunk` in its list (for the checker).
    ///
    /// # Safety
    /// `chunk` is a free chunk.
    pub(crate) unsafe fn prev_of(&self, chunk: Chunk) -> Option<Chunk> {
        // SAFETY: forwarded from the caller.
        self.listed(Some(unsafe { chunk.prev_free() }))
    }

    /// Whether the bitmap has `bin` marked non-empty, or, for `bin >= SUMMARY_BITS`, summary
    /// bit `bin - SUMMARY_BITS` set (see [`Bitmap::is_set`]; for the checker).
    pub(crate) fn is_marked(&self, bin: usize) -> bool {
        self.occupancy.is_set(bin)
    }
}

/// Tells the compiler that `bin` indexes the lists and the bitmap, so they need no bounds
/// check: a release build of the allocator has no panic path.
///
/// # Safety
/// `bin < BIN_SLOTS`: true of every bin this index computes (`bin_of` gives less than
/// `BIN_COUNT`) or finds (the bitmap names slots below `BIN_SLOTS`), and so of every bin a
/// chunk is filed in.
#[inline(always)]
unsafe fn assert_a_bin(bin: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { core::hint::assert_unchecked(bin < BIN_SLOTS) }
}

impl Bins {
    /// Makes the free chunk `chunk` of `size` bytes the victim, or `None` when the victim
    /// leaves the index.
    #[inline(always)]
    fn set_victim(&mut self, chunk: Option<Chunk>, size: usize) {
        self.victim = chunk;
        self.victim_size = size;
    }

    /// Makes `chunk`, a free chunk of `size` bytes in no list, the victim; the old victim, if
    /// any, joins the lists (an old top with its footer written, which it had in the state).
    ///
    /// # Safety
    /// As for [`Bins::insert`].
    #[inline(always)]
    unsafe fn replace_victim(&mut self, chunk: Chunk, size: usize) {
        if let Some(old) = self.victim {
            // SAFETY: the victim is a free chunk of `victim_size` bytes in no list, so its last
            // word is its own.
            unsafe {
                if KEEPS_TOP {
                    old.footer_word(self.victim_size).write(self.victim_size);
                }
                Bins::insert(self, old, self.victim_size);
            }
        }
        self.set_victim(Some(chunk), size);
    }

    /// The victim's entry moves to `to`, of `new_size` bytes. The top's size is not written
    /// here: it is the top's footer, which the heap writes next ([`Index::footer_word`]).
    #[inline(always)]
    fn move_victim(&mut self, to: Chunk, new_size: usize) {
        if KEEPS_TOP {
            self.victim = Some(to);
        } else {
            self.set_victim(Some(to), new_size);
        }
    }

    /// Overwrites the victim's two words, the top's on wasm32 (a checker test's corruption).
    #[cfg(all(test, heapworks_top))]
    pub(crate) fn forge_top(&mut self, top: Option<Chunk>, size: usize) {
        self.set_victim(top, size);
    }

    /// Whether `chunk` is the victim.
    #[inline(always)]
    fn is_victim(&self, chunk: Chunk) -> bool {
        self.victim == Some(chunk)
    }

    /// The victim with its slot, if it holds `size` bytes.
    #[inline(always)]
    fn victim_for(&self, size: usize) -> Option<(Chunk, usize)> {
        // `victim_size` is 0 without a victim, below every request.
        (self.victim_size >= size).then_some(())?;
        Some((self.victim?, VICTIM))
    }

    /// The lists' good fit for `size` bytes or the victim (the top on wasm32), whichever is
    /// smaller: what a large request (and every caller of [`Bins::find`], and on wasm32 every
    /// request) gets, since fragmentation strands large blocks.
    #[inline(always)]
    fn tighter_fit(&self, size: usize) -> Option<(Chunk, usize)> {
        let listed = self.good_fit(size);
        if let Some((head, _)) = listed {
            // SAFETY: a list head is a free chunk with a valid header.
            if unsafe { head.size() } <= self.victim_size || self.victim_size < size {
                return listed;
            }
        }
        self.victim_for(size)
    }

    /// A chunk for `size` bytes that is cheap to find, and its slot, in this order: the head
    /// of the request's own bin if it fits (an exact fit in the exact bins), the victim if it
    /// fits and is at most [`VICTIM_FIRST_MAX`], the head of the first non-empty bin above, a
    /// larger victim. Cost: the bin formula and one bit test, then two compares for the
    /// victim, then the bitmap search (see the module docs).
    #[inline(always)]
    fn good_fit_or_victim(&self, size: usize) -> Option<(Chunk, usize)> {
        let bin = bin_of(size);
        // SAFETY: a size's bin is below BIN_COUNT (`bin_of`'s promise).
        unsafe { assert_a_bin(bin) };
        if self.occupancy.contains(bin) {
            // SAFETY: a marked bin heads a list of at least one free chunk (this module's
            // invariant, verified by the checker), whose header is valid.
            unsafe {
                let head = self.head_word(bin).unwrap_unchecked();
                if head.size() >= size {
                    return Some((head, bin));
                }
            }
        }
        let victim = self.victim_for(size);
        if victim.is_some() && self.victim_size <= VICTIM_FIRST_MAX {
            return victim;
        }
        // Every chunk of a bin above the request's holds `size` bytes.
        let Some(above) = self.occupancy.first_at_or_above(bin + 1) else {
            return victim;
        };
        // SAFETY: as above: a marked bin heads a list (and the bitmap names slots below
        // `BIN_SLOTS`).
        Some((unsafe { self.head_word(above).unwrap_unchecked() }, above))
    }

    /// A free chunk of at least `size` bytes and its slot, still filed (see the module docs):
    /// for a large request, the bounded best fit in its own bin; then the smaller of the good
    /// fit in the lists and the victim; then the walk of the request's own bin.
    ///
    /// # Safety
    /// The index is consistent.
    #[inline(always)]
    pub(crate) unsafe fn find(&self, size: usize) -> Option<(Chunk, usize)> {
        if size >= BEST_FIT_FROM {
            // Only a marked bin has chunks to compare: most large requests find their own bin
            // empty, and skip the call.
            let bin = bin_of(size);
            // SAFETY: a size's bin is below BIN_COUNT (`bin_of`'s promise).
            unsafe { assert_a_bin(bin) };
            if self.occupancy.contains(bin) {
                // SAFETY: forwarded from the caller.
                if let Some(best) = unsafe { self.best_fit_in_own_bin(size, bin) } {
                    return Some(best);
                }
            }
        }
        match self.tighter_fit(size) {
            Some(found) => Some(found),
            // SAFETY: forwarded from the caller.
            None => unsafe { self.last_resort(size) },
        }
    }
}

impl Index for Bins {
    const EMPTY: Bins = Bins::new();
    const GOOD_FIT_BELOW: usize = BEST_FIT_FROM;

    unsafe fn adopt_sink(&mut self, sink: Chunk) {
        // SAFETY: forwarded from the caller.
        unsafe { Bins::adopt_sink(self, sink) }
    }

    #[inline(always)]
    fn slot_of(size: usize) -> usize {
        bin_of(size)
    }

    #[inline(always)]
    unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { Bins::insert(self, chunk, size) }
    }

    #[inline(always)]
    unsafe fn unlink(&mut self, chunk: Chunk, slot: usize) {
        // The victim, or on wasm32 the top.
        if self.is_victim(chunk) {
            self.set_victim(None, 0);
        } else {
            // SAFETY: forwarded from the caller; a listed chunk's slot is its bin.
            unsafe { Bins::unlink(self, chunk, slot) }
        }
    }

    #[inline(always)]
    unsafe fn unlink_not_top(&mut self, chunk: Chunk, slot: usize) {
        // SAFETY: forwarded from the caller; a chunk that is not the top is listed on wasm32.
        unsafe {
            if KEEPS_TOP {
                Bins::unlink(self, chunk, slot);
            } else {
                Index::unlink(self, chunk, slot);
            }
        }
    }

    #[inline(always)]
    unsafe fn unlink_head(&mut self, chunk: Chunk, slot: usize) {
        if slot == VICTIM {
            self.set_victim(None, 0);
        } else {
            // SAFETY: `good_fit` returns the victim or the first chunk of its bin.
            unsafe { Bins::unlink_head(self, chunk, slot) }
        }
    }

    #[inline(always)]
    unsafe fn refile_in(&mut self, from: Chunk, slot: usize, to: Chunk, new_size: usize) {
        if self.is_victim(from) {
            self.move_victim(to, new_size);
        } else {
            // SAFETY: forwarded from the caller.
            unsafe { Bins::refile_in(self, from, slot, to, new_size) }
        }
    }

    #[inline(always)]
    unsafe fn refile_head(&mut self, from: Chunk, slot: usize, to: Chunk, new_size: usize) {
        if slot == VICTIM {
            self.move_victim(to, new_size);
        } else if !KEEPS_VICTIM {
            // SAFETY: `good_fit` returns the first chunk of its bin.
            unsafe { Bins::refile_head(self, from, slot, to, new_size) }
        } else {
            // The rest of a chunk that a small request split becomes the victim.
            // SAFETY: `good_fit` returns the first chunk of its bin, whose links are read as it
            // leaves its list, before any other entry is written.
            unsafe {
                Bins::unlink_head(self, from, slot);
                self.replace_victim(to, new_size);
            }
        }
    }

    #[inline(always)]
    unsafe fn resize_entry(&mut self, chunk: Chunk, old_size: usize, new_size: usize) {
        // A chunk resized where it stands has a chunk after it: it is never the top.
        if KEEPS_VICTIM && self.is_victim(chunk) {
            self.victim_size = new_size;
        } else {
            // SAFETY: forwarded from the caller.
            unsafe { Bins::resize_entry(self, chunk, old_size, new_size) }
        }
    }

    #[inline(always)]
    fn good_fit(&mut self, size: usize) -> Option<(Chunk, usize)> {
        if KEEPS_VICTIM {
            self.good_fit_or_victim(size)
        } else {
            self.tighter_fit(size)
        }
    }

    #[inline(always)]
    unsafe fn search(&mut self, size: usize) -> Option<(Chunk, usize)> {
        // SAFETY: forwarded from the caller.
        unsafe {
            if size >= BEST_FIT_FROM {
                // With its own bin empty, a chunk that fits lies in a bin the good fit looks
                // at, or nowhere: the last resort would walk nothing, and on wasm32 its answer
                // would come back through a stack frame in linear memory, a page Gear charges.
                if !self.occupancy.contains(bin_of(size)) {
                    return self.tighter_fit(size);
                }
                Bins::find(self, size)
            } else {
                // `good_fit` looked at the lists above the request's bin and at the victim.
                self.last_resort(size)
            }
        }
    }

    #[inline(always)]
    unsafe fn find(&mut self, size: usize) -> Option<(Chunk, usize)> {
        // SAFETY: forwarded from the caller.
        unsafe { Bins::find(self, size) }
    }

    unsafe fn first_fit(
        &mut self,
        min_size: usize,
        mut fits: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<(Chunk, usize)> {
        // SAFETY: forwarded from the caller.
        let listed = unsafe { Bins::first_fit(self, bin_of(min_size), &mut fits) };
        listed.or_else(|| {
            self.victim_for(min_size)
                .filter(|&(victim, _)| fits(victim, self.victim_size))
        })
    }

    unsafe fn for_each(&self, mut f: impl FnMut(Chunk, usize)) {
        // SAFETY: forwarded from the caller.
        unsafe { Bins::for_each(self, &mut f) };
        if let Some(victim) = self.victim {
            f(victim, self.victim_size);
        }
    }

    unsafe fn largest(&self) -> Option<usize> {
        // SAFETY: forwarded from the caller.
        let listed = unsafe { Bins::largest(self) };
        let victim = self.victim.map(|_| self.victim_size);
        listed.max(victim)
    }

    fn is_top(&self, chunk: Chunk) -> bool {
        KEEPS_TOP && self.is_victim(chunk)
    }

    fn top(&self) -> Option<(Chunk, usize)> {
        let top = self.victim.filter(|_| KEEPS_TOP)?;
        Some((top, self.victim_size))
    }

    #[inline(always)]
    unsafe fn set_top(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe {
            if KEEPS_TOP {
                self.replace_victim(chunk, size);
            } else {
                Bins::insert(self, chunk, size);
            }
        }
    }

    #[inline(always)]
    fn is_top_slot(slot: usize) -> bool {
        KEEPS_TOP && slot == VICTIM
    }

    #[inline(always)]
    unsafe fn footer_word(&mut self, chunk: Chunk, size: usize, top: bool) -> *mut usize {
        // SAFETY: forwarded from the caller.
        let in_chunk = unsafe { chunk.footer_word(size) };
        // Without a branch of its own: a metered block on wasm32.
        select_unpredictable(KEEPS_TOP && top, &raw mut self.victim_size, in_chunk)
    }

    unsafe fn check_filed(&self, chunk: Chunk, size: usize) -> Result<(), Corruption> {
        if self.is_victim(chunk) {
            return self.check_victim(size);
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.check_links(chunk, size) }
    }

    fn tally(&self, limit: usize) -> Result<Option<(usize, usize)>, Corruption> {
        self.tally_with_victim(limit)
    }

    fn files(&self, chunk: Chunk, size: usize, limit: usize) -> bool {
        self.is_victim(chunk) || self.is_listed(chunk, bin_of(size), limit)
    }

    fn diagnose(&self, walked: &Walked) -> Corruption {
        self.diagnose_lost(walked)
    }
}
