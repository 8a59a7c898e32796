//! Builds [`ModuleData`] from a module's files: the text dump set, or an HloProto.

use crate::error::MemoryError;
use crate::model::{unpadded_size, Allocation, Buffer, LabelSource, Liveness, ModuleData};
use crate::proto::hlo::{decode_hlo_proto, decode_instruction_at, EventKind, HeapEvent, ProtoInstruction};
use crate::text::{buffer_assignment, live_range, live_range_key};
use std::collections::HashMap;
use std::path::Path;

/// From `-buffer-assignment.txt` + `-live-range.txt` (values file and HLO text only for labels).
pub fn from_text(
    name: &str,
    program_id: Option<u64>,
    ba_path: &Path,
    live_range_path: Option<&Path>,
    values_path: Option<&Path>,
    hlo_text: Option<&Path>,
) -> Result<ModuleData, MemoryError> {
    from_text_files(name, program_id, ba_path, live_range_path, values_path, hlo_text, None)
}

/// [`from_text`], with the `-memory-usage-report.txt` whose per-space totals show whether
/// the buffer assignment is complete.
pub fn from_text_files(
    name: &str,
    program_id: Option<u64>,
    ba_path: &Path,
    live_range_path: Option<&Path>,
    values_path: Option<&Path>,
    hlo_text: Option<&Path>,
    usage_report: Option<&Path>,
) -> Result<ModuleData, MemoryError> {
    let ba = buffer_assignment::parse_file(ba_path)?;
    let mut allocations = Vec::with_capacity(ba.allocations.len());
    let mut buffers = Vec::new();
    let mut seen_ids: crate::model::FastSet<u64> = Default::default();
    // Lines of each buffer, for error messages.
    let mut buffer_lines = Vec::new();
    for a in &ba.allocations {
        let pos = allocations.len();
        let mut alloc = Allocation {
            index: a.index,
            size: a.size,
            color: a.color,
            parameter: a.parameter.is_some(),
            maybe_live_out: a.maybe_live_out,
            // The text has no explicit flag; a parameter that may be live out is a donated one.
            aliased: a.parameter.is_some() && a.maybe_live_out,
            constant: a.constant,
            thread_local: a.thread_local,
            buffers: Vec::with_capacity(a.values.len()),
        };
        for v in &a.values {
            if !seen_ids.insert(v.id) {
                return Err(MemoryError::inconsistent(ba_path, Some(v.line), format!("value {} appears in two allocations", v.id)));
            }
            if v.offset.checked_add(v.size).map_or(true, |end| end > a.size) {
                return Err(MemoryError::inconsistent(
                    ba_path,
                    Some(v.line),
                    format!("value {} (offset {}, size {}) lies outside allocation {} of {} bytes", v.id, v.offset, v.size, a.index, a.size),
                ));
            }
            alloc.buffers.push(buffers.len());
            buffer_lines.push(v.line);
            buffers.push(Buffer {
                id: v.id,
                instruction: v.instruction.clone(),
                index: v.index.clone(),
                size: v.size,
                unpadded: unpadded_size(&v.shape, v.size),
                offset: v.offset,
                allocation: pos,
                shape: v.shape.clone(),
            });
        }
        allocations.push(alloc);
    }
    if let Some(total) = ba.total_bytes_used {
        check_total(ba_path, total, &allocations)?;
    }
    if let Some(report) = usage_report {
        check_space_totals(report, ba_path, &allocations)?;
    }
    // Without a values file (which lists every value: one the buffer assignment lacks is
    // an error when labels are read), a buffer assignment cut at a line boundary parses;
    // the usage report's totals catch lost allocations but not lost values of the last
    // one. The live range then names values that no allocation holds.
    let exact_check = values_path.is_some() || ba.has_embedded_values;
    let mut warnings = Vec::new();
    if !exact_check {
        if let Some(last) = ba.allocations.last().filter(|a| a.values.is_empty()) {
            warnings.push(format!(
                "{}:{}: the last allocation ({}) holds no value; the buffer assignment looks truncated, so the peak below may be too low (keep the -buffer-assignment-values.txt beside it to check)",
                ba_path.display(),
                last.line,
                last.index
            ));
        }
    }

    let needs_liveness = allocations.iter().any(|a| a.is_temp() && a.color == 0 && !a.buffers.is_empty());
    let liveness = match live_range_path {
        Some(path) => match live_range::parse_file(path)? {
            Some(lr) => {
                let mut ranges = Vec::with_capacity(buffers.len());
                for (b, &line) in buffers.iter().zip(&buffer_lines) {
                    let alloc = &allocations[b.allocation];
                    let range = lr.ranges.get(&live_range_key(&b.instruction, &b.index)).map(|&(s, e, _)| (s, e));
                    if range.is_none() && alloc.is_temp() && alloc.color == 0 {
                        return Err(MemoryError::inconsistent(
                            path,
                            None,
                            format!(
                                "no live range for value {} ({}{}) of {}:{line}; are the files from different compilations, or is this one truncated?",
                                b.id,
                                b.instruction,
                                if b.index.is_empty() { "{}" } else { &b.index },
                                ba_path.display()
                            ),
                        ));
                    }
                    ranges.push(range);
                }
                // Each value has its own key, so fewer matches than ranges means some
                // range has no value; only then build the set to name them.
                let matched = ranges.iter().filter(|r| r.is_some()).count();
                if !exact_check && matched < lr.ranges.len() {
                    let known: crate::model::FastSet<String> = buffers.iter().map(|b| live_range_key(&b.instruction, &b.index)).collect();
                    let mut missing: Vec<(&String, usize)> = lr.ranges.iter().filter(|(k, _)| !known.contains(*k)).map(|(k, &(_, _, line))| (k, line)).collect();
                    if !missing.is_empty() {
                        missing.sort_by_key(|&(_, line)| line);
                        warnings.push(format!(
                            "{}: {} value(s) of the live range are in no allocation of {} (first: {} at line {}); the buffer assignment looks truncated or comes from another compilation, so the peak below may be too low (keep the -buffer-assignment-values.txt beside it to check)",
                            path.display(),
                            missing.len(),
                            ba_path.display(),
                            missing[0].0,
                            missing[0].1
                        ));
                    }
                }
                Liveness::Schedule { sequence: lr.sequence, max: lr.max, ranges }
            }
            None if needs_liveness => {
                return Err(MemoryError::Incomplete {
                    module: name.to_string(),
                    message: format!("{} says the live range is not available; use the .hlo.pb dump (--xla_dump_hlo_as_proto)", path.display()),
                })
            }
            None => Liveness::None,
        },
        None if needs_liveness => {
            return Err(MemoryError::Incomplete {
                module: name.to_string(),
                message: format!("{} has no -live-range.txt beside it (needs --xla_dump_buffer_assignment_analysis, the default) and no .hlo.pb", ba_path.display()),
            })
        }
        None => Liveness::None,
    };

    // Older XLA puts the values inside the buffer-assignment file itself.
    let values_file = match values_path {
        Some(p) => Some(p.to_path_buf()),
        None if ba.has_embedded_values => Some(ba_path.to_path_buf()),
        None => None,
    };
    let mut sources = vec![ba_path.to_path_buf()];
    sources.extend(live_range_path.map(Path::to_path_buf));
    Ok(ModuleData {
        name: name.to_string(),
        program_id,
        allocations,
        buffers,
        liveness,
        labels: LabelSource::Text { values_file, hlo_text: hlo_text.map(Path::to_path_buf) },
        sources,
        other_traces: Vec::new(),
        warnings,
    })
}

