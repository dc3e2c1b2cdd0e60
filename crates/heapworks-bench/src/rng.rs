//! A small deterministic random number generator (xoshiro256**, seeded through SplitMix64).
//!
//! The benchmark needs identical operation sequences for every allocator in a trial and
//! across runs with the same `--seed`, so it owns its generator instead of depending on a
//! crate whose output could change between versions.

/// xoshiro256** with explicit seeding. Not cryptographic; fast and reproducible.
#[derive(Debug, Clone)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    /// A generator whose whole sequence is determined by `seed`.
    pub fn new(seed: u64) -> Self {
        let mut mixer = seed;
        let state = [
            splitmix64(&mut mixer),
            splitmix64(&mut mixer),
            splitmix64(&mut mixer),
            splitmix64(&mut mixer),
        ];
        Self { state }
    }

    /// The next 64 uniformly distributed bits.
    pub fn next_u64(&mut self) -> u64 {
        let [s0, s1, s2, s3] = self.state;
        let result = s1.wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s1 << 17;
        let s2 = s2 ^ s0;
        let s3 = s3 ^ s1;
        let s1 = s1 ^ s2;
        let s0 = s0 ^ s3;
        let s2 = s2 ^ t;
        let s3 = s3.rotate_left(45);
        self.state = [s0, s1, s2, s3];
        result
    }

    /// A uniform value in `0..bound` (Lemire's multiply-shift; `bound` must be non-zero).
    pub fn below(&mut self, bound: usize) -> usize {
        debug_assert!(bound > 0);
        ((u128::from(self.next_u64()) * bound as u128) >> 64) as usize
    }

    /// A uniform value in `low..high` (`low < high`).
    pub fn in_range(&mut self, low: usize, high: usize) -> usize {
        low + self.below(high - low)
    }

    /// A uniform value in `low..=high`.
    pub fn in_range_inclusive(&mut self, low: usize, high: usize) -> usize {
        self.in_range(low, high + 1)
    }

    /// 16 uniformly distributed bits.
    pub fn next_u16(&mut self) -> u16 {
        (self.next_u64() >> 48) as u16
    }

    /// `true` with probability `numerator / denominator`.
    pub fn chance(&mut self, numerator: usize, denominator: usize) -> bool {
        self.below(denominator) < numerator
    }
}

/// One SplitMix64 step: turns any seed, even 0, into well-mixed state words.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Derives an independent seed for one (case, trial) pair from the run's seed.
pub fn derive_seed(seed: u64, label: &str, trial: usize) -> u64 {
    let mut state = seed;
    for byte in label.bytes().chain((trial as u64).to_le_bytes()) {
        state ^= u64::from(byte);
        splitmix64(&mut state);
    }
    splitmix64(&mut state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn ranges_stay_in_bounds() {
        let mut rng = Rng::new(1);
        for _ in 0..10_000 {
            let v = rng.in_range(16, 200);
            assert!((16..200).contains(&v));
            assert!(rng.in_range_inclusive(3, 4) <= 4);
        }
    }

    #[test]
    fn derived_seeds_differ_by_trial_and_label() {
        assert_ne!(derive_seed(1, "a", 0), derive_seed(1, "a", 1));
        assert_ne!(derive_seed(1, "a", 0), derive_seed(1, "b", 0));
        assert_eq!(derive_seed(1, "a", 0), derive_seed(1, "a", 0));
    }
}
