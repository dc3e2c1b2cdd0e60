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
//! ## Design: layers, one way
//!
//! Each layer imports only the ones above it in this table (the leaves nothing but each
//! other); backends take what they need as arguments and never touch thread-local state or
//! each other.
//!
//! | layer | module | idea |
//! |---|---|---|
//! | leaf | [`os`] | mmap, mprotect, madvise, mremap, munmap as raw system calls; errno, write(2): nothing that allocates |
//! | leaf | [`lock`] | the spin lock with backoff (never libc's locks) |
//! | leaf | [`config`] | environment settings (`HEAPWORKS_STATS`, `HEAPWORKS_LARGE_CACHE_MIB`, `HEAPWORKS_TCACHE_KIB`, `HEAPWORKS_SECURE`) |
//! | leaf | [`stats`] | slow-path counters, printed at exit with `HEAPWORKS_STATS=1` (kept only then) |
//! | leaf | [`size_class`] | every numbering constant: classes one 16 B granule apart up to 1 KiB, tiny slot classes, slot areas, thread-cache lists, and the converters between them |
//! | leaf | [`link`] | free-list links mangled with the block's address (safe-linking), for every list of free blocks |
//! | leaf | [`fault`] | misuse caught (double free, foreign pointer): a message naming the fault and the address, then abort |
//! | leaf | [`address_map`] | which arena owns a core-heap address: 2 MiB granules, two loads, no lock |
//! | backend | [`core_heap`] | one arena's `heapworks::Heap`, grown by committing `mmap` reservations (never `brk`; as large as the address-space limit allows); per-class transfer batches |
//! | backend | [`tiny`] | headerless slots in 16 KiB slabs of a reservation of their own (every request up to 128 B; a class up to 384 B once it has carved 16 KiB of core blocks); a slot's address names its class and its slab's arena |
//! | backend | [`large`] | blocks over 256 KiB: whole-page mappings, size in a tagged header word, `mremap` realloc, a per-thread slot (passed in) and a bounded shared reuse cache |
//! | backend | [`arena`] | the memory a thread owns: a core heap and a set of slabs behind one lock, and a lock-free list of the blocks other threads freed into it; claimed by a thread (after its first MiB, which a starter arena serves), abandoned at exit, adopted by the next thread |
//! | policy | [`medium`] | per-thread bins of free medium blocks (1 KiB to 256 KiB), exact sizes, bounded bytes |
//! | policy | [`secure`] | `HEAPWORKS_SECURE=1`: every free validated, zeroed and quarantined; random slot order; guard pages after large blocks |
//! | owner | [`thread`] | the per-thread cache in initial-exec TLS: lists with no lock and no atomic on the fast paths, its arena, its start and exit, where each block that leaves it goes |
//! | top | [`api`] | the exported C functions: routing by size, errno, glibc's edge cases |
//! | top | [`fork`] | `pthread_atfork` handlers holding every lock across `fork` (after stdio's list lock, as glibc orders its own); none in a single-threaded process |
//! | top | `panic` | built with `panic = "abort"` (profile `malloc`, the shipped library): `no_std`, a panic writes its message with write(2) and aborts |
//!
//! ## Routing: size → path → backend, and what each fast path costs
//!
//! ```text
//! malloc(n)
//!   n <= SLOT_MAX_REQUEST (128)      thread list of n's slot class ─┐ pop: 15 instructions,
//!   n <= SMALL_MAX_REQUEST (1016)    thread list of n's class ──────┘ no lock, no atomic
//!       empty list: collect the arena's remote frees (one atomic exchange), then refill
//!       under the thread's own arena lock: transfer batch, fresh core blocks, or slots
//!   n <= LARGE_MIN (256 KiB)         thread's medium bins (no lock), else own arena's core
//!                                    heap under its lock
//!   n >  LARGE_MIN                   thread's large slot (no lock), shared cache (its lock),
//!                                    or a fresh mapping
//! free(p)
//!   p below the slot region's end    slot: push on the thread's list of its area
//!   word before p tagged             large: thread's slot / shared cache / munmap
//!   else core block, class <= 64     push on the thread's list of its class: 22 instructions
//!                                    with the double-free mark, no lock, no atomic
//!   else medium                      thread's medium bins
//!   a full list or bins send blocks home: own arena under its lock, any other arena's onto
//!   its remote list (one compare-and-swap per chain); the owner collects them
//! ```
//!
//! Every lock is per arena (taken by its owner alone on a steady path: uncontended), or for a
//! rare event (a slab started, the shared large cache, secure mode's quarantine); no lock is
//! held while another is taken. The constants' measurements are in `TUNING.md`.
//!
//! Memory goes back to the OS lazily and bounded: each thread keeps at most its cache budget
//! (512 KiB by default; up to 1.375 times that once its medium share has grown, see `medium`;
//! one medium block beyond it at most) and one large mapping of at most 32 MiB, and gives them
//! back when it exits; other freed large mappings wait in a shared cache of at most 64 MiB
//! (configurable) and the oldest are unmapped beyond it. When a core heap grows, cached
//! mappings of as many bytes are unmapped (the shared cache's oldest, then the growing
//! thread's slot): a program whose heap grows is not reusing them, and their pages would add
//! to its peak. Inside each core heap, after every 64 MiB freed, the whole pages of free
//! chunks' unused spans of at least 256 KiB are discarded with `madvise(MADV_DONTNEED)`; the
//! starter arena's heap also discards spans from 16 KiB after every 512 KiB freed into it with
//! no allocation between (threads that left it for their own arenas return its blocks). A slab
//! whose slots all come back is kept for reuse if fewer than four others of its class and
//! arena are, else its pages are discarded the same way. An exited thread's arena keeps its
//! memory for the next thread, which adopts it.
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
mod config;
mod core_heap;
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
        size_class::guard_slots();
        secure::report_faults();
    }
    thread::exit_key();
    fork::register();
}

/// Runs at exit: prints the statistics if asked to.
extern "C" fn on_exit() {
    if config::stats_at_exit() {
        let mut totals = stats::HeapTotals {
            in_use: 0,
            free: 0,
            managed: 0,
        };
        arena::for_each(|arena| {
            let heap = arena.core.stats();
            totals.in_use += heap.in_use;
            totals.free += heap.free;
            totals.managed += heap.managed;
        });
        stats::print_report(totals);
    }
}

#[used]
#[link_section = ".init_array"]
static ON_LOAD: extern "C" fn() = on_load;

#[used]
#[link_section = ".fini_array"]
static ON_EXIT: extern "C" fn() = on_exit;
