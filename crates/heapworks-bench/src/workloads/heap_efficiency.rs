//! talc's heap-efficiency benchmark (ANCHORS §1): how much of the heap holds requested bytes
//! when the first request fails.
//!
//! A round draws actions from `0..10` on a fresh live set: 0–4 allocate a block of talc's
//! distribution with sizes below 10 000 B, 5 frees a random live block, 6–9 reallocate a
//! random live block to `rand(1..100 000)`. The first refused allocation or reallocation ends
//! the round; the requested bytes then live count as used. Efficiency is the sum of used bytes
//! over all rounds divided by the sum of heap sizes. Only arenas take part.
//!
//! For studying why a round ends, [`round`] runs one and returns the [`Refused`] request with
//! the live blocks, and [`Gaps`] measures the space between them (the example
//! `heap_efficiency_failures` prints both, round by round).

use std::alloc::Layout;
use std::ops::Range;

use crate::contenders::{Arena, RawHeap, UseAllocator};
use crate::rng::Rng;
use crate::timing::Deadline;

use super::blocks::{Block, LiveBlocks};
use super::WorkloadId;
use super::{mib, run_trial, talc_method, Better, Case, Config, Failure, MetricSpec, TrialOutcome};

/// Largest allocation size (exclusive).
const MAX_SIZE: usize = 10_000;
/// Realloc targets go up to this multiple of [`MAX_SIZE`].
const REALLOC_FACTOR: usize = 10;
/// Actions between two looks at the deadline.
const ACTIONS_PER_CLOCK_CHECK: usize = 64;

const METRICS: [MetricSpec; 2] = [
    MetricSpec::primary("efficiency", "%", Better::Higher),
    MetricSpec::secondary("live blocks at failure", "blocks", Better::Higher),
];

/// One case: `rounds` rounds per trial over the configured heap.
pub fn cases(config: &Config) -> Vec<Case> {
    let heap_len = config.pick(mib(4), mib(128), mib(128));
    let rounds = config.pick(1, 3, 43);
    let budget = config.trial_budget();
    vec![Case {
        workload: WorkloadId::HeapEfficiency,
        name: format!("{} MiB heap, {rounds} rounds", heap_len >> 20),
        heap_len,
        arena_only: true,
        metrics: METRICS.to_vec(),
        run: Box::new(move |allocator, region, seed| {
            let trial = Trial {
                heap_len,
                rounds,
                seed,
                deadline: Deadline::after(budget),
            };
            run_trial(allocator, region, heap_len, trial)
        }),
    }]
}

struct Trial {
    heap_len: usize,
    rounds: usize,
    seed: u64,
    deadline: Deadline,
}

impl UseAllocator for Trial {
    type Output = TrialOutcome;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> TrialOutcome {
        let mut rng = Rng::new(self.seed);
        let mut used = 0usize;
        let mut blocks_at_failure = 0usize;
        for _ in 0..self.rounds {
            let (live, _) = round(arena, &mut rng, &self.deadline)?;
            live.verify_sample()?;
            used += live.requested_bytes();
            blocks_at_failure += live.len();
            live.free_all(arena);
        }
        let efficiency = used as f64 / (self.heap_len * self.rounds) as f64 * 100.0;
        Ok(vec![
            efficiency,
            blocks_at_failure as f64 / self.rounds as f64,
        ])
    }
}

/// A request the allocator refused, which ends a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// An allocation of this layout.
    Allocate(Layout),
    /// A reallocation of a block of `from` bytes to `to` bytes.
    Reallocate {
        /// The block's size.
        from: usize,
        /// The size asked for.
        to: usize,
    },
}

