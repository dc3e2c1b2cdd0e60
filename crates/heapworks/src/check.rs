//! The heap checker: walks every region chunk by chunk and verifies every invariant stated in
//! [`crate::chunk`], [`crate::region`], [`crate::heap`] and [`crate::stats`], and has the free
//! index verify its own (see [`crate::index`]; the bins' checks are in `index/bins/check.rs`).
//!
//! What it verifies, in this order (the first violation is returned):
//! 1. Each region: its record chunk, then every chunk up to the sentinel (size in bounds, no
//!    stray bits, `PREV_IN_USE` matching the chunk before, no two free chunks adjacent, a free
//!    chunk's footer equal to its size, or for the index's top its end at the sentinel, its
//!    index entry consistent with its neighbours'), then the sentinel.
//! 2. The free index: its own invariants, and that it files exactly the free chunks the walk
//!    found (as many, and the same ones: a sum of a bijective mix of their addresses must
//!    match too, so an entry swapped for a chunk that is not free cannot hide behind a
//!    matching count). On a mismatch a second, slower pass names the chunk: a free chunk that
//!    is not filed, or an entry in excess.
//! 3. The statistics: bytes in use and managed equal the walk's; with feature `counters`,
//!    `in_use <= peak_in_use <= managed`, and allocations minus frees equals the number of
//!    allocated chunks (every successful allocation makes one chunk, `allocate_run` counts
//!    each block it makes, every free removes one, and a realloc, in place or moved, leaves
//!    the number unchanged and counts neither). The realloc count has no such invariant.
//!
//! It runs in O(chunks + bins) on a sound heap with the default index (a tree index adds a
//! search per distinct size); only the diagnosis of a lost chunk costs more, and only on a
//! corrupt heap. It trusts nothing it reads: sizes are bounded by the region before they are
//! followed, null links are reported rather than followed, and the index's walks are bounded
//! by the number of free chunks found, so a corrupt heap cannot make it loop or read outside
//! the regions (beyond the first words of a chunk a corrupt link points at).

use core::ptr::{self, NonNull};

use crate::chunk::{Chunk, IN_USE, MIN_CHUNK, PREV_IN_USE, SIZE_MASK};
use crate::error::{Corruption, CorruptionKind};
use crate::index::{mix, FreeIndex, Walked};
use crate::region::{first_chunk_addr, RegionRecord, RECORD_CHUNK};
use crate::Heap;

/// What the walk of all regions found.
#[derive(Default)]
struct Tally {
    free_chunks: usize,
    free_bytes: usize,
    in_use_chunks: usize,
    in_use_bytes: usize,
    /// The wrapping sum of [`mix`] over the free chunks' addresses.
    free_fingerprint: usize,
}

fn fail<T>(addr: usize, kind: CorruptionKind) -> Result<T, Corruption> {
    crate::index::fault(addr, kind)
}

impl<I: FreeIndex> Heap<I> {
    /// Verifies every invariant of the heap and returns the first violation found, with the
    /// address involved and, for a fault of the default index, the bin (see [`Corruption`]).
    ///
    /// Verified: every region's chunks (sizes, flags, footers, no two free chunks adjacent) and
    /// sentinel; every free chunk filed consistently in the free index, and nothing else (with
    /// the default index: exactly the list of its bin, and every occupancy and summary bit of
    /// the bitmap); the statistics against the walk. O(chunks + bins) on a sound heap with the
    /// default index.
    pub fn check(&self) -> Result<(), Corruption> {
        let mut tally = Tally::default();
        for record in self.regions() {
            self.check_region(record, &mut tally)?;
        }
        let filed = self.index.tally(tally.free_chunks)?;
        if filed != Some((tally.free_chunks, tally.free_fingerprint)) {
            return Err(self.index.diagnose(&Walked {
                free_chunks: tally.free_chunks,
                regions: self.regions,
            }));
        }
        self.check_stats(&tally)
    }

