//! Dense slots for ids: what replay tables are indexed by.
//!
//! A trace may name its blocks with any ids up to [`crate::model::MAX_ID`]; a table indexed
//! by id would cost memory for the largest id, not for the blocks. [`IdSlots`] gives each id
//! a slot:
//! - when the ids are compact (the largest is below [`DIRECT_IDS_PER_REQUEST`] times the
//!   number of requests, plus [`DIRECT_IDS_SLACK`], as in every captured trace, whose ids stay
//!   below its peak number of live blocks, and in seed 003's scripts), an id's slot is the id
//!   itself: no look-up, and tables proportional to the trace;
//! - otherwise an id takes a slot when a request names it and gives it back when it stops being
//!   live, so the slots in use never outnumber the live ids plus one (the id of the request at
//!   hand).
//!
//! Invariants: an id holds at most one slot at a time and a slot is held by at most one id;
//! [`IdSlots::count`] is at most the largest id plus one when direct, else the most ids live
//! at once plus one (a freed slot is handed out again, last freed first, before a new one).

use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

/// Direct slots while the largest id is below this many times the number of requests …
pub const DIRECT_IDS_PER_REQUEST: usize = 2;
/// … plus this many.
pub const DIRECT_IDS_SLACK: usize = 1024;

/// Which slot each id holds.
#[derive(Debug)]
pub enum IdSlots {
    /// Each id is its own slot; `count` is one more than the largest id seen.
    Direct { count: usize },
    /// Live ids hold recycled slots.
    Recycled {
        held: FxHashMap<u32, u32>,
        free: Vec<u32>,
        count: u32,
    },
}

impl IdSlots {
    /// Slots for `requests` requests whose largest id is `largest_id`.
    pub fn new(largest_id: u32, requests: usize) -> Self {
        let direct_limit = requests
            .saturating_mul(DIRECT_IDS_PER_REQUEST)
            .saturating_add(DIRECT_IDS_SLACK);
        if (largest_id as usize) < direct_limit {
            IdSlots::Direct { count: 0 }
        } else {
            IdSlots::Recycled {
                held: FxHashMap::default(),
                free: Vec::new(),
                count: 0,
            }
        }
    }

    /// The slot `id` holds for a request, given to it now if it held none; when the request
    /// leaves the id not live (`stays_live` false), a recycled slot goes back to be handed out
    /// again.
    pub fn slot(&mut self, id: u32, stays_live: bool) -> usize {
        match self {
            IdSlots::Direct { count } => {
                *count = (*count).max(id as usize + 1);
                id as usize
            }
            IdSlots::Recycled { held, free, count } => {
                let slot = match held.entry(id) {
                    Entry::Occupied(holder) if stays_live => *holder.get(),
                    Entry::Occupied(holder) => {
                        let slot = holder.remove();
                        free.push(slot);
                        slot
                    }
                    Entry::Vacant(unheld) => {
                        let slot = free.pop().unwrap_or_else(|| {
                            *count += 1;
                            *count - 1
                        });
                        if stays_live {
                            unheld.insert(slot);
                        } else {
                            free.push(slot);
                        }
                        slot
                    }
                };
                slot as usize
            }
        }
    }

    /// Slots handed out so far: the size a table indexed by slot needs.
    pub fn count(&self) -> usize {
        match self {
            IdSlots::Direct { count } => *count,
            IdSlots::Recycled { count, .. } => *count as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_ids_get_dense_slots_that_are_recycled() {
        let mut slots = IdSlots::new(67_108_863, 7);
        assert!(matches!(slots, IdSlots::Recycled { .. }));
        assert_eq!(slots.slot(67_108_863, true), 0);
        assert_eq!(slots.slot(5, true), 1);
        assert_eq!(slots.slot(67_108_863, true), 0, "an id keeps its slot");
        assert_eq!(
            slots.slot(67_108_863, false),
            0,
            "and gives it back when freed"
        );
        assert_eq!(
            slots.slot(12, false),
            0,
            "a request on an id that is not live"
        );
        assert_eq!(
            slots.slot(40_000_000, true),
            0,
            "a freed slot is taken again"
        );
        assert_eq!(slots.slot(5, false), 1);
        assert_eq!(slots.count(), 2);
    }

    #[test]
    fn compact_ids_are_their_own_slots() {
        let mut slots = IdSlots::new(2047, 512);
        assert!(matches!(slots, IdSlots::Direct { .. }));
        assert_eq!(slots.slot(2047, true), 2047);
        assert_eq!(slots.slot(3, false), 3);
        assert_eq!(slots.count(), 2048);
        assert!(matches!(IdSlots::new(2048, 512), IdSlots::Recycled { .. }));
    }
}
