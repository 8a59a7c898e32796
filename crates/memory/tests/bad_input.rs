//! Bad input gives a typed error naming the file (and line, for text), never a panic.

use oomdoc_memory::{load_dump, MemoryError, SourcePreference};
use std::path::{Path, PathBuf};

const MLP: &str = "module_0034.jit_mlp_train_step.cpu_after_optimizations";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// A scratch copy of the mlp fixture (dump files only) that a test can damage.
fn scratch(test: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-memory-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture("mlp_train_step")).unwrap().flatten() {
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), dir.join(entry.file_name())).unwrap();
        }
    }
    dir
}

fn file(dir: &Path, suffix: &str) -> PathBuf {
    dir.join(format!("{MLP}{suffix}"))
}

fn edit(path: &Path, f: impl FnOnce(String) -> String) {
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, f(text)).unwrap();
}

fn analyze(dir: &Path, source: SourcePreference) -> Result<oomdoc_memory::ModuleReport, MemoryError> {
    load_dump(dir)?.modules[0].analyze(source)
}

#[test]
fn empty_directory() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("oomdoc-memory-empty");
    std::fs::create_dir_all(&dir).unwrap();
    let e = load_dump(&dir).unwrap_err();
    assert!(matches!(e, MemoryError::NoDumps { .. }), "{e}");
    assert!(e.to_string().contains("no XLA memory dumps"), "{e}");
}

#[test]
fn missing_path() {
    let e = load_dump(Path::new("/nonexistent/oomdoc/dump")).unwrap_err();
    assert!(matches!(e, MemoryError::Io { .. }), "{e}");
}

#[test]
fn buffer_assignment_cut_mid_line() {
    let dir = scratch("cut-ba");
    let ba = file(&dir, "-buffer-assignment.txt");
    edit(&ba, |t| t[..t.find("(size=1048576,offset=1048576)").unwrap() + 10].to_string());
    let e = analyze(&dir, SourcePreference::Text).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, MemoryError::Parse { .. }), "{msg}");
    assert!(msg.contains("-buffer-assignment.txt:105:"), "{msg}");
}

#[test]
fn buffer_assignment_cut_at_line_boundary() {
    // Losing whole trailing allocations is caught by the values file (unknown values,
    // or a `Total bytes used` that no longer adds up).
    let dir = scratch("short-ba");
    edit(&file(&dir, "-buffer-assignment.txt"), |t| t[..t.find("allocation 44:").unwrap()].to_string());
    let e = analyze(&dir, SourcePreference::Text).unwrap_err();
    assert!(matches!(e, MemoryError::Inconsistent { .. }), "{e}");
    assert!(e.to_string().contains("values.txt:"), "{e}");
    // A buffer assignment that lost a whole trailing allocation with no values.
    let dir = scratch("short-total");
    edit(&file(&dir, "-buffer-assignment-values.txt"), |t| t.replacen("Total bytes used: 16382204", "Total bytes used: 16382208", 1));
    let e = analyze(&dir, SourcePreference::Text).unwrap_err();
    assert!(e.to_string().contains("Total bytes used"), "{e}");
}

#[test]
fn live_range_from_another_compilation() {
    let dir = scratch("mixed-lr");
    let other = fixture("transformer_train_step").join("module_0028.jit_transformer_train_step.cpu_after_optimizations-live-range.txt");
    std::fs::copy(other, file(&dir, "-live-range.txt")).unwrap();
    let e = analyze(&dir, SourcePreference::Text).unwrap_err();
    assert!(e.to_string().contains("no live range for value"), "{e}");
    assert!(e.to_string().contains("-live-range.txt"), "{e}");
}

#[test]
fn values_naming_unknown_values() {
    let dir = scratch("unknown-value");
    edit(&file(&dir, "-buffer-assignment-values.txt"), |t| t.replacen("<179 params_0__0_.1 @0>", "<99999 params_0__0_.1 @0>", 1));
    let e = analyze(&dir, SourcePreference::Text).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, MemoryError::Inconsistent { line: Some(_), .. }), "{msg}");
    assert!(msg.contains("values.txt:") && msg.contains("99999"), "{msg}");
}

#[test]
fn values_file_truncated() {
    let dir = scratch("cut-values");
    edit(&file(&dir, "-buffer-assignment-values.txt"), |t| {
        let cut = t.rfind(" from instruction:").unwrap();
        t[..cut].to_string()
    });
    let e = analyze(&dir, SourcePreference::Text).unwrap_err();
    assert!(e.to_string().contains("no ` from instruction:` line"), "{e}");
}

#[test]
fn live_range_not_available() {
    let dir = scratch("no-lr");
    std::fs::write(file(&dir, "-live-range.txt"), "HloLiveRange not available (finalized or constructed from proto)\n").unwrap();
    let e = analyze(&dir, SourcePreference::Text).unwrap_err();
    assert!(matches!(e, MemoryError::Incomplete { .. }), "{e}");
    // ... but the proto still works.
    assert!(analyze(&dir, SourcePreference::Auto).is_ok());
}

#[test]
fn proto_that_is_not_an_hlo_proto() {
    let dir = scratch("bad-proto");
    let pb = file(&dir, ".hlo.pb");
    std::fs::copy(file(&dir, "-live-range.txt"), &pb).unwrap();
    let e = analyze(&dir, SourcePreference::Proto).unwrap_err();
    assert!(matches!(e, MemoryError::Proto { .. }), "{e}");
    assert!(e.to_string().contains(".hlo.pb"), "{e}");
    // The serialized BufferAssignmentProto alone is a valid protobuf but not an HloProto.
    let mut bytes = std::fs::read(fixture("mlp_train_step").join(format!("{MLP}.hlo.pb"))).unwrap();
    bytes.truncate(bytes.len() / 2);
    std::fs::write(&pb, &bytes).unwrap();
    let e = analyze(&dir, SourcePreference::Proto).unwrap_err();
    assert!(matches!(e, MemoryError::Proto { .. }), "{e}");
}

#[test]
fn older_layout_with_values_inside_the_buffer_assignment() {
    // Older XLA: one file with allocations, `Total bytes used:` and `Used values:`.
    let dir = scratch("old-layout");
    let values = std::fs::read_to_string(file(&dir, "-buffer-assignment-values.txt")).unwrap();
    edit(&file(&dir, "-buffer-assignment.txt"), |t| format!("{t}{values}"));
    std::fs::remove_file(file(&dir, "-buffer-assignment-values.txt")).unwrap();
    let r = analyze(&dir, SourcePreference::Text).unwrap();
    assert_eq!(r.peak_bytes, 16_382_096);
    assert!(r.buffers_at_peak.iter().any(|b| !b.op_name.is_empty()));
}

#[test]
fn human_readable_allocation_sizes() {
    let dir = scratch("human-sizes");
    edit(&file(&dir, "-buffer-assignment.txt"), |t| t.replace("allocation 1: size 4194304,", "allocation 1: size 4.00MiB,"));
    std::fs::remove_file(file(&dir, "-buffer-assignment-values.txt")).unwrap();
    let r = analyze(&dir, SourcePreference::Text).unwrap();
    assert_eq!(r.arguments_bytes, 6_875_176);
}

#[test]
fn explicit_non_dump_file() {
    let e = load_dump(&fixture("mlp_train_step").join("golden/memory_analysis.json")).unwrap_err();
    assert!(e.to_string().contains("not a recognised XLA dump file"), "{e}");
}
