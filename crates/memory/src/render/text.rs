//! `--format text`: a short report for a terminal — headline numbers, the largest
//! buffers at the peak and a one-line sparkline of memory over program order.

use crate::analysis::Axis;
use crate::report::ModuleReport;
use crate::summary::ModuleListing;
use oomdoc_units::format_bytes;
use std::fmt::Write;

#[derive(Debug, Clone)]
pub struct TextOptions {
    /// Buffers to list.
    pub top: usize,
    /// Sparkline width in characters.
    pub width: usize,
}

impl Default for TextOptions {
    fn default() -> Self {
        TextOptions { top: 10, width: 64 }
    }
}

/// `16382096` → `16,382,096`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn axis_name(axis: Axis) -> &'static str {
    match axis {
        Axis::HeapEvent => "heap event",
        Axis::Schedule => "schedule position",
    }
}

/// Keep the last two path components of a source location: `pkg/model.py:15`.
pub fn short_source(source: &str) -> String {
    let parts: Vec<&str> = source.rsplitn(3, '/').collect();
    if parts.len() == 3 {
        format!("{}/{}", parts[1], parts[0])
    } else {
        source.to_string()
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{head}…")
    }
}

/// Max-per-column downsampling so the peak always shows.
pub fn downsample_max(values: &[u64], width: usize) -> Vec<u64> {
    if values.len() <= width || width == 0 {
        return values.to_vec();
    }
    (0..width)
        .map(|c| {
            let lo = c * values.len() / width;
            let hi = ((c + 1) * values.len() / width).max(lo + 1);
            values[lo..hi].iter().copied().max().unwrap_or(0)
        })
        .collect()
}

