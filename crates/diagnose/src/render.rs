//! Output for people: terminal text (optionally coloured) and Markdown.
//! JSON is `serde_json` over [`Report`] (the documented contract).

use crate::finding::{Finding, Report};
use oomdoc_kb::{Kind, Lang, Severity};
use oomdoc_units::format_bytes;
use oomdoc_units::terminal;
use std::fmt::Write;

/// Terminal styles; all empty when colour is off.
struct Style {
    bold: &'static str,
    red: &'static str,
    yellow: &'static str,
    green: &'static str,
    dim: &'static str,
    reset: &'static str,
}

const COLOR: Style = Style { bold: "\x1b[1m", red: "\x1b[1;31m", yellow: "\x1b[1;33m", green: "\x1b[32m", dim: "\x1b[2m", reset: "\x1b[0m" };
const PLAIN: Style = Style { bold: "", red: "", yellow: "", green: "", dim: "", reset: "" };

fn words(lang: Lang) -> [&'static str; 10] {
    match lang {
        Lang::En => ["culprit", "cause", "fixes", "will not help", "see", "line", "lines", "no accelerator memory failure found", "first fatal", "occurrences"],
        Lang::Zh => ["元凶", "原因", "修复建议", "无效做法", "参考", "行", "行", "未发现加速器内存故障", "首个致命错误", "出现次数"],
    }
}

/// The label of a finding: `error`, `warning`, `note` in the reader's language.
fn label(kind: Kind, severity: Severity, lang: Lang) -> &'static str {
    let i = match (kind, severity) {
        (Kind::Oom, Severity::Error) => 0,
        (_, Severity::Warning) => 1,
        (Kind::Other, Severity::Error) => 2,
    };
    match lang {
        Lang::En => ["error", "warning", "note"][i],
        Lang::Zh => ["错误", "警告", "提示"][i],
    }
}

/// Marker after a fix or dead end whose behaviour was not read in source (general advice,
/// which names nothing to read, has none).
fn unverified(verification: oomdoc_kb::Reliance, lang: Lang) -> &'static str {
    match (verification, lang) {
        (oomdoc_kb::Reliance::Verified | oomdoc_kb::Reliance::General, _) => "",
        (oomdoc_kb::Reliance::Unverified, Lang::En) => " (unverified)",
        (oomdoc_kb::Reliance::Unverified, Lang::Zh) => "（未核实）",
    }
}

/// A reference as a Markdown link with an absolute URL (`owner/repo:path@commit` becomes a
/// GitHub link), or its title and text when it has no web address.
fn md_link(r: &crate::finding::RefOut) -> String {
    match oomdoc_kb::view::href(&r.url) {
        Some(h) => format!("[{}]({h})", r.title.replace(['[', ']'], "")),
        None => format!("{} ({})", r.title, r.url),
    }
}

/// Render a report for a terminal. Log text was cleaned when it was read; file names
/// and notes are escaped here, and the whole page goes through [`terminal::clean_styled`]
/// once more, so nothing but our own colours reaches the terminal.
pub fn text(report: &Report, lang: Lang, color: bool) -> String {
    let out = text_unchecked(report, lang, color);
    terminal::clean_styled(&out).into_owned()
}

fn text_unchecked(report: &Report, lang: Lang, color: bool) -> String {
    let st = if color { &COLOR } else { &PLAIN };
    let w = words(lang);
    let mut out = String::new();
    if report.findings.is_empty() {
        let lines = if report.lines_scanned == 1 { w[5] } else { w[6] };
        let _ = writeln!(out, "{}{}{} ({} {lines})", st.dim, w[7], st.reset, report.lines_scanned);
    }
    for (i, f) in report.findings.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        finding_text(&mut out, f, lang, st, report.files_scanned);
    }
    for line in footer(report, lang) {
        let _ = writeln!(out, "{}{line}{}", st.yellow, st.reset);
    }
    out
}

/// What the reader must know about the report as a whole: folded findings, unreadable input.
fn footer(report: &Report, lang: Lang) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(t) = report.truncated {
        out.push(match lang {
            Lang::En => format!(
                "note: {} more distinct warnings and {} more distinct fatal failures were folded to bound memory (every one kept above includes the first fatal failure)",
                t.warnings, t.errors
            ),
            Lang::Zh => format!("注意：为限制内存，另有 {} 条不同的警告和 {} 条不同的致命错误被折叠（上面保留的包含首个致命错误）", t.warnings, t.errors),
        });
    }
    for n in &report.notes {
        let n = terminal::escape(n);
        out.push(match lang {
            Lang::En => format!("note: {n}"),
            Lang::Zh => format!("注意：{n}"),
        });
    }
    out
}

