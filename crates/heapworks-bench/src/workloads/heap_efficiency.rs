//! talc's heap-efficiency benchmark (ANCHORS §1): how much of the heap holds requested bytes
//! when the first request fails.
//!
//! A round draws actions from `0..10` on a fresh live set: 0–4 allocate a block of talc's
//! distribution with sizes below 10 000 B, 5 frees a random live block, 6–9 reallocate a
//! random live block to `rand(1..100 000)`. The first refused allocation or reallocation ends
//! the round; the requested bytes then live count as used. Efficiency is the sum of used bytes
//! over all rounds divided by the sum of heap sizes. Only arenas take part.

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
            let live = fill_until_failure(arena, &mut rng, &self.deadline)?;
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

/// Runs actions until the allocator refuses one; returns the blocks live at that moment.
fn fill_until_failure<H: RawHeap>(
    arena: &Arena<'_, H>,
    rng: &mut Rng,
    deadline: &Deadline,
) -> Result<LiveBlocks, Failure> {
    let mut live = LiveBlocks::with_capacity(1 << 14);
    loop {
        for _ in 0..ACTIONS_PER_CLOCK_CHECK {
            if !act(arena, rng, &mut live) {
                return Ok(live);
            }
        }
        if deadline.passed() {
            live.free_all(arena);
            return Err(Failure::TimedOut(deadline.budget()));
        }
    }
}

/// One action; `false` when the allocator refused it.
fn act<H: RawHeap>(arena: &Arena<'_, H>, rng: &mut Rng, live: &mut LiveBlocks) -> bool {
    match rng.below(10) {
        0..=4 => {
            let block = Block::allocate(arena, talc_method::layout(rng, MAX_SIZE));
            let allocated = block.is_some();
            live.extend(block);
            allocated
        }
        5 => {
            if !live.is_empty() {
                let index = rng.below(live.len());
                live.swap_remove(index).free(arena);
            }
            true
        }
        _ => {
            if live.is_empty() {
                return true;
            }
            let index = rng.below(live.len());
            let new_size = rng.in_range(1, MAX_SIZE * REALLOC_FACTOR);
            live.get_mut(index).reallocate(arena, new_size)
        }
    }
}
