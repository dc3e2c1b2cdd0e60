//! The regression gate: heapworks' instruction counts of this run against a results file
//! from an earlier run (`heapworks bench --instructions --gate BASELINE.json`). Instruction
//! counts are deterministic, so any growth beyond a small tolerance is a real change.

use std::fmt;

use crate::contenders::AllocatorId;
use crate::report::format_value;
use crate::results::{Cell, Results};
use crate::workloads::WorkloadId;

/// One count that moved past the tolerance.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// `case / metric`.
    pub what: String,
    /// Count in the baseline.
    pub before: f64,
    /// Count now.
    pub after: f64,
}

impl Change {
    fn percent(&self) -> f64 {
        (self.after / self.before - 1.0) * 100.0
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} → {} instr/call ({:+.1}%)",
            self.what,
            format_value(self.before),
            format_value(self.after),
            self.percent()
        )
    }
}

/// The gate's verdict.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Counts that grew past the tolerance.
    pub regressions: Vec<Change>,
    /// Counts that shrank past the tolerance (time to refresh the baseline).
    pub improvements: Vec<Change>,
    /// Number of counts compared.
    pub compared: usize,
}

/// Compares heapworks' instruction counts in `current` with those in `baseline`.
pub fn compare(
    current: &Results,
    baseline: &Results,
    tolerance_percent: f64,
) -> Result<Verdict, String> {
    let mut verdict = Verdict::default();
    for cell in current.cells.iter().filter(|c| is_gated(c)) {
        let (Some(after), Some(before)) = (cell.median(), baseline_count(baseline, cell)) else {
            continue;
        };
        verdict.compared += 1;
        let change = Change {
            what: format!("{} / {}", cell.case, cell.metric),
            before,
            after,
        };
        if after > before * (1.0 + tolerance_percent / 100.0) {
            verdict.regressions.push(change);
        } else if after < before * (1.0 - tolerance_percent / 100.0) {
            verdict.improvements.push(change);
        }
    }
    if verdict.compared == 0 {
        return Err(
            "the baseline shares no heapworks instruction count with this run \
                    (run it with --instructions and the heapworks allocator)"
                .to_string(),
        );
    }
    Ok(verdict)
}

fn is_gated(cell: &Cell) -> bool {
    cell.workload == WorkloadId::Instructions.name()
        && cell.allocator == AllocatorId::Heapworks.name()
}

fn baseline_count(baseline: &Results, cell: &Cell) -> Option<f64> {
    baseline
        .cells
        .iter()
        .find(|b| is_gated(b) && b.case == cell.case && b.metric == cell.metric)
        .and_then(Cell::median)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Outcome, Summary};
    use crate::workloads::Better;

    fn results(allocate: f64, free: f64) -> Results {
        let cell = |metric: &str, value: f64| Cell {
            workload: "instructions".into(),
            case: "64 B".into(),
            allocator: "heapworks".into(),
            metric: metric.into(),
            unit: "instr/call".into(),
            better: Better::Lower,
            primary: true,
            outcome: Outcome::Measured(Summary {
                median: value,
                min: value,
                max: value,
                trials: 1,
            }),
        };
        Results {
            cells: vec![cell("allocate", allocate), cell("free", free)],
            ..Results::default()
        }
    }

    #[test]
    fn growth_past_the_tolerance_is_a_regression() {
        let verdict = compare(&results(103.0, 50.0), &results(100.0, 60.0), 1.0).unwrap();
        assert_eq!(verdict.compared, 2);
        assert_eq!(verdict.regressions.len(), 1);
        assert_eq!(verdict.regressions[0].what, "64 B / allocate");
        assert_eq!(verdict.improvements.len(), 1);
        assert!(verdict.regressions[0].to_string().contains("+3.0%"));
    }

    #[test]
    fn counts_within_the_tolerance_pass() {
        let verdict = compare(&results(100.5, 60.0), &results(100.0, 60.0), 1.0).unwrap();
        assert!(verdict.regressions.is_empty() && verdict.improvements.is_empty());
    }

    #[test]
    fn a_baseline_without_counts_is_an_error() {
        assert!(compare(&results(1.0, 1.0), &Results::default(), 1.0).is_err());
    }
}
