//! The JSON results file: an array of records `{"workload","case","allocator","metric",
//! "value","unit", …}` (see [`crate::results::Record`]), which `heapworks report` reads back.

use crate::results::{FormatError, Record, Results};

/// The results as a pretty-printed JSON array.
pub fn render(results: &Results) -> String {
    let mut text = serde_json::to_string_pretty(&results.to_records()).expect("records serialize");
    text.push('\n');
    text
}

/// Reads results back from a JSON array of records.
pub fn parse(text: &str) -> Result<Results, FormatError> {
    let records: Vec<Record> = serde_json::from_str(text)
        .map_err(|e| FormatError(format!("not a heapworks results file: {e}")))?;
    Results::from_records(records)
}
