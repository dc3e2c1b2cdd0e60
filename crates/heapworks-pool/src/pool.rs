//! [`Pool`]: hands out buffers from the cache or the backend, and takes them back.
//!
//! The pool's state lives behind an `Arc` that every handed-out buffer holds too, so a buffer
//! can always be returned. Dropping the [`Pool`] closes that state (later returns release their
//! memory instead of caching it) and releases everything cached; a return racing with the
//! close may still cache its region, which is then released when the last buffer goes and the
//! state with it. Nothing is ever kept past the last of the pool and its buffers.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::backend::{Backend, Inline, SharedMapping, SharedMemory, ShmHandle};
use crate::buffer::{Lease, PooledBuf, Uninit};
use crate::cache::{Cache, Entry};
use crate::class::{Class, Classes, ClassesPerDoubling};
use crate::element::Element;
use crate::error::PoolError;

/// How many doublings above its class a request looks for a cached buffer, the nearest
/// doubling first: a buffer handed out is less than `2^FIT_DOUBLINGS` times its request's
/// class. Why two: shapes that vary then reuse a few buffers whose memory the CPU's caches
/// still hold, at no more memory than one (TUNING.md).
const FIT_DOUBLINGS: usize = 2;

/// How a pool behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// Most bytes cached at any instant (cached buffers count their whole capacity); 0 caches
    /// nothing, so the pool passes every buffer through to the backend. Default 256 MiB.
    pub budget: usize,
    /// The size classes, hence the largest slack a request may be handed. Default four per
    /// doubling (at most 25 % or 64 B over the request).
    pub classes: ClassesPerDoubling,
    /// Release cached buffers that have been idle this long (checked by returns and by
    /// [`Pool::release_idle`]); `None` (the default) keeps them until evicted.
    pub idle_release: Option<Duration>,
    /// Shards of the cache (rounded up to a power of two); 0 means one per CPU, up to 8.
    pub shards: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            budget: 256 << 20,
            classes: ClassesPerDoubling::default(),
            idle_release: None,
            shards: 0,
        }
    }
}

impl Config {
    /// The default configuration with a budget of `budget` bytes.
    pub fn with_budget(budget: usize) -> Self {
        Self {
            budget,
            ..Self::default()
        }
    }
}

/// What a pool has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests served by a cached buffer (of their class or up to two doublings above it).
    pub hits: u64,
    /// Requests served by a fresh buffer from the backend, to be cached when dropped.
    /// (Requests the backend serves directly, too small to be worth caching, are not pool
    /// traffic and not counted at all: see [`Inline::pool_heap_buffers`].)
    pub misses: u64,
    /// Cached buffers released to keep within the budget.
    pub evictions: u64,
    /// Cached buffers released for being idle.
    pub idle_releases: u64,
    /// Bytes cached now (whole capacities, including returns in progress).
    pub bytes_cached: usize,
    /// The most bytes ever cached at once: never above the budget.
    pub peak_bytes_cached: usize,
    /// Buffers cached now.
    pub buffers_cached: usize,
    /// Bytes requested by every non-empty `get` served by the cache or a fresh pooled buffer
    /// so far.
    pub bytes_handed_out: u64,
}

impl Stats {
    /// Hits as a share of requests (0 when there were none).
    pub fn hit_rate(&self) -> f64 {
        let requests = self.hits + self.misses;
        if requests == 0 {
            0.0
        } else {
            self.hits as f64 / requests as f64
        }
    }
}

/// A pool of reusable buffers. `Send + Sync`: share it by reference or in an `Arc`.
#[derive(Debug)]
pub struct Pool {
    shared: Arc<Shared>,
}

