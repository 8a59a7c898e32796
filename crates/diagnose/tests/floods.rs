//! Issue 25 (D21, D23): floods of one failure line. 16 MiB of `Killed` lines took 41 s and
//! 200 MB, and a 1 MB zstd that holds 10 GiB of one CUDA OOM line ran for most of an hour:
//! every 4000 lines made a block, every line a finding that was built and then merged.
//! Now a line repeated byte for byte is counted by the scanner, a failure seen before is
//! counted without building its finding again, and overlapping hits are resolved in
//! n log n. Measured by counting, never by a clock: the allocations a diagnosis makes
//! (work) and their peak (memory), for a flood and for one four times as long.

use oomdoc_diagnose::{diagnose_reader, Options, Report};
use oomdoc_testkit::{allocations_during, Allocations};
use std::sync::Mutex;

#[global_allocator]
static ALLOC: oomdoc_testkit::CountingAlloc = oomdoc_testkit::CountingAlloc;

/// One measurement at a time (tests run on several threads; every thread's allocations count).
static SERIAL: Mutex<()> = Mutex::new(());

/// A real message from the dev corpus (easydiffusion/easydiffusion#104).
fn real_cuda_message() -> String {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/corpus/dev.jsonl");
    for line in std::fs::read_to_string(corpus).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["id"] == "easydiff-104-max-split-hint" {
            return v["error_text"].as_str().unwrap().to_string();
        }
    }
    panic!("corpus record easydiff-104-max-split-hint is missing");
}

/// `n` lines, each made by `line(i)`.
fn flood(n: usize, line: impl Fn(usize) -> String) -> Vec<u8> {
    let mut text = Vec::new();
    for i in 0..n {
        text.extend_from_slice(line(i).as_bytes());
        text.push(b'\n');
    }
    text
}

fn diagnosed(text: &[u8]) -> (Report, Allocations) {
    let opts = Options { threads: 1, ..Options::default() };
    allocations_during(|| diagnose_reader(text, &opts).unwrap())
}

/// The one finding of a flood of `n` lines, with every line counted.
fn one_finding_counting_every_line(r: &Report, n: usize, id: &str) {
    assert_eq!(r.lines_scanned, n as u64);
    let ids: Vec<&str> = r.findings.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, [id], "one finding");
    assert_eq!(r.findings[0].occurrences, n as u64, "every line counted");
    assert_eq!(r.findings[0].line, 1);
    assert!(r.truncated.is_none());
}

/// A line repeated byte for byte: counted where it is read. The diagnosis makes about as
/// many allocations for 200,000 lines as for 50,000 (before: several per line), and its
/// peak does not grow with the flood.
#[test]
fn a_repeated_failure_line_is_counted_not_rebuilt() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cuda = real_cuda_message();
    for (line, id) in [("Killed", "host.oom-killer"), (cuda.as_str(), "pytorch.cuda-oom")] {
        let (n, big) = (50_000, 200_000);
        let (small_report, small) = diagnosed(&flood(n, |_| line.to_string()));
        let (big_report, large) = diagnosed(&flood(big, |_| line.to_string()));
        one_finding_counting_every_line(&small_report, n, id);
        one_finding_counting_every_line(&big_report, big, id);
        // The 150,000 more lines cost allocations per 2 MiB block, not per line.
        let per_line = (large.calls - small.calls.min(large.calls)) as f64 / (big - n) as f64;
        assert!(per_line < 0.05, "{line:.20}: {per_line:.3} allocations per extra line ({} for {n} lines, {} for {big})", small.calls, large.calls);
        assert!(large.peak < small.peak + (1 << 20), "{line:.20}: peak {} B for {big} lines against {} B for {n}", large.peak, small.peak);
        assert!(large.peak < 24 << 20, "{line:.20}: peak {} B", large.peak);
    }
}

/// Lines that differ (a rank prefix, which the normalizer removes) but hold the same
/// failure: each is read and recognized, and counted on the finding already built. Work
/// grows linearly (four times the lines: at most 4.5 times the allocations) and the
/// peak stays put.
#[test]
fn a_near_identical_flood_grows_linearly_in_bounded_memory() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cuda = real_cuda_message();
    let line = |i: usize| format!("[rank{}]: {cuda}", i % 8);
    let (n, big) = (10_000, 40_000);
    let (small_report, small) = diagnosed(&flood(n, line));
    let (big_report, large) = diagnosed(&flood(big, line));
    one_finding_counting_every_line(&small_report, n, "pytorch.cuda-oom");
    one_finding_counting_every_line(&big_report, big, "pytorch.cuda-oom");
    assert!(large.calls as f64 <= 4.5 * small.calls as f64, "{} allocations for {n} lines, {} for {big}", small.calls, large.calls);
    assert!(large.peak < small.peak + (1 << 20), "peak {} B for {big} lines against {} B for {n}", large.peak, small.peak);
}

/// Copies are counted on the line they repeat, and the lines around them are still read:
/// a flood between two different failures keeps both, at their own lines.
#[test]
fn a_flood_between_other_failures_keeps_them_and_their_lines() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let cuda = real_cuda_message();
    let mut text = String::from("step 1 loss 0.5\n");
    text.push_str(&"Killed\n".repeat(30_000));
    text.push_str(&cuda);
    text.push('\n');
    text.push_str("step 2 loss 0.4\n");
    let (r, _) = diagnosed(text.as_bytes());
    let found: Vec<(&str, u64, u64)> = r.findings.iter().map(|f| (f.id.as_str(), f.line, f.occurrences)).collect();
    assert_eq!(found, [("host.oom-killer", 2, 30_000), ("pytorch.cuda-oom", 30_002, 1)]);
    assert_eq!(r.lines_scanned, 30_003);
}
