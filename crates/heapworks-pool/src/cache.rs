//! The cache of returned buffers: sharded lists per size class, a byte budget, LRU eviction
//! and idle release.
//!
//! Layout: per shard, a *hot* place holding the shard's most recent return (an atomic
//! pointer to a boxed entry, null when empty), and one slot per class: a mutex around a list
//! of the class's other cached regions (boxed entries) in stamp order (oldest first), plus the
//! oldest and newest entries' stamps in atomics (`EMPTY` when the list is empty) that can be
//! read without the lock. A thread has a home shard (assigned round-robin on its first call):
//! it returns buffers to its home shard and takes from it first, then from the other shards.
//!
//! A return stamps its entry and swaps it into the hot place; the entry it replaces is filed
//! in its class's list (inserted in stamp order: returns racing for the hot place may file
//! out of order). A take names a range of classes and gets, in a shard, the hot entry if its
//! class is in the range (it is the shard's newest), or else the most recently returned region
//! among the range's slots (the largest newest stamp, read without locking; empty slots are
//! skipped): the region whose memory is the most likely still in the CPU's caches. A buffer
//! reused over and over thus goes through the hot place only: a swap on return, a load and a
//! swap on the next take, no lock. No lock is shared by all threads; a take from the lists
//! locks one slot (more only when a slot empties under it or the home shard has none).
//! Eviction, draining and counting first file every hot entry in its list.
//!
//! Budget: `reserved` counts the bytes of every cached region plus those about to be cached.
//! A return first reserves its bytes with a compare-and-swap that never lets `reserved` pass
//! the budget, evicting least recently returned regions (the smallest stamp over all slots)
//! while the reservation does not fit; if nothing is left to evict, or the region alone is
//! larger than the budget, the region is released instead of cached. Hence, at every instant,
//! bytes cached ≤ reserved ≤ budget, and the recorded peak is the largest reservation. With a
//! budget of 0 nothing is ever cached: the pool passes every buffer through.
//!
//! Stamps come from one counter, so on one thread the hot entry is its shard's newest and
//! eviction follows exact LRU order across classes; with several threads returning at once
//! it is LRU up to the races between those returns.
//!
//! Idle release (when configured): each return records its time; regions returned longer ago
//! than the idle time are released by [`Cache::release_idle`] and by a sweep that a return
//! triggers at most every half idle time.

use std::ops::Range;
use std::ptr;
use std::sync::atomic::{
    AtomicPtr, AtomicU64, AtomicUsize, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed,
    Ordering::Release,
};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::backend::Region;

/// The stamp of an empty slot.
const EMPTY: u64 = u64::MAX;

/// Cached regions of one pool.
pub(crate) struct Cache {
    shards: Box<[Shard]>,
    budget: usize,
    /// Bytes cached or reserved for a region about to be cached; never above `budget`.
    reserved: AtomicUsize,
    peak: AtomicUsize,
    /// The next return's stamp.
    clock: AtomicU64,
    evictions: AtomicU64,
    idle_releases: AtomicU64,
    /// Release regions idle this long, if set.
    idle: Option<Duration>,
    /// Nanoseconds since `epoch` from which a return sweeps idle regions.
    next_sweep: AtomicU64,
    epoch: Instant,
}

struct Shard {
    /// The shard's most recent return, if no request has taken it yet (null if none): a
    /// boxed entry owned by whoever swaps it out. Cached like the lists' entries (in the
    /// budget, stamped), and newer than all of them but for racing returns.
    hot: AtomicPtr<Entry>,
    /// Hits served by `hot`, and the bytes they asked for.
    hot_hits: AtomicU64,
    hot_hit_bytes: AtomicU64,
    slots: Box<[Slot]>,
    misses: AtomicU64,
    missed_bytes: AtomicU64,
}

impl Drop for Shard {
    fn drop(&mut self) {
        let hot = *self.hot.get_mut();
        if !hot.is_null() {
            // SAFETY: a non-null `hot` came from `Box::into_raw` and is owned by the shard
            // (nothing swapped it out); `&mut self` excludes every other access.
            drop(unsafe { Box::from_raw(hot) });
        }
    }
}

struct Slot {
    list: Mutex<List>,
    /// Stamp of the list's front entry, or `EMPTY`.
    oldest: AtomicU64,
    /// Stamp of the list's back entry, or `EMPTY`.
    newest: AtomicU64,
}

