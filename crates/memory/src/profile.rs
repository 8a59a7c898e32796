//! Profile log directories (`jax.profiler.trace(logdir)`, TensorBoard layout):
//! `logdir/plugins/profile/<run>/<host>.xplane.pb`, perhaps beside XProf's cache of
//! extracted `<module>(<program id>).hlo_proto.pb` files and an XLA dump directory.
//! One run is read (the newest by name, as TensorBoard lists them, or the one asked
//! for), every host of it; a module found in several places is listed once.

use crate::dump::{DumpModule, ModuleFiles, SourcePreference};
use crate::error::MemoryError;
use crate::xplane::scan_xspace;
use std::path::{Path, PathBuf};

/// `…/plugins/profile/<run>` → `<run>`.
pub fn run_name(dir: &Path) -> Option<&str> {
    let parent = dir.parent()?;
    if parent.file_name()? != "profile" || parent.parent()?.file_name()? != "plugins" {
        return None;
    }
    dir.file_name()?.to_str()
}

/// The run to read among the directories seen: `wanted`, else the greatest name
/// (run names are timestamps `YYYY_MM_DD_HH_MM_SS`), else `None` when there are no runs.
pub fn choose_run<'a>(dirs: impl Iterator<Item = &'a Path>, wanted: Option<&str>, root: &Path) -> Result<Option<String>, MemoryError> {
    let mut runs: Vec<String> = dirs.filter_map(run_name).map(str::to_string).collect();
    runs.sort();
    runs.dedup();
    match wanted {
        Some(w) if runs.iter().any(|r| r == w) => Ok(Some(w.to_string())),
        Some(w) => Err(MemoryError::NoRun {
            path: root.to_path_buf(),
            run: w.to_string(),
            available: runs,
        }),
        None => Ok(runs.pop()),
    }
}

/// Whether files in `dir` belong to the chosen run (directories outside any run always do).
pub fn in_run(dir: &Path, chosen: Option<&str>) -> bool {
    match (run_name(dir), chosen) {
        (Some(run), Some(chosen)) => run == chosen,
        _ => true,
    }
}

/// Fill the slots `into` lacks from `from`.
fn absorb(into: &mut ModuleFiles, from: ModuleFiles) {
    let ModuleFiles {
        buffer_assignment,
        values,
        live_range,
        hlo_text,
        hlo_proto,
        compressed_proto,
        xplane,
        hosts,
        usage_report,
    } = from;
    into.usage_report = into.usage_report.take().or(usage_report);
    into.buffer_assignment = into.buffer_assignment.take().or(buffer_assignment);
    into.values = into.values.take().or(values);
    into.live_range = into.live_range.take().or(live_range);
    into.hlo_text = into.hlo_text.take().or(hlo_text);
    into.hlo_proto = into.hlo_proto.take().or(hlo_proto);
    into.compressed_proto = into.compressed_proto.take().or(compressed_proto);
    into.xplane = into.xplane.take().or(xplane);
    for h in hosts {
        if !into.hosts.contains(&h) {
            into.hosts.push(h);
        }
    }
}

/// One module per (name, program id): a dump's files, XProf's `.hlo_proto.pb` cache and
/// the HloProtos of the profiles' XSpaces (`(path, named explicitly)`) are joined.
pub fn merge_xplanes(modules: &mut Vec<DumpModule>, xplanes: &[(PathBuf, bool)]) -> Result<(), MemoryError> {
    // A text dump first, so that it stays the module's directory and prefix.
    let mut merged: Vec<DumpModule> = Vec::with_capacity(modules.len());
    let mut taken: Vec<DumpModule> = std::mem::take(modules);
    taken.sort_by_key(|m| m.files.buffer_assignment.is_none());
    for m in taken {
        match merged.iter_mut().find(|k| m.program_id.is_some() && k.program_id == m.program_id && k.name == m.name) {
            Some(k) => absorb(&mut k.files, m.files),
            None => merged.push(m),
        }
    }
    for (path, explicit) in xplanes {
        for x in scan_xspace(path)? {
            let host = x.host.clone();
            let files = ModuleFiles {
                hosts: vec![host],
                xplane: Some(x.clone()),
                ..Default::default()
            };
            match merged.iter_mut().find(|k| k.program_id == Some(x.program_id) && k.name == x.name) {
                Some(k) => {
                    if *explicit {
                        k.preference = SourcePreference::Proto;
                    }
                    absorb(&mut k.files, files)
                }
                None => merged.push(DumpModule {
                    prefix: format!("{}({})", x.name, x.program_id),
                    name: x.name.clone(),
                    program_id: Some(x.program_id),
                    dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
                    files,
                    preference: if *explicit { SourcePreference::Proto } else { SourcePreference::Auto },
                    limits: Default::default(),
                }),
            }
        }
    }
    merged.sort_by(|a, b| a.program_id.cmp(&b.program_id).then(a.prefix.cmp(&b.prefix)));
    *modules = merged;
    Ok(())
}
