//! Realloc with free neighbours (seed `003_…`): how fast blocks resize when the blocks beside
//! them are free, so that in-place growth and coalescing are possible.
//!
//! Untimed, 2N blocks of 16–256 B are allocated and every other one freed. Timed, every
//! remaining block is reallocated once: up to `old + 1 ..= 2·old` with probability 55 %
//! (the seed's slight skew towards growth), otherwise down to `old/2 .. old`. Reports the
//! total time, the average response time, the 99th percentile of the responses of one realloc
//! in eight, each timed alone ([`SampledPhase`]), the share of reallocs that kept their
//! address, and the seed's utilization ([`Utilization`]).
//! Only arenas take part.

use crate::contenders::{Arena, RawHeap, UseAllocator};
use crate::rng::Rng;
use crate::stats::p99;
use crate::timing::{Deadline, SampledPhase};

use super::blocks::{Block, LiveBlocks, Utilization};
use super::insert_delete::{
    allocate_sequence, cases_per_block_count, free_within, release_all, split_alternate,
    P99_RESPONSE, REQUESTS_PER_CLOCK_CHECK, UTILIZATION,
};
use super::{Better, Case, Config, Failure, MetricSpec, TrialOutcome, WorkloadId};

/// Percent chance that a realloc grows the block.
const GROW_PERCENT: usize = 55;

const METRICS: [MetricSpec; 5] = [
    MetricSpec::primary("total", "ms", Better::Lower),
    MetricSpec::primary("response", "ns/realloc", Better::Lower),
    MetricSpec::secondary("in place", "%", Better::Higher),
    P99_RESPONSE,
    UTILIZATION,
];

/// One case per N (the same N as insert-delete).
pub fn cases(config: &Config) -> Vec<Case> {
    cases_per_block_count(
        config,
        WorkloadId::ReallocCoalesce,
        &METRICS,
        |blocks, seed, deadline| Trial {
            blocks,
            seed,
            deadline,
        },
    )
}

/// The new size for a block of `old` bytes: up with probability 55 %, otherwise down.
fn resized(rng: &mut Rng, old: usize) -> usize {
    if rng.chance(GROW_PERCENT, 100) {
        rng.in_range_inclusive(old + 1, old * 2)
    } else {
        rng.in_range((old / 2).max(1), old)
    }
}

struct Trial {
    blocks: usize,
    seed: u64,
    deadline: Deadline,
}

impl UseAllocator for Trial {
    type Output = TrialOutcome;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> TrialOutcome {
        let mut rng = Rng::new(self.seed);
        let all = allocate_sequence(arena, &mut rng, self.blocks * 2, &self.deadline)?;
        let mut usage = Utilization::default();
        usage.include(&all);
        let (mut to_free, kept) = split_alternate(all);
        // Highest address first: cheap for address-ordered free lists. Untimed, but buddy
        // allocators search a list per free, so the deadline still applies.
        to_free.reverse();
        if let Err(failure) = free_within(arena, to_free, &self.deadline) {
            release_all(arena, kept);
            return Err(failure);
        }
        let mut live = LiveBlocks::with_capacity(self.blocks);
        kept.into_iter().for_each(|block| live.push(block));
        let targets: Vec<usize> = live
            .as_slice()
            .iter()
            .map(|b| resized(&mut rng, b.layout.size()))
            .collect();
        usage.note_live(peak_while_resizing(live.as_slice(), &targets));

        let mut phase = SampledPhase::start(self.blocks);
        let in_place = self.realloc_all(arena, &mut live, &targets, &mut phase);
        let (elapsed, samples) = phase.finish();
        let in_place = match in_place {
            Ok(count) => count,
            Err(failure) => {
                live.release(arena);
                return Err(failure);
            }
        };
        live.verify_sample()?;
        usage.include(live.as_slice());
        live.release(arena);
        Ok(vec![
            elapsed.as_secs_f64() * 1e3,
            elapsed.as_secs_f64() * 1e9 / self.blocks as f64,
            in_place as f64 / self.blocks as f64 * 100.0,
            p99(&samples),
            usage.percent(),
        ])
    }
}

/// The most requested bytes live at once while `blocks` are reallocated in order to `targets`.
fn peak_while_resizing(blocks: &[Block], targets: &[usize]) -> usize {
    let mut live: usize = blocks.iter().map(|block| block.layout.size()).sum();
    let mut peak = live;
    for (block, &target) in blocks.iter().zip(targets) {
        live = live - block.layout.size() + target;
        peak = peak.max(live);
    }
    peak
}

impl Trial {
    /// Reallocates every live block to its target; the number that kept their address.
    fn realloc_all<H: RawHeap>(
        &self,
        arena: &Arena<'_, H>,
        live: &mut LiveBlocks,
        targets: &[usize],
        phase: &mut SampledPhase,
    ) -> Result<usize, Failure> {
        let mut in_place = 0;
        for (index, (block, &target)) in live.as_mut_slice().iter_mut().zip(targets).enumerate() {
            let before: Block = *block;
            if !phase.request(|| block.reallocate(arena, target)) {
                return Err(Failure::OutOfMemory);
            }
            in_place += usize::from(before.ptr == block.ptr);
            if index % REQUESTS_PER_CLOCK_CHECK == 0 && self.deadline.passed() {
                return Err(Failure::TimedOut(self.deadline.budget()));
            }
        }
        Ok(in_place)
    }
}
