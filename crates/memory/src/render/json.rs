//! `--format json`: exactly the documented contract (`docs/memory.md`).

use crate::report::MemoryReport;
use std::io::Write as _;

pub fn render(report: &MemoryReport) -> String {
    // Sized once from the report (a pretty-printed timeline point is about 150 bytes):
    // a million-point timeline no longer grows the string by doubling and copying.
    let points: usize = report.modules.iter().map(|m| m.timeline.len()).sum();
    let buffers: usize = report.modules.iter().map(|m| m.buffers_at_peak.len()).sum();
    let mut out = Vec::with_capacity(points.saturating_mul(160).saturating_add(buffers.saturating_mul(512)).saturating_add(1 << 16));
    serde_json::to_writer_pretty(&mut out, report).expect("report serializes");
    out.push(b'\n');
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// [`render`] streamed into `out` (no report-sized string: a million-point timeline is
/// hundreds of MB of JSON). Same bytes as [`render`].
pub fn write_to(report: &MemoryReport, out: impl std::io::Write) -> std::io::Result<()> {
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    serde_json::to_writer_pretty(&mut out, report).map_err(std::io::Error::other)?;
    out.write_all(b"\n")?;
    out.flush()
}
