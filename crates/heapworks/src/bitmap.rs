//! A two-level occupancy bitmap over the bins: which bins hold at least one free chunk.
//!
//! Invariants: bit `i % BITS` of `words[i / BITS]` is set exactly when bin `i` is non-empty,
//! and bit `w` of `summary` is set exactly when `words[w] != 0`. Finding the first non-empty
//! bin at or above a given one therefore takes at most two bit scans, whatever the heap holds.

use crate::bins::BIN_COUNT;

const BITS: usize = usize::BITS as usize;
/// Words needed for one bit per bin.
const WORDS: usize = BIN_COUNT.div_ceil(BITS);

#[derive(Debug)]
pub(crate) struct Bitmap {
    summary: usize,
    words: [usize; WORDS],
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
        self.words[bin / BITS] |= 1 << (bin % BITS);
        self.summary |= 1 << (bin / BITS);
    }

    #[inline(always)]
    pub(crate) fn clear(&mut self, bin: usize) {
        let word = &mut self.words[bin / BITS];
        *word &= !(1 << (bin % BITS));
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
        let here = self.words[word_index] & (usize::MAX << (bin % BITS));
        if here != 0 {
            return Some(word_index * BITS + here.trailing_zeros() as usize);
        }
        // Words above `word_index`; the shift is split in two so it never reaches BITS.
        let above = (self.summary >> word_index) >> 1;
        if above == 0 {
            return None;
        }
        let next_word = word_index + 1 + above.trailing_zeros() as usize;
        Some(next_word * BITS + self.words[next_word].trailing_zeros() as usize)
    }

    /// The highest non-empty bin, if any.
    pub(crate) fn last(&self) -> Option<usize> {
        if self.summary == 0 {
            return None;
        }
        let word_index = BITS - 1 - self.summary.leading_zeros() as usize;
        let bit = BITS - 1 - self.words[word_index].leading_zeros() as usize;
        Some(word_index * BITS + bit)
    }

    /// Whether `summary` agrees with `words` (used by the heap checker).
    pub(crate) fn summary_is_consistent(&self) -> bool {
        (0..WORDS).all(|w| (self.summary >> w) & 1 == (self.words[w] != 0) as usize)
            && self.summary >> WORDS == 0
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
        assert!(bitmap.summary_is_consistent());
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
                bitmap.clear(bin);
            }
            assert!(bitmap.summary_is_consistent());
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
        bitmap.clear(BIN_COUNT - 1);
        bitmap.set(0);
        assert_eq!(bitmap.first_at_or_above(1), None);
        assert_eq!(bitmap.last(), Some(0));
    }
}
