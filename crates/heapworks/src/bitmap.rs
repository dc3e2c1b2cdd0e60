//! An occupancy bitmap over the bins: which bins hold at least one free chunk.
//!
//! Invariant: bit `i % BITS` of `words[i / BITS]` is set exactly when bin `i` is non-empty.
//! Finding the first non-empty bin at or above a given one is a masked bit scan of one word,
//! then at most `WORDS - 1` (5 on 64-bit) word tests and one scan: bounded, whatever the heap
//! holds. A summary word over the words would bound it by two scans, but costs an update on
//! every insertion and removal, which are far more frequent than misses in the first word.

use crate::bins::BIN_COUNT;

const BITS: usize = usize::BITS as usize;
/// Words needed for one bit per bin.
const WORDS: usize = BIN_COUNT.div_ceil(BITS);
/// Bin numbers the bitmap can name (at least `BIN_COUNT`): a list array this long needs no
/// bounds check on a bin the bitmap found.
pub(crate) const BIN_SLOTS: usize = WORDS * BITS;

#[derive(Debug)]
pub(crate) struct Bitmap {
    words: [usize; WORDS],
}

impl Bitmap {
    pub(crate) const fn new() -> Bitmap {
        Bitmap { words: [0; WORDS] }
    }

    #[inline(always)]
    pub(crate) fn set(&mut self, bin: usize) {
        self.words[bin / BITS] |= 1 << (bin % BITS);
    }

    #[inline(always)]
    pub(crate) fn clear(&mut self, bin: usize) {
        self.words[bin / BITS] &= !(1 << (bin % BITS));
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
        (word_index + 1..WORDS)
            .find(|&w| self.words[w] != 0)
            .map(|w| w * BITS + self.words[w].trailing_zeros() as usize)
    }

    /// The highest non-empty bin, if any.
    pub(crate) fn last(&self) -> Option<usize> {
        (0..WORDS)
            .rev()
            .find(|&w| self.words[w] != 0)
            .map(|w| w * BITS + BITS - 1 - self.words[w].leading_zeros() as usize)
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
                bitmap.clear(bin);
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
        bitmap.clear(BIN_COUNT - 1);
        bitmap.set(0);
        assert_eq!(bitmap.first_at_or_above(1), None);
        assert_eq!(bitmap.last(), Some(0));
    }
}
