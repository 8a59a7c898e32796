//! Parsers for XLA's text memory dumps (`xla/service/dump.cc`):
//! `-buffer-assignment.txt`, `-buffer-assignment-values.txt`, `-live-range.txt`, and the
//! stack-frame tables at the top of the optimized HLO text. They stream line by line,
//! split on the fixed tokens of each grammar (no regexes: tuple shape lines reach
//! tens of KB), and report errors with file and line.

pub mod buffer_assignment;
pub mod instruction;
pub mod live_range;
pub mod stack_frames;
pub mod usage_report;
pub mod values;

use crate::error::MemoryError;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// Line reader that counts lines, strips `\n`/`\r\n`, and refuses invalid UTF-8 with
/// the line number rather than panicking.
pub(crate) struct Lines {
    reader: Box<dyn BufRead>,
    buf: Vec<u8>,
    line: usize,
    path: PathBuf,
    /// The last line read had no `\n`: XLA ends every line with one, so the file was cut.
    unterminated: bool,
}

impl Lines {
    pub(crate) fn open(path: &Path) -> Result<Lines, MemoryError> {
        let file = File::open(path).map_err(|e| MemoryError::io(path, e))?;
        Ok(Lines::from_reader(path, Box::new(BufReader::with_capacity(1 << 16, file))))
    }

    pub(crate) fn from_reader(path: &Path, reader: Box<dyn BufRead>) -> Lines {
        Lines { reader, buf: Vec::new(), line: 0, path: path.to_path_buf(), unterminated: false }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// 1-based number of the line last returned (0 before the first).
    pub(crate) fn line_no(&self) -> usize {
        self.line
    }

    /// Read the next line into `out`. Returns `false` at the end of the file.
    pub(crate) fn next_into(&mut self, out: &mut String) -> Result<bool, MemoryError> {
        {
            self.buf.clear();
            let n = self.reader.read_until(b'\n', &mut self.buf).map_err(|e| MemoryError::io(&self.path, e))?;
            if n == 0 {
                out.clear();
                return Ok(false);
            }
            self.line += 1;
            self.unterminated = self.buf.last() != Some(&b'\n');
            if self.buf.last() == Some(&b'\n') {
                self.buf.pop();
                if self.buf.last() == Some(&b'\r') {
                    self.buf.pop();
                }
            }
        }
        match std::str::from_utf8(&self.buf) {
            Ok(s) => {
                out.clear();
                out.push_str(s);
                Ok(true)
            }
            Err(_) => Err(MemoryError::parse(&self.path, self.line, "not UTF-8 text (is this a binary file?)")),
        }
    }

    /// At the end of the file: an error when its last line is cut (no final newline).
    pub(crate) fn check_complete(&self) -> Result<(), MemoryError> {
        if self.unterminated {
            return Err(self.error("the file ends in the middle of this line (truncated file?); XLA ends every line with a newline"));
        }
        Ok(())
    }

    pub(crate) fn error(&self, message: impl Into<String>) -> MemoryError {
        MemoryError::parse(&self.path, self.line, message)
    }
}

/// Parse a decimal u64 field, with a message naming what was expected.
pub(crate) fn parse_u64(s: &str, what: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| format!("expected {what} (an integer), found `{}`", clip(s)))
}

/// Shorten text quoted in error messages.
pub(crate) fn clip(s: &str) -> String {
    if s.chars().count() > 80 {
        let head: String = s.chars().take(77).collect();
        format!("{head}...")
    } else {
        s.to_string()
    }
}

/// Split `name{1,2}` into (`name`, `{1,2}`); a name without a trailing index gives `""`.
pub(crate) fn split_shape_index(s: &str) -> (&str, &str) {
    if s.ends_with('}') {
        if let Some(open) = s.rfind('{') {
            let inner = &s[open + 1..s.len() - 1];
            if inner.bytes().all(|b| b.is_ascii_digit() || b == b',') {
                return (&s[..open], &s[open..]);
            }
        }
    }
    (s, "")
}

/// The live-range file's key for a value: `name{index}`, `{}` for a top-level value.
pub(crate) fn live_range_key(instruction: &str, index: &str) -> String {
    let mut k = String::with_capacity(instruction.len() + index.len().max(2));
    k.push_str(instruction);
    k.push_str(if index.is_empty() { "{}" } else { index });
    k
}
