//! This process's resident set from `/proc/self/status`, and resetting its peak (writing 5 to
//! `/proc/self/clear_refs` sets `VmHWM` back to the current `VmRSS`, Linux 4.0 and later), so
//! that a pattern's probe measures the peak from its own start, not the process's start-up.

use std::fs;

/// Sets the peak resident set back to the current one.
pub fn reset_peak() -> Result<(), String> {
    fs::write("/proc/self/clear_refs", "5")
        .map_err(|e| format!("cannot reset the peak RSS (/proc/self/clear_refs): {e}"))
}

/// The current resident set, in KiB.
pub fn current_kib() -> Result<u64, String> {
    status_kib("VmRSS:")
}

/// The peak resident set since the last [`reset_peak`], in KiB.
pub fn peak_kib() -> Result<u64, String> {
    status_kib("VmHWM:")
}

fn status_kib(key: &str) -> Result<u64, String> {
    let status = fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    parse_kib(&status, key).ok_or_else(|| format!("no {key} in /proc/self/status"))
}

/// The value of the `key` line of a status text, e.g. `VmRSS:     1234 kB`.
fn parse_kib(status: &str, key: &str) -> Option<u64> {
    let rest = status.lines().find_map(|line| line.strip_prefix(key))?;
    rest.trim().trim_end_matches("kB").trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_parse() {
        let status = "Name:\tx\nVmHWM:\t   5120 kB\nVmRSS:\t    4096 kB\n";
        assert_eq!(parse_kib(status, "VmRSS:"), Some(4096));
        assert_eq!(parse_kib(status, "VmHWM:"), Some(5120));
        assert_eq!(parse_kib(status, "VmSwap:"), None);
    }

    #[test]
    fn the_peak_resets_to_about_the_current_size() {
        reset_peak().unwrap();
        let peak = peak_kib().unwrap();
        assert!(peak > 0 && current_kib().unwrap() > 0);
    }
}