    /// Walks one region from its record chunk to its sentinel.
    fn check_region(
        &self,
        record: NonNull<RegionRecord>,
        tally: &mut Tally,
    ) -> Result<(), Corruption> {
        // SAFETY: region records are valid while the heap lives.
        let region = unsafe { record.as_ref() };
        let first = first_chunk_addr(region);
        let sentinel = region.sentinel;
        // SAFETY: the record is the payload of its record chunk.
        let record_chunk = unsafe { Chunk::from_payload(record.cast()) };
        // SAFETY: the record chunk's header precedes the record, inside the region.
        let record_header = unsafe { record_chunk.header() };
        if record_header != RECORD_CHUNK | IN_USE | PREV_IN_USE
            || sentinel.addr() < first + MIN_CHUNK
            || sentinel.addr() >= region.limit
            || record_chunk.addr() < region.base
        {
            return fail(record_chunk.addr(), CorruptionKind::BadRegion);
        }
        let mut chunk = record_chunk;
        let mut prev_in_use = true;
        // SAFETY: the record chunk's size was verified.
        chunk = unsafe { chunk.next() };
        while chunk != sentinel {
            // SAFETY: `chunk` is before the sentinel, so its header is inside the region; its size
            // is checked against the sentinel before it is followed.
            let size = unsafe { self.check_chunk(chunk, sentinel.addr(), prev_in_use, tally)? };
            // SAFETY: as above.
            prev_in_use = unsafe { chunk.is_in_use() };
            // SAFETY: `size` keeps the next chunk at or before the sentinel.
            chunk = unsafe { chunk.after(size) };
        }
        // SAFETY: the sentinel's header is inside the region.
        let sentinel_header = unsafe { sentinel.header() };
        let expected = IN_USE | if prev_in_use { PREV_IN_USE } else { 0 };
        if sentinel_header != expected {
            return fail(sentinel.addr(), CorruptionKind::BadSentinel);
        }
        Ok(())
    }

    /// Checks one chunk and returns its size.
    ///
    /// # Safety
    /// `chunk`'s header lies inside a region, before its sentinel at `sentinel`.
    unsafe fn check_chunk(
        &self,
        chunk: Chunk,
        sentinel: usize,
        prev_in_use: bool,
        tally: &mut Tally,
    ) -> Result<usize, Corruption> {
        let addr = chunk.addr();
        // SAFETY: forwarded from the caller.
        let header = unsafe { chunk.header() };
        let size = header & SIZE_MASK;
        let stray_bits = header & !SIZE_MASK & !(IN_USE | PREV_IN_USE);
        if size < MIN_CHUNK || stray_bits != 0 || size > sentinel - addr {
            return fail(addr, CorruptionKind::BadSize);
        }
        if (header & PREV_IN_USE != 0) != prev_in_use {
            return fail(addr, CorruptionKind::BadPrevFlag);
        }
        if header & IN_USE != 0 {
            tally.in_use_chunks += 1;
            tally.in_use_bytes += size;
            return Ok(size);
        }
        if !prev_in_use {
            return fail(addr, CorruptionKind::AdjacentFree);
        }
        if self.index.is_top(chunk) {
            // The top's footer is in the index (checked there against `size`).
            if addr + size != sentinel {
                return fail(addr, CorruptionKind::BadTop);
            }
        // SAFETY: the size was bounded by the sentinel, so the footer is inside the region.
        } else if unsafe { chunk.footer() } != size {
            return fail(addr, CorruptionKind::BadFooter);
        }
        // SAFETY: a free chunk of at least MIN_CHUNK bytes inside the region.
        unsafe { self.index.check_filed(chunk, size)? };
        tally.free_chunks += 1;
        tally.free_bytes += size;
        tally.free_fingerprint = tally.free_fingerprint.wrapping_add(mix(addr));
        Ok(size)
    }

