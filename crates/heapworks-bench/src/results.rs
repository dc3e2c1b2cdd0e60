//! The result model: one [`Cell`] per (workload, case, allocator, metric), plus the
//! [`Environment`] the numbers were measured in. Files carry both as a flat array of
//! [`Record`]s (`{"workload","case","allocator","metric","value","unit", …}`), the environment
//! as records of workload `environment`, so that a results file alone can re-render a report.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contenders::AllocatorId;
use crate::workloads::{Better, Config, MetricSpec};

/// Workload name of the records that describe the environment.
pub const ENVIRONMENT: &str = "environment";

/// Most allocators (table columns) a results file may name: every row of the report has a
/// column for each, so a hostile file with a column per cell would make the report quadratic.
pub const MAX_ALLOCATORS: usize = 64;

/// [`Environment::scale`] of a `heapworks replay` run: `trials` replays per cell, no time box.
pub const REPLAY_SCALE: &str = "replay";

/// Start of [`Environment::scale`] in a `heapworks torture` run (`torture-quick`, …): a
/// scorecard of verdicts, where ratios mean nothing.
pub const TORTURE_SCALE: &str = "torture";

/// Status of a record whose value is a verdict (text), not a measurement.
pub const VERDICT_STATUS: &str = "verdict";

/// Trials of one cell, summarized.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Median of the trials.
    pub median: f64,
    /// Smallest trial.
    pub min: f64,
    /// Largest trial.
    pub max: f64,
    /// Number of trials.
    pub trials: usize,
}

impl Summary {
    /// One measurement: a single trial.
    pub fn single(value: f64) -> Self {
        Self {
            median: value,
            min: value,
            max: value,
            trials: 1,
        }
    }

    /// `(max - min) / median`, in percent.
    pub fn spread_percent(&self) -> f64 {
        if self.median == 0.0 {
            0.0
        } else {
            (self.max - self.min) / self.median.abs() * 100.0
        }
    }
}

/// What a cell holds: numbers, or why there are none.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The summary of the trials.
    Measured(Summary),
    /// Why the allocator produced no number here (e.g. `out of memory`).
    Failed(String),
    /// A test's verdict, e.g. `pass 5/5` or `caught: free(): invalid pointer`: the word before
    /// the first `:` is the short form the table shows.
    Verdict(String),
}

/// One measured quantity of one allocator.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Workload name.
    pub workload: String,
    /// Case name.
    pub case: String,
    /// Allocator name.
    pub allocator: String,
    /// Metric name.
    pub metric: String,
    /// Unit of the metric.
    pub unit: String,
    /// Which direction is good.
    pub better: Better,
    /// Whether the terminal table shows the metric.
    pub primary: bool,
    /// The numbers, or the failure.
    pub outcome: Outcome,
}

impl Cell {
    /// The cell of `metric` for `allocator` in `workload`'s `case`.
    pub fn of(
        workload: &str,
        case: &str,
        allocator: &str,
        metric: &MetricSpec,
        outcome: Outcome,
    ) -> Self {
        Self {
            workload: workload.to_string(),
            case: case.to_string(),
            allocator: allocator.to_string(),
            metric: metric.name.to_string(),
            unit: metric.unit.to_string(),
            better: metric.better,
            primary: metric.primary,
            outcome,
        }
    }

    /// The median, if the cell was measured.
    pub fn median(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Measured(summary) => Some(summary.median),
            Outcome::Failed(_) | Outcome::Verdict(_) => None,
        }
    }
}