pub(crate) fn check_total(path: &Path, total: u64, allocations: &[Allocation]) -> Result<(), MemoryError> {
    let sum = allocations.iter().try_fold(0u64, |s, a| s.checked_add(a.size));
    let Some(sum) = sum else {
        return Err(MemoryError::inconsistent(path, None, "allocation sizes add up to more than 2^64 bytes"));
    };
    if sum != total {
        return Err(MemoryError::inconsistent(
            path,
            None,
            format!("`Total bytes used: {total}` but the allocations add up to {sum} (truncated buffer assignment, or files from different compilations?)"),
        ));
    }
    Ok(())
}

/// The per-memory-space totals of `-memory-usage-report.txt` against the buffer
/// assignment's allocations: XLA sums the same allocations for both, so a difference
/// means a truncated buffer assignment (or files of different compilations).
fn check_space_totals(report: &Path, ba_path: &Path, allocations: &[Allocation]) -> Result<(), MemoryError> {
    let totals = crate::text::usage_report::parse_totals(report)?;
    if totals.is_empty() {
        return Ok(());
    }
    let mut spaces: Vec<u64> = allocations.iter().map(|a| a.color).collect();
    spaces.sort_unstable();
    spaces.dedup();
    for &(color, total, line) in &totals {
        let (sum, n) = allocations.iter().filter(|a| a.color == color).fold((Some(0u64), 0usize), |(s, n), a| (s.and_then(|s| s.checked_add(a.size)), n + 1));
        let sum = sum.ok_or_else(|| MemoryError::inconsistent(ba_path, None, format!("allocation sizes of memory space {color} add up to more than 2^64 bytes")))?;
        if sum != total {
            return Err(MemoryError::inconsistent(
                report,
                Some(line),
                format!(
                    "memory space {color} totals {total} bytes here, but the {n} allocations of {} in that space add up to {sum} (truncated buffer assignment, or files from different compilations?)",
                    ba_path.display()
                ),
            ));
        }
    }
    if let Some(c) = spaces.iter().find(|c| !totals.iter().any(|t| t.0 == **c)) {
        return Err(MemoryError::inconsistent(report, None, format!("no total for memory space {c}, which {} has allocations in (files from different compilations?)", ba_path.display())));
    }
    Ok(())
}

