//! Gear's price list: the weight of every wasm instruction (the `Rules` gear-wasm-instrument
//! injects the metering with), of the syscalls the guests make, and of memory pages.
//!
//! Instruction weights are Gear's schedule, instruction-weights version 1900 (the
//! `InstructionWeights` defaults in Gear's `core/src/gas_metering/schedule.rs`), applied as
//! Gear's documentation of that table says: an `i32` variant costs what the table gives it,
//! narrow loads and stores cost their width's full load or store, `block`, `loop` and `nop`
//! cost an `i64.const`, `drop` half of one, and `end`, `else`, `return` and `unreachable`
//! are free. Page and syscall prices are those of `shared/ANCHORS.md` §3 (Gear's v2000
//! weights). All figures are picoseconds of reference time, Gear's unit of gas.
//!
//! Invariant: every instruction Gear accepts has a price; anything else (floats, bulk memory,
//! `memory.grow`, which [`crate::instrument`] turns into the `alloc` syscall first) is refused.

use gear_wasm_instrument::gas_metering::{MemoryGrowCost, Rules};
use gear_wasm_instrument::Instruction;

/// What Gear charges per 16 KiB page, per message, and per syscall.
pub mod pages {
    /// Gear's page: the unit of page charges.
    pub const GEAR_PAGE: u64 = 16 * 1024;
    /// The first read of a page in a message.
    pub const FIRST_READ: u64 = 28_500_000;
    /// The first write of a page in a message (not read before).
    pub const FIRST_WRITE: u64 = 34_100_000;
    /// The first write of a page read before in the same message.
    pub const WRITE_AFTER_READ: u64 = 9_400_000;
    /// Loading the data of a page that holds some (from storage), at its first access.
    pub const LOAD_DATA: u64 = 10_000_000;
    /// Uploading a page dirtied in the message, at its end.
    pub const UPLOAD_DIRTY: u64 = 102_800_000;
    /// Growing the memory, per `alloc` call.
    pub const MEM_GROW: u64 = 610_000;
    /// Growing the memory, per 64 KiB page.
    pub const MEM_GROW_PER_PAGE: u64 = 23;
    /// The `alloc(pages)` syscall.
    pub const ALLOC_SYSCALL: u64 = 1_368_698;
    /// The `free_range(first, last)` syscall, plus [`FREE_RANGE_PER_PAGE`] a page.
    pub const FREE_RANGE_SYSCALL: u64 = 873_826;
    /// See [`FREE_RANGE_SYSCALL`].
    pub const FREE_RANGE_PER_PAGE: u64 = 35_668;
}

/// Gear's instruction weights as gear-wasm-instrument's `Rules`.
pub struct GearRules;

/// `i64.const`, the reference weight of structural instructions.
const I64_CONST: u32 = 196;

impl Rules for GearRules {
    fn instruction_cost(&self, instruction: &Instruction) -> Option<u32> {
        use Instruction as I;
        Some(match instruction {
            I::End | I::Else | I::Return | I::Unreachable => 0,
            I::Block(_) | I::Loop(_) | I::Nop | I::I64Const(_) | I::I32Const(_) => I64_CONST,
            I::Drop => I64_CONST / 2,
            I::I64Load(_)
            | I::I64Load8S(_)
            | I::I64Load8U(_)
            | I::I64Load16S(_)
            | I::I64Load16U(_)
            | I::I64Load32S(_)
            | I::I64Load32U(_) => 5532,
            I::I32Load(_)
            | I::I32Load8S(_)
            | I::I32Load8U(_)
            | I::I32Load16S(_)
            | I::I32Load16U(_) => 5276,
            I::I64Store(_) | I::I64Store8(_) | I::I64Store16(_) | I::I64Store32(_) => 10604,
            I::I32Store(_) | I::I32Store8(_) | I::I32Store16(_) => 10439,
            I::Select => 7079,
            I::If(_) => 5441,
            I::Br(_) => 3845,
            I::BrIf(_) => 6295,
            I::BrTable(targets) => 11520u32.saturating_add(150u32.saturating_mul(targets.len())),
            I::Call(_) => 5461,
            I::CallIndirect(_) => 25216,
            I::LocalGet(_) => 679,
            I::LocalSet(_) => 1460,
            I::LocalTee(_) => 1443,
            I::GlobalGet(_) => 714,
            I::GlobalSet(_) => 1073,
            I::MemorySize(_) => 14243,
            I::I64Clz | I::I64Ctz => 550,
            I::I32Clz | I::I32Ctz => 238,
            I::I64Popcnt => 439,
            I::I32Popcnt => 263,
            I::I64Eqz => 1827,
            I::I32Eqz => 941,
            I::I32Extend8S => 233,
            I::I32Extend16S => 235,
            I::I64Extend8S => 388,
            I::I64Extend16S => 396,
            I::I64Extend32S => 340,
            I::I64ExtendI32S => 190,
            I::I64ExtendI32U => 219,
            I::I32WrapI64 => 217,
            I::I64Eq => 1616,
            I::I32Eq => 969,
            I::I64Ne => 1588,
            I::I32Ne => 1033,
            I::I64LtS => 1659,
            I::I32LtS => 953,
            I::I64LtU => 1620,
            I::I32LtU => 1013,
            I::I64GtS => 1597,
            I::I32GtS => 1018,
            I::I64GtU => 1631,
            I::I32GtU => 963,
            I::I64LeS => 1673,
            I::I32LeS => 981,
            I::I64LeU => 1599,
            I::I32LeU => 927,
            I::I64GeS => 1617,
            I::I32GeS => 939,
            I::I64GeU => 1586,
            I::I32GeU => 941,
            I::I64Add => 897,
            I::I32Add => 488,
            I::I64Sub => 895,
            I::I32Sub => 486,
            I::I64Mul => 1599,
            I::I32Mul => 818,
            I::I64DivS => 3795,
            I::I32DivS => 2574,
            I::I64DivU => 3851,
            I::I32DivU => 2629,
            I::I64RemS => 21105,
            I::I32RemS => 17654,
            I::I64RemU => 3941,
            I::I32RemU => 2688,
            I::I64And => 1078,
            I::I32And => 550,
            I::I64Or => 1051,
            I::I32Or => 606,
            I::I64Xor => 1021,
            I::I32Xor => 543,
            I::I64Shl => 779,
            I::I32Shl => 287,
            I::I64ShrS => 772,
            I::I32ShrS => 285,
            I::I64ShrU => 811,
            I::I32ShrU => 285,
            I::I64Rotl => 765,
            I::I32Rotl => 291,
            I::I64Rotr => 799,
            I::I32Rotr => 302,
            I::MemoryGrow(_) => return None,
        })
    }

    fn memory_grow_cost(&self) -> MemoryGrowCost {
        // Unreachable: `memory.grow` is refused above. Growth is priced by the `alloc` syscall.
        MemoryGrowCost::Free
    }

    fn call_per_local_cost(&self) -> u32 {
        0
    }
}
