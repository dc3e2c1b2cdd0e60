//! [`SegregatedLists`]: the classic segregated free lists, one per power of two of sizes, with
//! no bitmap: the baseline the other indexes are measured against.
//!
//! Invariants (verified by [`crate::Heap::check`]):
//! - Class `c` holds the free chunks of `2^c × MIN_CHUNK` up to `2^(c+1) × MIN_CHUNK - 1`
//!   bytes ([`class_of`]), in a doubly linked list headed by `heads[c]` that ends in null
//!   (see [`crate::index::list`]); each free chunk is in exactly the list of its class.
//!
//! A request for `size` bytes walks its own class for the first chunk that holds it (first
//! fit), then takes the head of the first non-empty class above, found by looking at every
//! head in turn: no bitmap. The walk of the own class is what makes the classic design
//! O(free chunks) per request at worst, and O(N²) over a run whose free chunks pile up in one
//! class (the seed's insert-delete experiment): kept as it was, as the baseline.

use crate::chunk::{Chunk, IN_USE, MIN_CHUNK, PREV_IN_USE, SIZE_MASK};
use crate::error::{Corruption, CorruptionKind};
use crate::index::list::{self, get, NEXT, PREV};
use crate::index::{fault, mix, Index};

/// Classes: one per power of two from `MIN_CHUNK` to the largest size.
const CLASSES: usize = (usize::BITS - MIN_CHUNK.trailing_zeros()) as usize;

/// The class of a chunk of `size` bytes (`size >= MIN_CHUNK`).
#[inline(always)]
fn class_of(size: usize) -> usize {
    // `| MIN_CHUNK` changes no size's class and shows the compiler a non-zero operand, so
    // `ilog2` keeps no panic path.
    let class = ((size | MIN_CHUNK).ilog2() - MIN_CHUNK.trailing_zeros()) as usize;
    // SAFETY: the operand is at least MIN_CHUNK, so the class is at least 0, and `ilog2 <
    // usize::BITS` makes it below CLASSES: the lists need no bounds check.
    unsafe { core::hint::assert_unchecked(class < CLASSES) };
    class
}

/// Segregated free lists by powers of two, no bitmap (see the module docs).
/// `Heap::<SegregatedLists>::empty()` builds a heap on it.
pub struct SegregatedLists {
    heads: [Option<Chunk>; CLASSES],
}

impl SegregatedLists {
    /// The first chunk of at least `size` bytes in the request's class, then the head of the
    /// first non-empty class above, with its class.
    ///
    /// # Safety
    /// The lists are consistent.
    unsafe fn first_fit_from(
        &self,
        size: usize,
        mut fits: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<(Chunk, usize)> {
        for class in class_of(size)..CLASSES {
            let mut cursor = self.heads[class];
            while let Some(chunk) = cursor {
                // SAFETY: listed chunks are free chunks with valid headers and links.
                let chunk_size = unsafe { chunk.size() };
                if chunk_size >= size && fits(chunk, chunk_size) {
                    return Some((chunk, class));
                }
                // SAFETY: as above.
                cursor = unsafe { get(chunk, NEXT) };
            }
        }
        None
    }
}

impl Index for SegregatedLists {
    const EMPTY: SegregatedLists = SegregatedLists {
        heads: [None; CLASSES],
    };
    const GOOD_FIT_BELOW: usize = 0;

    unsafe fn adopt_sink(&mut self, _sink: Chunk) {}

    #[inline(always)]
    fn slot_of(size: usize) -> usize {
        class_of(size)
    }

    unsafe fn insert(&mut self, chunk: Chunk, size: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { list::push(&mut self.heads[class_of(size)], chunk) }
    }

    unsafe fn unlink(&mut self, chunk: Chunk, slot: usize) {
        // SAFETY: the chunk is filed in this class, a class below CLASSES.
        unsafe {
            core::hint::assert_unchecked(slot < CLASSES);
            list::remove(&mut self.heads[slot], chunk);
        }
    }

    unsafe fn resize_entry(&mut self, chunk: Chunk, old_size: usize, new_size: usize) {
        if class_of(old_size) != class_of(new_size) {
            // SAFETY: forwarded from the caller.
            unsafe { Index::refile_in(self, chunk, class_of(old_size), chunk, new_size) }
        }
    }