    /// Checks the statistics against the walk.
    fn check_stats(&self, tally: &Tally) -> Result<(), Corruption> {
        let c = &self.counters;
        let bytes_agree =
            c.in_use == tally.in_use_bytes && c.managed == tally.in_use_bytes + tally.free_bytes;
        let counts_agree = !cfg!(feature = "counters")
            || (c.in_use <= c.peak_in_use
                && c.peak_in_use <= c.managed
                && c.allocations.wrapping_sub(c.frees) == tally.in_use_chunks as u64);
        if !(bytes_agree && counts_agree) {
            return fail(ptr::from_ref(c).addr(), CorruptionKind::BadStats);
        }
        Ok(())
    }
}

/// Each test builds a small sound heap, corrupts exactly one thing through crate-internal
/// access (unless it says otherwise), and asserts the exact violation `check` reports.
#[cfg(test)]
mod tests {
    extern crate std;

    use core::alloc::Layout;
    use std::format;
    use std::vec;
    use std::vec::Vec;

    use super::*;
    use crate::bins::{bin_of, BIN_COUNT};
    use crate::bitmap::{fault, BIN_SLOTS, BITS, SUMMARY_BITS, WORDS};
    use crate::chunk::{GRANULE, WORD};
    use crate::index::Index;

    /// Payload bytes of each fixture block.
    const BLOCK: usize = 64;

    /// A heap over 4 KiB holding five blocks A..E of `BLOCK` bytes in address order, then the
    /// free rest of the region (the tail); B is free, between the live A and C.
    struct Fixture {
        heap: Heap,
        blocks: [NonNull<u8>; 5],
        _memory: Vec<u128>,
    }

    fn fixture() -> Fixture {
        let mut memory = vec![0u128; 256];
        let mut heap = Heap::new();
        // SAFETY: `memory` outlives the heap (both live in the fixture) and nothing else uses it.
        unsafe { heap.claim(memory.as_mut_ptr().cast(), memory.len() * 16) }.unwrap();
        let layout = Layout::from_size_align(BLOCK, 8).unwrap();
        let blocks = [(); 5].map(|()| heap.allocate(layout).unwrap());
        assert!(blocks.windows(2).all(|pair| pair[0] < pair[1]));
        // SAFETY: B is a live block of this heap.
        unsafe { heap.free(blocks[1]) };
        heap.check().expect("the fixture is sound");
        Fixture {
            heap,
            blocks,
            _memory: memory,
        }
    }

    impl Fixture {
        fn chunk(&self, block: usize) -> Chunk {
            // SAFETY: every fixture block came from this heap.
            unsafe { Chunk::from_payload(self.blocks[block]) }
        }

        /// The free chunk after E, which holds the rest of the region.
        fn tail(&self) -> Chunk {
            // SAFETY: E is a live chunk with a valid size.
            unsafe { self.chunk(4).next() }
        }

        /// The bin of the fixture's blocks (B's, when free).
        fn block_bin(&self) -> usize {
            // SAFETY: B is a chunk of this heap.
            bin_of(unsafe { self.chunk(1).size() })
        }

        fn index_addr(&self) -> usize {
            ptr::from_ref(&self.heap.index).addr()
        }

        fn sentinel(&self) -> Chunk {
            let record = self.heap.regions().next().unwrap();
            // SAFETY: region records are valid while the heap lives.
            unsafe { record.as_ref() }.sentinel
        }

        /// Makes the next bitmap `set` flip `bit`, then frees D (between the live C and E, so
        /// it is filed on its own, which sets its bin's bit): D heads the fixture's bin.
        fn flip_bitmap_bit(&mut self, bit: usize) {
            fault::flip_on_next_set(bit);
            // SAFETY: D is a live block of this heap.
            unsafe { self.heap.free(self.blocks[3]) };
            assert!(!fault::pending(), "freeing D set a bit");
        }

        fn assert_fault(&self, addr: usize, bin: Option<usize>, kind: CorruptionKind) {
            assert_eq!(self.heap.check(), Err(Corruption { addr, bin, kind }));
        }
    }

