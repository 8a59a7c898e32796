//! `-buffer-assignment-values.txt` (`BufferAssignment::ValuesToString`), or the
//! `Used values:` section that older XLA versions put inside `-buffer-assignment.txt`.
//!
//! ```text
//! Total bytes used: 16382204 (15.62MiB)
//!
//! Used values:
//! <179 params_0__0_.1 @0>
//!  positions:
//!   params_0__0_.1
//!  uses:
//!   ynn_fusion.6, operand 1
//!  from instruction: %params_0__0_.1 = f32[512,1024]{1,0} parameter(0), metadata={op_name="params[0][0]"}
//! ```
//! This is the biggest file of a dump (it repeats each defining instruction), so it is
//! streamed once, checked for structure, and indexed: only the labels a report shows are
//! parsed, read back from their offsets.

use super::buffer_assignment::split_value_ref;
use super::instruction::{parse_instruction, InstructionMeta};
use super::{clip, parse_u64, Lines};
use crate::error::MemoryError;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Where each value's ` from instruction:` line lies in a values file, read in one pass
/// (on its own thread, while the other files parse); the few labels a report shows are
/// then read from their offsets.
#[derive(Debug, Clone, Default)]
pub struct ValuesIndex {
    pub path: PathBuf,
    pub total_bytes_used: Option<u64>,
    /// In file order.
    pub values: Vec<ValueLine>,
}

#[derive(Debug, Clone, Copy)]
pub struct ValueLine {
    pub id: u64,
    /// Line of the value's `<id name>` header.
    pub line: usize,
    /// Byte offset of its ` from instruction: ` line.
    pub at: u64,
}

const FROM_INSTRUCTION: &str = " from instruction: ";

/// Index a values file, checking its structure.
pub fn index(path: &Path) -> Result<ValuesIndex, MemoryError> {
    let mut lines = Lines::open(path)?;
    let mut out = ValuesIndex { path: path.to_path_buf(), ..Default::default() };
    // Header: optional blank lines, `Total bytes used:`, then `Used values:`. In the older
    // layout the whole buffer assignment comes first; skip to the section.
    let mut saw_used_values = false;
    while let Some((line, here)) = lines.next_line()? {
        if let Some(rest) = line.strip_prefix("Total bytes used: ") {
            let n = rest.split(' ').next().unwrap_or("");
            out.total_bytes_used = Some(parse_u64(n, "total bytes").map_err(|m| here.error(m))?);
        } else if line == "Used values:" {
            saw_used_values = true;
            break;
        }
    }
    if !saw_used_values {
        return Err(lines.error("no `Used values:` section (truncated file, or not a -buffer-assignment-values.txt)"));
    }
    // Current block: (value id, line of its header, offset of `from instruction:`).
    let mut current: Option<(u64, usize, Option<u64>)> = None;
    let mut finish = |current: Option<(u64, usize, Option<u64>)>, path: &Path, truncated: bool| -> Result<(), MemoryError> {
        match current {
            Some((id, line, Some(at))) => {
                out.values.push(ValueLine { id, line, at });
                Ok(())
            }
            Some((id, line, None)) => {
                Err(MemoryError::parse(path, line, format!("value {id} has no ` from instruction:` line{}", if truncated { " (truncated file?)" } else { "" })))
            }
            None => Ok(()),
        }
    };
    while let Some((line, here)) = lines.next_line()? {
        if let Some(inner) = line.strip_prefix('<') {
            finish(current.take(), here.path(), false)?;
            let inner = inner.strip_suffix('>').ok_or_else(|| here.error(format!("value header does not end with `>`: `{}`", clip(line))))?;
            let (id, _, _, _) = split_value_ref(inner).map_err(|m| here.error(m))?;
            current = Some((id, here.line_no(), None));
        } else if line.starts_with(FROM_INSTRUCTION) {
            let Some((_, _, at)) = current.as_mut() else {
                return Err(here.error("` from instruction:` before any value"));
            };
            *at = Some(here.offset());
        } else if line.starts_with("  ") || line == " positions:" || line == " uses:" || line.starts_with(" uses are") || line.is_empty() {
            if current.is_none() && !line.is_empty() {
                return Err(here.error("value detail before any value"));
            }
        } else {
            return Err(here.error(format!("unexpected line in values: `{}`", clip(line))));
        }
    }
    finish(current, lines.path(), true)?;
    lines.check_complete()?;
    Ok(out)
}

impl ValuesIndex {
    /// Every value listed must be in the buffer assignment; one that is not means files
    /// from different compilations.
    pub fn check_known(&self, is_known: impl Fn(u64) -> bool) -> Result<(), MemoryError> {
        match self.values.iter().find(|v| !is_known(v.id)) {
            Some(v) => Err(MemoryError::inconsistent(
                &self.path,
                Some(v.line),
                format!("value {} is not in the buffer assignment; are these files from different compilations?", v.id),
            )),
            None => Ok(()),
        }
    }

    /// The defining instructions of the `wanted` values, read from their offsets.
    pub fn labels(&self, wanted: &HashSet<u64>) -> Result<HashMap<u64, InstructionMeta>, MemoryError> {
        use std::io::{BufRead, BufReader, Seek, SeekFrom};
        let mut out = HashMap::new();
        let mut picked: Vec<&ValueLine> = self.values.iter().filter(|v| wanted.contains(&v.id)).collect();
        if picked.is_empty() {
            return Ok(out);
        }
        picked.sort_unstable_by_key(|v| v.at);
        let file = std::fs::File::open(&self.path).map_err(|e| MemoryError::io(&self.path, e))?;
        let mut reader = BufReader::with_capacity(1 << 14, file);
        let mut line = Vec::new();
        for v in picked {
            reader.seek(SeekFrom::Start(v.at)).map_err(|e| MemoryError::io(&self.path, e))?;
            line.clear();
            reader.read_until(b'\n', &mut line).map_err(|e| MemoryError::io(&self.path, e))?;
            let text = std::str::from_utf8(&line).ok().map(|t| t.trim_end_matches(['\n', '\r'])).and_then(|t| t.strip_prefix(FROM_INSTRUCTION));
            let Some(text) = text else {
                return Err(MemoryError::inconsistent(&self.path, Some(v.line), format!("value {}'s ` from instruction:` line moved: the file changed while it was read", v.id)));
            };
            out.insert(v.id, parse_instruction(text));
        }
        Ok(out)
    }
}
