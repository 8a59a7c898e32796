//! Server-rendered pages. Every string from a user, a log or the knowledge base
//! goes through maud, which HTML-escapes it; nothing here builds HTML by hand.

pub mod diagnosis;
pub mod kb;
pub mod team;
pub mod tools;

use crate::store::FixOutcomes;
use axum::{
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
};
use maud::{html, Markup, DOCTYPE};
use oomdoc_kb::Lang;

/// Our pages load only our own script and stylesheet.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                       connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// An HTML page response.
pub struct Page(pub Markup);

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        let mut r = self.0.into_string().into_response();
        r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
        r
    }
}

pub fn lang_of_query(query: Option<&str>) -> Lang {
    query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|kv| kv.strip_prefix("lang="))
        .find_map(Lang::parse)
        .unwrap_or_default()
}

pub fn lang_code(lang: Lang) -> &'static str {
    match lang {
        Lang::En => "en",
        Lang::Zh => "zh",
    }
}

/// Interface strings in both languages (knowledge-base text carries its own).
pub fn t(lang: Lang, key: &'static str) -> &'static str {
    let (en, zh) = match key {
        "diagnose" => ("Diagnose", "诊断"),
        "kb" => ("Knowledge base", "知识库"),
        "memory" => ("Memory", "内存"),
        "plan" => ("Plan", "规划"),
        "summary" => ("What it means", "含义"),
        "causes" => ("Causes", "原因"),
        "fixes" => ("Fixes", "修复方法"),
        "dead_ends" => ("Dead ends", "无效的做法"),
        "why" => ("Why not", "原因"),
        "references" => ("References", "参考资料"),
        "examples" => ("Real messages", "真实报错示例"),
        "versions" => ("Versions", "版本"),
        "code" => ("Vendor code", "厂商错误码"),
        "platform" => ("Platform", "平台"),
        "phase" => ("Phase", "阶段"),
        "memory_space" => ("Memory space", "内存空间"),
        "severity" => ("Severity", "严重程度"),
        "when" => ("Applies when", "适用条件"),
        "unverified" => ("unverified", "未核实"),
        "fragment" => ("Fragment: paste into your own code.", "代码片段：需放进你自己的代码中。"),
        "settings" => ("Settings", "涉及的设置"),
        "settings_defined" => ("Settings and where they are defined", "设置及其定义位置"),
        "setting" => ("Setting", "设置"),
        "kind" => ("Kind", "类型"),
        "defined_in" => ("Defined in", "定义位置"),
        "read_without_log" => ("Read without a log; a diagnosis puts the log's numbers in place of:", "未结合日志阅读；诊断时会用日志中的数值替换："),
        "also_as" => ("Also as", "其他格式"),
        "measured" => ("Measured outcomes", "实测效果"),
        "public_threads" => ("What fixed it in public threads", "公开讨论中是什么解决了它"),
        "public_threads_note" => (
            "Resolved public issues and discussions whose error oomdoc reads as this entry, by the kind of fix the thread says worked (tests/corpus/resolutions).",
            "错误被 oomdoc 识别为本条目、且讨论中说明了解决方法的公开 issue 与讨论，按起作用的修复类别统计（tests/corpus/resolutions）。"
        ),
        "threads" => ("threads", "个讨论"),
        "this_kind_fixed" => ("Fixes of this kind fixed", "此类修复解决了"),
        "no_reports" => ("No reports yet.", "暂无反馈。"),
        "worked" => ("This fix worked", "此方法有效"),
        "did_not_work" => ("It did not work", "此方法无效"),
        "optional_details" => ("Add platform, hardware, version (optional)", "补充平台、硬件、版本（可选）"),
        "thanks" => ("Thanks: your report is recorded.", "谢谢，已记录你的反馈。"),
        "search" => ("Search", "搜索"),
        "any" => ("any", "全部"),
        "filter" => ("Filter", "筛选"),
        "entries" => ("entries", "条"),
        "no_entries" => ("No entry matches.", "没有匹配的条目。"),
        "reports" => ("reports", "条反馈"),
        "report" => ("report", "条反馈"),
        "rate_needs" => ("a rate is shown from 5 reports", "满 5 条反馈后显示成功率"),
        "worked_rate" => ("worked", "有效"),
        "by_hardware" => ("By platform and hardware", "按平台和硬件"),
        "hardware" => ("Hardware", "硬件"),
        "culprit" => ("Culprit", "出错位置"),
        "findings" => ("findings", "个问题"),
        "finding" => ("finding", "个问题"),
        "no_findings" => (
            "No memory failure found in this log. If it does contain one, the knowledge base may not know its message yet.",
            "此日志中没有发现内存故障。如果其中确有故障，可能是知识库尚未收录该报错。",
        ),
        "another_log" => ("Diagnose another log", "诊断另一个日志"),
        "kept_log" => ("You chose to keep this log on the server.", "你选择了将此日志保存在服务器上。"),
        "left_out_before" => ("The other", "其余"),
        "left_out_after" => ("are counted above but not shown: this page shows the first", "已在上方计数但未显示：本页只显示前"),
        "all_as_json" => ("All of them, as JSON:", "全部问题（JSON）："),
        "all_by_api" => ("All of them, as JSON, from the API:", "通过 API 以 JSON 获取全部问题："),
        "kept_link" => (
            "This diagnosis has its own address; anyone you give it to can read it:",
            "此诊断有自己的地址，拿到地址的人都能查看：",
        ),
        _ => (key, key),
    };
    match lang {
        Lang::En => en,
        Lang::Zh => zh,
    }
}

/// Percent-encode one path segment or query value.
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn entry_href(id: &str, lang: Lang) -> String {
    match lang {
        Lang::En => format!("/kb/{}", encode_component(id)),
        Lang::Zh => format!("/kb/{}?lang=zh", encode_component(id)),
    }
}

/// Only web URLs become links; source paths (`owner/repo:path`) and anything
/// else (`javascript:` included) stay text.
pub fn reference(title: &str, url: &str) -> Markup {
    let is_web = url.starts_with("https://") || url.starts_with("http://");
    html! {
        @if is_web {
            a href=(url) rel="noopener noreferrer" { (title) }
        } @else if title == url {
            code { (url) }
        } @else {
            (title) " " code { (url) }
        }
    }
}

pub fn layout(title: &str, lang: Lang, body: Markup) -> Markup {
    let q = if lang == Lang::Zh { "?lang=zh" } else { "" };
    html! {
        (DOCTYPE)
        html lang=(if lang == Lang::Zh { "zh-CN" } else { "en" }) {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · oomdoc" }
                link rel="stylesheet" href="/static/oomdoc.css";
                script src="/static/oomdoc.js" defer {}
            }
            body {
                header.top {
                    a.brand href={ "/" (q) } { "oomdoc" }
                    nav {
                        a href={ "/" (q) } { (t(lang, "diagnose")) }
                        a href={ "/kb" (q) } { (t(lang, "kb")) }
                        a href={ "/memory" (q) } { (t(lang, "memory")) }
                        a href={ "/plan" (q) } { (t(lang, "plan")) }
                        a href="/team" { "Team" }
                    }
                }
                main { (body) }
                footer { "oomdoc " (env!("CARGO_PKG_VERSION")) " · " a href="/api/v1/openapi.json" { "API" } }
            }
        }
    }
}

