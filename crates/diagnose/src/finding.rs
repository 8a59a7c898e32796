//! Typed results. `Report` serializes to the documented JSON contract of
//! `oomdoc diagnose --format json` (README, "JSON contract"); tests hold it.

use oomdoc_kb::{FixCategory, Kind, Phase, Platform, Severity};
use serde::Serialize;
use std::collections::BTreeMap;

/// Everything found in one log.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Lines read (the last line number).
    pub lines_scanned: u64,
    /// Bytes read.
    pub bytes_scanned: u64,
    /// With several logs (`diagnose PATH…`): how many were read.
    #[serde(skip_serializing_if = "is_zero")]
    pub files_scanned: u64,
    /// With several logs: those that could not be read, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable: Vec<Unreadable>,
    /// How the input was stored, when it was not plain UTF-8 text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input: Option<InputFormat>,
    /// Distinct findings folded away to bound memory (warnings first; never the first
    /// fatal failure). Absent when nothing was folded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
    /// Problems met while reading the input (a compressed stream that breaks off).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Compression and text encoding of the input (`"gzip"`, `"utf-16le"`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct InputFormat {
    pub compression: crate::input::Compression,
    pub encoding: crate::input::Encoding,
    /// Lines ended in a carriage return alone (classic Mac), read as line feeds.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cr_only: bool,
}

/// Counts of distinct findings not kept.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Truncated {
    /// Non-fatal findings (warnings, recognized non-memory messages).
    pub warnings: u64,
    /// Fatal failures past the (much larger) cap on those.
    pub errors: u64,
}

/// A log that could not be read (`diagnose DIR` goes on without it).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Unreadable {
    pub file: String,
    pub error: String,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Sizes in bytes, only those the log states (after unit conversion).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq, Hash)]
pub struct Sizes {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub excess: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub free: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocated: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserved_unallocated: Option<u64>,
}

/// The contract's size keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SizeKey {
    Requested,
    Used,
    Limit,
    Excess,
    Free,
    Total,
    Reserved,
    Allocated,
    ReservedUnallocated,
}

impl SizeKey {
    pub const ALL: [SizeKey; 9] = [
        SizeKey::Requested,
        SizeKey::Used,
        SizeKey::Limit,
        SizeKey::Excess,
        SizeKey::Free,
        SizeKey::Total,
        SizeKey::Reserved,
        SizeKey::Allocated,
        SizeKey::ReservedUnallocated,
    ];
    pub fn name(self) -> &'static str {
        match self {
            SizeKey::Requested => "requested",
            SizeKey::Used => "used",
            SizeKey::Limit => "limit",
            SizeKey::Excess => "excess",
            SizeKey::Free => "free",
            SizeKey::Total => "total",
            SizeKey::Reserved => "reserved",
            SizeKey::Allocated => "allocated",
            SizeKey::ReservedUnallocated => "reserved_unallocated",
        }
    }
}

impl Sizes {
    pub fn get(&self, k: SizeKey) -> Option<u64> {
        match k {
            SizeKey::Requested => self.requested,
            SizeKey::Used => self.used,
            SizeKey::Limit => self.limit,
            SizeKey::Excess => self.excess,
            SizeKey::Free => self.free,
            SizeKey::Total => self.total,
            SizeKey::Reserved => self.reserved,
            SizeKey::Allocated => self.allocated,
            SizeKey::ReservedUnallocated => self.reserved_unallocated,
        }
    }
    pub fn slot(&mut self, k: SizeKey) -> &mut Option<u64> {
        match k {
            SizeKey::Requested => &mut self.requested,
            SizeKey::Used => &mut self.used,
            SizeKey::Limit => &mut self.limit,
            SizeKey::Excess => &mut self.excess,
            SizeKey::Free => &mut self.free,
            SizeKey::Total => &mut self.total,
            SizeKey::Reserved => &mut self.reserved,
            SizeKey::Allocated => &mut self.allocated,
            SizeKey::ReservedUnallocated => &mut self.reserved_unallocated,
        }
    }
    pub fn is_empty(&self) -> bool {
        SizeKey::ALL.iter().all(|&k| self.get(k).is_none())
    }
}

