//! The arena allocators of `bench` tortured in-process, each over a fresh 32 MiB region (the
//! system allocator over none): the parts of the C contract that a `GlobalAlloc` has, and
//! randomized sequences with cookies and a shadow model.
//!
//! Invariants: every live block is in exactly one shadow entry with its layout and cookie;
//! its bytes hold the cookie's pattern, verified before every realloc and free (so an
//! overlap or a block handed out twice is seen); a refused request (null) is never a failure
//! in a sequence, whose live set can fragment a fixed arena, but is one where the arena is
//! nearly empty (alignment, realloc, recovery after exhaustion). A panic inside an allocator
//! is caught and becomes every case's verdict.

use std::alloc::{GlobalAlloc, Layout};
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use heapworks_bench::contenders::{with_allocator, AllocatorId, Arena, RawHeap, UseAllocator};
use heapworks_bench::region::Region;
use heapworks_bench::results::Outcome;
use heapworks_bench::rng::Rng;
use heapworks_bench::workloads::blocks::{Block, LiveBlocks};

/// Bytes of the region every arena is built over.
pub const HEAP_LEN: usize = 32 << 20;
/// Shadow slots of one sequence.
const SLOTS: usize = 256;
/// Largest block of the exhaustion case.
const EXHAUSTION_BLOCK: usize = 64 << 10;

/// The rows of the arena scorecard: name, and whether it is a verdict (else a measurement).
pub const CASES: [&str; 6] = [
    "sequence",
    "threads",
    "alignment",
    "realloc",
    "exhaustion",
    "realloc in place",
];

/// A block with the cookie its contents were patterned with.
#[derive(Debug, Clone, Copy)]
struct Cookied {
    block: Block,
    cookie: u64,
}

// SAFETY: a block is plain memory owned by whichever thread holds its shadow entry; the
// arena behind it is `Sync`.
unsafe impl Send for Cookied {}

impl Cookied {
    fn bytes(&self) -> &[u8] {
        // SAFETY: the block is live, `layout.size()` bytes long, and only its shadow entry's
        // holder touches it.
        unsafe { std::slice::from_raw_parts(self.block.ptr, self.block.layout.size()) }
    }

    fn fill(&mut self) {
        // SAFETY: as in `bytes`; the entry is held mutably, so nothing reads the block now.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(self.block.ptr, self.block.layout.size()) };
        for (at, byte) in bytes.iter_mut().enumerate() {
            *byte = pattern(self.cookie, at);
        }
    }

    /// The first byte of the first `len` that lost the pattern.
    fn damage(&self, len: usize) -> Option<usize> {
        self.bytes()[..len]
            .iter()
            .enumerate()
            .position(|(at, &byte)| byte != pattern(self.cookie, at))
    }
}

fn pattern(cookie: u64, at: usize) -> u8 {
    (cookie >> ((at & 7) * 8)) as u8 ^ (at >> 3) as u8
}

/// The checks of one arena, failing with the first problem seen.
struct Checker {
    bounds: Option<Range<usize>>,
}

impl Checker {
    /// A fresh patterned block, or `Ok(None)` when refused.
    fn allocate<A: GlobalAlloc>(
        &self,
        arena: &A,
        layout: Layout,
        cookie: u64,
    ) -> Result<Option<Cookied>, String> {
        let Some(block) = Block::allocate(arena, layout) else {
            return Ok(None);
        };
        let address = block.ptr as usize;
        if !address.is_multiple_of(layout.align()) {
            return Err(format!("{address:#x} is not aligned to {}", layout.align()));
        }
        if let Some(bounds) = &self.bounds {
            if address < bounds.start || address + layout.size() > bounds.end {
                return Err(format!(
                    "{address:#x}+{} lies outside the arena",
                    layout.size()
                ));
            }
        }
        let mut entry = Cookied { block, cookie };
        entry.fill();
        Ok(Some(entry))
    }

