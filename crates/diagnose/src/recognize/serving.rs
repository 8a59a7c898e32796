//! Serving engines: vLLM (V0 and V1), SGLang, Hugging Face TGI (and its forks such as
//! LoRAX). Their start-up checks turn a memory shortfall into their own sentences:
//!
//! * vLLM `vllm/worker/worker.py` (V0) and `vllm/v1/core/kv_cache_utils.py` (V1):
//!   "No available memory for the cache blocks", "The model's max seq len (N) is larger
//!   than the maximum number of tokens that can be stored in KV cache (M)", "… X GiB KV
//!   cache is needed, which is larger than the available KV cache memory (Y GiB). Based on
//!   the available memory, the estimated maximum model length is L" (later "Estimated
//!   maximum model length is L"), the profiling line "Available KV cache memory: -X GiB",
//!   `vllm/v1/worker/gpu_worker.py` "Free memory on device … on startup is less than
//!   desired GPU memory utilization", and `gpu_model_runner.py` "CUDA out of memory
//!   occurred when warming up sampler|pooler [(task=…)] with N dummy requests".
//! * SGLang `model_runner.py` / `pool_configurator.py`: "Not enough memory. Please try to
//!   increase --mem-fraction-static.[ Current value: mem_fraction_static=F]" and the newer
//!   "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=F.
//!   Raise --mem-fraction-static above G".
//! * TGI `flash_causal_lm.py` warmup: "Not enough memory to handle N prefill tokens. You
//!   need to decrease `--max-batch-prefill-tokens`" (v0.9.4+), "Not enough memory to handle
//!   T total tokens with N prefill tokens. You need to decrease `--max-batch-total-tokens`
//!   or `--max-batch-prefill-tokens`" (v0.9.0–v0.9.3), and the router's "Not enough memory
//!   to handle `max_total_tokens=T`".

use super::{has, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[
    "cache blocks",
    "stored in KV cache",
    "KV cache is needed",
    "Available KV cache memory: -",
    "memory reserved for KV Cache is -",
    // A hard-wrapped "… KV cach\ne is needed, which is larger than the available KV cache memory".
    "available KV cache memory",
    "on startup is less than desired",
    "occurred when warming up",
    "increase --mem-fraction-static",
    "leave no GPU memory for the KV cache",
    "Not enough memory to handle",
    "alloc_req_slots runs out of memory",
    "No space left for only one request",
    "is larger than the profiled value -",
];

grammar!(vllm_blocks, r"No available memory for the cache blocks");
grammar!(
    vllm_v1,
    r"(?:max seq len \((?P<len>\d+)\),? \(?)?(?P<a>{SZ}) KV cache is needed, which is larger than the available KV cache memory \((?P<b>{SZ})\)(?:\.? (?:Based on the available memory, the estimated|Estimated) maximum model length is (?P<est>\d+))?"
);
grammar!(vllm_tokens, r"max seq len \((?P<len>\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((?P<tok>\d+)\)");
// V1's profiling line and V0's (`vllm/worker/worker.py` determine_num_available_blocks, 0.6.x-0.8.x: "... the rest of
// the memory reserved for KV Cache is {available_kv_cache_memory:.2f}GiB."): a negative budget gives
// `num_gpu_blocks = max(..., 0) = 0` ("# cuda blocks: 0" / "# GPU blocks: 0") and then
// `raise_if_cache_size_invalid`'s "No available memory for the cache blocks" ValueError.
grammar!(vllm_negative, r"(?:Available KV cache memory:|the rest of the memory reserved for KV Cache is)\s*-(?P<v>{SZ})");
grammar!(vllm_weights, r"model weights take (?P<v>{SZ});");
grammar!(vllm_free, r"(?i:free memory) on device(?: (?P<dev>[\w:]+))? \((?P<free>[\d.]+)/(?P<total>[\d.]+) (?P<unit>[KMGT]i?B)\) on startup is less than desired GPU memory utilization \((?P<util>[\d.]+), (?P<req>{SZ})\)");
grammar!(vllm_total, r"total_gpu_memory(?:=| \()(?P<v>{SZ})");
grammar!(
    vllm_warmup,
    r"(?P<dev>CUDA|HIP|XPU)? ?out of memory occurred when warming up (?P<what>sampler|pooler)(?: \((?P<task>[^)\n]{0,60})\))? with (?P<n>\d+) dummy requests"
);
grammar!(
    sglang_fraction,
    r"Not enough memory\. Please try to increase --mem-fraction-static\.?(?: Current value: (?:self\.server_args\.)?mem_fraction_static=(?P<cur>[0-9.]*[0-9]))?"
);
grammar!(
    sglang_weights,
    r"Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=(?P<cur>[0-9.]*[0-9])\.?(?: Raise --mem-fraction-static above (?P<fit>[0-9.]*[0-9]))?"
);
grammar!(
    sglang_req_slots,
    r"alloc_req_slots runs out of memory\.(?: Please set a smaller number for `?--max-running-requests`?\.?)?(?: (?:self\.)?req_to_token_pool\.available_size\(\)=(?P<avail>\d+))?(?:, num_reqs=(?P<n>\d+))?"
);
// SGLang `schedule_batch.py` ScheduleBatch.retract_decode (read at 000eaffacf0): with one request left after retracting the
// others, it asserts the KV pool still has a free token: "No space left for only one request" (early form), then
// ", self.token_to_kv_pool_allocator.available_size()=N", with SWA models " in SWA mode full_available_size=N,
// swa_available_size=M"; and "Failed to retract any request. No space left for only one request." (ValueError).
grammar!(
    sglang_kv_pool,
    r"No space left for only one request(?: in SWA mode full_available_size=(?P<full>\d+), swa_available_size=(?P<swa>\d+)|, (?:self\.)?token_to_kv_pool(?:_allocator)?\.available_size\(\)=(?P<avail>\d+))?"
);
grammar!(sglang_profiled, r"max_total_tokens=(?P<want>\d+) is larger than the profiled value (?P<prof>-\d+)\.?");
grammar!(
    tgi_prefill,
    r"Not enough memory to handle (?:(?P<total>\d+) total tokens with )?(?P<n>\d+) prefill tokens|Not enough memory to handle `max_total_tokens=(?P<mtt>\d+)`"
);

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    let first = hits.len();
    recognize_engines(t, hits);
    // The engines run on several platforms and print the same sentences on each; take the
    // platform from unambiguous markers in the same block when there are any.
    if let Some(p) = platform_hint(t) {
        for h in hits[first..].iter_mut().filter(|h| h.platform == Some(Platform::Cuda)) {
            h.platform = Some(p);
        }
    }
}

