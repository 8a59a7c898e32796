//! Per device: the allocator's totals from the segments, the replay of the trace as the
//! official viewer does it (peak of live memory and where), the OOM entry with the state
//! just before it, what was live then grouped by the user's call site, and
//! fragmentation of the reserved memory.
//!
//! The replay is the "Active Memory Timeline" of PyTorch's viewer
//! (`torch/utils/viz/process_alloc_data.js`, `process_alloc_data`, at pytorch/pytorch
//! a8f30ff8; the same algorithm is in `MemoryViz.js` since 2.1): every `alloc` is an
//! element of its requested size; a `free_completed` frees the element its address was
//! last allocated to, or, with no such `alloc` in the window (ring buffer), is an element
//! live from the start, with the free's stack; `active_allocated` blocks of the
//! segments that no unfreed `alloc` explains are live from the start too. The peak is
//! the largest total over the start and every action (the viewer's `max_at_time` and
//! `max_size` together).

use super::snapshot::{Action, BlockState, Snapshot, StackId};
use std::collections::HashMap;

/// Where the live set is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Just before the device's first `oom` entry.
    Oom,
    /// At the trace's peak.
    Peak,
}

impl Moment {
    pub fn as_str(self) -> &'static str {
        match self {
            Moment::Oom => "oom",
            Moment::Peak => "peak",
        }
    }
}

#[derive(Debug, Clone)]
pub struct OomEvent {
    /// Index of the `oom` entry in the device's trace.
    pub event_index: usize,
    /// The rounded size that failed.
    pub requested_bytes: u64,
    /// What `cudaMemGetInfo` reported free (absent in allocators that did not record it).
    pub device_free_bytes: Option<u64>,
    pub stream: u64,
    pub time_us: Option<i64>,
    pub stack: StackId,
    /// Live (requested) bytes and allocations just before the entry, after the allocator released its cache.
    pub live_bytes: u64,
    pub live_count: u64,
    /// Reserved bytes then: the final segments with every later segment event undone.
    pub reserved_bytes: u64,
    /// `oom` entries on this device in all.
    pub count: usize,
}

/// One user call site's share of the live set.
#[derive(Debug, Clone)]
pub struct CallSite {
    /// `file:line:function` of the first frame outside torch and libraries, or a label in parentheses.
    pub site: String,
    pub bytes: u64,
    pub count: u64,
    /// A stack of one of its allocations (the largest), innermost frame first.
    pub stack: StackId,
}

#[derive(Debug, Clone)]
pub struct LiveAllocation {
    pub address: u64,
    pub bytes: u64,
    pub site: String,
    pub stack: StackId,
    /// Trace index of its `alloc`, if it is in the window.
    pub alloc_event: Option<usize>,
}

#[derive(Debug, Clone, Default)]
pub struct PoolFragmentation {
    pub pool_id: (i64, i64),
    pub segments: usize,
    pub reserved_bytes: u64,
    /// Inactive (cached, free) blocks.
    pub free_bytes: u64,
    pub largest_free_block_bytes: u64,
    pub expandable: bool,
}

#[derive(Debug, Clone, Default)]
pub struct SegmentFree {
    pub address: u64,
    pub total_bytes: u64,
    pub free_bytes: u64,
    pub largest_free_block_bytes: u64,
    pub free_blocks: usize,
    pub pool_id: (i64, i64),
    pub expandable: bool,
}

/// Of the snapshot's final segment state (exact, from the blocks).
#[derive(Debug, Clone, Default)]
pub struct Fragmentation {
    /// Reserved but in no active block.
    pub reserved_free_bytes: u64,
    /// Rounding inside allocated blocks (size − requested).
    pub internal_bytes: u64,
    pub largest_free_block_bytes: u64,
    pub pools: Vec<PoolFragmentation>,
    /// Segments with the most free bytes, most first (at most 10).
    pub segments_most_free: Vec<SegmentFree>,
    pub expandable: bool,
}

#[derive(Debug, Clone)]
pub struct DeviceReport {
    pub device: i64,
    pub segments: usize,
    pub blocks: usize,
    /// Sum of the segments' `total_size`.
    pub reserved_bytes: u64,
    /// Rounded sizes of `active_allocated` blocks.
    pub allocated_bytes: u64,
    /// Allocated plus `active_pending_free` blocks.
    pub active_bytes: u64,
    /// Requested sizes of `active_allocated` blocks.
    pub requested_bytes: u64,
    pub trace_entries: usize,
    /// Largest live (requested) total over the trace replay.
    pub peak_bytes: u64,
    /// Trace index of the action that reached the peak; None when the peak is the state before the first one.
    pub peak_event: Option<usize>,
    pub peak_time_us: Option<i64>,
    pub oom: Option<OomEvent>,
    pub moment: Moment,
    pub live_bytes: u64,
    pub live_count: u64,
    pub call_sites: Vec<CallSite>,
    pub largest: Vec<LiveAllocation>,
    pub fragmentation: Fragmentation,
    /// (trace index of the action, live bytes after it); the first point (index None) is the start.
    pub timeline: Vec<(Option<usize>, u64)>,
}

