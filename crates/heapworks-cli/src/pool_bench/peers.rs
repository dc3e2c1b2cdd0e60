//! The C mallocs as peers of `pool_sizes`: "just use a better malloc" is what a user tries
//! first. Each peer runs `inline_without_pool` (`vec![v; n]`, get-fill-drop in a loop) in a
//! process of its own, this executable run again as the hidden `pool-probe` command with the
//! malloc `LD_PRELOAD`ed (nothing for glibc), found and built as `bench --malloc` does
//! ([`Lineup`]). A peer whose library is missing is a `missing` cell, not an error.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use clap::Args;

use super::sizes::time_per_round;
use super::variants::Variant;
use crate::malloc_bench::libraries::{CMalloc, Library, Lineup};
use crate::malloc_bench::process::field;

/// The mallocs the issue names as peers, in column order.
pub const PEERS: [CMalloc; 4] = [
    CMalloc::Glibc,
    CMalloc::Heapworks,
    CMalloc::Mimalloc,
    CMalloc::Jemalloc,
];

/// The column name of a peer, e.g. `vec+mimalloc` (never a bare malloc name: `heapworks`
/// would become the ratios' baseline).
pub fn column_name(malloc: CMalloc) -> String {
    match malloc {
        CMalloc::Heapworks => "vec+heapworks-malloc".to_string(),
        other => format!("vec+{other}"),
    }
}

/// The peers' libraries: present ones, and missing ones with why.
pub fn lineup(peers: &[CMalloc]) -> Lineup {
    if peers.is_empty() {
        return Lineup::default();
    }
    Lineup::find(peers, &[])
}

/// `pool-probe`: one `inline_without_pool` measurement, printed as `ns VALUE`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Bytes per tensor (a multiple of 4, at most 1 GiB).
    #[arg(long, value_parser = clap::value_parser!(u64).range(4..=1 << 30))]
    bytes: u64,
    /// Timed length, in milliseconds (at most a minute).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    duration_ms: u64,
    /// The trial's seed.
    #[arg(long)]
    seed: u64,
}

/// Runs the probe in this process (under whatever malloc it was started with).
pub fn probe(args: &ProbeArgs) -> Result<(), String> {
    if !args.bytes.is_multiple_of(4) {
        return Err(format!(
            "--bytes {} is not a whole number of f32",
            args.bytes
        ));
    }
    let n = (args.bytes / 4) as usize;
    let duration = Duration::from_millis(args.duration_ms);
    let ns = time_per_round(Variant::InlineWithoutPool, n, duration, args.seed)?;
    println!("ns {ns}");
    Ok(())
}

/// One measurement of `library`'s malloc: ns per get-fill-drop of `bytes`.
pub fn measure(
    exe: &Path,
    library: &Library,
    bytes: usize,
    duration: Duration,
    seed: u64,
) -> Result<f64, String> {
    let mut command = Command::new(exe);
    command.args([
        "pool-probe",
        "--bytes",
        &bytes.to_string(),
        "--duration-ms",
        &duration.as_millis().to_string(),
        "--seed",
        &seed.to_string(),
    ]);
    library.apply(&mut command);
    let output = command
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(format!(
            "pool-probe under {} failed ({}): {}",
            library.malloc,
            output.status,
            stderr.trim()
        ));
    }
    field(&stdout, "ns").ok_or_else(|| format!("pool-probe printed no time: {stdout}"))
}