    fn good_fit(&mut self, _size: usize) -> Option<(Chunk, usize)> {
        None
    }

    unsafe fn search(&mut self, size: usize) -> Option<(Chunk, usize)> {
        // SAFETY: forwarded from the caller.
        unsafe { self.first_fit_from(size, |_, _| true) }
    }

    unsafe fn find(&mut self, size: usize) -> Option<(Chunk, usize)> {
        // SAFETY: forwarded from the caller.
        unsafe { self.first_fit_from(size, |_, _| true) }
    }

    unsafe fn first_fit(
        &mut self,
        min_size: usize,
        fits: impl FnMut(Chunk, usize) -> bool,
    ) -> Option<(Chunk, usize)> {
        // SAFETY: forwarded from the caller.
        unsafe { self.first_fit_from(min_size, fits) }
    }

    unsafe fn for_each(&self, mut f: impl FnMut(Chunk, usize)) {
        // SAFETY: forwarded from the caller.
        unsafe {
            self.first_fit_from(MIN_CHUNK, |chunk, size| {
                f(chunk, size);
                false
            });
        }
    }

    unsafe fn largest(&self) -> Option<usize> {
        let class = (0..CLASSES)
            .rev()
            .find(|&class| self.heads[class].is_some())?;
        let mut largest = 0;
        let mut cursor = self.heads[class];
        while let Some(chunk) = cursor {
            // SAFETY: listed chunks are free chunks with valid headers and links.
            unsafe {
                largest = largest.max(chunk.size());
                cursor = get(chunk, NEXT);
            }
        }
        Some(largest)
    }

    unsafe fn check_filed(&self, chunk: Chunk, size: usize) -> Result<(), Corruption> {
        let class = class_of(size);
        let bad_link = Err(Corruption {
            addr: chunk.addr(),
            bin: Some(class),
            kind: CorruptionKind::BadLink,
        });
        // SAFETY: a free chunk's two link words are inside it; a non-null link is read only
        // as far as the first words of the chunk it names (the checker's stated limit).
        unsafe {
            match get(chunk, PREV) {
                None if self.heads[class] != Some(chunk) => return bad_link,
                Some(prev) if get(prev, NEXT) != Some(chunk) => return bad_link,
                _ => {}
            }
            if let Some(next) = get(chunk, NEXT) {
                let next_size = next.size();
                if get(next, PREV) != Some(chunk)
                    || next_size < MIN_CHUNK
                    || class_of(next_size) != class
                {
                    return bad_link;
                }
            }
        }
        Ok(())
    }

    fn tally(&self, limit: usize) -> Result<Option<(usize, usize)>, Corruption> {
        let (mut count, mut fingerprint) = (0, 0usize);
        for class in 0..CLASSES {
            let mut cursor = self.heads[class];
            while let Some(chunk) = cursor {
                count += 1;
                if count > limit {
                    return Ok(None);
                }
                // SAFETY: the chunk was reached through non-null links; its header and link
                // words are read.
                let (header, next) = unsafe { (chunk.header(), get(chunk, NEXT)) };
                let size = header & SIZE_MASK;
                let stray = header & !SIZE_MASK & !PREV_IN_USE;
                if stray != 0 || header & IN_USE != 0 || size < MIN_CHUNK || class_of(size) != class
                {
                    return fault(chunk.addr(), CorruptionKind::BadLink);
                }
                fingerprint = fingerprint.wrapping_add(mix(chunk.addr()));
                cursor = next;
            }
        }
        Ok(Some((count, fingerprint)))
    }

    fn files(&self, chunk: Chunk, size: usize, limit: usize) -> bool {
        list::holds(self.heads[class_of(size)], chunk, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_powers_of_two_of_the_minimum_chunk() {
        assert_eq!(class_of(MIN_CHUNK), 0);
        assert_eq!(class_of(2 * MIN_CHUNK - 1), 0);
        assert_eq!(class_of(2 * MIN_CHUNK), 1);
        assert_eq!(class_of(usize::MAX), CLASSES - 1);
    }
}
