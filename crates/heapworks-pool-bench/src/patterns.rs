//! Seed 002's future work: allocation patterns that do not repeat one size.
//!
//! - `pool_variable_shape`: a text model's steps. Each step draws a sequence length L
//!   log-uniformly from 8 to 512 tokens and makes three tensors live at once, as a
//!   transformer layer would: hidden states L × 768, the MLP's L × 3072 and attention scores
//!   12 heads × L × L (f32: 24 KiB to 12 MiB); the shapes rarely repeat exactly, so only
//!   size classes let a pool hit.
//! - `pool_budget_pressure`: a working set above the budget. Each step makes one tensor of one
//!   of 12 sizes from 1 MiB up by 25 % each (about 50 MiB in all), drawn uniformly, under a
//!   budget of half their total: the pool must evict, and its hit rate falls to what fits.
//!
//! Every variant replays the same draws in a trial. Reported per variant: time per step, and
//! for the pools hit rate and evictions, and the peak resident set above the one before the
//! variant was set up (its cache, or `fill_existing`'s buffers, included).

use std::time::Instant;

use heapworks_pool::Stats;

use super::rss;
use super::variants::{Subject, Variant};
use super::{Column, PoolWorkload, Task, EVICTIONS, HIT_RATE, PEAK_RSS, RECYCLED, STEP_US};
use heapworks_bench::rng::Rng;
use heapworks_bench::workloads::Config;

/// Model width (elements per token).
const HIDDEN: usize = 768;
/// Attention heads.
const HEADS: usize = 12;
/// Shortest and longest sequence, in tokens.
const SEQUENCE: (f64, f64) = (8.0, 512.0);
/// The variable-shape pools' budget.
const VARIABLE_BUDGET: usize = 256 << 20;
/// Sizes of the budget-pressure working set.
const PRESSURE_SIZES: usize = 12;

/// Steps of a pattern's run.
fn steps(config: &Config) -> usize {
    config.pick(20, 150, 400)
}

/// The variable-shape task.
pub fn variable_shape(config: &Config) -> Task {
    let steps = steps(config);
    Task {
        workload: PoolWorkload::VariableShape,
        case: format!("{steps} steps, L 8–512 tokens"),
        outputs: vec![STEP_US, HIT_RATE, EVICTIONS, PEAK_RSS, RECYCLED],
        run: Box::new(move |column, seed| {
            let Column::Variant(variant) = *column else {
                return Ok(vec![None; 5]); // the peers run pool_sizes only
            };
            let lens: Vec<[usize; 3]> = sequence_lengths(seed, steps)
                .into_iter()
                .map(layer_tensors)
                .collect();
            let most = layer_tensors(SEQUENCE.1 as usize);
            run_steps(variant, &most, VARIABLE_BUDGET, &lens, seed)
        }),
    }
}

/// The budget-pressure task.
pub fn budget_pressure(config: &Config) -> Task {
    let steps = steps(config);
    let sizes = pressure_sizes();
    let budget = sizes.iter().sum::<usize>() * 4 / 2;
    let largest = sizes[PRESSURE_SIZES - 1];
    Task {
        workload: PoolWorkload::BudgetPressure,
        case: format!(
            "{steps} steps, {PRESSURE_SIZES} sizes 1–{:.1} MiB, budget {} MiB",
            (largest * 4) as f64 / f64::from(1 << 20),
            budget >> 20
        ),
        outputs: vec![STEP_US, HIT_RATE, EVICTIONS, PEAK_RSS, RECYCLED],
        run: Box::new(move |column, seed| {
            let Column::Variant(variant) = *column else {
                return Ok(vec![None; 5]); // the peers run pool_sizes only
            };
            let mut rng = Rng::new(seed);
            let lens: Vec<[usize; 1]> = (0..steps)
                .map(|_| [sizes[rng.below(sizes.len())]])
                .collect();
            run_steps(variant, &[largest], budget, &lens, seed)
        }),
    }
}

