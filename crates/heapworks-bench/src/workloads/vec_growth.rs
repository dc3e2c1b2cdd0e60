//! Vector growth: many vectors of `u64` pushed from empty to 1 MiB side by side, one element
//! per vector in turn, so that every vector's neighbours are other live vectors.
//!
//! Two growth policies: doubling (as `Vec` does, from 4 elements) with 32 vectors, and exact
//! steps of 16 KiB (as repeated `reserve_exact` does) with 16 vectors, which makes every
//! step a realloc. Reports the total time and the share of reallocs that kept their address;
//! the contents of every vector are checked afterwards.

use std::alloc::{GlobalAlloc, Layout};
use std::time::Instant;

use crate::contenders::{Arena, RawHeap, UseAllocator};

use super::blocks::{Block, LiveBlocks};
use super::{mib, run_trial, Better, Case, Config, Failure, MetricSpec, TrialOutcome, WorkloadId};

/// Bytes per element.
const ELEMENT: usize = std::mem::size_of::<u64>();

const METRICS: [MetricSpec; 2] = [
    MetricSpec::primary("total", "ms", Better::Lower),
    MetricSpec::secondary("in place", "%", Better::Higher),
];

/// How a vector's capacity grows when it is full.
#[derive(Debug, Clone, Copy)]
pub enum Growth {
    /// Twice the capacity, at least 4 elements.
    Doubling,
    /// A fixed number of bytes more.
    Step(usize),
}

impl Growth {
    fn next_capacity(self, capacity_bytes: usize) -> usize {
        match self {
            Growth::Doubling => (capacity_bytes * 2).max(4 * ELEMENT),
            Growth::Step(bytes) => capacity_bytes + bytes,
        }
    }
}

/// The two cases: doubling and fixed steps.
pub fn cases(config: &Config) -> Vec<Case> {
    let target = config.pick(64 << 10, 1 << 20, 1 << 20);
    let heap_len = config.pick(mib(16), mib(128), mib(128));
    let doubling = (Growth::Doubling, config.pick(8, 32, 32), "doubling");
    let steps = (
        Growth::Step(16 << 10),
        config.pick(4, 16, 16),
        "16 KiB steps",
    );
    [doubling, steps]
        .into_iter()
        .map(|(growth, vectors, label)| Case {
            workload: WorkloadId::VecGrowth,
            name: format!("{vectors} × {} KiB, {label}", target >> 10),
            heap_len,
            arena_only: false,
            metrics: METRICS.to_vec(),
            run: Box::new(move |allocator, region, _seed| {
                run_trial(
                    allocator,
                    region,
                    heap_len,
                    Trial {
                        growth,
                        vectors,
                        target,
                    },
                )
            }),
        })
        .collect()
}

/// A vector of `u64` living in the allocator under test.
struct GrowingVec {
    block: Option<Block>,
    len: usize,
}

/// Realloc counts of a run.
#[derive(Default)]
struct Reallocs {
    total: usize,
    in_place: usize,
}

impl GrowingVec {
    fn capacity(&self) -> usize {
        self.block.map_or(0, |b| b.layout.size() / ELEMENT)
    }

    /// Appends `value`, growing first if full; `false` when the allocator refused to grow.
    fn push<A: GlobalAlloc>(
        &mut self,
        allocator: &A,
        growth: Growth,
        value: u64,
        reallocs: &mut Reallocs,
    ) -> bool {
        if self.len == self.capacity() && !self.grow(allocator, growth, reallocs) {
            return false;
        }
        let block = self.block.expect("grown above");
        // SAFETY: `len < capacity`, so the slot is inside the block, which is 8-aligned.
        unsafe { block.ptr.cast::<u64>().add(self.len).write(value) };
        self.len += 1;
        true
    }

    fn grow<A: GlobalAlloc>(
        &mut self,
        allocator: &A,
        growth: Growth,
        reallocs: &mut Reallocs,
    ) -> bool {
        let new_bytes = growth.next_capacity(self.capacity() * ELEMENT);
        match &mut self.block {
            None => {
                let layout = Layout::from_size_align(new_bytes, ELEMENT).expect("valid layout");
                self.block = Block::allocate(allocator, layout);
                self.block.is_some()
            }
            Some(block) => {
                let before = block.ptr;
                let grown = block.reallocate(allocator, new_bytes);
                reallocs.total += usize::from(grown);
                reallocs.in_place += usize::from(grown && before == block.ptr);
                grown
            }
        }
    }

    fn elements(&self) -> &[u64] {
        match self.block {
            // SAFETY: the first `len` elements were written by `push`; the block is live.
            Some(block) => unsafe { std::slice::from_raw_parts(block.ptr.cast::<u64>(), self.len) },
            None => &[],
        }
    }
}

/// The value pushed as element `index` of vector `vector`.
fn element_value(vector: usize, index: usize) -> u64 {
    ((vector as u64) << 32) | index as u64
}

struct Trial {
    growth: Growth,
    vectors: usize,
    target: usize,
}

impl UseAllocator for Trial {
    type Output = TrialOutcome;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> TrialOutcome {
        let mut vecs: Vec<GrowingVec> = (0..self.vectors)
            .map(|_| GrowingVec {
                block: None,
                len: 0,
            })
            .collect();
        let mut reallocs = Reallocs::default();
        let start = Instant::now();
        let pushed = self.push_all(arena, &mut vecs, &mut reallocs);
        let elapsed = start.elapsed();
        let checked = pushed.and_then(|()| check_contents(&vecs));
        let mut live = LiveBlocks::with_capacity(vecs.len());
        vecs.iter().for_each(|v| live.extend(v.block));
        let verified = checked.and_then(|()| live.verify_sample());
        live.release(arena);
        verified?;
        let in_place = reallocs.in_place as f64 / reallocs.total.max(1) as f64 * 100.0;
        Ok(vec![elapsed.as_secs_f64() * 1e3, in_place])
    }
}

impl Trial {
    fn push_all<A: GlobalAlloc>(
        &self,
        allocator: &A,
        vecs: &mut [GrowingVec],
        reallocs: &mut Reallocs,
    ) -> Result<(), Failure> {
        for index in 0..self.target / ELEMENT {
            for (vector, v) in vecs.iter_mut().enumerate() {
                if !v.push(
                    allocator,
                    self.growth,
                    element_value(vector, index),
                    reallocs,
                ) {
                    return Err(Failure::OutOfMemory);
                }
            }
        }
        Ok(())
    }
}

fn check_contents(vecs: &[GrowingVec]) -> Result<(), Failure> {
    for (vector, v) in vecs.iter().enumerate() {
        let wrong = v
            .elements()
            .iter()
            .enumerate()
            .find(|&(i, &x)| x != element_value(vector, i));
        if let Some((index, _)) = wrong {
            return Err(Failure::Corrupted(format!(
                "vector {vector} lost element {index}"
            )));
        }
    }
    Ok(())
}
