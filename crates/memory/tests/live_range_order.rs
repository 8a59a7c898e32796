//! The text path joins live ranges to values in one pass when the file lists them in
//! value-id order (as `HloLiveRange::ToString` does), and looks each up by name
//! otherwise. Both must give the same report: each real fixture is read as dumped and
//! with its `BufferLiveRange:` lines reversed.

use oomdoc_memory::{load_dump, SourcePreference};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Copy the text files of `from` to a scratch dir, with the live ranges reversed.
fn reversed_copy(from: &Path, tag: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-lr-order-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        if !entry.file_type().unwrap().is_file() || name.contains(".hlo.pb") {
            continue;
        }
        let mut text = std::fs::read_to_string(entry.path()).unwrap();
        if name.ends_with("-live-range.txt") {
            let start = text.find("  BufferLiveRange:\n").unwrap() + "  BufferLiveRange:\n".len();
            let end = text[start..].find("  Live ranges at").map_or(text.len(), |i| start + i);
            let mut lines: Vec<&str> = text[start..end].lines().collect();
            assert!(lines.len() > 2, "{name}: too few ranges to reorder");
            lines.reverse();
            text = format!("{}{}\n{}", &text[..start], lines.join("\n"), &text[end..]);
        }
        std::fs::write(dir.join(&name), text).unwrap();
    }
    dir
}

#[test]
fn live_ranges_in_any_order_give_the_same_report() {
    let mut checked = 0;
    let mut dirs: Vec<PathBuf> = ["mlp_train_step", "transformer_train_step", "donated_adam_update"].iter().map(|d| fixtures().join(d)).collect();
    dirs.extend(std::fs::read_dir(fixtures().join("gen")).unwrap().flatten().map(|e| e.path()));
    for from in dirs {
        let rel = from.strip_prefix(fixtures()).unwrap().to_string_lossy().to_string();
        let has_live_range = std::fs::read_dir(&from).unwrap().flatten().any(|e| e.file_name().to_string_lossy().ends_with("-live-range.txt"));
        if !has_live_range {
            continue;
        }
        let as_dumped = load_dump(&from).unwrap().modules[0].analyze(SourcePreference::Text).unwrap();
        let dir = reversed_copy(&from, &rel.replace('/', "-"));
        let reordered = load_dump(&dir).unwrap().modules[0].analyze(SourcePreference::Text).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(serde_json::to_value(&as_dumped).unwrap(), serde_json::to_value(&reordered).unwrap(), "{rel}");
        checked += 1;
    }
    assert!(checked >= 10, "fixtures missing: {checked}");
}