pub fn sparkline(values: &[u64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let cols = downsample_max(values, width);
    let (Some(&min), Some(&max)) = (cols.iter().min(), cols.iter().max()) else { return String::new() };
    cols.iter()
        .map(|&v| if max == min { BARS[7] } else { BARS[(((v - min) as u128 * 7) / (max - min) as u128) as usize] })
        .collect()
}

/// One module's report for a terminal. Op names come from user code or from someone
/// else's dump: the page is cleaned of control characters ([`oomdoc_units::terminal`]).
pub fn render_module(r: &ModuleReport, o: &TextOptions) -> String {
    oomdoc_units::terminal::clean(&render_module_unchecked(r, o)).into_owned()
}

fn render_module_unchecked(r: &ModuleReport, o: &TextOptions) -> String {
    let mut s = String::new();
    let id = r.program_id.map(|i| format!(" (program {i})")).unwrap_or_default();
    let _ = writeln!(s, "Module {}{id}", r.name);
    for w in &r.warnings {
        let _ = writeln!(s, "  WARNING: {w}");
    }
    if r.memory_space != 0 || r.memory_spaces.len() > 1 {
        let spaces: Vec<String> = r.memory_spaces.iter().map(|m| format!("{} ({}) {}", m.name, m.memory_space, format_bytes(m.allocation_bytes))).collect();
        let _ = writeln!(s, "  memory space      {} ({}); allocations per space: {}", crate::spaces::space_name(r.memory_space), r.memory_space, spaces.join(" · "));
    }
    let at = if r.peak_instruction.is_empty() { String::new() } else { format!(", at {}", r.peak_instruction) };
    let _ = writeln!(s, "  peak memory       {} ({} B) at {} {}{at}", format_bytes(r.peak_bytes), thousands(r.peak_bytes), axis_name(r.axis), r.peak_position);
    let _ = writeln!(
        s,
        "  unpadded peak     {} (padding at peak: {})",
        format_bytes(r.peak_unpadded_bytes),
        format_bytes(r.peak_bytes.saturating_sub(r.peak_unpadded_bytes))
    );
    let _ = writeln!(
        s,
        "  arguments {} · outputs {} · aliased {} · temp {} · constants {} · thread-local {}",
        format_bytes(r.arguments_bytes),
        format_bytes(r.outputs_bytes),
        format_bytes(r.alias_bytes),
        format_bytes(r.temp_bytes),
        format_bytes(r.constants_bytes),
        format_bytes(r.thread_local_bytes)
    );
    if r.host_arguments_bytes + r.host_outputs_bytes + r.host_temp_bytes > 0 {
        let _ = writeln!(
            s,
            "  host memory: arguments {} · outputs {} · aliased {} · temp {} (not in the device peak)",
            format_bytes(r.host_arguments_bytes),
            format_bytes(r.host_outputs_bytes),
            format_bytes(r.host_alias_bytes),
            format_bytes(r.host_temp_bytes)
        );
    }
    let frag_pct = if r.total_allocation_bytes > r.indefinite_bytes {
        100.0 * r.fragmentation_bytes as f64 / (r.total_allocation_bytes - r.indefinite_bytes) as f64
    } else {
        0.0
    };
    let _ = writeln!(
        s,
        "  total allocation  {} · fragmentation {} ({frag_pct:.1}% of temp) · live temp at peak {}",
        format_bytes(r.total_allocation_bytes),
        format_bytes(r.fragmentation_bytes),
        format_bytes(r.temp_peak_bytes)
    );
    if r.timeline.len() > 1 {
        let values: Vec<u64> = r.timeline.iter().map(|p| p.bytes).collect();
        let line = sparkline(&values, o.width);
        let n = line.chars().count();
        let peak_col = if values.len() <= o.width { r.peak_position as usize } else { (r.peak_position as usize * n) / values.len() };
        let min = values.iter().min().copied().unwrap_or(0);
        let _ = writeln!(s, "  memory over {} 0..{} ({} → {}):", axis_name(r.axis), values.len() - 1, format_bytes(min), format_bytes(r.peak_bytes));
        let _ = writeln!(s, "  {line}");
        let _ = writeln!(s, "  {}^ peak", " ".repeat(peak_col.min(n.saturating_sub(1))));
    }
    let shown: Vec<_> = r.buffers_at_peak.iter().take(o.top).collect();
    if !shown.is_empty() {
        let _ = writeln!(s, "  buffers live at the peak ({} of {}, largest first):", shown.len(), r.buffers_at_peak.len());
        let _ = writeln!(s, "    {:>10}  {:>10}  {:<10} {:<28} {:<24} {}", "size", "unpadded", "group", "buffer", "shape", "op / source");
        for b in shown {
            let unpadded = if b.unpadded_bytes == b.size_bytes { "=".to_string() } else { format_bytes(b.unpadded_bytes) };
            let mut label = cut(&b.op_name, 60);
            if !b.source.is_empty() {
                if !label.is_empty() {
                    label.push_str("  ");
                }
                label.push_str(&short_source(&b.source));
            }
            let _ = writeln!(
                s,
                "    {:>10}  {:>10}  {:<10} {:<28} {:<24} {}",
                format_bytes(b.size_bytes),
                unpadded,
                b.group,
                cut(&b.name, 28),
                cut(&b.shape, 24),
                label
            );
        }
    }
    let padding = r.padding_bytes();
    if padding > 0 {
        let _ = writeln!(s, "  padding waste in buffers at the peak: {} ({} B)", format_bytes(padding), thousands(padding));
    }
    s
}

/// The module table printed when a dump holds several modules (cleaned like [`render_module`]).
pub fn render_listing(list: &[ModuleListing], selected: Option<(&str, Option<u64>)>) -> String {
    oomdoc_units::terminal::clean(&render_listing_unchecked(list, selected)).into_owned()
}

fn render_listing_unchecked(list: &[ModuleListing], selected: Option<(&str, Option<u64>)>) -> String {
    let mut s = String::new();
    // Modules read from a profile's XSpaces carry their hosts; a dump's do not.
    let source = if list.iter().any(|m| !m.hosts.is_empty()) { "profile" } else { "dump" };
    let _ = writeln!(s, "{} modules in the {source} (largest peak first):", list.len());
    let mut sorted: Vec<&ModuleListing> = list.iter().collect();
    sorted.sort_by(|a, b| b.peak_bytes.cmp(&a.peak_bytes));
    // Several profile hosts: say which host's XSpace carries each module.
    let mut all_hosts: Vec<&String> = list.iter().flat_map(|m| &m.hosts).collect();
    all_hosts.sort();
    all_hosts.dedup();
    for m in sorted {
        let hosts = if all_hosts.len() > 1 { format!("  [{}]", m.hosts.join(", ")) } else { String::new() };
        let mark = if selected == Some((m.name.as_str(), m.program_id)) { "→" } else { " " };
        let id = m.program_id.map(|i| i.to_string()).unwrap_or_else(|| "-".into());
        match (&m.peak_bytes, &m.error) {
            (Some(p), _) => {
                let warn = if m.warnings.is_empty() { String::new() } else { format!("  (WARNING: {})", cut(&m.warnings[0], 100)) };
                let _ = writeln!(s, " {mark} {:>6}  {:>12}  {}{hosts}{warn}", id, format_bytes(*p), m.name);
            }
            (None, Some(e)) => {
                let _ = writeln!(s, " {mark} {:>6}  {:>12}  {}{hosts}  ({})", id, "error", m.name, cut(e, 100));
            }
            _ => {}
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(thousands(16382096), "16,382,096");
        assert_eq!(thousands(12), "12");
        assert_eq!(downsample_max(&[1, 5, 2, 2, 9, 1], 3), vec![5, 2, 9]);
        assert_eq!(sparkline(&[0, 7], 10), "▁█");
        assert_eq!(short_source("/a/b/c/model.py:15"), "c/model.py:15");
    }
}
