//! `oomdoc memory`: the XLA memory viewer. All analysis and rendering lives in
//! `oomdoc-memory`; this file maps flags onto it.

use crate::cli_error::CliError;
use clap::{Args, ValueEnum};
use oomdoc_memory::render::{html, json, text};
use oomdoc_memory::{load_dump_with, LoadOptions, MemoryReport, ModuleListing, ModuleReport, SourcePreference};
use std::io::Write;
use std::path::PathBuf;

#[derive(Args)]
pub struct MemoryArgs {
    /// A dump directory (XLA_FLAGS=--xla_dump_to=DIR), or files from it
    /// (*-buffer-assignment.txt, *-live-range.txt, *.hlo.pb[.gz], *.hlo_proto.pb), or a
    /// jax.profiler.trace log directory / its <host>.xplane.pb[.gz] files.
    #[arg(required = true, value_name = "DUMP")]
    pub paths: Vec<PathBuf>,

    /// Module to analyse: program id (34), name (jit_train_step) or a unique part of it.
    /// Default: the module with the largest peak.
    #[arg(short, long, value_name = "NAME")]
    pub module: Option<String>,

    /// Analyse every module.
    #[arg(long, conflicts_with = "module")]
    pub all: bool,

    /// Only list the modules with their peaks.
    #[arg(long, conflicts_with_all = ["module", "all"])]
    pub list: bool,

    #[arg(short, long, value_enum, default_value_t = Format::Text)]
    pub format: Format,

    /// Write the report to this file instead of standard output.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Which input to use when a module has both: the HloProto (XProf's input; x axis =
    /// heap events) or the text dump (x axis = schedule positions).
    #[arg(long, value_enum, default_value_t = Source::Auto)]
    pub source: Source,

    /// Memory space to analyse, like XProf's Memory Types: hbm (0, the default), host (5)
    /// or a number. Allocations of other spaces never count in its peak.
    #[arg(long, value_name = "SPACE", default_value = "hbm")]
    pub memory_space: String,

    /// Profile run to read in a log directory (plugins/profile/<RUN>/). Default: the newest.
    #[arg(long, value_name = "RUN")]
    pub run: Option<String>,

    /// Buffers (XLA) or call sites and allocations (PyTorch snapshot) to list.
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,

    /// PyTorch snapshot: print each call site's full stack in the text report.
    #[arg(long)]
    pub stacks: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Html,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Source {
    Auto,
    Text,
    Proto,
}

/// `-o FILE` must never overwrite what is being read: an input file itself (also
/// through a symlink or a hard link), or an existing file inside an input directory.
fn refuse_overwriting_inputs(output: &std::path::Path, inputs: &[PathBuf]) -> Result<(), CliError> {
    let Ok(out_meta) = std::fs::metadata(output) else { return Ok(()) }; // a new file: fine
    let out = std::fs::canonicalize(output).unwrap_or_else(|_| output.to_path_buf());
    for input in inputs {
        let Ok(canon) = std::fs::canonicalize(input) else { continue };
        let inside = canon.is_dir() && (out.starts_with(&canon) || hard_link_inside(&out_meta, &canon));
        if out == canon || inside || same_file(&out_meta, input) {
            return Err(CliError::usage(format!(
                "refusing to write the report to {}: it is {} input {}",
                output.display(),
                if inside { "inside the" } else { "the" },
                input.display()
            )));
        }
    }
    Ok(())
}

/// Whether `out` is a hard link to a file somewhere under `dir` (only looked for when
/// `out` has other links; bounded to the files a dump directory holds).
#[cfg(unix)]
fn hard_link_inside(out: &std::fs::Metadata, dir: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    if out.nlink() < 2 {
        return false;
    }
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            seen += 1;
            if seen > 200_000 {
                return false;
            }
            let Ok(m) = std::fs::symlink_metadata(e.path()) else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else if m.dev() == out.dev() && m.ino() == out.ino() {
                return true;
            }
        }
    }
    false
}

#[cfg(not(unix))]
fn hard_link_inside(_: &std::fs::Metadata, _: &std::path::Path) -> bool {
    false
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).is_ok_and(|b| a.dev() == b.dev() && a.ino() == b.ino())
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::path::Path) -> bool {
    false
}

