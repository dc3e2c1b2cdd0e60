//! Instruction counts per call, under valgrind: the deterministic regression gate.
//!
//! `heapworks bench --instructions` re-runs this binary once per (allocator, sequence) as
//! `heapworks instructions-probe …` under `valgrind --tool=callgrind`. The probe replays a
//! fixed operation sequence on the raw heap (no lock) through three `#[inline(never)]`
//! wrappers, [`measured_allocate`], [`measured_free`] and [`measured_realloc`]. Callgrind
//! starts with collection off and collects only inside those wrappers
//! (`--collect-atstart=no --toggle-collect=…`), so set-up, the sequence's own bookkeeping and
//! the process's start-up cost nothing; the inclusive cost of each wrapper, read from the
//! callgrind output file, divided by the number of calls the probe reports, is the count per
//! call. It includes the wrapper's own handful of instructions (call, return, null check),
//! identical for every allocator. The region is 2 MiB-aligned and the sequences are seeded,
//! so repeated runs give the same numbers.
//!
//! `heapworks replay --instructions` uses the same machinery ([`count_jobs`]) with its own
//! probe, `heapworks replay-probe …`, which replays a trace through [`MeasuredArena`].
//! `heapworks bench --malloc` reads the profiles of its C driver with [`inclusive_costs`] and
//! [`outgoing_calls`] (`heapworks_cli::malloc_bench`).

use std::alloc::{GlobalAlloc, Layout};
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::contenders::{self, AllocatorId, Arena, RawHeap, UseAllocator};
use crate::progress::Progress;
use crate::region::Region;
use crate::results::{Cell, Outcome, Summary};
use crate::rng::Rng;
use crate::workloads::{talc_method, Better, Config, MetricSpec, WorkloadId};

/// Heap given to every allocator in the probe.
const PROBE_HEAP: usize = 16 << 20;
/// Blocks live in the steady state of both sequences.
const LIVE: usize = 1000;
/// Steps of churn after the initial fill.
const CHURN: usize = 10_000;
/// valgrind runs at a time.
const PARALLEL_RUNS: usize = 2;

/// The fixed operation sequences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequence {
    /// 1000 blocks of 64 B; churn (free a random block, allocate 64 B); realloc each to 128 B;
    /// free all. The shape of ANCHORS §4's C-malloc figures.
    Uniform64,
    /// talc's random actions (max size 1000, 1 in 7 realloc) around 1000 live blocks, then
    /// free all.
    TalcMix,
    /// talc's random actions as its benchmark runs them (max size 10000, at least 300 live),
    /// then free all: larger blocks, so more splitting and coalescing of large chunks.
    TalcLarge,
}

impl Sequence {
    /// Every sequence, in report order.
    pub const ALL: [Sequence; 3] = [Sequence::Uniform64, Sequence::TalcMix, Sequence::TalcLarge];

    /// Name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Sequence::Uniform64 => "64 B, 1000 live",
            Sequence::TalcMix => "talc mix ≤1000 B, 1000 live",
            Sequence::TalcLarge => "talc mix ≤10000 B, ≥300 live",
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Sequence::Uniform64 => "uniform64",
            Sequence::TalcMix => "talc-mix",
            Sequence::TalcLarge => "talc-large",
        }
    }

    fn from_flag(flag: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.flag() == flag)
    }
}

/// Arguments of the hidden `instructions-probe` command: `--allocator NAME --sequence FLAG
/// --seed N`, as [`run`] writes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeArgs {
    /// Allocator to run.
    allocator: String,
    /// Sequence to run (`uniform64`, `talc-mix` or `talc-large`).
    sequence: String,
    /// Seed of the sequence.
    seed: u64,
}

impl ProbeArgs {
    /// Reads the arguments after the probe's command name.
    pub fn parse(args: &[String]) -> Result<Self, InstructionsError> {
        let [allocator, sequence, seed] =
            probe_options(args, ["--allocator", "--sequence", "--seed"])?;
        let seed = seed
            .parse()
            .map_err(|_| InstructionsError(format!("`{seed}` is not a seed")))?;
        Ok(Self {
            allocator: allocator.to_string(),
            sequence: sequence.to_string(),
            seed,
        })
    }
}

