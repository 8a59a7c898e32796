//! An entry as Markdown (for `oomdoc explain`, the web UI's `/kb/{id}.md`, docs).

use crate::{Entry, Kind, Lang};
use std::fmt::Write;

fn platform_name(e: &Entry) -> String {
    let mut p = vec![format!("{:?}", e.platform).to_lowercase()];
    p.extend(e.also_platforms.iter().map(|x| format!("{x:?}").to_lowercase()));
    p.join(", ")
}

/// Render an entry as Markdown in one language. Placeholders stay visible as `{name}`:
/// here the entry is shown in general, not for one log.
pub fn to_markdown(e: &Entry, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    let l = |en: &'static str, zh_s: &'static str| if zh { zh_s } else { en };
    let mut o = String::new();
    let code = match (&e.code, &e.code_name) {
        (Some(c), Some(n)) => format!(" ({c} {n})"),
        (Some(c), None) => format!(" ({c})"),
        _ => String::new(),
    };
    let _ = writeln!(o, "# {}{}\n", e.title.get(lang), code);
    let kind = match e.kind {
        Kind::Oom => l("memory failure", "内存故障"),
        Kind::Other => l("not a memory failure", "非内存故障"),
    };
    let _ = writeln!(
        o,
        "`{}` · {} · {}: {} · {}: {:?} · {}: {}\n",
        e.id,
        kind,
        l("platform", "平台"),
        platform_name(e),
        l("phase", "阶段"),
        e.phase,
        l("memory space", "内存空间"),
        e.memory_space.as_deref().unwrap_or("-")
    );
    if let Some(v) = &e.versions {
        let _ = writeln!(o, "{}: {}\n", l("Versions", "版本"), v);
    }
    let _ = writeln!(o, "{}\n", e.summary.get(lang).trim());
    let cite = |refs: &[String]| -> String {
        if refs.is_empty() {
            String::new()
        } else {
            format!(" [{}]", refs.join(", "))
        }
    };
    let cond = |when: &[String]| -> String {
        if when.is_empty() {
            String::new()
        } else {
            format!(" _({} {})_", l("when", "条件"), when.join(" ∧ "))
        }
    };
    if !e.causes.is_empty() {
        let _ = writeln!(o, "## {}\n", l("Causes", "原因"));
        for c in &e.causes {
            let _ = writeln!(o, "- {}{}{}", c.text.get(lang).trim(), cond(&c.when), cite(&c.refs));
        }
        o.push('\n');
    }
    if !e.fixes.is_empty() {
        let _ = writeln!(o, "## {}\n", l("Fixes", "修复建议"));
        for (i, f) in e.fixes.iter().enumerate() {
            let v = f.versions.as_deref().map(|v| format!(" — {v}")).unwrap_or_default();
            let _ = writeln!(o, "{}. **{}**{}{}{}", i + 1, f.title.get(lang).trim(), v, cond(&f.when), cite(&f.refs));
            if let Some(d) = &f.detail {
                let _ = writeln!(o, "   {}", d.get(lang).trim().replace('\n', "\n   "));
            }
            if let Some(code) = f.code.as_ref().or(f.code_fallback.as_ref()) {
                let _ = writeln!(o, "   ```{}\n   {}\n   ```", f.code_lang.as_deref().unwrap_or(""), code.replace('\n', "\n   "));
            }
        }
        o.push('\n');
    }
    if !e.dead_ends.is_empty() {
        let _ = writeln!(o, "## {}\n", l("What will not help", "无效做法"));
        for d in &e.dead_ends {
            let _ = writeln!(o, "- **{}** — {}{}", d.action.get(lang).trim(), d.why.get(lang).trim(), cite(&d.refs));
        }
        o.push('\n');
    }
    if let Some(ex) = e.examples.first() {
        let _ = writeln!(o, "## {}\n\n```\n{}\n```\n{}: {}\n", l("Example", "示例"), ex.text.trim_end(), l("Source", "来源"), ex.source);
    }
    let _ = writeln!(o, "## {}\n", l("References", "参考资料"));
    for r in &e.references {
        let _ = writeln!(o, "- [{}] {} — {}", r.key, r.title, r.url);
    }
    o
}
