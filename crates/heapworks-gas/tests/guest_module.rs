//! The shipped allocator as a wasm32 module (issue 15, item 3): the heapworks guests must hold
//! no panic or formatting code, and import nothing but their memory source (the standard
//! guest nothing, `memory.grow` being an instruction; the Gear guest `env.alloc`).

use gear_wasm_instrument::{Module, Name, TypeRef};
use heapworks_gas::guests;

/// Fragments of the (mangled) names of core's panic and formatting machinery.
const PANIC_MARKERS: &[&str] = &[
    "panicking",
    "panic_fmt",
    "3fmt",
    "core::fmt",
    "unwrap_failed",
];

/// The function names of a module, by index (the guests keep their name section).
fn function_names(module: &Module) -> Vec<(u32, String)> {
    let names = module
        .name_section
        .as_ref()
        .expect("the guest has no name section");
    names
        .iter()
        .filter_map(|name| match name {
            Name::Function(map) => Some(
                map.iter()
                    .map(|n| (n.index, n.name.to_string()))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .flatten()
        .collect()
}

/// The panic and formatting functions of a module, and the functions that call them.
fn panic_paths(module: &Module) -> Vec<String> {
    let names = function_names(module);
    assert!(
        !names.is_empty(),
        "no function names: the check would see nothing"
    );
    let is_panic = |index: u32| {
        names
            .iter()
            .any(|(i, name)| *i == index && PANIC_MARKERS.iter().any(|m| name.contains(m)))
    };
    let name_of = |index: u32| {
        names
            .iter()
            .find(|(i, _)| *i == index)
            .map_or(format!("#{index}"), |(_, n)| n.clone())
    };
    let imported = module.import_count(|ty| matches!(ty, TypeRef::Func(_))) as u32;
    let mut paths: Vec<String> = names
        .iter()
        .filter(|(i, _)| is_panic(*i))
        .map(|(_, n)| format!("defined: {n}"))
        .collect();
    for (offset, function) in module.code_section.iter().flatten().enumerate() {
        let index = imported + offset as u32;
        if is_panic(index) {
            continue;
        }
        for instruction in &function.instructions {
            if let gear_wasm_instrument::Instruction::Call(callee) = instruction {
                if is_panic(*callee) {
                    paths.push(format!("{} calls {}", name_of(index), name_of(*callee)));
                }
            }
        }
    }
    paths.sort();
    paths.dedup();
    paths
}

fn imports(module: &Module) -> Vec<String> {
    module
        .import_section
        .iter()
        .flatten()
        .map(|import| format!("{}.{}", import.module, import.name))
        .collect()
}

/// The guests' modules, with the imports each may have. The last three give their front a
/// static area at compile time (`with_static_slabs`): its address makes their allocator's
/// state initialised data.
const HEAPWORKS_GUESTS: [(&str, &[&str]); 6] = [
    ("guest_heapworks.wasm", &[]),
    ("guest_heapworks_gear.wasm", &["env.alloc"]),
    ("guest_heapworks_front.wasm", &[]),
    ("guest_heapworks_front_static.wasm", &[]),
    ("guest_heapworks_front_static2x.wasm", &[]),
    ("guest_heapworks_front_cells.wasm", &[]),
];

fn heapworks_modules() -> Vec<(&'static str, &'static [&'static str], Module)> {
    let dir = guests::build().expect("building the guests");
    HEAPWORKS_GUESTS
        .iter()
        .map(|&(guest, allowed)| {
            let wasm = std::fs::read(dir.join(guest)).unwrap();
            (guest, allowed, Module::new(&wasm).unwrap())
        })
        .collect()
}

#[test]
fn the_heapworks_guests_import_only_their_memory_source() {
    for (guest, allowed, module) in heapworks_modules() {
        let foreign: Vec<String> = imports(&module)
            .into_iter()
            .filter(|import| !allowed.contains(&import.as_str()))
            .collect();
        assert!(foreign.is_empty(), "{guest} imports {foreign:?}");
    }
}

#[test]
fn the_heapworks_guests_hold_no_panic_or_formatting_code() {
    let mut faults = Vec::new();
    for (guest, _, module) in heapworks_modules() {
        faults.extend(
            panic_paths(&module)
                .into_iter()
                .map(|path| format!("{guest}: {path}")),
        );
    }
    assert!(faults.is_empty(), "panic paths:\n{}", faults.join("\n"));
}

/// A `static` heapworks allocator starts all zeros, so it lands in `.bss`: the guests, whose
/// only static is their allocator, carry no initialised data (a single non-zero field would
/// move the whole state, kilobytes of zeros, into the data section).
#[test]
fn the_heapworks_guests_allocator_state_is_all_zeros() {
    for (guest, _, module) in heapworks_modules().into_iter().take(3) {
        let data: usize = module
            .data_section
            .iter()
            .flatten()
            .map(|segment| segment.data.len())
            .sum();
        assert_eq!(data, 0, "{guest} has {data} B of initialised data");
    }
}