/// The values of the `--name value` pairs of a probe's command line, in the order of `names`:
/// each must be given exactly once, and nothing else.
pub fn probe_options<'a, const N: usize>(
    args: &'a [String],
    names: [&str; N],
) -> Result<[&'a str; N], InstructionsError> {
    let mut values: [Option<&str>; N] = [None; N];
    for pair in args.chunks(2) {
        let [name, value] = pair else {
            return Err(InstructionsError(format!("`{}` has no value", pair[0])));
        };
        let slot = names.iter().position(|n| n == name).map(|i| &mut values[i]);
        match slot {
            Some(slot @ None) => *slot = Some(value.as_str()),
            Some(Some(_)) => return Err(InstructionsError(format!("`{name}` given twice"))),
            None => return Err(InstructionsError(format!("unknown probe option `{name}`"))),
        }
    }
    let mut found = [""; N];
    for ((slot, value), name) in found.iter_mut().zip(values).zip(names) {
        *slot = value.ok_or_else(|| InstructionsError(format!("missing `{name}`")))?;
    }
    Ok(found)
}

/// Something went wrong while counting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionsError(pub String);

impl fmt::Display for InstructionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InstructionsError {}

/// Calls made by a probe, per operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Calls of [`measured_allocate`].
    pub allocate: u64,
    /// Calls of [`measured_free`].
    pub free: u64,
    /// Calls of [`measured_realloc`].
    pub realloc: u64,
}

impl fmt::Display for CallCounts {
    /// The line the probes print and [`parse_call_counts`] reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "calls allocate={} free={} realloc={}",
            self.allocate, self.free, self.realloc
        )
    }
}

/// Fails unless `valgrind` can be run.
pub fn check_valgrind() -> Result<(), InstructionsError> {
    match Command::new("valgrind").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err(InstructionsError(
            "--instructions needs valgrind on PATH (Debian/Ubuntu: apt-get install -y valgrind)"
                .into(),
        )),
    }
}

/// Counts instructions for every allocator and sequence; one cell per operation.
pub fn run(
    config: &Config,
    allocators: &[AllocatorId],
    progress: &dyn Progress,
) -> Result<Vec<Cell>, InstructionsError> {
    let jobs: Vec<(AllocatorId, Sequence)> = Sequence::ALL
        .into_iter()
        .flat_map(|s| allocators.iter().map(move |&a| (a, s)))
        .collect();
    let probes: Vec<ProbeJob> = jobs
        .iter()
        .map(|&(allocator, sequence)| ProbeJob {
            label: format!("{} · {allocator}", sequence.name()),
            args: [
                "instructions-probe",
                "--allocator",
                allocator.name(),
                "--sequence",
                sequence.flag(),
                "--seed",
                &config.seed.to_string(),
            ]
            .map(str::to_string)
            .to_vec(),
        })
        .collect();
    let counted = count_jobs(&probes, progress)?;
    Ok(jobs
        .into_iter()
        .zip(counted)
        .flat_map(|((allocator, sequence), counted)| {
            cells(
                WorkloadId::Instructions.name(),
                sequence.name(),
                allocator,
                counted,
            )
        })
        .collect())
}

/// One run of this binary under callgrind: a hidden probe command that calls the allocator
/// only through [`measured_allocate`], [`measured_free`] and [`measured_realloc`] and prints
/// its [`CallCounts`].
#[derive(Debug, Clone)]
pub struct ProbeJob {
    /// What the progress bar shows.
    pub label: String,
    /// The probe's command line, after the executable.
    pub args: Vec<String>,
}

/// Instructions per allocate, free and realloc.
pub type PerCall = Result<[f64; 3], InstructionsError>;

