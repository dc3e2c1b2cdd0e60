// Runs the module under Node (no glue: plain WebAssembly exports) and checks its answers.
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";

const path = new URL("target/wasm32-unknown-unknown/release/wasm_example.wasm", import.meta.url);
const { instance } = await WebAssembly.instantiate(readFileSync(path));
const { primes_below, heap_in_use } = instance.exports;

assert.equal(primes_below(1_000_000), 78498);
assert.equal(primes_below(100), 25);
assert.equal(heap_in_use(), 0, "everything freed");
console.log(`wasm32: primes below 10^6 = 78498 over heapworks; heap in use after: ${heap_in_use()} B`);