/// A value computed from stated numbers by exact arithmetic, with the formula shown.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Derived {
    pub name: String,
    pub bytes: u64,
    pub formula: String,
}

/// One allocation listed in a report inside the message (TPU "Largest program
/// allocations", XLA:GPU "Peak buffers", BFC chunks).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Allocation {
    pub rank: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unpadded_size: Option<u64>,
    /// Bytes of the shape computed from its layout (checks the printed size).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padded_bytes_computed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padding: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expansion: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation_type: Option<String>,
}

/// What the failure points at.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Culprit {
    /// HLO instruction or framework op (`%flash_attention.1`, `reduce-window.4`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// Kernel name (Pallas kernel, Triton/Inductor kernel, CUDA entry function, demangled when possible).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Shape as printed (with layout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// Bytes of `shape` under its layout, and without padding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub padded_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unpadded_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub custom_call_target: Option<String>,
    /// Framework op path from metadata (`jit(step)/.../pallas_call`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op_name: Option<String>,
    /// `file:line` of the framework source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// TensorFlow graph node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// Device named by the message (`GPU 0`, `0x0x0_HBM0`, `TPU:6`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// XLA program / executable / module name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    /// Allocations listed in the message, largest first as printed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allocations: Vec<Allocation>,
}

impl Culprit {
    pub fn is_empty(&self) -> bool {
        self == &Culprit::default()
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct RefOut {
    pub title: String,
    pub url: String,
}

/// A fix from the knowledge base, its placeholders filled from this finding.
#[derive(Debug, Clone, Serialize)]
pub struct FixOut {
    pub id: String,
    pub rank: u32,
    /// What kind of change the fix makes (`allocator-setting`, …; README's JSON contract).
    pub category: FixCategory,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code_lang: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<String>,
    pub references: Vec<RefOut>,
    /// Whether the behaviour this fix relies on was read in the project's source (the
    /// knowledge base's `[[behaviours]]`); `false` is shown as unverified unless
    /// `verification` is `general`.
    pub verified: bool,
    /// `verified` | `general` (general advice: names no setting or API, nothing to read in
    /// source) | `unverified`.
    pub verification: oomdoc_kb::Reliance,
    /// How often a fix of this category fixed this entry's failure in public threads
    /// (`kb/outcomes.json`); absent when the resolution corpus has no thread for the entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    /// The family-level entry this fix is borrowed from (`generic.device-oom`, …) when the
    /// failure's own entry has no fix of this kind that fits the case and public threads show it often works
    /// for failures of this memory; absent for the entry's own fixes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_family: Option<String>,
}

/// "a fix of this category fixed `fixed` of `threads` public threads with this failure".
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Measured {
    pub fixed: u64,
    pub threads: u64,
}

/// What fixed this entry's failures in public threads, by fix category, with the links.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Outcome {
    pub category: String,
    pub count: u64,
    pub links: Vec<String>,
}

/// The resolution corpus's record of this entry (JSON `outcomes`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Outcomes {
    /// Resolved public threads whose failure reads as this entry.
    pub threads: u64,
    /// By category, most threads first.
    pub categories: Vec<Outcome>,
    /// The same entry's threads that share a fact with this case, one cell per facet of
    /// the case the corpus has threads for (`workload=training`, `version=stated`,
    /// `settings=stated`, `device=small`; `advise::case_facets`). Absent when none has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_case: Vec<CaseOutcomes>,
    /// The same threads by a category their own text shows would not have helped, most
    /// first, with the links: what the first fix is weighed against (`advise::Weights::harm`).
    /// Absent when no thread marks one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub misled: Vec<Outcome>,
}

