//! Minimal `xla.HloProto` decoding. Field numbers are those of `xla/service/hlo.proto`
//! and `xla/xla_data.proto`, checked against real dumps; nothing else is read.
//!
//! Memory is bounded for any input: records are stored compactly (a heap event is 20
//! bytes, an empty one is counted and not stored), every vector is sized by a counting
//! pass before it is filled, and every byte kept is charged to a [`Budget`] that refuses
//! more than [`crate::MAX_BYTES_PER_INPUT_BYTE`] × the input size (or a caller's limit)
//! with [`DecodeError::TooLarge`]. Instructions are not decoded here: the loader walks
//! the module once for the few it needs ([`for_each_instruction`]).

use super::wire::{push_ints, Reader, Value, WireError};
use crate::text::instruction::InstructionMeta;
use crate::text::stack_frames::StackFrameIndex;

/// What the analysis of one heap event keeps, charged with the event: its point of the
/// temp profile (name, bytes, unpadded: 40) and of the report's timeline (48). The name's
/// copy is charged per event too.
pub const ANALYSIS_BYTES_PER_EVENT: usize = 88;

/// Bytes of memory a decode may still take; charged before anything is kept.
#[derive(Debug, Clone)]
pub struct Budget {
    pub limit: u64,
    pub used: u64,
    /// Records (heap events, logical buffers, assigned values) still allowed.
    pub records_left: u64,
}

