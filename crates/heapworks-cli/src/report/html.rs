//! The self-contained HTML report: the at-a-glance [`summary`] (linked to the rows it
//! summarizes), the environment, then per workload its description, SVG plots as the
//! results' [`Plot`] says (inline, drawn with plotters: bars per case, percentile lines per
//! operation, lines against size) and a table of medians, spreads and ratios. No scripts, no
//! external files.

use std::collections::HashMap;
use std::fmt::Write;

use crate::results::{Cell, Outcome, Plot, Results, Row, WorkloadInfo};
use heapworks_bench::standings::standings;

use super::plots::{self, Series};
use super::{format_ratio, format_value, summary, table};

/// The reports' style sheet (also the gas report's, [`super::gas`]).
pub const STYLE: &str = "body{font-family:sans-serif;margin:2em;color:#222;max-width:1200px}\
table{border-collapse:collapse;margin:1em 0;font-size:13px}\
th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}\
th:nth-child(-n+3),td:nth-child(-n+3){text-align:left}\
td.best{font-weight:bold;background:#e8f5e9}td.failed{color:#b71c1c}\
.spread{color:#777;font-size:11px}.ratio{color:#555}\
.env{font-size:13px;line-height:1.6}figure{margin:0;overflow-x:auto}\
.legend{font-size:13px}.key{margin-right:1.2em;white-space:nowrap}\
.swatch{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}\
table.glance td{padding:1px 6px}tr.win td.verdict{background:#c8e6c9}\
tr.tie td.verdict{background:#fff9c4}tr.loss td.verdict{background:#ffcdd2}\
.glance a{color:inherit}.tally{font-size:15px}";

/// What every section shares, computed once so that the report stays linear in the cells.
struct Page<'a> {
    /// Allocator columns, in order.
    allocators: Vec<String>,
    /// The allocator ratios are taken to.
    baseline: String,
    /// The rows of each workload, workloads in run order.
    sections: Vec<(String, Vec<Row<'a>>)>,
    /// What each workload measures and how it is drawn, by workload.
    infos: HashMap<String, WorkloadInfo>,
}

