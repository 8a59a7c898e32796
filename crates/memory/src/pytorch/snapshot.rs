//! The snapshot's data, typed: segments with their blocks, and each device's trace.
//! Built from the decoded pickle of any format generation (2.0's `history` blocks and a
//! bare segment list included); unknown keys and actions are ignored, missing ones
//! take the defaults the official viewer uses.

use super::pickle::{reserve, Items, Pickle, Ref, Value};
use crate::model::FastMap;
use crate::proto::hlo::{Budget, DecodeError};

/// One stack frame; strings are ids into [`Snapshot::strings`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Frame {
    pub filename: u32,
    pub line: u64,
    pub name: u32,
}

/// Index into [`Snapshot::stacks`]; 0 is the empty stack.
pub type StackId = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockState {
    ActiveAllocated,
    ActivePendingFree,
    Inactive,
}

#[derive(Debug, Clone)]
pub struct Block {
    pub address: u64,
    /// Rounded size.
    pub size: u64,
    /// What the caller asked for (2.0 blocks: the first history entry's `real_size`).
    pub requested_size: u64,
    pub state: BlockState,
    pub stack: StackId,
}

#[derive(Debug, Clone)]
pub struct Segment {
    pub device: i64,
    pub address: u64,
    pub total_size: u64,
    /// The segment's own totals as PyTorch wrote them (checked against the blocks).
    pub allocated_size: u64,
    pub active_size: u64,
    pub requested_size: u64,
    pub stream: u64,
    pub segment_type: String,
    pub pool_id: (i64, i64),
    pub is_expandable: bool,
    pub stack: StackId,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    /// Any other action (`user_defined`, `annotate`, future ones): kept in the count, ignored.
    Other,
}

impl Action {
    fn parse(s: &[u8]) -> Action {
        match s {
            b"alloc" => Action::Alloc,
            b"free_requested" => Action::FreeRequested,
            b"free_completed" => Action::FreeCompleted,
            b"segment_alloc" => Action::SegmentAlloc,
            b"segment_free" => Action::SegmentFree,
            b"segment_map" => Action::SegmentMap,
            b"segment_unmap" => Action::SegmentUnmap,
            b"snapshot" => Action::Snapshot,
            b"oom" => Action::Oom,
            _ => Action::Other,
        }
    }
}

#[derive(Debug, Clone)]
pub struct TraceEntry {
    pub action: Action,
    pub addr: u64,
    /// `alloc`/`free_*`: the requested size; `segment_*`: the segment's bytes; `oom`: the
    /// rounded size that failed; `snapshot`: active bytes.
    pub size: u64,
    pub stream: u64,
    /// `oom` only: bytes `cudaMemGetInfo` reported free.
    pub device_free: Option<u64>,
    pub stack: StackId,
    pub time_us: Option<i64>,
}

#[derive(Debug, Default)]
pub struct Snapshot {
    pub segments: Vec<Segment>,
    /// Indexed by device ordinal.
    pub device_traces: Vec<Vec<TraceEntry>>,
    /// `allocator_settings`, as `key=value` strings in the file's order (G3+).
    pub allocator_settings: Vec<(String, String)>,
    pub expandable_segments: Option<bool>,
    /// The format generation, from the keys present (see docs/memory.md).
    pub generation: &'static str,
    /// Distinct frames, and distinct stacks as runs of frame ids in `stack_frames`
    /// (`stack_ranges[0]` is the empty stack). Writers share frame dicts but usually not
    /// the lists holding them, so stacks are interned by content.
    frames: Vec<Frame>,
    stack_frames: Vec<u32>,
    stack_ranges: Vec<(u32, u32)>,
    strings: Pickle,
    pub warnings: Vec<String>,
    /// Bytes charged to the read's budget (pickle arenas and the typed model).
    pub budget_used: u64,
}

