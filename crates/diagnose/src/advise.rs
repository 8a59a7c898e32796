//! Applying a knowledge-base entry to a finding: pick the cause, rank the fixes and
//! dead ends that apply, and fill their placeholders with this finding's numbers.

use crate::facts::Facts;
use crate::finding::{DeadEndOut, Finding, FixOut, RefOut};
use oomdoc_kb::{render, Entry, Lang, Text};

fn fill(t: &str, facts: &Facts) -> Option<String> {
    render(t, |name| facts.vars.get(name).cloned()).ok()
}

fn fill_text(t: &Text, lang: Lang, facts: &Facts) -> Option<String> {
    fill(t.get(lang), facts)
}

fn refs(entry: &Entry, keys: &[String]) -> Vec<RefOut> {
    keys.iter()
        .filter_map(|k| entry.references.iter().find(|r| &r.key == k))
        .map(|r| RefOut { title: r.title.clone(), url: r.url.clone() })
        .collect()
}

/// Fill cause, fixes, dead ends and references of `f` from `entry`.
pub fn apply(f: &mut Finding, entry: &Entry, facts: &Facts, lang: Lang) {
    f.title = entry.title.get(lang).to_string();
    f.cause = entry.causes.iter().filter(|c| facts.holds(&c.when)).find_map(|c| fill_text(&c.text, lang, facts));
    let mut rank = 0;
    let mut applied: Vec<(String, Option<String>)> = Vec::new();
    f.fixes = entry
        .fixes
        .iter()
        .filter(|fx| facts.holds(&fx.when))
        .filter_map(|fx| {
            let title = fill_text(&fx.title, lang, facts)?;
            let detail = fx.detail.as_ref().and_then(|d| fill_text(d, lang, facts));
            let code = fx.code.as_deref().and_then(|c| fill(c, facts)).or_else(|| fx.code_fallback.as_deref().and_then(|c| fill(c, facts)));
            // `fewer-stages-plain` is the number-free fallback of `fewer-stages`: skip it when
            // the numeric one applied, as with a fix that repeats an earlier one's code.
            let fallback_of_applied = applied.iter().any(|(id, c)| fx.id.starts_with(&format!("{id}-")) || (code.is_some() && c == &code));
            if fallback_of_applied {
                return None;
            }
            applied.push((fx.id.clone(), code.clone()));
            rank += 1;
            Some(FixOut {
                id: fx.id.clone(),
                rank,
                category: fx.category,
                title,
                detail,
                code,
                code_lang: fx.code_lang.clone(),
                versions: fx.versions_in(lang),
                references: refs(entry, &fx.refs),
                verified: entry.fix_verified(fx),
            })
        })
        .collect();
    f.dead_ends = entry
        .dead_ends
        .iter()
        .filter(|d| facts.holds(&d.when))
        .filter_map(|d| {
            Some(DeadEndOut {
                id: d.id.clone(),
                category: d.category,
                action: fill_text(&d.action, lang, facts)?,
                why: fill_text(&d.why, lang, facts)?,
                references: refs(entry, &d.refs),
                verified: entry.dead_end_verified(d),
            })
        })
        .collect();
    f.references = entry.references.iter().map(|r| RefOut { title: r.title.clone(), url: r.url.clone() }).collect();
}
