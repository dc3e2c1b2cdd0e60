//! Secure mode (`HEAPWORKS_SECURE=1`): every free is validated, wiped and held back before
//! its memory serves again.
//!
//! What it does, beyond the default build's checks:
//! - **Every free takes the slow path**: the thread caches' lists become stashes of blocks to
//!   hand out, whose room is biased so that `free`'s fast path always refuses (see
//!   `thread::SECURE_EMPTY`); `malloc`'s fast path pops from them as usual. The fast paths'
//!   code is unchanged, so the default build pays nothing for this mode.
//! - **Validation before anything is written**: a slot must start a slot of its slab; a heap
//!   block must pass the core's `Heap::validate` (in one of the heap's regions, on a payload
//!   boundary, in use, its header and its neighbour's consistent: a double free after the
//!   quarantine, and overflows into a header, are caught there).
//! - **Zero on free, then quarantine**: a freed block's bytes are zeroed, its second word set to
//!   a per-process random secret ([`secret`]), and it waits in a FIFO of at most
//!   [`QUARANTINE_BLOCKS`] blocks and [`QUARANTINE_BYTES`] bytes. A second free while it waits
//!   finds the secret, and then the block in the FIFO (a double free: the secret alone is only
//!   a hint, as a live block can hold it by chance, see [`held_again`]); when it leaves, any
//!   byte that is no longer zero is a write after free (or an overflow from a neighbour),
//!   reported before the block serves again; it then joins the freeing thread's stash
//!   (marked, so a free of it is a double free) or goes back to its slab or the core heap.
//! - **Slabs**: a slab's slots are handed out in a random order, each ends with a canary word
//!   that requests leave unused (a request takes the slot that holds it and a word more; see
//!   `size_class::guard_slots`), checked when the slot is freed: an overflow past a slot is
//!   caught then, an underflow into the slot below when that one is freed. Emptied slabs stay
//!   resident (see [`crate::tiny`]). A freed slot is zeroed but for its canary.
//! - **Large blocks**: end against a guard page (an overflow faults at once), are never reused
//!   or resized in place, and when freed are made inaccessible but for their header page and
//!   held in a ring of 16 before they are unmapped (a second free is caught, a use faults).
//!
//! Invariants: the quarantine's lock is never held while another is taken (a block leaving it
//! is handed back after the lock is released), so it adds no lock order; the fork handlers take
//! it last. A block in the quarantine is allocated in its owner's (the heap's or the slabs')
//! eyes, zero but for the secret in its second word.

use core::ptr::NonNull;

use crate::config::secret;
use crate::lock::SpinLock;
use crate::{fault, tiny};

/// Blocks the quarantine holds at most.
pub(crate) const QUARANTINE_BLOCKS: usize = 1024;
/// Bytes the quarantine holds at most.
pub(crate) const QUARANTINE_BYTES: usize = 1 << 20;

/// A block waiting in the quarantine.
#[derive(Clone, Copy)]
struct Held {
    block: *mut u8,
    bytes: usize,
}

/// The FIFO of freed blocks: a ring of `count` entries from `first`.
struct Quarantine {
    ring: [Held; QUARANTINE_BLOCKS],
    first: usize,
    count: usize,
    bytes: usize,
}

// SAFETY: the ring names blocks owned by the allocator; nothing ties them to a thread.
unsafe impl Send for Quarantine {}

static QUARANTINE: SpinLock<Quarantine> = SpinLock::new(Quarantine {
    ring: [Held {
        block: core::ptr::null_mut(),
        bytes: 0,
    }; QUARANTINE_BLOCKS],
    first: 0,
    count: 0,
    bytes: 0,
});

impl Quarantine {
    /// Whether `block` waits in the ring (a scan of at most [`QUARANTINE_BLOCKS`] entries).
    fn holds(&self, block: *mut u8) -> bool {
        (0..self.count)
            .any(|index| self.ring[(self.first + index) % QUARANTINE_BLOCKS].block == block)
    }

    /// Adds a block; returns the oldest when the ring or the byte bound is over its limit.
    fn hold(&mut self, held: Held) -> Option<Held> {
        let released = if self.count == QUARANTINE_BLOCKS
            || (self.count > 0 && self.bytes + held.bytes > QUARANTINE_BYTES)
        {
            let oldest = self.ring[self.first];
            self.first = (self.first + 1) % QUARANTINE_BLOCKS;
            self.count -= 1;
            self.bytes -= oldest.bytes;
            Some(oldest)
        } else {
            None
        };
        self.ring[(self.first + self.count) % QUARANTINE_BLOCKS] = held;
        self.count += 1;
        self.bytes += held.bytes;
        // The block that leaves a few frees from now has waited a thousand frees and is cold:
        // its check would wait on memory (43 % of secure mode's free in python3, TUNING.md).
        let ahead = self.ring[(self.first + PREFETCH_AHEAD) % QUARANTINE_BLOCKS].block;
        // SAFETY: a prefetch reads nothing the program sees and never faults (null included).
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(ahead.cast())
        };
        released
    }
}

