//! `-memory-usage-report.txt` = `BufferAssignment::MemoryUsageReport()`, written beside
//! every buffer assignment (`xla/service/dump.cc`). Only its per-memory-space totals are
//! read: they are the sums of the same allocations the buffer assignment lists, so they
//! tell whether a buffer-assignment file is complete. Observed with jaxlib 0.10.2:
//!
//! ```text
//! Memory Space: default (color=0)
//! Total bytes: 57384 (56.0KiB)
//! ```

use super::{parse_u64, Lines};
use crate::error::MemoryError;
use std::path::Path;

/// (memory space, total allocation bytes) per space, with the line of each total.
pub fn parse_totals(path: &Path) -> Result<Vec<(u64, u64, usize)>, MemoryError> {
    let mut lines = Lines::open(path)?;
    let mut out = Vec::new();
    let mut space: Option<u64> = None;
    let mut buf = String::new();
    while lines.next_into(&mut buf)? {
        let line = buf.as_str();
        if let Some(rest) = line.strip_prefix("Memory Space: ") {
            let color = rest
                .rsplit_once("(color=")
                .and_then(|(_, c)| c.strip_suffix(')'))
                .ok_or_else(|| lines.error("expected `Memory Space: NAME (color=N)`"))?;
            space = Some(parse_u64(color, "memory space color").map_err(|m| lines.error(m))?);
        } else if let Some(rest) = line.strip_prefix("Total bytes: ") {
            let n = rest.split(' ').next().unwrap_or("");
            let total = parse_u64(n, "total bytes").map_err(|m| lines.error(m))?;
            let Some(color) = space.take() else {
                return Err(lines.error("`Total bytes:` before any `Memory Space:` line"));
            };
            out.push((color, total, lines.line_no()));
        }
    }
    Ok(out)
}