#[derive(Default)]
struct List {
    /// Oldest return first. Boxed: an entry moves between the cache and a buffer as one
    /// pointer, and is made and freed only with its region.
    #[allow(clippy::vec_box)]
    entries: Vec<Box<Entry>>,
    hits: u64,
    hit_bytes: u64,
}

/// A pooled region and what the cache knows of it. Boxed, so that a buffer and the cache
/// hand it to each other as one pointer: it is made with the region (a miss) and freed with
/// it (an eviction, or a return the pool does not cache).
pub(crate) struct Entry {
    pub region: Region,
    /// The class the region goes back under (the one it was made for).
    pub class: usize,
    /// Its last return's stamp (meaningful while cached).
    stamp: u64,
    /// Nanoseconds since the cache's epoch at its last return (0 when idle release is off).
    returned_ns: u64,
}

impl Entry {
    /// A fresh region of class `class`, to be handed out.
    pub fn new(region: Region, class: usize) -> Box<Self> {
        Box::new(Self {
            region,
            class,
            stamp: EMPTY,
            returned_ns: 0,
        })
    }
}

/// What the cache has counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub idle_releases: u64,
    pub bytes_cached: usize,
    pub peak_bytes_cached: usize,
    pub buffers_cached: usize,
    pub bytes_handed_out: u64,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, List> {
        // A panic never happens while a list is locked (no user code runs under it), so a
        // poisoned lock still guards a consistent list.
        self.list.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The newest region, counted as a hit for a request of `len` bytes; `None` if the slot
    /// is empty.
    #[inline]
    fn pop_newest(&self, len: usize) -> Option<Box<Entry>> {
        let mut list = self.lock();
        let entry = list.entries.pop()?;
        list.hits += 1;
        list.hit_bytes += len as u64;
        let newest = list.entries.last().map_or(EMPTY, |e| e.stamp);
        self.newest.store(newest, Relaxed);
        if newest == EMPTY {
            self.oldest.store(EMPTY, Relaxed);
        }
        Some(entry)
    }

    /// Files a stamped entry in stamp order (from the back: usually its place).
    fn insert(&self, entry: Box<Entry>) {
        let mut list = self.lock();
        let at = list
            .entries
            .iter()
            .rposition(|e| e.stamp < entry.stamp)
            .map_or(0, |before| before + 1);
        list.entries.insert(at, entry);
        self.note_ends(&list);
    }

    /// Refreshes `oldest` and `newest` from the list (called with the lock held).
    fn note_ends(&self, list: &List) {
        let oldest = list.entries.first().map_or(EMPTY, |e| e.stamp);
        let newest = list.entries.last().map_or(EMPTY, |e| e.stamp);
        self.oldest.store(oldest, Relaxed);
        self.newest.store(newest, Relaxed);
    }
}

impl Shard {
    /// The shard's most recent return if its class is in `classes`, counted as a hit.
    #[inline(always)]
    fn take_hot(&self, classes: &Range<usize>, len: usize) -> Option<Box<Entry>> {
        if self.hot.load(Relaxed).is_null() {
            return None;
        }
        let hot = self.hot.swap(ptr::null_mut(), Acquire);
        if hot.is_null() {
            return None; // taken meanwhile
        }
        // SAFETY: a non-null `hot` came from `Box::into_raw` (see `put_hot`), and the swap
        // made this thread its only owner.
        let entry = unsafe { Box::from_raw(hot) };
        if !classes.contains(&entry.class) {
            self.restore_hot(entry);
            return None;
        }
        self.hot_hits.fetch_add(1, Relaxed);
        self.hot_hit_bytes.fetch_add(len as u64, Relaxed);
        Some(entry)
    }

    /// Makes a stamped `entry` the shard's most recent return; the one it replaces (if any)
    /// is filed in its class's list.
    #[inline]
    fn put_hot(&self, entry: Box<Entry>) {
        let replaced = self.hot.swap(Box::into_raw(entry), AcqRel);
        if !replaced.is_null() {
            // SAFETY: as in `take_hot`: the swap made this thread the owner of `replaced`.
            self.file(unsafe { Box::from_raw(replaced) });
        }
    }