    /// Sets the header of `chunk`.
    fn set_header(chunk: Chunk, header: usize) {
        // SAFETY: the tests pass chunks of a fixture heap.
        unsafe { chunk.set_header(header) }
    }

    fn header(chunk: Chunk) -> usize {
        // SAFETY: the tests pass chunks of a fixture heap.
        unsafe { chunk.header() }
    }

    #[test]
    fn a_sound_heap_passes() {
        let mut fixture = fixture();
        // SAFETY: D is a live block of this heap.
        unsafe { fixture.heap.free(fixture.blocks[3]) };
        fixture.heap.check().unwrap();
        assert!(fixture.heap.index.is_marked(fixture.block_bin()));
        assert!(fixture.heap.index.is_marked(SUMMARY_BITS));
        if WORDS > 1 {
            assert!(!fixture.heap.index.is_marked(SUMMARY_BITS + WORDS - 1));
        }
    }

    #[test]
    fn a_damaged_record_chunk_is_bad_region() {
        let fixture = fixture();
        let record = fixture.heap.regions().next().unwrap();
        // SAFETY: the record is the payload of its record chunk.
        let record_chunk = unsafe { Chunk::from_payload(record.cast()) };
        set_header(record_chunk, header(record_chunk) + GRANULE);
        fixture.assert_fault(record_chunk.addr(), None, CorruptionKind::BadRegion);
    }

    #[test]
    fn a_stray_header_bit_is_bad_size() {
        let fixture = fixture();
        let c = fixture.chunk(2);
        set_header(c, header(c) | crate::chunk::EMBEDDER_TAG);
        fixture.assert_fault(c.addr(), None, CorruptionKind::BadSize);
    }

    #[test]
    fn a_prev_flag_that_calls_a_live_chunk_free_is_bad_prev_flag() {
        let fixture = fixture();
        let d = fixture.chunk(3);
        set_header(d, header(d) & !PREV_IN_USE);
        fixture.assert_fault(d.addr(), None, CorruptionKind::BadPrevFlag);
    }

    #[test]
    fn a_live_chunk_marked_free_beside_a_free_one_is_adjacent_free() {
        let fixture = fixture();
        // C follows the free B, so its PREV_IN_USE is rightly clear; clearing IN_USE makes
        // it a second free chunk right after B.
        let c = fixture.chunk(2);
        set_header(c, header(c) & !IN_USE);
        fixture.assert_fault(c.addr(), None, CorruptionKind::AdjacentFree);
    }

    #[test]
    fn a_wrong_footer_is_bad_footer() {
        let fixture = fixture();
        let b = fixture.chunk(1);
        // SAFETY: B is a free chunk; its footer is its last word.
        unsafe {
            let size = b.size();
            let footer = b.payload().add(size - 2 * WORD).cast::<usize>();
            footer.write(size + GRANULE);
        }
        fixture.assert_fault(b.addr(), None, CorruptionKind::BadFooter);
    }

    #[test]
    fn a_prev_link_its_target_does_not_return_is_bad_link() {
        let fixture = fixture();
        let b = fixture.chunk(1);
        // SAFETY: B is a free chunk; A is a chunk (its payload holds no links).
        unsafe { b.set_prev_free(fixture.chunk(0)) };
        fixture.assert_fault(b.addr(), Some(fixture.block_bin()), CorruptionKind::BadLink);
    }

    #[test]
    fn a_next_link_its_target_does_not_return_is_bad_link() {
        let fixture = fixture();
        let b = fixture.chunk(1);
        // SAFETY: B is a free chunk; C is a chunk (its payload holds no links).
        unsafe { b.set_next_free(fixture.chunk(2)) };
        fixture.assert_fault(b.addr(), Some(fixture.block_bin()), CorruptionKind::BadLink);
    }

    #[test]
    fn a_null_link_is_bad_link_and_not_followed() {
        let fixture = fixture();
        let b = fixture.chunk(1);
        // SAFETY: B is a free chunk; its `next` link is its first payload word.
        unsafe { b.payload().cast::<usize>().write(0) };
        fixture.assert_fault(b.addr(), Some(fixture.block_bin()), CorruptionKind::BadLink);
    }

