//! The CPU time of the calling thread (user and system, page faults and system calls
//! included), what every timed loop of `bench --pool` reports. On a machine shared with other
//! work, wall-clock time also counts the spans a thread waits for a core, which come in random
//! lengths and land on random variants: with 2 cores and a load average of 8, wall-clock
//! medians of the same cell moved by 2× between runs. The thread's own CPU time leaves them
//! out. (What it cannot leave out: caches and memory bandwidth shared with the other work.)

use std::time::Duration;

/// A running measurement of this thread's CPU time.
#[derive(Debug, Clone, Copy)]
pub struct CpuTimer {
    started_ns: u64,
}

impl CpuTimer {
    /// Starts measuring.
    pub fn start() -> Self {
        Self {
            started_ns: thread_cpu_ns(),
        }
    }

    /// CPU time this thread used since [`start`](Self::start).
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(thread_cpu_ns().saturating_sub(self.started_ns))
    }
}

/// This thread's CPU time so far, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else; the thread CPU
    // clock exists on every Linux (and POSIX system with thread CPU clocks).
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    debug_assert_eq!(status, 0, "the thread CPU clock is always there");
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_counts_and_sleep_does_not() {
        let timer = CpuTimer::start();
        std::thread::sleep(Duration::from_millis(30));
        let slept = timer.elapsed();
        let mut sum = 0u64;
        let busy = std::time::Instant::now();
        while busy.elapsed() < Duration::from_millis(30) {
            sum = std::hint::black_box(sum.wrapping_add(1));
        }
        let worked = timer.elapsed() - slept;
        assert!(slept < Duration::from_millis(10), "{slept:?}");
        assert!(worked > Duration::ZERO, "{worked:?}");
    }
}
