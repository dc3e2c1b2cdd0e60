//! The columns of `bench --pool`: ways to get a tensor of `n` f32 filled with a value.
//!
//! A [`Subject`] is one variant ready to run: its pool, or its pre-allocated buffers for
//! `fill_existing`. Every variant does the same work per tensor (make it, fill every element
//! with a non-default value so that no page stays unmapped, read one element, drop it); only
//! where the memory comes from differs. A subject lives for one measurement, so no variant
//! inherits another's cache.
//!
//! Two baselines "without pool", since the seed's one is ambiguous: `inline_without_pool` is
//! what a user writes (`vec![v; n]`'s allocation, filled as the others are, through the
//! process's malloc, which on glibc reuses its own heap for blocks up to 32 MiB once one was
//! freed: glibc's dynamic mmap threshold is a reuse cache of its own), and `inline_fresh_mapping` is the seed's explanation of its 4×
//! (a fresh allocation paying a page fault per 4 KiB: a new anonymous mapping per tensor,
//! what every malloc does above its mmap threshold). The `_4k` variants turn huge pages off
//! in both pooled backends, to compare them on equal pages; they run only when named.

use std::hint::black_box;
use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};

use heapworks_pool::{Config, Inline, Pool, PoolError, SharedMemory};

heapworks_bench::registry! {
    /// One way to get a tensor.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Variant {
        /// Refill buffers that are already there: the floor no allocation beats.
        FillExisting = ("fill_existing", "refill a buffer that is already there"),
        /// A fresh `Vec<f32>` (the process's malloc) per tensor.
        InlineWithoutPool = ("inline_without_pool", "vec![v; n] (glibc malloc)"),
        /// A fresh anonymous mapping per tensor: a page fault per 4 KiB.
        InlineFreshMapping = (
            "inline_fresh_mapping",
            "mmap + munmap per tensor (a page fault per 4 KiB)"
        ),
        /// A heapworks-pool inline buffer per tensor.
        InlineWithPool = ("inline_with_pool", "heapworks-pool inline"),
        /// A fresh memfd mapping per tensor (a shared-memory pool with budget 0).
        ShmWithoutPool = ("shm_without_pool", "memfd + mmap per tensor"),
        /// A heapworks-pool shared-memory buffer per tensor.
        ShmWithPool = ("shm_with_pool", "heapworks-pool shared memory"),
        /// `inline_with_pool` without huge pages.
        InlineWithPool4k = ("inline_with_pool_4k", "heapworks-pool inline, 4 KiB pages only"),
        /// `shm_with_pool` without huge pages.
        ShmWithPool4k = ("shm_with_pool_4k", "heapworks-pool shared memory, 4 KiB pages only"),
    }
}

impl Variant {
    /// The variants a run measures unless others are named: all but the `_4k` ones.
    pub const DEFAULT: &[Variant] = &[
        Variant::FillExisting,
        Variant::InlineWithoutPool,
        Variant::InlineFreshMapping,
        Variant::InlineWithPool,
        Variant::ShmWithoutPool,
        Variant::ShmWithPool,
    ];

    /// Whether the variant has a pool whose statistics mean something.
    pub fn pools(self) -> bool {
        matches!(
            self,
            Variant::InlineWithPool
                | Variant::ShmWithPool
                | Variant::InlineWithPool4k
                | Variant::ShmWithPool4k
        )
    }
}

/// A variant set up for one measurement.
pub enum Subject {
    /// `fill_existing`'s buffers, one per tensor of a step.
    Existing(Vec<Vec<f32>>),
    /// A fresh `Vec` per tensor.
    Malloc,
    /// A fresh anonymous mapping per tensor.
    Mapping,
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
            Variant::InlineFreshMapping => Self::Mapping,
            Variant::InlineWithPool => Self::Pooled(Pool::new(Config::with_budget(budget)), true),
            Variant::ShmWithoutPool => {
                Self::Pooled(Pool::shared_memory(Config::with_budget(0)), false)
            }
            Variant::ShmWithPool => {
                Self::Pooled(Pool::shared_memory(Config::with_budget(budget)), true)
            }
            Variant::InlineWithPool4k => {
                let small_pages = Inline {
                    huge_pages: false,
                    ..Inline::default()
                };
                Self::Pooled(
                    Pool::with_backend(Config::with_budget(budget), small_pages),
                    true,
                )
            }
            Variant::ShmWithPool4k => {
                let small_pages = SharedMemory { huge_pages: false };
                Self::Pooled(
                    Pool::with_backend(Config::with_budget(budget), small_pages),
                    true,
                )
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
                let tensor = filled_vec(n, value);
                black_box(&tensor).last().copied()
            }
            Self::Mapping => {
                let mut tensor = FreshMapping::new(n)?;
                tensor.fill(value);
                black_box(&*tensor).last().copied()
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
                let tensors: Vec<Vec<f32>> = lens.iter().map(|&n| filled_vec(n, value)).collect();
                Ok(last_elements(black_box(&tensors)))
            }
            Self::Mapping => {
                let mut tensors = Vec::with_capacity(lens.len());
                for &n in lens {
                    let mut tensor = FreshMapping::new(n)?;
                    tensor.fill(value);
                    tensors.push(tensor);
                }
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

/// A new `Vec` of `n` copies of `value`: the allocation `vec![value; n]` makes, filled by the
/// same slice `fill` as every other variant, so that only where the memory comes from differs
/// (`vec!`'s own loop took twice `fill`'s time on a cache-resident 16 KiB buffer: TUNING.md).
fn filled_vec(n: usize, value: f32) -> Vec<f32> {
    let mut tensor = Vec::with_capacity(n);
    tensor.spare_capacity_mut().fill(MaybeUninit::new(value));
    // SAFETY: the first `n` elements were initialised just above, and the capacity is `n`.
    unsafe { tensor.set_len(n) };
    tensor
}

fn last_elements<T: std::ops::Deref<Target = [f32]>>(tensors: &[T]) -> f32 {
    tensors.iter().filter_map(|t| t.last()).sum()
}

fn describe(error: PoolError) -> String {
    error.to_string()
}

/// `n` f32 in an anonymous mapping of their own (4 KiB pages: no huge-page advice, as a
/// malloc's large blocks), unmapped when dropped. `n` 0 maps one page.
struct FreshMapping {
    ptr: NonNull<f32>,
    n: usize,
    len: usize,
}

impl FreshMapping {
    fn new(n: usize) -> Result<Self, String> {
        let len = (n * 4).max(1);
        // SAFETY: a fresh private mapping at an address of the kernel's choice.
        let raw = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {len} B: {}",
                std::io::Error::last_os_error()
            ));
        }
        let ptr = NonNull::new(raw.cast()).ok_or("mmap returned address 0")?;
        Ok(Self { ptr, n, len })
    }
}

impl std::ops::Deref for FreshMapping {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        // SAFETY: the mapping holds `n` f32 (zeros from the kernel, or written since), page
        // aligned, owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.n) }
    }
}

impl std::ops::DerefMut for FreshMapping {
    fn deref_mut(&mut self) -> &mut [f32] {
        // SAFETY: as in `deref`; `&mut self` makes the borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.n) }
    }
}

impl Drop for FreshMapping {
    fn drop(&mut self) {
        // SAFETY: the whole mapping made in `new`, unmapped once, here.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
