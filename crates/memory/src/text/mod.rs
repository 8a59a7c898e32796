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
use std::io::Read;
use std::path::{Path, PathBuf};

/// Where a line came from: the file and its 1-based line number, for error messages.
pub(crate) struct Here {
    path: PathBuf,
    line: usize,
    /// Byte offset of the line in the file.
    offset: u64,
}

impl Here {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// 1-based number of the line last returned (0 before the first).
    pub(crate) fn line_no(&self) -> usize {
        self.line
    }

    /// Byte offset in the file where the line last returned starts.
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    pub(crate) fn error(&self, message: impl Into<String>) -> MemoryError {
        MemoryError::parse(&self.path, self.line, message)
    }
}

/// Line reader that counts lines, strips `\n`/`\r\n`, and refuses invalid UTF-8 with
/// the line number rather than panicking. Lines are handed out as slices of one reused
/// buffer (a values file has millions of lines: no copy or allocation per line).
pub(crate) struct Lines {
    reader: Box<dyn Read>,
    buf: Vec<u8>,
    /// Unread data is `buf[start..end]`; `buf[0]` is at byte `base` of the file.
    start: usize,
    base: u64,
    end: usize,
    eof: bool,
    here: Here,
    /// The last line read had no `\n`: XLA ends every line with one, so the file was cut.
    unterminated: bool,
}

/// Read size; a longer line grows the buffer to fit it.
const READ_CHUNK: usize = 1 << 20;

impl Lines {
    pub(crate) fn open(path: &Path) -> Result<Lines, MemoryError> {
        let file = File::open(path).map_err(|e| MemoryError::io(path, e))?;
        Ok(Lines::from_reader(path, Box::new(file)))
    }

    pub(crate) fn from_reader(path: &Path, reader: Box<dyn Read>) -> Lines {
        Lines { reader, buf: Vec::new(), start: 0, base: 0, end: 0, eof: false, here: Here { path: path.to_path_buf(), line: 0, offset: 0 }, unterminated: false }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.here.path
    }

    /// 1-based number of the line last returned (0 before the first).
    pub(crate) fn line_no(&self) -> usize {
        self.here.line
    }

    /// The next line, and where it is (for errors while the line is borrowed); `None`
    /// at the end of the file.
    pub(crate) fn next_line(&mut self) -> Result<Option<(&str, &Here)>, MemoryError> {
        let mut searched = self.start;
        let newline = loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[searched..self.end]) {
                break Some(searched + i);
            }
            searched = self.end;
            if self.eof {
                break None;
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.base += self.start as u64;
                searched -= self.start;
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let grown = (self.buf.len() * 2).max(READ_CHUNK);
                self.buf.resize(grown, 0);
            }
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(MemoryError::io(&self.here.path, e)),
            }
        };
        let (from, to) = match newline {
            Some(i) => {
                let line = (self.start, i);
                self.start = i + 1;
                line
            }
            None if self.start == self.end => return Ok(None),
            None => {
                let line = (self.start, self.end);
                self.start = self.end;
                line
            }
        };
        self.here.line += 1;
        self.here.offset = self.base + from as u64;
        self.unterminated = newline.is_none();
        let mut bytes = &self.buf[from..to];
        if newline.is_some() {
            if let Some(stripped) = bytes.strip_suffix(b"\r") {
                bytes = stripped;
            }
        }
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(Some((s, &self.here))),
            Err(_) => Err(self.here.error("not UTF-8 text (is this a binary file?)")),
        }
    }

    /// Read the next line into `out`. Returns `false` at the end of the file.
    pub(crate) fn next_into(&mut self, out: &mut String) -> Result<bool, MemoryError> {
        out.clear();
        match self.next_line()? {
            Some((line, _)) => {
                out.push_str(line);
                Ok(true)
            }
            None => Ok(false),
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
        self.here.error(message)
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

/// A value's shape index as the live-range file prints it: `{}` for a top-level value
/// (whose index is `""` in the buffer assignment).
pub(crate) fn printed_index(index: &str) -> &str {
    if index.is_empty() {
        "{}"
    } else {
        index
    }
}

/// The live-range file's key for a value: `name{index}`, `{}` for a top-level value.
pub(crate) fn live_range_key(instruction: &str, index: &str) -> String {
    let index = printed_index(index);
    let mut k = String::with_capacity(instruction.len() + index.len());
    k.push_str(instruction);
    k.push_str(index);
    k
}
