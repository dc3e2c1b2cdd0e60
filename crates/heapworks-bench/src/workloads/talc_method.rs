//! The request distributions of talc's benchmarks (ANCHORS §1), shared by the workloads that
//! follow its method.

use std::alloc::Layout;

use crate::rng::Rng;

/// talc's size: `cap = rand(16..max); size = rand(4..cap)`, biased towards small blocks.
pub fn size(rng: &mut Rng, max: usize) -> usize {
    let cap = rng.in_range(16, max);
    rng.in_range(4, cap)
}

/// talc's alignment: `8 << (trailing_zeros(rand u16) / 2)`; 75 % word-aligned, rarely more
/// than 64 (a zero draw gives `8 << 8`).
pub fn align(rng: &mut Rng) -> usize {
    8 << (rng.next_u16().trailing_zeros() / 2)
}

/// A request drawn from both distributions.
pub fn layout(rng: &mut Rng, max: usize) -> Layout {
    Layout::from_size_align(size(rng, max), align(rng)).expect("small power-of-two alignment")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_alignments_follow_talc() {
        let mut rng = Rng::new(3);
        let mut word_aligned = 0;
        for _ in 0..10_000 {
            let layout = layout(&mut rng, 200);
            assert!((4..199).contains(&layout.size()));
            assert!(layout.align() >= 8 && layout.align() <= 8 << 8);
            word_aligned += usize::from(layout.align() == 8);
        }
        assert!((7_000..8_000).contains(&word_aligned), "{word_aligned}");
    }
}
