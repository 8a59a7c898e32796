//! From a finding's numbers to the conditions and placeholder values the knowledge
//! base is written against (vocabulary: `oomdoc_kb::CONDITIONS` and `PLACEHOLDERS`).
//! Everything here is exact arithmetic on stated numbers; nothing is guessed.
//!
//! [`case`] reads the job around the failure (framework, workload, versions, OS,
//! settings); [`context`] the exception, status and framework cues near the message;
//! [`version`] compares releases and requirements.

pub mod case;
pub mod context;
pub mod version;

use crate::finding::{Finding, SizeKey};
use oomdoc_kb::{Lang, Platform};
use oomdoc_units::format_bytes;
use std::collections::{BTreeMap, BTreeSet};

const MIB: u64 = 1 << 20;

/// Conditions and values for one finding.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    pub conditions: BTreeSet<String>,
    pub vars: BTreeMap<String, String>,
    /// Known regressions (`kb/regressions/`) of this failure whose signs the block shows.
    pub regression_signs: BTreeSet<String>,
}

impl Facts {
    pub fn holds(&self, when: &[String]) -> bool {
        when.iter().all(|w| match w.strip_prefix('!') {
            Some(neg) => !self.conditions.contains(neg),
            None => self.conditions.contains(w.as_str()),
        })
    }
    fn set(&mut self, c: &str) {
        self.conditions.insert(c.to_string());
    }
    fn var(&mut self, k: &str, v: impl Into<String>) {
        self.vars.insert(k.to_string(), v.into());
    }
}

crate::grammar!(more_than_an_exabyte, r"(?i)\bmore than 1\s?Ei?B\b");
// A byte count of 16 digits or more stated anywhere in the block (`Unable to allocate
// 8446744063349813240 bytes`), where the message's own grammar read no size.
crate::grammar!(long_byte_count, r"(?i)\b(\d{16,})\s*bytes\b");

fn pct(num: u64, den: u64) -> String {
    format!("{:.1}", num as f64 * 100.0 / den as f64)
}

/// `gpu_memory_utilization` as a vLLM log states it (`--gpu-memory-utilization 0.85`,
/// `'gpu_memory_utilization': 0.85`, `gpu_memory_utilization=0.85`), if it is in (0, 1].
fn stated_gpu_memory_utilization(block: &str) -> Option<f64> {
    use std::sync::OnceLock;
    static RE: OnceLock<regex::Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(r#"gpu[_-]memory[_-]utilization['"]?\s*(?:[:=]|\s)\s*['"]?([01]?\.[0-9]+|1)\b"#).expect("valid regex")
    });
    re.captures_iter(block).filter_map(|c| c[1].parse::<f64>().ok()).filter(|v| *v > 0.0 && *v <= 1.0).last()
}