/// ROCm, Ascend or Intel markers in a serving engine's log block.
fn platform_hint(t: &str) -> Option<Platform> {
    const ROCM: &[&str] = &["ROCm", "rocm", "hipError", "HIP error", "torch.version.hip"];
    const NPU: &[&str] = &["torch_npu", "vllm_ascend", "vllm-ascend", "Ascend", "CANN"];
    const XPU: &[&str] = &["torch.xpu", "XPU out of memory", "level_zero", "intel_extension_for_pytorch"];
    let any = |list: &[&str]| list.iter().any(|m| has(t, m));
    match (any(ROCM), any(NPU), any(XPU)) {
        (true, false, false) => Some(Platform::Rocm),
        (false, true, false) => Some(Platform::Npu),
        (false, false, true) => Some(Platform::Xpu),
        _ => None,
    }
}

fn recognize_engines(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "cache blocks") {
        for m in vllm_blocks().find_iter(t) {
            let mut h = serving_hit("vllm.no-cache-blocks", m.start(), m.end());
            h.flag("framework_vllm");
            if let Some(e) = super::window(t, m.end(), 240).find("initializing the engine.") {
                h.end = m.end() + e + "initializing the engine.".len();
            }
            hits.push(h);
        }
    }
    if has(t, "stored in KV cache") {
        for c in vllm_tokens().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("vllm.max-model-len", m.start(), m.end());
            h.flag("framework_vllm");
            h.detail("max_model_len", c["len"].parse::<u64>().ok()).detail("kv_cache_tokens", c["tok"].parse::<u64>().ok());
            hits.push(h);
        }
    }
    if has(t, "Available KV cache memory: -") || has(t, "memory reserved for KV Cache is -") {
        for c in vllm_negative().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("vllm.no-cache-blocks", m.start(), m.end());
            h.flag("framework_vllm");
            if let Some(p) = oomdoc_units::parse_size(&c["v"]) {
                h.detail("available_kv_cache_bytes", -(p.bytes as i128) as i64);
            }
            // V0 prints the weights' share on the same line.
            if let Some(w) = vllm_weights().captures(super::window_before(t, m.start(), 400)) {
                if let Some(p) = oomdoc_units::parse_size(&w["v"]) {
                    h.detail("model_weights_bytes", p.bytes);
                }
            }
            hits.push(h);
        }
    }
    if has(t, "on startup is less than desired") {
        for c in vllm_free().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("vllm.insufficient-free-memory", m.start(), m.end());
            h.flag("framework_vllm");
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
    if has(t, "KV cache is needed") {
        for c in vllm_v1().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("vllm.max-model-len", m.start(), m.end());
            h.flag("framework_vllm");
            h.cap_size(SizeKey::Requested, &c, "a").cap_size(SizeKey::Limit, &c, "b");
            if let Some(l) = c.name("len") {
                h.detail("max_model_len", l.as_str().parse::<u64>().ok());
            }
            if let Some(e) = c.name("est") {
                h.detail("estimated_max_model_len", e.as_str().parse::<u64>().ok());
            }
            hits.push(h);
        }
    }
    if has(t, "occurred when warming up") {
        for c in vllm_warmup().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("vllm.sampler-warmup", m.start(), m.end());
            h.flag("framework_vllm");
            h.platform = Some(match c.name("dev").map(|d| d.as_str()) {
                Some("HIP") => Platform::Rocm,
                Some("XPU") => Platform::Xpu,
                _ => Platform::Cuda,
            });
            h.detail("warmup", c["what"].to_string()).detail("dummy_requests", c["n"].parse::<u64>().ok());
            if let Some(task) = c.name("task") {
                h.detail("task", task.as_str().to_string());
            }
            if let Some(e) = super::window(t, m.end(), 240).find("initializing the engine.") {
                h.end = m.end() + e + "initializing the engine.".len();
            }
            hits.push(h);
        }
    }
    if has(t, "Memory profiling results") || has(t, "total_gpu_memory=") || has(t, "total_gpu_memory (") {
        // vLLM's profiling summary states the device's total memory.
        if let Some(c) = vllm_total().captures(t) {
            for h in hits.iter_mut().filter(|h| h.id.starts_with("vllm.")) {
                h.cap_size(SizeKey::Total, &c, "v");
            }
        }
    }
    if has(t, "increase --mem-fraction-static") {
        for c in sglang_fraction().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("sglang.mem-fraction-static", m.start(), m.end());
            if let Some(v) = c.name("cur") {
                h.detail("mem_fraction_static", v.as_str().parse::<f64>().ok());
            }
            hits.push(h);
        }
    }
    if has(t, "leave no GPU memory for the KV cache") {
        for c in sglang_weights().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("sglang.mem-fraction-static", m.start(), m.end());
            h.detail("mem_fraction_static", c["cur"].parse::<f64>().ok());
            if let Some(v) = c.name("fit") {
                h.detail("mem_fraction_static_min", v.as_str().parse::<f64>().ok());
            }
            hits.push(h);
        }
    }
    if has(t, "No space left for only one request") {
        for c in sglang_kv_pool().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("sglang.kv-pool-exhausted", m.start(), m.end());
            h.phase = Some(Phase::Runtime);
            h.flag("framework_sglang");
            for (g, k) in [("avail", "kv_tokens_available"), ("full", "full_tokens_available"), ("swa", "swa_tokens_available")] {
                if let Some(v) = c.name(g).and_then(|v| v.as_str().parse::<u64>().ok()) {
                    h.detail(k, v);
                }
            }
            hits.push(h);
        }
    }
    if has(t, "alloc_req_slots runs out of memory") {
        for c in sglang_req_slots().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("sglang.req-slots", m.start(), m.end());
            h.phase = Some(Phase::Runtime);
            if let Some(v) = c.name("avail") {
                h.detail("available_req_slots", v.as_str().parse::<u64>().ok());
            }
            if let Some(v) = c.name("n") {
                h.detail("num_reqs", v.as_str().parse::<u64>().ok());
            }
            hits.push(h);
        }
    }
    if has(t, "is larger than the profiled value -") {
        // The KV pool was profiled at a negative number of tokens: the start-up check that
        // prints "Not enough memory. Please try to increase --mem-fraction-static" follows.
        for c in sglang_profiled().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("sglang.mem-fraction-static", m.start(), m.end());
            h.detail("profiled_max_total_num_tokens", c["prof"].parse::<i64>().ok());
            h.detail("max_total_tokens", c["want"].parse::<u64>().ok());
            h.confidence = crate::finding::Confidence::Likely;
            h.priority = 30;
            hits.push(h);
        }
    }
    if has(t, "Not enough memory to handle") {
        for c in tgi_prefill().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = serving_hit("tgi.warmup-oom", m.start(), m.end());
            if let Some(n) = c.name("n") {
                h.detail("prefill_tokens", n.as_str().parse::<u64>().ok());
            }
            if let Some(n) = c.name("total").or(c.name("mtt")) {
                h.detail("total_tokens", n.as_str().parse::<u64>().ok());
            }
            // "You need to decrease `--max-batch-prefill-tokens`" follows on the same line.
            let tail = super::window(t, m.end(), 160);
            if let Some(p) = tail.find("--max-batch-prefill-tokens`") {
                h.end = m.end() + p + "--max-batch-prefill-tokens`".len();
            }
            hits.push(h);
        }
    }
}

/// A serving engine's start-up (or warmup) check failed over device memory.
fn serving_hit(id: &'static str, start: usize, end: usize) -> Hit {
    Hit::new(id, start, end).on(Platform::Cuda).during(Phase::Load).in_space("device").ranked(10)
}
