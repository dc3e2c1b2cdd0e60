//! Shadow-model testing for heapworks, shared by the integration tests, the soak runs and the
//! fuzz target.
//!
//! A [`Model`] runs [`Op`]s against a [`Subject`] (a [`heapworks::Heap`] on any index, or a
//! [`heapworks::FrontHeap`]) and keeps a shadow of every live block.
//! After every operation it verifies what a user relies on:
//! - every block is aligned as asked, lies inside the arena and overlaps no other live block;
//! - `usable_size` is at least the size asked for;
//! - contents survive: each block is filled with a pattern derived from its id, verified on
//!   every realloc and free (up to the smaller of the old and new sizes across a realloc);
//! - a failed request leaves the heap unchanged (statistics equal before and after);
//! - a request with alignment up to [`heapworks::GRANULE`] succeeds exactly when the largest
//!   free block measured just before it ([`heapworks::Stats::largest_free`]) can hold it: an
//!   allocation, an `allocate_run` of at least one block, and a realloc (whose in-place attempt
//!   changes nothing when it fails, so the move finds the same largest block). That is the
//!   promise "a request the largest free block can serve never fails", and its converse (no
//!   such request is served from nothing); both cost two comparisons, as the model reads the
//!   statistics before every request anyway. A subject that holds memory in reserve (the
//!   front's free slots, counted in use) may serve a request it covers from nothing, so for
//!   those only the first half holds, and it gives the reserve back before the final check
//!   that nothing is left in use;
//! - `check()` passes (every `check_every` operations, and always at the end).
//!
//! [`malloc_model`] does the same for a C malloc through its API (heapworks-malloc's fuzz
//! target), with the same patterns. [`child`] runs a test again in a child process, for
//! subjects that abort.

pub mod child;
pub mod malloc_model;

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ops::Range;
use std::ptr::NonNull;

use heapworks::{AllocError, Bins, Corruption, FreeIndex, FrontHeap, Heap, Stats};

/// Memory for a heap to claim: a zeroed, 16-byte aligned buffer that outlives the heap.
pub struct Arena {
    memory: Vec<u128>,
}

impl Arena {
    /// An arena of at least `bytes` bytes.
    pub fn new(bytes: usize) -> Arena {
        Arena {
            memory: vec![0; bytes.div_ceil(16)],
        }
    }

    /// The first byte.
    pub fn base(&mut self) -> *mut u8 {
        self.memory.as_mut_ptr().cast()
    }

    /// The arena's size in bytes.
    pub fn len(&self) -> usize {
        self.memory.len() * 16
    }

    /// Whether the arena has no bytes.
    pub fn is_empty(&self) -> bool {
        self.memory.is_empty()
    }

    /// The address range, for bounds checks.
    pub fn range(&self) -> std::ops::Range<usize> {
        let start = self.memory.as_ptr().addr();
        start..start + self.len()
    }

    /// A heap over the whole arena (the arena must outlive it).
    pub fn heap(&mut self) -> Heap {
        self.heap_with()
    }

    /// A heap on the free index `I` over the whole arena (the arena must outlive it).
    pub fn heap_with<I: FreeIndex>(&mut self) -> Heap<I> {
        let mut heap = Heap::<I>::empty();
        // SAFETY: the arena's memory is used by nothing else while the heap lives (callers keep
        // the arena alive and untouched), and the pointer carries provenance for all of it.
        unsafe { heap.claim(self.base(), self.len()) }.expect("arena large enough");
        heap
    }

    /// A [`FrontHeap`] on the free index `I` over the whole arena (the arena must outlive it).
    pub fn front_with<I: FreeIndex>(&mut self) -> FrontHeap<I> {
        let mut front = FrontHeap::<I>::empty();
        // SAFETY: as for `heap_with`.
        unsafe { front.claim(self.base(), self.len()) }.expect("arena large enough");
        front
    }
}

