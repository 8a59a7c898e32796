//! PyTorch memory snapshots: the real files of every format generation in
//! `../shared/fixtures/pytorch-snapshots/` (never copied into this repository) read with
//! the numbers PyTorch's own code gives (`crates/memory/tools/snapshot_golden.py`
//! wrote the goldens with torch.cuda._memory_viz and a port of the viewer's replay).

use oomdoc_memory::pytorch::analysis::{AnalysisOptions, Moment};
use oomdoc_memory::pytorch::{analyze, load_snapshot, snapshot::Snapshot, SnapshotReport};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/pytorch-snapshots");
    assert!(dir.is_dir(), "{} is missing: the snapshot fixtures live in the workspace's shared/ directory", dir.display());
    dir
}

fn fixture(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

fn load(name: &str) -> (Snapshot, SnapshotReport) {
    let path = fixture(name);
    let snap = load_snapshot(&path, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let report = analyze(&path, &snap, &AnalysisOptions::default());
    (snap, report)
}

const FIXTURES: [&str; 8] = [
    "g0-legacy-segment-list.pkl",
    "g0-torch2.0-history-blocks-oomtime.pickle",
    "g1-frames-no-time.pickle",
    "g2-time_us.pickle",
    "g3-allocator-settings.pickle",
    "g4-compile-context-expandable-3gpu-OOM.pickle",
    "g4-compile-context-expandable-small.pickle",
    "g5-user-metadata-windows.pickle",
];

#[test]
fn every_fixture_equals_pytorchs_numbers_to_the_byte() {
    let golden_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pytorch_snapshots");
    for name in FIXTURES {
        let golden: Value = serde_json::from_str(&std::fs::read_to_string(golden_dir.join(format!("{name}.golden.json"))).unwrap()).unwrap();
        let (_, report) = load(name);
        let devices = golden["devices"].as_array().unwrap();
        assert_eq!(report.devices.len(), devices.len(), "{name}: devices");
        for (d, g) in report.devices.iter().zip(devices) {
            let ctx = format!("{name} device {}", d.device);
            assert_eq!(d.device, g["device"].as_i64().unwrap(), "{ctx}");
            assert_eq!(d.segments as u64, g["segments"].as_u64().unwrap(), "{ctx}: segments");
            assert_eq!(d.reserved_bytes, g["reserved_bytes"].as_u64().unwrap(), "{ctx}: reserved");
            assert_eq!(d.allocated_bytes, g["allocated_bytes"].as_u64().unwrap(), "{ctx}: allocated");
            assert_eq!(d.requested_bytes, g["requested_bytes"].as_u64().unwrap(), "{ctx}: requested");
            assert_eq!(d.active_bytes, g["active_bytes"].as_u64().unwrap(), "{ctx}: active");
            assert_eq!(d.trace_entries as u64, g["trace_entries"].as_u64().unwrap(), "{ctx}: trace entries");
            assert_eq!(d.peak_bytes, g["peak_bytes"].as_u64().unwrap(), "{ctx}: peak");
            match (&d.oom, g["oom"].as_object()) {
                (None, None) => {}
                (Some(o), Some(go)) => {
                    assert_eq!(o.requested_bytes, go["requested_bytes"].as_u64().unwrap(), "{ctx}: oom request");
                    assert_eq!(o.device_free_bytes, go["device_free_bytes"].as_u64(), "{ctx}: oom device free");
                }
                (a, b) => panic!("{ctx}: oom {a:?} vs golden {b:?}"),
            }
        }
    }
}

#[test]
fn each_generation_is_recognised() {
    let expect = [
        ("g0-legacy-segment-list.pkl", "segment-list"),
        ("g0-torch2.0-history-blocks-oomtime.pickle", "G0 (2.0)"),
        ("g1-frames-no-time.pickle", "G1 (2.1)"),
        ("g2-time_us.pickle", "G2 (2.2)"),
        ("g3-allocator-settings.pickle", "G3 (2.3-2.7)"),
        ("g4-compile-context-expandable-3gpu-OOM.pickle", "G4 (2.8-2.9)"),
        ("g5-user-metadata-windows.pickle", "G5 (2.10+)"),
    ];
    for (name, generation) in expect {
        let (snap, _) = load(name);
        assert_eq!(snap.generation, generation, "{name}");
    }
}

#[test]
fn the_oom_fixture_names_the_lines_that_held_the_memory() {
    let (snap, report) = load("g4-compile-context-expandable-3gpu-OOM.pickle");
    let d = report.devices.iter().find(|d| d.device == 1).unwrap();
    let oom = d.oom.as_ref().expect("device 1 has an oom entry");
    assert_eq!(oom.event_index, 421);
    assert_eq!(oom.requested_bytes, 5_308_694_528);
    assert_eq!(oom.device_free_bytes, Some(95_682_560));
    assert_eq!((oom.live_count, d.moment), (111, Moment::Oom));
    // 78.29 GiB live at the OOM; the three top sites hold 88% of it.
    assert_eq!(oom.live_bytes, d.live_bytes);
    assert!((84_000_000_000..84_100_000_000).contains(&oom.live_bytes), "{}", oom.live_bytes);
    let top: Vec<(String, u64)> = d.call_sites.iter().take(4).map(|c| (c.site.rsplit('/').next().unwrap().to_string(), c.count)).collect();
    assert_eq!(
        top,
        vec![("models.py:174:update_nodes".into(), 12), ("models.py:181:update_nodes".into(), 5), ("models.py:176:update_nodes".into(), 12), ("models.py:178:update_nodes".into(), 1)]
    );
    // The full stack of a call site starts at the allocation and reaches the user's line.
    let stack = oomdoc_memory::pytorch::render::stack_lines(&snap, d.call_sites[0].stack);
    assert!(stack.iter().any(|l| l.contains("models.py:174:update_nodes")), "{stack:?}");
    assert!(oomdoc_memory::pytorch::analysis::call_site(&snap, oom.stack).ends_with("models.py:181:update_nodes"));
    // Expandable segments: the reserved-but-free total is no fragmentation verdict.
    assert!(d.fragmentation.expandable);
}

#[test]
fn segments_that_do_not_add_up_warn_and_never_panic() {
    let (snap, report) = load("g4-compile-context-expandable-small.pickle");
    assert_eq!(snap.warnings.len(), 3, "{:?}", snap.warnings);
    assert!(snap.warnings[0].contains("5 of 5 segments: total_size disagrees"), "{}", snap.warnings[0]);
    assert_eq!(report.devices[0].reserved_bytes, 262_144_000);
    for name in FIXTURES.iter().filter(|n| !n.contains("small")) {
        let (snap, _) = load(name);
        assert!(snap.warnings.is_empty(), "{name}: {:?}", snap.warnings);
    }
}

#[test]
fn memory_stays_within_the_budget_on_real_files() {
    for name in FIXTURES {
        let (snap, _) = load(name);
        let len = std::fs::metadata(fixture(name)).unwrap().len();
        // Charged bytes per input byte (pickle arenas with growth slack, and the typed model).
        let ratio = snap.budget_used as f64 / len as f64;
        eprintln!("{name}: {len} bytes, {} charged ({ratio:.2}x)", snap.budget_used);
        assert!(snap.budget_used <= oomdoc_memory::MAX_BYTES_PER_INPUT_BYTE * len + oomdoc_memory::DECODE_SLACK_BYTES, "{name}: {ratio}");
    }
}

#[test]
fn the_legacy_block_history_gives_stacks() {
    let (snap, report) = load("g0-torch2.0-history-blocks-oomtime.pickle");
    let d = &report.devices[0];
    assert_eq!(d.call_sites[0].site.rsplit('/').next().unwrap(), "pytorch_backend.py:190:allocate");
    assert_eq!((d.call_sites[0].count, d.live_count), (460, 460));
    assert!(snap.frames(d.call_sites[0].stack).len() > 5);
}
