//! `/kb` and `/kb/{id}`.

use super::{encode_component, entry_href, feedback_form, layout, outcome_summary, reference, t};
use crate::{store::FixOutcomes, kb_query::{wire_name, KbFilter, PHASES, PLATFORMS}};
use maud::{html, Markup};
use oomdoc_kb::view::{status_note, view, RefView, Rich, SettingView, Span};
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

/// Each source of a claim, linked to the entry's reference list and, where it is a web page
/// or a source file at a commit, to the source itself.
fn ref_links(refs: &[RefView], lang: Lang) -> Markup {
    html! {
        @if !refs.is_empty() {
            span.refs { @for r in refs {
                a href={ "#ref-" (encode_component(&r.key)) } { "[" (r.key) "]" }
                @if let Some(h) = &r.href { " " a.src href=(h) rel="noopener noreferrer" title=(r.title) { "↗" } }
                @if r.unverified { " " span.unverified { (t(lang, "unverified")) } }
                " "
            } }
        }
    }
}

/// Template text as read without a log: values in `<var>`, never a raw `{placeholder}`.
fn rich(r: &Rich) -> Markup {
    html! { @for s in &r.0 { @match s { Span::Text(x) => (x), Span::Var(v) => var { (v) } } } }
}

fn setting(s: &SettingView, lang: Lang) -> Markup {
    html! {
        code { (s.name) }
        @if s.status != "verified" { span.unverified { (status_note(&s.status, lang).trim().trim_matches(|c| c == '(' || c == ')' || c == '（' || c == '）')) } }
    }
}

pub fn entry_page(e: &Entry, lang: Lang, outcomes: &BTreeMap<String, FixOutcomes>, thanks_for: Option<&str>) -> Markup {
    let id = encode_component(&e.id);
    let platform = wire_name(&e.platform);
    let v = view(e, lang);
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
                    dt { (t(lang, "phase")) } dd { (e.phase.name(lang)) }
                    @if let Some(m) = &e.memory_space { dt { (t(lang, "memory_space")) } dd { (m) } }
                    dt { (t(lang, "severity")) } dd { (wire_name(&e.severity)) }
                    @if let Some(v) = e.versions_in(lang) { dt { (t(lang, "versions")) } dd { (v) } }
                }
                section {
                    h2 { (t(lang, "summary")) }
                    p { (e.summary.get(lang)) }
                }
                @if let Some(o) = oomdoc_kb::outcomes::for_entry(&e.id) {
                    section.public-outcomes data-threads=(o.threads) {
                        h2 { (t(lang, "public_threads")) }
                        p.muted { (t(lang, "public_threads_note")) }
                        ul { @for (cat, c) in public_order(o) {
                            li data-category=(cat) {
                                code { (cat) } ": " strong { (c.count) " / " (o.threads) } " " (t(lang, "threads")) " "
                                @for (i, link) in c.links.iter().enumerate() {
                                    a href=(link) rel="noopener noreferrer" { "[" (i + 1) "]" } " "
                                }
                            }
                        } }
                    }
                }
                @if !v.legend.is_empty() {
                    div.legend {
                        p.muted { (t(lang, "read_without_log")) }
                        ul { @for (sym, what) in &v.legend { li { var { (sym) } ": " (what) } } }
                    }
                }
                @if !v.causes.is_empty() {
                    section.causes {
                        h2 { (t(lang, "causes")) }
                        ol { @for c in &v.causes {
                            li id={ "cause-" (encode_component(&c.id)) } {
                                @for alt in &c.variants { span id={ "cause-" (encode_component(alt)) } {} }
                                (rich(&c.text)) " " (ref_links(&c.refs, lang)) (conditions(&c.when, lang))
                            }
                        } }
                    }
                }
                @if !v.fixes.is_empty() {
                    section.fixes {
                        h2 { (t(lang, "fixes")) }
                        @for f in &v.fixes {
                            div.fix id={ "fix-" (encode_component(&f.id)) } data-fix=(f.id) {
                                @for alt in &f.variants { span id={ "fix-" (encode_component(alt)) } {} }
                                h3 { (rich(&f.text)) @if f.reliance == oomdoc_kb::Reliance::Unverified { " " span.unverified { "(" (t(lang, "unverified")) ")" } } }
                                (conditions(&f.when, lang))
                                @if let Some(d) = &f.detail { p { (rich(d)) } }
                                @if let Some(code) = &f.code {
                                    @if f.code_fragment { p.muted { (t(lang, "fragment")) } }
                                    pre { code data-lang=[f.code_lang.as_deref()] { (code) } }
                                }
                                @if let Some(ver) = &f.versions { p.versions { (t(lang, "versions")) ": " (ver) } }
                                @if let Some((o, cat)) = oomdoc_kb::outcomes::for_entry(&e.id).zip(e.fixes.iter().find(|x| x.id == f.id).map(|x| x.category.as_str())) {
                                    p.public-measured data-category=(cat) { (t(lang, "this_kind_fixed")) " " (o.count(cat)) " / " (o.threads) " " (t(lang, "threads")) " (" code { (cat) } ")" }
                                }
                                @if !f.settings.is_empty() {
                                    p.settings { (t(lang, "settings")) ": " @for s in &f.settings { (setting(s, lang)) " " } }
                                }
                                p { (ref_links(&f.refs, lang)) }
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
                @if !v.dead_ends.is_empty() {
                    section.dead-ends {
                        h2 { (t(lang, "dead_ends")) }
                        ul { @for d in &v.dead_ends {
                            li id={ "dead-end-" (encode_component(&d.id)) } {
                                @for alt in &d.variants { span id={ "dead-end-" (encode_component(alt)) } {} }
                                strong { (rich(&d.text)) } " " (ref_links(&d.refs, lang))
                                @if let Some(why) = &d.detail { p { (t(lang, "why")) ": " (rich(why)) } }
                                (conditions(&d.when, lang))
                            }
                        } }
                    }
                }
                @if !v.settings.is_empty() {
                    section.settings {
                        h2 { (t(lang, "settings_defined")) }
                        table.settings {
                            tr { th { (t(lang, "setting")) } th { (t(lang, "kind")) } th { (t(lang, "versions")) } th { (t(lang, "defined_in")) } }
                            @for s in &v.settings {
                                tr {
                                    td { (setting(s, lang)) }
                                    td { (s.kind) }
                                    td { (s.versions) }
                                    td { @if let Some(h) = &s.href { a href=(h) rel="noopener noreferrer" { code { (s.defined_in) } } } @else { code { (s.defined_in) } } }
                                }
                            }
                        }
                    }
                }
                section.references {
                    h2 { (t(lang, "references")) }
                    ul { @for r in &v.references {
                        li id={ "ref-" (encode_component(&r.key)) } {
                            "[" (r.key) "] " (reference(&r.title, &r.url))
                            @if let (Some(h), false) = (&r.href, r.url.starts_with("http")) { " " a href=(h) rel="noopener noreferrer" { "↗" } }
                            @if r.unverified { " " span.unverified { (t(lang, "unverified")) } }
                        }
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

/// An entry's public-thread outcomes, most threads first (ties by category id).
fn public_order(o: &oomdoc_kb::outcomes::EntryOutcomes) -> Vec<(&str, &oomdoc_kb::outcomes::CategoryOutcome)> {
    let mut v: Vec<_> = o.categories.iter().map(|(k, c)| (k.as_str(), c)).collect();
    v.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
    v
}
