//! The per-thread side of the shim: the reentrancy guard, errno preservation, and the chunk of
//! the raw file this thread writes its records into.
//!
//! Invariants:
//! - The state lives in initial-exec TLS provided by `thread_state.c`: reaching it never
//!   allocates. All-zero bytes are a valid state (a thread not seen yet).
//! - `busy` is [`IN_HOOK`] while this thread is inside a hook and [`SUPPRESSED`] while the shim
//!   calls something that may allocate (dlsym, pthread_atfork's registration): a malloc-family
//!   call made meanwhile goes straight to glibc unrecorded. Calls arriving [`IN_HOOK`] are
//!   counted in the header's `reentered`, which the tests require to stay 0: the hooks
//!   themselves never allocate.
//! - A state whose `generation` differs from [`recorder::generation`] was inherited through
//!   `fork`: its chunk belongs to the parent's file and is dropped before the next record.
//! - `cursor..end` is the unwritten part of the current chunk, both null when there is none.
//! - errno seen by the program is exactly what glibc left: the shim's own system calls (only
//!   on slow paths) happen between a save and a restore.

use crate::raw::{RawOp, Record, RECORD_BYTES};
use crate::recorder;
use core::ptr;
use core::sync::atomic::Ordering;

/// First chunk a thread reserves; each next one doubles, up to [`LARGEST_CHUNK`]. Small first
/// chunks keep short-lived threads from leaving large holes in the file.
const FIRST_CHUNK: u64 = 64 << 10;
const LARGEST_CHUNK: u64 = 4 << 20;

const IN_HOOK: u32 = 1;
const SUPPRESSED: u32 = 2;

#[repr(C)]
struct ThreadState {
    busy: u32,
    /// Thread index plus one; 0 until the first record.
    thread_plus_one: u32,
    generation: u64,
    cursor: *mut Record,
    end: *mut Record,
    next_chunk: u64,
}

extern "C" {
    fn heapworks_capture_thread_state() -> *mut ThreadState;
    fn heapworks_capture_thread_state_bytes() -> usize;
}

/// Whether [`ThreadState`] fits the TLS bytes `thread_state.c` reserves.
pub fn state_fits() -> bool {
    // SAFETY: a C function without arguments that returns a constant.
    let bytes = unsafe { heapworks_capture_thread_state_bytes() };
    core::mem::size_of::<ThreadState>() <= bytes
}

fn state() -> *mut ThreadState {
    // SAFETY: returns the address of this thread's TLS bytes, valid for the thread's lifetime.
    unsafe { heapworks_capture_thread_state() }
}

/// Runs `work` with this thread's hooks forwarding to glibc unrecorded.
pub fn without_recording<R>(work: impl FnOnce() -> R) -> R {
    let state = state();
    // SAFETY: this thread's own state; no reference to it outlives these statements.
    let was_busy = unsafe { core::mem::replace(&mut (*state).busy, SUPPRESSED) };
    let result = work();
    // SAFETY: as above.
    unsafe { (*state).busy = was_busy };
    result
}

/// A call being recorded by this thread; dropping it leaves the hook.
pub struct Hook {
    state: *mut ThreadState,
}

impl Hook {
    /// Enters a hook: `None` when the thread is already inside one, or nothing is recorded.
    pub fn enter() -> Option<Hook> {
        let state = state();
        // SAFETY: this thread's own state, touched only by this thread.
        match unsafe { (*state).busy } {
            0 => {}
            IN_HOOK => {
                recorder::count_reentered();
                return None;
            }
            _ => return None,
        }
        // SAFETY: as above.
        unsafe { (*state).busy = IN_HOOK };
        let hook = Hook { state };
        let ready = recorder::is_ready() || with_errno_kept(recorder::ready);
        ready.then_some(hook)
    }

    /// Writes `call` as this thread's next record, leaving errno as it was.
    pub fn record(&self, call: &Call) {
        match self.next_record() {
            // SAFETY: `slot` is an unwritten record of this thread's chunk.
            Some(slot) => unsafe { write_record(slot, call, self.thread_index()) },
            None => recorder::count_dropped(),
        }
    }

    fn thread_index(&self) -> u32 {
        // SAFETY: this thread's own state; `next_record` assigned the index.
        unsafe { (*self.state).thread_plus_one - 1 }
    }

    fn next_record(&self) -> Option<*mut Record> {
        // SAFETY: this thread's own state, and no other reference to it is alive.
        let state = unsafe { &mut *self.state };
        if state.thread_plus_one == 0 || state.generation != recorder::generation() {
            *state = ThreadState {
                busy: IN_HOOK,
                thread_plus_one: recorder::next_thread() + 1,
                generation: recorder::generation(),
                cursor: ptr::null_mut(),
                end: ptr::null_mut(),
                next_chunk: FIRST_CHUNK,
            };
        }
        if state.cursor == state.end {
            let bytes = state.next_chunk;
            let chunk = with_errno_kept(|| recorder::reserve_chunk(bytes))?;
            state.cursor = chunk;
            // SAFETY: the chunk maps `next_chunk` bytes, a whole number of records.
            state.end = unsafe { chunk.add((state.next_chunk / RECORD_BYTES as u64) as usize) };
            state.next_chunk = (state.next_chunk * 2).min(LARGEST_CHUNK);
        }
        let slot = state.cursor;
        // SAFETY: cursor < end within the chunk, so cursor + 1 <= end.
        state.cursor = unsafe { slot.add(1) };
        Some(slot)
    }
}

impl Drop for Hook {
    fn drop(&mut self) {
        // SAFETY: this thread's own state.
        unsafe { (*self.state).busy = 0 };
    }
}

/// The arguments and outcome of one call; `seq` is taken by the hook at the point that orders
/// the call (see `raw.rs`).
pub struct Call {
    pub op: RawOp,
    pub seq: u64,
    pub seq_release: u64,
    pub ptr: usize,
    pub ret: usize,
    pub size: usize,
    pub arg: usize,
}

/// # Safety
/// `slot` must be a writable, unwritten record of the calling thread's chunk.
unsafe fn write_record(slot: *mut Record, call: &Call, thread: u32) {
    // SAFETY: the caller guarantees `slot` is writable and ours; fields are plain integers
    // except `op`, which is stored last (Release) so a record is complete once `op` is set.
    unsafe {
        ptr::addr_of_mut!((*slot).seq).write(call.seq);
        ptr::addr_of_mut!((*slot).seq_release).write(call.seq_release);
        ptr::addr_of_mut!((*slot).ptr).write(call.ptr as u64);
        ptr::addr_of_mut!((*slot).ret).write(call.ret as u64);
        ptr::addr_of_mut!((*slot).size).write(call.size as u64);
        ptr::addr_of_mut!((*slot).arg).write(call.arg as u64);
        ptr::addr_of_mut!((*slot).thread).write(thread);
        (*slot).op.store(call.op as u32, Ordering::Release);
    }
}

/// Runs `work`, which may make system calls, and puts errno back as it was. Only the slow
/// paths (starting up, mapping a new chunk) need it: writing a record makes no call.
fn with_errno_kept<R>(work: impl FnOnce() -> R) -> R {
    // SAFETY: __errno_location returns this thread's errno, always valid.
    let errno = unsafe { libc::__errno_location() };
    // SAFETY: as above.
    let saved = unsafe { *errno };
    let result = work();
    // SAFETY: as above.
    unsafe { *errno = saved };
    result
}
