//! A wasm32 guest that exercises every public entry of the core a program reaches through
//! `alloc` (allocate, free, realloc, over-aligned requests) on the shipped `UnsyncHeap`, on
//! `UnsyncHeap<FrontHeap>` (the small-object front, with its size-less `free`, `usable_size`
//! and `trim`) and on a raw `Heap` over each free index. Its panic handler formats the message and hands it to an
//! import, as a contract runtime's does: a panic path left anywhere in the allocator would
//! pull core's formatting and that import into the module, which `tests/no_panic.rs` rejects.
#![no_std]

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::fmt::Write;
use core::ptr::{self, NonNull};

use heapworks::{
    AddressRedBlackTree, Bins, FreeIndex, FrontHeap, Heap, Hybrid, MirroredRedBlackTree,
    ParentRedBlackTree, RedBlackTree, SegregatedLists, SplayTree, UnsyncHeap,
};

const ARENA_LEN: usize = 1 << 20;
static mut ARENA: [u8; ARENA_LEN] = [0; ARENA_LEN];

#[global_allocator]
// SAFETY: the module runs on one thread; the arena is used by this heap alone.
static GLOBAL: UnsyncHeap =
    unsafe { UnsyncHeap::with_region(&raw mut ARENA as *mut u8, ARENA_LEN) };

static mut FRONT_ARENA: [u8; ARENA_LEN] = [0; ARENA_LEN];

// SAFETY: the module runs on one thread; the arena is used by this heap alone.
static FRONT: UnsyncHeap<FrontHeap> =
    unsafe { UnsyncHeap::front_with_region(&raw mut FRONT_ARENA as *mut u8, ARENA_LEN) };

/// A raw heap over one of the indexes, claimed on first use from its own arena.
struct Raw<I: FreeIndex> {
    heap: UnsafeCell<Heap<I>>,
    arena: UnsafeCell<[u8; ARENA_LEN]>,
    claimed: UnsafeCell<bool>,
}

// SAFETY: the module runs on one thread.
unsafe impl<I: FreeIndex> Sync for Raw<I> {}

impl<I: FreeIndex> Raw<I> {
    const fn new() -> Self {
        Raw {
            heap: UnsafeCell::new(Heap::empty()),
            arena: UnsafeCell::new([0; ARENA_LEN]),
            claimed: UnsafeCell::new(false),
        }
    }

    /// # Safety
    /// One thread, no call in progress.
    unsafe fn heap(&self) -> &mut Heap<I> {
        // SAFETY: the caller's promise; the arena is this heap's alone.
        unsafe {
            let heap = &mut *self.heap.get();
            if !*self.claimed.get() {
                *self.claimed.get() = true;
                let _ = heap.claim(self.arena.get().cast(), ARENA_LEN);
            }
            heap
        }
    }

    /// # Safety
    /// As for `heap`, and `ptr` is null or a live block of this heap with `size`, `align`.
    unsafe fn exercise(&self, ptr: *mut u8, size: usize, align: usize, new: usize) -> *mut u8 {
        let Ok(layout) = Layout::from_size_align(size, align) else {
            return ptr::null_mut();
        };
        // SAFETY: forwarded from the caller.
        unsafe {
            let heap = self.heap();
            match NonNull::new(ptr) {
                None => heap
                    .allocate(layout)
                    .map_or(ptr::null_mut(), NonNull::as_ptr),
                Some(block) if new == 0 => {
                    heap.deallocate(block, layout);
                    ptr::null_mut()
                }
                Some(block) => heap
                    .realloc(block, layout, new)
                    .map_or(ptr::null_mut(), NonNull::as_ptr),
            }
        }
    }
}

static BINS: Raw<Bins> = Raw::new();
static SPLAY: Raw<SplayTree> = Raw::new();
static HYBRID: Raw<Hybrid> = Raw::new();
static SEGREGATED: Raw<SegregatedLists> = Raw::new();
static RED_BLACK: Raw<RedBlackTree> = Raw::new();
static MIRRORED: Raw<MirroredRedBlackTree> = Raw::new();
static PARENT: Raw<ParentRedBlackTree> = Raw::new();
static ADDRESS: Raw<AddressRedBlackTree> = Raw::new();

/// Allocates (`ptr` null), frees (`new` zero) or reallocates on the heap `which` (0..=6 and 9
/// a raw heap over an index, 7 the front through `GlobalAlloc`, 8 the front's size-less `free`
/// and a trim (returning the block's usable size as a pointer-sized number),
/// any other the global allocator).
///
/// # Safety
/// `ptr` is null or a live block of that heap allocated with `size` and `align`.
#[no_mangle]
pub unsafe extern "C" fn exercise(
    which: u32,
    ptr: *mut u8,
    size: usize,
    align: usize,
    new: usize,
) -> *mut u8 {
    // SAFETY: forwarded from the caller.
    unsafe {
        match which {
            0 => BINS.exercise(ptr, size, align, new),
            1 => SPLAY.exercise(ptr, size, align, new),
            2 => HYBRID.exercise(ptr, size, align, new),
            3 => SEGREGATED.exercise(ptr, size, align, new),
            4 => RED_BLACK.exercise(ptr, size, align, new),
            5 => MIRRORED.exercise(ptr, size, align, new),
            6 => PARENT.exercise(ptr, size, align, new),
            9 => ADDRESS.exercise(ptr, size, align, new),
            7 => through_global_alloc(&FRONT, ptr, size, align, new),
            8 => match NonNull::new(ptr) {
                Some(block) => {
                    let usable = FrontHeap::usable_size(block);
                    let front = FRONT.heap();
                    front.free(block);
                    front.trim();
                    ptr::without_provenance_mut(usable)
                }
                None => ptr::null_mut(),
            },
            _ => through_global_alloc(&GLOBAL, ptr, size, align, new),
        }
    }
}

/// `exercise` on a `GlobalAlloc`.
///
/// # Safety
/// As for `exercise`, on `allocator`.
unsafe fn through_global_alloc(
    allocator: &impl GlobalAlloc,
    ptr: *mut u8,
    size: usize,
    align: usize,
    new: usize,
) -> *mut u8 {
    // SAFETY: forwarded from the caller.
    unsafe {
        let layout = Layout::from_size_align_unchecked(size, align);
        match (ptr.is_null(), new) {
            (true, _) => allocator.alloc(layout),
            (false, 0) => {
                allocator.dealloc(ptr, layout);
                ptr::null_mut()
            }
            (false, _) => allocator.realloc(ptr, layout, new),
        }
    }
}

extern "C" {
    fn report(message: *const u8, len: usize);
}

/// The first 256 bytes of a panic message.
struct Message([u8; 256], usize);

impl Write for Message {
    fn write_str(&mut self, text: &str) -> core::fmt::Result {
        for &byte in text.as_bytes() {
            if let Some(slot) = self.0.get_mut(self.1) {
                *slot = byte;
                self.1 += 1;
            }
        }
        Ok(())
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let mut message = Message([0; 256], 0);
    let _ = write!(message, "{info}");
    // SAFETY: the import reads `len` bytes at `message`.
    unsafe { report(message.0.as_ptr(), message.1) };
    core::arch::wasm32::unreachable()
}
