//! Every setting a fix or dead end names has an `[[identifiers]]` record in its entry
//! (extraction rules: `oomdoc_kb::identifiers`), and every record says where the setting is
//! defined and in which versions.
use oomdoc_kb::identifiers::{in_code, in_prose, Token};
use oomdoc_kb::{Entry, KnowledgeBase};
use std::collections::BTreeSet;

const KINDS: &[&str] = &["env", "flag", "python", "cli", "config", "param"];
const STATUSES: &[&str] = &["verified", "unverified", "absent"];

/// (where, token) for every setting named in an entry's fixes and dead ends.
fn named_settings(e: &Entry) -> Vec<(String, Token)> {
    let mut out = Vec::new();
    for f in &e.fixes {
        for code in [&f.code, &f.code_fallback].into_iter().flatten() {
            for t in in_code(code, f.code_lang.as_deref()) {
                out.push((format!("fix `{}` code", f.id), t));
            }
        }
        for t in in_prose(&f.title.en) {
            out.push((format!("fix `{}` title", f.id), t));
        }
    }
    for d in &e.dead_ends {
        for t in in_prose(&d.action.en) {
            out.push((format!("dead end `{}` action", d.id), t));
        }
    }
    out
}

#[test]
fn every_setting_in_a_fix_has_an_identifier_record() {
    // Files that do not load are reported by `kb_is_valid`; check the ones that do.
    let (kb, _) = KnowledgeBase::load_embedded();
    let mut missing = Vec::new();
    let mut checked = 0;
    for e in kb.entries() {
        let recorded: BTreeSet<&str> = e.identifiers.iter().map(|i| i.name.as_str()).collect();
        for (ctx, t) in named_settings(e) {
            checked += 1;
            if !recorded.contains(t.name.as_str()) {
                missing.push(format!("kb/{} ({}): {} names `{}` ({:?}) without an [[identifiers]] record", e.file, e.id, ctx, t.name, t.kind));
            }
        }
    }
    missing.sort();
    missing.dedup();
    println!("{checked} named settings checked");
    assert!(missing.is_empty(), "{} settings have no [[identifiers]] record:\n{}", missing.len(), missing.join("\n"));
}

#[test]
fn identifier_records_are_well_formed() {
    let (kb, _) = KnowledgeBase::load_embedded();
    let mut bad = Vec::new();
    for e in kb.entries() {
        let mut seen = BTreeSet::new();
        for i in &e.identifiers {
            let ctx = format!("kb/{}: identifier `{}`", e.file, i.name);
            if !seen.insert(i.name.as_str()) {
                bad.push(format!("{ctx}: recorded twice"));
            }
            if !KINDS.contains(&i.kind.as_str()) {
                bad.push(format!("{ctx}: kind `{}` is not one of {KINDS:?}", i.kind));
            }
            if !STATUSES.contains(&i.status.as_str()) {
                bad.push(format!("{ctx}: status `{}` is not one of {STATUSES:?}", i.status));
            }
            if i.versions.trim().is_empty() {
                bad.push(format!("{ctx}: versions is empty"));
            }
            let d = i.defined_in.trim();
            let url = d.starts_with("https://");
            let pinned_source = d.split_once(':').is_some_and(|(repo, rest)| repo.contains('/') && rest.contains('@'));
            if !(url || pinned_source) {
                bad.push(format!("{ctx}: defined_in `{d}` must be `owner/repo:path@tag-or-commit` or an https:// URL"));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
