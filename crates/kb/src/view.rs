//! An entry as people read it without a log: the one place that decides what `oomdoc explain`
//! (Markdown, [`crate::to_markdown`]) and the server's `/kb/{id}` page show.
//!
//! - Templates read as text: `{used_h}` becomes the span [`Span::Var`] `N`, shown in italics
//!   and explained in [`EntryView::legend`] (names read as words: *kernel name*), never as a
//!   raw placeholder. In code, a placeholder-free `code_fallback` is used
//!   when there is one, otherwise `<label>`.
//! - Near-duplicate variants are shown once: a cause, fix or dead end whose id is an earlier
//!   item's id plus `-suffix` and whose conditions are a subset of that item's (the same
//!   advice without numbers, e.g. `fewer-stages-plain` after `fewer-stages`) is folded into
//!   the earlier item ([`ItemView::variants`]).
//! - Every item carries its sources as links ([`RefView::href`]): web URLs as they are,
//!   `owner/repo:path@commit` as a GitHub link at that commit; unverified references and
//!   settings are marked.
//! - Every fix lists the settings it names ([`ItemView::settings`]) with the entry's
//!   `[[identifiers]]` record: where it is defined, the versions, and the status.

use crate::identifiers::{in_code, in_prose};
use crate::{Entry, FixCategory, Identifier, Lang, Text};

/// A piece of readable text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    Text(String),
    /// A value that a log fills in, named in words (`the need`, `N`).
    Var(String),
}

/// Text with readable placeholders.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rich(pub Vec<Span>);

impl Rich {
    /// Markdown: values in italics.
    pub fn markdown(&self) -> String {
        self.0
            .iter()
            .map(|s| match s {
                Span::Text(t) => t.clone(),
                Span::Var(v) => format!("*{v}*"),
            })
            .collect()
    }
    /// Plain text.
    pub fn plain(&self) -> String {
        self.0
            .iter()
            .map(|s| match s {
                Span::Text(t) | Span::Var(t) => t.as_str(),
            })
            .collect()
    }
}

/// Words for each placeholder, (name, English, Chinese). `_h` variants use the base name's.
const LABELS: &[(&str, &str, &str)] = &[
    ("requested", "R", "R"),
    ("used", "N", "N"),
    ("limit", "L", "L"),
    ("excess", "E", "E"),
    ("free", "F", "F"),
    ("total", "T", "T"),
    ("reserved", "S", "S"),
    ("allocated", "A", "A"),
    ("reserved_unallocated", "C", "C"),
    ("over_pct", "P", "P"),
    ("ratio", "Y", "Y"),
    ("shrink_pct", "Q", "Q"),
    ("vmem_limit_bytes", "V", "V"),
    ("vmem_limit_mib", "V", "V"),
    ("scoped_vmem_limit_kib", "K", "K"),
    ("chip_vmem", "the chip's VMEM", "芯片的 VMEM"),
    ("op", "op name", "算子名"),
    ("kernel", "kernel name", "kernel 名"),
    ("shape", "shape", "形状"),
    ("padded", "the padded size", "补齐后大小"),
    ("unpadded", "the unpadded size", "补齐前大小"),
    ("largest_alloc", "B", "B"),
    ("largest_alloc_shape", "its shape", "其形状"),
    ("largest_alloc_op", "its op", "其算子"),
    ("largest_alloc_pct", "Z", "Z"),
    ("padding_waste", "the padding waste", "补齐浪费"),
    ("max_expansion", "X", "X"),
    ("outside", "the memory outside the allocator", "分配器之外的内存"),
    ("others", "the memory of other processes", "其他进程占用的内存"),
    ("gpu_family", "the GPU family", "GPU 系列"),
    ("smem_over", "E", "E"),
    ("stages_hint", "the pipeline-stage arithmetic", "流水线级数估算"),
    ("tensor_shape", "the tensor's shape", "张量形状"),
    ("tensor_bytes", "the tensor's size", "张量大小"),
    ("dtype", "the element type", "元素类型"),
    ("space_name", "the memory space", "内存空间"),
    ("requested_words", "Wr", "Wr"),
    ("limit_words", "Wl", "Wl"),
    ("device", "the device", "设备"),
    ("alloc_conf_var", "PYTORCH_CUDA_ALLOC_CONF (PYTORCH_HIP_ALLOC_CONF on ROCm)", "PYTORCH_CUDA_ALLOC_CONF（ROCm 上为 PYTORCH_HIP_ALLOC_CONF）"),
    ("executable", "the program", "该程序"),
    ("gpu_memory_utilization_fit", "G", "G"),
    ("gpu_memory_utilization_set", "G0", "G0"),
    ("gpu_memory_utilization_raise", "G", "G"),
];

