//! heapworks, the allocator under test, through its raw unsynchronized heaps: `Heap` on the
//! default free index or another one, and `FrontHeap`, the heap with its small-object front.
//!
//! Invariants: one adapter, [`HeapworksHeap`], drives every heapworks engine through
//! [`Engine`], which forwards to the core's methods of the same names and adds nothing, so
//! two contenders built on different engines differ only by the engine. The contenders beyond
//! `heapworks` itself (other indexes, the front) are declared one line each with
//! `engine_contenders!`, which derives their registry and dispatch.

use std::alloc::Layout;
use std::ptr::{self, NonNull};

use heapworks::{AllocError, Bins, ClaimError, FreeIndex, FrontHeap, Heap};

use super::{RawHeap, SetupError};

/// The surface of a heapworks heap the adapter drives (the core's own methods).
pub trait Engine: Send {
    /// An empty heap owning no memory.
    fn empty() -> Self;

    /// Adds a region to the heap.
    ///
    /// # Safety
    /// As for [`Heap::claim`].
    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), ClaimError>;

    /// Allocates a block for `layout`.
    fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError>;

    /// Frees a block allocated with `layout`.
    ///
    /// # Safety
    /// As for [`Heap::deallocate`].
    unsafe fn deallocate(&mut self, ptr: NonNull<u8>, layout: Layout);

    /// Resizes a block allocated with `layout` to `new_size` bytes.
    ///
    /// # Safety
    /// As for [`Heap::realloc`].
    unsafe fn realloc(
        &mut self,
        ptr: NonNull<u8>,
        layout: Layout,
        new_size: usize,
    ) -> Result<NonNull<u8>, AllocError>;
}

/// Implements [`Engine`] for a core heap type generic over its free index, by forwarding.
macro_rules! forward_engine {
    ($($heap:ident),*) => {$(
        impl<I: FreeIndex> Engine for $heap<I> {
            fn empty() -> Self {
                $heap::empty()
            }

            unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), ClaimError> {
                // SAFETY: forwarded from this function's contract.
                unsafe { $heap::claim(self, base, len) }
            }

            fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
                $heap::allocate(self, layout)
            }

            unsafe fn deallocate(&mut self, ptr: NonNull<u8>, layout: Layout) {
                // SAFETY: forwarded from this function's contract.
                unsafe { $heap::deallocate(self, ptr, layout) }
            }

            unsafe fn realloc(
                &mut self,
                ptr: NonNull<u8>,
                layout: Layout,
                new_size: usize,
            ) -> Result<NonNull<u8>, AllocError> {
                // SAFETY: forwarded from this function's contract.
                unsafe { $heap::realloc(self, ptr, layout, new_size) }
            }
        }
    )*};
}

forward_engine!(Heap, FrontHeap);

/// heapworks on the engine `E`: by default the plain heap on the default free index.
pub struct HeapworksHeap<E: Engine = Heap<Bins>>(E);

impl<E: Engine> RawHeap for HeapworksHeap<E> {
    fn unclaimed() -> Self {
        Self(E::empty())
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        // SAFETY: the region is ours for the heap's life (this function's contract).
        unsafe { self.0.claim(base, len) }
            .map_err(|error| SetupError(format!("heapworks rejected the region: {error:?}")))
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        self.0
            .allocate(layout)
            .map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` is a live, non-null block of this heap with `layout`.
        unsafe { self.0.deallocate(NonNull::new_unchecked(ptr), layout) }
    }

    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is a live, non-null block of this heap with `layout`.
        unsafe {
            self.0
                .realloc(NonNull::new_unchecked(ptr), layout, new_size)
        }
        .map_or(ptr::null_mut(), NonNull::as_ptr)
    }
}

/// Declares a set of heapworks contenders, one line each: `Variant(Engine) = ("name",
/// "description")`, `Engine` an [`Engine`] type; derives the registry (names, descriptions,
/// look-up) and `with_heap`, the dispatch to [`HeapworksHeap`] on that engine. The
/// description says what is measured, as a crate version does for a peer.
macro_rules! engine_contenders {
    (
        $(#[$enum_meta:meta])*
        pub enum $enum:ident {
            $($(#[$meta:meta])* $variant:ident($engine:ty) = ($name:expr, $description:expr)),*
            $(,)?
        }
    ) => {
        $crate::registry! {
            $(#[$enum_meta])*
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum $enum {
                $($(#[$meta])* $variant = ($name, $description),)*
            }
        }

        impl $enum {
            /// Builds heapworks on this contender's engine over the first `heap_len` bytes of
            /// `region` and runs `work` on it.
            pub fn with_heap<U: $crate::contenders::UseAllocator>(
                self,
                region: &mut $crate::region::Region,
                heap_len: usize,
                work: U,
            ) -> Result<U::Output, $crate::contenders::SetupError> {
                match self {
                    $($enum::$variant => $crate::contenders::run_over::<
                        $crate::contenders::heapworks::HeapworksHeap<$engine>,
                        U,
                    >(region, heap_len, work),)*
                }
            }
        }
    };
}

pub(crate) use engine_contenders;
