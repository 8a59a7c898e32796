//! What a log tells about a library's version: a printed version, or a range dated by
//! the wording of a message (PyTorch's allocator message changed form at known releases).

pub use oomdoc_kb::version::{Requirement, Version};
use serde::Serialize;

/// What the log says about one library's version: exact (printed) or a range
/// (`at_least` inclusive, `below` exclusive) dated from a message's wording.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionFact {
    /// The version as printed (`2.1.0+cu121`), when the log prints one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Lowest version consistent with the log (inclusive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_least: Option<String>,
    /// First version the log rules out (exclusive upper bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub below: Option<String>,
    /// `printed` (a version line, pip/conda listing, banner) or `message format`
    /// (the wording of the failure message dates the release).
    pub source: String,
}

impl VersionFact {
    pub fn printed(v: &str) -> VersionFact {
        VersionFact { version: Some(v.to_string()), at_least: None, below: None, source: "printed".into() }
    }
    pub fn range(at_least: Option<&str>, below: Option<&str>, source: &str) -> VersionFact {
        VersionFact { version: None, at_least: at_least.map(str::to_string), below: below.map(str::to_string), source: source.into() }
    }

    /// The lowest and the excluded upper version this fact allows.
    fn bounds(&self) -> (Option<Version>, Option<Version>) {
        if let Some(v) = self.version.as_deref().and_then(Version::parse) {
            // `2.1.0` allows 2.1.0 only; `2.1` allows any 2.1.x.
            let mut next = v.clone();
            if let Some(last) = next.0.last_mut() {
                *last += 1;
            }
            return (Some(v), Some(next));
        }
        (self.at_least.as_deref().and_then(Version::parse), self.below.as_deref().and_then(Version::parse))
    }

    /// True when some version this fact allows lies in `[lo, hi)` (either bound open).
    pub fn overlaps(&self, lo: Option<&Version>, hi: Option<&Version>) -> bool {
        let (a, b) = self.bounds();
        let above_lo = match (lo, &b) {
            (Some(lo), Some(b)) => b > lo,
            _ => true,
        };
        let below_hi = match (hi, &a) {
            (Some(hi), Some(a)) => a < hi,
            _ => true,
        };
        above_lo && below_hi
    }

    /// Exact version inside `[lo, hi)`: a regression range matched only on a printed version.
    pub fn printed_within(&self, lo: Option<&Version>, hi: Option<&Version>) -> bool {
        let Some(v) = self.version.as_deref().and_then(Version::parse) else { return false };
        lo.is_none_or(|lo| v >= *lo) && hi.is_none_or(|hi| v < *hi)
    }
}

/// True when the fact rules the requirement out (the case's version certainly lies outside it).
pub fn rules_out(fact: &VersionFact, req: &Requirement) -> bool {
    !fact.overlaps(req.at_least.as_ref(), req.below.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_rule_out_requirements() {
        let torch_2_1 = Requirement::parse("torch>=2.1").unwrap();
        assert!(rules_out(&VersionFact::range(Some("1.4"), Some("2.1"), "message format"), &torch_2_1));
        assert!(!rules_out(&VersionFact::range(Some("2.1"), None, "message format"), &torch_2_1));
        assert!(rules_out(&VersionFact::printed("2.0.1+cu118"), &torch_2_1));
        assert!(!rules_out(&VersionFact::printed("2.1.0"), &torch_2_1));
        assert!(!rules_out(&VersionFact::printed("2.1"), &torch_2_1));
        let window = Requirement::parse("vllm>=0.6,<0.6.4").unwrap();
        assert!(VersionFact::printed("0.6.3").printed_within(window.at_least.as_ref(), window.below.as_ref()));
        assert!(!VersionFact::printed("0.6.4").printed_within(window.at_least.as_ref(), window.below.as_ref()));
    }
}