/// What fixed the entry's threads that share one fact with this case.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CaseOutcomes {
    /// `name=value`, e.g. `workload=training`.
    pub facet: String,
    pub threads: u64,
    /// By category, most threads first.
    pub categories: Vec<Outcome>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeadEndOut {
    pub id: String,
    /// The category of the action that will not help.
    pub category: FixCategory,
    pub action: String,
    pub why: String,
    pub references: Vec<RefOut>,
    /// Whether the reason was read in the project's source; `false` is shown as unverified
    /// unless `verification` is `general`.
    pub verified: bool,
    /// `verified` | `general` | `unverified`, as for fixes.
    pub verification: oomdoc_kb::Reliance,
}

/// How sure the recognizer is that this is a memory failure.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    /// The message says so (out of memory, ran out of memory, shared memory limit).
    Certain,
    /// The message does not say memory, but this failure is a known disguise of an OOM.
    Likely,
}

/// One distinct failure.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// Knowledge-base entry id.
    pub id: String,
    /// Vendor code (`E1001`) of the failure family, also when this log's wording predates codes.
    pub code: Option<String>,
    /// True when the code is printed in the log itself.
    pub code_in_log: bool,
    pub kind: Kind,
    pub severity: Severity,
    pub confidence: Confidence,
    /// Why `confidence` is `likely`: what the message says instead of memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence_reason: Option<String>,
    /// Sizes the message printed that were dropped as implausible (an overflow, two
    /// numbers run together), each with why; never reported as sizes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub size_notes: Vec<String>,
    /// The first fatal memory failure in the log.
    pub first_fatal: bool,
    pub title: String,
    pub platform: Platform,
    pub phase: Phase,
    pub memory_space: Option<String>,
    pub sizes: Sizes,
    /// The size texts as printed, by contract key.
    pub printed: BTreeMap<String, String>,
    /// Values computed from stated numbers by exact arithmetic.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub derived: Vec<Derived>,
    /// Other stated numbers that have no contract key (allocatable, reservable, max_in_use, words…).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub details: BTreeMap<String, serde_json::Value>,
    /// One line of numbers, e.g. "needs 18.00 MiB of scoped VMEM, limit 16.00 MiB, over by 2.00 MiB (+12.5%)".
    pub headline: String,
    /// 1-based line where the failure starts, and where its message ends.
    pub line: u64,
    pub end_line: u64,
    /// How many times the same failure appears (workers, retries).
    pub occurrences: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exception: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub culprit: Culprit,
    /// The job around the failure: frameworks, workload, versions, OS, stated settings
    /// (`facts::case`). Absent when the log shows none of them.
    #[serde(skip_serializing_if = "crate::facts::case::Case::is_empty")]
    pub case: crate::facts::case::Case,
    pub cause: Option<String>,
    pub fixes: Vec<FixOut>,
    pub dead_ends: Vec<DeadEndOut>,
    /// What fixed this entry's failures in public threads (counts and links); absent when
    /// the resolution corpus has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcomes: Option<Outcomes>,
    /// How well the log's numbers single out the cause: `established` (a mechanism the
    /// numbers prove), `hedged` (the cause names the likeliest explanations in order),
    /// `generic` (the entry's general cause; the numbers do not discriminate). Absent
    /// without a cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause_confidence: Option<String>,
    pub references: Vec<RefOut>,
    /// The message itself (normalized, at most a few lines).
    pub excerpt: String,
    /// With `--dump DIR`: the failing module's peak and largest buffers at the peak
    /// (`oomdoc memory`'s module summary).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<serde_json::Value>,
    /// With several logs: the log of the first occurrence (`line` and `end_line` are in it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// With several logs: every log this failure appears in, sorted (`occurrences` counts all of them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// When the log's lines carry dates: the time of the message (or of the nearest line
    /// before it), `YYYY-MM-DDTHH:MM:SS.fffffffff`, to order failures across logs. Not in the JSON.
    #[serde(skip)]
    pub time: Option<String>,
}
