//! Finding modules in a dump directory (or among given files) and choosing one.
//!
//! XLA names files `module_NNNN.<module>.<backend>_after_optimizations<suffix>`
//! (`xla/service/dump.cc`); XProf caches `<module>(<program id>).hlo_proto.pb`.

use crate::error::MemoryError;
use crate::loader;
use crate::model::ModuleData;
use crate::report::{build_report, ModuleReport};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which input to analyse when a module has both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SourcePreference {
    /// The HloProto when present (XProf's own input, heap-event timeline), else text.
    #[default]
    Auto,
    Text,
    Proto,
}

/// The files of one module.
#[derive(Debug, Clone, Default)]
pub struct ModuleFiles {
    pub buffer_assignment: Option<PathBuf>,
    pub values: Option<PathBuf>,
    pub live_range: Option<PathBuf>,
    pub hlo_text: Option<PathBuf>,
    pub hlo_proto: Option<PathBuf>,
    /// `.hlo.pb.gz` (`--xla_dump_compress_protos`), decompressed when read.
    pub compressed_proto: Option<PathBuf>,
    /// The module's HloProto inside a profile (`<host>.xplane.pb`).
    pub xplane: Option<crate::xplane::XSpaceModule>,
    /// Hosts of the profile whose XSpace carries this module (name and program id).
    pub hosts: Vec<String>,
    /// `-memory-usage-report.txt`: per-space totals that check the buffer assignment.
    pub usage_report: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct DumpModule {
    /// Module name, e.g. `jit_train_step`.
    pub name: String,
    /// XLA's unique module id (`module_0034` → 34).
    pub program_id: Option<u64>,
    /// File-name prefix shared by the module's files.
    pub prefix: String,
    /// Directory holding the files.
    pub dir: PathBuf,
    pub files: ModuleFiles,
    /// The user pointed at one kind of file: analyse that one.
    pub preference: SourcePreference,
    /// Memory and record limits for decoding the module ([`LoadOptions::limits`]).
    pub limits: crate::loader::Limits,
}

impl DumpModule {
    /// `jit_train_step (34)`.
    pub fn label(&self) -> String {
        match self.program_id {
            Some(id) => format!("{} ({id})", self.name),
            None => self.name.clone(),
        }
    }

    /// Read the module's files into one model.
    pub fn load(&self, preference: SourcePreference) -> Result<ModuleData, MemoryError> {
        let pref = if preference == SourcePreference::Auto { self.preference } else { preference };
        let f = &self.files;
        let use_proto = match pref {
            SourcePreference::Proto => true,
            SourcePreference::Text => false,
            SourcePreference::Auto => f.hlo_proto.is_some() || f.compressed_proto.is_some() || f.xplane.is_some() || f.buffer_assignment.is_none(),
        };
        if use_proto {
            if let Some(p) = &f.hlo_proto {
                return loader::from_proto_limited(p, &self.name, self.program_id, &self.limits);
            }
            if let Some(x) = &f.xplane {
                loader::check_input_size(&x.path, x.len, &self.limits)?;
                return loader::from_proto_bytes_limited(x.read_proto()?, &x.path, &self.name, self.program_id, &self.limits);
            }
            if let Some(gz) = &f.compressed_proto {
                // Decompressed within the same limits as the decoder: the bytes it expands
                // to are charged to the budget before decoding starts.
                return loader::from_proto_limited(gz, &self.name, self.program_id, &self.limits);
            }
            if pref == SourcePreference::Proto {
                return Err(MemoryError::Incomplete { module: self.label(), message: "no .hlo.pb (dump with --xla_dump_hlo_as_proto)".into() });
            }
        }
        let Some(ba) = &f.buffer_assignment else {
            return Err(MemoryError::Incomplete { module: self.label(), message: "no -buffer-assignment.txt".into() });
        };
        loader::from_text(&self.name, self.program_id, ba, f.live_range.as_deref(), f.values.as_deref(), f.hlo_text.as_deref(), f.usage_report.as_deref())
    }

    pub fn analyze(&self, preference: SourcePreference) -> Result<ModuleReport, MemoryError> {
        build_report(&self.load(preference)?)
    }

