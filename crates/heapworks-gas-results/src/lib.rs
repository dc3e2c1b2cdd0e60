//! The results file of `heapworks-gas` (its `--json`): the schema, versioned.
//!
//! `heapworks-gas` (GPL-3.0, it links Gear's instrumenter) writes this file; the `heapworks`
//! command (MIT OR Apache-2.0) reads it to render the HTML report (`heapworks gas`). This crate
//! is the one definition both sides share, so it is permissively licensed and holds data,
//! arithmetic and the seed's number formats only.
//!
//! Schema [`SCHEMA`] (`"heapworks-gas-results/1"`), a JSON object:
//! - `schema`: the string [`SCHEMA`]; a file without it, or with another value, is refused.
//! - `quick`: whether the run was `--quick`.
//! - `weights`: which price list the gas follows (text).
//! - `reference`: the guest the ratios are taken to (upstream dlmalloc).
//! - `guests`: one object per guest, in run order: `guest` (name), `code_bytes` (the `.wasm`),
//!   `code_bytes_oz` (after `wasm-opt -Oz`, `null` when binaryen was missing), `scenarios`: a
//!   list of `[name, outcome]` pairs in run order, every guest with the same scenarios.
//! - An outcome: `malloc`, `calloc`, `realloc`, `free`, each `{count, total, min, max}` (gas
//!   of one kind of call); `instruction_gas` and `page_gas` (the calls' instructions, and
//!   their syscalls and Gear page charges); `pages_touched`; `program_gas` (the program
//!   around the calls, 0 in the micro scenarios).
//!
//! A change that removes or reinterprets a field bumps the version; readers refuse versions
//! they do not know instead of misreading them.

use serde::{Deserialize, Serialize};

/// The schema's name and version, the value of every file's `schema` field.
pub const SCHEMA: &str = "heapworks-gas-results/1";

/// The largest results file read (a full run of every guest is about 100 KiB).
pub const MAX_BYTES: u64 = 16 << 20;

/// The seed's columns for one kind of call.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct CallStats {
    pub count: u64,
    pub total: u64,
    pub min: u64,
    pub max: u64,
}

impl CallStats {
    /// Counts one call that cost `gas`.
    pub fn add(&mut self, gas: u64) {
        self.min = if self.count == 0 {
            gas
        } else {
            self.min.min(gas)
        };
        self.max = self.max.max(gas);
        self.count += 1;
        self.total += gas;
    }

    /// The mean gas of a call (0 with no calls).
    pub fn avg(&self) -> u64 {
        self.total.checked_div(self.count).unwrap_or(0)
    }
}

/// One guest on one scenario.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Outcome {
    pub malloc: CallStats,
    pub calloc: CallStats,
    pub realloc: CallStats,
    pub free: CallStats,
    /// Gas of the measured calls' instructions.
    pub instruction_gas: u64,
    /// Gas of the measured calls' syscalls and pages.
    pub page_gas: u64,
    /// Gear pages first accessed in a message by a measured call, summed over messages.
    pub pages_touched: u64,
    /// Gas of the program around the allocator calls (0 in the micro scenarios, which run
    /// no program).
    pub program_gas: u64,
}

impl Outcome {
    /// Everything the measured calls cost.
    pub fn allocation_gas(&self) -> u64 {
        self.instruction_gas.saturating_add(self.page_gas)
    }

    /// Everything spent: the allocator calls and the program around them.
    pub fn total_gas(&self) -> u64 {
        self.allocation_gas().saturating_add(self.program_gas)
    }

    /// The four kinds of call with their names, in the seed's column order.
    pub fn calls(&self) -> [(&'static str, &CallStats); 4] {
        [
            ("malloc", &self.malloc),
            ("calloc", &self.calloc),
            ("realloc", &self.realloc),
            ("free", &self.free),
        ]
    }
}

/// One guest's results.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuestResults {
    pub guest: String,
    pub code_bytes: u64,
    /// After `wasm-opt -Oz`; `None` if binaryen was not available.
    pub code_bytes_oz: Option<u64>,
    pub scenarios: Vec<(String, Outcome)>,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Results {
    /// Always [`SCHEMA`].
    pub schema: String,
    pub quick: bool,
    pub weights: String,
    /// The guest ratios are taken to.
    pub reference: String,
    pub guests: Vec<GuestResults>,
}

/// Groups digits by thousands, as the seed's tables do (`5 926 259`).
pub fn group_digits(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// `part` as a percentage of `whole` with two decimals, `-` when `whole` is 0.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".into()
    } else {
        format!("{:.2}%", part as f64 * 100.0 / whole as f64)
    }
}

