//! talc's random-actions benchmark (ANCHORS §1): throughput of a random mix of allocations,
//! frees and reallocations.
//!
//! Each step draws an action from `0..7` (`0..6` without realloc): action 6 reallocates a
//! random live block to `rand(1..3·max)`; actions below 3, or any action while fewer than 300
//! blocks are live, allocate a block of talc's size and alignment distribution; the rest free
//! a random live block. The score is the number of successful calls; a 2 ms warm-up on its
//! own live set precedes each timed trial. Cases with realloc also report the share of
//! reallocations that kept the block in place: a realloc to `rand(1..3·max)` that moves copies
//! up to `3·max` bytes, and from a few thousand bytes on the copies take most of the time, so
//! allocators that move equally often score nearly alike there.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::contenders::{Arena, RawHeap, UseAllocator};
use crate::rng::{derive_seed, Rng};

use super::blocks::{Block, LiveBlocks};
use super::WorkloadId;
use super::{mib, run_trial, talc_method, Better, Case, Config, Failure, MetricSpec, TrialOutcome};

/// Fewer live blocks than this and the step always allocates.
const MIN_LIVE: usize = 300;
/// Realloc targets go up to this multiple of the maximum size.
const REALLOC_FACTOR: usize = 3;
/// Steps between two looks at the clock.
const STEPS_PER_CLOCK_CHECK: usize = 100;
/// talc's warm-up before each timed trial.
const WARMUP: Duration = Duration::from_millis(2);

const METRICS: [MetricSpec; 2] = [
    MetricSpec::primary("throughput", "Mops/s", Better::Higher),
    MetricSpec::secondary("failed calls", "calls", Better::Lower),
];
/// The cases with realloc add this one.
const IN_PLACE: MetricSpec = MetricSpec::secondary("realloc in place", "%", Better::Higher);

/// The parameters of one case.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Largest allocation size drawn (exclusive).
    pub max_size: usize,
    /// Whether 1 step in 7 reallocates.
    pub realloc: bool,
    /// Threads sharing the one allocator.
    pub threads: usize,
    /// Timed length of a trial.
    pub duration: Duration,
}

/// The cases for `config`: each max size with and without realloc, and a shared-allocator
/// case with 2 threads.
pub fn cases(config: &Config) -> Vec<Case> {
    let sizes: &[usize] = config.pick(
        &[200, 3000],
        &[200, 1000, 3000, 10000, 30000],
        &[200, 1000, 3000, 10000, 30000],
    );
    let threaded_sizes: &[usize] = config.pick(&[1000], &[1000], sizes);
    let heap_len = config.pick(mib(16), mib(128), mib(128));
    let with_threads = |threads: usize, realloc: bool| {
        move |&max_size: &usize| Params {
            max_size,
            realloc,
            threads,
            duration: config.duration,
        }
    };
    let single = sizes.iter().map(with_threads(1, true));
    let no_realloc = sizes.iter().map(with_threads(1, false));
    let shared = threaded_sizes.iter().map(with_threads(2, true));
    single
        .chain(no_realloc)
        .chain(shared)
        .map(|params| case(params, heap_len))
        .collect()
}

fn case(params: Params, heap_len: usize) -> Case {
    Case {
        workload: WorkloadId::RandomActions,
        name: case_name(&params),
        heap_len,
        arena_only: false,
        metrics: METRICS
            .into_iter()
            .chain(params.realloc.then_some(IN_PLACE))
            .collect(),
        run: Box::new(move |allocator, region, seed| {
            run_trial(allocator, region, heap_len, Trial { params, seed })
        }),
    }
}

fn case_name(params: &Params) -> String {
    let mix = if params.realloc { "" } else { ", no realloc" };
    let threads = if params.threads > 1 {
        format!(", {} threads", params.threads)
    } else {
        String::new()
    };
    format!("max {} B{mix}{threads}", params.max_size)
}

/// One trial: every thread warms up, then runs the timed loop.
pub struct Trial {
    /// The case's parameters.
    pub params: Params,
    /// The trial's seed (thread `i` uses a seed derived from it).
    pub seed: u64,
}

/// What one thread did in its timed loop.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tally {
    /// Successful calls.
    pub successes: u64,
    /// Calls the allocator refused.
    pub failures: u64,
    /// Successful reallocations (counted in `successes` too).
    pub reallocs: u64,
    /// Those of them that returned the block's own address.
    pub reallocs_in_place: u64,
    /// Time the loop ran.
    pub elapsed: Duration,
}

