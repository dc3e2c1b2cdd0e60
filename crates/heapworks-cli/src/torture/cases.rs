//! What `heapworks torture` runs: its sections, and each section's cases as runs of the C
//! programs of `crates/heapworks-cli/torture/` (the in-process arena cases are in
//! [`super::arenas`]).
//!
//! Invariants: every case of a correctness section is a [`CaseKind::Check`] whose run passes
//! exactly when the program exits 0 (programs report each failed check on stderr); a
//! [`CaseKind::Misuse`] case is never pass/fail but classified (see [`super::verdict`]); the
//! repetitions and sizes of a case depend only on the [`Mode`], so a scorecard is comparable
//! with any other of the same mode.

use std::time::Duration;

heapworks_bench::registry! {
    /// A part of the scorecard.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Section {
        /// Every entry point's contract.
        Contract = (
            "contract",
            "every entry point (malloc, calloc with overflow, realloc with NULL and 0, free, \
             posix_memalign / aligned_alloc / memalign / valloc / pvalloc at every alignment \
             to 64 KiB and invalid ones, reallocarray, malloc_usable_size), sizes at the \
             limits (SIZE_MAX, PTRDIFF_MAX + 1: NULL with ENOMEM), errno kept by free"
        ),
        /// Randomized multi-threaded sequences with cookies and a shadow model.
        Threads = (
            "threads",
            "randomized sequences on 4 threads (malloc, calloc, posix_memalign, realloc, \
             free) with cookies and a shadow model; blocks handed between threads; threads \
             exiting with cached blocks"
        ),
        /// fork beside stdio and FILE locks, fork in signal handlers, posix_spawn and vfork.
        Fork = (
            "fork",
            "fork while threads malloc, flush stdio and hold FILE locks (getline); fork \
             from SIGUSR1/SIGUSR2 handlers while the main thread mallocs and forks; fork in \
             a single-threaded process; posix_spawn and vfork + exec; a run that does not \
             end in time is a hang"
        ),
        /// Address-space and data limits, a full memory map, overcommit refusals.
        Exhaustion = (
            "exhaustion",
            "RLIMIT_AS and RLIMIT_DATA from the first instruction (1 B .. 100 kB and half \
             the limit must succeed, twice the limit is NULL with ENOMEM, recovery after \
             frees), a memory map filled to vm.max_map_count, 64 TiB requests"
        ),
        /// Seed 004's patterns: realloc of multi-page blocks, free(malloc(n)).
        Patterns = (
            "patterns",
            "seed 004: realloc growing and shrinking a multi-page block a page at a time \
             (contents kept; how many steps stayed in place), free(malloc(n)) for n = 50 B \
             .. 50 MB"
        ),
        /// Bugs of the program: double and invalid frees, overflows, writes after free.
        Misuse = (
            "misuse",
            "one program bug per child process, at 64 B, 4 KiB and 1 MiB: caught (killed \
             with a message naming the fault), crashed (killed without one), warned \
             (a message, no stop), silent, corrupted (the heap then handed out memory in \
             use); the score counts the catches"
        ),
        /// The arena allocators of `bench`, in-process.
        Arenas = (
            "arenas",
            "the arena allocators of `bench` in-process over a 32 MiB region: randomized \
             sequences with cookies and a shadow model on 1 and 4 threads, every alignment \
             to 64 KiB, realloc contents, exhaustion and recovery"
        ),
    }
}

impl Section {
    /// Whether a failure here is a failure of the malloc (every section but misuse, whose
    /// outcomes are a score).
    pub fn is_correctness(self) -> bool {
        self != Section::Misuse
    }
}

/// How long and hard a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// CI: under a minute for every malloc.
    Quick,
    /// Minutes.
    Default,
    /// About an hour, for releases: many repetitions, long thread runs.
    Long,
}

