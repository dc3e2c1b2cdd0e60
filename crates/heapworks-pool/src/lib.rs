//! A reuse pool for large buffers (tensors, images, audio frames, serialization buffers),
//! inline or in shared memory, with size classes, a byte budget and LRU eviction.
//!
//! Allocating and filling a fresh 25 MB buffer pays a page fault per 4 KiB page; refilling one
//! that is already mapped does not. A [`Pool`] keeps dropped buffers and hands them out again.
//!
//! # Design
//!
//! - **Size classes** ([`class`]): a request is rounded up to its class (64 B steps up to
//!   256 B, then four classes per doubling by default), the size of a fresh buffer made for
//!   it: at most 64 B or 1/4 (25 %) over the request, or 1/8, 1/2 with
//!   [`ClassesPerDoubling::Eight`] and [`ClassesPerDoubling::Two`].
//! - **Matching**: a request takes the most recently returned cached buffer of its class or of
//!   the classes up to a doubling above it; if there is none, of the next doubling. A buffer
//!   handed out is less than four times its request's class (five times the request). Why:
//!   shapes that vary then reuse a few buffers, whose memory is the most likely still in the
//!   CPU's caches, rather than one buffer per class, and the nearest doubling first keeps a
//!   small request from taking the large buffer a large one needs (measured in the crate's
//!   TUNING.md). A buffer always goes back under the class it was made for.
//! - **Cache** (module `cache`): per shard, the most recent return in an atomic *hot* place,
//!   and per class a list of the other returned buffers in return order. A thread returns to
//!   and takes from its home shard first: a buffer reused at one size goes through the hot
//!   place (two atomic swaps, no lock), others under one slot's lock; no lock is common to
//!   all threads. The hit path costs about 190 instructions for a get and its drop (TUNING.md).
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
//! - **Backends** ([`backend`]): [`Inline`] (private `mmap` from 256 KiB; smaller buffers
//!   come from the process allocator and are not cached, since its own free lists reuse them
//!   faster than the pool's locks) and [`SharedMemory`] (a memfd per buffer, `MAP_SHARED`,
//!   every size cached), whose buffers export a [`ShmHandle`] that another process maps as a
//!   [`SharedMapping`], the same pages, without a copy. Both place buffers of 2 MiB and more
//!   at 2 MiB boundaries on transparent huge pages, each the way the kernel grants them for
//!   its memory (`MADV_HUGEPAGE` inline, `MADV_COLLAPSE` shared), so that shared memory
//!   costs what inline memory does.
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
