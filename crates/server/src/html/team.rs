//! `/team`: what the fleet's failures add up to ([`crate::fleet`]), with the filters in
//! the URL (a plain GET form) and exports of the same selection.

use super::{encode_component, layout, outcome_summary};
use crate::{
    fleet::{Filter, Group, Summary},
    stats::Rate,
    store::FixOutcomes,
};
use maud::{html, Markup};
use oomdoc_kb::Lang;
use std::collections::BTreeMap;

fn pct(r: &Option<Rate>) -> String {
    r.map_or("–".into(), |r| format!("{:.0}% ({:.0}–{:.0}%)", r.estimate * 100.0, r.low * 100.0, r.high * 100.0))
}

/// A link to the same view with one more filter.
fn narrowed(filter: &Filter, set: impl FnOnce(&mut Filter)) -> String {
    let mut f = filter.clone();
    set(&mut f);
    format!("/team?{}", f.to_query())
}

fn group_table(title: &str, id: &str, groups: &[Group], filter: &Filter, set: fn(&mut Filter, String)) -> Markup {
    html! {
        section id=(id) {
            h2 { (title) }
            table {
                tr { th { "" } th { "failures" } th { "memory" } th { "memory share (95% CI)" } }
                @for g in groups {
                    tr {
                        td { a href=(narrowed(filter, |f| set(f, g.key.clone()))) { (g.key) } }
                        td { (g.count.reports) }
                        td { (g.count.memory_failures) }
                        td { (pct(&g.count.memory_share)) }
                    }
                }
            }
        }
    }
}

pub fn page(s: &Summary, fixes: &BTreeMap<String, Vec<FixOutcomes>>) -> Markup {
    let f = &s.filter;
    let field = |v: &Option<String>| v.clone().unwrap_or_default();
    let query = f.to_query();
    let lang = Lang::En;
    layout(
        "Team",
        lang,
        html! {
            h1 { "What the team's failed jobs add up to" }
            form #team-filter method="get" action="/team" {
                @for (name, value, hint) in [
                    ("since", field(&f.since), "2026-11-01"), ("until", field(&f.until), ""),
                    ("cluster", field(&f.cluster), ""), ("host", field(&f.host), ""), ("job", field(&f.job), ""),
                    ("user", field(&f.user), ""), ("image", field(&f.image), ""), ("entry", field(&f.entry), "none: unrecognised"),
                    ("category", field(&f.category), ""), ("version", field(&f.version), "torch=2.5.1"), ("label", field(&f.label), "team=ml"),
                ] {
                    label { (name) " " input name=(name) value=(value) placeholder=(hint) maxlength="200"; } " "
                }
                button type="submit" { "Filter" }
            }
            p.muted {
                "Since " (s.since) ". "
                a #export-csv href={ "/api/v1/reports?" (query) "&format=csv" } { "CSV" } " · "
                a #export-json href={ "/api/v1/reports?" (query) } { "JSON" } " · "
                a href={ "/api/v1/fleet?" (query) } { "summary JSON" }
                @if s.truncated { " · only the newest " (crate::fleet::MAX_REPORTS) " reports are counted" }
            }
            p #fleet-total {
                strong { (s.total.reports) } " failed jobs reported; "
                strong { (s.total.memory_failures) } " were memory failures: "
                span #memory-share { (pct(&s.total.memory_share)) }
                " (every reported failure counts in the denominator)."
            }
            section #by-day {
                h2 { "Failures over time" }
                table {
                    tr { th { "day (UTC)" } th { "failures" } th { "memory" } th { "" } }
                    @for g in &s.by_day {
                        tr {
                            td { (g.key) } td { (g.count.reports) } td { (g.count.memory_failures) }
                            td { meter min="0" max=(s.total.reports.max(1)) value=(g.count.reports) {} }
                        }
                    }
                }
            }
            section #by-entry {
                h2 { "By failure (knowledge-base entry)" }
                table {
                    tr { th { "entry" } th { "fix category" } th { "failures" } th { "share (95% CI)" } th { "jobs" } th { "fixes reported to work" } }
                    @for e in &s.by_entry {
                        tr.entry-row data-entry=(e.entry) {
                            td {
                                @if e.entry == "none" { a href=(narrowed(f, |f| f.entry = Some("none".into()))) { "not recognised" } }
                                @else { a href={ "/kb/" (encode_component(&e.entry)) } { (e.entry) } }
                            }
                            td { (e.category.as_deref().unwrap_or("–")) }
                            td { a href=(narrowed(f, |f| f.entry = Some(e.entry.clone()))) { (e.reports) } }
                            td { (pct(&e.share)) }
                            td {
                                @for (i, id) in e.report_ids.iter().take(5).enumerate() {
                                    @if i > 0 { ", " }
                                    a href={ "/api/v1/reports/" (id) } { (e.jobs.get(i).cloned().unwrap_or_else(|| format!("#{id}"))) }
                                }
                            }
                            td {
                                @for o in fixes.get(&e.entry).into_iter().flatten() {
                                    div { code { (o.fix) } " " (outcome_summary(Some(o), lang)) }
                                }
                            }
                        }
                    }
                }
            }
            (group_table("By fix category", "by-category", &s.by_category, f, |f, k| f.category = Some(k)))
            (group_table("By cluster", "by-cluster", &s.by_cluster, f, |f, k| f.cluster = Some(k)))
            (group_table("By host", "by-host", &s.by_host, f, |f, k| f.host = Some(k)))
            (group_table("By job", "by-job", &s.by_job, f, |f, k| f.job = Some(k)))
            (group_table("By user", "by-user", &s.by_user, f, |f, k| f.user = Some(k)))
            section #by-version {
                h2 { "By framework version (in the order versions appeared)" }
                table {
                    tr { th { "framework" } th { "version" } th { "first seen" } th { "failures" } th { "memory share (95% CI)" } th { "failures by entry" } }
                    @for v in &s.by_version {
                        tr {
                            td { (v.framework) }
                            td { a href=(narrowed(f, |f| f.version = Some(format!("{}={}", v.framework, v.version)))) { (v.version) } }
                            td { (v.first_seen.get(..10).unwrap_or("")) }
                            td { (v.count.reports) }
                            td { (pct(&v.count.memory_share)) }
                            td { @for (entry, n) in &v.entries { code { (entry) } " " (n) " " } }
                        }
                    }
                }
            }
        },
    )
}
