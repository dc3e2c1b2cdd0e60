//! Clocks: a cycle counter for single calls (rdtsc fenced with lfence on x86-64, nanoseconds
//! elsewhere) and deadlines that let a pathological allocator time out instead of stalling
//! the run.

use std::time::{Duration, Instant};

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
    fn zero_budget_passes_at_once() {
        assert!(Deadline::after(Duration::ZERO).passed());
        assert!(!Deadline::after(Duration::from_secs(3600)).passed());
    }
}
