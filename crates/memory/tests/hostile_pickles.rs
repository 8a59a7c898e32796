//! Hostile and broken pickles given as memory snapshots: executable opcodes are refused
//! before anything could run, deep nesting, huge declared lengths, memo bombs and
//! truncation end with a clear error, and memory stays under the budget (a counting
//! global allocator measures the peak).

use oomdoc_memory::pytorch::{load_snapshot, read_snapshot};
use oomdoc_memory::{Limits, MemoryError, DECODE_SLACK_BYTES, MAX_BYTES_PER_INPUT_BYTE};
use std::path::Path;
use std::sync::Mutex;

#[global_allocator]
static ALLOC: oomdoc_testkit::CountingAlloc = oomdoc_testkit::CountingAlloc;

static SERIAL: Mutex<()> = Mutex::new(());

/// Reads `bytes` as a snapshot; returns the error text and the peak bytes allocated.
fn read(bytes: &[u8]) -> (Result<(), MemoryError>, usize) {
    let _guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    oomdoc_testkit::peak_allocated_during(|| read_snapshot(Path::new("hostile.pickle"), bytes, bytes.len() as u64, &Limits::default()).map(|_| ()))
}

fn bound(len: usize) -> usize {
    (MAX_BYTES_PER_INPUT_BYTE as usize) * len + DECODE_SLACK_BYTES as usize
}

fn err(bytes: &[u8]) -> String {
    let (r, peak) = read(bytes);
    assert!(peak <= bound(bytes.len()), "peak {peak} over the bound");
    r.expect_err("must be refused").to_string()
}

