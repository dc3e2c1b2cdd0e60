//! Unit tests of `bench --malloc`: filters, library look-up, parsers of the C programs'
//! output, generated inputs, and task runs with a stand-in library.

use std::path::PathBuf;
use std::process::Command;

use super::inputs;
use super::libraries::{parse_override, CMalloc, Library, Lineup};
use super::*;
use heapworks_bench::progress::Silent;
use heapworks_bench::results::Summary;
use heapworks_bench::workloads::{Better, Scale};

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "heapworks-malloc-bench-test-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn filter_picks_workloads_and_mallocs_in_report_order() {
    let selection =
        MallocSelection::from_filter(&["tcmalloc,malloc_sizes".into(), "heapworks".into()])
            .unwrap();
    assert_eq!(selection.workloads, vec![MallocWorkload::Sizes]);
    assert_eq!(
        selection.columns,
        vec![CMalloc::Heapworks, CMalloc::Tcmalloc]
    );
    let everything = MallocSelection::from_filter(&[]).unwrap();
    assert_eq!(everything.workloads, MallocWorkload::ALL);
    assert_eq!(everything.columns, CMalloc::ALL);
}

#[test]
fn unknown_filter_terms_list_the_valid_ones() {
    let error = MallocSelection::from_filter(&["talc".into()]).unwrap_err();
    assert!(error.contains("`talc`"), "{error}");
    assert!(error.contains("malloc_threads") && error.contains("jemalloc"));
}

#[test]
fn overrides_parse_and_refuse_glibc() {
    assert_eq!(
        parse_override("jemalloc=/opt/lib/libjemalloc.so"),
        Ok((CMalloc::Jemalloc, PathBuf::from("/opt/lib/libjemalloc.so")))
    );
    assert!(parse_override("glibc=/lib/libc.so.6").is_err());
    assert!(parse_override("jemalloc").is_err());
    assert!(parse_override("hoard=/x.so")
        .unwrap_err()
        .contains("unknown malloc"));
}

#[test]
fn a_missing_library_is_a_missing_column_with_the_package_to_install() {
    let overrides = [(
        CMalloc::Mimalloc,
        PathBuf::from("/nonexistent/libmimalloc.so"),
    )];
    let lineup = Lineup::find(&[CMalloc::Glibc, CMalloc::Mimalloc], &overrides);
    assert_eq!(lineup.present.len(), 1);
    assert_eq!(lineup.present[0].malloc, CMalloc::Glibc);
    assert_eq!(lineup.present[0].preload, None);
    let (malloc, why) = &lineup.missing[0];
    assert_eq!(*malloc, CMalloc::Mimalloc);
    assert!(
        why.starts_with("missing: /nonexistent/libmimalloc.so not found"),
        "{why}"
    );
    let names: Vec<String> = lineup.versions().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["glibc", "mimalloc"]);
}

#[test]
fn version_strings_name_the_package() {
    let lineup = Lineup::find(&[CMalloc::Glibc], &[]);
    assert!(lineup.present[0].version.starts_with("glibc (libc6"));
}

#[test]
fn size_labels_and_driver_output() {
    let labels: Vec<String> = timed::SIZES.iter().map(|&n| timed::size_label(n)).collect();
    assert_eq!(
        labels,
        ["50 B", "500 B", "5 KB", "50 KB", "500 KB", "5 MB", "50 MB"]
    );
    let stdout = "50 1.5\n500 2.0\n5000 3\n50000 4\n500000 5\n5000000 6\n50000000 7.25\n";
    assert_eq!(
        timed::parse_sizes(stdout),
        Ok(vec![1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.25])
    );
    assert!(timed::parse_sizes("50 1.5\n").is_err());
    assert!(timed::parse_sizes("").is_err());
}

#[test]
fn large_blocks_output() {
    assert_eq!(
        timed::parse_large("ns 2000000\nfaults 263.5\nsystem_ns 500000\n"),
        Ok(vec![2000.0, 263.5, 500.0])
    );
    assert!(timed::parse_large("ns 0\nfaults 1\nsystem_ns 1\n").is_err());
    assert!(timed::parse_large("ns 5\n").is_err());
}

#[test]
fn fields_of_program_output() {
    assert_eq!(
        process::field("requests 5 live 0\nns 1200\n", "ns"),
        Some(1200.0)
    );
    assert_eq!(process::field("ops 10\nns 20\n", "ops"), Some(10.0));
    assert_eq!(process::field("ops x\n", "ops"), None);
    assert_eq!(process::field("", "ns"), None);
}

