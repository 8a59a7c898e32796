//! The diagnosis page, rendered from the diagnose report in its JSON contract form
//! (so it shows exactly what `POST /api/v1/diagnose` returns, field for field).

use super::{entry_href, feedback_form, layout, outcome_summary, reference, t};
use crate::store::FixOutcomes;
use maud::{html, Markup};
use oomdoc_kb::Lang;
use serde_json::Value;
use std::collections::BTreeMap;

/// Outcomes per finding id, then per fix id.
pub type OutcomesByEntry = BTreeMap<String, BTreeMap<String, FixOutcomes>>;

fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn items<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

/// A JSON scalar as text (strings unquoted).
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The sizes in the order a person reads them (what was asked, what was there, the
/// whole, then the allocator's split), as the CLI's headline has them; the contract's
/// key is kept as the row's title. Keys this list does not know come last, as they are.
const SIZE_ROWS: [(&str, &str); 9] = [
    ("requested", "requested"),
    ("used", "in use"),
    ("limit", "limit"),
    ("excess", "over by"),
    ("free", "free"),
    ("total", "total"),
    ("allocated", "allocated"),
    ("reserved", "reserved"),
    ("reserved_unallocated", "reserved but unallocated"),
];

fn sizes_table(sizes: &serde_json::Map<String, Value>) -> Markup {
    let known = SIZE_ROWS.iter().filter_map(|(k, label)| sizes.get(*k).map(|v| (*k, label.to_string(), v)));
    let rest = sizes.iter().filter(|(k, _)| !SIZE_ROWS.iter().any(|(r, _)| r == k)).map(|(k, v)| (k.as_str(), k.replace('_', " "), v));
    let rows: Vec<(&str, String, &Value)> = known.chain(rest).collect();
    html! {
        table.sizes {
            @for (k, label, v) in &rows {
                tr {
                    th title=(k) { (label) }
                    @if let Some(n) = v.as_u64() {
                        td.num { (oomdoc_units::format_bytes(n)) }
                        td.num.muted { (n) " B" }
                    } @else {
                        td.num { (scalar(v)) } td {}
                    }
                }
            }
        }
    }
}

/// Allocations listed in the message; columns are the keys present, in the contract's order.
fn allocations_table(allocations: &[Value]) -> Markup {
    const COLUMNS: &[&str] = &["rank", "size", "unpadded_size", "padding", "expansion", "shape", "op_name", "label", "allocation_type", "source"];
    let present: Vec<&str> = COLUMNS.iter().copied().filter(|c| allocations.iter().any(|a| a.get(*c).is_some())).collect();
    let cell = |a: &Value, c: &str| -> String {
        match (c, a.get(c)) {
            ("size" | "unpadded_size" | "padding", Some(Value::Number(n))) => n.as_u64().map(oomdoc_units::format_bytes).unwrap_or_default(),
            (_, Some(v)) => scalar(v),
            (_, None) => String::new(),
        }
    };
    html! {
        table.allocations {
            tr { @for c in &present { th { (c) } } }
            @for a in allocations { tr { @for c in &present { td { (cell(a, c)) } } } }
        }
    }
}

fn reference_item(r: &Value) -> Markup {
    match r {
        Value::String(s) => html! { (reference(s, s)) },
        other => {
            let url = s(other, "url").unwrap_or("");
            html! { (reference(s(other, "title").unwrap_or(url), url)) }
        }
    }
}

pub fn finding(f: &Value, outcomes: Option<&BTreeMap<String, FixOutcomes>>, lang: Lang) -> Markup {
    let id = s(f, "id").unwrap_or("");
    let platform = s(f, "platform");
    html! {
        section.finding data-finding=(id) {
            h2 { (s(f, "title").unwrap_or(id)) }
            @if let Some(h) = s(f, "headline") { p.headline { strong { (h) } } }
            p.meta {
                @if !id.is_empty() { a href=(entry_href(id, lang)) { code { (id) } } }
                @if let Some(c) = s(f, "code") { " · " code { (c) } }
                @for key in ["platform", "phase", "memory_space", "severity", "framework"] {
                    @if let Some(v) = s(f, key) { " · " (v) }
                }
                @if let Some(n) = f.get("occurrences").and_then(Value::as_u64).filter(|n| *n > 1) { " · ×" (n) }
                @if let Some(line) = f.get("line").and_then(Value::as_u64) {
                    " · line " (line)
                    @if let Some(end) = f.get("end_line").and_then(Value::as_u64).filter(|e| *e != line) { "–" (end) }
                }
            }
            @if let Some(excerpt) = s(f, "excerpt") { pre.excerpt { (excerpt) } }
            @if let Some(sizes) = f.get("sizes").and_then(Value::as_object).filter(|m| !m.is_empty()) {
                (sizes_table(sizes))
            }
            @let derived = items(f, "derived");
            @if !derived.is_empty() {
                ul.derived { @for d in derived {
                    li { (s(d, "name").unwrap_or("")) " = " (d.get("bytes").and_then(Value::as_u64).map(oomdoc_units::format_bytes).unwrap_or_default())
                         @if let Some(formula) = s(d, "formula") { " " span.muted { "(" (formula) ")" } } }
                } }
            }
            @if let Some(culprit) = f.get("culprit").and_then(Value::as_object).filter(|m| !m.is_empty()) {
                h3 { (t(lang, "culprit")) }
                table.culprit {
                    @for (k, v) in culprit.iter().filter(|(_, v)| !v.is_array()) { tr { th { (k) } td { code { (scalar(v)) } } } }
                }
                @let allocations = items(&f["culprit"], "allocations");
                @if !allocations.is_empty() {
                    (allocations_table(allocations))
                }
            }
            @if let Some(cause) = s(f, "cause") {
                h3 { (t(lang, "causes")) }
                p.cause { (cause) }
            }
            @let fixes = items(f, "fixes");
            @if !fixes.is_empty() {
                h3 { (t(lang, "fixes")) }
                ol.fixes {
                    @for fix in fixes {
                        @let fix_id = s(fix, "id").unwrap_or("");
                        li.fix data-fix=(fix_id) {
                            strong { (s(fix, "title").unwrap_or(fix_id)) }
                            @if let Some(d) = s(fix, "detail") { p { (d) } }
                            @if let Some(code) = s(fix, "code") { pre { code data-lang=[s(fix, "code_lang")] { (code) } } }
                            @if let Some(v) = s(fix, "versions") { p.versions { (t(lang, "versions")) ": " (v) } }
                            @let refs = items(fix, "references");
                            @if !refs.is_empty() {
                                p.refs { @for (i, r) in refs.iter().enumerate() { @if i > 0 { " · " } (reference_item(r)) } }
                            }
                            @if !id.is_empty() && !fix_id.is_empty() {
                                div.measured {
                                    (outcome_summary(outcomes.and_then(|o| o.get(fix_id)), lang))
                                    (feedback_form(id, fix_id, platform, lang))
                                }
                            }
                        }
                    }
                }
            }
            @let dead_ends = items(f, "dead_ends");
            @if !dead_ends.is_empty() {
                h3 { (t(lang, "dead_ends")) }
                ul.dead-ends {
                    @for d in dead_ends {
                        li { strong { (s(d, "action").unwrap_or("")) } @if let Some(w) = s(d, "why") { " · " (w) } }
                    }
                }
            }
            @let refs = items(f, "references");
            @if !refs.is_empty() {
                h3 { (t(lang, "references")) }
                ul.references { @for r in refs { li { (reference_item(r)) } } }
            }
        }
    }
}

/// Findings shown in full on one page. A log of thousands of distinct failures gives
/// thousands of findings (the engine keeps up to 5,000): shown whole that was a 67 MB page
/// (reliability report S23). The rest are counted in the summary and named in a note with
/// where to get them all.
pub const PAGE_FINDINGS: usize = 50;

/// The address of a kept diagnosis's page, and of its JSON.
pub fn kept_href(link: &str, lang: Lang) -> String {
    format!("/diagnoses/{link}{}", if lang == Lang::Zh { "?lang=zh" } else { "" })
}

/// `kept`: the key of the page's own address, when the log was kept (the user ticked the box).
pub fn report_page(report: &Value, outcomes: &OutcomesByEntry, kept: Option<&str>, lang: Lang) -> Markup {
    let findings = items(report, "findings");
    let shown = &findings[..findings.len().min(PAGE_FINDINGS)];
    let left_out = findings.len() - shown.len();
    // Per entry: how many findings, in the order they first appear.
    let mut kinds: Vec<(&str, &str, usize)> = Vec::new();
    if left_out > 0 {
        for f in findings {
            let id = s(f, "id").unwrap_or("");
            match kinds.iter_mut().find(|k| k.0 == id) {
                Some(k) => k.2 += 1,
                None => kinds.push((id, s(f, "title").unwrap_or(id), 1)),
            }
        }
    }
    let count = |n: usize| format!("{n} {}", t(lang, if n == 1 { "finding" } else { "findings" }));
    layout(
        t(lang, "diagnose"),
        lang,
        html! {
            h1 { (t(lang, "diagnose")) }
            @if findings.is_empty() {
                p.no-findings { (t(lang, "no_findings")) }
            } @else {
                p.muted { (count(findings.len())) }
                @if left_out > 0 {
                    table.summary {
                        @for (id, title, n) in &kinds {
                            tr { td { a href=(entry_href(id, lang)) { code { (id) } } } td { (title) } td.num { "×" (n) } }
                        }
                    }
                }
                @for f in shown {
                    (finding(f, s(f, "id").and_then(|id| outcomes.get(id)), lang))
                }
                @if left_out > 0 {
                    p.left-out {
                        (t(lang, "left_out_before")) " " (count(left_out)) " " (t(lang, "left_out_after")) " " (PAGE_FINDINGS) ". "
                        @if let Some(link) = kept {
                            (t(lang, "all_as_json")) " " a href=(format!("/diagnoses/{link}.json")) { (format!("/diagnoses/{link}.json")) } "."
                        } @else {
                            (t(lang, "all_by_api")) " " code { "curl --data-binary @train.log …/api/v1/diagnose" } "."
                        }
                    }
                }
            }
            @if let Some(link) = kept {
                @let href = kept_href(link, lang);
                p.kept-link {
                    (t(lang, "kept_log")) " " (t(lang, "kept_link")) " "
                    a href=(href) { (href) }
                }
            }
            p { a href=(if lang == Lang::Zh { "/?lang=zh" } else { "/" }) { (t(lang, "another_log")) } }
        },
    )
}

pub fn form_page(lang: Lang) -> Markup {
    layout(
        t(lang, "diagnose"),
        lang,
        html! {
            h1 { "Why did my accelerator run out of memory?" }
            form id="diagnose-form" method="post" action="/" enctype="multipart/form-data" {
                (crate::csrf::hidden_field())
                label for="log" { "Paste a log" }
                textarea id="log" name="log" rows="16" spellcheck="false" placeholder="RESOURCE_EXHAUSTED: … / torch.OutOfMemoryError: CUDA out of memory …" {}
                p { label { "or upload a file " input id="file" type="file" name="file"; } }
                p {
                    label {
                        input type="checkbox" name="store_log" value="1";
                        " Keep this log on the server to help improve oomdoc, and give this diagnosis its own link (off by default; logs are otherwise never stored)"
                    }
                }
                @if lang == Lang::Zh { input type="hidden" name="lang" value="zh"; }
                button id="diagnose-submit" type="submit" { (t(lang, "diagnose")) }
            }
        },
    )
}
