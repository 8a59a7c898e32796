//! Every fix and dead end says what behaviour of the library it relies on, read in source at
//! a tag or commit (`[[behaviours]]`), or is marked `status = "unverified"`; every project an
//! entry was checked against is one `scripts/kb_stale.py` can look up (`kb/projects.toml`).
//! And an entry read without a log links its sources absolutely and, in Chinese, has no
//! English prose in its version lines or phase.
use oomdoc_kb::{KnowledgeBase, Lang, Reliance};
use serde::Deserialize;
use std::path::PathBuf;

#[derive(Deserialize)]
struct Projects {
    projects: Vec<Project>,
}

#[derive(Deserialize)]
struct Project {
    name: String,
    registry: String,
    #[serde(default)]
    package: Option<String>,
    source: String,
    #[serde(default)]
    lookup: Option<String>,
}

fn projects() -> Vec<Project> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../kb/projects.toml");
    toml::from_str::<Projects>(&std::fs::read_to_string(path).expect("kb/projects.toml")).expect("kb/projects.toml parses").projects
}

#[test]
fn projects_say_where_their_releases_are() {
    for p in projects() {
        assert!(p.source.split('/').count() == 2, "{}: source `{}` is not owner/repo", p.name, p.source);
        match p.registry.as_str() {
            "pypi" | "crates" => assert!(p.package.is_some(), "{}: a {} project needs `package`", p.name, p.registry),
            "none" => assert!(p.lookup.is_some(), "{}: a project without a registry needs `lookup`", p.name),
            r => panic!("{}: registry `{r}` is not pypi, crates or none", p.name),
        }
    }
}

