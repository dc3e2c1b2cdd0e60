//! heapworks on wasm32 itself: the shadow model's random operation sequences run inside the
//! `heapworks-check` guest (`WasmHeap`, growing with `memory.grow`), the heap checked after
//! every step, with memory that grows contiguously or apart; and out of memory when the
//! memory refuses to grow (null, heap intact).
//!
//! The guest has only `GlobalAlloc`'s entry points: the model's frees without size become
//! deallocations with the layout, and its runs and grow-in-place operations are skipped.

use heapworks_gas::guests;
use heapworks_gas::machine::Machine;
use heapworks_testkit::{random_op, Op, Rng};

fn check_guest() -> Vec<u8> {
    let dir = guests::build().expect("building the guests");
    std::fs::read(dir.join(guests::CHECK_GUEST.file)).expect("reading the check guest")
}

/// A live block of the model: address, layout and the byte it is filled with.
#[derive(Clone, Copy, Debug)]
struct Block {
    ptr: u32,
    size: u32,
    align: u32,
    byte: u8,
}

fn assert_apart(new: Block, live: &[Block]) {
    for old in live {
        let apart = new.ptr + new.size <= old.ptr || old.ptr + old.size <= new.ptr;
        assert!(apart, "{new:?} overlaps live {old:?}");
    }
}

/// Runs `ops` random operations; the host grows the memory by one page every `apart_every`
/// operations (0: never), so the heap's later growth does not follow its last region.
fn shadow_run(wasm: &[u8], seed: u64, ops: usize, apart_every: usize) {
    let mut machine = Machine::new(wasm, 4096).unwrap();
    let initial_pages = machine.memory_pages();
    let mut rng = Rng::new(seed);
    let mut live: Vec<Block> = Vec::new();
    for step in 0..ops {
        if apart_every > 0 && step % apart_every == apart_every - 1 {
            machine.grow_from_host(1).unwrap();
        }
        let op = random_op(&mut rng, live.len(), 20_000);
        let byte = (step % 251) as u8 + 1;
        match op {
            Op::Alloc { size, align_log2 } => {
                let (size, align) = (size.max(1) as u32, 1u32 << align_log2);
                let (ptr, _) = machine.alloc(false, size, align).unwrap();
                assert!(
                    ptr != 0 && ptr % align == 0,
                    "step {step}: {op:?} gave {ptr:#x}"
                );
                let block = Block {
                    ptr,
                    size,
                    align,
                    byte,
                };
                assert_apart(block, &live);
                machine.fill(ptr, size, byte).unwrap();
                live.push(block);
            }
            Op::Dealloc { slot } | Op::Free { slot } if !live.is_empty() => {
                let block = live.swap_remove(slot % live.len());
                assert!(
                    machine.holds(block.ptr, block.size, block.byte),
                    "step {step}: {block:?} overwritten"
                );
                machine.dealloc(block.ptr, block.size, block.align).unwrap();
            }
            Op::Realloc { slot, size } if !live.is_empty() => {
                let index = slot % live.len();
                let old = live.swap_remove(index);
                let size = size.max(1) as u32;
                let (ptr, _) = machine.realloc(old.ptr, old.size, old.align, size).unwrap();
                assert!(
                    ptr != 0 && ptr % old.align == 0,
                    "step {step}: {op:?} gave {ptr:#x}"
                );
                assert!(
                    machine.holds(ptr, old.size.min(size), old.byte),
                    "step {step}: contents lost"
                );
                let block = Block {
                    ptr,
                    size,
                    byte,
                    ..old
                };
                assert_apart(block, &live);
                machine.fill(ptr, size, byte).unwrap();
                live.push(block);
            }
            _ => continue,
        }
        assert_eq!(
            machine.call_i32("gas_check"),
            Ok(1),
            "step {step}: {op:?} broke the heap"
        );
    }
    let host_pages = ops.checked_div(apart_every).unwrap_or(0) as u64;
    assert!(
        machine.memory_pages() > initial_pages + host_pages,
        "the heap never grew: the run tested nothing of growth"
    );
    for block in live {
        machine.dealloc(block.ptr, block.size, block.align).unwrap();
    }
    assert_eq!(machine.call_i32("gas_check"), Ok(1));
}

#[test]
fn shadow_sequences_keep_the_heap_sound_as_memory_grows_contiguously() {
    let wasm = check_guest();
    for seed in 1..=2 {
        shadow_run(&wasm, seed, 600, 0);
    }
}

#[test]
fn shadow_sequences_keep_the_heap_sound_as_memory_grows_apart() {
    let wasm = check_guest();
    for seed in 3..=4 {
        shadow_run(&wasm, seed, 600, 40);
    }
}

#[test]
fn memory_that_refuses_to_grow_gives_null_and_keeps_the_heap() {
    let wasm = check_guest();
    // No growth at all: the heap has the initial memory past `__heap_base`, nothing more.
    let mut machine = Machine::new(&wasm, 0).unwrap();
    let mut blocks = Vec::new();
    let refused = loop {
        let (ptr, _) = machine.alloc(false, 16 * 1024, 8).unwrap();
        if ptr == 0 {
            break true;
        }
        machine.fill(ptr, 16 * 1024, 0x5a).unwrap();
        blocks.push(ptr);
        assert!(blocks.len() < 4096, "the memory never ran out");
    };
    assert!(refused && !blocks.is_empty());
    assert_eq!(machine.call_i32("gas_check"), Ok(1));
    // Larger than the wasm32 address space can hold: null too.
    assert_eq!(machine.alloc(false, 0x7fff_0000, 8).unwrap().0, 0);
    assert_eq!(
        machine
            .realloc(blocks[0], 16 * 1024, 8, 0x7fff_0000)
            .unwrap()
            .0,
        0
    );
    for &ptr in &blocks {
        assert!(
            machine.holds(ptr, 16 * 1024, 0x5a),
            "a live block changed after the refusal"
        );
    }
    // Freed memory serves again.
    machine.dealloc(blocks[0], 16 * 1024, 8).unwrap();
    assert_ne!(machine.alloc(false, 16 * 1024, 8).unwrap().0, 0);
    assert_eq!(machine.call_i32("gas_check"), Ok(1));
}