/// Where and how the numbers were measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Environment {
    /// UTC date and time of the run, `YYYY-MM-DD HH:MM UTC`.
    pub date: String,
    /// CPU model.
    pub cpu: String,
    /// Logical cores available to the run.
    pub cores: usize,
    /// Operating system and kernel.
    pub os: String,
    /// `release` or `debug`.
    pub build: String,
    /// Revision of the workspace, when known.
    pub revision: String,
    /// Seed of the run.
    pub seed: u64,
    /// Trials per cell.
    pub trials: usize,
    /// Timed length of a time-boxed trial, in milliseconds.
    pub duration_ms: f64,
    /// `tiny`, `default` or `full`.
    pub scale: String,
    /// `(allocator, crate and version)` of every contender in the run.
    pub versions: Vec<(String, String)>,
    /// `(workload, what it is and how to draw it)`, as the command that ran it said; a
    /// workload not listed has no description and plain bars.
    pub workloads: Vec<(String, WorkloadInfo)>,
}

/// What a workload measures and how a report draws it: carried by the results, so that a
/// renderer needs nothing but them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkloadInfo {
    /// One line on what the workload measures.
    pub description: String,
    /// How its rows are plotted.
    pub plot: Plot,
}

/// How a report plots a workload's rows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Plot {
    /// Grouped bars of each primary metric, one group per case.
    #[default]
    Bars,
    /// Grouped bars of these metrics only (the others are in the tables).
    BarsOf(Vec<String>),
    /// For each of these operations, lines of its percentiles (metrics `OPERATION pNN`), log
    /// scale.
    Percentiles(Vec<String>),
    /// Lines of the primary metric against size: each case with its size in bytes.
    AgainstSize(Vec<(String, f64)>),
    /// Growth with the problem's size: for each of `metrics`, its lines against each case's
    /// `x` (e.g. seed 003's N), one line per allocator, both axes logarithmic.
    Growth {
        /// What x counts, e.g. `N (blocks)`.
        axis: String,
        /// The metrics plotted, one figure each.
        metrics: Vec<String>,
        /// Each case with its x.
        cases: Vec<(String, f64)>,
    },
}

impl Environment {
    /// Describes this machine and build for a run with `config` over `allocators`.
    pub fn detect(config: &Config, allocators: &[AllocatorId]) -> Self {
        Self {
            date: utc_now(),
            cpu: cpu_model(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            os: os_description(),
            build: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .to_string(),
            revision: workspace_revision(),
            seed: config.seed,
            trials: config.trials,
            duration_ms: config.duration.as_secs_f64() * 1e3,
            scale: serde_json::to_value(config.scale)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            versions: allocators
                .iter()
                .map(|id| (id.name().to_string(), id.crate_version().to_string()))
                .collect(),
            workloads: Vec::new(),
        }
    }

    /// The machine in one line: CPU, cores, OS, build.
    pub fn machine_line(&self) -> String {
        format!(
            "{}, {} cores · {} · {} build",
            self.cpu, self.cores, self.os, self.build
        )
    }

    /// Whether the results are `heapworks torture`'s scorecard (verdicts, no ratios).
    pub fn is_scorecard(&self) -> bool {
        self.scale.starts_with(TORTURE_SCALE)
    }

    /// The command that produced the results: `heapworks bench`, `replay` or `torture`.
    pub fn command(&self) -> &'static str {
        if self.scale == REPLAY_SCALE {
            "heapworks replay"
        } else if self.is_scorecard() {
            "heapworks torture"
        } else {
            "heapworks bench"
        }
    }

    /// The run's settings in one line.
    pub fn settings_line(&self) -> String {
        if self.scale == REPLAY_SCALE {
            return format!(
                "{} trials per cell, interleaved · revision {}",
                self.trials, self.revision
            );
        }
        if self.is_scorecard() {
            return format!(
                "seed {} · {} · revision {}",
                self.seed, self.scale, self.revision
            );
        }
        format!(
            "seed {} · {} trials · {} ms per timed trial · {} scale · revision {}",
            self.seed, self.trials, self.duration_ms, self.scale, self.revision
        )
    }

