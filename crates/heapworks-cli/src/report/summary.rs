//! The at-a-glance summary: for every primary row (workload, case, metric), where the subject
//! of the run (heapworks, or the baseline column of a run without it) stands among the
//! allocators: its rank, and the ratio of its median to the best peer's, classed as a win, a
//! tie or a loss. The HTML report opens with it; the terminal run ends with it.
//!
//! Invariants:
//! - Only the results model is read: medians, spreads and directions of the cells.
//! - A tie is a gap between the subject and the best peer no wider than the larger spread
//!   ((max − min) / median) of the two cells: the trials cannot tell them apart. (The row's
//!   widest spread would let one noisy peer turn every row of a workload into a tie.)
//! - A subject that failed where a peer was measured loses; a row where no peer was measured,
//!   or the subject did not run, has no standing. A scorecard (verdicts) has no standings.

use std::fmt::Write;

use crate::results::{Cell, Outcome, Results, Row};
use crate::workloads::Better;

use super::{format_ratio, format_value};

/// How the subject compares with the best peer in one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Better than every peer by more than the spread.
    Win,
    /// Within the spread of the best peer.
    Tie,
    /// Worse than the best peer by more than the spread, or failed.
    Loss,
}

impl Verdict {
    /// `win`, `tie` or `loss`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Win => "win",
            Verdict::Tie => "tie",
            Verdict::Loss => "loss",
        }
    }
}

/// The subject's standing in one row.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// Workload name.
    pub workload: String,
    /// Case name.
    pub case: String,
    /// Metric name.
    pub metric: String,
    /// Unit of the metric.
    pub unit: String,
    /// 1 for the best; allocators with a better median, plus one (ties share a rank).
    pub rank: usize,
    /// Allocators measured in the row.
    pub ranked: usize,
    /// The best peer.
    pub best_peer: String,
    /// The best peer's median.
    pub best_median: f64,
    /// The subject's median; `None` when the subject failed.
    pub median: Option<f64>,
    /// The subject's median over the best peer's; `None` when the subject failed.
    pub ratio: Option<f64>,
    /// Win, tie or loss.
    pub verdict: Verdict,
}

/// The subject's standing in every primary row where it and a peer took part, in row order,
/// and the subject's name; nothing for a scorecard.
pub fn standings(results: &Results) -> (String, Vec<Standing>) {
    let subject = results.baseline().unwrap_or_default();
    if results.environment.is_scorecard() {
        return (subject, Vec::new());
    }
    let rows = results.rows();
    let standings = rows
        .iter()
        .filter(|row| row.first().primary)
        .filter_map(|row| standing(row, &subject))
        .collect();
    (subject, standings)
}

fn standing(row: &Row<'_>, subject: &str) -> Option<Standing> {
    let own = row.cell(subject)?;
    let better = own.better;
    let peers: Vec<(&Cell, f64)> = row
        .cells
        .iter()
        .filter(|c| c.allocator != subject)
        .filter_map(|c| Some((*c, finite_median(c)?)))
        .collect();
    let (best_peer, best) =
        peers
            .iter()
            .copied()
            .reduce(|a, b| if is_better(better, b.1, a.1) { b } else { a })?;
    let first = row.first();
    let mut standing = Standing {
        workload: first.workload.clone(),
        case: first.case.clone(),
        metric: first.metric.clone(),
        unit: first.unit.clone(),
        rank: peers.len() + 1,
        ranked: peers.len() + 1,
        best_peer: best_peer.allocator.clone(),
        best_median: best,
        median: None,
        ratio: None,
        verdict: Verdict::Loss,
    };
    let Some(value) = finite_median(own) else {
        return matches!(own.outcome, Outcome::Failed(_)).then_some(standing);
    };
    standing.rank = 1 + peers
        .iter()
        .filter(|(_, peer)| is_better(better, *peer, value))
        .count();
    standing.median = Some(value);
    standing.ratio = (best != 0.0).then(|| value / best);
    let gap_percent = (value - best).abs() / best.abs().max(f64::MIN_POSITIVE) * 100.0;
    let spread = spread_percent(own).max(spread_percent(best_peer));
    standing.verdict = if gap_percent <= spread || value == best {
        Verdict::Tie
    } else if is_better(better, value, best) {
        Verdict::Win
    } else {
        Verdict::Loss
    };
    Some(standing)
}

fn finite_median(cell: &Cell) -> Option<f64> {
    cell.median().filter(|v| v.is_finite())
}

