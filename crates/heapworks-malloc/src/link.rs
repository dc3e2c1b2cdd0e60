//! Free-list links, mangled (safe-linking): every list of free blocks this library keeps (the
//! thread caches' lists, the medium bins, the core heap's transfer batches, the slabs' free
//! lists and slot batches) links a block to the next through its first word, which holds the
//! next block's address XORed with the block's own.
//!
//! Invariant: a listed block's first word is `next ^ block` (`next` null at the list's end,
//! so the last block's word is its own address). A program that writes a chosen pointer into
//! a block it has freed (a use after free) thus no longer makes a later `malloc` return that
//! pointer: the list takes the written value XORed with the block's address, which the program
//! does not know without a leaked heap address. The cost is one `xor` on each push and pop.

use core::ptr::NonNull;

/// The block after `block` on its list (null: none).
///
/// # Safety
/// `block` is on a list of free blocks (its first word is a mangled link).
#[inline(always)]
pub(crate) unsafe fn next(block: NonNull<u8>) -> *mut u8 {
    // SAFETY: forwarded from the caller: the first word is the link.
    let word = unsafe { block.cast::<usize>().read() };
    // The next block's address was exposed when it was linked (`set`).
    core::ptr::with_exposed_provenance_mut(word ^ block.as_ptr().addr())
}

/// Links `block` to `next` (null: the list ends at `block`).
///
/// # Safety
/// `block` is a free block the caller owns, at least a word long.
#[inline(always)]
pub(crate) unsafe fn set(block: NonNull<u8>, next: *mut u8) {
    let word = next.expose_provenance() ^ block.as_ptr().addr();
    // SAFETY: forwarded from the caller.
    unsafe { block.cast::<usize>().write(word) };
}
