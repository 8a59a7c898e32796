//! Times one load + analysis through the library, with optional limits:
//! `cargo run --release -p oomdoc-memory --example memload -- PATH [text|proto|auto] [MAX_BYTES]`.
//! Prints the wall time, the peak and the error (e.g. `TooLarge`) if any. Used for the
//! figures in `docs/memory.md` and to find how much memory a load really needs (the
//! smallest `MAX_BYTES` that passes).
use oomdoc_memory::{load_dump_with, Limits, LoadOptions, SourcePreference};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: memload PATH [text|proto|auto] [MAX_BYTES]");
        std::process::exit(2)
    };
    let source = match args.get(2).map(String::as_str) {
        Some("text") => SourcePreference::Text,
        Some("proto") => SourcePreference::Proto,
        _ => SourcePreference::Auto,
    };
    let limits = Limits { max_bytes: args.get(3).and_then(|s| s.parse().ok()), ..Default::default() };
    let t = Instant::now();
    let result = load_dump_with(&[path.into()], &LoadOptions { limits, ..Default::default() }).and_then(|d| {
        let m = d.modules.iter().max_by_key(|m| m.files.hlo_proto.as_ref().or(m.files.buffer_assignment.as_ref()).and_then(|p| std::fs::metadata(p).ok()).map_or(0, |x| x.len()));
        m.expect("at least one module").analyze(source)
    });
    let secs = t.elapsed().as_secs_f64();
    match result {
        Ok(r) => println!("{path}: {secs:.3} s, {} peak {} bytes, {} buffers at the peak, {} timeline points", r.name, r.peak_bytes, r.buffers_at_peak.len(), r.timeline.len()),
        Err(e) => {
            println!("{path}: {secs:.3} s, error: {e}");
            std::process::exit(1)
        }
    }
}
