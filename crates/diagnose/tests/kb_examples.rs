//! Every knowledge-base example is a real message: the engine must recognize it as
//! that entry and state the sizes the entry expects. And every id the engine can
//! emit must have an entry.

use oomdoc_diagnose::{diagnose_text, Options, SizeKey};
use oomdoc_kb::KnowledgeBase;
use std::path::PathBuf;

#[test]
fn every_example_is_recognized_with_its_numbers() {
    let kb = KnowledgeBase::get();
    let mut failures = Vec::new();
    let mut total = 0;
    for e in kb.entries() {
        for (i, ex) in e.examples.iter().enumerate() {
            total += 1;
            let want_id = ex.expect.id.clone().unwrap_or_else(|| e.id.clone());
            let report = diagnose_text(&ex.text, &Options::default());
            let Some(f) = report.findings.iter().find(|f| f.id == want_id) else {
                failures.push(format!("{} example {}: want {want_id}, got {:?}", e.id, i + 1, report.findings.iter().map(|f| &f.id).collect::<Vec<_>>()));
                continue;
            };
            if let Some(code) = &ex.expect.code {
                if f.code.as_deref() != Some(code) {
                    failures.push(format!("{} example {}: code {:?}, want {code}", e.id, i + 1, f.code));
                }
            }
            if let Some(ms) = &ex.expect.memory_space {
                if f.memory_space.as_deref() != Some(ms) {
                    failures.push(format!("{} example {}: memory_space {:?}, want {ms}", e.id, i + 1, f.memory_space));
                }
            }
            for (k, want) in &ex.expect.sizes {
                let key = SizeKey::ALL.into_iter().find(|s| s.name() == k).unwrap();
                if f.sizes.get(key) != Some(*want) {
                    failures.push(format!("{} example {}: {k} = {:?}, want {want}", e.id, i + 1, f.sizes.get(key)));
                }
            }
            let culprit = serde_json::to_value(&f.culprit).unwrap();
            for (k, want) in &ex.expect.culprit {
                let got = culprit.get(k).map(|v| v.to_string()).unwrap_or_default();
                if !got.contains(want.as_str()) {
                    failures.push(format!("{} example {}: culprit.{k} = {got}, want it to contain {want:?}", e.id, i + 1));
                }
            }
        }
    }
    println!("{total} knowledge-base examples checked");
    assert!(failures.is_empty(), "{} of {total} examples fail:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn every_emitted_id_has_an_entry() {
    let kb = KnowledgeBase::get();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/recognize");
    let id_re = regex::Regex::new(r#"(?:Hit::new|tpu_hit|host_hit)\(\s*"([a-z0-9.\-]+)"|h\.id = "([a-z0-9.\-]+)"|=> "([a-z0-9]+\.[a-z0-9\-]+)""#).unwrap();
    let mut missing = Vec::new();
    for f in std::fs::read_dir(&dir).unwrap() {
        let path = f.unwrap().path();
        let src = std::fs::read_to_string(&path).unwrap();
        for c in id_re.captures_iter(&src) {
            let id = c.get(1).or(c.get(2)).or(c.get(3)).unwrap().as_str();
            if kb.by_id(id).is_none() {
                missing.push(format!("{id} ({})", path.file_name().unwrap().to_string_lossy()));
            }
        }
    }
    for (_, _, id, _, _) in oomdoc_diagnose::recognize::codes::XLA_CODES {
        if kb.by_id(id).is_none() {
            missing.push(id.to_string());
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "ids without a knowledge-base entry: {missing:?}");
}
