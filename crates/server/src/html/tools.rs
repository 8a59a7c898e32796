//! Forms of `/memory` and `/plan`, and the plan result.

use super::{layout, t};
use maud::{html, Markup};
use oomdoc_kb::Lang;

pub fn memory_form(lang: Lang, max_bytes: usize) -> Markup {
    layout(
        t(lang, "memory"),
        lang,
        html! {
            h1 { "Memory viewer for XLA dumps" }
            p { "Upload the files of an XLA dump (" code { "--xla_dump_to" } "), or one "
                code { ".zip" } " / " code { ".tar.gz" } " of the dump directory, up to "
                (crate::error::human_bytes(max_bytes)) ". The report is the same as "
                code { "oomdoc memory --format html" } "." }
            form id="memory-form" method="post" action="/memory" enctype="multipart/form-data" {
                input type="file" name="dump" multiple;
                " "
                button type="submit" { "Show memory" }
            }
        },
    )
}

pub fn plan_form(lang: Lang, kind: &str, spec: &str, chip: &str, error: Option<&str>) -> Markup {
    layout(
        t(lang, "plan"),
        lang,
        html! {
            h1 { "Plan on-chip memory of a kernel" }
            @if let Some(e) = error { p.error-message { (e) } }
            p { "Paste a Pallas TPU spec or a Triton config; the plan is the same as " code { "oomdoc plan --format json" } "." }
            form id="plan-form" method="post" action="/plan" {
                label { "Kind " select name="kind" {
                    option value="pallas" selected[kind != "triton"] { "Pallas (TPU)" }
                    option value="triton" selected[kind == "triton"] { "Triton (GPU)" }
                } }
                " "
                label { "Chip / GPU " input name="chip" value=(chip) placeholder="v5e, H100…" maxlength="40"; }
                textarea name="spec" rows="14" spellcheck="false" { (spec) }
                button type="submit" { "Plan" }
            }
        },
    )
}

pub fn plan_result(lang: Lang, plan: &serde_json::Value) -> Markup {
    let pretty = serde_json::to_string_pretty(plan).unwrap_or_default();
    layout(
        t(lang, "plan"),
        lang,
        html! {
            h1 { "Plan" }
            pre.plan { (pretty) }
            p { a href="/plan" { "Plan another kernel" } }
        },
    )
}