#[derive(Debug, Clone, Copy)]
struct Element {
    addr: u64,
    size: u64,
    stack: StackId,
    alloc_event: Option<usize>,
}

/// The elements, the start set and the actions of the viewer's replay.
struct Replay {
    elements: Vec<Element>,
    /// Elements live at the start.
    initial: Vec<u32>,
    /// (trace index, element): each action toggles its element.
    actions: Vec<(usize, u32)>,
}

fn build_replay(snap: &Snapshot, device: i64) -> Replay {
    let trace = snap.trace(device);
    let mut elements = Vec::new();
    let mut initial = Vec::new();
    let mut actions = Vec::new();
    let mut addr_to_alloc: HashMap<u64, u32> = HashMap::new();
    for (i, e) in trace.iter().enumerate() {
        match e.action {
            Action::Alloc => {
                let id = elements.len() as u32;
                elements.push(Element { addr: e.addr, size: e.size, stack: e.stack, alloc_event: Some(i) });
                addr_to_alloc.insert(e.addr, id);
                actions.push((i, id));
            }
            Action::FreeCompleted => match addr_to_alloc.remove(&e.addr) {
                Some(id) => actions.push((i, id)),
                None => {
                    let id = elements.len() as u32;
                    elements.push(Element { addr: e.addr, size: e.size, stack: e.stack, alloc_event: None });
                    initial.push(id);
                    actions.push((i, id));
                }
            },
            _ => {}
        }
    }
    for seg in snap.segments.iter().filter(|s| s.device == device) {
        for b in &seg.blocks {
            if b.state == BlockState::ActiveAllocated && !addr_to_alloc.contains_key(&b.address) {
                initial.push(elements.len() as u32);
                elements.push(Element { addr: b.address, size: b.requested_size, stack: b.stack, alloc_event: None });
            }
        }
    }
    Replay { elements, initial, actions }
}

/// Live set after the actions before trace index `until` (all of them with `usize::MAX`).
fn live_set(r: &Replay, until: usize) -> Vec<bool> {
    let mut live = vec![false; r.elements.len()];
    for &i in &r.initial {
        live[i as usize] = true;
    }
    for &(at, id) in &r.actions {
        if at >= until {
            break;
        }
        live[id as usize] = !live[id as usize];
    }
    live
}

/// Libraries and the interpreter: everything that is not the user's own code.
pub fn is_library_file(filename: &str) -> bool {
    let f = filename.replace('\\', "/");
    let lower = f.to_ascii_lowercase();
    if !lower.ends_with(".py") {
        return true; // C++ frames (`??`, .cpp, .h, .so), <frozen ...>, <string>
    }
    const LIBRARY: [&str; 6] = ["/site-packages/", "/dist-packages/", "/torch/", "/lib/python", "/lib64/python", "/.venv/"];
    lower.starts_with("torch/") || LIBRARY.iter().any(|l| lower.contains(l))
}

/// The call site of a stack: the first frame (innermost first) in the user's own code.
pub fn call_site(snap: &Snapshot, stack: StackId) -> String {
    let mut frames = snap.frames(stack);
    if frames.len() == 0 {
        return "(no stack recorded)".into();
    }
    if let Some(f) = frames.clone().find(|f| !is_library_file(snap.string(f.filename))) {
        return format!("{}:{}:{}", snap.string(f.filename), f.line, snap.string(f.name));
    }
    match frames.find(|f| snap.string(f.filename).ends_with(".py")) {
        Some(f) => format!("(library only) {}:{}:{}", snap.string(f.filename), f.line, snap.string(f.name)),
        None => "(no Python frame: C++ only, e.g. autograd's backward thread)".into(),
    }
}

/// Options of the analysis.
#[derive(Debug, Clone, Copy)]
pub struct AnalysisOptions {
    /// Call sites and allocations to keep.
    pub top: usize,
    /// Most timeline points kept (max per column, so the peak stays).
    pub timeline_points: usize,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions { top: 10, timeline_points: 2000 }
    }
}

