//! `pool_sizes`: seed 002's experiment. For each size from one f32 to 100 MB (log-spaced, with
//! the HD image in f32, 1920 × 1080 × 3 × 4 B), the time to get a tensor, fill every element
//! with a non-default value and drop it, repeated in one loop: each variant set up afresh,
//! [`WARM_UP_ROUNDS`] untimed rounds, then rounds until the trial's duration has passed (at
//! least three).

use std::time::Duration;

use super::cpu_time::CpuTimer;
use super::probe::{self, field, ProbeArgs};
use super::variants::{Subject, Variant};
use super::{Column, Task, TIME_NS};
use heapworks_bench::timing::Deadline;
use heapworks_bench::workloads::{Config, Scale};

/// 1920 × 1080 × 3 channels × 4 B: an HD image in f32 (seed 002's large case).
pub const HD_F32: usize = 1920 * 1080 * 3 * 4;
/// The pools' budget: room for the largest size.
pub const BUDGET: usize = 256 << 20;
/// Fewest timed rounds of a measurement.
const MIN_ROUNDS: usize = 3;
/// Untimed rounds before a measurement, the same for every variant and peer: enough for each
/// to reach its steady state. A pool needs one (its first buffer); glibc needs two at sizes
/// from its mmap threshold to 32 MiB: the first block is mapped and its free raises the
/// threshold, the second grows the heap (a page fault per 4 KiB) and is reused from then on.
/// With one, a fresh process's glibc paid those faults inside the timed rounds (HD image:
/// 4.96 ms against 3.55 ms for the same glibc already warm).
pub const WARM_UP_ROUNDS: usize = 2;

/// The sizes of a run, in bytes (multiples of 4).
pub fn sizes(config: &Config) -> Vec<usize> {
    let every = vec![
        4,
        64,
        1 << 10,
        16 << 10,
        256 << 10,
        1 << 20,
        4 << 20,
        16 << 20,
        HD_F32,
        64 << 20,
        100_000_000,
    ];
    config.pick(vec![4, 16 << 10, 1 << 20, HD_F32], every.clone(), every)
}

/// A size as the report names it: `4 B`, `16 KiB`, `23.7 MiB (HD f32)`.
pub fn label(bytes: usize) -> String {
    let named = match bytes {
        HD_F32 => " (HD f32)",
        100_000_000 => " (100 MB)",
        _ => "",
    };
    let text = if bytes < 1 << 10 {
        format!("{bytes} B")
    } else if bytes < 1 << 20 {
        format!("{} KiB", bytes >> 10)
    } else if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
    };
    format!("{text}{named}")
}

/// The size a case label names (any scale's).
pub fn bytes_of(case: &str) -> Option<usize> {
    sizes(&Config::at_scale(Scale::Full, 0))
        .into_iter()
        .chain(sizes(&Config::at_scale(Scale::Tiny, 0)))
        .find(|&bytes| label(bytes) == case)
}

/// One task per size.
pub fn tasks(config: &Config) -> Vec<Task> {
    sizes(config)
        .into_iter()
        .map(|bytes| {
            let duration = config.duration;
            Task {
                workload: super::PoolWorkload::Sizes,
                case: label(bytes),
                outputs: vec![TIME_NS],
                deterministic: false,
                run: Box::new(move |column, seed| {
                    let ns = match column {
                        Column::Variant(variant) => {
                            time_per_round(*variant, bytes / 4, duration, seed)?
                        }
                        Column::Peer(library) => {
                            let exe = std::env::current_exe()
                                .map_err(|e| format!("cannot locate this executable: {e}"))?;
                            let args = ProbeArgs::Sizes {
                                variant: Variant::InlineWithoutPool,
                                bytes: bytes as u64,
                                duration_ms: duration.as_millis() as u64,
                                seed,
                            };
                            let stdout = probe::spawn(&exe, Some(library), &args)?;
                            field(&stdout, "ns")
                                .ok_or_else(|| format!("pool-probe printed no time: {stdout}"))?
                        }
                        Column::Missing(_, why) => return Err(why.clone()),
                    };
                    Ok(vec![Some(ns)])
                }),
            }
        })
        .collect()
}

/// Nanoseconds of CPU time per get-fill-drop of `n` f32 under `variant` (the loop stops by
/// the wall clock after `duration`).
pub fn time_per_round(
    variant: Variant,
    n: usize,
    duration: Duration,
    seed: u64,
) -> Result<f64, String> {
    let mut subject = Subject::new(variant, &[n], BUDGET);
    // A non-default value, different in each trial.
    let value = 1.0 + (seed % 13) as f32;
    for _ in 0..WARM_UP_ROUNDS {
        subject.one(n, value)?;
    }
    // Rounds between deadline checks: reading the clock is not free next to a 4-byte fill.
    let batch = ((1 << 20) / (n * 4)).clamp(1, 1024);
    let deadline = Deadline::after(duration);
    let start = CpuTimer::start();
    let mut rounds = 0;
    while rounds < MIN_ROUNDS || !deadline.passed() {
        for _ in 0..batch {
            subject.one(n, value)?;
        }
        rounds += batch;
    }
    Ok(start.elapsed().as_nanos() as f64 / rounds as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_run_from_one_float_to_100_mb_through_the_hd_image() {
        let sizes = sizes(&Config::at_scale(Scale::Default, 1));
        assert_eq!(sizes.first(), Some(&4));
        assert_eq!(sizes.last(), Some(&100_000_000));
        assert!(sizes.contains(&HD_F32));
        assert!(sizes.windows(2).all(|w| w[0] < w[1] && w[1] / w[0] <= 16));
        assert!(sizes.iter().all(|s| s.is_multiple_of(4)));
    }

    #[test]
    fn labels_name_the_seed_sizes() {
        assert_eq!(label(4), "4 B");
        assert_eq!(label(16 << 10), "16 KiB");
        assert_eq!(label(HD_F32), "23.7 MiB (HD f32)");
        assert_eq!(label(100_000_000), "95.4 MiB (100 MB)");
    }

    #[test]
    fn every_variant_measures_a_small_size() {
        for &variant in Variant::ALL {
            let ns = time_per_round(variant, 256, Duration::ZERO, 1).unwrap();
            assert!(ns > 0.0, "{variant:?}");
        }
    }
}