/// Compute facts. `flags` are conditions the recognizers stated directly; `block`
/// is the normalized text around the failure; `f.case` the case read from it and from
/// the settings lines of the whole log.
pub fn compute(f: &Finding, flags: &BTreeSet<&'static str>, block: &str) -> Facts {
    let mut x = Facts::default();
    for fl in flags {
        x.set(fl);
    }
    let s = &f.sizes;
    if s.is_empty() {
        x.set("no_sizes");
    } else {
        x.set("has_sizes");
    }
    for k in SizeKey::ALL {
        if let Some(v) = s.get(k) {
            x.var(k.name(), v.to_string());
            x.var(&format!("{}_h", k.name()), format_bytes(v));
        }
    }
    for d in &f.derived {
        if s.get(size_key(&d.name).unwrap_or(SizeKey::Excess)).is_none() || size_key(&d.name).is_none() {
            x.var(&d.name, d.bytes.to_string());
            x.var(&format!("{}_h", d.name), format_bytes(d.bytes));
        }
    }
    // Need versus limit.
    let need = s.used.or(s.requested).or_else(|| f.derived.iter().find(|d| d.name == "used").map(|d| d.bytes));
    if let (Some(need), Some(limit)) = (need, s.limit) {
        if limit > 0 {
            x.var("ratio", format!("{:.2}", need as f64 / limit as f64));
            if need > limit {
                x.var("over_pct", pct(need - limit, limit));
                x.var("shrink_pct", pct(need - limit, need));
                if s.excess.is_none() {
                    x.var("excess", (need - limit).to_string());
                    x.var("excess_h", format_bytes(need - limit));
                }
            }
        }
    }
    // Culprit.
    let c = &f.culprit;
    for (k, v) in [("op", &c.op), ("kernel", &c.kernel), ("shape", &c.shape), ("dtype", &c.dtype), ("device", &c.device), ("executable", &c.executable)] {
        if let Some(v) = v {
            x.var(k, v.clone());
        }
    }
    if let Some(p) = c.padded_bytes {
        x.var("padded_h", format_bytes(p));
    }
    if let Some(u) = c.unpadded_bytes {
        x.var("unpadded_h", format_bytes(u));
    }
    let is_pallas = c.custom_call_target.as_deref() == Some("tpu_custom_call")
        || c.op_name.as_deref().is_some_and(|o| o.contains("pallas_call"))
        || c.custom_call_target.as_deref().is_some_and(|t| t.contains("mosaic") || t.contains("triton"));
    if is_pallas {
        x.set("pallas_kernel");
    }
    if c.custom_call_target.is_some() {
        x.set("custom_call");
    }
    // XLA names an instruction after its opcode (`fusion.12`, `convolution.3`): such a culprit
    // is XLA's own op, not a kernel the user wrote. Any other name (`flash_attention.1`) with
    // no custom-call target shown leaves it open.
    let hlo_opcode = c.op.as_deref().map(|o| o.trim_start_matches('%')).map(|o| o.split('.').next().unwrap_or(o)).is_some_and(|stem| {
        matches!(
            stem,
            "fusion" | "convolution" | "dot" | "reduce" | "reduce-window" | "select-and-scatter" | "copy" | "transpose" | "broadcast"
                | "concatenate" | "slice" | "dynamic-slice" | "dynamic-update-slice" | "gather" | "scatter" | "sort" | "pad" | "reshape"
                | "all-gather" | "all-reduce" | "reduce-scatter" | "all-to-all" | "collective-permute" | "while" | "conditional"
                | "add" | "multiply" | "select" | "convert" | "iota" | "exponential" | "bitcast" | "copy-start" | "copy-done"
        )
    });
    if !is_pallas && (hlo_opcode || c.custom_call_target.as_deref().is_some_and(|t| t != "tpu_custom_call")) {
        x.set("xla_generated_op");
    }
    // Listed allocations.
    let allocs = &c.allocations;
    if !allocs.is_empty() {
        if let Some(big) = allocs.iter().filter(|a| a.size.is_some()).max_by_key(|a| a.size) {
            let size = big.size.unwrap_or(0);
            x.var("largest_alloc_h", format_bytes(size));
            if let Some(sh) = &big.shape {
                x.var("largest_alloc_shape", sh.clone());
            }
            if let Some(op) = big.op_name.as_ref().or(big.label.as_ref()) {
                x.var("largest_alloc_op", short_op(op));
            }
            let base = s.limit.or(s.used);
            if let Some(base) = base.filter(|b| *b > 0) {
                x.var("largest_alloc_pct", pct(size, base));
                if size * 2 >= base {
                    x.set("dominant_allocation");
                } else {
                    x.set("many_allocations");
                }
            }
        }
        let waste: u64 = allocs
            .iter()
            .map(|a| a.padding.unwrap_or_else(|| a.size.zip(a.unpadded_size).map_or(0, |(p, u)| p.saturating_sub(u))))
            .sum();
        if waste > 0 {
            x.var("padding_waste_h", format_bytes(waste));
        }
        let max_exp = allocs
            .iter()
            .filter_map(|a| a.expansion.or_else(|| a.size.zip(a.unpadded_size).filter(|(_, u)| *u > 0).map(|(p, u)| p as f64 / u as f64)))
            .fold(0.0f64, f64::max);
        if max_exp > 0.0 {
            x.var("max_expansion", format!("{max_exp:.1}"));
            if max_exp >= 2.0 {
                x.set("padding_heavy");
            }
        }
        if allocs.iter().take(5).any(|a| a.shape.as_deref().is_some_and(|s| s.starts_with("f32["))) {
            x.set("f32_allocations");
        }
    }
    // Frameworks, workload, OS and stated settings (the case).
    case_conditions(&f.case, &mut x);
    for condition in context::cue_conditions(block) {
        x.set(condition);
    }
    // No device or host has a pebibyte: a request that large is a wrong size (corrupt data,
    // an overflowed or uninitialised shape), not a shortage. Allocators that cannot print a
    // size that large say "more than 1EB".
    const PIB: u64 = 1 << 50;
    let stated_bytes_over_pib = || long_byte_count().captures_iter(block).any(|c| c[1].parse::<u128>().map_or(true, |b| b >= PIB as u128));
    if s.requested.or(s.used).is_some_and(|b| b >= PIB) || more_than_an_exabyte().is_match(block) || stated_bytes_over_pib() {
        x.set("implausible_request");
    }
    // Free memory comes from the driver (`cudaMemGetInfo` / `hipMemGetInfo`); more free
    // than the device has is a broken query (a runtime newer than its kernel driver), and
    // then neither the free figure nor a shortage can be read from the message.
    if let (Some(free), Some(total)) = (s.free, s.total) {
        if free > total {
            x.set("implausible_free");
        }
    }
    if block.contains("XLA_PYTHON_CLIENT_ALLOCATOR=platform") || block.contains("XLA_PYTHON_CLIENT_ALLOCATOR='platform'") {
        x.set("xla_platform_allocator");
    }
    if f.platform == Platform::Rocm {
        x.set("rocm");
    }
    if f.platform == Platform::Tpu {
        x.set("tpu");
    }
    if f.severity == oomdoc_kb::Severity::Warning {
        x.set("warning_only");
    }
    match f.memory_space.as_deref() {
        Some("hbm") | Some("device") | Some("sc-hbm") => x.set("space_hbm"),
        Some("vmem") => x.set("space_vmem"),
        _ => {}
    }
    // Windows refuses an allocation at the commit limit (RAM plus page file), which the
    // page file's size sets: for host memory there, raising it is a fix the case singles out.
    if f.case.os.as_deref() == Some("windows") && (f.memory_space.as_deref() == Some("host") || f.id.starts_with("host.")) {
        x.set("windows_commit_limit");
    }
    family_facts(f, &mut x, block);
    x.regression_signs = oomdoc_kb::regression::regressions()
        .iter()
        .filter(|r| r.entries.iter().any(|e| *e == f.id) && r.signs.iter().any(|sign| block.contains(sign.as_str())))
        .map(|r| r.id.clone())
        .collect();
    x
}

