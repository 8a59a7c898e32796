//! Known regressions: out-of-memory bugs of one library, compiler or driver release range,
//! fixed (or absent) in a known release. One file per regression in `kb/regressions/`.
//! The diagnose engine matches one when the log prints a version inside `affected` for a
//! failure of one of `entries`, and then offers "upgrade or downgrade" first, with the link.

use crate::version::Requirement;
use crate::Text;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Regression {
    /// Stable id, `<package>.<what>` (`ollama.0-1-30-multi-gpu`).
    pub id: String,
    /// The release range that has the bug, as a requirement on one package:
    /// `ollama>=0.1.30,<0.1.31`. Matched only against a version the log prints.
    pub affected: String,
    /// Knowledge-base entries whose failures this bug produces.
    pub entries: Vec<String>,
    /// Words of the log that mark the bug's code path (a model file, an op, a feature's
    /// log line), for a bug narrower than its entries: when given, the failure's block must
    /// show one of them (case-sensitive) for the regression to be matched or listed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signs: Vec<String>,
    /// The release to move to (`0.1.29`, `>= 2.1.2`), as people write it.
    pub move_to: String,
    /// One line: what goes wrong in that range.
    pub title: Text,
    /// What to do, with the release to move to.
    pub fix: Text,
    /// The thread, issue, pull request or release note that shows the bug and its fix.
    pub links: Vec<String>,
    /// A short verbatim quote from the first link that states the range or the fix.
    pub quote: String,
    /// `verified` when the range was checked in the project's release notes or source at a
    /// tag; `reported` when it rests on the thread alone (shown as such).
    pub status: String,
    #[serde(skip_deserializing, default)]
    pub file: String,
}

impl Regression {
    pub fn requirement(&self) -> Option<Requirement> {
        Requirement::parse(&self.affected)
    }

    pub fn validate(&self) -> Result<(), String> {
        let req = self.requirement().ok_or_else(|| format!("affected `{}` is not `package>=X,<Y`", self.affected))?;
        if req.at_least.is_none() && req.below.is_none() {
            return Err("affected needs a bound".into());
        }
        if self.signs.iter().any(|s| s.trim().len() < 4) {
            return Err("a sign is a word of at least 4 characters".into());
        }
        if self.entries.is_empty() {
            return Err("a regression names at least one entry".into());
        }
        if self.links.is_empty() || !self.links.iter().all(|l| l.starts_with("https://")) {
            return Err("a regression needs https links".into());
        }
        if !matches!(self.status.as_str(), "verified" | "reported") {
            return Err(format!("status `{}` is not verified | reported", self.status));
        }
        for t in [&self.title, &self.fix] {
            if t.en.trim().is_empty() || t.zh.trim().is_empty() {
                return Err("title and fix need en and zh text".into());
            }
        }
        Ok(())
    }
}

include!(concat!(env!("OUT_DIR"), "/regressions.rs"));

/// Every regression record, parsed once; files that fail to parse or validate are
/// reported by `load_regressions` (the kb test checks there are none).
pub fn regressions() -> &'static [Regression] {
    static ALL: std::sync::OnceLock<Vec<Regression>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| load_regressions().0)
}

pub fn load_regressions() -> (Vec<Regression>, Vec<String>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (file, text) in REGRESSION_FILES {
        match toml::from_str::<Regression>(text) {
            Ok(mut r) => {
                r.file = file.to_string();
                match r.validate() {
                    Ok(()) => out.push(r),
                    Err(e) => errors.push(format!("kb/{file}: {e}")),
                }
            }
            Err(e) => errors.push(format!("kb/{file}: {e}")),
        }
    }
    (out, errors)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_regression_loads_and_names_real_entries() {
        let (regs, errors) = super::load_regressions();
        assert!(errors.is_empty(), "{errors:#?}");
        let (kb, _) = crate::KnowledgeBase::load_embedded();
        for r in &regs {
            for e in &r.entries {
                assert!(kb.by_id(e).is_some(), "{}: unknown entry {e}", r.file);
            }
        }
    }
}
