//! LEB128 varints and a bounds-checked reader for binary input.
//!
//! Invariants: [`Cursor`] never reads past its slice and never panics on any input; every
//! error it returns names the absolute byte offset where the item being read starts.

use crate::error::FormatError;

/// Appends `value` as an unsigned LEB128 varint (7 bits a byte, low bits first).
pub fn put(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads binary input front to back.
pub struct Cursor<'a> {
    data: &'a [u8],
    position: usize,
    /// Offset of `data[0]` in the whole input, for error messages.
    base: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over the whole input.
    pub fn new(data: &'a [u8]) -> Self {
        Self {
            data,
            position: 0,
            base: 0,
        }
    }

    /// Absolute offset of the next byte.
    pub fn offset(&self) -> usize {
        self.base + self.position
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.position
    }

    /// Whether all bytes were read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The bytes read so far (from the start of this cursor's slice).
    pub fn consumed(&self) -> &'a [u8] {
        &self.data[..self.position]
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.position..]
    }

    /// An error at the next byte.
    pub fn error(&self, message: impl Into<String>) -> FormatError {
        FormatError::at_byte(self.offset(), message)
    }

    /// Reads one byte.
    pub fn byte(&mut self, what: &str) -> Result<u8, FormatError> {
        let byte = *self
            .data
            .get(self.position)
            .ok_or_else(|| self.error(format!("unexpected end of data reading {what}")))?;
        self.position += 1;
        Ok(byte)
    }

    /// Reads a varint of at most 64 bits.
    pub fn varint(&mut self, what: &str) -> Result<u64, FormatError> {
        let start = self.offset();
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.byte(what)?;
            let bits = u64::from(byte & 0x7f);
            if shift == 63 && bits > 1 {
                break;
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(FormatError::at_byte(
            start,
            format!("{what} does not fit in 64 bits"),
        ))
    }

    /// Reads a varint that must be at most `limit`.
    pub fn varint_at_most(&mut self, limit: u64, what: &str) -> Result<u64, FormatError> {
        let start = self.offset();
        let value = self.varint(what)?;
        if value > limit {
            return Err(FormatError::at_byte(
                start,
                format!("{what} {value} exceeds {limit}"),
            ));
        }
        Ok(value)
    }

    /// Takes the next `length` bytes as a cursor of their own (offsets stay absolute).
    pub fn split(&mut self, length: usize, what: &str) -> Result<Cursor<'a>, FormatError> {
        if length > self.remaining() {
            return Err(self.error(format!(
                "{what} needs {length} bytes but only {} remain",
                self.remaining()
            )));
        }
        let part = Cursor {
            data: &self.data[self.position..self.position + length],
            position: 0,
            base: self.offset(),
        };
        self.position += length;
        Ok(part)
    }

    /// Reads 8 bytes as a little-endian integer.
    pub fn u64_le(&mut self, what: &str) -> Result<u64, FormatError> {
        let bytes = self.split(8, what)?.data;
        let mut array = [0u8; 8];
        array.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(array))
    }
}
