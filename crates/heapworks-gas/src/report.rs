//! The results: the seed's table per guest and scenario, a summary matrix, JSON, CSV, and the
//! gate against a baseline.
//!
//! Invariant: the JSON file holds everything the tables show, so a later run can gate
//! against it (`--gate`) without re-running the baseline, and `heapworks gas` can draw the
//! HTML report from it. Its schema is the crate `heapworks-gas-results` (permissively
//! licensed, so that the `heapworks` command reads it without linking this GPL-3.0 crate).

pub use heapworks_gas_results::{GuestResults, Results};

use heapworks_gas_results::{group_digits as gas, SEED_ROWS};

use crate::measure::Outcome;

/// The seed's table for one guest on one scenario.
pub fn seed_table(guest: &str, scenario: &str, o: &Outcome) -> String {
    let kinds = o.calls();
    let total = o.total_gas();
    let mut s = format!(
        "#### {guest}: {scenario}\n| | malloc | calloc | realloc | free |\n|---|---|---|---|---|\n"
    );
    for (label, cell) in SEED_ROWS {
        s.push_str(&format!("| {label} |"));
        for (_, stats) in kinds {
            s.push_str(&format!(" {} |", cell(stats, total)));
        }
        s.push('\n');
    }
    s.push_str(&format!(
        "\n**Total gas spent:** {} · **Gas spent on allocations:** {} (instructions {}, pages and syscalls {}) · **Pages touched:** {}\n\n",
        gas(total),
        gas(o.allocation_gas()),
        gas(o.instruction_gas),
        gas(o.page_gas),
        o.pages_touched
    ));
    s
}

/// What a summary matrix shows of an outcome.
pub struct Metric {
    pub title: &'static str,
    pub value: fn(&Outcome) -> u64,
}

/// The summary matrices: allocation gas, its instructions alone, and pages touched, of every
/// guest on every scenario, with the ratio to the reference guest (upstream dlmalloc); then
/// the code sizes.
pub const METRICS: [Metric; 3] = [
    Metric {
        title: "allocation gas: instructions + pages + syscalls",
        value: Outcome::allocation_gas,
    },
    Metric {
        title: "instruction gas only",
        value: |o| o.instruction_gas,
    },
    Metric {
        title: "Gear pages touched (first access in a message)",
        value: |o| o.pages_touched,
    },
];

/// One summary matrix (see [`METRICS`]).
pub fn summary(results: &Results, reference: &str, metric: &Metric) -> String {
    let mut s = String::new();
    let reference = results.guests.iter().find(|g| g.guest == reference);
    let names: Vec<&str> = results.guests.iter().map(|g| g.guest.as_str()).collect();
    s.push_str(&format!(
        "| {} (×{}) | {} |\n",
        metric.title,
        reference.map_or("-", |r| r.guest.as_str()),
        names.join(" | ")
    ));
    s.push_str(&format!("|---|{}\n", "---|".repeat(names.len())));
    let scenarios = results
        .guests
        .first()
        .map(|g| g.scenarios.as_slice())
        .unwrap_or(&[]);
    for (index, (name, _)) in scenarios.iter().enumerate() {
        s.push_str(&format!("| {name} |"));
        let base = reference
            .and_then(|r| r.scenarios.get(index))
            .map(|(_, o)| (metric.value)(o));
        for guest in &results.guests {
            let value = guest
                .scenarios
                .get(index)
                .map_or(0, |(_, o)| (metric.value)(o));
            match base {
                Some(base) if base > 0 => s.push_str(&format!(
                    " {} ({:.2}) |",
                    gas(value),
                    value as f64 / base as f64
                )),
                _ => s.push_str(&format!(" {} |", gas(value))),
            }
        }
        s.push('\n');
    }
    s
}

/// The code sizes of every guest.
pub fn code_sizes(results: &Results) -> String {
    let mut s = String::from("| guest | .wasm bytes | after wasm-opt -Oz |\n|---|---|---|\n");
    for guest in &results.guests {
        let oz = guest.code_bytes_oz.map_or("n/a".into(), |b| b.to_string());
        s.push_str(&format!(
            "| {} | {} | {} |\n",
            guest.guest, guest.code_bytes, oz
        ));
    }
    s
}

/// One CSV row per guest, scenario and kind of call.
pub fn csv(results: &Results) -> String {
    let mut s = String::from(
        "guest,scenario,call,count,total,avg,min,max,allocation_gas,instruction_gas,page_gas,pages_touched,code_bytes,code_bytes_oz\n",
    );
    for guest in &results.guests {
        for (scenario, o) in &guest.scenarios {
            for (call, c) in o.calls() {
                s.push_str(&format!(
                    "{},\"{}\",{call},{},{},{},{},{},{},{},{},{},{},{}\n",
                    guest.guest,
                    scenario,
                    c.count,
                    c.total,
                    c.avg(),
                    c.min,
                    c.max,
                    o.allocation_gas(),
                    o.instruction_gas,
                    o.page_gas,
                    o.pages_touched,
                    guest.code_bytes,
                    guest.code_bytes_oz.map_or(String::new(), |b| b.to_string()),
                ));
            }
        }
    }
    s
}

/// The gate: every heapworks guest's allocation gas on every scenario may exceed the
/// baseline's by at most `tolerance` percent. Returns the regressions, one line each.
pub fn gate(
    current: &Results,
    baseline: &Results,
    ours: &[&str],
    tolerance: f64,
) -> Result<Vec<String>, String> {
    if current.quick != baseline.quick {
        return Err("the baseline was measured in the other mode (--quick or not)".into());
    }
    let mut regressions = Vec::new();
    for guest in current
        .guests
        .iter()
        .filter(|g| ours.contains(&g.guest.as_str()))
    {
        let Some(base) = baseline.guests.iter().find(|b| b.guest == guest.guest) else {
            return Err(format!("the baseline has no guest {}", guest.guest));
        };
        for (scenario, outcome) in &guest.scenarios {
            let Some((_, before)) = base.scenarios.iter().find(|(name, _)| name == scenario) else {
                return Err(format!("the baseline has no scenario {scenario:?}"));
            };
            let (now, then) = (outcome.allocation_gas(), before.allocation_gas());
            if now as f64 > then as f64 * (1.0 + tolerance / 100.0) {
                regressions.push(format!(
                    "{}: {scenario}: {} gas, baseline {} (+{:.2}%)",
                    guest.guest,
                    gas(now),
                    gas(then),
                    (now as f64 / then as f64 - 1.0) * 100.0
                ));
            }
        }
    }
    Ok(regressions)
}
