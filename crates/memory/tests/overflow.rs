//! Byte totals never wrap (issue 12): impossible sizes in a crafted dump are an error
//! naming the allocation or buffer, never a wrapped number. The dumps follow the real
//! grammar of `-buffer-assignment.txt` / `-live-range.txt` (see the fixtures) at a few
//! lines each.

use oomdoc_memory::{load_dump, SourcePreference};

const PREFIX: &str = "module_0001.jit_crafted.cpu_after_optimizations";

/// A dump directory with these two files; the analysis error (or `None` on success).
fn run(test: &str, ba: &str, lr: &str) -> Option<String> {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-overflow-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{PREFIX}-buffer-assignment.txt")), ba).unwrap();
    std::fs::write(dir.join(format!("{PREFIX}-live-range.txt")), lr).unwrap();
    let dump = load_dump(&dir).unwrap();
    let out = dump.modules[0].analyze(SourcePreference::Text).err().map(|e| e.to_string());
    // The module list carries the same error, not a number.
    let all = dump.analyze_all(SourcePreference::Text);
    assert_eq!(all.listing[0].peak_bytes.is_none(), out.is_some());
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn live_range(names: &[&str]) -> String {
    let mut s = format!("HloLiveRange (max {}):\n  InstructionSequence:\n", names.len());
    for (i, n) in names.iter().enumerate() {
        s += &format!("    {i}:{n}\n");
    }
    s += "  BufferLiveRange:\n";
    for n in names {
        s += &format!("    {n}{{}}:0-{}\n", names.len());
    }
    s
}

const E18: u64 = 1_000_000_000_000_000_000;

fn param(i: u64, size: u64) -> String {
    format!("allocation {i}: size {size}, parameter {i}, shape |u8[{size}]| at ShapeIndex {{}}:\n value: <{i} p{i}.1 @0> (size={size},offset=0): u8[{size}]{{0}}\n")
}

#[test]
fn allocations_that_add_up_past_2_64_are_an_error() {
    let ba = format!("BufferAssignment:\n{}{}{}", param(0, 8 * E18), param(1, 8 * E18), param(2, 8 * E18));
    let e = run("sum", &ba, &live_range(&["p0.1", "p1.1", "p2.1"])).expect("an error");
    assert!(e.contains("more than 2^64") && e.contains("allocation 2"), "{e}");
}

#[test]
fn a_size_past_int64_is_an_error() {
    let size = 10 * E18; // > i64::MAX: XLA sizes are int64
    let ba = format!("BufferAssignment:\n{}", param(0, size));
    let e = run("int64", &ba, &live_range(&["p0.1"])).expect("an error");
    assert!(e.contains("allocation 0") && e.contains("impossible size"), "{e}");
}

#[test]
fn a_shape_whose_bytes_overflow_is_an_error_naming_the_buffer() {
    let ba = "BufferAssignment:\nallocation 0: size 64, parameter 0, shape |f32[4294967296,4294967296,4294967296]| at ShapeIndex {}:\n value: <0 big.1 @0> (size=64,offset=0): f32[4294967296,4294967296,4294967296]{2,1,0}\n";
    let e = run("shape", ba, &live_range(&["big.1"])).expect("an error");
    assert!(e.contains("big.1") && e.contains("64 bits"), "{e}");
}

#[test]
fn a_temp_heap_past_2_64_is_an_error_not_a_wrapped_peak() {
    // Three overlapping temps in one 9e18-byte allocation: each fits, together they do not.
    let size = 9 * E18;
    let mut ba = format!("BufferAssignment:\nallocation 0: size {size}, preallocated-temp:\n");
    for (i, off) in [0u64, 1, 2].iter().enumerate() {
        let v = size - off;
        ba += &format!(" value: <{i} t{i} @0> (size={v},offset={off}): u8[{v}]{{0}}\n");
    }
    let e = run("heap", &ba, &live_range(&["t0", "t1", "t2"])).expect("an error");
    assert!(e.contains("exceeds 2^64") && e.contains("schedule position 0"), "{e}");
}

#[test]
fn large_but_possible_sizes_are_exact() {
    // Three 4e18-byte parameters: 1.2e19 bytes in all, past 2^63 − 1 but within 2^64.
    let ba = format!("BufferAssignment:\n{}{}{}", param(0, 4 * E18), param(1, 4 * E18), param(2, 4 * E18));
    assert_eq!(run("ok", &ba, &live_range(&["p0.1", "p1.1", "p2.1"])), None);
}

#[test]
fn negative_sizes_in_text_are_parse_errors() {
    let ba = "BufferAssignment:\nallocation 0: size -4, parameter 0, shape |f32[]| at ShapeIndex {}:\n value: <0 p0.1 @0> (size=4,offset=0): f32[]\n";
    let e = run("neg", ba, &live_range(&["p0.1"])).expect("an error");
    assert!(e.contains("-buffer-assignment.txt:2:") && e.contains("-4"), "{e}");
}


// --- Crafted `xla.HloProto`s (field numbers of `xla/service/hlo.proto`) ---

use oomdoc_memory::proto::wire::Writer;

/// An HloProto with one allocation of `alloc_size` holding `buffers` (id, size, offset),
/// and a heap trace that allocates them all.
fn hlo_proto(alloc_size: u64, buffers: &[(u64, u64, u64)]) -> Vec<u8> {
    let mut proto = Writer::default();
    proto.msg(1, |module| {
        module.bytes(1, b"jit_crafted");
        module.int(5, 1);
    });
    proto.msg(3, |ba| {
        for &(id, size, _) in buffers {
            ba.msg(1, |lb| {
                lb.int(1, id);
                lb.int(2, size);
                lb.msg(3, |defined_at| {
                    defined_at.bytes(2, format!("t{id}").as_bytes());
                    defined_at.int(4, 100 + id);
                });
            });
        }
        ba.msg(3, |alloc| {
            alloc.int(1, 0);
            alloc.int(2, alloc_size);
            for &(id, size, offset) in buffers {
                alloc.msg(9, |assigned| {
                    assigned.int(1, id);
                    assigned.int(2, offset);
                    assigned.int(3, size);
                });
            }
        });
        ba.msg(4, |trace| {
            for &(id, _, _) in buffers {
                trace.msg(1, |event| {
                    event.int(1, 0); // ALLOC
                    event.int(2, id);
                    event.bytes(4, format!("t{id}").as_bytes());
                });
            }
        });
    });
    proto.0
}

fn run_proto(test: &str, proto: &[u8]) -> Result<u64, String> {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oomdoc-overflow-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{PREFIX}.hlo.pb")), proto).unwrap();
    let out = load_dump(&dir).unwrap().modules[0].analyze(SourcePreference::Proto).map(|r| r.peak_bytes).map_err(|e| e.to_string());
    let _ = std::fs::remove_dir_all(&dir);
    out
}

#[test]
fn proto_sizes_never_wrap() {
    // A sane one first: the peak is the three buffers' sum.
    assert_eq!(run_proto("proto-ok", &hlo_proto(3000, &[(1, 1000, 0), (2, 1000, 1000), (3, 1000, 2000)])), Ok(3000));
    // int64 -8 on the wire: an impossible allocation size, not 2^64 − 8 bytes.
    let e = run_proto("proto-neg", &hlo_proto(u64::MAX - 7, &[(1, 8, 0)])).unwrap_err();
    assert!(e.contains("allocation 0") && e.contains("impossible size") && e.contains(".hlo.pb"), "{e}");
    let e = run_proto("proto-negbuf", &hlo_proto(64, &[(1, u64::MAX - 7, 0)])).unwrap_err();
    assert!(e.contains("t1") && e.contains("impossible size"), "{e}");
    // Three live 9e18-byte buffers: the heap replay stops at the event that passes 2^64.
    let big = 9 * E18;
    let e = run_proto("proto-heap", &hlo_proto(big, &[(1, big, 0), (2, big, 0), (3, big, 0)])).unwrap_err();
    assert!(e.contains("exceeds 2^64") && e.contains("heap event 2") && e.contains("logical buffer 3"), "{e}");
}