/// `steps` sequence lengths, log-uniform over [`SEQUENCE`].
fn sequence_lengths(seed: u64, steps: usize) -> Vec<usize> {
    let mut rng = Rng::new(seed);
    let (low, high) = SEQUENCE;
    (0..steps)
        .map(|_| {
            let unit = rng.next_u64() as f64 / 2f64.powi(64);
            (low * (high / low).powf(unit)).round() as usize
        })
        .collect()
}

/// Elements of a layer's three tensors for `tokens` tokens.
fn layer_tensors(tokens: usize) -> [usize; 3] {
    [
        tokens * HIDDEN,
        tokens * 4 * HIDDEN,
        HEADS * tokens * tokens,
    ]
}

/// Elements of the budget-pressure sizes: 1 MiB, then 25 % more each.
fn pressure_sizes() -> Vec<usize> {
    let mut elements = (1 << 20) / 4;
    (0..PRESSURE_SIZES)
        .map(|_| {
            let this = elements;
            elements += elements / 4;
            this
        })
        .collect()
}

/// Runs `steps` under `variant`: time per step (µs), hit rate (%) and evictions of a pool,
/// peak RSS above the start (MiB), and the pool's recycled misses (% of requests).
fn run_steps<const N: usize>(
    variant: Variant,
    most: &[usize],
    budget: usize,
    steps: &[[usize; N]],
    seed: u64,
) -> Result<Vec<Option<f64>>, String> {
    rss::trim_heap();
    let start_kib = rss::current_kib()?;
    rss::reset_peak()?;
    let mut subject = Subject::new(variant, most, budget);
    let value = 1.0 + (seed % 13) as f32;
    let clock = Instant::now();
    for lens in steps {
        subject.several(lens, value)?;
    }
    let step_us = clock.elapsed().as_secs_f64() * 1e6 / steps.len() as f64;
    let peak_mib = rss::peak_kib()?.saturating_sub(start_kib) as f64 / 1024.0;
    let stats: Option<Stats> = subject.pool().map(|pool| pool.stats());
    Ok(vec![
        Some(step_us),
        stats.map(|s| s.hit_rate() * 100.0),
        stats.map(|s| s.evictions as f64),
        Some(peak_mib),
        stats.map(|s| recycled_percent(&s)),
    ])
}

/// Recycled misses as a share of requests.
fn recycled_percent(stats: &Stats) -> f64 {
    let requests = stats.hits + stats.misses;
    if requests == 0 {
        0.0
    } else {
        stats.recycled as f64 * 100.0 / requests as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequence_lengths_stay_in_range_and_vary() {
        let lengths = sequence_lengths(3, 500);
        assert!(lengths.iter().all(|&l| (8..=512).contains(&l)));
        let distinct: std::collections::BTreeSet<_> = lengths.iter().collect();
        assert!(distinct.len() > 100, "{}", distinct.len());
        assert_eq!(lengths, sequence_lengths(3, 500));
    }

    #[test]
    fn pressure_sizes_start_at_1_mib_and_grow() {
        let sizes = pressure_sizes();
        assert_eq!(sizes[0] * 4, 1 << 20);
        assert!(sizes.windows(2).all(|w| w[1] > w[0]));
    }

    #[test]
    fn a_pool_under_pressure_hits_and_recycles() {
        let sizes = pressure_sizes();
        let budget = sizes.iter().sum::<usize>() * 4 / 2;
        let mut rng = Rng::new(5);
        let steps: Vec<[usize; 1]> = (0..60).map(|_| [sizes[rng.below(sizes.len())]]).collect();
        let values = run_steps(Variant::InlineWithPool, &[sizes[11]], budget, &steps, 1).unwrap();
        let (hit_rate, recycled) = (values[1].unwrap(), values[4].unwrap());
        assert!(hit_rate > 0.0 && hit_rate < 100.0, "{hit_rate}");
        assert!(recycled > 0.0 && hit_rate + recycled <= 100.0, "{recycled}");
        let without = run_steps(Variant::InlineWithoutPool, &[sizes[11]], budget, &steps, 1);
        assert_eq!(without.unwrap()[1], None);
    }
}
