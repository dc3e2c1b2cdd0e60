//! Bench your own allocator against every peer: a tiny bump allocator, registered as a
//! contender, run through the suite beside heapworks, talc, rlsf, dlmalloc and the others,
//! then where it stands in each row.
//!
//! ```sh
//! cargo run --release -p heapworks-bench --example bump            # seconds: the tiny scale
//! cargo run --release -p heapworks-bench --example bump -- default # about a minute
//! ```
//!
//! A bump allocator never reuses memory (free only takes back the last block), so it runs out
//! of memory wherever a workload frees and allocates for long: those cells say `out of
//! memory`, the others are timed like every peer's.

use std::alloc::Layout;
use std::ptr;

use heapworks_bench::contenders::custom::register;
use heapworks_bench::contenders::{AllocatorId, RawHeap, SetupError};
use heapworks_bench::progress::Silent;
use heapworks_bench::runner::{self, Selection};
use heapworks_bench::standings::standings;
use heapworks_bench::workloads::{Config, Scale, WorkloadId};

/// The one trait to implement: hand out blocks from a region, front to back.
struct Bump {
    /// Next free byte.
    next: usize,
    /// One past the region's last byte.
    end: usize,
    /// Start of the last block handed out, which `deallocate` can take back.
    last: usize,
}

impl RawHeap for Bump {
    fn unclaimed() -> Self {
        Bump {
            next: 0,
            end: 0,
            last: usize::MAX,
        }
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        self.next = base as usize;
        self.end = self.next + len;
        Ok(())
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        let start = match self.next.checked_next_multiple_of(layout.align()) {
            Some(start) if start <= self.end && self.end - start >= layout.size() => start,
            _ => return ptr::null_mut(),
        };
        self.last = start;
        self.next = start + layout.size();
        // The block is inside the region claimed above: use its address with the region's
        // provenance, which `next` lost when it became an integer.
        ptr::with_exposed_provenance_mut(start)
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, _layout: Layout) {
        if ptr.addr() == self.last {
            self.next = self.last;
            self.last = usize::MAX;
        }
    }
}

fn main() -> Result<(), String> {
    let scale = match std::env::args().nth(1).as_deref() {
        None | Some("tiny") => Scale::Tiny,
        Some("default") => Scale::Default,
        Some(other) => return Err(format!("unknown scale `{other}` (tiny or default)")),
    };
    let bump = register::<Bump>("bump", "bump (heapworks-bench/examples/bump.rs)")
        .map_err(|e| e.to_string())?;
    let mut allocators = vec![bump];
    allocators.extend(AllocatorId::ALL);
    let selection = Selection {
        workloads: WorkloadId::TIMED.to_vec(),
        allocators,
    };
    let config = Config::at_scale(scale, 1);
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; timings are not meaningful (use --release)");
    }
    let results = runner::run(&config, &selection, &Silent)?;
    println!("bump against the best peer of each row ({scale:?} scale):");
    for standing in standings(&results, bump.name()) {
        let ratio = standing
            .ratio
            .map_or_else(|| "failed".to_string(), |r| format!("×{r:.2}"));
        let rank = format!("{}/{}", standing.rank, standing.ranked);
        println!(
            "  {:<5} rank {rank:<5} {ratio:>7} vs {:<12} {} · {} · {}",
            standing.verdict.name(),
            standing.best_peer,
            standing.workload,
            standing.case,
            standing.metric
        );
    }
    Ok(())
}
