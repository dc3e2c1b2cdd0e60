//! The heapworks benchmark engine: heapworks and its peers, or your allocator and every peer,
//! on identical workloads over the same pre-touched memory, behind the same lock, with
//! interleaved trials, fixed seeds, medians, spreads and ratios.
//!
//! - [`contenders`]: the allocator registry; every allocator over the same [`region`], behind
//!   the same lock, as a `GlobalAlloc`. An allocator of your own takes part by implementing
//!   [`contenders::RawHeap`] (see [`contenders::custom::register`] and `examples/bump.rs`).
//! - [`workloads`]: one module per workload, each named for what it measures.
//! - [`runner`]: plans cases, interleaves trials allocator by allocator, aggregates medians,
//!   reporting through [`progress`].
//! - [`results`]: the result model (cells, rows, environment) and its record form;
//!   [`standings`]: where one allocator stands in it (rank, ratio to the best peer, verdict).
//! - [`replay`]: allocation traces of real programs replayed on every contender.
//! - [`instructions`]: instruction counts per call under valgrind (callgrind driver).
//! - [`study`]: the free-index study (`bench --indexes`): heapworks on every free index
//!   against dlmalloc and talc, as a selection and configuration of the runner.
//! - [`mod@registry`]: the one mechanism behind every named set (allocators, workloads, …).
//! - [`region`], [`rng`], [`stats`], [`timing`]: the memory, seeds, order statistics and
//!   clocks every workload shares.
//!
//! Nothing here parses a command line or draws anything: the `heapworks` command
//! (`heapworks-cli`) is a thin layer over this crate and its renderer reads only [`results`].

pub mod contenders;
pub mod instructions;
pub mod progress;
pub mod region;
pub mod registry;
pub mod replay;
pub mod results;
// The build script's module (`build.rs` includes it); compiled here only for its tests.
#[cfg(test)]
mod revision;
pub mod rng;
pub mod runner;
pub mod standings;
pub mod stats;
pub mod study;
pub mod timing;
pub mod workloads;

/// The git revision this crate was built from (`unknown (not built from a git checkout)`
/// outside one), captured by the build script.
pub const REVISION: &str = env!("HEAPWORKS_REVISION");

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
