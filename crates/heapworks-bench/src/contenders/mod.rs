//! The allocator registry: every contender, built over the same region behind the same lock.
//!
//! Each allocator is driven through its own raw heap API by a small adapter implementing
//! [`RawHeap`]. [`Arena`] puts any adapter behind one `spin::Mutex` and exposes it as a
//! [`GlobalAlloc`], the common currency of every workload (and of the trace replayer).
//! [`with_allocator`] builds the contender named by an [`AllocatorId`] over a region and
//! hands it to a generic [`UseAllocator`] visitor, so workloads are monomorphized per
//! allocator and pay no dynamic dispatch. The adapters are public, to be reused or wrapped.
//! An allocator from outside this crate implements
//! [`RawHeap`] and joins with [`custom::register`] (reached through one indirect call).
//!
//! ```
//! use std::alloc::{GlobalAlloc, Layout};
//! use heapworks_bench::contenders::{with_allocator, AllocatorId, Arena, RawHeap, UseAllocator};
//! use heapworks_bench::region::Region;
//!
//! /// Anything generic over a `GlobalAlloc` runs on every contender this way.
//! struct AllocateOnce;
//!
//! impl UseAllocator for AllocateOnce {
//!     type Output = bool;
//!     fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> bool {
//!         let layout = Layout::from_size_align(100, 8).unwrap();
//!         // SAFETY: non-zero size; the block is freed with the same layout.
//!         unsafe {
//!             let block = arena.alloc(layout);
//!             if !block.is_null() {
//!                 arena.dealloc(block, layout);
//!             }
//!             !block.is_null()
//!         }
//!     }
//! }
//!
//! let mut region = Region::pretouched(1 << 20).unwrap();
//! let talc = AllocatorId::from_name("talc").unwrap();
//! assert!(with_allocator(talc, &mut region, 1 << 20, AllocateOnce).unwrap());
//! ```

pub mod buddy_alloc;
pub mod buddy_system;
pub mod custom;
pub mod dlmalloc;
pub mod front;
pub mod galloc;
pub mod heapworks;
pub mod indexes;
pub mod linked_list;
pub mod rlsf;
pub mod system;
pub mod talc;

use std::alloc::{GlobalAlloc, Layout};
use std::fmt;
use std::marker::PhantomData;
use std::ptr;

use crate::region::Region;

pub use front::FrontContender;
pub use indexes::IndexContender;

crate::registry! {
    /// One contender of the benchmark: its name, and as its description the crate and exact
    /// version measured (pinned with `=` in this crate's manifest).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum AllocatorId {
        /// heapworks, the allocator under test: every ratio is to it.
        Heapworks = ("heapworks", HEAPWORKS_VERSION),
        /// talc: bins + bitmap, tail tag.
        Talc = ("talc", "talc 5.1.1"),
        /// rlsf: two-level segregated fit.
        Rlsf = ("rlsf", "rlsf 0.2.3"),
        /// dlmalloc: the Rust port of Doug Lea's malloc 2.8, over a fixed region.
        Dlmalloc = ("dlmalloc", "dlmalloc 0.2.14"),
        /// good_memory_allocator ("galloc"): exact small bins and a first-fit list.
        Galloc = ("galloc", "good_memory_allocator 0.1.7"),
        /// linked_list_allocator: address-ordered first fit.
        LinkedList = ("linked_list", "linked_list_allocator 0.10.6"),
        /// buddy_system_allocator: power-of-two buddy, 32 orders.
        BuddySystem = ("buddy_system", "buddy_system_allocator 0.13.0"),
        /// buddy-alloc: 64 B pool in front of a buddy allocator.
        BuddyAlloc = ("buddy_alloc", "buddy-alloc 0.6.0"),
        /// The platform allocator (`std::alloc::System`), unbounded: only where a workload
        /// allows.
        System = ("system", "std::alloc::System (the platform malloc)");
        /// heapworks on another free index than the default (not in `ALL`: run by
        /// `bench --indexes` or by name; see [`indexes`]).
        HeapworksOn(index: IndexContender) => (index.name(), index.description()),
            found by IndexContender::from_name;
        /// heapworks with its small-object front (not in `ALL`: run by name; see [`front`]).
        HeapworksFront(front: FrontContender) => (front.name(), front.description()),
            found by FrontContender::from_name;
        /// An allocator from outside this crate, added with [`custom::register`] (not in
        /// `ALL`, found by [`custom::find`]).
        Custom(contender: &'static custom::CustomContender) => (contender.name(), contender.version())
    }
}

