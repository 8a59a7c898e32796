//! `diagnose --dump DIR`: what filled memory in the failing module, from the XLA dump
//! (`oomdoc memory`'s analysis). The module is chosen by what the message says, in this
//! order: the names it gives (`jit_train_step`, `jit(train_step)/...` op paths); a dump
//! holding a single module; the size it failed to allocate, when exactly one module has
//! that peak, temp allocation or a buffer of that size at its peak. Never a guess between
//! several: otherwise nothing is attached, and the note says why.

use crate::finding::{Allocation, Finding};
use std::path::Path;

/// Module names this finding points at, most specific first.
fn module_hints(f: &Finding) -> Vec<String> {
    let mut hints = Vec::new();
    if let Some(e) = &f.culprit.executable {
        hints.push(e.clone());
    }
    let paths = f.culprit.op_name.iter().chain(f.culprit.allocations.iter().filter_map(|a| a.op_name.as_ref()));
    for p in paths {
        // "jit(train_step)/jit(main)/..." names the module jit_train_step.
        if let Some(rest) = p.split('/').next() {
            if let Some((kind, name)) = rest.split_once('(') {
                let name = name.trim_end_matches(')');
                if !name.is_empty() && name != "main" {
                    hints.push(format!("{}_{}", kind.trim_start_matches('p'), name));
                    hints.push(name.to_string());
                }
            }
        }
    }
    hints.dedup();
    hints
}

/// Which module the message points at, and why (the note's words); Err: why none.
fn choose(f: &Finding, dump: &Path) -> Result<(String, String), String> {
    let hints = module_hints(f);
    for hint in &hints {
        if let Ok(d) = oomdoc_memory::load_dump(dump) {
            if let Ok(m) = d.select(hint) {
                return Ok((m.program_id.map_or_else(|| m.name.clone(), |i| i.to_string()), format!("the message names it ({hint})")));
            }
        }
    }
    let d = oomdoc_memory::load_dump(dump).map_err(|e| format!("the dump could not be read ({e})"))?;
    if d.modules.len() == 1 {
        let m = &d.modules[0];
        return Ok((m.program_id.map_or_else(|| m.name.clone(), |i| i.to_string()), "it is the only module in the dump".into()));
    }
    let all = d.analyze_all(oomdoc_memory::SourcePreference::Auto);
    let names = || all.reports.iter().map(|r| r.name.as_str()).collect::<Vec<_>>();
    let Some(want) = f.sizes.requested else {
        return Err(format!(
            "the dump holds {} modules ({}) and the message names none of them nor a size to match",
            all.reports.len(),
            names().join(", ")
        ));
    };
    let by_size: Vec<_> = all
        .reports
        .iter()
        .filter_map(|r| {
            if r.temp_bytes == want {
                Some((r, "temp allocation"))
            } else if r.peak_bytes == want {
                Some((r, "peak"))
            } else if r.buffers_at_peak.iter().any(|b| b.size_bytes == want) {
                Some((r, "buffer at the peak"))
            } else {
                None
            }
        })
        .collect();
    match by_size.as_slice() {
        [(r, what)] => Ok((
            r.program_id.map_or_else(|| r.name.clone(), |i| i.to_string()),
            format!("its {what} is the {want} bytes the message failed to allocate"),
        )),
        [] => Err(format!(
            "the dump holds {} modules ({}); the message names none of them, and none has a peak, temp allocation or buffer of the {want} bytes it failed to allocate",
            all.reports.len(),
            names().join(", ")
        )),
        several => Err(format!(
            "the dump holds {} modules; {} of them ({}) match the {want} bytes the message failed to allocate, and it names none",
            all.reports.len(),
            several.len(),
            several.iter().map(|(r, _)| r.name.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Attach the module summary and, when the message listed no allocations, the buffers at
/// the peak. Returns a note saying which module was attached and why, or why none was.
pub fn attach(f: &mut Finding, dump: &Path) -> String {
    let (hint, why) = match choose(f, dump) {
        Ok(c) => c,
        Err(why) => {
            return format!("no module of the XLA dump was attached to {}: {why}; `oomdoc memory {} --list` shows them, `--module NAME` analyses one", f.id, dump.display());
        }
    };
    let summary = match oomdoc_memory::summarize_module(dump, &hint, 10) {
        Ok(s) => s,
        Err(e) => return format!("no module of the XLA dump was attached to {}: module {hint} could not be analysed ({e})", f.id),
    };
    let note = format!("XLA dump: module {} attached to {} because {why}", summary.module, f.id);
    if f.culprit.allocations.is_empty() {
        f.culprit.allocations = summary
            .top_buffers
            .iter()
            .enumerate()
            .map(|(i, b)| Allocation {
                rank: i as u32 + 1,
                size: Some(b.size_bytes),
                shape: Some(b.shape.clone()),
                unpadded_size: Some(b.unpadded_bytes),
                padding: Some(b.size_bytes.saturating_sub(b.unpadded_bytes)),
                op_name: (!b.op_name.is_empty()).then(|| b.op_name.clone()),
                source: (!b.source.is_empty()).then(|| b.source.clone()),
                label: Some(b.name.clone()),
                allocation_type: Some(b.group.clone()),
                ..Default::default()
            })
            .collect();
    }
    f.memory = serde_json::to_value(&summary).ok();
    note
}
