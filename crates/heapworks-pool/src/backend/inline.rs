//! The inline backend: buffers in this process's own memory.
//!
//! Below [`Inline::map_threshold`] a buffer comes from the global allocator (aligned to 64 B;
//! zeroed ones from `alloc_zeroed`, which the C allocator serves from fresh pages when it
//! can); from the threshold on it is a private anonymous mapping of whole pages, zero from
//! the kernel at no cost, and from 2 MiB on the mapping is advised `MADV_HUGEPAGE` when
//! [`Inline::huge_pages`] is set, so that the kernel may back it with transparent huge pages
//! (one fault per 2 MiB instead of per 4 KiB where THP is in `madvise` or `always` mode; a
//! kernel without THP refuses the advice, which is then ignored).

use super::mapping::{self, page_rounded, HUGE_PAGE};
use super::{heap, Backend, Memory, Region};
use crate::error::PoolError;

/// Buffers in this process: the heap for small ones, private mappings for large ones.
#[derive(Debug, Clone, Copy)]
pub struct Inline {
    /// Buffers of this many bytes and more are mapped with `mmap` (default 256 KiB).
    pub map_threshold: usize,
    /// Ask for transparent huge pages on mappings of 2 MiB and more (default on).
    pub huge_pages: bool,
    /// Cache heap buffers too (default off: buffers below `map_threshold` then come from the
    /// process allocator on every request and go back to it on drop, since its own free
    /// lists reuse small blocks faster than the pool's locks: on `bench --pool`, 4 B through
    /// the pool cost about 95 ns more than a `Vec`, 16 KiB about 40 ns more).
    pub pool_heap_buffers: bool,
}

impl Default for Inline {
    fn default() -> Self {
        Self {
            map_threshold: 256 << 10,
            huge_pages: true,
            pool_heap_buffers: false,
        }
    }
}

impl Backend for Inline {
    fn name(&self) -> &'static str {
        "inline"
    }

    fn allocate(&self, capacity: usize, zeroed: bool) -> Result<Region, PoolError> {
        if capacity < self.map_threshold {
            allocate_heap(capacity, zeroed)
        } else {
            map_private(capacity, self.huge_pages)
        }
    }

    fn pooled_from(&self) -> usize {
        if self.pool_heap_buffers {
            0
        } else {
            self.map_threshold
        }
    }
}

/// A heap region of `capacity` bytes.
fn allocate_heap(capacity: usize, zeroed: bool) -> Result<Region, PoolError> {
    let Some((ptr, offset)) = heap::allocate(capacity, zeroed) else {
        return Err(PoolError::OutOfMemory { len: capacity });
    };
    Ok(Region {
        ptr,
        capacity,
        zeroed,
        memory: Memory::Heap { offset },
    })
}

/// A private anonymous mapping of `capacity` bytes rounded up to whole pages.
fn map_private(capacity: usize, huge_pages: bool) -> Result<Region, PoolError> {
    let len = page_rounded(capacity).ok_or(PoolError::TooLarge { len: capacity })?;
    let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    let ptr = mapping::map(len, flags, -1, 0).map_err(|error| PoolError::os("mmap", len, error))?;
    if huge_pages && len >= HUGE_PAGE {
        mapping::advise_huge(ptr, len);
    }
    Ok(Region {
        ptr,
        capacity: len,
        zeroed: true,
        memory: Memory::Mapped,
    })
}