impl Snapshot {
    pub fn string(&self, id: u32) -> &str {
        self.strings.str_by_id(id)
    }
    /// A stack's frames, innermost first.
    pub fn frames(&self, stack: StackId) -> impl ExactSizeIterator<Item = Frame> + Clone + '_ {
        let (start, len) = self.stack_ranges.get(stack as usize).copied().unwrap_or((0, 0));
        self.stack_frames[start as usize..(start + len) as usize].iter().map(|&f| self.frames[f as usize])
    }
    pub fn stack_count(&self) -> usize {
        self.stack_ranges.len()
    }
}

/// What is not a snapshot, or one whose typed form would pass the budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShapeError {
    NotASnapshot(String),
    TooLarge(DecodeError),
}

impl From<DecodeError> for ShapeError {
    fn from(e: DecodeError) -> Self {
        ShapeError::TooLarge(e)
    }
}

fn not_snapshot(m: impl Into<String>) -> ShapeError {
    ShapeError::NotASnapshot(m.into())
}

struct Builder<'p, 'b> {
    p: &'p Pickle,
    budget: &'b mut Budget,
    /// Frames lists already read, by container (a memoized list read twice).
    list_stacks: FastMap<(u64, u32), StackId>,
    stack_ids: FastMap<Box<[u32]>, StackId>,
    frame_ids: FastMap<Frame, u32>,
    /// Frame id of each frame dict read, by container id (writers memoize frame dicts).
    frame_of_dict: Vec<u32>,
    frames: Vec<Frame>,
    stack_frames: Vec<u32>,
    stack_ranges: Vec<(u32, u32)>,
    scratch: Vec<u32>,
    /// Strings that were not memoized by the writer get an id per occurrence; an empty
    /// string id for missing names.
    empty: u32,
}

fn int_u64(p: &Pickle, v: Option<Value>) -> u64 {
    match v.map(|v| p.get(v)) {
        // The u64 "unknown" sentinel (2^64-1) and any negative value clamp into range.
        Some(Ref::Int(i)) => i.clamp(0, u64::MAX as i128) as u64,
        Some(Ref::Bool(b)) => b as u64,
        Some(Ref::Float(f)) if f >= 0.0 => f as u64,
        _ => 0,
    }
}

fn int_i64(p: &Pickle, v: Option<Value>) -> Option<i64> {
    match v.map(|v| p.get(v)) {
        Some(Ref::Int(i)) => Some(i.clamp(i64::MIN as i128, i64::MAX as i128) as i64),
        Some(Ref::Float(f)) => Some(f as i64),
        _ => None,
    }
}

impl Builder<'_, '_> {
    fn stack(&mut self, v: Option<Value>) -> Result<StackId, DecodeError> {
        let Some(v) = v else { return Ok(0) };
        let Some(items) = self.p.as_seq(v) else { return Ok(0) };
        if items.is_empty() {
            return Ok(0);
        }
        // Lists whose items the reader stored once share a key; a list in several runs
        // (never a stack) gets one of its own.
        let key = self.p.storage_key(v).unwrap_or((u64::MAX, self.p.container_id(v).expect("a sequence is a container")));
        if let Some(&id) = self.list_stacks.get(&key) {
            return Ok(id);
        }
        let mut ids = std::mem::take(&mut self.scratch);
        ids.clear();
        for fv in items.iter() {
            let Some(dict_id) = self.p.container_id(fv) else { continue };
            let known = self.frame_of_dict[dict_id as usize];
            if known != u32::MAX {
                ids.push(known);
                continue;
            }
            let Some(f) = self.p.as_dict(fv) else { continue };
            let frame = Frame {
                filename: f.get("filename").and_then(|v| self.p.str_id(v)).unwrap_or(self.empty),
                line: int_u64(self.p, f.get("line")),
                name: f.get("name").and_then(|v| self.p.str_id(v)).unwrap_or(self.empty),
            };
            let id = match self.frame_ids.get(&frame) {
                Some(&id) => id,
                None => {
                    // The frame, and its entry in the map (about 32 bytes).
                    self.budget.charge(32, "the snapshot's stacks")?;
                    reserve(&mut self.frames, 1, self.budget, "the snapshot's stacks")?;
                    let id = self.frames.len() as u32;
                    self.frames.push(frame);
                    self.frame_ids.insert(frame, id);
                    id
                }
            };
            self.frame_of_dict[dict_id as usize] = id;
            ids.push(id);
        }
        let id = match self.stack_ids.get(ids.as_slice()) {
            Some(&id) => id,
            None => {
                // The run, its key in the map (a copy) and the map's slot.
                self.budget.charge(ids.len() as u64 * 4 + 48, "the snapshot's stacks")?;
                reserve(&mut self.stack_frames, ids.len(), self.budget, "the snapshot's stacks")?;
                reserve(&mut self.stack_ranges, 1, self.budget, "the snapshot's stacks")?;
                let id = self.stack_ranges.len() as StackId;
                self.stack_ranges.push((self.stack_frames.len() as u32, ids.len() as u32));
                self.stack_frames.extend_from_slice(&ids);
                self.stack_ids.insert(ids.clone().into_boxed_slice(), id);
                id
            }
        };
        self.budget.charge(16, "the snapshot's stacks")?;
        self.list_stacks.insert(key, id);
        self.scratch = ids;
        Ok(id)
    }
}