impl<'a> Page<'a> {
    fn of(results: &'a Results) -> Self {
        let workloads = results.workloads();
        let mut sections: Vec<(String, Vec<Row<'a>>)> = workloads
            .iter()
            .map(|workload| (workload.clone(), Vec::new()))
            .collect();
        let section_of: HashMap<&str, usize> = workloads
            .iter()
            .enumerate()
            .map(|(index, workload)| (workload.as_str(), index))
            .collect();
        for row in results.rows() {
            let section = section_of[row.first().workload.as_str()];
            sections[section].1.push(row);
        }
        let infos = workloads
            .iter()
            .map(|workload| (workload.clone(), results.workload_info(workload)))
            .collect();
        Self {
            allocators: results.allocators(),
            baseline: table::ratio_baseline(results),
            sections,
            infos,
        }
    }
}

/// The whole report as one HTML document.
pub fn render(results: &Results) -> String {
    let mut html = String::new();
    html.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    let _ = write!(
        html,
        "<title>{} · {}</title>",
        results.environment.command(),
        escape(&results.environment.date)
    );
    let _ = write!(
        html,
        "<style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        results.environment.command()
    );
    let page = Page::of(results);
    html.push_str(&glance_block(results));
    html.push_str(&environment_block(results, &page));
    for (workload, rows) in &page.sections {
        html.push_str(&workload_section(&page, workload, rows));
    }
    html.push_str("</body></html>\n");
    html
}

/// Escapes text for HTML and SVG.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The at-a-glance summary: the tally, then the subject's rank and ratio to the best peer
/// per row, coloured by verdict, each linked to its row in the detail tables.
fn glance_block(results: &Results) -> String {
    let subject = summary::subject(results);
    let standings = standings(results, &subject);
    if standings.is_empty() {
        return String::new();
    }
    let mut html = format!(
        "<section id=\"glance\"><p class=\"tally\"><b>At a glance:</b> {0} against the best \
         peer in each row: {1}</p><p>rank: among the allocators measured; ratio: {0}'s median \
         over the best peer's (hover for both); tie: the gap is within the larger spread of the \
         two cells; each case links to its row below</p>\n\
         <table class=\"glance\"><tr><th>workload</th><th>case</th><th>metric</th>\
         <th>rank</th><th>ratio to best peer</th><th>best peer</th><th>verdict</th></tr>\n",
        escape(&subject),
        summary::tally_line(&standings)
    );
    for standing in &standings {
        let anchor = row_anchor(&standing.workload, &standing.case, &standing.metric);
        let ratio = standing
            .ratio
            .map_or_else(|| "failed".to_string(), format_ratio);
        let values = match standing.median {
            Some(median) => format!(
                "{subject} {}, {} {}",
                summary::value_with_unit(median, &standing.unit),
                standing.best_peer,
                summary::value_with_unit(standing.best_median, &standing.unit)
            ),
            None => format!("{subject} failed"),
        };
        let _ = writeln!(
            html,
            "<tr class=\"{0}\"><td>{1}</td><td><a href=\"#{2}\">{3}</a></td><td>{4}</td>\
             <td>{5}/{6}</td><td title=\"{7}\">{8}</td><td>{9}</td><td class=\"verdict\">{0}</td></tr>",
            standing.verdict.name(),
            escape(&standing.workload),
            anchor,
            escape(&standing.case),
            escape(&standing.metric),
            standing.rank,
            standing.ranked,
            escape(&values),
            ratio,
            escape(&standing.best_peer),
        );
    }
    html.push_str("</table></section>\n");
    html
}

/// The id of a row of the detail tables: its workload, case and metric with every character
/// but ASCII letters and digits as `-` (ids and fragments need no escaping then).
fn row_anchor(workload: &str, case: &str, metric: &str) -> String {
    let text = format!("row-{workload}-{case}-{metric}");
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn environment_block(results: &Results, page: &Page<'_>) -> String {
    let env = &results.environment;
    let workloads: Vec<String> = page
        .sections
        .iter()
        .map(|(w, _)| format!("<a href=\"#{0}\">{0}</a>", escape(w)))
        .collect();
    format!(
        "<div class=\"env\"><b>date</b> {}<br><b>machine</b> {}<br><b>run</b> {}<br>\
         <b>crates</b> {}<br><b>cells</b> median of trials, <span class=\"spread\">±(max−min)/median</span>, \
         <span class=\"ratio\">×ratio to {}</span>; bold: best of the row<br><b>workloads</b> {}</div>\n",
        escape(&env.date),
        escape(&env.machine_line()),
        escape(&env.settings_line()),
        escape(&env.versions_line()),
        escape(&page.baseline),
        workloads.join(" · ")
    )
}

fn workload_section(page: &Page<'_>, workload: &str, rows: &[Row<'_>]) -> String {
    let info = &page.infos[workload];
    let mut html = format!(
        "<section id=\"{0}\"><h2>{0}</h2><p>{1}</p>\n{2}",
        escape(workload),
        escape(&info.description),
        legend(page)
    );
    for figure in figures(page, workload, &info.plot, rows) {
        let _ = writeln!(html, "<figure>{figure}</figure>");
    }
    html.push_str(&rows_table(page, rows));
    html.push_str("</section>\n");
    html
}

/// The figures of a workload as its [`Plot`] says: percentile lines per operation, lines
/// against size (linear and log-log), each growth metric against N (log-log), or grouped bars
/// per plotted metric, one group per case.
fn figures(page: &Page<'_>, workload: &str, plot: &Plot, rows: &[Row<'_>]) -> Vec<String> {
    let plotted: &dyn Fn(&Cell) -> bool = match plot {
        Plot::Percentiles(operations) => {
            return operations
                .iter()
                .map(|op| latency_lines(page, rows, op))
                .collect();
        }
        Plot::AgainstSize(sizes) => {
            let axis = x_axis("size (bytes)", sizes);
            let primary = |cell: &Cell| cell.primary;
            return [false, true]
                .iter()
                .map(|&log| lines_against(page, workload, rows, &axis, &primary, log))
                .collect();
        }
        Plot::Growth {
            axis,
            metrics,
            cases,
        } => {
            let axis = x_axis(axis, cases);
            return metrics
                .iter()
                .map(|metric| {
                    let of_metric = |cell: &Cell| cell.metric == *metric;
                    lines_against(page, workload, rows, &axis, &of_metric, true)
                })
                .collect();
        }
        Plot::BarsOf(metrics) => &|cell: &Cell| metrics.contains(&cell.metric),
        Plot::Bars => &|cell: &Cell| cell.primary,
    };
    let mut metrics: Vec<(&str, Vec<&Row<'_>>)> = Vec::new();
    let mut metric_of: HashMap<&str, usize> = HashMap::new();
    let measured = |row: &&Row<'_>| row.cells.iter().any(|c| c.median().is_some());
    for row in rows.iter().filter(|r| plotted(r.first())).filter(measured) {
        let metric = row.first().metric.as_str();
        let index = *metric_of.entry(metric).or_insert_with(|| {
            metrics.push((metric, Vec::new()));
            metrics.len() - 1
        });
        metrics[index].1.push(row);
    }
    metrics
        .into_iter()
        .map(|(metric, rows)| metric_bars(page, workload, &rows, metric))
        .collect()
}

/// Grouped bars of `metric`, one group per row (all of the metric's rows).
fn metric_bars(page: &Page<'_>, workload: &str, rows: &[&Row<'_>], metric: &str) -> String {
    let labels: Vec<String> = rows.iter().map(|r| r.first().case.clone()).collect();
    let series = series_over(page, rows);
    let unit = &rows[0].first().unit;
    plots::grouped_bars(
        &format!("{workload}: {metric} ({unit})"),
        unit,
        &labels,
        &series,
    )
}

