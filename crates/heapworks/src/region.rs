//! Regions: the memory a heap is handed, and how it is framed.
//!
//! ```text
//! base                                                                              limit
//! |pad| record chunk (in use)     | chunks ...                          | sentinel |pad|
//!       [hdr][next|base|limit|sentinel|sink] [hdr]...                     [0|IN_USE]
//! ```
//!
//! Invariants:
//! - Each region starts with an in-use *record chunk* whose payload is a [`RegionRecord`]; the
//!   records form a singly linked list headed by the heap. The record chunk gives every real
//!   chunk an in-use left neighbour, so no chunk ever looks left of its region.
//! - Each region ends with an *end sentinel*: a header of size 0 marked in use, so no chunk
//!   coalesces past the end. Its `PREV_IN_USE` flag tells whether the last chunk is free.
//! - The first region's record holds the heap's list *sink* (see [`crate::index::bins`]): a
//!   word that list operations may overwrite at will; it means nothing.
//! - Regions never overlap. `extend` moves the sentinel of one region forward; growth smaller
//!   than a minimal chunk that cannot join a free last chunk waits in the padding until a
//!   later `extend` makes it large enough.

use core::ptr::NonNull;

use crate::chunk::{chunk_size_for, Chunk, GRANULE, IN_USE, MIN_CHUNK, PREV_IN_USE, WORD};
use crate::error::ClaimError;
use crate::index::FreeIndex;
use crate::Heap;

/// The bookkeeping a region keeps about itself, in its record chunk's payload.
#[repr(C)]
pub(crate) struct RegionRecord {
    /// The next region of the same heap.
    pub(crate) next: Option<NonNull<RegionRecord>>,
    /// The base address the region was claimed with (how `extend` names it).
    pub(crate) base: usize,
    /// One past the last byte of the region.
    pub(crate) limit: usize,
    /// The end sentinel.
    pub(crate) sentinel: Chunk,
    /// The `prev` link word of the heap's list sink (used in the first region only).
    sink_prev: usize,
}

/// The size of a record chunk.
pub(crate) const RECORD_CHUNK: usize = match chunk_size_for(core::mem::size_of::<RegionRecord>()) {
    Some(size) => size,
    None => panic!("record chunk size"),
};

/// Where the record chunk, the first free chunk and the sentinel go, as offsets from the base.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) record: usize,
    pub(crate) first_chunk: usize,
    pub(crate) sentinel: usize,
}

impl Frame {
    /// Frames the region `[base, base + size)`, or says how large it must be.
    pub(crate) fn new(base: usize, size: usize) -> Result<Frame, ClaimError> {
        let end = base.checked_add(size).ok_or(ClaimError::Overflow)?;
        let record = header_slot_at_or_after(base).ok_or(ClaimError::Overflow)? - base;
        let first_chunk = record + RECORD_CHUNK;
        let needed = first_chunk + MIN_CHUNK + WORD;
        if size < needed {
            return Err(ClaimError::TooSmall { size, needed });
        }
        let sentinel = sentinel_slot_before(end) - base;
        Ok(Frame {
            record,
            first_chunk,
            sentinel,
        })
    }
}

/// The first address `>= addr` where a header may go (`≡ WORD mod GRANULE`).
fn header_slot_at_or_after(addr: usize) -> Option<usize> {
    crate::chunk::align_up(addr.checked_add(WORD)?, GRANULE).map(|payload| payload - WORD)
}

/// The last address where a sentinel header fits before `end` (`≡ WORD mod GRANULE`).
/// `end` must be at least `2 * WORD`.
pub(crate) fn sentinel_slot_before(end: usize) -> usize {
    ((end - 2 * WORD) & !(GRANULE - 1)) + WORD
}

