//! The analysis result: what `--format json` prints (see `docs/memory.md` for the
//! contract) plus a few fields for the text and HTML views that are not serialized.

use crate::analysis::Axis;
use crate::error::MemoryError;
use crate::labels::{resolve_labels, Label};
use crate::model::ModuleData;
use serde::Serialize;
use std::collections::HashSet;

/// Buffers smaller than this are merged into one entry, as XProf's `kSmallBufferSize`.
pub const SMALL_BUFFER_BYTES: u64 = 16 * 1024;
/// The name XProf gives the merged entry.
pub const SMALL_BUFFER_NAME: &str = "small (<16384 bytes)";

/// `{"modules": [...]}`.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryReport {
    pub modules: Vec<ModuleReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModuleReport {
    pub name: String,
    /// Temp heap at its simulated peak + parameters, outputs (aliased once) and constants:
    /// XProf's `peakHeapMib` × 2^20.
    pub peak_bytes: u64,
    pub peak_unpadded_bytes: u64,
    /// Index into `timeline` where the peak is reached.
    pub peak_position: u64,
    pub peak_instruction: String,
    /// `memory_analysis()` figures.
    pub arguments_bytes: u64,
    pub outputs_bytes: u64,
    pub alias_bytes: u64,
    pub temp_bytes: u64,
    pub constants_bytes: u64,
    /// All allocations of memory space 0 except thread-local (XProf's `totalBufferAllocationMib`).
    pub total_allocation_bytes: u64,
    /// `total_allocation_bytes - peak_bytes`: arena space the packing could not use.
    pub fragmentation_bytes: u64,
    pub buffers_at_peak: Vec<BufferAtPeak>,
    pub timeline: Vec<TimelinePoint>,
    /// The memory space the peak, buffers and timeline are for (0 = device/HBM, 5 = host).
    pub memory_space: u64,
    /// `memory_analysis()`'s host twins: allocations in host memory (space 5), which the
    /// device figures above leave out.
    pub host_arguments_bytes: u64,
    pub host_outputs_bytes: u64,
    pub host_alias_bytes: u64,
    pub host_temp_bytes: u64,
    /// Every memory space with an allocation.
    pub memory_spaces: Vec<crate::spaces::MemorySpaceSummary>,
    /// Doubts about the input that did not stop the analysis, e.g. a buffer-assignment
    /// file that looks truncated (the peak may then be too low). Empty when none.
    pub warnings: Vec<String>,

    #[serde(skip)]
    pub program_id: Option<u64>,
    #[serde(skip)]
    pub thread_local_bytes: u64,
    /// Simulated temp heap at the peak (without indefinite allocations).
    #[serde(skip)]
    pub temp_peak_bytes: u64,
    /// Parameters + outputs − aliased + constants (what every moment carries).
    #[serde(skip)]
    pub indefinite_bytes: u64,
    #[serde(skip)]
    pub axis: Axis,
    #[serde(skip)]
    pub sources: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BufferAtPeak {
    /// Defining instruction (`name{i}` for a tuple element), or [`SMALL_BUFFER_NAME`].
    pub name: String,
    pub shape: String,
    pub size_bytes: u64,
    pub unpadded_bytes: u64,
    /// `Parameter`, `Output`, `Temporary`, `Constant`, `Thread-local`, or `Small` for the merged entry.
    pub group: String,
    pub op_name: String,
    /// `file:line` of the innermost user frame, or `""`.
    pub source: String,
    #[serde(skip)]
    pub logical_buffer_id: Option<u64>,
    #[serde(skip)]
    pub opcode: String,
    /// Number of buffers merged into this entry (1 for a real buffer).
    #[serde(skip)]
    pub count: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimelinePoint {
    pub position: u64,
    pub instruction: String,
    pub bytes: u64,
    pub unpadded_bytes: u64,
}

impl ModuleReport {
    /// Padding at the peak: Σ(size − unpadded) over the buffers at the peak.
    pub fn padding_bytes(&self) -> u64 {
        self.buffers_at_peak.iter().fold(0u64, |s, b| s.saturating_add(b.size_bytes.saturating_sub(b.unpadded_bytes)))
    }

    /// Largest real buffers (the merged small entry excluded).
    pub fn top_buffers(&self, n: usize) -> impl Iterator<Item = &BufferAtPeak> {
        self.buffers_at_peak.iter().filter(|b| b.logical_buffer_id.is_some()).take(n)
    }
}

pub fn build_report(m: &ModuleData) -> Result<ModuleReport, MemoryError> {
    build_report_for(m, crate::spaces::DEVICE_MEMORY_SPACE)
}

/// The report for one memory space (XProf's "Memory Types"): its temp heap, its
/// indefinite allocations; the `memory_analysis()` figures are the module's.
pub fn build_report_for(m: &ModuleData, space: u64) -> Result<ModuleReport, MemoryError> {
    check_sizes(m)?;
    let mut profile = crate::spaces::temp_profile_for(m, space).map_err(|msg| MemoryError::inconsistent(m.sources.first().map(|p| p.as_path()).unwrap_or(std::path::Path::new(&m.name)), None, msg))?;

    // memory_analysis() figures, split device / host as XLA's CompiledMemoryStats
    // (`PopulateBufferStatsFromAllocations`: host = memory space 5, device = the rest).
    let host = crate::spaces::HOST_MEMORY_SPACE;
    // Every subset of the allocations sums below their checked total: no wrap possible.
    let sum = |pred: &dyn Fn(&crate::model::Allocation) -> bool| -> u64 { m.allocations.iter().filter(|a| pred(a)).fold(0u64, |s, a| s.saturating_add(a.size)) };
    let arguments_bytes = sum(&|a| a.parameter && a.color != host);
    let outputs_bytes = sum(&|a| a.maybe_live_out && a.color != host);
    let alias_bytes = sum(&|a| a.parameter && a.aliased && a.color != host);
    let temp_bytes = sum(&|a| a.is_temp() && a.color != host);
    let host_arguments_bytes = sum(&|a| a.parameter && a.color == host);
    let host_outputs_bytes = sum(&|a| a.maybe_live_out && a.color == host);
    let host_alias_bytes = sum(&|a| a.parameter && a.aliased && a.color == host);
    let host_temp_bytes = sum(&|a| a.is_temp() && a.color == host);
    let constants_bytes = sum(&|a| a.constant && a.color != host);
    let thread_local_bytes = sum(&|a| a.thread_local);
    let total_allocation_bytes = sum(&|a| a.color == space && !a.thread_local);

    // Indefinite allocations: one representative buffer each (the first largest), and
    // their allocation sizes on top of every point of the temp heap.
    let mut indefinite_bytes = 0u64;
    let mut shown: Vec<usize> = Vec::new();
    for a in m.allocations.iter().filter(|a| a.color == space && a.is_indefinite()) {
        let mut best: Option<usize> = None;
        for &b in &a.buffers {
            if best.map_or(true, |x| m.buffers[b].size > m.buffers[x].size) {
                best = Some(b);
            }
        }
        if let Some(b) = best {
            indefinite_bytes = indefinite_bytes.saturating_add(a.size);
            // XProf shows the representatives only for the default memory space.
            if space == crate::spaces::DEVICE_MEMORY_SPACE {
                shown.push(b);
            }
        }
    }
    shown.extend(profile.live_at_peak.iter().copied());

    let wanted: HashSet<u64> = shown.iter().map(|&b| m.buffers[b].id).collect();
    let labels = resolve_labels(m, &wanted)?;
    let no_label = Label::default();

    let mut buffers_at_peak = Vec::new();
    let (mut small_bytes, mut small_unpadded, mut small_count) = (0u64, 0u64, 0u64);
    // Sort key per entry: (size desc, allocation index, id) for a deterministic order
    // where XProf's sort is unstable.
    let mut keyed: Vec<((u64, u64, u64), BufferAtPeak)> = Vec::new();
    for &b in &shown {
        let buf = &m.buffers[b];
        if buf.size < SMALL_BUFFER_BYTES {
            small_bytes = small_bytes.saturating_add(buf.size);
            small_unpadded = small_unpadded.saturating_add(buf.unpadded);
            small_count += 1;
            continue;
        }
        let alloc = &m.allocations[buf.allocation];
        let label = labels.get(&buf.id).unwrap_or(&no_label);
        keyed.push((
            (buf.size, alloc.index, buf.id),
            BufferAtPeak {
                name: buf.display_name(),
                shape: buf.shape.clone(),
                size_bytes: buf.size,
                unpadded_bytes: buf.unpadded,
                group: alloc.group().to_string(),
                op_name: label.op_name.clone(),
                source: label.source.clone(),
                logical_buffer_id: Some(buf.id),
                opcode: label.opcode.clone(),
                count: 1,
            },
        ));
    }
    if small_count > 0 {
        keyed.push((
            (small_bytes, u64::MAX, u64::MAX),
            BufferAtPeak {
                name: SMALL_BUFFER_NAME.to_string(),
                shape: String::new(),
                size_bytes: small_bytes,
                unpadded_bytes: small_unpadded,
                group: "Small".to_string(),
                op_name: String::new(),
                source: String::new(),
                logical_buffer_id: None,
                opcode: String::new(),
                count: small_count,
            },
        ));
    }
    keyed.sort_by(|(a, _), (b, _)| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    buffers_at_peak.extend(keyed.into_iter().map(|(_, b)| b));

    let peak_instruction = profile.points.get(profile.peak_index).map(|p| p.0.clone()).unwrap_or_default();
    let source = || m.sources.first().map(|p| p.as_path()).unwrap_or(std::path::Path::new(&m.name));
    let too_big = |what: &str| MemoryError::inconsistent(source(), None, format!("{what} exceeds 2^64 bytes: impossible sizes in the input"));
    // The names move from the profile into the timeline (one string per point, not two).
    let mut timeline: Vec<TimelinePoint> = Vec::with_capacity(profile.points.len());
    for (i, (instr, bytes, unpadded)) in std::mem::take(&mut profile.points).into_iter().enumerate() {
        let bytes = bytes.checked_add(indefinite_bytes).ok_or_else(|| too_big(&format!("the memory in use at position {i} ({instr})")))?;
        timeline.push(TimelinePoint { position: i as u64, instruction: instr, bytes, unpadded_bytes: unpadded.saturating_add(indefinite_bytes) });
    }
    let peak_bytes = profile.peak_bytes.checked_add(indefinite_bytes).ok_or_else(|| too_big("the peak"))?;
    Ok(ModuleReport {
        name: m.name.clone(),
        peak_bytes,
        peak_unpadded_bytes: profile.peak_unpadded_bytes.saturating_add(indefinite_bytes),
        peak_position: profile.peak_index as u64,
        peak_instruction,
        arguments_bytes,
        outputs_bytes,
        alias_bytes,
        temp_bytes,
        constants_bytes,
        total_allocation_bytes,
        fragmentation_bytes: total_allocation_bytes.saturating_sub(peak_bytes),
        buffers_at_peak,
        timeline,
        memory_space: space,
        host_arguments_bytes,
        host_outputs_bytes,
        host_alias_bytes,
        host_temp_bytes,
        memory_spaces: crate::spaces::summarize_spaces(m),
        warnings: m.warnings.clone(),
        program_id: m.program_id,
        thread_local_bytes,
        temp_peak_bytes: profile.peak_bytes,
        indefinite_bytes,
        axis: profile.axis,
        sources: m.sources.iter().map(|p| p.display().to_string()).collect(),
    })
}

/// XLA sizes are `int64`: a size past `i64::MAX` (a negative size read as unsigned, or a
/// crafted file) is impossible, as are allocations whose total passes 2^64 bytes. Refuse
/// them by name before any sum, so that no total can wrap.
pub fn check_sizes(m: &ModuleData) -> Result<(), MemoryError> {
    let source = m.sources.first().map(|p| p.as_path()).unwrap_or(std::path::Path::new(&m.name));
    let bad = |msg: String| MemoryError::inconsistent(source, None, msg);
    const MAX: u64 = i64::MAX as u64;
    let mut total: u64 = 0;
    for a in &m.allocations {
        if a.size > MAX {
            return Err(bad(format!("allocation {} has an impossible size {} (more than 2^63 − 1 bytes; a negative int64?)", a.index, a.size)));
        }
        total = total
            .checked_add(a.size)
            .ok_or_else(|| bad(format!("allocation sizes add up to more than 2^64 bytes at allocation {} ({} bytes): impossible sizes in the input", a.index, a.size)))?;
    }
    for b in &m.buffers {
        if b.unpadded == u64::MAX {
            return Err(bad(format!("buffer {} (logical buffer {}) has shape {}, whose bytes do not fit in 64 bits: an impossible shape", b.display_name(), b.id, b.shape)));
        }
        if b.size > MAX || b.offset > MAX {
            return Err(bad(format!(
                "buffer {} (logical buffer {}, shape {}) has an impossible size {} or offset {} (more than 2^63 − 1 bytes; a negative int64?)",
                b.display_name(),
                b.id,
                if b.shape.is_empty() { "?" } else { &b.shape },
                b.size,
                b.offset
            )));
        }
    }
    Ok(())
}
