//! Turning a guest module into what Gear runs, plus the probes the host prices pages with.
//!
//! 1. `memory.grow` becomes a call of Gear's `env.alloc(pages) -> u32` (the same contract: the
//!    first new page, or `u32::MAX`), so every guest grows its memory the only way Gear allows
//!    and pays the same syscall for it.
//! 2. Gear's own instrumenter injects the gas metering (the `gear_gas` global, charged at the
//!    start of every straight-line block) with [`GearRules`].
//! 3. Every load and store is preceded by a call of the host's `env.gas_touch(address, offset,
//!    width | WRITE)`, so the host sees every page a call reads or writes. The probes are added
//!    after the metering, so they cost no gas.
//!
//! Invariant: apart from the probes (which leave the stack and every value as they were), the
//! module computes exactly what the guest did.

use gear_wasm_instrument::{
    FuncType, Import, Instruction, InstrumentationBuilder, MemArg, Module, ModuleBuilder, TypeRef,
    ValType,
};

use crate::schedule::GearRules;

/// The host module the syscalls and probes are imported from.
pub const HOST_MODULE: &str = "env";
/// Gear's memory syscall.
pub const ALLOC: &str = "alloc";
/// The page probe.
pub const TOUCH: &str = "gas_touch";
/// The flag of a write in the probe's third argument (the rest is the access width).
pub const WRITE: i32 = 1 << 8;

/// Parses, rewrites, meters and probes a guest module.
pub fn instrument(wasm: &[u8]) -> Result<Vec<u8>, String> {
    let module = Module::new(wasm).map_err(|e| format!("parsing the guest: {e}"))?;
    let module = grow_through_alloc(module);
    let module = InstrumentationBuilder::new(HOST_MODULE)
        .with_gas_limiter(|_| GearRules)
        .instrument(module)
        .map_err(|e| format!("Gear's instrumentation: {e}"))?;
    let module = probe_memory_accesses(module)?;
    module
        .serialize()
        .map_err(|e| format!("encoding the instrumented guest: {e}"))
}

/// The index of the function import `HOST_MODULE.name`, if the module has it.
fn imported_function(module: &Module, name: &str) -> Option<u32> {
    let imports = module.import_section.as_ref()?;
    imports
        .iter()
        .filter(|import| matches!(import.ty, TypeRef::Func(_)))
        .position(|import| import.module == HOST_MODULE && import.name == name)
        .map(|index| index as u32)
}

/// Adds the function import `HOST_MODULE.name` of type `ty`; returns the module and its index.
fn import_function(module: Module, name: &'static str, ty: FuncType) -> (Module, u32) {
    let index = module.import_count(|ty| matches!(ty, TypeRef::Func(_))) as u32;
    let mut builder = ModuleBuilder::from_module(module);
    let type_index = builder.push_type(ty);
    builder.push_import(Import::func(HOST_MODULE, name, type_index));
    (builder.shift_func_index(index).shift_all().build(), index)
}

/// Step 1: `memory.grow` → `call env.alloc`.
fn grow_through_alloc(module: Module) -> Module {
    let grows = |module: &Module| {
        module.code_section.iter().flatten().any(|function| {
            function
                .instructions
                .iter()
                .any(|i| matches!(i, Instruction::MemoryGrow(_)))
        })
    };
    if !grows(&module) {
        return module;
    }
    let (mut module, alloc) = match imported_function(&module, ALLOC) {
        Some(alloc) => (module, alloc),
        None => import_function(module, ALLOC, FuncType::new([ValType::I32], [ValType::I32])),
    };
    for function in module.code_section.iter_mut().flatten() {
        for instruction in &mut function.instructions {
            if matches!(instruction, Instruction::MemoryGrow(_)) {
                *instruction = Instruction::Call(alloc);
            }
        }
    }
    module
}

/// What a memory instruction does: its offset, width in bytes, and for a store the type of
/// the value it stores.
fn access_of(instruction: &Instruction) -> Option<(MemArg, i32, Option<ValType>)> {
    use Instruction as I;
    use ValType::{I32, I64};
    Some(match *instruction {
        I::I32Load(m) => (m, 4, None),
        I::I64Load(m) => (m, 8, None),
        I::I32Load8S(m) | I::I32Load8U(m) | I::I64Load8S(m) | I::I64Load8U(m) => (m, 1, None),
        I::I32Load16S(m) | I::I32Load16U(m) | I::I64Load16S(m) | I::I64Load16U(m) => (m, 2, None),
        I::I64Load32S(m) | I::I64Load32U(m) => (m, 4, None),
        I::I32Store(m) => (m, 4, Some(I32)),
        I::I64Store(m) => (m, 8, Some(I64)),
        I::I32Store8(m) => (m, 1, Some(I32)),
        I::I64Store8(m) => (m, 1, Some(I64)),
        I::I32Store16(m) => (m, 2, Some(I32)),
        I::I64Store16(m) => (m, 2, Some(I64)),
        I::I64Store32(m) => (m, 4, Some(I64)),
        _ => return None,
    })
}

/// Step 3: a probe before every load and store. Each function gets three scratch locals: the
/// address, and an `i32` and an `i64` for a stored value.
fn probe_memory_accesses(module: Module) -> Result<Module, String> {
    let (mut module, touch) = import_function(
        module,
        TOUCH,
        FuncType::new([ValType::I32, ValType::I32, ValType::I32], []),
    );
    let imported = module.import_count(|ty| matches!(ty, TypeRef::Func(_)));
    let types = module.type_section.clone().unwrap_or_default();
    let signatures = module.function_section.clone().unwrap_or_default();
    for (index, function) in module.code_section.iter_mut().flatten().enumerate() {
        let signature = signatures
            .get(index)
            .and_then(|&ty| types.get(ty as usize))
            .ok_or_else(|| format!("function {} has no type", imported + index))?;
        let params = signature.params().len() as u32;
        let declared: u32 = function.locals.iter().map(|(count, _)| count).sum();
        let address = params + declared;
        let (value32, value64) = (address + 1, address + 2);
        function.locals.push((2, ValType::I32));
        function.locals.push((1, ValType::I64));
        let mut probed = Vec::with_capacity(function.instructions.len() * 2);
        for instruction in std::mem::take(&mut function.instructions) {
            if let Some((memarg, width, stored)) = access_of(&instruction) {
                let value = match stored {
                    Some(ValType::I64) => Some(value64),
                    Some(_) => Some(value32),
                    None => None,
                };
                if let Some(value) = value {
                    probed.push(Instruction::LocalSet(value));
                }
                let kind = if stored.is_some() { WRITE } else { 0 };
                probed.extend([
                    Instruction::LocalTee(address),
                    Instruction::I32Const(memarg.offset as i32),
                    Instruction::I32Const(width | kind),
                    Instruction::Call(touch),
                    Instruction::LocalGet(address),
                ]);
                if let Some(value) = value {
                    probed.push(Instruction::LocalGet(value));
                }
            }
            probed.push(instruction);
        }
        function.instructions = probed;
    }
    Ok(module)
}
