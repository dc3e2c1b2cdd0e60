//! Handed-out buffers: [`Uninit`] (fresh or reused bytes, not yet written) and [`PooledBuf`]
//! (initialised elements, `Deref` to `[T]`). Both own a lease on one region and give it back
//! to the pool when dropped.
//!
//! Invariants: a lease's memory is owned by that lease alone until it is given back (the
//! cache hands a region to one lease only, and takes it back only from that lease's drop);
//! the visible elements lie within it (`count × size_of::<T>() ≤` its capacity); an empty
//! buffer holds nothing and has a dangling 64-byte-aligned pointer.
//!
//! A lease holds one of three things: nothing (an empty buffer), a block of the global
//! allocator (a buffer too small to pool, freed on drop: the tiny-buffer path is a `malloc`
//! and a `free` plus about thirty instructions), or a pooled region, handed back to its
//! pool's cache on drop.

use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

use crate::backend::{heap, ShmHandle};
use crate::cache::Entry;
use crate::element::Element;
use crate::pool::Shared;

/// The memory of one handed-out buffer and where it goes when dropped.
///
/// Plain fields rather than an enum with payloads: the pass-through path writes and reads
/// each at its own width (an enum's byte-wide payload written and then read back as a word
/// stalled store forwarding, twice per tiny buffer). The small fields are 32-bit, not bytes:
/// a lease moves through `Result` and the buffer types, and byte fields were copied one by
/// one. A pooled region travels boxed with its class (one pointer).
pub(crate) struct Lease {
    /// The first byte (dangling and 64-byte aligned for an empty buffer).
    ptr: NonNull<u8>,
    /// Bytes requested.
    len: usize,
    /// A pooled lease's region and where it goes back; `None` for an empty buffer or a block.
    pooled: Option<Pooled>,
    /// For a block of the global allocator (a buffer too small to pool, exactly `len` bytes,
    /// freed on drop): how far into its allocation `ptr` is. [`NO_BLOCK`] otherwise.
    block_offset: u32,
    /// Whether the memory arrived all zeros (fresh pages, never written).
    zeroed_on_arrival: u32,
}

/// `block_offset` of a lease that holds no block (offsets are at most 48).
const NO_BLOCK: u32 = u32::MAX;

/// A pooled region (with its class, boxed: moved as one pointer) and its home.
struct Pooled {
    entry: Box<Entry>,
    pool: Arc<Shared>,
}

/// The address of every empty buffer: dangling, aligned like every other buffer.
#[repr(align(64))]
struct Aligned;

impl Lease {
    pub(crate) fn empty() -> Self {
        Self {
            ptr: NonNull::<Aligned>::dangling().cast(),
            len: 0,
            pooled: None,
            block_offset: NO_BLOCK,
            zeroed_on_arrival: 1,
        }
    }

    /// A pass-through lease of `len > 0` bytes from the global allocator (zeros if
    /// `zeroed`); `None` when it refuses.
    #[inline]
    pub(crate) fn block(len: usize, zeroed: bool) -> Option<Self> {
        let (ptr, offset) = heap::allocate(len, zeroed)?;
        Some(Self {
            ptr,
            len,
            pooled: None,
            block_offset: offset.into(),
            zeroed_on_arrival: zeroed.into(),
        })
    }

    /// A lease of `len` bytes of `entry`'s region, returned to `pool` when dropped.
    #[inline]
    pub(crate) fn pooled(mut entry: Box<Entry>, len: usize, pool: Arc<Shared>) -> Self {
        debug_assert!(len <= entry.region.capacity());
        let zeroed_on_arrival = entry.region.is_zeroed().into();
        entry.region.mark_dirty();
        Self {
            ptr: entry.region.ptr(),
            len,
            pooled: Some(Pooled { entry, pool }),
            block_offset: NO_BLOCK,
            zeroed_on_arrival,
        }
    }

    /// Zeroes the requested bytes unless the memory arrived zeroed.
    pub(crate) fn zero_if_dirty(&mut self) {
        if self.zeroed_on_arrival == 0 {
            // SAFETY: the lease owns at least `len` bytes from `ptr`.
            unsafe { self.ptr.as_ptr().write_bytes(0, self.len) };
        }
    }

    /// Bytes of memory the lease holds.
    fn capacity(&self) -> usize {
        match &self.pooled {
            Some(pooled) => pooled.entry.region.capacity(),
            None => self.len,
        }
    }
}

impl Drop for Lease {
    #[inline]
    fn drop(&mut self) {
        if self.block_offset != NO_BLOCK {
            // SAFETY: `heap::allocate` returned `ptr` and `block_offset` for `len` bytes, and
            // this lease, their only owner, releases them once, here.
            unsafe { heap::release(self.ptr, self.len, self.block_offset as u8) };
        } else if self.pooled.is_some() {
            self.give_back();
        }
    }
}