    /// Puts back an entry taken from `hot` that the request could not use, or files it if
    /// another return took its place meanwhile.
    #[cold]
    fn restore_hot(&self, entry: Box<Entry>) {
        let entry = Box::into_raw(entry);
        if let Err(_taken) = self
            .hot
            .compare_exchange(ptr::null_mut(), entry, Release, Relaxed)
        {
            // SAFETY: the exchange failed, so `entry` (from `into_raw` just above) is still
            // this thread's alone.
            self.file(unsafe { Box::from_raw(entry) });
        }
    }

    /// Files `entry` in its class's list.
    #[inline(never)]
    fn file(&self, entry: Box<Entry>) {
        self.slots[entry.class].insert(entry);
    }

    /// Files the shard's most recent return in its list, so that only the lists hold
    /// entries (before eviction, draining and counting).
    fn demote_hot(&self) {
        let hot = self.hot.swap(ptr::null_mut(), Acquire);
        if !hot.is_null() {
            // SAFETY: as in `take_hot`.
            self.file(unsafe { Box::from_raw(hot) });
        }
    }

    /// The most recently returned region of the slots of `classes` (cut to the shard's
    /// slots), with its class, counted as a hit; `None` when they are all empty. A slot
    /// emptied between the look (without locks) and the lock is skipped on the next look.
    #[inline(always)]
    fn take_newest(&self, classes: Range<usize>, len: usize) -> Option<Box<Entry>> {
        if let Some(entry) = self.take_hot(&classes, len) {
            return Some(entry);
        }
        let first = classes.start.min(self.slots.len());
        let candidates = &self.slots[first..classes.end.min(self.slots.len())];
        loop {
            let at = newest_index(candidates)?;
            if let Some(entry) = candidates[at].pop_newest(len) {
                return Some(entry);
            }
        }
    }
}

/// The index of the slot with the newest entry among `slots`; `None` if all are empty.
#[inline]
fn newest_index(slots: &[Slot]) -> Option<usize> {
    // `EMPTY` is `u64::MAX`, so `stamp + 1` wraps it to 0, below every real stamp.
    let mut newest = 0;
    let mut at = 0;
    for (index, slot) in slots.iter().enumerate() {
        let key = slot.newest.load(Relaxed).wrapping_add(1);
        if key > newest {
            newest = key;
            at = index;
        }
    }
    (newest != 0).then_some(at)
}

