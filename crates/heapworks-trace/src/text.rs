//! The text script format of seed 003, extended.
//!
//! One request a line, fields separated by spaces or tabs:
//!
//! ```text
//! a <id> <size>           malloc                     (seed 003)
//! r <id> <size>           realloc                    (seed 003)
//! f <id>                  free                       (seed 003)
//! c <id> <size>           calloc, size in bytes      (extension)
//! m <id> <size> <align>   aligned allocation         (extension)
//! t <thread>              later requests come from this thread (extension; default 0)
//! # ...                   comment; blank lines are ignored
//! ```
//!
//! A seed 003 script is read as it is, and a single-threaded trace made only of `a`, `r`, `f`
//! is written in seed 003's format exactly, so the extension is backward compatible. The
//! comment lines before the first request are the trace's notes (one leading space after `#`
//! is not part of the note); other comments, and comments after a request on its line, are
//! dropped. Line order is the global order of requests.
//!
//! Invariant: [`parse`] of [`write`](fn@write)'s output gives back an equal [`Trace`]; every error
//! names its 1-based line and quotes what was found there; a script is refused beyond the
//! model's bounds (requests, threads, ids, and [`MAX_NOTES`] leading comment lines).

use crate::error::FormatError;
use crate::model::{check_align, check_id, Op, OpKind, Trace, MAX_NOTES};
use std::io::{self, Write};

/// Parses a script given as bytes (it must be UTF-8).
pub fn parse_bytes(bytes: &[u8]) -> Result<Trace, FormatError> {
    let text = std::str::from_utf8(bytes).map_err(|error| {
        let valid = &bytes[..error.valid_up_to()];
        let line = valid.iter().filter(|&&byte| byte == b'\n').count() + 1;
        FormatError::at_line(line, "not UTF-8 text")
    })?;
    parse(text)
}

/// Parses a script.
pub fn parse(text: &str) -> Result<Trace, FormatError> {
    let mut parser = Parser {
        trace: Trace::new(),
        thread: 0,
    };
    for (index, line) in text.split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        parser
            .line(line)
            .map_err(|message| FormatError::at_line(index + 1, message))?;
    }
    Ok(parser.trace)
}

struct Parser {
    trace: Trace,
    thread: u32,
}

impl Parser {
    fn line(&mut self, line: &str) -> Result<(), String> {
        if let Some(comment) = line.trim_start().strip_prefix('#') {
            if self.trace.is_empty() {
                if self.trace.notes().len() == MAX_NOTES {
                    return Err(format!(
                        "more than {MAX_NOTES} comment lines before the first request"
                    ));
                }
                self.trace
                    .add_note(comment.strip_prefix(' ').unwrap_or(comment));
            }
            return Ok(());
        }
        let request = line.split('#').next().unwrap_or_default();
        let fields: Vec<&str> = request.split_ascii_whitespace().collect();
        match fields.as_slice() {
            [] => Ok(()),
            ["t", rest @ ..] => self.set_thread(rest),
            [letter, rest @ ..] => self.request(letter, rest),
        }
    }

    fn set_thread(&mut self, fields: &[&str]) -> Result<(), String> {
        let [thread] = fields else {
            return Err(wrong_field_count("t", &["thread"], fields));
        };
        let thread = number(thread, "thread")?;
        self.thread = u32::try_from(thread)
            .map_err(|_| format!("thread {thread} is larger than {}", u32::MAX))?;
        Ok(())
    }

    fn request(&mut self, letter: &str, fields: &[&str]) -> Result<(), String> {
        let names: &[&str] = match letter {
            "a" | "c" | "r" => &["id", "size"],
            "f" => &["id"],
            "m" => &["id", "size", "align"],
            other => {
                return Err(format!(
                    "unknown request `{other}`: expected a, r, f, c, m or t"
                ))
            }
        };
        if fields.len() != names.len() {
            return Err(wrong_field_count(letter, names, fields));
        }
        let values = fields
            .iter()
            .zip(names)
            .map(|(field, name)| number(field, name))
            .collect::<Result<Vec<u64>, String>>()?;
        let id = check_id(values[0]).map_err(|invalid| invalid.to_string())?;
        let size = values.get(1).copied().unwrap_or(0);
        let kind = match letter {
            "a" => OpKind::Malloc { size },
            "c" => OpKind::Calloc { size },
            "r" => OpKind::Realloc { size },
            "f" => OpKind::Free,
            _ => OpKind::Memalign {
                size,
                align: check_align(values[2]).map_err(|invalid| invalid.to_string())?,
            },
        };
        let thread = self.thread;
        self.trace
            .push(Op { thread, id, kind })
            .map_err(|invalid| invalid.to_string())
    }
}

fn wrong_field_count(letter: &str, names: &[&str], fields: &[&str]) -> String {
    format!(
        "`{letter}` takes {} field(s) ({}), found {}: `{}`",
        names.len(),
        names.join(" "),
        fields.len(),
        fields.join(" ")
    )
}

fn number(field: &str, name: &str) -> Result<u64, String> {
    field
        .parse()
        .map_err(|_| format!("{name} `{field}` is not a non-negative decimal number"))
}

/// Writes `trace` as a script.
pub fn write(trace: &Trace, out: &mut impl Write) -> io::Result<()> {
    for note in trace.notes() {
        if note.is_empty() {
            writeln!(out, "#")?;
        } else {
            writeln!(out, "# {note}")?;
        }
    }
    let mut thread = 0;
    for op in trace.ops() {
        if op.thread != thread {
            thread = op.thread;
            writeln!(out, "t {thread}")?;
        }
        write_op(op, out)?;
    }
    Ok(())
}

fn write_op(op: &Op, out: &mut impl Write) -> io::Result<()> {
    let id = op.id;
    match op.kind {
        OpKind::Malloc { size } => writeln!(out, "a {id} {size}"),
        OpKind::Calloc { size } => writeln!(out, "c {id} {size}"),
        OpKind::Memalign { size, align } => writeln!(out, "m {id} {size} {align}"),
        OpKind::Realloc { size } => writeln!(out, "r {id} {size}"),
        OpKind::Free => writeln!(out, "f {id}"),
    }
}

/// `trace` as a script.
pub fn to_string(trace: &Trace) -> String {
    let mut out = Vec::new();
    write(trace, &mut out).expect("writing to a Vec cannot fail");
    String::from_utf8(out).expect("the writer emits UTF-8 only")
}