/// The state shared by a pool and its buffers.
pub(crate) struct Shared {
    cache: Cache,
    classes: Classes,
    backend: Box<dyn Backend>,
    /// Requests of at most this many bytes (those whose class is below the backend's
    /// [`Backend::pooled_from`]) pass through to the global allocator; 0 for none.
    pass_through_up_to: usize,
    id: u64,
    budget: usize,
    closed: AtomicBool,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("id", &self.id)
            .field("backend", &self.backend)
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl Shared {
    /// Takes back a buffer: cached under its class, or released if the pool is closed or it
    /// does not fit.
    #[inline]
    pub(crate) fn give_back(&self, entry: Box<Entry>) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        self.cache.put(entry);
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

/// A number no other pool of any process has: the process id and a counter.
fn unique_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    (u64::from(std::process::id()) << 32) | (NEXT.fetch_add(1, Ordering::Relaxed) & 0xffff_ffff)
}

impl Pool {
    /// A pool of inline buffers: `mmap` from 256 KiB, pooled; smaller ones from the process
    /// allocator, not pooled (see [`Inline`]).
    pub fn new(config: Config) -> Self {
        Self::with_backend(config, Inline::default())
    }

    /// A pool of shared-memory buffers (one memfd each; huge pages from 2 MiB, see
    /// [`SharedMemory`]).
    pub fn shared_memory(config: Config) -> Self {
        Self::with_backend(config, SharedMemory::default())
    }

    /// A pool whose fresh buffers come from `backend`.
    pub fn with_backend(config: Config, backend: impl Backend + 'static) -> Self {
        let classes = Classes::new(config.classes);
        let shards = match config.shards {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
            n => n.min(64),
        }
        .next_power_of_two();
        // The largest class below `pooled_from`: a request passes through iff its class
        // does, and classes are monotone in the request.
        let pass_through_up_to = match backend.pooled_from() {
            0 => 0,
            from => classes.floor_of(from - 1).map_or(0, |class| class.size),
        };
        Self {
            shared: Arc::new(Shared {
                cache: Cache::new(classes.count(), shards, config.budget, config.idle_release),
                classes,
                pass_through_up_to,
                backend: Box::new(backend),
                id: unique_id(),
                budget: config.budget,
                closed: AtomicBool::new(false),
            }),
        }
    }

    /// `count` elements of `T`, uninitialised: write them through the returned [`Uninit`]
    /// (or [`fill`](Uninit::fill) it) to get a [`PooledBuf`]. `count` 0 is a valid empty
    /// buffer that touches nothing.
    #[inline]
    pub fn get<T: Element>(&self, count: usize) -> Result<Uninit<T>, PoolError> {
        let lease = self.lease(byte_len::<T>(count)?, false)?;
        Ok(Uninit::new(lease, count))
    }

    /// `count` zeros of `T`: free for fresh mapped memory (the kernel's pages are zero), one
    /// fill of the requested bytes for a reused buffer.
    pub fn get_zeroed<T: Element>(&self, count: usize) -> Result<PooledBuf<T>, PoolError> {
        let mut lease = self.lease(byte_len::<T>(count)?, true)?;
        lease.zero_if_dirty();
        // SAFETY: the lease's first `count × size_of::<T>()` bytes are zero, a valid `T`
        // (`Element`'s contract).
        Ok(unsafe { Uninit::new(lease, count).assume_init() })
    }

    /// `count` copies of `value`: [`get`](Self::get) then [`Uninit::fill`].
    #[inline]
    pub fn get_filled<T: Element>(
        &self,
        count: usize,
        value: T,
    ) -> Result<PooledBuf<T>, PoolError> {
        Ok(self.get(count)?.fill(value))
    }

    /// A buffer of `len` bytes: empty, passed through to the global allocator when it is too
    /// small to pool, or else from the cache or fresh from the backend. Inlined to the
    /// pass-through test; the pooled path is a call.
    #[inline]
    fn lease(&self, len: usize, zeroed: bool) -> Result<Lease, PoolError> {
        if len == 0 {
            return Ok(Lease::empty());
        }
        if len <= self.shared.pass_through_up_to {
            // `let … else`, not `ok_or`: an error built eagerly is dropped on every success,
            // and `PoolError`'s drop glue cost 42 instructions a call on this path.
            let Some(lease) = Lease::block(len, zeroed) else {
                return Err(PoolError::OutOfMemory { len });
            };
            return Ok(lease);
        }
        self.lease_pooled(len, zeroed)
    }