impl<I: FreeIndex> Heap<I> {
    /// Adds the memory `[base, base + size)` to the heap.
    ///
    /// Any base alignment works; a few bytes at each end may go unused to align headers.
    /// Fails without touching the memory if the region is too small to hold a region record,
    /// one minimal chunk and the end sentinel (see [`ClaimError::TooSmall`] for the size), if it
    /// wraps around the address space, or if it overlaps a region already claimed.
    ///
    /// # Safety
    /// The memory is valid for reads and writes, is used by nothing else for as long as the heap
    /// lives, and `base` carries provenance for the whole range.
    pub unsafe fn claim(&mut self, base: *mut u8, size: usize) -> Result<(), ClaimError> {
        let base = NonNull::new(base).ok_or(ClaimError::NullBase)?;
        let frame = Frame::new(base.as_ptr().addr(), size)?;
        let limit = base.as_ptr().addr() + size;
        if self.overlaps(base.as_ptr().addr(), limit, None) {
            return Err(ClaimError::Overlaps);
        }
        // SAFETY: the frame's offsets lie inside the region the caller handed over, and each
        // piece is written in its own slot.
        unsafe {
            let record_chunk = Chunk::at(base.add(frame.record));
            record_chunk.set_header(RECORD_CHUNK | IN_USE | PREV_IN_USE);
            let sentinel = Chunk::at(base.add(frame.sentinel));
            sentinel.set_header(IN_USE);
            let record = record_chunk.payload().cast::<RegionRecord>();
            record.write(RegionRecord {
                next: self.regions,
                base: base.as_ptr().addr(),
                limit,
                sentinel,
                sink_prev: 0,
            });
            if self.regions.is_none() {
                // The sink's other words overlap the record's `limit` and `sentinel`: only its
                // `prev` word is ever written.
                let sink_prev = NonNull::new_unchecked(&raw mut (*record.as_ptr()).sink_prev);
                self.index.adopt_sink(Chunk::with_prev_link_at(sink_prev));
            }
            self.regions = Some(record);
            let first = Chunk::at(base.add(frame.first_chunk));
            let free_size = frame.sentinel - frame.first_chunk;
            first.write_free(free_size, true);
            self.index.set_top(first, free_size);
            self.counters.managed += free_size;
        }
        Ok(())
    }

    /// Grows the region claimed at `base` to `new_size` bytes, in place at its end.
    ///
    /// The new space joins the last chunk when that is free, or becomes a free chunk of its own.
    ///
    /// # Safety
    /// `[base, base + new_size)` is valid, used by nothing else for as long as the heap lives,
    /// and the `base` pointer first passed to [`Heap::claim`] carries provenance for all of it.
    pub unsafe fn extend(&mut self, base: *mut u8, new_size: usize) -> Result<(), ClaimError> {
        let record = self.region_claimed_at(base.addr())?;
        let (region_base, old_limit, sentinel) = {
            // SAFETY: region records live in claimed memory and are only reached through the
            // heap; the fields are copied out, so no reference outlives this block.
            let region = unsafe { record.as_ref() };
            (region.base, region.limit, region.sentinel)
        };
        let new_limit = region_base
            .checked_add(new_size)
            .ok_or(ClaimError::Overflow)?;
        if new_limit < old_limit {
            return Err(ClaimError::Shrinks);
        }
        if self.overlaps(old_limit, new_limit, Some(record)) {
            return Err(ClaimError::Overlaps);
        }
        let gap = sentinel_slot_before(new_limit) - sentinel.addr();
        // SAFETY: the sentinel and the space up to the new one lie inside the grown region; the
        // record is written through its pointer while no reference to it is alive.
        unsafe {
            let moved_sentinel = self.absorb_growth(sentinel, gap);
            let record = record.as_ptr();
            (*record).limit = new_limit;
            if let Some(moved_sentinel) = moved_sentinel {
                (*record).sentinel = moved_sentinel;
            }
        }
        Ok(())
    }

