//! The only place the server calls the analysis libraries. Handlers and pages go
//! through [`Engines`], so (1) switching an adapter to a library API that just
//! landed is a one-line change here, and (2) tests can substitute an engine.
//!
//! Each adapter returns the library's report as the CLI's JSON contract value
//! (`serde_json::to_value(&report)`), which the API returns unchanged and the
//! pages render.

use oomdoc_kb::Lang;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// This build has no such engine yet: answered with 501.
    Unavailable(&'static str),
    /// The input cannot be analysed (bad spec, not a dump): 422 with this message.
    BadInput(String),
}

/// What a Pallas or Triton plan request carries: the same text `oomdoc plan` reads.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct PlanInput {
    /// `pallas` or `triton`.
    pub kind: String,
    /// The spec (Pallas) or config (Triton) text.
    pub spec: String,
    /// Chip or GPU name, e.g. `v5e`, `H100`.
    #[serde(default)]
    pub chip: Option<String>,
}

pub type DiagnoseFn = fn(log: &[u8], lang: Lang) -> Result<Value, EngineError>;
pub type MemoryFn = fn(dump_dir: &Path) -> Result<MemoryReport, EngineError>;
pub type PlanFn = fn(input: &PlanInput) -> Result<Value, EngineError>;

/// The memory report in both forms the server serves.
#[derive(Debug, Clone)]
pub struct MemoryReport {
    /// `oomdoc memory --format json`.
    pub json: Value,
    /// `oomdoc memory --format html`: a complete, self-contained page.
    pub html: String,
}

#[derive(Clone, Copy)]
pub struct Engines {
    pub diagnose: DiagnoseFn,
    pub memory: MemoryFn,
    pub plan: PlanFn,
}

impl Default for Engines {
    fn default() -> Self {
        Engines { diagnose, memory, plan }
    }
}

/// `oomdoc diagnose --format json`.
// ADAPTER(diagnose): once oomdoc-diagnose exposes its API, replace the body with
//     let opts = oomdoc_diagnose::Options { lang, ..Default::default() };
//     let report = oomdoc_diagnose::diagnose_reader(log, &opts).map_err(|e| EngineError::BadInput(e.to_string()))?;
//     serde_json::to_value(&report).map_err(|e| EngineError::BadInput(e.to_string()))
pub fn diagnose(_log: &[u8], _lang: Lang) -> Result<Value, EngineError> {
    Err(EngineError::Unavailable("the diagnose engine (crates/diagnose) is not in this build yet"))
}

/// `oomdoc memory --format json|html` on an unpacked dump directory.
// ADAPTER(memory): call oomdoc-memory's loader and its JSON/HTML renderers here.
pub fn memory(_dump_dir: &Path) -> Result<MemoryReport, EngineError> {
    Err(EngineError::Unavailable("the memory viewer (crates/memory) is not in this build yet"))
}

/// `oomdoc plan --format json`.
// ADAPTER(plan): call oomdoc-plan for `input.kind` ("pallas" | "triton") here.
pub fn plan(_input: &PlanInput) -> Result<Value, EngineError> {
    Err(EngineError::Unavailable("the kernel planner (crates/plan) is not in this build yet"))
}
