//! The bin map: which bin a free chunk of a given size belongs to.
//!
//! Sizes are counted in granules (`size / GRANULE`, at least 2). Each power of two of granule
//! counts (an *octave*) is split into `SUB_BINS` (64) equal *sub-bins*, as in TLSF; the first
//! octave with sub-bins, 64..127 granules, and everything below it have one granule per bin,
//! so every chunk of such an *exact* bin has the same size:
//!
//! ```text
//! granules: 2 3 ... 127        | 128..129 130..131 ... 254..255 | 256..259 ... | ...
//! bin:      0 1 ... 125        | 126      127      ... 189      | 190      ... | ... BIN_COUNT-1
//!           exact bins (≤ 2 KiB | octave 7 (64 sub-bins)         | octave 8     |
//!           on 64-bit targets)
//! ```
//!
//! One formula covers both kinds ([`bin_of`]), with no branch: octaves below the first are
//! folded onto it, where the sub-bin width is one granule.
//!
//! Invariants: `bin_of` is monotonic in the size; every size in bin `b` is at least
//! `bin_floor(b)`, every size at least `bin_floor(b + 1)` maps above `b`, so every chunk of a
//! bin at or above [`ceil_bin_of`]`(size)` holds `size` bytes. Every `usize` size has a bin of its
//! own octave, so no size is clamped.
//!
//! **The number of bins is a compile-time choice** ([`SUB_BITS`]), since the list heads are most
//! of a heap's state: 64 sub-bins per octave on 64-bit targets (3518 bins, 28 KiB of heads: the
//! tightest fit, for hosted programs), 16 on 32-bit targets (414 bins, 1.8 KiB: wasm32 and
//! microcontrollers, where the state shares a Gear page or the RAM with the program), and 2
//! when built with `--cfg heapworks_small_state` (56 bins on 32-bit targets: a `FrontHeap`'s
//! whole state 480 B on i686 and 496 B on wasm32, for firmware with 16–64 KiB of RAM; half-octave bins, so requests skip
//! more of the free chunks in their own bin).

use crate::chunk::{GRANULE_SHIFT, MIN_CHUNK};

/// log2 of the number of sub-bins per octave: the bin map's one knob (see the module docs).
const SUB_BITS: u32 = if cfg!(heapworks_small_state) {
    1
} else if cfg!(target_pointer_width = "64") {
    6
} else {
    4
};
/// Sub-bins per octave; also the first granule count past the octaves folded onto the first.
const SUB_BINS: usize = 1 << SUB_BITS;
/// The smallest chunk, in granules.
const MIN_GRANULES: usize = MIN_CHUNK >> GRANULE_SHIFT;
/// Bins of one granule each: every granule count below two octaves of sub-bins.
const EXACT_BINS: usize = 2 * SUB_BINS - MIN_GRANULES;
/// Octave shifts with bins of their own (shift 0 holds the exact bins): enough for every
/// granule count a `usize` can hold, so no size needs clamping into the map.
const SHIFTS: usize = (usize::BITS - GRANULE_SHIFT - SUB_BITS) as usize;

/// The smallest size above the exact bins (2 KiB on 64-bit targets, 256 B on 32-bit ones).
pub(crate) const EXACT_LIMIT: usize = (2 * SUB_BINS) << GRANULE_SHIFT;

/// Total number of bins: the exact ones and `SUB_BINS` for every further shift.
pub(crate) const BIN_COUNT: usize = EXACT_BINS + (SHIFTS - 1) * SUB_BINS;

/// The octave shift of a granule count: how many low bits its sub-bin ignores.
#[inline(always)]
const fn sub_bin_shift(granules: usize) -> u32 {
    (granules | SUB_BINS).ilog2() - SUB_BITS
}

/// The bin formula on a granule count. A count below the smallest chunk's wraps around to
/// `usize::MAX` (the "bin" before bin 0), which [`ceil_bin_of`] relies on.
#[inline(always)]
const fn bin_of_granules(granules: usize) -> usize {
    let shift = sub_bin_shift(granules);
    // `granules >> shift` is `SUB_BINS + sub` above the first octave, and the granule count
    // itself within or below it.
    (((shift as usize) << SUB_BITS) + (granules >> shift)).wrapping_sub(MIN_GRANULES)
}

/// Whether [`bin_of`] takes the exact bins' shortcut: natively, where a predictable branch
/// costs less than the formula's seven operations; not on wasm32, where each branch is a metered
/// block (crates/heapworks/TUNING.md).
const EXACT_SHORTCUT: bool = !cfg!(target_arch = "wasm32");

