//! The columns of `bench --pool`: ways to get a tensor of `n` f32 filled with a value.
//!
//! A [`Subject`] is one variant ready to run: its pool, or its pre-allocated buffers for
//! `fill_existing`. Every variant does the same work per tensor (make it, fill every element
//! with a non-default value so that no page stays unmapped, read one element, drop it); only
//! where the memory comes from differs. A subject lives for one measurement, so no variant
//! inherits another's cache.

use std::hint::black_box;

use heapworks_pool::{Config, Pool, PoolError};

heapworks_bench::registry! {
    /// One way to get a tensor.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Variant {
        /// Refill buffers that are already there: the floor no allocation beats.
        FillExisting = ("fill_existing", "refill a buffer that is already there"),
        /// A fresh `Vec<f32>` (the process's malloc) per tensor.
        InlineWithoutPool = ("inline_without_pool", "vec![v; n] (glibc malloc)"),
        /// A heapworks-pool inline buffer per tensor.
        InlineWithPool = ("inline_with_pool", "heapworks-pool inline"),
        /// A fresh memfd mapping per tensor (a shared-memory pool with budget 0).
        ShmWithoutPool = ("shm_without_pool", "memfd + mmap per tensor"),
        /// A heapworks-pool shared-memory buffer per tensor.
        ShmWithPool = ("shm_with_pool", "heapworks-pool shared memory"),
    }
}

impl Variant {
    /// Whether the variant has a pool whose statistics mean something.
    pub fn pools(self) -> bool {
        matches!(self, Variant::InlineWithPool | Variant::ShmWithPool)
    }
}

/// A variant set up for one measurement.
pub enum Subject {
    /// `fill_existing`'s buffers, one per tensor of a step.
    Existing(Vec<Vec<f32>>),
    /// A fresh `Vec` per tensor.
    Malloc,
    /// A pool (a pass-through one for `shm_without_pool`), and whether it caches.
    Pooled(Pool, bool),
}

impl Subject {
    /// `variant` ready for steps of up to `most.len()` tensors, tensor `i` at most `most[i]`
    /// elements; pools get `budget` bytes.
    pub fn new(variant: Variant, most: &[usize], budget: usize) -> Self {
        match variant {
            // Filled once so that every page is mapped before the first measurement.
            Variant::FillExisting => {
                Self::Existing(most.iter().map(|&n| vec![0.5f32; n]).collect())
            }
            Variant::InlineWithoutPool => Self::Malloc,
            Variant::InlineWithPool => Self::Pooled(Pool::new(Config::with_budget(budget)), true),
            Variant::ShmWithoutPool => {
                Self::Pooled(Pool::shared_memory(Config::with_budget(0)), false)
            }
            Variant::ShmWithPool => {
                Self::Pooled(Pool::shared_memory(Config::with_budget(budget)), true)
            }
        }
    }

    /// The pool, if the variant caches, for its statistics.
    pub fn pool(&self) -> Option<&Pool> {
        match self {
            Self::Pooled(pool, true) => Some(pool),
            _ => None,
        }
    }

    /// One tensor of `n` elements filled with `value`, read, dropped.
    #[inline(never)]
    pub fn one(&mut self, n: usize, value: f32) -> Result<f32, String> {
        let seen = match self {
            Self::Existing(buffers) => {
                let tensor = &mut buffers[0][..n];
                tensor.fill(value);
                black_box(&*tensor).last().copied()
            }
            Self::Malloc => {
                let tensor = vec![value; n];
                black_box(&tensor).last().copied()
            }
            Self::Pooled(pool, _) => {
                let tensor = pool.get_filled::<f32>(n, value).map_err(describe)?;
                black_box(&tensor).last().copied()
            }
        };
        Ok(seen.unwrap_or(value))
    }

    /// A tensor of every length in `lens`, all live at once, each filled with `value`; the
    /// sum of their last elements.
    pub fn several(&mut self, lens: &[usize], value: f32) -> Result<f32, String> {
        match self {
            Self::Existing(buffers) => {
                let mut seen = 0.0;
                for (buffer, &n) in buffers.iter_mut().zip(lens) {
                    let tensor = &mut buffer[..n];
                    tensor.fill(value);
                    seen += black_box(&*tensor).last().copied().unwrap_or(0.0);
                }
                Ok(seen)
            }
            Self::Malloc => {
                let tensors: Vec<Vec<f32>> = lens.iter().map(|&n| vec![value; n]).collect();
                Ok(last_elements(black_box(&tensors)))
            }
            Self::Pooled(pool, _) => {
                let tensors = lens
                    .iter()
                    .map(|&n| pool.get_filled::<f32>(n, value))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(describe)?;
                Ok(last_elements(black_box(&tensors)))
            }
        }
    }
}

fn last_elements<T: std::ops::Deref<Target = [f32]>>(tensors: &[T]) -> f32 {
    tensors.iter().filter_map(|t| t.last()).sum()
}

fn describe(error: PoolError) -> String {
    error.to_string()
}
