//! Profiles: a real `jax.profiler` log directory (trimmed to its metadata plane, see
//! `tests/fixtures/profile_multi_module/README.md`) must give XProf's own memory viewer
//! numbers for every module, whether the log dir or the `.xplane.pb` is named, and the
//! TensorBoard layout (several runs, several hosts, XProf's cache and a dump beside it)
//! must list each module once.

use oomdoc_memory::{load_dump, load_dump_with, LoadOptions, MemoryError, ModuleReport, SourcePreference};
use serde_json::Value;
use std::path::{Path, PathBuf};

const MIB: f64 = (1u64 << 20) as f64;
const RUN: &str = "2026_11_24_04_12_04";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/profile_multi_module")
}

fn xplane() -> PathBuf {
    fixture().join("plugins/profile").join(RUN).join("vm.xplane.pb")
}

fn bytes(v: &Value) -> u64 {
    (v.as_f64().unwrap_or(0.0) * MIB).round() as u64
}

fn golden(label: &str) -> Value {
    let p = fixture().join("golden").join(format!("xprof_memory_viewer.{label}.json"));
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))).unwrap()
}

fn check(r: &ModuleReport, x: &Value, ctx: &str) {
    assert_eq!(r.name, x["moduleName"].as_str().unwrap(), "{ctx}");
    assert_eq!(r.peak_bytes, bytes(&x["peakHeapMib"]), "{ctx}: peak");
    assert_eq!(r.peak_unpadded_bytes, bytes(&x["peakUnpaddedHeapMib"]), "{ctx}: unpadded peak");
    assert_eq!(r.total_allocation_bytes, bytes(&x["totalBufferAllocationMib"]), "{ctx}: total");
    assert_eq!(r.indefinite_bytes, bytes(&x["indefiniteBufferAllocationMib"]), "{ctx}: indefinite");
    let mut ours: Vec<(String, u64, String)> = r
        .buffers_at_peak
        .iter()
        .map(|b| (b.name.clone(), b.size_bytes, if b.logical_buffer_id.is_some() { b.shape.clone() } else { String::new() }))
        .collect();
    let empty = vec![];
    let mut theirs: Vec<(String, u64, String)> = x["maxHeapBySize"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .map(|h| match h.get("instructionName").and_then(Value::as_str) {
            Some(n) => (n.to_string(), bytes(&h["logicalBufferSizeMib"]), h["shapeString"].as_str().unwrap_or("").to_string()),
            None => ("small (<16384 bytes)".to_string(), bytes(&h["logicalBufferSizeMib"]), String::new()),
        })
        .collect();
    ours.sort();
    theirs.sort();
    assert_eq!(ours, theirs, "{ctx}: buffers at peak");
}

/// Every module of the profile, from the log dir and from the file, equals XProf.
#[test]
fn every_module_of_a_real_profile_matches_xprof() {
    for root in [fixture(), xplane()] {
        let dump = load_dump(&root).unwrap();
        assert_eq!(dump.modules.len(), 13, "{}", root.display());
        for m in &dump.modules {
            let label = format!("{}({})", m.name, m.program_id.unwrap());
            assert_eq!(m.files.hosts, ["vm"]);
            let r = m.analyze(SourcePreference::Auto).unwrap_or_else(|e| panic!("{label}: {e}"));
            check(&r, &golden(&label), &label);
        }
    }
    // Names and ids come from the proto: the same module under any file name.
    let dir = tempdir("renamed");
    std::fs::copy(xplane(), dir.join("whatever.xplane.pb")).unwrap();
    let dump = load_dump(&dir.join("whatever.xplane.pb")).unwrap();
    let m = dump.select("jit_multi_decode").unwrap();
    assert_eq!(m.program_id, Some(24));
    assert_eq!(m.files.hosts, ["vm"], "host from the XSpace, not the file name");
    check(&m.analyze(SourcePreference::Auto).unwrap(), &golden("jit_multi_decode(24)"), "renamed");
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-profile-{tag}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Several runs (newest by default, `run` to choose), several hosts, XProf's
/// `<module>(<id>).hlo_proto.pb` cache and an XLA dump of the same modules side by side.
#[test]
fn log_dir_with_runs_hosts_cache_and_dump() {
    let logdir = tempdir("logdir");
    let newest = logdir.join("plugins/profile/2026_12_01_00_00_00");
    let older = logdir.join("plugins/profile").join(RUN);
    std::fs::create_dir_all(&newest).unwrap();
    std::fs::create_dir_all(&older).unwrap();
    std::fs::copy(xplane(), older.join("vm.xplane.pb")).unwrap();
    // The newest run: two hosts with the same programs, plus XProf's cache of two modules.
    std::fs::copy(xplane(), newest.join("host0.xplane.pb")).unwrap();
    // host1: the same XSpace with its `hostnames` entry (the file's last field, "vm") renamed.
    let mut other = std::fs::read(xplane()).unwrap();
    assert!(other.ends_with(&[0x22, 0x02, b'v', b'm']));
    let n = other.len();
    other[n - 2..].copy_from_slice(b"w1");
    std::fs::write(newest.join("host1.xplane.pb"), other).unwrap();
    for x in oomdoc_memory::xplane::scan_xspace(&xplane()).unwrap() {
        if x.name.starts_with("jit_multi_") {
            std::fs::write(newest.join(format!("{}({}).hlo_proto.pb", x.name, x.program_id)), x.read_proto().unwrap()).unwrap();
        }
    }
    // And the XLA dump of the same run's modules in the log dir.
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gen/multi_module"), &logdir.join("xla_dump"));

    let dump = load_dump(&logdir).unwrap();
    let labels: Vec<String> = dump.modules.iter().map(|m| m.label()).collect();
    assert_eq!(dump.modules.len(), 13, "each module once: {labels:?}");
    let m = dump.select("jit_multi_decode").unwrap();
    assert!(m.files.buffer_assignment.is_some() && m.files.xplane.is_some() && m.files.hlo_proto.is_some());
    // Host names come from the XSpace, not the file names; each host listed once.
    assert_eq!(m.files.hosts, ["vm", "w1"]);
    assert!(dump.modules.iter().all(|m| m.files.hosts == ["vm", "w1"]));
    for source in [SourcePreference::Auto, SourcePreference::Text, SourcePreference::Proto] {
        check(&m.analyze(source).unwrap(), &golden("jit_multi_decode(24)"), &format!("{source:?}"));
    }
    assert_eq!(dump.select("24").unwrap().name, "jit_multi_decode");
    // Still ambiguous by name alone: two compilations of jit_multi_encode.
    assert!(matches!(dump.select("jit_multi_encode"), Err(MemoryError::AmbiguousModule { .. })));
    assert!(dump.select("22").is_ok());

    // --run picks the older run; an unknown run is a clear error naming the runs.
    let only_old = load_dump_with(&[logdir.clone()], &LoadOptions { run: Some(RUN.into()), ..Default::default() }).unwrap();
    assert_eq!(only_old.modules.len(), 13);
    assert!(
        only_old
            .modules
            .iter()
            .all(|m| m.files.hlo_proto.as_ref().map_or(true, |p| !p.starts_with(&newest)) && m.files.xplane.as_ref().map_or(true, |x| x.path.starts_with(&older))),
        "the newer run's files are left out"
    );
    let err = load_dump_with(&[logdir.clone()], &LoadOptions { run: Some("nope".into()), ..Default::default() }).unwrap_err().to_string();
    assert!(err.contains("nope") && err.contains(RUN) && err.contains("2026_12_01_00_00_00"), "{err}");
    std::fs::remove_dir_all(&logdir).ok();
}

/// Garbage named `.xplane.pb` is a clear error, never a panic or an empty success.
#[test]
fn bad_xplane_is_an_error() {
    let dir = tempdir("bad");
    let p = dir.join("h.xplane.pb");
    let full = std::fs::read(xplane()).unwrap();
    for (i, bad) in [&b"not a protobuf at all"[..], &full[..full.len() / 2], &[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f][..]].iter().enumerate() {
        std::fs::write(&p, bad).unwrap();
        let e = load_dump(&p).expect_err(&format!("case {i}")).to_string();
        assert!(e.contains("h.xplane.pb"), "{e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Flipped bytes anywhere in a real profile: an error or a result, never a panic or hang.
#[test]
fn corrupted_profiles_never_panic() {
    let dir = tempdir("flip");
    let p = dir.join("h.xplane.pb");
    let full = std::fs::read(xplane()).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..200 {
        let mut bad = full.clone();
        for _ in 0..1 + round % 4 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let at = (seed as usize) % bad.len();
            bad[at] ^= (seed >> 32) as u8 | 1;
        }
        std::fs::write(&p, &bad).unwrap();
        if let Ok(d) = load_dump(&p) {
            for m in &d.modules {
                let _ = m.analyze(SourcePreference::Auto);
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}