    /// The crates measured, in one line.
    pub fn versions_line(&self) -> String {
        let crates: Vec<&str> = self.versions.iter().map(|(_, v)| v.as_str()).collect();
        crates.join(", ")
    }
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Results {
    /// Where the numbers come from.
    pub environment: Environment,
    /// Every cell, in run order.
    pub cells: Vec<Cell>,
}

impl Results {
    /// Allocator names in column order (first appearance).
    pub fn allocators(&self) -> Vec<String> {
        let present: HashSet<&str> = self.cells.iter().map(|c| c.allocator.as_str()).collect();
        let listed = self.environment.versions.iter().map(|(name, _)| name);
        let measured = self.cells.iter().map(|cell| &cell.allocator);
        first_appearances(
            listed
                .chain(measured)
                .filter(|name| present.contains(name.as_str())),
        )
    }

    /// Workload names in run order.
    pub fn workloads(&self) -> Vec<String> {
        first_appearances(self.cells.iter().map(|cell| &cell.workload))
    }

    /// The rows of the report: distinct (workload, case, metric) in run order, each with its
    /// cells. Linear in the cells (one hash look-up each).
    pub fn rows(&self) -> Vec<Row<'_>> {
        let mut rows: Vec<Row<'_>> = Vec::new();
        let mut row_of: HashMap<(&str, &str, &str), usize> = HashMap::new();
        for cell in &self.cells {
            let key = (
                cell.workload.as_str(),
                cell.case.as_str(),
                cell.metric.as_str(),
            );
            match row_of.entry(key) {
                Entry::Occupied(row) => rows[*row.get()].cells.push(cell),
                Entry::Vacant(slot) => {
                    slot.insert(rows.len());
                    rows.push(Row { cells: vec![cell] });
                }
            }
        }
        rows
    }

    /// What `workload` measures and how to draw it (no description and bars if the results
    /// do not say).
    pub fn workload_info(&self, workload: &str) -> WorkloadInfo {
        self.environment
            .workloads
            .iter()
            .find(|(name, _)| name == workload)
            .map(|(_, info)| info.clone())
            .unwrap_or_default()
    }

    /// The allocator every ratio is taken to: heapworks when present, else the first column.
    pub fn baseline(&self) -> Option<String> {
        let allocators = self.allocators();
        let heapworks = AllocatorId::Heapworks.name();
        if allocators.iter().any(|a| a == heapworks) {
            Some(heapworks.to_string())
        } else {
            allocators.into_iter().next()
        }
    }
}

/// `names` without repeats, each where it first appears.
fn first_appearances<'a>(names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut seen = HashSet::new();
    names
        .filter(|name| seen.insert(name.as_str()))
        .cloned()
        .collect()
}

/// The cells of one (workload, case, metric).
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// The row's cells, one per allocator that took part.
    pub cells: Vec<&'a Cell>,
}

impl<'a> Row<'a> {
    /// The row's first cell, which carries workload, case, metric, unit and direction.
    pub fn first(&self) -> &'a Cell {
        self.cells[0]
    }

    /// The cell of `allocator`, if it took part.
    pub fn cell(&self, allocator: &str) -> Option<&'a Cell> {
        self.cells
            .iter()
            .copied()
            .find(|c| c.allocator == allocator)
    }

    /// The best median of the row in the metric's direction.
    pub fn best(&self) -> Option<f64> {
        let medians = self
            .cells
            .iter()
            .filter_map(|c| c.median())
            .filter(|v| v.is_finite());
        match self.first().better {
            Better::Higher => medians.reduce(f64::max),
            Better::Lower => medians.reduce(f64::min),
        }
    }

    /// `allocator`'s median divided by `baseline`'s, when both were measured.
    pub fn ratio(&self, allocator: &str, baseline: &str) -> Option<f64> {
        let value = self.cell(allocator)?.median()?;
        let base = self.cell(baseline)?.median()?;
        (base != 0.0 && value.is_finite() && base.is_finite()).then(|| value / base)
    }

    /// The largest spread among the row's measured cells, in percent.
    pub fn widest_spread(&self) -> Option<f64> {
        self.cells
            .iter()
            .filter_map(|c| match &c.outcome {
                Outcome::Measured(summary) => Some(summary.spread_percent()),
                Outcome::Failed(_) | Outcome::Verdict(_) => None,
            })
            .filter(|s| s.is_finite())
            .reduce(f64::max)
    }
}