#[test]
fn threads_output_gives_throughput_wait_and_round_trip() {
    let stdout = "ops 2000\nns 1000\nwait_ns 100\nrun_ns 300\nswitches 3\nroundtrip_ns 250.5\n";
    assert_eq!(
        timed::parse_threads(stdout),
        Ok(timed::ThreadsRun {
            throughput: 2000.0,
            cpu_wait: 0.25,
            roundtrip_ns: 250.5,
        })
    );
    let no_schedstat = "ops 10\nns 10\nwait_ns 0\nrun_ns 0\nroundtrip_ns 1\n";
    assert_eq!(timed::parse_threads(no_schedstat).unwrap().cpu_wait, 0.0);
    assert!(timed::parse_threads("ops 10\nns 10\n").is_err());
    assert!(timed::parse_threads("ops 10\nns 0\nwait_ns 0\nrun_ns 0\nroundtrip_ns 1\n").is_err());
}

#[test]
fn each_trial_starts_one_malloc_further() {
    let orders: Vec<Vec<usize>> = (0..4).map(|t| trial_order(3, t).collect()).collect();
    assert_eq!(orders, [[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]]);
    assert_eq!(trial_order(0, 5).count(), 0);
}

#[test]
fn pinned_libraries_are_copies_in_the_run_directory() {
    let dir = scratch("pinned");
    let original = shared_library(&dir, "original", "int original(void) { return 1; }\n");
    let lineup = Lineup {
        present: vec![
            glibc(),
            Library {
                malloc: CMalloc::Jemalloc,
                preload: Some(original.clone()),
                version: "j".into(),
            },
            Library {
                malloc: CMalloc::Mimalloc,
                preload: Some(dir.join("gone.so")),
                version: "m".into(),
            },
        ],
        missing: vec![(CMalloc::Tcmalloc, "missing: not here".into())],
    };
    let pinned = lineup.pinned(&dir.join("libraries"));
    assert_eq!(pinned.present.len(), 2);
    assert_eq!(pinned.present[0], glibc());
    let copy = pinned.present[1].preload.clone().unwrap();
    assert_eq!(copy, dir.join("libraries/jemalloc/original.so"));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&original).unwrap()
    );
    let missing: Vec<CMalloc> = pinned.missing.iter().map(|(m, _)| *m).collect();
    assert_eq!(missing, [CMalloc::Mimalloc, CMalloc::Tcmalloc]);
    assert!(pinned.missing[0].1.starts_with("missing: cannot copy"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn busy_two_thread_cases_get_a_note() {
    let wait = |malloc: &str, case: &str, percent: f64| {
        Cell::of(
            MallocWorkload::Threads.name(),
            case,
            malloc,
            &timed::CPU_WAIT,
            summarize([percent].into_iter()),
        )
    };
    let results = Results {
        environment: Environment::default(),
        cells: vec![
            wait("heapworks", "mixed", 1.0),
            wait("glibc", "mixed", 40.0),
            wait("mimalloc", "mixed", 52.4),
            wait("heapworks", "prodcons", 0.0),
        ],
    };
    assert_eq!(
        failure_notes(&results),
        [
            "mixed: the threads waited for a CPU (other processes were running) in the median \
          trial of glibc 40 %, mimalloc 52 %; those throughputs are not the allocators' alone"
        ]
    );
}

#[test]
fn callgrind_counts_per_call() {
    use counts::Sequence;
    let live = "events: Ir\nfn=measured_fill\n0 180\ncfn=malloc\ncalls=19980 0\n0 279720\n\
                cfn=malloc\ncalls=20 0\n0 280\nfn=measured_empty\ncfn=free\ncalls=20000 0\n0 400000\n";
    assert_eq!(Sequence::Live1000.per_call(live), Ok(vec![14.0, 20.0]));
    let pingpong = "fn=pingpong_loop\n0 100000\ncfn=malloc\ncalls=20000 0\n0 280000\n\
                    cfn=free\ncalls=20000 0\n0 400000\n";
    assert_eq!(Sequence::PingPong.per_call(pingpong), Ok(vec![39.0]));
    let realloc = "fn=measured_grow\ncfn=realloc\ncalls=4000 0\n0 132000\n";
    assert_eq!(Sequence::Realloc16.per_call(realloc), Ok(vec![33.0]));
    for sequence in Sequence::ALL {
        assert!(sequence.per_call("events: Ir\nfn=main\n0 5\n").is_err());
    }
}

#[test]
fn generated_inputs_are_deterministic_and_sized() {
    assert_eq!(inputs::c_source(5), inputs::c_source(5));
    assert_eq!(inputs::sort_lines(100).lines().count(), 100);
    assert_eq!(
        inputs::git_stream(3)
            .matches("\ncommit refs/heads/main")
            .count()
            + 1,
        3
    );
    assert_eq!(inputs::makefile(10).matches("\n\t@echo").count(), 10);
}

#[test]
fn the_generated_c_file_compiles() {
    let dir = scratch("c-source");
    let source = dir.join("generated.c");
    std::fs::write(&source, inputs::c_source(12)).unwrap();
    let binary = dir.join("generated");
    let mut compile = Command::new("cc");
    compile
        .args(["-O2", "-Wall", "-Werror", "-o"])
        .arg(&binary)
        .arg(&source);
    process::run(&mut compile).unwrap();
    let output = process::run(&mut Command::new(&binary)).unwrap();
    assert!(!output.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Compiles `source` into a shared library in `dir`.
fn shared_library(dir: &std::path::Path, name: &str, source: &str) -> PathBuf {
    let c_file = dir.join(format!("{name}.c"));
    std::fs::write(&c_file, source).unwrap();
    let library = dir.join(format!("{name}.so"));
    let mut compile = Command::new("cc");
    compile
        .args(["-shared", "-fPIC", "-o"])
        .arg(&library)
        .arg(&c_file);
    process::run(&mut compile).unwrap();
    library
}

#[test]
fn interposition_is_proven_by_the_dynamic_linker_log() {
    let dir = scratch("bound");
    let forwarding = shared_library(
        &dir,
        "forwarding",
        "#include <stddef.h>\nextern void *__libc_malloc(size_t);\n\
         void *malloc(size_t n) { return __libc_malloc(n); }\n",
    );
    let unrelated = shared_library(&dir, "unrelated", "int unrelated(void) { return 1; }\n");
    let library = |preload: PathBuf| Library {
        malloc: CMalloc::Jemalloc,
        preload: Some(preload),
        version: String::new(),
    };
    let logs = dir.join("logs");
    let mut sort = Command::new("sort");
    sort.arg("/dev/null");
    assert!(process::run_bound(&mut sort, &library(forwarding), &logs).is_ok());
    let error = process::run_bound(&mut sort, &library(unrelated), &logs).unwrap_err();
    assert!(error.starts_with("not interposed"), "{error}");
    assert!(process::run_bound(&mut sort, &glibc(), &logs).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

fn glibc() -> Library {
    Library {
        malloc: CMalloc::Glibc,
        preload: None,
        version: "glibc".into(),
    }
}

fn config(trials: usize) -> Config {
    Config {
        trials,
        ..Config::at_scale(Scale::Tiny, 1)
    }
}

#[test]
fn tasks_interleave_trials_and_fold_failures_and_missing_columns() {
    let lineup = Lineup {
        present: vec![
            glibc(),
            Library {
                malloc: CMalloc::Jemalloc,
                preload: Some("/x.so".into()),
                version: "x".into(),
            },
        ],
        missing: vec![(CMalloc::Tcmalloc, "missing: not here".into())],
    };
    let task = Task {
        workload: MallocWorkload::Sizes,
        label: "t".into(),
        outputs: vec![Output::new(
            "c",
            MetricSpec::primary("m", "u", Better::Lower),
        )],
        deterministic: false,
        check: Some(Box::new(|library| match library.malloc {
            CMalloc::Jemalloc => Err("not interposed".into()),
            _ => Ok(()),
        })),
        run: Box::new(|_, seed| Ok(vec![(seed % 3) as f64 + 1.0])),
    };
    let progress = Silent;
    let cells = run_task(&task, &lineup, &config(3), &progress);
    assert_eq!(cells.len(), 3);
    let Outcome::Measured(Summary { trials, .. }) = cells[0].outcome else {
        panic!("glibc measured: {:?}", cells[0].outcome);
    };
    assert_eq!(trials, 3);
    assert_eq!(cells[1].outcome, Outcome::Failed("not interposed".into()));
    assert_eq!(
        cells[2].outcome,
        Outcome::Failed("missing: not here".into())
    );
    let results = Results {
        environment: Environment::default(),
        cells,
    };
    assert_eq!(
        failure_notes(&results),
        [
            "jemalloc: not interposed (c)",
            "tcmalloc: missing: not here (c)"
        ]
    );
}

/// A real run of every C program under glibc: the numbers are positive and finite.
#[test]
fn the_c_programs_run_and_report_sane_numbers() {
    let dir = scratch("programs");
    let programs = Programs::compile(&dir).unwrap();
    let config = config(1);
    let mut tasks = vec![
        counts::task(&programs.driver, &dir),
        timed::sizes_task(&config, &programs.driver, &dir),
        timed::large_task(&config, &programs.driver, &dir),
    ];
    tasks.extend(timed::threads_tasks(&config, &programs.threads, &dir));
    tasks.extend(real::trace_tasks(&config, &programs, &dir).unwrap());
    let lineup = Lineup {
        present: vec![glibc()],
        missing: Vec::new(),
    };
    if heapworks_bench::instructions::check_valgrind().is_err() {
        tasks.remove(0);
    }
    for task in &tasks {
        for cell in run_task(task, &lineup, &config, &Silent) {
            let value = cell.median().unwrap_or_else(|| panic!("{cell:?}"));
            // A wait for a CPU is 0 on an idle machine; everything else is positive.
            let least = if cell.metric == timed::CPU_WAIT.name {
                0.0
            } else {
                f64::MIN_POSITIVE
            };
            assert!(value.is_finite() && value >= least, "{cell:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
