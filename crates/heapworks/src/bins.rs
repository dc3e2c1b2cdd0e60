//! The bin map: which bin a free chunk of a given size belongs to.
//!
//! Sizes are counted in granules (`size / GRANULE`, at least 2). Small sizes get one *exact* bin
//! per granule count, so every chunk in an exact bin has the same size. From
//! `EXACT_LIMIT` granules up, each power of two (an *octave*) is split into
//! `SUB_BINS` equal *sub-bins*, as in TLSF:
//!
//! ```text
//! granules: 2 3 4 ... 63 | 64..71 72..79 ... 120..127 | 128..143 ... | ...
//! bin:      0 1 2 ... 61 | 62     63     ... 69       | 70       ... | ... BIN_COUNT-1
//!           exact bins   | octave 6 (8 sub-bins)      | octave 7     |
//! ```
//!
//! Invariants: `bin_of` is monotonic in the size; every size in bin `b` is at least
//! `bin_floor(b)`, and every size at least `bin_floor(b + 1)` maps above `b`. The last bin
//! also takes every size beyond the map (sizes no real machine reaches).

use crate::chunk::{GRANULE_SHIFT, MIN_CHUNK};

/// Granule counts below this have exact bins.
const EXACT_LIMIT: usize = 64;
/// The smallest chunk, in granules.
const MIN_GRANULES: usize = MIN_CHUNK >> GRANULE_SHIFT;
/// Number of exact bins.
const EXACT_BINS: usize = EXACT_LIMIT - MIN_GRANULES;
/// log2 of the number of sub-bins per octave.
const SUB_BITS: u32 = 3;
/// Sub-bins per octave.
const SUB_BINS: usize = 1 << SUB_BITS;
/// The first octave with sub-bins: `log2(EXACT_LIMIT)`.
const FIRST_OCTAVE: u32 = EXACT_LIMIT.trailing_zeros();
/// Octaves with sub-bins: enough for any size a 32-bit target can hold, and for chunks up to
/// 2^50 bytes (1 PiB) on 64-bit targets.
const OCTAVES: usize = {
    let addressable = (usize::BITS - GRANULE_SHIFT - FIRST_OCTAVE) as usize;
    if addressable < 40 {
        addressable
    } else {
        40
    }
};

/// Total number of bins.
pub(crate) const BIN_COUNT: usize = EXACT_BINS + OCTAVES * SUB_BINS;

/// The bin of a free chunk of `size` bytes (`size >= MIN_CHUNK`, a multiple of `GRANULE`).
#[inline(always)]
pub(crate) const fn bin_of(size: usize) -> usize {
    let granules = size >> GRANULE_SHIFT;
    if granules < EXACT_LIMIT {
        return granules - MIN_GRANULES;
    }
    // `granules >> (octave - SUB_BITS)` is `SUB_BINS + sub`, so the bin is
    // `EXACT_BINS + (octave - FIRST_OCTAVE) * SUB_BINS + sub`, folded into one constant.
    // `| 1` lets the compiler see the operand is non-zero.
    let octave = (granules | 1).ilog2() as usize;
    let bin =
        octave * SUB_BINS + (granules >> (octave - SUB_BITS as usize)) + EXACT_BINS - LOG_BIN_BASE;
    if bin < BIN_COUNT {
        bin
    } else {
        BIN_COUNT - 1
    }
}

/// What `octave * SUB_BINS + (SUB_BINS + sub)` is for the first sub-bin of the first octave.
const LOG_BIN_BASE: usize = FIRST_OCTAVE as usize * SUB_BINS + SUB_BINS;

/// The smallest size (in bytes) that maps to `bin`.
const fn bin_floor(bin: usize) -> usize {
    let granules = if bin < EXACT_BINS {
        bin + MIN_GRANULES
    } else {
        let octave = FIRST_OCTAVE as usize + (bin - EXACT_BINS) / SUB_BINS;
        let sub = (bin - EXACT_BINS) % SUB_BINS;
        (SUB_BINS + sub) << (octave - SUB_BITS as usize)
    };
    granules << GRANULE_SHIFT
}

/// `BIN_FLOORS[b]` is the smallest size in bin `b`; `BIN_FLOORS[BIN_COUNT]` is `usize::MAX`, as
/// the last bin takes every larger size.
const BIN_FLOORS: [usize; BIN_COUNT + 1] = {
    let mut floors = [usize::MAX; BIN_COUNT + 1];
    let mut bin = 0;
    while bin < BIN_COUNT {
        floors[bin] = bin_floor(bin);
        bin += 1;
    }
    floors
};

/// Whether a chunk of `size` bytes belongs to `bin`: two loads, cheaper than [`bin_of`].
#[inline(always)]
pub(crate) fn in_bin(bin: usize, size: usize) -> bool {
    BIN_FLOORS[bin] <= size && size < BIN_FLOORS[bin + 1]
}

/// Whether a chunk of `size` bytes falls in an exact bin.
#[inline(always)]
pub(crate) const fn is_exact_size(size: usize) -> bool {
    size >> GRANULE_SHIFT < EXACT_LIMIT
}

/// Whether every chunk in `bin` has the same size, so any of them serves any request that
/// maps to the bin.
#[inline(always)]
pub(crate) const fn is_exact(bin: usize) -> bool {
    bin < EXACT_BINS
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::GRANULE;

    #[test]
    fn exact_bins_hold_one_size_each() {
        for bin in 0..EXACT_BINS {
            let size = bin_floor(bin);
            assert!(is_exact(bin));
            assert_eq!(bin_of(size), bin);
            assert_eq!(bin_of(size + GRANULE), bin + 1);
        }
        assert_eq!(bin_of(MIN_CHUNK), 0);
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
            if bin + 1 < BIN_COUNT {
                assert!(bin_floor(bin + 1) > size);
                assert_eq!(bin_of(bin_floor(bin + 1)), bin + 1);
            }
            last_bin = bin;
            size += GRANULE * (1 + size / 4096);
        }
    }

    #[test]
    fn in_bin_agrees_with_bin_of() {
        let mut size = MIN_CHUNK;
        while size < (1 << 24) {
            let bin = bin_of(size);
            assert!(in_bin(bin, size));
            assert!(bin == 0 || !in_bin(bin - 1, size));
            assert!(bin + 1 == BIN_COUNT || !in_bin(bin + 1, size));
            size += GRANULE * (1 + size / 2048);
        }
        assert!(in_bin(BIN_COUNT - 1, usize::MAX & !(GRANULE - 1)));
    }

    #[test]
    fn huge_sizes_land_in_the_last_bin() {
        assert_eq!(bin_of(usize::MAX & !(GRANULE - 1)), BIN_COUNT - 1);
        assert!(bin_of(1 << 30) < BIN_COUNT);
    }

    #[test]
    fn bin_count_fits_a_two_level_bitmap() {
        assert!(BIN_COUNT <= (usize::BITS * usize::BITS) as usize);
    }
}