/// From an `xla.HloProto` (`*.hlo.pb`, `*.hlo_proto.pb`).
pub fn from_proto(path: &Path, fallback_name: &str, program_id: Option<u64>) -> Result<ModuleData, MemoryError> {
    // `*.hlo.pb.gz` (--xla_dump_compress_protos) is decompressed here.
    let bytes = crate::gz::read_all(path)?;
    from_proto_bytes(bytes, path, fallback_name, program_id)
}

/// From the bytes of an `xla.HloProto` (e.g. one read out of a profile's XSpace);
/// `path` names where they came from in messages.
pub fn from_proto_bytes(bytes: Vec<u8>, path: &Path, fallback_name: &str, program_id: Option<u64>) -> Result<ModuleData, MemoryError> {
    let wire_error = |e: crate::proto::wire::WireError| MemoryError::proto(path, format!("byte {}: {} (is this an xla.HloProto from --xla_dump_hlo_as_proto?)", e.offset, e.message));
    let proto = decode_hlo_proto(&bytes).map_err(wire_error)?;
    // Decode only the instructions that define buffers, once each.
    let mut instructions: HashMap<u64, ProtoInstruction> = HashMap::new();
    for lb in proto.logical_buffers.values() {
        if let std::collections::hash_map::Entry::Vacant(slot) = instructions.entry(lb.instruction_id) {
            if let Some(&span) = proto.instruction_spans.get(&lb.instruction_id) {
                slot.insert(decode_instruction_at(&bytes, span).map_err(wire_error)?);
            }
        }
    }
    drop(bytes);
    let name = if proto.module_name.is_empty() { fallback_name.to_string() } else { proto.module_name.clone() };
    let program_id = program_id.or(proto.module_id);

    let mut allocations = Vec::with_capacity(proto.allocations.len());
    let mut buffers = Vec::new();
    let mut buffer_pos: HashMap<u64, usize> = HashMap::new();
    let mut instruction_ids = HashMap::new();
    for a in &proto.allocations {
        let pos = allocations.len();
        let mut alloc = Allocation {
            index: a.index,
            size: a.size,
            color: a.color,
            parameter: a.entry_parameter,
            maybe_live_out: a.maybe_live_out,
            aliased: a.aliased_with_output.unwrap_or(a.entry_parameter && a.maybe_live_out),
            constant: a.constant,
            thread_local: a.thread_local,
            buffers: Vec::with_capacity(a.assigned.len()),
        };
        for &(id, offset, _assigned_size) in &a.assigned {
            let lb = proto
                .logical_buffers
                .get(&id)
                .ok_or_else(|| MemoryError::inconsistent(path, None, format!("allocation {} holds logical buffer {id}, which the proto does not define", a.index)))?;
            if buffer_pos.insert(id, buffers.len()).is_some() {
                return Err(MemoryError::inconsistent(path, None, format!("logical buffer {id} is assigned twice")));
            }
            let instr = instructions.get(&lb.instruction_id);
            let shape = instr.and_then(|i| i.shape.subshape(&lb.shape_index)).map(|s| s.to_text()).unwrap_or_default();
            let index = if instr.map_or(false, |i| matches!(i.shape, crate::proto::hlo::ProtoShape::Tuple(_))) {
                format!("{{{}}}", lb.shape_index.iter().map(u64::to_string).collect::<Vec<_>>().join(","))
            } else {
                String::new()
            };
            let instruction = instr.map(|i| i.name.clone()).filter(|n| !n.is_empty()).unwrap_or_else(|| lb.instruction_name.clone());
            instruction_ids.insert(id, lb.instruction_id);
            alloc.buffers.push(buffers.len());
            buffers.push(Buffer { id, instruction, index, size: lb.size, unpadded: unpadded_size(&shape, lb.size), offset, allocation: pos, shape });
        }
        allocations.push(alloc);
    }

    // XProf: a trace belongs to the allocation of its first event's buffer (the trace's
    // own allocation index is stale); use the first temp allocation of color 0 that owns one.
    let mut owner: HashMap<usize, usize> = HashMap::new();
    for (t, trace) in proto.traces.iter().enumerate() {
        if let Some(first) = trace.events.first() {
            if let Some(&b) = buffer_pos.get(&first.buffer_id) {
                owner.insert(buffers[b].allocation, t);
            }
        }
    }
    let mut chosen = None;
    let mut order: Vec<usize> = (0..allocations.len()).collect();
    order.sort_by_key(|&i| allocations[i].index);
    for i in order {
        let a = &allocations[i];
        if a.color == 0 && !a.is_indefinite() && !a.thread_local {
            if let Some(&t) = owner.get(&i) {
                chosen = Some(t);
                break;
            }
        }
    }
    if chosen.is_none() {
        // XProf's fallback: the trace with most events on buffers of memory space 0.
        let on_space0 = |t: &crate::proto::hlo::ProtoTrace| t.events.iter().filter(|e| buffer_pos.get(&e.buffer_id).map_or(false, |&b| allocations[buffers[b].allocation].color == 0)).count();
        chosen = proto.traces.iter().enumerate().map(|(t, tr)| (t, on_space0(tr))).filter(|&(_, n)| n > 0).max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))).map(|(t, _)| t);
    }
    let mut traces = proto.traces;
    let liveness = match chosen {
        Some(t) => {
            let events = std::mem::take(&mut traces[t].events);
            for (i, e) in events.iter().enumerate() {
                for id in [Some(e.buffer_id), (e.kind == EventKind::ShareWith).then_some(e.share_with)].into_iter().flatten() {
                    if !proto.logical_buffers.contains_key(&id) {
                        return Err(MemoryError::inconsistent(path, None, format!("heap-simulator event {i} names logical buffer {id}, which the proto does not define")));
                    }
                }
            }
            Liveness::Trace(events)
        }
        None => Liveness::None,
    };
    // The other traces (other memory spaces) with the allocation owning their first event.
    let mut other_traces: Vec<(Option<usize>, Vec<HeapEvent>)> = Vec::new();
    for (t, trace) in traces.into_iter().enumerate() {
        if Some(t) == chosen || trace.events.is_empty() {
            continue;
        }
        if trace.events.iter().any(|e| !proto.logical_buffers.contains_key(&e.buffer_id) || (e.kind == EventKind::ShareWith && !proto.logical_buffers.contains_key(&e.share_with))) {
            continue;
        }
        let owner = trace.events.first().and_then(|e| buffer_pos.get(&e.buffer_id)).map(|&b| buffers[b].allocation);
        other_traces.push((owner, trace.events));
    }
    // Buffers seen in a trace but assigned nowhere still need a size: add them,
    // outside any allocation's buffer list.
    let chosen_events: &[HeapEvent] = match &liveness {
        Liveness::Trace(events) => events,
        _ => &[],
    };
    for events in std::iter::once(chosen_events).chain(other_traces.iter().map(|(_, e)| e.as_slice())) {
        let temp_alloc = events.first().and_then(|e| buffer_pos.get(&e.buffer_id)).map(|&b| buffers[b].allocation).unwrap_or(0);
        for e in events {
            for id in [Some(e.buffer_id), (e.kind == EventKind::ShareWith).then_some(e.share_with)].into_iter().flatten() {
                if buffer_pos.contains_key(&id) {
                    continue;
                }
                let lb = &proto.logical_buffers[&id];
                let instr = instructions.get(&lb.instruction_id);
                let shape = instr.and_then(|i| i.shape.subshape(&lb.shape_index)).map(|s| s.to_text()).unwrap_or_default();
                buffer_pos.insert(id, buffers.len());
                instruction_ids.insert(id, lb.instruction_id);
                buffers.push(Buffer {
                    id,
                    instruction: instr.map(|i| i.name.clone()).unwrap_or_else(|| lb.instruction_name.clone()),
                    index: String::new(),
                    size: lb.size,
                    unpadded: unpadded_size(&shape, lb.size),
                    offset: 0,
                    allocation: temp_alloc,
                    shape,
                });
            }
        }
    }
    Ok(ModuleData {
        name,
        program_id,
        allocations,
        buffers,
        liveness,
        labels: LabelSource::Proto { instructions, instruction_ids, frames: proto.stack_frames },
        sources: vec![path.to_path_buf()],
        other_traces,
        warnings: Vec::new(),
    })
}
