//! The numeric command-line options, parsed and bounded: no value a user can type makes a run
//! last for ever or ask for more memory than the machine has.
//!
//! Invariants: every parser here refuses a value outside its documented range with a message
//! that names the option's limit; clap prints it with the option's name and exits non-zero.

use std::time::Duration;

use heapworks_bench::region::physical_memory;
use heapworks_trace::model::MAX_OPS;

/// Most trials per case and allocator (`--trials`).
pub const MAX_TRIALS: usize = 1000;
/// Longest timed length of a trial (`--duration`).
pub const MAX_DURATION: Duration = Duration::from_secs(60);
/// Shortest timed length of a trial: the timer's resolution is far finer.
pub const MIN_DURATION: Duration = Duration::from_micros(1);
/// Largest `--tolerance` of the instruction-count gate, in percent.
pub const MAX_TOLERANCE: f64 = 1000.0;

/// `--trials`: a count from 1 to [`MAX_TRIALS`].
pub fn parse_trials(text: &str) -> Result<usize, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("trials must be at least 1".to_string()),
        Ok(n) if n > MAX_TRIALS as u64 => Err(format!("at most {MAX_TRIALS} trials")),
        Ok(n) => Ok(n as usize),
        Err(_) => Err(format!("`{text}` is not a number of trials")),
    }
}

/// `--duration`: `250ms`, `0.5s`, `800us`, or a bare number of milliseconds, from
/// [`MIN_DURATION`] to [`MAX_DURATION`].
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 40ms, 0.2s)"))?;
    let seconds = match unit.trim() {
        "" | "ms" => value / 1e3,
        "s" => value,
        "us" | "µs" => value / 1e6,
        other => return Err(format!("unknown unit `{other}` (use ms, s or us)")),
    };
    if seconds <= 0.0 {
        return Err("duration must be greater than zero".to_string());
    }
    if !(MIN_DURATION.as_secs_f64()..=MAX_DURATION.as_secs_f64()).contains(&seconds) {
        return Err(format!(
            "a duration is from {} us to {} s",
            MIN_DURATION.as_micros(),
            MAX_DURATION.as_secs()
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// `--tolerance`: a percentage from 0 to [`MAX_TOLERANCE`].
pub fn parse_tolerance(text: &str) -> Result<f64, String> {
    let percent: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a percentage"))?;
    if !(0.0..=MAX_TOLERANCE).contains(&percent) {
        return Err(format!("a tolerance is from 0 to {MAX_TOLERANCE} percent"));
    }
    Ok(percent)
}

/// `--max-ops`: a number of requests from 1 to the most a trace may hold.
pub fn parse_max_ops(text: &str) -> Result<usize, String> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err("keep at least 1 request".to_string()),
        Ok(n) if n > MAX_OPS as u64 => Err(format!("a trace holds at most {MAX_OPS} requests")),
        Ok(n) => Ok(n as usize),
        Err(_) => Err(format!("`{text}` is not a number of requests")),
    }
}

/// `--heap`: bytes, with an optional `K`, `M` or `G` suffix (powers of 1024), at most this
/// machine's physical memory (every byte of the heap is touched before a replay).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let bytes = parse_bytes(text)?;
    let memory = physical_memory();
    if bytes as u64 > memory {
        return Err(format!(
            "`{text}` is more than this machine's {} MiB of memory",
            memory >> 20
        ));
    }
    Ok(bytes)
}

/// A size with an optional `K`, `M` or `G` suffix, not zero.
fn parse_bytes(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (number, shift) = match text.char_indices().last() {
        Some((at, 'k' | 'K')) => (&text[..at], 10),
        Some((at, 'm' | 'M')) => (&text[..at], 20),
        Some((at, 'g' | 'G')) => (&text[..at], 30),
        _ => (text, 0),
    };
    let value: usize = number
        .parse()
        .map_err(|_| format!("`{text}` is not a size (e.g. 64M, 1G, 1048576)"))?;
    match value.checked_mul(1 << shift) {
        Some(0) => Err("the heap must not be empty".to_string()),
        Some(bytes) => Ok(bytes),
        None => Err(format!("`{text}` is too large")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("40ms"), Ok(Duration::from_millis(40)));
        assert_eq!(parse_duration("0.2s"), Ok(Duration::from_millis(200)));
        assert_eq!(parse_duration("15"), Ok(Duration::from_millis(15)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("60s"), Ok(MAX_DURATION));
        assert!(parse_duration("0").is_err());
        assert!(parse_duration("0ms").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("3h").is_err());
        assert!(parse_duration("61s").is_err());
        assert!(parse_duration("18446744073709551615").is_err());
        assert!(parse_duration("0.0001us").is_err());
        let huge = "9".repeat(400);
        assert!(parse_duration(&huge).is_err());
    }

    #[test]
    fn trials() {
        assert_eq!(parse_trials("3"), Ok(3));
        assert_eq!(parse_trials("1000"), Ok(MAX_TRIALS));
        assert!(parse_trials("0").is_err());
        assert!(parse_trials("-1").is_err());
        assert!(parse_trials("1001").is_err());
        assert!(parse_trials("4294967296").is_err());
        assert!(parse_trials("18446744073709551616").is_err());
    }

    #[test]
    fn tolerances() {
        assert_eq!(parse_tolerance("1.5"), Ok(1.5));
        assert_eq!(parse_tolerance("0"), Ok(0.0));
        for bad in ["-1", "NaN", "inf", "1001", "lots"] {
            assert!(parse_tolerance(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn max_ops() {
        assert_eq!(parse_max_ops("10"), Ok(10));
        assert!(parse_max_ops("0").is_err());
        assert!(parse_max_ops(&(MAX_OPS + 1).to_string()).is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64M"), Ok(64 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("8K"), Ok(8192));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("18446744073709551615").is_err());
        assert!(
            parse_size("16777216G").is_err(),
            "16 PiB is more than any machine has"
        );
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
    }
}
