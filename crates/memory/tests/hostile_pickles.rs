//! Hostile and broken pickles given as memory snapshots: executable opcodes are refused
//! before anything could run, deep nesting, huge declared lengths, memo bombs and
//! truncation end with a clear error, and memory stays under the budget (a counting
//! global allocator measures the peak).

use oomdoc_memory::pytorch::{load_snapshot, read_snapshot};
use oomdoc_memory::{Limits, MemoryError, DECODE_SLACK_BYTES, MAX_BYTES_PER_INPUT_BYTE};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

struct Counting;
static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = CURRENT.fetch_add(layout.size(), SeqCst) + layout.size();
            PEAK.fetch_max(now, SeqCst);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        CURRENT.fetch_sub(layout.size(), SeqCst);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = CURRENT.fetch_add(new_size - layout.size(), SeqCst) + (new_size - layout.size());
                PEAK.fetch_max(now, SeqCst);
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, SeqCst);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

static SERIAL: Mutex<()> = Mutex::new(());

/// Reads `bytes` as a snapshot; returns the error text and the peak bytes allocated.
fn read(bytes: &[u8]) -> (Result<(), MemoryError>, usize) {
    let _guard = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let base = CURRENT.load(SeqCst);
    PEAK.store(base, SeqCst);
    let r = read_snapshot(Path::new("hostile.pickle"), bytes, bytes.len() as u64, &Limits::default()).map(|_| ());
    (r, PEAK.load(SeqCst).saturating_sub(base))
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
