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
//! streamed, checked for structure, and only the wanted values' labels are kept.

use super::buffer_assignment::parse_value_ref;
use super::instruction::{parse_instruction, InstructionMeta};
use super::{clip, parse_u64, Lines};
use crate::error::MemoryError;
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, Default)]
pub struct ValuesScan {
    pub total_bytes_used: Option<u64>,
    /// Labels of the wanted values, by value id.
    pub meta: HashMap<u64, InstructionMeta>,
    pub value_count: usize,
}

/// Scan a values file. `is_known(id)` says whether the buffer assignment has the value
/// (an unknown id means files from different compilations); `is_wanted(id)` selects
/// whose labels to keep.
pub fn scan(path: &Path, is_known: &dyn Fn(u64) -> bool, is_wanted: &dyn Fn(u64) -> bool) -> Result<ValuesScan, MemoryError> {
    let mut lines = Lines::open(path)?;
    let mut out = ValuesScan::default();
    // Header: optional blank lines, `Total bytes used:`, then `Used values:`. In the older
    // layout the whole buffer assignment comes first; skip to the section.
    let mut saw_used_values = false;
    let mut buf = String::new();
    while lines.next_into(&mut buf)? {
        let line = buf.as_str();
        if let Some(rest) = line.strip_prefix("Total bytes used: ") {
            let n = rest.split(' ').next().unwrap_or("");
            out.total_bytes_used = Some(parse_u64(n, "total bytes").map_err(|m| lines.error(m))?);
        } else if line == "Used values:" {
            saw_used_values = true;
            break;
        }
    }
    if !saw_used_values {
        return Err(lines.error("no `Used values:` section (truncated file, or not a -buffer-assignment-values.txt)"));
    }
    // Current block: (value id, line of its header, saw `from instruction:`).
    let mut current: Option<(u64, usize, bool)> = None;
    let mut buf = String::new();
    while lines.next_into(&mut buf)? {
        let line = buf.as_str();
        if let Some(inner) = line.strip_prefix('<') {
            if let Some((id, header_line, false)) = current {
                return Err(MemoryError::parse(lines.path(), header_line, format!("value {id} has no ` from instruction:` line")));
            }
            let inner = inner.strip_suffix('>').ok_or_else(|| lines.error(format!("value header does not end with `>`: `{}`", clip(line))))?;
            let v = parse_value_ref(inner).map_err(|m| lines.error(m))?;
            if !is_known(v.id) {
                return Err(MemoryError::inconsistent(
                    lines.path(),
                    Some(lines.line_no()),
                    format!("value {} ({}) is not in the buffer assignment; are these files from different compilations?", v.id, v.instruction),
                ));
            }
            out.value_count += 1;
            current = Some((v.id, lines.line_no(), false));
        } else if let Some(text) = line.strip_prefix(" from instruction: ") {
            let Some((id, _, done)) = current.as_mut() else {
                return Err(lines.error("` from instruction:` before any value"));
            };
            *done = true;
            if is_wanted(*id) {
                out.meta.insert(*id, parse_instruction(text));
            }
        } else if line.starts_with("  ") || line == " positions:" || line == " uses:" || line.starts_with(" uses are") || line.is_empty() {
            if current.is_none() && !line.is_empty() {
                return Err(lines.error("value detail before any value"));
            }
        } else {
            return Err(lines.error(format!("unexpected line in values: `{}`", clip(line))));
        }
    }
    if let Some((id, header_line, false)) = current {
        return Err(MemoryError::parse(lines.path(), header_line, format!("value {id} has no ` from instruction:` line (truncated file?)")));
    }
    lines.check_complete()?;
    Ok(out)
}