impl AllocatorId {
    /// The crate and exact version measured: the contender's description.
    pub fn crate_version(self) -> &'static str {
        self.description()
    }

    /// Whether the crate comes from crates.io, pinned to an exact version.
    pub fn is_pinned_peer(self) -> bool {
        !matches!(
            self,
            AllocatorId::Heapworks
                | AllocatorId::HeapworksFront(_)
                | AllocatorId::HeapworksOn(_)
                | AllocatorId::System
                | AllocatorId::Custom(_)
        )
    }

    /// heapworks on its default index, then on every other one: the contenders of the
    /// free-index study.
    pub fn heapworks_on_every_index() -> Vec<AllocatorId> {
        let others = IndexContender::ALL.iter().copied();
        std::iter::once(AllocatorId::Heapworks)
            .chain(others.map(AllocatorId::HeapworksOn))
            .collect()
    }

    /// Every contender a name can select, in the order of the report's columns: heapworks on
    /// every index, heapworks with its front, then the rest of [`ALL`](Self::ALL) (registered
    /// contenders aside).
    pub fn nameable() -> Vec<AllocatorId> {
        let mut all = Self::heapworks_on_every_index();
        all.extend(
            FrontContender::ALL
                .iter()
                .copied()
                .map(Self::HeapworksFront),
        );
        let rest: Vec<AllocatorId> = Self::ALL
            .iter()
            .copied()
            .filter(|a| !all.contains(a))
            .collect();
        all.extend(rest);
        all
    }

    /// Whether the allocator manages a fixed region (every contender but the system's).
    pub fn is_arena(self) -> bool {
        self != AllocatorId::System
    }
}

/// heapworks is a path dependency: the version is the workspace's checkout (see the report's
/// git revision).
const HEAPWORKS_VERSION: &str = "heapworks (this workspace)";

/// A contender could not be set up over the region it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError(pub String);

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SetupError {}

/// An allocator driven through its own, unsynchronized heap API.
///
/// Adapters translate between `core::alloc` conventions (null on failure) and each crate's.
pub trait RawHeap: Send {
    /// Whether dropping the heap reclaims its blocks (true for every arena: the region simply
    /// goes back to the pool). When false, workloads must free every block they still hold.
    const DROP_RECLAIMS_BLOCKS: bool = true;

    /// A heap that owns no memory yet. It is placed at its final address before
    /// [`claim`](Self::claim), since some heaps keep pointers to themselves.
    fn unclaimed() -> Self;

    /// Hands `len` bytes at `base` to the heap.
    ///
    /// # Safety
    /// The memory must be writable, unused by anything else while the heap lives, and `self`
    /// must not move afterwards.
    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError>;

    /// Allocates a block for `layout` (non-zero size); null when it cannot.
    ///
    /// # Safety
    /// The heap must have been claimed; `layout.size()` must be non-zero.
    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8;

    /// Frees a block.
    ///
    /// # Safety
    /// `ptr` came from this heap with exactly `layout` and is not used afterwards.
    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout);

    /// Resizes a block, keeping its alignment and contents; null (and the old block intact)
    /// when it cannot. The default moves the block; adapters override it with the crate's own
    /// realloc when it has one.
    ///
    /// # Safety
    /// As for [`deallocate`](Self::deallocate); `new_size` must be non-zero.
    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded from this function's contract.
        unsafe { realloc_by_moving(self, ptr, layout, new_size) }
    }
}

/// Realloc for heaps without one: allocate, copy the smaller size, free the old block.
///
/// # Safety
/// As for [`RawHeap::reallocate`].
pub unsafe fn realloc_by_moving<H: RawHeap + ?Sized>(
    heap: &mut H,
    ptr: *mut u8,
    layout: Layout,
    new_size: usize,
) -> *mut u8 {
    let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
        return ptr::null_mut();
    };
    // SAFETY: the heap is claimed and `new_size` is non-zero (caller's contract).
    let new_ptr = unsafe { heap.allocate(new_layout) };
    if !new_ptr.is_null() {
        // SAFETY: both blocks are live, distinct, and at least `min(old, new)` bytes long;
        // the old block came from this heap with `layout` (caller's contract).
        unsafe {
            ptr::copy_nonoverlapping(ptr, new_ptr, layout.size().min(new_size));
            heap.deallocate(ptr, layout);
        }
    }
    new_ptr
}

/// A contender as the workloads see it: a [`RawHeap`] behind the one lock type shared by all,
/// over memory borrowed from a [`Region`] for `'r`.
pub struct Arena<'r, H: RawHeap> {
    heap: spin::Mutex<H>,
    memory: PhantomData<&'r mut [u8]>,
}

