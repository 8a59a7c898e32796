//! Issue 12: crafted `.hlo.pb` files whose repeated fields are millions of empty or
//! minimal records (2–4 bytes each on disk) must not expand in memory. A counting global
//! allocator measures the peak bytes allocated while a crafted file is loaded: it stays
//! under `MAX_BYTES_PER_INPUT_BYTE` × the file size + `DECODE_SLACK_BYTES`, and the
//! load ends with a typed error or a small result, never a panic or an abort.

use oomdoc_memory::{load_dump_with, Limits, LoadOptions, MemoryError, SourcePreference, DECODE_SLACK_BYTES, MAX_BYTES_PER_INPUT_BYTE};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[global_allocator]
static ALLOC: oomdoc_testkit::CountingAlloc = oomdoc_testkit::CountingAlloc;

/// One measurement at a time (tests run on several threads).
static SERIAL: Mutex<()> = Mutex::new(());

use oomdoc_memory::proto::wire::Writer as Pb;

/// A valid one-instruction module whose buffer assignment gets `extra` appended.
fn crafted(extra: impl FnOnce(&mut Pb)) -> Vec<u8> {
    crafted_with(
        |s| {
            s.int(2, 11);
            s.int(3, 256);
            s.msg(5, |l| l.int(1, 0));
        },
        extra,
    )
}

/// [`crafted`] with the instruction's shape written by `shape`.
fn crafted_with(shape: impl FnOnce(&mut Pb), extra: impl FnOnce(&mut Pb)) -> Vec<u8> {
    let mut pb = Pb(Vec::new());
    pb.msg(1, |m| {
        m.bytes(1, b"jit_crafted");
        m.msg(3, |c| {
            c.msg(2, |i| {
                i.bytes(1, b"p0");
                i.msg(3, shape);
                i.int(35, 1);
            });
        });
        m.int(5, 1);
    });
    pb.msg(3, |b| {
        b.msg(1, |lb| {
            lb.int(1, 0);
            lb.int(2, 1024);
            lb.msg(3, |d| d.int(4, 1));
        });
        b.msg(3, |a| {
            a.int(1, 0);
            a.int(2, 1024);
            a.int(5, 1);
            a.msg(9, |x| {
                x.int(1, 0);
                x.int(3, 1024);
            });
        });
        extra(b);
    });
    pb.0
}

/// `n` copies of the record `record` under field `field` of a message.
fn repeated(field: u32, record: &[u8], n: usize) -> Vec<u8> {
    let mut out = Pb(Vec::with_capacity(n * (record.len() + 2)));
    for _ in 0..n {
        out.bytes(field, record);
    }
    out.0
}