impl Cache {
    /// An empty cache of `classes` size classes in `shards` shards (a power of two).
    pub fn new(classes: usize, shards: usize, budget: usize, idle: Option<Duration>) -> Self {
        debug_assert!(shards.is_power_of_two());
        let shards = (0..shards)
            .map(|_| Shard {
                hot: AtomicPtr::new(ptr::null_mut()),
                hot_hits: AtomicU64::new(0),
                hot_hit_bytes: AtomicU64::new(0),
                slots: (0..classes)
                    .map(|_| Slot {
                        list: Mutex::new(List::default()),
                        oldest: AtomicU64::new(EMPTY),
                        newest: AtomicU64::new(EMPTY),
                    })
                    .collect(),
                misses: AtomicU64::new(0),
                missed_bytes: AtomicU64::new(0),
            })
            .collect();
        Self {
            shards,
            budget,
            reserved: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            idle_releases: AtomicU64::new(0),
            idle,
            next_sweep: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    /// The calling thread's home shard.
    fn home(&self) -> usize {
        use std::cell::Cell;
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        thread_local! {
            static HOME: Cell<usize> = const { Cell::new(usize::MAX) };
        }
        let home = HOME.with(|home| {
            if home.get() == usize::MAX {
                home.set(NEXT.fetch_add(1, Relaxed));
            }
            home.get()
        });
        home & (self.shards.len() - 1)
    }

    /// For a request of `len` bytes, the most recently returned region of any class in
    /// `classes` (in the home shard, then shard by shard after it), counted as a hit; `None`
    /// when every one of those slots is empty.
    pub fn take(&self, classes: Range<usize>, len: usize) -> Option<Box<Entry>> {
        self.take_at_home(classes.clone(), len)
            .or_else(|| self.take_elsewhere(classes, len))
    }

    /// [`take`](Self::take) in the calling thread's home shard only: the hit path, the
    /// newest stamps of the slots of `classes`, then one slot's lock.
    #[inline(always)]
    pub fn take_at_home(&self, classes: Range<usize>, len: usize) -> Option<Box<Entry>> {
        let hit = self.shards[self.home()].take_newest(classes, len)?;
        self.reserved.fetch_sub(hit.region.capacity(), Relaxed);
        Some(hit)
    }

    /// [`take`](Self::take) in the shards after the home shard.
    pub fn take_elsewhere(&self, classes: Range<usize>, len: usize) -> Option<Box<Entry>> {
        let home = self.home();
        let mask = self.shards.len() - 1;
        let hit = (1..self.shards.len())
            .find_map(|step| self.shards[(home + step) & mask].take_newest(classes.clone(), len))?;
        self.reserved.fetch_sub(hit.region.capacity(), Relaxed);
        Some(hit)
    }

    /// Counts a request of `len` bytes served by a fresh region.
    pub fn count_miss(&self, len: usize) {
        let shard = &self.shards[self.home()];
        shard.misses.fetch_add(1, Relaxed);
        shard.missed_bytes.fetch_add(len as u64, Relaxed);
    }

    /// Caches `entry`'s region under its class, evicting least recently returned regions to
    /// stay within the budget, or releases it when it cannot be cached.
    #[inline]
    pub fn put(&self, entry: Box<Entry>) {
        let returned_ns = match self.idle {
            Some(idle) => self.now_sweeping(idle),
            None => 0,
        };
        self.put_at(entry, returned_ns);
    }

    /// The time of a return (nanoseconds since the epoch), after sweeping idle regions if due.
    #[inline(never)]
    fn now_sweeping(&self, idle: Duration) -> u64 {
        let now = self.now_ns();
        self.sweep_if_due(now, idle);
        now
    }

    #[inline]
    fn put_at(&self, mut entry: Box<Entry>, returned_ns: u64) {
        if !self.reserve(entry.region.capacity()) {
            return; // `entry` and its region are released here
        }
        entry.returned_ns = returned_ns;
        entry.stamp = self.clock.fetch_add(1, Relaxed);
        self.shards[self.home()].put_hot(entry);
    }

    /// Files every shard's most recent return in its list.
    fn demote_all_hot(&self) {
        for shard in self.shards.iter() {
            shard.demote_hot();
        }
    }

    /// Reserves `bytes` within the budget, evicting as needed; false if they cannot fit.
    #[inline]
    fn reserve(&self, bytes: usize) -> bool {
        if bytes > self.budget {
            return false;
        }
        let mut current = self.reserved.load(Relaxed);
        loop {
            if current + bytes <= self.budget {
                match self.reserved.compare_exchange_weak(
                    current,
                    current + bytes,
                    Relaxed,
                    Relaxed,
                ) {
                    Ok(_) => {
                        if current + bytes > self.peak.load(Relaxed) {
                            self.peak.fetch_max(current + bytes, Relaxed);
                        }
                        return true;
                    }
                    Err(now) => current = now,
                }
            } else if self.evict_oldest() {
                current = self.reserved.load(Relaxed);
            } else {
                return false;
            }
        }
    }

    /// Releases the least recently returned region of any class; false if none is cached.
    #[cold]
    #[inline(never)]
    fn evict_oldest(&self) -> bool {
        self.demote_all_hot();
        loop {
            let oldest = self
                .shards
                .iter()
                .flat_map(|shard| shard.slots.iter())
                .map(|slot| (slot.oldest.load(Relaxed), slot))
                .filter(|(stamp, _)| *stamp != EMPTY)
                .min_by_key(|(stamp, _)| *stamp);
            let Some((_, slot)) = oldest else {
                return false;
            };
            let mut list = slot.lock();
            if list.entries.is_empty() {
                continue; // taken meanwhile: look again
            }
            let entry = list.entries.remove(0);
            slot.note_ends(&list);
            drop(list);
            self.reserved.fetch_sub(entry.region.capacity(), Relaxed);
            self.evictions.fetch_add(1, Relaxed);
            return true; // `entry.region` is released here
        }
    }

    fn now_ns(&self) -> u64 {
        nanos(self.epoch.elapsed())
    }

    /// Sweeps idle regions if half an idle time has passed since the last sweep.
    fn sweep_if_due(&self, now: u64, idle: Duration) {
        let due = self.next_sweep.load(Relaxed);
        let idle_ns = nanos(idle);
        if now >= due
            && self
                .next_sweep
                .compare_exchange(due, now.saturating_add(idle_ns / 2), Relaxed, Relaxed)
                .is_ok()
        {
            if let Some(cutoff) = now.checked_sub(idle_ns) {
                self.release_returned_before(cutoff);
            }
        }
    }

    /// Releases every region returned longer than the idle time ago; the number released (0
    /// when idle release is off).
    pub fn release_idle(&self) -> usize {
        let Some(idle) = self.idle else {
            return 0;
        };
        match self.now_ns().checked_sub(nanos(idle)) {
            Some(cutoff) => self.release_returned_before(cutoff),
            None => 0,
        }
    }

    /// Releases every region returned at or before `cutoff_ns`; the number released.
    fn release_returned_before(&self, cutoff_ns: u64) -> usize {
        let released = self.drain(|entry| entry.returned_ns <= cutoff_ns);
        self.idle_releases.fetch_add(released as u64, Relaxed);
        released
    }

    /// Releases every cached region.
    pub fn clear(&self) -> usize {
        self.drain(|_| true)
    }

    /// Releases the entries at the front of every list while `expired` holds for them.
    fn drain(&self, expired: impl Fn(&Entry) -> bool) -> usize {
        self.demote_all_hot();
        let mut released = 0;
        for slot in self.shards.iter().flat_map(|shard| shard.slots.iter()) {
            if slot.oldest.load(Relaxed) == EMPTY {
                continue;
            }
            let mut list = slot.lock();
            let count = list.entries.iter().take_while(|e| expired(e)).count();
            let gone: Vec<Box<Entry>> = list.entries.drain(..count).collect();
            slot.note_ends(&list);
            drop(list);
            let bytes: usize = gone.iter().map(|e| e.region.capacity()).sum();
            self.reserved.fetch_sub(bytes, Relaxed);
            released += gone.len();
        }
        released
    }

    /// Everything counted so far.
    pub fn counts(&self) -> Counts {
        let mut counts = Counts {
            evictions: self.evictions.load(Relaxed),
            idle_releases: self.idle_releases.load(Relaxed),
            bytes_cached: self.reserved.load(Relaxed),
            peak_bytes_cached: self.peak.load(Relaxed),
            ..Counts::default()
        };
        for shard in self.shards.iter() {
            counts.misses += shard.misses.load(Relaxed);
            counts.bytes_handed_out += shard.missed_bytes.load(Relaxed);
            counts.hits += shard.hot_hits.load(Relaxed);
            counts.bytes_handed_out += shard.hot_hit_bytes.load(Relaxed);
            counts.buffers_cached += usize::from(!shard.hot.load(Relaxed).is_null());
            for slot in shard.slots.iter() {
                let list = slot.lock();
                counts.hits += list.hits;
                counts.bytes_handed_out += list.hit_bytes;
                counts.buffers_cached += list.entries.len();
            }
        }
        counts
    }

    /// The capacities of the cached regions, least recently returned first.
    #[cfg(test)]
    fn lru_order(&self) -> Vec<usize> {
        self.demote_all_hot();
        let mut entries: Vec<(u64, usize)> = Vec::new();
        for slot in self.shards.iter().flat_map(|shard| shard.slots.iter()) {
            let list = slot.lock();
            entries.extend(list.entries.iter().map(|e| (e.stamp, e.region.capacity())));
        }
        entries.sort_unstable();
        entries.into_iter().map(|(_, capacity)| capacity).collect()
    }
}

/// `duration` in nanoseconds, saturated.
fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{Backend, Inline};

    fn region(capacity: usize) -> Region {
        Inline::default().allocate(capacity, false).unwrap()
    }

    fn cache(budget: usize) -> Cache {
        Cache::new(8, 2, budget, Some(Duration::from_secs(3600)))
    }

    #[test]
    fn eviction_follows_return_order_across_classes() {
        let cache = cache(1000);
        cache.put_at(Entry::new(region(100), 0), 0);
        cache.put_at(Entry::new(region(200), 3), 0);
        cache.put_at(Entry::new(region(300), 1), 0);
        cache.put_at(Entry::new(region(101), 0), 0);
        assert_eq!(cache.lru_order(), [100, 200, 300, 101]);
        cache.put_at(Entry::new(region(350), 2), 0); // 1051 > 1000: the oldest (100) goes
        assert_eq!(cache.lru_order(), [200, 300, 101, 350]);
        cache.put_at(Entry::new(region(450), 2), 0); // 1401: 200 and 300 go
        assert_eq!(cache.lru_order(), [101, 350, 450]);
        let counts = cache.counts();
        assert_eq!(counts.evictions, 3);
        assert_eq!(counts.bytes_cached, 901);
        assert_eq!(counts.peak_bytes_cached, 951);
    }

    #[test]
    fn a_hit_takes_the_most_recent_of_its_classes_and_refreshes_nothing_else() {
        let cache = cache(1000);
        cache.put_at(Entry::new(region(100), 0), 0);
        cache.put_at(Entry::new(region(110), 0), 0);
        cache.put_at(Entry::new(region(120), 1), 0);
        cache.put_at(Entry::new(region(130), 4), 0);
        let capacity_and_class =
            |taken: Option<Box<Entry>>| taken.map(|e| (e.region.capacity(), e.class));
        // The most recent of classes 0 and 1 is class 1's; class 4 is out of range.
        assert_eq!(capacity_and_class(cache.take(0..2, 90)), Some((120, 1)));
        assert_eq!(capacity_and_class(cache.take(0..1, 90)), Some((110, 0)));
        assert_eq!(cache.lru_order(), [100, 130]);
        assert!(cache.take(2..4, 90).is_none());
        // A range running past the last class is cut to it.
        assert_eq!(capacity_and_class(cache.take(4..99, 90)), Some((130, 4)));
        assert_eq!(cache.counts().hits, 3);
    }

    #[test]
    fn the_newest_return_waits_apart_and_the_others_in_stamp_order() {
        let cache = cache(10_000);
        for capacity in [100, 110, 120] {
            cache.put_at(Entry::new(region(capacity), 0), 0);
        }
        // 120 waits apart (the shard's hot entry); a request of another class leaves it.
        assert!(cache.take(1..2, 90).is_none());
        assert_eq!(cache.counts().buffers_cached, 3);
        let capacity = |taken: Option<Box<Entry>>| taken.map(|e| e.region.capacity());
        assert_eq!(capacity(cache.take(0..1, 90)), Some(120));
        assert_eq!(capacity(cache.take(0..1, 90)), Some(110));
        // Entries filed out of order (returns racing for the hot place) still line up.
        let slot = &cache.shards[0].slots[2];
        for (capacity, stamp) in [(200, 50), (210, 70), (220, 60)] {
            let mut entry = Entry::new(region(capacity), 2);
            entry.stamp = stamp;
            slot.insert(entry);
        }
        let stamps: Vec<u64> = slot.lock().entries.iter().map(|e| e.stamp).collect();
        assert_eq!(stamps, [50, 60, 70]);
        assert_eq!(slot.oldest.load(Relaxed), 50);
        assert_eq!(slot.newest.load(Relaxed), 70);
        assert_eq!(cache.counts().hits, 2);
    }

    #[test]
    fn regions_larger_than_the_budget_are_never_cached() {
        let cache = cache(1000);
        cache.put_at(Entry::new(region(600), 0), 0);
        cache.put_at(Entry::new(region(1001), 1), 0);
        assert_eq!(cache.lru_order(), [600]);
        let nothing = self::cache(0);
        nothing.put_at(Entry::new(region(64), 0), 0);
        assert_eq!(nothing.counts().buffers_cached, 0);
        assert_eq!(nothing.counts().peak_bytes_cached, 0);
    }

    #[test]
    fn idle_release_takes_only_regions_returned_before_the_cutoff() {
        let cache = cache(10_000);
        cache.put_at(Entry::new(region(100), 0), 5);
        cache.put_at(Entry::new(region(200), 1), 10);
        cache.put_at(Entry::new(region(300), 0), 20);
        cache.put_at(Entry::new(region(400), 2), 30);
        assert_eq!(cache.release_returned_before(10), 2);
        assert_eq!(cache.lru_order(), [300, 400]);
        assert_eq!(cache.counts().idle_releases, 2);
        assert_eq!(cache.counts().bytes_cached, 700);
        assert_eq!(cache.release_returned_before(4), 0);
        assert_eq!(cache.clear(), 2);
        assert_eq!(cache.counts().bytes_cached, 0);
    }

    #[test]
    fn release_idle_is_a_no_op_without_an_idle_time() {
        let cache = Cache::new(8, 1, 10_000, None);
        cache.put(Entry::new(region(100), 0));
        assert_eq!(cache.release_idle(), 0);
        assert_eq!(cache.counts().buffers_cached, 1);
    }
}
