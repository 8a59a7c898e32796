//! The only place the server calls the analysis libraries. Handlers and pages go
//! through [`Engines`], so an engine is swapped in one place, and tests can
//! substitute one.
//!
//! Each adapter returns the library's report as the CLI's JSON contract value
//! (`serde_json::to_value(&report)`, what `--format json` prints), which the API
//! returns unchanged and the pages render.

use oomdoc_kb::Lang;
use serde_json::Value;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// This build has no such engine: answered with 501.
    Unavailable(&'static str),
    /// The input cannot be analysed (bad spec, not a dump): 422 with this message.
    BadInput(String),
    /// Analysing the input would pass the request's memory reservation: 413.
    TooLarge(String),
}

/// A plan request: what `oomdoc plan pallas SPEC [--chip]` or
/// `oomdoc plan triton --arch ARCH --configs FILE` reads.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanInput {
    /// `pallas` or `triton`.
    pub kind: String,
    /// Pallas: the spec (TOML, or JSON starting with `{`). Triton: the autotune configs (JSON).
    pub spec: String,
    /// Pallas: overrides the spec's chip (`v5e`). Triton: the GPU arch (`sm_90`), required.
    #[serde(default)]
    pub chip: Option<String>,
    /// Triton dot type (default `fp16`, as the CLI).
    #[serde(default)]
    pub dtype: Option<String>,
    /// Triton release (default `3.9`, as the CLI).
    #[serde(default)]
    pub triton_version: Option<String>,
}

pub type DiagnoseFn = fn(log: &[u8], lang: Lang) -> Result<Value, EngineError>;
pub type MemoryFn = fn(dump_dir: &Path) -> Result<MemoryReport, EngineError>;
pub type PlanFn = fn(input: &PlanInput) -> Result<Value, EngineError>;

/// The memory report in both forms the server serves.
#[derive(Debug, Clone)]
pub struct MemoryReport {
    /// `oomdoc memory DIR --format json`.
    pub json: Value,
    /// `oomdoc memory DIR --format html`: a complete, self-contained page.
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

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, EngineError> {
    serde_json::to_value(v).map_err(|e| EngineError::BadInput(format!("report does not serialize: {e}")))
}

/// `oomdoc diagnose --format json`. Invalid UTF-8 is the engine's business (it reads bytes).
pub fn diagnose(log: &[u8], lang: Lang) -> Result<Value, EngineError> {
    // A compressed body is held to the log limit once decompressed too (a 1 MB zstd body
    // can hold 10 GiB of text).
    let opts = oomdoc_diagnose::Options { lang, max_text_bytes: crate::limits::text_limit(), ..Default::default() };
    // The scan stops at its next read once the request is cancelled (timeout, client gone).
    let reader = crate::limits::CancelReader { inner: log, cancel: crate::limits::current().unwrap_or_default() };
    let report = oomdoc_diagnose::diagnose_reader(reader, &opts).map_err(|e| match e.kind() {
        std::io::ErrorKind::FileTooLarge => EngineError::TooLarge(format!("{e}, this server's log limit (--max-log-mib); decompress it and send the part around the failure")),
        _ => EngineError::BadInput(e.to_string()),
    })?;
    to_value(&report)
}

/// `oomdoc memory DIR --format json|html` with no module flag: every module is
/// analysed for the module list, and the one with the largest peak is reported.
pub fn memory(dump_dir: &Path) -> Result<MemoryReport, EngineError> {
    use oomdoc_memory::{load_dump_with, render, Limits, LoadOptions, MemoryError, SourcePreference};
    // Decoding stays within what this request reserved (upload × the memory factor), plus
    // the decoder's constant slack for the tables of tiny inputs.
    let max_bytes = crate::limits::reserved_bytes().map(|r| r.saturating_add(oomdoc_memory::DECODE_SLACK_BYTES));
    let limits = Limits { max_bytes, max_records: None };
    // Messages name files as the user uploaded them, never where this server keeps them.
    let private = |message: String| without_dir(&message, dump_dir);
    let failed = |e: MemoryError| match e {
        MemoryError::TooLarge { .. } => EngineError::TooLarge(private(e.to_string())),
        e => EngineError::BadInput(private(e.to_string())),
    };
    let dump = load_dump_with(&[dump_dir.to_path_buf()], &LoadOptions { limits, ..Default::default() }).map_err(failed)?;
    // Module by module, so a cancelled request (timeout, client gone) stops between modules.
    let mut all = oomdoc_memory::summary::AllModules { listing: Vec::new(), reports: Vec::new(), first_error: None };
    for module in &dump.modules {
        if crate::limits::cancelled() {
            return Err(EngineError::BadInput("cancelled: the request ran past its time limit".into()));
        }
        let one = oomdoc_memory::Dump { root: dump.root.clone(), modules: vec![module.clone()] };
        let part = one.analyze_all(SourcePreference::Auto);
        all.listing.extend(part.listing);
        all.reports.extend(part.reports);
        if all.first_error.is_none() {
            all.first_error = part.first_error;
        }
    }
    let listing = std::mem::take(&mut all.listing);
    let best = all.into_largest().map_err(|first_error| first_error.map_or_else(|| EngineError::BadInput("no XLA module found in the upload".to_string()), failed))?;
    let report = oomdoc_memory::MemoryReport { modules: vec![best] };
    Ok(MemoryReport { json: to_value(&report)?, html: render::html::render(&report, &listing) })
}

/// `message` with `dir` and the private upload directories around it taken out of
/// every path it holds (`/tmp/oomdoc-dump-1-x/upload/m.hlo.pb` → `m.hlo.pb`).
fn without_dir(message: &str, dir: &Path) -> String {
    let is_upload = |p: &Path| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(crate::tempdir::PREFIX));
    // The dump's directory, and each one above it up to the upload directory, longest first.
    let upload = dir.ancestors().position(is_upload);
    let mut out = message.to_string();
    for p in dir.ancestors().take(upload.map_or(1, |i| i + 1)) {
        let shown = p.display().to_string();
        if shown.len() > 1 {
            out = out.replace(&format!("{shown}/"), "").replace(&shown, ".");
        }
    }
    out
}

