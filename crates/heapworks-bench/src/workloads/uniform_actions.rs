//! galloc's random-actions benchmark (seed `001_…`): successful calls per second when each step
//! picks uniformly among allocate (100–1000 B at align 2^0–2^10), free of a random live block,
//! and realloc of a random live block to 100–10 000 B. With nothing live, the step allocates.

use std::alloc::{GlobalAlloc, Layout};
use std::time::{Duration, Instant};

use crate::contenders::{Arena, RawHeap, UseAllocator};
use crate::rng::Rng;

use super::blocks::{Block, LiveBlocks};
use super::{mib, run_trial, Better, Case, Config, MetricSpec, TrialOutcome, WorkloadId};

/// Steps between two looks at the clock.
const STEPS_PER_CLOCK_CHECK: usize = 100;

const METRICS: [MetricSpec; 2] = [
    MetricSpec::primary("throughput", "Mops/s", Better::Higher),
    MetricSpec::secondary("failed calls", "calls", Better::Lower),
];

/// One case, time-boxed by the run's duration.
pub fn cases(config: &Config) -> Vec<Case> {
    let heap_len = config.pick(mib(16), mib(128), mib(128));
    let duration = config.duration;
    vec![Case {
        workload: WorkloadId::UniformActions,
        name: "100–1000 B, realloc to 10000 B".to_string(),
        heap_len,
        arena_only: false,
        metrics: METRICS.to_vec(),
        run: Box::new(move |allocator, region, seed| {
            run_trial(allocator, region, heap_len, Trial { duration, seed })
        }),
    }]
}

/// An alignment of `2^0` to `2^10`, uniformly.
pub fn uniform_align(rng: &mut Rng) -> usize {
    1 << rng.in_range_inclusive(0, 10)
}

struct Trial {
    duration: Duration,
    seed: u64,
}

impl UseAllocator for Trial {
    type Output = TrialOutcome;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> TrialOutcome {
        let mut rng = Rng::new(self.seed);
        let mut live = LiveBlocks::with_capacity(1 << 12);
        let (mut successes, mut failures) = (0u64, 0u64);
        let start = Instant::now();
        while start.elapsed() < self.duration {
            for _ in 0..STEPS_PER_CLOCK_CHECK {
                if step(arena, &mut rng, &mut live) {
                    successes += 1;
                } else {
                    failures += 1;
                }
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        live.verify_sample()?;
        live.release(arena);
        Ok(vec![successes as f64 / elapsed / 1e6, failures as f64])
    }
}

/// One step; `false` when the allocator refused the call.
fn step<A: GlobalAlloc>(allocator: &A, rng: &mut Rng, live: &mut LiveBlocks) -> bool {
    let action = if live.is_empty() { 0 } else { rng.below(3) };
    match action {
        0 => {
            let size = rng.in_range_inclusive(100, 1000);
            let layout = Layout::from_size_align(size, uniform_align(rng)).expect("valid layout");
            let block = Block::allocate(allocator, layout);
            let allocated = block.is_some();
            live.extend(block);
            allocated
        }
        1 => {
            let index = rng.below(live.len());
            live.swap_remove(index).free(allocator);
            true
        }
        _ => {
            let index = rng.below(live.len());
            let new_size = rng.in_range_inclusive(100, 10_000);
            live.get_mut(index).reallocate(allocator, new_size)
        }
    }
}