pub fn analyze_device(snap: &Snapshot, device: i64, opts: &AnalysisOptions) -> DeviceReport {
    let trace = snap.trace(device);
    let segs: Vec<_> = snap.segments.iter().filter(|s| s.device == device).collect();
    let mut rep = DeviceReport {
        device,
        segments: segs.len(),
        blocks: segs.iter().map(|s| s.blocks.len()).sum(),
        reserved_bytes: sat_sum(segs.iter().map(|s| s.total_size)),
        allocated_bytes: 0,
        active_bytes: 0,
        requested_bytes: 0,
        trace_entries: trace.len(),
        peak_bytes: 0,
        peak_event: None,
        peak_time_us: None,
        oom: None,
        moment: Moment::Peak,
        live_bytes: 0,
        live_count: 0,
        call_sites: Vec::new(),
        largest: Vec::new(),
        fragmentation: fragmentation(&segs),
        timeline: Vec::new(),
    };
    for b in segs.iter().flat_map(|s| &s.blocks) {
        match b.state {
            BlockState::ActiveAllocated => {
                rep.allocated_bytes = rep.allocated_bytes.saturating_add(b.size);
                rep.active_bytes = rep.active_bytes.saturating_add(b.size);
                rep.requested_bytes = rep.requested_bytes.saturating_add(b.requested_size);
            }
            BlockState::ActivePendingFree => rep.active_bytes = rep.active_bytes.saturating_add(b.size),
            BlockState::Inactive => {}
        }
    }

    let replay = build_replay(snap, device);
    let mut total: u64 = sat_sum(replay.initial.iter().map(|&i| replay.elements[i as usize].size));
    let mut live = vec![false; replay.elements.len()];
    for &i in &replay.initial {
        live[i as usize] = true;
    }
    rep.peak_bytes = total;
    let mut timeline = Vec::with_capacity(replay.actions.len() + 1);
    timeline.push((None, total));
    for &(at, id) in &replay.actions {
        let e = &replay.elements[id as usize];
        let l = &mut live[id as usize];
        *l = !*l;
        // The viewer's sums are plain JS numbers; wrapping cannot happen below 2^53.
        total = if *l { total.saturating_add(e.size) } else { total.saturating_sub(e.size) };
        if total > rep.peak_bytes {
            rep.peak_bytes = total;
            rep.peak_event = Some(at);
        }
        timeline.push((Some(at), total));
    }
    rep.peak_time_us = rep.peak_event.and_then(|i| trace[i].time_us);
    rep.timeline = downsample(&timeline, opts.timeline_points);

    let ooms: Vec<usize> = trace.iter().enumerate().filter(|(_, e)| e.action == Action::Oom).map(|(i, _)| i).collect();
    let (moment, until) = match ooms.first() {
        Some(&i) => (Moment::Oom, i),
        None => (Moment::Peak, rep.peak_event.map_or(0, |i| i + 1)),
    };
    rep.moment = moment;
    let live = live_set(&replay, until);
    let mut sites: HashMap<StackId, String> = HashMap::new();
    let mut groups: HashMap<String, CallSite> = HashMap::new();
    let mut alive: Vec<LiveAllocation> = Vec::new();
    for (e, _) in replay.elements.iter().zip(&live).filter(|(_, l)| **l) {
        rep.live_bytes = rep.live_bytes.saturating_add(e.size);
        rep.live_count += 1;
        let site = sites.entry(e.stack).or_insert_with(|| call_site(snap, e.stack)).clone();
        let g = groups.entry(site.clone()).or_insert(CallSite { site: site.clone(), bytes: 0, count: 0, stack: e.stack });
        g.bytes = g.bytes.saturating_add(e.size);
        g.count += 1;
        alive.push(LiveAllocation { address: e.addr, bytes: e.size, site, stack: e.stack, alloc_event: e.alloc_event });
    }
    // The group's example stack: its largest allocation's.
    alive.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.address.cmp(&b.address)));
    let mut example_set: std::collections::HashSet<&str> = Default::default();
    for a in &alive {
        if example_set.insert(a.site.as_str()) {
            if let Some(g) = groups.get_mut(&a.site) {
                g.stack = a.stack;
            }
        }
    }
    let mut call_sites: Vec<CallSite> = groups.into_values().collect();
    call_sites.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(b.count.cmp(&a.count)).then(a.site.cmp(&b.site)));
    call_sites.truncate(opts.top);
    rep.call_sites = call_sites;
    alive.truncate(opts.top);
    rep.largest = alive;

    if let Some(&i) = ooms.first() {
        let e = &trace[i];
        // Reserved then: undo every later segment event, as the viewer's Allocator State History does.
        let mut reserved = rep.reserved_bytes as i128;
        for later in &trace[i + 1..] {
            match later.action {
                Action::SegmentAlloc | Action::SegmentMap => reserved -= later.size as i128,
                Action::SegmentFree | Action::SegmentUnmap => reserved += later.size as i128,
                _ => {}
            }
        }
        rep.oom = Some(OomEvent {
            event_index: i,
            requested_bytes: e.size,
            device_free_bytes: e.device_free.or(if e.addr != 0 { Some(e.addr) } else { None }),
            stream: e.stream,
            time_us: e.time_us,
            stack: e.stack,
            live_bytes: rep.live_bytes,
            live_count: rep.live_count,
            reserved_bytes: reserved.clamp(0, u64::MAX as i128) as u64,
            count: ooms.len(),
        });
    }
    rep
}

