//! The heapworks-gear guest (see `entries`).
#![no_std]

entries::guest!(heapworks::GearHeap = heapworks::GearHeap::new());
