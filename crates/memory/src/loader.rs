//! Builds [`ModuleData`] from a module's files: the text dump set, or an HloProto.

use crate::error::MemoryError;
use crate::model::{unpadded_size, Allocation, Buffer, LabelSource, Liveness, ModuleData};
use crate::proto::hlo::{decode_hlo_proto_limited, for_each_instruction, Budget, DecodeError, EventKind, HeapEvent, ProtoLogicalBuffer, ProtoShape};
use crate::text::{buffer_assignment, live_range, live_range_key, values};
use std::path::Path;

/// From `-buffer-assignment.txt` + `-live-range.txt` (values file and HLO text only for
/// labels), with the `-memory-usage-report.txt` whose per-space totals show whether the
/// buffer assignment is complete.
pub fn from_text(
    name: &str,
    program_id: Option<u64>,
    ba_path: &Path,
    live_range_path: Option<&Path>,
    values_path: Option<&Path>,
    hlo_text: Option<&Path>,
    usage_report: Option<&Path>,
) -> Result<ModuleData, MemoryError> {
    // The three files parse at once: the live range and the values index on threads of
    // their own (a million-value dump is 300 MB of text).
    let (ba, live_range, values) = std::thread::scope(|scope| {
        let live_range = live_range_path.map(|p| scope.spawn(move || live_range::parse_file(p)));
        let values = values_path.map(|p| scope.spawn(move || values::index(p)));
        let ba = buffer_assignment::parse_file(ba_path);
        (ba, live_range.map(joined), values.map(joined))
    });
    let mut ba = ba?;
    let mut allocations = Vec::with_capacity(ba.allocations.len());
    let n_values: usize = ba.allocations.iter().map(|a| a.values.len()).sum();
    // Shapes repeat: parse each distinct one once.
    let mut unpadded_cache: crate::model::FastMap<String, u64> = Default::default();
    let mut buffers = Vec::with_capacity(n_values);
    let max_id = ba.allocations.iter().flat_map(|a| a.values.iter().map(|v| v.id)).max().unwrap_or(0);
    let mut seen_ids = crate::model::IdSet::with_bound(n_values, max_id);
    // Lines of each buffer, for error messages.
    let mut buffer_lines = Vec::with_capacity(n_values);
    for a in &mut ba.allocations {
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
        for v in &mut a.values {
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
            // A shape's unpadded size does not depend on the value's size unless the shape
            // is a tuple or unreadable (then it is the size itself): cache the others.
            let unpadded = match unpadded_cache.get(v.shape.as_str()) {
                Some(&u) => u,
                None => {
                    let u = unpadded_size(&v.shape, v.size);
                    let fixed = !v.shape.starts_with('(') && oomdoc_units::Shape::parse(&v.shape).and_then(|s| s.unpadded_bytes()).is_ok();
                    if fixed && unpadded_cache.len() < 4096 {
                        unpadded_cache.insert(v.shape.clone(), u);
                    }
                    u
                }
            };
            buffers.push(Buffer {
                id: v.id,
                instruction: std::mem::take(&mut v.instruction),
                index: std::mem::take(&mut v.index),
                size: v.size,
                unpadded,
                offset: v.offset,
                allocation: pos,
                shape: std::mem::take(&mut v.shape),
            });
        }
        allocations.push(alloc);
    }
    // The values' strings moved into the buffers; free the rest now.
    ba.allocations = Vec::new();
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
    let liveness = match live_range_path.zip(live_range) {
        Some((path, live_range)) => match live_range? {
            Some(lr) => {
                let joined = lr.ranges.join_in_id_order(buffers.iter().map(|b| (b.id, b.instruction.as_str(), b.index.as_str())));
                let in_order = joined.is_some();
                let ranges = joined.unwrap_or_else(|| buffers.iter().map(|b| lr.ranges.get(&b.instruction, &b.index).map(|(s, e, _)| (s, e))).collect());
                for ((b, &line), range) in buffers.iter().zip(&buffer_lines).zip(&ranges) {
                    let alloc = &allocations[b.allocation];
                    if range.is_none() && alloc.is_temp() && alloc.color == 0 {
                        return Err(MemoryError::inconsistent(
                            path,
                            None,
                            format!(
                                "no live range for value {} ({}) of {}:{line}; are the files from different compilations, or is this one truncated?",
                                b.id,
                                live_range_key(&b.instruction, &b.index),
                                ba_path.display()
                            ),
                        ));
                    }
                }
                // Each value has its own key, so fewer matches than ranges means some
                // range has no value; only then build the set to name them.
                let matched = ranges.iter().filter(|r| r.is_some()).count();
                if !exact_check && !in_order && matched < lr.ranges.len() {
                    let known: crate::model::FastSet<String> = buffers.iter().map(|b| live_range_key(&b.instruction, &b.index)).collect();
                    let mut missing: Vec<(&str, usize)> = lr.ranges.iter().filter(|(k, _)| !known.contains(*k)).map(|(k, (_, _, line))| (k, line)).collect();
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
    let values = match values {
        Some(v) => Some(v?),
        None if ba.has_embedded_values => Some(values::index(ba_path)?),
        None => None,
    };
    if let Some(v) = &values {
        v.check_known(|id| seen_ids.contains(id))?;
        if let Some(total) = v.total_bytes_used {
            check_total(&v.path, total, &allocations)?;
        }
    }
    let mut sources = vec![ba_path.to_path_buf()];
    sources.extend(live_range_path.map(Path::to_path_buf));
    Ok(ModuleData {
        name: name.to_string(),
        program_id,
        allocations,
        buffers,
        liveness,
        labels: LabelSource::Text { values, hlo_text: hlo_text.map(Path::to_path_buf) },
        sources,
        other_traces: Vec::new(),
        warnings,
    })
}

/// A scoped thread's result; its panic goes on in the caller.
fn joined<T>(job: std::thread::ScopedJoinHandle<'_, T>) -> T {
    job.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
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

/// Decoded memory of a proto load never exceeds this many bytes per input byte (the
/// input itself, which stays in memory for labels, included), plus [`DECODE_SLACK_BYTES`]:
/// every byte kept is charged before it is allocated, and a load that would pass the
/// bound ends with [`MemoryError::TooLarge`]. Real dumps need 1.1 (a 48-layer
/// transformer) to 5.6 (a million-value synthetic module, the densest case measured);
/// see `docs/memory.md`. Each heap event is charged what its analysis keeps too, so
/// the bound covers loading and analysing (not rendering the report).
pub const MAX_BYTES_PER_INPUT_BYTE: u64 = 8;

/// The constant part of the bound: names, tables and the like of tiny inputs.
pub const DECODE_SLACK_BYTES: u64 = 16 << 20;

/// Caller's limits for one load, on top of [`MAX_BYTES_PER_INPUT_BYTE`] (which always
/// applies). Exceeding either gives [`MemoryError::TooLarge`] (the server answers 413).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes the decoded module may take.
    pub max_bytes: Option<u64>,
    /// Most records (logical buffers, assigned values, heap events, instruction names).
    pub max_records: Option<u64>,
}

impl Limits {
    /// The budget of a load whose input is `input_len` bytes.
    pub fn budget_for(&self, input_len: u64) -> Budget {
        let bound = MAX_BYTES_PER_INPUT_BYTE.saturating_mul(input_len).saturating_add(DECODE_SLACK_BYTES);
        Budget::new(self.max_bytes.map_or(bound, |m| m.min(bound)), self.max_records.unwrap_or(u64::MAX))
    }
}

/// An input of `len` bytes that alone passes `limits` is refused before it is read.
pub fn check_input_size(path: &Path, len: u64, limits: &Limits) -> Result<(), MemoryError> {
    match limits.max_bytes {
        Some(max) if len > max => Err(MemoryError::TooLarge { path: path.to_path_buf(), what: "the HloProto".into(), limit: max, needed: len, records: false }),
        _ => Ok(()),
    }
}

fn too_large(path: &Path, e: DecodeError) -> MemoryError {
    match e {
        DecodeError::Wire(e) => MemoryError::proto(path, format!("byte {}: {} (is this an xla.HloProto from --xla_dump_hlo_as_proto?)", e.offset, e.message)),
        DecodeError::TooLarge { what, limit, needed, records } => MemoryError::TooLarge { path: path.to_path_buf(), what: what.to_string(), limit, needed, records },
    }
}

/// From an `xla.HloProto` (`*.hlo.pb`, `*.hlo_proto.pb`).
pub fn from_proto(path: &Path, fallback_name: &str, program_id: Option<u64>) -> Result<ModuleData, MemoryError> {
    from_proto_limited(path, fallback_name, program_id, &Limits::default())
}

/// [`from_proto`] within `limits`. `*.hlo.pb.gz` (--xla_dump_compress_protos) is
/// decompressed here, never past `limits.max_bytes`.
pub fn from_proto_limited(path: &Path, fallback_name: &str, program_id: Option<u64>, limits: &Limits) -> Result<ModuleData, MemoryError> {
    let len = std::fs::metadata(path).map_err(|e| MemoryError::io(path, e))?.len();
    check_input_size(path, len, limits)?;
    let bytes = match limits.max_bytes {
        Some(max) => crate::gz::read_all_capped(path, max)?,
        None => crate::gz::read_all(path)?,
    };
    check_input_size(path, bytes.len() as u64, limits)?;
    from_proto_bytes_limited(bytes, path, fallback_name, program_id, limits)
}

/// From the bytes of an `xla.HloProto` (e.g. one read out of a profile's XSpace);
/// `path` names where they came from in messages.
pub fn from_proto_bytes(bytes: Vec<u8>, path: &Path, fallback_name: &str, program_id: Option<u64>) -> Result<ModuleData, MemoryError> {
    from_proto_bytes_limited(bytes, path, fallback_name, program_id, &Limits::default())
}

const NONE: u32 = u32::MAX;

/// Logical buffer id → position: a dense table when ids are dense (XLA numbers them
/// from 0), else a sorted list.
enum IdIndex {
    Dense(Vec<u32>),
    Sorted(Vec<(u64, u32)>),
}

impl IdIndex {
    fn build(ids: &[ProtoLogicalBuffer], budget: &mut Budget) -> Result<Result<IdIndex, u64>, DecodeError> {
        let n = ids.len() as u64;
        let max = ids.iter().map(|lb| lb.id).max().unwrap_or(0);
        if max < n.saturating_mul(2).saturating_add(1024) {
            budget.charge(4 * (max + 1), "the logical-buffer index")?;
            let mut v = vec![NONE; max as usize + 1];
            for (i, lb) in ids.iter().enumerate() {
                let slot = &mut v[lb.id as usize];
                if *slot != NONE {
                    return Ok(Err(lb.id));
                }
                *slot = i as u32;
            }
            Ok(Ok(IdIndex::Dense(v)))
        } else {
            budget.charge(16 * n, "the logical-buffer index")?;
            let mut v: Vec<(u64, u32)> = ids.iter().enumerate().map(|(i, lb)| (lb.id, i as u32)).collect();
            v.sort_unstable();
            if let Some(w) = v.windows(2).find(|w| w[0].0 == w[1].0) {
                return Ok(Err(w[0].0));
            }
            Ok(Ok(IdIndex::Sorted(v)))
        }
    }
    fn get(&self, id: u64) -> Option<usize> {
        match self {
            IdIndex::Dense(v) => usize::try_from(id).ok().and_then(|i| v.get(i)).filter(|&&p| p != NONE).map(|&p| p as usize),
            IdIndex::Sorted(v) => v.binary_search_by_key(&id, |x| x.0).ok().map(|i| v[i].1 as usize),
        }
    }
}

/// [`from_proto_bytes`] within `limits`.
pub fn from_proto_bytes_limited(bytes: Vec<u8>, path: &Path, fallback_name: &str, program_id: Option<u64>, limits: &Limits) -> Result<ModuleData, MemoryError> {
    let tl = |e: DecodeError| too_large(path, e);
    // Protocol buffers cannot exceed 2 GiB; positions below are kept as 32-bit offsets.
    if u32::try_from(bytes.len()).is_err() {
        return Err(MemoryError::proto(path, format!("{} bytes: larger than any protocol buffer (2 GiB); not an xla.HloProto", bytes.len())));
    }
    let mut budget = limits.budget_for(bytes.len() as u64);
    budget.charge(bytes.len() as u64, "the HloProto").map_err(tl)?;
    let mut proto = decode_hlo_proto_limited(&bytes, &mut budget).map_err(tl)?;
    let lbs = std::mem::take(&mut proto.logical_buffers);
    let index = match IdIndex::build(&lbs, &mut budget).map_err(tl)? {
        Ok(index) => index,
        Err(id) => return Err(MemoryError::inconsistent(path, None, format!("logical buffer {id} is defined twice"))),
    };

    let name = if proto.module_name.is_empty() { fallback_name.to_string() } else { std::mem::take(&mut proto.module_name) };
    let program_id = program_id.or(proto.module_id);
    let lb_name = |lb: &ProtoLogicalBuffer| -> String {
        let (off, len) = (lb.instruction_name.0 as usize, lb.instruction_name.1 as usize);
        bytes.get(off..off + len).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or("").to_string()
    };

    let n_assigned = proto.assigned.len();
    budget
        .charge((std::mem::size_of::<Buffer>() + 8 + 4) as u64 * n_assigned as u64 + (std::mem::size_of::<Allocation>() as u64) * proto.allocations.len() as u64, "buffers")
        .map_err(tl)?;
    let mut allocations = Vec::with_capacity(proto.allocations.len());
    let mut buffers: Vec<Buffer> = Vec::with_capacity(n_assigned);
    let mut instruction_of: Vec<u64> = Vec::with_capacity(n_assigned);
    // Logical buffer position → buffer position.
    let mut buffer_of: Vec<u32> = vec![NONE; lbs.len()];
    let mut shape_cache: crate::model::FastMap<String, Option<u64>> = Default::default();
    let mut unpadded_of = |shape: &str, size: u64| -> u64 {
        if let Some(u) = shape_cache.get(shape) {
            return u.unwrap_or(size);
        }
        let u = unpadded_size(shape, size);
        let parsed = if shape.starts_with('(') { None } else { oomdoc_units::Shape::parse(shape).and_then(|s| s.unpadded_bytes()).ok() };
        if shape_cache.len() < 4096 {
            shape_cache.insert(shape.to_string(), parsed);
        }
        u
    };
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
        for &(id, offset, _assigned_size) in &proto.assigned[a.assigned.clone()] {
            let l = index
                .get(id)
                .ok_or_else(|| MemoryError::inconsistent(path, None, format!("allocation {} holds logical buffer {id}, which the proto does not define", a.index)))?;
            if buffer_of[l] != NONE {
                return Err(MemoryError::inconsistent(path, None, format!("logical buffer {id} is assigned twice")));
            }
            let lb = &lbs[l];
            buffer_of[l] = buffers.len() as u32;
            alloc.buffers.push(buffers.len());
            instruction_of.push(lb.instruction_id);
            // Names and shapes come from the instructions, below.
            buffers.push(Buffer { id, instruction: String::new(), index: String::new(), size: lb.size, unpadded: lb.size, offset, allocation: pos, shape: String::new() });
        }
        allocations.push(alloc);
    }
    drop(std::mem::take(&mut proto.assigned));

    // Assigned buffer position of a logical buffer id.
    let assigned_pos = |buffer_of: &[u32], id: u32| -> Option<usize> { index.get(u64::from(id)).map(|l| buffer_of[l]).filter(|&b| b != NONE).map(|b| b as usize) };
    // XProf: a trace belongs to the allocation of its first event's buffer (the trace's
    // own allocation index is stale); use the first temp allocation of color 0 that owns one.
    let mut owner: Vec<Option<usize>> = vec![None; allocations.len()];
    for (t, trace) in proto.traces.iter().enumerate() {
        if let Some(first) = trace.events.first() {
            if let Some(b) = assigned_pos(&buffer_of, first.buffer) {
                owner[buffers[b].allocation] = Some(t);
            }
        }
    }
    let mut chosen = None;
    let mut order: Vec<usize> = (0..allocations.len()).collect();
    order.sort_by_key(|&i| allocations[i].index);
    for i in order {
        let a = &allocations[i];
        if a.color == 0 && !a.is_indefinite() && !a.thread_local {
            if let Some(t) = owner[i] {
                chosen = Some(t);
                break;
            }
        }
    }
    if chosen.is_none() {
        // XProf's fallback: the trace with most events on buffers of memory space 0.
        let on_space0 = |t: &crate::proto::hlo::ProtoTrace| t.events.iter().filter(|e| assigned_pos(&buffer_of, e.buffer).map_or(false, |b| allocations[buffers[b].allocation].color == 0)).count();
        chosen = proto.traces.iter().enumerate().map(|(t, tr)| (t, on_space0(tr))).filter(|&(_, n)| n > 0).max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))).map(|(t, _)| t);
    }
    let ids_of = |e: &HeapEvent| [Some(e.buffer), (e.kind == EventKind::ShareWith).then_some(e.share_with)];
    let mut traces = std::mem::take(&mut proto.traces);
    let mut chosen_events = Vec::new();
    if let Some(t) = chosen {
        chosen_events = std::mem::take(&mut traces[t].events);
        for (i, e) in chosen_events.iter().enumerate() {
            for id in ids_of(e).into_iter().flatten() {
                if index.get(u64::from(id)).is_none() {
                    return Err(MemoryError::inconsistent(path, None, format!("heap-simulator event {i} names logical buffer {id}, which the proto does not define")));
                }
            }
        }
    }
    // The other traces (other memory spaces) with the allocation owning their first event.
    let mut others: Vec<(Option<usize>, Vec<HeapEvent>)> = Vec::new();
    for (t, trace) in traces.into_iter().enumerate() {
        if Some(t) == chosen || trace.events.is_empty() {
            continue;
        }
        if trace.events.iter().any(|e| ids_of(e).into_iter().flatten().any(|id| index.get(u64::from(id)).is_none())) {
            continue;
        }
        let owner = trace.events.first().and_then(|e| assigned_pos(&buffer_of, e.buffer)).map(|b| buffers[b].allocation);
        others.push((owner, trace.events));
    }
    // Buffers seen in a trace but assigned nowhere still need a size: add them, outside
    // any allocation's buffer list (counted first, to size the vectors once). Then events
    // name buffer positions.
    {
        let mut extra = vec![false; lbs.len()];
        let mut n_extra = 0usize;
        for events in std::iter::once(&chosen_events).chain(others.iter().map(|(_, e)| e)) {
            for e in events {
                for (k, id) in [e.buffer, e.share_with].into_iter().enumerate() {
                    if k == 1 && e.kind != EventKind::ShareWith {
                        continue;
                    }
                    let l = index.get(u64::from(id)).expect("checked above");
                    if buffer_of[l] == NONE && !extra[l] {
                        extra[l] = true;
                        n_extra += 1;
                    }
                }
            }
        }
        budget.charge((std::mem::size_of::<Buffer>() + 8) as u64 * n_extra as u64, "buffers").map_err(tl)?;
        buffers.reserve_exact(n_extra);
        instruction_of.reserve_exact(n_extra);
    }
    for events in std::iter::once(&mut chosen_events).chain(others.iter_mut().map(|(_, e)| e)) {
        let temp_alloc = events.first().and_then(|e| assigned_pos(&buffer_of, e.buffer)).map(|b| buffers[b].allocation).unwrap_or(0);
        for e in events.iter_mut() {
            let share = e.kind == EventKind::ShareWith;
            for (k, id) in [e.buffer, e.share_with].into_iter().enumerate() {
                if k == 1 && !share {
                    continue;
                }
                let l = index.get(u64::from(id)).expect("checked above");
                if buffer_of[l] == NONE {
                    let lb = &lbs[l];
                    buffer_of[l] = buffers.len() as u32;
                    instruction_of.push(lb.instruction_id);
                    buffers.push(Buffer { id: lb.id, instruction: String::new(), index: String::new(), size: lb.size, unpadded: lb.size, offset: 0, allocation: temp_alloc, shape: String::new() });
                }
                if k == 0 {
                    e.buffer = buffer_of[l];
                } else {
                    e.share_with = buffer_of[l];
                }
            }
        }
    }
    let liveness = if chosen.is_some() { Liveness::Trace(chosen_events) } else { Liveness::None };

    // One walk over the module's instructions: the name and shape of each buffer's
    // defining instruction (buffers sorted by instruction id, binary-searched), and where
    // each such instruction lies, for labels.
    // by_instr (16 bytes), spans (16) and found (1) per buffer.
    budget.charge(40 * buffers.len() as u64, "buffer shapes").map_err(tl)?;
    let mut by_instr: Vec<(u64, u32)> = instruction_of.iter().enumerate().map(|(b, &i)| (i, b as u32)).collect();
    by_instr.sort_unstable();
    let mut spans: Vec<(u64, u32, u32)> = Vec::with_capacity(buffers.len().min(1 << 20));
    let mut found = vec![false; buffers.len()];
    let mut shape_memo: crate::model::FastMap<&[u8], (String, Option<u64>)> = Default::default();
    for_each_instruction(&bytes, proto.module_span, |raw| {
        let id = raw.id;
        let first = by_instr.partition_point(|x| x.0 < id);
        if by_instr.get(first).map_or(true, |x| x.0 != id) {
            return Ok(());
        }
        let name = raw.name()?;
        // Array shapes repeat: their text and unpadded size are made once per distinct
        // encoding. Other shapes (tuples) are decoded for each instruction.
        let raw_shape = raw.shape_bytes();
        let (array, other) = match shape_memo.get(raw_shape) {
            Some(hit) => (Some(hit.clone()), None),
            None => match {
                budget.check_transient(crate::proto::hlo::SHAPE_BYTES_PER_BYTE * raw_shape.len() as u64, "an instruction's shape")?;
                raw.shape()?
            } {
                shape @ ProtoShape::Array { .. } => {
                    let text = shape.to_text();
                    let parsed = oomdoc_units::Shape::parse(&text).and_then(|s| s.unpadded_bytes()).ok();
                    if shape_memo.len() < 4096 {
                        shape_memo.insert(raw_shape, (text.clone(), parsed));
                    }
                    (Some((text, parsed)), None)
                }
                shape => (None, Some(shape)),
            },
        };
        if spans.len() == spans.capacity() {
            budget.charge(16 * spans.capacity().max(1) as u64, "instructions")?;
        }
        spans.push((id, raw.offset as u32, raw.body.len() as u32));
        let tuple = matches!(other, Some(ProtoShape::Tuple(_)));
        for &(_, b) in by_instr[first..].iter().take_while(|x| x.0 == id) {
            let b = b as usize;
            let buf = &mut buffers[b];
            let lb = &lbs[index.get(buf.id).expect("a buffer's logical buffer")];
            let (shape, unpadded) = match (&array, &other) {
                (Some((text, parsed)), _) if lb.shape_index.is_empty() => (text.clone(), parsed.unwrap_or(lb.size)),
                (Some(_), _) => (String::new(), unpadded_of("", lb.size)),
                (None, other) => {
                    let text = other.as_ref().and_then(|s| s.subshape(&lb.shape_index)).map(|s| s.to_text()).unwrap_or_default();
                    let u = unpadded_of(&text, lb.size);
                    (text, u)
                }
            };
            // Assigned values fall back on the logical buffer's name and show a tuple index;
            // values seen only in a trace do neither (as XProf).
            let (name, index) = if b < n_assigned {
                let name = if name.is_empty() { lb_name(lb) } else { name.clone() };
                let index = if tuple { format!("{{{}}}", lb.shape_index.iter().map(u64::to_string).collect::<Vec<_>>().join(",")) } else { String::new() };
                (name, index)
            } else {
                (name.clone(), String::new())
            };
            budget.charge((name.len() + index.len() + shape.len()) as u64, "buffer names and shapes")?;
            buf.unpadded = unpadded;
            (buf.instruction, buf.index, buf.shape) = (name, index, shape);
            found[b] = true;
        }
        Ok(())
    })
    .map_err(tl)?;
    drop(by_instr);
    // Several instructions with one id: the last one wins, as it always did.
    spans.reverse();
    spans.sort_by_key(|s| s.0);
    spans.dedup_by_key(|s| s.0);
    for (buf, _) in buffers.iter_mut().zip(&found).filter(|(_, f)| !**f) {
        let lb = &lbs[index.get(buf.id).expect("a buffer's logical buffer")];
        buf.instruction = lb_name(lb);
        budget.charge(buf.instruction.len() as u64, "buffer names").map_err(tl)?;
        buf.unpadded = unpadded_of("", lb.size);
    }
    drop(found);
    Ok(ModuleData {
        name,
        program_id,
        allocations,
        buffers,
        liveness,
        labels: LabelSource::Proto { bytes, spans, instruction_of, frames: std::mem::take(&mut proto.stack_frames) },
        sources: vec![path.to_path_buf()],
        other_traces: others,
        warnings: Vec::new(),
    })
}