/// Reads the snapshot out of a decoded pickle (which keeps only its strings afterwards).
pub fn from_pickle(mut p: Pickle, budget: &mut Budget) -> Result<Snapshot, ShapeError> {
    let root = p.root;
    let mut snap = Snapshot::default();
    // A string id for "" (frames without a filename or name): appended by the reader
    // only if needed; use an id that reads as empty.
    let empty = u32::MAX;
    // One slot per container for the frame-dict cache.
    budget.charge(p.container_count() as u64 * 4, "the snapshot's stacks")?;
    let mut b = Builder { p: &p, budget, frame_of_dict: vec![u32::MAX; p.container_count()], list_stacks: Default::default(), stack_ids: Default::default(), frame_ids: Default::default(), frames: Vec::new(), stack_frames: Vec::new(), stack_ranges: vec![(0, 0)], scratch: Vec::new(), empty };
    let (segments_v, traces_v, dict) = match p.get(root) {
        Ref::Dict(d) => (d.get("segments"), d.get("device_traces"), Some(d)),
        // torch.cuda.memory_snapshot() returns only the segment list.
        Ref::List(_) => (Some(root), None, None),
        _ => return Err(not_snapshot("the pickle holds neither a dict with `segments` nor a list of segments; not a PyTorch memory snapshot")),
    };
    let Some(segments_v) = segments_v else {
        return Err(not_snapshot("the pickle's dict has no `segments` key; not a PyTorch memory snapshot"));
    };
    let Some(segments) = p.as_seq(segments_v) else {
        return Err(not_snapshot("`segments` is not a list"));
    };
    let mut seen = EntryKeys::default();
    let mut has_history = false;
    let mut has_block_frames = false;
    for (i, sv) in segments.iter().enumerate() {
        let Some(s) = p.as_dict(sv) else {
            return Err(not_snapshot(format!("segment {i} is not a dict; not a PyTorch memory snapshot")));
        };
        if s.get("total_size").is_none() || s.get("blocks").is_none() {
            return Err(not_snapshot(format!("segment {i} has no `total_size` or `blocks`; not a PyTorch memory snapshot")));
        }
        let address = int_u64(&p, s.get("address"));
        let pool_id = s.get("segment_pool_id").and_then(|v| p.as_seq(v)).map(|t| {
            let mut it = t.iter();
            (int_i64(&p, it.next()).unwrap_or(0), int_i64(&p, it.next()).unwrap_or(0))
        });
        let mut seg = Segment {
            device: int_i64(&p, s.get("device")).unwrap_or(0),
            address,
            total_size: int_u64(&p, s.get("total_size")),
            allocated_size: int_u64(&p, s.get("allocated_size")),
            active_size: int_u64(&p, s.get("active_size")),
            requested_size: int_u64(&p, s.get("requested_size")),
            stream: int_u64(&p, s.get("stream")),
            segment_type: s.get("segment_type").and_then(|v| p.as_str(v)).unwrap_or("").to_string(),
            pool_id: pool_id.unwrap_or((0, 0)),
            is_expandable: s.get("is_expandable").and_then(|v| p.as_int(v)).is_some_and(|i| i != 0),
            stack: b.stack(s.get("frames"))?,
            blocks: Vec::new(),
        };
        let blocks = s.get("blocks").and_then(|v| p.as_seq(v));
        reserve(&mut seg.blocks, blocks.map_or(0, |b| b.len()), b.budget, "the snapshot's blocks")?;
        let blocks = blocks.iter().flat_map(|b| b.iter());
        let mut next_addr = address;
        for bv in blocks {
            let Some(bd) = p.as_dict(bv) else { continue };
            let size = int_u64(&p, bd.get("size"));
            // 2.0 blocks have no address: the segment's address plus the sizes before.
            let addr = bd.get("address").map(|v| int_u64(&p, Some(v))).unwrap_or(next_addr);
            next_addr = addr.saturating_add(size);
            let state = match bd.get("state").and_then(|v| p.as_str(v)) {
                Some("active_allocated") => BlockState::ActiveAllocated,
                Some("active_pending_free") | Some("active_awaiting_free") => BlockState::ActivePendingFree,
                _ => BlockState::Inactive,
            };
            let (requested_size, stack) = if bd.get("frames").is_some() {
                has_block_frames = true;
                (int_u64(&p, bd.get("requested_size")), b.stack(bd.get("frames"))?)
            } else {
                legacy_block(&mut b, &bd, size)?
            };
            has_history |= bd.get("history").is_some();
            seg.blocks.push(Block { address: addr, size, requested_size, state, stack });
        }
        reserve(&mut snap.segments, 1, b.budget, "the snapshot's segments")?;
        snap.segments.push(seg);
    }
    if let Some(traces) = traces_v.and_then(|v| p.as_seq(v)) {
        for (device, tv) in traces.iter().enumerate() {
            let entries = p.as_seq(tv);
            let n_entries = entries.map_or(0, |e| e.len());
            let entries = entries.iter().flat_map(|t| t.iter());
            let mut out = Vec::new();
            reserve(&mut out, n_entries, b.budget, "the snapshot's trace")?;
            let _ = device;
            for ev in entries {
                let Some(e) = p.as_dict(ev) else { continue };
                let mut entry = TraceEntry { action: Action::Other, addr: 0, size: 0, stream: 0, device_free: None, stack: 0, time_us: None };
                // One pass over the entry's keys (a trace can hold millions of entries).
                for (k, v) in e.pairs() {
                    match p.str_bytes(k) {
                        Some(b"action") => entry.action = p.str_bytes(v).map(Action::parse).unwrap_or(Action::Other),
                        Some(b"addr") => entry.addr = int_u64(&p, Some(v)),
                        Some(b"size") => entry.size = int_u64(&p, Some(v)),
                        Some(b"stream") => entry.stream = int_u64(&p, Some(v)),
                        Some(b"device_free") => entry.device_free = Some(int_u64(&p, Some(v))),
                        Some(b"frames") => entry.stack = b.stack(Some(v))?,
                        Some(b"time_us") => {
                            entry.time_us = int_i64(&p, Some(v));
                            seen.time_us = true;
                        }
                        Some(b"compile_context") => seen.compile_context = true,
                        Some(b"user_metadata") => seen.user_metadata = true,
                        _ => {}
                    }
                }
                out.push(entry);
            }
            snap.device_traces.push(out);
        }
    }
    if let Some(d) = dict {
        if let Some(settings) = d.get("allocator_settings").and_then(|v| p.as_dict(v)) {
            for (k, v) in settings.pairs() {
                let key = p.as_str(k).unwrap_or("?").to_string();
                let value = short_value(&p, v);
                if key == "expandable_segments" {
                    snap.expandable_segments = p.as_int(v).map(|i| i != 0);
                }
                // Newer PyTorch says when the ring buffer dropped its oldest events.
                if key == "trace_alloc_overflowed" && p.as_int(v).is_some_and(|i| i != 0) {
                    snap.warnings.push("the trace overflowed its ring buffer (allocator_settings.trace_alloc_overflowed): its oldest events are lost; allocations made before the window count as live from its start, with the stack of their free".into());
                }
                snap.allocator_settings.push((key, value));
            }
        }
    }
    snap.generation = generation(dict, has_history, has_block_frames, seen);
    let Builder { frames, stack_frames, stack_ranges, .. } = b;
    (snap.frames, snap.stack_frames, snap.stack_ranges) = (frames, stack_frames, stack_ranges);
    p.drop_containers();
    snap.strings = p;
    Ok(snap)
}

