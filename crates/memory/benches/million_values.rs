//! `cargo bench -p oomdoc-memory --bench million_values`: a synthetic dump with a
//! million HLO values (text dump set and the equivalent HloProto with its heap trace),
//! timed through both input paths. Set `OOMDOC_BENCH_DIR` to keep the files (e.g. to
//! time XProf's converter on the same `.hlo.pb`); `OOMDOC_BENCH_VALUES` changes the count.
//! With `OOMDOC_BENCH_DIR` holding a dump already, it is reused (not rewritten);
//! `OOMDOC_BENCH_ONLY=text|hlo.pb` times one input only (for a profiler).

use oomdoc_memory::{load_dump, SourcePreference};
use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

const SLOTS: u64 = 1000;
const SLOT_BYTES: u64 = 32 * 1024;
const PREFIX: &str = "module_0001.jit_synthetic.cpu_after_optimizations";

fn size_of(i: u64) -> u64 {
    4096 * (1 + i % 7)
}

/// Value i is defined at schedule position i and lives until just before the next value
/// in its slot (same offset) is defined.
fn range_of(i: u64) -> (u64, u64) {
    (i, i + SLOTS - 1)
}

use oomdoc_memory::proto::wire::Writer as Pb;

fn write_dump(dir: &Path, n: u64) {
    std::fs::create_dir_all(dir).unwrap();
    let file = |suffix: &str| std::io::BufWriter::new(std::fs::File::create(dir.join(format!("{PREFIX}{suffix}"))).unwrap());
    let params = 4u64;
    let param_bytes = 1u64 << 20;
    let temp_bytes = SLOTS * SLOT_BYTES;
    let last = n + SLOTS; // schedule length
    // -buffer-assignment.txt
    let mut ba = file("-buffer-assignment.txt");
    writeln!(ba, "BufferAssignment:").unwrap();
    for p in 0..params {
        writeln!(ba, "allocation {p}: size {param_bytes}, parameter {p}, shape |f32[512,512]| at ShapeIndex {{}}:").unwrap();
        writeln!(ba, " value: <{} p{p} @0> (size={param_bytes},offset=0): f32[512,512]{{1,0}}", n + p).unwrap();
    }
    writeln!(ba, "allocation {params}: size {temp_bytes}, preallocated-temp:").unwrap();
    for i in 0..n {
        writeln!(ba, " value: <{i} f{i} @0> (size={},offset={}): f32[{}]{{0}}", size_of(i), (i % SLOTS) * SLOT_BYTES, size_of(i) / 4).unwrap();
    }
    // -buffer-assignment-values.txt (short instruction lines)
    let mut vf = file("-buffer-assignment-values.txt");
    write!(vf, "\nTotal bytes used: {} (x)\n\nUsed values:\n", params * param_bytes + temp_bytes).unwrap();
    for i in 0..n + params {
        let name = if i < n { format!("f{i}") } else { format!("p{}", i - n) };
        writeln!(vf, "<{i} {name} @0>\n positions:\n  {name}\n uses:\n  (none)\n from instruction: %{name} = f32[8]{{0}} fusion(), metadata={{op_name=\"jit(synthetic)/op{}\" source_file=\"model.py\" source_line={}}}", i % 97, i % 500).unwrap();
    }
    // -live-range.txt
    let mut lr = file("-live-range.txt");
    writeln!(lr, "HloLiveRange (max {last}):\n  InstructionSequence:").unwrap();
    for t in 0..last {
        writeln!(lr, "    {t}:{}", if t < n { format!("f{t}") } else { format!("nop{t}") }).unwrap();
    }
    // In value-id order, as `HloLiveRange::ToString` prints them (the f values have ids
    // 0..n, the parameters n..n+4).
    writeln!(lr, "  BufferLiveRange:").unwrap();
    for i in 0..n {
        let (s, e) = range_of(i);
        writeln!(lr, "    f{i}{{}}:{s}-{e}").unwrap();
    }
    for p in 0..params {
        writeln!(lr, "    p{p}{{}}:0-{last}").unwrap();
    }
    writeln!(lr, "  Live ranges at 0 (peak):").unwrap();
    // .hlo.pb with the heap trace: ALLOC at definition, FREE after the last use.
    let mut pb = Pb(Vec::new());
    pb.msg(1, |m| {
        m.bytes(1, b"jit_synthetic");
        m.bytes(2, b"main");
        m.msg(3, |c| {
            c.bytes(1, b"main");
            for i in 0..n + params {
                let name = if i < n { format!("f{i}") } else { format!("p{}", i - n) };
                c.msg(2, |ins| {
                    ins.bytes(1, name.as_bytes());
                    ins.bytes(2, if i < n { b"fusion" } else { b"parameter" });
                    ins.msg(3, |s| {
                        s.int(2, 11);
                        s.int(3, if i < n { size_of(i) / 4 } else { 512 });
                        s.msg(5, |l| l.int(1, 0));
                    });
                    ins.msg(7, |md| md.bytes(2, format!("jit(synthetic)/op{}", i % 97).as_bytes()));
                    ins.int(35, i + 1);
                });
            }
        });
        m.int(5, 1);
    });
    pb.msg(3, |b| {
        for i in 0..n + params {
            b.msg(1, |lb| {
                lb.int(1, i);
                lb.int(2, if i < n { size_of(i) } else { param_bytes });
                lb.msg(3, |d| d.int(4, i + 1));
            });
        }
        for p in 0..params {
            b.msg(3, |a| {
                a.int(1, p);
                a.int(2, param_bytes);
                a.int(5, 1);
                a.int(6, p);
                a.msg(9, |x| {
                    x.int(1, n + p);
                    x.int(3, param_bytes);
                });
            });
        }
        b.msg(3, |a| {
            a.int(1, params);
            a.int(2, temp_bytes);
            for i in 0..n {
                a.msg(9, |x| {
                    x.int(1, i);
                    x.int(2, (i % SLOTS) * SLOT_BYTES);
                    x.int(3, size_of(i));
                });
            }
        });
        b.msg(4, |t| {
            // Event order: at time t, free what ended at t-1, then allocate value t.
            for time in 0..last {
                if time >= SLOTS && time - SLOTS < n {
                    let i = time - SLOTS;
                    t.msg(1, |e| {
                        e.int(1, 1);
                        e.int(2, i);
                        e.bytes(4, format!("f{time}").as_bytes());
                    });
                }
                if time < n {
                    t.msg(1, |e| {
                        e.int(1, 0);
                        e.int(2, time);
                        e.bytes(4, format!("f{time}").as_bytes());
                    });
                }
            }
            t.int(2, 1);
        });
    });
    std::fs::write(dir.join(format!("{PREFIX}.hlo.pb")), &pb.0).unwrap();
}

