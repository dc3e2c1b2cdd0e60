//! `heapworks-gas`: heapworks and its peers as wasm32 guests under Gear's gas meter.
//!
//! Builds the guest modules (`guests/`), instruments each with Gear's own instrumenter and
//! weights, runs every scenario on a fresh instance in wasmi, and meters every allocator call:
//! the instructions' gas, plus syscalls and Gear's page charges. Deterministic: no clock, fixed
//! seeds, so a run is also a gate (`--gate BASELINE.json`).
//!
//! GPL-3.0, because it links gear-wasm-instrument; the permissively licensed crates never
//! depend on it (`heapworks gas` runs this binary).

pub mod ft;
pub mod guests;
pub mod instrument;
pub mod machine;
pub mod measure;
pub mod nft;
pub mod programs;
pub mod report;
pub mod scenario;
pub mod schedule;
