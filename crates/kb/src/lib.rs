//! The knowledge base.
//!
//! Knowledge is data: each failure family is one reviewed TOML file under `kb/`
//! (schema in `kb/README.md`), embedded at build time. The diagnose engine never
//! hard-codes advice; it computes facts (conditions and numbers) from a log and
//! asks the entry which causes, fixes and dead ends apply, filling the entry's
//! `{placeholders}` with those numbers.

mod display;
mod entry;
pub mod identifiers;
mod template;
pub mod outcomes;
pub mod regression;
pub mod version;
pub mod versions;
pub mod view;

pub use display::to_markdown;
pub use entry::*;
pub use template::{render, RenderError};

use std::sync::OnceLock;

include!(concat!(env!("OUT_DIR"), "/entries.rs"));

/// The whole knowledge base, parsed once.
pub struct KnowledgeBase {
    entries: Vec<Entry>,
}

/// A knowledge-base file that failed to parse or validate (a build-time bug,
/// caught by the `kb_is_valid` test; at run time such entries are skipped).
#[derive(Debug, Clone)]
pub struct LoadError {
    pub file: String,
    pub message: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "kb/{}: {}", self.file, self.message)
    }
}

impl KnowledgeBase {
    /// The embedded knowledge base.
    pub fn get() -> &'static KnowledgeBase {
        static KB: OnceLock<KnowledgeBase> = OnceLock::new();
        KB.get_or_init(|| {
            let (kb, _errors) = KnowledgeBase::load_embedded();
            kb
        })
    }

    /// An embedded entry's `memory_space`, read from its file's top-level line without
    /// parsing the entry (ranking reads it for every entry with outcomes). `None` for an
    /// unknown id or an entry without one.
    pub fn embedded_memory_space(id: &str) -> Option<&'static str> {
        let i = ENTRY_IDS.iter().position(|e| *e == id)?;
        let text: &'static str = ENTRY_FILES[i].1;
        text.lines()
            .take_while(|l| !l.trim_start().starts_with('['))
            .find_map(|l| l.strip_prefix("memory_space")?.trim_start().strip_prefix('=')?.trim().strip_prefix('"')?.strip_suffix('"'))
    }

    /// One embedded entry by id, parsed on first use: the `by_id` of [`KnowledgeBase::get`]
    /// without parsing the other entries (a diagnosis needs one or two of them; parsing
    /// all is most of a small log's time). `None` for an unknown id or an entry that does
    /// not load.
    pub fn embedded_by_id(id: &str) -> Option<&'static Entry> {
        static PARSED: OnceLock<Vec<OnceLock<Option<Entry>>>> = OnceLock::new();
        let parsed = PARSED.get_or_init(|| ENTRY_IDS.iter().map(|_| OnceLock::new()).collect());
        let i = ENTRY_IDS.iter().position(|e| *e == id)?;
        parsed[i]
            .get_or_init(|| {
                let (file, text) = ENTRY_FILES[i];
                Self::load_from([(file.to_string(), text.to_string())]).0.entries.pop()
            })
            .as_ref()
    }

    /// Parse every embedded file; returns the entries that loaded and the errors of those that did not.
    pub fn load_embedded() -> (KnowledgeBase, Vec<LoadError>) {
        Self::load_from(ENTRY_FILES.iter().map(|(f, s)| (f.to_string(), s.to_string())))
    }

    /// Parse entries from (file name, TOML text) pairs.
    pub fn load_from(files: impl IntoIterator<Item = (String, String)>) -> (KnowledgeBase, Vec<LoadError>) {
        let mut entries = Vec::new();
        let mut errors = Vec::new();
        for (file, text) in files {
            match toml::from_str::<Entry>(&text) {
                Ok(mut e) => {
                    e.file = file.clone();
                    match e.validate() {
                        Ok(()) => entries.push(e),
                        Err(m) => errors.push(LoadError { file, message: m }),
                    }
                }
                Err(err) => errors.push(LoadError { file, message: err.to_string() }),
            }
        }
        entries.sort_by(|a, b| a.id.cmp(&b.id));
        for w in entries.windows(2) {
            if w[0].id == w[1].id {
                errors.push(LoadError { file: w[1].file.clone(), message: format!("duplicate id {}", w[1].id) });
            }
        }
        (KnowledgeBase { entries }, errors)
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Look up by entry id (`tpu.scoped-vmem`), vendor code (`E1001`, case-insensitive,
    /// also `1001`) or code name (`CompileTimeScopedVmemOom`).
    pub fn lookup(&self, key: &str) -> Option<&Entry> {
        let k = key.trim();
        if let Some(e) = self.entries.iter().find(|e| e.id == k) {
            return Some(e);
        }
        let code = if k.len() == 4 && k.chars().all(|c| c.is_ascii_digit()) { format!("E{k}") } else { k.to_ascii_uppercase() };
        self.entries
            .iter()
            .find(|e| e.code.as_deref().is_some_and(|c| c.eq_ignore_ascii_case(&code)))
            .or_else(|| self.entries.iter().find(|e| e.code_name.as_deref().is_some_and(|c| c.eq_ignore_ascii_case(k))))
    }

    pub fn by_id(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.id == id)
    }
}