/// One entry of a results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Workload name, or `environment`.
    pub workload: String,
    /// Case name (for the environment: the field).
    pub case: String,
    /// Allocator name (empty for machine-wide environment fields).
    pub allocator: String,
    /// Metric name.
    pub metric: String,
    /// The median (number), `null` for a failed cell, or text for the environment.
    pub value: Value,
    /// Unit of `value`.
    pub unit: String,
    /// `higher` or `lower`: which direction is good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub better: Option<Better>,
    /// Whether the terminal table shows the metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<bool>,
    /// Smallest trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Largest trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// `(max - min) / median` in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_pct: Option<f64>,
    /// Number of trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<usize>,
    /// `ok`, or why the cell has no value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A results file could not be understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError(pub String);

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FormatError {}

impl Results {
    /// The flat record form: environment first, then every cell.
    pub fn to_records(&self) -> Vec<Record> {
        let mut records = environment_records(&self.environment);
        records.extend(self.cells.iter().map(cell_record));
        records
    }

    /// Rebuilds results from records (as read from a results file).
    pub fn from_records(records: Vec<Record>) -> Result<Self, FormatError> {
        let (environment, cells): (Vec<_>, Vec<_>) =
            records.into_iter().partition(|r| r.workload == ENVIRONMENT);
        let cells = cells
            .into_iter()
            .map(record_cell)
            .collect::<Result<Vec<_>, _>>()?;
        if cells.is_empty() {
            return Err(FormatError("the file holds no measurements".into()));
        }
        let allocators: HashSet<&str> = cells.iter().map(|c| c.allocator.as_str()).collect();
        if allocators.len() > MAX_ALLOCATORS {
            return Err(FormatError(format!(
                "the file names {} allocators; a report has at most {MAX_ALLOCATORS} columns",
                allocators.len()
            )));
        }
        Ok(Self {
            environment: parse_environment(&environment),
            cells,
        })
    }
}

fn text_record(case: &str, allocator: &str, value: Value, unit: &str) -> Record {
    Record {
        workload: ENVIRONMENT.to_string(),
        case: case.to_string(),
        allocator: allocator.to_string(),
        metric: case.to_string(),
        value,
        unit: unit.to_string(),
        better: None,
        primary: None,
        min: None,
        max: None,
        spread_pct: None,
        trials: None,
        status: None,
    }
}

fn environment_records(env: &Environment) -> Vec<Record> {
    let mut records = vec![
        text_record("date", "", Value::from(env.date.clone()), ""),
        text_record("cpu", "", Value::from(env.cpu.clone()), ""),
        text_record("cores", "", Value::from(env.cores), "cores"),
        text_record("os", "", Value::from(env.os.clone()), ""),
        text_record("build", "", Value::from(env.build.clone()), ""),
        text_record("revision", "", Value::from(env.revision.clone()), ""),
        text_record("seed", "", Value::from(env.seed), ""),
        text_record("trials", "", Value::from(env.trials), "trials"),
        text_record("duration", "", Value::from(env.duration_ms), "ms"),
        text_record("scale", "", Value::from(env.scale.clone()), ""),
    ];
    records.extend(
        env.versions
            .iter()
            .map(|(name, version)| text_record("version", name, Value::from(version.clone()), "")),
    );
    records.extend(env.workloads.iter().map(|(name, info)| {
        let value = serde_json::json!({
            "description": info.description,
            "plot": serde_json::to_value(&info.plot).unwrap_or(Value::Null),
        });
        text_record("workload", name, value, "")
    }));
    records
}

