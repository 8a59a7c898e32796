//! gzip-compressed inputs (issue 12): `--xla_dump_compress_protos` writes
//! `<prefix>.hlo.pb.gz` (`xla/service/dump.cc`; the names were checked on a jaxlib 0.10.2
//! dump), and profiles may be kept as `<host>.xplane.pb.gz`. Both are read — the same
//! numbers as uncompressed — and a damaged one is an error, never a silent fallback to
//! the text dump beside it. The compressed files are made at test time from the real
//! fixtures.

use flate2::{write::GzEncoder, Compression};
use oomdoc_memory::{load_dump, SourcePreference};
use std::io::Write;
use std::path::{Path, PathBuf};

const MLP: &str = "module_0034.jit_mlp_train_step.cpu_after_optimizations";

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

fn scratch(test: &str) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-gzip-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn gzip_to(src: &Path, dst: &Path) {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(&std::fs::read(src).unwrap()).unwrap();
    std::fs::write(dst, e.finish().unwrap()).unwrap();
}

/// The mlp dump with its `.hlo.pb` replaced by `.hlo.pb.gz` (text files beside it).
fn compressed_mlp(test: &str) -> PathBuf {
    let dir = scratch(test);
    for entry in std::fs::read_dir(fixture("mlp_train_step")).unwrap().flatten() {
        let name = entry.file_name().into_string().unwrap();
        if !entry.file_type().unwrap().is_file() {
            continue;
        }
        if name.ends_with(".hlo.pb") {
            gzip_to(&entry.path(), &dir.join(format!("{name}.gz")));
        } else {
            std::fs::copy(entry.path(), dir.join(&name)).unwrap();
        }
    }
    dir
}

#[test]
fn compressed_hlo_proto_is_read_like_the_plain_one() {
    let plain = load_dump(&fixture("mlp_train_step")).unwrap().modules[0].analyze(SourcePreference::Proto).unwrap();
    let dir = compressed_mlp("hlo");
    let dump = load_dump(&dir).unwrap();
    assert_eq!(dump.modules.len(), 1);
    let m = &dump.modules[0];
    assert!(m.files.compressed_proto.is_some() && m.files.hlo_proto.is_none());
    for source in [SourcePreference::Auto, SourcePreference::Proto] {
        let r = m.analyze(source).unwrap();
        assert_eq!((r.peak_bytes, r.axis), (plain.peak_bytes, plain.axis), "{source:?}");
        assert_eq!(r.buffers_at_peak.len(), plain.buffers_at_peak.len());
        assert!(r.sources[0].ends_with(".hlo.pb.gz"), "{:?}", r.sources);
    }
    // Named explicitly, too.
    let file = dir.join(format!("{MLP}.hlo.pb.gz"));
    let r = load_dump(&file).unwrap().modules[0].analyze(SourcePreference::Auto).unwrap();
    assert_eq!(r.peak_bytes, plain.peak_bytes);
}

#[test]
fn damaged_compressed_proto_is_an_error_not_the_text_path() {
    let dir = compressed_mlp("cut");
    let gz = dir.join(format!("{MLP}.hlo.pb.gz"));
    let bytes = std::fs::read(&gz).unwrap();
    std::fs::write(&gz, &bytes[..bytes.len() / 2]).unwrap();
    let e = load_dump(&dir).unwrap().modules[0].analyze(SourcePreference::Auto).unwrap_err().to_string();
    assert!(e.contains(".hlo.pb.gz") && e.contains("decompress"), "{e}");
    // The text dump can still be chosen on purpose.
    assert!(load_dump(&dir).unwrap().modules[0].analyze(SourcePreference::Text).is_ok());
}

#[test]
fn compressed_profile_lists_and_reads_the_same_modules() {
    let run = fixture("profile_multi_module/plugins/profile");
    let run = std::fs::read_dir(&run).unwrap().flatten().next().unwrap().path();
    let xplane = run.join("vm.xplane.pb");
    let plain = load_dump(&xplane).unwrap();
    let dir = scratch("xplane");
    let run_dir = dir.join("plugins/profile").join(run.file_name().unwrap());
    std::fs::create_dir_all(&run_dir).unwrap();
    gzip_to(&xplane, &run_dir.join("vm.xplane.pb.gz"));
    for root in [dir.clone(), run_dir.join("vm.xplane.pb.gz")] {
        let gz = load_dump(&root).unwrap();
        let names = |d: &oomdoc_memory::Dump| d.modules.iter().map(|m| (m.label(), m.files.hosts.clone())).collect::<Vec<_>>();
        assert_eq!(names(&gz), names(&plain), "{}", root.display());
        for (a, b) in gz.modules.iter().zip(&plain.modules) {
            let (ra, rb) = (a.analyze(SourcePreference::Auto).unwrap(), b.analyze(SourcePreference::Auto).unwrap());
            assert_eq!((ra.peak_bytes, ra.buffers_at_peak.len()), (rb.peak_bytes, rb.buffers_at_peak.len()), "{}", a.label());
        }
    }
}

/// A real `--xla_dump_compress_protos` dump: the `.hlo.pb.gz` and the text files give
/// XProf's memory viewer numbers from the same run.
#[test]
fn real_compressed_dump_matches_xprof() {
    let dir = fixture("compressed_dump");
    let x: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("golden/xprof_memory_viewer.json")).unwrap()).unwrap();
    let mib = |v: &serde_json::Value| (v.as_f64().unwrap() * (1u64 << 20) as f64).round() as u64;
    let mut theirs: Vec<(String, u64)> = x["maxHeapBySize"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h.get("instructionName").and_then(|n| n.as_str()).unwrap_or("small (<16384 bytes)").to_string(), mib(&h["logicalBufferSizeMib"])))
        .collect();
    theirs.sort();
    let dump = load_dump(&dir).unwrap();
    assert!(dump.modules[0].files.compressed_proto.is_some());
    for source in [SourcePreference::Proto, SourcePreference::Text] {
        let r = dump.modules[0].analyze(source).unwrap();
        assert_eq!(r.name, x["moduleName"].as_str().unwrap());
        assert_eq!(r.peak_bytes, mib(&x["peakHeapMib"]), "{source:?}");
        assert_eq!(r.peak_unpadded_bytes, mib(&x["peakUnpaddedHeapMib"]), "{source:?}");
        assert_eq!(r.total_allocation_bytes, mib(&x["totalBufferAllocationMib"]), "{source:?}");
        let mut ours: Vec<(String, u64)> = r.buffers_at_peak.iter().map(|b| (b.name.clone(), b.size_bytes)).collect();
        ours.sort();
        assert_eq!(ours, theirs, "{source:?}");
        assert!(r.warnings.is_empty());
    }
}