impl<'r, H: RawHeap> Arena<'r, H> {
    /// Builds a fresh heap over the first `len` bytes of `region`.
    pub fn over(region: &'r mut Region, len: usize) -> Result<Box<Self>, SetupError> {
        Self::over_with(H::unclaimed(), region, len)
    }

    /// Puts `heap`, unclaimed, over the first `len` bytes of `region`.
    fn over_with(heap: H, region: &'r mut Region, len: usize) -> Result<Box<Self>, SetupError> {
        if len > region.len() {
            return Err(SetupError(format!(
                "heap of {len} bytes asked for over a region of {}",
                region.len()
            )));
        }
        let mut arena = Box::new(Self {
            heap: spin::Mutex::new(heap),
            memory: PhantomData,
        });
        // SAFETY: the region is writable and exclusively borrowed for `'r`, as long as the
        // arena can live; the heap sits in a box and never moves again.
        unsafe { arena.heap.get_mut().claim(region.base(), len)? };
        Ok(arena)
    }

    /// Direct access to the heap under the lock (used where the lock must stay out of the
    /// measurement, e.g. instruction counts).
    pub fn lock(&self) -> spin::MutexGuard<'_, H> {
        self.heap.lock()
    }
}

// SAFETY: every call goes to the heap under the lock, and each adapter upholds `RawHeap`'s
// contract, which is `GlobalAlloc`'s: blocks fit the layout, null on failure, contents kept
// on realloc.
unsafe impl<H: RawHeap> GlobalAlloc for Arena<'_, H> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded from `GlobalAlloc::alloc`'s contract (non-zero size).
        unsafe { self.heap.lock().allocate(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded from `GlobalAlloc::dealloc`'s contract.
        unsafe { self.heap.lock().deallocate(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded from `GlobalAlloc::realloc`'s contract.
        unsafe { self.heap.lock().reallocate(ptr, layout, new_size) }
    }
}

/// Work to run on one contender, generic over its heap type.
pub trait UseAllocator {
    /// What the work produces.
    type Output;
    /// Runs the work. `arena` is a [`GlobalAlloc`] + [`Sync`]; [`Arena::lock`] gives raw access.
    fn run<H: RawHeap>(self, arena: &Arena<'_, H>) -> Self::Output;
}

/// Builds the contender `id` over the first `heap_len` bytes of `region` and runs `work` on it.
///
/// This is the entry point for anything generic over `A: GlobalAlloc` (workloads, trace
/// replay): implement [`UseAllocator`] and pass the allocator's name through
/// [`AllocatorId::from_name`].
pub fn with_allocator<U: UseAllocator>(
    id: AllocatorId,
    region: &mut Region,
    heap_len: usize,
    work: U,
) -> Result<U::Output, SetupError> {
    match id {
        AllocatorId::Heapworks => run_over::<heapworks::HeapworksHeap, U>(region, heap_len, work),
        AllocatorId::Talc => run_over::<talc::TalcHeap, U>(region, heap_len, work),
        AllocatorId::Rlsf => run_over::<rlsf::RlsfHeap, U>(region, heap_len, work),
        AllocatorId::Dlmalloc => run_over::<dlmalloc::DlmallocHeap, U>(region, heap_len, work),
        AllocatorId::Galloc => run_over::<galloc::GallocHeap, U>(region, heap_len, work),
        AllocatorId::LinkedList => {
            run_over::<linked_list::LinkedListHeap, U>(region, heap_len, work)
        }
        AllocatorId::BuddySystem => {
            run_over::<buddy_system::BuddySystemHeap, U>(region, heap_len, work)
        }
        AllocatorId::BuddyAlloc => {
            run_over::<buddy_alloc::BuddyAllocHeap, U>(region, heap_len, work)
        }
        AllocatorId::System => run_over::<system::SystemHeap, U>(region, heap_len, work),
        AllocatorId::HeapworksOn(index) => index.with_heap(region, heap_len, work),
        AllocatorId::HeapworksFront(front) => front.with_heap(region, heap_len, work),
        AllocatorId::Custom(contender) => {
            let arena = Arena::over_with(contender.heap(), region, heap_len)?;
            Ok(work.run(&*arena))
        }
    }
}

fn run_over<H: RawHeap, U: UseAllocator>(
    region: &mut Region,
    heap_len: usize,
    work: U,
) -> Result<U::Output, SetupError> {
    let arena = Arena::<H>::over(region, heap_len)?;
    Ok(work.run(&*arena))
}

#[cfg(test)]
mod tests;
