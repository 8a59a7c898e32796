//! `--format json`: exactly the documented contract (`docs/memory.md`).

use crate::report::MemoryReport;

pub fn render(report: &MemoryReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("report serializes");
    s.push('\n');
    s
}
