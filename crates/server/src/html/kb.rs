//! `/kb` and `/kb/{id}`.

use super::{encode_component, entry_href, feedback_form, layout, outcome_summary, reference, t};
use crate::{db::FixOutcomes, kb_query::{wire_name, KbFilter, PHASES, PLATFORMS}};
use maud::{html, Markup};
use oomdoc_kb::{Entry, Lang, MEMORY_SPACES};
use std::collections::BTreeMap;

pub fn list_page(filter: &KbFilter, entries: &[&Entry]) -> Markup {
    let lang = filter.lang();
    let select = |name: &str, options: &[&str], current: Option<&str>| {
        html! {
            select name=(name) {
                option value="" { (t(lang, "any")) }
                @for o in options {
                    option value=(o) selected[current == Some(*o)] { (o) }
                }
            }
        }
    };
    layout(
        t(lang, "kb"),
        lang,
        html! {
            h1 { (t(lang, "kb")) }
            form.kb-filter method="get" action="/kb" {
                input type="search" name="q" value=[filter.q.as_deref()] placeholder=(t(lang, "search")) aria-label=(t(lang, "search"));
                label { (t(lang, "platform")) " " (select("platform", PLATFORMS, filter.platform.as_deref())) }
                label { (t(lang, "memory_space")) " " (select("memory_space", MEMORY_SPACES, filter.memory_space.as_deref())) }
                label { (t(lang, "phase")) " " (select("phase", PHASES, filter.phase.as_deref())) }
                @if lang == Lang::Zh { input type="hidden" name="lang" value="zh"; }
                button type="submit" { (t(lang, "filter")) }
            }
            p.muted { (entries.len()) " " (t(lang, "entries")) }
            @if entries.is_empty() {
                p { (t(lang, "no_entries")) }
            } @else {
                table.kb-list {
                    tr {
                        th { "id" } th { (t(lang, "code")) } th { "" }
                        th { (t(lang, "platform")) } th { (t(lang, "phase")) } th { (t(lang, "memory_space")) }
                    }
                    @for e in entries {
                        tr {
                            td { a href=(entry_href(&e.id, lang)) { code { (e.id) } } }
                            td { (e.code.as_deref().unwrap_or("")) }
                            td { (e.title.get(lang)) }
                            td { (wire_name(&e.platform)) }
                            td { (wire_name(&e.phase)) }
                            td { (e.memory_space.as_deref().unwrap_or("")) }
                        }
                    }
                }
            }
        },
    )
}

fn conditions(when: &[String], lang: Lang) -> Markup {
    html! {
        @if !when.is_empty() {
            p.when { (t(lang, "when")) ": " @for w in when { code.cond { (w) } " " } }
        }
    }
}

fn ref_links(refs: &[String]) -> Markup {
    html! {
        @if !refs.is_empty() {
            span.refs { @for r in refs { a href={ "#ref-" (encode_component(r)) } { "[" (r) "]" } " " } }
        }
    }
}

pub fn entry_page(e: &Entry, lang: Lang, outcomes: &BTreeMap<String, FixOutcomes>, thanks_for: Option<&str>) -> Markup {
    let id = encode_component(&e.id);
    let platform = wire_name(&e.platform);
    layout(
        e.title.get(lang),
        lang,
        html! {
            article.entry data-entry=(e.id) {
                h1 { (e.title.get(lang)) }
                p.alt-formats {
                    (t(lang, "also_as")) " "
                    a href={ "/kb/" (id) ".json" } { "JSON" } " · "
                    a href={ "/kb/" (id) ".md" @if lang == Lang::Zh { "?lang=zh" } } { "Markdown" } " · "
                    @if lang == Lang::Zh { a href={ "/kb/" (id) } hreflang="en" { "English" } }
                    @else { a href={ "/kb/" (id) "?lang=zh" } hreflang="zh" { "中文" } }
                }
                dl.facts {
                    dt { "id" } dd { code { (e.id) } }
                    @if let Some(c) = &e.code {
                        dt { (t(lang, "code")) } dd { code { (c) } @if let Some(n) = &e.code_name { " " code { (n) } } }
                    }
                    dt { (t(lang, "platform")) }
                    dd { (platform) @for a in &e.also_platforms { ", " (wire_name(a)) } }
                    dt { (t(lang, "phase")) } dd { (wire_name(&e.phase)) }
                    @if let Some(m) = &e.memory_space { dt { (t(lang, "memory_space")) } dd { (m) } }
                    dt { (t(lang, "severity")) } dd { (wire_name(&e.severity)) }
                    @if let Some(v) = &e.versions { dt { (t(lang, "versions")) } dd { (v) } }
                }
                section {
                    h2 { (t(lang, "summary")) }
                    p { (e.summary.get(lang)) }
                }
                @if !e.causes.is_empty() {
                    section.causes {
                        h2 { (t(lang, "causes")) }
                        ol { @for c in &e.causes {
                            li id={ "cause-" (encode_component(&c.id)) } { (c.text.get(lang)) " " (ref_links(&c.refs)) (conditions(&c.when, lang)) }
                        } }
                    }
                }
                @if !e.fixes.is_empty() {
                    section.fixes {
                        h2 { (t(lang, "fixes")) }
                        @for f in &e.fixes {
                            div.fix id={ "fix-" (encode_component(&f.id)) } data-fix=(f.id) {
                                h3 { (f.title.get(lang)) }
                                (conditions(&f.when, lang))
                                @if let Some(d) = &f.detail { p { (d.get(lang)) } }
                                @if let Some(code) = f.code.as_ref().or(f.code_fallback.as_ref()) {
                                    pre { code data-lang=[f.code_lang.as_deref()] { (code) } }
                                }
                                @if let Some(v) = &f.versions { p.versions { (t(lang, "versions")) ": " (v) } }
                                p { (ref_links(&f.refs)) }
                                div.measured {
                                    h4 { (t(lang, "measured")) }
                                    (outcome_summary(outcomes.get(&f.id), lang))
                                    @if thanks_for == Some(f.id.as_str()) { p.thanks { (t(lang, "thanks")) } }
                                    (feedback_form(&e.id, &f.id, Some(&platform), lang))
                                }
                            }
                        }
                    }
                }
                @if !e.dead_ends.is_empty() {
                    section.dead-ends {
                        h2 { (t(lang, "dead_ends")) }
                        ul { @for d in &e.dead_ends {
                            li id={ "dead-end-" (encode_component(&d.id)) } {
                                strong { (d.action.get(lang)) } " " (ref_links(&d.refs))
                                p { (t(lang, "why")) ": " (d.why.get(lang)) }
                                (conditions(&d.when, lang))
                            }
                        } }
                    }
                }
                section.references {
                    h2 { (t(lang, "references")) }
                    ul { @for r in &e.references {
                        li id={ "ref-" (encode_component(&r.key)) } { "[" (r.key) "] " (reference(&r.title, &r.url)) }
                    } }
                }
                @if !e.examples.is_empty() {
                    section.examples {
                        details {
                            summary { (t(lang, "examples")) " (" (e.examples.len()) ")" }
                            @for ex in &e.examples {
                                p.source { (reference(&ex.source, &ex.source)) }
                                pre { (ex.text) }
                            }
                        }
                    }
                }
            }
        },
    )
}
