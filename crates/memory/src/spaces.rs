//! Memory spaces (XLA colors): the device's default memory (0, HBM), host memory
//! (`Layout::kHostMemorySpace` = 5, e.g. `memory_kind="pinned_host"` and activation
//! offloading) and any other. The peak of one space is computed like XProf's memory
//! viewer does for its "Memory Types" selector: that space's heap-simulator trace (or
//! its temp values' live ranges) plus that space's indefinite allocations; allocations
//! of other spaces never count in it.

use crate::analysis::{replay_trace, sweep_schedule_color, temp_profile, Axis, TempProfile};
use crate::model::{Liveness, ModuleData};
use serde::Serialize;

/// XLA `Layout::kDefaultMemorySpace`.
pub const DEVICE_MEMORY_SPACE: u64 = 0;
/// XLA `Layout::kHostMemorySpace`.
pub const HOST_MEMORY_SPACE: u64 = 5;

/// `hbm` / `device` / `default` → 0, `host` → 5, or a number.
pub fn parse_memory_space(s: &str) -> Result<u64, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "hbm" | "device" | "default" => Ok(DEVICE_MEMORY_SPACE),
        "host" | "pinned_host" => Ok(HOST_MEMORY_SPACE),
        other => other.parse().map_err(|_| format!("unknown memory space `{s}` (hbm, host or a number)")),
    }
}

/// `hbm`, `host` or `space N`.
pub fn space_name(space: u64) -> String {
    match space {
        DEVICE_MEMORY_SPACE => "hbm".into(),
        HOST_MEMORY_SPACE => "host".into(),
        n => format!("space {n}"),
    }
}

/// One memory space's allocations, as `memory_analysis()` splits device and host.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MemorySpaceSummary {
    pub memory_space: u64,
    pub name: String,
    /// Σ allocation sizes of this space (thread-local included).
    pub allocation_bytes: u64,
    pub arguments_bytes: u64,
    pub outputs_bytes: u64,
    pub alias_bytes: u64,
    pub temp_bytes: u64,
    pub constants_bytes: u64,
}

/// Every memory space that has an allocation, in ascending order.
pub fn summarize_spaces(m: &ModuleData) -> Vec<MemorySpaceSummary> {
    let mut spaces: Vec<u64> = m.allocations.iter().map(|a| a.color).collect();
    spaces.sort_unstable();
    spaces.dedup();
    spaces
        .into_iter()
        .map(|c| {
            // Saturating, never wrapping (build_report_for has refused totals past 2^64).
            let sum = |pred: &dyn Fn(&crate::model::Allocation) -> bool| -> u64 { m.allocations.iter().filter(|a| a.color == c && pred(a)).fold(0u64, |s, a| s.saturating_add(a.size)) };
            MemorySpaceSummary {
                memory_space: c,
                name: space_name(c),
                allocation_bytes: sum(&|_| true),
                arguments_bytes: sum(&|a| a.parameter),
                outputs_bytes: sum(&|a| a.maybe_live_out),
                alias_bytes: sum(&|a| a.parameter && a.aliased),
                temp_bytes: sum(&|a| a.is_temp()),
                constants_bytes: sum(&|a| a.constant),
            }
        })
        .collect()
}

fn empty(axis: Axis) -> TempProfile {
    TempProfile {
        axis,
        points: Vec::new(),
        peak_index: 0,
        peak_bytes: 0,
        peak_unpadded_bytes: 0,
        live_at_peak: Vec::new(),
    }
}

