//! An occupancy bitmap over the bins: which bins hold at least one free chunk.
//!
//! Invariants: bit `i % BITS` of `words[i / BITS]` is set exactly when bin `i` is non-empty;
//! bit `w` of `summary` is set exactly when `words[w]` is non-zero. Finding the first non-empty
//! bin at or above a given one is a masked bit scan of one word and, when that word has none, a
//! scan of the summary and one more of the word it names: bounded by two loads and two scans,
//! whatever the heap holds. Bits of bins at or above `BIN_COUNT` (the spare slots that round
//! the map up to whole words) and summary bits of words at or above `WORDS` are always clear.
//!
//! The checker reads every bit through [`Bitmap::is_set`], which numbers the summary's bits
//! after the bins' ([`SUMMARY_BITS`]), so it can verify both levels and the spare bits.

use crate::bins::BIN_COUNT;

/// Bits per word. 64 on every target: 32-bit targets have more bins than 32 × 32, and wasm32
/// computes in 64-bit words natively.
pub(crate) const BITS: usize = u64::BITS as usize;
/// Words needed for one bit per bin.
pub(crate) const WORDS: usize = BIN_COUNT.div_ceil(BITS);
/// Bin numbers the bitmap can name (at least `BIN_COUNT`): a list array this long needs no
/// bounds check on a bin the bitmap found.
pub(crate) const BIN_SLOTS: usize = WORDS * BITS;
/// The number [`Bitmap::is_set`] gives summary bit 0: summary bit `w` is bit `SUMMARY_BITS + w`,
/// right after the bits of all `BIN_SLOTS` bins.
pub(crate) const SUMMARY_BITS: usize = BIN_SLOTS;

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
        #[cfg(test)]
        if let Some(bit) = fault::take() {
            self.flip(bit);
        }
    }

    /// Marks `bin`, writing the summary without a branch (see `Bins::insert_in`). Only wasm32
    /// builds call it, so the tests' fault hook of [`Bitmap::set`] is not needed here.
    #[inline(always)]
    pub(crate) fn set_with_summary(&mut self, bin: usize) {
        self.summary |= 1 << (bin / BITS);
        self.words[bin / BITS] |= 1 << (bin % BITS);
    }

    /// Clears `bin`'s bit (the tests' shorthand).
    #[cfg(test)]
    pub(crate) fn clear(&mut self, bin: usize) {
        self.clear_if(bin, true);
    }

    /// Clears `bin`'s bit when `emptied`, without a branch on it: whether a take empties its
    /// bin is a coin toss under a random workload (crates/heapworks/TUNING.md, "The bitmap
    /// written without a branch on the list").
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

    /// Whether bin `bin` is marked non-empty (`bin < BIN_SLOTS`).
    #[inline(always)]
    pub(crate) fn contains(&self, bin: usize) -> bool {
        self.words[bin / BITS] & (1 << (bin % BITS)) != 0
    }

    /// Whether bit `bit` is set: bin `bit`'s occupancy bit for `bit < BIN_SLOTS` (spare slots
    /// included), summary bit `bit - SUMMARY_BITS` from [`SUMMARY_BITS`] on. For the checker,
    /// which reads the bitmap only through this (see [`crate::index::bins`]'s `is_marked`).
    ///
    /// # Panics
    /// If `bit >= SUMMARY_BITS + BITS`.
    pub(crate) fn is_set(&self, bit: usize) -> bool {
        if bit < SUMMARY_BITS {
            self.words[bit / BITS] & (1 << (bit % BITS)) != 0
        } else {
            let word = bit - SUMMARY_BITS;
            assert!(word < BITS, "bit {bit} is beyond the bitmap");
            self.summary & (1 << word) != 0
        }
    }

    /// Inverts bit `bit` (numbered as for [`Bitmap::is_set`]), and nothing else: a test's
    /// corruption.
    #[cfg(test)]
    fn flip(&mut self, bit: usize) {
        if bit < SUMMARY_BITS {
            self.words[bit / BITS] ^= 1 << (bit % BITS);
        } else {
            self.summary ^= 1 << (bit - SUMMARY_BITS);
        }
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
            return Some(slot(word_index, here));
        }
        // `word_index + 1 <= WORDS <= BITS`; a shift by BITS must give an empty mask.
        let above = self.summary & u64::MAX.checked_shl(word_index as u32 + 1).unwrap_or(0);
        if above == 0 {
            return None;
        }
        let found = above.trailing_zeros() as usize;
        // SAFETY: the summary has bits only for existing words (set only with a bin's bit).
        unsafe { core::hint::assert_unchecked(found < WORDS) };
        Some(slot(found, self.words[found]))
    }

    /// The highest non-empty bin, if any.
    pub(crate) fn last(&self) -> Option<usize> {
        let word = self.summary.checked_ilog2()? as usize;
        // SAFETY: as in `first_at_or_above`: summary bits name existing words only.
        unsafe { core::hint::assert_unchecked(word < WORDS) };
        let bit = self.words[word].ilog2() as usize;
        Some(word * BITS + bit)
    }
}