impl Budget {
    pub fn new(limit: u64, max_records: u64) -> Budget {
        Budget { limit, used: 0, records_left: max_records }
    }
    /// No limit (tests and tools).
    pub fn unlimited() -> Budget {
        Budget::new(u64::MAX, u64::MAX)
    }
    pub fn charge(&mut self, bytes: u64, what: &'static str) -> Result<(), DecodeError> {
        let used = self.used.saturating_add(bytes);
        if used > self.limit {
            return Err(DecodeError::TooLarge { what, limit: self.limit, needed: used, records: false });
        }
        self.used = used;
        Ok(())
    }
    /// Room for a short-lived allocation of `bytes` (freed before the next charge): it
    /// must fit in what is left, so that the bound holds at every moment.
    pub fn check_transient(&self, bytes: u64, what: &'static str) -> Result<(), DecodeError> {
        let needed = self.used.saturating_add(bytes);
        if needed > self.limit {
            return Err(DecodeError::TooLarge { what, limit: self.limit, needed, records: false });
        }
        Ok(())
    }
    /// `n` records of `each` bytes.
    pub fn charge_records(&mut self, n: u64, each: usize, what: &'static str) -> Result<(), DecodeError> {
        if n > self.records_left {
            return Err(DecodeError::TooLarge { what, limit: self.records_left, needed: n, records: true });
        }
        self.records_left -= n;
        self.charge(n.saturating_mul(each as u64), what)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    Wire(WireError),
    /// Keeping the decoded records would pass the memory (or record-count) limit.
    TooLarge { what: &'static str, limit: u64, needed: u64, records: bool },
}

impl From<WireError> for DecodeError {
    fn from(e: WireError) -> DecodeError {
        DecodeError::Wire(e)
    }
}

#[derive(Debug, Default)]
pub struct HloProtoData {
    pub module_name: String,
    pub entry_computation_name: String,
    pub module_id: Option<u64>,
    /// (offset, length) of the `HloModuleProto` in the file; its instructions are read
    /// with [`for_each_instruction`].
    pub module_span: (usize, usize),
    pub stack_frames: StackFrameIndex,
    pub logical_buffers: Vec<ProtoLogicalBuffer>,
    pub allocations: Vec<ProtoAllocation>,
    /// (logical buffer id, offset, size) of every assigned value; an allocation owns the
    /// range [`ProtoAllocation::assigned`] of it.
    pub assigned: Vec<(u64, u64, u64)>,
    pub traces: Vec<ProtoTrace>,
    /// Heap events with no field at all (XLA always names the instruction): not kept.
    pub empty_events: u64,
}

#[derive(Debug, Default)]
pub struct ProtoInstruction {
    pub name: String,
    pub shape: ProtoShape,
    pub meta: InstructionMeta,
}

#[derive(Debug, Default, Clone)]
pub enum ProtoShape {
    Array { element_type: u64, dims: Vec<u64>, minor_to_major: Option<Vec<u64>>, tiles: Vec<Vec<i64>>, element_bits: u64, memory_space: u64 },
    Tuple(Vec<ProtoShape>),
    #[default]
    Other,
}

#[derive(Debug, Default, Clone)]
pub struct ProtoLogicalBuffer {
    pub id: u64,
    pub size: u64,
    pub color: u64,
    pub instruction_id: u64,
    /// (offset, length) in the file of `defined_at.instruction_name`; (0, 0) if absent.
    pub instruction_name: (u32, u32),
    pub shape_index: Box<[u64]>,
}

#[derive(Debug, Default)]
pub struct ProtoAllocation {
    pub index: u64,
    pub size: u64,
    pub thread_local: bool,
    pub entry_parameter: bool,
    pub parameter_number: u64,
    pub maybe_live_out: bool,
    pub color: u64,
    pub constant: bool,
    pub is_tuple: bool,
    /// Field 13, written by newer XLA; `None` when absent.
    pub aliased_with_output: Option<bool>,
    /// Range of [`HloProtoData::assigned`].
    pub assigned: std::ops::Range<usize>,
}

#[derive(Debug, Default)]
pub struct ProtoTrace {
    pub events: Vec<HeapEvent>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    Alloc,
    Free,
    ShareWith,
}

/// One heap-simulator event, 20 bytes. Decoded, `buffer` and `share_with` are logical
/// buffer ids; in a [`crate::model::ModuleData`] they are positions in its `buffers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapEvent {
    pub buffer: u32,
    pub share_with: u32,
    /// (offset, length) of the instruction name in the HloProto's bytes (checked UTF-8;
    /// see [`crate::model::ModuleData::event_name`]).
    pub name: (u32, u32),
    pub kind: EventKind,
}

type R<T> = Result<T, DecodeError>;

fn werr(offset: usize, message: &'static str) -> DecodeError {
    DecodeError::Wire(WireError { offset, message })
}
fn bytes<'a>(v: &Value<'a>, at: usize) -> R<&'a [u8]> {
    v.as_bytes().ok_or(werr(at, "expected a length-delimited field"))
}
fn int(v: &Value<'_>, at: usize) -> R<u64> {
    v.as_u64().ok_or(werr(at, "expected an integer field"))
}
fn str_of<'a>(v: &Value<'a>, at: usize) -> R<&'a str> {
    let b = bytes(v, at)?;
    std::str::from_utf8(b).map_err(|_| werr(at, "string field is not UTF-8"))
}
fn string(v: &Value<'_>, at: usize) -> R<String> {
    str_of(v, at).map(str::to_string)
}
fn id32(v: u64, at: usize) -> R<u32> {
    u32::try_from(v).map_err(|_| werr(at, "logical buffer id above 2^32"))
}

/// Number of fields numbered `field` in a message.
fn count_fields(buf: &[u8], base: usize, field: u32) -> R<u64> {
    let mut r = Reader::nested(buf, base);
    let mut n = 0;
    while let Some((f, _, _)) = r.next_field()? {
        n += u64::from(f == field);
    }
    Ok(n)
}

/// Decode an `HloProto` (module = 1, buffer_assignment = 3) with no memory limit.
pub fn decode_hlo_proto(buf: &[u8]) -> Result<HloProtoData, DecodeError> {
    decode_hlo_proto_limited(buf, &mut Budget::unlimited())
}

