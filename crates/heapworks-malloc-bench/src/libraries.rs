//! The C mallocs of `bench --malloc` and where their libraries are: heapworks-malloc built
//! from this workspace, glibc's own malloc (nothing preloaded), and Debian's mimalloc,
//! jemalloc and tcmalloc. A library that is not there makes its column `missing` with the
//! reason and the package that provides it, never an error.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where Debian puts the x86-64 shared libraries.
const DEBIAN_LIB_DIR: &str = "/usr/lib/x86_64-linux-gnu";

heapworks_bench::registry! {
    /// One column of `bench --malloc`: its name (`heapworks` is the ratios' baseline) and,
    /// as its description, the library preloaded for it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum CMalloc {
        /// heapworks-malloc (`libheapworks_malloc.so`): every ratio is to it.
        Heapworks = ("heapworks", "libheapworks_malloc.so of this workspace"),
        /// The same library in its secure mode (`HEAPWORKS_SECURE=1`).
        HeapworksSecure = (
            "heapworks-secure",
            "libheapworks_malloc.so of this workspace, HEAPWORKS_SECURE=1"
        ),
        /// glibc's malloc: the process as it is, nothing preloaded.
        Glibc = ("glibc", "libc6 (nothing preloaded)"),
        /// Debian's `libmimalloc2.0`.
        Mimalloc = ("mimalloc", "libmimalloc2.0"),
        /// Debian's `libjemalloc2`.
        Jemalloc = ("jemalloc", "libjemalloc2"),
        /// Debian's `libtcmalloc-minimal4` (gperftools).
        Tcmalloc = ("tcmalloc", "libtcmalloc-minimal4"),
    }
}

impl CMalloc {
    /// The Debian package that provides the library (glibc: the C library itself).
    pub fn debian_package(self) -> Option<&'static str> {
        match self {
            CMalloc::Heapworks | CMalloc::HeapworksSecure => None,
            CMalloc::Glibc => Some("libc6"),
            CMalloc::Mimalloc => Some("libmimalloc2.0"),
            CMalloc::Jemalloc => Some("libjemalloc2"),
            CMalloc::Tcmalloc => Some("libtcmalloc-minimal4"),
        }
    }

    /// Where Debian installs a peer's library.
    fn debian_library(self) -> Option<PathBuf> {
        let file = match self {
            CMalloc::Heapworks | CMalloc::HeapworksSecure | CMalloc::Glibc => return None,
            CMalloc::Mimalloc => "libmimalloc.so.2",
            CMalloc::Jemalloc => "libjemalloc.so.2",
            CMalloc::Tcmalloc => "libtcmalloc_minimal.so.4",
        };
        Some(Path::new(DEBIAN_LIB_DIR).join(file))
    }
}

/// `--malloc-lib NAME=PATH`: a library to preload instead of the default one.
pub fn parse_override(text: &str) -> Result<(CMalloc, PathBuf), String> {
    let (name, path) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not NAME=PATH"))?;
    let malloc = CMalloc::from_name(name.trim()).ok_or_else(|| {
        let names: Vec<&str> = CMalloc::ALL.iter().map(|m| m.name()).collect();
        format!("unknown malloc `{name}` (one of {})", names.join(", "))
    })?;
    if malloc == CMalloc::Glibc {
        return Err("glibc is the malloc of the process itself; it is not preloaded".into());
    }
    Ok((malloc, PathBuf::from(path)))
}

/// A column that can run: its malloc, what to preload, and the version to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Library {
    /// Which malloc.
    pub malloc: CMalloc,
    /// The shared library to `LD_PRELOAD`; `None` for glibc.
    pub preload: Option<PathBuf>,
    /// Package and version, or the path of an overriding library.
    pub version: String,
}

impl Library {
    /// Sets up `command` to run under this malloc: `LD_PRELOAD` set, or removed for glibc;
    /// heapworks-malloc's secure mode on for its secure column only.
    pub fn apply<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        match &self.preload {
            Some(path) => command.env("LD_PRELOAD", path),
            None => command.env_remove("LD_PRELOAD"),
        };
        match self.malloc {
            CMalloc::HeapworksSecure => command.env("HEAPWORKS_SECURE", "1"),
            _ => command.env_remove("HEAPWORKS_SECURE"),
        }
    }
}

/// The columns of a run: those that can run, and those that cannot with the reason.
#[derive(Debug, Clone, Default)]
pub struct Lineup {
    /// Columns with their libraries, in report order.
    pub present: Vec<Library>,
    /// Columns whose library is missing, with why (`missing: …`).
    pub missing: Vec<(CMalloc, String)>,
}

impl Lineup {
    /// Finds the library of every column of `columns`, building heapworks-malloc when its
    /// library is not overridden.
    pub fn find(columns: &[CMalloc], overrides: &[(CMalloc, PathBuf)]) -> Self {
        let mut lineup = Self::default();
        for &malloc in columns {
            let chosen = overrides.iter().rev().find(|(m, _)| *m == malloc);
            match locate(malloc, chosen.map(|(_, path)| path.as_path())) {
                Ok(library) => lineup.present.push(library),
                Err(why) => lineup.missing.push((malloc, format!("missing: {why}"))),
            }
        }
        lineup
    }

