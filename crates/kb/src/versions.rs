//! Version lines in each language. A `versions` text is English prose around version
//! constraints ("PyTorch >= 1.11 (use_reentrant argument)"); Chinese output shows the entry's
//! `versions_zh` when it has one, otherwise only the constraints the text states
//! (`PyTorch >= 1.11`), so that no English prose is left in a Chinese version line.

use crate::Lang;
use regex::Regex;
use std::sync::OnceLock;

/// The version constraints a text states, `；`-separated: `Name >= 1.2`, `Name <= 1.2`,
/// `Name 1.2–1.4`, `Name 1.2+`. `None` when it states none (e.g. "any PyTorch").
pub fn constraints(text: &str) -> Option<String> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r"(?x)
            (?P<name>(?:[A-Z][A-Za-z0-9]*\x20)?[A-Za-z][A-Za-z0-9_.+-]*[A-Za-z0-9])\s*
            (?:
                (?P<op>>=|<=|==|≥|≤|>|<)\s*(?P<v>~?v?[0-9]+(?:\.[0-9A-Za-z]+)*)
              | (?P<lo>~?v?[0-9]+(?:\.[0-9]+)+)\s*(?:–|-|\.\.)\s*(?P<hi>v?[0-9]+(?:\.[0-9]+)+)
              | (?P<plus>~?v?[0-9]+(?:\.[0-9]+)+)\+
            )",
        )
        .expect("valid regex")
    });
    let mut out: Vec<String> = Vec::new();
    // Quoted vendor texts are messages, not constraints.
    let plain = strip_quoted(text);
    for c in re.captures_iter(&plain) {
        let name = &c["name"];
        // "in 0.4–0.7", "argument >= 1.11": a constraint needs a project's name.
        if name.split(' ').any(|w| PROSE_WORDS.contains(&w.to_ascii_lowercase().as_str())) {
            continue;
        }
        let one = if let (Some(op), Some(v)) = (c.name("op"), c.name("v")) {
            let op = match op.as_str() {
                "≥" => ">=",
                "≤" => "<=",
                o => o,
            };
            format!("{name} {op} {}", v.as_str())
        } else if let (Some(lo), Some(hi)) = (c.name("lo"), c.name("hi")) {
            format!("{name} {}–{}", lo.as_str(), hi.as_str())
        } else if let Some(p) = c.name("plus") {
            format!("{name} >= {}", p.as_str())
        } else {
            continue;
        };
        if !out.contains(&one) {
            out.push(one);
        }
    }
    (!out.is_empty()).then(|| out.join("；"))
}

fn strip_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut inside = false;
    for ch in text.chars() {
        if ch == '\'' {
            inside = !inside;
            out.push(' ');
        } else if inside {
            out.push(' ');
        } else {
            out.push(ch);
        }
    }
    out
}

/// A version line in `lang`: English as written; Chinese from `zh`, else the constraints.
pub fn in_lang(en: Option<&str>, zh: Option<&str>, lang: Lang) -> Option<String> {
    match lang {
        Lang::En => en.map(str::to_string),
        Lang::Zh => zh.map(str::to_string).or_else(|| en.and_then(constraints)),
    }
}

impl crate::Fix {
    /// This fix's version line in `lang`.
    pub fn versions_in(&self, lang: Lang) -> Option<String> {
        in_lang(self.versions.as_deref(), self.versions_zh.as_deref(), lang)
    }
}

impl crate::Entry {
    /// The entry's version line in `lang`. An entry's `versions` is a catalogue of message
    /// forms by release, which its constraints alone would misstate: in Chinese it is shown
    /// only when the entry has `versions_zh`.
    pub fn versions_in(&self, lang: Lang) -> Option<String> {
        match lang {
            Lang::En => self.versions.clone(),
            Lang::Zh => self.versions_zh.clone(),
        }
    }
}

/// English words that mark prose (for tests: a Chinese version line must contain none).
pub const PROSE_WORDS: &[&str] = &[
    "the", "and", "or", "from", "since", "release", "releases", "any", "all", "with", "only", "builds", "build", "not",
    "later", "onward", "onwards", "newer", "older", "recent", "before", "after", "when", "see", "until", "in", "on",
    "of", "first", "branch", "argument", "engine", "pinned", "checked", "verified",
];

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn constraints_only() {
        assert_eq!(constraints("PyTorch >= 1.11 (use_reentrant argument)").as_deref(), Some("PyTorch >= 1.11"));
        assert_eq!(constraints("any PyTorch"), None);
        assert_eq!(constraints("use_reentrant argument >= 1.11"), None);
        assert_eq!(
            constraints("pltpu.TPUCompilerParams, jax 0.4.32–0.7.1; jax ≥ 0.6.2").as_deref(),
            Some("jax 0.4.32–0.7.1；jax >= 0.6.2")
        );
        assert_eq!(constraints("vLLM 0.20+ (default on)").as_deref(), Some("vLLM >= 0.20"));
        assert_eq!(constraints("ONNX Runtime >= 1.8 (CUDA EP)").as_deref(), Some("ONNX Runtime >= 1.8"));
        assert_eq!(constraints("TensorFlow >= 2.5 with CUDA >= 11.2").as_deref(), Some("TensorFlow >= 2.5；CUDA >= 11.2"));
        assert_eq!(constraints("'GPU 0 >= 3 GiB' in logs"), None);
        assert_eq!(in_lang(Some("PyTorch >= 2.1 on Linux"), None, Lang::Zh).as_deref(), Some("PyTorch >= 2.1"));
        assert_eq!(in_lang(Some("x"), Some("所有版本"), Lang::Zh).as_deref(), Some("所有版本"));
    }
}
