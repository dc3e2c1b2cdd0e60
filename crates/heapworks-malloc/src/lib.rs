//! # heapworks-malloc
//!
//! A drop-in C `malloc` over the [`heapworks`] engine: build `libheapworks_malloc.so` and run a
//! program with `LD_PRELOAD=.../libheapworks_malloc.so`, or link the `.so` or the static
//! `libheapworks_malloc.a`. `include/heapworks.h` declares the exports: `malloc`, `free`,
//! `calloc`, `realloc`, `reallocarray`, `posix_memalign`, `aligned_alloc`, `memalign`,
//! `valloc`, `pvalloc`, `malloc_usable_size`, `free_sized` and `free_aligned_sized`. C++
//! `operator new`/`delete` are not exported: libstdc++'s call `malloc`/`free`, which resolve to
//! these (the test suite checks it with a C++ program).
//!
//! ## Design (one module per idea)
//!
//! | module | idea |
//! |---|---|
//! | [`size_class`] | 63 classes one 16 B granule apart, up to 1 KiB blocks; a block's header names its class |
//! | [`tiny`] | headerless slots in 64 KiB slabs of a reservation of their own, for requests up to 128 B (every 16 B) and, once a class has carved 16 KiB of core blocks, for its requests up to 376 B; a slot's address names its class |
//! | [`tcache`] | per-thread lists of free small blocks in initial-exec TLS; no lock, no atomic on the fast paths |
//! | [`medium`] | per-thread bins of free medium blocks (1 KiB to 256 KiB), exact sizes, bounded bytes |
//! | [`central`] | one `heapworks::Heap` behind a spin lock, grown by committing `mmap` reservations (never `brk`; as large as the address-space limit allows, and given back when a mapping is refused); per-class transfer batches between thread caches |
//! | [`large`] | blocks over 256 KiB: whole-page mappings, size in a tagged header word, `mremap` realloc, a per-thread slot and a bounded shared reuse cache |
//! | [`api`] | the exported C functions: routing by size, errno, glibc's edge cases |
//! | [`link`] | free-list links mangled with the block's address (safe-linking), for every list of free blocks |
//! | [`os`] | mmap, mprotect, madvise, mremap, munmap as raw system calls; errno, write(2): nothing that allocates |
//! | `panic` | built with `panic = "abort"` (profile `malloc`, the shipped library): `no_std`, a panic writes its message with write(2) and aborts |
//! | [`lock`] | the spin lock with backoff (never libc's locks) |
//! | [`fork`] | `pthread_atfork` handlers holding every lock across `fork` (after stdio's list lock, as glibc orders its own); none in a single-threaded process |
//! | [`secure`] | `HEAPWORKS_SECURE=1`: every free validated, zeroed and quarantined; random slot order; guard pages after large blocks |
//! | [`config`] | environment settings (`HEAPWORKS_STATS`, `HEAPWORKS_LARGE_CACHE_MIB`, `HEAPWORKS_TCACHE_KIB`) |
//! | [`stats`] | slow-path counters, printed at exit with `HEAPWORKS_STATS=1` |
//! | [`fault`] | misuse caught (double free, foreign pointer): a message naming the fault and the address, then abort |
//!
//! `malloc(n)` for `128 < n <= 1016` pops the head of the calling thread's list for `n`'s class
//! (core blocks, joined by slots once a class up to 384 B is promoted), and for `n <= 128` the head
//! of its list of `n`'s slot class (slots of `n` rounded up to 16 B, with no header). `free(p)`
//! first compares `p` with the end of the slots' reservation, which lies below every other mapping:
//! below it are NULL and the slots (whose class the address gives); otherwise it reads the word
//! before `p`: if it carries `heapworks::EMBEDDER_TAG` the block is a large mapping, otherwise it
//! is the core's header, whose size gives the class. Either way the block is pushed on the calling
//! thread's list (whichever thread allocated it). Full lists grow within a per-thread budget or
//! send half back to the central heap, left linked as the class's transfer batch if the heap has
//! room (at most 256 KiB of them in all); empty lists take that batch whole, or a batch of fresh
//! blocks. Slots trade with the slabs the same way, under the slabs' own lock: a flushed slot list
//! waits whole as its area's batch (up to 128 KiB of them per area) for the next refill of any
//! thread. A thread that exits gives its whole cache back. Medium requests (up to 256 KiB) first
//! look in the thread's medium bins, which freed medium blocks join (within an eighth of the
//! thread's budget), then go to the central heap under its lock, as aligned ones do; `realloc`
//! grows heap blocks into a free neighbour in place and shrinks them by splitting. A freed large
//! mapping of up to 32 MiB waits in its thread's slot for the next large request it fits.
//!
//! Memory goes back to the OS lazily and bounded: each thread keeps at most its cache budget
//! (512 KiB by default; up to 1.375 times that once its medium share has grown, see `medium`;
//! one medium block beyond it at most) and one large mapping of at most
//! 32 MiB, and gives them back when it exits; other freed large mappings wait in a shared cache
//! of at most 64 MiB (configurable) and the oldest are unmapped beyond it; a reused mapping much
//! longer than needed is cut down to size. When the central heap grows, cached mappings of as
//! many bytes are unmapped (the shared cache's oldest, then the growing thread's slot): a
//! program whose heap grows is not reusing them, and their pages would add to its peak. Inside the central heap's segments, after every
//! 64 MiB freed, the whole pages of free chunks' unused spans of at least 256 KiB are discarded
//! with `madvise(MADV_DONTNEED)` (the core names them with
//! `Heap::for_each_unused_span`). A slab whose slots all come back is kept for reuse if fewer
//! than four others of its class are, else its pages are discarded the same way.
//!
//! The shipped library is built with cargo's `malloc` profile (release with
//! `panic = "abort"`: `cargo build --profile malloc -p heapworks-malloc`, giving
//! `target/malloc/libheapworks_malloc.so` and `.a`), in which the crate is `no_std` and needs
//! only libc: no unwinder, backtrace printer or libgcc_s in the processes it serves. Profiles
//! that unwind (dev, release, test) link std, so the crate builds with the rest of the
//! workspace and its rlib links into the in-process tests.
//!
//! Only x86-64 Linux with glibc is supported (the TLS access is written in assembly).
#![cfg_attr(panic = "abort", no_std)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, clippy::undocumented_unsafe_blocks)]
// The design table links the private modules it describes: read it with
// `cargo doc --document-private-items`; in the public docs those names are plain text.
#![allow(rustdoc::private_intra_doc_links)]

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
compile_error!("heapworks-malloc supports x86-64 Linux only");

mod address_map;
pub mod api;
mod arena;
mod central;
mod config;
mod fault;
mod fork;
mod large;
mod link;
mod lock;
mod medium;
mod os;
#[cfg(panic = "abort")]
mod panic;
mod secure;
mod size_class;
mod stats;
mod thread;
mod tiny;

pub use api::{
    aligned_alloc, calloc, free, free_aligned_sized, free_sized, malloc, malloc_usable_size,
    memalign, posix_memalign, pvalloc, realloc, reallocarray, valloc,
};

/// Runs when the library is loaded: reads the environment, creates the thread-exit key early
/// (so it gets a low number, whose value glibc stores without allocating) and registers the
/// fork handlers.
extern "C" fn on_load() {
    config::load();
    if config::secure() {
        secure::report_faults();
    }
    thread::exit_key();
    fork::register();
}

/// Runs at exit: prints the statistics if asked to.
extern "C" fn on_exit() {
    if config::stats_at_exit() {
        stats::print_report();
    }
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

#[used]
#[link_section = ".fini_array"]
static ON_EXIT: extern "C" fn() = on_exit;