pub fn error_page(status: StatusCode, message: &str, request_id: &str, lang: Lang) -> Markup {
    let title = format!("{} {}", status.as_u16(), status.canonical_reason().unwrap_or("Error"));
    layout(
        &title,
        lang,
        html! {
            h1 { (title) }
            p.error-message { (message) }
            p.muted { "Request id: " code.request-id { (request_id) } }
        },
    )
}

/// Count and, from five reports on, the success rate with its Wilson 95% interval.
pub fn outcome_summary(o: Option<&FixOutcomes>, lang: Lang) -> Markup {
    let pct = |x: f64| format!("{:.0}%", x * 100.0);
    html! {
        @match o {
            None => span.outcome.none { (t(lang, "no_reports")) },
            Some(o) => {
                span.outcome data-reports=(o.total.reports) {
                    (o.total.reports) " " (t(lang, if o.total.reports == 1 { "report" } else { "reports" })) ": "
                    @if let Some(r) = o.total.rate {
                        strong.rate { (t(lang, "worked_rate")) " " (pct(r.estimate)) }
                        " (95% CI " (pct(r.low)) "–" (pct(r.high)) ")"
                    } @else {
                        (o.total.worked) " ✓ · " (o.total.did_not_work) " ✗ (" (t(lang, "rate_needs")) ")"
                    }
                }
                @if o.by_hardware.len() > 1 || o.by_hardware.iter().any(|h| h.hardware.is_some()) {
                    details.by-hardware {
                        summary { (t(lang, "by_hardware")) }
                        table {
                            tr { th { (t(lang, "platform")) } th { (t(lang, "hardware")) } th { (t(lang, "reports")) } th { (t(lang, "worked_rate")) } }
                            @for h in &o.by_hardware {
                                tr {
                                    td { (h.platform.as_deref().unwrap_or("–")) }
                                    td { (h.hardware.as_deref().unwrap_or("–")) }
                                    td { (h.tally.reports) }
                                    td {
                                        @if let Some(r) = h.tally.rate {
                                            (pct(r.estimate)) " (" (pct(r.low)) "–" (pct(r.high)) ")"
                                        } @else { "–" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The worked / did-not-work button pair. A plain form post; `oomdoc.js` turns it
/// into an in-place JSON call when scripts run.
pub fn feedback_form(entry: &str, fix: &str, platform: Option<&str>, lang: Lang) -> Markup {
    html! {
        form.feedback method="post" action="/feedback" {
            (crate::csrf::hidden_field())
            input type="hidden" name="entry" value=(entry);
            input type="hidden" name="fix" value=(fix);
            input type="hidden" name="lang" value=(lang_code(lang));
            details.feedback-details {
                summary { (t(lang, "optional_details")) }
                label { (t(lang, "platform")) " " input name="platform" value=[platform] maxlength="100"; }
                label { (t(lang, "hardware")) " " input name="hardware" placeholder="TPU v5e, H100 80GB…" maxlength="100"; }
                label { (t(lang, "versions")) " " input name="version" placeholder="jax 0.4.38, torch 2.5…" maxlength="100"; }
                label { "Note " input name="note" maxlength="500"; }
            }
            button type="submit" name="outcome" value="worked" class="worked" { (t(lang, "worked")) }
            " "
            button type="submit" name="outcome" value="did-not-work" class="did-not-work" { (t(lang, "did_not_work")) }
        }
    }
}

pub const CSS: &str = include_str!("oomdoc.css");
pub const JS: &str = include_str!("oomdoc.js");
