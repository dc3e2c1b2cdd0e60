//! Seed 003's synthetic scripts, generated.
//!
//! - [`insert_delete`]`(n)`: `2n` mallocs, then every other block freed (`n` frees: inserts into
//!   the allocator's free index with no coalescing, as the neighbours stay allocated), then `n`
//!   mallocs (removals from the index), then everything freed. Seed 003 times the middle:
//!   requests `2n..4n`.
//! - [`realloc_free`]`(n)`: the same `2n` mallocs and `n` frees, then a realloc of each of the
//!   `n` remaining blocks, to a size from half to twice the old one, skewed toward growing (each
//!   realloc coalesces with a free neighbour), then everything freed. Timed: requests `3n..4n`.
//! - [`fill_then_free`]`(count, size)`: `count` mallocs of `size` bytes, then each freed in
//!   allocation order: the simplest trace with a known peak (`count × size` live bytes).
//!
//! Sizes are multiples of 8 from 8 to 512 bytes, so many blocks share a size, as in the seed's
//! scripts. Invariant: the same `n` and `seed` always give the same trace (the generator is a
//! fixed SplitMix64 stream), and each trace's notes say how it was made and what to time.

use crate::model::{InvalidOp, Op, OpKind, Trace, MAX_ID};

/// The smallest and largest sizes drawn (multiples of 8 in between).
pub const SIZE_RANGE: (u64, u64) = (8, 512);
/// Largest `n`: the scripts use ids `0..2n`.
pub const MAX_N: u32 = MAX_ID / 2;

fn check_n(n: u32) -> Result<(), InvalidOp> {
    if n > MAX_N {
        return Err(InvalidOp::IdTooLarge(2 * u64::from(n) - 1));
    }
    Ok(())
}

/// `count` blocks of `size` bytes allocated, then freed in the same order.
pub fn fill_then_free(count: u32, size: u64) -> Result<Trace, InvalidOp> {
    let mut trace = Trace::new();
    for kind in [OpKind::Malloc { size }, OpKind::Free] {
        for id in 0..count {
            trace.push(Op {
                thread: 0,
                id,
                kind,
            })?;
        }
    }
    Ok(trace)
}

/// Seed 003's insert-delete script for `n` free-index insertions and removals.
pub fn insert_delete(n: u32, seed: u64) -> Result<Trace, InvalidOp> {
    check_n(n)?;
    let mut script = Script::new(seed);
    script.trace.add_note(&format!(
        "seed 003 insert-delete, n = {n}, seed = {seed}: {} mallocs, {n} frees of every other \
         block, {n} mallocs, then all freed; time requests {}..{} (-r {} {})",
        2 * u64::from(n),
        2 * u64::from(n),
        4 * u64::from(n),
        2 * u64::from(n),
        4 * u64::from(n),
    ));
    script.allocate_pairs(n)?;
    script.free_every_other(n)?;
    for id in (0..2 * n).step_by(2) {
        let size = script.random_size();
        script.push(id, OpKind::Malloc { size })?;
    }
    for id in 0..2 * n {
        script.push(id, OpKind::Free)?;
    }
    Ok(script.trace)
}

/// Seed 003's realloc-free script for `n` coalescing reallocs.
pub fn realloc_free(n: u32, seed: u64) -> Result<Trace, InvalidOp> {
    check_n(n)?;
    let mut script = Script::new(seed);
    script.trace.add_note(&format!(
        "seed 003 realloc-free, n = {n}, seed = {seed}: {} mallocs, {n} frees of every other \
         block, {n} reallocs (0.5x to 2x, skewed up), then all freed; time requests {}..{} \
         (-r {} {})",
        2 * u64::from(n),
        3 * u64::from(n),
        4 * u64::from(n),
        3 * u64::from(n),
        4 * u64::from(n),
    ));
    let sizes = script.allocate_pairs(n)?;
    script.free_every_other(n)?;
    for id in (1..2 * n).step_by(2) {
        let size = script.resized(sizes[id as usize]);
        script.push(id, OpKind::Realloc { size })?;
    }
    for id in (1..2 * n).step_by(2) {
        script.push(id, OpKind::Free)?;
    }
    Ok(script.trace)
}

struct Script {
    trace: Trace,
    random: SplitMix64,
}

impl Script {
    fn new(seed: u64) -> Self {
        Self {
            trace: Trace::new(),
            random: SplitMix64(seed),
        }
    }

    fn push(&mut self, id: u32, kind: OpKind) -> Result<(), InvalidOp> {
        self.trace.push(Op {
            thread: 0,
            id,
            kind,
        })
    }

    /// `2n` mallocs of ids `0..2n`; returns their sizes.
    fn allocate_pairs(&mut self, n: u32) -> Result<Vec<u64>, InvalidOp> {
        (0..2 * n)
            .map(|id| {
                let size = self.random_size();
                self.push(id, OpKind::Malloc { size })?;
                Ok(size)
            })
            .collect()
    }

    /// Frees the even ids below `2n`.
    fn free_every_other(&mut self, n: u32) -> Result<(), InvalidOp> {
        (0..2 * n)
            .step_by(2)
            .try_for_each(|id| self.push(id, OpKind::Free))
    }

    fn random_size(&mut self) -> u64 {
        let (low, high) = SIZE_RANGE;
        low + 8 * (self.random.next() % ((high - low) / 8 + 1))
    }

    /// A new size from half to twice `old`: growing (to 1x..2x) three times in five.
    fn resized(&mut self, old: u64) -> u64 {
        let fraction = self.random.next() % 1024;
        let size = if self.random.next() % 5 < 3 {
            old + old * fraction / 1024
        } else {
            old / 2 + old / 2 * fraction / 1024
        };
        size.next_multiple_of(8).max(8)
    }
}

/// SplitMix64: a tiny, well-distributed generator, fixed here so scripts never change.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
