//! # heapworks
//!
//! A `no_std` arena allocator: it manages heaps over memory regions it is handed.
//!
//! - **One word of overhead** per allocation, 16-byte granularity on 64-bit targets (8 on 32-bit).
//! - **O(1) allocate and free**: free chunks are filed by size in bins with an
//!   occupancy bitmap, and coalesced with both neighbours at once through boundary tags. A
//!   request that the largest free chunk could serve never fails.
//! - **In-place realloc**: shrinking splits off the tail; growing takes from a free neighbour.
//! - **Any power-of-two alignment**; the padding in front of an aligned block goes back to the
//!   free index.
//! - **Several regions**, grown in place with [`Heap::extend`].
//! - **Statistics** ([`Heap::stats`]; the high-water mark and call counts with feature
//!   `counters`) and a **heap checker** ([`Heap::check`]); feature `checked` (on in debug builds)
//!   validates every pointer handed back.
//!
//! [`Heap`] is the unsynchronized engine, generic over its free index ([`Bins`] by default;
//! [`SplayTree`], [`RedBlackTree`] with its variants [`MirroredRedBlackTree`],
//! [`AddressRedBlackTree`] and [`ParentRedBlackTree`], [`Hybrid`] and [`SegregatedLists`] are
//! the others, see [`index`]).
//! [`LockedHeap`] (feature `lock_api`, on by default)
//! serves as `#[global_allocator]` behind any `lock_api::RawMutex`, a spin lock by default;
//! [`UnsyncHeap`] serves single-threaded programs without a lock. [`FrontHeap`] (opt-in) puts a
//! small-object front before a heap: requests of up to 256 B are served from size-classed,
//! tagged slots in slabs carved from the heap, a pop and a push each;
//! `UnsyncHeap<FrontHeap>` and [`LockedFrontHeap`] serve it as `#[global_allocator]`. On single-core
//! microcontrollers whose interrupt handlers allocate, `CriticalSectionHeap` (feature
//! `critical-section`) locks by a critical section instead of spinning.
//!
//! ```
//! use heapworks::LockedHeap;
//!
//! static mut ARENA: [u8; 4 << 20] = [0; 4 << 20];
//!
//! #[global_allocator]
//! // SAFETY: the arena is used by nothing else. It is claimed at the first request, which a
//! // hosted program makes before `main` runs.
//! static ALLOCATOR: LockedHeap =
//!     unsafe { LockedHeap::with_region(&raw mut ARENA as *mut u8, 4 << 20) };
//!
//! fn main() {
//!     let v: Vec<u32> = (0..100).collect();
//!     assert_eq!(v.len(), 100);
//!     ALLOCATOR.lock().check().unwrap();
//! }
//! ```
//!
//! Memory may also be claimed later, and more of it: [`LockedHeap::claim`], [`Heap::extend`].
//!
//! `INTERNALS.md` beside this crate draws the chunk format, the bin map, and how alignment,
//! splitting and coalescing work.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]

mod bins;
mod bitmap;
mod check;
mod chunk;
#[cfg(feature = "critical-section")]
mod critical;
mod error;
mod front;
mod global;
mod heap;
pub mod index;
#[cfg(feature = "lock_api")]
mod locked;
mod region;
mod source;
mod spans;
mod stats;
mod unsync;

#[cfg(feature = "critical-section")]
pub use critical::{CriticalSectionHeap, CriticalSectionLock};
pub use error::{AllocError, ClaimError, Corruption, CorruptionKind, Misuse};
pub use front::FrontHeap;
pub use heap::Heap;
pub use index::{
    AddressRedBlackTree, Bins, FreeIndex, Hybrid, MirroredRedBlackTree, ParentRedBlackTree,
    RedBlackTree, SegregatedLists, SplayTree,
};
#[cfg(feature = "lock_api")]
pub use locked::{LockedFrontHeap, LockedHeap};
#[cfg(all(target_arch = "wasm32", feature = "gear-memory"))]
pub use source::{GearAlloc, GearFrontHeap, GearHeap, GearMemory};
#[cfg(all(target_arch = "wasm32", feature = "wasm-memory"))]
pub use source::{MemoryGrow, WasmFrontHeap, WasmHeap, WasmMemory};
pub use source::{MemorySource, SourcedHeap};
#[cfg(all(
    target_arch = "wasm32",
    any(feature = "wasm-memory", feature = "gear-memory")
))]
pub use source::{PageGrant, WasmPages};
pub use stats::Stats;
pub use unsync::UnsyncHeap;

/// The payload alignment every block has without asking: 16 B on 64-bit targets, 8 on 32-bit.
pub const GRANULE: usize = chunk::GRANULE;

/// A bit the heap never sets in the word just before a block it hands out (that word is the
/// block's header). An embedder that also serves blocks from elsewhere (say, whole pages from
/// `mmap`) can put a word with this bit set in front of those, and tell the two kinds apart on
/// `free` with one load: `(*ptr.cast::<usize>().sub(1)) & EMBEDDER_TAG != 0`.
pub const EMBEDDER_TAG: usize = chunk::EMBEDDER_TAG;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
