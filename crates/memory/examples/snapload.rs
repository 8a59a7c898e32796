//! Times a PyTorch snapshot's read and analysis through the library, phase by phase:
//! `cargo run --release -p oomdoc-memory --example snapload -- SNAPSHOT.pickle [MAX_BYTES]`.
//! Prints the seconds of each phase and the bytes the read charged to its budget (the
//! figures in `docs/memory.md`).
use oomdoc_memory::pytorch::{analysis::AnalysisOptions, analyze, load_snapshot, render};
use oomdoc_memory::Limits;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: snapload SNAPSHOT.pickle [MAX_BYTES]");
        std::process::exit(2)
    };
    let path = std::path::Path::new(path);
    let limits = Limits { max_bytes: args.get(2).and_then(|s| s.parse().ok()), ..Default::default() };
    let t = Instant::now();
    let snap = match load_snapshot(path, &limits) {
        Ok(s) => s,
        Err(e) => {
            println!("{}: {:.3} s, error: {e}", path.display(), t.elapsed().as_secs_f64());
            std::process::exit(1)
        }
    };
    let read = t.elapsed().as_secs_f64();
    let report = analyze(path, &snap, &AnalysisOptions::default());
    let analysed = t.elapsed().as_secs_f64();
    let json = render::render_json(&report, &snap);
    let total = t.elapsed().as_secs_f64();
    let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(1);
    println!(
        "{}: read {read:.3} s, analysis {:.3} s, json {:.3} s; {} devices, {} stacks, budget charged {} bytes ({:.2}x the file), {} bytes of JSON",
        path.display(),
        analysed - read,
        total - analysed,
        report.devices.len(),
        snap.stack_count(),
        snap.budget_used,
        snap.budget_used as f64 / len as f64,
        json.len()
    );
}
