//! SVG plots drawn with plotters' SVG backend (text as SVG `<text>`, no font files): grouped
//! bars of one metric across a workload's cases, and percentile lines for latency.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// One allocator's values across the plot's x positions (`None`: no value, e.g. out of memory).
#[derive(Debug, Clone)]
pub struct Series {
    /// Allocator name (legend).
    pub name: String,
    /// Values at each x position.
    pub values: Vec<Option<f64>>,
    /// Index of the series' colour (the allocator's column), so colours match across plots.
    pub colour: usize,
}

const WIDTH: u32 = 900;
const HEIGHT: u32 = 340;
/// Pixels per character of a 12 px label, for sizing bar groups.
const LABEL_CHAR_PX: u32 = 7;
const FONT: &str = "sans-serif";

/// Colours of the series, heapworks (always first when present) in a strong red.
const PALETTE: [RGBColor; 9] = [
    RGBColor(214, 39, 40),
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(23, 190, 207),
];

fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// The CSS colour of series colour `index` (for legends drawn outside the plots).
pub fn css_colour(index: usize) -> String {
    let RGBColor(r, g, b) = colour(index);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Wide enough that every group's bars and label fit.
fn bars_width(labels: &[String], series: usize) -> u32 {
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u32;
    let group = (series as u32 * 12).max(longest * LABEL_CHAR_PX + 16);
    (group * labels.len() as u32 + 120).clamp(WIDTH, 4 * WIDTH)
}

/// Grouped bars: one group per x label, one bar per series.
pub fn grouped_bars(title: &str, unit: &str, labels: &[String], series: &[Series]) -> String {
    let mut svg = String::new();
    {
        let size = (bars_width(labels, series.len()), HEIGHT);
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = draw_bars(&root, title, unit, labels, series);
        if let Err(error) = drawn.and_then(|()| root.present().map_err(Into::into)) {
            return failed_plot(title, &error.to_string());
        }
    }
    svg
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw_bars(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    unit: &str,
    labels: &[String],
    series: &[Series],
) -> DrawResult {
    root.fill(&WHITE)?;
    let top = max_value(series) * 1.15;
    let groups = labels.len().max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..groups, 0.0..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(unit)
        .y_label_formatter(&|v| super::format_value(*v))
        .label_style((FONT, 12))
        .draw()?;
    let bar_width = 0.8 / series.len().max(1) as f64;
    for (index, one) in series.iter().enumerate() {
        let fill = colour(one.colour).filled();
        let bars = one.values.iter().enumerate().filter_map(|(group, value)| {
            let left = group as f64 + 0.1 + index as f64 * bar_width;
            value.map(|v| Rectangle::new([(left, 0.0), (left + bar_width * 0.9, v)], fill))
        });
        chart.draw_series(bars)?;
    }
    for (group, label) in labels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(group as f64 + 0.5, 0.0));
        let style = TextStyle::from((FONT, 12)).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(label.as_str(), (x, y + 8), style))?;
    }
    Ok(())
}

/// Lines across ordered x labels (e.g. percentiles) on a logarithmic y axis.
pub fn log_lines(title: &str, unit: &str, labels: &[&str], series: &[Series]) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let drawn = draw_lines(&root, title, unit, labels, series);
        if let Err(error) = drawn.and_then(|()| root.present().map_err(Into::into)) {
            return failed_plot(title, &error.to_string());
        }
    }
    svg
}

/// Lines of values against x values (sizes in bytes, counts): `(x label, xs)`; the x and y
/// axes logarithmic when `log` is set, linear otherwise (seed 002's two plots of time against
/// size, seed 003's time against N; one line per variant).
pub fn size_lines(
    title: &str,
    unit: &str,
    (x_desc, sizes): (&str, &[f64]),
    series: &[Series],
    log: bool,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let drawn = if log {
            draw_size_lines_log(&root, title, (unit, x_desc), sizes, series)
        } else {
            draw_size_lines_linear(&root, title, (unit, x_desc), sizes, series)
        };
        if let Err(error) = drawn.and_then(|()| root.present().map_err(Into::into)) {
            return failed_plot(title, &error.to_string());
        }
    }
    svg
}

/// The points of one series: (size, value) where both are positive.
fn size_points(sizes: &[f64], one: &Series) -> Vec<(f64, f64)> {
    sizes
        .iter()
        .zip(&one.values)
        .filter_map(|(&x, v)| v.filter(|v| *v > 0.0 && x > 0.0).map(|v| (x, v)))
        .collect()
}

/// The mesh (`x_desc` across, `unit` up) and one line per series, on linear or log axes.
fn size_mesh_and_lines<X, Y>(
    chart: &mut ChartContext<'_, SVGBackend<'_>, Cartesian2d<X, Y>>,
    (unit, x_desc): (&str, &str),
    sizes: &[f64],
    series: &[Series],
) -> DrawResult
where
    X: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
    Y: Ranged<ValueType = f64> + plotters::coord::ranged1d::ValueFormatter<f64>,
{
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .x_label_formatter(&|v| super::format_value(*v))
        .y_label_formatter(&|v| super::format_value(*v))
        .y_desc(unit)
        .label_style((FONT, 12))
        .draw()?;
    for one in series {
        let style = colour(one.colour).stroke_width(2);
        chart.draw_series(LineSeries::new(size_points(sizes, one), style))?;
    }
    Ok(())
}

