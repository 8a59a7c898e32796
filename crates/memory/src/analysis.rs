//! The temp heap over time and its peak, computed two ways:
//! * [`replay_trace`]: XProf's `HeapSimulatorStats` replay of the heap-simulator
//!   events (exact XProf semantics, x axis = heap event);
//! * [`sweep_schedule`]: live ranges over the schedule, one value per (allocation,
//!   offset) at a time (x axis = schedule position). Both give the same peak bytes on
//!   real dumps; the trace is preferred when an HloProto is available.

use crate::model::{Liveness, ModuleData};
use crate::proto::hlo::HeapEvent;
use std::collections::{BTreeMap, HashMap};

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Heap-simulator event index (XProf's "program order").
    HeapEvent,
    /// Position in the flattened HLO schedule (`-live-range.txt`).
    Schedule,
}

/// The temp heap profile of one module (indefinite allocations not included).
#[derive(Debug, Clone)]
pub struct TempProfile {
    pub axis: Axis,
    /// Per point: instruction, temp bytes, temp unpadded bytes.
    pub points: Vec<(String, u64, u64)>,
    pub peak_index: usize,
    pub peak_bytes: u64,
    pub peak_unpadded_bytes: u64,
    /// Buffers live at the peak (positions in `ModuleData::buffers`), in allocation order.
    pub live_at_peak: Vec<usize>,
}

pub fn temp_profile(m: &ModuleData) -> Result<TempProfile, String> {
    match &m.liveness {
        Liveness::Trace(events) => replay_trace(m, events),
        Liveness::Schedule { sequence, max, ranges } => sweep_schedule(m, sequence, *max, ranges),
        Liveness::None => Ok(TempProfile { axis: Axis::Schedule, points: Vec::new(), peak_index: 0, peak_bytes: 0, peak_unpadded_bytes: 0, live_at_peak: Vec::new() }),
    }
}

/// XProf `ProcessHeapSimulatorTrace` (see [`crate::replay`]). Peak = first strict maximum after an increase.
pub fn replay_trace(m: &ModuleData, events: &[HeapEvent]) -> Result<TempProfile, String> {
    crate::replay::replay_trace(m, events)
}

/// Sweep of live ranges for the temp allocations of memory color 0. Values at the same
/// offset of the same allocation share memory: per moment only the largest live one counts.
pub fn sweep_schedule(m: &ModuleData, sequence: &crate::model::Names, max: u64, ranges: &[Option<(u64, u64)>]) -> Result<TempProfile, String> {
    sweep_schedule_color(m, sequence, max, ranges, 0)
}

/// [`sweep_schedule`] for the temp allocations of memory color `color`.
pub fn sweep_schedule_color(m: &ModuleData, sequence: &crate::model::Names, max: u64, ranges: &[Option<(u64, u64)>], color: u64) -> Result<TempProfile, String> {
    // The parser guarantees max <= sequence length + 1 and every range end <= max.
    let len = usize::try_from(max).unwrap_or(usize::MAX).min(sequence.len() + 1) + 1;
    // i128: a sum of u64 sizes cannot wrap; a total past u64 is reported, not wrapped.
    let mut delta = vec![0i128; len + 1];
    let mut delta_unpadded = vec![0i128; len + 1];
    // (allocation, offset) → members (start, end, buffer position)
    let mut groups: crate::model::FastMap<(usize, u64), Vec<(u64, u64, usize)>> = Default::default();
    for (i, b) in m.buffers.iter().enumerate() {
        let a = &m.allocations[b.allocation];
        // The tuple table of a multi-output instruction (a top-level tuple-shaped value) is
        // placed in the temp allocation outside the heap simulation, so XProf's replay of
        // the heap-simulator trace never sees it: leave it out of the temp heap too.
        if !a.is_temp() || a.color != color || b.shape.starts_with('(') {
            continue;
        }
        if let Some(Some((s, e))) = ranges.get(i) {
            groups.entry((b.allocation, b.offset)).or_default().push((*s, *e, i));
        }
    }
    for members in groups.values() {
        if let [(s, e, i)] = members[..] {
            let b = &m.buffers[i];
            add_interval(&mut delta, s, e, i128::from(b.size));
            add_interval(&mut delta_unpadded, s, e, i128::from(b.unpadded));
        } else {
            add_group_max(&mut delta, members, |i| m.buffers[i].size);
            add_group_max(&mut delta_unpadded, members, |i| m.buffers[i].unpadded);
        }
    }
    let mut points = Vec::with_capacity(len);
    let (mut cur, mut cur_u) = (0i128, 0i128);
    let (mut peak, mut peak_u, mut peak_index) = (0u64, 0u64, 0usize);
    let to_u64 = |v: i128, t: usize| -> Result<u64, String> {
        u64::try_from(v.max(0)).map_err(|_| format!("the temp heap exceeds 2^64 bytes at schedule position {t} ({}): impossible sizes in the input", sequence.get(t).unwrap_or("")))
    };
    for t in 0..len {
        cur += delta[t];
        cur_u += delta_unpadded[t];
        let bytes = to_u64(cur, t)?;
        let unpadded = u64::try_from(cur_u.max(0)).unwrap_or(u64::MAX);
        if bytes > peak {
            peak = bytes;
            peak_u = unpadded;
            peak_index = t;
        }
        points.push((sequence.get(t).unwrap_or_default().to_string(), bytes, unpadded));
    }
    let t = peak_index as u64;
    let mut live: Vec<(u64, u64, usize)> = Vec::new();
    if peak > 0 {
        // In-place updates keep the operand's name (see crate::inplace); read the HLO text
        // only when a shared offset at the peak needs it.
        let needs = groups.values().any(|g| g.len() > 1 && g.iter().any(|&(s, e, _)| s <= t && t <= e));
        let in_place = match (&m.labels, needs) {
            (crate::model::LabelSource::Text { hlo_text: Some(p), .. }, true) => crate::inplace::in_place_instructions(p),
            _ => Default::default(),
        };
        for members in groups.values() {
            if let Some(x) = shown_at(members, t, |i| (m.buffers[i].size, m.buffers[i].id), |i| {
                // Tuple elements (while/call parameters and results) alias their operands.
                let b = &m.buffers[i];
                (b.index.is_empty() || b.index == "{}") && !in_place.contains(&b.instruction)
            }) {
                live.push(x);
            }
        }
    }
    live.sort_by_key(|&(s, _, i)| (s, m.buffers[i].id));
    Ok(TempProfile {
        axis: Axis::Schedule,
        points,
        peak_index,
        peak_bytes: peak,
        peak_unpadded_bytes: peak_u,
        live_at_peak: live.into_iter().map(|x| x.2).collect(),
    })
}

