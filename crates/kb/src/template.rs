//! `{placeholder}` templates in knowledge-base text. `{{` and `}}` are literal braces.

use crate::PLACEHOLDERS;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RenderError {
    /// The template names a placeholder that has no value for this finding.
    Missing(String),
}

/// Names used by a template; errors on unknown names or unbalanced braces.
pub fn placeholders(t: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let b = t.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' if b.get(i + 1) == Some(&b'{') => i += 2,
            b'}' if b.get(i + 1) == Some(&b'}') => i += 2,
            b'{' => {
                let end = t[i..].find('}').ok_or_else(|| format!("unclosed `{{` in {t:?}"))? + i;
                let name = &t[i + 1..end];
                let base = name.strip_suffix("_h").unwrap_or(name);
                if !PLACEHOLDERS.iter().any(|(p, _)| *p == name || *p == base) {
                    return Err(format!("unknown placeholder `{{{name}}}` (see kb/README.md)"));
                }
                out.push(name.to_string());
                i = end + 1;
            }
            b'}' => return Err(format!("stray `}}` in {t:?}")),
            _ => i += 1,
        }
    }
    Ok(out)
}

/// Fill a template from a lookup function.
pub fn render(t: &str, value: impl Fn(&str) -> Option<String>) -> Result<String, RenderError> {
    let mut out = String::with_capacity(t.len() + 32);
    let b = t.as_bytes();
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        match b[i] {
            b'{' if b.get(i + 1) == Some(&b'{') => {
                out.push_str(&t[last..i]);
                out.push('{');
                i += 2;
                last = i;
            }
            b'}' if b.get(i + 1) == Some(&b'}') => {
                out.push_str(&t[last..i]);
                out.push('}');
                i += 2;
                last = i;
            }
            b'{' => {
                let Some(end) = t[i..].find('}').map(|e| e + i) else { break };
                out.push_str(&t[last..i]);
                let name = &t[i + 1..end];
                out.push_str(&value(name).ok_or_else(|| RenderError::Missing(name.to_string()))?);
                i = end + 1;
                last = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&t[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn renders() {
        let r = render("set {vmem_limit_bytes} ({used_h}) {{x}}", |n| match n {
            "vmem_limit_bytes" => Some("20971520".into()),
            "used_h" => Some("18.00 MiB".into()),
            _ => None,
        });
        assert_eq!(r.unwrap(), "set 20971520 (18.00 MiB) {x}");
        assert_eq!(render("{op}", |_| None), Err(RenderError::Missing("op".into())));
        assert!(placeholders("{nope}").is_err());
        assert!(placeholders("{used_h} {limit}").is_ok());
    }
}