fn spread_percent(cell: &Cell) -> f64 {
    match &cell.outcome {
        Outcome::Measured(summary) => summary.spread_percent(),
        Outcome::Failed(_) | Outcome::Verdict(_) => 0.0,
    }
}

/// Whether `a` is strictly better than `b` in direction `better`.
fn is_better(better: Better, a: f64, b: f64) -> bool {
    match better {
        Better::Lower => a < b,
        Better::Higher => a > b,
    }
}

/// Wins, ties and losses of `standings`.
pub fn tally(standings: &[Standing]) -> [(Verdict, usize); 3] {
    [Verdict::Win, Verdict::Tie, Verdict::Loss].map(|verdict| {
        (
            verdict,
            standings.iter().filter(|s| s.verdict == verdict).count(),
        )
    })
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

/// The terminal form: a heading with the tally, then one line per standing; `colour` paints
/// the verdicts with ANSI colours (green win, yellow tie, red loss).
pub fn render_text(results: &Results, colour: bool) -> String {
    let (subject, standings) = standings(results);
    if standings.is_empty() {
        return String::new();
    }
    let counts: Vec<String> = tally(&standings)
        .iter()
        .map(|(verdict, count)| format!("{} {count}", verdict.name()))
        .collect();
    let mut text = format!(
        "\nat a glance: {subject} against the best peer ({}; rank among the allocators, \
         {subject}'s median over the best peer's; tie: within the spread of the two cells)\n",
        counts.join(" · ")
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
    use crate::results::{Environment, Summary};
    use crate::workloads::MetricSpec;

    const TIME: MetricSpec = MetricSpec::primary("time", "ms", Better::Lower);
    const SHARE: MetricSpec = MetricSpec::primary("share", "%", Better::Higher);

    fn cell(case: &str, allocator: &str, metric: &MetricSpec, median: f64, spread: f64) -> Cell {
        let summary = Summary {
            median,
            min: median * (1.0 - spread / 200.0),
            max: median * (1.0 + spread / 200.0),
            trials: 3,
        };
        Cell::of("w", case, allocator, metric, Outcome::Measured(summary))
    }

    fn results(cells: Vec<Cell>) -> Results {
        Results {
            environment: Environment::default(),
            cells,
        }
    }

    #[test]
    fn wins_ties_and_losses_against_the_best_peer() {
        let cells = vec![
            cell("won", "heapworks", &TIME, 8.0, 1.0),
            cell("won", "talc", &TIME, 10.0, 1.0),
            cell("won", "rlsf", &TIME, 12.0, 1.0),
            cell("tied", "heapworks", &TIME, 10.2, 4.0),
            cell("tied", "talc", &TIME, 10.0, 1.0),
            cell("lost", "heapworks", &SHARE, 80.0, 0.0),
            cell("lost", "talc", &SHARE, 90.0, 0.0),
            cell("lost", "rlsf", &SHARE, 85.0, 0.0),
        ];
        let (subject, standings) = standings(&results(cells));
        assert_eq!(subject, "heapworks");
        let got: Vec<(&str, usize, usize, Verdict, &str)> = standings
            .iter()
            .map(|s| {
                (
                    s.case.as_str(),
                    s.rank,
                    s.ranked,
                    s.verdict,
                    s.best_peer.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("won", 1, 3, Verdict::Win, "talc"),
                ("tied", 2, 2, Verdict::Tie, "talc"),
                ("lost", 3, 3, Verdict::Loss, "talc"),
            ]
        );
        assert_eq!(standings[0].ratio, Some(0.8));
        let text = render_text(&results(Vec::new()), false);
        assert!(text.is_empty());
    }

    #[test]
    fn a_failed_subject_loses_and_rows_without_peers_are_left_out() {
        let failed = Cell::of(
            "w",
            "oom",
            "heapworks",
            &TIME,
            Outcome::Failed("out of memory".into()),
        );
        let cells = vec![
            failed,
            cell("oom", "talc", &TIME, 1.0, 0.0),
            cell("alone", "heapworks", &TIME, 1.0, 0.0),
        ];
        let (_, standings) = standings(&results(cells.clone()));
        assert_eq!(standings.len(), 1);
        assert_eq!(standings[0].verdict, Verdict::Loss);
        assert_eq!(standings[0].ratio, None);
        let text = render_text(&results(cells), false);
        assert!(text.contains("win 0 · tie 0 · loss 1"), "{text}");
        assert!(
            text.contains("w · oom · time  loss  2/2 failed vs talc"),
            "{text}"
        );
    }
}
