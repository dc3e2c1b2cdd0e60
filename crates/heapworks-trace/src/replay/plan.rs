//! Turning a trace into per-thread lists of steps, before anything is timed.
//!
//! Invariants of a [`Plan`]:
//! - Each step knows its layout(s) in advance: sizes of 0 become 1 (a `GlobalAlloc` may not
//!   be asked for 0 bytes); malloc, calloc and realloc use the options' `malloc_align`, aligned
//!   requests the larger of theirs and `malloc_align` (as C, which gives every block at least
//!   malloc's alignment).
//! - Each step names its id's dense slot ([`Liveness`]), not the id: the replay's tables hold
//!   one entry per id live at once, whatever the ids' values.
//! - `wait` of a step is the number of earlier requests (in global order) on the same slot: a
//!   step runs only once that many have completed, which keeps cross-thread order wherever it
//!   matters (an id allocated in one thread and freed in another, a slot handed to a new id
//!   once the old one was freed) and never deadlocks, since every wait points backward in the
//!   global order.
//! - With `check` on, a trace that frees or reallocs an id that is not live, or allocates an id
//!   that is, is refused here with the request's index. Otherwise those are replayed as C
//!   would: `free(NULL)` does nothing, `realloc(NULL, n)` allocates, the overwritten block leaks
//!   (it is freed when the replay ends).

use super::{ReplayError, ReplayOptions};
use crate::model::{Block, Effect, Liveness, OpKind, Trace};
use core::alloc::Layout;

/// What one step does.
#[derive(Clone, Copy, Debug)]
pub enum Action {
    /// Allocates the id's block; `leaks` holds the layout of a live block it overwrites.
    Alloc {
        layout: Layout,
        zeroed: bool,
        leaks: Option<Layout>,
    },
    /// Reallocates the id's live block (`new` has `old`'s alignment).
    Realloc { old: Layout, new: Layout },
    /// Frees the id's live block.
    Free { layout: Layout },
    /// `free(NULL)`: nothing to do, not timed.
    Nothing,
}

/// One request, ready to run.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// Global index of the request.
    pub index: usize,
    /// The id's slot in the replay's block table.
    pub slot: u32,
    pub wait: u64,
    pub action: Action,
}

/// A whole replay, before it runs.
pub struct Plan {
    /// One list per thread, threads in increasing label order.
    pub threads: Vec<(u32, Vec<Step>)>,
    /// Number of slots in the block table (at most the ids live at once, plus one).
    pub slots: usize,
    pub peak_live_bytes: u64,
    /// Index of the request after which the most bytes are live.
    pub peak_index: Option<usize>,
    pub null_frees: u64,
    pub null_reallocs: u64,
    pub leaked_blocks: u64,
}

/// Builds the plan for `trace`.
pub fn build(trace: &Trace, options: &ReplayOptions) -> Result<Plan, ReplayError> {
    let mut liveness = Liveness::new(trace);
    let mut done_per_slot: Vec<u64> = Vec::new();
    let mut plan = Plan {
        threads: trace
            .threads()
            .iter()
            .map(|&thread| (thread, Vec::new()))
            .collect(),
        slots: 0,
        peak_live_bytes: 0,
        peak_index: None,
        null_frees: 0,
        null_reallocs: 0,
        leaked_blocks: 0,
    };
    for (index, op) in trace.ops().iter().enumerate() {
        let applied = liveness.apply(op);
        let action = plan.action(index, &op.kind, applied.effect, options)?;
        if applied.slot >= done_per_slot.len() {
            done_per_slot.resize(applied.slot + 1, 0);
        }
        let wait = &mut done_per_slot[applied.slot];
        let step = Step {
            index,
            // Slots are fewer than requests, which are at most `MAX_OPS`.
            slot: applied.slot as u32,
            wait: *wait,
            action,
        };
        *wait += 1;
        // `threads()` is sorted and holds every op's thread, so this is its position.
        let thread_slot = trace
            .threads()
            .partition_point(|&thread| thread < op.thread);
        plan.threads[thread_slot].1.push(step);
    }
    plan.slots = liveness.slots();
    plan.peak_live_bytes = liveness.peak_bytes();
    plan.peak_index = liveness.peak_index();
    Ok(plan)
}

impl Plan {
    fn action(
        &mut self,
        index: usize,
        kind: &OpKind,
        effect: Effect,
        options: &ReplayOptions,
    ) -> Result<Action, ReplayError> {
        if options.check {
            refuse_null_requests(index, effect)?;
        }
        let malloc_align = options.malloc_align as u64;
        let layout = |block: Block| layout_for(index, block.size, block.align.max(malloc_align));
        let requested = kind.size().unwrap_or(0);
        Ok(match effect {
            Effect::ReleaseNull => {
                self.null_frees += 1;
                Action::Nothing
            }
            Effect::Release { old } => Action::Free {
                layout: layout(old)?,
            },
            Effect::Resize { old } => Action::Realloc {
                old: layout(old)?,
                new: layout(Block {
                    size: requested,
                    align: old.align,
                })?,
            },
            Effect::ResizeNull => {
                self.null_reallocs += 1;
                Action::Alloc {
                    layout: layout(Block {
                        size: requested,
                        align: 1,
                    })?,
                    zeroed: false,
                    leaks: None,
                }
            }
            Effect::Allocate | Effect::AllocateOverLive { .. } => {
                let leaks = match effect {
                    Effect::AllocateOverLive { old } => {
                        self.leaked_blocks += 1;
                        Some(layout(old)?)
                    }
                    _ => None,
                };
                let align = match *kind {
                    OpKind::Memalign { align, .. } => align,
                    _ => 1,
                };
                Action::Alloc {
                    layout: layout(Block {
                        size: requested,
                        align,
                    })?,
                    zeroed: matches!(kind, OpKind::Calloc { .. }),
                    leaks,
                }
            }
        })
    }
}

fn refuse_null_requests(index: usize, effect: Effect) -> Result<(), ReplayError> {
    let problem = match effect {
        Effect::ReleaseNull => "frees an id that is not live",
        Effect::ResizeNull => "reallocs an id that is not live",
        Effect::AllocateOverLive { .. } => "allocates an id that is still live",
        _ => return Ok(()),
    };
    Err(ReplayError::Trace {
        op: index,
        message: problem.to_owned(),
    })
}

fn layout_for(index: usize, size: u64, align: u64) -> Result<Layout, ReplayError> {
    usize::try_from(size.max(1))
        .ok()
        .zip(usize::try_from(align).ok())
        .and_then(|(size, align)| Layout::from_size_align(size, align).ok())
        .ok_or(ReplayError::Unrepresentable {
            op: index,
            size,
            align,
        })
}
