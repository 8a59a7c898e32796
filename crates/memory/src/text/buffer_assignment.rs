//! `-buffer-assignment.txt` = `BufferAssignment::ToString()`.
//!
//! ```text
//! BufferAssignment:
//! allocation 1: size 4194304, parameter 2, shape |f32[1024,1024]| at ShapeIndex {}:
//!  value: <184 params_1__0_.1 @0> (size=4194304,offset=0): f32[1024,1024]{1,0}
//! allocation 44: size 3166208, preallocated-temp:
//! ```
//! Older XLA versions append `Total bytes used: N (H)` and a `Used values:` section to
//! this same file and may print allocation sizes human-readable (`size 4.00MiB`).

use super::{clip, parse_u64, split_shape_index, Lines};
use crate::error::MemoryError;
use std::path::Path;

#[derive(Debug, Clone, Default)]
pub struct TextAllocation {
    pub index: u64,
    pub size: u64,
    /// False when the size was printed human-readable (older XLA) and is rounded.
    pub size_exact: bool,
    pub color: u64,
    pub parameter: Option<u64>,
    pub parameter_shape_index: String,
    pub output_shape: bool,
    pub constant: bool,
    pub thread_local: bool,
    pub maybe_live_out: bool,
    pub preallocated_temp: bool,
    pub values: Vec<TextValue>,
    pub line: usize,
}

#[derive(Debug, Clone, Default)]
pub struct TextValue {
    pub id: u64,
    pub instruction: String,
    /// `""` or `{i,j}`.
    pub index: String,
    pub phi: bool,
    pub color: u64,
    pub size: u64,
    pub offset: u64,
    pub shape: String,
    pub line: usize,
}

#[derive(Debug, Default)]
pub struct BufferAssignmentText {
    pub allocations: Vec<TextAllocation>,
    /// `Total bytes used:` when the file carries it (older layout).
    pub total_bytes_used: Option<u64>,
    /// True when the file itself holds the `Used values:` section (older layout).
    pub has_embedded_values: bool,
}

pub fn parse_file(path: &Path) -> Result<BufferAssignmentText, MemoryError> {
    let mut lines = Lines::open(path)?;
    parse(&mut lines)
}

pub(crate) fn parse(lines: &mut Lines) -> Result<BufferAssignmentText, MemoryError> {
    let mut out = BufferAssignmentText::default();
    let mut first = String::new();
    if !lines.next_into(&mut first)? {
        return Err(lines.error("empty file; expected `BufferAssignment:`"));
    }
    if first != "BufferAssignment:" {
        return Err(lines.error(format!("expected `BufferAssignment:` (is this a -buffer-assignment.txt file?), found `{}`", clip(&first))));
    }
    let mut at_end = true;
    while let Some((line, here)) = lines.next_line()? {
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("allocation ") {
            let alloc = parse_header(rest).map_err(|m| here.error(m))?;
            out.allocations.push(TextAllocation { line: here.line_no(), ..alloc });
        } else if let Some(rest) = line.strip_prefix(" value: ") {
            let value = parse_value_line(rest).map_err(|m| here.error(m))?;
            let Some(alloc) = out.allocations.last_mut() else {
                return Err(here.error("value line before any allocation"));
            };
            alloc.values.push(TextValue { line: here.line_no(), ..value });
        } else if let Some(rest) = line.strip_prefix("Total bytes used: ") {
            let n = rest.split(' ').next().unwrap_or("");
            out.total_bytes_used = Some(parse_u64(n, "total bytes").map_err(|m| here.error(m))?);
        } else if line == "Used values:" {
            out.has_embedded_values = true;
            at_end = false;
            break;
        } else {
            return Err(here.error(format!("unexpected line in buffer assignment: `{}`", clip(line))));
        }
    }
    if at_end {
        // A value line cut inside its shape still parses: only the missing newline tells.
        lines.check_complete()?;
    }
    Ok(out)
}