/// Runs every job under callgrind, two at a time (`PARALLEL_RUNS`); the counts per call of each,
/// in the jobs' order.
pub fn count_jobs(
    jobs: &[ProbeJob],
    progress: &dyn Progress,
) -> Result<Vec<PerCall>, InstructionsError> {
    let exe = std::env::current_exe()
        .map_err(|e| InstructionsError(format!("cannot locate this executable: {e}")))?;
    progress.add_steps(jobs.len() as u64);
    let next = AtomicUsize::new(0);
    let finished: Mutex<Vec<Option<PerCall>>> = Mutex::new(vec![None; jobs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL_RUNS {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(index) else { break };
                progress.set_message(format!("instructions · {}", job.label));
                let counted = count(&exe, job, index);
                finished.lock().expect("no worker panics")[index] = Some(counted);
                progress.step_done();
            });
        }
    });
    let finished = finished.into_inner().expect("no worker panics");
    Ok(finished
        .into_iter()
        .map(|counted| counted.expect("every job ran"))
        .collect())
}

/// The cells of one probe: instructions per allocate, free and realloc of `allocator` in
/// `workload`'s `case`.
pub fn cells(workload: &str, case: &str, allocator: AllocatorId, counted: PerCall) -> Vec<Cell> {
    ["allocate", "free", "realloc"]
        .into_iter()
        .enumerate()
        .map(|(index, operation)| {
            let outcome = match &counted {
                Ok(values) => Outcome::Measured(Summary::single(values[index])),
                Err(error) => Outcome::Failed(error.to_string()),
            };
            let metric = MetricSpec::primary(operation, "instr/call", Better::Lower);
            Cell::of(workload, case, allocator.name(), &metric, outcome)
        })
        .collect()
}

/// Runs one probe under callgrind; instructions per allocate, free and realloc.
fn count(exe: &Path, job: &ProbeJob, index: usize) -> PerCall {
    let out_file = std::env::temp_dir().join(format!(
        "heapworks-callgrind-{}-{index}.out",
        std::process::id()
    ));
    let run = run_probe_under_callgrind(exe, &job.args, &out_file);
    let profile = std::fs::read_to_string(&out_file);
    let _ = std::fs::remove_file(&out_file);
    let calls = run?;
    let profile = profile.map_err(|e| InstructionsError(format!("no callgrind output: {e}")))?;
    let costs = inclusive_costs(&profile);
    let per_call = |wrapper: &str, calls: u64| {
        let total: u64 = costs
            .iter()
            .filter(|(f, _)| f.contains(wrapper))
            .map(|(_, c)| c)
            .sum();
        if calls == 0 {
            f64::NAN
        } else {
            total as f64 / calls as f64
        }
    };
    Ok([
        per_call("measured_allocate", calls.allocate),
        per_call("measured_free", calls.free),
        per_call("measured_realloc", calls.realloc),
    ])
}

fn run_probe_under_callgrind(
    exe: &Path,
    probe_args: &[String],
    out_file: &Path,
) -> Result<CallCounts, InstructionsError> {
    let output = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out_file.display()))
        .args([
            "--collect-atstart=no",
            "--compress-strings=no",
            "--compress-pos=no",
        ])
        .args(
            ["measured_allocate", "measured_free", "measured_realloc"]
                .map(|w| format!("--toggle-collect=*{w}*")),
        )
        .arg(exe)
        .args(probe_args)
        .output()
        .map_err(|e| InstructionsError(format!("cannot run valgrind: {e}")))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let reason = stderr
            .lines()
            .rev()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("probe failed");
        return Err(InstructionsError(
            reason.trim_start_matches("error: ").to_string(),
        ));
    }
    parse_call_counts(&stdout)
        .ok_or_else(|| InstructionsError(format!("probe printed no call counts: {stdout}")))
}

/// Reads the probe's `calls allocate=… free=… realloc=…` line.
pub fn parse_call_counts(stdout: &str) -> Option<CallCounts> {
    let line = stdout.lines().find(|l| l.starts_with("calls "))?;
    let mut counts = CallCounts::default();
    for pair in line.split_whitespace().skip(1) {
        let (key, value) = pair.split_once('=')?;
        let value: u64 = value.parse().ok()?;
        match key {
            "allocate" => counts.allocate = value,
            "free" => counts.free = value,
            "realloc" => counts.realloc = value,
            _ => return None,
        }
    }
    Some(counts)
}

