//! The C mallocs as peers of `pool_sizes`: "just use a better malloc" is what a user tries
//! first. Each peer runs `inline_without_pool` (`vec![v; n]`, get-fill-drop in a loop) in a
//! process of its own, this executable run again as the hidden `pool-probe` command with the
//! malloc `LD_PRELOAD`ed (nothing for glibc), found and built as `bench --malloc` does
//! ([`Lineup`]). A peer whose library is missing is a `missing` cell, not an error.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use heapworks_bench::instructions::probe_options;

use super::sizes::time_per_round;
use super::variants::Variant;
use heapworks_malloc_bench::libraries::{CMalloc, Library, Lineup};
use heapworks_malloc_bench::process::field;

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeArgs {
    /// Bytes per tensor (a multiple of 4, at most 1 GiB).
    bytes: u64,
    /// Timed length, in milliseconds (at most a minute).
    duration_ms: u64,
    /// The trial's seed.
    seed: u64,
}

impl ProbeArgs {
    /// Reads the arguments after the probe's command name (as [`measure`] writes them).
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let [bytes, duration_ms, seed] =
            probe_options(args, ["--bytes", "--duration-ms", "--seed"]).map_err(|e| e.0)?;
        let number = |name: &str, text: &str, most: u64| match text.parse::<u64>() {
            Ok(value) if value <= most => Ok(value),
            _ => Err(format!("{name} `{text}` is not a number up to {most}")),
        };
        let bytes = number("--bytes", bytes, 1 << 30)?;
        if bytes < 4 || !bytes.is_multiple_of(4) {
            return Err(format!("--bytes {bytes} is not a whole number of f32"));
        }
        Ok(Self {
            bytes,
            duration_ms: number("--duration-ms", duration_ms, 60_000)?,
            seed: number("--seed", seed, u64::MAX)?,
        })
    }
}

/// Runs the probe in this process (under whatever malloc it was started with).
pub fn probe(args: &ProbeArgs) -> Result<(), String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_probe_reads_what_measure_writes_and_bounds_it() {
        let parsed = ProbeArgs::parse(&args("--bytes 4096 --duration-ms 5 --seed 7")).unwrap();
        assert_eq!(
            (parsed.bytes, parsed.duration_ms, parsed.seed),
            (4096, 5, 7)
        );
        for bad in [
            "--bytes 6 --duration-ms 5 --seed 7",
            "--bytes 0 --duration-ms 5 --seed 7",
            "--bytes 4294967296 --duration-ms 5 --seed 7",
            "--bytes 4096 --duration-ms 60001 --seed 7",
            "--bytes 4096 --seed 7",
            "--bytes x --duration-ms 5 --seed 7",
        ] {
            assert!(ProbeArgs::parse(&args(bad)).is_err(), "{bad}");
        }
    }
}