/// Decode an `HloProto`, charging what is kept to `budget`.
pub fn decode_hlo_proto_limited(buf: &[u8], budget: &mut Budget) -> Result<HloProtoData, DecodeError> {
    let mut out = HloProtoData::default();
    let mut r = Reader::new(buf);
    let (mut saw_module, mut saw_assignment) = (false, false);
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => {
                let b = bytes(&v, at)?;
                out.module_span = (at, b.len());
                decode_module(b, at, &mut out, budget)?;
                saw_module = true;
            }
            3 => {
                decode_buffer_assignment(bytes(&v, at)?, at, &mut out, budget)?;
                saw_assignment = true;
            }
            _ => {}
        }
    }
    if !saw_module {
        return Err(werr(0, "no HloModuleProto (field 1); not an xla.HloProto"));
    }
    if !saw_assignment {
        return Err(werr(0, "no buffer assignment (field 3); dump the module after optimizations with --xla_dump_hlo_as_proto"));
    }
    Ok(out)
}

fn decode_module(buf: &[u8], base: usize, out: &mut HloProtoData, budget: &mut Budget) -> R<()> {
    let mut r = Reader::nested(buf, base);
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => out.module_name = string(&v, at)?,
            2 => out.entry_computation_name = string(&v, at)?,
            5 => out.module_id = Some(int(&v, at)?),
            17 => out.stack_frames = decode_stack_frames(bytes(&v, at)?, at, budget)?,
            _ => {}
        }
    }
    budget.charge((out.module_name.len() + out.entry_computation_name.len()) as u64, "module names")?;
    Ok(())
}

/// Bound on the memory a decoded shape (and its text) takes per byte of its encoding: a
/// one-byte dimension becomes 8 bytes (16 while its vector doubles) and a two-byte empty
/// tuple element a 104-byte `ProtoShape` (twice that while doubling).
pub const SHAPE_BYTES_PER_BYTE: u64 = 128;

/// One instruction of the module: its id (field 35; 0 when absent), where its message
/// lies, and the raw name (field 1) and shape (field 3) fields, read in one pass.
pub struct RawInstruction<'a> {
    pub id: u64,
    pub offset: usize,
    pub body: &'a [u8],
    name: Option<(&'a [u8], usize)>,
    shape: Option<(&'a [u8], usize)>,
}

impl<'a> RawInstruction<'a> {
    /// The encoded shape (empty when absent).
    pub fn shape_bytes(&self) -> &'a [u8] {
        self.shape.map_or(&[], |(b, _)| b)
    }
    pub fn name(&self) -> Result<String, DecodeError> {
        match self.name {
            Some((b, at)) => Ok(std::str::from_utf8(b).map_err(|_| werr(at, "string field is not UTF-8"))?.to_string()),
            None => Ok(String::new()),
        }
    }
    /// The decoded shape takes at most [`SHAPE_BYTES_PER_BYTE`] × its encoding while alive.
    pub fn shape(&self) -> Result<ProtoShape, DecodeError> {
        match self.shape {
            Some((b, at)) => decode_shape(b, at, 0),
            None => Ok(ProtoShape::default()),
        }
    }
    /// The name and shape (no labels).
    pub fn decode(&self) -> Result<ProtoInstruction, DecodeError> {
        let mut instr = ProtoInstruction::default();
        if let Some((b, at)) = self.name {
            instr.name = std::str::from_utf8(b).map_err(|_| werr(at, "string field is not UTF-8"))?.to_string();
        }
        if let Some((b, at)) = self.shape {
            instr.shape = decode_shape(b, at, 0)?;
        }
        Ok(instr)
    }
}

/// Calls `f` for every instruction of every computation of the module at `span` of the
/// file `buf`.
pub fn for_each_instruction<'a>(buf: &'a [u8], span: (usize, usize), mut f: impl FnMut(&RawInstruction<'a>) -> Result<(), DecodeError>) -> Result<(), DecodeError> {
    let module = span.0.checked_add(span.1).and_then(|end| buf.get(span.0..end)).ok_or(werr(span.0, "module outside the file"))?;
    let mut r = Reader::nested(module, span.0);
    while let Some((field, v, at)) = r.next_field()? {
        if field != 3 {
            continue;
        }
        let mut cr = Reader::nested(bytes(&v, at)?, at);
        while let Some((cf, cv, cat)) = cr.next_field()? {
            if cf != 2 {
                continue;
            }
            let body = bytes(&cv, cat)?;
            let mut ir = Reader::nested(body, cat);
            let mut raw = RawInstruction { id: 0, offset: cat, body, name: None, shape: None };
            while let Some((f, iv, iat)) = ir.next_field()? {
                match f {
                    1 => raw.name = Some((bytes(&iv, iat)?, iat)),
                    3 => raw.shape = Some((bytes(&iv, iat)?, iat)),
                    35 => raw.id = int(&iv, iat)?,
                    _ => {}
                }
            }
            f(&raw)?;
        }
    }
    Ok(())
}