/// The value XProf would show for one offset at time `t`. Values that share memory
/// (while-loop phis, in-place updates) have the same size and touching or overlapping
/// ranges; the heap simulator keeps the first of such a run as the canonical buffer, so
/// the run's first value is shown, not the one whose own range covers `t`. Among runs
/// live at `t`, the largest wins (it is the one the per-offset maximum counted).
///
/// A value that starts exactly when its run's memory dies revives it (the simulator frees,
/// then shares) and is shown from then on, unless `revives` says it updates in place.
fn shown_at(members: &[(u64, u64, usize)], t: u64, key: impl Fn(usize) -> (u64, u64), revives: impl Fn(usize) -> bool) -> Option<(u64, u64, usize)> {
    if !members.iter().any(|&(s, e, _)| s <= t && t <= e) {
        return None;
    }
    let mut sorted: Vec<(u64, u64, usize)> = members.iter().copied().filter(|&(s, _, _)| s <= t).collect();
    sorted.sort_by_key(|&(s, e, i)| (s, std::cmp::Reverse(key(i).0), key(i).1, e));
    // Runs: (first member, end of run, covers t); the open run per size.
    let mut runs: Vec<((u64, u64, usize), u64, bool)> = Vec::new();
    let mut open: HashMap<u64, usize> = HashMap::new();
    for &x in &sorted {
        let covers = x.0 <= t && t <= x.1;
        let size = key(x.2).0;
        match open.get(&size).copied().filter(|&r| x.0 <= runs[r].1.saturating_add(1)) {
            Some(r) => {
                if x.0 == runs[r].1 && revives(x.2) {
                    runs[r].0 = x;
                }
                runs[r].1 = runs[r].1.max(x.1);
                runs[r].2 |= covers;
            }
            None => {
                open.insert(size, runs.len());
                runs.push((x, x.1, covers));
            }
        }
    }
    runs.into_iter().filter(|r| r.2).max_by(|a, b| key(a.0 .2).0.cmp(&key(b.0 .2).0).then(b.0 .0.cmp(&a.0 .0))).map(|r| r.0)
}

fn add_interval(delta: &mut [i128], s: u64, e: u64, w: i128) {
    let (s, e) = (usize::try_from(s).unwrap_or(usize::MAX), usize::try_from(e).unwrap_or(usize::MAX));
    if s < delta.len() {
        delta[s] += w;
    }
    if e.saturating_add(1) < delta.len() {
        delta[e + 1] -= w;
    }
}

/// Adds the per-moment maximum weight of overlapping intervals to `delta`.
fn add_group_max(delta: &mut [i128], members: &[(u64, u64, usize)], weight: impl Fn(usize) -> u64) {
    let mut events: Vec<(u64, bool, u64)> = Vec::with_capacity(members.len() * 2);
    for &(s, e, i) in members {
        let w = weight(i);
        events.push((s, true, w));
        events.push((e.saturating_add(1), false, w));
    }
    events.sort_unstable();
    let mut active: BTreeMap<u64, usize> = BTreeMap::new();
    let mut prev_max = 0u64;
    let mut k = 0;
    while k < events.len() {
        let time = events[k].0;
        while k < events.len() && events[k].0 == time {
            let (_, start, w) = events[k];
            if start {
                *active.entry(w).or_insert(0) += 1;
            } else if let Some(c) = active.get_mut(&w) {
                *c -= 1;
                if *c == 0 {
                    active.remove(&w);
                }
            }
            k += 1;
        }
        let now = active.keys().next_back().copied().unwrap_or(0);
        if now != prev_max {
            if (time as usize) < delta.len() {
                delta[time as usize] += i128::from(now) - i128::from(prev_max);
            }
            prev_max = now;
        }
    }
}