/// One round of the method on a fresh live set, drawing from `rng`: actions until the
/// allocator refuses one. Returns the blocks live at that moment and the refused request.
pub fn round<H: RawHeap>(
    arena: &Arena<'_, H>,
    rng: &mut Rng,
    deadline: &Deadline,
) -> Result<(LiveBlocks, Refused), Failure> {
    let mut live = LiveBlocks::with_capacity(1 << 14);
    loop {
        for _ in 0..ACTIONS_PER_CLOCK_CHECK {
            if let Some(refused) = act(arena, rng, &mut live) {
                return Ok((live, refused));
            }
        }
        if deadline.passed() {
            live.free_all(arena);
            return Err(Failure::TimedOut(deadline.budget()));
        }
    }
}

/// One action; the request if the allocator refused it.
fn act<H: RawHeap>(arena: &Arena<'_, H>, rng: &mut Rng, live: &mut LiveBlocks) -> Option<Refused> {
    match rng.below(10) {
        0..=4 => {
            let layout = talc_method::layout(rng, MAX_SIZE);
            let block = Block::allocate(arena, layout);
            let refused = block.is_none().then_some(Refused::Allocate(layout));
            live.extend(block);
            refused
        }
        5 => {
            if !live.is_empty() {
                let index = rng.below(live.len());
                live.swap_remove(index).free(arena);
            }
            None
        }
        _ => {
            if live.is_empty() {
                return None;
            }
            let index = rng.below(live.len());
            let to = rng.in_range(1, MAX_SIZE * REALLOC_FACTOR);
            let block = live.get_mut(index);
            let from = block.layout.size();
            (!block.reallocate(arena, to)).then_some(Refused::Reallocate { from, to })
        }
    }
}

/// The space between the live blocks of a heap and at its ends: what an allocator keeps free
/// there, and its headers and padding. Measured from the blocks' addresses alone, so the same
/// for every allocator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gaps {
    /// Bytes in all gaps.
    pub total: usize,
    /// The largest gap.
    pub largest: usize,
    /// Gaps by size: entry `k` counts the gaps of `2^k ..= 2^(k+1) - 1` bytes, and their bytes.
    pub by_octave: [(usize, usize); usize::BITS as usize],
}

impl Gaps {
    /// The gaps between `blocks` (disjoint, inside `heap`) and at the heap's ends.
    pub fn between(blocks: &[Block], heap: Range<usize>) -> Gaps {
        let mut spans: Vec<(usize, usize)> = blocks
            .iter()
            .map(|block| (block.ptr as usize, block.ptr as usize + block.layout.size()))
            .collect();
        spans.sort_unstable();
        let mut gaps = Gaps {
            total: 0,
            largest: 0,
            by_octave: [(0, 0); usize::BITS as usize],
        };
        let mut end = heap.start;
        for (start, next_end) in spans.into_iter().chain([(heap.end, heap.end)]) {
            let gap = start.saturating_sub(end);
            if gap > 0 {
                gaps.total += gap;
                gaps.largest = gaps.largest.max(gap);
                let octave = &mut gaps.by_octave[gap.ilog2() as usize];
                *octave = (octave.0 + 1, octave.1 + gap);
            }
            end = end.max(next_end);
        }
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(addr: usize, size: usize) -> Block {
        Block {
            ptr: addr as *mut u8,
            layout: Layout::from_size_align(size, 8).unwrap(),
        }
    }

    #[test]
    fn gaps_are_measured_between_blocks_and_at_the_ends() {
        let blocks = [
            block(0x1100, 0x100),
            block(0x1000, 0x80),
            block(0x1300, 0x10),
        ];
        let gaps = Gaps::between(&blocks, 0x1000..0x2000);
        // 0x1080..0x1100, 0x1200..0x1300, 0x1310..0x2000.
        assert_eq!(gaps.total, 0x80 + 0x100 + 0xcf0);
        assert_eq!(gaps.largest, 0xcf0);
        assert_eq!(gaps.by_octave[7], (1, 0x80));
        assert_eq!(gaps.by_octave[8], (1, 0x100));
        assert_eq!(gaps.by_octave[11], (1, 0xcf0));
    }
}