/// Decode the instruction whose message sits at `span` of the file `buf`.
pub fn decode_instruction_at(buf: &[u8], span: (usize, usize)) -> Result<ProtoInstruction, WireError> {
    let body = span.0.checked_add(span.1).and_then(|end| buf.get(span.0..end)).ok_or(WireError { offset: span.0, message: "instruction outside the file" })?;
    decode_instruction(body, span.0, true).map_err(|e| match e {
        DecodeError::Wire(w) => w,
        DecodeError::TooLarge { .. } => WireError { offset: span.0, message: "instruction too large" },
    })
}

/// Name and shape (and, with `meta`, the labels) of one instruction message.
pub fn decode_instruction(buf: &[u8], base: usize, meta: bool) -> R<ProtoInstruction> {
    let mut r = Reader::nested(buf, base);
    let mut instr = ProtoInstruction::default();
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => instr.name = string(&v, at)?,
            2 if meta => instr.meta.opcode = string(&v, at)?,
            3 => instr.shape = decode_shape(bytes(&v, at)?, at, 0)?,
            7 if meta => decode_metadata(bytes(&v, at)?, at, &mut instr.meta)?,
            _ => {}
        }
    }
    Ok(instr)
}

fn decode_metadata(buf: &[u8], base: usize, meta: &mut InstructionMeta) -> R<()> {
    let mut r = Reader::nested(buf, base);
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            2 => meta.op_name = string(&v, at)?,
            3 => meta.source_file = Some(string(&v, at)?).filter(|s| !s.is_empty()),
            4 => meta.source_line = u32::try_from(int(&v, at)?).ok().filter(|&l| l > 0),
            15 => meta.stack_frame_id = Some(int(&v, at)?).filter(|&f| f > 0),
            _ => {}
        }
    }
    Ok(())
}

fn decode_shape(buf: &[u8], base: usize, depth: usize) -> R<ProtoShape> {
    if depth > 64 {
        return Err(werr(base, "shape nesting deeper than 64"));
    }
    let mut r = Reader::nested(buf, base);
    let mut element_type = 0;
    let mut dims = Vec::new();
    let mut tuple = Vec::new();
    let mut layout = None;
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            2 => element_type = int(&v, at)?,
            3 => push_ints(v, at, &mut dims)?,
            4 => tuple.push(decode_shape(bytes(&v, at)?, at, depth + 1)?),
            5 => layout = Some(decode_layout(bytes(&v, at)?, at)?),
            _ => {}
        }
    }
    Ok(match element_type {
        13 => ProtoShape::Tuple(tuple),
        0 | 14 | 17 => ProtoShape::Other,
        _ => {
            let (minor_to_major, tiles, element_bits, memory_space) = match layout {
                Some((m, t, e, s)) => (Some(m), t, e, s),
                None => (None, Vec::new(), 0, 0),
            };
            ProtoShape::Array { element_type, dims, minor_to_major, tiles, element_bits, memory_space }
        }
    })
}

type LayoutParts = (Vec<u64>, Vec<Vec<i64>>, u64, u64);

