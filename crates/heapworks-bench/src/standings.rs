//! Where one allocator (the subject: heapworks, or yours) stands in a run: for every primary
//! row (workload, case, metric), its rank among the allocators and the ratio of its median to
//! the best peer's, classed as a win, a tie or a loss. The `heapworks` report opens with
//! these standings and the terminal run ends with them.
//!
//! Invariants:
//! - Only the results model is read: medians, spreads and directions of the cells.
//! - A tie is a gap between the subject and the best peer no wider than the larger spread
//!   ((max − min) / median) of the two cells: the trials cannot tell them apart. (The row's
//!   widest spread would let one noisy peer turn every row of a workload into a tie.)
//! - A subject that failed where a peer was measured loses; a row where no peer was measured,
//!   or the subject did not run, has no standing. A scorecard (verdicts) has no standings.

use crate::results::{Cell, Outcome, Results, Row};
use crate::workloads::Better;

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

/// `subject`'s standing in every primary row where it and a peer took part, in row order;
/// nothing for a scorecard.
pub fn standings(results: &Results, subject: &str) -> Vec<Standing> {
    if results.environment.is_scorecard() {
        return Vec::new();
    }
    let rows = results.rows();
    rows.iter()
        .filter(|row| row.first().primary)
        .filter_map(|row| standing(row, subject))
        .collect()
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
        let heapworks = standings(&results(cells.clone()), "heapworks");
        let got: Vec<(&str, usize, usize, Verdict, &str)> = heapworks
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
        assert_eq!(heapworks[0].ratio, Some(0.8));
        let talc = standings(&results(cells), "talc");
        let verdicts: Vec<Verdict> = talc.iter().map(|s| s.verdict).collect();
        assert_eq!(
            verdicts,
            [Verdict::Loss, Verdict::Tie, Verdict::Win],
            "any allocator can be the subject"
        );
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
        let heapworks = standings(&results(cells), "heapworks");
        assert_eq!(heapworks.len(), 1);
        assert_eq!(heapworks[0].verdict, Verdict::Loss);
        assert_eq!(heapworks[0].ratio, None);
        assert_eq!((heapworks[0].rank, heapworks[0].ranked), (2, 2));
    }
}
