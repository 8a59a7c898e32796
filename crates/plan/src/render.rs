//! Text output of `oomdoc plan` (the JSON output is the serde form of the same structs).

use crate::pallas::PallasPlan;
use crate::search::{TpuSearch, TritonSearch};
use crate::triton::{ConfigVerdict, TritonPlan};
use oomdoc_units::format_bytes;
use std::fmt::Write;

fn mib(b: u64) -> String {
    format!("{:.3} MiB", b as f64 / (1u64 << 20) as f64)
}

fn dims(d: &[u64]) -> String {
    let v: Vec<String> = d.iter().map(|x| x.to_string()).collect();
    format!("({})", v.join(","))
}

pub fn pallas(p: &PallasPlan) -> String {
    let mut s = String::new();
    let verdict = if p.fits { "fits" } else { "DOES NOT FIT" };
    let _ = writeln!(s, "pallas_call on {}: {} of VMEM, limit {} ({}) — {}", p.target, mib(p.total_bytes), mib(p.limit_bytes), p.limit_source, verdict);
    let _ = writeln!(s, "  {} > {} bytes? {}", p.total_bytes, p.limit_bytes, if p.fits { "no" } else { "yes" });
    let _ = writeln!(s);
    let _ = writeln!(s, "  {:<14} {:<14} {:<18} {:<6} {:>12} {:>4} {:>12}", "name", "kind", "block", "dtype", "per buffer", "bufs", "bytes");
    for it in &p.items {
        let kind = format!("{:?}/{:?}", it.kind, it.space).to_lowercase();
        let _ = writeln!(
            s,
            "  {:<14} {:<14} {:<18} {:<6} {:>12} {:>4} {:>12}",
            truncate(&it.name, 14),
            kind,
            dims(&it.block),
            it.dtype,
            it.bytes_per_buffer,
            it.buffers,
            it.bytes
        );
    }
    let _ = writeln!(s, "  {:<14} {:<14} {:<18} {:<6} {:>12} {:>4} {:>12}", "total VMEM", "", "", "", "", "", p.total_bytes);
    let headroom = if p.headroom_bytes >= 0 {
        format!("headroom {}", format_bytes(p.headroom_bytes as u64))
    } else {
        format!("over by {}", format_bytes(p.headroom_bytes.unsigned_abs()))
    };
    let _ = writeln!(s, "  limit {} bytes, {headroom}", p.limit_bytes);
    if !p.alternatives.is_empty() {
        let _ = writeln!(s);
        for a in &p.alternatives {
            let _ = writeln!(s, "  what if {}: {} — {}", a.change, mib(a.total_bytes), if a.fits { "fits" } else { "still over" });
        }
    }
    let _ = writeln!(s);
    for n in &p.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

pub fn triton(p: &TritonPlan) -> String {
    let mut s = String::new();
    let c = &p.config;
    let verdict = if p.fits { "fits" } else { "DOES NOT FIT" };
    let amount = if p.exact { format!("{} bytes", p.shared_bytes) } else { format!("{}–{} bytes (upper bound used)", p.shared_bytes_min, p.shared_bytes) };
    let _ = writeln!(
        s,
        "triton matmul {} BLOCK {}×{}×{} num_stages={} num_warps={} on {}: {} of shared memory, limit {} — {}",
        p.dtype.name(),
        c.block_m,
        c.block_n,
        c.block_k,
        c.num_stages,
        c.num_warps,
        p.arch,
        amount,
        p.limit_bytes,
        verdict
    );
    let b = &p.breakdown;
    let _ = writeln!(s, "  rule: {}", b.rule);
    let _ = writeln!(s, "  A tile {} B × {} + B tile {} B × {} + barriers {} B = pipeline {} B", b.a_tile_bytes, b.a_buffers, b.b_tile_bytes, b.b_buffers, b.barrier_bytes, b.pipeline_bytes);
    match b.epilogue_bytes {
        Some(e) => {
            let _ = writeln!(s, "  epilogue layout-conversion scratch {e} B (measured, Triton 3.9), reuses the pipeline bytes: shared = max");
        }
        None => {
            let _ = writeln!(s, "  epilogue layout-conversion scratch ≤ {} B, reuses the pipeline bytes: shared = max", b.epilogue_bound_bytes);
        }
    }
    for n in &p.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

pub fn verdicts(arch: &str, limit: u64, v: &[ConfigVerdict]) -> String {
    let mut s = String::new();
    let fit = v.iter().filter(|x| x.fits).count();
    let _ = writeln!(s, "{fit} of {} configs fit {arch} (limit {limit} bytes of shared memory):", v.len());
    for x in v.iter().filter(|x| x.fits) {
        let c = &x.config;
        let _ = writeln!(
            s,
            "  BLOCK_M={:<4} BLOCK_N={:<4} BLOCK_K={:<4} num_stages={} num_warps={}  {:>7} B{}",
            c.block_m,
            c.block_n,
            c.block_k,
            c.num_stages,
            c.num_warps,
            x.shared_bytes.unwrap_or(0),
            if x.exact { "" } else { " (upper bound)" }
        );
    }
    let dropped: Vec<&ConfigVerdict> = v.iter().filter(|x| !x.fits).collect();
    if !dropped.is_empty() {
        let _ = writeln!(s, "dropped:");
        for x in dropped {
            let c = &x.config;
            let _ = writeln!(
                s,
                "  BLOCK_M={:<4} BLOCK_N={:<4} BLOCK_K={:<4} num_stages={} num_warps={}  {}",
                c.block_m,
                c.block_n,
                c.block_k,
                c.num_stages,
                c.num_warps,
                x.reason.as_deref().unwrap_or("")
            );
        }
    }
    s
}

pub fn tpu_search(r: &TpuSearch, in_bytes_name: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "matmul tiles on {} ({in_bytes_name}), limit {}: {} candidates, {} fit", r.target, mib(r.limit_bytes), r.evaluated, r.fitting);
    let _ = writeln!(s, "ranked by: {}", r.model);
    let _ = writeln!(s, "  {:>6} {:>6} {:>6} {:>12} {:>12} {:>9} {:>9} {:>5}", "bm", "bn", "bk", "VMEM", "HBM traffic", "flop/B", "steps", "MXU");
    for c in &r.top {
        let _ = writeln!(
            s,
            "  {:>6} {:>6} {:>6} {:>12} {:>12} {:>9.1} {:>9} {:>5}",
            c.block_m,
            c.block_n,
            c.block_k,
            mib(c.vmem_bytes),
            format_bytes(c.hbm_bytes),
            c.arithmetic_intensity,
            c.grid_steps,
            if c.mxu_aligned { "yes" } else { "no" }
        );
    }
    s
}

pub fn triton_search(r: &TritonSearch) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "triton matmul configs on {} (limit {} bytes): {} candidates, {} fit", r.arch, r.limit_bytes, r.evaluated, r.fitting);
    let _ = writeln!(s, "ranked by: {}", r.model);
    let _ = writeln!(s, "  {:>5} {:>5} {:>5} {:>6} {:>5} {:>9} {:>12} {:>8}", "BM", "BN", "BK", "stages", "warps", "shared", "HBM traffic", "flop/B");
    for c in &r.top {
        let k = &c.config;
        let _ = writeln!(
            s,
            "  {:>5} {:>5} {:>5} {:>6} {:>5} {:>9} {:>12} {:>8.1}",
            k.block_m,
            k.block_n,
            k.block_k,
            k.num_stages,
            k.num_warps,
            format!("{}{}", c.shared_bytes, if c.exact { "" } else { "*" }),
            format_bytes(c.hbm_bytes),
            c.arithmetic_intensity
        );
    }
    if r.top.iter().any(|c| !c.exact) {
        let _ = writeln!(s, "  * upper bound (epilogue scratch not measured for this config)");
    }
    s
}