/// Chinese descriptions for the legend (English ones are `PLACEHOLDERS`).
const LEGEND_ZH: &[(&str, &str)] = &[
    ("requested", "失败的那一次分配（或 kernel 需求）的字节数"),
    ("used", "程序或该内存空间的总需求字节数"),
    ("limit", "检查时对照的上限字节数"),
    ("excess", "超出上限的字节数"),
    ("free", "消息中给出的空闲字节数"),
    ("total", "消息中给出的总容量"),
    ("reserved", "消息中给出的保留字节数"),
    ("allocated", "消息中给出的已分配字节数"),
    ("reserved_unallocated", "PyTorch 已保留但未分配的字节数"),
    ("over_pct", "超出上限的百分比"),
    ("ratio", "需求 / 上限"),
    ("shrink_pct", "需求需缩小的百分比"),
    ("vmem_limit_bytes", "能覆盖需求的单 kernel VMEM 上限（向上取整到 1 MiB）"),
    ("vmem_limit_mib", "能覆盖需求的单 kernel VMEM 上限（向上取整到 1 MiB）"),
    ("scoped_vmem_limit_kib", "--xla_tpu_scoped_vmem_limit_kib 的取值，高于需求和日志中的上限"),
    ("largest_alloc", "列出的最大一次分配"),
    ("largest_alloc_pct", "最大分配占上限的百分比"),
    ("max_expansion", "补齐导致的最大膨胀倍数"),
    ("smem_over", "共享内存超出上限的字节数"),
    ("requested_words", "SparseCore 请求的字数"),
    ("limit_words", "SparseCore 可分配的字数"),
    ("gpu_memory_utilization_fit", "空闲显存允许的最大 gpu_memory_utilization"),
    ("gpu_memory_utilization_set", "日志中正在使用的 gpu_memory_utilization"),
    ("gpu_memory_utilization_raise", "高于当前值（或高于默认值 0.9 与 0.92）的 gpu_memory_utilization"),
];

/// Whether a label is a symbol (`N`, `Wr`) that the legend explains.
fn is_symbol(label: &str) -> bool {
    label.len() <= 2 && label.chars().all(|c| c.is_ascii_alphanumeric())
}

/// The words for a placeholder; an unknown one reads as its name with spaces.
pub fn placeholder_label(name: &str, lang: Lang) -> String {
    let find = |n: &str| LABELS.iter().find(|(k, _, _)| *k == n).map(|(_, en, zh)| if lang == Lang::Zh { *zh } else { *en });
    let base = name.strip_suffix("_h").unwrap_or(name);
    find(name).or_else(|| find(base)).map(str::to_string).unwrap_or_else(|| base.replace('_', " "))
}