/// "on 4 of 8 logs (host1.log.gz, host3.log.gz, …), first in host1.log.gz line 10" for a
/// failure found in several logs.
fn files_line(f: &Finding, total_files: u64, lang: Lang) -> Option<String> {
    let first = terminal::escape(f.file.as_deref()?);
    if total_files < 2 {
        return None;
    }
    let n = f.files.len().max(1);
    let mut names: Vec<_> = f.files.iter().take(3).map(|s| terminal::escape(s)).collect();
    if f.files.len() > 3 {
        names.push("…".into());
    }
    let names = names.join(", ");
    Some(match lang {
        Lang::En => format!("on {n} of {total_files} logs ({names}), first in {first} line {}", f.line),
        Lang::Zh => format!("出现在 {total_files} 个日志中的 {n} 个（{names}），首次见于 {first} 第 {} 行", f.line),
    })
}

fn culprit_line(f: &Finding) -> Option<String> {
    let c = &f.culprit;
    let mut parts = Vec::new();
    if let Some(op) = &c.op {
        parts.push(op.clone());
    }
    if let Some(k) = &c.kernel {
        parts.push(format!("kernel {k}"));
    }
    if let Some(s) = &c.shape {
        let mut s = s.clone();
        match (c.padded_bytes, c.unpadded_bytes) {
            (Some(p), Some(u)) if p != u => s += &format!(" = {} padded ({} unpadded, {:.1}x)", format_bytes(p), format_bytes(u), p as f64 / u.max(1) as f64),
            (Some(p), _) => s += &format!(" = {}", format_bytes(p)),
            (None, Some(u)) => s += &format!(" = {}", format_bytes(u)),
            _ => {}
        }
        parts.push(s);
    }
    if let Some(t) = &c.custom_call_target {
        parts.push(format!("custom_call_target={t}"));
    }
    if let Some(n) = &c.node {
        parts.push(format!("node {n}"));
    }
    if let Some(e) = &c.executable {
        parts.push(format!("program {e}"));
    }
    if let Some(src) = &c.source {
        parts.push(format!("at {src}"));
    }
    if parts.is_empty() {
        None
    } else {
        Some(parts.join("  "))
    }
}

fn finding_text(out: &mut String, f: &Finding, lang: Lang, st: &Style, total_files: u64) {
    let w = words(lang);
    let color = if (f.kind, f.severity) == (Kind::Oom, Severity::Error) { st.red } else { st.yellow };
    let label = label(f.kind, f.severity, lang);
    let code = f.code.as_deref().map(|c| format!("[{c}]")).unwrap_or_default();
    let lines = if f.end_line > f.line { format!("{} {}–{}", w[6], f.line, f.end_line) } else { format!("{} {}", w[5], f.line) };
    // Line 0: observed outside the log (`oomdoc run`'s kernel evidence).
    let lines = if f.line == 0 { String::new() } else { lines };
    let times = if f.occurrences > 1 { format!(", ×{}", f.occurrences) } else { String::new() };
    let fatal = if f.first_fatal { format!(", {}", w[8]) } else { String::new() };
    let inner = format!("{lines}{times}{fatal}");
    let inner = inner.trim_start_matches(", ");
    let _ = writeln!(out, "{color}{label}{code}{} {}{}: {}{} {}({inner}){}", st.reset, st.bold, f.id, f.title, st.reset, st.dim, st.reset);
    let _ = writeln!(out, "  {}", f.headline);
    if let Some(l) = files_line(f, total_files, lang) {
        let _ = writeln!(out, "  {}{l}{}", st.dim, st.reset);
    }
    for d in &f.derived {
        let _ = writeln!(out, "  {}{} = {} [{}]{}", st.dim, d.name, format_bytes(d.bytes), d.formula, st.reset);
    }
    if let Some(c) = culprit_line(f) {
        let _ = writeln!(out, "  {}: {}", w[0], c);
    }
    for a in f.culprit.allocations.iter().take(3) {
        let mut line = format!("    #{} {}", a.rank, a.size.map(format_bytes).unwrap_or_default());
        if let Some(s) = &a.shape {
            line += &format!("  {s}");
        }
        if let Some(e) = a.expansion {
            line += &format!("  ({e:.1}x padding)");
        }
        if let Some(op) = a.op_name.as_ref().or(a.label.as_ref()) {
            let op: String = op.chars().take(100).collect();
            line += &format!("  {op}");
        }
        let _ = writeln!(out, "{line}");
    }
    if let Some(c) = &f.cause {
        let _ = writeln!(out, "  {}: {}", w[1], c);
    }
    if !f.fixes.is_empty() {
        let _ = writeln!(out, "  {}{}:{}", st.green, w[2], st.reset);
        for fx in &f.fixes {
            let v = fx.versions.as_deref().map(|v| format!(" {}({v}){}", st.dim, st.reset)).unwrap_or_default();
            let _ = writeln!(out, "    {}. {}{} {}[{}]{}{}", fx.rank, fx.title, unverified(fx.verification, lang), st.dim, fx.category, st.reset, v);
            if let Some(m) = fx.measured.filter(|m| m.fixed > 0 && first_of_kind(f, fx)) {
                let _ = writeln!(out, "       {}{}{}", st.dim, measured_words(fx.category.as_str(), m, lang), st.reset);
            }
            if fx.from_family.is_some() {
                let _ = writeln!(out, "       {}{}{}", st.dim, family_words(lang), st.reset);
            }
            if let Some(code) = &fx.code {
                for l in code.lines() {
                    let _ = writeln!(out, "       {}{}{}", st.bold, l, st.reset);
                }
            }
        }
    }
    if !f.dead_ends.is_empty() {
        let _ = writeln!(out, "  {}:", w[3]);
        for d in &f.dead_ends {
            let _ = writeln!(out, "    - {}{} — {}", d.action, unverified(d.verification, lang), d.why);
        }
    }
    if let Some(r) = f.references.first() {
        let url = oomdoc_kb::view::href(&r.url).unwrap_or_else(|| r.url.clone());
        let _ = writeln!(out, "  {}{}: {}{}", st.dim, w[4], url, st.reset);
    }
}

