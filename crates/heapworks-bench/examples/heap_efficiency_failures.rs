//! Why talc's heap-efficiency rounds end: the method of `heapworks bench`'s `heap_efficiency`
//! workload (full scale: 128 MiB, 43 rounds a trial, the same seeds trial by trial), with the
//! request each round ends on and the space left between the live blocks at that moment.
//!
//! ```sh
//! cargo run --release -p heapworks-bench --example heap_efficiency_failures -- \
//!     [--alloc heapworks,dlmalloc] [--trials 7] [--rounds 43] [--failures]
//! ```
//!
//! Prints each trial's efficiency and, per allocator, their median and mean (trial `t` is the
//! bench's trial `t`, so seven trials give the bench's median); `--failures` adds a line per
//! round: the refused request, the bytes between the live blocks (free chunks, the allocator's
//! headers and padding), the largest such gap, and the gaps by size.

use std::ops::Range;
use std::process::ExitCode;
use std::time::Duration;

use heapworks_bench::contenders::{self, AllocatorId, Arena, RawHeap, UseAllocator};
use heapworks_bench::region::Region;
use heapworks_bench::rng::{derive_seed, Rng};
use heapworks_bench::timing::Deadline;
use heapworks_bench::workloads::heap_efficiency::{self, Gaps, Refused};
use heapworks_bench::workloads::{Config, Scale};

/// What to run, from the command line.
struct Options {
    allocators: Vec<AllocatorId>,
    trials: usize,
    rounds: usize,
    failures: bool,
}

fn parse() -> Result<Options, String> {
    let mut options = Options {
        allocators: vec![AllocatorId::Heapworks, AllocatorId::Dlmalloc],
        trials: 7,
        rounds: 43,
        failures: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--alloc" => {
                options.allocators = value()?
                    .split(',')
                    .map(|name| {
                        AllocatorId::from_name(name).ok_or(format!("unknown allocator {name}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            "--trials" => options.trials = number(&value()?, 1000)?,
            "--rounds" => options.rounds = number(&value()?, 1000)?,
            "--failures" => options.failures = true,
            _ => return Err(format!("unknown argument {arg}")),
        }
    }
    Ok(options)
}

/// A number from 1 to `max`.
fn number(text: &str, max: usize) -> Result<usize, String> {
    match text.parse() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!("{text}: expected a number from 1 to {max}")),
    }
}

/// The rounds of one trial on one allocator, over the heap `heap`.
struct Rounds {
    seed: u64,
    rounds: usize,
    failures: bool,
    heap: Range<usize>,
}

impl UseAllocator for Rounds {
    type Output = Result<f64, String>;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> Result<f64, String> {
        let mut rng = Rng::new(self.seed);
        let deadline = Deadline::after(Duration::from_secs(600));
        let mut used = 0usize;
        for _ in 0..self.rounds {
            let (live, refused) =
                heap_efficiency::round(arena, &mut rng, &deadline).map_err(|e| e.to_string())?;
            used += live.requested_bytes();
            if self.failures {
                report(&refused, &Gaps::between(live.as_slice(), self.heap.clone()));
            }
            live.free_all(arena);
        }
        Ok(used as f64 / (self.heap.len() * self.rounds) as f64 * 100.0)
    }
}

/// One round's line: the refused request, then the gaps.
fn report(refused: &Refused, gaps: &Gaps) {
    let request = match refused {
        Refused::Allocate(layout) => format!("allocate {} B", layout.size()),
        Refused::Reallocate { from, to } => format!("realloc {from} -> {to} B"),
    };
    let kib = |bytes: usize| bytes as f64 / 1024.0;
    let mut line = format!(
        "    {request:<26} gaps {:8.1} KiB, largest {:6.1} KiB:",
        kib(gaps.total),
        kib(gaps.largest)
    );
    for (octave, &(count, bytes)) in gaps.by_octave.iter().enumerate() {
        if count > 0 && octave >= 10 {
            line += &format!(" {}K+ {count}×={:.0}K", 1 << (octave - 10), kib(bytes));
        }
    }
    println!("{line}");
}

fn main() -> ExitCode {
    let options = match parse() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("heap_efficiency_failures: {message}");
            return ExitCode::FAILURE;
        }
    };
    let config = Config::at_scale(Scale::Full, 1);
    let case = &heap_efficiency::cases(&config)[0];
    let label = format!("{}/{}", case.workload, case.name);
    let mut region = match Region::pretouched(case.heap_len) {
        Ok(region) => region,
        Err(error) => {
            eprintln!("heap_efficiency_failures: {error}");
            return ExitCode::FAILURE;
        }
    };
    let base = region.base() as usize;
    for &allocator in &options.allocators {
        let mut efficiencies = Vec::new();
        for trial in 0..options.trials {
            let work = Rounds {
                seed: derive_seed(config.seed, &label, trial),
                rounds: options.rounds,
                failures: options.failures,
                heap: base..base + case.heap_len,
            };
            match contenders::with_allocator(allocator, &mut region, case.heap_len, work) {
                Ok(Ok(efficiency)) => {
                    println!("{allocator} trial {trial}: {efficiency:.3} %");
                    efficiencies.push(efficiency);
                }
                Ok(Err(error)) => println!("{allocator} trial {trial}: {error}"),
                Err(error) => println!("{allocator}: {}", error.0),
            }
        }
        efficiencies.sort_by(f64::total_cmp);
        if let Some(median) = efficiencies.get(efficiencies.len() / 2) {
            let mean = efficiencies.iter().sum::<f64>() / efficiencies.len() as f64;
            println!(
                "{allocator}: median {median:.3} %, mean {mean:.3} % over {} trials",
                efficiencies.len()
            );
        }
    }
    ExitCode::SUCCESS
}
