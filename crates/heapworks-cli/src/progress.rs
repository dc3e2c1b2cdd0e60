//! The progress bar on stderr that the engine's runs report to (hidden when stderr is not a
//! terminal), also used directly by the benchmarks of this crate.
//!
//! Invariants: the bar only displays; it never changes what a run does or measures.

use std::ops::Deref;

use heapworks_bench::progress::Progress;
use indicatif::{ProgressBar, ProgressStyle};

/// An indicatif bar the engine can report to.
#[derive(Debug, Clone)]
pub struct Bar(ProgressBar);

/// A progress bar of `total` steps (more may be added as the run plans them).
pub fn progress_bar(total: u64) -> Bar {
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} ETA {eta} {msg}")
        .expect("valid template")
        .progress_chars("=> ");
    bar.set_style(style);
    Bar(bar)
}

impl Deref for Bar {
    type Target = ProgressBar;

    fn deref(&self) -> &ProgressBar {
        &self.0
    }
}

impl Progress for Bar {
    fn add_steps(&self, steps: u64) {
        self.0.inc_length(steps);
    }

    fn set_message(&self, message: String) {
        self.0.set_message(message);
    }

    fn step_done(&self) {
        self.0.inc(1);
    }
}
