//! The `heapworks` binary end to end: a real tiny run writes JSON, CSV and HTML; the report
//! re-renders from that JSON; bad input fails with a clear message, a non-zero exit and no
//! files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use heapworks_cli::instructions::Sequence;

/// A scratch directory under the target directory, emptied on creation.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("heapworks-cli-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn heapworks(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_heapworks"))
        .args(args)
        .output()
        .expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Asserts a failed run: non-zero exit, `needle` in the message, nothing written in `dir`.
fn assert_refused(output: &Output, needle: &str, dir: &Path) {
    assert!(
        !output.status.success(),
        "should fail: {}",
        text(&output.stdout)
    );
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(needle),
        "message lacks `{needle}`: {stderr}"
    );
    assert!(
        output.stdout.is_empty(),
        "no table on failure: {}",
        text(&output.stdout)
    );
    assert_eq!(entries(dir), Vec::<String>::new(), "no files left behind");
}

/// Runs `heapworks ARGS --out <a fresh scratch dir>/h` and asserts it is refused with `needle`
/// (see [`assert_refused`]).
fn assert_args_refused(name: &str, args: &[&str], needle: &str) {
    let dir = scratch(name);
    let out = dir.join("h");
    let mut args = args.to_vec();
    args.extend(["--out", out.to_str().unwrap()]);
    assert_refused(&heapworks(&args), needle, &dir);
}