    #[test]
    fn a_live_chunk_in_a_list_is_bad_link() {
        let mut fixture = fixture();
        let c = fixture.chunk(2);
        // The index files the live C (which overwrites C's first payload words with links and
        // B's `prev` link with C): B's links stay consistent, so only the list walk sees it.
        // SAFETY: C's link words are inside its payload; B is listed in C's bin.
        unsafe { fixture.heap.index.insert(c, c.size()) };
        fixture.assert_fault(c.addr(), Some(fixture.block_bin()), CorruptionKind::BadLink);
    }

    #[test]
    fn a_bit_set_for_an_empty_bin_is_bad_bitmap() {
        let mut fixture = fixture();
        // Bin 0 shares its word with the fixture's bin, so the summary stays right.
        assert_ne!(fixture.block_bin(), 0);
        assert_eq!(fixture.block_bin() / BITS, 0);
        fixture.flip_bitmap_bit(0);
        let index = fixture.index_addr();
        fixture.assert_fault(index, Some(0), CorruptionKind::BadBitmap);
    }

    #[test]
    fn a_bit_clear_for_a_listed_bin_is_bad_bitmap() {
        let mut fixture = fixture();
        let bin = fixture.block_bin();
        fixture.flip_bitmap_bit(bin);
        let d = fixture.chunk(3);
        fixture.assert_fault(d.addr(), Some(bin), CorruptionKind::BadBitmap);
    }

    #[test]
    fn a_spare_slot_bit_is_bad_bitmap() {
        if BIN_COUNT == BIN_SLOTS {
            return;
        }
        let mut fixture = fixture();
        fixture.flip_bitmap_bit(BIN_COUNT);
        let index = fixture.index_addr();
        fixture.assert_fault(index, Some(BIN_COUNT), CorruptionKind::BadBitmap);
    }

    #[test]
    fn a_summary_bit_for_an_empty_word_is_bad_summary() {
        let mut fixture = fixture();
        fixture.flip_bitmap_bit(SUMMARY_BITS + WORDS - 1);
        let index = fixture.index_addr();
        let bin = Some((WORDS - 1) * BITS);
        fixture.assert_fault(index, bin, CorruptionKind::BadSummary);
    }

    #[test]
    fn a_summary_bit_clear_for_a_used_word_is_bad_summary() {
        let mut fixture = fixture();
        fixture.flip_bitmap_bit(SUMMARY_BITS);
        let index = fixture.index_addr();
        fixture.assert_fault(index, Some(0), CorruptionKind::BadSummary);
    }

    #[test]
    fn a_summary_bit_beyond_the_words_is_bad_summary() {
        if WORDS == BITS {
            return;
        }
        let mut fixture = fixture();
        fixture.flip_bitmap_bit(SUMMARY_BITS + WORDS);
        let index = fixture.index_addr();
        fixture.assert_fault(index, Some(WORDS * BITS), CorruptionKind::BadSummary);
    }

    #[test]
    fn a_ring_through_a_list_head_ends_the_walk() {
        let fixture = fixture();
        // B, alone in its list, links to itself both ways: every back link agrees, so only
        // the bound on the list walk stops the checker going round forever.
        let b = fixture.chunk(1);
        // SAFETY: B is a free chunk.
        unsafe {
            b.set_next_free(b);
            b.set_prev_free(b);
        }
        fixture.assert_fault(
            b.addr(),
            Some(fixture.block_bin()),
            CorruptionKind::LostChunk,
        );
    }

    #[test]
    fn a_free_chunk_in_no_list_is_lost() {
        let mut fixture = fixture();
        let b = fixture.chunk(1);
        // The index forgets B. A forgotten chunk's links still name the sink as its
        // predecessor, which the link check catches; only links that form a ring of their own
        // get past it, so B's are made one (two more words).
        // SAFETY: B is a free chunk filed in the index.
        unsafe {
            fixture.heap.index.unlink(b, bin_of(b.size()));
            b.set_next_free(b);
            b.set_prev_free(b);
        }
        let bin = fixture.block_bin();
        fixture.assert_fault(b.addr(), Some(bin), CorruptionKind::LostChunk);
    }

