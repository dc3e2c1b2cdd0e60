//! The threads a malloc model's calls run on: the caller's (thread 0) and up to
//! [`THREADS`]` - 1` workers, used strictly one at a time.
//!
//! Invariants: calls run on the current thread, a batch of them in order, and the caller waits
//! for their outcomes before anything else happens, so a run is as deterministic as a
//! single-threaded one while the malloc sees its blocks allocated, freed and cached by
//! different threads (a batch costs one hand-off, which is what makes thousands of calls on a
//! worker affordable). A worker starts at its first call; [`Threads::retire`] ends it (its
//! thread exits, with whatever its malloc cache holds) and joins it before returning, and a
//! later call on it starts a new one. Calls carry addresses, not pointers, so they can cross
//! threads; errno, which is per thread, is set to [`ERRNO_UNSET`] before each call and read
//! after it on the thread that made it.

use std::ffi::{c_int, c_void};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use super::exit_work::{self, ExitWork, EXIT_FREES_MAX};
use super::CApi;

/// The threads a run may use: the caller's and two workers.
pub const THREADS: usize = 3;
/// errno before every call, so a call that sets it is told from one that does not.
pub(crate) const ERRNO_UNSET: c_int = 0x7e57;
/// `*memptr` before every `posix_memalign`, so a failing call that writes it is caught.
pub(crate) const MEMPTR_UNSET: usize = 0xdead_0000;

/// One call into the malloc API, with addresses as integers (0 for NULL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Call {
    Malloc {
        size: usize,
    },
    Calloc {
        count: usize,
        size: usize,
    },
    Realloc {
        addr: usize,
        size: usize,
    },
    ReallocArray {
        addr: usize,
        count: usize,
        size: usize,
    },
    Free {
        addr: usize,
    },
    FreeSized {
        addr: usize,
        size: usize,
    },
    FreeAlignedSized {
        addr: usize,
        align: usize,
        size: usize,
    },
    PosixMemalign {
        align: usize,
        size: usize,
    },
    AlignedAlloc {
        align: usize,
        size: usize,
    },
    Memalign {
        align: usize,
        size: usize,
    },
    Valloc {
        size: usize,
    },
    Pvalloc {
        size: usize,
    },
    UsableSize {
        addr: usize,
    },
    /// Not a malloc call: the thread will free these blocks (0: none) and run probes when it
    /// exits (see [`exit_work`]).
    AtExit {
        frees: [usize; EXIT_FREES_MAX],
    },
}

/// What a call gave back: its value (a block's address, `*memptr` for `posix_memalign`, a
/// usable size, 0 for the frees), `posix_memalign`'s status (0 for the others) and errno
/// after it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub value: usize,
    pub status: c_int,
    pub errno: c_int,
}

/// Makes `call` on the calling thread.
fn perform(api: &CApi, call: Call) -> Outcome {
    let block = std::ptr::with_exposed_provenance_mut::<c_void>;
    set_errno(ERRNO_UNSET);
    let mut status = 0;
    // SAFETY: the model only makes calls the C contract allows: every address it passes is
    // NULL or a block this malloc returned that is still live (and is not used again once
    // freed or reallocated), and sizes passed to the sized frees are those asked for.
    let value = unsafe {
        match call {
            Call::Malloc { size } => (api.malloc)(size).expose_provenance(),
            Call::Calloc { count, size } => (api.calloc)(count, size).expose_provenance(),
            Call::Realloc { addr, size } => (api.realloc)(block(addr), size).expose_provenance(),
            Call::ReallocArray { addr, count, size } => {
                (api.reallocarray)(block(addr), count, size).expose_provenance()
            }
            Call::Free { addr } => {
                (api.free)(block(addr));
                0
            }
            Call::FreeSized { addr, size } => {
                (api.free_sized)(block(addr), size);
                0
            }
            Call::FreeAlignedSized { addr, align, size } => {
                (api.free_aligned_sized)(block(addr), align, size);
                0
            }
            Call::PosixMemalign { align, size } => {
                let mut memptr = std::ptr::without_provenance_mut(MEMPTR_UNSET);
                status = (api.posix_memalign)(&mut memptr, align, size);
                memptr.expose_provenance()
            }
            Call::AlignedAlloc { align, size } => {
                (api.aligned_alloc)(align, size).expose_provenance()
            }
            Call::Memalign { align, size } => (api.memalign)(align, size).expose_provenance(),
            Call::Valloc { size } => (api.valloc)(size).expose_provenance(),
            Call::Pvalloc { size } => (api.pvalloc)(size).expose_provenance(),
            Call::UsableSize { addr } => (api.malloc_usable_size)(block(addr)),
            Call::AtExit { frees } => {
                exit_work::run_at_exit(ExitWork { api: *api, frees });
                0
            }
        }
    };
    Outcome {
        value,
        status,
        errno: errno(),
    }
}