fn parse_environment(records: &[Record]) -> Environment {
    let field = |case: &str| records.iter().find(|r| r.case == case).map(|r| &r.value);
    let text = |case: &str| {
        field(case)
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_string()
    };
    let number = |case: &str| field(case).and_then(Value::as_f64).unwrap_or(0.0);
    Environment {
        date: text("date"),
        cpu: text("cpu"),
        cores: number("cores") as usize,
        os: text("os"),
        build: text("build"),
        revision: text("revision"),
        seed: field("seed").and_then(Value::as_u64).unwrap_or(0),
        trials: number("trials") as usize,
        duration_ms: number("duration"),
        scale: text("scale"),
        versions: records
            .iter()
            .filter(|r| r.case == "version")
            .map(|r| {
                (
                    r.allocator.clone(),
                    r.value.as_str().unwrap_or("unknown").to_string(),
                )
            })
            .collect(),
        workloads: records
            .iter()
            .filter(|r| r.case == "workload")
            .map(|r| (r.allocator.clone(), workload_info(&r.value)))
            .collect(),
    }
}

/// A workload's description and plot as a results file records them; what cannot be read is
/// left out (no description, bars).
fn workload_info(value: &Value) -> WorkloadInfo {
    WorkloadInfo {
        description: value["description"].as_str().unwrap_or("").to_string(),
        plot: serde_json::from_value(value["plot"].clone()).unwrap_or_default(),
    }
}

fn cell_record(cell: &Cell) -> Record {
    let (value, min, max, spread, trials, status) = match &cell.outcome {
        Outcome::Measured(s) => (
            finite_number(s.median),
            Some(s.min),
            Some(s.max),
            Some(s.spread_percent()),
            Some(s.trials),
            "ok".to_string(),
        ),
        Outcome::Failed(why) => (Value::Null, None, None, None, None, why.clone()),
        Outcome::Verdict(verdict) => (
            Value::from(verdict.clone()),
            None,
            None,
            None,
            None,
            VERDICT_STATUS.to_string(),
        ),
    };
    Record {
        workload: cell.workload.clone(),
        case: cell.case.clone(),
        allocator: cell.allocator.clone(),
        metric: cell.metric.clone(),
        value,
        unit: cell.unit.clone(),
        better: Some(cell.better),
        primary: Some(cell.primary),
        min: min.filter(|v| v.is_finite()),
        max: max.filter(|v| v.is_finite()),
        spread_pct: spread.filter(|v| v.is_finite()),
        trials,
        status: Some(status),
    }
}

fn finite_number(value: f64) -> Value {
    serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number)
}

fn record_cell(record: Record) -> Result<Cell, FormatError> {
    let status = record.status.clone().unwrap_or_else(|| "ok".to_string());
    let outcome = match (record.value.as_f64(), status.as_str()) {
        (None, VERDICT_STATUS) => {
            Outcome::Verdict(record.value.as_str().unwrap_or("no verdict").to_string())
        }
        (Some(median), _) => Outcome::Measured(Summary {
            median,
            min: record.min.unwrap_or(median),
            max: record.max.unwrap_or(median),
            trials: record.trials.unwrap_or(1),
        }),
        (None, "ok") => Outcome::Failed("no value".to_string()),
        (None, _) => Outcome::Failed(status),
    };
    let better = record.better.ok_or_else(|| {
        FormatError(format!(
            "record {}/{}/{}/{} lacks `better`",
            record.workload, record.case, record.allocator, record.metric
        ))
    })?;
    Ok(Cell {
        workload: record.workload,
        case: record.case,
        allocator: record.allocator,
        metric: record.metric,
        unit: record.unit,
        better,
        primary: record.primary.unwrap_or(true),
        outcome,
    })
}

