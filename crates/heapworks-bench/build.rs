//! Captures the git revision of the source into `HEAPWORKS_REVISION` for `heapworks --version`
//! (see `src/revision.rs`), rebuilding when another commit is checked out.

#[path = "src/revision.rs"]
mod revision;

use std::path::Path;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let dir = Path::new(&manifest_dir);
    println!(
        "cargo:rustc-env=HEAPWORKS_REVISION={}",
        revision::describe(dir)
    );
    println!("cargo:rerun-if-changed=src/revision.rs");
    for file in revision::revision_files(dir) {
        println!("cargo:rerun-if-changed={file}");
    }
}
