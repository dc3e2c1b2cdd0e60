//! Insert-delete (seed `003_…`): the cost of putting N blocks into the allocator's free
//! structure and taking N out again.
//!
//! Untimed, 2N blocks of 16–256 B are allocated. Timed, every other block is freed (N frees
//! that cannot coalesce, since their neighbours stay allocated), then N blocks of the same
//! distribution are allocated. Reports the total time and the average response time per
//! request, each phase's average, and the 99th percentile of the responses of one request in
//! eight, each timed alone ([`SampledPhase`]), and the seed's utilization (the most requested
//! bytes live at once over the span of addresses the blocks took, see [`Utilization`]). Only
//! arenas take part (the question is about free-structure growth inside a bounded heap).

use std::alloc::Layout;
use std::time::Duration;

use crate::contenders::{Arena, RawHeap, UseAllocator};
use crate::rng::Rng;
use crate::stats::p99;
use crate::timing::{Deadline, SampledPhase};

use super::blocks::{Block, LiveBlocks, Utilization};
use super::{mib, run_trial, Better, Case, Config, Failure, MetricSpec, TrialOutcome, WorkloadId};

/// Requests between two looks at the deadline.
pub const REQUESTS_PER_CLOCK_CHECK: usize = 256;
/// Smallest and largest block size drawn.
pub const SIZES: (usize, usize) = (16, 256);

const METRICS: [MetricSpec; 6] = [
    MetricSpec::primary("total", "ms", Better::Lower),
    MetricSpec::primary("response", "ns/request", Better::Lower),
    MetricSpec::secondary("free response", "ns/request", Better::Lower),
    MetricSpec::secondary("allocate response", "ns/request", Better::Lower),
    P99_RESPONSE,
    UTILIZATION,
];

/// The 99th percentile of the sampled responses (seed 003's workloads).
pub const P99_RESPONSE: MetricSpec = MetricSpec::secondary("p99 response", "ns", Better::Lower);
/// Seed 003's utilization ([`Utilization`]), deterministic for a given seed.
pub const UTILIZATION: MetricSpec = MetricSpec::secondary("utilization", "%", Better::Higher);

/// The block counts N of a run: [`Config::block_counts`] when given, else the scale's.
pub fn block_counts(config: &Config) -> &[usize] {
    match &config.block_counts {
        Some(counts) => counts,
        None => config.pick(&[1_000], &[10_000, 100_000], &[10_000, 100_000, 1_000_000]),
    }
}

/// The name of the case of N = `blocks`.
pub fn case_name(blocks: usize) -> String {
    format!("N = {blocks}")
}

/// The N of a case named by [`case_name`].
pub fn blocks_of(case: &str) -> Option<usize> {
    case.strip_prefix("N = ")?.parse().ok()
}

/// Heap for 2N blocks of up to 256 B and their growth: 1 KiB per N, at least 32 MiB.
pub fn heap_len_for(blocks: usize) -> usize {
    (blocks << 10).max(mib(32))
}

/// One case per N.
pub fn cases(config: &Config) -> Vec<Case> {
    cases_per_block_count(
        config,
        WorkloadId::InsertDelete,
        &METRICS,
        |blocks, seed, deadline| Trial {
            blocks,
            seed,
            deadline,
        },
    )
}

/// One case per N of [`block_counts`], each trial made by `make_trial(N, seed, deadline)`:
/// shared by the two seed 003 workloads, which use the same N and heap sizes.
pub fn cases_per_block_count<T: UseAllocator<Output = TrialOutcome> + 'static>(
    config: &Config,
    workload: WorkloadId,
    metrics: &[MetricSpec],
    make_trial: fn(usize, u64, Deadline) -> T,
) -> Vec<Case> {
    let budget = config.trial_budget();
    block_counts(config)
        .iter()
        .map(|&blocks| {
            let heap_len = heap_len_for(blocks);
            Case {
                workload,
                name: case_name(blocks),
                heap_len,
                arena_only: true,
                metrics: metrics.to_vec(),
                run: Box::new(move |allocator, region, seed| {
                    let trial = make_trial(blocks, seed, Deadline::after(budget));
                    run_trial(allocator, region, heap_len, trial)
                }),
            }
        })
        .collect()
}

/// A random block layout of the workload's distribution, word-aligned.
pub fn random_layout(rng: &mut Rng) -> Layout {
    let size = rng.in_range_inclusive(SIZES.0, SIZES.1);
    Layout::from_size_align(size, 8).expect("valid layout")
}

