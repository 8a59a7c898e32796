//! An entry as Markdown (for `oomdoc explain`, the web UI's `/kb/{id}.md`, docs). What is
//! shown, and how templates read without a log, is decided once in [`crate::view`].

use crate::view::{status_note, view, BehaviourView, ItemView, RefView, SettingView};
use crate::{Entry, Kind, Lang};
use std::fmt::Write;

fn platform_name(e: &Entry) -> String {
    let mut p = vec![format!("{:?}", e.platform).to_lowercase()];
    p.extend(e.also_platforms.iter().map(|x| format!("{x:?}").to_lowercase()));
    p.join(", ")
}

fn cite(refs: &[RefView], lang: Lang) -> String {
    if refs.is_empty() {
        return String::new();
    }
    let unverified = if lang == Lang::Zh { "，未核实" } else { ", unverified" };
    let links: Vec<String> = refs
        .iter()
        .map(|r| {
            let note = if r.unverified { unverified } else { "" };
            match &r.href {
                Some(h) => format!("[{}{}]({})", r.key, note, h),
                None => format!("[{}{}]", r.key, note),
            }
        })
        .collect();
    format!(" — {}", links.join(" "))
}

/// ` _(unverified)_` after an item whose behaviour was not read in source, ` _(general
/// advice)_` after one that names nothing a source could confirm.
fn unverified(item: &ItemView, lang: Lang) -> &'static str {
    match (item.reliance, lang) {
        (crate::Reliance::Verified, _) => "",
        (crate::Reliance::General, Lang::En) => " _(general advice)_",
        (crate::Reliance::General, Lang::Zh) => " _（通用建议）_",
        (crate::Reliance::Unverified, Lang::En) => " _(unverified)_",
        (crate::Reliance::Unverified, Lang::Zh) => " _（未核实）_",
    }
}

/// "Relies on: <claim> — [source](link)" (the claims are English: Chinese output links the sources only).
fn relies_on(bs: &[BehaviourView], lang: Lang) -> Option<String> {
    if bs.is_empty() {
        return None;
    }
    let parts: Vec<String> = bs
        .iter()
        .map(|b| {
            let src = match &b.href {
                Some(h) => format!("[{}]({h})", b.project),
                None => b.project.clone(),
            };
            let note = if b.verified { "" } else if lang == Lang::Zh { "，未核实" } else { ", unverified" };
            match lang {
                Lang::En => format!("{} ({src}{note})", b.claim.trim_end_matches('.')),
                Lang::Zh => format!("{src}{note}"),
            }
        })
        .collect();
    Some(match lang {
        Lang::En => format!("_Relies on: {}._", parts.join("; ")),
        Lang::Zh => format!("_依据的源码：{}_", parts.join("，")),
    })
}

/// ` [allocator-setting]` after a fix or dead end, empty for a cause.
fn category(item: &ItemView) -> String {
    item.category.map(|c| format!(" `[{c}]`")).unwrap_or_default()
}

fn setting(s: &SettingView, lang: Lang) -> String {
    format!("`{}`{}", s.name, status_note(&s.status, lang))
}