/// What the model drives: a [`Heap`] on any index, or a [`FrontHeap`]. The methods are those
/// of the heap, with the same contracts.
pub trait Subject {
    /// See [`Heap::allocate`].
    fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError>;
    /// See [`Heap::deallocate`].
    ///
    /// # Safety
    /// As there.
    unsafe fn deallocate(&mut self, ptr: NonNull<u8>, layout: Layout);
    /// See [`Heap::free`].
    ///
    /// # Safety
    /// As there.
    unsafe fn free(&mut self, ptr: NonNull<u8>);
    /// See [`Heap::realloc`].
    ///
    /// # Safety
    /// As there.
    unsafe fn realloc(
        &mut self,
        ptr: NonNull<u8>,
        old: Layout,
        new_size: usize,
    ) -> Result<NonNull<u8>, AllocError>;
    /// See [`Heap::try_grow_in_place`].
    ///
    /// # Safety
    /// As there.
    unsafe fn try_grow_in_place(&mut self, ptr: NonNull<u8>, size: usize)
        -> Result<(), AllocError>;
    /// See [`Heap::allocate_run`].
    fn allocate_run(
        &mut self,
        layout: Layout,
        count: usize,
        each: &mut dyn FnMut(NonNull<u8>),
    ) -> usize;
    /// See [`Heap::usable_size`].
    ///
    /// # Safety
    /// As there.
    unsafe fn usable_size(ptr: NonNull<u8>) -> usize;
    /// See [`Heap::check`].
    fn check(&self) -> Result<(), Corruption>;
    /// See [`Heap::stats`].
    fn stats(&self) -> Stats;
    /// Whether a request for `layout` may be served from memory the subject holds in reserve
    /// (counted in use), so that it may succeed when the largest free block is too small.
    fn may_serve_from_reserve(&self, _layout: Layout) -> bool {
        false
    }
    /// Gives memory held in reserve back, so that a subject with no live block has nothing in
    /// use.
    fn give_back_reserve(&mut self) {}
}

/// Implements [`Subject`] by forwarding to the type's own methods of the same names.
macro_rules! forward_subject {
    ($ty:ident) => {
        fn allocate(&mut self, layout: Layout) -> Result<NonNull<u8>, AllocError> {
            $ty::allocate(self, layout)
        }
        unsafe fn deallocate(&mut self, ptr: NonNull<u8>, layout: Layout) {
            // SAFETY: forwarded from the caller.
            unsafe { $ty::deallocate(self, ptr, layout) }
        }
        unsafe fn free(&mut self, ptr: NonNull<u8>) {
            // SAFETY: forwarded from the caller.
            unsafe { $ty::free(self, ptr) }
        }
        unsafe fn realloc(
            &mut self,
            ptr: NonNull<u8>,
            old: Layout,
            new_size: usize,
        ) -> Result<NonNull<u8>, AllocError> {
            // SAFETY: forwarded from the caller.
            unsafe { $ty::realloc(self, ptr, old, new_size) }
        }
        unsafe fn try_grow_in_place(
            &mut self,
            ptr: NonNull<u8>,
            size: usize,
        ) -> Result<(), AllocError> {
            // SAFETY: forwarded from the caller.
            unsafe { $ty::try_grow_in_place(self, ptr, size) }
        }
        fn allocate_run(
            &mut self,
            layout: Layout,
            count: usize,
            each: &mut dyn FnMut(NonNull<u8>),
        ) -> usize {
            $ty::allocate_run(self, layout, count, each)
        }
        unsafe fn usable_size(ptr: NonNull<u8>) -> usize {
            // SAFETY: forwarded from the caller.
            unsafe { $ty::usable_size(ptr) }
        }
        fn check(&self) -> Result<(), Corruption> {
            $ty::check(self)
        }
        fn stats(&self) -> Stats {
            $ty::stats(self)
        }
    };
}

impl<I: FreeIndex> Subject for Heap<I> {
    forward_subject!(Heap);
}

impl<I: FreeIndex> Subject for FrontHeap<I> {
    forward_subject!(FrontHeap);

    fn may_serve_from_reserve(&self, layout: Layout) -> bool {
        layout.size() <= FrontHeap::<I>::MAX_SMALL && layout.align() <= heapworks::GRANULE
    }

    fn give_back_reserve(&mut self) {
        self.trim();
    }
}

