//! Release versions and version requirements as knowledge-base data writes them
//! (`torch>=2.1`, `vllm>=0.6,<0.6.4`) and logs print them (`2.1.0+cu121`).

use std::cmp::Ordering;
use std::fmt;
/// A release number: its numeric components, compared component by component
/// (missing components read as 0, so `2.1` == `2.1.0`).
#[derive(Debug, Clone)]
pub struct Version(pub Vec<u32>);

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Version {}

impl Version {
    /// The leading `N.N[.N…]` of a version string (`v2.1.0+cu121` → 2.1.0). Needs a dot:
    /// a bare number is never taken for a version.
    /// llama.cpp numbers its releases by build (`b3265`): that tag form reads as one
    /// component, so builds compare as numbers.
    pub fn parse(s: &str) -> Option<Version> {
        let s = s.trim();
        if let Some(build) = s.strip_prefix('b').filter(|b| (3..=7).contains(&b.len()) && b.chars().all(|c| c.is_ascii_digit())) {
            return Some(Version(vec![build.parse().ok()?]));
        }
        let s = s.trim_start_matches(['v', 'V']);
        let mut parts = Vec::new();
        for piece in s.split('.') {
            let digits: String = piece.chars().take_while(|c| c.is_ascii_digit()).collect();
            if digits.is_empty() || digits.len() > 9 {
                break;
            }
            parts.push(digits.parse().ok()?);
            if digits.len() != piece.len() {
                break;
            }
        }
        (parts.len() >= 2).then_some(Version(parts))
    }

    fn at(&self, i: usize) -> u32 {
        self.0.get(i).copied().unwrap_or(0)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.0.len().max(other.0.len());
        (0..n).map(|i| self.at(i).cmp(&other.at(i))).find(|o| o.is_ne()).unwrap_or(Ordering::Equal)
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s: Vec<String> = self.0.iter().map(u32::to_string).collect();
        f.write_str(&s.join("."))
    }
}

/// A requirement `name>=X` / `name<X` as knowledge-base data writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub library: String,
    pub at_least: Option<Version>,
    pub below: Option<Version>,
}

impl Requirement {
    /// `torch>=2.1`, `jax<0.4.30`, `vllm>=0.6,<0.7`.
    pub fn parse(s: &str) -> Option<Requirement> {
        let s = s.trim();
        let name_end = s.find(['>', '<', '='])?;
        let library = s[..name_end].trim().to_ascii_lowercase();
        if library.is_empty() {
            return None;
        }
        let mut req = Requirement { library, at_least: None, below: None };
        for part in s[name_end..].split(',') {
            let part = part.trim();
            if let Some(v) = part.strip_prefix(">=") {
                req.at_least = Some(Version::parse(v)?);
            } else if let Some(v) = part.strip_prefix('<') {
                req.below = Some(Version::parse(v)?);
            } else {
                return None;
            }
        }
        Some(req)
    }
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_logs_print() {
        assert_eq!(Version::parse("2.1.0+cu121"), Some(Version(vec![2, 1, 0])));
        assert_eq!(Version::parse("v0.4.30"), Some(Version(vec![0, 4, 30])));
        assert_eq!(Version::parse("2.2.0.dev20231010"), Some(Version(vec![2, 2, 0])));
        assert_eq!(Version::parse("12"), None);
        assert_eq!(Version::parse("b3265"), Some(Version(vec![3265])));
        assert!(Version::parse("b3265").unwrap() < Version::parse("b4000").unwrap());
        assert_eq!(Version::parse("b12"), None);
        assert!(Version::parse("2.1").unwrap() == Version::parse("2.1.0").unwrap());
        assert!(Version::parse("1.13.1").unwrap() < Version::parse("2.0").unwrap());
        let r = Requirement::parse("vllm>=0.6,<0.6.4").unwrap();
        assert_eq!((r.library.as_str(), r.at_least, r.below), ("vllm", Version::parse("0.6"), Version::parse("0.6.4")));
        assert!(Requirement::parse("torch").is_none());
        assert!(Requirement::parse("torch>=two").is_none());
    }
}