/// Inclusive instruction cost of every function in an uncompressed callgrind profile: its own
/// cost lines plus the inclusive cost recorded on each of its call lines.
pub fn inclusive_costs(profile: &str) -> HashMap<String, u64> {
    let mut costs: HashMap<String, u64> = HashMap::new();
    let mut function = String::new();
    let mut lines = profile.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("fn=") {
            function = name.to_string();
        } else if line.starts_with("calls=") {
            let call_cost = lines.next().and_then(cost_of_line).unwrap_or(0);
            *costs.entry(function.clone()).or_default() += call_cost;
        } else if let Some(cost) = cost_of_line(line) {
            *costs.entry(function.clone()).or_default() += cost;
        }
    }
    costs
}

/// The calls every function of an uncompressed callgrind profile makes: their number and
/// their inclusive cost, summed over the function's call lines (its own cost left out).
pub fn outgoing_calls(profile: &str) -> HashMap<String, (u64, u64)> {
    let mut calls: HashMap<String, (u64, u64)> = HashMap::new();
    let mut function = "";
    let mut lines = profile.lines();
    while let Some(line) = lines.next() {
        if let Some(name) = line.strip_prefix("fn=") {
            function = name;
        } else if let Some(call) = line.strip_prefix("calls=") {
            let count: u64 = call
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let cost = lines.next().and_then(cost_of_line).unwrap_or(0);
            let entry = calls.entry(function.to_string()).or_default();
            entry.0 += count;
            entry.1 += cost;
        }
    }
    calls
}

