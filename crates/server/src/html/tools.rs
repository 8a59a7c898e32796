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
                textarea name="spec" rows="16" spellcheck="false" { (input.map_or(EXAMPLE_PALLAS_SPEC, |i| i.spec.as_str())) }
                @if lang == Lang::Zh { input type="hidden" name="lang" value="zh"; }
                button type="submit" { "Plan" }
            }
        },
    )
}

/// The form is never blank, and the format shows itself.
const EXAMPLE_PALLAS_SPEC: &str = oomdoc_plan::pallas::EXAMPLE_SPEC;

fn bytes(v: &serde_json::Value) -> String {
    v.as_u64().map(oomdoc_units::format_bytes).unwrap_or_default()
}

/// The plan as `oomdoc plan` prints it: fits or not, the table, the notes (with the fix),
/// then the JSON for those who want it.
pub fn plan_result(lang: Lang, plan: &serde_json::Value) -> Markup {
    let pretty = serde_json::to_string_pretty(plan).unwrap_or_default();
    let empty = Vec::new();
    let arr = |k: &str| plan.get(k).and_then(|v| v.as_array()).unwrap_or(&empty);
    let is_pallas = plan.get("items").is_some();
    layout(
        t(lang, "plan"),
        lang,
        html! {
            h1 { "Plan" }
            @if is_pallas {
                @let fits = plan["fits"].as_bool().unwrap_or(false);
                p.verdict.(if fits { "fits" } else { "does-not-fit" }) {
                    strong { (if fits { "Fits" } else { "Does not fit" }) } ": "
                    (bytes(&plan["total_bytes"])) " of VMEM against " (bytes(&plan["limit_bytes"]))
                    " (" (plan["limit_source"].as_str().unwrap_or("")) ") on " (plan["target"].as_str().unwrap_or(""))
                }
                table.plan {
                    tr { th { "operand" } th { "kind" } th { "block" } th { "dtype" } th { "space" } th { "per buffer" } th { "buffers" } th { "bytes" } }
                    @for it in arr("items") {
                        tr {
                            td { (it["name"].as_str().unwrap_or("")) }
                            td { (it["kind"].as_str().unwrap_or("")) }
                            td { (it["block"].as_array().map(|b| b.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("×")).unwrap_or_default()) }
                            td { (it["dtype"].as_str().unwrap_or("")) }
                            td { (it["space"].as_str().unwrap_or("")) }
                            td.num { (bytes(&it["bytes_per_buffer"])) }
                            td.num { (it["buffers"].as_u64().unwrap_or(0)) }
                            td.num { (bytes(&it["bytes"])) }
                        }
                    }
                    tr { th colspan="7" { "total VMEM" } th.num { (bytes(&plan["total_bytes"])) } }
                }
                @if let Some(s) = plan["suggested_vmem_limit_bytes"].as_u64() {
                    p.fix { "Fix: " code { "compiler_params=pltpu.CompilerParams(vmem_limit_bytes=" (s) ")" } " (" (oomdoc_units::format_bytes(s)) ")" }
                }
                @if !arr("alternatives").is_empty() {
                    h2 { "Alternatives" }
                    ul { @for a in arr("alternatives") {
                        li { (a["change"].as_str().unwrap_or("")) ": " (bytes(&a["total_bytes"])) ", " (if a["fits"].as_bool().unwrap_or(false) { "fits" } else { "does not fit" }) }
                    } }
                }
                h2 { "Notes" }
                ul.notes { @for n in arr("notes") { li { (n.as_str().unwrap_or("")) } } }
            } @else {
                @let fitting = arr("fitting");
                @let dropped = arr("dropped");
                p.verdict.(if fitting.is_empty() { "does-not-fit" } else { "fits" }) {
                    strong { (fitting.len()) " of " (fitting.len() + dropped.len()) " configs fit" } " "
                    (plan["arch"].as_str().unwrap_or("")) " (limit " (bytes(&plan["limit_bytes"])) " of shared memory per block)"
                }
                table.plan {
                    tr { th { "BLOCK_M" } th { "BLOCK_N" } th { "BLOCK_K" } th { "num_stages" } th { "num_warps" } th { "shared memory" } th { "verdict" } }
                    @for v in fitting.iter().chain(dropped.iter()) {
                        @let c = &v["config"];
                        tr {
                            td.num { (c["BLOCK_M"]) } td.num { (c["BLOCK_N"]) } td.num { (c["BLOCK_K"]) }
                            td.num { (c["num_stages"]) } td.num { (c["num_warps"]) }
                            td.num { (bytes(&v["shared_bytes"])) (if v["exact"].as_bool().unwrap_or(true) { "" } else { " (upper bound)" }) }
                            td { @if v["fits"].as_bool().unwrap_or(false) { "fits" } @else { (v["reason"].as_str().unwrap_or("does not fit")) } }
                        }
                    }
                }
            }
            details { summary { "JSON (as " code { "--format json" } ")" } pre.plan { (pretty) } }
            p { a href="/plan" { "Plan another kernel" } }
        },
    )
}
