//! The bins' part of [`crate::Heap::check`]: every free chunk linked consistently into
//! exactly the list of its bin, and the bitmap agreeing with the lists.
//!
//! What it verifies (the first violation is returned):
//! - For each free chunk the walk meets ([`Bins::check_links`]): it heads its bin or its
//!   predecessor links to it, and its successor links back and shares its bin.
//! - For every bin slot, spare slots included ([`Bins::tally_lists`]): the occupancy bit is set
//!   exactly when the list is non-empty (and never for a spare slot); every listed chunk is a
//!   free chunk of that bin; every summary bit is set exactly when its word of bin bits is
//!   non-zero (and never beyond the map); the lists and the victim hold exactly the free
//!   chunks of the walk ([`Bins::tally_with_victim`]).
//! - The victim's recorded size is its header's ([`Bins::check_victim`]).
//!
//! O(free chunks + bins) on a sound heap; naming a lost chunk costs O(free chunks × list
//! length), plus O(entries × chunks) for an entry in excess: for corrupt heaps only. List walks
//! are bounded by the walk's count of free chunks.

use core::ptr;

use super::Bins;
use crate::bins::{bin_of, BIN_COUNT};
use crate::bitmap::{BIN_SLOTS, BITS, SUMMARY_BITS};
use crate::chunk::{Chunk, IN_USE, MIN_CHUNK, PREV_IN_USE, SIZE_MASK};
use crate::error::{Corruption, CorruptionKind};
use crate::index::{mix, Walked};

/// The bin of a chunk with header `header`, if its size is a chunk size at all.
fn bin_of_claimed(header: usize) -> Option<usize> {
    let size = header & SIZE_MASK;
    (size >= MIN_CHUNK).then(|| bin_of(size))
}

fn fail_in<T>(addr: usize, bin: usize, kind: CorruptionKind) -> Result<T, Corruption> {
    Err(Corruption {
        addr,
        bin: Some(bin),
        kind,
    })
}

impl Bins {
    /// The list neighbours of a chunk taken for free, `(next, prev)`, the sink read as `None`;
    /// `None` when a link word is null (no link ever is: lists end in the sink).
    ///
    /// # Safety
    /// `chunk`'s two link words (the first two payload words) are readable.
    unsafe fn links_of(&self, chunk: Chunk) -> Option<(Option<Chunk>, Option<Chunk>)> {
        let words = chunk.payload().cast::<Option<Chunk>>();
        // SAFETY: forwarded from the caller; payloads are GRANULE-aligned, and `Option<Chunk>`
        // is a nullable pointer, valid for any word.
        let (next, prev) = unsafe { (words.read(), words.add(1).read()) };
        next?;
        prev?;
        // SAFETY: both link words hold chunks (or the sink), as the index reads them.
        unsafe { Some((self.next_of(chunk), self.prev_of(chunk))) }
    }

    /// Checks that a free chunk is linked into its bin's list consistently: it heads its bin
    /// or its predecessor links to it, and its successor links back and shares its bin.
    ///
    /// # Safety
    /// `chunk` is a free chunk of `size` bytes (at least `MIN_CHUNK`) with readable link words.
    pub(crate) unsafe fn check_links(&self, chunk: Chunk, size: usize) -> Result<(), Corruption> {
        let bin = bin_of(size);
        let bad_link = fail_in(chunk.addr(), bin, CorruptionKind::BadLink);
        // SAFETY: forwarded from the caller.
        let Some((next, prev)) = (unsafe { self.links_of(chunk) }) else {
            return bad_link;
        };
        // SAFETY: a non-null link points at a chunk or the sink, whose first words are read
        // here (and only its first words: the module's stated limit for corrupt links).
        unsafe {
            match prev {
                None if self.head(bin) == Some(chunk) => {}
                Some(prev) if self.links_of(prev).is_some_and(|(n, _)| n == Some(chunk)) => {}
                _ => return bad_link,
            }
            if let Some(next) = next {
                if self.links_of(next).is_none_or(|(_, p)| p != Some(chunk))
                    || bin_of_claimed(next.header()) != Some(bin)
                {
                    return bad_link;
                }
            }
        }
        Ok(())
    }

    /// [`Bins::tally_lists`], with the victim counted as one more entry.
    pub(crate) fn tally_with_victim(
        &self,
        limit: usize,
    ) -> Result<Option<(usize, usize)>, Corruption> {
        let Some((listed, fingerprint)) = self.tally_lists(limit)? else {
            return Ok(None);
        };
        let Some(victim) = self.victim else {
            return Ok(Some((listed, fingerprint)));
        };
        if listed + 1 > limit {
            return Ok(None);
        }
        Ok(Some((
            listed + 1,
            fingerprint.wrapping_add(mix(victim.addr())),
        )))
    }