fn decode_layout(buf: &[u8], base: usize) -> R<LayoutParts> {
    let mut r = Reader::nested(buf, base);
    let (mut m2m, mut tiles, mut bits, mut space) = (Vec::new(), Vec::new(), 0, 0);
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => push_ints(v, at, &mut m2m)?,
            6 => {
                let mut tr = Reader::nested(bytes(&v, at)?, at);
                let mut dims = Vec::new();
                while let Some((tf, tv, tat)) = tr.next_field()? {
                    if tf == 1 {
                        push_ints(tv, tat, &mut dims)?;
                    }
                }
                tiles.push(dims.into_iter().map(|d| d as i64).collect());
            }
            7 => bits = int(&v, at)?,
            8 => space = int(&v, at)?,
            _ => {}
        }
    }
    Ok((m2m, tiles, bits, space))
}

fn decode_stack_frames(buf: &[u8], base: usize, budget: &mut Budget) -> R<StackFrameIndex> {
    let mut r = Reader::nested(buf, base);
    let mut index = StackFrameIndex::default();
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => {
                let s = string(&v, at)?;
                // The string and its slot (twice: the vector grows by doubling).
                budget.charge_records(1, 48 + s.len(), "stack-frame file names")?;
                index.file_names.push(s);
            }
            3 => {
                let (mut file, mut line) = (0, 0);
                let mut lr = Reader::nested(bytes(&v, at)?, at);
                while let Some((f, lv, lat)) = lr.next_field()? {
                    match f {
                        1 => file = int(&lv, lat)?,
                        3 => line = int(&lv, lat)? as u32,
                        _ => {}
                    }
                }
                budget.charge_records(1, 2 * std::mem::size_of::<(u64, u32)>(), "stack-frame locations")?;
                index.file_locations.push((file, line));
            }
            4 => {
                let (mut loc, mut parent) = (0, 0);
                let mut fr = Reader::nested(bytes(&v, at)?, at);
                while let Some((f, fv, fat)) = fr.next_field()? {
                    match f {
                        1 => loc = int(&fv, fat)?,
                        2 => parent = int(&fv, fat)?,
                        _ => {}
                    }
                }
                budget.charge_records(1, 2 * std::mem::size_of::<(u64, u64)>(), "stack frames")?;
                index.frames.push((loc, parent));
            }
            _ => {}
        }
    }
    Ok(index)
}

fn decode_buffer_assignment(buf: &[u8], base: usize, out: &mut HloProtoData, budget: &mut Budget) -> R<()> {
    // Count first, so that every vector is allocated once at its exact size and charged
    // before it is filled.
    let (mut n_lb, mut n_alloc, mut n_assigned, mut n_traces) = (0u64, 0u64, 0u64, 0u64);
    {
        let mut r = Reader::nested(buf, base);
        while let Some((field, v, at)) = r.next_field()? {
            match field {
                1 => n_lb += 1,
                3 => {
                    n_alloc += 1;
                    n_assigned += count_fields(bytes(&v, at)?, at, 9)?;
                }
                4 => n_traces += 1,
                _ => {}
            }
        }
    }
    budget.charge_records(n_lb, std::mem::size_of::<ProtoLogicalBuffer>(), "logical buffers")?;
    budget.charge_records(n_alloc, std::mem::size_of::<ProtoAllocation>(), "buffer allocations")?;
    budget.charge_records(n_assigned, std::mem::size_of::<(u64, u64, u64)>(), "assigned values")?;
    budget.charge_records(n_traces, std::mem::size_of::<ProtoTrace>(), "heap-simulator traces")?;
    out.logical_buffers.reserve_exact(n_lb as usize);
    out.allocations.reserve_exact(n_alloc as usize);
    out.assigned.reserve_exact(n_assigned as usize);
    out.traces.reserve_exact(n_traces as usize);
    let mut r = Reader::nested(buf, base);
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => {
                let lb = decode_logical_buffer(bytes(&v, at)?, at, budget)?;
                out.logical_buffers.push(lb);
            }
            3 => {
                let a = decode_allocation(bytes(&v, at)?, at, &mut out.assigned)?;
                out.allocations.push(a);
            }
            4 => {
                let t = decode_trace(bytes(&v, at)?, at, &mut out.empty_events, budget)?;
                out.traces.push(t);
            }
            _ => {}
        }
    }
    Ok(())
}