/// Conditions from the case: what the job is, so advice that does not fit it is not shown.
fn case_conditions(case: &case::Case, x: &mut Facts) {
    for fw in &case.frameworks {
        x.set(&format!("framework_{}", fw.replace(['.', '-'], "_")));
    }
    // No framework or engine in the log: a fix that names one framework's API is a guess.
    if case.frameworks.is_empty() {
        x.set("framework_unknown");
    }
    match case.workload.as_deref() {
        Some("training") => x.set("training"),
        Some("serving") => {
            x.set("serving");
            x.set("inference");
        }
        Some("inference") => x.set("inference"),
        Some("data") => x.set("data_job"),
        _ => {}
    }
    if let Some(os) = &case.os {
        x.set(&format!("os_{os}"));
    }
    if let Some(limit) = &case.memory_limit {
        x.set(&format!("memory_limit_{limit}"));
    }
    for api in ["jax", "pytorch", "tensorflow"] {
        if case.allows_api(api) {
            x.set(&format!("{api}_api_ok"));
        }
    }
    // A serving engine that sizes its memory by its own budgets: a PyTorch OOM inside it is
    // fixed through those budgets, not the program's batch.
    if case.has("vllm") || case.has("sglang") {
        x.set("engine_budgets");
    }
    if case.has("directml") {
        x.set("directml");
    }
    let alloc_conf = case.settings.iter().find(|(k, _)| k.starts_with("PYTORCH_") && k.ends_with("ALLOC_CONF"));
    if let Some((_, v)) = alloc_conf {
        x.set("alloc_conf_set");
        if v.replace(' ', "").to_ascii_lowercase().contains("expandable_segments:true") {
            x.set("expandable_segments_set");
        }
    }
}

fn size_key(name: &str) -> Option<SizeKey> {
    SizeKey::ALL.into_iter().find(|k| k.name() == name)
}

/// A short readable form of a long framework op path.
fn short_op(op: &str) -> String {
    let op = op.trim();
    if op.chars().count() <= 90 {
        return op.to_string();
    }
    let tail: Vec<&str> = op.rsplit('/').take(3).collect();
    format!("…/{}", tail.into_iter().rev().collect::<Vec<_>>().join("/"))
}

