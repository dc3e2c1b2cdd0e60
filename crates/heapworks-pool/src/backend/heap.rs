//! Blocks of the global allocator aligned to 64 B: the memory of buffers too small to map.
//!
//! A block of `len` bytes is an allocation of `len + 48` bytes at malloc's own alignment
//! (16 B), the buffer starting at its first 64-byte boundary, at most 48 bytes in. Asking the
//! allocator for 64-byte alignment instead would take glibc's `posix_memalign`, which bypasses
//! its thread cache: slower than the few bytes of slack. Cost: the allocator's `malloc` and
//! `free` plus about ten instructions.

use std::alloc::{alloc, alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;

use crate::class::GRANULE;

/// The alignment asked of the global allocator (what malloc gives on 64-bit targets anyway).
const HEAP_ALIGN: usize = 16;

/// The layout of the allocation behind a block of `len` bytes; `None` if it cannot exist.
#[inline]
fn layout(len: usize) -> Option<Layout> {
    let size = len.checked_add(GRANULE - HEAP_ALIGN)?;
    Layout::from_size_align(size, HEAP_ALIGN).ok()
}

/// A block of `len > 0` bytes (zeros if `zeroed`): its 64-byte-aligned start and how far into
/// the allocation that is; `None` when the allocator refuses or the size cannot exist.
#[inline]
pub(crate) fn allocate(len: usize, zeroed: bool) -> Option<(NonNull<u8>, u8)> {
    let layout = layout(len)?;
    // SAFETY: the layout is at least 48 bytes, never zero-sized.
    let raw = unsafe {
        if zeroed {
            alloc_zeroed(layout)
        } else {
            alloc(layout)
        }
    };
    let base = NonNull::new(raw)?;
    // At most 48: the allocation is 16-byte aligned, and 48 bytes longer than `len`.
    let offset = base.align_offset(GRANULE);
    // SAFETY: `offset + len` is within the allocation (see above).
    Some((unsafe { base.add(offset) }, offset as u8))
}

/// Releases a block.
///
/// # Safety
/// `ptr` and `offset` are what [`allocate`] returned for `len`, and the block is released
/// only once.
#[inline]
pub(crate) unsafe fn release(ptr: NonNull<u8>, len: usize, offset: u8) {
    // SAFETY: `allocate` made an allocation of this layout (so it exists) `offset` bytes
    // before `ptr`; the caller releases it once.
    unsafe {
        let layout = Layout::from_size_align_unchecked(len + (GRANULE - HEAP_ALIGN), HEAP_ALIGN);
        dealloc(ptr.as_ptr().sub(usize::from(offset)), layout);
    }
}
