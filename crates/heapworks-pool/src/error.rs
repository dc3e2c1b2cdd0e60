//! Why a pool call failed. Every failure of the pool is one of these values, never a panic,
//! and none of them leaves the pool unusable: a failed `get` changes no cached buffer.

use std::fmt;
use std::io;

/// A failed pool call.
#[derive(Debug)]
pub enum PoolError {
    /// `count × size_of::<T>()` does not fit in `usize`.
    SizeOverflow {
        /// Elements asked for.
        count: usize,
        /// Bytes per element.
        element_size: usize,
    },
    /// The request is larger than any buffer the pool can describe (above `isize::MAX` bytes
    /// once rounded up to its size class).
    TooLarge {
        /// Bytes asked for.
        len: usize,
    },
    /// The process heap refused the allocation.
    OutOfMemory {
        /// Bytes asked for (the size class).
        len: usize,
    },
    /// A system call of a backend failed (`mmap`, `memfd_create`, `ftruncate`, `fstat`).
    Os {
        /// The call that failed.
        operation: &'static str,
        /// Bytes the call was for.
        len: usize,
        /// The operating system's error.
        source: io::Error,
    },
    /// A shared-memory handle made by another pool was given to this one.
    ForeignHandle {
        /// The pool that made the handle.
        handle_pool: u64,
        /// The pool it was given to.
        pool: u64,
    },
    /// A shared-memory handle that cannot be mapped: its descriptor is closed, or the file is
    /// shorter than the handle claims.
    BadHandle {
        /// What is wrong with it.
        reason: String,
    },
    /// An array shape whose element count differs from the buffer's length.
    #[cfg(feature = "ndarray")]
    Shape {
        /// Elements the shape needs.
        shape_len: usize,
        /// Elements of the buffer.
        buffer_len: usize,
    },
}

impl PoolError {
    /// The error of system call `operation` for `len` bytes, from `errno`.
    pub(crate) fn last_os(operation: &'static str, len: usize) -> Self {
        Self::os(operation, len, io::Error::last_os_error())
    }

    /// The error `source` of system call `operation` for `len` bytes.
    pub(crate) fn os(operation: &'static str, len: usize, source: io::Error) -> Self {
        Self::Os {
            operation,
            len,
            source,
        }
    }
}

impl fmt::Display for PoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SizeOverflow {
                count,
                element_size,
            } => write!(
                f,
                "{count} elements of {element_size} B overflow the address space"
            ),
            Self::TooLarge { len } => write!(f, "a buffer of {len} B is too large to pool"),
            Self::OutOfMemory { len } => write!(f, "out of memory allocating {len} B"),
            Self::Os {
                operation,
                len,
                source,
            } => write!(f, "{operation} failed for a buffer of {len} B: {source}"),
            Self::ForeignHandle { handle_pool, pool } => write!(
                f,
                "the shared-memory handle belongs to pool {handle_pool}, not to pool {pool}"
            ),
            Self::BadHandle { reason } => write!(f, "bad shared-memory handle: {reason}"),
            #[cfg(feature = "ndarray")]
            Self::Shape {
                shape_len,
                buffer_len,
            } => write!(
                f,
                "a shape of {shape_len} elements does not fit a buffer of {buffer_len}"
            ),
        }
    }
}

impl std::error::Error for PoolError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Os { source, .. } => Some(source),
            _ => None,
        }
    }
}
