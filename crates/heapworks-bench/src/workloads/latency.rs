//! Latency of single calls, after talc's micro-benchmark: each allocate and free of a random
//! workload is bracketed by a fenced cycle counter, and the percentiles of those samples are
//! reported.
//!
//! Requests follow talc's distribution with sizes below 64 KiB. After an allocation, when more
//! than 50 blocks are live and a 1-in-10 draw hits, or more than 600 are live, 8 random blocks
//! are freed (each timed). A refused allocation frees all but 50 blocks (untimed). Every
//! allocator sees the same fixed number of allocation attempts. Samples include the constant
//! cost of the fences and the counter read, the same for every allocator.

use crate::contenders::{Arena, RawHeap, UseAllocator};
use crate::rng::Rng;
use crate::stats::percentile;
use crate::timing::{cycle_stamp, STAMP_UNIT};

use super::blocks::{Block, LiveBlocks};
use super::WorkloadId;
use super::{mib, run_trial, talc_method, Better, Case, Config, MetricSpec, TrialOutcome};

/// Largest allocation size (exclusive).
const MAX_SIZE: usize = 0x10000;
/// Live blocks kept when an allocation is refused, and the floor for random frees.
const KEEP_LIVE: usize = 50;
/// Live blocks above which a free batch always follows.
const MAX_LIVE: usize = 600;
/// Blocks freed per batch.
const FREE_BATCH: usize = 8;
/// Percentiles reported, with their metric-name suffixes.
const PERCENTILES: [(f64, &str); 5] = [
    (50.0, "p50"),
    (90.0, "p90"),
    (99.0, "p99"),
    (99.9, "p99.9"),
    (100.0, "max"),
];

/// One case: a fixed number of allocation attempts per trial.
pub fn cases(config: &Config) -> Vec<Case> {
    let attempts = config.pick(2_000, 50_000, 500_000);
    let heap_len = config.pick(mib(16), mib(128), mib(128));
    vec![Case {
        workload: WorkloadId::Latency,
        name: format!("{attempts} allocations, 4 B–64 KiB"),
        heap_len,
        arena_only: false,
        metrics: metrics(),
        run: Box::new(move |allocator, region, seed| {
            run_trial(allocator, region, heap_len, Trial { attempts, seed })
        }),
    }]
}

fn metrics() -> Vec<MetricSpec> {
    let names: [[&'static str; 5]; 2] = [
        [
            "allocate p50",
            "allocate p90",
            "allocate p99",
            "allocate p99.9",
            "allocate max",
        ],
        ["free p50", "free p90", "free p99", "free p99.9", "free max"],
    ];
    names
        .iter()
        .flat_map(|op| op.iter().zip(PERCENTILES))
        .map(|(&name, (_, suffix))| {
            let shown = matches!(suffix, "p50" | "p99" | "p99.9");
            MetricSpec {
                name,
                unit: STAMP_UNIT,
                better: Better::Lower,
                primary: shown,
            }
        })
        .collect()
}

struct Trial {
    attempts: usize,
    seed: u64,
}

/// Timings of one trial.
#[derive(Default)]
struct Samples {
    allocate: Vec<u64>,
    free: Vec<u64>,
}

impl UseAllocator for Trial {
    type Output = TrialOutcome;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> TrialOutcome {
        warm_up(arena);
        let mut rng = Rng::new(self.seed);
        let mut live = LiveBlocks::with_capacity(MAX_LIVE + FREE_BATCH);
        let mut samples = Samples {
            allocate: Vec::with_capacity(self.attempts),
            free: Vec::with_capacity(self.attempts),
        };
        for _ in 0..self.attempts {
            allocate_timed(arena, &mut rng, &mut live, &mut samples);
            if live.len() > MAX_LIVE || (live.len() > KEEP_LIVE && rng.chance(1, 10)) {
                free_batch_timed(arena, &mut rng, &mut live, &mut samples);
            }
        }
        live.verify_sample()?;
        live.release(arena);
        Ok(summarize(samples))
    }
}

/// talc's warm-up: allocate and free blocks of 8, 16, … bytes.
fn warm_up<H: RawHeap>(arena: &Arena<'_, H>) {
    for step in 1..1000 {
        let layout = std::alloc::Layout::from_size_align(step * 8, 8).expect("small layout");
        if let Some(block) = Block::allocate(arena, layout) {
            block.free(arena);
        }
    }
}

fn allocate_timed<H: RawHeap>(
    arena: &Arena<'_, H>,
    rng: &mut Rng,
    live: &mut LiveBlocks,
    samples: &mut Samples,
) {
    let layout = talc_method::layout(rng, MAX_SIZE);
    let start = cycle_stamp();
    let block = Block::allocate(arena, layout);
    let ticks = cycle_stamp().wrapping_sub(start);
    match block {
        Some(block) => {
            samples.allocate.push(ticks);
            live.push(block);
        }
        None => {
            while live.len() > KEEP_LIVE {
                let index = rng.below(live.len());
                live.swap_remove(index).free(arena);
            }
        }
    }
}

fn free_batch_timed<H: RawHeap>(
    arena: &Arena<'_, H>,
    rng: &mut Rng,
    live: &mut LiveBlocks,
    samples: &mut Samples,
) {
    for _ in 0..FREE_BATCH {
        let block = live.swap_remove(rng.below(live.len()));
        let start = cycle_stamp();
        block.free(arena);
        samples.free.push(cycle_stamp().wrapping_sub(start));
    }
}

fn summarize(mut samples: Samples) -> Vec<f64> {
    samples.allocate.sort_unstable();
    samples.free.sort_unstable();
    [&samples.allocate, &samples.free]
        .into_iter()
        .flat_map(|sorted| {
            PERCENTILES.map(|(p, _)| percentile(sorted, p).map_or(f64::NAN, |v| v as f64))
        })
        .collect()
}
