//! The numbers must equal XProf's own Memory Viewer output and JAX's
//! `compile().memory_analysis()` for every real dump in `tests/fixtures/`, whichever
//! input is analysed (text dump set or HloProto).

use oomdoc_memory::{load_dump, ModuleReport, SourcePreference};
use serde_json::Value;
use std::path::{Path, PathBuf};

const MIB: f64 = (1u64 << 20) as f64;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// MiB as XProf writes them (a double, itself a sum of doubles) → bytes, to the byte.
fn bytes(v: &Value) -> u64 {
    let mib = v.as_f64().unwrap_or(0.0);
    let b = mib * MIB;
    assert!((b - b.round()).abs() < 1e-3, "{mib} MiB is not a whole number of bytes");
    b.round() as u64
}

fn golden(program: &str) -> (Value, Value) {
    let dir = fixtures().join(program).join("golden");
    let read = |f: &str| serde_json::from_str(&std::fs::read_to_string(dir.join(f)).unwrap()).unwrap();
    (read("xprof_memory_viewer.json"), read("memory_analysis.json"))
}

fn analyze(program: &str, source: SourcePreference) -> ModuleReport {
    let dump = load_dump(&fixtures().join(program)).unwrap();
    assert_eq!(dump.modules.len(), 1, "{program}");
    dump.modules[0].analyze(source).unwrap_or_else(|e| panic!("{program}: {e}"))
}

fn check(program: &str, source: SourcePreference) {
    let (xprof, ma) = golden(program);
    let r = analyze(program, source);
    check_report(&r, &xprof, &ma, &format!("{program} via {source:?}"));
}

fn check_report(r: &ModuleReport, xprof: &Value, ma: &Value, ctx: &str) {
    assert_eq!(r.name, xprof["moduleName"].as_str().unwrap(), "{ctx}");
    assert_eq!(r.peak_bytes, bytes(&xprof["peakHeapMib"]), "{ctx}: peak");
    assert_eq!(r.peak_unpadded_bytes, bytes(&xprof["peakUnpaddedHeapMib"]), "{ctx}: unpadded peak");
    assert_eq!(r.total_allocation_bytes, bytes(&xprof["totalBufferAllocationMib"]), "{ctx}: total");
    assert_eq!(r.indefinite_bytes, bytes(&xprof["indefiniteBufferAllocationMib"]), "{ctx}: indefinite");

    let mut ours: Vec<u64> = r.buffers_at_peak.iter().map(|b| b.size_bytes).collect();
    let mut theirs: Vec<u64> = xprof["maxHeapBySize"].as_array().unwrap().iter().map(|h| bytes(&h["logicalBufferSizeMib"])).collect();
    // Both lists are sorted by size, descending (ties in any order).
    assert!(ours.windows(2).all(|w| w[0] >= w[1]), "{ctx}: buffers not sorted by size");
    ours.sort_unstable();
    theirs.sort_unstable();
    assert_eq!(ours, theirs, "{ctx}: sizes of buffers at peak");

    let mut our_names: Vec<String> = r.buffers_at_peak.iter().map(|b| b.name.clone()).collect();
    let mut their_names: Vec<String> =
        xprof["maxHeapBySize"].as_array().unwrap().iter().map(|h| h.get("instructionName").and_then(Value::as_str).unwrap_or("small (<16384 bytes)").to_string()).collect();
    our_names.sort();
    their_names.sort();
    assert_eq!(our_names, their_names, "{ctx}: buffers at peak");
    for (ours, theirs) in r.buffers_at_peak.iter().filter(|b| b.logical_buffer_id.is_some()).map(|b| {
        let h = xprof["maxHeapBySize"].as_array().unwrap().iter().find(|h| h["logicalBufferId"].as_u64() == b.logical_buffer_id).expect("same buffer");
        (b, h)
    }) {
        assert_eq!(ours.shape, theirs["shapeString"].as_str().unwrap(), "{ctx}");
        assert_eq!(ours.group, theirs["groupName"].as_str().unwrap(), "{ctx}");
        assert_eq!(ours.op_name, theirs.get("tfOpName").and_then(Value::as_str).unwrap_or(""), "{ctx}");
        assert_eq!(ours.unpadded_bytes, bytes(&theirs["unpaddedShapeMib"]), "{ctx}");
        if let Some(src) = theirs.get("sourceInfo") {
            let want = format!("{}:{}", src["fileName"].as_str().unwrap(), src["lineNumber"]);
            assert!(ours.source.ends_with(&want), "{ctx}: source {} vs {want}", ours.source);
        }
    }

    for (field, ours) in [
        ("argument_size_in_bytes", r.arguments_bytes),
        ("output_size_in_bytes", r.outputs_bytes),
        ("alias_size_in_bytes", r.alias_bytes),
        ("temp_size_in_bytes", r.temp_bytes),
    ] {
        assert_eq!(ours, ma[field].as_u64().unwrap(), "{ctx}: {field}");
    }
}

