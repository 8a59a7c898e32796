//! A knowledge-base entry as Markdown (`/kb/{id}.md`).
// TODO(kb): move to oomdoc-kb once `oomdoc explain --format md` exists, so the CLI
// and the server print the same text; this is the only rendering of it today.

use crate::kb_query::wire_name;
use oomdoc_kb::{Entry, Lang};
use std::fmt::Write;

fn heading(lang: Lang, en: &'static str, zh: &'static str) -> &'static str {
    if lang == Lang::Zh { zh } else { en }
}

/// Code fences longer than any backtick run inside the code, so no text can close them.
fn fence(code: &str) -> String {
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

pub fn render(e: &Entry, lang: Lang) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", e.title.get(lang));
    let _ = write!(md, "`{}`", e.id);
    if let Some(c) = &e.code {
        let _ = write!(md, " · `{c}`");
    }
    if let Some(n) = &e.code_name {
        let _ = write!(md, " `{n}`");
    }
    let _ = write!(md, " · {} · {}", wire_name(&e.platform), wire_name(&e.phase));
    if let Some(m) = &e.memory_space {
        let _ = write!(md, " · {m}");
    }
    md.push_str("\n\n");
    if let Some(v) = &e.versions {
        let _ = writeln!(md, "{}: {v}\n", heading(lang, "Versions", "版本"));
    }
    let _ = writeln!(md, "{}\n", e.summary.get(lang));
    if !e.causes.is_empty() {
        let _ = writeln!(md, "## {}\n", heading(lang, "Causes", "原因"));
        for (i, c) in e.causes.iter().enumerate() {
            let _ = writeln!(md, "{}. {}{}", i + 1, c.text.get(lang), refs(&c.refs));
        }
        md.push('\n');
    }
    if !e.fixes.is_empty() {
        let _ = writeln!(md, "## {}\n", heading(lang, "Fixes", "修复方法"));
        for f in &e.fixes {
            let _ = writeln!(md, "### {}\n", f.title.get(lang));
            if !f.when.is_empty() {
                let _ = writeln!(md, "{}: `{}`\n", heading(lang, "Applies when", "适用条件"), f.when.join("`, `"));
            }
            if let Some(d) = &f.detail {
                let _ = writeln!(md, "{}\n", d.get(lang));
            }
            if let Some(code) = f.code.as_ref().or(f.code_fallback.as_ref()) {
                let fence = fence(code);
                let _ = writeln!(md, "{fence}{}\n{code}\n{fence}\n", f.code_lang.as_deref().unwrap_or(""));
            }
            if let Some(v) = &f.versions {
                let _ = writeln!(md, "{}: {v}{}\n", heading(lang, "Versions", "版本"), refs(&f.refs));
            } else if !f.refs.is_empty() {
                let _ = writeln!(md, "{}\n", refs(&f.refs).trim_start());
            }
        }
    }
    if !e.dead_ends.is_empty() {
        let _ = writeln!(md, "## {}\n", heading(lang, "Dead ends", "无效的做法"));
        for d in &e.dead_ends {
            let _ = writeln!(md, "- **{}** {}{}", d.action.get(lang), d.why.get(lang), refs(&d.refs));
        }
        md.push('\n');
    }
    let _ = writeln!(md, "## {}\n", heading(lang, "References", "参考资料"));
    for r in &e.references {
        let _ = writeln!(md, "- [{}] {}: {}", r.key, r.title, r.url);
    }
    md
}

fn refs(keys: &[String]) -> String {
    keys.iter().map(|k| format!(" [{k}]")).collect()
}