impl UseAllocator for Trial {
    type Output = TrialOutcome;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> TrialOutcome {
        let barrier = Barrier::new(self.params.threads);
        let tallies: Vec<Result<Tally, Failure>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..self.params.threads)
                .map(|thread| {
                    let seed = derive_seed(self.seed, "thread", thread);
                    let barrier = &barrier;
                    scope.spawn(move || run_thread(arena, self.params, seed, barrier))
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("worker panicked"))
                .collect()
        });
        let tallies = tallies.into_iter().collect::<Result<Vec<_>, _>>()?;
        let sum = |count: fn(&Tally) -> u64| tallies.iter().map(count).sum::<u64>();
        let longest = tallies.iter().map(|t| t.elapsed).max().unwrap_or_default();
        let throughput = sum(|t| t.successes) as f64 / longest.as_secs_f64().max(1e-9) / 1e6;
        let mut values = vec![throughput, sum(|t| t.failures) as f64];
        if self.params.realloc {
            let reallocs = sum(|t| t.reallocs).max(1);
            values.push(100.0 * sum(|t| t.reallocs_in_place) as f64 / reallocs as f64);
        }
        Ok(values)
    }
}

fn run_thread<H: RawHeap>(
    arena: &Arena<'_, H>,
    params: Params,
    seed: u64,
    barrier: &Barrier,
) -> Result<Tally, Failure> {
    let mut rng = Rng::new(seed);
    let mut warm = LiveBlocks::with_capacity(MIN_LIVE * 4);
    run_steps(
        arena,
        &params,
        &mut rng,
        &mut warm,
        WARMUP.min(params.duration),
    );
    warm.free_all(arena);

    let mut live = LiveBlocks::with_capacity(MIN_LIVE * 4);
    barrier.wait();
    let tally = run_steps(arena, &params, &mut rng, &mut live, params.duration);
    live.verify_sample()?;
    live.release(arena);
    Ok(tally)
}

/// Runs steps until `duration` has passed, in batches between looks at the clock.
pub fn run_steps<A: std::alloc::GlobalAlloc>(
    allocator: &A,
    params: &Params,
    rng: &mut Rng,
    live: &mut LiveBlocks,
    duration: Duration,
) -> Tally {
    let mut tally = Tally::default();
    let actions = if params.realloc { 7 } else { 6 };
    let start = Instant::now();
    while start.elapsed() < duration {
        for _ in 0..STEPS_PER_CLOCK_CHECK {
            match step(allocator, params.max_size, rng.below(actions), rng, live) {
                Step::Done => tally.successes += 1,
                Step::Reallocated { in_place } => {
                    tally.successes += 1;
                    tally.reallocs += 1;
                    tally.reallocs_in_place += u64::from(in_place);
                }
                Step::Refused => tally.failures += 1,
                Step::Skipped => {}
            }
        }
    }
    tally.elapsed = start.elapsed();
    tally
}

/// What became of one action.
enum Step {
    /// The call succeeded and scores.
    Done,
    /// A realloc succeeded and scores; `in_place` when the block kept its address.
    Reallocated { in_place: bool },
    /// The allocator refused the call.
    Refused,
    /// A realloc with nothing live: no call was made.
    Skipped,
}

impl From<bool> for Step {
    fn from(succeeded: bool) -> Self {
        if succeeded {
            Step::Done
        } else {
            Step::Refused
        }
    }
}

fn step<A: std::alloc::GlobalAlloc>(
    allocator: &A,
    max_size: usize,
    action: usize,
    rng: &mut Rng,
    live: &mut LiveBlocks,
) -> Step {
    if action == 6 {
        if live.is_empty() {
            return Step::Skipped;
        }
        let index = rng.below(live.len());
        let new_size = rng.in_range(1, max_size * REALLOC_FACTOR);
        let block = live.get_mut(index);
        let old = block.ptr;
        if !block.reallocate(allocator, new_size) {
            return Step::Refused;
        }
        Step::Reallocated {
            in_place: block.ptr == old,
        }
    } else if action < 3 || live.len() < MIN_LIVE {
        let block = Block::allocate(allocator, talc_method::layout(rng, max_size));
        let allocated = block.is_some();
        live.extend(block);
        Step::from(allocated)
    } else {
        let index = rng.below(live.len());
        live.swap_remove(index).free(allocator);
        Step::Done
    }
}