/// The HloProto path reproduces XProf's whole timeline, event by event.
fn check_timeline(program: &str) {
    let (xprof, _) = golden(program);
    check_report_timeline(&analyze(program, SourcePreference::Proto), &xprof, program);
}

fn check_report_timeline(r: &ModuleReport, xprof: &Value, program: &str) {
    // proto3 JSON omits empty lists: a module without temporaries has no timeline.
    let empty = Vec::new();
    let list = |k: &str| xprof.get(k).and_then(Value::as_array).unwrap_or(&empty).clone();
    if list("heapSizes").is_empty() {
        assert!(r.timeline.is_empty(), "{program}");
        return;
    }
    assert_eq!(r.peak_position, xprof["peakHeapSizePosition"].as_u64().unwrap_or(0), "{program}");
    let heap: Vec<u64> = list("heapSizes").iter().map(bytes).collect();
    let names: Vec<String> = list("hloInstructionNames").iter().map(|v| v.as_str().unwrap_or("").to_string()).collect();
    assert_eq!(r.timeline.len() + 1, heap.len(), "{program}");
    for (i, p) in r.timeline.iter().enumerate() {
        assert_eq!(p.bytes, heap[i + 1], "{program}: after event {i}");
        assert_eq!(p.instruction, names[i], "{program}: event {i}");
    }
    assert_eq!(r.timeline[r.peak_position as usize].bytes, r.peak_bytes);
    assert_eq!(r.peak_instruction, names[r.peak_position as usize], "{program}");
}

#[test]
fn mlp_matches_xprof() {
    check("mlp_train_step", SourcePreference::Text);
    check("mlp_train_step", SourcePreference::Proto);
    check_timeline("mlp_train_step");
}

#[test]
fn transformer_matches_xprof() {
    check("transformer_train_step", SourcePreference::Text);
    check("transformer_train_step", SourcePreference::Proto);
    check_timeline("transformer_train_step");
}

#[test]
fn donated_matches_xprof() {
    check("donated_adam_update", SourcePreference::Text);
    check("donated_adam_update", SourcePreference::Proto);
    check_timeline("donated_adam_update");
}

/// XProf's cached `<module>(<id>).hlo_proto.pb` inside a profile directory.
#[test]
fn xprof_profile_directory() {
    let (xprof, _) = golden("mlp_train_step");
    let dump = load_dump(&fixtures().join("xprof_profile_dir")).unwrap();
    assert_eq!(dump.modules.len(), 1);
    assert_eq!(dump.modules[0].name, "jit_mlp_train_step");
    assert_eq!(dump.modules[0].program_id, Some(34));
    let r = dump.modules[0].analyze(SourcePreference::Auto).unwrap();
    assert_eq!(r.peak_bytes, bytes(&xprof["peakHeapMib"]));
}

/// Dumps made by `fixtures-gen/gen.py` (scan + fori_loop, remat in bf16, several modules
/// in one directory): every module against its own XProf output and memory_analysis().
/// `OOMDOC_MEMORY_EXTRA_FIXTURES=DIR1:DIR2` adds more `gen.py` fixture folders (e.g. the
/// 32-layer unrolled transformer, too big to commit).
#[test]
fn generated_fixtures_match_xprof() {
    let mut checked = 0;
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures().join("gen")).unwrap().flatten().map(|e| e.path()).collect();
    if let Some(extra) = std::env::var_os("OOMDOC_MEMORY_EXTRA_FIXTURES") {
        dirs.extend(std::env::split_paths(&extra));
    }
    for dir in dirs {
        let dump = load_dump(&dir).unwrap();
        for m in &dump.modules {
            let read = |kind: &str| -> Value {
                let p = dir.join("golden").join(format!("{kind}.{}.json", m.prefix.rsplit_once('.').unwrap().0));
                serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
            };
            let (xprof, ma) = (read("xprof_memory_viewer"), read("memory_analysis"));
            for source in [SourcePreference::Text, SourcePreference::Proto] {
                let r = m.analyze(source).unwrap_or_else(|e| panic!("{}: {e}", m.prefix));
                check_report(&r, &xprof, &ma, &format!("{} via {source:?}", m.prefix));
                if source == SourcePreference::Proto {
                    check_report_timeline(&r, &xprof, &m.prefix);
                }
            }
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} generated modules found");
}
