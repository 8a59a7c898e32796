//! `oomdoc._core`: the Rust core of the Python package. Every function takes and returns
//! plain strings (JSON where structured); the pure-Python layer (`oomdoc/`) turns them
//! into dicts, so the JSON contracts are byte-for-byte those of the CLI.

use oomdoc_diagnose::{diagnose_reader, live::LiveFacts, render, Lang, Options};
use oomdoc_kb::KnowledgeBase;
use oomdoc_plan::{pallas, triton};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

// The CLI itself, compiled into the extension for the `oomdoc` console script.
#[path = "../../crates/oomdoc/src/main.rs"]
#[allow(dead_code)]
mod cli;
// The CLI's modules name each other from the crate root (`crate::cli_error`).
use cli::cli_error;

fn lang(s: &str) -> PyResult<Lang> {
    Lang::parse(s).ok_or_else(|| PyValueError::new_err(format!("unknown language `{s}` (use en or zh)")))
}

fn options(lang_s: &str, facts: Option<&str>) -> PyResult<Options> {
    let facts = match facts {
        Some(j) => Some(serde_json::from_str::<LiveFacts>(j).map_err(|e| PyValueError::new_err(format!("facts: {e}")))?),
        None => None,
    };
    Ok(Options { lang: lang(lang_s)?, facts, ..Default::default() })
}

fn rendered(report: &oomdoc_diagnose::Report, l: Lang, color: bool) -> (String, String, String) {
    (serde_json::to_string(report).expect("report serializes"), render::text(report, l, color), render::markdown(report, l))
}

/// Diagnose a log held in memory: (JSON contract, text rendering, Markdown rendering).
/// With `snapshot` (a PyTorch memory snapshot's path), PyTorch findings get what was
/// live at its OOM, by call site (`oomdoc diagnose --snapshot`).
#[pyfunction]
#[pyo3(signature = (text, lang="en", facts=None, color=false, snapshot=None))]
fn diagnose_text(py: Python<'_>, text: &str, lang: &str, facts: Option<&str>, color: bool, snapshot: Option<std::path::PathBuf>) -> PyResult<(String, String, String)> {
    let mut opts = options(lang, facts)?;
    if let Some(path) = snapshot {
        let input = py.allow_threads(|| oomdoc_diagnose::snapshot::SnapshotInput::load(&path)).map_err(PyValueError::new_err)?;
        opts.snapshot = Some(std::sync::Arc::new(input));
    }
    let l = opts.lang;
    let text = text.to_owned();
    Ok(py.allow_threads(move || {
        let report = oomdoc_diagnose::diagnose_text(&text, &opts);
        rendered(&report, l, color)
    }))
}

/// Diagnose a log file, streamed (any size).
#[pyfunction]
#[pyo3(signature = (path, lang="en", facts=None, color=false))]
fn diagnose_file(py: Python<'_>, path: std::path::PathBuf, lang: &str, facts: Option<&str>, color: bool) -> PyResult<(String, String, String)> {
    let opts = options(lang, facts)?;
    let l = opts.lang;
    py.allow_threads(move || {
        if path.is_dir() {
            // As `oomdoc diagnose DIR`: every log under it, one merged report.
            let report = cli::cmd::diagnose::diagnose_paths(std::slice::from_ref(&path), &opts, None).map_err(|e| PyOSError::new_err(e.to_string()))?;
            return Ok(rendered(&report, l, color));
        }
        let f = std::fs::File::open(&path).map_err(|e| PyOSError::new_err(format!("cannot read {}: {e}", path.display())))?;
        let report = diagnose_reader(std::io::BufReader::with_capacity(1 << 16, f), &opts)
            .map_err(|e| PyOSError::new_err(format!("cannot read {}: {e}", path.display())))?;
        Ok(rendered(&report, l, color))
    })
}

/// A knowledge-base entry as JSON (`oomdoc explain KEY --format json`).
#[pyfunction]
fn explain(key: &str) -> PyResult<String> {
    let entry = KnowledgeBase::get()
        .lookup(key)
        .ok_or_else(|| PyValueError::new_err(format!("no knowledge-base entry for `{key}` (try oomdoc.explain_list())")))?;
    Ok(serde_json::to_string(entry).expect("entry serializes"))
}