/// The bin of the lowest set bit of `bits`, the word at `word_index`: below [`BIN_SLOTS`],
/// which the compiler is told, so a bin found in the bitmap indexes the lists and the bitmap
/// without a bounds check (and without a panic path in the shipped allocator).
#[inline(always)]
fn slot(word_index: usize, bits: u64) -> usize {
    let bin = word_index * BITS + bits.trailing_zeros() as usize;
    // SAFETY: `word_index < WORDS` (the callers index `words` with it) and `bits != 0` (the
    // callers found it so), so `trailing_zeros() < BITS` and `bin < WORDS * BITS`.
    unsafe { core::hint::assert_unchecked(word_index < WORDS && bits != 0 && bin < BIN_SLOTS) };
    bin
}

/// Fault injection for the checker's tests: the free index owns its bitmap privately, so a test
/// corrupts it from inside, at the next [`Bitmap::set`] its thread makes.
#[cfg(test)]
pub(crate) mod fault {
    extern crate std;

    use core::cell::Cell;

    std::thread_local! {
        static FLIP: Cell<Option<usize>> = const { Cell::new(None) };
    }

    /// Makes the next [`super::Bitmap::set`] on this thread
    /// invert bit `bit` (numbered as for [`super::Bitmap::is_set`]) after doing its own work.
    pub(crate) fn flip_on_next_set(bit: usize) {
        FLIP.set(Some(bit));
    }

    /// Whether a fault is still waiting for a `set`.
    pub(crate) fn pending() -> bool {
        FLIP.get().is_some()
    }

    pub(super) fn take() -> Option<usize> {
        FLIP.take()
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
        // Each step scans every bin: under Miri fewer steps.
        for _ in 0..if cfg!(miri) { 400 } else { 2000 } {
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
            assert_eq!(bitmap.contains(bin), bitmap.is_set(bin));
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

    #[test]
    fn summary_bits_follow_the_bins() {
        let mut bitmap = Bitmap::new();
        // The last bin, in the last word (the second or later, but with `--cfg heapworks_small_state`).
        let bin = BIN_COUNT - 1;
        let word = bin / BITS;
        bitmap.set(bin);
        assert!(bitmap.is_set(bin));
        assert!((0..BITS).all(|w| bitmap.is_set(SUMMARY_BITS + w) == (w == word)));
        bitmap.clear(bin);
        assert!((0..BITS).all(|w| !bitmap.is_set(SUMMARY_BITS + w)));
    }

    #[test]
    fn a_fault_flips_one_bit_at_the_next_set() {
        let mut bitmap = Bitmap::new();
        fault::flip_on_next_set(SUMMARY_BITS + WORDS);
        bitmap.set(0);
        assert!(!fault::pending());
        assert!(bitmap.is_set(0) && bitmap.is_set(SUMMARY_BITS));
        assert!(bitmap.is_set(SUMMARY_BITS + WORDS));
        bitmap.set(1);
        assert!(bitmap.is_set(SUMMARY_BITS + WORDS), "a fault fires once");
    }
}
