//! Views of a [`SnapshotReport`]: the terminal report, the JSON contract
//! (docs/memory.md, "PyTorch snapshots") and one self-contained HTML file that uses the
//! XLA view's style, cards and timeline chart.

use super::analysis::{CallSite, DeviceReport, LiveAllocation, Moment};
use super::snapshot::{Snapshot, StackId};
use super::SnapshotReport;
use crate::render::html::{card, esc, timeline_svg, Series, STYLE};
use crate::render::text::{sparkline, thousands};
use oomdoc_units::format_bytes;
use serde_json::{json, Value};
use std::fmt::Write;

#[derive(Debug, Clone, Copy, Default)]
pub struct SnapshotTextOptions {
    /// Print each call site's full stack.
    pub stacks: bool,
}

/// Control characters out of anything that came from the file (paths, names).
fn clean(s: &str) -> String {
    s.chars().map(|c| if c.is_control() { '?' } else { c }).collect()
}

fn shorten_site(site: &str) -> String {
    if site.starts_with('(') {
        return clean(site);
    }
    // file:line:function → the last two path components of the file.
    let norm = site.replace('\\', "/");
    let parts: Vec<&str> = norm.rsplitn(2, '/').collect();
    let short = match parts.as_slice() {
        [tail, head] => match head.rsplit_once('/') {
            Some((_, dir)) => format!("{dir}/{tail}"),
            None => format!("{head}/{tail}"),
        },
        _ => norm.clone(),
    };
    clean(&short)
}

pub fn stack_lines(snap: &Snapshot, stack: StackId) -> Vec<String> {
    snap.frames(stack).map(|f| clean(&format!("{}:{}:{}", snap.string(f.filename), f.line, snap.string(f.name)))).collect()
}

fn moment_phrase(d: &DeviceReport) -> String {
    match (d.moment, &d.oom) {
        (Moment::Oom, Some(o)) => format!("live just before the OOM (trace entry {})", o.event_index),
        _ if d.trace_entries == 0 => "live in the snapshot (no trace recorded)".into(),
        _ => match d.peak_event {
            Some(i) => format!("live at the peak (trace entry {i})"),
            None => "live at the peak (the state before the first recorded event)".into(),
        },
    }
}

