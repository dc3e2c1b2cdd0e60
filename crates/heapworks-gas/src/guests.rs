//! The guest modules: which allocators, how they are built, their code size.
//!
//! Invariant: every guest is built from `guests/` beside this crate, by cargo, with the
//! flags of `guests/.cargo/config.toml` (what Gear accepts), into a target directory of its own
//! that later runs reuse (cargo rebuilds only what changed).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One guest module.
#[derive(Debug, Clone, Copy)]
pub struct Guest {
    /// The name in tables and on the command line.
    pub name: &'static str,
    /// The module's file name in the guests' target directory.
    pub file: &'static str,
    /// Whether the guest is heapworks (what `--gate` watches).
    pub ours: bool,
}

/// Every guest, heapworks first; the rest in the order.
pub const GUESTS: &[Guest] = &[
    Guest {
        name: "heapworks",
        file: "guest_heapworks.wasm",
        ours: true,
    },
    Guest {
        name: "heapworks-gear",
        file: "guest_heapworks_gear.wasm",
        ours: true,
    },
    Guest {
        name: "heapworks-front",
        file: "guest_heapworks_front.wasm",
        ours: true,
    },
    Guest {
        name: "heapworks-front-static",
        file: "guest_heapworks_front_static.wasm",
        ours: true,
    },
    Guest {
        name: "heapworks-front-static2x",
        file: "guest_heapworks_front_static2x.wasm",
        ours: true,
    },
    Guest {
        name: "heapworks-front-cells",
        file: "guest_heapworks_front_cells.wasm",
        ours: true,
    },
    Guest {
        name: "dlmalloc-0.2.14",
        file: "guest_dlmalloc.wasm",
        ours: false,
    },
    Guest {
        name: "gear-dlmalloc-0.2.1",
        file: "guest_gear_dlmalloc.wasm",
        ours: false,
    },
    Guest {
        name: "talc-5.1.1",
        file: "guest_talc.wasm",
        ours: false,
    },
    Guest {
        name: "rlsf-0.2.3",
        file: "guest_rlsf.wasm",
        ours: false,
    },
    Guest {
        name: "lol_alloc-0.4.1",
        file: "guest_lol_alloc.wasm",
        ours: false,
    },
];

/// The heapworks guest that also exports `gas_check` (the heap checker), for the wasm32 tests.
pub const CHECK_GUEST: Guest = Guest {
    name: "heapworks-check",
    file: "guest_heapworks_check.wasm",
    ours: true,
};

/// The guests' cargo workspace.
pub fn guests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("guests")
}

/// Where the guests are built: beside the main workspace's own target directory.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/heapworks-gas-guests")
}

/// Builds every guest (quick when nothing changed) and returns the directory of the modules.
pub fn build() -> Result<PathBuf, String> {
    build_variant(false)
}

/// Builds every guest with the programs (`entries::ft` and `entries::nft`, their allocator
/// calls marked for the host), into a target directory of its own; the directory of the
/// modules.
pub fn build_programs() -> Result<PathBuf, String> {
    build_variant(true)
}

fn build_variant(programs: bool) -> Result<PathBuf, String> {
    let target = if programs {
        target_dir().join("programs")
    } else {
        target_dir()
    };
    let features: &[&str] = if programs {
        &["--workspace", "--features", "programs"]
    } else {
        &[]
    };
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .current_dir(guests_dir())
        .args([
            "build",
            "--quiet",
            "--release",
            "--target",
            "wasm32-unknown-unknown",
        ])
        .args(features)
        .arg("--target-dir")
        .arg(&target)
        // The guests' own flags (guests/.cargo/config.toml) apply, not the caller's.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .status()
        .map_err(|e| format!("running cargo to build the guests: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building the guests failed ({status}); is the wasm32-unknown-unknown target installed \
             (`rustup target add wasm32-unknown-unknown`)?"
        ));
    }
    Ok(target.join("wasm32-unknown-unknown/release"))
}

/// The size of a module after `wasm-opt -Oz` (binaryen), or why it could not be measured.
pub fn optimized_size(module: &Path) -> Result<u64, String> {
    let out = std::env::temp_dir().join(format!(
        "heapworks-gas-{}-{}",
        std::process::id(),
        module
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("guest.wasm")
    ));
    let status = Command::new("wasm-opt")
        .args(["-Oz", "--enable-sign-ext", "--enable-mutable-globals", "-o"])
        .arg(&out)
        .arg(module)
        .status()
        .map_err(|e| format!("wasm-opt (binaryen) not runnable: {e}"))?;
    if !status.success() {
        return Err(format!("wasm-opt failed on {}: {status}", module.display()));
    }
    let size = std::fs::metadata(&out).map_err(|e| e.to_string())?.len();
    let _ = std::fs::remove_file(&out);
    Ok(size)
}