    fn verify(&self, entry: &Cookied, when: &str) -> Result<(), String> {
        match entry.damage(entry.block.layout.size()) {
            None => Ok(()),
            Some(at) => Err(format!(
                "{when}: block {:p} of {} B changed at byte {at}: another block overlaps it",
                entry.block.ptr,
                entry.block.layout.size()
            )),
        }
    }

    fn free<A: GlobalAlloc>(&self, arena: &A, entry: Cookied) -> Result<(), String> {
        self.verify(&entry, "free")?;
        entry.block.free(arena);
        Ok(())
    }

    /// Reallocates to `size`; the common prefix must survive. A refusal keeps the block.
    fn resize<A: GlobalAlloc>(
        &self,
        arena: &A,
        entry: &mut Cookied,
        size: usize,
        cookie: u64,
    ) -> Result<bool, String> {
        self.verify(entry, "realloc")?;
        let old = entry.block.layout.size();
        if !entry.block.reallocate(arena, size) {
            return Ok(false);
        }
        if let Some(at) = entry.damage(old.min(size)) {
            return Err(format!("realloc from {old} to {size} B lost byte {at}"));
        }
        entry.cookie = cookie;
        entry.fill();
        Ok(true)
    }
}

fn layout(size: usize, align: usize) -> Layout {
    Layout::from_size_align(size, align).expect("sizes and alignments stay small")
}

fn random_layout(rng: &mut Rng) -> Layout {
    let size = match rng.below(100) {
        0..70 => rng.in_range_inclusive(1, 128),
        70..95 => rng.in_range_inclusive(1, 4096),
        _ => rng.in_range_inclusive(1, 65536),
    };
    let align = if rng.chance(1, 10) {
        16 << rng.below(8)
    } else {
        8
    };
    layout(size, align)
}

/// A randomized sequence on `slots`: allocate, free, realloc and verify, with an overlap
/// check of the whole live set every 1000 steps.
fn sequence<A: GlobalAlloc>(
    checker: &Checker,
    arena: &A,
    rng: &mut Rng,
    ops: usize,
    exchange: Option<&Mutex<Vec<Cookied>>>,
) -> Result<(), String> {
    let mut slots: Vec<Option<Cookied>> = vec![None; SLOTS];
    for step in 0..ops {
        let slot = rng.below(SLOTS);
        let roll = rng.below(100);
        match slots[slot].as_mut() {
            None => {
                let adopted = match exchange {
                    Some(exchange) if roll < 30 => exchange.lock().expect("no panic").pop(),
                    _ => None,
                };
                slots[slot] = match adopted {
                    Some(entry) => {
                        checker.verify(&entry, "adoption")?;
                        Some(entry)
                    }
                    None => checker.allocate(arena, random_layout(rng), rng.next_u64())?,
                };
            }
            Some(_) if roll < 45 => {
                let entry = slots[slot].take().expect("occupied");
                checker.free(arena, entry)?;
            }
            Some(entry) if roll < 70 => {
                let size = random_layout(rng).size();
                checker.resize(arena, entry, size, rng.next_u64())?;
            }
            Some(_) if roll < 85 && exchange.is_some() => {
                let entry = slots[slot].take().expect("occupied");
                checker.verify(&entry, "hand-over")?;
                exchange
                    .expect("checked")
                    .lock()
                    .expect("no panic")
                    .push(entry);
            }
            Some(entry) => checker.verify(entry, "verify")?,
        }
        if step % 1000 == 999 {
            let mut live = LiveBlocks::default();
            slots.iter().flatten().for_each(|e| live.push(e.block));
            live.verify_sample()
                .map_err(|failure| format!("{failure:?}"))?;
        }
    }
    for entry in slots.into_iter().flatten() {
        checker.free(arena, entry)?;
    }
    Ok(())
}