/// Family-specific arithmetic.
fn family_facts(f: &Finding, x: &mut Facts, block: &str) {
    let s = &f.sizes;
    let id = f.id.as_str();
    // PyTorch-style allocators: fragmentation and memory held elsewhere.
    if id.starts_with("pytorch.") || id == "xpu.out-of-memory" || id == "npu.out-of-memory" {
        let var = match f.platform {
            Platform::Rocm => "PYTORCH_HIP_ALLOC_CONF",
            Platform::Npu => "PYTORCH_NPU_ALLOC_CONF",
            Platform::Xpu => "PYTORCH_XPU_ALLOC_CONF",
            _ => "PYTORCH_CUDA_ALLOC_CONF",
        };
        x.var("alloc_conf_var", var);
        pytorch_allocator(f, x);
    }
    // TPU runtime: free but not contiguous.
    if id == "tpu.runtime-buffer" {
        if let (Some(req), Some(free)) = (s.requested, s.free) {
            let allocatable = f.details.get("allocatable").and_then(|v| v.as_u64());
            if free >= req && allocatable.is_none_or(|a| a < req) {
                x.set("fragmentation");
            }
        }
    }
    if id == "tpu.program-load" {
        let reservable = f.details.get("reservable").and_then(|v| v.as_u64());
        if let (Some(req), Some(free)) = (s.requested, s.free) {
            if free >= req && reservable.is_none_or(|r| r < req) {
                x.set("fragmentation");
            }
        }
    }
    if id == "tenstorrent.l1" {
        if let (Some(free), Some(per)) = (s.free, f.details.get("per_bank_bytes").and_then(|v| v.as_u64())) {
            if free >= per && f.details.get("largest_free_block").and_then(|v| v.as_u64()).is_some_and(|l| l < per) {
                x.set("fragmentation");
            }
        }
    }
    // "CUDA error: CUBLAS_STATUS_…" is how PyTorch's and ggml's CUDA checks word a cuBLAS
    // status; TensorFlow says "failed to create cublas handle: …". The former rules out
    // TensorFlow's preallocation as the cause even when the log names no framework.
    if id == "cuda.cublas-alloc-failed" && block.contains("CUDA error: CUBLAS_STATUS") {
        x.set("cublas_cuda_check_wording");
    }
    // "failed to create cublas handle: " is StreamExecutor's (TensorFlow's, and XLA's under
    // it) `CUDABlas::Init`, whose own explanation blames a framework that "may have
    // preallocated more than its fair share": the process's own pool took the GPU.
    if id == "cuda.cublas-alloc-failed" && block.contains("failed to create cublas handle: ") {
        x.set("stream_executor_cublas_init");
    }
    if id == "tpu.allocation-exceeds-memory" {
        x.set("request_exceeds_capacity");
    }
    // TPU scoped VMEM: a per-kernel limit that covers the need.
    if matches!(id, "tpu.scoped-vmem" | "tpu.vmem-program" | "tpu.allocation-exceeds-memory") && f.memory_space.as_deref() == Some("vmem") {
        let need = s.used.or(s.requested);
        if let Some(need) = need {
            // Headroom: the compiler's real need grows with spills and temporaries, so the
            // suggested limit is the need plus a quarter, rounded up to a MiB (never the need itself).
            let covered = (need + need / 4).div_ceil(MIB).max(1) * MIB;
            x.var("vmem_limit_bytes", covered.to_string());
            x.var("vmem_limit_mib", (covered / MIB).to_string());
            // jax's docstring: the flag's N KiB must be strictly above vmem_limit_bytes. The
            // default differs by chip (16 MiB per the flags guide, 32 MiB on v6e/TPU7x), so the
            // value is never derived from a default: it is above the need and above the limit
            // this log states, and so never lowers the limit in effect.
            let above_limit = s.limit.map_or(0, |l| l.div_ceil(MIB) * 1024 + 1024);
            x.var("scoped_vmem_limit_kib", (covered / 1024 + 1024).max(above_limit).to_string());
            // E1001's limit is a scoped default (16/32 MiB) that names the chips; the Y of
            // "Used X of Y vmem" is the VMEM limit in effect (a kernel's vmem_limit_bytes or
            // the scoped default), which raising lifts only on a chip with more VMEM than Y.
            let chips = if id == "tpu.vmem-program" {
                s.limit.map(crate::hardware::tpu_chips_with_vmem_above).unwrap_or_default()
            } else {
                crate::hardware::tpu_chips_for_scoped_limit(s.limit)
            };
            // The chip is not named in the log: the fix can work if it fits on at least one
            // chip whose default limit matches (flag range: up to physical VMEM − 1 MiB).
            if let Some(max_vmem) = chips.iter().map(|c| c.1).max() {
                let list: Vec<String> = chips.iter().map(|c| format!("{}: {}", c.0, format_bytes(c.1))).collect();
                x.var("chip_vmem_h", list.join(", "));
                if covered <= max_vmem.saturating_sub(MIB) {
                    x.set("request_fits_after_fix");
                }
                // The need itself is above the highest limit the flag allows on every chip
                // consistent with the log: no limit setting can fit it.
                if need > max_vmem.saturating_sub(MIB) {
                    x.set("need_exceeds_physical_vmem");
                }
            } else if id == "tpu.vmem-program" && s.limit.is_some_and(|l| need > l) {
                // No chip has more VMEM than the Y of "Used X of Y vmem": Y is the physical VMEM.
                x.set("need_exceeds_physical_vmem");
            }
        }
        if let Some(limit) = s.limit {
            if limit == 16 * MIB || limit == 32 * MIB {
                x.set("limit_is_default");
            }
        }
    }
    // GPU shared memory: which GPUs have this limit.
    if f.memory_space.as_deref() == Some("shared") {
        if let Some(limit) = s.limit {
            if let Some(fam) = crate::hardware::gpu_family_for_shared_limit(limit, f.platform == Platform::Rocm) {
                x.var("gpu_family", fam);
            }
            if let Some(req) = s.requested {
                if req > crate::hardware::largest_shared_per_block() {
                    x.set("exceeds_every_gpu");
                }
                if req > limit {
                    x.var("smem_over", (req - limit).to_string());
                    x.var("stages_hint", stages_hint(req, limit));
                }
            }
        }
    }
    if id == "vllm.insufficient-free-memory" {
        if let (Some(free), Some(total)) = (s.free, s.total) {
            if total > 0 {
                let fit = (free as u128 * 100 / total as u128) as u64;
                x.var("gpu_memory_utilization_fit", format!("0.{fit:02}"));
            }
            if s.requested.is_some() {
                x.var("others_h", format_bytes(total.saturating_sub(free)));
            }
        }
    }
    if id == "vllm.no-cache-blocks" {
        // The default is 0.9 in older releases and 0.92 in current ones: a suggestion must be
        // above both, and above the value the log shows in use.
        let stated = stated_gpu_memory_utilization(block);
        if let Some(v) = stated {
            x.var("gpu_memory_utilization_set", format!("{v:.2}"));
        }
        let floor = stated.unwrap_or(0.92);
        if let Some(next) = [0.95, 0.97, 0.98].into_iter().find(|c| *c > floor + 1e-9) {
            x.var("gpu_memory_utilization_raise", format!("{next:.2}"));
        }
    }
    // Serving engines: fix values the message itself states or implies.
    let detail_u64 = |k: &str| f.details.get(k).and_then(|v| v.as_u64());
    let detail_f64 = |k: &str| f.details.get(k).and_then(|v| v.as_f64());
    if id == "vllm.max-model-len" {
        // V1 prints the estimate; V0 prints how many tokens the cache holds (the check is max_model_len <= that).
        if let Some(fit) = detail_u64("estimated_max_model_len").or_else(|| detail_u64("kv_cache_tokens")) {
            x.var("max_model_len_fit", fit.to_string());
        }
        if let Some(len) = detail_u64("max_model_len") {
            x.var("max_model_len", len.to_string());
        }
    }
    if id == "vllm.sampler-warmup" {
        if let Some(n) = detail_u64("dummy_requests") {
            x.var("dummy_requests", n.to_string());
            x.var("max_num_seqs_fit", (n / 2).max(1).to_string());
        }
    }
    if id == "sglang.mem-fraction-static" {
        if let Some(v) = detail_f64("mem_fraction_static") {
            x.var("mem_fraction_static_now", format!("{v}"));
        }
        if let Some(v) = detail_f64("mem_fraction_static_min") {
            // The engine's own floor, rounded up to 0.01 so the value passes its check. A floor at
            // or below the value that failed says the budget moved (another process), not the fraction.
            let fit = (v * 100.0).ceil() / 100.0;
            if detail_f64("mem_fraction_static").is_none_or(|now| fit > now) {
                x.var("mem_fraction_static_fit", format!("{fit:.2}"));
            }
        }
    }
    if id == "sglang.req-slots" {
        if let (Some(free), Some(need)) = (detail_u64("available_req_slots"), detail_u64("num_reqs")) {
            x.var("req_slots_free", free.to_string());
            x.var("req_slots_needed", need.to_string());
        }
    }
    if id == "tgi.warmup-oom" {
        if let Some(n) = detail_u64("prefill_tokens") {
            x.var("prefill_tokens", n.to_string());
            // Half of one token is no budget: then the prefill budget is not what to lower.
            if n >= 2 {
                x.var("prefill_tokens_fit", (n / 2).to_string());
            }
        }
        if let Some(n) = detail_u64("total_tokens") {
            x.var("total_tokens", n.to_string());
            // The router's check names max_total_tokens alone: that budget, not the
            // prefill batch, is the one too large.
            if detail_u64("prefill_tokens").is_none() {
                x.set("total_tokens_failed");
            }
        }
    }
    if id == "tensorflow.oom-tensor" {
        if let Some(sh) = f.details.get("tensor_shape") {
            x.var("tensor_shape", sh.to_string());
        }
        if let Some(d) = f.derived.iter().find(|d| d.name == "tensor_bytes") {
            x.var("tensor_bytes_h", format_bytes(d.bytes));
        }
    }
    if id.starts_with("sparsecore.") {
        if let Some(space) = &f.memory_space {
            x.var(
                "space_name",
                match space.as_str() {
                    "sc-tilespmem" => "TileSpmem (201)",
                    "sc-spmem" => "Spmem (202)",
                    "sc-hbm" => "HBM (203)",
                    "sc-smem" => "Smem (0)",
                    "sc-sync-flags" => "Sync Flags (204)",
                    other => other,
                },
            );
        }
        for (k, d) in [("requested_words", "requested_words"), ("limit_words", "allocatable_words")] {
            if let Some(v) = f.details.get(d).and_then(|v| v.as_u64()) {
                x.var(k, v.to_string());
            }
        }
    }
}

