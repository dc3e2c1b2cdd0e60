//! The hidden `pool-probe` command: one measurement in a process of its own, started by this
//! crate with a malloc preloaded (the peers' columns), for a fresh start (the patterns), or
//! under callgrind (the instruction counts). Its command line is written by [`ProbeArgs`]'s
//! `to_args` and read back by [`ProbeArgs::parse`], every number bounded; it prints
//! `name value` lines, read with [`field`].
//!
//! - `sizes --variant V --bytes B --duration-ms D --seed S`: `ns` per get-fill-drop.
//! - `pattern --workload W --variant V --steps N --warm-up-steps M --seed S`: the pattern's
//!   `step_us` and `peak_rss_mib`, and for a pool `hit_rate` and `evictions`.
//! - `rounds --variant V --bytes B --rounds R`: R get-fill-drops, each through
//!   [`measured_round`], which callgrind counts; prints `rounds R`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use heapworks_bench::instructions::probe_options;
use heapworks_malloc_bench::libraries::Library;
pub use heapworks_malloc_bench::process::field;

use super::patterns::{self, Pattern};
use super::sizes::{time_per_round, WARM_UP_ROUNDS};
use super::variants::{Subject, Variant};

/// The largest tensor a probe makes (bytes).
const MOST_BYTES: u64 = 1 << 30;
/// The longest timed run (milliseconds).
const MOST_MS: u64 = 60_000;
/// The most steps or rounds of a probe.
const MOST_STEPS: u64 = 1_000_000;

/// One probe's measurement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeArgs {
    /// Time per get-fill-drop of one size.
    Sizes {
        /// The variant measured.
        variant: Variant,
        /// Bytes per tensor (a whole number of f32).
        bytes: u64,
        /// Timed length, in milliseconds.
        duration_ms: u64,
        /// The trial's seed.
        seed: u64,
    },
    /// One run of a pattern.
    Pattern {
        /// Which pattern.
        pattern: Pattern,
        /// The variant measured.
        variant: Variant,
        /// Timed steps.
        steps: u64,
        /// Untimed steps before them (drawn with another seed).
        warm_up_steps: u64,
        /// The trial's seed.
        seed: u64,
    },
    /// Get-fill-drops for callgrind to count.
    Rounds {
        /// The variant measured.
        variant: Variant,
        /// Bytes per tensor (a whole number of f32).
        bytes: u64,
        /// Rounds through [`measured_round`].
        rounds: u64,
    },
}

impl ProbeArgs {
    /// The command line after the probe's command name.
    pub fn to_args(&self) -> Vec<String> {
        let pairs: Vec<(&str, String)> = match self {
            Self::Sizes {
                variant,
                bytes,
                duration_ms,
                seed,
            } => vec![
                ("sizes", String::new()),
                ("--variant", variant.name().to_string()),
                ("--bytes", bytes.to_string()),
                ("--duration-ms", duration_ms.to_string()),
                ("--seed", seed.to_string()),
            ],
            Self::Pattern {
                pattern,
                variant,
                steps,
                warm_up_steps,
                seed,
            } => vec![
                ("pattern", String::new()),
                ("--workload", pattern.workload().name().to_string()),
                ("--variant", variant.name().to_string()),
                ("--steps", steps.to_string()),
                ("--warm-up-steps", warm_up_steps.to_string()),
                ("--seed", seed.to_string()),
            ],
            Self::Rounds {
                variant,
                bytes,
                rounds,
            } => vec![
                ("rounds", String::new()),
                ("--variant", variant.name().to_string()),
                ("--bytes", bytes.to_string()),
                ("--rounds", rounds.to_string()),
            ],
        };
        pairs
            .into_iter()
            .flat_map(|(name, value)| [name.to_string(), value])
            .filter(|word| !word.is_empty())
            .collect()
    }

    /// Reads a command line written by [`to_args`](Self::to_args).
    pub fn parse(args: &[String]) -> Result<Self, String> {
        let Some((kind, options)) = args.split_first() else {
            return Err("pool-probe needs `sizes`, `pattern` or `rounds`".to_string());
        };
        match kind.as_str() {
            "sizes" => {
                let [variant, bytes, duration_ms, seed] =
                    probe_options(options, ["--variant", "--bytes", "--duration-ms", "--seed"])
                        .map_err(|e| e.0)?;
                Ok(Self::Sizes {
                    variant: variant_named(variant)?,
                    bytes: tensor_bytes(bytes)?,
                    duration_ms: number("--duration-ms", duration_ms, MOST_MS)?,
                    seed: number("--seed", seed, u64::MAX)?,
                })
            }
            "pattern" => {
                let [workload, variant, steps, warm_up_steps, seed] = probe_options(
                    options,
                    [
                        "--workload",
                        "--variant",
                        "--steps",
                        "--warm-up-steps",
                        "--seed",
                    ],
                )
                .map_err(|e| e.0)?;
                let pattern = Pattern::from_workload_name(workload)
                    .ok_or_else(|| format!("`{workload}` is not a pattern workload"))?;
                Ok(Self::Pattern {
                    pattern,
                    variant: variant_named(variant)?,
                    steps: number("--steps", steps, MOST_STEPS)?.max(1),
                    warm_up_steps: number("--warm-up-steps", warm_up_steps, MOST_STEPS)?,
                    seed: number("--seed", seed, u64::MAX)?,
                })
            }
            "rounds" => {
                let [variant, bytes, rounds] =
                    probe_options(options, ["--variant", "--bytes", "--rounds"])
                        .map_err(|e| e.0)?;
                Ok(Self::Rounds {
                    variant: variant_named(variant)?,
                    bytes: tensor_bytes(bytes)?,
                    rounds: number("--rounds", rounds, MOST_STEPS)?.max(1),
                })
            }
            other => Err(format!("unknown pool-probe kind `{other}`")),
        }
    }
}

