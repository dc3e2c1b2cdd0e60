//! Storage backends: where a pool's fresh buffers come from and where released ones go.
//!
//! A [`Backend`] makes a [`Region`]: memory it owns, at least 64-byte aligned, released when
//! the region is dropped (to the heap, by `munmap`, and for shared memory by closing its file
//! too). The pool never looks inside a region beyond its pointer and capacity, so every
//! backend is pooled the same way.
//!
//! - [`Inline`]: the process heap below a threshold, private anonymous `mmap` above it (with
//!   transparent huge pages asked for by `madvise` on buffers of 2 MiB and more).
//! - Both mapped backends place buffers of 2 MiB and more at 2 MiB boundaries and ask for huge
//!   pages, each the way the kernel grants them for its kind of memory (module `mapping`):
//!   a buffer of a size sits on the same pages inline or shared.
//! - [`SharedMemory`]: one `memfd_create` file per buffer, mapped `MAP_SHARED`, so that
//!   another process can map the same pages from its descriptor
//!   ([`ShmHandle`], [`SharedMapping`]); a handle travels to another process over a Unix
//!   socket with its descriptor ([`ShmHandle::send_over`], [`ShmHandle::receive_from`]).

mod handoff;
pub(crate) mod heap;
mod inline;
mod mapping;
mod shared;

use std::fmt;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

pub use handoff::ReceivedHandle;
pub use inline::Inline;
pub use shared::{SharedMapping, SharedMemory, ShmHandle};

use crate::error::PoolError;

/// A source of fresh buffers. Implemented by [`Inline`] and [`SharedMemory`]; the regions it
/// returns can only be made inside this crate, so the set of backends is closed.
pub trait Backend: Send + Sync + fmt::Debug {
    /// The backend's name, for reports.
    fn name(&self) -> &'static str;

    /// Fresh memory of at least `capacity` bytes (`capacity > 0`), aligned to 64 B; all
    /// zeros when `zeroed` is asked (or when the backend's memory always is).
    fn allocate(&self, capacity: usize, zeroed: bool) -> Result<Region, PoolError>;

    /// The smallest size class worth caching: below it the pool hands out a block of the
    /// global allocator of exactly the request's size, freed on drop, without calling the
    /// backend. Read once, when the pool is made (the hand-out path compares, with no call).
    fn pooled_from(&self) -> usize {
        0
    }
}

/// Memory owned by a pooled buffer, cached or handed out. Released when dropped.
pub struct Region {
    ptr: NonNull<u8>,
    capacity: usize,
    /// Whether the memory is known to be all zeros (fresh from the backend, never written).
    zeroed: bool,
    memory: Memory,
}

/// Where a region's memory lives, which says how to release it.
enum Memory {
    /// A block of the global allocator ([`heap`]), the region starting `offset` bytes into
    /// the allocation.
    Heap { offset: u8 },
    /// A private anonymous mapping.
    Mapped,
    /// A shared mapping of its own memfd.
    Shared(OwnedFd),
}

// SAFETY: a region owns its memory exclusively (no other region or pointer refers to it), so
// moving it to another thread, or sharing `&Region` (which gives only its address), is safe.
unsafe impl Send for Region {}
// SAFETY: see `Send`; `&Region` exposes no interior mutability.
unsafe impl Sync for Region {}

impl Region {
    /// The first byte.
    pub fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// Bytes the region spans.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Whether the memory is still known to be all zeros.
    pub fn is_zeroed(&self) -> bool {
        self.zeroed
    }

    /// Forgets that the memory is zeroed: it is handed out to be written.
    pub(crate) fn mark_dirty(&mut self) {
        self.zeroed = false;
    }

    /// The descriptor of a shared region.
    pub fn shared_fd(&self) -> Option<RawFd> {
        match &self.memory {
            Memory::Shared(fd) => Some(fd.as_raw_fd()),
            Memory::Heap { .. } | Memory::Mapped => None,
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        match self.memory {
            // SAFETY: `heap::allocate` returned `ptr` and `offset` for `capacity` bytes (see
            // `inline::allocate_heap`); the region, their only owner, releases them once, here.
            Memory::Heap { offset } => unsafe { heap::release(self.ptr, self.capacity, offset) },
            Memory::Mapped | Memory::Shared(_) => {
                // SAFETY: the region is a whole mapping of `capacity` bytes made by `mmap`
                // (see `inline::map_private` and `shared::map_shared`), unmapped once, here;
                // nothing refers to it any more. A failure (it cannot fail for a whole
                // mapping) would only leak address space.
                unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.capacity) };
            }
        }
    }
}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.memory {
            Memory::Heap { .. } => "heap",
            Memory::Mapped => "mapped",
            Memory::Shared(_) => "shared",
        };
        f.debug_struct("Region")
            .field("ptr", &self.ptr)
            .field("capacity", &self.capacity)
            .field("kind", &kind)
            .finish()
    }
}
