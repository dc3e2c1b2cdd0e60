//! The lol_alloc guest (see `entries`).
#![no_std]

// SAFETY: a wasm32 guest without threads.
entries::guest!(lol_alloc::AssumeSingleThreaded<lol_alloc::FreeListAllocator> = unsafe { lol_alloc::AssumeSingleThreaded::new(lol_alloc::FreeListAllocator::new()) });