#[test]
fn every_fix_and_dead_end_has_a_behaviour_record_or_says_unverified() {
    let (kb, _) = KnowledgeBase::load_embedded();
    let names: Vec<String> = projects().into_iter().map(|p| p.name).collect();
    let mut bad = Vec::new();
    let (mut verified, mut general, mut unverified, mut records, mut verified_records) = (0, 0, 0, 0, 0);
    for e in kb.entries() {
        for (p, v) in &e.checked_against {
            if !names.contains(p) {
                bad.push(format!("kb/{}: checked_against `{p}` is not a project in kb/projects.toml", e.file));
            }
            let release = v.trim_start_matches('v').starts_with(|c: char| c.is_ascii_digit());
            let commit = v.len() >= 7 && v.chars().all(|c| c.is_ascii_hexdigit());
            if !release && !commit {
                bad.push(format!("kb/{}: checked_against {p} = `{v}` is neither a release nor a commit", e.file));
            }
        }
        for b in &e.behaviours {
            records += 1;
            verified_records += usize::from(b.status == "verified");
            if !names.contains(&b.project) {
                bad.push(format!("kb/{}: behaviour `{}` names project `{}`, not in kb/projects.toml", e.file, b.key, b.project));
            }
        }
        let items = e
            .fixes
            .iter()
            .map(|f| (format!("fix `{}`", f.id), &f.relies_on, &f.status, e.fix_reliance(f)))
            .chain(e.dead_ends.iter().map(|d| (format!("dead end `{}`", d.id), &d.relies_on, &d.status, e.dead_end_reliance(d))));
        for (ctx, relies_on, status, reliance) in items {
            if relies_on.is_empty() && status.is_none() {
                bad.push(format!(
                    "kb/{} ({}): {ctx} names no [[behaviours]] record (relies_on) and is not marked status = \"unverified\" or \"general\"",
                    e.file, e.id
                ));
            }
            match reliance {
                Reliance::Verified => verified += 1,
                Reliance::General => general += 1,
                Reliance::Unverified => unverified += 1,
            }
        }
    }
    println!(
        "fixes and dead ends: {verified} rely on verified behaviour, {general} general advice, {unverified} unverified; behaviour records: {records} ({verified_records} verified)"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn read_without_a_log_links_are_absolute_and_chinese_has_no_english_versions() {
    let (kb, _) = KnowledgeBase::load_embedded();
    let mut bad = Vec::new();
    for e in kb.entries() {
        for lang in [Lang::En, Lang::Zh] {
            let md = oomdoc_kb::to_markdown(e, lang);
            let mut rest = md.as_str();
            while let Some(i) = rest.find("](") {
                let tail = &rest[i + 2..];
                let end = tail.find(')').unwrap_or(tail.len());
                if !tail.starts_with("https://") && !tail.starts_with("http://") {
                    bad.push(format!("{}: link to `{}`", e.id, &tail[..end]));
                }
                rest = &tail[end..];
            }
        }
        let zh = oomdoc_kb::to_markdown(e, Lang::Zh);
        for en in ["Compile", "Load", "Runtime", "compile", "load", "runtime"] {
            if zh.contains(&format!("阶段: {en}")) {
                bad.push(format!("{}: phase `{en}` in Chinese", e.id));
            }
        }
        let lines = e
            .fixes
            .iter()
            .filter_map(|f| f.versions_in(Lang::Zh))
            .chain(e.versions_in(Lang::Zh))
            .chain(e.identifiers.iter().filter_map(|i| oomdoc_kb::versions::in_lang(Some(&i.versions), None, Lang::Zh)));
        for v in lines {
            let stripped: String = v.split('\'').step_by(2).collect();
            let words: Vec<&str> = stripped
                .split(|c: char| !c.is_ascii_alphabetic())
                .filter(|w| oomdoc_kb::versions::PROSE_WORDS.contains(&w.to_ascii_lowercase().as_str()))
                .collect();
            if !words.is_empty() {
                bad.push(format!("{}: Chinese version line `{v}` has English {words:?}", e.id));
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// What a user reads carries no notes for maintainers (those are `status` and behaviour
/// records), and no fix points at another fix: which fixes are shown, and in which order,
/// depends on the case.
#[test]
fn user_text_has_no_maintainer_notes_and_no_cross_references() {
    const NOTES: &[&str] = &[
        "not verified", "not checked", "not pinned", "not re-checked", "unverified in source", "per the thread",
        "未核实", "未在源码", "未逐版本", "未复核",
    ];
    const CROSS: &[&str] = &[
        "fix above", "fixes above", "fix below", "fixes below", "next fix", "previous fix", "above fix", "other fixes",
        "上一条", "下一条", "上面的修复", "下面的修复", "上述修复", "其他修复",
    ];
    let (kb, _) = KnowledgeBase::load_embedded();
    let mut bad = Vec::new();
    for e in kb.entries() {
        let mut texts: Vec<(String, String)> = vec![("summary".into(), format!("{} {}", e.summary.en, e.summary.zh))];
        texts.extend(e.versions.iter().map(|v| ("versions".to_string(), v.clone())));
        for c in &e.causes {
            texts.push((format!("cause `{}`", c.id), format!("{} {}", c.text.en, c.text.zh)));
        }
        for f in &e.fixes {
            let detail = f.detail.as_ref().map(|d| format!("{} {}", d.en, d.zh)).unwrap_or_default();
            let versions = [&f.versions, &f.versions_zh].into_iter().flatten().cloned().collect::<Vec<_>>().join(" ");
            texts.push((format!("fix `{}`", f.id), format!("{} {} {detail} {versions}", f.title.en, f.title.zh)));
        }
        for d in &e.dead_ends {
            texts.push((format!("dead end `{}`", d.id), format!("{} {} {} {}", d.action.en, d.action.zh, d.why.en, d.why.zh)));
        }
        for i in &e.identifiers {
            texts.push((format!("identifier `{}`", i.name), i.versions.clone()));
        }
        for r in &e.references {
            texts.push((format!("reference `{}`", r.key), r.title.clone()));
        }
        for (ctx, text) in texts {
            let lower = text.to_lowercase();
            for p in NOTES.iter().chain(CROSS) {
                if lower.contains(p) {
                    bad.push(format!("{} {ctx}: \"{p}\"", e.id));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// `status = "general"` is for advice that names nothing a release's source could confirm
/// ("lower the batch size"); a fix or dead end that names a setting, variable, option or API
/// (in its code, title, detail, action or reason) is refused, as is one that also relies on
/// records or states version requirements.
#[test]
fn general_advice_names_no_setting_or_api() {
    let file = |item: &str| {
        format!(
            "id = \"test.entry\"\nkind = \"oom\"\nplatform = \"cuda\"\nphase = \"runtime\"\n\
             title = {{ en = \"t\", zh = \"t\" }}\nsummary = {{ en = \"s\", zh = \"s\" }}\n\
             {item}refs = [\"r\"]\n\
             [[references]]\nkey = \"r\"\ntitle = \"r\"\nurl = \"https://example.com\"\n"
        )
    };
    let fix = |title: &str, extra: &str| {
        file(&format!(
            "[[fixes]]\nid = \"f\"\ncategory = \"smaller-working-set\"\nstatus = \"general\"\n{extra}title = {{ en = \"{title}\", zh = \"x\" }}\n"
        ))
    };
    let load = |text: String| KnowledgeBase::load_from([("test/entry.toml".to_string(), text)]);
    let (kb, errors) = load(fix("Lower the batch size or the sequence length", ""));
    assert!(errors.is_empty(), "{errors:?}");
    let e = &kb.entries()[0];
    assert_eq!(e.fix_reliance(&e.fixes[0]), Reliance::General);
    assert!(!e.fix_verified(&e.fixes[0]));
    for (title, extra) in [
        ("Lower max_model_len", ""),
        ("Set PYTORCH_CUDA_ALLOC_CONF", ""),
        ("Pass --max-num-seqs 8", ""),
        ("Call torch.cuda.empty_cache", ""),
        ("Lower the batch size", "code = \"batch_size = 8\"\ncode_lang = \"python\"\ncode_fragment = true\n"),
        ("Lower the batch size", "detail = { en = \"with `bs=8`\", zh = \"x\" }\n"),
        ("Lower the batch size", "requires = [\"torch>=2.1\"]\n"),
    ] {
        let (_, errors) = load(fix(title, extra));
        assert!(errors.iter().any(|e| e.message.contains("general")), "{title} / {extra}: {errors:?}");
    }
    let dead = |why: &str| {
        file(&format!(
            "[[fixes]]\nid = \"f\"\ncategory = \"bigger-device\"\nstatus = \"general\"\ntitle = {{ en = \"A bigger device\", zh = \"x\" }}\nrefs = [\"r\"]\n\
             [[dead_ends]]\nid = \"d\"\ncategory = \"release-other-memory\"\nstatus = \"general\"\n\
             action = {{ en = \"Freeing memory\", zh = \"x\" }}\nwhy = {{ en = \"{why}\", zh = \"x\" }}\n"
        ))
    };
    let (_, errors) = load(dead("Nothing else holds memory"));
    assert!(errors.is_empty(), "{errors:?}");
    assert!(!load(dead("empty_cache() returns only cached blocks")).1.is_empty());
}
