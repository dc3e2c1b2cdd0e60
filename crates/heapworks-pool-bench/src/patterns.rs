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
//! Every variant replays the same draws in a trial, each in a process of its own (the hidden
//! `pool-probe pattern`), so that every run starts alike: no pool, and a malloc that has
//! seen nothing (in one process, glibc's heap and mmap threshold stayed warm from earlier
//! runs while each pool started cold). The peers run the `Vec` variant with their malloc
//! preloaded. Two cases per pattern:
//! - from a fresh process: the steps timed from the first one, cold caches included;
//! - after as many untimed warm-up steps (drawn with another seed): the steady state of a
//!   long-running loop.
//!
//! Reported per column: CPU time per step, and for the pools hit rate and evictions, and the
//! peak resident set above the one before the variant was set up (its cache,
//! or `fill_existing`'s buffers, included; warm-up steps too).

use heapworks_pool::Stats;

use super::cpu_time::CpuTimer;
use super::probe::{self, field, ProbeArgs};
use super::rss;
use super::variants::{Subject, Variant};
use super::{Column, PoolWorkload, Task, EVICTIONS, HIT_RATE, PEAK_RSS, STEP_US};
use heapworks_bench::rng::{derive_seed, Rng};
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

/// An allocation pattern that does not repeat one size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// A text model's layers with varying sequence lengths.
    VariableShape,
    /// A working set twice the budget.
    BudgetPressure,
}

impl Pattern {
    /// Its workload.
    pub fn workload(self) -> PoolWorkload {
        match self {
            Pattern::VariableShape => PoolWorkload::VariableShape,
            Pattern::BudgetPressure => PoolWorkload::BudgetPressure,
        }
    }

    /// The pattern of the workload named `name`.
    pub fn from_workload_name(name: &str) -> Option<Self> {
        [Pattern::VariableShape, Pattern::BudgetPressure]
            .into_iter()
            .find(|pattern| pattern.workload().name() == name)
    }

    /// What the case label says besides the steps.
    fn shape(self) -> String {
        match self {
            Pattern::VariableShape => "L 8–512 tokens".to_string(),
            Pattern::BudgetPressure => {
                let sizes = pressure_sizes();
                format!(
                    "{PRESSURE_SIZES} sizes 1–{:.1} MiB, budget {} MiB",
                    (sizes[PRESSURE_SIZES - 1] * 4) as f64 / f64::from(1 << 20),
                    pressure_budget() >> 20
                )
            }
        }
    }

    /// The tensors of `steps` steps drawn with `seed` (elements each), and the most elements
    /// each tensor of a step can have.
    pub fn draw(self, seed: u64, steps: usize) -> (Vec<Vec<usize>>, Vec<usize>) {
        match self {
            Pattern::VariableShape => {
                let lens = sequence_lengths(seed, steps)
                    .into_iter()
                    .map(|tokens| layer_tensors(tokens).to_vec())
                    .collect();
                (lens, layer_tensors(SEQUENCE.1 as usize).to_vec())
            }
            Pattern::BudgetPressure => {
                let sizes = pressure_sizes();
                let mut rng = Rng::new(seed);
                let lens = (0..steps)
                    .map(|_| vec![sizes[rng.below(sizes.len())]])
                    .collect();
                (lens, vec![sizes[PRESSURE_SIZES - 1]])
            }
        }
    }

    /// The pools' budget.
    fn budget(self) -> usize {
        match self {
            Pattern::VariableShape => VARIABLE_BUDGET,
            Pattern::BudgetPressure => pressure_budget(),
        }
    }
}

/// Steps of a pattern's run.
fn steps(config: &Config) -> usize {
    config.pick(20, 150, 400)
}

/// The tasks of `pattern`: its steps from a fresh process, and after as many warm-up steps.
pub fn tasks(config: &Config, pattern: Pattern) -> Vec<Task> {
    let steps = steps(config);
    [0, steps]
        .into_iter()
        .map(|warm_up_steps| {
            let start = match warm_up_steps {
                0 => "from a fresh process".to_string(),
                n => format!("after {n} warm-up steps"),
            };
            Task {
                workload: pattern.workload(),
                case: format!("{steps} steps {start}, {}", pattern.shape()),
                outputs: vec![STEP_US, HIT_RATE, EVICTIONS, PEAK_RSS],
                deterministic: false,
                run: Box::new(move |column, seed| {
                    let (variant, library) = match column {
                        Column::Variant(variant) => (*variant, None),
                        Column::Peer(library) => (Variant::InlineWithoutPool, Some(library)),
                        Column::Missing(_, why) => return Err(why.clone()),
                    };
                    let args = ProbeArgs::Pattern {
                        pattern,
                        variant,
                        steps: steps as u64,
                        warm_up_steps: warm_up_steps as u64,
                        seed,
                    };
                    let exe = std::env::current_exe()
                        .map_err(|e| format!("cannot locate this executable: {e}"))?;
                    let stdout = probe::spawn(&exe, library, &args)?;
                    PatternRun::read(&stdout)
                }),
            }
        })
        .collect()
}