/// How many blocks before it leaves the quarantine a block's first line is prefetched.
const PREFETCH_AHEAD: usize = 8;

/// Frees a small or medium block (a slot or a core-heap block) in secure mode: validates
/// it, catches a second free, zeroes it and holds it back. Returns the block that leaves the
/// quarantine for it, checked unwritten and its mark cleared, with its bytes: the caller
/// gives it back to its owner.
///
/// # Safety
/// `block` is what the program passed to `free`, not NULL, and not a large block.
#[inline(always)]
pub(crate) unsafe fn free(block: NonNull<u8>) -> Option<(NonNull<u8>, usize)> {
    let bytes = match tiny::checked_slot_bytes(block) {
        Some(bytes) => bytes,
        None => crate::arena::validate(block, "free"),
    };
    // SAFETY: a valid block of `bytes >= 16` bytes (every block holds two words), which the
    // program gives up.
    unsafe {
        if held_again(block) {
            fault::double_free(block.as_ptr(), bytes);
        }
        wipe(block, bytes);
        block.cast::<usize>().add(1).write(secret());
    }
    let released = QUARANTINE.lock().hold(Held {
        block: block.as_ptr(),
        bytes,
    })?;
    // SAFETY: the block was held since it was freed, so it is still allocated.
    unsafe { Some((check_unwritten(released), released.bytes)) }
}

/// Blocks of at most this many bytes are zeroed a word at a time, inline: a call of `memset`
/// costs more instructions than the stores of a slot.
const WIPE_INLINE_MAX: usize = 128;

/// Zeroes `bytes` bytes (a multiple of 8) at `block`.
///
/// # Safety
/// The bytes are the caller's to write.
#[inline(always)]
unsafe fn wipe(block: NonNull<u8>, bytes: usize) {
    if bytes > WIPE_INLINE_MAX {
        // SAFETY: forwarded from the caller.
        return unsafe { block.write_bytes(0, bytes) };
    }
    let words = block.cast::<usize>();
    for index in 0..bytes / 8 {
        // Volatile only so that the loop is not turned back into a call of `memset`.
        // SAFETY: forwarded from the caller.
        unsafe { words.add(index).write_volatile(0) };
    }
}

/// Aborts unless `block`, a small or medium block passed to `realloc`, is live: a slot's
/// start or a core-heap block, not waiting in the quarantine.
///
/// # Safety
/// `block` is not NULL and not a large block.
pub(crate) unsafe fn check_live(block: NonNull<u8>) {
    let bytes = match tiny::slot_bytes_of(block.as_ptr()) {
        Some(_) => {
            if !tiny::is_slot_start(block) {
                fault::invalid_pointer("realloc", block.as_ptr());
            }
            tiny::usable_bytes(block)
        }
        None => crate::arena::validate(block, "realloc"),
    };
    // SAFETY: a valid block has a second word.
    if unsafe { held_again(block) } {
        fault::freed_block("realloc", block.as_ptr(), bytes);
    }
}

/// Whether `block`, a valid small or medium block, waits in the quarantine: its second word
/// holds the secret, and the ring names it. The secret is a hint that spares the scan on every
/// free; it is not proof, as a live block can hold it: a struct built on the stack and copied
/// to the heap carries its padding along, and a stack slot that one of our frames left the
/// secret in (a fuzz run found a live 648 B block so). Blocks leave the ring with the secret
/// cleared, so a block it names is one the program freed and still waits.
///
/// # Safety
/// `block` is a valid block (at least two words).
unsafe fn held_again(block: NonNull<u8>) -> bool {
    // SAFETY: forwarded from the caller.
    let hint = unsafe { block.cast::<usize>().add(1).read() } == secret();
    hint && QUARANTINE.lock().holds(block.as_ptr())
}

