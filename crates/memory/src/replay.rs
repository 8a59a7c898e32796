//! XProf's `ProcessHeapSimulatorTrace` over dense buffer positions: reference counts,
//! SHARE_WITH canonical buffers and the live list are vectors indexed by the position of
//! a buffer in [`ModuleData::buffers`] (what the loader turns event ids into), so a
//! million-event trace replays without a hash lookup.

use crate::analysis::{Axis, TempProfile};
use crate::model::ModuleData;
use crate::proto::hlo::{EventKind, HeapEvent};

const NONE: u32 = u32::MAX;

struct State {
    heap: u64,
    unpadded: u64,
    refs: Vec<u32>,
    canonical: Vec<u32>,
    /// Number of buffers with a canonical one (bounds the walk to the root).
    shared: usize,
    /// Live list in insertion order, with O(1) removal (a buffer can be re-added when revived).
    entries: Vec<(u32, bool)>,
    latest: Vec<u32>,
    /// Canonical buffer → the sharer that revived it, shown in its place.
    display: Vec<u32>,
}

impl State {
    fn new(n: usize) -> State {
        State { heap: 0, unpadded: 0, refs: vec![0; n], canonical: vec![NONE; n], shared: 0, entries: Vec::new(), latest: vec![NONE; n], display: vec![NONE; n] }
    }
    fn root(&self, m: &ModuleData, mut b: u32) -> Result<u32, String> {
        for _ in 0..=self.shared {
            match self.canonical[b as usize] {
                NONE => return Ok(b),
                c => b = c,
            }
        }
        Err(format!("SHARE_WITH events form a cycle at logical buffer {}", m.buffers[b as usize].id))
    }
    fn push(&mut self, b: u32) {
        self.latest[b as usize] = self.entries.len() as u32;
        self.entries.push((b, true));
    }
    fn remove(&mut self, b: u32) {
        let i = std::mem::replace(&mut self.latest[b as usize], NONE);
        if i != NONE {
            self.entries[i as usize].1 = false;
        }
    }
    fn add(&mut self, m: &ModuleData, b: u32, s: u64, u: u64, i: usize) -> Result<(), String> {
        // Never wrap: a heap past 2^64 bytes is an impossible input, named by its buffer.
        self.heap = self.heap.checked_add(s).ok_or_else(|| {
            let buffer = &m.buffers[b as usize];
            format!("the temp heap exceeds 2^64 bytes at heap event {i} (logical buffer {} {}): impossible sizes in the input", buffer.id, buffer.display_name())
        })?;
        self.unpadded = self.unpadded.saturating_add(u);
        Ok(())
    }
}

/// Replay to the end (`stop_after` = `None`, with the timeline) or up to one event.
fn run(m: &ModuleData, events: &[HeapEvent], stop_after: Option<usize>) -> Result<(Vec<(String, u64, u64)>, usize, u64, u64, State), String> {
    let n = m.buffers.len();
    let sizes = |b: u32| -> Result<(u64, u64), String> { m.buffers.get(b as usize).map(|x| (x.size, x.unpadded)).ok_or_else(|| format!("heap event names unknown buffer position {b}")) };
    let check = |b: u32| -> Result<u32, String> { if (b as usize) < n { Ok(b) } else { Err(format!("heap event names unknown buffer position {b}")) } };
    let mut st = State::new(n);
    let mut points = Vec::with_capacity(if stop_after.is_some() { 0 } else { events.len() });
    let (mut peak, mut peak_unpadded, mut peak_index) = (0u64, 0u64, 0usize);
    for (i, e) in events.iter().enumerate() {
        let b = check(e.buffer)?;
        let mut increased = false;
        match e.kind {
            EventKind::Alloc => {
                let r = st.root(m, b)?;
                st.refs[r as usize] += 1;
                let (s, u) = sizes(b)?;
                st.add(m, b, s, u, i)?;
                st.push(b);
                increased = true;
            }
            EventKind::Free => {
                let r = st.root(m, b)?;
                let count = &mut st.refs[r as usize];
                if *count == 0 {
                    return Err(format!("heap event {i} frees logical buffer {}, which is not allocated", m.buffers[b as usize].id));
                }
                *count -= 1;
                if *count == 0 {
                    let (s, u) = sizes(r)?;
                    st.heap = st.heap.checked_sub(s).ok_or_else(|| format!("heap size goes negative at event {i}"))?;
                    st.unpadded = st.unpadded.saturating_sub(u);
                    st.remove(r);
                }
            }
            EventKind::ShareWith => {
                let with = check(e.share_with)?;
                if st.canonical[b as usize] == NONE {
                    st.shared += 1;
                }
                st.canonical[b as usize] = with;
                let r = st.root(m, with)?;
                st.refs[r as usize] += 1;
                // Only a share that revives fully freed memory costs bytes.
                if st.refs[r as usize] == 1 {
                    st.display[r as usize] = b;
                    let (s, u) = sizes(r)?;
                    st.add(m, r, s, u, i)?;
                    st.push(r);
                    increased = true;
                }
            }
        }
        if increased && st.heap > peak {
            peak = st.heap;
            peak_unpadded = st.unpadded;
            peak_index = i;
        }
        if stop_after.is_none() {
            points.push((m.event_name(e).to_string(), st.heap, st.unpadded));
        }
        if stop_after == Some(i) {
            break;
        }
    }
    Ok((points, peak_index, peak, peak_unpadded, st))
}

/// XProf `ProcessHeapSimulatorTrace`. Peak = first strict maximum after an increase.
pub fn replay_trace(m: &ModuleData, events: &[HeapEvent]) -> Result<TempProfile, String> {
    let (points, peak_index, peak_bytes, peak_unpadded_bytes, _) = run(m, events, None)?;
    let mut live_at_peak = Vec::new();
    if peak_bytes > 0 {
        let (_, _, _, _, st) = run(m, events, Some(peak_index))?;
        for &(b, live) in &st.entries {
            if live {
                let shown = match st.display[b as usize] {
                    NONE => b,
                    d => d,
                };
                live_at_peak.push(shown as usize);
            }
        }
    }
    Ok(TempProfile { axis: Axis::HeapEvent, points, peak_index, peak_bytes, peak_unpadded_bytes, live_at_peak })
}