/// The temp heap of memory space `space` (indefinite allocations not included).
pub fn temp_profile_for(m: &ModuleData, space: u64) -> Result<TempProfile, String> {
    if space == DEVICE_MEMORY_SPACE {
        return temp_profile(m);
    }
    match &m.liveness {
        Liveness::Schedule { sequence, max, ranges } => sweep_schedule_color(m, sequence, *max, ranges, space),
        // XProf: the trace owned by a non-indefinite allocation of the space (lowest
        // allocation index), else the trace with most events on buffers of the space.
        Liveness::Trace(_) | Liveness::None => {
            let owned = m
                .other_traces
                .iter()
                .filter_map(|(owner, events)| owner.map(|o| (o, events)))
                .filter(|(o, _)| m.allocations[*o].color == space && !m.allocations[*o].is_indefinite() && !m.allocations[*o].thread_local)
                .min_by_key(|(o, _)| m.allocations[*o].index)
                .map(|(_, e)| e);
            let of_space = |events: &Vec<crate::proto::hlo::HeapEvent>| {
                events
                    .iter()
                    .filter(|e| m.buffers.get(e.buffer as usize).map_or(false, |b| m.allocations[b.allocation].color == space))
                    .count()
            };
            let events = owned.or_else(|| m.other_traces.iter().map(|(_, e)| e).filter(|e| of_space(e) > 0).max_by_key(|e| of_space(e)));
            match events {
                Some(events) => replay_trace(m, events),
                None => Ok(empty(if matches!(m.liveness, Liveness::Trace(_)) { Axis::HeapEvent } else { Axis::Schedule })),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Allocation, Buffer, LabelSource, ModuleData};
    use crate::report::build_report_for;

    /// A module with device and host (space 5) arguments, outputs and temps, liveness from
    /// a schedule: each space's peak holds only its own allocations.
    fn module() -> ModuleData {
        let alloc = |index, size, color, parameter, out, buffers: Vec<usize>| Allocation {
            index,
            size,
            color,
            parameter,
            maybe_live_out: out,
            buffers,
            ..Default::default()
        };
        let buf = |id, size, allocation, offset| Buffer {
            id,
            instruction: format!("v{id}"),
            size,
            unpadded: size,
            offset,
            allocation,
            shape: format!("u8[{size}]"),
            ..Default::default()
        };
        ModuleData {
            name: "jit_offload".into(),
            program_id: Some(1),
            allocations: vec![
                alloc(0, 1 << 20, 0, true, false, vec![0]),
                alloc(1, 4 << 20, 5, true, false, vec![1]),
                alloc(2, 2 << 20, 0, false, true, vec![2]),
                alloc(3, 3 << 20, 0, false, false, vec![3, 4]),
                alloc(4, 8 << 20, 5, false, false, vec![5, 6]),
                alloc(5, 1 << 20, 5, false, true, vec![7]),
            ],
            buffers: vec![
                buf(0, 1 << 20, 0, 0),
                buf(1, 4 << 20, 1, 0),
                buf(2, 2 << 20, 2, 0),
                buf(3, 2 << 20, 3, 0),
                buf(4, 1 << 20, 3, 2 << 20),
                buf(5, 8 << 20, 4, 0),
                buf(6, 4 << 20, 4, 0),
                buf(7, 1 << 20, 5, 0),
            ],
            liveness: Liveness::Schedule {
                sequence: (0..4).map(|i| format!("op{i}")).collect(),
                max: 4,
                ranges: vec![None, None, None, Some((0, 1)), Some((1, 2)), Some((2, 3)), Some((0, 1)), None],
            },
            labels: LabelSource::Text { values: None, hlo_text: None },
            sources: Vec::new(),
            other_traces: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn each_space_counts_only_its_own_allocations() {
        let m = module();
        let dev = build_report_for(&m, 0).unwrap();
        // Device: args 1 MiB + outputs 2 MiB + temps 2+1 MiB live together.
        assert_eq!(dev.peak_bytes, 6 << 20);
        assert_eq!((dev.arguments_bytes, dev.outputs_bytes, dev.temp_bytes), (1 << 20, 2 << 20, 3 << 20));
        assert_eq!((dev.host_arguments_bytes, dev.host_outputs_bytes, dev.host_temp_bytes), (4 << 20, 1 << 20, 8 << 20));
        assert!(dev.buffers_at_peak.iter().all(|b| !["v1", "v5", "v6", "v7"].contains(&b.name.as_str())));
        let host = build_report_for(&m, HOST_MEMORY_SPACE).unwrap();
        // Host: args 4 MiB + outputs 1 MiB + the larger of the two temps sharing offset 0.
        assert_eq!(host.peak_bytes, 13 << 20);
        assert_eq!(host.memory_space, 5);
        assert_eq!(host.total_allocation_bytes, 13 << 20);
        assert!(host.buffers_at_peak.iter().any(|b| b.name == "v5"));
        let spaces = summarize_spaces(&m);
        assert_eq!(spaces.iter().map(|s| (s.name.as_str(), s.allocation_bytes)).collect::<Vec<_>>(), [("hbm", 6 << 20), ("host", 13 << 20)]);
        assert_eq!(parse_memory_space("host"), Ok(5));
        assert_eq!(parse_memory_space("HBM"), Ok(0));
        assert_eq!(parse_memory_space("1"), Ok(1));
        assert!(parse_memory_space("vmem?").is_err());
    }
}