fn latency_lines(page: &Page<'_>, rows: &[Row<'_>], operation: &str) -> String {
    let prefix = format!("{operation} ");
    let rows: Vec<&Row<'_>> = rows
        .iter()
        .filter(|r| r.first().metric.starts_with(&prefix))
        .collect();
    let labels: Vec<&str> = rows
        .iter()
        .map(|r| r.first().metric.trim_start_matches(&prefix))
        .collect();
    let unit = rows.first().map_or("", |r| r.first().unit.as_str());
    let series = series_over(page, &rows);
    plots::log_lines(
        &format!("latency of {operation} ({unit}, log scale)"),
        unit,
        &labels,
        &series,
    )
}

fn x_axis<'a>(name: &'a str, cases: &'a [(String, f64)]) -> XAxis<'a> {
    XAxis {
        name,
        xs: cases.iter().map(|(c, x)| (c.as_str(), *x)).collect(),
    }
}

/// Where a line plot puts its rows: the x of each case (rows whose case has none are left
/// out), and what x counts.
struct XAxis<'a> {
    /// The x label and the end of the title, e.g. `bytes` or `N (blocks)`.
    name: &'a str,
    /// Each case's x.
    xs: HashMap<&'a str, f64>,
}

/// The rows `plotted` keeps (one metric) against `axis`, linear or log-log, one line per
/// column.
fn lines_against(
    page: &Page<'_>,
    workload: &str,
    rows: &[Row<'_>],
    axis: &XAxis<'_>,
    plotted: &dyn Fn(&Cell) -> bool,
    log: bool,
) -> String {
    let rows: Vec<(&Row<'_>, f64)> = rows
        .iter()
        .filter(|r| plotted(r.first()))
        .filter_map(|r| Some((r, *axis.xs.get(r.first().case.as_str())?)))
        .collect();
    let first = rows.first().map(|(r, _)| r.first());
    let (metric, unit) = first.map_or(("", ""), |c| (c.metric.as_str(), c.unit.as_str()));
    let scale = if log { "log-log" } else { "linear" };
    let (rows, xs): (Vec<&Row<'_>>, Vec<f64>) = rows.into_iter().unzip();
    plots::size_lines(
        &format!(
            "{workload}: {metric} against {} ({unit}, {scale})",
            axis.name
        ),
        unit,
        (axis.name, &xs),
        &series_over(page, &rows),
        log,
    )
}

fn series_over(page: &Page<'_>, rows: &[&Row<'_>]) -> Vec<Series> {
    page.allocators
        .iter()
        .enumerate()
        .filter(|(_, a)| rows.iter().any(|r| r.cell(a).is_some()))
        .map(|(colour, allocator)| Series {
            values: rows
                .iter()
                .map(|r| r.cell(allocator).and_then(|c| c.median()))
                .collect(),
            name: allocator.clone(),
            colour,
        })
        .collect()
}

/// The colour key shared by every plot (one colour per allocator column).
fn legend(page: &Page<'_>) -> String {
    colour_legend(&page.allocators)
}

/// A colour key: `names[i]` in series colour `i`, as the plots draw it.
pub fn colour_legend(names: &[String]) -> String {
    let keys: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(index, name)| {
            format!(
                "<span class=\"key\"><span class=\"swatch\" style=\"background:{}\"></span>{}</span>",
                plots::css_colour(index),
                escape(name)
            )
        })
        .collect();
    format!("<div class=\"legend\">{}</div>\n", keys.join(""))
}

fn rows_table(page: &Page<'_>, rows: &[Row<'_>]) -> String {
    let (allocators, baseline) = (&page.allocators, &page.baseline);
    let mut html = String::from("<table><tr><th>case</th><th>metric</th><th>unit</th>");
    for allocator in allocators {
        let _ = write!(html, "<th>{}</th>", escape(allocator));
    }
    html.push_str("</tr>\n");
    for row in rows {
        let first = row.first();
        let _ = write!(
            html,
            "<tr id=\"{}\"><td>{}</td><td>{}</td><td>{}</td>",
            row_anchor(&first.workload, &first.case, &first.metric),
            escape(&first.case),
            escape(&first.metric),
            escape(&first.unit)
        );
        for allocator in allocators {
            html.push_str(&html_cell(row, allocator, baseline));
        }
        html.push_str("</tr>\n");
    }
    html.push_str("</table>\n");
    html
}

