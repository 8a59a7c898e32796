//! Small entry points for other tools: the module list with peaks, and a module's
//! peak plus its largest buffers (what `oomdoc diagnose --dump` attaches to a finding).

use crate::dump::{load_dump, Dump, SourcePreference};
use crate::report::ModuleReport;
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
    /// Profile hosts whose XSpace carries the module (empty for dumps).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub hosts: Vec<String>,
    /// The analysis's warnings (e.g. a buffer assignment that looks truncated); present
    /// only when there are some.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub warnings: Vec<String>,
}

/// Every module of a dump analysed: a listing line for each, the reports of those
/// that could be analysed, and the first error of those that could not.
pub struct AllModules {
    pub listing: Vec<ModuleListing>,
    pub reports: Vec<ModuleReport>,
    pub first_error: Option<MemoryError>,
}

impl AllModules {
    /// Index in `reports` of the module with the largest peak (the first one on ties).
    pub fn largest(&self) -> Option<usize> {
        self.reports.iter().enumerate().max_by(|a, b| a.1.peak_bytes.cmp(&b.1.peak_bytes).then(b.0.cmp(&a.0))).map(|(i, _)| i)
    }

    /// The largest module's report, or why there is none.
    pub fn into_largest(mut self) -> Result<ModuleReport, Option<MemoryError>> {
        match self.largest() {
            Some(i) => Ok(self.reports.swap_remove(i)),
            None => Err(self.first_error),
        }
    }
}

impl Dump {
    /// Analyse every module (what the module list and "largest by default" need).
    pub fn analyze_all(&self, source: SourcePreference) -> AllModules {
        self.analyze_all_space(source, crate::spaces::DEVICE_MEMORY_SPACE)
    }

    /// [`Dump::analyze_all`] for one memory space.
    pub fn analyze_all_space(&self, source: SourcePreference, space: u64) -> AllModules {
        let mut all = AllModules { listing: Vec::new(), reports: Vec::new(), first_error: None };
        for m in &self.modules {
            let mut warnings = Vec::new();
            let (peak_bytes, temp_bytes, error) = match m.analyze_space(source, space) {
                Ok(r) => {
                    warnings = r.warnings.clone();
                    let line = (Some(r.peak_bytes), Some(r.temp_bytes), None);
                    all.reports.push(r);
                    line
                }
                Err(e) => {
                    let line = (None, None, Some(e.to_string()));
                    all.first_error.get_or_insert(e);
                    line
                }
            };
            all.listing.push(ModuleListing { name: m.name.clone(), program_id: m.program_id, peak_bytes, temp_bytes, error, hosts: m.files.hosts.clone(), warnings });
        }
        all
    }
}

/// Every module in a dump with its peak, in program-id order.
pub fn list_modules(dump: &Path) -> Result<Vec<ModuleListing>, MemoryError> {
    Ok(load_dump(dump)?.analyze_all(SourcePreference::Auto).listing)
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
    /// Doubts about the dump (e.g. a truncated buffer assignment); empty when none.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub warnings: Vec<String>,
}

/// Summarise the module of `dump` (a directory or one dump file) that `module_hint`
/// names: a program id, the module name (`jit_train_step`) or a unique substring. An
/// empty hint picks the module with the largest peak.
pub fn summarize_module(dump: &Path, module_hint: &str, top_n: usize) -> Result<ModuleSummary, MemoryError> {
    let d = load_dump(dump)?;
    let report = if module_hint.trim().is_empty() {
        match d.analyze_all(SourcePreference::Auto).into_largest() {
            Ok(r) => r,
            Err(Some(e)) => return Err(e),
            Err(None) => d.modules[0].analyze(SourcePreference::Auto)?,
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
        warnings: report.warnings.clone(),
    })
}
