//! Minimal `xla.HloProto` decoding. Field numbers are those of `xla/service/hlo.proto`
//! and `xla/xla_data.proto`, checked against real dumps; nothing else is read.

use super::wire::{push_ints, Reader, Value, WireError};
use crate::text::instruction::InstructionMeta;
use crate::text::stack_frames::StackFrameIndex;
use std::collections::HashMap;

#[derive(Debug, Default)]
pub struct HloProtoData {
    pub module_name: String,
    pub entry_computation_name: String,
    pub module_id: Option<u64>,
    /// Instruction id → (offset, length) of its encoded message in the file; decoded on
    /// demand with [`decode_instruction_at`], since most instructions (inside fusions)
    /// define no buffer and decoding them all dominated the run time.
    pub instruction_spans: HashMap<u64, (usize, usize)>,
    pub stack_frames: StackFrameIndex,
    pub logical_buffers: HashMap<u64, ProtoLogicalBuffer>,
    pub allocations: Vec<ProtoAllocation>,
    pub traces: Vec<ProtoTrace>,
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

#[derive(Debug, Default)]
pub struct ProtoLogicalBuffer {
    pub id: u64,
    pub size: u64,
    pub color: u64,
    pub instruction_id: u64,
    pub instruction_name: String,
    pub shape_index: Vec<u64>,
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
    /// (logical buffer id, offset, size)
    pub assigned: Vec<(u64, u64, u64)>,
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

#[derive(Debug, Clone)]
pub struct HeapEvent {
    pub kind: EventKind,
    pub buffer_id: u64,
    pub instruction_name: String,
    pub share_with: u64,
}

type R<T> = Result<T, WireError>;

fn bytes<'a>(v: &Value<'a>, at: usize) -> R<&'a [u8]> {
    v.as_bytes().ok_or(WireError { offset: at, message: "expected a length-delimited field" })
}
fn int(v: &Value<'_>, at: usize) -> R<u64> {
    v.as_u64().ok_or(WireError { offset: at, message: "expected an integer field" })
}
fn string(v: &Value<'_>, at: usize) -> R<String> {
    let b = bytes(v, at)?;
    std::str::from_utf8(b).map(str::to_string).map_err(|_| WireError { offset: at, message: "string field is not UTF-8" })
}

/// Decode an `HloProto` (module = 1, buffer_assignment = 3).
pub fn decode_hlo_proto(buf: &[u8]) -> Result<HloProtoData, WireError> {
    let mut out = HloProtoData::default();
    let mut r = Reader::new(buf);
    let (mut saw_module, mut saw_assignment) = (false, false);
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => {
                decode_module(bytes(&v, at)?, at, &mut out)?;
                saw_module = true;
            }
            3 => {
                decode_buffer_assignment(bytes(&v, at)?, at, &mut out)?;
                saw_assignment = true;
            }
            _ => {}
        }
    }
    if !saw_module {
        return Err(WireError { offset: 0, message: "no HloModuleProto (field 1); not an xla.HloProto" });
    }
    if !saw_assignment {
        return Err(WireError { offset: 0, message: "no buffer assignment (field 3); dump the module after optimizations with --xla_dump_hlo_as_proto" });
    }
    Ok(out)
}

fn decode_module(buf: &[u8], base: usize, out: &mut HloProtoData) -> R<()> {
    let mut r = Reader::nested(buf, base);
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => out.module_name = string(&v, at)?,
            2 => out.entry_computation_name = string(&v, at)?,
            3 => decode_computation(bytes(&v, at)?, at, out)?,
            5 => out.module_id = Some(int(&v, at)?),
            17 => out.stack_frames = decode_stack_frames(bytes(&v, at)?, at)?,
            _ => {}
        }
    }
    Ok(())
}

fn decode_computation(buf: &[u8], base: usize, out: &mut HloProtoData) -> R<()> {
    let mut r = Reader::nested(buf, base);
    while let Some((field, v, at)) = r.next_field()? {
        if field == 2 {
            let body = bytes(&v, at)?;
            let mut ir = Reader::nested(body, at);
            let mut id = 0;
            while let Some((f, iv, iat)) = ir.next_field()? {
                if f == 35 {
                    id = int(&iv, iat)?;
                }
            }
            out.instruction_spans.insert(id, (at, body.len()));
        }
    }
    Ok(())
}

