//! Dense slots for sparse ids: what replay tables are indexed by.
//!
//! A trace may name its blocks with any ids up to [`crate::model::MAX_ID`]; a table indexed
//! by id would cost memory for the largest id, not for the blocks. [`IdSlots`] hands each id a
//! slot when a request names it and takes the slot back when the id stops being live, so the
//! slots in use never outnumber the live ids plus one (the id of the request at hand).
//!
//! Invariants:
//! - An id holds at most one slot, and a slot is held by at most one id.
//! - A freed slot is handed out again (last freed first) before a new one is made, so
//!   [`IdSlots::count`] is at most the most ids live at once, plus one.

use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;

/// Which slot each live id holds.
#[derive(Debug, Default)]
pub struct IdSlots {
    held: FxHashMap<u32, u32>,
    free: Vec<u32>,
    count: u32,
}

impl IdSlots {
    /// The slot `id` holds for a request, given to it now if it held none; when the request
    /// leaves the id not live (`stays_live` false), the slot goes back to be handed out again.
    pub fn slot(&mut self, id: u32, stays_live: bool) -> usize {
        let slot = match self.held.entry(id) {
            Entry::Occupied(held) if stays_live => *held.get(),
            Entry::Occupied(held) => {
                let slot = held.remove();
                self.free.push(slot);
                slot
            }
            Entry::Vacant(unheld) => {
                let slot = self.free.pop().unwrap_or_else(|| {
                    self.count += 1;
                    self.count - 1
                });
                if stays_live {
                    unheld.insert(slot);
                } else {
                    self.free.push(slot);
                }
                slot
            }
        };
        slot as usize
    }

    /// Slots ever handed out: the size a table indexed by slot needs.
    pub fn count(&self) -> usize {
        self.count as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_ids_get_dense_slots_that_are_recycled() {
        let mut slots = IdSlots::default();
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
}