pub fn render_text(report: &SnapshotReport, snap: &Snapshot, opts: &SnapshotTextOptions) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}: PyTorch memory snapshot, format {}", clean(&report.path.display().to_string()), report.generation);
    let settings: Vec<String> = report.allocator_settings.iter().filter(|(k, _)| k == "PYTORCH_CUDA_ALLOC_CONF" || k == "expandable_segments").map(|(k, v)| format!("{k}={}", clean(v))).collect();
    if !settings.is_empty() {
        let _ = writeln!(s, "allocator settings: {}", settings.join(", "));
    }
    for w in &report.warnings {
        let _ = writeln!(s, "warning: {}", clean(w));
    }
    if report.devices.is_empty() {
        s.push_str("no segments and no trace: the snapshot is empty (recorded before any CUDA allocation?)\n");
    }
    for d in &report.devices {
        let _ = writeln!(s, "\ndevice {}: reserved {} in {} segments, allocated {} (requested {}), active {}", d.device, format_bytes(d.reserved_bytes), d.segments, format_bytes(d.allocated_bytes), format_bytes(d.requested_bytes), format_bytes(d.active_bytes));
        if d.trace_entries > 0 {
            let at = match d.peak_event {
                Some(i) => format!("trace entry {i} of {}", d.trace_entries),
                None => format!("the start of the trace ({} entries)", d.trace_entries),
            };
            let _ = writeln!(s, "  peak of live memory over the trace: {} ({} B) at {at}", format_bytes(d.peak_bytes), thousands(d.peak_bytes));
            let values: Vec<u64> = d.timeline.iter().map(|p| p.1).collect();
            if values.len() > 1 {
                let _ = writeln!(s, "  {}", sparkline(&values, 64));
            }
        } else {
            let _ = writeln!(s, "  no trace recorded (history off): live memory = the segments' active blocks, {}", format_bytes(d.peak_bytes));
        }
        if let Some(o) = &d.oom {
            let free = o.device_free_bytes.map(|f| format!("{} free on the device", format_bytes(f))).unwrap_or_else(|| "device free memory not recorded".into());
            let _ = writeln!(
                s,
                "  OUT OF MEMORY at trace entry {}: requested {} ({} B), {free}; {} live in {} allocations, {} reserved{}",
                o.event_index,
                format_bytes(o.requested_bytes),
                thousands(o.requested_bytes),
                format_bytes(o.live_bytes),
                o.live_count,
                format_bytes(o.reserved_bytes),
                if o.count > 1 { format!(" ({} OOMs on this device; the first is shown)", o.count) } else { String::new() }
            );
            let _ = writeln!(s, "    failing allocation from {}", shorten_site(&super::analysis::call_site(snap, o.stack)));
        }
        let _ = writeln!(s, "  {}: {} in {} allocations, by call site (first frame outside torch and libraries):", moment_phrase(d), format_bytes(d.live_bytes), d.live_count);
        for c in &d.call_sites {
            site_line(&mut s, d, c);
            if opts.stacks {
                for l in stack_lines(snap, c.stack) {
                    let _ = writeln!(s, "        {l}");
                }
            }
        }
        if !d.largest.is_empty() {
            s.push_str("  largest live allocations:\n");
            for a in d.largest.iter().take(5) {
                let _ = writeln!(s, "    {:>10}  0x{:x}  {}", format_bytes(a.bytes), a.address, shorten_site(&a.site));
            }
        }
        let f = &d.fragmentation;
        let _ = writeln!(
            s,
            "  fragmentation (snapshot's final state): {} reserved but free, largest free block {}, {} lost to rounding{}",
            format_bytes(f.reserved_free_bytes),
            format_bytes(f.largest_free_block_bytes),
            format_bytes(f.internal_bytes),
            if f.expandable { "; expandable segments: free space can grow in place, a block larger than the free ones can still be mapped" } else { "" }
        );
        if let Some(o) = &d.oom {
            if !f.expandable && f.largest_free_block_bytes < o.requested_bytes && f.reserved_free_bytes >= o.requested_bytes {
                let _ = writeln!(s, "    the request ({}) is larger than every free block but not than the free total: fragmentation; try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", format_bytes(o.requested_bytes));
            }
        }
    }
    if !opts.stacks {
        s.push_str("\n(--stacks prints each call site's full stack; --format json|html for the rest)\n");
    }
    s
}

fn site_line(s: &mut String, d: &DeviceReport, c: &CallSite) {
    let pct = if d.live_bytes > 0 { 100.0 * c.bytes as f64 / d.live_bytes as f64 } else { 0.0 };
    let _ = writeln!(s, "    {:>10} {:>5.1}%  x{:<5} {}", format_bytes(c.bytes), pct, c.count, shorten_site(&c.site));
}

fn stack_json(snap: &Snapshot, stack: StackId) -> Value {
    Value::Array(snap.frames(stack).map(|f| json!({"filename": snap.string(f.filename), "line": f.line, "name": snap.string(f.name)})).collect())
}

fn alloc_json(snap: &Snapshot, a: &LiveAllocation) -> Value {
    json!({"address": a.address, "bytes": a.bytes, "call_site": a.site, "alloc_event": a.alloc_event, "stack": stack_json(snap, a.stack)})
}

