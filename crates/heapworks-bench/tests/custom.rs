//! An allocator from outside the crate, registered as a contender, runs the workloads beside
//! the built-in peers and is found by name; names and heaps that cannot be contenders are
//! refused.

use std::alloc::Layout;

use heapworks_bench::contenders::custom::register;
use heapworks_bench::contenders::linked_list::LinkedListHeap;
use heapworks_bench::contenders::system::SystemHeap;
use heapworks_bench::contenders::{AllocatorId, RawHeap, SetupError};
use heapworks_bench::progress::Silent;
use heapworks_bench::results::Outcome;
use heapworks_bench::runner::{self, Selection};
use heapworks_bench::workloads::{Config, Scale, WorkloadId};

/// A heap that refuses every region: its set-up error fails its own cells only.
struct Refuses;

impl RawHeap for Refuses {
    fn unclaimed() -> Self {
        Refuses
    }

    unsafe fn claim(&mut self, _base: *mut u8, len: usize) -> Result<(), SetupError> {
        Err(SetupError(format!("refuses {len} bytes")))
    }

    unsafe fn allocate(&mut self, _layout: Layout) -> *mut u8 {
        std::ptr::null_mut()
    }

    unsafe fn deallocate(&mut self, _ptr: *mut u8, _layout: Layout) {}
}

#[test]
fn a_registered_contender_runs_beside_the_peers() {
    let refuses = register::<Refuses>("refuses", "refuses 0.0").unwrap();
    assert_eq!(
        heapworks_bench::contenders::custom::find("refuses"),
        Some(refuses)
    );
    assert_eq!(
        AllocatorId::from_name("refuses"),
        None,
        "built-in names only"
    );
    assert_eq!(refuses.crate_version(), "refuses 0.0");
    let selection = Selection {
        workloads: vec![WorkloadId::HeapEfficiency],
        allocators: vec![refuses, AllocatorId::Talc],
    };
    let results = runner::run(&Config::at_scale(Scale::Tiny, 1), &selection, &Silent).unwrap();
    let of = |name: &str| {
        results
            .cells
            .iter()
            .find(|c| c.allocator == name)
            .unwrap()
            .outcome
            .clone()
    };
    assert!(
        matches!(of("refuses"), Outcome::Failed(why) if why.contains("refuses")),
        "its own set-up error"
    );
    assert!(matches!(of("talc"), Outcome::Measured(_)));
    assert!(results
        .environment
        .versions
        .contains(&("refuses".to_string(), "refuses 0.0".to_string())));
}

#[test]
fn a_registered_heap_does_the_same_work_as_the_built_in_one() {
    // The built-in adapter's type, reached through the registry (boxed, one indirect call
    // per request) instead of directly.
    let outside =
        register::<LinkedListHeap>("outside_linked_list", "linked_list_allocator").unwrap();
    let selection = Selection {
        workloads: vec![WorkloadId::HeapEfficiency],
        allocators: vec![outside, AllocatorId::LinkedList],
    };
    let results = runner::run(&Config::at_scale(Scale::Tiny, 7), &selection, &Silent).unwrap();
    let efficiency = |name: &str| {
        let cell = results
            .cells
            .iter()
            .find(|c| c.allocator == name && c.metric == "efficiency")
            .unwrap();
        cell.median().expect("measured")
    };
    // The fill at the first failure follows from the seeded sequence and the allocator's
    // placement alone: the same for the same allocator, however it is reached.
    assert_eq!(efficiency("outside_linked_list"), efficiency("linked_list"));
}

#[test]
fn unusable_names_and_unbounded_heaps_are_refused() {
    for name in ["talc", "", "a,b", "two words"] {
        assert!(register::<Refuses>(name, "x").is_err(), "`{name}`");
    }
    register::<Refuses>("twice", "x").unwrap();
    assert!(register::<Refuses>("twice", "x").is_err());
    let error = register::<SystemHeap>("unbounded", "x").unwrap_err();
    assert!(error.0.contains("reclaim"), "{error}");
}