impl Mode {
    /// The name in result files (`torture-quick`, …).
    pub fn scale_name(self) -> &'static str {
        match self {
            Mode::Quick => "torture-quick",
            Mode::Default => "torture-default",
            Mode::Long => "torture-long",
        }
    }

    /// How long one run of a fork scenario (well under a second when nothing deadlocks)
    /// may take before it counts as a hang.
    pub fn fork_timeout(self) -> Duration {
        Duration::from_secs(match self {
            Mode::Quick => 5,
            Mode::Default => 10,
            Mode::Long => 20,
        })
    }

    /// Failed runs after which a check stops: its verdict is known, and a hang costs a
    /// whole timeout (long mode goes on a little, to tell a rate).
    pub fn max_failures(self) -> usize {
        self.pick(1, 1, 5)
    }

    fn pick(self, quick: usize, default: usize, long: usize) -> usize {
        match self {
            Mode::Quick => quick,
            Mode::Default => default,
            Mode::Long => long,
        }
    }

    /// Runs of each fork scenario.
    pub fn fork_runs(self) -> usize {
        self.pick(5, 20, 100)
    }

    /// Runs of each thread scenario, each with its own seed.
    pub fn thread_runs(self) -> usize {
        self.pick(1, 3, 5)
    }

    /// Operations per thread in a thread run (and in the arenas' sequences): a long run of
    /// the `exiting` scenario takes about 20 s on this project's 2-core machine.
    pub fn thread_ops(self) -> usize {
        self.pick(5_000, 50_000, 500_000)
    }

    /// Runs of every other check.
    pub fn other_runs(self) -> usize {
        self.pick(1, 2, 5)
    }
}

/// A compiled program of `crates/heapworks-cli/torture/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Program {
    /// `contract.c`.
    Contract,
    /// `threads.c`.
    Threads,
    /// `fork.c`.
    Fork,
    /// `exhaust.c`.
    Exhaust,
    /// `patterns.c`.
    Patterns,
    /// `misuse.c`.
    Misuse,
}

impl Program {
    /// Every program.
    pub const ALL: [Program; 6] = [
        Program::Contract,
        Program::Threads,
        Program::Fork,
        Program::Exhaust,
        Program::Patterns,
        Program::Misuse,
    ];

    /// The source's file stem, and the binary's name.
    pub fn stem(self) -> &'static str {
        match self {
            Program::Contract => "contract",
            Program::Threads => "threads",
            Program::Fork => "fork",
            Program::Exhaust => "exhaust",
            Program::Patterns => "patterns",
            Program::Misuse => "misuse",
        }
    }
}

/// How a case's runs are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseKind {
    /// Pass when the program exits 0.
    Check,
    /// As a check, and the program prints how many realloc steps moved the block.
    ReallocSteps,
    /// A program bug, classified.
    Misuse,
}

/// How long a run of any check but a fork scenario may take: far more than any needs (a
/// long thread run takes about 20 s), so only a real hang reaches it.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(90);

/// The placeholder in [`Case::args`] replaced by each run's seed.
pub const SEED: &str = "{seed}";

/// One row of the scorecard for the C mallocs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// Its section.
    pub section: Section,
    /// Its name within the section.
    pub name: String,
    /// The program it runs.
    pub program: Program,
    /// The program's arguments ([`SEED`] replaced per run).
    pub args: Vec<String>,
    /// How many times it runs.
    pub runs: usize,
    /// How long a run may take before it counts as a hang.
    pub timeout: Duration,
    /// How its runs are judged.
    pub kind: CaseKind,
}

impl Case {
    fn new(section: Section, name: &str, program: Program, args: &[&str], runs: usize) -> Self {
        Self {
            section,
            name: name.to_string(),
            program,
            args: args.iter().map(|a| a.to_string()).collect(),
            runs,
            timeout: CHECK_TIMEOUT,
            kind: CaseKind::Check,
        }
    }
}

/// The misuse kinds of `misuse.c`.
pub const MISUSES: [&str; 14] = [
    "double-free",
    "double-free-delayed",
    "double-free-interleaved",
    "double-free-reused",
    "free-stack",
    "free-global",
    "free-interior",
    "free-unaligned",
    "free-foreign",
    "free-wild",
    "overflow-1",
    "overflow-32",
    "underflow",
    "write-after-free",
];

/// The block sizes every misuse is committed at: small, medium, large.
pub const MISUSE_SIZES: [(&str, usize); 3] = [("64B", 64), ("4KiB", 4096), ("1MiB", 1 << 20)];

/// The cases of `sections` (the arenas' excepted) in `mode`; `runs` overrides every case's
/// repetitions.
pub fn plan(sections: &[Section], mode: Mode, runs: Option<usize>) -> Vec<Case> {
    let mut cases: Vec<Case> = sections
        .iter()
        .flat_map(|&section| section_cases(section, mode))
        .collect();
    if let Some(runs) = runs {
        for case in cases.iter_mut().filter(|c| c.kind != CaseKind::Misuse) {
            case.runs = runs;
        }
    }
    cases
}