    /// Turns the `gap` bytes from `sentinel` on into free space and writes the new sentinel.
    /// Returns the new sentinel, or `None` when the gap is too small to use yet.
    ///
    /// # Safety
    /// `sentinel` is a region's end sentinel and the `gap` bytes after it belong to the region.
    unsafe fn absorb_growth(&mut self, sentinel: Chunk, gap: usize) -> Option<Chunk> {
        // SAFETY: forwarded from the caller; the last chunk is found through the boundary tag.
        unsafe {
            let last_is_free = sentinel.header() & PREV_IN_USE == 0;
            // One insertion for both cases: the index's code is inlined at each call.
            let (free, free_size) = if last_is_free {
                // The top keeps its footer in the index.
                let last_size = match self.index.top() {
                    Some((top, size)) if top.after(size) == sentinel => size,
                    _ => sentinel.prev_free_size(),
                };
                let last = sentinel.before(last_size);
                self.index.unlink(last, I::slot_of(last_size));
                (last, last_size + gap)
            } else if gap >= MIN_CHUNK {
                (sentinel, gap)
            } else {
                return None;
            };
            free.write_free(free_size, true);
            self.index.set_top(free, free_size);
            let new_sentinel = sentinel.after(gap);
            new_sentinel.set_header(IN_USE);
            self.counters.managed += gap;
            Some(new_sentinel)
        }
    }

    /// The record of the region claimed at `base`.
    fn region_claimed_at(&self, base: usize) -> Result<NonNull<RegionRecord>, ClaimError> {
        self.regions()
            // SAFETY: records are valid while the heap lives.
            .find(|record| unsafe { record.as_ref() }.base == base)
            .ok_or(ClaimError::UnknownRegion)
    }

    /// Whether `[start, end)` overlaps any region but `except`.
    fn overlaps(&self, start: usize, end: usize, except: Option<NonNull<RegionRecord>>) -> bool {
        self.regions().filter(|&r| Some(r) != except).any(|record| {
            // SAFETY: records are valid while the heap lives.
            let region = unsafe { record.as_ref() };
            start < region.limit && region.base < end
        })
    }

    /// The records of every claimed region, newest first.
    pub(crate) fn regions(&self) -> impl Iterator<Item = NonNull<RegionRecord>> + '_ {
        // SAFETY: each record's `next` is another valid record or `None`.
        core::iter::successors(self.regions, |record| unsafe { record.as_ref() }.next)
    }

    /// The region whose chunks include the payload address `addr`, with its first chunk.
    pub(crate) fn region_holding(&self, addr: usize) -> Option<&RegionRecord> {
        self.regions()
            // SAFETY: records are valid while the heap lives.
            .map(|record| unsafe { record.as_ref() })
            .find(|region| first_chunk_addr(region) < addr && addr < region.sentinel.addr())
    }
}

/// The address of the first chunk after a region's record chunk.
pub(crate) fn first_chunk_addr(region: &RegionRecord) -> usize {
    let record_payload = core::ptr::from_ref(region).addr();
    record_payload - WORD + RECORD_CHUNK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_align_headers_for_any_base() {
        for base in 4096..4096 + 64 {
            let frame = Frame::new(base, 1024).unwrap();
            assert_eq!((base + frame.record + WORD) % GRANULE, 0);
            assert_eq!((base + frame.sentinel + WORD) % GRANULE, 0);
            assert!(frame.sentinel + WORD <= 1024);
            assert!(frame.sentinel - frame.first_chunk >= MIN_CHUNK);
            assert!(1024 - (frame.sentinel + WORD) < GRANULE);
        }
    }

    #[test]
    fn the_smallest_region_holds_exactly_one_minimal_chunk() {
        for base in 4096..4096 + 32 {
            let Err(ClaimError::TooSmall { needed, .. }) = Frame::new(base, 0) else {
                panic!("empty region accepted");
            };
            let frame = Frame::new(base, needed).unwrap();
            assert_eq!(frame.sentinel - frame.first_chunk, MIN_CHUNK);
            assert!(matches!(
                Frame::new(base, needed - 1),
                Err(ClaimError::TooSmall { .. })
            ));
        }
    }

    #[test]
    fn wrapping_regions_are_refused() {
        assert_eq!(Frame::new(usize::MAX - 100, 200), Err(ClaimError::Overflow));
        assert_eq!(Frame::new(usize::MAX - 3, 2), Err(ClaimError::Overflow));
    }
}