    /// Copies every preloaded library into `dir` and preloads the copies from then on, so that
    /// a library rebuilt or replaced while the run goes on (cargo builds heapworks-malloc into
    /// the target directory this run reads it from) cannot change what later trials load; a
    /// library that cannot be copied makes its column missing.
    pub fn pinned(self, dir: &Path) -> Self {
        let mut pinned = Self {
            present: Vec::new(),
            missing: self.missing,
        };
        for library in self.present {
            match pin(&library, dir) {
                Ok(preload) => pinned.present.push(Library { preload, ..library }),
                Err(why) => pinned
                    .missing
                    .push((library.malloc, format!("missing: {why}"))),
            }
        }
        pinned.missing.sort_by_key(|(malloc, _)| *malloc);
        pinned
    }

    /// `(name, version)` of every column, missing ones included, in report order.
    pub fn versions(&self) -> Vec<(String, String)> {
        let mut versions: Vec<(CMalloc, String)> = self
            .present
            .iter()
            .map(|l| (l.malloc, l.version.clone()))
            .chain(
                self.missing
                    .iter()
                    .map(|(m, _)| (*m, format!("{m} missing"))),
            )
            .collect();
        versions.sort();
        versions
            .into_iter()
            .map(|(m, v)| (m.name().to_string(), v))
            .collect()
    }
}

/// A copy of `library`'s preload in `dir/<malloc>/`, under its own file name.
fn pin(library: &Library, dir: &Path) -> Result<Option<PathBuf>, String> {
    let Some(preload) = &library.preload else {
        return Ok(None);
    };
    let dir = dir.join(library.malloc.name());
    let copy = dir.join(preload.file_name().unwrap_or(preload.as_os_str()));
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::copy(preload, &copy))
        .map_err(|e| {
            format!(
                "cannot copy {} to {}: {e}",
                preload.display(),
                copy.display()
            )
        })?;
    Ok(Some(copy))
}

/// The library of `malloc`: `chosen` when given, else the default one.
fn locate(malloc: CMalloc, chosen: Option<&Path>) -> Result<Library, String> {
    let preload = match (malloc, chosen) {
        (CMalloc::Glibc, _) => None,
        (_, Some(path)) => Some(existing(path, None)?),
        (CMalloc::Heapworks | CMalloc::HeapworksSecure, None) => Some(build_heapworks()?),
        (peer, None) => {
            let path = peer.debian_library().expect("a peer has a Debian library");
            Some(existing(&path, peer.debian_package())?)
        }
    };
    let version = match (malloc, chosen) {
        (_, Some(path)) => format!("{malloc} {}", path.display()),
        (CMalloc::Heapworks, None) => "heapworks-malloc (built from this workspace)".into(),
        (CMalloc::HeapworksSecure, None) => {
            "heapworks-malloc (built from this workspace), HEAPWORKS_SECURE=1".into()
        }
        (_, None) => debian_version(malloc),
    };
    Ok(Library {
        malloc,
        preload,
        version,
    })
}

/// `path` made absolute (programs run in other directories) if it is a file; else why not,
/// with the package to install.
fn existing(path: &Path, package: Option<&str>) -> Result<PathBuf, String> {
    if path.is_file() {
        return std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()));
    }
    let hint = package.map_or_else(String::new, |p| {
        format!(" (Debian/Ubuntu: apt-get install {p})")
    });
    Err(format!("{} not found{hint}", path.display()))
}

/// `malloc`'s Debian package and its installed version, e.g. `libjemalloc2 5.3.0-1`.
fn debian_version(malloc: CMalloc) -> String {
    let Some(package) = malloc.debian_package() else {
        return malloc.name().to_string();
    };
    let version = Command::new("dpkg-query")
        .args(["-W", "-f=${Version}", package])
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string());
    match version {
        Some(version) if !version.is_empty() => format!("{malloc} ({package} {version})"),
        _ => format!("{malloc} ({package})"),
    }
}

/// The cargo target directory the running executable was built into (`<target>/<profile>/`,
/// or `<target>/<profile>/deps/` for a test).
pub fn target_dir() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot locate this executable: {e}"))?;
    let mut profile_dir = exe.parent().unwrap_or(Path::new("/"));
    if profile_dir.ends_with("deps") {
        profile_dir = profile_dir.parent().unwrap_or(Path::new("/"));
    }
    profile_dir
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("{} is not in a cargo target directory", exe.display()))
}

/// Builds `libheapworks_malloc.so` of this workspace as shipped (cargo profile `malloc`:
/// release with `panic = "abort"`) with cargo (a no-op when it is up to date) into the target
/// directory of the running executable, and returns its path. When cargo cannot build it, an
/// existing library is used with a warning.
fn build_heapworks() -> Result<PathBuf, String> {
    let target = target_dir()?;
    let library = target.join("malloc").join("libheapworks_malloc.so");
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    let built = Command::new(cargo)
        .args([
            "build",
            "--profile",
            "malloc",
            "-p",
            "heapworks-malloc",
            "--lib",
        ])
        .arg("--manifest-path")
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target)
        .status();
    let failure = match built {
        Ok(status) if status.success() => return existing(&library, None),
        Ok(status) => format!("cargo build failed ({status})"),
        Err(error) => format!("cannot run cargo: {error}"),
    };
    if library.is_file() {
        eprintln!(
            "warning: {failure}; using the existing {}",
            library.display()
        );
        return Ok(library);
    }
    Err(format!(
        "{} is not built and {failure}; build it with `cargo build --profile malloc \
         -p heapworks-malloc`, or name a library with --malloc-lib heapworks=PATH",
        library.display()
    ))
}
