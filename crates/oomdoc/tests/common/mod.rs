//! Helpers shared by the CLI integration tests.

use serde_json::Value;
use std::path::Path;

/// The `error_text` of a record of the dev corpus (tests/corpus/dev.jsonl): real messages users pasted.
pub fn dev_message(id: &str) -> String {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/dev.jsonl");
    for line in std::fs::read_to_string(corpus).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        if v["id"] == id {
            return v["error_text"].as_str().unwrap().to_string();
        }
    }
    panic!("corpus record {id} is missing");
}
