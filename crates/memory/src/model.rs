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
    Schedule { sequence: Names, max: u64, ranges: Vec<Option<(u64, u64)>> },
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
    /// The values file's index (where each value's defining instruction lies) and the
    /// optimized HLO text (stack frames, in-place updates).
    Text { values: Option<crate::text::values::ValuesIndex>, hlo_text: Option<PathBuf> },
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

/// Many short strings in one buffer: a million schedule names or live-range keys
/// without a million allocations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    text: String,
    ends: Vec<usize>,
}

impl Names {
    pub fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        Some(&self.text[start..end])
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }
}

impl<S: AsRef<str>> FromIterator<S> for Names {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Names {
        let mut names = Names::default();
        for s in iter {
            names.push(s.as_ref());
        }
        names
    }
}

/// A set of value ids: a bitmap when they are dense (XLA numbers HLO values from 0, so
/// a dump's ids are), a hash set otherwise (a crafted id of 2^60 must not size a bitmap).
#[derive(Debug)]
pub enum IdSet {
    Dense(Vec<u64>),
    Sparse(FastSet<u64>),
}

impl IdSet {
    /// A set for about `expected` ids, all below `max_id + 1`.
    pub fn with_bound(expected: usize, max_id: u64) -> IdSet {
        let dense_limit = (expected as u64).saturating_mul(64).saturating_add(1 << 20);
        if max_id < dense_limit {
            IdSet::Dense(vec![0; (max_id / 64 + 1) as usize])
        } else {
            let mut set = FastSet::default();
            set.reserve(expected);
            IdSet::Sparse(set)
        }
    }

    /// Add `id`; false when it was there already.
    pub fn insert(&mut self, id: u64) -> bool {
        match self {
            IdSet::Dense(bits) => match bits.get_mut((id / 64) as usize) {
                Some(word) => {
                    let bit = 1u64 << (id % 64);
                    let fresh = *word & bit == 0;
                    *word |= bit;
                    fresh
                }
                None => {
                    // Above the bound given: move to a hash set rather than grow.
                    let mut set: FastSet<u64> = Default::default();
                    for (w, &word) in bits.iter().enumerate() {
                        for b in 0..64 {
                            if word & (1 << b) != 0 {
                                set.insert(w as u64 * 64 + b);
                            }
                        }
                    }
                    *self = IdSet::Sparse(set);
                    self.insert(id)
                }
            },
            IdSet::Sparse(set) => set.insert(id),
        }
    }

    pub fn contains(&self, id: u64) -> bool {
        match self {
            IdSet::Dense(bits) => bits.get((id / 64) as usize).is_some_and(|w| w & (1 << (id % 64)) != 0),
            IdSet::Sparse(set) => set.contains(&id),
        }
    }
}

#[cfg(test)]
mod collection_tests {
    use super::*;

    #[test]
    fn names_keep_order_and_text() {
        let names: Names = ["f0", "", "fusion.12"].into_iter().collect();
        assert_eq!(names.len(), 3);
        assert_eq!(names.get(1), Some(""));
        assert_eq!(names.get(2), Some("fusion.12"));
        assert_eq!(names.get(3), None);
        assert_eq!(names.iter().collect::<Vec<_>>(), ["f0", "", "fusion.12"]);
    }

    #[test]
    fn id_sets_dense_sparse_and_past_the_bound() {
        let mut dense = IdSet::with_bound(4, 10);
        assert!(matches!(dense, IdSet::Dense(_)));
        assert!(dense.insert(3) && !dense.insert(3));
        assert!(dense.insert(1 << 40), "an id past the bound moves to a hash set");
        assert!(matches!(dense, IdSet::Sparse(_)));
        assert!(dense.contains(3) && dense.contains(1 << 40) && !dense.contains(4));
        let mut sparse = IdSet::with_bound(2, u64::MAX);
        sparse.insert(u64::MAX);
        sparse.insert(7);
        assert!(matches!(sparse, IdSet::Sparse(_)));
        assert!(sparse.contains(u64::MAX) && sparse.contains(7) && !sparse.contains(8));
    }
}