/// Every entry's list row (`oomdoc explain --list --format json`).
#[pyfunction]
#[pyo3(signature = (lang_s="en"))]
fn explain_list(lang_s: &str) -> PyResult<String> {
    let l = lang(lang_s)?;
    let rows: Vec<_> = KnowledgeBase::get().entries().iter().map(|e| e.list_row(l)).collect();
    Ok(serde_json::to_string(&rows).expect("serializes"))
}

/// `oomdoc plan pallas SPEC --format json` on a JSON spec; also returns the text rendering.
#[pyfunction]
fn plan_pallas(spec_json: &str) -> PyResult<(String, String)> {
    let spec = pallas::parse_spec(spec_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let plan = pallas::plan(&spec).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((serde_json::to_string(&plan).expect("plan serializes"), oomdoc_plan::render::pallas(&plan)))
}

/// The canonical name of a TPU chip (`TPU v5 lite` → `v5e`), or None.
#[pyfunction]
fn tpu_chip_name(kind: &str) -> Option<String> {
    oomdoc_hw::tpu_chip(kind).map(|c| c.name.clone())
}

type TritonArgs = (&'static oomdoc_hw::GpuArch, triton::TritonDType, triton::TritonVersion, Vec<triton::TritonConfig>);

fn triton_args(arch: &str, configs_json: &str, dtype: &str, triton_version: &str) -> PyResult<TritonArgs> {
    let a = oomdoc_hw::gpu_arch(arch).ok_or_else(|| {
        let known: Vec<&str> = oomdoc_hw::table().gpu.iter().map(|g| g.arch.as_str()).collect();
        PyValueError::new_err(format!("unknown GPU arch `{arch}` (known: {})", known.join(", ")))
    })?;
    let d = triton::TritonDType::parse(dtype)
        .ok_or_else(|| PyValueError::new_err(format!("`{dtype}` is not a Triton dot type (fp16, bf16, fp32, fp8e4nv, fp8e5)")))?;
    let v = triton::TritonVersion::parse(triton_version)
        .ok_or_else(|| PyValueError::new_err(format!("`{triton_version}` is not a Triton release >= 2.1 (e.g. 2.1, 3.9)")))?;
    let configs = triton::parse_configs(configs_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((a, d, v, configs))
}

/// `oomdoc plan triton --arch ARCH --configs JSON --format json`.
#[pyfunction]
#[pyo3(signature = (arch, configs_json, dtype="fp16", triton_version="3.9"))]
fn plan_triton_configs(arch: &str, configs_json: &str, dtype: &str, triton_version: &str) -> PyResult<String> {
    let (a, d, v, configs) = triton_args(arch, configs_json, dtype, triton_version)?;
    let verdicts = triton::judge_configs(a, v, d, &configs);
    Ok(serde_json::to_string(&triton::ConfigsReport::new(a, &verdicts)).expect("serializes"))
}

/// Each config's verdict, in input order (what the Triton pruner keeps or drops).
#[pyfunction]
#[pyo3(signature = (arch, configs_json, dtype="fp16", triton_version="3.9"))]
fn judge_triton_configs(arch: &str, configs_json: &str, dtype: &str, triton_version: &str) -> PyResult<String> {
    let (a, d, v, configs) = triton_args(arch, configs_json, dtype, triton_version)?;
    Ok(serde_json::to_string(&triton::judge_configs(a, v, d, &configs)).expect("serializes"))
}

/// Run the command line with `argv` (program name first); returns the exit status.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.allow_threads(move || cli::run_cli(argv))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(diagnose_text, m)?)?;
    m.add_function(wrap_pyfunction!(diagnose_file, m)?)?;
    m.add_function(wrap_pyfunction!(explain, m)?)?;
    m.add_function(wrap_pyfunction!(explain_list, m)?)?;
    m.add_function(wrap_pyfunction!(plan_pallas, m)?)?;
    m.add_function(wrap_pyfunction!(tpu_chip_name, m)?)?;
    m.add_function(wrap_pyfunction!(plan_triton_configs, m)?)?;
    m.add_function(wrap_pyfunction!(judge_triton_configs, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    Ok(())
}
