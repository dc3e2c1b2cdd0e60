//! The performance targets, judged from a run's medians: one `note:` line each, met or
//! MISSED with the figures; nothing for a target whose cells the run did not measure.

use super::sizes::{self, HD_F32};
use super::variants::Variant;
use super::{PoolWorkload, STEP_US, TIME_NS};
use heapworks_bench::results::{Cell, Results};

/// Every target the run measured.
pub fn notes(results: &Results) -> Vec<String> {
    let mut notes = hd_image(results);
    notes.extend(tiny_tensor(results));
    notes.extend(shared_memory(results));
    notes.extend(peers(results));
    notes.extend(variable_shapes(results));
    notes
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "MISSED"
    }
}

/// The median time of `column` at the size named `case` of `pool_sizes`.
fn time(results: &Results, case: &str, column: &str) -> Option<f64> {
    results
        .cells
        .iter()
        .find(|c| {
            c.workload == PoolWorkload::Sizes.name()
                && c.case == case
                && c.allocator == column
                && c.metric == TIME_NS.name
        })
        .and_then(Cell::median)
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
/// without.
fn hd_image(results: &Results) -> Vec<String> {
    let hd = sizes::label(HD_F32);
    let at = |variant: Variant| time(results, &hd, variant.name());
    let (Some(with), Some(existing), Some(without)) = (
        at(Variant::InlineWithPool),
        at(Variant::FillExisting),
        at(Variant::InlineWithoutPool),
    ) else {
        return Vec::new();
    };
    let (near, gain) = (with / existing, without / with);
    let mut notes = vec![
        format!(
            "target {}: {hd} with pool within 1.05× of fill_existing: {near:.3}×",
            verdict(near <= 1.05)
        ),
        format!(
            "target {}: {hd} without pool ÷ with pool ≥ 3×: {gain:.2}× (glibc in this \
             process, after the other sizes raised its mmap threshold)",
            verdict(gain >= 3.0)
        ),
    ];
    if let Some(fresh) = time(results, &hd, "vec+glibc") {
        let gain = fresh / with;
        notes.push(format!(
            "target {}: {hd} without pool ÷ with pool ≥ 3×: {gain:.2}× (glibc in a fresh \
             process, vec+glibc)",
            verdict(gain >= 3.0)
        ));
    }
    notes
}

/// One f32 through the pool at most 20 ns slower than through a `Vec`.
fn tiny_tensor(results: &Results) -> Option<String> {
    let tiny = sizes::label(4);
    let with = time(results, &tiny, Variant::InlineWithPool.name())?;
    let without = time(results, &tiny, Variant::InlineWithoutPool.name())?;
    let overhead = with - without;
    Some(format!(
        "target {}: one f32 with pool at most 20 ns over Vec: \
         {with:.1} − {without:.1} = {overhead:+.1} ns",
        verdict(overhead <= 20.0)
    ))
}

/// Pooled shared memory within 1.05× of pooled inline memory at every size ≥ 1 MiB.
fn shared_memory(results: &Results) -> Option<String> {
    let shm = Variant::ShmWithPool.name();
    let (case, worst) = large_cells(results, move |column| column == shm)
        .filter_map(|c| {
            let ratio = c.median()? / time(results, &c.case, Variant::InlineWithPool.name())?;
            Some((c.case.clone(), ratio))
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(format!(
        "target {}: shm with pool within 1.05× of inline with pool at every size ≥ 1 MiB: \
         worst {worst:.3}× at {case}",
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

/// Variable shapes with the pool at most 1.1× the time without.
fn variable_shapes(results: &Results) -> Option<String> {
    let step = |variant: Variant| {
        results
            .cells
            .iter()
            .find(|c| {
                c.workload == PoolWorkload::VariableShape.name()
                    && c.allocator == variant.name()
                    && c.metric == STEP_US.name
            })
            .and_then(Cell::median)
    };
    let ratio = step(Variant::InlineWithPool)? / step(Variant::InlineWithoutPool)?;
    Some(format!(
        "target {}: variable shapes with pool at most 1.1× the time without: {ratio:.3}×",
        verdict(ratio <= 1.1)
    ))
}