fn set_errno(value: c_int) {
    // SAFETY: `__errno_location` returns the calling thread's errno, valid for its lifetime.
    unsafe { *libc::__errno_location() = value };
}

fn errno() -> c_int {
    // SAFETY: as in `set_errno`.
    unsafe { *libc::__errno_location() }
}

/// A worker thread: it makes the calls it receives, one at a time, until its sender is dropped.
struct Worker {
    calls: SyncSender<Vec<Call>>,
    outcomes: Receiver<Vec<Outcome>>,
    thread: JoinHandle<()>,
}

/// Makes `calls` in order on the calling thread.
fn perform_all(api: &CApi, calls: &[Call]) -> Vec<Outcome> {
    calls.iter().map(|&call| perform(api, call)).collect()
}

impl Worker {
    fn start(api: CApi, index: usize) -> Worker {
        let (calls, incoming) = sync_channel::<Vec<Call>>(1);
        let (reply, outcomes) = sync_channel::<Vec<Outcome>>(1);
        let thread = std::thread::Builder::new()
            .name(format!("malloc-model-{index}"))
            .spawn(move || {
                for batch in incoming {
                    if reply.send(perform_all(&api, &batch)).is_err() {
                        break;
                    }
                }
            })
            .expect("a worker thread starts");
        Worker {
            calls,
            outcomes,
            thread,
        }
    }

    fn call_all(&self, calls: Vec<Call>) -> Vec<Outcome> {
        self.calls.send(calls).expect("the worker is running");
        self.outcomes.recv().expect("the worker answers")
    }

    fn stop(self) {
        drop(self.calls);
        self.thread.join().expect("the worker exits cleanly");
    }
}

/// The caller's thread and the workers, one of them current.
pub(crate) struct Threads {
    api: CApi,
    current: usize,
    /// Worker `i` is thread `i + 1`.
    workers: [Option<Worker>; THREADS - 1],
    /// Per thread: the serial number of the OS thread that runs it (or last ran it), 0 for the
    /// caller's; every worker started gets a new one.
    serials: [u64; THREADS],
    started: u64,
}

impl Threads {
    pub fn new(api: CApi) -> Threads {
        Threads {
            api,
            current: 0,
            workers: Default::default(),
            serials: [0; THREADS],
            started: 0,
        }
    }

    /// The serial number of the OS thread that made the last call on the current thread.
    pub fn current_serial(&self) -> u64 {
        self.serial_of(self.current)
    }

    /// The thread the next call runs on.
    pub fn current(&self) -> usize {
        self.current
    }

    /// Whether `thread` is a worker that runs.
    pub fn is_running(&self, thread: usize) -> bool {
        thread > 0 && self.workers[thread - 1].is_some()
    }

    /// The serial number of the OS thread that runs (or last ran) `thread`.
    pub fn serial_of(&self, thread: usize) -> u64 {
        self.serials[thread]
    }

    /// Makes `thread` (below [`THREADS`]) the current one.
    pub fn switch_to(&mut self, thread: usize) {
        assert!(thread < THREADS, "no thread {thread}");
        self.current = thread;
    }

    /// Ends worker `thread` if it runs (whatever its malloc cache holds goes with its exit);
    /// the caller's thread becomes current if it was. Returns whether a worker ended.
    pub fn retire(&mut self, thread: usize) -> bool {
        assert!((1..THREADS).contains(&thread), "no worker {thread}");
        if self.current == thread {
            self.current = 0;
        }
        match self.workers[thread - 1].take() {
            Some(worker) => {
                worker.stop();
                true
            }
            None => false,
        }
    }

    /// Makes `call` on the current thread (starting its worker if needed) and waits for it.
    pub fn call(&mut self, call: Call) -> Outcome {
        if self.current == 0 {
            return perform(&self.api, call);
        }
        self.call_all(vec![call])[0]
    }

    /// Makes `calls` in order on the current thread (starting its worker if needed) and waits
    /// for them.
    pub fn call_all(&mut self, calls: Vec<Call>) -> Vec<Outcome> {
        if self.current == 0 {
            return perform_all(&self.api, &calls);
        }
        let index = self.current;
        if self.workers[index - 1].is_none() {
            self.started += 1;
            self.serials[index] = self.started;
            self.workers[index - 1] = Some(Worker::start(self.api, index));
        }
        self.workers[index - 1]
            .as_ref()
            .expect("the worker was just started")
            .call_all(calls)
    }

    /// Makes `call` on the caller's thread, whichever is current: for queries, such as
    /// `malloc_usable_size`, whose answer does not depend on the thread asking.
    pub fn call_here(&self, call: Call) -> Outcome {
        perform(&self.api, call)
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        for worker in self.workers.iter_mut().filter_map(Option::take) {
            // A worker that panicked has already reported it; an unwinding model must not
            // panic again here.
            if std::thread::panicking() {
                drop(worker.calls);
                let _ = worker.thread.join();
            } else {
                worker.stop();
            }
        }
    }
}
