//! Property tests standing in for a fuzzer: damaged real dumps (truncated, bytes
//! flipped, lines dropped or duplicated) must give a result or a typed error, never a
//! panic. The wire-format reader gets arbitrary bytes.

use oomdoc_memory::{load_dump, SourcePreference};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

const MLP: &str = "module_0034.jit_mlp_train_step.cpu_after_optimizations";
const SUFFIXES: [&str; 4] = ["-buffer-assignment.txt", "-buffer-assignment-values.txt", "-live-range.txt", ".txt"];

fn original(suffix: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mlp_train_step").join(format!("{MLP}{suffix}"))).unwrap()
}

static CASE: AtomicUsize = AtomicUsize::new(0);

/// Write the mlp dump with `damaged` replacing the file with `suffix`, and analyse it.
fn run_damaged(suffix: &str, damaged: &[u8], source: SourcePreference) {
    let dir: PathBuf = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-memory-fuzz-{}", CASE.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir).unwrap();
    for s in SUFFIXES.iter().chain([".hlo.pb"].iter()) {
        let bytes = if *s == suffix { damaged.to_vec() } else { original(s) };
        std::fs::write(dir.join(format!("{MLP}{s}")), bytes).unwrap();
    }
    if let Ok(dump) = load_dump(&dir) {
        for m in &dump.modules {
            if let Ok(r) = m.analyze(source) {
                let _ = oomdoc_memory::render::json::render(&oomdoc_memory::MemoryReport { modules: vec![r.clone()] });
                let _ = oomdoc_memory::render::html::render(&oomdoc_memory::MemoryReport { modules: vec![r.clone()] }, &[]);
                let _ = oomdoc_memory::render::text::render_module(&r, &Default::default());
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[derive(Debug, Clone)]
enum Damage {
    Truncate(f64),
    Flip(f64, u8),
    DropLine(f64),
    DuplicateLine(f64),
    Splice(f64, String),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (0.0..1.0f64).prop_map(Damage::Truncate),
        (0.0..1.0f64, any::<u8>()).prop_map(|(p, b)| Damage::Flip(p, b)),
        (0.0..1.0f64).prop_map(Damage::DropLine),
        (0.0..1.0f64).prop_map(Damage::DuplicateLine),
        (0.0..1.0f64, "[ a-z0-9{}<>@:,=()|\\[\\]\n.-]{0,24}").prop_map(|(p, s)| Damage::Splice(p, s)),
    ]
}

fn apply(mut bytes: Vec<u8>, d: &Damage) -> Vec<u8> {
    let at = |p: f64, len: usize| ((p * len as f64) as usize).min(len.saturating_sub(1));
    match d {
        Damage::Truncate(p) => bytes.truncate(at(*p, bytes.len())),
        Damage::Flip(p, b) => {
            let i = at(*p, bytes.len());
            if let Some(x) = bytes.get_mut(i) {
                *x ^= b | 1;
            }
        }
        Damage::DropLine(p) | Damage::DuplicateLine(p) => {
            let mut lines: Vec<Vec<u8>> = bytes.split(|&c| c == b'\n').map(<[u8]>::to_vec).collect();
            let i = at(*p, lines.len());
            if matches!(d, Damage::DropLine(_)) {
                lines.remove(i);
            } else {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            bytes = lines.join(&b'\n');
        }
        Damage::Splice(p, s) => {
            let i = at(*p, bytes.len());
            bytes.splice(i..i, s.bytes());
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn damaged_text_files_never_panic(which in 0usize..4, d in damage()) {
        let suffix = SUFFIXES[which];
        run_damaged(suffix, &apply(original(suffix), &d), SourcePreference::Text);
    }

    #[test]
    fn damaged_protos_never_panic(d in damage()) {
        run_damaged(".hlo.pb", &apply(original(".hlo.pb"), &d), SourcePreference::Proto);
    }

    #[test]
    fn arbitrary_bytes_are_not_an_hlo_proto(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = oomdoc_memory::proto::hlo::decode_hlo_proto(&bytes);
    }

    #[test]
    fn gpu_report_parser_never_panics(s in "(BufferAssignment OOM Debugging\\.|Peak buffers:|Buffer [0-9]:|Size: [0-9.]+[KMG]iB|Operator: op_name=\"[a-z/]*|XLA Label: [a-z]+|Shape: f32\\[[0-9,]*\\]|====|[ \\t\\n]|[a-z:]{1,8}){0,40}") {
        let _ = oomdoc_memory::parse_buffer_assignment_oom_report(&s);
    }
}
