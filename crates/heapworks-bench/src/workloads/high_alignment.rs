//! High alignment (ANCHORS §1, talc's guard against the Hermit case): allocate N blocks of
//! 4 KiB at align 8 and free them all, then N blocks of 1 B at align 4096 and free them all,
//! on the same heap. Reports the time per allocate+free pair of each shape and the slowdown
//! of the page-aligned shape (talc keeps it under 5×).

use std::alloc::Layout;
use std::time::{Duration, Instant};

use crate::contenders::{Arena, RawHeap, UseAllocator};
use crate::timing::Deadline;

use super::blocks::{Block, LiveBlocks};
use super::{run_trial, Better, Case, Config, Failure, MetricSpec, TrialOutcome, WorkloadId};

/// Allocations between two looks at the deadline.
const ALLOCATIONS_PER_CLOCK_CHECK: usize = 64;
/// Heap bytes per block: a page-aligned block may waste up to a page beside its own.
const HEAP_PER_BLOCK: usize = 4 << 12;

const METRICS: [MetricSpec; 3] = [
    MetricSpec::primary("4 KiB @ align 8", "ns/pair", Better::Lower),
    MetricSpec::primary("1 B @ align 4096", "ns/pair", Better::Lower),
    MetricSpec::primary("slowdown", "×", Better::Lower),
];

/// One case with `count` blocks of each shape.
pub fn cases(config: &Config) -> Vec<Case> {
    let count = config.pick(256, 4096, 0x4000);
    let heap_len = count * HEAP_PER_BLOCK;
    let budget = config.trial_budget();
    vec![Case {
        workload: WorkloadId::HighAlignment,
        name: format!("{count} blocks"),
        heap_len,
        arena_only: false,
        metrics: METRICS.to_vec(),
        run: Box::new(move |allocator, region, _seed| {
            let trial = Trial {
                count,
                deadline: Deadline::after(budget),
            };
            run_trial(allocator, region, heap_len, trial)
        }),
    }]
}

struct Trial {
    count: usize,
    deadline: Deadline,
}

impl UseAllocator for Trial {
    type Output = TrialOutcome;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> TrialOutcome {
        let low = Layout::from_size_align(4096, 8).expect("valid layout");
        let high = Layout::from_size_align(1, 4096).expect("valid layout");
        let low_time = self.time_shape(arena, low)?;
        let high_time = self.time_shape(arena, high)?;
        let per_pair = |time: Duration| time.as_secs_f64() * 1e9 / self.count as f64;
        let slowdown = high_time.as_secs_f64() / low_time.as_secs_f64().max(1e-12);
        Ok(vec![per_pair(low_time), per_pair(high_time), slowdown])
    }
}

impl Trial {
    /// Allocates `count` blocks of `layout`, then frees them; the time of both phases.
    fn time_shape<H: RawHeap>(
        &self,
        arena: &Arena<'_, H>,
        layout: Layout,
    ) -> Result<Duration, Failure> {
        let mut live = LiveBlocks::with_capacity(self.count);
        let start = Instant::now();
        for index in 0..self.count {
            match Block::allocate(arena, layout) {
                Some(block) => live.push(block),
                None => return Err(give_up(arena, live, Failure::OutOfMemory)),
            }
            if index % ALLOCATIONS_PER_CLOCK_CHECK == 0 && self.deadline.passed() {
                return Err(give_up(
                    arena,
                    live,
                    Failure::TimedOut(self.deadline.budget()),
                ));
            }
        }
        let allocated = start.elapsed();
        live.verify_sample()?;
        let start = Instant::now();
        live.free_all(arena);
        Ok(allocated + start.elapsed())
    }
}

fn give_up<H: RawHeap>(arena: &Arena<'_, H>, live: LiveBlocks, failure: Failure) -> Failure {
    live.release(arena);
    failure
}
