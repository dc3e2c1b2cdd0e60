//! Running a scenario on a guest: every call metered, the blocks' contents checked.
//!
//! Invariants:
//! - Each scenario runs on a fresh instance of the guest.
//! - The host writes a pattern into every block it gets (free of gas: the program's writes,
//!   not the allocator's) and checks it across realloc and before free, and checks that
//!   calloc's blocks are zero: a guest that corrupts a block fails the run instead of
//!   reporting figures.

use std::collections::HashMap;

pub use heapworks_gas_results::{CallStats, Outcome};

use crate::machine::{Cost, Machine};
use crate::scenario::{Op, Scenario};

/// Records a measured call of `op`.
fn record(outcome: &mut Outcome, op: &Op, cost: Cost) {
    let kind = match op {
        Op::Malloc { .. } => 0,
        Op::Calloc { .. } => 1,
        Op::Realloc { .. } => 2,
        Op::Free { .. } => 3,
    };
    record_kind(outcome, kind, cost);
}

/// Records a call of `kind` (0 malloc, 1 calloc, 2 realloc, 3 free).
fn record_kind(outcome: &mut Outcome, kind: usize, cost: Cost) {
    let stats = match kind {
        0 => &mut outcome.malloc,
        1 => &mut outcome.calloc,
        2 => &mut outcome.realloc,
        _ => &mut outcome.free,
    };
    stats.add(cost.total());
    outcome.instruction_gas += cost.instructions;
    outcome.page_gas += cost.host;
    outcome.pages_touched += cost.pages;
}

/// A live block: address, size, align, fill byte.
#[derive(Clone, Copy)]
struct Block {
    ptr: u32,
    size: u32,
    align: u32,
    byte: u8,
}

/// Runs `scenario` on a fresh instance of `wasm`.
pub fn run(wasm: &[u8], scenario: &Scenario, max_pages: u32) -> Result<Outcome, String> {
    let mut machine = Machine::new(wasm, max_pages)?;
    let mut live: HashMap<usize, Block> = HashMap::new();
    let mut outcome = Outcome::default();
    for message in &scenario.messages {
        machine.begin_message();
        for step in message {
            let cost = apply(&mut machine, &mut live, &step.op)?;
            if step.measured {
                record(&mut outcome, &step.op, cost);
            }
        }
    }
    Ok(outcome)
}

/// How a program's messages are charged for pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Execution {
    /// Every message its own execution over persistent memory (as gclient runs a program on
    /// a node): pages are charged at their first access in each message.
    PerMessage,
    /// All messages within one execution (the seed's gtest figure): a page is charged at its
    /// first access in the whole run, once.
    Single,
}

/// Runs a program (the guest's export `entry`, in a guest built with the programs) on a
/// fresh instance of `wasm`, one message after another.
pub fn run_program(
    wasm: &[u8],
    entry: &str,
    messages: &[Vec<u8>],
    execution: Execution,
    max_pages: u32,
) -> Result<Outcome, String> {
    let mut machine = Machine::new(wasm, max_pages)?;
    let mut outcome = Outcome::default();
    for (index, message) in messages.iter().enumerate() {
        if index == 0 || execution == Execution::PerMessage {
            machine.begin_message();
        }
        let (whole, calls) = machine
            .handle(entry, message)
            .map_err(|e| format!("message {index}: {e}"))?;
        let mut allocation = 0;
        for (kind, cost) in calls {
            allocation += cost.total();
            record_kind(&mut outcome, kind, cost);
        }
        outcome.program_gas += whole.total() - allocation;
    }
    Ok(outcome)
}

fn apply(machine: &mut Machine, live: &mut HashMap<usize, Block>, op: &Op) -> Result<Cost, String> {
    let fault = |what: &str| format!("{op:?}: {what}");
    match *op {
        Op::Malloc { id, size, align } | Op::Calloc { id, size, align } => {
            let zeroed = matches!(op, Op::Calloc { .. });
            let (ptr, cost) = machine.alloc(zeroed, size, align)?;
            if ptr == 0 || ptr % align != 0 {
                return Err(fault(&format!("returned {ptr:#x}")));
            }
            if zeroed && !machine.holds(ptr, size, 0) {
                return Err(fault("block not zeroed"));
            }
            let byte = (id % 251) as u8 + 1;
            machine.fill(ptr, size, byte)?;
            live.insert(
                id,
                Block {
                    ptr,
                    size,
                    align,
                    byte,
                },
            );
            Ok(cost)
        }
        Op::Realloc { id, size } => {
            let block = *live.get(&id).ok_or_else(|| fault("id not live"))?;
            let (ptr, cost) = machine.realloc(block.ptr, block.size, block.align, size)?;
            if ptr == 0 || !machine.holds(ptr, block.size.min(size), block.byte) {
                return Err(fault("contents lost or null"));
            }
            machine.fill(ptr, size, block.byte)?;
            live.insert(id, Block { ptr, size, ..block });
            Ok(cost)
        }
        Op::Free { id } => {
            let block = live.remove(&id).ok_or_else(|| fault("id not live"))?;
            if !machine.holds(block.ptr, block.size, block.byte) {
                return Err(fault("block overwritten while live"));
            }
            machine.dealloc(block.ptr, block.size, block.align)
        }
    }
}
