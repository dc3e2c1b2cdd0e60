//! Where a run's HTML report goes when `--out` is not given: a directory per command under the
//! user's cache directory, never under the directory the command happens to run in.
//!
//! Invariants: the default is `$XDG_CACHE_HOME/heapworks/reports/<command>` when
//! `XDG_CACHE_HOME` is an absolute path, else `$HOME/.cache/heapworks/reports/<command>` when
//! `HOME` is, else `<system temp dir>/heapworks/reports/<command>`; it never depends on the
//! current directory. `heapworks --help` of each command states it.

use std::ffi::OsString;
use std::path::PathBuf;

/// The default report directory of `command` (`bench`, `replay`, `torture`, `report`) in this
/// process's environment.
pub fn default_report_dir(command: &str) -> PathBuf {
    report_dir_in(
        command,
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
}

/// The default report directory of `command` given the values of `XDG_CACHE_HOME` and `HOME`.
fn report_dir_in(command: &str, xdg_cache: Option<OsString>, home: Option<OsString>) -> PathBuf {
    let absolute = |value: Option<OsString>| value.map(PathBuf::from).filter(|p| p.is_absolute());
    let cache = absolute(xdg_cache)
        .or_else(|| absolute(home).map(|home| home.join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    cache.join("heapworks").join("reports").join(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_home_then_home_then_temp() {
        let dir = report_dir_in("bench", Some("/c".into()), Some("/h".into()));
        assert_eq!(dir, PathBuf::from("/c/heapworks/reports/bench"));
        let dir = report_dir_in("replay", None, Some("/h".into()));
        assert_eq!(dir, PathBuf::from("/h/.cache/heapworks/reports/replay"));
        let dir = report_dir_in("torture", Some("relative".into()), Some("".into()));
        assert_eq!(
            dir,
            std::env::temp_dir().join("heapworks/reports/torture"),
            "relative paths would depend on the current directory"
        );
    }
}
