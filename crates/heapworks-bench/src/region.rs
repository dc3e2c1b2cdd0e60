//! The memory every arena contender is built over: one aligned, pre-touched region that is
//! reused from trial to trial, so that no allocator pays page faults the others do not, and
//! every allocator sees the same physical pages. The workloads' own bookkeeping is pre-touched
//! the same way ([`prefault_spare`]), so that no timed loop faults its pages in.

use std::alloc::{alloc, dealloc, Layout};
use std::fmt;
use std::ptr::NonNull;

/// Page size assumed for pre-touching (one write per page faults every page in).
const PAGE: usize = 4096;

/// Writes `fill` once per page of `vec`'s spare capacity, so that pushes within it take no
/// page fault (a fresh mapping is backed only on its first write, and whether a `Vec` gets
/// fresh pages depends on the system allocator's history, i.e. on the order of the trials).
pub fn prefault_spare<T: Copy>(vec: &mut Vec<T>, fill: T) {
    let stride = (PAGE / std::mem::size_of::<T>().max(1)).max(1);
    let spare = vec.spare_capacity_mut();
    for slot in spare.iter_mut().step_by(stride) {
        slot.write(fill);
    }
    // The writes are never read as values: keep the compiler from dropping them.
    std::hint::black_box(spare);
}

/// An owned, writable, pre-touched block of memory.
pub struct Region {
    base: NonNull<u8>,
    layout: Layout,
}

/// The region could not be obtained from the system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionError {
    /// The size that was asked for.
    pub len: usize,
}

impl fmt::Display for RegionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "could not reserve a {} MiB region for the heaps",
            self.len >> 20
        )
    }
}

impl std::error::Error for RegionError {}

impl Region {
    /// Alignment of every region: 2 MiB, so that allocators see the same low address bits in
    /// every run (instruction counts depend on them) and huge pages can back the region.
    pub const ALIGN: usize = 2 << 20;

    /// Reserves `len` bytes (at least one page) and writes to every page.
    pub fn pretouched(len: usize) -> Result<Self, RegionError> {
        let layout =
            Layout::from_size_align(len.max(PAGE), Self::ALIGN).map_err(|_| RegionError { len })?;
        // SAFETY: `layout` has a non-zero size (at least one page).
        let base = NonNull::new(unsafe { alloc(layout) }).ok_or(RegionError { len })?;
        let region = Self { base, layout };
        region.touch_every_page();
        Ok(region)
    }

    /// Makes sure the region holds at least `len` bytes, replacing it with a larger one if not.
    pub fn ensure_len(&mut self, len: usize) -> Result<(), RegionError> {
        if self.len() < len {
            *self = Self::pretouched(len)?;
        }
        Ok(())
    }

    /// First byte of the region.
    pub fn base(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Size of the region in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }

    /// Regions are never empty; provided for API completeness with `len`.
    pub fn is_empty(&self) -> bool {
        false
    }

    fn touch_every_page(&self) {
        for offset in (0..self.len()).step_by(PAGE) {
            // SAFETY: `offset < len`, so the byte is inside the allocation we own; a volatile
            // write keeps the compiler from dropping the page fault we want to take now.
            unsafe { self.base.as_ptr().add(offset).write_volatile(0) };
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `base` came from `alloc` with exactly this layout and is freed only here.
        unsafe { dealloc(self.base.as_ptr(), self.layout) };
    }
}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("base", &self.base)
            .field("len", &self.len())
            .finish()
    }
}

/// Bytes of physical memory (`u64::MAX` if the system does not say).
pub fn physical_memory() -> u64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    match (u64::try_from(pages), u64::try_from(page_size)) {
        (Ok(pages), Ok(page_size)) if pages > 0 => pages.saturating_mul(page_size),
        _ => u64::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_is_aligned_and_grows() {
        let mut region = Region::pretouched(1 << 16).unwrap();
        assert_eq!(region.base() as usize % Region::ALIGN, 0);
        assert_eq!(region.len(), 1 << 16);
        region.ensure_len(1 << 20).unwrap();
        assert!(region.len() >= 1 << 20);
        region.ensure_len(1 << 10).unwrap();
        assert!(region.len() >= 1 << 20);
    }
}
