//! `pool_instructions`: instructions per get-fill-drop under callgrind, deterministic where
//! the times of the small sizes are noise on a shared machine (run only when named).
//!
//! Each column runs the hidden `pool-probe rounds` under `valgrind --tool=callgrind`, collecting
//! only inside [`measured_round`](super::probe::measured_round) (`--collect-atstart=no
//! --toggle-collect`), after the same untimed warm-up rounds as `pool_sizes`; the count is its
//! inclusive cost over the rounds. The peers run the `Vec` variant with their malloc preloaded.
//! Kernel work is not counted, so the columns that map fresh memory per tensor
//! (`inline_fresh_mapping`, `shm_without_pool`: a system call and page faults each) have no
//! count here.

use std::path::Path;
use std::process::Command;

use heapworks_bench::instructions::inclusive_costs;
use heapworks_bench::workloads::{Better, Config, MetricSpec};
use heapworks_malloc_bench::libraries::Library;

use super::probe::{self, field, ProbeArgs};
use super::sizes::label;
use super::variants::Variant;
use super::{Column, PoolWorkload, Task};

/// Instructions per get-fill-drop.
pub const INSTRUCTIONS: MetricSpec =
    MetricSpec::primary("instructions", "instr/round", Better::Lower);

/// The sizes counted: the small ones whose pool overhead the issue bounds, and one pooled size.
const SIZES: [usize; 4] = [4, 64, 1 << 10, 1 << 20];

/// One task per size.
pub fn tasks(_config: &Config) -> Vec<Task> {
    SIZES
        .into_iter()
        .map(|bytes| Task {
            workload: PoolWorkload::Instructions,
            case: label(bytes),
            outputs: vec![INSTRUCTIONS],
            deterministic: true,
            run: Box::new(move |column, _seed| {
                let (variant, library) = match column {
                    Column::Variant(Variant::InlineFreshMapping | Variant::ShmWithoutPool) => {
                        return Ok(vec![None]);
                    }
                    Column::Variant(variant) => (*variant, None),
                    Column::Peer(library) => (Variant::InlineWithoutPool, Some(library)),
                    Column::Missing(_, why) => return Err(why.clone()),
                };
                let exe = std::env::current_exe()
                    .map_err(|e| format!("cannot locate this executable: {e}"))?;
                let rounds = if bytes >= 1 << 20 { 50 } else { 2000 };
                let args = ProbeArgs::Rounds {
                    variant,
                    bytes: bytes as u64,
                    rounds,
                };
                Ok(vec![Some(count(&exe, library, &args, rounds)?)])
            }),
        })
        .collect()
}

/// Instructions per round of a `rounds` probe run under callgrind.
fn count(
    exe: &Path,
    library: Option<&Library>,
    args: &ProbeArgs,
    rounds: u64,
) -> Result<f64, String> {
    let profile_path = std::env::temp_dir().join(format!(
        "heapworks-pool-callgrind-{}-{}.out",
        std::process::id(),
        next_profile_number()
    ));
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", profile_path.display()))
        .args([
            "--collect-atstart=no",
            "--compress-strings=no",
            "--compress-pos=no",
            "--toggle-collect=*measured_round*",
        ])
        .arg(exe)
        .arg("pool-probe")
        .args(args.to_args());
    if let Some(library) = library {
        library.apply(&mut command);
    }
    let outcome = probe::finish(command, library);
    let profile = std::fs::read_to_string(&profile_path);
    let _ = std::fs::remove_file(&profile_path);
    let stdout = outcome?;
    if field(&stdout, "rounds") != Some(rounds as f64) {
        return Err(format!(
            "pool-probe under callgrind printed no rounds: {stdout}"
        ));
    }
    let profile = profile.map_err(|e| format!("no callgrind output: {e}"))?;
    let total: u64 = inclusive_costs(&profile)
        .iter()
        .filter(|(function, _)| function.contains("measured_round"))
        .map(|(_, cost)| cost)
        .sum();
    if total == 0 {
        return Err("callgrind counted nothing in measured_round".to_string());
    }
    Ok(total as f64 / rounds as f64)
}

/// A number that differs between the counts of one process (their profiles' names).
fn next_profile_number() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
