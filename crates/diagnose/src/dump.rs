//! `diagnose --dump DIR`: what filled memory in the failing module, from the XLA dump
//! (`oomdoc memory`'s analysis). The module is found from the names the message gives
//! (`jit_train_step`, `jit(train_step)/...` op paths); with no name, only a dump holding
//! a single module is used — never a guess between several.

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

/// Attach the module summary and, when the message listed no allocations, the buffers at the peak.
pub fn attach(f: &mut Finding, dump: &Path) {
    let mut hints = module_hints(f);
    if hints.is_empty() {
        match oomdoc_memory::list_modules(dump) {
            Ok(list) if list.len() == 1 => hints.push(list[0].name.clone()),
            _ => return,
        }
    }
    for hint in hints {
        let Ok(summary) = oomdoc_memory::summarize_module(dump, &hint, 10) else { continue };
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
        return;
    }
}
