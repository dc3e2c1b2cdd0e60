//! Clocks: a cycle counter for single calls (rdtsc fenced with lfence on x86-64, nanoseconds
//! elsewhere), timed phases that also time a sample of their requests alone, and deadlines
//! that let a pathological allocator time out instead of stalling the run.

use std::time::{Duration, Instant};

use crate::region::prefault_spare;

/// Unit of [`cycle_stamp`] values.
#[cfg(target_arch = "x86_64")]
pub const STAMP_UNIT: &str = "ticks";
/// Unit of [`cycle_stamp`] values.
#[cfg(not(target_arch = "x86_64"))]
pub const STAMP_UNIT: &str = "ns";

/// A timestamp for bracketing one call. On x86-64 the `lfence`s keep earlier instructions from
/// drifting past the read and later ones from starting before it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub fn cycle_stamp() -> u64 {
    use std::arch::x86_64::{_mm_lfence, _rdtsc};
    // SAFETY: `lfence` and `rdtsc` are part of the x86-64 baseline and have no preconditions.
    unsafe {
        _mm_lfence();
        let stamp = _rdtsc();
        _mm_lfence();
        stamp
    }
}

/// A timestamp for bracketing one call (nanoseconds since the first call).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub fn cycle_stamp() -> u64 {
    use std::sync::OnceLock;
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// A timed phase of requests whose total is one clock reading at each end, and which also times
/// one request in [`SAMPLE_EVERY`] alone with [`cycle_stamp`] (for response percentiles), its
/// ticks converted to nanoseconds by the phase's own clock. The sampled requests' stamps are
/// in the total: a few cycles per request on average, the same for every allocator.
pub struct SampledPhase {
    started: Instant,
    first_stamp: u64,
    requests: usize,
    samples: Vec<u64>,
}

/// One request in this many is timed alone by a [`SampledPhase`].
pub const SAMPLE_EVERY: usize = 8;

impl SampledPhase {
    /// Starts the phase's clock, with room for the samples of `requests` requests (faulted in
    /// now: more requests than that grow the samples inside the phase).
    pub fn start(requests: usize) -> Self {
        let mut samples = Vec::with_capacity(requests / SAMPLE_EVERY + 1);
        prefault_spare(&mut samples, 0);
        Self {
            started: Instant::now(),
            first_stamp: cycle_stamp(),
            requests: 0,
            samples,
        }
    }

    /// Runs one request of the phase, timing it alone when its turn comes.
    #[inline(always)]
    pub fn request<T>(&mut self, call: impl FnOnce() -> T) -> T {
        self.requests += 1;
        if !self.requests.is_multiple_of(SAMPLE_EVERY) {
            return call();
        }
        let before = cycle_stamp();
        let result = call();
        self.samples.push(cycle_stamp().saturating_sub(before));
        result
    }

    /// Stops the clock: the phase's length, and the sampled responses in nanoseconds.
    pub fn finish(self) -> (Duration, Vec<f64>) {
        let ticks = cycle_stamp().saturating_sub(self.first_stamp);
        let elapsed = self.started.elapsed();
        let ns_per_tick = if ticks == 0 {
            0.0
        } else {
            elapsed.as_nanos() as f64 / ticks as f64
        };
        let samples = self.samples.iter().map(|&t| t as f64 * ns_per_tick);
        (elapsed, samples.collect())
    }
}

/// A point in time after which a trial gives up.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    start: Instant,
    budget: Duration,
}

impl Deadline {
    /// A deadline `budget` from now.
    pub fn after(budget: Duration) -> Self {
        Self {
            start: Instant::now(),
            budget,
        }
    }

    /// Whether the budget is spent.
    pub fn passed(&self) -> bool {
        self.start.elapsed() >= self.budget
    }

    /// The budget this deadline was set with.
    pub fn budget(&self) -> Duration {
        self.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_do_not_go_backwards() {
        let first = cycle_stamp();
        let second = cycle_stamp();
        assert!(second >= first);
    }

    #[test]
    fn a_phase_samples_one_request_in_eight() {
        let mut phase = SampledPhase::start(80);
        let sum: usize = (0..80).map(|i| phase.request(|| i)).sum();
        assert_eq!(sum, 79 * 80 / 2, "every request runs once");
        let (elapsed, samples) = phase.finish();
        assert_eq!(samples.len(), 80 / SAMPLE_EVERY);
        assert!(samples
            .iter()
            .all(|&ns| ns >= 0.0 && ns <= elapsed.as_nanos() as f64 + 1.0));
    }

    #[test]
    fn zero_budget_passes_at_once() {
        assert!(Deadline::after(Duration::ZERO).passed());
        assert!(!Deadline::after(Duration::from_secs(3600)).passed());
    }
}
