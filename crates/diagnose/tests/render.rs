//! What a person reads, for every knowledge-base example: Markdown links are absolute URLs
//! (a diagnosis pasted into an issue links correctly), and Chinese output has no English
//! left in its labels, version lines or headings.

use oomdoc_diagnose::{diagnose_text, render, Lang, Options};
use oomdoc_kb::versions::PROSE_WORDS;
use oomdoc_kb::KnowledgeBase;

/// Targets of Markdown links `[text](target)`.
fn link_targets(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(i) = rest.find("](") {
        let tail = &rest[i + 2..];
        let end = tail.find(')').unwrap_or(tail.len());
        out.push(tail[..end].to_string());
        rest = &tail[end.min(tail.len())..];
    }
    out
}

/// English prose words in a text, outside backticks and quotes (messages and code are quoted).
fn prose_words(text: &str) -> Vec<String> {
    let mut plain = String::new();
    let mut inside: Option<char> = None;
    for ch in text.chars() {
        match inside {
            Some(q) if ch == q => inside = None,
            Some(_) => {}
            None if ch == '`' || ch == '\'' || ch == '"' => inside = Some(ch),
            None => plain.push(ch),
        }
    }
    plain
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| PROSE_WORDS.contains(&w.to_ascii_lowercase().as_str()))
        .map(str::to_string)
        .collect()
}

fn every_example_report(lang: Lang) -> Vec<(String, oomdoc_diagnose::Report)> {
    let kb = KnowledgeBase::get();
    let opts = Options { lang, ..Options::default() };
    kb.entries().iter().flat_map(|e| e.examples.iter().map(move |ex| (e.id.clone(), ex))).map(|(id, ex)| (id, diagnose_text(&ex.text, &opts))).collect()
}

#[test]
fn markdown_links_are_absolute_urls() {
    let mut bad = Vec::new();
    let mut links = 0;
    for (id, report) in every_example_report(Lang::En) {
        for target in link_targets(&render::markdown(&report, Lang::En)) {
            links += 1;
            if !target.starts_with("https://") && !target.starts_with("http://") {
                bad.push(format!("{id}: link to `{target}`"));
            }
        }
    }
    assert!(links > 100, "only {links} links");
    bad.dedup();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn a_source_path_becomes_a_github_link() {
    let report = diagnose_text("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total capacity; 13.10 GiB already allocated; 1.10 GiB free; 13.50 GiB reserved in total by PyTorch)\n", &Options::default());
    let md = render::markdown(&report, Lang::En);
    assert!(md.contains("(https://github.com/pytorch/pytorch/blob/"), "{md}");
    assert!(!md.contains("](pytorch/pytorch:"), "{md}");
}

#[test]
fn chinese_output_has_no_english_labels_versions_or_headings() {
    let mut bad = Vec::new();
    for (id, report) in every_example_report(Lang::Zh) {
        for f in &report.findings {
            for fx in &f.fixes {
                if let Some(v) = &fx.versions {
                    let words = prose_words(v);
                    if !words.is_empty() {
                        bad.push(format!("{id} fix `{}` version line `{v}`: {words:?}", fx.id));
                    }
                }
            }
        }
        let text = render::text(&report, Lang::Zh, false);
        for line in text.lines() {
            for label in ["error", "warning", "note", "unverified", "fixes:", "cause:", "see:"] {
                if line.trim_start().starts_with(label) {
                    bad.push(format!("{id}: text line starts with `{label}`: {line}"));
                }
            }
        }
        let md = render::markdown(&report, Lang::Zh);
        for line in md.lines().filter(|l| l.starts_with("**") && l.ends_with("**")) {
            if line.chars().any(|c| c.is_ascii_alphabetic()) && !line.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)) {
                bad.push(format!("{id}: heading `{line}`"));
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "{} problems:\n{}", bad.len(), bad.join("\n"));
}