/// How a row of the seed's table shows a kind of call, given the scenario's total gas.
pub type SeedCell = fn(&CallStats, u64) -> String;

/// The rows of seed 000's table, in its order: each kind of call (a column) shown as average,
/// minimum, maximum, count, total, and share of the scenario's total gas.
pub const SEED_ROWS: [(&str, SeedCell); 6] = [
    ("avg", |c, _| group_digits(c.avg())),
    ("min", |c, _| group_digits(c.min)),
    ("max", |c, _| group_digits(c.max)),
    ("count", |c, _| c.count.to_string()),
    ("total", |c, _| group_digits(c.total)),
    ("% of total gas", |c, total| percent(c.total, total)),
];

impl Results {
    /// An empty run in this schema.
    pub fn new(quick: bool, weights: &str, reference: &str) -> Self {
        Self {
            schema: SCHEMA.into(),
            quick,
            weights: weights.into(),
            reference: reference.into(),
            guests: Vec::new(),
        }
    }

    /// The file's text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("plain data always serializes")
    }

    /// Reads a results file's text: refuses text that is not JSON, a file of another schema
    /// (or none) by name, and one whose guests do not share their scenarios.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| format!("a malformed heapworks-gas results file: not valid JSON ({e})"))?;
        match value.get("schema") {
            Some(serde_json::Value::String(s)) if s == SCHEMA => {}
            Some(other) => {
                return Err(format!(
                    "a heapworks-gas results file of schema {other}; this program reads {SCHEMA}"
                ))
            }
            None => {
                return Err(format!(
                    "not a heapworks-gas results file (no \"schema\": \"{SCHEMA}\")"
                ))
            }
        }
        let results: Self = serde_json::from_value(value)
            .map_err(|e| format!("a malformed heapworks-gas results file: {e}"))?;
        results.check_scenarios()?;
        Ok(results)
    }

    /// The scenario names, in run order (those of the first guest; every guest has them).
    pub fn scenarios(&self) -> Vec<&str> {
        self.guests.first().map_or(Vec::new(), |g| {
            g.scenarios.iter().map(|(name, _)| name.as_str()).collect()
        })
    }

    fn check_scenarios(&self) -> Result<(), String> {
        let scenarios = self.scenarios();
        for guest in &self.guests {
            let names: Vec<&str> = guest.scenarios.iter().map(|(n, _)| n.as_str()).collect();
            if names != scenarios {
                return Err(format!(
                    "a malformed heapworks-gas results file: guest {} has other scenarios than {}",
                    guest.guest, self.guests[0].guest
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Results {
        let mut outcome = Outcome::default();
        outcome.malloc.add(30);
        outcome.malloc.add(10);
        outcome.instruction_gas = 40;
        let mut results = Results::new(true, "w", "dlmalloc");
        for guest in ["heapworks", "dlmalloc"] {
            results.guests.push(GuestResults {
                guest: guest.into(),
                code_bytes: 1,
                code_bytes_oz: None,
                scenarios: vec![("s".into(), outcome.clone())],
            });
        }
        results
    }

    #[test]
    fn numbers_read_as_in_the_seed() {
        assert_eq!(group_digits(5926259), "5 926 259");
        assert_eq!(group_digits(999), "999");
        assert_eq!(percent(1, 3), "33.33%");
        assert_eq!(percent(1, 0), "-");
    }

    #[test]
    fn round_trips_and_sums() {
        let read = Results::from_json(&sample().to_json()).unwrap();
        let o = &read.guests[1].scenarios[0].1;
        assert_eq!((o.malloc.min, o.malloc.max, o.malloc.avg()), (10, 30, 20));
        assert_eq!(read.scenarios(), ["s"]);
    }

    #[test]
    fn foreign_and_malformed_files_are_named() {
        let other = sample()
            .to_json()
            .replace(SCHEMA, "heapworks-gas-results/9");
        assert!(Results::from_json(&other).unwrap_err().contains("schema"));
        let bench = r#"[{"workload": "w"}]"#;
        assert!(Results::from_json(bench)
            .unwrap_err()
            .starts_with("not a heapworks-gas results file"));
        let text = sample().to_json();
        assert!(Results::from_json(&text[..text.len() / 2])
            .unwrap_err()
            .contains("not valid JSON"));
        let cut = text.replace("\"count\"", "\"cuont\"");
        assert!(Results::from_json(&cut).unwrap_err().contains("malformed"));
        let mut uneven = sample();
        uneven.guests[1].scenarios.clear();
        let err = Results::from_json(&uneven.to_json()).unwrap_err();
        assert!(err.contains("other scenarios"), "{err}");
    }
}