/// PyTorch's caching allocator (CUDA, ROCm, XPU, NPU): fragmentation, and memory held
/// outside the allocator, from the message's numbers in every generation's format.
///
/// Before raising, `DeviceCachingAllocator::malloc` frees cached blocks large enough for
/// the request and retries, then frees every cached block that is not split and retries
/// again (pytorch/pytorch c10/cuda/CUDACachingAllocator.cpp@001074d2, `malloc`:
/// `release_available_cached_blocks`, `release_cached_blocks`; the comment above the
/// message: "the only remaining cached memory is split from a larger block that is
/// partially in-use"). So the reserved-but-unallocated memory in the message is the
/// free tails of live segments, and some of it is always there. It explains the failure
/// (fragmentation) only when it covers the request and is a material part of the device
/// (a tenth of it, or twice the request and a twentieth of it): below that, even a
/// perfect allocator leaves the job at the edge of the card, and the fix that holds is a
/// smaller working set; that case is `fragmentation_possible`, hedged, not `fragmentation`.
fn pytorch_allocator(f: &Finding, x: &mut Facts) {
    let s = &f.sizes;
    // "cached" (<= 1.3) is reserved-but-unallocated; 1.4-2.0 print "reserved in total".
    let cached_free = s.reserved_unallocated.or_else(|| s.reserved.zip(s.allocated).map(|(r, a)| r.saturating_sub(a)));
    // What PyTorch's allocator holds on the device: reserved in total (1.4-2.0), else
    // allocated plus reserved-but-unallocated (<= 1.3 and >= 2.1).
    let pytorch_held = s.reserved.or_else(|| s.allocated.map(|a| a + s.reserved_unallocated.unwrap_or(0)));
    let device = s.total.or_else(|| pytorch_held.map(|p| p + s.free.unwrap_or(0)));
    let material = |bytes: u64| device.is_some_and(|d| bytes.saturating_mul(10) >= d);
    if let Some(cf) = cached_free {
        x.var("cached_free_h", format_bytes(cf));
    }
    // Slack of at least twice the request and a twentieth of the device also counts: it
    // still holds the request with as much again to spare.
    let material_for = |cf: u64, req: u64| material(cf) || (cf >= req.saturating_mul(2) && device.is_some_and(|d| cf.saturating_mul(20) >= d));
    if let (Some(cf), Some(req)) = (cached_free, s.requested) {
        if cf >= req {
            if material_for(cf, req) {
                x.set("fragmentation");
            } else {
                x.set("fragmentation_possible");
            }
        }
    }
    // Expandable segments can map driver-free memory and free cached pages into one
    // range: the request can succeed when the two together cover it (and they are more
    // than a sliver of the device, as above).
    if let (Some(cf), Some(free), Some(req)) = (cached_free, s.free, s.requested) {
        if free < req && cf < req && cf.saturating_add(free) >= req && material(cf.saturating_add(free)) {
            x.set("free_plus_cached_covers");
        }
    }
    if let (Some(req), Some(total)) = (s.requested, s.total) {
        if req > total {
            x.set("request_exceeds_capacity");
        }
    }
    // The driver's free figure (cudaMemGetInfo when the message is written, after the
    // allocator's own free-and-retry) covers the request with room to spare (twice it, and a
    // twentieth of the device, as for cached memory above): the device was not full then. A
    // few MiB over a small request on a full card is still a full card.
    if let (Some(free), Some(req), Some(total)) = (s.free, s.requested, s.total) {
        if req > 0 && free >= req.saturating_mul(2) && free.saturating_mul(20) >= total && free <= total {
            x.set("free_covers_request");
        }
    }
    // An "allowed" cap at the device's whole capacity is no cap (a fraction of 1.0).
    if s.limit.zip(s.total).is_some_and(|(l, t)| l >= t) {
        x.conditions.remove("memory_fraction_cap");
    }
    // The fraction in effect, as torch.cuda.set_per_process_memory_fraction set it
    // (`allowed` is fraction × total, c10/cuda/CUDACachingAllocator.cpp `setMemoryFraction`).
    if let (Some(limit), Some(total)) = (s.limit, s.total.filter(|t| *t > 0)) {
        if x.conditions.contains("memory_fraction_cap") {
            x.var("memory_fraction_set", format!("{:.2}", limit as f64 / total as f64));
        }
    }
    if let Some(total) = s.total {
        x.var("device_total_h", format_bytes(total));
        // Cards of 4 GiB or less: the CUDA context and a display take a large share.
        if total <= 4 << 30 {
            x.set("small_device");
        }
    }
    let Some((total, free)) = s.total.zip(s.free) else { return };
    let busy = total.saturating_sub(free);
    let threshold = s.requested.unwrap_or(0).max(total / 10);
    // Other processes: only what the message's process lines state ("Process N has X
    // memory in use"); this process's own line reads "this process has X" (`used`).
    let lines: Vec<u64> = f
        .details
        .get("processes")
        .and_then(|p| p.as_array())
        .map(|list| list.iter().filter_map(|p| p.get("bytes").and_then(|b| b.as_u64())).collect())
        .unwrap_or_default();
    let processes: u64 = lines.iter().sum();
    // PyTorch names its own process "this process" by comparing NVML's PID with getpid();
    // in a container (another PID namespace) or a worker the job's own process is printed
    // as "Process N". One such line holding all the busy memory, with no "this process"
    // line, is then as likely this job as another one: not proof of other processes.
    let maybe_self = s.used.is_none() && lines.len() == 1 && processes.saturating_mul(10) >= busy.saturating_mul(9);
    if processes > 0 {
        x.var("others_h", format_bytes(processes));
        if processes >= threshold && !maybe_self {
            x.set("other_processes");
        }
    }
    if let Some(held) = pytorch_held {
        let elsewhere = busy.saturating_sub(held);
        x.var("elsewhere_h", format_bytes(elsewhere));
        if let Some(used) = s.used {
            x.var("outside_h", format_bytes(used.saturating_sub(held)));
        }
        // Held on the device but not by this allocator, and no process lines to say by
        // whom: this process's CUDA context and libraries, other processes, a display.
        // The context and a display alone take a sizeable share of a card, so only a fifth
        // of the device or more (and at least the request) is called out.
        if processes == 0 && elsewhere >= s.requested.unwrap_or(0).max(total / 5) && elsewhere > 0 {
            x.set("held_outside_allocator");
            // Other processes are named only for what the context and a display cannot
            // explain: the part beyond that allowance must itself hold the request and be
            // a material part (a tenth) of the device.
            if f.platform == Platform::Cuda {
                let allowance = cuda_context_allowance(&f.case);
                x.var("context_allowance_h", format_bytes(allowance));
                let beyond = elsewhere.saturating_sub(allowance);
                if beyond >= s.requested.unwrap_or(0).max(total / 10) && beyond > 0 {
                    x.set("elsewhere_beyond_context");
                }
            }
        }
    }
}