fn decode_logical_buffer(buf: &[u8], base: usize, budget: &mut Budget) -> R<ProtoLogicalBuffer> {
    let mut r = Reader::nested(buf, base);
    let mut lb = ProtoLogicalBuffer::default();
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => lb.id = int(&v, at)?,
            2 => lb.size = int(&v, at)?,
            3 => {
                let mut lr = Reader::nested(bytes(&v, at)?, at);
                let mut index = Vec::new();
                while let Some((f, lv, lat)) = lr.next_field()? {
                    match f {
                        2 => {
                            let s = str_of(&lv, lat)?;
                            let off = u32::try_from(lat).map_err(|_| werr(lat, "HloProto larger than 4 GiB"))?;
                            lb.instruction_name = (off, s.len() as u32);
                        }
                        3 => push_ints(lv, lat, &mut index)?,
                        4 => lb.instruction_id = int(&lv, lat)?,
                        _ => {}
                    }
                }
                if !index.is_empty() {
                    budget.charge(8 * index.len() as u64, "shape indices")?;
                    lb.shape_index = index.into_boxed_slice();
                }
            }
            4 => lb.color = int(&v, at)?,
            _ => {}
        }
    }
    Ok(lb)
}

fn decode_allocation(buf: &[u8], base: usize, assigned: &mut Vec<(u64, u64, u64)>) -> R<ProtoAllocation> {
    let mut r = Reader::nested(buf, base);
    let mut a = ProtoAllocation::default();
    let first = assigned.len();
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => a.index = int(&v, at)?,
            2 => a.size = int(&v, at)?,
            3 => a.thread_local = int(&v, at)? != 0,
            5 => a.entry_parameter = int(&v, at)? != 0,
            6 => a.parameter_number = int(&v, at)?,
            7 => a.maybe_live_out = int(&v, at)? != 0,
            8 => a.color = int(&v, at)?,
            9 => {
                let (mut id, mut offset, mut size) = (0, 0, 0);
                let mut ar = Reader::nested(bytes(&v, at)?, at);
                while let Some((f, av, aat)) = ar.next_field()? {
                    match f {
                        1 => id = int(&av, aat)?,
                        2 => offset = int(&av, aat)?,
                        3 => size = int(&av, aat)?,
                        _ => {}
                    }
                }
                // Counted and reserved before: never grows past the charge.
                if assigned.len() == assigned.capacity() {
                    return Err(werr(at, "buffer assignment changed while decoding"));
                }
                assigned.push((id, offset, size));
            }
            11 => a.is_tuple = int(&v, at)? != 0,
            12 => a.constant = int(&v, at)? != 0,
            13 => a.aliased_with_output = Some(int(&v, at)? != 0),
            _ => {}
        }
    }
    a.assigned = first..assigned.len();
    Ok(a)
}

fn decode_trace(buf: &[u8], base: usize, empty: &mut u64, budget: &mut Budget) -> R<ProtoTrace> {
    // Non-empty events, counted first.
    let mut n = 0u64;
    {
        let mut r = Reader::nested(buf, base);
        while let Some((field, v, _)) = r.next_field()? {
            if field == 1 && v.as_bytes().map_or(true, |b| !b.is_empty()) {
                n += 1;
            }
        }
    }
    budget.charge_records(n, std::mem::size_of::<HeapEvent>() + ANALYSIS_BYTES_PER_EVENT, "heap-simulator events")?;
    let mut t = ProtoTrace { events: Vec::with_capacity(n as usize) };
    let mut r = Reader::nested(buf, base);
    while let Some((field, v, at)) = r.next_field()? {
        if field != 1 {
            continue;
        }
        let body = bytes(&v, at)?;
        if body.is_empty() {
            *empty += 1;
            continue;
        }
        let mut er = Reader::nested(body, at);
        let mut e = HeapEvent { kind: EventKind::Alloc, buffer: 0, name: (0, 0), share_with: 0 };
        while let Some((f, ev, eat)) = er.next_field()? {
            match f {
                1 => {
                    e.kind = match int(&ev, eat)? {
                        0 => EventKind::Alloc,
                        1 => EventKind::Free,
                        2 => EventKind::ShareWith,
                        _ => return Err(werr(eat, "unknown heap event kind")),
                    }
                }
                2 => e.buffer = id32(int(&ev, eat)?, eat)?,
                4 => {
                    let name = str_of(&ev, eat)?;
                    let at = u32::try_from(eat).map_err(|_| werr(eat, "HloProto larger than 4 GiB"))?;
                    e.name = (at, name.len() as u32);
                }
                5 => e.share_with = id32(int(&ev, eat)?, eat)?,
                _ => {}
            }
        }
        if e.name.1 > 0 {
            // The timeline point's own copy of the name.
            budget.charge(u64::from(e.name.1).next_multiple_of(16) + 16, "heap-simulator event names")?;
        }
        t.events.push(e);
    }
    Ok(t)
}

