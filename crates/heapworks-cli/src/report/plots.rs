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
}

const WIDTH: u32 = 900;
const HEIGHT: u32 = 360;
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

/// Grouped bars: one group per x label, one bar per series.
pub fn grouped_bars(title: &str, unit: &str, labels: &[String], series: &[Series]) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
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
        .label_style((FONT, 12))
        .draw()?;
    let bar_width = 0.8 / series.len().max(1) as f64;
    for (index, one) in series.iter().enumerate() {
        let fill = colour(index).filled();
        let bars = one.values.iter().enumerate().filter_map(|(group, value)| {
            let left = group as f64 + 0.1 + index as f64 * bar_width;
            value.map(|v| Rectangle::new([(left, 0.0), (left + bar_width * 0.9, v)], fill))
        });
        chart
            .draw_series(bars)?
            .label(one.name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], fill));
    }
    for (group, label) in labels.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(group as f64 + 0.5, 0.0));
        let style = TextStyle::from((FONT, 12)).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(label.as_str(), (x, y + 8), style))?;
    }
    draw_legend(&mut chart)
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
        .y_desc(unit)
        .label_style((FONT, 12))
        .draw()?;
    for (index, one) in series.iter().enumerate() {
        let points: Vec<(f64, f64)> = one
            .values
            .iter()
            .enumerate()
            .filter_map(|(x, v)| v.filter(|v| *v > 0.0).map(|v| (x as f64, v)))
            .collect();
        let style = colour(index).stroke_width(2);
        chart
            .draw_series(LineSeries::new(points, style))?
            .label(one.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], style));
    }
    draw_legend(&mut chart)
}

fn draw_legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 12))
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .draw()?;
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
            },
            Series {
                name: "talc".into(),
                values: vec![None, Some(4.0)],
            },
        ]
    }

    #[test]
    fn bars_render_as_svg_with_labels() {
        let svg = grouped_bars("throughput", "Mops/s", &["a".into(), "b".into()], &series());
        assert!(svg.starts_with("<svg"), "{svg}");
        let texts: Vec<&str> = svg.lines().map(str::trim).collect();
        assert!(
            ["heapworks", "talc", "a", "b"]
                .iter()
                .all(|t| texts.contains(t)),
            "{svg}"
        );
        assert!(svg.contains("<rect"));
    }

    #[test]
    fn lines_render_as_svg() {
        let svg = log_lines("latency", "ticks", &["p50", "p99"], &series());
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.contains("<polyline") || svg.contains("<path"));
    }
}
