//! The XLA:GPU out-of-memory report that appears inside a log or exception text
//! (`BufferAssignment::ToVerboseString` + `StatsString`, see `xla-errors.md` §3.9e):
//!
//! ```text
//! RESOURCE_EXHAUSTED: Out of memory while trying to allocate 34912723376 bytes.
//! BufferAssignment OOM Debugging.
//! BufferAssignment stats:
//!              parameter allocation:    5.43GiB
//!   preallocated temp fragmentation:     2.0KiB (0.00%)
//! Peak buffers:
//!         Buffer 1:
//!                 Size: 3.24GiB
//!                 Operator: op_name="jit(f)/mul" source_file="/x/modules.py" source_line=1307
//!                 XLA Label: fusion
//!                 Shape: f32[128,2605,2605]
//!                 ==========================
//! ```
//! Sizes are printed rounded (`HumanReadableNumBytes`); `*_text` keeps what was printed.

use crate::text::instruction::parse_instruction;
use oomdoc_units::parse_size;
use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuOomReport {
    /// From `Out of memory while trying to allocate N bytes.` when it precedes the report.
    pub requested_bytes: Option<u64>,
    pub parameter_bytes: Option<u64>,
    pub constant_bytes: Option<u64>,
    pub maybe_live_out_bytes: Option<u64>,
    pub preallocated_temp_bytes: Option<u64>,
    pub preallocated_temp_fragmentation_bytes: Option<u64>,
    pub total_allocation_bytes: Option<u64>,
    pub total_fragmentation_bytes: Option<u64>,
    /// Largest first, as printed.
    pub peak_buffers: Vec<GpuPeakBuffer>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GpuPeakBuffer {
    /// `Buffer N` as printed (1-based).
    pub index: u32,
    pub size_bytes: u64,
    pub size_text: String,
    pub op_name: Option<String>,
    pub source_file: Option<String>,
    pub source_line: Option<u32>,
    /// The HLO opcode (`XLA Label:`).
    pub xla_label: Option<String>,
    pub shape: Option<String>,
    /// Set instead of `xla_label`/`shape` for entry parameters.
    pub entry_parameter_subshape: Option<String>,
}

impl GpuPeakBuffer {
    /// `file:line`, when the operator metadata names one.
    pub fn source(&self) -> Option<String> {
        match (&self.source_file, self.source_line) {
            (Some(f), Some(l)) => Some(format!("{f}:{l}")),
            (Some(f), None) => Some(f.clone()),
            _ => None,
        }
    }
}

const MARKER: &str = "BufferAssignment OOM Debugging.";

/// Find and parse the first report in `text`; `None` when there is none.
pub fn parse_buffer_assignment_oom_report(text: &str) -> Option<GpuOomReport> {
    let at = text.find(MARKER)?;
    let mut report = GpuOomReport::default();
    // The request size is on the line(s) just before the marker.
    let mut start = at.saturating_sub(400);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let before = &text[start..at];
    if let Some(i) = before.rfind("trying to allocate ") {
        let rest = &before[i + "trying to allocate ".len()..];
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        report.requested_bytes = digits.parse().ok();
    }
    let mut in_buffers = false;
    let mut current: Option<GpuPeakBuffer> = None;
    for raw in text[at + MARKER.len()..].lines() {
        let line = raw.trim();
        if line.is_empty() || line == "BufferAssignment stats:" {
            continue;
        }
        if line == "Peak buffers:" {
            in_buffers = true;
            continue;
        }
        if !in_buffers {
            let Some((label, value)) = line.split_once(':') else { break };
            let value = value.trim();
            let size_text = value.split(" (").next().unwrap_or(value);
            let bytes = parse_size(size_text).map(|p| p.bytes);
            match label.trim() {
                "parameter allocation" => report.parameter_bytes = bytes,
                "constant allocation" => report.constant_bytes = bytes,
                "maybe_live_out allocation" => report.maybe_live_out_bytes = bytes,
                "preallocated temp allocation" => report.preallocated_temp_bytes = bytes,
                "preallocated temp fragmentation" => report.preallocated_temp_fragmentation_bytes = bytes,
                "total allocation" => report.total_allocation_bytes = bytes,
                "total fragmentation" => report.total_fragmentation_bytes = bytes,
                _ => break,
            }
            continue;
        }
        if let Some(n) = line.strip_prefix("Buffer ").and_then(|r| r.strip_suffix(':')) {
            if let Some(done) = current.take() {
                report.peak_buffers.push(done);
            }
            current = Some(GpuPeakBuffer { index: n.trim().parse().unwrap_or(0), ..Default::default() });
            continue;
        }
        let Some(buf) = current.as_mut() else { break };
        if line.starts_with("====") {
            report.peak_buffers.push(current.take().expect("checked above"));
        } else if let Some(v) = line.strip_prefix("Size:") {
            buf.size_text = v.trim().to_string();
            buf.size_bytes = parse_size(v.trim()).map(|p| p.bytes).unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Operator:") {
            let meta = parse_instruction(&format!("metadata={{{}}}", v.trim()));
            buf.op_name = Some(meta.op_name).filter(|s| !s.is_empty());
            buf.source_file = meta.source_file;
            buf.source_line = meta.source_line;
        } else if let Some(v) = line.strip_prefix("XLA Label:") {
            buf.xla_label = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Shape:") {
            buf.shape = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("Entry Parameter Subshape:") {
            buf.entry_parameter_subshape = Some(v.trim().to_string());
        } else {
            break;
        }
    }
    if let Some(done) = current.take() {
        report.peak_buffers.push(done);
    }
    Some(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 34912723376 bytes.
BufferAssignment OOM Debugging.
BufferAssignment stats:
             parameter allocation:    5.43GiB
              constant allocation:    38.7KiB
        maybe_live_out allocation:    1.73GiB
     preallocated temp allocation:   32.51GiB
  preallocated temp fragmentation:     2.0KiB (0.00%)
                 total allocation:   39.68GiB
              total fragmentation:    1.73GiB (4.37%)
Peak buffers:
\tBuffer 1:
\t\tSize: 3.24GiB
\t\tOperator: op_name=\"jit(apply_fn)/jit(main)/mul\" source_file=\"/x/alphafold/model/modules.py\" source_line=1307
\t\tXLA Label: fusion
\t\tShape: f32[128,2605,2605]
\t\t==========================

\tBuffer 2:
\t\tSize: 6.00MiB
\t\tEntry Parameter Subshape: f32[4096,128,3]
\t\t==========================

Traceback (most recent call last):
";

    #[test]
    fn parses_the_report() {
        let r = parse_buffer_assignment_oom_report(SAMPLE).unwrap();
        assert_eq!(r.requested_bytes, Some(34912723376));
        assert_eq!(r.parameter_bytes, parse_size("5.43GiB").map(|p| p.bytes));
        assert_eq!(r.constant_bytes, parse_size("38.7KiB").map(|p| p.bytes));
        assert_eq!(r.total_fragmentation_bytes, parse_size("1.73GiB").map(|p| p.bytes));
        assert_eq!(r.peak_buffers.len(), 2);
        let b = &r.peak_buffers[0];
        assert_eq!((b.index, b.size_text.as_str()), (1, "3.24GiB"));
        assert_eq!(b.op_name.as_deref(), Some("jit(apply_fn)/jit(main)/mul"));
        assert_eq!(b.source().as_deref(), Some("/x/alphafold/model/modules.py:1307"));
        assert_eq!((b.xla_label.as_deref(), b.shape.as_deref()), (Some("fusion"), Some("f32[128,2605,2605]")));
        assert_eq!(r.peak_buffers[1].entry_parameter_subshape.as_deref(), Some("f32[4096,128,3]"));
        assert_eq!(r.peak_buffers[1].size_bytes, 6 << 20);
    }

    #[test]
    fn absent_or_cut_reports() {
        assert_eq!(parse_buffer_assignment_oom_report("no report here"), None);
        let cut = &SAMPLE[..SAMPLE.find("XLA Label").unwrap()];
        let r = parse_buffer_assignment_oom_report(cut).unwrap();
        assert_eq!(r.peak_buffers.len(), 1);
        for i in 0..SAMPLE.len() {
            if SAMPLE.is_char_boundary(i) {
                let _ = parse_buffer_assignment_oom_report(&SAMPLE[i..]);
                let _ = parse_buffer_assignment_oom_report(&SAMPLE[..i]);
            }
        }
    }
}
