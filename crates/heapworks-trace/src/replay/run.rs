//! Running a [`Plan`] against an allocator: one OS thread per stream, one timed call per step.
//!
//! Invariants:
//! - `slots[slot]` holds the current block of the id that holds the slot ([`Plan`]), and its
//!   layout; `done` counts the steps on the slot that completed. A step with `wait == done`
//!   is the only one that may touch the slot, and publishes its changes with a Release store
//!   of `done`, read with Acquire by the next one.
//! - Every block the allocator handed out is, at every moment, either in a slot or in its
//!   thread's leak list; [`run`] frees all of them before returning, error or not.
//! - `abort` is set by the first failing thread; waiting threads then stop.

use super::check::Checker;
use super::footprint::{Footprint, Span};
use super::plan::{Action, Plan, Step};
use super::{ReplayError, ReplayOptions};
use core::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Latency recorded for a step that calls nothing (`free(NULL)`).
pub const NOT_TIMED: u32 = u32::MAX;

/// What a replay measured.
pub struct Outcome {
    /// Nanoseconds of each request's call, by global index ([`NOT_TIMED`] if none).
    pub latencies: Vec<u32>,
    /// Largest footprint sample, if any.
    pub footprint: Option<u64>,
    pub timer_overhead_ns: u64,
    pub wall_ns: u64,
}

struct Slot {
    ptr: AtomicPtr<u8>,
    size: AtomicUsize,
    align: AtomicUsize,
    done: AtomicU64,
}

struct Replay<'a, A> {
    alloc: &'a A,
    slots: Vec<Slot>,
    checker: Option<Checker>,
    footprint: Footprint<'a>,
    peak_index: Option<usize>,
    peak_sample: AtomicU64,
    abort: AtomicBool,
    timer_overhead_ns: u64,
}

/// What one thread did.
struct ThreadRun {
    thread: u32,
    /// Latency of each of the thread's steps, in order, as far as it got.
    latencies: Vec<u32>,
    leaks: Vec<(*mut u8, Layout)>,
    span: Span,
    error: Option<ReplayError>,
}

// SAFETY: the raw pointers in `leaks` are blocks owned by the replay, handed from the worker
// thread back to the caller only to be freed; nothing else refers to them.
unsafe impl Send for ThreadRun {}

/// Runs `plan` against `alloc`.
pub fn run<A: GlobalAlloc + Sync>(
    plan: &Plan,
    alloc: &A,
    options: &ReplayOptions,
) -> Result<Outcome, ReplayError> {
    let replay = Replay {
        alloc,
        slots: (0..plan.slots).map(|_| Slot::empty()).collect(),
        checker: options.check.then(|| Checker::new(options.heap.clone())),
        footprint: options.footprint,
        peak_index: plan.peak_index,
        peak_sample: AtomicU64::new(0),
        abort: AtomicBool::new(false),
        timer_overhead_ns: timer_overhead_ns(),
    };
    let op_count = plan.threads.iter().map(|(_, steps)| steps.len()).sum();
    if let Footprint::Probe(probe) = replay.footprint {
        probe.start();
    }
    let started = Instant::now();
    let runs = replay.run_threads(plan);
    let wall_ns = started.elapsed().as_nanos() as u64;
    let span = runs
        .iter()
        .fold(Span::default(), |span, run| span.merge(run.span));
    let footprint = replay.final_footprint(span);
    let mut latencies = vec![NOT_TIMED; op_count];
    let mut first_error = None;
    for run in runs {
        replay.release_all(&run.leaks);
        place_latencies(plan, run.thread, &run.latencies, &mut latencies);
        first_error = first_error.or(run.error);
    }
    replay.release_slots();
    match first_error {
        Some(error) => Err(error),
        None => Ok(Outcome {
            latencies,
            footprint,
            timer_overhead_ns: replay.timer_overhead_ns,
            wall_ns,
        }),
    }
}

