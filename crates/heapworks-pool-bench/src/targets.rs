//! The performance targets, judged from a run's medians: one `note:` line each, met or
//! MISSED with the figures; nothing for a target whose cells the run did not measure.

use super::instructions::INSTRUCTIONS;
use super::sizes::{self, HD_F32};
use super::variants::Variant;
use super::{PoolWorkload, STEP_US, TIME_NS};
use heapworks_bench::results::{Cell, Results};

/// Every target the run measured.
pub fn notes(results: &Results) -> Vec<String> {
    let mut notes = hd_image(results);
    notes.extend(tiny_tensor(results));
    notes.extend(shared_memory(
        results,
        Variant::ShmWithPool,
        Variant::InlineWithPool,
    ));
    notes.extend(shared_memory(
        results,
        Variant::ShmWithPool4k,
        Variant::InlineWithPool4k,
    ));
    notes.extend(peers(results));
    notes.extend(patterns(results, PoolWorkload::VariableShape, Some(1.1)));
    notes.extend(patterns(results, PoolWorkload::BudgetPressure, None));
    notes
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

/// The median of `metric` for `column` in `workload`'s `case`.
fn median(
    results: &Results,
    workload: PoolWorkload,
    case: &str,
    column: &str,
    metric: &str,
) -> Option<f64> {
    results
        .cells
        .iter()
        .find(|c| {
            c.workload == workload.name()
                && c.case == case
                && c.allocator == column
                && c.metric == metric
        })
        .and_then(Cell::median)
}

/// The median time of `column` at the size named `case` of `pool_sizes`.
fn time(results: &Results, case: &str, column: &str) -> Option<f64> {
    median(results, PoolWorkload::Sizes, case, column, TIME_NS.name)
}

/// The `pool_sizes` cells of sizes of at least 1 MiB whose column passes `keep`.
fn large_cells<'a>(
    results: &'a Results,
    keep: impl Fn(&str) -> bool + 'a,
) -> impl Iterator<Item = &'a Cell> + 'a {
    results.cells.iter().filter(move |c| {
        c.workload == PoolWorkload::Sizes.name()
            && keep(&c.allocator)
            && sizes::bytes_of(&c.case).is_some_and(|bytes| bytes >= 1 << 20)
    })
}

/// With the pool within 1.05× of `fill_existing` at the HD image, and ≥ 3× faster than
/// without: judged against each baseline "without pool" the run measured (see
/// [`variants`](super::variants) for why there are two in this process, and `vec+glibc` is
/// the first of them in a fresh process).
fn hd_image(results: &Results) -> Vec<String> {
    let hd = sizes::label(HD_F32);
    let (Some(with), Some(existing)) = (
        time(results, &hd, Variant::InlineWithPool.name()),
        time(results, &hd, Variant::FillExisting.name()),
    ) else {
        return Vec::new();
    };
    let near = with / existing;
    let mut notes = vec![format!(
        "target {}: {hd} with pool within 1.05× of fill_existing: {near:.3}×",
        verdict(near <= 1.05)
    )];
    let baselines = [
        (
            Variant::InlineWithoutPool.name(),
            "a Vec through glibc, which reuses its own heap below 32 MiB",
        ),
        ("vec+glibc", "the same in a fresh process"),
        (
            Variant::InlineFreshMapping.name(),
            "a fresh mapping per tensor, the seed's page fault per 4 KiB",
        ),
    ];
    for (column, what) in baselines {
        if let Some(without) = time(results, &hd, column) {
            let gain = without / with;
            notes.push(format!(
                "target {}: {hd} without pool ÷ with pool ≥ 3×: {gain:.2}× against \
                 {column} ({what})",
                verdict(gain >= 3.0)
            ));
        }
    }
    notes
}

/// One f32 through the pool at most 20 ns slower than through a `Vec`.
fn tiny_tensor(results: &Results) -> Option<String> {
    let tiny = sizes::label(4);
    let with = time(results, &tiny, Variant::InlineWithPool.name())?;
    let without = time(results, &tiny, Variant::InlineWithoutPool.name())?;
    let overhead = with - without;
    let counted = |column: &str| {
        median(
            results,
            PoolWorkload::Instructions,
            &tiny,
            column,
            INSTRUCTIONS.name,
        )
    };
    let instructions = match (
        counted(Variant::InlineWithPool.name()),
        counted(Variant::InlineWithoutPool.name()),
    ) {
        (Some(with), Some(without)) => {
            format!(" ({with:.0} against {without:.0} instructions)")
        }
        _ => String::new(),
    };
    Some(format!(
        "target {}: one f32 with pool at most 20 ns over Vec: \
         {with:.1} − {without:.1} = {overhead:+.1} ns{instructions}",
        verdict(overhead <= 20.0)
    ))
}

/// Pooled shared memory (`shm`) within 1.05× of pooled inline memory (`inline`) at every
/// size ≥ 1 MiB.
fn shared_memory(results: &Results, shm: Variant, inline: Variant) -> Option<String> {
    let (case, worst) = large_cells(results, move |column| column == shm.name())
        .filter_map(|c| {
            let ratio = c.median()? / time(results, &c.case, inline.name())?;
            Some((c.case.clone(), ratio))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(format!(
        "target {}: {shm} within 1.05× of {inline} at every size ≥ 1 MiB: worst {worst:.3}× \
         at {case}",
        verdict(worst <= 1.05)
    ))
}

/// Inline with pool ahead of every preloaded malloc at every size ≥ 1 MiB.
fn peers(results: &Results) -> Option<String> {
    let (peer, case, worst) = large_cells(results, |column| column.starts_with("vec+"))
        .filter_map(|c| {
            let with = time(results, &c.case, Variant::InlineWithPool.name())?;
            Some((c.allocator.clone(), c.case.clone(), with / c.median()?))
        })
        .max_by(|a, b| a.2.total_cmp(&b.2))?;
    Some(format!(
        "target {}: inline with pool ahead of every preloaded malloc at every size ≥ 1 MiB: \
         worst with pool ÷ {peer} = {worst:.3} at {case}",
        verdict(worst < 1.0)
    ))
}

/// A pattern's time with the pool against without, case by case: judged against `most` when
/// the issue sets a bound, else stated.
fn patterns(results: &Results, workload: PoolWorkload, most: Option<f64>) -> Vec<String> {
    let step = |case: &str, variant: Variant| {
        median(results, workload, case, variant.name(), STEP_US.name)
    };
    let mut cases: Vec<&str> = Vec::new();
    for cell in results
        .cells
        .iter()
        .filter(|c| c.workload == workload.name())
    {
        if !cases.contains(&cell.case.as_str()) {
            cases.push(&cell.case);
        }
    }
    cases
        .into_iter()
        .filter_map(|case| {
            let ratio =
                step(case, Variant::InlineWithPool)? / step(case, Variant::InlineWithoutPool)?;
            Some(match most {
                Some(most) => format!(
                    "target {}: {} ({case}) with pool at most {most}× the time without: \
                     {ratio:.3}×",
                    verdict(ratio <= most),
                    workload.name()
                ),
                None => format!(
                    "{} ({case}): with pool ÷ without = {ratio:.3}× (no target)",
                    workload.name()
                ),
            })
        })
        .collect()
}
