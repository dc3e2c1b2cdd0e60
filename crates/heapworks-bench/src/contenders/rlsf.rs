//! rlsf through its raw `Tlsf` heap, configured as rlsf's own global allocator configures it.

use std::alloc::Layout;
use std::ptr::{self, NonNull};

use rlsf::Tlsf;

use super::{RawHeap, SetupError};

/// The parameters of `rlsf::GlobalTlsf`: machine-word bitmaps, one list level per bit.
type Tlsf64 = Tlsf<'static, usize, usize, { usize::BITS as usize }, { usize::BITS as usize }>;

/// rlsf's TLSF heap. The `'static` pool lifetime is nominal: the pool is handed over with the
/// unsafe pointer API and outlives the heap (see [`super::Arena`]).
pub struct RlsfHeap(Tlsf64);

impl RawHeap for RlsfHeap {
    fn unclaimed() -> Self {
        Self(Tlsf::new())
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        let pool = NonNull::slice_from_raw_parts(
            NonNull::new(base).ok_or_else(|| SetupError("null region".into()))?,
            len,
        );
        // SAFETY: the pool is ours and outlives the heap (this function's contract).
        unsafe { self.0.insert_free_block_ptr(pool) }
            .map(drop)
            .ok_or_else(|| SetupError(format!("rlsf rejected a {len}-byte pool")))
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        self.0
            .allocate(layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live block of this heap allocated with `layout.align()`.
        unsafe {
            self.0
                .deallocate(NonNull::new_unchecked(ptr), layout.align())
        }
    }

    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
            return ptr::null_mut();
        };
        // SAFETY: `ptr` is a live block of this heap with the same alignment as `new_layout`.
        unsafe { self.0.reallocate(NonNull::new_unchecked(ptr), new_layout) }
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }
}
