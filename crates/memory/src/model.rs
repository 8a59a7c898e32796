//! One module's memory facts, whichever input they came from: allocations, the
//! logical buffers (HLO values) in them, and how liveness is known — a heap-simulator
//! trace (from an HloProto) or per-value live ranges over the schedule (text dumps).

use crate::proto::hlo::HeapEvent;
use crate::text::stack_frames::StackFrameIndex;
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Default)]
pub struct Allocation {
    pub index: u64,
    pub size: u64,
    pub color: u64,
    pub parameter: bool,
    pub maybe_live_out: bool,
    /// A donated parameter that the output reuses.
    pub aliased: bool,
    pub constant: bool,
    pub thread_local: bool,
    /// Positions in [`ModuleData::buffers`] of the values assigned here, in dump order.
    pub buffers: Vec<usize>,
}

impl Allocation {
    /// XLA `IsPreallocatedTempBuffer`: what `memory_analysis().temp_size_in_bytes` sums.
    pub fn is_temp(&self) -> bool {
        !self.parameter && !self.maybe_live_out && !self.thread_local && !self.constant
    }

    /// Live for the whole program, as XProf 2.24 counts it (thread-local excluded).
    pub fn is_indefinite(&self) -> bool {
        self.parameter || self.maybe_live_out || self.constant
    }

    /// XProf's group name, checked in XProf's order (a donated parameter is a Parameter).
    pub fn group(&self) -> &'static str {
        if self.parameter {
            "Parameter"
        } else if self.maybe_live_out {
            "Output"
        } else if self.thread_local {
            "Thread-local"
        } else if self.constant {
            "Constant"
        } else {
            "Temporary"
        }
    }
}

/// A logical buffer (HLO value) with its place in an allocation.
#[derive(Debug, Clone, Default)]
pub struct Buffer {
    pub id: u64,
    pub instruction: String,
    /// `""` for a top-level value, else `{i,j}`.
    pub index: String,
    pub size: u64,
    pub unpadded: u64,
    pub offset: u64,
    /// Position in [`ModuleData::allocations`].
    pub allocation: usize,
    pub shape: String,
}

impl Buffer {
    /// `name` or `name{1}`, as XProf shows a value.
    pub fn display_name(&self) -> String {
        if self.index.is_empty() || self.index == "{}" {
            self.instruction.clone()
        } else {
            format!("{}{}", self.instruction, self.index)
        }
    }
}

#[derive(Debug, Clone)]
pub enum Liveness {
    /// The heap simulator's ALLOC/FREE/SHARE_WITH events of the temp allocation; their
    /// buffers are positions in [`ModuleData::buffers`], their names are read with
    /// [`ModuleData::event_name`].
    Trace(Vec<HeapEvent>),
    /// The flattened schedule and, per buffer, an inclusive `[start, end]` range
    /// (`None` for thread-local values, which have none).
    Schedule { sequence: Vec<String>, max: u64, ranges: Vec<Option<(u64, u64)>> },
    /// No liveness available for the temp allocation (no temp values at all).
    None,
}

/// Where op names and source lines come from, resolved only for the buffers shown.
#[derive(Debug)]
pub enum LabelSource {
    /// The HloProto's bytes, where each defining instruction lies in them (sorted by
    /// instruction id: (id, offset, length)), the instruction id of each buffer (by
    /// position) and the stack frames: labels are decoded for the buffers shown only.
    Proto { bytes: Vec<u8>, spans: Vec<(u64, u32, u32)>, instruction_of: Vec<u64>, frames: StackFrameIndex },
    Text { values_file: Option<PathBuf>, hlo_text: Option<PathBuf> },
}

#[derive(Debug)]
pub struct ModuleData {
    pub name: String,
    pub program_id: Option<u64>,
    pub allocations: Vec<Allocation>,
    pub buffers: Vec<Buffer>,
    pub liveness: Liveness,
    pub labels: LabelSource,
    /// The files the facts came from, for messages.
    pub sources: Vec<PathBuf>,
    /// Heap-simulator traces other than the one in `liveness` (other memory spaces), with
    /// the allocation (position) that owns each: see [`crate::spaces`].
    pub other_traces: Vec<(Option<usize>, Vec<HeapEvent>)>,
    /// Doubts about the input that did not stop the analysis (e.g. a buffer assignment
    /// that may be truncated); shown loudly with the result.
    pub warnings: Vec<String>,
}

impl ModuleData {
    /// The instruction name of a heap event (read from the HloProto's bytes).
    pub fn event_name(&self, e: &HeapEvent) -> &str {
        match &self.labels {
            LabelSource::Proto { bytes, .. } => {
                let (at, len) = (e.name.0 as usize, e.name.1 as usize);
                bytes.get(at..at + len).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or("")
            }
            LabelSource::Text { .. } => "",
        }
    }
}

/// Bytes of a shape without layout padding; tuples and unreadable shapes count as their
/// allocated size (pointer tables have no padding). A shape whose bytes overflow 64 bits
/// gives `u64::MAX`, which [`crate::report::check_sizes`] refuses by the buffer's name.
pub fn unpadded_size(shape: &str, size: u64) -> u64 {
    if shape.starts_with('(') {
        return size;
    }
    match oomdoc_units::Shape::parse(shape).and_then(|s| s.unpadded_bytes()) {
        Ok(n) => n,
        Err(oomdoc_units::ShapeError::Overflow(_)) => u64::MAX,
        Err(_) => size,
    }
}

/// FxHash (rustc's hasher): much faster than SipHash for the integer and short-name
/// keys of million-value dumps; the inputs are files the user chose, not an attacker.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(u64::from(i));
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        // The product's high bits are the well-mixed ones; hashbrown picks the bucket from
        // the low bits, so rotate them down (as rustc-hash 2 does). Without it, names that
        // differ only in later bytes (`f123456`, `f123457`) fell into a few hundred
        // buckets and a million-name table became quadratic.
        self.0.rotate_left(26)
    }
}

pub type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;
pub type FastSet<K> = std::collections::HashSet<K, std::hash::BuildHasherDefault<FxHasher>>;