/// A template as readable text.
pub fn readable(template: &str, lang: Lang) -> Rich {
    let mut spans: Vec<Span> = Vec::new();
    let mut text = String::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        text.push_str(&rest[..i]);
        let tail = &rest[i..];
        if tail.starts_with("{{") || tail.starts_with("}}") {
            text.push_str(&tail[..1]);
            rest = &tail[2..];
        } else if let (true, Some(end)) = (tail.starts_with('{'), tail.find('}')) {
            if !text.is_empty() {
                spans.push(Span::Text(std::mem::take(&mut text)));
            }
            spans.push(Span::Var(placeholder_label(&tail[1..end], lang)));
            rest = &tail[end + 1..];
        } else {
            text.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    text.push_str(rest);
    if !text.is_empty() {
        spans.push(Span::Text(text));
    }
    Rich(spans)
}

/// Code as people copy it without a log: the placeholder-free fallback when there is one,
/// otherwise the code with `<label>` for each value.
pub fn readable_code(code: &str, fallback: Option<&str>, lang: Lang) -> String {
    let has_placeholder = crate::template::placeholders(code).is_ok_and(|p| !p.is_empty());
    let src = match (has_placeholder, fallback) {
        (true, Some(f)) => f,
        _ => code,
    };
    crate::render(src, |name| {
        Some(match name {
            // A variable name, not a value: show the common spelling.
            "alloc_conf_var" => "PYTORCH_CUDA_ALLOC_CONF".to_string(),
            _ => format!("<{}>", placeholder_label(name, lang)),
        })
    })
    .unwrap_or_else(|_| src.to_string())
}

/// A web link for a reference: URLs as they are, `owner/repo:path@ref` as a GitHub link.
pub fn href(url: &str) -> Option<String> {
    let u = url.trim();
    if u.starts_with("https://") || u.starts_with("http://") {
        return Some(u.to_string());
    }
    let (repo, rest) = u.split_once(':')?;
    let ok_repo = repo.split('/').count() == 2 && repo.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if !ok_repo || rest.contains(char::is_whitespace) || rest.is_empty() {
        return None;
    }
    let (path, git_ref) = rest.rsplit_once('@').unwrap_or((rest, "HEAD"));
    Some(format!("https://github.com/{repo}/blob/{git_ref}/{path}"))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefView {
    pub key: String,
    pub title: String,
    pub url: String,
    pub href: Option<String>,
    pub unverified: bool,
}

/// A behaviour a fix or dead end relies on, with its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BehaviourView {
    pub key: String,
    pub project: String,
    /// English (maintainers' record); shown in English output only.
    pub claim: String,
    pub source: String,
    pub href: Option<String>,
    pub lines: Option<String>,
    pub verified: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingView {
    pub name: String,
    pub kind: String,
    pub defined_in: String,
    pub href: Option<String>,
    pub versions: String,
    /// `verified`, `unverified` or `absent` (checked: it does not exist).
    pub status: String,
}

/// A cause, fix or dead end.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ItemView {
    pub id: String,
    /// Ids of the near-duplicate variants folded into this item.
    pub variants: Vec<String>,
    pub when: Vec<String>,
    /// A fix's category, or the category of the action a dead end rejects; `None` for a cause.
    pub category: Option<FixCategory>,
    /// Cause text, fix title, or dead end action.
    pub text: Rich,
    /// Fix detail, or why a dead end does not help.
    pub detail: Option<Rich>,
    pub code: Option<String>,
    pub code_lang: Option<String>,
    pub code_fragment: bool,
    pub versions: Option<String>,
    pub refs: Vec<RefView>,
    pub settings: Vec<SettingView>,
    /// The behaviours a fix or dead end relies on.
    pub relies_on: Vec<BehaviourView>,
    /// Whether what it relies on was read in source (see [`Entry::reliance_verified`]).
    pub verified: bool,
    /// Verified, general advice or unverified (see [`crate::Reliance`]).
    pub reliance: crate::Reliance,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EntryView {
    pub causes: Vec<ItemView>,
    pub fixes: Vec<ItemView>,
    pub dead_ends: Vec<ItemView>,
    pub references: Vec<RefView>,
    pub settings: Vec<SettingView>,
    /// The symbols the texts use (`N`), with what a diagnosis puts there.
    pub legend: Vec<(String, String)>,
}

fn ref_view(e: &Entry, key: &str) -> Option<RefView> {
    e.references.iter().find(|r| r.key == key).map(|r| RefView {
        key: r.key.clone(),
        title: r.title.clone(),
        url: r.url.clone(),
        href: href(&r.url),
        unverified: r.status.as_deref() == Some("unverified"),
    })
}

fn setting_view(i: &Identifier, lang: Lang) -> SettingView {
    SettingView {
        name: i.name.clone(),
        kind: i.kind.clone(),
        defined_in: i.defined_in.clone(),
        href: href(&i.defined_in),
        versions: crate::versions::in_lang(Some(&i.versions), None, lang).unwrap_or_else(|| "-".to_string()),
        status: i.status.clone(),
    }
}

fn behaviour_views(e: &Entry, keys: &[String]) -> Vec<BehaviourView> {
    keys.iter()
        .filter_map(|k| e.behaviour(k))
        .map(|b| BehaviourView {
            key: b.key.clone(),
            project: b.project.clone(),
            claim: b.claim.clone(),
            source: b.source.clone(),
            href: href(&b.source).map(|h| match &b.lines {
                // A line anchor on a GitHub file link, not on a web page.
                Some(l) if !b.source.starts_with("http") => format!("{h}#L{}", l.replace('-', "-L")),
                _ => h,
            }),
            lines: b.lines.clone(),
            verified: b.status == "verified",
        })
        .collect()
}

/// Settings named by the given code and prose, in the order of the entry's records.
fn settings_named(e: &Entry, code: &[(&str, Option<&str>)], prose: &[&Text], lang: Lang) -> Vec<SettingView> {
    let mut names = std::collections::BTreeSet::new();
    for (c, lang) in code {
        names.extend(in_code(c, *lang).into_iter().map(|t| t.name));
    }
    for t in prose {
        names.extend(in_prose(&t.en).into_iter().map(|t| t.name));
    }
    e.identifiers.iter().filter(|i| names.contains(&i.name)).map(|i| setting_view(i, lang)).collect()
}

/// Indices of items that are shown, each with the ids folded into it.
fn fold_variants<'a>(items: impl Iterator<Item = (&'a str, &'a [String])>) -> Vec<(usize, Vec<String>)> {
    let items: Vec<(&str, &[String])> = items.collect();
    let mut shown: Vec<(usize, Vec<String>)> = Vec::new();
    for (i, (id, when)) in items.iter().enumerate() {
        let host = shown.iter_mut().find(|(j, _)| {
            let (hid, hwhen) = items[*j];
            id.starts_with(&format!("{hid}-")) && when.iter().all(|w| hwhen.contains(w))
        });
        match host {
            Some((_, v)) => v.push(id.to_string()),
            None => shown.push((i, Vec::new())),
        }
    }
    shown
}

/// The entry as people read it without a log.
pub fn view(e: &Entry, lang: Lang) -> EntryView {
    let refs = |keys: &[String]| keys.iter().filter_map(|k| ref_view(e, k)).collect::<Vec<_>>();
    let causes = fold_variants(e.causes.iter().map(|c| (c.id.as_str(), c.when.as_slice())))
        .into_iter()
        .map(|(i, variants)| {
            let c = &e.causes[i];
            ItemView {
                id: c.id.clone(),
                variants,
                when: c.when.clone(),
                text: readable(c.text.get(lang), lang),
                refs: refs(&c.refs),
                ..Default::default()
            }
        })
        .collect();
    let fixes = fold_variants(e.fixes.iter().map(|f| (f.id.as_str(), f.when.as_slice())))
        .into_iter()
        .map(|(i, variants)| {
            let f = &e.fixes[i];
            let lang_code = f.code_lang.as_deref();
            let code: Vec<(&str, Option<&str>)> =
                [&f.code, &f.code_fallback].into_iter().flatten().map(|c| (c.as_str(), lang_code)).collect();
            ItemView {
                id: f.id.clone(),
                variants,
                when: f.when.clone(),
                category: Some(f.category),
                text: readable(f.title.get(lang), lang),
                detail: f.detail.as_ref().map(|d| readable(d.get(lang), lang)),
                code: f.code.as_deref().or(f.code_fallback.as_deref()).map(|c| readable_code(c, f.code_fallback.as_deref(), lang)),
                code_lang: f.code_lang.clone(),
                code_fragment: f.code_fragment,
                versions: f.versions_in(lang),
                refs: refs(&f.refs),
                settings: settings_named(e, &code, &[&f.title], lang),
                relies_on: behaviour_views(e, &f.relies_on),
                verified: e.fix_verified(f),
                reliance: e.fix_reliance(f),
            }
        })
        .collect();
    let dead_ends = fold_variants(e.dead_ends.iter().map(|d| (d.id.as_str(), d.when.as_slice())))
        .into_iter()
        .map(|(i, variants)| {
            let d = &e.dead_ends[i];
            ItemView {
                id: d.id.clone(),
                variants,
                when: d.when.clone(),
                category: Some(d.category),
                text: readable(d.action.get(lang), lang),
                detail: Some(readable(d.why.get(lang), lang)),
                refs: refs(&d.refs),
                settings: settings_named(e, &[], &[&d.action], lang),
                relies_on: behaviour_views(e, &d.relies_on),
                verified: e.dead_end_verified(d),
                reliance: e.dead_end_reliance(d),
                ..Default::default()
            }
        })
        .collect();
    let mut legend: Vec<(String, String)> = Vec::new();
    let mut templates: Vec<&str> = Vec::new();
    for c in &e.causes {
        templates.push(c.text.get(lang));
    }
    for f in &e.fixes {
        templates.push(f.title.get(lang));
        templates.extend(f.detail.as_ref().map(|d| d.get(lang)));
        templates.extend([&f.code, &f.code_fallback].into_iter().flatten().map(String::as_str));
    }
    for d in &e.dead_ends {
        templates.push(d.action.get(lang));
        templates.push(d.why.get(lang));
    }
    for t in templates {
        for name in crate::template::placeholders(t).unwrap_or_default() {
            let label = placeholder_label(&name, lang);
            let base = name.strip_suffix("_h").unwrap_or(&name);
            let zh = LEGEND_ZH.iter().find(|(p, _)| *p == name || *p == base).map(|(_, d)| d.to_string());
            let en = crate::PLACEHOLDERS.iter().find(|(p, _)| *p == name || *p == base).map(|(_, d)| d.to_string());
            let what = if lang == Lang::Zh { zh.or(en) } else { en };
            if let (true, Some(what)) = (is_symbol(&label), what) {
                if !legend.iter().any(|(l, _)| *l == label) {
                    legend.push((label, what));
                }
            }
        }
    }
    EntryView {
        legend,
        causes,
        fixes,
        dead_ends,
        references: e.references.iter().filter_map(|r| ref_view(e, &r.key)).collect(),
        settings: e.identifiers.iter().map(|i| setting_view(i, lang)).collect(),
    }
}

/// `(unverified)` / `(does not exist)` after a setting, empty when verified.
pub fn status_note(status: &str, lang: Lang) -> &'static str {
    match (status, lang) {
        ("unverified", Lang::En) => " (unverified)",
        ("unverified", Lang::Zh) => "（未核实）",
        ("absent", Lang::En) => " (does not exist)",
        ("absent", Lang::Zh) => "（不存在）",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn templates_read_as_text() {
        let r = readable("The kernel {kernel} needs {used_h} ({over_pct}% over) {{x}}", Lang::En);
        assert_eq!(r.markdown(), "The kernel *kernel name* needs *N* (*P*% over) {x}");
        assert_eq!(readable("{some_new_value_h}", Lang::En).plain(), "some new value");
        assert_eq!(readable_code("--x={vmem_limit_bytes}", None, Lang::En), "--x=<V>");
        assert_eq!(readable_code("--x={vmem_limit_bytes}", Some("--x=..."), Lang::En), "--x=...");
    }
    #[test]
    fn links() {
        assert_eq!(href("pytorch/pytorch:c10/a.cpp@abc").as_deref(), Some("https://github.com/pytorch/pytorch/blob/abc/c10/a.cpp"));
        assert_eq!(href("owner/repo:path (v1.0-v1.3)"), None);
        assert_eq!(href("javascript:alert(1)"), None);
    }
}