/// One operation on the heap. Slots name live blocks by position (taken modulo the number of
/// live blocks, so any value is valid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Allocate `size` bytes aligned to `1 << align_log2`.
    Alloc { size: usize, align_log2: u8 },
    /// Free with the layout, as `GlobalAlloc::dealloc`.
    Dealloc { slot: usize },
    /// Free without the size, as C's `free`.
    Free { slot: usize },
    /// Resize, keeping the alignment.
    Realloc { slot: usize, size: usize },
    /// Grow without moving, if the neighbour allows.
    GrowInPlace { slot: usize, size: usize },
    /// Allocate up to `count` word-aligned blocks of `size` bytes as one run.
    AllocRun { size: usize, count: usize },
}

impl Op {
    /// Decodes operations from arbitrary bytes (for fuzzing): 4 bytes an operation.
    pub fn decode_all(bytes: &[u8], max_size: usize) -> Vec<Op> {
        bytes
            .chunks_exact(4)
            .map(|b| {
                let value = u16::from_le_bytes([b[1], b[2]]) as usize;
                let size = value * (b[3] as usize + 1) % (max_size + 1);
                let slot = value;
                match b[0] % 9 {
                    0..=2 => Op::Alloc {
                        size,
                        align_log2: b[3] % 13,
                    },
                    3 => Op::Dealloc { slot },
                    4 => Op::Free { slot },
                    5 | 6 => Op::Realloc {
                        slot: b[3] as usize,
                        size,
                    },
                    7 => Op::GrowInPlace {
                        slot: b[3] as usize,
                        size,
                    },
                    _ => Op::AllocRun {
                        size,
                        count: usize::from(b[3] % 65),
                    },
                }
            })
            .collect()
    }
}

/// Whether the heap, whose statistics were `before`, must serve a request for `size` bytes
/// at alignment `align` from one free block: `largest_free` is the payload of the largest free
/// chunk (its size less the one-word header), 0 when there is none, and a request of alignment
/// up to the granule needs a chunk of `size` plus the header rounded up to the granule, which a
/// chunk of a granule multiple holds exactly when its payload holds `size`. `None` for larger
/// alignments, which need room for padding and so promise nothing exact.
fn servable(before: &Stats, size: usize, align: usize) -> Option<bool> {
    (align <= heapworks::GRANULE).then_some(before.largest_free > 0 && size <= before.largest_free)
}

/// Panics unless `succeeded` is what the largest free block before the request promised.
/// With `reserve` (the subject may serve it from memory held in reserve), only a failure is
/// bound to it.
fn assert_served_as_promised(
    before: &Stats,
    (size, align): (usize, usize),
    reserve: bool,
    succeeded: bool,
    what: &str,
) {
    if let Some(servable) = servable(before, size, align) {
        if reserve && succeeded {
            return;
        }
        assert_eq!(
            succeeded,
            servable,
            "{what} of {size} bytes (align {align}) {} with the largest free block {} bytes",
            if succeeded { "succeeded" } else { "failed" },
            before.largest_free
        );
    }
}

/// A live block in the shadow.
#[derive(Debug, Clone, Copy)]
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
    id: u64,
}

/// What a run did, for tests that want to see the work was real.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub allocations: u64,
    pub failed_allocations: u64,
    pub frees: u64,
    pub reallocs: u64,
    pub reallocs_in_place: u64,
    pub failed_reallocs: u64,
    pub grown_in_place: u64,
}

/// A heap, its arena's bounds, and the shadow of its live blocks.
pub struct Model<'a, H: Subject = Heap> {
    heap: &'a mut H,
    bounds: std::ops::Range<usize>,
    live: Vec<Block>,
    /// Live blocks by start address → end address, for overlap checks.
    spans: BTreeMap<usize, usize>,
    next_id: u64,
    ops_run: u64,
    check_every: u64,
    pub tally: Tally,
}

impl<'a, H: Subject> Model<'a, H> {
    /// A model over `heap`, whose blocks must all lie in `bounds`. `check()` runs after every
    /// `check_every` operations.
    pub fn new(heap: &'a mut H, bounds: std::ops::Range<usize>, check_every: u64) -> Self {
        Model {
            heap,
            bounds,
            live: Vec::new(),
            spans: BTreeMap::new(),
            next_id: 1,
            ops_run: 0,
            check_every: check_every.max(1),
            tally: Tally::default(),
        }
    }

    /// The number of live blocks.
    pub fn live_blocks(&self) -> usize {
        self.live.len()
    }

