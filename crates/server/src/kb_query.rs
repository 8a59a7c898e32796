//! Filtering the knowledge base for `/kb` and `GET /api/v1/kb`.

use oomdoc_kb::{Entry, KnowledgeBase, Lang};
use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Clone, Deserialize)]
pub struct KbFilter {
    pub platform: Option<String>,
    pub memory_space: Option<String>,
    pub phase: Option<String>,
    /// Case-insensitive words, all of which must appear in the entry's id, code,
    /// code name, title or summary (either language).
    pub q: Option<String>,
    pub lang: Option<String>,
}

/// The serde name of an enum value (`Platform::Tpu` -> `tpu`), as the JSON contract spells it.
pub fn wire_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

impl KbFilter {
    pub fn lang(&self) -> Lang {
        given(&self.lang).and_then(Lang::parse).unwrap_or_default()
    }

    pub fn matches(&self, e: &Entry) -> bool {
        if let Some(p) = given(&self.platform) {
            let on = wire_name(&e.platform) == p || e.also_platforms.iter().any(|a| wire_name(a) == p);
            if !on {
                return false;
            }
        }
        if let Some(m) = given(&self.memory_space) {
            if e.memory_space.as_deref() != Some(m) {
                return false;
            }
        }
        if let Some(ph) = given(&self.phase) {
            if wire_name(&e.phase) != ph {
                return false;
            }
        }
        if let Some(q) = given(&self.q) {
            let hay = [
                e.id.as_str(),
                e.code.as_deref().unwrap_or(""),
                e.code_name.as_deref().unwrap_or(""),
                &e.title.en,
                &e.title.zh,
                &e.summary.en,
                &e.summary.zh,
            ]
            .join("\n")
            .to_lowercase();
            if !q.to_lowercase().split_whitespace().all(|w| hay.contains(w)) {
                return false;
            }
        }
        true
    }

    pub fn apply<'a>(&self, kb: &'a KnowledgeBase) -> Vec<&'a Entry> {
        kb.entries().iter().filter(|e| self.matches(e)).collect()
    }
}

/// One row of `GET /api/v1/kb`: the same object as `oomdoc explain --list --format json`.

pub const PLATFORMS: &[&str] = &["tpu", "cuda", "rocm", "mps", "cpu", "other"];
pub const PHASES: &[&str] = &["compile", "load", "runtime"];