/// Allocates `count` random blocks in sequence (untimed set-up, but still bounded by the
/// trial's deadline).
pub fn allocate_sequence<H: RawHeap>(
    arena: &Arena<'_, H>,
    rng: &mut Rng,
    count: usize,
    deadline: &Deadline,
) -> Result<Vec<Block>, Failure> {
    let mut blocks = Vec::with_capacity(count);
    for index in 0..count {
        let failure = match Block::allocate(arena, random_layout(rng)) {
            Some(block) => {
                blocks.push(block);
                let late = index % REQUESTS_PER_CLOCK_CHECK == 0 && deadline.passed();
                late.then(|| Failure::TimedOut(deadline.budget()))
            }
            None => Some(Failure::OutOfMemory),
        };
        if let Some(failure) = failure {
            release_all(arena, blocks);
            return Err(failure);
        }
    }
    Ok(blocks)
}

/// Frees `blocks` in order, looking at the deadline between batches; on a time-out the rest
/// are handed back with [`release_all`].
pub fn free_within<H: RawHeap>(
    arena: &Arena<'_, H>,
    blocks: Vec<Block>,
    deadline: &Deadline,
) -> Result<(), Failure> {
    let mut pending = blocks.into_iter();
    while pending.len() > 0 {
        pending
            .by_ref()
            .take(REQUESTS_PER_CLOCK_CHECK)
            .for_each(|block| block.free(arena));
        if pending.len() > 0 && deadline.passed() {
            release_all(arena, pending.collect());
            return Err(Failure::TimedOut(deadline.budget()));
        }
    }
    Ok(())
}

/// Hands `blocks` back when the heap needs it (see [`LiveBlocks::release`]).
pub fn release_all<H: RawHeap>(arena: &Arena<'_, H>, blocks: Vec<Block>) {
    let mut live = LiveBlocks::with_capacity(blocks.len());
    blocks.into_iter().for_each(|block| live.push(block));
    live.release(arena);
}

/// Splits `blocks` into those at even positions (returned first) and odd positions.
pub fn split_alternate(blocks: Vec<Block>) -> (Vec<Block>, Vec<Block>) {
    let (even, odd): (Vec<_>, Vec<_>) = blocks
        .into_iter()
        .enumerate()
        .partition(|(i, _)| i % 2 == 0);
    (
        even.into_iter().map(|(_, b)| b).collect(),
        odd.into_iter().map(|(_, b)| b).collect(),
    )
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
        let (to_free, kept) = split_alternate(all);
        let mut live = LiveBlocks::with_capacity(self.blocks * 2);
        kept.into_iter().for_each(|block| live.push(block));

        let (free_time, mut samples) = self.free_timed(arena, to_free, &mut live)?;
        let (allocate_time, allocate_samples) = self.allocate_timed(arena, &mut rng, &mut live)?;
        live.verify_sample()?;
        // Frees, then allocations: the live bytes peak at one end or the other.
        usage.include(live.as_slice());
        live.release(arena);
        samples.extend(allocate_samples);

        let total = free_time + allocate_time;
        let per_request =
            |time: Duration, requests: usize| time.as_secs_f64() * 1e9 / requests as f64;
        Ok(vec![
            total.as_secs_f64() * 1e3,
            per_request(total, self.blocks * 2),
            per_request(free_time, self.blocks),
            per_request(allocate_time, self.blocks),
            p99(&samples),
            usage.percent(),
        ])
    }
}

/// A timed phase's length and its sampled responses (ns).
type Timed = Result<(Duration, Vec<f64>), Failure>;

impl Trial {
    fn free_timed<H: RawHeap>(
        &self,
        arena: &Arena<'_, H>,
        to_free: Vec<Block>,
        live: &mut LiveBlocks,
    ) -> Timed {
        let mut phase = SampledPhase::start(to_free.len());
        let mut pending = to_free.into_iter();
        while pending.len() > 0 {
            for block in pending.by_ref().take(REQUESTS_PER_CLOCK_CHECK) {
                phase.request(|| block.free(arena));
            }
            if pending.len() > 0 && self.deadline.passed() {
                release_all(arena, pending.collect());
                return Err(self.give_up(arena, live));
            }
        }
        Ok(phase.finish())
    }

    fn allocate_timed<H: RawHeap>(
        &self,
        arena: &Arena<'_, H>,
        rng: &mut Rng,
        live: &mut LiveBlocks,
    ) -> Timed {
        let mut phase = SampledPhase::start(self.blocks);
        for index in 0..self.blocks {
            let layout = random_layout(rng);
            match phase.request(|| Block::allocate(arena, layout)) {
                Some(block) => live.push(block),
                None => {
                    std::mem::take(live).release(arena);
                    return Err(Failure::OutOfMemory);
                }
            }
            if index % REQUESTS_PER_CLOCK_CHECK == 0 && self.deadline.passed() {
                return Err(self.give_up(arena, live));
            }
        }
        Ok(phase.finish())
    }

    fn give_up<H: RawHeap>(&self, arena: &Arena<'_, H>, live: &mut LiveBlocks) -> Failure {
        std::mem::take(live).release(arena);
        Failure::TimedOut(self.deadline.budget())
    }
}