#[test]
fn executable_opcodes_are_refused_before_anything_runs() {
    let marker = std::env::temp_dir().join(format!("oomdoc-hostile-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let cmd = format!("touch {}", marker.display());
    // pickle.dumps(os.system-like REDUCE), protocol 2: GLOBAL 'os system', args tuple, REDUCE.
    let mut global = b"\x80\x02cos\nsystem\nq\x00X".to_vec();
    global.extend_from_slice(&(cmd.len() as u32).to_le_bytes());
    global.extend_from_slice(cmd.as_bytes());
    global.extend_from_slice(b"q\x01\x85q\x02Rq\x03.");
    // Protocol 4: STACK_GLOBAL from two strings, then REDUCE.
    let mut stack_global = b"\x80\x04\x95\x20\x00\x00\x00\x00\x00\x00\x00\x8c\x02os\x94\x8c\x06system\x94\x93\x94\x8c".to_vec();
    stack_global.push(cmd.len() as u8);
    stack_global.extend_from_slice(cmd.as_bytes());
    stack_global.extend_from_slice(b"\x94\x85\x94R\x94.");
    let cases: [(&[u8], &str); 8] = [
        (&global, "GLOBAL"),
        (&stack_global, "STACK_GLOBAL"),
        (b"\x80\x02}q\x00(X\x01\x00\x00\x00aq\x01K\x01u)R.", "REDUCE"),
        (b"\x80\x02}q\x00}b.", "BUILD"),
        (b"\x80\x02(ios\nsystem\n.", "INST"),
        (b"\x80\x02(]o.", "OBJ"),
        (b"\x80\x02)\x81.", "NEWOBJ"),
        (b"\x80\x02K\x01Q.", "BINPERSID"),
    ];
    for (bytes, opcode) in cases {
        let e = err(bytes);
        assert!(e.contains(&format!("pickle opcode {opcode} would import or call Python code; refused")), "{opcode}: {e}");
    }
    assert!(!marker.exists(), "a refused pickle ran a command");
}

#[test]
fn deep_nesting_is_capped_without_recursion() {
    // 100,000 nested lists built on the stack: EMPTY_LIST × n, then APPEND × (n-1).
    let n = 100_000;
    let mut stacked = b"\x80\x04".to_vec();
    stacked.extend(std::iter::repeat_n(b']', n));
    stacked.extend(std::iter::repeat_n(b'a', n - 1));
    stacked.push(b'.');
    let e = err(&stacked);
    assert!(e.contains("nesting depth"), "{e}");
    // The same depth through the memo, with a stack of two: [[[...]]] grown downwards.
    let mut memo = b"\x80\x04]\x94".to_vec();
    for i in 0..n as u32 {
        memo.extend_from_slice(b"j");
        memo.extend_from_slice(&i.to_le_bytes());
        memo.extend_from_slice(b"]\x94a");
    }
    let e = err(&memo);
    assert!(e.contains("nesting depth") || e.contains("changed after it was put in another"), "{e}");
}

#[test]
fn huge_declared_lengths_are_refused_before_allocating() {
    let cases: [&[u8]; 4] = [
        b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7fabc.",    // BINUNICODE8 of 2^63 bytes
        b"\x80\x04X\xff\xff\xff\xffabc.",                       // BINUNICODE of 4 GiB
        b"\x80\x04\x8e\x00\x00\x00\x00\x00\x01\x00\x00abc.",    // BINBYTES8 of 2^40
        b"\x80\x04\x8b\xff\xff\xff\x7f\x01.",                   // LONG4 of 2 GiB
    ];
    for bytes in cases {
        let e = err(bytes);
        assert!(e.contains("too large") || e.contains("over 128 bits"), "{e}");
    }
}

#[test]
fn memo_bombs_and_sparse_memo_slots_stay_bounded() {
    // LONG_BINPUT to slot 4e9: a 32 GB memo if allocated as asked.
    let e = err(b"\x80\x04Nr\x00\x28\x6b\xee.");
    assert!(e.contains("too large"), "{e}");
    // A memo bomb: a 1000-item list referenced 200,000 times (200 million items if each
    // reference were a copy); a reference costs 8 bytes here.
    let mut bomb = b"\x80\x04]\x94(".to_vec();
    bomb.extend(std::iter::repeat_n(b'N', 1000));
    bomb.extend_from_slice(b"e0](");
    for _ in 0..200_000 {
        bomb.extend_from_slice(b"h\x00");
    }
    bomb.extend_from_slice(b"e.");
    let (r, peak) = read(&bomb);
    assert!(peak <= bound(bomb.len()), "peak {peak} for {} bytes", bomb.len());
    // It reads (a list, not a snapshot): the error is about the shape, not memory.
    let e = r.expect_err("not a snapshot").to_string();
    assert!(e.contains("not a PyTorch memory snapshot") || e.contains("segment 0"), "{e}");
}

#[test]
fn truncated_real_snapshots_give_a_clear_error() {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/pytorch-snapshots/g3-allocator-settings.pickle");
    let bytes = std::fs::read(&real).expect("fixture");
    for cut in (0..bytes.len()).step_by(997).chain([1, 2, bytes.len() - 1]) {
        let e = err(&bytes[..cut]);
        assert!(e.contains("ends early") || e.contains("empty file"), "cut at {cut}: {e}");
    }
    // And the whole file still reads.
    load_snapshot(&real, &Limits::default()).expect("the full file reads");
}

#[test]
fn not_a_snapshot_says_so() {
    for (bytes, expect) in [
        (&b"\x80\x04K\x01."[..], "not a PyTorch memory snapshot"),
        (b"\x80\x04}\x94\x8c\x01a\x94K\x01s.", "no `segments` key"),
        (b"\x80\x04\x8c\x01a\x94.", "not a PyTorch memory snapshot"),
        (b"\x80\x01N.", "pickle protocol 1"),
        (b"\x80\x04\xff.", "0xff is not part of the data"),
    ] {
        let e = err(bytes);
        assert!(e.contains(expect), "{e}");
        assert!(!e.chars().any(|c| c.is_control()), "{e:?}");
    }
}

#[test]
fn a_caller_limit_ends_a_large_read_with_too_large() {
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/pytorch-snapshots/g1-frames-no-time.pickle");
    let e = load_snapshot(&real, &Limits { max_bytes: Some(2 << 20), max_records: None }).expect_err("over 2 MiB");
    assert!(matches!(e, MemoryError::TooLarge { .. }), "{e}");
    let e = load_snapshot(&real, &Limits { max_bytes: None, max_records: Some(1000) }).expect_err("over 1000 values");
    assert!(matches!(e, MemoryError::TooLarge { records: true, .. }), "{e}");
}

/// Real snapshots with random bytes changed, inserted or removed: every read ends with
/// a snapshot or an error, never a panic, and what reads also analyses and renders.
#[test]
fn mutated_real_snapshots_never_panic() {
    use oomdoc_memory::pytorch::{analysis::AnalysisOptions, analyze, render};
    let real = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/fixtures/pytorch-snapshots/g3-allocator-settings.pickle");
    let original = std::fs::read(&real).expect("fixture");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let (mut read_ok, mut refused) = (0, 0);
    for _ in 0..1500 {
        let mut bytes = original.clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() % bytes.len() as u64) as usize;
            match next() % 3 {
                0 => bytes[at] = next() as u8,
                1 => bytes.insert(at, next() as u8),
                _ => {
                    bytes.remove(at);
                }
            }
        }
        let path = Path::new("mutated.pickle");
        match read_snapshot(path, bytes.as_slice(), bytes.len() as u64, &Limits::default()) {
            Ok(snap) => {
                read_ok += 1;
                let report = analyze(path, &snap, &AnalysisOptions::default());
                let _ = render::render_text(&report, &snap, &Default::default());
                let _ = render::render_json(&report, &snap);
                let _ = render::render_html(&report, &snap);
            }
            Err(e) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(read_ok > 0 && refused > 0, "{read_ok} read, {refused} refused");
}

// pickle.dumps of segments, blocks and trace sizes of 2^64-1 (protocol 4).
const HUGE_SIZES: &[u8] = b"\x80\x04\x95\x23\x02\x00\x00\x00\x00\x00\x00\x7d\x94\x28\x8c\x08\x73\x65\x67\x6d\x65\x6e\x74\x73\x94\x5d\x94\x28\x7d\x94\x28\x8c\x06\x64\x65\x76\x69\x63\x65\x94\x4b\x00\x8c\x07\x61\x64\x64\x72\x65\x73\x73\x94\x4b\x00\x8c\x0a\x74\x6f\x74\x61\x6c\x5f\x73\x69\x7a\x65\x94\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x0e\x61\x6c\x6c\x6f\x63\x61\x74\x65\x64\x5f\x73\x69\x7a\x65\x94\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x0b\x61\x63\x74\x69\x76\x65\x5f\x73\x69\x7a\x65\x94\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x0e\x72\x65\x71\x75\x65\x73\x74\x65\x64\x5f\x73\x69\x7a\x65\x94\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x06\x73\x74\x72\x65\x61\x6d\x94\x4b\x00\x8c\x06\x62\x6c\x6f\x63\x6b\x73\x94\x5d\x94\x28\x7d\x94\x28\x68\x05\x4b\x00\x8c\x04\x73\x69\x7a\x65\x94\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x68\x09\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x05\x73\x74\x61\x74\x65\x94\x8c\x10\x61\x63\x74\x69\x76\x65\x5f\x61\x6c\x6c\x6f\x63\x61\x74\x65\x64\x94\x8c\x06\x66\x72\x61\x6d\x65\x73\x94\x5d\x94\x75\x7d\x94\x28\x68\x05\x4b\x00\x68\x0e\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x68\x09\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x68\x0f\x68\x10\x68\x11\x68\x12\x75\x65\x75\x7d\x94\x28\x68\x04\x4b\x00\x68\x05\x4b\x00\x68\x06\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x68\x07\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x68\x08\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x68\x09\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x68\x0a\x4b\x00\x68\x0b\x68\x0c\x75\x65\x8c\x0d\x64\x65\x76\x69\x63\x65\x5f\x74\x72\x61\x63\x65\x73\x94\x5d\x94\x5d\x94\x28\x7d\x94\x28\x8c\x06\x61\x63\x74\x69\x6f\x6e\x94\x8c\x05\x61\x6c\x6c\x6f\x63\x94\x8c\x04\x61\x64\x64\x72\x94\x4b\x01\x68\x0e\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x75\x7d\x94\x28\x68\x19\x68\x1a\x68\x1b\x4b\x02\x68\x0e\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x75\x7d\x94\x28\x68\x19\x8c\x03\x6f\x6f\x6d\x94\x68\x0e\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x8c\x0b\x64\x65\x76\x69\x63\x65\x5f\x66\x72\x65\x65\x94\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x75\x7d\x94\x28\x68\x19\x8c\x0d\x73\x65\x67\x6d\x65\x6e\x74\x5f\x75\x6e\x6d\x61\x70\x94\x68\x1b\x4b\x00\x68\x0e\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00\x75\x65\x61\x75\x2e";

#[test]
fn sizes_near_two_to_the_64_saturate_and_never_overflow() {
    use oomdoc_memory::pytorch::{analysis::AnalysisOptions, analyze, render};
    let path = Path::new("huge.pickle");
    let snap = read_snapshot(path, HUGE_SIZES, HUGE_SIZES.len() as u64, &Limits::default()).expect("reads");
    let report = analyze(path, &snap, &AnalysisOptions::default());
    let d = &report.devices[0];
    assert_eq!((d.reserved_bytes, d.allocated_bytes, d.peak_bytes), (u64::MAX, u64::MAX, u64::MAX));
    assert_eq!(d.oom.as_ref().unwrap().requested_bytes, u64::MAX);
    let _ = render::render_text(&report, &snap, &Default::default());
    let _ = render::render_html(&report, &snap);
    assert!(render::render_json(&report, &snap).contains("18446744073709551615"));
}