    /// The total requested bytes of the live blocks.
    pub fn live_bytes(&self) -> usize {
        self.live.iter().map(|b| b.layout.size()).sum()
    }

    /// Runs one operation and verifies the heap.
    pub fn apply(&mut self, op: Op) {
        match op {
            Op::Alloc { size, align_log2 } => self.alloc(size, 1 << align_log2.min(20)),
            Op::Dealloc { slot } => self.free(slot, true),
            Op::Free { slot } => self.free(slot, false),
            Op::Realloc { slot, size } => self.realloc(slot, size),
            Op::GrowInPlace { slot, size } => self.grow_in_place(slot, size),
            Op::AllocRun { size, count } => self.alloc_run(size, count),
        }
        self.ops_run += 1;
        if self.ops_run.is_multiple_of(self.check_every) {
            self.check();
        }
    }

    /// Verifies the heap with its checker and the statistics against the shadow.
    pub fn check(&self) {
        if let Err(corruption) = self.heap.check() {
            panic!("after {} operations: {corruption}", self.ops_run);
        }
        let stats = self.heap.stats();
        assert!(stats.in_use >= self.live_bytes(), "in_use below live bytes");
        assert_eq!(stats.in_use + stats.free, stats.managed);
        assert!(stats.largest_free <= stats.free);
    }

    /// Frees every live block (verifying each) and checks the heap is whole again.
    pub fn free_all(&mut self) {
        while !self.live.is_empty() {
            self.free(0, false);
        }
        self.check();
        self.heap.give_back_reserve();
        self.check();
        let stats = self.heap.stats();
        assert_eq!(stats.in_use, 0, "bytes leaked after freeing everything");
    }

    fn alloc(&mut self, size: usize, align: usize) {
        let layout = Layout::from_size_align(size, align).expect("valid layout");
        let before = self.heap.stats();
        let result = self.heap.allocate(layout);
        let reserve = self.heap.may_serve_from_reserve(layout);
        let promise = (size, align);
        assert_served_as_promised(&before, promise, reserve, result.is_ok(), "an allocation");
        match result {
            Ok(ptr) => {
                self.tally.allocations += 1;
                let id = self.next_id;
                self.next_id += 1;
                self.admit(Block { ptr, layout, id });
                fill(ptr, 0..layout.size(), id);
            }
            Err(_) => {
                self.tally.failed_allocations += 1;
                self.assert_unchanged(before);
            }
        }
    }

    fn alloc_run(&mut self, size: usize, count: usize) {
        let layout = Layout::from_size_align(size, 8).expect("valid layout");
        let before = self.heap.stats();
        let mut blocks = Vec::new();
        let made = self
            .heap
            .allocate_run(layout, count, &mut |ptr| blocks.push(ptr));
        assert_eq!(made, blocks.len(), "allocate_run miscounted its blocks");
        assert!(made <= count, "allocate_run made {made} blocks of {count}");
        if count > 0 {
            assert_served_as_promised(&before, (size, 8), false, made > 0, "a run");
        }
        if made == 0 {
            self.tally.failed_allocations += 1;
            self.assert_unchanged(before);
            return;
        }
        assert!(
            blocks.windows(2).all(|pair| pair[0] < pair[1]),
            "a run's blocks come in address order"
        );
        for ptr in blocks {
            self.tally.allocations += 1;
            let id = self.next_id;
            self.next_id += 1;
            self.admit(Block { ptr, layout, id });
            fill(ptr, 0..layout.size(), id);
        }
    }

    fn free(&mut self, slot: usize, with_layout: bool) {
        let Some(index) = self.slot(slot) else { return };
        let block = self.live.swap_remove(index);
        self.spans.remove(&block.ptr.as_ptr().addr());
        verify(block.ptr, 0..block.layout.size(), block.id, "free");
        // SAFETY: `block` is live in this heap with this layout, and is forgotten here.
        unsafe {
            if with_layout {
                self.heap.deallocate(block.ptr, block.layout);
            } else {
                self.heap.free(block.ptr);
            }
        }
        self.tally.frees += 1;
    }

