//! `heapworks bench`: heapworks and its peers on identical workloads, side by side.
//!
//! - [`contenders`]: the allocator registry; every allocator over the same pre-touched
//!   [`region`], behind the same lock, as a `GlobalAlloc`.
//! - [`workloads`]: one module per workload, each named for what it measures.
//! - [`instructions`]: instruction counts per call under valgrind (the regression gate).
//! - [`gate`]: the instruction-count regression gate against a baseline results file.
//! - [`options`]: the numeric command-line options, parsed and bounded.
//! - [`runner`]: plans cases, interleaves trials allocator by allocator, aggregates medians.
//! - [`results`] and [`report`]: the result model and its table, JSON, CSV and HTML forms.
//! - [`replay`] and [`trace_commands`]: allocation traces of real programs (`heapworks trace`)
//!   replayed on every contender (`heapworks replay`, the `traces` workload).
//! - [`malloc_bench`]: `heapworks bench --malloc`, heapworks-malloc against the C mallocs
//!   (glibc, mimalloc, jemalloc, tcmalloc) preloaded into the same programs.
//! - [`torture`]: `heapworks torture`, the malloc torture test (contract, threads, fork,
//!   exhaustion, seed 004's patterns, misuse) against the same mallocs and the arenas.
//! - [`pool_bench`]: `heapworks bench --pool`, heapworks-pool against fresh allocations,
//!   inline and in shared memory.

pub mod cli;
pub mod contenders;
pub mod gas;
pub mod gate;
pub mod instructions;
pub mod malloc_bench;
pub mod options;
pub mod pool_bench;
pub mod region;
pub mod replay;
pub mod report;
pub mod results;
pub mod rng;
pub mod runner;
pub mod stats;
pub mod timing;
pub mod torture;
pub mod trace_commands;
pub mod workloads;
