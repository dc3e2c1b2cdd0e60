//! How a run tells its caller how far it got: the runner and the callgrind driver report
//! through [`Progress`]; the `heapworks` command draws a progress bar from it, a library user
//! may pass [`Silent`].
//!
//! Invariants: reporting never changes what is measured; implementations are called from the
//! callgrind driver's worker threads too, hence `Sync`.

/// Receives a run's progress.
pub trait Progress: Sync {
    /// `steps` more steps are to come.
    fn add_steps(&self, steps: u64);
    /// What runs now, e.g. `latency/… · talc`.
    fn set_message(&self, message: String);
    /// One step is done.
    fn step_done(&self);
}

/// Progress nobody watches.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn add_steps(&self, _steps: u64) {}
    fn set_message(&self, _message: String) {}
    fn step_done(&self) {}
}
