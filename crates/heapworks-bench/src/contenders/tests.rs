//! Every contender honours the `GlobalAlloc` contract over a small region.

use std::alloc::{GlobalAlloc, Layout};

use super::*;

struct Exercise;

impl UseAllocator for Exercise {
    type Output = Result<(), String>;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> Self::Output {
        let mut blocks = Vec::new();
        for (i, align) in [8, 16, 64, 8, 8, 32].iter().cycle().take(60).enumerate() {
            let layout = Layout::from_size_align(24 + i * 13, *align).unwrap();
            // SAFETY: non-zero size; the block is written within its size only.
            let ptr = unsafe { arena.alloc(layout) };
            if ptr.is_null() {
                return Err(format!("allocation {i} failed"));
            }
            if !(ptr as usize).is_multiple_of(layout.align()) {
                return Err(format!("allocation {i} misaligned"));
            }
            // SAFETY: the block is live and `layout.size()` long.
            unsafe { ptr.write_bytes(i as u8, layout.size()) };
            blocks.push((ptr, layout, i as u8));
        }
        let mut sorted: Vec<_> = blocks
            .iter()
            .map(|(p, l, _)| (*p as usize, l.size()))
            .collect();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
            return Err("blocks overlap".into());
        }
        for (ptr, layout, tag) in &mut blocks {
            let new_size = layout.size() * 3;
            // SAFETY: `ptr` is live with `layout`; the new size is non-zero.
            let moved = unsafe { arena.realloc(*ptr, *layout, new_size) };
            if moved.is_null() {
                return Err("realloc failed".into());
            }
            // SAFETY: the first `layout.size()` bytes were kept by realloc.
            let kept = unsafe { std::slice::from_raw_parts(moved, layout.size()) };
            if kept.iter().any(|b| b != tag) {
                return Err("realloc lost the block's contents".into());
            }
            *ptr = moved;
            *layout = Layout::from_size_align(new_size, layout.align()).unwrap();
        }
        for (ptr, layout, _) in blocks {
            // SAFETY: every block is live with its current layout and freed once.
            unsafe { arena.dealloc(ptr, layout) };
        }
        Ok(())
    }
}

#[test]
fn every_contender_allocates_reallocates_and_frees() {
    let mut region = Region::pretouched(1 << 20).unwrap();
    for id in AllocatorId::nameable() {
        let outcome = with_allocator(id, &mut region, 1 << 20, Exercise).unwrap();
        assert_eq!(outcome, Ok(()), "{id}");
    }
}

#[test]
fn names_round_trip() {
    for id in AllocatorId::nameable() {
        assert_eq!(AllocatorId::from_name(id.name()), Some(id));
    }
    assert_eq!(AllocatorId::from_name("jemalloc"), None);
}

#[test]
fn printed_versions_match_the_manifest_pins() {
    let manifest = include_str!("../../Cargo.toml");
    for &id in AllocatorId::ALL.iter().filter(|id| id.is_pinned_peer()) {
        let (krate, version) = id.crate_version().split_once(' ').unwrap();
        let pin = format!("\"={version}\"");
        let line = manifest
            .lines()
            .find(|line| line.starts_with(&format!("{krate} =")))
            .unwrap_or_else(|| panic!("{krate} is not a dependency"));
        assert!(line.contains(&pin), "{krate}: manifest says {line}");
    }
}

#[test]
fn a_heap_larger_than_its_region_is_refused() {
    let mut region = Region::pretouched(1 << 16).unwrap();
    assert!(with_allocator(AllocatorId::Talc, &mut region, 1 << 20, Exercise).is_err());
}

#[test]
fn the_front_is_nameable_but_out_of_normal_runs() {
    let front = AllocatorId::from_name("heapworks_front").unwrap();
    assert_eq!(front, AllocatorId::HeapworksFront(FrontContender::Bins));
    assert!(AllocatorId::nameable().contains(&front));
    assert!(!AllocatorId::ALL.contains(&front));
    assert!(!front.is_pinned_peer());
}

/// Tiny blocks on the front come from 16 B slots, a stride apart; the plain heap's smallest
/// chunk is 32 B (64-bit targets).
struct SlotsOfOneClass;

impl UseAllocator for SlotsOfOneClass {
    type Output = Vec<usize>;

    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> Vec<usize> {
        let layout = Layout::from_size_align(8, 8).unwrap();
        // SAFETY: non-zero size; every block is freed once with its layout.
        unsafe {
            let blocks: Vec<*mut u8> = (0..4).map(|_| arena.alloc(layout)).collect();
            let gaps = blocks
                .windows(2)
                .map(|w| (w[1] as usize).abs_diff(w[0] as usize))
                .collect();
            for block in blocks {
                arena.dealloc(block, layout);
            }
            gaps
        }
    }
}

#[cfg(target_pointer_width = "64")]
#[test]
fn heapworks_front_runs_heapworks_on_its_front() {
    let mut region = Region::pretouched(1 << 20).unwrap();
    let front = AllocatorId::from_name("heapworks_front").unwrap();
    let on_front = with_allocator(front, &mut region, 1 << 20, SlotsOfOneClass).unwrap();
    assert_eq!(on_front, [16, 16, 16]);
    let plain = with_allocator(
        AllocatorId::Heapworks,
        &mut region,
        1 << 20,
        SlotsOfOneClass,
    );
    assert_eq!(plain.unwrap(), [32, 32, 32]);
}