fn draw_size_lines_linear(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    axes: (&str, &str),
    sizes: &[f64],
    series: &[Series],
) -> DrawResult {
    root.fill(&WHITE)?;
    let right = sizes.iter().copied().fold(1.0, f64::max);
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..right * 1.02, 0.0..max_value(series) * 1.1)?;
    size_mesh_and_lines(&mut chart, axes, sizes, series)
}

fn draw_size_lines_log(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    axes: (&str, &str),
    sizes: &[f64],
    series: &[Series],
) -> DrawResult {
    root.fill(&WHITE)?;
    let left = sizes
        .iter()
        .copied()
        .filter(|&s| s > 0.0)
        .fold(f64::MAX, f64::min);
    let right = sizes.iter().copied().fold(1.0, f64::max);
    let bottom = min_positive_value(series).unwrap_or(1.0) / 2.0;
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(
            (left.min(right) / 1.5..right * 1.5).log_scale(),
            (bottom..max_value(series) * 2.0).log_scale(),
        )?;
    size_mesh_and_lines(&mut chart, axes, sizes, series)
}

fn draw_lines(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    title: &str,
    unit: &str,
    labels: &[&str],
    series: &[Series],
) -> DrawResult {
    root.fill(&WHITE)?;
    let top = max_value(series) * 2.0;
    let bottom = min_positive_value(series).unwrap_or(1.0) / 2.0;
    let last = labels.len().saturating_sub(1).max(1) as f64;
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.2..last + 0.2, (bottom..top).log_scale())?;
    let label_of = |x: &f64| {
        let index = x.round();
        let exact = (x - index).abs() < 1e-6 && index >= 0.0;
        exact
            .then(|| labels.get(index as usize).copied())
            .flatten()
            .unwrap_or("")
            .to_string()
    };
    chart
        .configure_mesh()
        .x_labels(labels.len() * 5)
        .x_label_formatter(&label_of)
        .y_label_formatter(&|v| super::format_value(*v))
        .y_desc(unit)
        .label_style((FONT, 12))
        .draw()?;
    for one in series {
        let points: Vec<(f64, f64)> = one
            .values
            .iter()
            .enumerate()
            .filter_map(|(x, v)| v.filter(|v| *v > 0.0).map(|v| (x as f64, v)))
            .collect();
        chart.draw_series(LineSeries::new(points, colour(one.colour).stroke_width(2)))?;
    }
    Ok(())
}

fn max_value(series: &[Series]) -> f64 {
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    if max > 0.0 {
        max
    } else {
        1.0
    }
}

fn min_positive_value(series: &[Series]) -> Option<f64> {
    series
        .iter()
        .flat_map(|s| s.values.iter().flatten())
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .reduce(f64::min)
}

/// A placeholder figure naming the error, so that one bad plot does not sink the report.
fn failed_plot(title: &str, error: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"40\">\
         <text x=\"10\" y=\"25\">{}: plot failed ({})</text></svg>",
        super::html::escape(title),
        super::html::escape(error)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series() -> Vec<Series> {
        vec![
            Series {
                name: "heapworks".into(),
                values: vec![Some(3.0), Some(5.0)],
                colour: 0,
            },
            Series {
                name: "talc".into(),
                values: vec![None, Some(4.0)],
                colour: 1,
            },
        ]
    }

    #[test]
    fn bars_render_as_svg_with_labels() {
        let svg = grouped_bars("throughput", "Mops/s", &["a".into(), "b".into()], &series());
        assert!(svg.starts_with("<svg"), "{svg}");
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(
            ["throughput", "a", "b"].iter().all(|t| texts.contains(t)),
            "{svg}"
        );
        let bars = |colour: usize| {
            svg.matches(&format!("fill=\"{}\"", css_colour(colour).to_uppercase()))
                .count()
        };
        assert_eq!(bars(0), 2, "two heapworks bars: {svg}");
        assert_eq!(bars(1), 1, "one talc bar (its other value is missing)");
    }

    #[test]
    fn size_lines_render_linear_and_log() {
        for log in [false, true] {
            let svg = size_lines("time", "ns", ("bytes", &[4.0, 1e6]), &series(), log);
            assert!(svg.starts_with("<svg"), "{svg}");
            assert!(svg.contains("<polyline") || svg.contains("<path"), "{svg}");
        }
    }

    #[test]
    fn lines_render_as_svg() {
        let svg = log_lines("latency", "ticks", &["p50", "p99"], &series());
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("<polyline") || svg.contains("<path"));
    }
}