/// Device memory a PyTorch process and a desktop display can hold outside PyTorch's
/// allocator before other processes need be assumed. The CUDA context holds the loaded
/// kernels: with eager module loading (CUDA before 11.7, or PyTorch before 1.13, which
/// sets `CUDA_MODULE_LOADING=LAZY` when unset: pytorch/pytorch#86509) every kernel of
/// PyTorch's libraries is loaded at start, over 1000 MB by a PyTorch maintainer's account
/// (pytorch/pytorch#107667); with lazy loading 287 MB for one op (#86509), about 400 MB
/// once cuBLAS/cuDNN are in use (#109888). cuBLAS workspaces come from PyTorch's own
/// allocator and count as PyTorch's. A desktop on the same card is given 512 MiB: an
/// allowance, not a measurement (the message cannot show whether a display is attached).
fn cuda_context_allowance(case: &case::Case) -> u64 {
    const DISPLAY: u64 = 512 * MIB;
    let lazy_from = oomdoc_kb::version::Version::parse("1.13");
    // The log allows a release before 1.13 (or says nothing): the eager context is possible.
    let eager_possible = case.versions.get("torch").is_none_or(|v| v.overlaps(None, lazy_from.as_ref()))
        || case.versions.get("cuda").is_some_and(|v| v.overlaps(None, oomdoc_kb::version::Version::parse("11.7").as_ref()));
    let context = if eager_possible { 1024 * MIB } else { 512 * MIB };
    context + DISPLAY
}

