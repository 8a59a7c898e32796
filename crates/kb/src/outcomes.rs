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
    /// The same threads split by a fact of the case the log states (`workload=training`,
    /// `version=stated`, `device=small`, …; `oomdoc_diagnose::advise::case_facets`): each
    /// facet's threads and what fixed them. Absent in files written before the split.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_case: BTreeMap<String, EntryOutcomes>,
    /// The same threads by a fix category their own text shows would not have helped (the
    /// corpus's `misleading`: a smaller batch where an upgrade fixed it, an allocator setting
    /// where another process held the card): what following that fix first cost those users.
    /// A thread may name several. Absent in files written before it was counted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub misled: BTreeMap<String, CategoryOutcome>,
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

    /// How many threads show a category would not have helped (0 when none).
    pub fn misled_count(&self, category: &str) -> u64 {
        self.misled.get(category).map_or(0, |c| c.count)
    }

    /// Add `other`'s threads, counts and links to these (its `by_case` cells too).
    pub fn add(&mut self, other: &EntryOutcomes) {
        self.threads += other.threads;
        for (category, o) in &other.categories {
            let c = self.categories.entry(category.clone()).or_default();
            c.count += o.count;
            c.links.extend(o.links.iter().cloned());
        }
        for (category, o) in &other.misled {
            let c = self.misled.entry(category.clone()).or_default();
            c.count += o.count;
            c.links.extend(o.links.iter().cloned());
        }
        for (facet, cell) in &other.by_case {
            self.by_case.entry(facet.clone()).or_default().add(cell);
        }
    }

    /// These outcomes without one thread (wherever it is counted, its facets' cells too).
    pub fn remove_thread(&mut self, link: &str) {
        let mut found = false;
        for c in self.categories.values_mut() {
            if let Some(i) = c.links.iter().position(|l| l == link) {
                c.links.remove(i);
                c.count = c.count.saturating_sub(1);
                found = true;
            }
        }
        self.categories.retain(|_, c| c.count > 0);
        for c in self.misled.values_mut() {
            if let Some(i) = c.links.iter().position(|l| l == link) {
                c.links.remove(i);
                c.count = c.count.saturating_sub(1);
            }
        }
        self.misled.retain(|_, c| c.count > 0);
        if found {
            self.threads = self.threads.saturating_sub(1);
        }
        for cell in self.by_case.values_mut() {
            cell.remove_thread(link);
        }
        self.by_case.retain(|_, cell| cell.threads > 0);
    }
}

impl Outcomes {
    /// The table without one thread: what a new thread like it would see.
    pub fn without(&self, link: &str) -> Outcomes {
        let mut out = self.clone();
        for e in out.entries.values_mut() {
            e.remove_thread(link);
        }
        out.entries.retain(|_, e| e.threads > 0);
        out
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
