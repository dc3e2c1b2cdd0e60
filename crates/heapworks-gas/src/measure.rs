//! Running a scenario on a guest: every call metered, the blocks' contents checked.
//!
//! Invariants:
//! - Each scenario runs on a fresh instance of the guest.
//! - The host writes a pattern into every block it gets (free of gas: the program's writes,
//!   not the allocator's) and checks it across realloc and before free, and checks that
//!   calloc's blocks are zero: a guest that corrupts a block fails the run instead of
//!   reporting figures.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::machine::{Cost, Machine};
use crate::scenario::{Op, Scenario};

/// The seed's columns for one kind of call.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct CallStats {
    pub count: u64,
    pub total: u64,
    pub min: u64,
    pub max: u64,
}

impl CallStats {
    fn add(&mut self, gas: u64) {
        self.min = if self.count == 0 {
            gas
        } else {
            self.min.min(gas)
        };
        self.max = self.max.max(gas);
        self.count += 1;
        self.total += gas;
    }

    /// The mean gas of a call (0 with no calls).
    pub fn avg(&self) -> u64 {
        self.total.checked_div(self.count).unwrap_or(0)
    }
}

/// One guest on one scenario.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Outcome {
    pub malloc: CallStats,
    pub calloc: CallStats,
    pub realloc: CallStats,
    pub free: CallStats,
    /// Gas of the measured calls' instructions.
    pub instruction_gas: u64,
    /// Gas of the measured calls' syscalls and pages.
    pub page_gas: u64,
    /// Gear pages first accessed in a message by a measured call, summed over messages.
    pub pages_touched: u64,
    /// Gas of the program around the allocator calls (0 in the micro scenarios, which run
    /// no program).
    pub program_gas: u64,
}

impl Outcome {
    /// Everything the measured calls cost.
    pub fn allocation_gas(&self) -> u64 {
        self.instruction_gas + self.page_gas
    }

    /// Everything spent: the allocator calls and the program around them.
    pub fn total_gas(&self) -> u64 {
        self.allocation_gas() + self.program_gas
    }

    fn record(&mut self, op: &Op, cost: Cost) {
        let kind = match op {
            Op::Malloc { .. } => 0,
            Op::Calloc { .. } => 1,
            Op::Realloc { .. } => 2,
            Op::Free { .. } => 3,
        };
        self.record_kind(kind, cost);
    }

    /// Records a call of `kind` (0 malloc, 1 calloc, 2 realloc, 3 free).
    fn record_kind(&mut self, kind: usize, cost: Cost) {
        let stats = match kind {
            0 => &mut self.malloc,
            1 => &mut self.calloc,
            2 => &mut self.realloc,
            _ => &mut self.free,
        };
        stats.add(cost.total());
        self.instruction_gas += cost.instructions;
        self.page_gas += cost.host;
        self.pages_touched += cost.pages;
    }
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
                outcome.record(&step.op, cost);
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
            outcome.record_kind(kind, cost);
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
