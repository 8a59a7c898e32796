//! Memory spaces against XProf on a real module. JAX on CPU puts every buffer in space 0,
//! so the fixture is a real dump (`donated_adam_update`) whose optimizer-state
//! allocations were moved to the host space (5), in its `.hlo.pb` and in its text files
//! alike, by `fixtures-gen/recolor.py`; the goldens are XProf 2.24.2's Memory Viewer
//! for `memory_space` 0 and 5 on that HloProto.

use oomdoc_memory::{load_dump, ModuleReport, SourcePreference};
use serde_json::Value;
use std::path::Path;

fn golden(space: u64) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/spaces/donated_adam_offload/golden/xprof_memory_viewer.space{space}.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn bytes(v: &Value) -> u64 {
    (v.as_f64().unwrap_or(0.0) * 1048576.0).round() as u64
}

fn report(source: SourcePreference, space: u64) -> ModuleReport {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spaces/donated_adam_offload");
    load_dump(&dir).unwrap().modules[0].analyze_space(source, space).unwrap()
}

#[test]
fn device_and_host_views_match_xprof_from_text_and_proto() {
    for space in [0u64, 5] {
        let xprof = golden(space);
        for source in [SourcePreference::Text, SourcePreference::Proto] {
            let r = report(source, space);
            let ctx = format!("space {space}, {source:?}");
            assert_eq!(r.peak_bytes, bytes(&xprof["peakHeapMib"]), "{ctx}: peak");
            assert_eq!(r.peak_unpadded_bytes, bytes(&xprof["peakUnpaddedHeapMib"]), "{ctx}: unpadded peak");
            assert_eq!(r.total_allocation_bytes, bytes(&xprof["totalBufferAllocationMib"]), "{ctx}: total");
            assert_eq!(r.indefinite_bytes, bytes(&xprof["indefiniteBufferAllocationMib"]), "{ctx}: indefinite");
            let mut ours: Vec<(String, u64)> = r.buffers_at_peak.iter().map(|b| (b.name.clone(), b.size_bytes)).collect();
            let mut theirs: Vec<(String, u64)> = xprof
                .get("maxHeapBySize")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|h| (h.get("instructionName").and_then(Value::as_str).unwrap_or("small (<16384 bytes)").to_string(), bytes(&h["logicalBufferSizeMib"]))).collect())
                .unwrap_or_default();
            ours.sort();
            theirs.sort();
            assert_eq!(ours, theirs, "{ctx}: buffers at the peak");
        }
    }
}

#[test]
fn host_allocations_never_count_in_the_device_peak() {
    let original = load_dump(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/donated_adam_update")).unwrap().modules[0].analyze(SourcePreference::Proto).unwrap();
    let device = report(SourcePreference::Proto, 0);
    let host = report(SourcePreference::Proto, 5);
    // The moved optimizer state (parameters, live for the whole program) left the device
    // peak and the device total for the host's, byte for byte.
    assert!(host.peak_bytes > 0);
    assert_eq!(device.peak_bytes + host.peak_bytes, original.peak_bytes);
    assert_eq!(device.total_allocation_bytes + host.total_allocation_bytes, original.total_allocation_bytes);
    assert_eq!(device.host_arguments_bytes, host.peak_bytes);
    assert_eq!(device.arguments_bytes + device.host_arguments_bytes, original.arguments_bytes);
    assert!(device.buffers_at_peak.iter().all(|b| !b.name.starts_with("opt_state")), "{:?}", device.buffers_at_peak);
}