/// `0: size 4194304, parameter 1, shape |f32[4096,256]| at ShapeIndex {}, maybe-live-out:`
/// (after `allocation `). Split on the fixed keywords, never on bare commas: shapes and
/// shape indices contain commas.
fn parse_header(rest: &str) -> Result<TextAllocation, String> {
    let rest = rest.strip_suffix(':').ok_or("allocation header does not end with `:` (truncated line?)")?;
    let (index, rest) = rest.split_once(": size ").ok_or("expected `allocation N: size S`")?;
    let mut a = TextAllocation { index: parse_u64(index, "allocation index")?, ..Default::default() };
    let (size_text, mut rest) = match rest.find(", ") {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    match size_text.parse::<u64>() {
        Ok(n) => {
            a.size = n;
            a.size_exact = true;
        }
        Err(_) => {
            let printed = oomdoc_units::parse_size(size_text).ok_or_else(|| format!("allocation size `{}` is not a number of bytes", clip(size_text)))?;
            a.size = printed.bytes;
            a.size_exact = printed.exact;
        }
    }
    while !rest.is_empty() {
        let r = rest.strip_prefix(", ").ok_or_else(|| format!("expected `, ` in allocation header at `{}`", clip(rest)))?;
        if let Some(r) = r.strip_prefix("parameter ") {
            let end = r.find(',').unwrap_or(r.len());
            a.parameter = Some(parse_u64(&r[..end], "parameter number")?);
            let r = &r[end..];
            // `, shape |S| at ShapeIndex {i}`
            let r = r.strip_prefix(", shape |").ok_or("expected `, shape |` after the parameter number")?;
            let close = r.find('|').ok_or("unterminated parameter shape `|...|`")?;
            let r = &r[close + 1..];
            let r = r.strip_prefix(" at ShapeIndex {").ok_or("expected ` at ShapeIndex {` after the parameter shape")?;
            let close = r.find('}').ok_or("unterminated ShapeIndex")?;
            a.parameter_shape_index = format!("{{{}}}", &r[..close]);
            rest = &r[close + 1..];
        } else if let Some(r) = r.strip_prefix("output shape is |") {
            let close = r.find('|').ok_or("unterminated output shape `|...|`")?;
            a.output_shape = true;
            rest = &r[close + 1..];
        } else if let Some(r) = r.strip_prefix("color ") {
            let end = r.find(',').unwrap_or(r.len());
            a.color = parse_u64(&r[..end], "color")?;
            rest = &r[end..];
        } else {
            let end = r.find(", ").unwrap_or(r.len());
            match &r[..end] {
                "constant" => a.constant = true,
                "thread-local" => a.thread_local = true,
                "maybe-live-out" => a.maybe_live_out = true,
                "preallocated-temp" => a.preallocated_temp = true,
                // Attributes added by newer XLA versions are not fatal.
                _ => {}
            }
            rest = &r[end..];
        }
    }
    Ok(a)
}

/// `<185 ynn_fusion.5 @0> (size=1048576,offset=0): f32[256,1024]{1,0}` (after ` value: `).
pub(crate) fn parse_value_line(rest: &str) -> Result<TextValue, String> {
    let r = rest.strip_prefix('<').ok_or("value does not start with `<`")?;
    // HLO names hold no `>`: the first one closes the reference (checked, else searched).
    let close = match memchr::memchr(b'>', r.as_bytes()) {
        Some(i) if r[i..].starts_with("> (size=") => i,
        _ => r.find("> (size=").ok_or("expected `> (size=` in value line (truncated line?)")?,
    };
    let mut v = parse_value_ref(&r[..close])?;
    let r = &r[close + "> (size=".len()..];
    let comma = memchr::memchr(b',', r.as_bytes()).ok_or("expected `,offset=` in value line")?;
    let (size, r) = (&r[..comma], r[comma..].strip_prefix(",offset=").ok_or("expected `,offset=` in value line")?);
    let paren = memchr::memchr(b')', r.as_bytes()).ok_or("expected `): SHAPE` after the offset")?;
    let (offset, shape) = (&r[..paren], r[paren..].strip_prefix("): ").ok_or("expected `): SHAPE` after the offset")?);
    v.size = parse_u64(size, "value size")?;
    v.offset = parse_u64(offset, "value offset")?;
    v.shape = shape.to_string();
    Ok(v)
}

/// The parts of `<id name{index} (phi) @color>` (its inside), without copying:
/// (id, `name{index}`, phi, color).
pub(crate) fn split_value_ref(inner: &str) -> Result<(u64, &str, bool, u64), String> {
    let (id, mut name) = inner.split_once(' ').ok_or_else(|| format!("expected `<id name>`, found `<{}>`", clip(inner)))?;
    let id = parse_u64(id, "value id")?;
    let mut color = 0;
    if let Some((head, c)) = name.rsplit_once(" @") {
        if !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit()) {
            color = parse_u64(c, "value color")?;
            name = head;
        }
    }
    let phi = match name.strip_suffix(" (phi)") {
        Some(head) => {
            name = head;
            true
        }
        None => false,
    };
    if name.is_empty() {
        return Err(format!("value {id} has no instruction name"));
    }
    Ok((id, name, phi, color))
}

