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
