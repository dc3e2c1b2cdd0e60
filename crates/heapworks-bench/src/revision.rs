//! The git revision a build comes from, read by the build script (`build.rs` includes this
//! file) into `HEAPWORKS_REVISION`, which `heapworks --version` and the results' environment
//! name.
//!
//! Invariants: a build outside a git checkout (a `cargo install` from a package, a tarball)
//! still builds, and says it has no revision instead of naming a wrong one.

use std::path::Path;
use std::process::Command;

/// What the version names when the source is not a git checkout (or git is missing).
pub const UNKNOWN: &str = "unknown (not built from a git checkout)";

/// The abbreviated commit checked out in `dir`, or [`UNKNOWN`].
pub fn describe(dir: &Path) -> String {
    git_revision(dir).unwrap_or_else(|| UNKNOWN.to_string())
}

/// The abbreviated commit checked out in `dir`, if `dir` is in a git checkout.
pub fn git_revision(dir: &Path) -> Option<String> {
    git(dir, &["rev-parse", "--short=12", "HEAD"])
}

/// The files whose change means a new revision is checked out in `dir`: the checkout's
/// `HEAD`, its reflog, and the branch it points at, those that exist (none outside a git
/// checkout).
pub fn revision_files(dir: &Path) -> Vec<String> {
    let Some(git_dir) = git(dir, &["rev-parse", "--absolute-git-dir"]) else {
        return Vec::new();
    };
    let mut files = vec![format!("{git_dir}/HEAD"), format!("{git_dir}/logs/HEAD")];
    let common = git(
        dir,
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    );
    let branch = git(dir, &["symbolic-ref", "-q", "HEAD"]);
    if let (Some(common), Some(branch)) = (common, branch) {
        files.push(format!("{common}/{branch}"));
        files.push(format!("{common}/packed-refs"));
    }
    // Cargo reruns a build script on every build while a file it watches is missing.
    files.retain(|file| Path::new(file).exists());
    files
}

/// The trimmed output of a successful `git -C dir ARGS`.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (output.status.success() && !text.is_empty()).then(|| text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_checkout_there_is_no_revision() {
        // A `.git` file naming a missing repository: git refuses the directory whatever its
        // parents are, as it would a package unpacked by `cargo install`.
        let dir = std::env::temp_dir().join(format!("heapworks-no-git-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(".git"), "gitdir: /nonexistent-heapworks-git-dir\n").unwrap();
        assert_eq!(describe(&dir), UNKNOWN);
        assert!(revision_files(&dir).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn inside_this_checkout_the_revision_is_a_commit() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let Some(revision) = git_revision(here) else {
            eprintln!("not a git checkout, or no git: nothing to check");
            return;
        };
        assert_eq!(revision.len(), 12, "{revision}");
        assert!(
            revision.chars().all(|c| c.is_ascii_hexdigit()),
            "{revision}"
        );
        assert!(revision_files(here).iter().any(|f| f.ends_with("/HEAD")));
    }
}