fn legacy_block(b: &mut Builder<'_, '_>, bd: &Items<'_>, size: u64) -> Result<(u64, StackId), DecodeError> {
    let p = b.p;
    // As torch.cuda._memory_viz's _block_extra_legacy: history[0]'s real_size and frames.
    let first = bd.get("history").and_then(|v| p.as_seq(v)).and_then(|h| h.iter().next()).and_then(|h| p.as_dict(h));
    Ok(match first {
        Some(h) => (int_u64(p, h.get("real_size")), b.stack(h.get("frames"))?),
        None => (bd.get("requested_size").map(|v| int_u64(p, Some(v))).unwrap_or(size), 0),
    })
}

fn short_value(p: &Pickle, v: Value) -> String {
    match p.get(v) {
        Ref::None => "None".into(),
        Ref::Bool(b) => if b { "True" } else { "False" }.into(),
        Ref::Int(i) => i.to_string(),
        Ref::Float(f) => format!("{f}"),
        Ref::Str(s) => s.chars().filter(|c| !c.is_control()).take(200).collect(),
        Ref::Bytes(b) => format!("<{} bytes>", b.len()),
        Ref::List(i) | Ref::Tuple(i) => format!("<{} items>", i.len()),
        Ref::Dict(d) => {
            // roundup_power2_divisions: only the non-zero entries say anything.
            let set: Vec<String> = d.pairs().filter(|(_, v)| p.as_int(*v).is_none_or(|i| i != 0)).map(|(k, v)| format!("{}:{}", p.as_str(k).unwrap_or("?"), short_value(p, v))).take(20).collect();
            format!("{{{}}}", set.join(","))
        }
    }
}