/// The inside of `<id name{index} (phi) @color>`.
pub(crate) fn parse_value_ref(inner: &str) -> Result<TextValue, String> {
    let (id, name, phi, color) = split_value_ref(inner)?;
    let (instr, index) = split_shape_index(name);
    Ok(TextValue { id, instruction: instr.to_string(), index: index.to_string(), phi, color, ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers() {
        let a = parse_header("1: size 4194304, parameter 2, shape |f32[1024,1024]| at ShapeIndex {}:").unwrap();
        assert_eq!((a.index, a.size, a.parameter), (1, 4194304, Some(2)));
        let a = parse_header("0: size 4194304, parameter 1, shape |(f32[4,2], s32[])| at ShapeIndex {0,1}, maybe-live-out:").unwrap();
        assert!(a.maybe_live_out && a.parameter == Some(1));
        assert_eq!(a.parameter_shape_index, "{0,1}");
        let a = parse_header("12: size 56, output shape is |(f32[512,1024], /*index=5*/f32[10], f32[])|, maybe-live-out:").unwrap();
        assert!(a.output_shape && a.maybe_live_out);
        let a = parse_header("44: size 3166208, color 1, preallocated-temp:").unwrap();
        assert!(a.preallocated_temp && a.color == 1);
        let a = parse_header("3: size 4.00MiB, thread-local:").unwrap();
        assert!(a.thread_local && a.size == 4 << 20 && !a.size_exact);
        assert!(parse_header("3: size 12, thread-local").is_err());
        assert!(parse_header("x: size 12:").is_err());
    }

    #[test]
    fn value_refs() {
        let v = parse_value_line("<192 arg_tuple.3{} (phi) @0> (size=48,offset=4718784): (s32[], f32[64,512]{1,0})").unwrap();
        assert_eq!((v.id, v.instruction.as_str(), v.index.as_str(), v.phi, v.offset), (192, "arg_tuple.3", "{}", true, 4718784));
        let v = parse_value_line("<5 wrapped_reduce-window.1 @0> (size=32,offset=0): f32[8,1]{1,0}").unwrap();
        assert_eq!(v.instruction, "wrapped_reduce-window.1");
        let v = parse_value_line("<7 fusion.2{1,0}> (size=32,offset=8): f32[8]{0}").unwrap();
        assert_eq!((v.instruction.as_str(), v.index.as_str()), ("fusion.2", "{1,0}"));
        assert!(parse_value_line("<7 fusion.2 @0> (size=3").is_err());
    }
}
