//! A reuse pool for large buffers (tensors, images, audio frames, serialization buffers),
//! inline or in shared memory, with size classes, a byte budget and LRU eviction.
//!
//! Allocating and filling a fresh 25 MB buffer pays a page fault per 4 KiB page; refilling one
//! that is already mapped does not. A [`Pool`] keeps dropped buffers and hands them out again.
//!
//! # Design
//!
//! - **Size classes** ([`class`]): a request is rounded up to its class (64 B steps up to
//!   256 B, then four classes per doubling by default) and takes any cached buffer of that
//!   class. The slack a request can be handed is below 64 B or 1/4 of the request (25 %), or
//!   1/8, 1/2 with [`ClassesPerDoubling::Eight`] and [`ClassesPerDoubling::Two`]: shapes
//!   that vary (a sequence a few tokens longer) still hit, and fewer near-duplicate buffers
//!   sit in the cache than with finer classes (measured in [`class`]). A hit never takes a
//!   buffer of a larger class: the bound holds for every buffer a hit hands out (a recycled
//!   mapping, below, may be up to twice its request's class).
//! - **Cache** (module `cache`): per shard and class, a deque of returned buffers in return order.
//!   A thread returns to and takes from its home shard first, under that slot's lock alone:
//!   no lock is common to all threads on the hit path. A hit takes the most recently returned
//!   buffer of its class (its pages are the most likely to be warm).
//! - **Recycling**: a miss first looks for a cached inline mapping of a class up to a
//!   doubling away (larger ones first). A larger one is handed out as it is, a smaller one
//!   grown to the request's class with `mremap`: either way its resident pages need no new
//!   fault, where shrinking a larger one would give back pages that the next large request
//!   faults in again (on `bench --pool`'s variable shapes, shrinking kept the pool at 2.2
//!   times the time without one: 3 000 to 3 800 page faults per 150 steps, against none).
//!   A returned mapping is filed under the largest class its capacity holds whole. Heap and
//!   shared-memory buffers are never recycled across classes.
//! - **Budget and eviction**: cached bytes never exceed [`Config::budget`] at any instant: a
//!   return first reserves its bytes, evicting the least recently returned buffers of any
//!   class, and releases the returned buffer instead if it cannot fit. A budget of 0 turns
//!   the pool into a pass-through. [`Stats::peak_bytes_cached`] records the largest amount.
//! - **Idle release**: with [`Config::idle_release`], buffers unused for that long are
//!   released by later returns or by [`Pool::release_idle`].
//! - **Contents** ([`buffer`]): [`Pool::get`] hands out an [`Uninit`], written through
//!   `MaybeUninit` or [`Uninit::fill`]; [`Pool::get_zeroed`] is free on fresh pages from
//!   `mmap` or memfd (the kernel zeroes them) and one `memset` of the requested bytes on a
//!   reused buffer.
//! - **Backends** ([`backend`]): [`Inline`] (private `mmap` from 256 KiB, with
//!   `MADV_HUGEPAGE` from 2 MiB; smaller buffers come from the process allocator and are not
//!   cached, since its own free lists reuse them faster than the pool's locks) and
//!   [`SharedMemory`] (a memfd per buffer, `MAP_SHARED`, every size cached),
//!   whose buffers export a [`ShmHandle`] that another process maps as a [`SharedMapping`],
//!   the same pages, without a copy.
//! - **Lifetime**: a buffer holds the pool's shared state, so it can be dropped after the
//!   pool; its memory is then released, not cached.
//!
//! Failures are [`PoolError`]s, never panics: an element count whose byte size overflows,
//! memory or descriptors running out (the OS error is kept), a handle of another pool or with
//! a closed descriptor. A failed call leaves the pool as it was.
//!
//! With the `ndarray` feature, [`PooledBuf::into_array`] gives an ndarray view over a pooled
//! buffer that returns to the pool when dropped.

pub mod backend;
pub mod buffer;
mod cache;
pub mod class;
mod element;
mod error;
#[cfg(feature = "ndarray")]
mod ndarray_view;
mod pool;

pub use backend::{Backend, Inline, ReceivedHandle, SharedMapping, SharedMemory, ShmHandle};
pub use buffer::{PooledBuf, Uninit};
pub use class::ClassesPerDoubling;
pub use element::Element;
pub use error::PoolError;
#[cfg(feature = "ndarray")]
pub use ndarray_view::PooledArray;
pub use pool::{Config, Pool, Stats};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