fn html_cell(row: &Row<'_>, allocator: &str, baseline: &str) -> String {
    let Some(cell) = row.cell(allocator) else {
        return "<td>–</td>".to_string();
    };
    match &cell.outcome {
        Outcome::Failed(why) => format!(
            "<td class=\"failed\" title=\"{}\">{}</td>",
            escape(why),
            table::short_failure(why)
        ),
        Outcome::Verdict(verdict) => {
            let short = table::short_verdict(verdict);
            let class = if short.starts_with("pass") || short == "caught" {
                ""
            } else {
                " class=\"failed\""
            };
            format!(
                "<td{class} title=\"{}\">{}</td>",
                escape(verdict),
                escape(short)
            )
        }
        Outcome::Measured(summary) => {
            let class = if row.best() == Some(summary.median) {
                " class=\"best\""
            } else {
                ""
            };
            let ratio = match row.ratio(allocator, baseline) {
                Some(ratio) if allocator != baseline => {
                    format!(" <span class=\"ratio\">{}</span>", format_ratio(ratio))
                }
                _ => String::new(),
            };
            format!(
                "<td{class}>{} <span class=\"spread\">±{:.0}%</span>{ratio}</td>",
                format_value(summary.median),
                summary.spread_percent()
            )
        }
    }
}
