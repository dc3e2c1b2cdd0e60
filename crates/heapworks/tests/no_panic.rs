//! No panic path in the shipped allocator: builds `tests/no-panic-guest` (a wasm32 module
//! whose only code is the core: `UnsyncHeap` as its global allocator and a raw `Heap` over
//! every free index, allocating, freeing, reallocating and over-aligning) in release mode, and
//! fails if the module holds any of core's panic or formatting code, or imports anything.
//!
//! The guest's panic handler formats its message and passes it to an import, as a metered
//! runtime's handler does (Gear's rejects such modules: issue 15), so any bounds check or
//! checked operation left in the allocator brings both into the module. Needs the
//! `wasm32-unknown-unknown` target (`rustup target add wasm32-unknown-unknown`); takes a few
//! seconds. Not under Miri, which cannot start processes.
#![cfg(not(miri))]

use std::path::Path;
use std::process::Command;

/// Names that only core's panic and formatting machinery brings (in the name section).
const FORBIDDEN: [&str; 4] = ["panicking", "panic_fmt", "4core3fmt", "core..fmt"];

/// The body of every section with id `id`.
fn sections(module: &[u8], id: u8) -> Vec<&[u8]> {
    assert_eq!(&module[..8], b"\0asm\x01\0\0\0", "not a wasm module");
    let mut found = Vec::new();
    let mut rest = &module[8..];
    while let Some((&section, tail)) = rest.split_first() {
        let (len, tail) = leb128(tail);
        let (body, tail) = tail.split_at(len);
        if section == id {
            found.push(body);
        }
        rest = tail;
    }
    found
}

/// An unsigned LEB128 number and the bytes after it.
fn leb128(bytes: &[u8]) -> (usize, &[u8]) {
    let mut value = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        value |= usize::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return (value, &bytes[i + 1..]);
        }
    }
    panic!("truncated LEB128 number");
}

#[test]
fn the_release_guest_has_no_panic_path_and_no_import() {
    let guest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/no-panic-guest");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-panic-guest");
    let output = Command::new(env!("CARGO"))
        .args([
            "build",
            "--release",
            "--offline",
            "--target",
            "wasm32-unknown-unknown",
        ])
        .arg("--manifest-path")
        .arg(guest.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "building the wasm32 guest failed (is the target installed? `rustup target add \
         wasm32-unknown-unknown`):\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let wasm = target_dir.join("wasm32-unknown-unknown/release/no_panic_guest.wasm");
    let module = std::fs::read(&wasm).expect("the guest module");

    let imports = sections(&module, 2);
    let import_count = imports.first().map_or(0, |body| leb128(body).0);
    assert_eq!(import_count, 0, "the guest imports something: a panic path");

    let names = sections(&module, 0)
        .into_iter()
        .find(|body| body.get(1..5) == Some(b"name".as_slice()))
        .expect("a name section (release builds keep it)");
    let names = String::from_utf8_lossy(names);
    for forbidden in FORBIDDEN {
        assert!(
            !names.contains(forbidden),
            "the guest holds `{forbidden}` code: a panic path in the allocator"
        );
    }
    // The test can fail: the guest's own code is there by name.
    assert!(
        names.contains("exercise"),
        "the name section lists no functions"
    );
}
