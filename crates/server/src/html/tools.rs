//! Forms of `/memory` and `/plan`, and the plan result.

use super::{layout, t};
use maud::{html, Markup};
use crate::engines::PlanInput;
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
                (crate::csrf::hidden_field())
                input type="file" name="dump" multiple;
                " "
                button type="submit" { "Show memory" }
            }
        },
    )
}

/// The plan form, refilled with `input` after an error.
pub fn plan_form(lang: Lang, input: Option<&PlanInput>, error: Option<&str>) -> Markup {
    let kind = input.map_or("pallas", |i| i.kind.as_str());
    let field = |f: fn(&PlanInput) -> Option<&str>| input.and_then(f).unwrap_or("").to_string();
    layout(
        t(lang, "plan"),
        lang,
        html! {
            h1 { "Plan on-chip memory of a kernel" }
            @if let Some(e) = error { p.error-message { (e) } }
            p { "Paste a Pallas TPU spec (as for " code { "oomdoc plan pallas SPEC" } ") or Triton autotune configs (as for "
                code { "oomdoc plan triton --arch ARCH --configs FILE" } "); the plan is the same as their " code { "--format json" } "." }
            form id="plan-form" method="post" action="/plan" {
                (crate::csrf::hidden_field())
                p {
                    label { "Kind " select name="kind" {
                        option value="pallas" selected[kind != "triton"] { "Pallas (TPU spec)" }
                        option value="triton" selected[kind == "triton"] { "Triton (GPU configs)" }
                    } }
                    " "
                    label { "Chip / GPU arch " input name="chip" value=(field(|i| i.chip.as_deref())) placeholder="v5e / sm_90" maxlength="40"; }
                    " "
                    label { "Triton dtype " input name="dtype" value=(field(|i| i.dtype.as_deref())) placeholder="fp16" maxlength="20"; }
                }
                textarea name="spec" rows="16" spellcheck="false" { (field(|i| Some(i.spec.as_str()))) }
                @if lang == Lang::Zh { input type="hidden" name="lang" value="zh"; }
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