    /// A buffer of `len > 0` bytes: the most recently returned one cached in the request's
    /// class or the classes up to a doubling above it, or else in the next doubling (up to
    /// [`FIT_DOUBLINGS`]), or else a fresh one from the backend. The hit path looks in the
    /// calling thread's home shard's nearest doubling; the rest is out of line.
    #[inline(never)]
    fn lease_pooled(&self, len: usize, zeroed: bool) -> Result<Lease, PoolError> {
        let shared = &self.shared;
        let Some(class) = shared.classes.of(len) else {
            return Err(PoolError::TooLarge { len });
        };
        let nearest = class.index..class.index + shared.classes.per_doubling();
        let entry = match shared.cache.take_at_home(nearest, len) {
            Some(hit) => hit,
            None => self.lease_beyond_home(class, len, zeroed)?,
        };
        Ok(Lease::pooled(entry, len, Arc::clone(shared)))
    }

    /// The matching rule after the home shard's nearest doubling: the other shards' nearest
    /// doubling, then the next doublings in every shard, then a fresh region.
    #[cold]
    #[inline(never)]
    fn lease_beyond_home(
        &self,
        class: Class,
        len: usize,
        zeroed: bool,
    ) -> Result<Box<Entry>, PoolError> {
        let shared = &self.shared;
        let per_doubling = shared.classes.per_doubling();
        let nearest = class.index..class.index + per_doubling;
        let taken = shared.cache.take_elsewhere(nearest, len).or_else(|| {
            (1..FIT_DOUBLINGS).find_map(|doubling| {
                let from = class.index + doubling * per_doubling;
                shared.cache.take(from..from + per_doubling, len)
            })
        });
        if let Some(hit) = taken {
            return Ok(hit);
        }
        let region = shared.backend.allocate(class.size, zeroed)?;
        shared.cache.count_miss(len);
        Ok(Entry::new(region, class.index))
    }

    /// What the pool has done so far.
    pub fn stats(&self) -> Stats {
        let counts = self.shared.cache.counts();
        Stats {
            hits: counts.hits,
            misses: counts.misses,
            evictions: counts.evictions,
            idle_releases: counts.idle_releases,
            bytes_cached: counts.bytes_cached,
            peak_bytes_cached: counts.peak_bytes_cached,
            buffers_cached: counts.buffers_cached,
            bytes_handed_out: counts.bytes_handed_out,
        }
    }

    /// Releases the buffers idle longer than [`Config::idle_release`]; how many (0 when it is
    /// not set). Returns call this on their own every half idle time; call it from a timer to
    /// release memory while the pool is not used.
    pub fn release_idle(&self) -> usize {
        self.shared.cache.release_idle()
    }

    /// Releases every cached buffer; how many.
    pub fn clear(&self) -> usize {
        self.shared.cache.clear()
    }

    /// This pool's identity, carried by its shared-memory handles.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// The byte budget.
    pub fn budget(&self) -> usize {
        self.shared.budget
    }

    /// The backend's name (`inline` or `shm`).
    pub fn backend_name(&self) -> &'static str {
        self.shared.backend.name()
    }

    /// Maps a shared buffer of this pool from its handle (e.g. one that came back from
    /// another process with the descriptor renumbered). A handle of another pool is
    /// [`PoolError::ForeignHandle`]; a closed descriptor or one too short is
    /// [`PoolError::BadHandle`].
    pub fn map_handle(&self, handle: &ShmHandle) -> Result<SharedMapping, PoolError> {
        if handle.pool != self.id() {
            return Err(PoolError::ForeignHandle {
                handle_pool: handle.pool,
                pool: self.id(),
            });
        }
        SharedMapping::map(handle)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.cache.clear();
    }
}

/// Bytes of `count` elements of `T`.
fn byte_len<T>(count: usize) -> Result<usize, PoolError> {
    // Not `ok_or`, for the reason given in `Pool::lease`.
    let Some(bytes) = count.checked_mul(size_of::<T>()) else {
        return Err(PoolError::SizeOverflow {
            count,
            element_size: size_of::<T>(),
        });
    };
    Ok(bytes)
}