/// XLA `PrimitiveType` enum → the name HLO text uses.
pub fn element_type_name(t: u64) -> &'static str {
    match t {
        1 => "pred",
        2 => "s8",
        3 => "s16",
        4 => "s32",
        5 => "s64",
        6 => "u8",
        7 => "u16",
        8 => "u32",
        9 => "u64",
        10 => "f16",
        11 => "f32",
        12 => "f64",
        15 => "c64",
        16 => "bf16",
        18 => "c128",
        19 => "f8e5m2",
        20 => "f8e4m3fn",
        21 => "s4",
        22 => "u4",
        23 => "f8e4m3b11fnuz",
        24 => "f8e5m2fnuz",
        25 => "f8e4m3fnuz",
        26 => "s2",
        27 => "u2",
        28 => "f8e4m3",
        29 => "f8e3m4",
        30 => "f4e2m1fn",
        31 => "f8e8m0fnu",
        _ => "unknown",
    }
}

impl ProtoShape {
    /// The subshape at a tuple index (`{}` is the shape itself).
    pub fn subshape(&self, index: &[u64]) -> Option<&ProtoShape> {
        let mut s = self;
        for &i in index {
            match s {
                ProtoShape::Tuple(elems) => s = elems.get(usize::try_from(i).ok()?)?,
                _ => return None,
            }
        }
        Some(s)
    }

    /// HLO text form with layout, e.g. `bf16[16,1280,40]{2,1,0:T(8,128)(2,1)}`.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        self.write(&mut s);
        s
    }

    fn write(&self, out: &mut String) {
        use std::fmt::Write;
        match self {
            ProtoShape::Other => out.push_str("token[]"),
            ProtoShape::Tuple(elems) => {
                out.push('(');
                for (i, e) in elems.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    e.write(out);
                }
                out.push(')');
            }
            ProtoShape::Array { element_type, dims, minor_to_major, tiles, element_bits, memory_space } => {
                out.push_str(element_type_name(*element_type));
                out.push('[');
                for (i, d) in dims.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let _ = write!(out, "{d}");
                }
                out.push(']');
                // Scalars print no layout in HLO text.
                if let Some(m2m) = minor_to_major.as_ref().filter(|_| !dims.is_empty()) {
                    out.push('{');
                    for (i, d) in m2m.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        let _ = write!(out, "{d}");
                    }
                    let has_attrs = !tiles.is_empty() || *element_bits != 0 || *memory_space != 0;
                    if has_attrs {
                        out.push(':');
                    }
                    if !tiles.is_empty() {
                        out.push('T');
                        for t in tiles {
                            out.push('(');
                            for (i, d) in t.iter().enumerate() {
                                if i > 0 {
                                    out.push(',');
                                }
                                if *d < 0 {
                                    out.push('*');
                                } else {
                                    let _ = write!(out, "{d}");
                                }
                            }
                            out.push(')');
                        }
                    }
                    if *element_bits != 0 {
                        let _ = write!(out, "E({element_bits})");
                    }
                    if *memory_space != 0 {
                        let _ = write!(out, "S({memory_space})");
                    }
                    out.push('}');
                }
            }
        }
    }
}
