//! A truncated `-buffer-assignment.txt` must never give a confident wrong peak
//! (issue 12). XLA ends every line with a newline and lists every allocation; the
//! values file (`Total bytes used`), the memory usage report (per-space `Total bytes`)
//! and the live range (values that no allocation holds) tell when lines are missing.
//! Each test cuts a real fixture at many offsets.

use oomdoc_memory::{load_dump, MemoryError, ModuleReport, SourcePreference};
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

/// Text files of a fixture, minus those whose names end with one of `drop`.
fn scratch(from: &str, test: &str, drop: &[&str]) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-trunc-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture(from)).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        let keep = entry.file_type().unwrap().is_file() && !name.contains(".hlo.pb") && !drop.iter().any(|d| name.ends_with(d));
        if keep {
            std::fs::copy(entry.path(), dir.join(&name)).unwrap();
        }
    }
    dir
}

fn ba_path(dir: &Path) -> PathBuf {
    std::fs::read_dir(dir).unwrap().flatten().map(|e| e.path()).find(|p| p.to_str().unwrap().ends_with("-buffer-assignment.txt")).unwrap()
}

fn analyze(dir: &Path) -> Result<ModuleReport, MemoryError> {
    load_dump(dir)?.modules[0].analyze(SourcePreference::Text)
}

/// Cut points: every line boundary and a spread of offsets inside lines.
fn cuts(text: &str) -> Vec<usize> {
    let mut at: Vec<usize> = text.match_indices('\n').map(|(i, _)| i + 1).collect();
    at.extend((1..40).map(|k| text.len() * k / 40));
    at.retain(|&c| c > "BufferAssignment:\n".len() && c < text.len());
    at.sort_unstable();
    at.dedup();
    at
}

/// Cut the buffer assignment everywhere: each result is an error, a warning, or the
/// full file's exact answer — never a different peak given with confidence.
fn never_confidently_wrong(from: &str, test: &str, drop: &[&str]) -> (usize, usize, usize) {
    let dir = scratch(from, test, drop);
    let full = analyze(&dir).unwrap();
    assert!(full.warnings.is_empty(), "{:?}", full.warnings);
    let ba = ba_path(&dir);
    let text = std::fs::read_to_string(&ba).unwrap();
    let (mut errors, mut warned, mut same) = (0, 0, 0);
    for cut in cuts(&text) {
        std::fs::write(&ba, &text[..cut]).unwrap();
        match analyze(&dir) {
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains("buffer-assignment") || msg.contains("live-range") || msg.contains("usage-report"), "cut {cut}: {msg}");
                errors += 1;
            }
            Ok(r) if !r.warnings.is_empty() => {
                assert!(r.warnings[0].contains("truncated"), "{:?}", r.warnings);
                warned += 1;
            }
            Ok(r) => {
                assert_eq!(
                    (r.peak_bytes, r.buffers_at_peak.len(), r.total_allocation_bytes),
                    (full.peak_bytes, full.buffers_at_peak.len(), full.total_allocation_bytes),
                    "cut at byte {cut} of {} gave a different answer with no warning",
                    text.len()
                );
                same += 1;
            }
        }
    }
    std::fs::write(&ba, &text).unwrap();
    eprintln!("{from}: {} cuts: {errors} errors, {warned} warnings, {same} same answer", cuts(&text).len());
    (errors, warned, same)
}

#[test]
fn truncated_buffer_assignment_without_values_file_is_never_confidently_wrong() {
    // No values file, no usage report: the newline and live-range checks alone.
    let (errors, warned, _) = never_confidently_wrong("mlp_train_step", "mlp", &["-buffer-assignment-values.txt"]);
    assert!(errors > 0 && warned > 0, "errors {errors}, warnings {warned}");
}

#[test]
fn with_the_memory_usage_report_lost_allocations_are_errors() {
    // A real jaxlib 0.10.2 dump with its -memory-usage-report.txt and no values file:
    // a cut that loses whole allocations is an error; one inside the last allocation's
    // values is a warning (the totals still add up).
    let (errors, warned, same) = never_confidently_wrong("compressed_dump", "usage", &["-buffer-assignment-values.txt"]);
    assert!(errors > 0 && warned > 0 && same == 0, "errors {errors}, warnings {warned}, same {same}");
}

#[test]
fn a_cut_inside_a_shape_is_an_error() {
    // `f32[256,10` still reads as a value line: the missing newline gives it away.
    let dir = scratch("mlp_train_step", "shape", &["-buffer-assignment-values.txt"]);
    let ba = ba_path(&dir);
    let text = std::fs::read_to_string(&ba).unwrap();
    std::fs::write(&ba, text.trim_end_matches('\n').trim_end_matches("]{1,0}")).unwrap();
    let e = analyze(&dir).unwrap_err().to_string();
    assert!(e.contains("-buffer-assignment.txt:113:") && e.contains("middle of this line"), "{e}");
}

#[test]
fn a_cut_live_range_is_an_error() {
    let dir = scratch("mlp_train_step", "lr", &[]);
    let lr = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).find(|p| p.to_str().unwrap().ends_with("-live-range.txt")).unwrap();
    let text = std::fs::read_to_string(&lr).unwrap();
    // Inside `BufferLiveRange:`, after the first digit of a range end.
    let at = text.find("BufferLiveRange:").unwrap();
    let line_end = at + text[at..].find("\n    ").unwrap() + 1;
    let next = line_end + text[line_end..].find('\n').unwrap();
    let dash = text[line_end..next].rfind('-').unwrap() + line_end;
    std::fs::write(&lr, &text[..dash + 2]).unwrap();
    let e = analyze(&dir).unwrap_err().to_string();
    assert!(e.contains("-live-range.txt") && e.contains("middle of this line"), "{e}");
}

#[test]
fn usage_report_totals_check_the_buffer_assignment() {
    let dir = scratch("compressed_dump", "totals", &[]);
    let full = analyze(&dir).unwrap();
    let ma: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(fixture("compressed_dump/golden/memory_analysis.json")).unwrap()).unwrap();
    assert_eq!(full.temp_bytes, ma["temp_size_in_bytes"].as_u64().unwrap());
    assert_eq!(full.arguments_bytes, ma["argument_size_in_bytes"].as_u64().unwrap());
    assert_eq!(full.outputs_bytes, ma["output_size_in_bytes"].as_u64().unwrap());
    let report = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).find(|p| p.to_str().unwrap().ends_with("-memory-usage-report.txt")).unwrap();
    let text = std::fs::read_to_string(&report).unwrap();
    std::fs::write(&report, text.replacen("Total bytes: 270368", "Total bytes: 270372", 1)).unwrap();
    let e = analyze(&dir).unwrap_err().to_string();
    assert!(e.contains("memory-usage-report.txt:2:") && e.contains("270368"), "{e}");
}