    /// The report for one memory space (0 = device/HBM, 5 = host; see [`crate::spaces`]).
    pub fn analyze_space(&self, preference: SourcePreference, space: u64) -> Result<ModuleReport, MemoryError> {
        crate::report::build_report_for(&self.load(preference)?, space)
    }
}

/// The modules found under a path.
#[derive(Debug, Clone)]
pub struct Dump {
    pub root: PathBuf,
    pub modules: Vec<DumpModule>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    BufferAssignment,
    Values,
    LiveRange,
    HloText,
    HloProto,
    CompressedProto,
    UsageReport,
}

/// Recognise a dump file by its name: (prefix, kind).
fn classify(file_name: &str) -> Option<(&str, Kind)> {
    const SUFFIXES: [(&str, Kind); 7] = [
        ("-memory-usage-report.txt", Kind::UsageReport),
        ("-buffer-assignment-values.txt", Kind::Values),
        ("-buffer-assignment.txt", Kind::BufferAssignment),
        ("-live-range.txt", Kind::LiveRange),
        (".hlo_proto.pb", Kind::HloProto),
        (".hlo.pb.gz", Kind::CompressedProto),
        (".hlo.pb", Kind::HloProto),
    ];
    for (suffix, kind) in SUFFIXES {
        if let Some(prefix) = file_name.strip_suffix(suffix) {
            // Only optimized modules carry a buffer assignment.
            if prefix.contains("before_optimizations") {
                return None;
            }
            return Some((prefix, kind));
        }
    }
    let prefix = file_name.strip_suffix(".txt")?;
    prefix.ends_with("after_optimizations").then_some((prefix, Kind::HloText))
}

/// `module_0034.jit_f.cpu_after_optimizations` → (`jit_f`, 34); `jit_f(34)` → (`jit_f`, 34).
pub fn parse_prefix(prefix: &str) -> (String, Option<u64>) {
    if let Some(rest) = prefix.strip_prefix("module_") {
        if let Some((id, tail)) = rest.split_once('.') {
            if let Ok(id) = id.parse::<u64>() {
                let name = tail.split_once('.').map(|(n, _)| n).unwrap_or(tail);
                return (name.to_string(), Some(id));
            }
        }
    }
    if let Some(open) = prefix.rfind('(') {
        if let Some(id) = prefix[open + 1..].strip_suffix(')').and_then(|s| s.parse().ok()) {
            return (prefix[..open].to_string(), Some(id));
        }
    }
    (prefix.to_string(), None)
}

/// Find the modules under `path`: a dump directory (searched a few levels deep, for
/// profile directories), or one file of a dump (its module's sibling files join it).
pub fn load_dump(path: &Path) -> Result<Dump, MemoryError> {
    load_dump_paths(&[path.to_path_buf()])
}

/// Like [`load_dump`] over several paths; files named explicitly must be dump files.
pub fn load_dump_paths(paths: &[PathBuf]) -> Result<Dump, MemoryError> {
    load_dump_with(paths, &LoadOptions::default())
}

/// How to read profile log directories.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Profile run (`plugins/profile/<run>/`) to read; default: the newest (greatest name).
    pub run: Option<String>,
    /// Memory and record limits for decoding HloProtos (the server sets them).
    pub limits: crate::loader::Limits,
}

/// Like [`load_dump_paths`], with options for profile directories.
pub fn load_dump_with(paths: &[PathBuf], options: &LoadOptions) -> Result<Dump, MemoryError> {
    let mut by_prefix: BTreeMap<(PathBuf, String), (ModuleFiles, SourcePreference)> = BTreeMap::new();
    let mut xplanes: Vec<(PathBuf, bool)> = Vec::new();
    let root = paths.first().cloned().unwrap_or_default();
    // Profile runs seen under directories: files in runs other than the chosen one are left out.
    let mut found: Vec<(PathBuf, String)> = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| MemoryError::io(path, e))?;
        if meta.is_dir() {
            walk(path, 0, &mut |dir, name| found.push((dir.to_path_buf(), name.to_string())))?;
        }
    }
    let chosen_run = crate::profile::choose_run(found.iter().map(|(d, _)| d.as_path()), options.run.as_deref(), &root)?;
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| MemoryError::io(path, e))?;
        if meta.is_dir() {
            for (dir, name) in &found {
                if !dir.starts_with(path) || !crate::profile::in_run(dir, chosen_run.as_deref()) {
                    continue;
                }
                let (dir, name) = (dir.as_path(), name.as_str());
                if is_xplane(name) {
                    xplanes.push((dir.join(name), false));
                    continue;
                }
                if let Some((prefix, kind)) = classify(name) {
                    let entry = by_prefix.entry((dir.to_path_buf(), prefix.to_string())).or_default();
                    set(&mut entry.0, kind, dir.join(name));
                }
            }
        } else {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if is_xplane(name) {
                xplanes.push((path.clone(), true));
                continue;
            }
            let Some((prefix, kind)) = classify(name) else {
                return Err(MemoryError::parse(
                    path,
                    0,
                    "not a recognised XLA dump file (expected *-buffer-assignment.txt, *-buffer-assignment-values.txt, *-live-range.txt, *.hlo.pb, *.hlo.pb.gz, *.hlo_proto.pb or a profile's *.xplane.pb[.gz])",
                ));
            };
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
            let pref = match kind {
                Kind::HloProto | Kind::CompressedProto => SourcePreference::Proto,
                _ => SourcePreference::Text,
            };
            let key = (dir.clone(), prefix.to_string());
            if !by_prefix.contains_key(&key) {
                // Siblings of the same module complete the set.
                let mut files = ModuleFiles::default();
                if let Ok(entries) = std::fs::read_dir(&dir) {
                    for entry in entries.flatten().filter(is_regular) {
                        if let Some(n) = entry.file_name().to_str() {
                            if let Some((p, k)) = classify(n) {
                                if p == prefix {
                                    set(&mut files, k, dir.join(n));
                                }
                            }
                        }
                    }
                }
                by_prefix.insert(key.clone(), (files, pref));
            }
            let entry = by_prefix.get_mut(&key).expect("inserted above");
            set(&mut entry.0, kind, path.clone());
            entry.1 = pref;
        }
    }
    let mut modules: Vec<DumpModule> = by_prefix
        .into_iter()
        .filter(|(_, (f, _))| f.buffer_assignment.is_some() || f.hlo_proto.is_some() || f.compressed_proto.is_some())
        .map(|((dir, prefix), (files, preference))| {
            let (name, program_id) = parse_prefix(&prefix);
            DumpModule { name, program_id, prefix, dir, files, preference, limits: options.limits }
        })
        .collect();
    crate::profile::merge_xplanes(&mut modules, &xplanes)?;
    for m in &mut modules {
        m.limits = options.limits;
    }
    if modules.is_empty() {
        return Err(MemoryError::NoDumps { path: root });
    }
    modules.sort_by(|a, b| a.program_id.cmp(&b.program_id).then(a.prefix.cmp(&b.prefix)));
    Ok(Dump { root, modules })
}

