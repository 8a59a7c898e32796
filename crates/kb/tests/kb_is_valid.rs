//! Every file under kb/ parses, validates, and has a unique id.
use oomdoc_kb::KnowledgeBase;

#[test]
fn every_entry_loads() {
    let (kb, errors) = KnowledgeBase::load_embedded();
    let msgs: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert!(msgs.is_empty(), "invalid knowledge-base files:\n{}", msgs.join("\n"));
    for e in kb.entries() {
        assert!(!e.examples.is_empty() || e.kind == oomdoc_kb::Kind::Other, "{}: an oom entry needs real examples", e.id);
    }
}

/// The lazily parsed lookup that a diagnosis uses finds each entry as the full load does.
#[test]
fn each_entry_by_id_without_loading_the_rest() {
    let (kb, _) = KnowledgeBase::load_embedded();
    for e in kb.entries() {
        let lazy = KnowledgeBase::embedded_by_id(&e.id).unwrap_or_else(|| panic!("{} not found by embedded_by_id", e.id));
        assert_eq!(lazy.file, e.file);
        assert_eq!(serde_json::to_value(lazy).unwrap(), serde_json::to_value(e).unwrap(), "{}", e.id);
    }
    assert!(KnowledgeBase::embedded_by_id("no.such-entry").is_none());
}

/// Read without a log (`oomdoc explain`, `/kb/{id}.md`), no entry shows a raw `{placeholder}`.
#[test]
fn no_raw_placeholder_when_read_without_a_log() {
    let (kb, _) = KnowledgeBase::load_embedded();
    for e in kb.entries() {
        for lang in [oomdoc_kb::Lang::En, oomdoc_kb::Lang::Zh] {
            let md = oomdoc_kb::to_markdown(e, lang);
            // Examples and reference titles quote vendors' text, which may contain braces.
            let cut = ["\n## Example", "\n## 示例", "\n## References", "\n## 参考资料"].iter().filter_map(|h| md.find(h)).min();
            let md = &md[..cut.unwrap_or(md.len())];
            for (name, _) in oomdoc_kb::PLACEHOLDERS {
                for raw in [format!("{{{name}}}"), format!("{{{name}_h}}")] {
                    assert!(!md.contains(&raw), "{}: `oomdoc explain` shows {raw}:\n{md}", e.id);
                }
            }
        }
    }
}

/// Near-duplicate variants (same advice without numbers) are shown once; every item links a source.
#[test]
fn entries_read_once_with_sources() {
    let kb = KnowledgeBase::get();
    let e = kb.by_id("tpu.scoped-vmem").expect("entry");
    let v = oomdoc_kb::view::view(e, oomdoc_kb::Lang::En);
    let first = &v.causes[0];
    assert_eq!(first.id, "kernel-blocks-too-big");
    assert_eq!(first.variants, vec!["kernel-blocks-too-big-used-only", "kernel-blocks-too-big-nosize"]);
    assert!(first.text.markdown().contains("needs *N* of scoped VMEM"), "{}", first.text.markdown());
    for e in kb.entries() {
        let v = oomdoc_kb::view::view(e, oomdoc_kb::Lang::En);
        for item in v.causes.iter().chain(&v.fixes).chain(&v.dead_ends) {
            let linked = item.refs.iter().any(|r| r.href.is_some()) || item.refs.is_empty();
            assert!(linked, "{} `{}`: none of its references is a link", e.id, item.id);
        }
    }
}

/// Every fix and dead end carries a category (the field is required: a file without it does
/// not load), and the ids are the JSON contract's, each with its meaning.
#[test]
fn fix_categories_are_required_and_the_contracts() {
    let ids: Vec<&str> = oomdoc_kb::FixCategory::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(
        ids,
        [
            "smaller-working-set",
            "release-other-memory",
            "allocator-setting",
            "raise-limit",
            "engine-setting",
            "distribute-or-offload",
            "kernel-config",
            "upgrade-or-downgrade",
            "bigger-device",
            "fix-code-or-data",
            "not-a-memory-problem",
            "investigate",
        ]
    );
    for c in oomdoc_kb::FixCategory::ALL {
        assert_eq!(serde_json::to_value(c).unwrap(), serde_json::json!(c.as_str()));
        assert_eq!(oomdoc_kb::FixCategory::parse(c.as_str()), Some(*c));
        assert!(!c.description().is_empty());
    }
    let file = |category: &str| {
        format!(
            "id = \"test.entry\"\nkind = \"oom\"\nplatform = \"cuda\"\nphase = \"runtime\"\n\
             title = {{ en = \"t\", zh = \"t\" }}\nsummary = {{ en = \"s\", zh = \"s\" }}\n\
             [[fixes]]\nid = \"smaller\"\n{category}title = {{ en = \"f\", zh = \"f\" }}\nrefs = [\"r\"]\n\
             [[references]]\nkey = \"r\"\ntitle = \"r\"\nurl = \"https://example.com\"\n"
        )
    };
    let load = |text: String| oomdoc_kb::KnowledgeBase::load_from([("test/entry.toml".to_string(), text)]);
    let (kb, errors) = load(file("category = \"smaller-working-set\"\n"));
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(kb.entries()[0].fixes[0].category, oomdoc_kb::FixCategory::SmallerWorkingSet);
    let (_, errors) = load(file(""));
    assert!(errors.iter().any(|e| e.message.contains("category")), "{errors:?}");
    let (_, errors) = load(file("category = \"lower-batch\"\n"));
    assert!(!errors.is_empty(), "an unknown category id loads");
}

/// Ranking reads each entry's memory space from its file's top-level line without parsing
/// the entry: that quick read agrees with the parsed entry for every embedded entry.
#[test]
fn quick_memory_space_agrees_with_the_parsed_entry() {
    let kb = oomdoc_kb::KnowledgeBase::get();
    assert!(!kb.entries().is_empty());
    for e in kb.entries() {
        assert_eq!(oomdoc_kb::KnowledgeBase::embedded_memory_space(&e.id), e.memory_space.as_deref(), "{}", e.id);
    }
}