fn section_cases(section: Section, mode: Mode) -> Vec<Case> {
    match section {
        Section::Contract => ["malloc", "calloc", "realloc", "free", "align", "usable"]
            .iter()
            .map(|group| Case::new(section, group, Program::Contract, &[group], 1))
            .collect(),
        Section::Threads => {
            let ops = mode.thread_ops().to_string();
            ["mixed", "handoff", "exiting"]
                .iter()
                .map(|scenario| {
                    let args = [*scenario, SEED, "4", &ops];
                    Case::new(
                        section,
                        scenario,
                        Program::Threads,
                        &args,
                        mode.thread_runs(),
                    )
                })
                .collect()
        }
        Section::Fork => {
            // The signal scenario's forks are cheap (the child exits at once) and each
            // comes with four signalled rounds; the others' children work.
            let forks = |scenario: &str| match (scenario, mode) {
                ("signal", Mode::Long) => "200",
                ("signal", _) => "50",
                (_, Mode::Long) => "20",
                _ => "8",
            };
            ["stdio", "signal", "single", "spawn"]
                .iter()
                .map(|scenario| {
                    let args = [*scenario, forks(scenario)];
                    let mut case =
                        Case::new(section, scenario, Program::Fork, &args, mode.fork_runs());
                    case.timeout = mode.fork_timeout();
                    case
                })
                .collect()
        }
        Section::Exhaustion => {
            let limits = [
                ("as 64MiB", ["as", "64"]),
                ("as 500MiB", ["as", "500"]),
                ("as 2000MiB", ["as", "2000"]),
                ("data 64MiB", ["data", "64"]),
                ("data 500MiB", ["data", "500"]),
            ];
            let runs = mode.other_runs();
            let mut cases: Vec<Case> = limits
                .iter()
                .map(|(name, args)| Case::new(section, name, Program::Exhaust, args, runs))
                .collect();
            for scenario in ["mappings", "refusal"] {
                cases.push(Case::new(
                    section,
                    scenario,
                    Program::Exhaust,
                    &[scenario],
                    runs,
                ));
            }
            cases
        }
        Section::Patterns => {
            let repeat = mode.pick(1, 3, 10).to_string();
            let sizes_repeat = mode.pick(10, 100, 1000).to_string();
            let mut realloc = Case::new(
                section,
                "realloc pages",
                Program::Patterns,
                &["realloc", &repeat],
                1,
            );
            realloc.kind = CaseKind::ReallocSteps;
            let sizes = Case::new(
                section,
                "free(malloc(n))",
                Program::Patterns,
                &["sizes", &sizes_repeat],
                mode.other_runs(),
            );
            vec![realloc, sizes]
        }
        Section::Misuse => MISUSES
            .iter()
            .flat_map(|kind| {
                MISUSE_SIZES.iter().map(move |(label, size)| Case {
                    section,
                    name: format!("{kind} {label}"),
                    program: Program::Misuse,
                    args: vec![kind.to_string(), size.to_string()],
                    runs: 1,
                    timeout: mode.fork_timeout(),
                    kind: CaseKind::Misuse,
                })
            })
            .collect(),
        Section::Arenas => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_misuse_is_committed_at_every_size() {
        let cases = plan(&[Section::Misuse], Mode::Quick, Some(7));
        assert_eq!(cases.len(), MISUSES.len() * MISUSE_SIZES.len());
        assert!(cases
            .iter()
            .all(|c| c.kind == CaseKind::Misuse && c.runs == 1));
    }

    #[test]
    fn runs_override_every_check() {
        let cases = plan(&[Section::Fork, Section::Contract], Mode::Default, Some(3));
        assert!(cases.iter().all(|c| c.runs == 3));
        let long = plan(&[Section::Fork], Mode::Long, None);
        assert!(long.iter().all(|c| c.runs >= 100));
    }

    #[test]
    fn section_names_round_trip() {
        for &section in Section::ALL {
            assert_eq!(Section::from_name(section.name()), Some(section));
        }
        assert!(!Section::Misuse.is_correctness());
        assert!(Section::Fork.is_correctness());
    }
}