fn mb(path: &Path) -> f64 {
    std::fs::metadata(path).map(|m| m.len() as f64 / 1e6).unwrap_or(0.0)
}

fn main() {
    let n: u64 = std::env::var("OOMDOC_BENCH_VALUES").ok().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
    let keep = std::env::var_os("OOMDOC_BENCH_DIR");
    let dir = keep.clone().map(Into::into).unwrap_or_else(|| std::env::temp_dir().join(format!("oomdoc-bench-{}", std::process::id())));
    let t = Instant::now();
    let reuse = keep.is_some() && dir.join(format!("{PREFIX}.hlo.pb")).exists();
    if !reuse {
        write_dump(&dir, n);
    }
    let mut sizes = String::new();
    for s in ["-buffer-assignment.txt", "-buffer-assignment-values.txt", "-live-range.txt", ".hlo.pb"] {
        let _ = write!(sizes, " {s} {:.1} MB", mb(&dir.join(format!("{PREFIX}{s}"))));
    }
    println!("synthetic dump: {n} values {} in {:.2?};{sizes}", if reuse { "reused" } else { "written" }, t.elapsed());
    let only = std::env::var("OOMDOC_BENCH_ONLY").unwrap_or_default();
    for (label, source) in [("text dump", SourcePreference::Text), ("hlo.pb", SourcePreference::Proto)] {
        if !only.is_empty() && !label.contains(only.as_str()) {
            continue;
        }
        let mut best = f64::MAX;
        let mut peak = 0;
        for _ in 0..3 {
            let t = Instant::now();
            let dump = load_dump(&dir).unwrap();
            let r = dump.modules[0].analyze(source).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
            peak = r.peak_bytes;
        }
        println!("{label:>10}: {best:.3} s (best of 3), peak {peak} bytes");
    }
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
}
