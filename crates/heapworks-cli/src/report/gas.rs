//! The HTML report of `heapworks gas`, drawn from a `heapworks-gas --json` results file
//! ([`heapworks_gas_results`], read without linking the GPL-3.0 program): the summary of
//! allocation gas as a ratio to the reference guest (upstream dlmalloc) with its bar plots, the
//! allocator's share of the programs' total gas, code sizes, then per scenario the bars of gas
//! per call kind and seed 000's table for every guest.
//!
//! Invariants: self-contained (inline SVG, no scripts), with the bench report's style sheet,
//! plots and colour key ([`super::html`], [`super::plots`]); guest `i` of the file is drawn in
//! series colour `i` in every plot; a scenario is a "program" scenario (the seed's NFT and FT
//! runs) when the reference guest, or else the first, spent gas outside the allocator in it.

use std::fmt::Write;

use heapworks_gas_results::{group_digits, percent, GuestResults, Outcome, Results, SEED_ROWS};

use super::html::{colour_legend, escape, STYLE};
use super::plots::{grouped_bars, Series};
use super::{format_ratio, format_value};

/// The gas tables hold numbers from their second column on (the bench's style sheet aligns
/// its first three columns left).
const NUMBERS: &str = "table.gas td:nth-child(n+2),table.gas th:nth-child(n+2){text-align:right}";

/// The whole report as one HTML document.
pub fn render(results: &Results) -> String {
    let report = Report::of(results);
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>heapworks gas</title><style>{STYLE}{NUMBERS}</style></head><body>\n\
         <h1>heapworks gas</h1>\n{}{}",
        report.environment(),
        colour_legend(&report.guests)
    );
    html.push_str(&report.ratio_section());
    html.push_str(&report.share_section());
    html.push_str(&report.code_size_section());
    for (index, scenario) in report.scenarios.iter().enumerate() {
        html.push_str(&report.scenario_section(index, scenario));
    }
    html.push_str("</body></html>\n");
    html
}

/// The file's results and what every section shares.
struct Report<'a> {
    results: &'a Results,
    /// Guest names, in the file's order (= series colours).
    guests: Vec<String>,
    /// Scenario names, in run order.
    scenarios: Vec<&'a str>,
    /// The reference guest, if the run has it.
    reference: Option<&'a GuestResults>,
    /// Per scenario: whether it ran a program (the seed's scenarios).
    program: Vec<bool>,
}

impl<'a> Report<'a> {
    fn of(results: &'a Results) -> Self {
        let reference = results.guests.iter().find(|g| g.guest == results.reference);
        let judge = reference.or(results.guests.first());
        let scenarios = results.scenarios();
        let program = (0..scenarios.len())
            .map(|i| judge.is_some_and(|g| g.scenarios[i].1.program_gas > 0))
            .collect();
        Self {
            results,
            guests: results.guests.iter().map(|g| g.guest.clone()).collect(),
            scenarios,
            reference,
            program,
        }
    }

    fn environment(&self) -> String {
        let r = self.results;
        let scenarios: Vec<String> = self
            .scenarios
            .iter()
            .enumerate()
            .map(|(i, s)| format!("<a href=\"#scenario-{i}\">{}</a>", escape(s)))
            .collect();
        format!(
            "<div class=\"env\"><b>run</b> heapworks-gas{} ({} guests, {} scenarios; deterministic: \
             no clock)<br><b>prices</b> {}<br><b>ratios</b> to {}<br><b>schema</b> {}<br>\
             <b>scenarios</b> {}</div>\n",
            if r.quick { " --quick" } else { "" },
            self.guests.len(),
            self.scenarios.len(),
            escape(&r.weights),
            escape(&r.reference),
            escape(&r.schema),
            scenarios.join(" · ")
        )
    }

    /// The scenario indexes that ran a program (`true`) or not.
    fn of_kind(&self, program: bool) -> Vec<usize> {
        (0..self.scenarios.len())
            .filter(|&i| self.program[i] == program)
            .collect()
    }

    fn labels(&self, scenarios: &[usize]) -> Vec<String> {
        scenarios
            .iter()
            .map(|&i| self.scenarios[i].to_string())
            .collect()
    }

    /// One series per guest: `value` of its outcome on each of `scenarios`.
    fn series(
        &self,
        scenarios: &[usize],
        value: &dyn Fn(&Outcome, usize) -> Option<f64>,
    ) -> Vec<Series> {
        self.series_of(&|guest| {
            scenarios
                .iter()
                .map(|&i| value(&guest.scenarios[i].1, i))
                .collect()
        })
    }