/// Checks that a block leaving the quarantine is as it was left (zero but for the secret in
/// its second word), reporting a write after free otherwise, and clears the secret.
///
/// # Safety
/// `held` left the quarantine: a valid block, freed by the program and held since.
unsafe fn check_unwritten(held: Held) -> NonNull<u8> {
    // SAFETY: `held.bytes` bytes of the block are ours to read and write.
    unsafe {
        let block = NonNull::new_unchecked(held.block);
        let words = core::slice::from_raw_parts(block.as_ptr().cast::<usize>(), held.bytes / 8);
        // One OR over the words (which vectorises) rather than a test per word.
        let others = words[0] | words[2..].iter().fold(0, |all, &word| all | word);
        let clean = others == 0 && words[1] == secret();
        if !clean {
            fault::written_after_free(block.as_ptr(), held.bytes);
        }
        block.cast::<usize>().add(1).write(0);
        block
    }
}

/// Holds the quarantine's lock across `fork` (prepare handler).
pub(crate) fn lock_for_fork() {
    QUARANTINE.lock_for_fork();
}

/// Releases the quarantine's lock after `fork`.
///
/// # Safety
/// Called only by the fork handlers, after [`lock_for_fork`].
pub(crate) unsafe fn unlock_after_fork() {
    // SAFETY: forwarded from the caller.
    unsafe { QUARANTINE.force_unlock() };
}

/// `si_code` of a fault on a mapped page without the access asked (Linux's `SEGV_ACCERR`).
const SEGV_ACCERR: core::ffi::c_int = 2;

/// The start and one past the end of this library's code, when it is a shared object of its
/// own (0, 0 when it is linked into the program, whose own faults must not be blamed on it).
static CODE: [core::sync::atomic::AtomicUsize; 2] =
    [const { core::sync::atomic::AtomicUsize::new(0) }; 2];
/// The program's SIGSEGV disposition before ours, restored for a fault that is not ours.
static mut PREVIOUS: core::mem::MaybeUninit<libc::sigaction> = core::mem::MaybeUninit::zeroed();

/// Installs secure mode's report of faults (from the constructor, single-threaded): a fault
/// on a protected page (a large block's guard page, or a freed large block's pages) is an
/// overflow or a use after free, and a fault inside this library's code is a wild pointer
/// passed to it; both are reported with the address and abort, like every caught misuse.
/// Any other fault goes to the disposition the program had. A program that installs its own
/// SIGSEGV handler later replaces this one.
pub(crate) fn report_faults() {
    find_own_code();
    // SAFETY: a zeroed sigaction with a handler and flags set is valid; the previous one is
    // stored for the handler, which runs only after this returns.
    unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = on_fault as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGSEGV, &action, (&raw mut PREVIOUS).cast());
    }
}

/// Records the executable segment of the shared object holding this code.
fn find_own_code() {
    extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        _data: *mut core::ffi::c_void,
    ) -> core::ffi::c_int {
        let here = on_fault as *const () as usize;
        // SAFETY: the loader passes a valid record and its program headers.
        unsafe {
            let info = &*info;
            let named = !info.dlpi_name.is_null() && *info.dlpi_name != 0;
            for index in 0..info.dlpi_phnum as usize {
                let header = &*info.dlpi_phdr.add(index);
                let start = info.dlpi_addr as usize + header.p_vaddr as usize;
                let end = start + header.p_memsz as usize;
                let code = header.p_type == libc::PT_LOAD && header.p_flags & libc::PF_X != 0;
                if code && (start..end).contains(&here) {
                    if named {
                        CODE[0].store(start, core::sync::atomic::Ordering::Relaxed);
                        CODE[1].store(end, core::sync::atomic::Ordering::Relaxed);
                    }
                    return 1;
                }
            }
        }
        0
    }
    // SAFETY: the callback only reads the records it is given.
    unsafe { libc::dl_iterate_phdr(Some(visit), core::ptr::null_mut()) };
}

extern "C" fn on_fault(
    signal: core::ffi::c_int,
    info: *mut libc::siginfo_t,
    context: *mut core::ffi::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo and ucontext for an SA_SIGINFO handler.
    let (address, code, at) = unsafe {
        let context = &*context.cast::<libc::ucontext_t>();
        (
            (*info).si_addr().cast::<u8>(),
            (*info).si_code,
            context.uc_mcontext.gregs[libc::REG_RIP as usize] as usize,
        )
    };
    if code == SEGV_ACCERR {
        fault::protected_page(address);
    }
    let ours = CODE[0].load(core::sync::atomic::Ordering::Relaxed)
        ..CODE[1].load(core::sync::atomic::Ordering::Relaxed);
    if ours.contains(&at) {
        fault::wild_pointer(address);
    }
    // Not ours: the previous disposition, and the faulting instruction runs again.
    // SAFETY: PREVIOUS was filled by `report_faults` before this handler could run.
    unsafe { libc::sigaction(signal, (&raw const PREVIOUS).cast(), core::ptr::null_mut()) };
}