/// `oomdoc plan pallas SPEC [--chip C] --format json`, or
/// `oomdoc plan triton --arch A --configs FILE [--dtype D] [--triton-version V] --format json`.
pub fn plan(input: &PlanInput) -> Result<Value, EngineError> {
    use oomdoc_plan::{pallas, triton};
    let bad = |e: oomdoc_plan::PlanError| EngineError::BadInput(e.to_string());
    let chip = input.chip.as_deref().map(str::trim).filter(|c| !c.is_empty());
    match input.kind.as_str() {
        "pallas" => {
            let mut spec = pallas::parse_spec(&input.spec).map_err(bad)?;
            if let Some(c) = chip {
                spec.chip = oomdoc_hw::tpu_chip(c)
                    .ok_or_else(|| EngineError::BadInput(format!("`chip`: unknown TPU `{c}`")))?;
            }
            to_value(&pallas::plan(&spec).map_err(bad)?)
        }
        "triton" => {
            let arch_name = chip.ok_or_else(|| EngineError::BadInput("`chip`: the GPU arch (sm_80, sm_90, …) is required".into()))?;
            let arch = oomdoc_hw::gpu_arch(arch_name)
                .ok_or_else(|| EngineError::BadInput(format!("`chip`: unknown GPU arch `{arch_name}`")))?;
            let dtype_name = input.dtype.as_deref().unwrap_or("fp16");
            let dtype = triton::TritonDType::parse(dtype_name)
                .ok_or_else(|| EngineError::BadInput(format!("`dtype`: `{dtype_name}` is not a Triton dot type")))?;
            let version_name = input.triton_version.as_deref().unwrap_or("3.9");
            let version = triton::TritonVersion::parse(version_name)
                .ok_or_else(|| EngineError::BadInput(format!("`triton_version`: `{version_name}` is not a Triton release")))?;
            let configs = triton::parse_configs(&input.spec).map_err(bad)?;
            let verdicts = triton::judge_configs(arch, version, dtype, &configs);
            to_value(&triton::ConfigsReport::new(arch, &verdicts))
        }
        other => Err(EngineError::BadInput(format!("`kind` must be \"pallas\" or \"triton\", not `{other}`"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_never_show_the_upload_directory() {
        let dir = Path::new("/tmp/x/oomdoc-dump-12-ab/dump/run1");
        let m = "/tmp/x/oomdoc-dump-12-ab/dump/run1/m.hlo.pb: byte 1; also /tmp/x/oomdoc-dump-12-ab/upload/a.zip";
        assert_eq!(without_dir(m, dir), "m.hlo.pb: byte 1; also upload/a.zip");
        assert_eq!(without_dir("/srv/d/m.hlo.pb: bad", Path::new("/srv/d")), "m.hlo.pb: bad");
    }
}
