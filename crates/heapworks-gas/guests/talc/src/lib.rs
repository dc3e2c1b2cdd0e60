//! The talc guest (see `entries`).
#![no_std]

entries::guest!(talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator());