/// Decode the instruction whose message sits at `span` of the file `buf`.
pub fn decode_instruction_at(buf: &[u8], span: (usize, usize)) -> Result<ProtoInstruction, WireError> {
    let body = span.0.checked_add(span.1).and_then(|end| buf.get(span.0..end)).ok_or(WireError { offset: span.0, message: "instruction outside the file" })?;
    decode_instruction(body, span.0).map(|(_, i)| i)
}

fn decode_instruction(buf: &[u8], base: usize) -> R<(u64, ProtoInstruction)> {
    let mut r = Reader::nested(buf, base);
    let mut instr = ProtoInstruction::default();
    let mut id = 0;
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => instr.name = string(&v, at)?,
            2 => instr.meta.opcode = string(&v, at)?,
            3 => instr.shape = decode_shape(bytes(&v, at)?, at, 0)?,
            7 => decode_metadata(bytes(&v, at)?, at, &mut instr.meta)?,
            35 => id = int(&v, at)?,
            _ => {}
        }
    }
    Ok((id, instr))
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
        return Err(WireError { offset: base, message: "shape nesting deeper than 64" });
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

fn decode_stack_frames(buf: &[u8], base: usize) -> R<StackFrameIndex> {
    let mut r = Reader::nested(buf, base);
    let mut index = StackFrameIndex::default();
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => index.file_names.push(string(&v, at)?),
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
                index.frames.push((loc, parent));
            }
            _ => {}
        }
    }
    Ok(index)
}

fn decode_buffer_assignment(buf: &[u8], base: usize, out: &mut HloProtoData) -> R<()> {
    let mut r = Reader::nested(buf, base);
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => {
                let lb = decode_logical_buffer(bytes(&v, at)?, at)?;
                out.logical_buffers.insert(lb.id, lb);
            }
            3 => out.allocations.push(decode_allocation(bytes(&v, at)?, at)?),
            4 => out.traces.push(decode_trace(bytes(&v, at)?, at)?),
            _ => {}
        }
    }
    Ok(())
}

fn decode_logical_buffer(buf: &[u8], base: usize) -> R<ProtoLogicalBuffer> {
    let mut r = Reader::nested(buf, base);
    let mut lb = ProtoLogicalBuffer::default();
    while let Some((field, v, at)) = r.next_field()? {
        match field {
            1 => lb.id = int(&v, at)?,
            2 => lb.size = int(&v, at)?,
            3 => {
                let mut lr = Reader::nested(bytes(&v, at)?, at);
                while let Some((f, lv, lat)) = lr.next_field()? {
                    match f {
                        2 => lb.instruction_name = string(&lv, lat)?,
                        3 => push_ints(lv, lat, &mut lb.shape_index)?,
                        4 => lb.instruction_id = int(&lv, lat)?,
                        _ => {}
                    }
                }
            }
            4 => lb.color = int(&v, at)?,
            _ => {}
        }
    }
    Ok(lb)
}

fn decode_allocation(buf: &[u8], base: usize) -> R<ProtoAllocation> {
    let mut r = Reader::nested(buf, base);
    let mut a = ProtoAllocation::default();
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
                a.assigned.push((id, offset, size));
            }
            11 => a.is_tuple = int(&v, at)? != 0,
            12 => a.constant = int(&v, at)? != 0,
            13 => a.aliased_with_output = Some(int(&v, at)? != 0),
            _ => {}
        }
    }
    Ok(a)
}

fn decode_trace(buf: &[u8], base: usize) -> R<ProtoTrace> {
    let mut r = Reader::nested(buf, base);
    let mut t = ProtoTrace::default();
    while let Some((field, v, at)) = r.next_field()? {
        if field == 1 {
            let mut er = Reader::nested(bytes(&v, at)?, at);
            let mut e = HeapEvent { kind: EventKind::Alloc, buffer_id: 0, instruction_name: String::new(), share_with: 0 };
            while let Some((f, ev, eat)) = er.next_field()? {
                match f {
                    1 => {
                        e.kind = match int(&ev, eat)? {
                            0 => EventKind::Alloc,
                            1 => EventKind::Free,
                            2 => EventKind::ShareWith,
                            _ => return Err(WireError { offset: eat, message: "unknown heap event kind" }),
                        }
                    }
                    2 => e.buffer_id = int(&ev, eat)?,
                    4 => e.instruction_name = string(&ev, eat)?,
                    5 => e.share_with = int(&ev, eat)?,
                    _ => {}
                }
            }
            t.events.push(e);
        }
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