/// Render a report as Markdown (for issues and chat), which is often printed on a
/// terminal too: cleaned like [`text`].
pub fn markdown(report: &Report, lang: Lang) -> String {
    let out = markdown_unchecked(report, lang);
    terminal::clean(&out).into_owned()
}

fn markdown_unchecked(report: &Report, lang: Lang) -> String {
    let w = words(lang);
    let mut out = String::new();
    if report.findings.is_empty() {
        let _ = writeln!(out, "_{}_", w[7]);
    }
    for line in footer(report, lang) {
        let _ = writeln!(out, "> {line}\n");
    }
    for f in &report.findings {
        let code = f.code.as_deref().map(|c| format!(" `{c}`")).unwrap_or_default();
        let _ = writeln!(out, "### {}{} — {}\n", f.title, code, f.id);
        let lines = if f.end_line > f.line { format!("{} {}–{}", w[6], f.line, f.end_line) } else { format!("{} {}", w[5], f.line) };
        let _ = writeln!(out, "**{}** ({lines})\n", f.headline);
        if let Some(l) = files_line(f, report.files_scanned, lang) {
            let _ = writeln!(out, "_{l}_\n");
        }
        if let Some(c) = culprit_line(f) {
            let _ = writeln!(out, "- **{}**: `{}`", w[0], c.replace('`', "'"));
        }
        if let Some(c) = &f.cause {
            let _ = writeln!(out, "- **{}**: {}", w[1], c);
        }
        if !f.fixes.is_empty() {
            let _ = writeln!(out, "\n**{}**\n", w[2]);
            for fx in &f.fixes {
                let v = fx.versions.as_deref().map(|v| format!(" _({v})_")).unwrap_or_default();
                let _ = writeln!(out, "{}. {}{} `[{}]`{}", fx.rank, fx.title, unverified(fx.verification, lang), fx.category, v);
                if let Some(m) = fx.measured.filter(|m| m.fixed > 0 && first_of_kind(f, fx)) {
                    let _ = writeln!(out, "   _{}_", measured_words(fx.category.as_str(), m, lang));
                }
                if fx.from_family.is_some() {
                    let _ = writeln!(out, "   _{}_", family_words(lang));
                }
                if let Some(code) = &fx.code {
                    let lang = fx.code_lang.as_deref().unwrap_or("");
                    let _ = writeln!(out, "   ```{lang}\n   {}\n   ```", code.replace('\n', "\n   "));
                }
            }
        }
        if !f.dead_ends.is_empty() {
            let _ = writeln!(out, "\n**{}**\n", w[3]);
            for d in &f.dead_ends {
                let _ = writeln!(out, "- {}{} — {}", d.action, unverified(d.verification, lang), d.why);
            }
        }
        if !f.references.is_empty() {
            let _ = writeln!(out, "\n{}: {}", w[4], f.references.iter().take(3).map(md_link).collect::<Vec<_>>().join(" · "));
        }
        out.push('\n');
    }
    out
}

/// "a fix of this kind (smaller working set) fixed 19 of 37 public threads with this failure"
/// (the links are in the JSON `outcomes` and on the server's /kb page).
pub fn measured_words(category: &str, m: crate::finding::Measured, lang: Lang) -> String {
    let kind = category.replace('-', " ");
    match lang {
        Lang::Zh => format!("此类修复（{kind}）在 {} 个公开讨论中解决了其中 {} 个同类失败", m.threads, m.fixed),
        Lang::En => format!("{kind} fixed {} of {} public threads with this failure (links: --format json)", m.fixed, m.threads),
    }
}

/// The note under a fix borrowed from the memory's family-level entry (`from_family`).
fn family_words(lang: Lang) -> &'static str {
    match lang {
        Lang::Zh => "通用建议：此类失败的专门条目中没有适合本例的这类修复，而公开讨论表明它对同类内存失败常常有效",
        Lang::En => "general advice: this failure's entry has no fix of this kind that fits this case, and public threads show it often fixes failures of this memory",
    }
}

/// Whether `fx` is the first fix of its category in the finding (the count is shown once).
fn first_of_kind(f: &crate::Finding, fx: &crate::FixOut) -> bool {
    f.fixes.iter().find(|x| x.category == fx.category).is_some_and(|x| x.id == fx.id)
}