/// A profile's XSpace: `<host>.xplane.pb`, or gzipped `<host>.xplane.pb.gz`.
fn is_xplane(name: &str) -> bool {
    name.ends_with(".xplane.pb") || name.ends_with(".xplane.pb.gz")
}

fn set(files: &mut ModuleFiles, kind: Kind, path: PathBuf) {
    let slot = match kind {
        Kind::BufferAssignment => &mut files.buffer_assignment,
        Kind::Values => &mut files.values,
        Kind::LiveRange => &mut files.live_range,
        Kind::HloText => &mut files.hlo_text,
        Kind::HloProto => &mut files.hlo_proto,
        Kind::CompressedProto => &mut files.compressed_proto,
        Kind::UsageReport => &mut files.usage_report,
    };
    *slot = Some(path);
}

/// Depth-limited directory walk (dump dirs are flat; profile dirs are
/// `plugins/profile/<run>/`), in name order for stable output.
fn walk(dir: &Path, depth: usize, visit: &mut dyn FnMut(&Path, &str)) -> Result<(), MemoryError> {
    let mut entries: Vec<_> = std::fs::read_dir(dir).map_err(|e| MemoryError::io(dir, e))?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Ok(ft) = entry.file_type() else { continue };
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if ft.is_dir() {
            if depth < 4 {
                walk(&entry.path(), depth + 1, visit)?;
            }
        } else if is_regular(&entry) {
            visit(dir, name);
        }
    }
    Ok(())
}

/// A plain file, or a link to one: a FIFO or socket named like a dump file would block
/// or fail the read, so it is not a dump file.
fn is_regular(entry: &std::fs::DirEntry) -> bool {
    match entry.file_type() {
        Ok(ft) if ft.is_symlink() => std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()),
        Ok(ft) => ft.is_file(),
        Err(_) => false,
    }
}

impl Dump {
    /// Pick a module by program id (`34`, `0034`), exact name, unique name substring or
    /// file prefix. Several matches are an error: never guess.
    pub fn select(&self, hint: &str) -> Result<&DumpModule, MemoryError> {
        let hint_t = hint.trim();
        if let Ok(id) = hint_t.parse::<u64>() {
            let by_id: Vec<_> = self.modules.iter().filter(|m| m.program_id == Some(id)).collect();
            if by_id.len() == 1 {
                return Ok(by_id[0]);
            }
        }
        for exact in [
            self.modules.iter().filter(|m| m.prefix == hint_t).collect::<Vec<_>>(),
            self.modules.iter().filter(|m| m.name == hint_t || m.label() == hint_t || format!("{}({})", m.name, m.program_id.unwrap_or(0)) == hint_t).collect(),
            self.modules.iter().filter(|m| m.name.contains(hint_t) || m.prefix.contains(hint_t)).collect(),
        ] {
            match exact.len() {
                0 => continue,
                1 => return Ok(exact[0]),
                _ => {
                    return Err(MemoryError::AmbiguousModule {
                        hint: hint.to_string(),
                        candidates: exact.iter().map(|m| format!("{} in {}", m.label(), m.dir.join(&m.prefix).display())).collect(),
                    })
                }
            }
        }
        Err(MemoryError::ModuleNotFound { hint: hint.to_string(), available: self.modules.iter().map(|m| m.label()).collect() })
    }
}
