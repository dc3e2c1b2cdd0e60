//! Reading input files whole, up to a limit.
//!
//! Invariant: [`read`] never holds more than `limit` bytes of a file (and one read buffer),
//! whatever the file is: a regular file longer than the limit is refused before it is read; a
//! pipe, or a device that never ends (`/dev/zero`), is refused once it passed the limit. The
//! refusal is an [`io::ErrorKind::InvalidData`] error that names the limit.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Bytes read at a time.
const CHUNK: usize = 1 << 16;

/// The whole of the file at `path`, if it holds at most `limit` bytes; `what` names the file
/// in the error (e.g. "a trace").
pub fn read(path: &Path, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    let too_large = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than the {limit} bytes {what} may have"),
        )
    };
    let mut file = File::open(path)?;
    let metadata = file.metadata()?;
    if metadata.is_file() && metadata.len() > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let read = match file.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        if (bytes.len() + read) as u64 > limit {
            return Err(too_large());
        }
        bytes.extend_from_slice(&chunk[..read]);
    }
}