/// `YYYY-MM-DD HH:MM UTC` for the current time.
fn utc_now() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (year, month, day) = civil_from_days((seconds / 86_400) as i64);
    let minute_of_day = seconds % 86_400 / 60;
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        minute_of_day / 60,
        minute_of_day % 60
    )
}

/// Gregorian date of a day count since 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn cpu_model() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    cpuinfo
        .lines()
        .find_map(|line| {
            let (key, value) = line.split_once(':')?;
            matches!(key.trim(), "model name" | "Hardware" | "cpu model")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| format!("unknown {} CPU", std::env::consts::ARCH))
}

fn os_description() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{} {}", std::env::consts::OS, kernel.trim())
        .trim()
        .to_string()
}

/// `git describe --always --dirty` of the workspace this binary was built from, if available.
fn workspace_revision() -> String {
    std::process::Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "describe",
            "--always",
            "--dirty",
        ])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .map_or_else(
            || env!("HEAPWORKS_REVISION").to_string(),
            |s| s.trim().to_string(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(19_723), (2024, 1, 1));
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    fn cell(allocator: &str, outcome: Outcome) -> Cell {
        Cell {
            workload: "w".into(),
            case: "c".into(),
            allocator: allocator.into(),
            metric: "m".into(),
            unit: "u".into(),
            better: Better::Higher,
            primary: true,
            outcome,
        }
    }

    fn measured(median: f64) -> Outcome {
        Outcome::Measured(Summary {
            median,
            min: median * 0.9,
            max: median * 1.1,
            trials: 3,
        })
    }

    #[test]
    fn records_round_trip() {
        let results = Results {
            environment: Environment {
                date: "2024-01-01 00:00 UTC".into(),
                cpu: "cpu".into(),
                cores: 2,
                versions: vec![("heapworks".into(), "heapworks x".into())],
                workloads: vec![
                    (
                        "w".into(),
                        WorkloadInfo {
                            description: "what w measures".into(),
                            plot: Plot::AgainstSize(vec![("4 B".into(), 4.0)]),
                        },
                    ),
                    (
                        "v".into(),
                        WorkloadInfo {
                            description: String::new(),
                            plot: Plot::BarsOf(vec!["time".into()]),
                        },
                    ),
                    (
                        "g".into(),
                        WorkloadInfo {
                            description: String::new(),
                            plot: Plot::Growth {
                                axis: "N (blocks)".into(),
                                metrics: vec!["total".into()],
                                cases: vec![("N = 5".into(), 5.0)],
                            },
                        },
                    ),
                ],
                ..Environment::default()
            },
            cells: vec![
                cell("heapworks", measured(2.0)),
                cell("talc", Outcome::Failed("out of memory".into())),
                cell(
                    "rlsf",
                    Outcome::Verdict("caught: free(): invalid pointer".into()),
                ),
            ],
        };
        let back = Results::from_records(results.to_records()).unwrap();
        assert_eq!(back.cells, results.cells);
        assert_eq!(back.environment.cpu, "cpu");
        assert_eq!(back.environment.versions, results.environment.versions);
        assert_eq!(back.environment.workloads, results.environment.workloads);
        assert_eq!(back.workload_info("w").description, "what w measures");
        assert_eq!(back.workload_info("unknown"), WorkloadInfo::default());
    }

    #[test]
    fn rows_ratios_and_best() {
        let results = Results {
            environment: Environment::default(),
            cells: vec![
                cell("heapworks", measured(2.0)),
                cell("talc", measured(3.0)),
            ],
        };
        let rows = results.rows();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].best(), Some(3.0));
        assert_eq!(rows[0].ratio("talc", "heapworks"), Some(1.5));
        assert_eq!(results.baseline().as_deref(), Some("heapworks"));
        assert!((rows[0].widest_spread().unwrap() - 20.0).abs() < 1e-9);
    }

    #[test]
    fn empty_files_are_rejected() {
        assert!(Results::from_records(Vec::new()).is_err());
    }
}