pub fn run(args: MemoryArgs) -> Result<(), CliError> {
    if let Some(out) = &args.output {
        refuse_overwriting_inputs(out, &args.paths)?;
    }
    if let [path] = args.paths.as_slice() {
        // A PyTorch memory snapshot, recognised by its content (a pickle), not its name.
        if oomdoc_memory::pytorch::is_snapshot_file(path) {
            return run_snapshot(&args, path);
        }
    }
    let source = match args.source {
        Source::Auto => SourcePreference::Auto,
        Source::Text => SourcePreference::Text,
        Source::Proto => SourcePreference::Proto,
    };
    let space = oomdoc_memory::spaces::parse_memory_space(&args.memory_space).map_err(CliError::usage)?;
    let dump = load_dump_with(&args.paths, &LoadOptions { run: args.run.clone(), ..Default::default() }).map_err(|e| CliError::usage(e.to_string()))?;

    let mut listing: Vec<ModuleListing> = Vec::new();
    let reports: Vec<ModuleReport> = if let Some(hint) = &args.module {
        let module = dump.select(hint).map_err(|e| CliError::usage(e.to_string()))?;
        vec![module.analyze_space(source, space).map_err(|e| CliError::usage(e.to_string()))?]
    } else {
        // Every module is analysed to list its peak; keep the reports for --all.
        let mut all = dump.analyze_all_space(source, space);
        listing = std::mem::take(&mut all.listing);
        if args.all || args.list {
            if all.reports.is_empty() {
                return Err(no_module(all.first_error));
            }
            all.reports
        } else {
            vec![all.into_largest().map_err(no_module)?]
        }
    };

    if let (Format::Json, false) = (args.format, args.list) {
        // Streamed: the report of a million-value module is hundreds of MB of JSON.
        let report = MemoryReport { modules: reports };
        let written = match &args.output {
            Some(path) => std::fs::File::create(path).and_then(|f| json::write_to(&report, f)).map_err(|e| CliError::usage(format!("{}: {e}", path.display()))),
            None => json::write_to(&report, std::io::stdout().lock()).map_err(CliError::from),
        };
        return written;
    }
    let out = match (args.format, args.list) {
        (Format::Json, true) => {
            let mut s = serde_json::to_string_pretty(&serde_json::json!({ "modules": listing })).expect("listing serializes");
            s.push('\n');
            s
        }
        (_, true) => text::render_listing(&listing, None),
        (Format::Json, false) => json::render(&MemoryReport { modules: reports }),
        (Format::Html, false) => html::render(&MemoryReport { modules: reports }, &listing),
        (Format::Text, false) => {
            let mut s = String::new();
            if listing.len() > 1 {
                let selected = (!args.all).then(|| (reports[0].name.as_str(), reports[0].program_id));
                s.push_str(&text::render_listing(&listing, selected));
                if !args.all {
                    // Say which rule chose the module shown (users expect the training step).
                    s.push_str(&format!(
                        "→ {}: the module with the largest peak; pick another with --module NAME or id, or --all for every module\n",
                        reports[0].name
                    ));
                }
                s.push('\n');
            }
            let opts = text::TextOptions { top: args.top, ..Default::default() };
            for (i, r) in reports.iter().enumerate() {
                if i > 0 {
                    s.push('\n');
                }
                s.push_str(&text::render_module(r, &opts));
            }
            s
        }
    };
    match &args.output {
        Some(path) => std::fs::write(path, out).map_err(|e| CliError::usage(format!("{}: {e}", path.display()))),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(out.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
    }
}

fn no_module(first_error: Option<oomdoc_memory::MemoryError>) -> CliError {
    CliError::usage(first_error.map(|e| e.to_string()).unwrap_or_else(|| "no module could be analysed".into()))
}

/// `oomdoc memory SNAPSHOT.pickle`: a PyTorch CUDA memory snapshot.
fn run_snapshot(args: &MemoryArgs, path: &std::path::Path) -> Result<(), CliError> {
    use oomdoc_memory::pytorch::{self, analysis::AnalysisOptions, render};
    if args.module.is_some() || args.all || args.list || args.run.is_some() {
        return Err(CliError::usage(format!("{} is a PyTorch memory snapshot: --module, --all, --list and --run are for XLA dumps", path.display())));
    }
    let snap = pytorch::load_snapshot(path, &Default::default()).map_err(|e| CliError::usage(e.to_string()))?;
    let report = pytorch::analyze(path, &snap, &AnalysisOptions { top: args.top, ..Default::default() });
    let out = match args.format {
        Format::Text => render::render_text(&report, &snap, &render::SnapshotTextOptions { stacks: args.stacks }),
        Format::Json => render::render_json(&report, &snap),
        Format::Html => render::render_html(&report, &snap),
    };
    match &args.output {
        Some(out_path) => std::fs::write(out_path, out).map_err(|e| CliError::usage(format!("{}: {e}", out_path.display()))),
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(out.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
    }
}