impl Lease {
    /// Hands a pooled lease's region back to its pool (out of line: the small buffers'
    /// drop stays short).
    #[inline(never)]
    fn give_back(&mut self) {
        if let Some(Pooled { entry, pool }) = self.pooled.take() {
            pool.give_back(entry);
        }
    }
}

/// A buffer of `count` elements of `T` not yet written (reused memory holds whatever its last
/// user left; fresh memory may be anything). Write it with [`as_uninit_mut`](Self::as_uninit_mut)
/// then [`assume_init`](Self::assume_init), or at once with [`fill`](Self::fill) or
/// [`zeroed`](Self::zeroed). Dropped, it goes back to the pool.
pub struct Uninit<T: Element> {
    lease: Lease,
    count: usize,
    _element: PhantomData<T>,
}

impl<T: Element> Uninit<T> {
    #[inline]
    pub(crate) fn new(lease: Lease, count: usize) -> Self {
        Self {
            lease,
            count,
            _element: PhantomData,
        }
    }

    /// Elements of the buffer.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The elements, to be written.
    pub fn as_uninit_mut(&mut self) -> &mut [MaybeUninit<T>] {
        // SAFETY: the lease owns `count × size_of::<T>()` bytes from its pointer, aligned to
        // 64 B (hence for `T`, `Element`'s contract); `MaybeUninit` needs no initialisation.
        unsafe { std::slice::from_raw_parts_mut(self.lease.ptr.as_ptr().cast(), self.count) }
    }

    /// Every element set to `value`.
    #[inline]
    pub fn fill(mut self, value: T) -> PooledBuf<T> {
        self.as_uninit_mut().fill(MaybeUninit::new(value));
        // SAFETY: every element was just written.
        unsafe { self.assume_init() }
    }

    /// Every element set to zero: free when the memory arrived zeroed (fresh pages).
    pub fn zeroed(mut self) -> PooledBuf<T> {
        self.lease.zero_if_dirty();
        // SAFETY: every byte is zero, a valid `T` (`Element`'s contract).
        unsafe { self.assume_init() }
    }

    /// The buffer as initialised elements.
    ///
    /// # Safety
    /// Every element must have been written (through [`as_uninit_mut`](Self::as_uninit_mut)).
    #[inline]
    pub unsafe fn assume_init(self) -> PooledBuf<T> {
        PooledBuf {
            lease: self.lease,
            count: self.count,
            _element: PhantomData,
        }
    }
}

impl<T: Element> fmt::Debug for Uninit<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Uninit").field("len", &self.count).finish()
    }
}

/// A pooled buffer of `count` initialised elements of `T`, aligned to 64 B. Dereferences to
/// `[T]`; dropped, it goes back to its pool (or is released if the pool is gone).
pub struct PooledBuf<T: Element = u8> {
    lease: Lease,
    count: usize,
    _element: PhantomData<T>,
}

impl<T: Element> PooledBuf<T> {
    /// Bytes of memory behind the buffer (its size class, at least `len × size_of::<T>()`).
    pub fn capacity_bytes(&self) -> usize {
        self.lease.capacity()
    }

    /// The elements as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        // SAFETY: the elements are initialised and `Element`s have no padding, so all
        // `len × size_of::<T>()` bytes are initialised; the lease owns them.
        unsafe { std::slice::from_raw_parts(self.lease.ptr.as_ptr(), self.lease.len) }
    }

    /// The handle another process maps this buffer by, if it is in shared memory. The
    /// descriptor stays valid while the buffer lives (pass it on, e.g. over a Unix socket,
    /// before dropping the buffer). While another process writes the buffer, this one must
    /// not use it: the pages are the same.
    pub fn shm_handle(&self) -> Option<ShmHandle> {
        let Pooled { entry, pool } = self.lease.pooled.as_ref()?;
        Some(ShmHandle {
            fd: entry.region.shared_fd()?,
            offset: 0,
            len: self.lease.len,
            pool: pool.id(),
        })
    }
}

impl<T: Element> Deref for PooledBuf<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: the lease owns `count × size_of::<T>()` initialised bytes from its pointer,
        // aligned for `T` (64 B); `&self` lends them shared.
        unsafe { std::slice::from_raw_parts(self.lease.ptr.as_ptr().cast(), self.count) }
    }
}

impl<T: Element> DerefMut for PooledBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`; `&mut self` makes the borrow exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.lease.ptr.as_ptr().cast(), self.count) }
    }
}

impl<T: Element + fmt::Debug> fmt::Debug for PooledBuf<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledBuf")
            .field("len", &self.count)
            .field("capacity_bytes", &self.capacity_bytes())
            .finish()
    }
}