    fn realloc(&mut self, slot: usize, size: usize) {
        let Some(index) = self.slot(slot) else { return };
        let block = self.live[index];
        verify(
            block.ptr,
            0..block.layout.size(),
            block.id,
            "realloc (before)",
        );
        let before = self.heap.stats();
        // SAFETY: `block` is live in this heap with this layout.
        let result = unsafe { self.heap.realloc(block.ptr, block.layout, size) };
        if result.is_err() {
            // A realloc also succeeds in place or by sliding back, so only a failure is bound
            // to the largest free block: it must have been too small.
            let align = block.layout.align();
            assert_served_as_promised(&before, (size, align), false, false, "a realloc");
        }
        match result {
            Ok(ptr) => {
                self.tally.reallocs += 1;
                if ptr == block.ptr {
                    self.tally.reallocs_in_place += 1;
                }
                let kept = block.layout.size().min(size);
                verify(ptr, 0..kept, block.id, "realloc (after)");
                self.live.swap_remove(index);
                self.spans.remove(&block.ptr.as_ptr().addr());
                let layout = Layout::from_size_align(size, block.layout.align()).unwrap();
                self.admit(Block {
                    ptr,
                    layout,
                    ..block
                });
                fill(ptr, 0..size, block.id);
            }
            Err(_) => {
                self.tally.failed_reallocs += 1;
                self.assert_unchanged(before);
                verify(
                    block.ptr,
                    0..block.layout.size(),
                    block.id,
                    "failed realloc",
                );
            }
        }
    }

    fn grow_in_place(&mut self, slot: usize, size: usize) {
        let Some(index) = self.slot(slot) else { return };
        let block = self.live[index];
        if size < block.layout.size() {
            return;
        }
        // SAFETY: `block` is live in this heap.
        if unsafe { self.heap.try_grow_in_place(block.ptr, size) }.is_ok() {
            self.tally.grown_in_place += 1;
            self.live.swap_remove(index);
            self.spans.remove(&block.ptr.as_ptr().addr());
            let layout = Layout::from_size_align(size, block.layout.align()).unwrap();
            self.admit(Block { layout, ..block });
            verify(block.ptr, 0..block.layout.size(), block.id, "grow in place");
            fill(block.ptr, 0..size, block.id);
        }
    }

    fn slot(&self, slot: usize) -> Option<usize> {
        (!self.live.is_empty()).then(|| slot % self.live.len())
    }

    /// Verifies a new block's placement and records it.
    fn admit(&mut self, block: Block) {
        let start = block.ptr.as_ptr().addr();
        // SAFETY: `block` is live in this heap.
        let usable = unsafe { H::usable_size(block.ptr) };
        let end = start + usable.max(1);
        assert_eq!(
            start % block.layout.align(),
            0,
            "misaligned block {block:?}"
        );
        assert!(
            usable >= block.layout.size(),
            "usable size {usable} too small"
        );
        assert!(
            self.bounds.start <= start && end <= self.bounds.end,
            "block {block:?} outside the arena"
        );
        if let Some((_, &prev_end)) = self.spans.range(..=start).next_back() {
            assert!(prev_end <= start, "block {block:?} overlaps the one before");
        }
        if let Some((&next_start, _)) = self.spans.range(start..).next() {
            assert!(end <= next_start, "block {block:?} overlaps the one after");
        }
        self.spans.insert(start, end);
        self.live.push(block);
    }

    fn assert_unchanged(&self, before: Stats) {
        let after = self.heap.stats();
        assert_eq!(before, after, "a failed call changed the heap");
    }
}

/// The pattern byte at `offset` of block `id`.
fn pattern(id: u64, offset: usize) -> u8 {
    (id as usize).wrapping_mul(31).wrapping_add(offset / 8) as u8
}

/// Writes block `id`'s pattern over the bytes `range` of the block at `ptr`.
fn fill(ptr: NonNull<u8>, range: Range<usize>, id: u64) {
    // SAFETY: the block holds at least `range.end` bytes and is owned by the model.
    let bytes = unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), range.end) };
    for offset in range {
        bytes[offset] = pattern(id, offset);
    }
}

/// Panics unless the bytes `range` of the block at `ptr` still hold block `id`'s pattern.
fn verify(ptr: NonNull<u8>, range: Range<usize>, id: u64, when: &str) {
    // SAFETY: the block holds at least `range.end` bytes, those in `range` written by `fill`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), range.end) };
    if let Some(offset) = range
        .clone()
        .find(|&offset| bytes[offset] != pattern(id, offset))
    {
        panic!("block {id} lost its contents at byte {offset} ({when})");
    }
}