/// The event count of a cost line (`<position> <Ir>`), or `None` for any other line.
fn cost_of_line(line: &str) -> Option<u64> {
    let first = line.chars().next()?;
    if !(first.is_ascii_digit() || matches!(first, '+' | '-' | '*')) {
        return None;
    }
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The hidden `instructions-probe` command: runs one sequence and prints the call counts.
pub fn probe(args: &ProbeArgs) -> Result<(), InstructionsError> {
    let allocator = AllocatorId::from_name(&args.allocator)
        .ok_or_else(|| InstructionsError(format!("unknown allocator `{}`", args.allocator)))?;
    let sequence = Sequence::from_flag(&args.sequence)
        .ok_or_else(|| InstructionsError(format!("unknown sequence `{}`", args.sequence)))?;
    let mut region =
        Region::pretouched(PROBE_HEAP).map_err(|e| InstructionsError(e.to_string()))?;
    let probe = Probe {
        sequence,
        seed: args.seed,
    };
    let counts = contenders::with_allocator(allocator, &mut region, PROBE_HEAP, probe)
        .map_err(|e| InstructionsError(e.to_string()))??;
    println!("{counts}");
    Ok(())
}

/// Allocates through the heap; the only place callgrind counts allocations.
#[inline(never)]
pub fn measured_allocate<H: RawHeap>(heap: &mut H, layout: Layout) -> *mut u8 {
    // SAFETY: the heap is claimed and every probe layout has a non-zero size.
    unsafe { heap.allocate(layout) }
}

/// Frees through the heap; the only place callgrind counts frees.
///
/// # Safety
/// `ptr` is a live block of `heap` with `layout`.
#[inline(never)]
pub unsafe fn measured_free<H: RawHeap>(heap: &mut H, ptr: *mut u8, layout: Layout) {
    // SAFETY: forwarded from this function's contract.
    unsafe { heap.deallocate(ptr, layout) }
}

/// Reallocates through the heap; the only place callgrind counts reallocs.
///
/// # Safety
/// `ptr` is a live block of `heap` with `layout`; `new_size` is non-zero.
#[inline(never)]
pub unsafe fn measured_realloc<H: RawHeap>(
    heap: &mut H,
    ptr: *mut u8,
    layout: Layout,
    new_size: usize,
) -> *mut u8 {
    // SAFETY: forwarded from this function's contract.
    unsafe { heap.reallocate(ptr, layout, new_size) }
}

/// An arena as a [`GlobalAlloc`] whose every call goes through the measured wrappers, with
/// the lock taken outside them (so callgrind counts the allocator alone), counting the calls:
/// how a trace replay is measured.
pub struct MeasuredArena<'a, 'r, H: RawHeap> {
    arena: &'a Arena<'r, H>,
    allocate: AtomicU64,
    free: AtomicU64,
    realloc: AtomicU64,
}

impl<'a, 'r, H: RawHeap> MeasuredArena<'a, 'r, H> {
    /// Measures calls to `arena`.
    pub fn new(arena: &'a Arena<'r, H>) -> Self {
        Self {
            arena,
            allocate: AtomicU64::new(0),
            free: AtomicU64::new(0),
            realloc: AtomicU64::new(0),
        }
    }

    /// The calls made so far.
    pub fn calls(&self) -> CallCounts {
        CallCounts {
            allocate: self.allocate.load(Ordering::Relaxed),
            free: self.free.load(Ordering::Relaxed),
            realloc: self.realloc.load(Ordering::Relaxed),
        }
    }
}

// SAFETY: every call goes to the arena's heap under its lock, through wrappers that forward
// to `RawHeap`, whose contract is `GlobalAlloc`'s (see `Arena`).
unsafe impl<H: RawHeap> GlobalAlloc for MeasuredArena<'_, '_, H> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.allocate.fetch_add(1, Ordering::Relaxed);
        measured_allocate(&mut *self.arena.lock(), layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.free.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded from `GlobalAlloc::dealloc`'s contract.
        unsafe { measured_free(&mut *self.arena.lock(), ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        self.realloc.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded from `GlobalAlloc::realloc`'s contract.
        unsafe { measured_realloc(&mut *self.arena.lock(), ptr, layout, new_size) }
    }
}

/// A live block of the probe.
#[derive(Clone, Copy)]
struct Live {
    ptr: *mut u8,
    layout: Layout,
}

/// The raw heap with call counting: every operation of a sequence goes through here.
struct Counted<'h, H: RawHeap> {
    heap: &'h mut H,
    calls: CallCounts,
    live: Vec<Live>,
}

impl<H: RawHeap> Counted<'_, H> {
    fn allocate(&mut self, layout: Layout) -> bool {
        self.calls.allocate += 1;
        let ptr = measured_allocate(self.heap, layout);
        if !ptr.is_null() {
            self.live.push(Live { ptr, layout });
        }
        !ptr.is_null()
    }

    fn free(&mut self, index: usize) {
        let block = self.live.swap_remove(index);
        self.calls.free += 1;
        // SAFETY: the block is live in this heap with its layout, and removed from the set.
        unsafe { measured_free(self.heap, block.ptr, block.layout) }
    }

    fn realloc(&mut self, index: usize, new_size: usize) {
        let block = self.live[index];
        self.calls.realloc += 1;
        // SAFETY: the block is live in this heap with its layout; `new_size` is non-zero.
        let ptr = unsafe { measured_realloc(self.heap, block.ptr, block.layout, new_size) };
        if !ptr.is_null() {
            let layout =
                Layout::from_size_align(new_size, block.layout.align()).expect("valid layout");
            self.live[index] = Live { ptr, layout };
        }
    }

    fn free_all(&mut self) {
        while !self.live.is_empty() {
            self.free(self.live.len() - 1);
        }
    }
}

struct Probe {
    sequence: Sequence,
    seed: u64,
}

impl UseAllocator for Probe {
    type Output = Result<CallCounts, InstructionsError>;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> Self::Output {
        let mut heap = arena.lock();
        let mut counted = Counted {
            heap: &mut *heap,
            calls: CallCounts::default(),
            live: Vec::with_capacity(LIVE * 2),
        };
        let mut rng = Rng::new(self.seed);
        match self.sequence {
            Sequence::Uniform64 => uniform64(&mut counted, &mut rng)?,
            Sequence::TalcMix => talc_mix(&mut counted, &mut rng, 1000, LIVE),
            Sequence::TalcLarge => talc_mix(&mut counted, &mut rng, 10_000, 300),
        }
        counted.free_all();
        Ok(counted.calls)
    }
}

