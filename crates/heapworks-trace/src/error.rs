//! Errors from reading traces and raw capture files.
//!
//! Invariant: every [`FormatError`] names where the input went wrong — a byte offset for
//! binary input, a line (and the offending text) for text scripts — so a user can find it.

use std::fmt;

/// Where in its input a [`FormatError`] was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// Byte offset from the start of binary input.
    Byte(u64),
    /// 1-based line of a text script.
    Line(u64),
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Position::Byte(offset) => write!(f, "byte offset {offset}"),
            Position::Line(line) => write!(f, "line {line}"),
        }
    }
}

/// Input that is not a well-formed trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    /// Where the problem is.
    pub position: Position,
    /// What is wrong there.
    pub message: String,
}

impl FormatError {
    /// An error at byte `offset`.
    pub fn at_byte(offset: usize, message: impl Into<String>) -> Self {
        Self {
            position: Position::Byte(offset as u64),
            message: message.into(),
        }
    }

    /// An error on 1-based `line`.
    pub fn at_line(line: usize, message: impl Into<String>) -> Self {
        Self {
            position: Position::Line(line as u64),
            message: message.into(),
        }
    }
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.position, self.message)
    }
}

impl std::error::Error for FormatError {}

/// Failure to read or write a trace file.
#[derive(Debug)]
pub enum TraceIoError {
    /// The file could not be read or written.
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file's contents are not a trace.
    Format {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong, and where.
        source: FormatError,
    },
    /// A directory read as a corpus holds no trace file.
    NoTraces {
        /// The directory.
        dir: std::path::PathBuf,
    },
}

impl fmt::Display for TraceIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceIoError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            TraceIoError::Format { path, source } => write!(f, "{}: {source}", path.display()),
            TraceIoError::NoTraces { dir } => write!(
                f,
                "{}: no trace file (.hwt, .script, .txt or .rep) in the directory",
                dir.display()
            ),
        }
    }
}

impl std::error::Error for TraceIoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TraceIoError::Io { source, .. } => Some(source),
            TraceIoError::Format { source, .. } => Some(source),
            TraceIoError::NoTraces { .. } => None,
        }
    }
}