/// What pipeline arithmetic alone can say from "Required: R, limit L": if the kernel's
/// shared memory is N equal pipeline buffers, how many of them fit.
pub fn stages_hint(required: u64, limit: u64) -> String {
    let mut parts = Vec::new();
    for n in 2u64..=5 {
        let fit = (limit as u128 * n as u128 / required as u128) as u64;
        if fit >= 1 && fit < n {
            parts.push(format!("{n}→{fit}"));
        }
    }
    if parts.is_empty() {
        format!("even one pipeline buffer of this kernel exceeds the limit ({:.2}× over): shrink the blocks", required as f64 / limit as f64)
    } else {
        format!("if the {} bytes are N equal pipeline buffers, the buffers that fit are: {}", required, parts.join(", "))
    }
}

/// The one-line numbers summary of a finding.
pub fn headline(f: &Finding, x: &Facts, lang: Lang) -> String {
    let s = &f.sizes;
    let h = |v: u64| format_bytes(v);
    let space = space_words(f, lang);
    let zh = lang == Lang::Zh;
    let over = |need: u64, limit: u64| -> String {
        if need > limit {
            let pct = x.vars.get("over_pct").cloned().unwrap_or_default();
            if zh {
                format!("，超出 {}（+{}%）", h(need - limit), pct)
            } else {
                format!(", over by {} (+{}%)", h(need - limit), pct)
            }
        } else {
            String::new()
        }
    };
    if let (Some(used), Some(limit)) = (s.used, s.limit) {
        return if zh {
            format!("需要 {} 的{}，上限 {}{}", h(used), space, h(limit), over(used, limit))
        } else {
            format!("needs {} of {}, limit {}{}", h(used), space, h(limit), over(used, limit))
        };
    }
    if let (Some(req), Some(limit)) = (s.requested, s.limit) {
        let fam = x.vars.get("gpu_family").map(|g| if zh { format!("（{g}）") } else { format!(" ({g})") }).unwrap_or_default();
        return if zh {
            format!("请求 {} 的{}，上限 {}{}{}", h(req), space, h(limit), fam, over(req, limit))
        } else {
            format!("requests {} of {}, limit {}{}{}", h(req), space, h(limit), fam, over(req, limit))
        };
    }
    if let Some(req) = s.requested {
        let mut out = if zh { format!("尝试分配 {} 的{}", h(req), space) } else { format!("tried to allocate {} of {}", h(req), space) };
        if let Some(free) = s.free {
            out += &if zh { format!("，空闲 {}", h(free)) } else { format!("; {} free", h(free)) };
        }
        if let Some(total) = s.total {
            out += &if zh { format!("（总容量 {}）", h(total)) } else { format!(" of {} total", h(total)) };
        }
        if let Some(a) = s.allocated {
            out += &if zh { format!("；已分配 {}", h(a)) } else { format!("; {} allocated", h(a)) };
        }
        if let Some(r) = s.reserved_unallocated {
            out += &if zh { format!("，已保留未分配 {}", h(r)) } else { format!(", {} reserved but unallocated", h(r)) };
        } else if let Some(r) = s.reserved {
            out += &if zh { format!("，已保留 {}", h(r)) } else { format!(", {} reserved", h(r)) };
        }
        return out;
    }
    if let Some(used) = s.used {
        return if zh { format!("需要 {} 的{}", h(used), space) } else { format!("needs {} of {}", h(used), space) };
    }
    if zh {
        "消息未给出大小".to_string()
    } else {
        "the message states no sizes".to_string()
    }
}