    /// Writes, inside E's payload, the header of a free chunk of B's size, files it, and
    /// returns it: a list entry that is no chunk of the heap.
    fn forge_entry(fixture: &mut Fixture) -> Chunk {
        let e = fixture.chunk(4);
        // SAFETY: E's payload is writable and large enough for a minimal chunk's header and
        // links; the forged chunk's header is at a header slot (one granule in).
        unsafe {
            let forged = e.after(GRANULE);
            let size = fixture.chunk(1).size();
            forged.set_header(size | PREV_IN_USE);
            fixture.heap.index.insert(forged, size);
            forged
        }
    }

    #[test]
    fn an_entry_in_excess_is_lost() {
        let mut fixture = fixture();
        let forged = forge_entry(&mut fixture);
        let bin = fixture.block_bin();
        fixture.assert_fault(forged.addr(), Some(bin), CorruptionKind::LostChunk);
    }

    #[test]
    fn a_forged_entry_cannot_stand_in_for_a_lost_chunk() {
        // Two corruptions that keep the count of listed chunks right: a forged entry, and the
        // tail forgotten by the index (its links made a ring, as above). Only the fingerprint
        // of the listed chunks tells the lists from the free chunks.
        let mut fixture = fixture();
        forge_entry(&mut fixture);
        let tail = fixture.tail();
        // SAFETY: the tail is a free chunk filed in the index.
        let bin = unsafe {
            let size = tail.size();
            Index::unlink(&mut fixture.heap.index, tail, bin_of(size));
            tail.set_next_free(tail);
            tail.set_prev_free(tail);
            // As the top (`--cfg heapworks_top`) its footer was in the index: written here,
            // so that only the loss is wrong.
            tail.footer_word(size).write(size);
            bin_of(size)
        };
        fixture.assert_fault(tail.addr(), Some(bin), CorruptionKind::LostChunk);
    }

    /// The fixture's tail is the index's top (`--cfg heapworks_top`, wasm32's index).
    #[cfg(heapworks_top)]
    fn top_of(fixture: &Fixture) -> (Chunk, usize) {
        let (top, size) = fixture.heap.index.top().expect("the tail is the top");
        assert!(top == fixture.tail());
        (top, size)
    }

    #[cfg(heapworks_top)]
    #[test]
    fn a_top_of_another_size_is_bad_size() {
        let mut fixture = fixture();
        let (top, size) = top_of(&fixture);
        fixture.heap.index.forge_top(Some(top), size + GRANULE);
        fixture.assert_fault(top.addr(), None, CorruptionKind::BadSize);
    }

    #[cfg(heapworks_top)]
    #[test]
    fn a_top_that_does_not_end_the_region_is_bad_top() {
        // B, free and listed, named the top as well.
        let mut fixture = fixture();
        top_of(&fixture);
        let b = fixture.chunk(1);
        // SAFETY: B is a free chunk of this heap.
        let size = unsafe { b.size() };
        fixture.heap.index.forge_top(Some(b), size);
        fixture.assert_fault(b.addr(), None, CorruptionKind::BadTop);
    }

    #[cfg(heapworks_top)]
    #[test]
    fn a_lost_top_is_bad_footer() {
        // Out of the index, the tail is an unfiled chunk whose footer (in the index while it
        // was the top) is stale in memory: the claim's, for the whole region.
        let mut fixture = fixture();
        let (top, _) = top_of(&fixture);
        fixture.heap.index.forge_top(None, 0);
        fixture.assert_fault(top.addr(), None, CorruptionKind::BadFooter);
    }

