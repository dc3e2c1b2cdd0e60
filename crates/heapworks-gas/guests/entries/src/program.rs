//! What the guests' programs (`ft`, `nft`) share: the allocator wrapper that marks every
//! allocator call for the host's meter, and the message's way in and out.
//!
//! Invariant: every allocator call a program makes runs between `gas_mark(kind)` and
//! `gas_mark(END)`, and nothing else does.

use alloc::vec::Vec;
use core::alloc::{GlobalAlloc, Layout};

/// The marks' kinds (the host's order: malloc, calloc, realloc, free; then the end).
const MALLOC: i32 = 0;
const CALLOC: i32 = 1;
const REALLOC: i32 = 2;
const FREE: i32 = 3;
const END: i32 = 4;

#[link(wasm_import_module = "env")]
extern "C" {
    /// Tells the host an allocator call of `kind` starts (or ends, `END`).
    fn gas_mark(kind: i32);
    /// Copies the current message's payload into `[ptr, ptr + len)`.
    fn gas_read(ptr: *mut u8, len: usize);
    /// Hands the reply `[ptr, ptr + len)` to the host.
    fn gas_reply(ptr: *const u8, len: usize);
}

/// A global allocator whose every call is marked for the host.
pub struct Metered<A>(pub A);

fn marked<T>(kind: i32, call: impl FnOnce() -> T) -> T {
    // SAFETY: host imports without preconditions.
    unsafe { gas_mark(kind) };
    let result = call();
    // SAFETY: as above.
    unsafe { gas_mark(END) };
    result
}

// SAFETY: every call is forwarded unchanged to `A`.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Metered<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        marked(MALLOC, || unsafe { self.0.alloc(layout) })
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        marked(CALLOC, || unsafe { self.0.alloc_zeroed(layout) })
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded.
        marked(REALLOC, || unsafe { self.0.realloc(ptr, layout, new_size) })
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded.
        marked(FREE, || unsafe { self.0.dealloc(ptr, layout) })
    }
}

/// The current message's payload of `len` bytes, read into a fresh `Vec<u8>` (as Gear's
/// `msg::load` does).
pub fn load(len: usize) -> Vec<u8> {
    let mut payload = Vec::with_capacity(len);
    // SAFETY: the host writes `len` bytes into the vector's capacity.
    unsafe {
        gas_read(payload.as_mut_ptr(), len);
        payload.set_len(len);
    }
    payload
}

/// Hands `reply` to the host.
pub fn reply(reply: &[u8]) {
    // SAFETY: the reply is valid for its length.
    unsafe { gas_reply(reply.as_ptr(), reply.len()) };
}