/// A small deterministic PRNG (xorshift64*), so runs repeat exactly for a seed.
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed` (any value).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A value in `0..bound` (`bound > 0`).
    pub fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }
}

/// A random operation: mostly small sizes, some large, alignments mostly natural.
pub fn random_op(rng: &mut Rng, live: usize, max_size: usize) -> Op {
    let roll = rng.below(100);
    let size = if rng.below(8) == 0 {
        rng.below(max_size + 1)
    } else {
        rng.below(max_size.min(256) + 1)
    };
    let slot = rng.below(usize::MAX);
    match roll {
        _ if live < 8 || roll < 45 => Op::Alloc {
            size,
            align_log2: if rng.below(10) == 0 {
                rng.below(13) as u8
            } else {
                3
            },
        },
        45..=69 => Op::Dealloc { slot },
        70..=79 => Op::Free { slot },
        80..=94 => Op::Realloc { slot, size },
        95..=96 => Op::AllocRun {
            size,
            count: rng.below(33),
        },
        _ => Op::GrowInPlace { slot, size },
    }
}

/// Runs `ops` random operations for `seed` over a fresh arena of `arena_bytes`, checking the heap
/// every `check_every` operations, then frees everything. Returns what was done.
pub fn soak(seed: u64, ops: usize, max_size: usize, arena_bytes: usize, check_every: u64) -> Tally {
    soak_with::<Bins>(seed, ops, max_size, arena_bytes, check_every)
}

/// [`soak`] on a heap over the free index `I`.
pub fn soak_with<I: FreeIndex>(
    seed: u64,
    ops: usize,
    max_size: usize,
    arena_bytes: usize,
    check_every: u64,
) -> Tally {
    let heap = |arena: &mut Arena| arena.heap_with::<I>();
    soak_on(heap, seed, ops, max_size, arena_bytes, check_every)
}

/// [`soak`] on the subject `make` builds over the arena (a [`FrontHeap`], say).
pub fn soak_on<H: Subject>(
    make: impl FnOnce(&mut Arena) -> H,
    seed: u64,
    ops: usize,
    max_size: usize,
    arena_bytes: usize,
    check_every: u64,
) -> Tally {
    let mut arena = Arena::new(arena_bytes);
    let bounds = arena.range();
    let mut subject = make(&mut arena);
    let mut model = Model::new(&mut subject, bounds, check_every);
    let mut rng = Rng::new(seed);
    for _ in 0..ops {
        let op = random_op(&mut rng, model.live_blocks(), max_size);
        model.apply(op);
    }
    model.check();
    model.free_all();
    model.tally
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The promise is exact at its edge: a request of exactly the largest free payload must be
    /// served, one byte more cannot be, and nothing is served from a heap with no free block.
    #[test]
    fn the_largest_free_block_serves_exactly_its_payload() {
        let mut arena = Arena::new(64 * 1024);
        let mut heap = arena.heap();
        let largest = heap.stats().largest_free;
        assert!(largest > 0);
        assert_eq!(servable(&heap.stats(), largest + 1, 8), Some(false));
        let too_large = Layout::from_size_align(largest + 1, 8).unwrap();
        assert!(heap.allocate(too_large).is_err());
        assert_eq!(
            servable(&heap.stats(), largest, heapworks::GRANULE),
            Some(true)
        );
        let exact = Layout::from_size_align(largest, heapworks::GRANULE).unwrap();
        let block = heap.allocate(exact).unwrap();
        let full = heap.stats();
        assert_eq!(full.largest_free, 0);
        assert_eq!(servable(&full, 0, 1), Some(false));
        assert!(heap.allocate(Layout::new::<u8>()).is_err());
        assert_eq!(servable(&full, 0, 2 * heapworks::GRANULE), None);
        // SAFETY: `block` is live in this heap.
        unsafe { heap.free(block) };
        heap.check().unwrap();
    }

    #[test]
    fn a_model_run_keeps_the_promise() {
        let tally = soak(7, 20_000, 2048, 32 * 1024, 8);
        assert!(
            tally.failed_allocations > 0 && tally.failed_reallocs > 0,
            "{tally:?}"
        );
    }
}

/// The README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
