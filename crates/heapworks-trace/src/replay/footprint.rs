//! Measuring how much memory an allocator holds, for utilization (peak live payload bytes over
//! footprint bytes).
//!
//! Invariants: a probe is sampled only outside timed calls — once after the request at which
//! live payload peaks and once after the last request — and the footprint reported is the
//! larger sample. [`Footprint::AddressSpan`] needs no probe: it is the distance from the lowest
//! block start to the highest block end the allocator handed out, which is the heap used by an
//! arena allocator that carves one region from its start, and meaningless for the system
//! allocator (use [`GlibcHeap`] there).

use std::sync::atomic::{AtomicU64, Ordering};

/// Reads how many bytes an allocator holds now.
pub trait FootprintProbe: Sync {
    /// Called once, after the replay set itself up and just before the first request.
    fn start(&self) {}

    /// Bytes held now, or `None` if unknown.
    fn sample(&self) -> Option<u64>;
}

/// How a replay measures the footprint.
#[derive(Clone, Copy)]
pub enum Footprint<'a> {
    /// Highest block end less lowest block start (see the module documentation).
    AddressSpan,
    /// Ask the caller's probe (for example an arena's high-water mark).
    Probe(&'a dyn FootprintProbe),
    /// No footprint: utilization is not reported.
    Unavailable,
}

/// glibc's heap, for `std::alloc::System`: the bytes glibc holds from the system
/// (`mallinfo2`: `arena` + `hblkhd`, every arena's heap plus mmapped blocks) less the bytes
/// that were in use (`uordblks` + `hblkhd`) when the replay started. Free memory glibc held at
/// the start counts as footprint, since the replay can use it.
///
/// Approximate: other threads of the process allocate into the same heap, and in `check` mode
/// the checker's own bookkeeping is counted. Always `None` outside Linux with glibc.
#[derive(Debug, Default)]
pub struct GlibcHeap {
    in_use_at_start: AtomicU64,
}

impl GlibcHeap {
    /// A probe whose baseline is taken when the replay starts.
    pub fn new() -> Self {
        Self::default()
    }

    /// `(held, in_use)` bytes now.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn now() -> Option<(u64, u64)> {
        // SAFETY: mallinfo2 only reads glibc's allocator statistics.
        let info = unsafe { libc::mallinfo2() };
        let mapped = info.hblkhd as u64;
        Some((info.arena as u64 + mapped, info.uordblks as u64 + mapped))
    }

    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    fn now() -> Option<(u64, u64)> {
        None
    }
}

impl FootprintProbe for GlibcHeap {
    fn start(&self) {
        let in_use = Self::now().map_or(0, |(_, in_use)| in_use);
        self.in_use_at_start.store(in_use, Ordering::Relaxed);
    }

    fn sample(&self) -> Option<u64> {
        let baseline = self.in_use_at_start.load(Ordering::Relaxed);
        Self::now().map(|(held, _)| held.saturating_sub(baseline))
    }
}

/// The lowest start and highest end of the blocks one thread saw.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    low: usize,
    high: usize,
}

impl Default for Span {
    fn default() -> Self {
        Self {
            low: usize::MAX,
            high: 0,
        }
    }
}

impl Span {
    /// Takes in a block.
    pub fn include(&mut self, start: usize, size: usize) {
        self.low = self.low.min(start);
        self.high = self.high.max(start.saturating_add(size));
    }

    /// Both spans' blocks.
    pub fn merge(self, other: Span) -> Span {
        Span {
            low: self.low.min(other.low),
            high: self.high.max(other.high),
        }
    }

    /// Bytes from the lowest start to the highest end, if any block was seen.
    pub fn bytes(&self) -> Option<u64> {
        (self.high > self.low).then(|| (self.high - self.low) as u64)
    }
}