/// Trace-entry keys that mark a format generation.
#[derive(Default, Clone, Copy)]
struct EntryKeys {
    time_us: bool,
    compile_context: bool,
    user_metadata: bool,
}

fn generation(dict: Option<Items<'_>>, has_history: bool, has_block_frames: bool, seen: EntryKeys) -> &'static str {
    let Some(d) = dict else { return "segment-list" };
    if has_history && !has_block_frames {
        return "G0 (2.0)";
    }
    if seen.user_metadata {
        return "G5 (2.10+)";
    }
    if seen.compile_context {
        return "G4 (2.8-2.9)";
    }
    if d.get("allocator_settings").is_some() {
        return "G3 (2.3-2.7)";
    }
    if seen.time_us {
        return "G2 (2.2)";
    }
    "G1 (2.1)"
}

impl Snapshot {
    /// The devices that have a segment or a trace entry, ascending.
    pub fn devices(&self) -> Vec<i64> {
        let mut d: Vec<i64> = self.segments.iter().map(|s| s.device).collect();
        d.extend(self.device_traces.iter().enumerate().filter(|(_, t)| !t.is_empty()).map(|(i, _)| i as i64));
        d.sort_unstable();
        d.dedup();
        d
    }
    pub fn trace(&self, device: i64) -> &[TraceEntry] {
        usize::try_from(device).ok().and_then(|i| self.device_traces.get(i)).map(Vec::as_slice).unwrap_or(&[])
    }
}
