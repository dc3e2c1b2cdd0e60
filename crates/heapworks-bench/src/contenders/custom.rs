//! Contenders from outside this crate: an allocator author implements [`RawHeap`] for their
//! heap, [`register`]s it under a name, and it runs in every workload beside the built-in
//! peers, over the same region, behind the same lock (see `examples/bump.rs`).
//!
//! Invariants:
//! - Names are unique among all contenders (built-in and registered), non-empty, and free of
//!   commas and whitespace (they are `--filter` terms and table columns).
//! - A registered heap manages the region it is given: dropping it reclaims every block
//!   ([`RawHeap::DROP_RECLAIMS_BLOCKS`]); an unbounded heap is refused.
//! - A registered contender lives for the rest of the process (its entry is leaked once).
//! - Its heap is reached through one indirect call per request, where the built-in contenders
//!   are called directly: a constant handicap of a few instructions per call, which the
//!   `instructions` workload does not measure for it (its probes run the `heapworks` binary,
//!   which knows only the built-in contenders).

use std::alloc::Layout;
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;

use super::{AllocatorId, RawHeap, SetupError};

/// A registered contender: its name, what it is, and how to make its heap.
pub struct CustomContender {
    name: &'static str,
    version: &'static str,
    new_heap: fn() -> Box<dyn DynHeap>,
}

impl CustomContender {
    /// The name in tables and results.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// What was measured, e.g. `bump 0.1 (examples/bump.rs)`.
    pub fn version(&self) -> &'static str {
        self.version
    }

    /// A fresh, unclaimed heap.
    pub(super) fn heap(&self) -> CustomHeap {
        CustomHeap((self.new_heap)())
    }
}

// Names are unique, so a contender is identified by its name.
impl PartialEq for CustomContender {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for CustomContender {}

impl Hash for CustomContender {
    fn hash<S: Hasher>(&self, state: &mut S) {
        self.name.hash(state);
    }
}

impl PartialOrd for CustomContender {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for CustomContender {
    fn cmp(&self, other: &Self) -> Ordering {
        self.name.cmp(other.name)
    }
}

impl fmt::Debug for CustomContender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomContender")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish()
    }
}

/// Every contender registered so far, in registration order.
static REGISTERED: Mutex<Vec<&'static CustomContender>> = Mutex::new(Vec::new());

/// Registers the heap type `H` as the contender `name` (`version` says what it is and which
/// version, for the report), to be put in a [`Selection`](crate::runner::Selection) beside
/// the built-in contenders. Refuses a name already taken or unusable as a column, and a heap
/// that does not reclaim its blocks on drop.
pub fn register<H: RawHeap + 'static>(
    name: &str,
    version: &str,
) -> Result<AllocatorId, SetupError> {
    if name.is_empty() || name.contains(|c: char| c == ',' || c.is_whitespace()) {
        return Err(SetupError(format!(
            "`{name}` cannot name a contender (empty, or a comma or a space in it)"
        )));
    }
    if !H::DROP_RECLAIMS_BLOCKS {
        return Err(SetupError(format!(
            "`{name}` does not reclaim its blocks on drop: only arenas over the region can \
             be registered"
        )));
    }
    let mut registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    let taken = AllocatorId::from_name(name).is_some() || registered.iter().any(|c| c.name == name);
    if taken {
        return Err(SetupError(format!(
            "a contender is already called `{name}`"
        )));
    }
    let contender: &'static CustomContender = Box::leak(Box::new(CustomContender {
        name: Box::leak(name.into()),
        version: Box::leak(version.into()),
        new_heap: || Box::new(H::unclaimed()),
    }));
    registered.push(contender);
    Ok(AllocatorId::Custom(contender))
}

/// The registered contender called `name`, if any.
pub fn find(name: &str) -> Option<AllocatorId> {
    let registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    registered
        .iter()
        .find(|c| c.name == name)
        .map(|&c| AllocatorId::Custom(c))
}

/// [`RawHeap`] without its constructor and constant, so that heaps of any type fit one box.
pub(super) trait DynHeap: Send {
    /// [`RawHeap::claim`].
    ///
    /// # Safety
    /// As for [`RawHeap::claim`].
    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError>;
    /// [`RawHeap::allocate`].
    ///
    /// # Safety
    /// As for [`RawHeap::allocate`].
    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8;
    /// [`RawHeap::deallocate`].
    ///
    /// # Safety
    /// As for [`RawHeap::deallocate`].
    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout);
    /// [`RawHeap::reallocate`].
    ///
    /// # Safety
    /// As for [`RawHeap::reallocate`].
    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8;
}

impl<H: RawHeap> DynHeap for H {
    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { RawHeap::claim(self, base, len) }
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded from this function's contract.
        unsafe { RawHeap::allocate(self, layout) }
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded from this function's contract.
        unsafe { RawHeap::deallocate(self, ptr, layout) }
    }

    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded from this function's contract.
        unsafe { RawHeap::reallocate(self, ptr, layout, new_size) }
    }
}

/// The heap of a registered contender, boxed. Built by
/// [`with_allocator`](super::with_allocator) from its [`CustomContender`].
pub struct CustomHeap(Box<dyn DynHeap>);

/// What [`CustomHeap::unclaimed`] holds: a heap of no contender, which refuses every region.
struct NoContender;

impl RawHeap for NoContender {
    fn unclaimed() -> Self {
        NoContender
    }

    unsafe fn claim(&mut self, _base: *mut u8, _len: usize) -> Result<(), SetupError> {
        Err(SetupError(
            "a registered contender's heap is made from its registration".to_string(),
        ))
    }

    unsafe fn allocate(&mut self, _layout: Layout) -> *mut u8 {
        std::ptr::null_mut()
    }

    unsafe fn deallocate(&mut self, _ptr: *mut u8, _layout: Layout) {}
}

impl RawHeap for CustomHeap {
    // `register` refuses heaps that do not.
    const DROP_RECLAIMS_BLOCKS: bool = true;

    fn unclaimed() -> Self {
        CustomHeap(Box::new(NoContender))
    }

    unsafe fn claim(&mut self, base: *mut u8, len: usize) -> Result<(), SetupError> {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.0.claim(base, len) }
    }

    unsafe fn allocate(&mut self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.0.allocate(layout) }
    }

    unsafe fn deallocate(&mut self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.0.deallocate(ptr, layout) }
    }

    unsafe fn reallocate(&mut self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded from this function's contract.
        unsafe { self.0.reallocate(ptr, layout, new_size) }
    }
}
