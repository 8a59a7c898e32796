//! `diagnose --snapshot FILE`: what was live when a PyTorch job ran out of memory, from
//! its CUDA memory snapshot (`oomdoc memory`'s analysis): the live set at the snapshot's
//! `oom` entry (or its peak) grouped by the user's call site, attached to each PyTorch
//! memory finding.

use crate::finding::{Allocation, Finding};
use oomdoc_memory::pytorch::analysis::{AnalysisOptions, DeviceReport, Moment};
use oomdoc_memory::pytorch::{analyze, load_snapshot, snapshot::Snapshot, SnapshotReport};
use std::path::{Path, PathBuf};

/// A snapshot read once for a whole log.
#[derive(Debug)]
pub struct SnapshotInput {
    pub path: PathBuf,
    pub snapshot: Snapshot,
    pub report: SnapshotReport,
}

impl SnapshotInput {
    pub fn load(path: &Path) -> Result<SnapshotInput, String> {
        if !oomdoc_memory::pytorch::is_snapshot_file(path) {
            return Err(format!("{}: not a PyTorch memory snapshot (a pickle from torch.cuda.memory._dump_snapshot())", path.display()));
        }
        let snapshot = load_snapshot(path, &Default::default()).map_err(|e| e.to_string())?;
        let report = analyze(path, &snapshot, &AnalysisOptions::default());
        Ok(SnapshotInput { path: path.to_path_buf(), snapshot, report })
    }
}

/// The most recently written snapshot (`*.pickle`) in `dir`, if any.
pub fn newest_in(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "pickle") && e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, p)| p)
}

/// Findings a CUDA-allocator snapshot can explain.
pub fn applies(f: &Finding) -> bool {
    f.id.starts_with("pytorch.") || f.framework.as_deref() == Some("pytorch")
}

/// The device report for this finding: the GPU the message names, else the device with
/// an OOM entry, else the one with the largest peak.
fn pick<'a>(f: &Finding, report: &'a SnapshotReport) -> Option<&'a DeviceReport> {
    let named = f.culprit.device.as_deref().and_then(|d| d.trim_start_matches(|c: char| !c.is_ascii_digit()).split(|c: char| !c.is_ascii_digit()).next()?.parse::<i64>().ok());
    named
        .and_then(|n| report.devices.iter().find(|d| d.device == n))
        .or_else(|| report.devices.iter().find(|d| d.oom.is_some()))
        .or_else(|| report.devices.iter().max_by_key(|d| d.peak_bytes))
}

pub fn attach(f: &mut Finding, input: &SnapshotInput) {
    if !applies(f) {
        return;
    }
    let Some(d) = pick(f, &input.report) else { return };
    // The message prints the request to two decimals: agreeing within 1% is the same request.
    let matches_log = match (&d.oom, f.sizes.requested) {
        (Some(o), Some(r)) => Some(o.requested_bytes.abs_diff(r) * 100 <= o.requested_bytes.max(r)),
        _ => None,
    };
    let moment = if d.moment == Moment::Oom { "at the OOM" } else { "at the peak" };
    if f.culprit.allocations.is_empty() {
        f.culprit.allocations = d
            .call_sites
            .iter()
            .enumerate()
            .map(|(i, c)| Allocation {
                rank: i as u32 + 1,
                size: Some(c.bytes),
                source: Some(c.site.clone()),
                label: Some(format!("x{} live {moment}: {}", c.count, short_site(&c.site))),
                allocation_type: Some("snapshot call site".into()),
                ..Default::default()
            })
            .collect();
    }
    f.memory = Some(serde_json::json!({
        "snapshot": input.path.display().to_string(),
        "device": d.device,
        "live_at": d.moment.as_str(),
        "live_bytes": d.live_bytes,
        "live_count": d.live_count,
        "reserved_bytes": d.oom.as_ref().map_or(d.reserved_bytes, |o| o.reserved_bytes),
        "peak_bytes": d.peak_bytes,
        "oom": d.oom.as_ref().map(|o| serde_json::json!({"requested_bytes": o.requested_bytes, "device_free_bytes": o.device_free_bytes, "event_index": o.event_index})),
        "request_matches_log": matches_log,
        "top_call_sites": d.call_sites.iter().map(|c| serde_json::json!({"call_site": c.site, "bytes": c.bytes, "count": c.count})).collect::<Vec<_>>(),
    }));
}

/// `file:line:function` with the file's last two path components (the full one stays in `source`).
fn short_site(site: &str) -> String {
    if site.starts_with('(') {
        return site.to_string();
    }
    let norm = site.replace('\\', "/");
    let mut parts = norm.rsplitn(3, '/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(tail), Some(dir), Some(_)) => format!("{dir}/{tail}"),
        _ => norm,
    }
}
