//! Everything else: vLLM's KV-cache budget and Tenstorrent's L1 allocator (host-side
//! OOMs live in `host.rs`).

use super::{has, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(vllm_blocks, r"No available memory for the cache blocks");
grammar!(vllm_v1, r"(?P<a>{SZ}) KV cache is needed, which is larger than the available KV cache memory \((?P<b>{SZ})\)");
grammar!(vllm_tokens, r"max seq len \((?P<len>\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((?P<tok>\d+)\)");
grammar!(vllm_negative, r"Available KV cache memory:\s*-(?P<v>{SZ})");
grammar!(vllm_free, r"(?i:free memory) on device(?: (?P<dev>[\w:]+))? \((?P<free>[\d.]+)/(?P<total>[\d.]+) (?P<unit>[KMGT]i?B)\) on startup is less than desired GPU memory utilization \((?P<util>[\d.]+), (?P<req>{SZ})\)");
grammar!(vllm_total, r"total_gpu_memory=(?P<v>{SZ})");
grammar!(tt_l1, r"Not enough space to allocate (?P<req>\d+) B (?P<kind>\w+) buffer across (?P<banks>\d+) banks?, where each bank needs to store (?P<per>\d+) B(?:, but bank size is (?P<size>\d+) B \(allocated: (?P<alloc>\d+) B, free: (?P<free>\d+) B, largest free block: (?P<lfb>\d+) B\))?");

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "cache blocks") {
        for m in vllm_blocks().find_iter(t) {
            let mut h = vllm_hit("vllm.no-cache-blocks", m.start(), m.end());
            if let Some(e) = t[m.end()..].find("initializing the engine.") {
                if e < 200 {
                    h.end = m.end() + e + "initializing the engine.".len();
                }
            }
            hits.push(h);
        }
    }
    if has(t, "stored in KV cache") {
        for c in vllm_tokens().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = vllm_hit("vllm.no-cache-blocks", m.start(), m.end());
            h.detail("max_model_len", c["len"].parse::<u64>().ok()).detail("kv_cache_tokens", c["tok"].parse::<u64>().ok());
            hits.push(h);
        }
    }
    if has(t, "Available KV cache memory: -") {
        for c in vllm_negative().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = vllm_hit("vllm.no-cache-blocks", m.start(), m.end());
            if let Some(p) = oomdoc_units::parse_size(&c["v"]) {
                h.detail("available_kv_cache_bytes", -(p.bytes as i128) as i64);
            }
            hits.push(h);
        }
    }
    if has(t, "on startup is less than desired") {
        for c in vllm_free().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = vllm_hit("vllm.insufficient-free-memory", m.start(), m.end());
            let unit = &c["unit"];
            h.size(SizeKey::Free, &format!("{} {unit}", &c["free"])).size(SizeKey::Total, &format!("{} {unit}", &c["total"]));
            h.cap_size(SizeKey::Requested, &c, "req");
            h.detail("gpu_memory_utilization", c["util"].parse::<f64>().ok());
            if let Some(d) = c.name("dev") {
                h.culprit.device = Some(d.as_str().to_string());
            }
            h.flag("other_processes");
            hits.push(h);
        }
    }
    if has(t, "KV cache") {
        for c in vllm_v1().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = vllm_hit("vllm.no-cache-blocks", m.start(), m.end());
            h.cap_size(SizeKey::Requested, &c, "a").cap_size(SizeKey::Limit, &c, "b");
            hits.push(h);
        }
    }
    if has(t, "Memory profiling results") || has(t, "total_gpu_memory=") {
        // vLLM's profiling summary states the device's total memory.
        if let Some(c) = vllm_total().captures(t) {
            for h in hits.iter_mut().filter(|h| h.id.starts_with("vllm.")) {
                h.cap_size(SizeKey::Total, &c, "v");
            }
        }
    }
    if has(t, "Not enough space to allocate") {
        for c in tt_l1().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("tenstorrent.l1", m.start(), m.end());
            let num = |g: &str| c.name(g).and_then(|v| v.as_str().parse::<u64>().ok());
            if let Some(v) = num("req") {
                h.bytes(SizeKey::Requested, v, format!("{v} B"));
            }
            if let Some(v) = num("size") {
                h.bytes(SizeKey::Limit, v, format!("{v} B"));
            }
            if let Some(v) = num("alloc") {
                h.bytes(SizeKey::Allocated, v, format!("{v} B"));
            }
            if let Some(v) = num("free") {
                h.bytes(SizeKey::Free, v, format!("{v} B"));
            }
            h.detail("banks", num("banks")).detail("per_bank_bytes", num("per"));
            if let Some(v) = num("lfb") {
                h.detail("largest_free_block", v);
            }
            h.space(&c["kind"].to_ascii_lowercase());
            if h.memory_space.as_deref() != Some("l1") {
                h.space("device");
            }
            h.platform = Some(Platform::Other);
            h.phase = Some(Phase::Runtime);
            h.priority = 10;
            hits.push(h);
        }
    }
}

/// vLLM fails while loading, before serving, over device memory.
fn vllm_hit(id: &'static str, start: usize, end: usize) -> Hit {
    let mut h = Hit::new(id, start, end);
    h.platform = Some(Platform::Cuda);
    h.phase = Some(Phase::Load);
    h.space("device");
    h.flag("framework_vllm");
    h.priority = 10;
    h
}
