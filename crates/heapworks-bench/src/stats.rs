//! Order statistics: medians of trials, spreads, latency percentiles.

/// The median of `values` (mean of the middle two for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let sorted = sorted(values);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Smallest and largest value; `None` when empty.
pub fn min_max(values: &[f64]) -> Option<(f64, f64)> {
    let sorted = sorted(values);
    Some((*sorted.first()?, *sorted.last()?))
}

/// The nearest-rank percentile `p` (0–100) of already sorted samples; `None` when empty.
pub fn percentile<T: Copy>(sorted_samples: &[T], p: f64) -> Option<T> {
    let n = sorted_samples.len();
    if n == 0 {
        return None;
    }
    // The epsilon keeps float error (99.9 / 100 · 1000 = 999.000…1) from skipping a rank.
    let rank = (p * n as f64 / 100.0 - 1e-9).ceil() as usize;
    Some(sorted_samples[rank.clamp(1, n) - 1])
}

/// The nearest-rank 99th percentile of unsorted `samples`; `NAN` when there are none (the
/// runner leaves non-finite values out of a cell).
pub fn p99(samples: &[f64]) -> f64 {
    percentile(&sorted(samples), 99.0).unwrap_or(f64::NAN)
}

fn sorted(values: &[f64]) -> Vec<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }

    #[test]
    fn percentiles() {
        let samples: Vec<u64> = (1..=1000).collect();
        assert_eq!(percentile(&samples, 50.0), Some(500));
        assert_eq!(percentile(&samples, 99.9), Some(999));
        assert_eq!(percentile(&samples, 100.0), Some(1000));
        assert_eq!(percentile(&samples, 0.0), Some(1));
        assert_eq!(percentile::<u64>(&[], 50.0), None);
        let floats: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        assert_eq!(p99(&floats), 990.0);
        assert!(p99(&[]).is_nan());
    }
}