fn fragmentation(segs: &[&super::snapshot::Segment]) -> Fragmentation {
    let mut f = Fragmentation::default();
    let mut pools: Vec<PoolFragmentation> = Vec::new();
    let mut per_seg = Vec::new();
    for s in segs {
        let mut sf = SegmentFree { address: s.address, total_bytes: s.total_size, pool_id: s.pool_id, expandable: s.is_expandable, ..Default::default() };
        for b in &s.blocks {
            match b.state {
                BlockState::Inactive => {
                    sf.free_bytes = sf.free_bytes.saturating_add(b.size);
                    sf.free_blocks += 1;
                    sf.largest_free_block_bytes = sf.largest_free_block_bytes.max(b.size);
                }
                BlockState::ActiveAllocated => f.internal_bytes = f.internal_bytes.saturating_add(b.size.saturating_sub(b.requested_size)),
                BlockState::ActivePendingFree => {}
            }
        }
        f.reserved_free_bytes = f.reserved_free_bytes.saturating_add(sf.free_bytes);
        f.largest_free_block_bytes = f.largest_free_block_bytes.max(sf.largest_free_block_bytes);
        f.expandable |= s.is_expandable;
        let pool = match pools.iter_mut().position(|p| p.pool_id == s.pool_id) {
            Some(i) => &mut pools[i],
            None => {
                pools.push(PoolFragmentation { pool_id: s.pool_id, ..Default::default() });
                pools.last_mut().expect("pushed")
            }
        };
        pool.segments += 1;
        pool.reserved_bytes = pool.reserved_bytes.saturating_add(s.total_size);
        pool.free_bytes = pool.free_bytes.saturating_add(sf.free_bytes);
        pool.largest_free_block_bytes = pool.largest_free_block_bytes.max(sf.largest_free_block_bytes);
        pool.expandable |= s.is_expandable;
        if sf.free_bytes > 0 {
            per_seg.push(sf);
        }
    }
    per_seg.sort_by(|a, b| b.free_bytes.cmp(&a.free_bytes).then(a.address.cmp(&b.address)));
    per_seg.truncate(10);
    f.segments_most_free = per_seg;
    pools.sort_by_key(|p| p.pool_id);
    f.pools = pools;
    f
}

/// At most `n` points, each the largest of its column, so the peak survives.
fn downsample(points: &[(Option<usize>, u64)], n: usize) -> Vec<(Option<usize>, u64)> {
    if points.len() <= n || n == 0 {
        return points.to_vec();
    }
    (0..n)
        .map(|c| {
            let lo = c * points.len() / n;
            let hi = ((c + 1) * points.len() / n).max(lo + 1);
            *points[lo..hi].iter().max_by_key(|p| (p.1, std::cmp::Reverse(p.0))).expect("non-empty column")
        })
        .collect()
}

/// Segments whose own totals disagree with their blocks (the file was edited, or a
/// writer's bug): one warning per kind, with the first segment and the count.
pub fn consistency_warnings(snap: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |what: &str, bad: Vec<(u64, u64, u64)>| {
        if let Some(&(addr, field, sum)) = bad.first() {
            out.push(format!(
                "{} of {} segments: {what} disagrees with the blocks (first: segment 0x{addr:x} says {field}, its blocks add up to {sum}); below, reserved is the segments' total_size and allocated/active/requested the blocks, as torch.cuda._memory_viz counts them",
                bad.len(),
                snap.segments.len()
            ));
        }
    };
    let sum = |s: &super::snapshot::Segment, f: &dyn Fn(&super::snapshot::Block) -> u64| sat_sum(s.blocks.iter().map(f));
    check("total_size", snap.segments.iter().map(|s| (s.address, s.total_size, sum(s, &|b| b.size))).filter(|t| t.1 != t.2).collect());
    check(
        "allocated_size",
        snap.segments.iter().map(|s| (s.address, s.allocated_size, sum(s, &|b| if b.state == BlockState::ActiveAllocated { b.size } else { 0 }))).filter(|t| t.1 != t.2).collect(),
    );
    check(
        "active_size",
        snap.segments.iter().map(|s| (s.address, s.active_size, sum(s, &|b| if b.state != BlockState::Inactive { b.size } else { 0 }))).filter(|t| t.1 != t.2).collect(),
    );
    out
}

/// A sum of byte counts that stops at u64::MAX (a hostile file's sizes can add past it).
fn sat_sum(values: impl Iterator<Item = u64>) -> u64 {
    values.fold(0u64, u64::saturating_add)
}
