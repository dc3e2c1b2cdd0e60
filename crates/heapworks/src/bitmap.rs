//! An occupancy bitmap over the bins: which bins hold at least one free chunk.
//!
//! Invariants: bit `i % BITS` of `words[i / BITS]` is set exactly when bin `i` is non-empty;
//! bit `w` of `summary` is set exactly when `words[w]` is non-zero. Finding the first non-empty
//! bin at or above a given one is a masked bit scan of one word and, when that word has none, a
//! scan of the summary and one more of the word it names: bounded by two loads and two scans,
//! whatever the heap holds.

use crate::bins::BIN_COUNT;

/// Bits per word. 64 on every target: 32-bit targets have more bins than 32 × 32, and wasm32
/// computes in 64-bit words natively.
const BITS: usize = u64::BITS as usize;
/// Words needed for one bit per bin.
const WORDS: usize = BIN_COUNT.div_ceil(BITS);
/// Bin numbers the bitmap can name (at least `BIN_COUNT`): a list array this long needs no
/// bounds check on a bin the bitmap found.
pub(crate) const BIN_SLOTS: usize = WORDS * BITS;

const _: () = assert!(WORDS <= BITS, "the summary word names every word");

#[derive(Debug)]
pub(crate) struct Bitmap {
    summary: u64,
    words: [u64; WORDS],
}

impl Bitmap {
    pub(crate) const fn new() -> Bitmap {
        Bitmap {
            summary: 0,
            words: [0; WORDS],
        }
    }

    #[inline(always)]
    pub(crate) fn set(&mut self, bin: usize) {
        let word = &mut self.words[bin / BITS];
        // As in `clear_if`, a predictable branch: words seldom go from empty to non-empty.
        if *word == 0 {
            self.summary |= 1 << (bin / BITS);
        }
        *word |= 1 << (bin % BITS);
    }

    /// Clears `bin`'s bit when `emptied`, without a branch.
    #[inline(always)]
    pub(crate) fn clear_if(&mut self, bin: usize, emptied: bool) {
        let word = &mut self.words[bin / BITS];
        *word &= !(u64::from(emptied) << (bin % BITS));
        // A branch, but a predictable one: a word spans a whole octave of bins, and a heap
        // seldom empties one.
        if *word == 0 {
            self.summary &= !(1 << (bin / BITS));
        }
    }

    #[inline(always)]
    pub(crate) fn is_set(&self, bin: usize) -> bool {
        self.words[bin / BITS] & (1 << (bin % BITS)) != 0
    }

    /// The lowest non-empty bin `>= bin`, if any.
    #[inline(always)]
    pub(crate) fn first_at_or_above(&self, bin: usize) -> Option<usize> {
        let word_index = bin / BITS;
        if word_index >= WORDS {
            return None;
        }
        let here = self.words[word_index] & (u64::MAX << (bin % BITS));
        if here != 0 {
            return Some(word_index * BITS + here.trailing_zeros() as usize);
        }
        // `word_index + 1 <= WORDS <= BITS`; a shift by BITS must give an empty mask.
        let above = self.summary & u64::MAX.checked_shl(word_index as u32 + 1).unwrap_or(0);
        if above == 0 {
            return None;
        }
        let found = above.trailing_zeros() as usize;
        // SAFETY: the summary has bits only for existing words (set only with a bin's bit).
        unsafe { core::hint::assert_unchecked(found < WORDS) };
        Some(found * BITS + self.words[found].trailing_zeros() as usize)
    }

    /// The highest non-empty bin, if any.
    pub(crate) fn last(&self) -> Option<usize> {
        let word = self.summary.checked_ilog2()? as usize;
        Some(word * BITS + self.words[word].ilog2() as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference answer: a linear scan.
    fn first_set_by_scan(bitmap: &Bitmap, from: usize) -> Option<usize> {
        (from..BIN_COUNT).find(|&bin| bitmap.is_set(bin))
    }

    #[test]
    fn empty_bitmap_finds_nothing() {
        let bitmap = Bitmap::new();
        assert_eq!(bitmap.first_at_or_above(0), None);
        assert_eq!(bitmap.last(), None);
    }

    #[test]
    fn search_matches_a_linear_scan() {
        let mut bitmap = Bitmap::new();
        // A fixed pseudo-random pattern of sets and clears over every bin.
        let mut state = 0x9e37_79b9_u32;
        for _ in 0..2000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let bin = state as usize % BIN_COUNT;
            if state & 0x100 == 0 {
                bitmap.set(bin);
            } else {
                bitmap.clear_if(bin, true);
            }
            let from = (state >> 9) as usize % BIN_COUNT;
            assert_eq!(
                bitmap.first_at_or_above(from),
                first_set_by_scan(&bitmap, from)
            );
            let last = (0..BIN_COUNT).rev().find(|&b| bitmap.is_set(b));
            assert_eq!(bitmap.last(), last);
        }
    }

    #[test]
    fn edges_of_the_map() {
        let mut bitmap = Bitmap::new();
        bitmap.set(BIN_COUNT - 1);
        assert_eq!(bitmap.first_at_or_above(0), Some(BIN_COUNT - 1));
        assert_eq!(bitmap.first_at_or_above(BIN_COUNT - 1), Some(BIN_COUNT - 1));
        assert_eq!(bitmap.first_at_or_above(BIN_COUNT), None);
        bitmap.clear_if(BIN_COUNT - 1, true);
        bitmap.set(0);
        assert_eq!(bitmap.first_at_or_above(1), None);
        assert_eq!(bitmap.last(), Some(0));
    }
}
