//! Misuse reports: a fault the library detects in the program (a block freed twice, a pointer
//! it never handed out) is named, with its address and the block's size, on standard error,
//! and the process aborts. A caught misuse never continues: the heap's state after it would
//! be the program's corruption, handed out again.
//!
//! Invariants: a report is formatted into a stack buffer and written with `write(2)`; nothing
//! allocates or takes a lock, so a report is safe wherever a fault is found (a lock held or
//! not).

use core::fmt::Write;

use crate::stats::StackText;

/// Reports a block freed while it already waits in a free list, and aborts.
#[cold]
pub(crate) fn double_free(block: *mut u8, bytes: usize) -> ! {
    report(format_args!("double free of {block:p} ({bytes} B block)"))
}

/// Reports a freed block whose bytes changed while it waited in the quarantine (a write after
/// free, or an overflow from its neighbour), and aborts.
#[cold]
pub(crate) fn written_after_free(block: *mut u8, bytes: usize) -> ! {
    report(format_args!(
        "write after free (or overflow into a freed block) at {block:p} ({bytes} B block)"
    ))
}

/// Reports a heap block whose header (or its neighbour's) is not what the heap wrote: an
/// overflow from the block before, or a pointer that is not a block; aborts.
#[cold]
pub(crate) fn corrupted(what: &str, block: *mut u8) -> ! {
    report(format_args!(
        "{what} of {block:p}: its header is corrupt (an overflow into it?)"
    ))
}

/// Reports a free block whose list link no longer names a block of its list (an overflow
/// from its neighbour, or a write after free), and aborts.
#[cold]
pub(crate) fn corrupted_link(block: *mut u8) -> ! {
    report(format_args!(
        "free list corrupt at {block:p}: its link was overwritten (an overflow or a write after free?)"
    ))
}

/// Reports a slot's canary overwritten (secure mode), and aborts.
#[cold]
pub(crate) fn overflow(block: *mut u8, bytes: usize) -> ! {
    report(format_args!(
        "an overflow past the end of {block:p} ({bytes} B block): the canary after it was overwritten"
    ))
}

/// Reports a fault on a protected page (secure mode's guard pages and freed large blocks),
/// and aborts.
#[cold]
pub(crate) fn protected_page(address: *mut u8) -> ! {
    report(format_args!(
        "access to {address:p} faulted on a protected page: an overflow into a large block's \
         guard page, or a use of a freed large block"
    ))
}

/// Reports a fault inside the allocator's code (secure mode): a pointer that is not a block
/// was passed to it, and aborts.
#[cold]
pub(crate) fn wild_pointer(address: *mut u8) -> ! {
    report(format_args!(
        "reading {address:p} faulted inside malloc: a pointer that is not a block was passed to \
         free, realloc or malloc_usable_size (or the heap is corrupt)"
    ))
}

/// Reports a block resized (or asked its size) after it was freed, and aborts.
#[cold]
pub(crate) fn freed_block(what: &str, block: *mut u8, bytes: usize) -> ! {
    report(format_args!(
        "{what} of {block:p}, freed before ({bytes} B block)"
    ))
}

/// Reports a pointer freed (or resized) that is not a block of this library, and aborts.
#[cold]
pub(crate) fn invalid_pointer(what: &str, ptr: *mut u8) -> ! {
    report(format_args!(
        "{what} of {ptr:p}, which is not a block of this malloc"
    ))
}

/// Reports a `free` of a pointer into a slot area that starts no slot (an interior or
/// misaligned pointer), and aborts.
#[cold]
#[inline(never)]
pub(crate) extern "C" fn not_a_slot_start(ptr: *mut u8) -> ! {
    invalid_pointer("free", ptr)
}

fn report(fault: core::fmt::Arguments<'_>) -> ! {
    let mut text = StackText::new();
    // Writing into a StackText never fails (it drops what does not fit).
    let _ = writeln!(text, "heapworks: {fault}");
    text.write_to(libc::STDERR_FILENO);
    // SAFETY: abort takes no arguments and does not return.
    unsafe { libc::abort() }
}