#[test]
fn tiny_run_writes_every_output_and_the_report_rerenders() {
    let dir = scratch("run");
    let json = dir.join("results.json");
    let csv = dir.join("results.csv");
    let html = dir.join("html");
    let filter = "latency,heap_efficiency,vec_growth,heapworks,talc,rlsf,buddy_alloc,system";
    let output = heapworks(&[
        "bench",
        "--quick",
        "--filter",
        filter,
        "--seed",
        "3",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--out",
        html.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    for needle in [
        "machine:",
        "crates:",
        "talc 5.1.1",
        "heapworks",
        "latency",
        "efficiency",
        "*",
    ] {
        assert!(table.contains(needle), "table lacks {needle}:\n{table}");
    }

    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let records = records.as_array().unwrap();
    for record in records {
        for field in ["workload", "case", "allocator", "metric", "value", "unit"] {
            assert!(
                record.get(field).is_some(),
                "record lacks {field}: {record}"
            );
        }
    }
    let efficiency: Vec<f64> = records
        .iter()
        .filter(|r| r["metric"] == "efficiency")
        .filter_map(|r| r["value"].as_f64())
        .collect();
    assert_eq!(
        efficiency.len(),
        4,
        "every arena in the filter has an efficiency"
    );
    assert!(efficiency.iter().all(|e| *e > 0.0 && *e <= 100.0));
    assert!(!records
        .iter()
        .any(|r| r["workload"] == "heap_efficiency" && r["allocator"] == "system"));

    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert!(csv_text.starts_with("workload,case,allocator,metric,value,unit"));
    assert_eq!(csv_text.lines().count(), records.len() + 1);

    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(page.contains("<svg") && page.contains("heap_efficiency") && page.contains("</html>"));
    assert!(
        !page.contains("<script") && !page.contains("src=\"http"),
        "self-contained"
    );
    assert_glance_summary(&page, &table);

    let rerendered = dir.join("rerendered");
    let output = heapworks(&[
        "report",
        json.to_str().unwrap(),
        "--out",
        rerendered.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let table_again = text(&output.stdout);
    let rows = |t: &str| {
        t.lines()
            .filter(|l| l.contains("efficiency"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&table_again), rows(&table), "same table from the file");
    let page_again = std::fs::read_to_string(rerendered.join("index.html")).unwrap();
    assert!(page_again.contains("<svg") && page_again.contains("vec_growth"));
}

#[test]
fn unknown_workload_is_refused() {
    let dir = scratch("unknown-workload");
    let output = heapworks(&[
        "bench",
        "--quick",
        "--filter",
        "randm_actions",
        "--out",
        dir.join("h").to_str().unwrap(),
    ]);
    assert_refused(
        &output,
        "unknown workload or allocator `randm_actions`",
        &dir,
    );
    assert!(
        text(&output.stderr).contains("random_actions"),
        "lists the valid names"
    );
}

#[test]
fn unknown_allocator_is_refused() {
    let dir = scratch("unknown-allocator");
    let json = dir.join("r.json");
    let output = heapworks(&[
        "bench",
        "--quick",
        "--filter",
        "talc,jemalloc",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_refused(&output, "`jemalloc`", &dir);
}

#[test]
fn zero_duration_is_refused() {
    assert_args_refused(
        "zero-duration",
        &["bench", "--quick", "--duration", "0ms"],
        "duration must be greater than zero",
    );
}

#[test]
fn zero_trials_are_refused() {
    assert_args_refused(
        "zero-trials",
        &["bench", "--quick", "--trials", "0"],
        "trials must be at least 1",
    );
}

#[test]
fn unwritable_output_directory_is_refused_before_running() {
    let dir = scratch("unwritable");
    let blocker = dir.join("file");
    std::fs::write(&blocker, "not a directory").unwrap();
    let output = heapworks(&[
        "bench",
        "--quick",
        "--out",
        blocker.join("report").to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("cannot write to"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(
        entries(&dir),
        vec!["file".to_string()],
        "nothing but the blocker"
    );
}

#[test]
fn json_into_a_missing_directory_is_refused() {
    let dir = scratch("missing-dir");
    let json = dir.join("no/such/dir/r.json");
    let output = heapworks(&[
        "bench",
        "--quick",
        "--json",
        json.to_str().unwrap(),
        "--no-html",
    ]);
    assert_refused(&output, "does not exist", &dir);
}

#[test]
fn report_of_a_missing_or_foreign_file_is_refused() {
    let dir = scratch("bad-report");
    let output = heapworks(&[
        "report",
        dir.join("absent.json").to_str().unwrap(),
        "--out",
        dir.join("h").to_str().unwrap(),
    ]);
    assert_refused(&output, "cannot read", &dir);
    let foreign = scratch("bad-report-foreign");
    std::fs::write(foreign.join("x.json"), "{\"not\": \"records\"}").unwrap();
    let output = heapworks(&[
        "report",
        foreign.join("x.json").to_str().unwrap(),
        "--out",
        foreign.join("h").to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    assert!(
        text(&output.stderr).contains("not a heapworks results file"),
        "{}",
        text(&output.stderr)
    );
    assert_eq!(entries(&foreign), vec!["x.json".to_string()]);
}

#[test]
fn list_names_every_workload_and_allocator() {
    let output = heapworks(&["list"]);
    assert!(output.status.success());
    let listing = text(&output.stdout);
    for name in [
        "random_actions",
        "insert_delete",
        "instructions",
        "heapworks",
        "heapworks_front",
        "buddy_alloc",
        "system",
        "malloc_programs",
        "tcmalloc",
    ] {
        assert!(listing.contains(name), "{name} missing:\n{listing}");
    }
}

/// Instruction counts need valgrind; CI installs it. Without it the test says so and passes,
/// since the rest of the suite must run on a bare toolchain too.
#[test]
fn instruction_counts_are_deterministic_and_gate_themselves() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("valgrind is not installed: instruction counts not exercised");
        return;
    }
    let dir = scratch("instructions");
    let first = dir.join("first.json");
    let second = dir.join("second.json");
    let filter = "heapworks,talc";
    let output = heapworks(&[
        "bench",
        "--instructions",
        "--filter",
        filter,
        "--no-html",
        "--json",
        first.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    assert!(
        table.contains("instr/call") && table.contains("realloc"),
        "{table}"
    );

    let gated = heapworks(&[
        "bench",
        "--filter",
        filter,
        "--no-html",
        "--gate",
        first.to_str().unwrap(),
        "--json",
        second.to_str().unwrap(),
    ]);
    assert!(gated.status.success(), "{}", text(&gated.stderr));
    assert!(text(&gated.stderr).contains("within 1% of the baseline"));

    let counts = |path: &Path| -> Vec<(String, f64)> {
        let records: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        records
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["workload"] == "instructions")
            .map(|r| {
                (
                    format!("{}/{}/{}", r["allocator"], r["case"], r["metric"]),
                    r["value"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    let counted = counts(&first);
    assert_eq!(
        counted.len(),
        2 * Sequence::ALL.len() * 3,
        "2 allocators × every sequence × 3 operations"
    );
    assert!(counted.iter().all(|(_, v)| *v > 0.0), "{counted:?}");
    assert_eq!(counted, counts(&second), "same counts on every run");
}

/// The workspace's trace corpus.
fn corpus(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces")
        .join(file)
}

/// A C program with known calls: 3 × malloc(12345), calloc(7, 11), realloc to 54321, frees.
const KNOWN_CALLS: &str = r#"
#include <stdlib.h>
int main(void) {
    void *blocks[3];
    for (int i = 0; i < 3; i++) blocks[i] = malloc(12345);
    void *zeroed = calloc(7, 11);
    blocks[1] = realloc(blocks[1], 54321);
    for (int i = 0; i < 3; i++) free(blocks[i]);
    free(zeroed);
    return 0;
}
"#;

#[test]
fn trace_of_a_c_program_replays_on_every_allocator() {
    let dir = scratch("trace-c");
    let source = dir.join("known.c");
    let program = dir.join("known");
    std::fs::write(&source, KNOWN_CALLS).unwrap();
    let compiled = Command::new("cc")
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .status();
    if !compiled.is_ok_and(|status| status.success()) {
        eprintln!("no working `cc`: capture not exercised");
        return;
    }
    let shim = heapworks_trace::capture::build_shim().expect("the shim builds");
    let trace = dir.join("known.hwt");
    let output = Command::new(env!("CARGO_BIN_EXE_heapworks"))
        .args(["trace", "-o", trace.to_str().unwrap(), "--"])
        .arg(&program)
        .env(heapworks_trace::capture::SHIM_ENV, &shim)
        .output()
        .unwrap();
    let summary = text(&output.stderr);
    assert!(output.status.success(), "{summary}");
    assert!(
        summary.contains("1 processes traced") && summary.contains("wrote "),
        "{summary}"
    );

    let captured = heapworks_trace::read_trace(&trace).unwrap();
    let sizes: Vec<u64> = captured
        .ops()
        .iter()
        .filter_map(|op| op.kind.size())
        .collect();
    assert_eq!(
        sizes.iter().filter(|&&s| s == 12345).count(),
        3,
        "{sizes:?}"
    );
    assert_eq!(
        sizes.iter().filter(|&&s| s == 54321).count(),
        1,
        "{sizes:?}"
    );
    assert_eq!(sizes.iter().filter(|&&s| s == 77).count(), 1, "{sizes:?}");

    let html = dir.join("html");
    let json = dir.join("replay.json");
    let output = heapworks(&[
        "replay",
        trace.to_str().unwrap(),
        "--alloc",
        "heapworks,heapworks_front,talc,rlsf,dlmalloc,system",
        "--check",
        "--json",
        json.to_str().unwrap(),
        "--out",
        html.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    for needle in ["known.hwt [0..", "interval time", "utilization", "dlmalloc"] {
        assert!(table.contains(needle), "table lacks {needle}:\n{table}");
    }
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let utilizations = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] == "traces" && r["metric"] == "utilization")
        .filter(|r| r["value"].as_f64().is_some_and(|u| u > 0.0))
        .count();
    assert_eq!(utilizations, 6, "every allocator has a utilization");
}

#[test]
fn replay_report_plots_interval_average_and_utilization() {
    let dir = scratch("replay-report");
    let html = dir.join("html");
    let output = heapworks(&[
        "replay",
        corpus("git-log.hwt").to_str().unwrap(),
        corpus("realloc-free-10k.script").to_str().unwrap(),
        "--alloc",
        "heapworks,buddy_alloc,system",
        "-r",
        "0",
        "3000",
        "-r",
        "4000",
        "6000",
        "--out",
        html.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    for title in [
        "traces: interval time (ms)",
        "traces: average response (ns)",
        "traces: utilization (%)",
    ] {
        assert_eq!(page.matches(title).count(), 1, "one plot of {title}");
    }
    assert!(
        !page.contains("traces: footprint"),
        "footprint is in the table only"
    );
    for case in [
        "git-log.hwt [0..3000)",
        "realloc-free-10k.script [4000..6000)",
    ] {
        assert!(page.contains(case), "{case} missing");
    }
    assert!(
        page.contains("<h1>heapworks replay</h1>")
            && page.contains("3 trials per cell, interleaved")
    );
    assert!(page.contains("<svg") && page.contains("</html>"));
}

#[test]
fn replay_of_a_corrupt_trace_names_the_offset() {
    let dir = scratch("corrupt-trace");
    let whole = std::fs::read(corpus("git-log.hwt")).unwrap();
    let truncated = dir.join("truncated.hwt");
    std::fs::write(&truncated, &whole[..whole.len() / 2]).unwrap();
    let output = heapworks(&[
        "replay",
        truncated.to_str().unwrap(),
        "--alloc",
        "heapworks",
        "--no-html",
    ]);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("truncated.hwt") && stderr.contains("byte offset"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "no table on failure");
}

#[test]
fn replay_on_an_unknown_allocator_is_refused() {
    assert_args_refused(
        "replay-unknown-allocator",
        &[
            "replay",
            corpus("git-log.hwt").to_str().unwrap(),
            "--alloc",
            "talc,jemalloc",
        ],
        "unknown allocator `jemalloc`",
    );
}

#[test]
fn replay_in_too_small_a_heap_reports_out_of_memory_and_carries_on() {
    let dir = scratch("replay-oom");
    let output = heapworks(&[
        "replay",
        corpus("sort.hwt").to_str().unwrap(),
        "--alloc",
        "heapworks,talc,system",
        "--heap",
        "4M",
        "--no-html",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    let interval = table
        .lines()
        .find(|l| l.contains("interval time"))
        .unwrap_or_default();
    assert_eq!(interval.matches("OOM").count(), 2, "{table}");
    assert!(
        interval.trim_end().ends_with('%'),
        "system measured: {interval}"
    );
    assert_eq!(entries(&dir), Vec::<String>::new());
}

#[test]
fn bench_replays_the_corpus() {
    let dir = scratch("bench-traces");
    let json = dir.join("r.json");
    let output = heapworks(&[
        "bench",
        "--quick",
        "--filter",
        "traces,heapworks,system",
        "--no-html",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cases: std::collections::BTreeSet<String> = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] == "traces" && r["value"].as_f64().is_some())
        .map(|r| r["case"].as_str().unwrap().to_string())
        .collect();
    assert!(
        cases
            .iter()
            .any(|c| c.starts_with("gcc-cc1.hwt, first 2000 of")),
        "{cases:?}"
    );
    assert!(
        cases.iter().any(|c| c == "sort.hwt"),
        "whole when short: {cases:?}"
    );
}

fn valgrind_installed() -> bool {
    Command::new("valgrind").arg("--version").output().is_ok()
}

/// `bench --malloc`, end to end: heapworks-malloc (built by the bench when needed) and glibc
/// preloaded into the C programs and real programs, with jemalloc pointed at a library that
/// does not exist, which must become a `missing` column with a note, not an error. Checks
/// that every number is positive and finite; nothing here depends on how fast anything is.
#[test]
fn malloc_bench_measures_preloaded_programs_and_notes_a_missing_library() {
    let dir = scratch("malloc");
    let json = dir.join("r.json");
    let mut filter =
        String::from("malloc_sizes,malloc_threads,malloc_programs,heapworks,glibc,jemalloc");
    if valgrind_installed() {
        filter.push_str(",malloc_instructions");
    }
    let output = heapworks(&[
        "bench",
        "--malloc",
        "--quick",
        "--filter",
        &filter,
        "--malloc-lib",
        "jemalloc=/nonexistent/libjemalloc.so.2",
        "--no-html",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stderr = text(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("note: jemalloc: missing: /nonexistent/libjemalloc.so.2 not found"),
        "{stderr}"
    );
    let table = text(&output.stdout);
    assert!(
        table.contains("malloc_programs") && table.contains("missing"),
        "{table}"
    );
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cells: Vec<&serde_json::Value> = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"].as_str().unwrap().starts_with("malloc_"))
        .collect();
    for cell in &cells {
        let status = cell["status"].as_str().unwrap();
        if cell["allocator"] == "jemalloc" {
            assert!(status.starts_with("missing: /nonexistent"), "{cell}");
        } else if status.contains("is not installed") {
            eprintln!("skipped: {status}");
        } else {
            let value = cell["value"].as_f64().unwrap_or(f64::NAN);
            assert!(value.is_finite() && value > 0.0, "{cell}");
        }
    }
    let cases: std::collections::BTreeSet<&str> =
        cells.iter().map(|c| c["case"].as_str().unwrap()).collect();
    for case in [
        "50 B",
        "50 MB",
        "producer/consumer, 2 threads",
        "mixed sizes, 2 threads",
    ] {
        assert!(cases.contains(case), "{case} missing from {cases:?}");
    }
    assert!(cases.iter().any(|c| c.starts_with("sort, ")), "{cases:?}");
}

#[test]
fn malloc_bench_refuses_bad_options_before_running() {
    let dir = scratch("malloc-refused");
    let json = dir.join("r.json");
    let json = json.to_str().unwrap();
    let unknown = heapworks(&["bench", "--malloc", "--filter", "talc", "--json", json]);
    assert_refused(&unknown, "unknown --malloc workload or malloc `talc`", &dir);
    let glibc = heapworks(&["bench", "--malloc", "--malloc-lib", "glibc=/lib/libc.so.6"]);
    assert_refused(&glibc, "not preloaded", &dir);
    let without_malloc = heapworks(&["bench", "--malloc-lib", "jemalloc=/x.so"]);
    assert_refused(&without_malloc, "--malloc", &dir);
    let gated = heapworks(&["bench", "--malloc", "--gate", json]);
    assert_refused(&gated, "cannot be used with", &dir);
}

/// Runs the binary under an address-space limit (`ulimit -v`, in KiB): an allocation that
/// grows with a hostile input, not with what the input holds, fails the run at once.
fn heapworks_limited(limit_kib: u64, args: &[&str]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {limit_kib} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_heapworks"))
        .args(args)
        .output()
        .expect("sh runs")
}

/// 1 GB of address space: ample for a replay of a few blocks, far from what a table indexed
/// by the largest id (2 GB and more) needs.
const ADDRESS_SPACE_KIB: u64 = 1_000_000;

/// A trace of `ids` blocks named by ids spread up to the largest one, each allocated and freed.
fn sparse_id_trace(ids: u32) -> heapworks_trace::Trace {
    use heapworks_trace::model::{Op, OpKind, MAX_ID};
    let mut trace = heapworks_trace::Trace::new();
    for index in 0..ids {
        let id = MAX_ID - index * (MAX_ID / ids);
        for kind in [OpKind::Malloc { size: 24 }, OpKind::Free] {
            trace
                .push(Op {
                    thread: 0,
                    id,
                    kind,
                })
                .unwrap();
        }
    }
    trace
}

#[test]
fn replay_memory_follows_the_live_ids_not_the_largest_id() {
    let dir = scratch("sparse-ids");
    let script = dir.join("largest-id.script");
    std::fs::write(&script, "a 67108863 16\nf 67108863\n").unwrap();
    let binary = dir.join("sparse.hwt");
    heapworks_trace::write_trace(&binary, &sparse_id_trace(1000)).unwrap();
    for trace in [&script, &binary] {
        let output = heapworks_limited(
            ADDRESS_SPACE_KIB,
            &[
                "replay",
                trace.to_str().unwrap(),
                "--alloc",
                "heapworks,system",
                "--no-html",
            ],
        );
        assert!(
            output.status.success(),
            "{}: {}",
            trace.display(),
            text(&output.stderr)
        );
        assert!(text(&output.stdout).contains("utilization"));
    }
}

#[test]
fn replay_of_an_endless_file_is_refused_within_bounded_memory() {
    let dir = scratch("endless");
    let output = heapworks_limited(
        ADDRESS_SPACE_KIB,
        &[
            "replay",
            "/dev/zero",
            "--out",
            dir.join("h").to_str().unwrap(),
        ],
    );
    assert_refused(&output, "/dev/zero: larger than the 268435456 bytes", &dir);
}

#[test]
fn a_trace_with_a_size_no_allocator_can_be_asked_for_stops_bench_with_the_reason() {
    let dir = scratch("unservable-size");
    let corpus = dir.join("corpus");
    std::fs::create_dir(&corpus).unwrap();
    std::fs::write(
        corpus.join("huge.script"),
        "a 1 18446744073709551615\nf 1\n",
    )
    .unwrap();
    let output = heapworks(&[
        "bench",
        "--quick",
        "--filter",
        "traces,heapworks",
        "--traces",
        corpus.to_str().unwrap(),
        "--no-html",
    ]);
    assert!(!output.status.success(), "{}", text(&output.stdout));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("huge.script")
            && stderr.contains("18446744073709551615 bytes")
            && stderr.contains("cannot be asked of a GlobalAlloc"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "no table on failure");
}

#[test]
fn a_missing_or_empty_trace_corpus_is_an_error_with_the_reason() {
    let dir = scratch("missing-corpus");
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let missing = dir.join("missing");
    for (corpus, reason) in [
        (&missing, "No such file or directory"),
        (&empty, "no trace file"),
    ] {
        let output = heapworks(&[
            "bench",
            "--quick",
            "--filter",
            "traces,heapworks",
            "--traces",
            corpus.to_str().unwrap(),
            "--no-html",
        ]);
        assert!(!output.status.success(), "{}", text(&output.stdout));
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("trace corpus") && stderr.contains(reason),
            "{stderr}"
        );
        assert!(output.stdout.is_empty(), "no table on failure");
    }
}

#[test]
fn an_empty_filter_is_refused_with_the_names_that_exist() {
    let dir = scratch("empty-filter");
    let out = dir.join("h");
    for filter in ["", ",", "latency,,talc", " "] {
        let output = heapworks(&[
            "bench",
            "--quick",
            "--filter",
            filter,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_refused(&output, "--filter has an empty name", &dir);
        assert!(text(&output.stderr).contains("random_actions"));
        let output = heapworks(&["bench", "--malloc", "--quick", "--filter", filter]);
        assert!(!output.status.success());
        let stderr = text(&output.stderr);
        assert!(
            stderr.contains("--filter has an empty name") && stderr.contains("malloc_threads"),
            "{stderr}"
        );
    }
}

#[test]
fn a_filter_that_runs_nothing_is_refused() {
    assert_args_refused(
        "filter-runs-nothing",
        &["bench", "--quick", "--filter", "heap_exhaustion,system"],
        "the selection runs nothing",
    );
}

#[test]
fn numeric_options_past_their_bounds_are_refused() {
    let dir = scratch("unbounded-numbers");
    let trace = corpus("sort.hwt");
    let trace = trace.to_str().unwrap();
    let refusals: [(&[&str], &str); 7] = [
        (&["bench", "--trials", "4294967296"], "at most 1000 trials"),
        (&["bench", "--trials", "1001"], "at most 1000 trials"),
        (
            &["bench", "--duration", "18446744073709551615"],
            "a duration is from 1 us to 60 s",
        ),
        (
            &["bench", "--duration", "61s"],
            "a duration is from 1 us to 60 s",
        ),
        (
            &["bench", "--gate", "baseline.json", "--tolerance", "NaN"],
            "a tolerance is from 0 to 1000 percent",
        ),
        (
            &["replay", trace, "--heap", "18446744073709551615"],
            "more than this machine's",
        ),
        (
            &["trace", "--max-ops", "0", "-o", "t.hwt", "--", "true"],
            "keep at least 1 request",
        ),
    ];
    for (args, needle) in refusals {
        let output = heapworks(args);
        assert_refused(&output, needle, &dir);
    }
}

#[test]
fn report_refuses_more_allocators_than_a_table_has_columns() {
    let dir = scratch("report-columns");
    let records: Vec<String> = (0..65)
        .map(|index| {
            format!(
                r#"{{"workload":"latency","case":"c","allocator":"a{index}","metric":"m","value":1.0,"unit":"ns","better":"lower","primary":true,"min":1.0,"max":1.0,"spread_pct":0.0,"trials":1,"status":"ok"}}"#
            )
        })
        .collect();
    let results = dir.join("wide.json");
    std::fs::write(&results, format!("[{}]", records.join(","))).unwrap();
    let out = dir.join("h");
    let output = heapworks(&[
        "report",
        results.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!output.status.success(), "{}", text(&output.stdout));
    assert!(
        text(&output.stderr).contains("at most 64 columns"),
        "{}",
        text(&output.stderr)
    );
    assert!(!out.exists());
}

#[test]
fn report_refuses_an_oversized_results_file_before_reading_it() {
    let dir = scratch("report-oversized");
    let results = dir.join("huge.json");
    let file = std::fs::File::create(&results).unwrap();
    // Sparse: no disk space, and a reader that checked the size reads none of it.
    file.set_len(heapworks_cli::cli::MAX_RESULTS_BYTES + 1)
        .unwrap();
    let out = dir.join("h");
    let output = heapworks_limited(
        ADDRESS_SPACE_KIB / 4,
        &[
            "report",
            results.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("larger than the 134217728 bytes"),
        "{stderr}"
    );
}

#[test]
fn failed_cells_say_why_under_the_table() {
    let output = heapworks(&[
        "replay",
        corpus("sort.hwt").to_str().unwrap(),
        "--alloc",
        "heapworks,system",
        "--heap",
        "4M",
        "--no-html",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    let reasons: Vec<&str> = table
        .lines()
        .skip_while(|line| !line.starts_with("failed cells (2):"))
        .skip(1)
        .take_while(|line| !line.is_empty())
        .collect();
    assert_eq!(reasons.len(), 2, "the timed range and the trace: {table}");
    for reason in reasons {
        assert!(
            reason.contains("sort.hwt") && reason.contains("heapworks: out of memory at request"),
            "{table}"
        );
    }
}

/// `bench --pool`, end to end without the peers (which build heapworks-malloc): the table, the
/// target notes, the HTML report with time against size drawn twice.
#[test]
fn pool_bench_measures_the_variants_and_judges_the_targets() {
    let dir = scratch("pool");
    let html = dir.join("html");
    let filter =
        "pool_sizes,pool_variable_shape,fill_existing,inline_without_pool,inline_with_pool";
    let output = heapworks(&[
        "bench",
        "--pool",
        "--quick",
        "--duration",
        "1ms",
        "--filter",
        filter,
        "--out",
        html.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    for needle in [
        "pool_sizes",
        "23.7 MiB (HD f32)",
        "inline_with_pool",
        "hit rate",
    ] {
        assert!(table.contains(needle), "table lacks `{needle}`: {table}");
    }
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("with pool within 1.05× of fill_existing"),
        "{stderr}"
    );
    let report = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(report.contains("linear") && report.contains("log-log"));
}

#[test]
fn pool_bench_refuses_bad_options_before_running() {
    let dir = scratch("pool-refused");
    let json = dir.join("r.json");
    let json = json.to_str().unwrap();
    let unknown = heapworks(&["bench", "--pool", "--filter", "talc", "--json", json]);
    assert_refused(
        &unknown,
        "unknown --pool workload, variant or peer `talc`",
        &dir,
    );
    let both = heapworks(&["bench", "--pool", "--malloc", "--json", json]);
    assert_refused(&both, "--malloc", &dir);
}

/// The standard output of `heapworks ARGS`, which must succeed.
fn stdout_of_success(args: &[&str]) -> String {
    let output = heapworks(args);
    assert!(output.status.success(), "{}", text(&output.stderr));
    text(&output.stdout)
}

/// Runs `heapworks ARGS` in `cwd` with `XDG_CACHE_HOME` set to `cache`.
fn heapworks_in(cwd: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_heapworks"))
        .args(args)
        .current_dir(cwd)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .expect("binary runs")
}

#[test]
fn version_names_the_crate_version_and_the_revision() {
    let output = heapworks(&["--version"]);
    assert!(output.status.success());
    let version = text(&output.stdout);
    assert!(
        version.starts_with(&format!(
            "heapworks {} (revision ",
            env!("CARGO_PKG_VERSION")
        )),
        "{version}"
    );
    let head = Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "rev-parse",
            "--short=12",
            "HEAD",
        ])
        .output();
    match head {
        Ok(head) if head.status.success() => {
            let head = text(&head.stdout);
            assert!(version.contains(head.trim()), "{version} is not at {head}");
        }
        _ => assert!(
            version.contains("not built from a git checkout"),
            "{version}"
        ),
    }
}

#[test]
fn replay_usage_shows_alloc_as_optional_and_defaults_to_every_allocator() {
    let help = text(&heapworks(&["replay", "--help"]).stdout);
    let usage = help.lines().find(|l| l.starts_with("Usage:")).unwrap();
    assert_eq!(usage, "Usage: heapworks replay [OPTIONS] <TRACE>...");
    let refused = text(&heapworks(&["replay"]).stderr);
    assert!(!refused.contains("--alloc"), "{refused}");
    let trace = corpus("realloc-free-10k.script");
    let table = stdout_of_success(&[
        "replay",
        trace.to_str().unwrap(),
        "--trials",
        "1",
        "--no-html",
    ]);
    let header = table
        .lines()
        .find(|l| l.trim_start().starts_with("case"))
        .unwrap();
    for allocator in ["talc", "rlsf", "dlmalloc", "linked_list", "system"] {
        assert!(header.contains(allocator), "{allocator} missing: {header}");
    }
}

#[test]
fn replay_trials_are_bounded_interleaved_and_summarized() {
    for (bad, needle) in [
        ("0", "at least 1"),
        ("1001", "at most 1000"),
        ("x", "not a number"),
    ] {
        let output = heapworks(&["replay", "--trials", bad, "t.hwt"]);
        assert!(!output.status.success());
        assert!(text(&output.stderr).contains(needle), "{bad}");
    }
    let dir = scratch("replay-trials");
    let json = dir.join("r.json");
    let trace = corpus("realloc-free-10k.script");
    stdout_of_success(&[
        "replay",
        trace.to_str().unwrap(),
        "--alloc",
        "heapworks,talc",
        "--trials",
        "4",
        "--json",
        json.to_str().unwrap(),
        "--no-html",
    ]);
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let cells: Vec<&serde_json::Value> = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["workload"] == "traces")
        .collect();
    assert_eq!(cells.len(), 2 * 6, "3 time and 3 memory metrics each");
    for cell in cells {
        assert_eq!(cell["trials"], 4, "{cell}");
        let (min, max) = (cell["min"].as_f64().unwrap(), cell["max"].as_f64().unwrap());
        let median = cell["value"].as_f64().unwrap();
        assert!(min <= median && median <= max, "{cell}");
    }
}

#[test]
fn reports_go_to_the_cache_directory_not_the_current_one() {
    let dir = scratch("default-report-dir");
    let (cwd, cache) = (dir.join("cwd"), dir.join("cache"));
    std::fs::create_dir_all(&cwd).unwrap();
    let trace = corpus("realloc-free-10k.script");
    let runs: [(&str, Vec<&str>); 2] = [
        (
            "replay",
            vec![
                "replay",
                trace.to_str().unwrap(),
                "--alloc",
                "heapworks",
                "--trials",
                "1",
            ],
        ),
        (
            "bench",
            vec!["bench", "--quick", "--filter", "latency,heapworks"],
        ),
    ];
    for (command, args) in runs {
        let output = heapworks_in(&cwd, &cache, &args);
        assert!(output.status.success(), "{}", text(&output.stderr));
        let report = cache
            .join("heapworks/reports")
            .join(command)
            .join("index.html");
        assert!(report.is_file(), "{} missing", report.display());
        assert!(text(&output.stderr).contains(report.to_str().unwrap()));
    }
    assert_eq!(
        entries(&cwd),
        Vec::<String>::new(),
        "nothing in the current directory"
    );
}

/// The report opens with the at-a-glance summary, every row of it linked to a row of the
/// detail tables, and the terminal run ends with the same rows.
fn assert_glance_summary(page: &str, table: &str) {
    let glance = page.find("<section id=\"glance\">").expect("a summary");
    let environment = page.find("<div class=\"env\">").unwrap();
    assert!(glance < environment, "the summary comes first");
    let end = glance + page[glance..].find("</section>").unwrap();
    let summary = &page[glance..end];
    let links: Vec<&str> = summary
        .split("href=\"#")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assert!(!links.is_empty(), "{summary}");
    for link in &links {
        assert!(
            page.contains(&format!("<tr id=\"{link}\">")),
            "{link} leads nowhere"
        );
    }
    let verdicts = ["class=\"win\"", "class=\"tie\"", "class=\"loss\""];
    let rows: usize = verdicts.iter().map(|v| summary.matches(v).count()).sum();
    assert_eq!(rows, links.len(), "every row is a win, a tie or a loss");
    let (_, terminal) = table
        .split_once("at a glance: heapworks")
        .expect("terminal summary");
    assert_eq!(terminal.lines().skip(1).count(), links.len(), "{terminal}");
}

/// `bench --indexes --quick` (CI's run of the free-index study, seconds): every index of the
/// registry and both reference peers in the results, seed 003's workloads at the quick N, and
/// the HTML report drawing time against N for each. Nothing here reads a timing.
#[test]
fn index_study_quick_covers_every_index_and_the_n_axis() {
    use heapworks_cli::contenders::AllocatorId;
    use heapworks_cli::study;

    let dir = scratch("indexes");
    let json = dir.join("results.json");
    let html = dir.join("html");
    stdout_of_success(&[
        "bench",
        "--indexes",
        "--quick",
        "--json",
        json.to_str().unwrap(),
        "--out",
        html.to_str().unwrap(),
    ]);
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let records = records.as_array().unwrap();
    let measured = |workload: &str, allocator: &str| {
        records.iter().any(|r| {
            r["workload"] == workload && r["allocator"] == allocator && r["value"].is_number()
        })
    };
    let mut contenders = AllocatorId::heapworks_on_every_index();
    assert!(
        contenders.len() >= 4,
        "heapworks on bins, splay, hybrid, segregated at least"
    );
    contenders.extend(study::PEERS);
    let page = std::fs::read_to_string(html.join("index.html")).unwrap();
    for workload in study::WORKLOADS {
        for allocator in &contenders {
            assert!(
                measured(workload.name(), allocator.name()),
                "no {allocator} in {workload}"
            );
        }
    }
    for allocator in &contenders {
        assert!(page.contains(allocator.name()), "report lacks {allocator}");
    }
    let normal_run_names = AllocatorId::ALL.iter().map(|a| a.name());
    assert!(normal_run_names
        .clone()
        .all(|name| name != "heapworks_splay"));

    for workload in ["insert_delete", "realloc_coalesce"] {
        let cases: Vec<&str> = records
            .iter()
            .filter(|r| r["workload"] == workload && r["allocator"] == "heapworks")
            .filter(|r| r["metric"] == "total")
            .map(|r| r["case"].as_str().unwrap())
            .collect();
        let expected: Vec<String> = study::QUICK_BLOCK_COUNTS
            .iter()
            .map(|n| format!("N = {n}"))
            .collect();
        assert_eq!(cases, expected, "{workload}'s N axis");
        let plot = records
            .iter()
            .find(|r| r["case"] == "workload" && r["allocator"] == workload)
            .map(|r| &r["value"]["plot"]["growth"])
            .unwrap();
        let xs: Vec<f64> = plot["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c[1].as_f64().unwrap())
            .collect();
        let quick_n: Vec<f64> = study::QUICK_BLOCK_COUNTS
            .iter()
            .map(|&n| n as f64)
            .collect();
        assert_eq!(xs, quick_n, "{workload}'s plot has the N axis");
        assert!(
            page.contains(&format!(
                "{workload}: total against N (blocks) (ms, log-log)"
            )),
            "no time-against-N plot for {workload}"
        );
    }
}

/// The index contenders are taken by name where any contender is, and listed.
#[test]
fn index_contenders_are_listed_and_taken_by_name() {
    let listing = stdout_of_success(&["list"]);
    for name in [
        "heapworks_splay",
        "heapworks_hybrid",
        "heapworks_segregated",
    ] {
        assert!(listing.contains(name), "{name} missing:\n{listing}");
    }
    let table = stdout_of_success(&[
        "replay",
        corpus("sort.hwt").to_str().unwrap(),
        "--alloc",
        "heapworks,heapworks_splay",
        "--trials",
        "1",
        "--no-html",
    ]);
    assert!(table.contains("heapworks_splay"), "{table}");
}
