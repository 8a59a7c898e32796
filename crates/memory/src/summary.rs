//! Small entry points for other tools: the module list with peaks, and a module's
//! peak plus its largest buffers (what `oomdoc diagnose --dump` attaches to a finding).

use crate::dump::{load_dump, SourcePreference};
use crate::error::MemoryError;
use crate::report::BufferAtPeak;
use serde::Serialize;
use std::path::Path;

/// One line of the module list.
#[derive(Debug, Clone, Serialize)]
pub struct ModuleListing {
    pub name: String,
    pub program_id: Option<u64>,
    /// `None` when the module could not be analysed (see `error`).
    pub peak_bytes: Option<u64>,
    pub temp_bytes: Option<u64>,
    pub error: Option<String>,
}

/// Every module in a dump with its peak, in program-id order.
pub fn list_modules(dump: &Path) -> Result<Vec<ModuleListing>, MemoryError> {
    let dump = load_dump(dump)?;
    Ok(dump
        .modules
        .iter()
        .map(|m| match m.analyze(SourcePreference::Auto) {
            Ok(r) => ModuleListing { name: m.name.clone(), program_id: m.program_id, peak_bytes: Some(r.peak_bytes), temp_bytes: Some(r.temp_bytes), error: None },
            Err(e) => ModuleListing { name: m.name.clone(), program_id: m.program_id, peak_bytes: None, temp_bytes: None, error: Some(e.to_string()) },
        })
        .collect())
}

/// A module's peak and its largest buffers at the peak.
#[derive(Debug, Clone, Serialize)]
pub struct ModuleSummary {
    pub module: String,
    pub program_id: Option<u64>,
    pub peak_bytes: u64,
    pub peak_instruction: String,
    pub arguments_bytes: u64,
    pub outputs_bytes: u64,
    pub alias_bytes: u64,
    pub temp_bytes: u64,
    /// Padding (size − unpadded) summed over the buffers at the peak.
    pub padding_bytes: u64,
    /// Largest first; the merged "small" entry is left out.
    pub top_buffers: Vec<BufferAtPeak>,
}

/// Summarise the module of `dump` (a directory or one dump file) that `module_hint`
/// names: a program id, the module name (`jit_train_step`) or a unique substring. An
/// empty hint picks the module with the largest peak.
pub fn summarize_module(dump: &Path, module_hint: &str, top_n: usize) -> Result<ModuleSummary, MemoryError> {
    let d = load_dump(dump)?;
    let report = if module_hint.trim().is_empty() {
        let mut best = None;
        for m in &d.modules {
            if let Ok(r) = m.analyze(SourcePreference::Auto) {
                if best.as_ref().map_or(true, |b: &crate::ModuleReport| r.peak_bytes > b.peak_bytes) {
                    best = Some(r);
                }
            }
        }
        match best {
            Some(r) => r,
            None => d.modules[0].analyze(SourcePreference::Auto)?,
        }
    } else {
        d.select(module_hint)?.analyze(SourcePreference::Auto)?
    };
    Ok(ModuleSummary {
        module: report.name.clone(),
        program_id: report.program_id,
        peak_bytes: report.peak_bytes,
        peak_instruction: report.peak_instruction.clone(),
        arguments_bytes: report.arguments_bytes,
        outputs_bytes: report.outputs_bytes,
        alias_bytes: report.alias_bytes,
        temp_bytes: report.temp_bytes,
        padding_bytes: report.padding_bytes(),
        top_buffers: report.top_buffers(top_n).cloned().collect(),
    })
}