/// Render an entry as Markdown in one language, as read without a log: placeholders read as
/// words in italics (*the need*), near-duplicate variants appear once, and every cause, fix
/// and dead end links its sources.
pub fn to_markdown(e: &Entry, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    let l = |en: &'static str, zh_s: &'static str| if zh { zh_s } else { en };
    let v = view(e, lang);
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
        "`{}` · {} · {}: {} · {}: {} · {}: {}\n",
        e.id,
        kind,
        l("platform", "平台"),
        platform_name(e),
        l("phase", "阶段"),
        e.phase.name(lang),
        l("memory space", "内存空间"),
        e.memory_space.as_deref().unwrap_or("-")
    );
    if let Some(ver) = e.versions_in(lang) {
        let _ = writeln!(o, "{}: {}\n", l("Versions", "版本"), ver);
    }
    if !e.checked_against.is_empty() {
        let list: Vec<String> = e.checked_against.iter().map(|(p, v)| format!("{p} {v}")).collect();
        let _ = writeln!(o, "{}: {}\n", l("Behaviour checked in source against", "行为已在源码中核对的版本"), list.join(", "));
    }
    let _ = writeln!(o, "{}\n", e.summary.get(lang).trim());
    if !v.legend.is_empty() {
        let _ = writeln!(o, "_{}_\n", l("Read without a log; a diagnosis puts the log's numbers in place of:", "未结合日志阅读；诊断时会用日志中的数值替换："));
        for (sym, what) in &v.legend {
            let _ = writeln!(o, "- *{sym}*: {what}");
        }
        o.push('\n');
    }
    let cond = |when: &[String]| -> String {
        if when.is_empty() {
            String::new()
        } else {
            format!(" _({} {})_", l("when", "条件"), when.join(" ∧ "))
        }
    };
    if !v.causes.is_empty() {
        let _ = writeln!(o, "## {}\n", l("Causes", "原因"));
        for c in &v.causes {
            let _ = writeln!(o, "- {}{}{}", c.text.markdown().trim(), cond(&c.when), cite(&c.refs, lang));
        }
        o.push('\n');
    }
    if !v.fixes.is_empty() {
        let _ = writeln!(o, "## {}\n", l("Fixes", "修复建议"));
        for (i, f) in v.fixes.iter().enumerate() {
            let ver = f.versions.as_deref().map(|x| format!(" — {x}")).unwrap_or_default();
            let _ = writeln!(o, "{}. **{}**{}{}{}{}{}", i + 1, f.text.markdown().trim(), unverified(f, lang), category(f), ver, cond(&f.when), cite(&f.refs, lang));
            if let Some(d) = &f.detail {
                let _ = writeln!(o, "   {}", d.markdown().trim().replace('\n', "\n   "));
            }
            if let Some(code) = &f.code {
                if f.code_fragment {
                    let _ = writeln!(o, "   _{}_", l("Fragment: paste into your own code.", "代码片段：需放进你自己的代码中。"));
                }
                let _ = writeln!(o, "   ```{}\n   {}\n   ```", f.code_lang.as_deref().unwrap_or(""), code.replace('\n', "\n   "));
            }
            if !f.settings.is_empty() {
                let names: Vec<String> = f.settings.iter().map(|s| setting(s, lang)).collect();
                let _ = writeln!(o, "   {}: {}", l("Settings", "涉及的设置"), names.join(", "));
            }
            if let Some(line) = relies_on(&f.relies_on, lang) {
                let _ = writeln!(o, "   {line}");
            }
        }
        o.push('\n');
    }
    if !v.dead_ends.is_empty() {
        let _ = writeln!(o, "## {}\n", l("What will not help", "无效做法"));
        for d in &v.dead_ends {
            let why = d.detail.as_ref().map(|w| w.markdown()).unwrap_or_default();
            let _ = writeln!(o, "- **{}**{}{} — {}{}{}", d.text.markdown().trim(), unverified(d, lang), category(d), why.trim(), cond(&d.when), cite(&d.refs, lang));
            if let Some(line) = relies_on(&d.relies_on, lang) {
                let _ = writeln!(o, "  {line}");
            }
        }
        o.push('\n');
    }
    if !v.settings.is_empty() {
        let _ = writeln!(o, "## {}\n", l("Settings and where they are defined", "设置及其定义位置"));
        for s in &v.settings {
            let src = match &s.href {
                Some(h) => format!("[{}]({})", s.defined_in, h),
                None => s.defined_in.clone(),
            };
            let _ = writeln!(o, "- {} ({}) — {} — {}", setting(s, lang), s.kind, s.versions, src);
        }
        o.push('\n');
    }
    if let Some(ex) = e.examples.first() {
        let _ = writeln!(o, "## {}\n\n```\n{}\n```\n{}: {}\n", l("Example", "示例"), ex.text.trim_end(), l("Source", "来源"), ex.source);
    }
    let _ = writeln!(o, "## {}\n", l("References", "参考资料"));
    for r in &v.references {
        let note = if r.unverified { l(" (unverified)", "（未核实）") } else { "" };
        match &r.href {
            Some(h) => {
                let _ = writeln!(o, "- [{}] {}{} — [{}]({})", r.key, r.title, note, r.url, h);
            }
            _ => {
                let _ = writeln!(o, "- [{}] {}{} — {}", r.key, r.title, note, r.url);
            }
        }
    }
    o
}