/// What one run of a pattern measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PatternRun {
    /// Microseconds of CPU time per timed step.
    pub step_us: f64,
    /// The pool's statistics, for a variant with a pool.
    pub stats: Option<Stats>,
    /// Peak resident set above the start, MiB.
    pub peak_rss_mib: f64,
}

impl PatternRun {
    /// The probe's output lines.
    pub fn lines(&self) -> Vec<(&'static str, f64)> {
        let mut lines = vec![
            ("step_us", self.step_us),
            ("peak_rss_mib", self.peak_rss_mib),
        ];
        if let Some(stats) = &self.stats {
            lines.push(("hit_rate", stats.hit_rate() * 100.0));
            lines.push(("evictions", stats.evictions as f64));
        }
        lines
    }

    /// The values of a probe's output, in the order of the task's outputs.
    fn read(stdout: &str) -> Result<Vec<Option<f64>>, String> {
        let step_us = field(stdout, "step_us")
            .ok_or_else(|| format!("pool-probe printed no time: {stdout}"))?;
        Ok(vec![
            Some(step_us),
            field(stdout, "hit_rate"),
            field(stdout, "evictions"),
            field(stdout, "peak_rss_mib"),
        ])
    }
}

/// Runs `pattern` under `variant` in this process: `warm_up_steps` untimed steps drawn with a
/// seed derived from `seed`, then `steps` timed ones drawn with `seed`.
pub fn run(
    pattern: Pattern,
    variant: Variant,
    steps: usize,
    warm_up_steps: usize,
    seed: u64,
) -> Result<PatternRun, String> {
    let (warm_up, _) = pattern.draw(derive_seed(seed, "warm-up", 0), warm_up_steps);
    let (timed, most) = pattern.draw(seed, steps);
    let start_kib = rss::current_kib()?;
    rss::reset_peak()?;
    let mut subject = Subject::new(variant, &most, pattern.budget());
    let value = 1.0 + (seed % 13) as f32;
    for lens in &warm_up {
        subject.several(lens, value)?;
    }
    let clock = CpuTimer::start();
    for lens in &timed {
        subject.several(lens, value)?;
    }
    let step_us = clock.elapsed().as_secs_f64() * 1e6 / steps as f64;
    Ok(PatternRun {
        step_us,
        stats: subject.pool().map(|pool| pool.stats()),
        peak_rss_mib: rss::peak_kib()?.saturating_sub(start_kib) as f64 / 1024.0,
    })
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

/// The budget-pressure pools' budget: half the working set.
fn pressure_budget() -> usize {
    pressure_sizes().iter().sum::<usize>() * 4 / 2
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
    fn a_pool_under_pressure_hits_within_its_budget() {
        let run = run(Pattern::BudgetPressure, Variant::InlineWithPool, 60, 0, 5).unwrap();
        let stats = run.stats.unwrap();
        assert!(stats.hits > 0 && stats.misses > 0, "{stats:?}");
        assert!(stats.peak_bytes_cached <= pressure_budget(), "{stats:?}");
        let without = super::run(
            Pattern::BudgetPressure,
            Variant::InlineWithoutPool,
            60,
            0,
            5,
        );
        assert_eq!(without.unwrap().stats, None);
    }

    #[test]
    fn warm_up_steps_fill_the_cache_before_the_timed_ones() {
        let cold = run(Pattern::VariableShape, Variant::ShmWithPool, 10, 0, 2).unwrap();
        let warm = run(Pattern::VariableShape, Variant::ShmWithPool, 10, 30, 2).unwrap();
        let (cold, warm) = (cold.stats.unwrap(), warm.stats.unwrap());
        assert!(warm.hits + warm.misses > cold.hits + cold.misses);
        let read = PatternRun::read("step_us 5\npeak_rss_mib 2\nhit_rate 50\n").unwrap();
        assert_eq!(read, [Some(5.0), Some(50.0), None, Some(2.0)]);
        assert!(PatternRun::read("peak_rss_mib 2").is_err());
    }

    #[test]
    fn patterns_are_found_by_their_workloads_name() {
        for pattern in [Pattern::VariableShape, Pattern::BudgetPressure] {
            assert_eq!(
                Pattern::from_workload_name(pattern.workload().name()),
                Some(pattern)
            );
        }
        assert_eq!(Pattern::from_workload_name("pool_sizes"), None);
    }
}
