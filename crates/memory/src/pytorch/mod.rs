//! PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot()`, or a pickled
//! `torch.cuda.memory_snapshot()` list): a bounded pickle reader that runs nothing
//! ([`pickle`]), the typed snapshot ([`snapshot`]), the per-device analysis
//! ([`analysis`]) and its text/JSON/HTML views ([`render`]).

pub mod analysis;
pub mod pickle;
pub mod render;
pub mod snapshot;

use crate::error::MemoryError;
use crate::loader::Limits;
use analysis::{AnalysisOptions, DeviceReport};
use pickle::{PickleError, PickleLimits};
use snapshot::Snapshot;
use std::path::{Path, PathBuf};

/// Whether `head` (a file's first bytes) starts a pickle of protocol 2 to 5, which no
/// XLA dump (protobuf, gzip or text) does.
pub fn looks_like_pickle(head: &[u8]) -> bool {
    matches!(head, [0x80, 2..=5, ..])
}

/// Whether the file at `path` is a pickle (by content, not name).
pub fn is_snapshot_file(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 2];
    path.is_file() && std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head)).is_ok() && looks_like_pickle(&head)
}

fn pickle_error(path: &Path, e: PickleError) -> MemoryError {
    match e {
        PickleError::TooLarge { what, limit, needed, records } => MemoryError::TooLarge { path: path.to_path_buf(), what: what.to_string(), limit, needed, records },
        other => MemoryError::Snapshot { path: path.to_path_buf(), message: other.to_string() },
    }
}

/// Reads a snapshot from any reader; `input_len` (the file's size, when known) sets the
/// memory budget as for the `.hlo.pb` decoder: at most
/// [`crate::MAX_BYTES_PER_INPUT_BYTE`] × its size plus [`crate::DECODE_SLACK_BYTES`],
/// or the caller's [`Limits`].
pub fn read_snapshot<R: std::io::Read>(path: &Path, reader: R, input_len: u64, limits: &Limits) -> Result<Snapshot, MemoryError> {
    let mut budget = limits.budget_for(input_len);
    let pickle_limits = PickleLimits { max_values: limits.max_records.unwrap_or(PickleLimits::default().max_values), ..Default::default() };
    let p = pickle::read_pickle(reader, &mut budget, pickle_limits).map_err(|e| pickle_error(path, e))?;
    let mut snap = snapshot::from_pickle(p, &mut budget).map_err(|e| match e {
        snapshot::ShapeError::NotASnapshot(message) => MemoryError::Snapshot { path: path.to_path_buf(), message },
        snapshot::ShapeError::TooLarge(e) => pickle_error(path, e.into()),
    })?;
    snap.budget_used = budget.used;
    snap.warnings.extend(analysis::consistency_warnings(&snap));
    Ok(snap)
}

pub fn load_snapshot(path: &Path, limits: &Limits) -> Result<Snapshot, MemoryError> {
    let file = std::fs::File::open(path).map_err(|e| MemoryError::io(path, e))?;
    let len = file.metadata().map_err(|e| MemoryError::io(path, e))?.len();
    crate::loader::check_input_size(path, len, limits)?;
    read_snapshot(path, file, len, limits)
}

/// A snapshot's report: one entry per device.
#[derive(Debug)]
pub struct SnapshotReport {
    pub path: PathBuf,
    pub generation: &'static str,
    pub allocator_settings: Vec<(String, String)>,
    pub expandable_segments: Option<bool>,
    pub warnings: Vec<String>,
    pub devices: Vec<DeviceReport>,
}

pub fn analyze(path: &Path, snap: &Snapshot, opts: &AnalysisOptions) -> SnapshotReport {
    SnapshotReport {
        path: path.to_path_buf(),
        generation: snap.generation,
        allocator_settings: snap.allocator_settings.clone(),
        expandable_segments: snap.expandable_segments,
        warnings: snap.warnings.clone(),
        devices: snap.devices().into_iter().map(|d| analysis::analyze_device(snap, d, opts)).collect(),
    }
}