fn uniform64<H: RawHeap>(
    counted: &mut Counted<'_, H>,
    rng: &mut Rng,
) -> Result<(), InstructionsError> {
    let small = Layout::from_size_align(64, 8).expect("valid layout");
    let out_of_memory = || InstructionsError("out of memory".into());
    for _ in 0..LIVE {
        counted
            .allocate(small)
            .then_some(())
            .ok_or_else(out_of_memory)?;
    }
    for _ in 0..CHURN {
        counted.free(rng.below(counted.live.len()));
        counted
            .allocate(small)
            .then_some(())
            .ok_or_else(out_of_memory)?;
    }
    for index in 0..counted.live.len() {
        counted.realloc(index, 128);
    }
    Ok(())
}

/// talc's random actions with sizes up to `max_size`, never fewer than `min_live` blocks live.
fn talc_mix<H: RawHeap>(
    counted: &mut Counted<'_, H>,
    rng: &mut Rng,
    max_size: usize,
    min_live: usize,
) {
    while counted.live.len() < min_live {
        counted.allocate(talc_method::layout(rng, max_size));
    }
    for _ in 0..CHURN {
        match rng.below(7) {
            6 => {
                let index = rng.below(counted.live.len());
                counted.realloc(index, rng.in_range(1, max_size * 3));
            }
            action if action < 3 || counted.live.len() < min_live => {
                counted.allocate(talc_method::layout(rng, max_size));
            }
            _ => counted.free(rng.below(counted.live.len())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_arguments_are_exact() {
        let args = |text: &str| -> Vec<String> { text.split(' ').map(String::from).collect() };
        let parsed = ProbeArgs::parse(&args("--seed 7 --allocator talc --sequence talc-mix"));
        assert_eq!(
            parsed,
            Ok(ProbeArgs {
                allocator: "talc".into(),
                sequence: "talc-mix".into(),
                seed: 7
            })
        );
        for bad in [
            "--allocator talc --sequence talc-mix",
            "--allocator talc --sequence talc-mix --seed 1 --seed 2",
            "--allocator talc --sequence talc-mix --seed",
            "--allocator talc --sequence talc-mix --seed x",
            "--allocator talc --sequence talc-mix --seed 1 --heap 9",
        ] {
            assert!(ProbeArgs::parse(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn call_counts_parse() {
        let counts = parse_call_counts("noise\ncalls allocate=3 free=2 realloc=1\n").unwrap();
        assert_eq!(
            counts,
            CallCounts {
                allocate: 3,
                free: 2,
                realloc: 1
            }
        );
        assert_eq!(parse_call_counts("calls allocate=x"), None);
        assert_eq!(parse_call_counts(""), None);
    }

    #[test]
    fn inclusive_costs_add_self_and_call_lines() {
        let profile =
            "events: Ir\nfn=a::measured_allocate\n10 5\n11 2\ncfn=inner\ncalls=1 20\n12 40\n\
                       fn=inner\n20 40\n";
        let costs = inclusive_costs(profile);
        assert_eq!(costs["a::measured_allocate"], 47);
        assert_eq!(costs["inner"], 40);
    }

    #[test]
    fn outgoing_calls_add_call_lines_only() {
        let profile = "events: Ir\nfn=measured_fill\n0 180\ncfn=malloc\ncalls=20 37 \n0 280\n\
                       0 20\ncfn=malloc\ncalls=19980 37 \n0 279720\n0 60080\nfn=malloc\n0 14\n";
        let calls = outgoing_calls(profile);
        assert_eq!(calls["measured_fill"], (20_000, 280_000));
        assert!(!calls.contains_key("malloc"));
    }

    #[test]
    fn probe_sequences_run_on_every_allocator() {
        let mut region = Region::pretouched(PROBE_HEAP).unwrap();
        for &allocator in AllocatorId::ALL {
            for sequence in Sequence::ALL {
                let probe = Probe { sequence, seed: 1 };
                let counts = contenders::with_allocator(allocator, &mut region, PROBE_HEAP, probe)
                    .unwrap()
                    .unwrap();
                assert!(counts.allocate >= LIVE as u64, "{allocator} {sequence:?}");
                assert!(
                    counts.free >= LIVE as u64 && counts.realloc > 0,
                    "{allocator} {sequence:?}"
                );
            }
        }
    }
}