    /// One series per guest, in its colour: the values `values` gives of it.
    fn series_of(&self, values: &dyn Fn(&GuestResults) -> Vec<Option<f64>>) -> Vec<Series> {
        self.results
            .guests
            .iter()
            .enumerate()
            .map(|(colour, guest)| Series {
                name: guest.guest.clone(),
                values: values(guest),
                colour,
            })
            .collect()
    }

    /// The reference's allocation gas on scenario `index`, if there is a reference and it
    /// spent some.
    fn reference_gas(&self, index: usize) -> Option<u64> {
        let gas = self.reference?.scenarios[index].1.allocation_gas();
        (gas > 0).then_some(gas)
    }

    /// Allocation gas as a ratio to the reference: bars (programs, then micro scenarios) and
    /// the table of gas and ratios.
    fn ratio_section(&self) -> String {
        let reference = escape(&self.results.reference);
        let mut html = format!(
            "<section id=\"ratios\"><h2>Allocation gas, ratio to {reference}</h2>\
             <p>Gas of every allocator call (instructions, syscalls and Gear's page charges) \
             summed over the scenario, over {reference}'s: below 1 is cheaper.</p>\n"
        );
        if self.reference.is_none() {
            html.push_str("<p>The run has no reference guest: no ratios.</p>\n");
        } else {
            let ratio = |o: &Outcome, i: usize| {
                self.reference_gas(i)
                    .map(|base| o.allocation_gas() as f64 / base as f64)
            };
            for (program, what) in [(true, "seed 000's programs"), (false, "micro scenarios")] {
                let scenarios = self.of_kind(program);
                if scenarios.is_empty() {
                    continue;
                }
                let title = format!("allocation gas / {}: {what}", self.results.reference);
                let svg = grouped_bars(
                    &title,
                    "ratio",
                    &self.labels(&scenarios),
                    &self.series(&scenarios, &ratio),
                );
                let _ = writeln!(html, "<figure>{svg}</figure>");
            }
        }
        html.push_str(&self.matrix(|o| o.allocation_gas()));
        html.push_str(
            "<p>The instructions' gas alone (Gear's page charges, which dominate a first call, \
             left out):</p>\n",
        );
        html.push_str(&self.matrix(|o| o.instruction_gas));
        html.push_str("</section>\n");
        html
    }