    #[test]
    fn a_damaged_sentinel_is_bad_sentinel() {
        let fixture = fixture();
        let sentinel = fixture.sentinel();
        // The tail before it is free, so its PREV_IN_USE is rightly clear.
        set_header(sentinel, header(sentinel) | PREV_IN_USE);
        fixture.assert_fault(sentinel.addr(), None, CorruptionKind::BadSentinel);
    }

    fn counters_addr(fixture: &Fixture) -> usize {
        ptr::from_ref(&fixture.heap.counters).addr()
    }

    #[test]
    fn bytes_in_use_off_the_walk_are_bad_stats() {
        let mut fixture = fixture();
        fixture.heap.counters.in_use += GRANULE;
        fixture.heap.counters.peak_in_use += GRANULE;
        let addr = counters_addr(&fixture);
        fixture.assert_fault(addr, None, CorruptionKind::BadStats);
    }

    #[test]
    fn bytes_managed_off_the_walk_are_bad_stats() {
        let mut fixture = fixture();
        fixture.heap.counters.managed += GRANULE;
        let addr = counters_addr(&fixture);
        fixture.assert_fault(addr, None, CorruptionKind::BadStats);
    }

    #[cfg(feature = "counters")]
    #[test]
    fn a_peak_below_in_use_is_bad_stats() {
        let mut fixture = fixture();
        fixture.heap.counters.peak_in_use = fixture.heap.counters.in_use - GRANULE;
        let addr = counters_addr(&fixture);
        fixture.assert_fault(addr, None, CorruptionKind::BadStats);
    }

    #[cfg(feature = "counters")]
    #[test]
    fn a_peak_above_managed_is_bad_stats() {
        let mut fixture = fixture();
        fixture.heap.counters.peak_in_use = fixture.heap.counters.managed + GRANULE;
        let addr = counters_addr(&fixture);
        fixture.assert_fault(addr, None, CorruptionKind::BadStats);
    }

    #[cfg(feature = "counters")]
    #[test]
    fn a_count_off_the_live_chunks_is_bad_stats() {
        let mut fixture = fixture();
        fixture.heap.counters.frees += 1;
        let addr = counters_addr(&fixture);
        fixture.assert_fault(addr, None, CorruptionKind::BadStats);
    }

    /// Allocations minus frees is the number of allocated chunks whatever made them: runs
    /// count each block, reallocs (in place, moved or slid back) count as neither.
    #[cfg(feature = "counters")]
    #[test]
    fn live_counts_hold_across_runs_and_reallocs() {
        let mut fixture = fixture();
        let heap = &mut fixture.heap;
        // Larger than B's hole, so the run comes from the tail.
        let layout = Layout::from_size_align(100, 8).unwrap();
        let mut run = Vec::new();
        assert_eq!(heap.allocate_run(layout, 6, |block| run.push(block)), 6);
        heap.check().unwrap();
        // SAFETY: each block is live with `layout`; the results replace them.
        unsafe {
            let moved = heap.realloc(run[2], layout, 600).unwrap();
            assert_ne!(
                moved, run[2],
                "the run's neighbours keep it from growing in place"
            );
            run[2] = moved;
            heap.check().unwrap();
            run[0] = heap.realloc(run[0], layout, 8).unwrap();
            heap.check().unwrap();
            for &block in &run {
                heap.free(block);
            }
        }
        heap.check().unwrap();
        let stats = heap.stats();
        assert_eq!(stats.reallocs, Some(2));
        assert_eq!(stats.allocations.unwrap() - stats.frees.unwrap(), 4);
    }

    #[test]
    fn the_message_names_the_address_and_the_bin() {
        let fixture = fixture();
        let b = fixture.chunk(1);
        // SAFETY: B is a free chunk.
        unsafe { b.set_prev_free(fixture.chunk(0)) };
        let message = format!("{}", fixture.heap.check().unwrap_err());
        let expected = format!(
            "heapworks: heap corrupt at {:#x} (bin {}): free list links inconsistent",
            b.addr(),
            fixture.block_bin()
        );
        assert_eq!(message, expected);
    }
}
