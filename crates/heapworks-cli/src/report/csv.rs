//! The CSV results file: the same records as the JSON file, one per line, with a header.

use serde_json::Value;

use crate::results::{Record, Results};

/// Column names, in order.
const HEADER: [&str; 13] = [
    "workload",
    "case",
    "allocator",
    "metric",
    "value",
    "unit",
    "better",
    "primary",
    "min",
    "max",
    "spread_pct",
    "trials",
    "status",
];

/// The results as CSV (RFC 4180 quoting).
pub fn render(results: &Results) -> String {
    let mut text = HEADER.join(",");
    text.push('\n');
    for record in results.to_records() {
        text.push_str(
            &fields(&record)
                .iter()
                .map(|f| quote(f))
                .collect::<Vec<_>>()
                .join(","),
        );
        text.push('\n');
    }
    text
}

fn fields(record: &Record) -> [String; 13] {
    let number = |v: Option<f64>| v.map(|v| v.to_string()).unwrap_or_default();
    let value = match &record.value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let better = record
        .better
        .map(|b| format!("{b:?}").to_lowercase())
        .unwrap_or_default();
    [
        record.workload.clone(),
        record.case.clone(),
        record.allocator.clone(),
        record.metric.clone(),
        value,
        record.unit.clone(),
        better,
        record.primary.map(|p| p.to_string()).unwrap_or_default(),
        number(record.min),
        number(record.max),
        number(record.spread_pct),
        record.trials.map(|t| t.to_string()).unwrap_or_default(),
        record.status.clone().unwrap_or_default(),
    ]
}

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_with_commas_are_quoted() {
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(quote("plain"), "plain");
    }
}
