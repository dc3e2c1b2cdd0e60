//! Unused spans: the bytes of free chunks that the heap keeps nothing in, which an embedder may
//! give back to the operating system.
//!
//! A free chunk's metadata is its header, its two link words and its footer (see
//! [`crate::chunk`]); everything between the links and the footer is dead weight while the
//! chunk stays free. The heap's correctness never depends on those bytes: they may be
//! overwritten or discarded (for example with `madvise(MADV_DONTNEED)`, after which they read as
//! zero), and a block later carved from the chunk has undefined contents, as every fresh block
//! has.
//!
//! Invariant: a span reported here lies inside one free chunk, after its link words and before
//! its footer; it stays unused only until the heap is next used.

use core::ptr::NonNull;

use crate::index::FreeIndex;
use crate::Heap;

impl<I: FreeIndex> Heap<I> {
    /// Calls `f(start, len)` for the unused bytes of every free chunk (those between its link
    /// words and its footer), in no particular order; chunks too small to have any are
    /// skipped. O(free chunks + bins). `f` must not use the heap; it may overwrite or discard
    /// the bytes it is given.
    ///
    /// ```
    /// use core::alloc::Layout;
    /// use heapworks::Heap;
    ///
    /// let mut memory = vec![0u8; 64 * 1024];
    /// let mut heap = Heap::new();
    /// // SAFETY: `memory` outlives `heap` and nothing else uses it.
    /// unsafe { heap.claim(memory.as_mut_ptr(), memory.len()) }.unwrap();
    /// let block = heap.allocate(Layout::from_size_align(1000, 8).unwrap()).unwrap();
    ///
    /// let mut unused = 0;
    /// heap.for_each_unused_span(|start, len| {
    ///     // SAFETY: the heap keeps nothing in these bytes while their chunk is free.
    ///     unsafe { start.as_ptr().write_bytes(0, len) };
    ///     unused += len;
    /// });
    /// assert!(unused > 60 * 1024);
    /// heap.check().unwrap();
    /// # unsafe { heap.free(block) };
    /// ```
    pub fn for_each_unused_span(&self, mut f: impl FnMut(NonNull<u8>, usize)) {
        // SAFETY: the index is consistent between calls.
        unsafe {
            self.index.for_each(|chunk, size| {
                if let Some((start, len)) = chunk.unused_span(size) {
                    f(start, len);
                }
            });
        }
    }
}
