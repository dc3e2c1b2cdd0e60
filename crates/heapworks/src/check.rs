//! The heap checker: walks every region chunk by chunk and verifies every invariant stated in
//! [`crate::chunk`], [`crate::free_index`], [`crate::region`] and [`crate::heap`].
//!
//! It runs in O(chunks + bins) and reports the first violation with its address. It trusts
//! nothing it reads: sizes are bounded by the region before they are followed, and list walks
//! are bounded by the number of free chunks found, so a corrupt heap cannot make it loop or read
//! outside the regions (beyond the first word a corrupt link points at).

use core::ptr::NonNull;

use crate::bins::{bin_of, BIN_COUNT};
use crate::chunk::{Chunk, IN_USE, MIN_CHUNK, PREV_IN_USE, SIZE_MASK};
use crate::error::{Corruption, CorruptionKind};
use crate::region::{first_chunk_addr, RegionRecord, RECORD_CHUNK};
use crate::Heap;

/// What the walk of all regions found.
#[derive(Default)]
struct Tally {
    free_chunks: usize,
    free_bytes: usize,
    in_use_bytes: usize,
}

fn fail(addr: usize, kind: CorruptionKind) -> Result<(), Corruption> {
    Err(Corruption { addr, kind })
}

impl Heap {
    /// Verifies every invariant of the heap and returns the first violation found.
    pub fn check(&self) -> Result<(), Corruption> {
        let mut tally = Tally::default();
        for record in self.regions() {
            self.check_region(record, &mut tally)?;
        }
        self.check_bins(tally.free_chunks)?;
        let c = &self.counters;
        let stats_agree = c.in_use == tally.in_use_bytes
            && c.managed == tally.in_use_bytes + tally.free_bytes
            && (!cfg!(feature = "counters") || c.peak_in_use >= c.in_use);
        if !stats_agree {
            return fail(0, CorruptionKind::BadStats);
        }
        Ok(())
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
            fail(addr, CorruptionKind::BadSize)?;
        }
        if (header & PREV_IN_USE != 0) != prev_in_use {
            fail(addr, CorruptionKind::BadPrevFlag)?;
        }
        if header & IN_USE != 0 {
            tally.in_use_bytes += size;
            return Ok(size);
        }
        if !prev_in_use {
            fail(addr, CorruptionKind::AdjacentFree)?;
        }
        // SAFETY: the size was bounded by the sentinel, so the footer is inside the region.
        if unsafe { chunk.footer() } != size {
            fail(addr, CorruptionKind::BadFooter)?;
        }
        // SAFETY: a free chunk's link words are inside it.
        unsafe { self.check_links(chunk, size)? };
        tally.free_chunks += 1;
        tally.free_bytes += size;
        Ok(size)
    }

    /// Checks that a free chunk is linked into its bin's list consistently.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes with readable link words.
    unsafe fn check_links(&self, chunk: Chunk, size: usize) -> Result<(), Corruption> {
        let bin = bin_of(size);
        let bad_link = Corruption {
            addr: chunk.addr(),
            kind: CorruptionKind::BadLink,
        };
        // SAFETY: links of a free chunk point at other free chunks (verified as we go: each
        // neighbour's back link must point here, and the walk checks every free chunk).
        unsafe {
            match self.index.prev_of(chunk) {
                None if self.index.head(bin) == Some(chunk) => {}
                Some(prev) if self.index.next_of(prev) == Some(chunk) => {}
                _ => return Err(bad_link),
            }
            if let Some(next) = self.index.next_of(chunk) {
                if self.index.prev_of(next) != Some(chunk) {
                    return Err(bad_link);
                }
                if bin_of(next.size()) != bin {
                    return Err(bad_link);
                }
            }
        }
        if !self.index.is_marked(bin) {
            return fail(chunk.addr(), CorruptionKind::BadBitmap);
        }
        Ok(())
    }

    /// Checks the bitmap against the lists and counts the listed chunks.
    fn check_bins(&self, free_chunks: usize) -> Result<(), Corruption> {
        let mut listed = 0;
        for bin in 0..BIN_COUNT {
            let mut cursor = self.index.head(bin);
            if cursor.is_some() != self.index.is_marked(bin) {
                return fail(bin, CorruptionKind::BadBitmap);
            }
            while let Some(chunk) = cursor {
                listed += 1;
                if listed > free_chunks {
                    return fail(chunk.addr(), CorruptionKind::LostChunk);
                }
                // SAFETY: every listed chunk up to `free_chunks` of them was matched with a chunk
                // of the walk through its back link, so its link words are readable.
                cursor = unsafe { self.index.next_of(chunk) };
            }
        }
        if listed != free_chunks {
            return fail(0, CorruptionKind::LostChunk);
        }
        Ok(())
    }
}