fn number(name: &str, text: &str, most: u64) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(value) if value <= most => Ok(value),
        _ => Err(format!("{name} `{text}` is not a number up to {most}")),
    }
}

fn tensor_bytes(text: &str) -> Result<u64, String> {
    let bytes = number("--bytes", text, MOST_BYTES)?;
    if bytes < 4 || !bytes.is_multiple_of(4) {
        return Err(format!("--bytes {bytes} is not a whole number of f32"));
    }
    Ok(bytes)
}

fn variant_named(name: &str) -> Result<Variant, String> {
    Variant::from_name(name).ok_or_else(|| format!("unknown variant `{name}`"))
}

/// Runs the probe in this process (under whatever malloc it was started with) and prints its
/// lines.
pub fn run(args: &ProbeArgs) -> Result<(), String> {
    match *args {
        ProbeArgs::Sizes {
            variant,
            bytes,
            duration_ms,
            seed,
        } => {
            let duration = Duration::from_millis(duration_ms);
            let ns = time_per_round(variant, (bytes / 4) as usize, duration, seed)?;
            println!("ns {ns}");
        }
        ProbeArgs::Pattern {
            pattern,
            variant,
            steps,
            warm_up_steps,
            seed,
        } => {
            let run = patterns::run(
                pattern,
                variant,
                steps as usize,
                warm_up_steps as usize,
                seed,
            )?;
            for (name, value) in run.lines() {
                println!("{name} {value}");
            }
        }
        ProbeArgs::Rounds {
            variant,
            bytes,
            rounds,
        } => {
            let n = (bytes / 4) as usize;
            let mut subject = Subject::new(variant, &[n], super::sizes::BUDGET);
            for _ in 0..WARM_UP_ROUNDS {
                subject.one(n, 2.0)?;
            }
            for _ in 0..rounds {
                measured_round(&mut subject, n)?;
            }
            println!("rounds {rounds}");
        }
    }
    Ok(())
}

/// One get-fill-drop of `n` f32: the only code callgrind counts in a `rounds` probe.
#[inline(never)]
pub fn measured_round(subject: &mut Subject, n: usize) -> Result<f32, String> {
    subject.one(n, 3.0)
}

/// Runs `args` as a probe of `exe` under `library`'s malloc (`None`: as this process runs);
/// its standard output.
pub fn spawn(exe: &Path, library: Option<&Library>, args: &ProbeArgs) -> Result<String, String> {
    let mut command = Command::new(exe);
    command.arg("pool-probe").args(args.to_args());
    if let Some(library) = library {
        library.apply(&mut command);
    }
    finish(command, library)
}

/// Runs `command` (a probe) and returns its standard output, or why it failed.
pub fn finish(mut command: Command, library: Option<&Library>) -> Result<String, String> {
    let output = command
        .output()
        .map_err(|e| format!("cannot run {:?}: {e}", command.get_program()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let under = library.map_or("glibc".to_string(), |l| l.malloc.to_string());
        return Err(format!(
            "pool-probe under {under} failed ({}): {}",
            output.status,
            stderr.trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_probe_reads_what_it_writes() {
        let probes = [
            ProbeArgs::Sizes {
                variant: Variant::InlineWithoutPool,
                bytes: 4096,
                duration_ms: 5,
                seed: 7,
            },
            ProbeArgs::Pattern {
                pattern: Pattern::VariableShape,
                variant: Variant::ShmWithPool,
                steps: 20,
                warm_up_steps: 0,
                seed: 3,
            },
            ProbeArgs::Rounds {
                variant: Variant::InlineWithPool,
                bytes: 4,
                rounds: 100,
            },
        ];
        for probe in probes {
            assert_eq!(ProbeArgs::parse(&probe.to_args()), Ok(probe.clone()));
        }
    }

    #[test]
    fn the_probe_bounds_its_arguments() {
        for bad in [
            "",
            "sizes",
            "walk --variant inline_with_pool",
            "sizes --variant x --bytes 8 --duration-ms 5 --seed 7",
            "sizes --variant inline_with_pool --bytes 6 --duration-ms 5 --seed 7",
            "sizes --variant inline_with_pool --bytes 0 --duration-ms 5 --seed 7",
            "sizes --variant inline_with_pool --bytes 4294967296 --duration-ms 5 --seed 7",
            "sizes --variant inline_with_pool --bytes 4096 --duration-ms 60001 --seed 7",
            "sizes --variant inline_with_pool --bytes 4096 --seed 7",
            "pattern --workload pool_sizes --variant inline_with_pool --steps 5 \
             --warm-up-steps 0 --seed 1",
            "pattern --workload pool_variable_shape --variant inline_with_pool --steps 5000000 \
             --warm-up-steps 0 --seed 1",
            "rounds --variant inline_with_pool --bytes 4 --rounds x",
        ] {
            assert!(ProbeArgs::parse(&args(bad)).is_err(), "{bad}");
        }
    }
}
