//! Op names and source lines for the buffers a report shows. Resolved after the
//! analysis so that only those buffers' instructions are decoded.

use crate::error::MemoryError;
use crate::model::{LabelSource, ModuleData};
use crate::text::instruction::InstructionMeta;
use crate::text::stack_frames::{parse_hlo_text_head, StackFrameIndex};
use std::collections::{HashMap, HashSet};

#[derive(Debug, Clone, Default)]
pub struct Label {
    pub op_name: String,
    pub opcode: String,
    /// `file:line`, or `""`.
    pub source: String,
}

fn label_of(meta: &InstructionMeta, frames: &StackFrameIndex) -> Label {
    let source = match (&meta.source_file, meta.source_line) {
        (Some(f), Some(l)) => format!("{f}:{l}"),
        (Some(f), None) => f.clone(),
        _ => meta.stack_frame_id.and_then(|id| frames.source(id)).map(|(f, l)| format!("{f}:{l}")).unwrap_or_default(),
    };
    Label { op_name: meta.op_name.clone(), opcode: meta.opcode.clone(), source }
}

pub fn resolve_labels(m: &ModuleData, wanted: &HashSet<u64>) -> Result<HashMap<u64, Label>, MemoryError> {
    let mut out = HashMap::new();
    match &m.labels {
        LabelSource::Proto { bytes, spans, instruction_of, frames } => {
            for (pos, b) in m.buffers.iter().enumerate() {
                if !wanted.contains(&b.id) {
                    continue;
                }
                let Some(&iid) = instruction_of.get(pos) else { continue };
                let Ok(k) = spans.binary_search_by_key(&iid, |s| s.0) else { continue };
                let (_, at, len) = spans[k];
                let path = m.sources.first().map(|p| p.as_path()).unwrap_or(std::path::Path::new(&m.name));
                let instr = crate::proto::hlo::decode_instruction_at(bytes, (at as usize, len as usize))
                    .map_err(|e| MemoryError::Proto { path: path.to_path_buf(), message: format!("byte {}: {}", e.offset, e.message) })?;
                out.insert(b.id, label_of(&instr.meta, frames));
            }
        }
        LabelSource::Text { values, hlo_text } => {
            let Some(values) = values else { return Ok(out) };
            let meta = values.labels(wanted)?;
            let needs_frames = meta.values().any(|meta| meta.stack_frame_id.is_some() && meta.source_file.is_none());
            let frames = match hlo_text {
                Some(p) if needs_frames => parse_hlo_text_head(p)?,
                _ => StackFrameIndex::default(),
            };
            for (id, meta) in &meta {
                out.insert(*id, label_of(meta, &frames));
            }
        }
    }
    Ok(out)
}
