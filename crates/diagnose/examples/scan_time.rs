//! Times one `diagnose` pass over a file: `scan_time PATH [THREADS]` (0 = all cores).
//! For profiling the scanner (`perf record`) on the benchmark's log (`OOMDOC_BENCH_LOG`).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let threads = args.get(2).and_then(|t| t.parse().ok()).unwrap_or(0);
    let opts = oomdoc_diagnose::Options { threads, ..Default::default() };
    let t = std::time::Instant::now();
    let report = oomdoc_diagnose::diagnose_reader(std::fs::File::open(&args[1]).unwrap(), &opts).unwrap();
    let lines: Vec<u64> = report.findings.iter().map(|f| f.line).collect();
    println!("{:.3} s, {} lines, findings at {lines:?}", t.elapsed().as_secs_f64(), report.lines_scanned);
}