    /// A table of every guest on every scenario: `value` grouped by thousands, with the ratio
    /// to the reference when the run has one.
    fn matrix(&self, value: fn(&Outcome) -> u64) -> String {
        let mut html = String::from("<table class=\"gas\"><tr><th>scenario</th>");
        for guest in &self.guests {
            let _ = write!(html, "<th>{}</th>", escape(guest));
        }
        html.push_str("</tr>\n");
        for (i, scenario) in self.scenarios.iter().enumerate() {
            let _ = write!(
                html,
                "<tr><td><a href=\"#scenario-{i}\">{}</a></td>",
                escape(scenario)
            );
            let base = self.reference.map(|r| value(&r.scenarios[i].1));
            for guest in &self.results.guests {
                let v = value(&guest.scenarios[i].1);
                let ratio = match base {
                    Some(base) if base > 0 => format!(
                        " <span class=\"ratio\">{}</span>",
                        format_ratio(v as f64 / base as f64)
                    ),
                    _ => String::new(),
                };
                let _ = write!(html, "<td>{}{ratio}</td>", group_digits(v));
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</table>\n");
        html
    }

    /// The allocator's share of each program scenario's total gas (the seed's headline).
    fn share_section(&self) -> String {
        let scenarios = self.of_kind(true);
        if scenarios.is_empty() {
            return String::new();
        }
        let share = |o: &Outcome, _: usize| {
            let total = o.total_gas();
            (total > 0).then(|| o.allocation_gas() as f64 * 100.0 / total as f64)
        };
        let svg = grouped_bars(
            "allocation gas, share of the scenario's total gas",
            "%",
            &self.labels(&scenarios),
            &self.series(&scenarios, &share),
        );
        format!(
            "<section id=\"share\"><h2>Share of total gas</h2><p>The allocator calls' gas over \
             everything the scenario spent (the calls and the program around them). The total \
             holds no Gear runtime, codec or per-message charges, so these shares run above the \
             seed's: compare allocators by the ratios.</p>\n<figure>{svg}</figure></section>\n"
        )
    }

    fn code_size_section(&self) -> String {
        let mut html = String::from(
            "<section id=\"code-size\"><h2>Code size</h2>\
             <table class=\"gas\"><tr><th>guest</th><th>.wasm bytes</th><th>after wasm-opt -Oz</th></tr>\n",
        );
        for guest in &self.results.guests {
            let oz = guest.code_bytes_oz.map_or("n/a".into(), group_digits);
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{oz}</td></tr>",
                escape(&guest.guest),
                group_digits(guest.code_bytes)
            );
        }
        html.push_str("</table>\n");
        let labels = ["raw".to_string(), "wasm-opt -Oz".to_string()];
        let series =
            self.series_of(&|g| vec![Some(g.code_bytes as f64), g.code_bytes_oz.map(|b| b as f64)]);
        let svg = grouped_bars("code size", "bytes", &labels, &series);
        let _ = writeln!(html, "<figure>{svg}</figure></section>");
        html
    }

    /// One scenario: bars of the average gas per call kind, then seed 000's table per guest.
    fn scenario_section(&self, index: usize, scenario: &str) -> String {
        let kinds: Vec<String> = Outcome::default()
            .calls()
            .iter()
            .map(|(kind, _)| kind.to_string())
            .collect();
        let series = self.series_of(&|g| {
            let calls = g.scenarios[index].1.calls();
            calls
                .iter()
                .map(|(_, c)| (c.count > 0).then(|| c.avg() as f64))
                .collect()
        });
        let svg = grouped_bars(
            &format!("{scenario}: average gas per call"),
            "gas",
            &kinds,
            &series,
        );
        let mut html = format!(
            "<section id=\"scenario-{index}\"><h2>{}</h2>\n<figure>{svg}</figure>\n",
            escape(scenario)
        );
        for guest in &self.results.guests {
            html.push_str(&seed_table(&guest.guest, &guest.scenarios[index].1));
        }
        html.push_str("</section>\n");
        html
    }
}

/// Seed 000's table for one guest on one scenario: malloc / calloc / realloc / free × avg, min,
/// max, count, total, % of total gas; then total gas, allocation gas and pages touched.
fn seed_table(guest: &str, o: &Outcome) -> String {
    let total = o.total_gas();
    let calls = o.calls();
    let mut html = format!(
        "<h3>{}</h3><table class=\"gas\"><tr><th></th><th>malloc</th><th>calloc</th><th>realloc</th>\
         <th>free</th></tr>\n",
        escape(guest)
    );
    for (label, cell) in SEED_ROWS {
        let _ = write!(html, "<tr><td>{label}</td>");
        for (_, stats) in &calls {
            let _ = write!(html, "<td>{}</td>", cell(stats, total));
        }
        html.push_str("</tr>\n");
    }
    let _ = writeln!(
        html,
        "</table><p><b>Total gas spent:</b> {} · <b>Gas spent on allocations:</b> {} ({} of the \
         total; instructions {}, pages and syscalls {}) · <b>Pages touched:</b> {}</p>",
        group_digits(total),
        group_digits(o.allocation_gas()),
        percent(o.allocation_gas(), total),
        group_digits(o.instruction_gas),
        group_digits(o.page_gas),
        format_value(o.pages_touched as f64)
    );
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two guests on one micro scenario (no program around the calls).
    fn results(reference: &str) -> Results {
        let mut results = Results::new(true, "w", reference);
        for (guest, gas) in [("heapworks", 30), ("dlmalloc", 60)] {
            let mut outcome = Outcome::default();
            outcome.malloc.add(gas);
            outcome.instruction_gas = gas;
            results.guests.push(GuestResults {
                guest: guest.into(),
                code_bytes: 100,
                code_bytes_oz: None,
                scenarios: vec![("steady 8 B".into(), outcome)],
            });
        }
        results
    }

    #[test]
    fn ratios_to_the_reference() {
        let html = render(&results("dlmalloc"));
        assert!(
            html.contains("30 <span class=\"ratio\">×0.50</span>"),
            "{html}"
        );
        assert!(html.contains("micro scenarios"));
        assert!(!html.contains("seed 000&apos;s programs") && !html.contains("id=\"share\""));
    }

    #[test]
    fn a_run_without_the_reference_has_no_ratios() {
        let html = render(&results("upstream"));
        assert!(html.contains("no ratios"));
        assert!(!html.contains("×"), "no ratio anywhere");
        // Code size and the scenario's bars are still drawn.
        assert_eq!(html.matches("<svg").count(), 2);
    }
}
