//! buddy-alloc through `NonThreadsafeAlloc`: a pool of 64 B blocks over the first eighth of
//! the region and a buddy allocator with 64 B leaves over the rest (the split talc's
//! benchmarks use).
//!
//! buddy-alloc ignores `Layout::align`. The adapter asks for `max(size, align)` bytes, which
//! buddy blocks satisfy whenever the buddy base is aligned well enough; a block that still
//! comes back misaligned is returned and the request reported as failed, so this contender
//! fails some high-alignment requests instead of handing out wrong memory.

use std::alloc::{GlobalAlloc, Layout};
use std::ptr;

use buddy_alloc::{BuddyAllocParam, FastAllocParam, NonThreadsafeAlloc};

use super::{RawHeap, SetupError};

/// Size of the blocks of buddy-alloc's fast pool, and the leaf size of its buddy part.
const BLOCK: usize = 64;

/// buddy-alloc's combined allocator, created at claim time.
pub struct BuddyAllocHeap(Option<NonThreadsafeAlloc>);

// SAFETY: the allocator's pointers all point into the region it was given; it is only used by
// one thread at a time (under the arena's lock).
unsafe impl Send for BuddyAllocHeap {}

impl BuddyAllocHeap {
    fn inner(&self) -> &NonThreadsafeAlloc {
        self.0
            .as_ref()
            .expect("buddy-alloc used before its region was claimed")
    }

    /// The request buddy-alloc actually sees: the size, grown to the alignment.
    fn request(layout: Layout) -> Layout {
        let size = layout.size().max(layout.align());
        Layout::from_size_align(size, layout.align()).expect("size stays below isize::MAX")
    }

    /// Forces buddy-alloc's lazy set-up now, so that no measured call pays for it.
    fn initialize_both_parts(&mut self) {
        for size in [BLOCK, BLOCK * 2] {
            let layout = Layout::from_size_align(size, 1).expect("valid layout");
            // SAFETY: the allocator owns its region; a successful block is freed at once.
            unsafe {
                let block = self.inner().alloc(layout);
                if !block.is_null() {
                    self.inner().dealloc(block, layout);
                }
            }
        }
    }
}

impl RawHeap for BuddyAllocHeap {
    fn unclaimed() -> Self {
        Self(None)
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        let fast_len = (len / 8) & !(BLOCK - 1);
        if fast_len < BLOCK * 16 {
            return Err(SetupError(format!(
                "buddy-alloc needs more than {len} bytes"
            )));
        }
        // SAFETY: `fast_len < len`, so the buddy part starts inside the region.
        let buddy_base = unsafe { base.add(fast_len) };
        self.0 = Some(NonThreadsafeAlloc::new(
            FastAllocParam::new(base, fast_len),
            BuddyAllocParam::new(buddy_base, len - fast_len, BLOCK),
        ));
        self.initialize_both_parts();
        Ok(())
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        let request = Self::request(layout);
        // SAFETY: the size is non-zero; the allocator was created by `claim`.
        let block = unsafe { self.inner().alloc(request) };
        if (block as usize).is_multiple_of(layout.align()) {
            return block;
        }
        // SAFETY: the misaligned block was just allocated with `request`; give it back.
        unsafe { self.inner().dealloc(block, request) };
        ptr::null_mut()
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `allocate` with the same request.
        unsafe { self.inner().dealloc(ptr, Self::request(layout)) }
    }
}
