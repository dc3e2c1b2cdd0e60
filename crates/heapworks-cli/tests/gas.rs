//! `heapworks gas --render`: the HTML report drawn from a real heapworks-gas results file, and
//! refusals of malformed, foreign and oversized files.
//!
//! The fixture is `crates/heapworks-gas/baseline-quick.json`, the CI gate's baseline: the JSON of
//! a real `heapworks-gas --quick --json` run of every guest on every scenario (regenerated with
//! that command, never edited by hand), so the report is drawn from what the program writes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../heapworks-gas/baseline-quick.json"
);

/// An empty scratch directory under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("heapworks-gas-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `heapworks gas --render RESULTS --out OUT`.
fn render(results: &Path, out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_heapworks"))
        .args(["gas", "--render"])
        .arg(results)
        .arg("--out")
        .arg(out)
        .output()
        .expect("binary runs")
}

fn escaped(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[test]
fn report_shows_every_guest_scenario_table_and_plot() {
    let out = scratch("report");
    let output = render(Path::new(FIXTURE), &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();

    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    let guests = fixture["guests"].as_array().unwrap();
    let scenarios = guests[0]["scenarios"].as_array().unwrap();
    assert!(guests.len() >= 2 && scenarios.len() >= 4, "a real run");
    for guest in guests {
        let name = guest["guest"].as_str().unwrap();
        // The colour key, the ratio table's column and one seed table per scenario.
        let tables = html.matches(&format!("<h3>{}</h3>", escaped(name))).count();
        assert_eq!(tables, scenarios.len(), "{name}'s seed tables");
        assert!(
            html.contains(&format!("</span>{}</span>", escaped(name))),
            "{name} in the key"
        );
    }
    for (index, scenario) in scenarios.iter().enumerate() {
        let name = escaped(scenario[0].as_str().unwrap());
        let section = format!("<section id=\"scenario-{index}\"><h2>{name}</h2>");
        assert!(html.contains(&section), "section of {name}");
        // Plotters' SVG text escapes apostrophes too.
        let title = format!("{name}: average gas per call").replace('\'', "&apos;");
        assert!(html.contains(&title), "plot of {name}");
    }
    // Seed 000's table rows, per guest and scenario.
    let tables = guests.len() * scenarios.len();
    for row in ["avg", "min", "max", "count", "total", "% of total gas"] {
        assert_eq!(
            html.matches(&format!("<tr><td>{row}</td>")).count(),
            tables,
            "{row}"
        );
    }
    assert_eq!(html.matches("<b>Pages touched:</b>").count(), tables);
    // Plots: the ratios (programs and micro), the share, code size, one per scenario.
    assert_eq!(html.matches("<svg").count(), 4 + scenarios.len());
    for title in [
        "allocation gas / dlmalloc-0.2.14: seed 000&apos;s programs",
        "allocation gas / dlmalloc-0.2.14: micro scenarios",
        "allocation gas, share of the scenario&apos;s total gas",
        "after wasm-opt -Oz",
    ] {
        assert!(
            html.contains(title) || html.contains(&title.replace("&apos;", "'")),
            "{title}"
        );
    }
    // The reference's own ratio is 1 on every scenario.
    assert!(html.contains("×1.00"));
}

#[test]
fn malformed_foreign_and_oversized_files_are_refused() {
    let dir = scratch("refused");
    let out = dir.join("out");
    let fixture = std::fs::read_to_string(FIXTURE).unwrap();
    let cases: [(&str, String, &str); 4] = [
        (
            "cut.json",
            fixture[..fixture.len() / 2].to_string(),
            "not valid JSON",
        ),
        (
            "malformed.json",
            fixture.replacen("\"count\"", "\"cuont\"", 1),
            "malformed heapworks-gas results file",
        ),
        (
            "bench.json",
            "[{\"workload\": \"w\"}]".into(),
            "not a heapworks-gas results file",
        ),
        (
            "future.json",
            fixture.replacen("heapworks-gas-results/1", "heapworks-gas-results/2", 1),
            "schema \"heapworks-gas-results/2\"",
        ),
    ];
    for (name, text, needle) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let output = render(&path, &out);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{name} accepted");
        assert!(
            stderr.contains(needle) && stderr.contains(name),
            "{name}: {stderr}"
        );
    }
    // Past the limit (16 MiB): a sparse file, refused before it is read.
    let huge = dir.join("huge.json");
    let file = std::fs::File::create(&huge).unwrap();
    file.set_len(heapworks_gas_results::MAX_BYTES + 1).unwrap();
    let output = render(&huge, &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success() && stderr.contains("larger than"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing written for a refused file");
}
