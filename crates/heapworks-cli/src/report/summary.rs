//! The at-a-glance summary in the terminal: the standings of the run's subject (heapworks, or
//! the baseline column of a run without it; see [`heapworks_bench::standings`]) after the
//! table, one line per row, the verdicts coloured on a terminal.
//!
//! Invariants: reads only the results model; prints nothing for a run without standings (a
//! scorecard, or a run with one allocator).

use std::fmt::Write;

use heapworks_bench::results::Results;
use heapworks_bench::standings::{standings, tally, Standing, Verdict};

use super::{format_ratio, format_value};

/// The subject of a run's standings: the allocator ratios are taken to.
pub fn subject(results: &Results) -> String {
    results.baseline().unwrap_or_default()
}

/// The rank and ratio of a standing as the summary shows them: `2/9 ×1.04 vs talc`.
pub fn describe(standing: &Standing) -> String {
    let ratio = standing
        .ratio
        .map_or_else(|| "failed".to_string(), format_ratio);
    format!(
        "{}/{} {ratio} vs {}",
        standing.rank, standing.ranked, standing.best_peer
    )
}

/// Wins, ties and losses in a few words: `win 3 · tie 1 · loss 2`.
pub fn tally_line(standings: &[Standing]) -> String {
    let counts: Vec<String> = tally(standings)
        .iter()
        .map(|(verdict, count)| format!("{} {count}", verdict.name()))
        .collect();
    counts.join(" · ")
}

/// The terminal form: a heading with the tally, then one line per standing; `colour` paints
/// the verdicts with ANSI colours (green win, yellow tie, red loss).
pub fn render_text(results: &Results, colour: bool) -> String {
    let subject = subject(results);
    let standings = standings(results, &subject);
    if standings.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "\nat a glance: {subject} against the best peer ({}; rank among the allocators, \
         {subject}'s median over the best peer's; tie: within the spread of the two cells)\n",
        tally_line(&standings)
    );
    let label = |s: &Standing| format!("{} · {} · {}", s.workload, s.case, s.metric);
    let width = standings.iter().map(|s| label(s).chars().count()).max();
    let width = width.unwrap_or(0);
    for standing in &standings {
        // Padded before painting: the escape codes would count as width.
        let verdict = format!("{:<4}", standing.verdict.name());
        let painted = match (colour, standing.verdict) {
            (false, _) => verdict.to_string(),
            (true, Verdict::Win) => format!("\x1b[32m{verdict}\x1b[0m"),
            (true, Verdict::Tie) => format!("\x1b[33m{verdict}\x1b[0m"),
            (true, Verdict::Loss) => format!("\x1b[31m{verdict}\x1b[0m"),
        };
        let _ = writeln!(
            text,
            "  {:<width$}  {painted}  {}",
            label(standing),
            describe(standing)
        );
    }
    text
}

/// A value with its unit, for the HTML summary's tooltips.
pub fn value_with_unit(value: f64, unit: &str) -> String {
    format!("{} {unit}", format_value(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use heapworks_bench::results::{Cell, Environment, Outcome, Summary};
    use heapworks_bench::workloads::{Better, MetricSpec};

    const TIME: MetricSpec = MetricSpec::primary("time", "ms", Better::Lower);

    #[test]
    fn one_line_per_standing_after_the_tally() {
        let measured = |median| Outcome::Measured(Summary::single(median));
        let cells = vec![
            Cell::of(
                "w",
                "oom",
                "heapworks",
                &TIME,
                Outcome::Failed("out of memory".into()),
            ),
            Cell::of("w", "oom", "talc", &TIME, measured(1.0)),
            Cell::of("w", "fast", "heapworks", &TIME, measured(1.0)),
            Cell::of("w", "fast", "talc", &TIME, measured(2.0)),
        ];
        let results = Results {
            environment: Environment::default(),
            cells,
        };
        let text = render_text(&results, false);
        assert!(text.contains("win 1 · tie 0 · loss 1"), "{text}");
        assert!(
            text.contains("w · oom · time   loss  2/2 failed vs talc"),
            "{text}"
        );
        assert!(
            text.contains("w · fast · time  win   1/2 ×0.50 vs talc"),
            "{text}"
        );
        let painted = render_text(&results, true);
        assert!(painted.contains("\x1b[32mwin \x1b[0m"), "{painted}");
        let nothing = Results::default();
        assert_eq!(render_text(&nothing, false), "");
    }
}