fn place_latencies(plan: &Plan, thread: u32, measured: &[u32], latencies: &mut [u32]) {
    let steps = plan
        .threads
        .iter()
        .find(|(label, _)| *label == thread)
        .map(|(_, steps)| steps.as_slice())
        .unwrap_or_default();
    for (step, &ns) in steps.iter().zip(measured) {
        latencies[step.index] = ns;
    }
}

/// The cost of one `Instant::now()` pair, the least of many tries.
fn timer_overhead_ns() -> u64 {
    (0..1000)
        .map(|_| {
            let start = Instant::now();
            start.elapsed().as_nanos() as u64
        })
        .min()
        .unwrap_or(0)
}

impl Slot {
    fn empty() -> Self {
        Self {
            ptr: AtomicPtr::new(core::ptr::null_mut()),
            size: AtomicUsize::new(0),
            align: AtomicUsize::new(1),
            done: AtomicU64::new(0),
        }
    }

    fn block(&self) -> *mut u8 {
        self.ptr.load(Ordering::Relaxed)
    }

    fn set(&self, ptr: *mut u8, layout: Layout) {
        self.ptr.store(ptr, Ordering::Relaxed);
        self.size.store(layout.size(), Ordering::Relaxed);
        self.align.store(layout.align(), Ordering::Relaxed);
    }
}

