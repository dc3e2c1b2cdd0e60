//! Renders results: the terminal [`table`], [`json`] and [`csv`] files, and the self-contained
//! [`html`] report with [`plots`], the HTML opening and the terminal run ending with the
//! at-a-glance [`summary`]. Everything here reads only the results model
//! ([`heapworks_bench::results`] and its [`heapworks_bench::standings`]): what a workload
//! measures and how to plot it come with the results ([`crate::catalog`] writes them). Files
//! are written atomically (a temporary file renamed into place), and every destination is
//! checked before a run starts, so that a bad path fails fast and leaves nothing behind.
//! [`gas`] draws the HTML report of `heapworks gas` from heapworks-gas's own results file.

pub mod csv;
pub mod gas;
pub mod html;
pub mod json;
pub mod plots;
pub mod summary;
pub mod table;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::results::Results;

/// Where a run's results go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outputs {
    /// `--json PATH`.
    pub json: Option<PathBuf>,
    /// `--csv PATH`.
    pub csv: Option<PathBuf>,
    /// Directory of the HTML report (`index.html` and `results.json`).
    pub html_dir: Option<PathBuf>,
}

/// A destination cannot be written.
#[derive(Debug)]
pub struct OutputError {
    /// The path at fault.
    pub path: PathBuf,
    /// What went wrong.
    pub reason: String,
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot write to {}: {}",
            self.path.display(),
            self.reason
        )
    }
}

impl std::error::Error for OutputError {}

impl OutputError {
    fn new(path: &Path, reason: impl fmt::Display) -> Self {
        Self {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        }
    }
}

impl Outputs {
    /// Checks that every destination can be written, creating nothing.
    pub fn check_writable(&self) -> Result<(), OutputError> {
        for file in self.json.iter().chain(&self.csv) {
            check_file_destination(file)?;
        }
        if let Some(dir) = &self.html_dir {
            check_dir_destination(dir)?;
        }
        Ok(())
    }

    /// Writes every requested file.
    pub fn write(&self, results: &Results) -> Result<(), OutputError> {
        if let Some(path) = &self.json {
            write_atomically(path, &json::render(results))?;
        }
        if let Some(path) = &self.csv {
            write_atomically(path, &csv::render(results))?;
        }
        if let Some(dir) = &self.html_dir {
            write_report_dir(dir, results)?;
        }
        Ok(())
    }
}

/// Writes `index.html` and `results.json` into `dir`, creating it if needed.
pub fn write_report_dir(dir: &Path, results: &Results) -> Result<(), OutputError> {
    fs::create_dir_all(dir).map_err(|e| OutputError::new(dir, e))?;
    write_atomically(&dir.join("results.json"), &json::render(results))?;
    write_atomically(&dir.join("index.html"), &html::render(results))
}

fn check_file_destination(path: &Path) -> Result<(), OutputError> {
    if path.is_dir() {
        return Err(OutputError::new(path, "it is a directory"));
    }
    let parent = parent_or_current(path);
    if !parent.is_dir() {
        return Err(OutputError::new(
            path,
            format!("directory {} does not exist", parent.display()),
        ));
    }
    probe_directory(parent).map_err(|e| OutputError::new(path, e))
}

fn check_dir_destination(dir: &Path) -> Result<(), OutputError> {
    if dir.exists() && !dir.is_dir() {
        return Err(OutputError::new(dir, "it exists and is not a directory"));
    }
    let existing = dir
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("."));
    let existing = if existing.as_os_str().is_empty() {
        Path::new(".")
    } else {
        existing
    };
    if !existing.is_dir() {
        return Err(OutputError::new(
            dir,
            format!("{} is not a directory", existing.display()),
        ));
    }
    probe_directory(existing).map_err(|e| OutputError::new(dir, e))
}

fn parent_or_current(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Creates and removes a probe file: the only reliable test of write permission.
fn probe_directory(dir: &Path) -> io::Result<()> {
    let probe = dir.join(format!(".heapworks-probe-{}", std::process::id()));
    fs::write(&probe, b"")?;
    fs::remove_file(&probe)
}

/// Writes `contents` to a temporary file beside `path`, then renames it into place.
pub fn write_atomically(path: &Path, contents: &str) -> Result<(), OutputError> {
    let name = path
        .file_name()
        .ok_or_else(|| OutputError::new(path, "no file name"))?;
    let temporary = parent_or_current(path).join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = fs::write(&temporary, contents).and_then(|()| fs::rename(&temporary, path));
    written.map_err(|error| {
        let _ = fs::remove_file(&temporary);
        OutputError::new(path, error)
    })
}

/// The text of the file at `path`, refused past `limit` bytes or when not UTF-8; `what` names
/// the kind of file in the error (e.g. "heapworks results file").
pub fn read_text(path: &Path, limit: u64, what: &str) -> Result<String, String> {
    let bytes = heapworks_trace::bounded::read(path, limit, &format!("a {what}"))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    String::from_utf8(bytes).map_err(|_| format!("{}: not a {what} (not UTF-8)", path.display()))
}

/// A number with about three significant digits, as in the tables.
pub fn format_value(value: f64) -> String {
    let magnitude = value.abs();
    if !value.is_finite() {
        "n/a".to_string()
    } else if magnitude >= 100.0 || (value == value.trunc() && magnitude < 1e15) {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// A ratio to the baseline, e.g. `×1.06`.
pub fn format_ratio(ratio: f64) -> String {
    if ratio >= 100.0 {
        format!("×{ratio:.0}")
    } else if ratio >= 10.0 {
        format!("×{ratio:.1}")
    } else {
        format!("×{ratio:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_three_significant_digits() {
        assert_eq!(format_value(43.51), "43.5");
        assert_eq!(format_value(168.0), "168");
        assert_eq!(format_value(3.456), "3.46");
        assert_eq!(format_value(0.51234), "0.512");
        assert_eq!(format_value(f64::NAN), "n/a");
        assert_eq!(format_ratio(1.0612), "×1.06");
    }

    #[test]
    fn missing_directories_are_refused_before_the_run() {
        let outputs = Outputs {
            json: Some(PathBuf::from("/nonexistent-heapworks-dir/r.json")),
            ..Outputs::default()
        };
        assert!(outputs.check_writable().is_err());
    }
}
