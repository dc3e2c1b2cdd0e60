//! The entry points every guest module exports, over the guest's `#[global_allocator]`:
//! `gas_alloc(size, align)`, `gas_alloc_zeroed(size, align)`, `gas_realloc(ptr, size, align,
//! new_size)` and `gas_dealloc(ptr, size, align)`, the four `GlobalAlloc` calls a Rust program
//! makes. The host keeps every block's layout, so it always passes a valid one.
//!
//! Invariant: an entry does nothing but the one allocator call, so the gas a host meters
//! around it is the allocator's (plus the same few instructions for every guest).
#![no_std]

#[cfg(feature = "programs")]
extern crate alloc;

#[cfg(feature = "programs")]
pub mod ft;
#[cfg(feature = "programs")]
pub mod nft;
#[cfg(feature = "programs")]
pub mod program;

pub use core::alloc::{GlobalAlloc, Layout};

/// Declares the guest's global allocator and exports the entry points over it, with a panic
/// handler that traps (guests build with `panic = "abort"`).
#[macro_export]
macro_rules! guest {
    ($allocator:ty = $init:expr) => {
        #[cfg(not(feature = "programs"))]
        #[global_allocator]
        static ALLOCATOR: $allocator = $init;

        // The programs build: the programs' allocator calls are marked for the host.
        #[cfg(feature = "programs")]
        #[global_allocator]
        static ALLOCATOR: $crate::program::Metered<$allocator> = $crate::program::Metered($init);

        /// The layout the host passes (always valid: the host keeps every block's layout).
        fn layout(size: usize, align: usize) -> $crate::Layout {
            // SAFETY: the host passes a power-of-two alignment and a size that fits it.
            unsafe { $crate::Layout::from_size_align_unchecked(size, align) }
        }

        #[no_mangle]
        pub extern "C" fn gas_alloc(size: usize, align: usize) -> *mut u8 {
            // SAFETY: the host never asks for size 0.
            unsafe { $crate::GlobalAlloc::alloc(&ALLOCATOR, layout(size, align)) }
        }

        #[no_mangle]
        pub extern "C" fn gas_alloc_zeroed(size: usize, align: usize) -> *mut u8 {
            // SAFETY: as for `gas_alloc`.
            unsafe { $crate::GlobalAlloc::alloc_zeroed(&ALLOCATOR, layout(size, align)) }
        }

        #[no_mangle]
        pub unsafe extern "C" fn gas_realloc(
            ptr: *mut u8,
            size: usize,
            align: usize,
            new_size: usize,
        ) -> *mut u8 {
            // SAFETY: the host passes a live block with its layout and a non-zero new size.
            unsafe { $crate::GlobalAlloc::realloc(&ALLOCATOR, ptr, layout(size, align), new_size) }
        }

        #[no_mangle]
        pub unsafe extern "C" fn gas_dealloc(ptr: *mut u8, size: usize, align: usize) {
            // SAFETY: the host passes a live block with its layout.
            unsafe { $crate::GlobalAlloc::dealloc(&ALLOCATOR, ptr, layout(size, align)) }
        }

        #[panic_handler]
        fn panic(_: &core::panic::PanicInfo) -> ! {
            core::arch::wasm32::unreachable()
        }
    };
}
