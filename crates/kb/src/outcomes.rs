//! What fixed each entry's failures in public threads: `kb/outcomes.json`, counted from
//! the resolution corpus (`tests/corpus/resolutions/*.jsonl`) by the outcome test
//! (`OOMDOC_BLESS=1 cargo test -p oomdoc-diagnose --test outcomes` rewrites it; the test
//! fails when the committed file is stale). Every count comes with its thread links.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

include!(concat!(env!("OUT_DIR"), "/outcomes.rs"));

/// The whole file.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct Outcomes {
    #[serde(default)]
    pub about: String,
    /// Records in the corpus when the file was written.
    #[serde(default)]
    pub corpus_records: u64,
    /// By knowledge-base entry id.
    #[serde(default)]
    pub entries: BTreeMap<String, EntryOutcomes>,
}

/// One entry's resolved threads, by the fix category that worked.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct EntryOutcomes {
    /// Resolved threads whose failure oomdoc reads as this entry.
    pub threads: u64,
    pub categories: BTreeMap<String, CategoryOutcome>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct CategoryOutcome {
    /// Threads in which a fix of this category is what worked.
    pub count: u64,
    /// Those threads.
    pub links: Vec<String>,
}

impl EntryOutcomes {
    /// How many threads a category fixed (0 when none).
    pub fn count(&self, category: &str) -> u64 {
        self.categories.get(category).map_or(0, |c| c.count)
    }
}

/// The embedded file, parsed once (empty when absent or unreadable; a test checks it parses).
pub fn outcomes() -> &'static Outcomes {
    static O: std::sync::OnceLock<Outcomes> = std::sync::OnceLock::new();
    O.get_or_init(|| serde_json::from_str(OUTCOMES_JSON).unwrap_or_default())
}

/// One entry's outcomes, if the corpus has any thread for it.
pub fn for_entry(id: &str) -> Option<&'static EntryOutcomes> {
    outcomes().entries.get(id)
}

#[cfg(test)]
mod tests {
    #[test]
    fn embedded_file_parses() {
        if super::OUTCOMES_JSON.trim() != "{}" {
            serde_json::from_str::<super::Outcomes>(super::OUTCOMES_JSON).expect("kb/outcomes.json parses");
        }
    }
}