/// Four threads sharing the arena, handing blocks over through a locked exchange.
fn threads<A: GlobalAlloc + Sync>(
    checker: &Checker,
    arena: &A,
    seed: u64,
    ops: usize,
) -> Result<(), String> {
    let exchange = Mutex::new(Vec::new());
    let outcomes: Vec<Result<(), String>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4u64)
            .map(|t| {
                let exchange = &exchange;
                scope.spawn(move || {
                    let mut rng = Rng::new(seed ^ (t + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    sequence(checker, arena, &mut rng, ops, Some(exchange))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    outcomes.into_iter().collect::<Result<(), String>>()?;
    for entry in exchange.into_inner().expect("no panic") {
        checker.free(arena, entry)?;
    }
    Ok(())
}

/// Every power-of-two alignment from 8 B to 64 KiB at three sizes, in an empty arena.
fn alignment<A: GlobalAlloc>(checker: &Checker, arena: &A) -> Result<(), String> {
    for shift in 3..=16 {
        for size in [1, 100, 5000] {
            let wanted = layout(size, 1 << shift);
            let entry = checker
                .allocate(arena, wanted, shift as u64)?
                .ok_or_else(|| format!("{wanted:?} refused in an empty arena"))?;
            checker.free(arena, entry)?;
        }
    }
    Ok(())
}

/// One block through every size up to 1 MiB and back, in an empty arena.
fn realloc<A: GlobalAlloc>(checker: &Checker, arena: &A) -> Result<(), String> {
    let sizes = [1, 8, 100, 1000, 4096, 5000, 65536, 100_000, 1 << 20];
    let mut entry = checker
        .allocate(arena, layout(1, 8), 1)?
        .ok_or("a 1 B block refused in an empty arena")?;
    for &size in sizes.iter().chain(sizes.iter().rev()) {
        if !checker.resize(arena, &mut entry, size, size as u64)? {
            return Err(format!(
                "realloc to {size} B refused in a nearly empty arena"
            ));
        }
    }
    checker.free(arena, entry)
}

/// 64 KiB blocks until the arena refuses one; then all freed, and the arena must serve
/// half as many again and one block of an eighth of its size.
fn exhaustion<A: GlobalAlloc>(checker: &Checker, arena: &A) -> Result<(), String> {
    let bound = HEAP_LEN / EXHAUSTION_BLOCK * 2;
    let wanted = layout(EXHAUSTION_BLOCK, 8);
    let mut held = Vec::new();
    while held.len() < bound {
        match checker.allocate(arena, wanted, held.len() as u64)? {
            Some(entry) => held.push(entry),
            None => break,
        }
    }
    if held.len() == bound {
        return Err(format!("{bound} blocks of 64 KiB fit in a 32 MiB arena"));
    }
    let count = held.len();
    for entry in held.drain(..) {
        checker.free(arena, entry)?;
    }
    for index in 0..count / 2 {
        let entry = checker
            .allocate(arena, wanted, index as u64)?
            .ok_or_else(|| {
                format!(
                    "block {index} of {} refused after every block was freed",
                    count / 2
                )
            })?;
        held.push(entry);
    }
    for entry in held {
        checker.free(arena, entry)?;
    }
    let large = checker
        .allocate(arena, layout(HEAP_LEN / 8, 8), 7)?
        .ok_or("a block of 4 MiB refused after every block was freed")?;
    checker.free(arena, large)
}

/// The percentage of page steps (8 KiB to 1 MiB and back) that kept the block's address.
fn in_place_percent<A: GlobalAlloc>(checker: &Checker, arena: &A) -> Result<f64, String> {
    let page = 4096;
    let mut entry = checker
        .allocate(arena, layout(2 * page, 8), 3)?
        .ok_or("an 8 KiB block refused in an empty arena")?;
    let (mut steps, mut kept) = (0usize, 0usize);
    let sizes: Vec<usize> = (2..=256).chain((2..256).rev()).map(|p| p * page).collect();
    for size in sizes {
        let before = entry.block.ptr;
        if !checker.resize(arena, &mut entry, size, size as u64)? {
            return Err(format!(
                "realloc to {size} B refused in a nearly empty arena"
            ));
        }
        steps += 1;
        kept += usize::from(entry.block.ptr == before);
    }
    checker.free(arena, entry)?;
    Ok(kept as f64 * 100.0 / steps as f64)
}

/// The work run on one arena: an outcome per [`CASES`] entry.
struct Torture {
    seed: u64,
    ops: usize,
    bounded: bool,
    bounds: Option<Range<usize>>,
}

impl UseAllocator for Torture {
    type Output = Vec<Outcome>;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> Vec<Outcome> {
        let checker = Checker {
            bounds: self.bounds.clone(),
        };
        let verdict = |result: Result<(), String>| {
            Outcome::Verdict(match result {
                Ok(()) => "pass 1/1".to_string(),
                Err(why) => format!("FAIL 1/1: {why}"),
            })
        };
        let mut rng = Rng::new(self.seed);
        let mut outcomes = vec![
            verdict(sequence(&checker, arena, &mut rng, self.ops, None)),
            verdict(threads(&checker, arena, self.seed, self.ops / 2)),
            verdict(alignment(&checker, arena)),
            verdict(realloc(&checker, arena)),
        ];
        outcomes.push(if self.bounded {
            verdict(exhaustion(&checker, arena))
        } else {
            Outcome::Verdict("n/a: unbounded (the platform's malloc)".to_string())
        });
        outcomes.push(match in_place_percent(&checker, arena) {
            Ok(percent) => Outcome::Measured(heapworks_bench::results::Summary::single(percent)),
            Err(why) => Outcome::Verdict(format!("FAIL 1/1: {why}")),
        });
        outcomes
    }
}

/// Tortures `id` over a fresh region; an outcome per [`CASES`] entry. A panic in the
/// allocator becomes a `crashed` verdict of every case.
pub fn torture(id: AllocatorId, seed: u64, ops: usize) -> Vec<Outcome> {
    let mut region = match Region::pretouched(HEAP_LEN) {
        Ok(region) => region,
        Err(error) => return vec![Outcome::Failed(format!("setup failed: {error}")); CASES.len()],
    };
    let base = region.base() as usize;
    let work = Torture {
        seed,
        ops,
        bounded: id.is_arena(),
        bounds: id.is_arena().then(|| base..base + HEAP_LEN),
    };
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        with_allocator(id, &mut region, HEAP_LEN, work)
    }));
    match outcome {
        Ok(Ok(outcomes)) => outcomes,
        Ok(Err(setup)) => vec![Outcome::Failed(format!("setup failed: {setup}")); CASES.len()],
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            vec![Outcome::Verdict(format!("crashed: panic: {message}")); CASES.len()]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heapworks_and_talc_pass_a_short_torture() {
        for id in [AllocatorId::Heapworks, AllocatorId::Talc] {
            let outcomes = torture(id, 5, 2000);
            assert_eq!(outcomes.len(), CASES.len());
            for (case, outcome) in CASES.iter().zip(&outcomes) {
                match outcome {
                    Outcome::Verdict(v) => assert!(v.starts_with("pass"), "{id} {case}: {v}"),
                    Outcome::Measured(s) => assert!((0.0..=100.0).contains(&s.median)),
                    Outcome::Failed(why) => panic!("{id} {case}: {why}"),
                }
            }
        }
    }

    #[test]
    fn a_damaged_block_is_seen() {
        let checker = Checker { bounds: None };
        let system = std::alloc::System;
        let entry = checker
            .allocate(&system, layout(64, 8), 9)
            .unwrap()
            .unwrap();
        // SAFETY: byte 10 of a live 64 B block of ours.
        unsafe { *entry.block.ptr.add(10) ^= 1 };
        assert!(checker
            .verify(&entry, "test")
            .unwrap_err()
            .contains("byte 10"));
        entry.block.free(&system);
    }
}