/// The JSON contract (docs/memory.md): keys are added, never renamed.
pub fn to_json(report: &SnapshotReport, snap: &Snapshot) -> Value {
    let devices: Vec<Value> = report
        .devices
        .iter()
        .map(|d| {
            let f = &d.fragmentation;
            json!({
                "device": d.device,
                "segments": d.segments,
                "blocks": d.blocks,
                "reserved_bytes": d.reserved_bytes,
                "allocated_bytes": d.allocated_bytes,
                "active_bytes": d.active_bytes,
                "requested_bytes": d.requested_bytes,
                "trace_entries": d.trace_entries,
                "peak_bytes": d.peak_bytes,
                "peak_event": d.peak_event,
                "peak_time_us": d.peak_time_us,
                "oom": d.oom.as_ref().map(|o| json!({
                    "event_index": o.event_index,
                    "requested_bytes": o.requested_bytes,
                    "device_free_bytes": o.device_free_bytes,
                    "stream": o.stream,
                    "time_us": o.time_us,
                    "live_bytes": o.live_bytes,
                    "live_count": o.live_count,
                    "reserved_bytes": o.reserved_bytes,
                    "oom_count": o.count,
                    "call_site": super::analysis::call_site(snap, o.stack),
                    "stack": stack_json(snap, o.stack),
                })),
                "live_at": d.moment.as_str(),
                "live_bytes": d.live_bytes,
                "live_count": d.live_count,
                "top_call_sites": d.call_sites.iter().map(|c| json!({"call_site": c.site, "bytes": c.bytes, "count": c.count, "stack": stack_json(snap, c.stack)})).collect::<Vec<_>>(),
                "largest_allocations": d.largest.iter().map(|a| alloc_json(snap, a)).collect::<Vec<_>>(),
                "fragmentation": {
                    "reserved_free_bytes": f.reserved_free_bytes,
                    "internal_bytes": f.internal_bytes,
                    "largest_free_block_bytes": f.largest_free_block_bytes,
                    "expandable_segments": f.expandable,
                    "pools": f.pools.iter().map(|p| json!({"pool_id": [p.pool_id.0, p.pool_id.1], "segments": p.segments, "reserved_bytes": p.reserved_bytes, "free_bytes": p.free_bytes, "largest_free_block_bytes": p.largest_free_block_bytes, "expandable": p.expandable})).collect::<Vec<_>>(),
                    "segments_most_free": f.segments_most_free.iter().map(|g| json!({"address": g.address, "total_bytes": g.total_bytes, "free_bytes": g.free_bytes, "free_blocks": g.free_blocks, "largest_free_block_bytes": g.largest_free_block_bytes, "pool_id": [g.pool_id.0, g.pool_id.1], "expandable": g.expandable})).collect::<Vec<_>>(),
                },
                "timeline": d.timeline.iter().map(|(i, b)| json!({"event": i, "bytes": b})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "kind": "pytorch-snapshot",
        "path": report.path.display().to_string(),
        "generation": report.generation,
        "allocator_settings": report.allocator_settings.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<serde_json::Map<_, _>>(),
        "warnings": report.warnings,
        "devices": devices,
    })
}

pub fn render_json(report: &SnapshotReport, snap: &Snapshot) -> String {
    let mut s = serde_json::to_string_pretty(&to_json(report, snap)).expect("report serializes");
    s.push('\n');
    s
}

pub fn render_html(report: &SnapshotReport, snap: &Snapshot) -> String {
    let mut s = String::new();
    let title = format!("oomdoc memory: {}", report.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default());
    let _ = write!(s, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n", esc(&title), esc(&title));
    let _ = writeln!(s, "<p>PyTorch memory snapshot, format {}.</p>", esc(report.generation));
    for w in &report.warnings {
        let _ = writeln!(s, "<p style=\"border:2px solid #c00;padding:.4em\"><b>Warning:</b> {}</p>", esc(w));
    }
    for d in &report.devices {
        let _ = writeln!(s, "<h2 id=\"device-{}\">Device {}</h2>", d.device, d.device);
        if let Some(o) = &d.oom {
            let free = o.device_free_bytes.map(|f| format!("{} free on the device", format_bytes(f))).unwrap_or_else(|| "device free memory not recorded".into());
            let _ = writeln!(
                s,
                "<p style=\"border:2px solid #7a1fa2;padding:.4em\"><b>Out of memory</b> at trace entry {}: requested <b>{}</b> ({} B), {free}; {} live in {} allocations, {} reserved. Failing allocation from <code>{}</code>.</p>",
                o.event_index,
                format_bytes(o.requested_bytes),
                thousands(o.requested_bytes),
                format_bytes(o.live_bytes),
                o.live_count,
                format_bytes(o.reserved_bytes),
                esc(&super::analysis::call_site(snap, o.stack))
            );
        }
        s.push_str("<div class=cards>");
        card(&mut s, "reserved", d.reserved_bytes);
        card(&mut s, "allocated", d.allocated_bytes);
        card(&mut s, "requested", d.requested_bytes);
        card(&mut s, "active", d.active_bytes);
        card(&mut s, "peak over the trace", d.peak_bytes);
        card(&mut s, "reserved but free", d.fragmentation.reserved_free_bytes);
        card(&mut s, "largest free block", d.fragmentation.largest_free_block_bytes);
        s.push_str("</div>\n");
        if d.timeline.len() > 1 {
            let bytes: Vec<u64> = d.timeline.iter().map(|p| p.1).collect();
            let event = |i: usize| d.timeline[i].0.map(|e| format!("trace entry {e}")).unwrap_or_else(|| "start".into());
            let hover = |i: usize| format!("{}: {} ({} B) live", event(i), format_bytes(bytes[i]), thousands(bytes[i]));
            let peak_index = d.timeline.iter().position(|p| p.0 == d.peak_event && p.1 == d.peak_bytes).unwrap_or(0);
            // The OOM mark: the first point at or after the entry.
            let marks: Vec<(usize, String)> = d
                .oom
                .iter()
                .filter_map(|o| d.timeline.iter().position(|p| p.0.is_some_and(|e| e >= o.event_index)).map(|i| (i, format!("OOM: {} requested", format_bytes(o.requested_bytes)))))
                .collect();
            s.push_str("<h3>Live memory over the trace</h3>");
            let end = format!("trace entry {}", d.trace_entries.saturating_sub(1));
            timeline_svg(
                &mut s,
                &Series { bytes: &bytes, dashed: None, hover: &hover, peak_index, peak_bytes: d.peak_bytes, peak_note: &event(peak_index), axis: "alloc/free event", floor: 0, marks: &marks, end_label: Some(&end) },
            );
            s.push_str("<p class=muted>Live bytes (requested sizes) after each alloc and free, replayed as PyTorch's memory viewer does; x axis: alloc/free events in order (at most 2,000 points, each the largest of its span).</p>\n");
        }
        let _ = writeln!(s, "<h3>{} by call site: {} in {} allocations</h3>", esc(&upper_first(&moment_phrase(d))), format_bytes(d.live_bytes), d.live_count);
        s.push_str("<table><tr><th>#</th><th>call site (first frame outside torch and libraries)</th><th>bytes</th><th>allocations</th><th>stack of its largest</th></tr>\n");
        for (i, c) in d.call_sites.iter().enumerate() {
            let pct = if d.live_bytes > 0 { 100.0 * c.bytes as f64 / d.live_bytes as f64 } else { 0.0 };
            let _ = writeln!(
                s,
                "<tr><td class=n>{}</td><td><code>{}</code></td><td class=n title=\"{} B\">{} <span class=muted>{pct:.1}%</span></td><td class=n>{}</td><td><details><summary>{} frames</summary><pre>{}</pre></details></td></tr>",
                i + 1,
                esc(&c.site),
                thousands(c.bytes),
                format_bytes(c.bytes),
                c.count,
                snap.frames(c.stack).len(),
                esc(&stack_lines(snap, c.stack).join("\n"))
            );
        }
        s.push_str("</table>\n<h3>Largest live allocations</h3><table><tr><th>address</th><th>bytes</th><th>call site</th></tr>\n");
        for a in &d.largest {
            let _ = writeln!(s, "<tr><td><code>0x{:x}</code></td><td class=n>{}</td><td><code>{}</code></td></tr>", a.address, format_bytes(a.bytes), esc(&a.site));
        }
        s.push_str("</table>\n<h3>Fragmentation (the snapshot's final segments)</h3><table><tr><th>pool</th><th>segments</th><th>reserved</th><th>free</th><th>largest free block</th><th>expandable</th></tr>\n");
        for p in &d.fragmentation.pools {
            let _ = writeln!(
                s,
                "<tr><td>({}, {})</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td></tr>",
                p.pool_id.0,
                p.pool_id.1,
                p.segments,
                format_bytes(p.reserved_bytes),
                format_bytes(p.free_bytes),
                format_bytes(p.largest_free_block_bytes),
                if p.expandable { "yes" } else { "no" }
            );
        }
        s.push_str("</table>\n");
    }
    s.push_str("<p class=muted>Generated by oomdoc from a PyTorch memory snapshot. Live memory counts requested sizes, as PyTorch's viewer does; allocated counts the allocator's rounded block sizes.</p>\n</body></html>\n");
    s
}

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