fn write(test: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-crafted-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("module_0001.jit_crafted.cpu_after_optimizations.hlo.pb");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Load and analyse `path`; the peak bytes allocated meanwhile.
fn measure(path: &Path, limits: Limits) -> (Result<u64, MemoryError>, usize) {
    oomdoc_testkit::peak_allocated_during(|| {
        load_dump_with(&[path.to_path_buf()], &LoadOptions { limits, ..Default::default() })
            .and_then(|d| d.modules[0].analyze(SourcePreference::Proto))
            .map(|r| r.peak_bytes)
    })
}

fn bound(path: &Path) -> usize {
    (MAX_BYTES_PER_INPUT_BYTE * std::fs::metadata(path).unwrap().len() + DECODE_SLACK_BYTES) as usize
}

const N: usize = 1_000_000;

#[test]
fn a_million_empty_heap_events_are_counted_not_stored() {
    let _serial = SERIAL.lock().unwrap();
    // HeapSimulatorTrace { events: [Event {} × N] }: 2 bytes per event on disk.
    let events = repeated(1, b"", N);
    let path = write("empty-events", &crafted(|b| b.bytes(4, &events)));
    let (result, peak) = measure(&path, Limits::default());
    // No event is kept: the module is its one parameter.
    assert_eq!(result.unwrap(), 1024);
    // Before: ~48 bytes per event (about 25x the file); now the file and a few tables.
    let size = std::fs::metadata(&path).unwrap().len() as usize;
    assert!(peak < 2 * size + (1 << 20), "peak {peak} bytes for a {size}-byte file");
    assert!(peak < bound(&path));
}

#[test]
fn a_million_minimal_heap_events_stay_under_the_bound() {
    let _serial = SERIAL.lock().unwrap();
    // Event { kind: FREE }: 4 bytes per event on disk, 16 bytes each decoded and about
    // 90 more each in the analysis (one timeline point per event): over the bound.
    let events = repeated(1, &[0x08, 0x01], N);
    let path = write("minimal-events", &crafted(|b| b.bytes(4, &events)));
    let (result, peak) = measure(&path, Limits::default());
    match result {
        Err(e @ MemoryError::TooLarge { .. }) => assert!(e.to_string().contains("heap-simulator events"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(peak < bound(&path), "peak {peak} bytes, bound {}", bound(&path));
    // A tenth of them fits the bound: decoded and analysed (freeing a buffer that was
    // never allocated is a typed error, not a wrong peak), under the bound.
    let events = repeated(1, &[0x08, 0x01], N / 10);
    let path = write("minimal-events-small", &crafted(|b| b.bytes(4, &events)));
    let (result, peak) = measure(&path, Limits::default());
    assert!(matches!(result, Err(MemoryError::Inconsistent { .. })), "{result:?}");
    assert!(peak < bound(&path), "peak {peak} bytes, bound {}", bound(&path));
    // A record limit refuses it before anything is kept.
    let (result, peak) = measure(&path, Limits { max_records: Some(10_000), ..Default::default() });
    match result {
        Err(e @ MemoryError::TooLarge { .. }) => assert!(e.to_string().contains("heap-simulator events"), "{e}"),
        other => panic!("{other:?}"),
    }
    let size = std::fs::metadata(&path).unwrap().len() as usize;
    assert!(peak < 2 * size + (1 << 20), "peak {peak}");
}

#[test]
fn a_million_empty_logical_buffers_are_too_large() {
    let _serial = SERIAL.lock().unwrap();
    // LogicalBufferProto {} × N: 2 bytes each on disk, tens of bytes each decoded.
    let path = write("empty-buffers", &crafted(|b| b.0.extend_from_slice(&repeated(1, b"", N))));
    let (result, peak) = measure(&path, Limits::default());
    match result {
        Err(e @ MemoryError::TooLarge { .. }) => assert!(e.to_string().contains("logical buffers"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(peak < bound(&path), "peak {peak} bytes, bound {}", bound(&path));
}

#[test]
fn a_million_empty_assigned_values_stay_under_the_bound() {
    let _serial = SERIAL.lock().unwrap();
    // BufferAllocationProto { assigned: [{} × N] }.
    let assigned = repeated(9, b"", N);
    let path = write("empty-assigned", &crafted(|b| b.bytes(3, &assigned)));
    let (result, peak) = measure(&path, Limits::default());
    assert!(matches!(result, Err(MemoryError::Inconsistent { .. } | MemoryError::TooLarge { .. })), "{result:?}");
    assert!(peak < bound(&path), "peak {peak} bytes, bound {}", bound(&path));
    // An absolute memory limit below the file's size refuses it unread.
    let (result, _) = measure(&path, Limits { max_bytes: Some(1 << 20), ..Default::default() });
    assert!(matches!(result, Err(MemoryError::TooLarge { .. })), "{result:?}");
}

#[test]
fn a_tuple_shape_of_a_million_elements_is_too_large() {
    let _serial = SERIAL.lock().unwrap();
    // ShapeProto { element_type: TUPLE, tuple_shapes: [{} × N] }: 2 bytes per element,
    // about a hundred decoded (and nine more in its text).
    let elements = repeated(4, b"", N);
    let path = write("wide-tuple", &crafted_with(|s| {
        s.int(2, 13);
        s.0.extend_from_slice(&elements);
    }, |_| {}));
    let (result, peak) = measure(&path, Limits::default());
    match result {
        Err(e @ MemoryError::TooLarge { .. }) => assert!(e.to_string().contains("shape"), "{e}"),
        other => panic!("{other:?}"),
    }
    assert!(peak < bound(&path), "peak {peak} bytes, bound {}", bound(&path));
}
