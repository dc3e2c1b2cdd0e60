//! galloc's heap-exhaustion benchmark (seed `001_…`): allocate 10–300 KB blocks at align
//! 2^0–2^10 until the first failure, free them all, and repeat for the trial's duration.
//! Reports successful allocations per second and how full the heap was at each failure
//! (requested bytes over heap size, averaged over fills). Only arenas take part.

use std::alloc::Layout;
use std::time::{Duration, Instant};

use crate::contenders::{Arena, RawHeap, UseAllocator};
use crate::rng::Rng;

use super::blocks::{Block, LiveBlocks};
use super::uniform_actions::uniform_align;
use super::{mib, run_trial, Better, Case, Config, MetricSpec, TrialOutcome, WorkloadId};

const METRICS: [MetricSpec; 2] = [
    MetricSpec::primary("throughput", "M allocs/s", Better::Higher),
    MetricSpec::primary("fill at failure", "%", Better::Higher),
];

/// One case, time-boxed by the run's duration (at least one fill).
pub fn cases(config: &Config) -> Vec<Case> {
    let heap_len = config.pick(mib(8), mib(128), mib(128));
    let duration = config.duration;
    vec![Case {
        workload: WorkloadId::HeapExhaustion,
        name: format!("10–300 KB blocks, {} MiB heap", heap_len >> 20),
        heap_len,
        arena_only: true,
        metrics: METRICS.to_vec(),
        run: Box::new(move |allocator, region, seed| {
            run_trial(
                allocator,
                region,
                heap_len,
                Trial {
                    heap_len,
                    duration,
                    seed,
                },
            )
        }),
    }]
}

struct Trial {
    heap_len: usize,
    duration: Duration,
    seed: u64,
}

impl UseAllocator for Trial {
    type Output = TrialOutcome;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> TrialOutcome {
        let mut rng = Rng::new(self.seed);
        let (mut allocations, mut fills, mut fill_sum) = (0usize, 0usize, 0.0);
        let mut busy = Duration::ZERO;
        while fills == 0 || busy < self.duration {
            let start = Instant::now();
            let live = fill(arena, &mut rng);
            busy += start.elapsed();
            live.verify_sample()?;
            allocations += live.len();
            fills += 1;
            fill_sum += live.requested_bytes() as f64 / self.heap_len as f64 * 100.0;
            let start = Instant::now();
            live.free_all(arena);
            busy += start.elapsed();
        }
        let throughput = allocations as f64 / busy.as_secs_f64().max(1e-9) / 1e6;
        Ok(vec![throughput, fill_sum / fills as f64])
    }
}

/// Allocates until the first refusal; the blocks live then.
fn fill<H: RawHeap>(arena: &Arena<'_, H>, rng: &mut Rng) -> LiveBlocks {
    let mut live = LiveBlocks::with_capacity(1 << 12);
    loop {
        let size = rng.in_range_inclusive(10_000, 300_000);
        let layout = Layout::from_size_align(size, uniform_align(rng)).expect("valid layout");
        match Block::allocate(arena, layout) {
            Some(block) => live.push(block),
            None => return live,
        }
    }
}
