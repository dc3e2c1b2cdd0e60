//! This process's resident set from `/proc/self/status`, and resetting its peak (writing 5 to
//! `/proc/self/clear_refs` sets `VmHWM` back to the current `VmRSS`, Linux 4.0 and later), so
//! that one process can measure the peak of each variant in turn. Before a variant starts,
//! glibc's malloc gives its free memory back ([`trim_heap`]): otherwise memory freed by an
//! earlier variant would be counted in the start and reused unseen by the next.

use std::fs;

/// Sets the peak resident set back to the current one.
pub fn reset_peak() -> Result<(), String> {
    fs::write("/proc/self/clear_refs", "5")
        .map_err(|e| format!("cannot reset the peak RSS (/proc/self/clear_refs): {e}"))
}

/// Returns the C allocator's free memory to the kernel (glibc's `malloc_trim`; nothing
/// elsewhere).
pub fn trim_heap() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free memory of glibc's heaps; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
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