    /// Checks the victim, a free chunk of `size` bytes by the walk: the index records that size.
    pub(crate) fn check_victim(&self, size: usize) -> Result<(), Corruption> {
        match self.victim {
            Some(victim) if self.victim_size != size => Err(Corruption {
                addr: victim.addr(),
                bin: None,
                kind: CorruptionKind::BadSize,
            }),
            _ => Ok(()),
        }
    }

    /// Checks the bitmap against the lists, bin by bin and then the summary, and the lists
    /// against the free chunks of the walk.
    pub(crate) fn tally_lists(&self, limit: usize) -> Result<Option<(usize, usize)>, Corruption> {
        let index_addr = ptr::from_ref(self).addr();
        let mut listed = 0;
        let mut fingerprint = 0usize;
        let mut occupied_words = 0u64;
        for bin in 0..BIN_SLOTS {
            let head = self.head(bin);
            let marked = self.is_marked(bin);
            if marked {
                occupied_words |= 1 << (bin / BITS);
            }
            let spare = bin >= BIN_COUNT;
            if head.is_some() != marked || (spare && (marked || head.is_some())) {
                let addr = head.map_or(index_addr, Chunk::addr);
                return fail_in(addr, bin, CorruptionKind::BadBitmap);
            }
            let mut cursor = head;
            while let Some(chunk) = cursor {
                listed += 1;
                if listed > limit {
                    return Ok(None);
                }
                // SAFETY: `chunk` was reached from a bin head through links that were non-null;
                // only its header and link words are read.
                let (header, links) = unsafe { (chunk.header(), self.links_of(chunk)) };
                let free_here = header & (IN_USE | !SIZE_MASK & !PREV_IN_USE) == 0
                    && bin_of_claimed(header) == Some(bin);
                let Some((next, _)) = links.filter(|_| free_here) else {
                    return fail_in(chunk.addr(), bin, CorruptionKind::BadLink);
                };
                fingerprint = fingerprint.wrapping_add(mix(chunk.addr()));
                cursor = next;
            }
        }
        for word in 0..BITS {
            let expected = occupied_words & (1 << word) != 0;
            if self.is_marked(SUMMARY_BITS + word) != expected {
                return fail_in(index_addr, word * BITS, CorruptionKind::BadSummary);
            }
        }
        Ok(Some((listed, fingerprint)))
    }

    /// Names the chunk behind a mismatch between the lists and the walk: the first free chunk
    /// (in region order) missing from its bin's list, or else the first list entry (in bin
    /// order) that is not a free chunk of the walk or that a list holds twice.
    ///
    /// The heap's chunks passed the walk and every list entry's link words were read in
    /// [`Bins::tally_lists`] (as far as `free_chunks` entries), so this reads nothing new but
    /// region chunks. O(free chunks × list length), plus O(entries × chunks) for an entry in
    /// excess: for corrupt heaps only.
    pub(crate) fn diagnose_lost(&self, walked: &Walked) -> Corruption {
        let filed = |chunk, size| {
            self.victim == Some(chunk) || self.is_listed(chunk, bin_of(size), walked.free_chunks)
        };
        if let Some(lost) = walked.first_lost(filed, |size| Some(bin_of(size))) {
            return lost;
        }
        // Every free chunk is filed, so the lists and the victim hold more entries than there
        // are free chunks: one that is not a free chunk, or one filed twice.
        let mut seen = 0;
        let mut excess = None;
        if let Some(victim) = self.victim {
            seen += 1;
            if !walked.is_free_chunk(victim) {
                excess = Some((victim, bin_of(self.victim_size)));
            }
        }
        'bins: for bin in 0..BIN_COUNT {
            if excess.is_some() {
                break;
            }
            let mut cursor = self.head(bin);
            while let Some(chunk) = cursor {
                seen += 1;
                if seen > walked.free_chunks || !walked.is_free_chunk(chunk) {
                    excess = Some((chunk, bin));
                    break 'bins;
                }
                // SAFETY: `chunk` is a free chunk of the walk, so its link words are readable.
                cursor = unsafe { self.links_of(chunk) }.and_then(|(next, _)| next);
            }
        }
        // Not reached: lists without an entry in excess hold exactly the free chunks. Should it
        // be, the free index is named.
        let index_addr = ptr::from_ref(self).addr();
        let (addr, bin) =
            excess.map_or((index_addr, None), |(chunk, bin)| (chunk.addr(), Some(bin)));
        Corruption {
            addr,
            bin,
            kind: CorruptionKind::LostChunk,
        }
    }

    /// Whether `chunk` is in `bin`'s list within its first `limit` entries.
    pub(crate) fn is_listed(&self, chunk: Chunk, bin: usize, limit: usize) -> bool {
        let mut cursor = self.head(bin);
        for _ in 0..limit {
            let Some(entry) = cursor else { return false };
            if entry == chunk {
                return true;
            }
            // SAFETY: entries up to `limit` had their link words read by `tally_lists`.
            cursor = unsafe { self.links_of(entry) }.and_then(|(next, _)| next);
        }
        false
    }
}