/// The bin of a free chunk of `size` bytes (`size >= MIN_CHUNK`, a multiple of `GRANULE`).
/// Below [`EXACT_LIMIT`] the formula reduces to the granule count less the smallest chunk's,
/// which is what the shortcut computes (tested equal below).
#[inline(always)]
pub(crate) const fn bin_of(size: usize) -> usize {
    let granules = size >> GRANULE_SHIFT;
    let bin = if EXACT_SHORTCUT && size < EXACT_LIMIT {
        granules.wrapping_sub(MIN_GRANULES)
    } else {
        bin_of_granules(granules)
    };
    // SAFETY: the formula is monotonic in the size and gives `BIN_COUNT - 1` for the largest
    // `usize` (both tested below), so every size's bin is below `BIN_COUNT`. Telling the
    // compiler spares a bounds check wherever a bin indexes the lists or the bitmap.
    unsafe { core::hint::assert_unchecked(bin < BIN_COUNT) };
    bin
}

/// The lowest bin whose every chunk holds `size` bytes (`size >= MIN_CHUNK`, a multiple of
/// `GRANULE`): the bin after the one of the granule count just below `size`'s, since that bin's
/// floor is at most the count and the next floor is above it. A request searched from here
/// never needs to look at a chunk's size (TLSF's "good fit").
#[inline(always)]
pub(crate) const fn ceil_bin_of(size: usize) -> usize {
    let bin = bin_of_granules((size >> GRANULE_SHIFT) - 1).wrapping_add(1);
    // SAFETY: as for `bin_of`, and `size` rounds at most one bin up.
    unsafe { core::hint::assert_unchecked(bin <= BIN_COUNT) };
    bin
}

/// The smallest size (in bytes) that maps to `bin`.
#[cfg(test)]
const fn bin_floor(bin: usize) -> usize {
    let folded = bin + MIN_GRANULES;
    let granules = if folded < 2 * SUB_BINS {
        folded
    } else {
        let shift = (folded >> SUB_BITS) - 1;
        (folded - (shift << SUB_BITS)) << shift
    };
    granules << GRANULE_SHIFT
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::GRANULE;

    #[test]
    fn exact_bins_hold_one_size_each() {
        for bin in 0..EXACT_BINS {
            let size = bin_floor(bin);
            assert_eq!(bin_of(size), bin);
            assert_eq!(ceil_bin_of(size), bin);
            assert_eq!(bin_of(size + GRANULE), bin + 1);
        }
        assert_eq!(bin_of(MIN_CHUNK), 0);
        assert_eq!(bin_floor(EXACT_BINS), 2 * SUB_BINS * GRANULE);
    }

    #[test]
    fn the_exact_shortcut_agrees_with_the_formula() {
        let mut size = MIN_CHUNK;
        while size < 4 * EXACT_LIMIT {
            assert_eq!(
                bin_of(size),
                bin_of_granules(size >> GRANULE_SHIFT),
                "size {size}"
            );
            size += GRANULE;
        }
    }

    #[test]
    fn bins_are_monotonic_and_floors_are_exact() {
        let mut size = MIN_CHUNK;
        let mut last_bin = 0;
        // Walk sizes with a growing step so the test covers every octave quickly.
        while size < (1 << 28) {
            let bin = bin_of(size);
            assert!(bin >= last_bin, "bin_of not monotonic at {size}");
            assert!(bin_floor(bin) <= size, "floor of bin {bin} above {size}");
            assert!(bin_floor(bin + 1) > size);
            assert_eq!(bin_of(bin_floor(bin + 1)), bin + 1);
            last_bin = bin;
            size += GRANULE * (1 + size / 4096);
        }
    }

    #[test]
    fn the_ceiling_bin_is_the_lowest_whose_every_chunk_fits() {
        let mut size = MIN_CHUNK;
        while size < (1 << 26) {
            let ceil = ceil_bin_of(size);
            assert!(
                bin_floor(ceil) >= size,
                "bin {ceil} holds chunks below {size}"
            );
            assert!(ceil == 0 || bin_floor(ceil - 1) < size);
            assert_eq!(ceil == bin_of(size), bin_floor(bin_of(size)) == size);
            size += GRANULE * (1 + size / 8192);
        }
    }

    #[test]
    fn the_largest_size_lands_in_the_last_bin() {
        assert_eq!(bin_of(usize::MAX & !(GRANULE - 1)), BIN_COUNT - 1);
        assert_eq!(ceil_bin_of(usize::MAX & !(GRANULE - 1)), BIN_COUNT);
        assert_eq!(bin_of(bin_floor(BIN_COUNT - 1)), BIN_COUNT - 1);
        assert_eq!(bin_of(bin_floor(BIN_COUNT - 1) - GRANULE), BIN_COUNT - 2);
        assert!(bin_of(1 << 30) < BIN_COUNT - 1);
    }

    #[test]
    fn bin_count_fits_a_two_level_bitmap() {
        assert!(BIN_COUNT <= (u64::BITS * u64::BITS) as usize);
    }
}