impl<A: GlobalAlloc + Sync> Replay<'_, A> {
    fn run_threads(&self, plan: &Plan) -> Vec<ThreadRun> {
        if let [(thread, steps)] = plan.threads.as_slice() {
            return vec![self.run_thread(*thread, steps)];
        }
        std::thread::scope(|scope| {
            let handles: Vec<_> = plan
                .threads
                .iter()
                .map(|(thread, steps)| scope.spawn(move || self.run_thread(*thread, steps)))
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    }

    fn run_thread(&self, thread: u32, steps: &[Step]) -> ThreadRun {
        let leaking = steps
            .iter()
            .filter(|step| matches!(step.action, Action::Alloc { leaks: Some(_), .. }))
            .count();
        let mut run = ThreadRun {
            thread,
            latencies: Vec::with_capacity(steps.len()),
            leaks: Vec::with_capacity(leaking),
            span: Span::default(),
            error: None,
        };
        for step in steps {
            if !self.wait_turn(step) {
                break;
            }
            match self.execute(thread, step, &mut run) {
                Ok(ns) => run.latencies.push(ns),
                Err(error) => {
                    self.abort.store(true, Ordering::Relaxed);
                    run.error = Some(error);
                    break;
                }
            }
            self.slots[step.slot as usize]
                .done
                .store(step.wait + 1, Ordering::Release);
            if self.peak_index == Some(step.index) {
                self.sample_footprint();
            }
        }
        run
    }

    /// Waits until every earlier request on the step's slot is done; false if the replay aborted.
    fn wait_turn(&self, step: &Step) -> bool {
        let done = &self.slots[step.slot as usize].done;
        let mut spins = 0u32;
        while done.load(Ordering::Acquire) != step.wait {
            if self.abort.load(Ordering::Relaxed) {
                return false;
            }
            if spins < 100 {
                core::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
        true
    }

    fn execute(&self, thread: u32, step: &Step, run: &mut ThreadRun) -> Result<u32, ReplayError> {
        let slot = &self.slots[step.slot as usize];
        let check_error = |failure| ReplayError::Check {
            op: step.index,
            thread,
            failure,
        };
        let out_of_memory = |layout: Layout| ReplayError::OutOfMemory {
            op: step.index,
            thread,
            size: layout.size(),
            align: layout.align(),
        };
        match step.action {
            Action::Nothing => Ok(NOT_TIMED),
            Action::Alloc {
                layout,
                zeroed,
                leaks,
            } => {
                if let Some(old) = leaks {
                    run.leaks.push((slot.block(), old));
                }
                let start = Instant::now();
                // SAFETY: plan layouts have a non-zero size.
                let ptr = unsafe {
                    if zeroed {
                        self.alloc.alloc_zeroed(layout)
                    } else {
                        self.alloc.alloc(layout)
                    }
                };
                let ns = self.elapsed_ns(start);
                slot.set(ptr, layout);
                if ptr.is_null() {
                    return Err(out_of_memory(layout));
                }
                run.span.include(ptr as usize, layout.size());
                if let Some(checker) = &self.checker {
                    // SAFETY: a fresh block of `layout` from the allocator.
                    unsafe { checker.allocated(step.index, ptr, layout, zeroed) }
                        .map_err(check_error)?;
                }
                Ok(ns)
            }
            Action::Realloc { old, new } => {
                let ptr = slot.block();
                let released = match &self.checker {
                    // SAFETY: the id's live block, which the checker was told about.
                    Some(checker) => Some(unsafe { checker.releasing(ptr) }.map_err(check_error)?),
                    None => None,
                };
                let start = Instant::now();
                // SAFETY: `ptr` is the id's live block, allocated with `old` (the plan tracks
                // each id's layout); `new` has a non-zero size and `old`'s alignment.
                let moved = unsafe { self.alloc.realloc(ptr, old, new.size()) };
                let ns = self.elapsed_ns(start);
                if moved.is_null() {
                    return Err(out_of_memory(new));
                }
                slot.set(moved, new);
                run.span.include(moved as usize, new.size());
                if let (Some(checker), Some(released)) = (&self.checker, released) {
                    // SAFETY: the block realloc just returned for the released one.
                    unsafe { checker.reallocated(step.index, released, moved, new) }
                        .map_err(check_error)?;
                }
                Ok(ns)
            }
            Action::Free { layout } => {
                let ptr = slot.block();
                if let Some(checker) = &self.checker {
                    // SAFETY: the id's live block, which the checker was told about.
                    unsafe { checker.releasing(ptr) }.map_err(check_error)?;
                }
                let start = Instant::now();
                // SAFETY: `ptr` is the id's live block, allocated with `layout`.
                unsafe { self.alloc.dealloc(ptr, layout) };
                let ns = self.elapsed_ns(start);
                slot.set(core::ptr::null_mut(), layout);
                Ok(ns)
            }
        }
    }

    fn elapsed_ns(&self, start: Instant) -> u32 {
        let ns = (start.elapsed().as_nanos() as u64).saturating_sub(self.timer_overhead_ns);
        ns.min(u64::from(NOT_TIMED - 1)) as u32
    }

    fn sample_footprint(&self) {
        if let Footprint::Probe(probe) = self.footprint {
            if let Some(bytes) = probe.sample() {
                self.peak_sample.fetch_max(bytes, Ordering::Relaxed);
            }
        }
    }

    fn final_footprint(&self, span: Span) -> Option<u64> {
        match self.footprint {
            Footprint::AddressSpan => span.bytes(),
            Footprint::Probe(probe) => {
                let last = probe.sample();
                let peak = self.peak_sample.load(Ordering::Relaxed);
                last.map(|last| last.max(peak))
                    .or((peak > 0).then_some(peak))
            }
            Footprint::Unavailable => None,
        }
    }

    fn release_all(&self, blocks: &[(*mut u8, Layout)]) {
        for &(ptr, layout) in blocks {
            if !ptr.is_null() {
                // SAFETY: a leaked block of this replay, allocated with `layout`, freed once.
                unsafe { self.alloc.dealloc(ptr, layout) };
            }
        }
    }

    fn release_slots(&self) {
        for slot in &self.slots {
            let ptr = slot.block();
            let layout = Layout::from_size_align(
                slot.size.load(Ordering::Relaxed),
                slot.align.load(Ordering::Relaxed),
            );
            if let (false, Ok(layout)) = (ptr.is_null(), layout) {
                // SAFETY: the slot's live block, allocated with the layout stored beside it;
                // all threads have finished, and each slot is freed once.
                unsafe { self.alloc.dealloc(ptr, layout) };
            }
        }
    }
}
