//! The terminal table: one row per (workload, case, primary metric), one column per allocator.
//! A cell shows the median of the trials and its ratio to the baseline (heapworks); `*` marks
//! the best cell of the row; the last column is the widest spread of the row's trials. A cell
//! that failed shows a short status (`OOM`, `no setup`, …); the lines under the table say why,
//! once per case and allocator (the first [`MAX_FAILURE_LINES`] of them).

use std::collections::HashSet;

use crate::results::{Outcome, Results, Row};

/// Most failures explained under the table; the HTML report has every one (as a tooltip).
pub const MAX_FAILURE_LINES: usize = 20;

use super::{format_ratio, format_value};

/// The table with its header lines (machine, settings, versions, legend).
pub fn render(results: &Results) -> String {
    let mut out = header(results);
    let allocators = results.allocators();
    let baseline = ratio_baseline(results);
    let rows: Vec<Row<'_>> = results
        .rows()
        .into_iter()
        .filter(|r| r.first().primary)
        .collect();
    let mut lines: Vec<Vec<String>> = vec![title_line(&allocators)];
    // The workload heading to print before each line, if one starts there.
    let mut headings: Vec<Option<&str>> = vec![None];
    for (index, row) in rows.iter().enumerate() {
        let workload = row.first().workload.as_str();
        let starts = index == 0 || rows[index - 1].first().workload != workload;
        headings.push(starts.then_some(workload));
        lines.push(row_line(row, &allocators, &baseline));
    }
    let widths = column_widths(&lines);
    for (line, heading) in lines.iter().zip(headings) {
        if let Some(workload) = heading {
            out.push_str(&workload_heading(results, workload));
        }
        out.push_str(&layout_line(line, &widths));
    }
    out.push_str(&failure_lines(&rows));
    out
}

/// Why cells failed: one line per (workload, case, allocator).
fn failure_lines(rows: &[Row<'_>]) -> String {
    let mut seen = HashSet::new();
    let failures: Vec<String> = rows
        .iter()
        .flat_map(|row| row.cells.iter())
        .filter_map(|cell| match &cell.outcome {
            Outcome::Failed(why) => Some((cell, why)),
            Outcome::Measured(_) | Outcome::Verdict(_) => None,
        })
        .filter(|(cell, _)| seen.insert((&cell.workload, &cell.case, &cell.allocator)))
        .map(|(cell, why)| {
            format!(
                "  {} · {} · {}: {why}\n",
                cell.workload, cell.case, cell.allocator
            )
        })
        .collect();
    if failures.is_empty() {
        return String::new();
    }
    let mut text = format!("\nfailed cells ({}):\n", failures.len());
    for line in failures.iter().take(MAX_FAILURE_LINES) {
        text.push_str(line);
    }
    if failures.len() > MAX_FAILURE_LINES {
        text.push_str(&format!(
            "  … and {} more (the HTML report and the JSON name each)\n",
            failures.len() - MAX_FAILURE_LINES
        ));
    }
    text
}

/// The column ratios are taken to; none (empty) in a scorecard, whose verdicts have none.
pub fn ratio_baseline(results: &Results) -> String {
    if results.environment.is_scorecard() {
        return String::new();
    }
    results.baseline().unwrap_or_default()
}

fn header(results: &Results) -> String {
    let env = &results.environment;
    let baseline = results.baseline().unwrap_or_else(|| "-".to_string());
    let legend = if env.is_scorecard() {
        "verdicts (pass/FAIL/hang with runs passed; misuse: caught, crashed, warned, silent, \
         corrupted, hang) and counts; * best of the row"
            .to_string()
    } else {
        format!(
            "median of trials ×ratio to {baseline}; * best of the row; \
             ± widest (max−min)/median of the row"
        )
    };
    format!(
        "{} · {}\nmachine: {}\nrun: {}\ncrates: {}\ncells: {legend}\n",
        env.command(),
        env.date,
        env.machine_line(),
        env.settings_line(),
        env.versions_line()
    )
}

fn workload_heading(results: &Results, workload: &str) -> String {
    let description = results.workload_info(workload).description;
    format!("\n{workload}: {description}\n")
}

fn title_line(allocators: &[String]) -> Vec<String> {
    let mut line = vec!["case".to_string(), "metric".to_string(), "unit".to_string()];
    line.extend(allocators.iter().cloned());
    line.push("±".to_string());
    line
}

fn row_line(row: &Row<'_>, allocators: &[String], baseline: &str) -> Vec<String> {
    let first = row.first();
    let mut line = vec![first.case.clone(), first.metric.clone(), first.unit.clone()];
    line.extend(allocators.iter().map(|a| cell_text(row, a, baseline)));
    line.push(
        row.widest_spread()
            .map_or_else(String::new, |s| format!("{s:.0}%")),
    );
    line
}

/// `value ×ratio` (no ratio in the baseline's own column), `*` when best, or the failure.
pub fn cell_text(row: &Row<'_>, allocator: &str, baseline: &str) -> String {
    let Some(cell) = row.cell(allocator) else {
        return "-".to_string();
    };
    match &cell.outcome {
        Outcome::Failed(why) => short_failure(why).to_string(),
        Outcome::Verdict(verdict) => short_verdict(verdict).to_string(),
        Outcome::Measured(summary) => {
            let mut text = format_value(summary.median);
            if allocator != baseline {
                if let Some(ratio) = row.ratio(allocator, baseline) {
                    text = format!("{text} {}", format_ratio(ratio));
                }
            }
            if row.best() == Some(summary.median) {
                text.push('*');
            }
            text
        }
    }
}

/// A verdict shortened for a table cell: what comes before the first `:`.
pub fn short_verdict(verdict: &str) -> &str {
    verdict.split(':').next().unwrap_or(verdict).trim()
}

/// A failure status shortened for a table cell.
pub fn short_failure(status: &str) -> &'static str {
    if status.starts_with("out of memory") {
        "OOM"
    } else if status.starts_with("timed out") {
        "timeout"
    } else if status.starts_with("corrupted") {
        "CORRUPT"
    } else if status.starts_with("setup failed") {
        "no setup"
    } else if status.starts_with("missing") {
        "missing"
    } else {
        "failed"
    }
}

fn column_widths(lines: &[Vec<String>]) -> Vec<usize> {
    let columns = lines.iter().map(Vec::len).max().unwrap_or(0);
    (0..columns)
        .map(|c| {
            lines
                .iter()
                .filter_map(|l| l.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect()
}

fn layout_line(line: &[String], widths: &[usize]) -> String {
    let mut text = String::from("  ");
    for (index, (field, width)) in line.iter().zip(widths).enumerate() {
        let padding = width - field.chars().count();
        if index < 3 {
            text.push_str(field);
            text.push_str(&" ".repeat(padding + 2));
        } else {
            text.push_str(&" ".repeat(padding));
            text.push_str(field);
            text.push_str("  ");
        }
    }
    text.truncate(text.trim_end().len());
    text.push('\n');
    text
}