fn space_words(f: &Finding, lang: Lang) -> String {
    let zh = lang == Lang::Zh;
    let scoped = f.id == "tpu.scoped-vmem";
    let w = match f.memory_space.as_deref() {
        Some("hbm") => ("HBM", "HBM"),
        Some("vmem") if scoped => ("scoped VMEM", "作用域 VMEM"),
        Some("vmem") => ("VMEM", "VMEM"),
        Some("smem") => ("SMEM", "SMEM"),
        Some("cmem") => ("CMEM", "CMEM"),
        Some("device") => ("device memory", "设备显存"),
        Some("shared") => ("shared memory per block", "每个线程块的共享内存"),
        Some("host") => ("host memory", "主机内存"),
        Some("tensor-memory") => ("tensor memory", "张量内存"),
        Some("l1") => ("L1", "L1"),
        Some("sc-tilespmem") => ("SparseCore TileSpmem", "SparseCore TileSpmem"),
        Some("sc-spmem") => ("SparseCore Spmem", "SparseCore Spmem"),
        Some("sc-hbm") => ("SparseCore HBM", "SparseCore HBM"),
        Some("sc-smem") => ("SparseCore Smem", "SparseCore Smem"),
        Some("sc-sync-flags") => ("SparseCore sync flags", "SparseCore 同步标志"),
        Some(other) => (other, other),
        None => ("memory", "内存"),
    };
    (if zh { w.1 } else { w.0 }).to_string()
}

#[cfg(test)]
mod kb_fact_tests {
    use super::stated_gpu_memory_utilization as stated;

    #[test]
    fn gpu_memory_utilization_as_logs_state_it() {
        assert_eq!(stated("non-default args: {'model': 'm', 'gpu_memory_utilization': 0.85}"), Some(0.85));
        assert_eq!(stated("vllm serve m --gpu-memory-utilization 0.7 --max-model-len 8192"), Some(0.7));
        assert_eq!(stated("LLM(model='m', gpu_memory_utilization=0.5)"), Some(0.5));
        // The hint in the error names the setting without a value.
        assert_eq!(stated("Try increasing `gpu_memory_utilization` or decreasing `max_model_len`"), None);
    }
}
