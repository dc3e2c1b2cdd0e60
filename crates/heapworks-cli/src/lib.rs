//! The `heapworks` command: a thin layer of command line, progress bar and rendering over the
//! benchmark engine [`heapworks_bench`], plus the benchmarks that drive C mallocs and the
//! buffer pool in child processes.
//!
//! - [`cli`]: the command line; [`options`]: its numeric options, parsed and bounded.
//! - [`progress`]: the terminal progress bar the engine reports to.
//! - [`report`]: the results model's table, JSON, CSV and HTML forms, opening (HTML) and ending
//!   (terminal) with the at-a-glance summary; [`report_dir`]: where the HTML report goes
//!   without `--out`.
//! - [`catalog`]: what each workload measures and how it is drawn, written into the results.
//! - [`gate`]: the instruction-count regression gate against a baseline results file.
//! - [`trace_commands`]: `heapworks trace` and `heapworks replay`.
//! - [`gas`]: `heapworks gas`, which runs the separately licensed `heapworks-gas` binary (GPL-3.0,
//!   never linked here) and draws its HTML report ([`report::gas`]) from the JSON it writes.
//! - [`malloc_bench`] (the crate `heapworks-malloc-bench`, beside its C drivers): `heapworks
//!   bench --malloc`, heapworks-malloc against the C mallocs (glibc, mimalloc, jemalloc,
//!   tcmalloc) preloaded into the same programs.
//! - [`torture`] (the crate `heapworks-torture`, beside its C programs) and
//!   [`torture_command`]: `heapworks torture`, the malloc torture test (contract, threads,
//!   fork, exhaustion, seed 004's patterns, misuse) against the same mallocs and the arenas.
//! - [`pool_bench`] (the crate `heapworks-pool-bench`): `heapworks bench --pool`,
//!   heapworks-pool against fresh allocations, inline and in shared memory.
//!
//! The engine's modules are re-exported under their old paths (`heapworks_cli::contenders`, …)
//! so that code written against this crate keeps compiling.

// The options' doc comments are clap's `--help` text, which names placeholders like `<command>`
// as a terminal shows them, not as HTML.
#![allow(rustdoc::invalid_html_tags)]

pub use heapworks_bench::{
    contenders, instructions, region, replay, results, rng, runner, stats, study, timing, workloads,
};
pub use heapworks_malloc_bench as malloc_bench;
pub use heapworks_pool_bench as pool_bench;
pub use heapworks_torture as torture;

pub mod catalog;
pub mod cli;
pub mod gas;
pub mod gate;
pub mod options;
pub mod progress;
pub mod report;
pub mod report_dir;
pub mod torture_command;
pub mod trace_commands;
