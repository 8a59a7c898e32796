//! XLA:GPU / JAX / TF stream-executor messages. Formats from
//! `xla/stream_executor/integrations/tf_allocator_adapter.cc`,
//! `stream_executor_address_allocator.cc`, `xla/tsl/framework/bfc_allocator.cc`,
//! `allocator.cc` (AllocatorStats::DebugString), `xla/service/buffer_assignment.cc`,
//! `hlo_rematerialization.cc`, `gpu_hlo_schedule.cc` and the CUDA/ROCm driver wrappers.

use super::{alloc_shape, has, shape_bytes, window, window_before, Hit};
use crate::finding::{Allocation, Confidence, SizeKey};
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

grammar!(oom_alloc, r"Out of (?P<host>host )?memory while trying to allocate\s+(?P<req>{SZ})");
grammar!(ba_stat, r"(?P<k>parameter|constant|maybe_live_out|preallocated temp|total) allocation:\s+(?P<v>{SZ})");
grammar!(ba_frag, r"(?P<k>preallocated temp|total) fragmentation:\s+(?P<v>{SZ})");
grammar!(tf_total_mem, r"Total memory:\s*(?P<v>{SZ})");
grammar!(tf_free_mem, r"Free memory:\s*(?P<v>{SZ})");
grammar!(peak_buffer, r"Buffer (?P<i>\d+):[ \t]*(?:\n|$)");
grammar!(failed_request, r"Failed to allocate request for\s+(?P<h>{SZ})\s+\((?P<b>\d+)B\)\s+on device ordinal\s+(?P<ord>\d+)");
grammar!(bfc_head, r"Allocator \((?P<name>[\w\-]+)\) ran out of memory trying to allocate\s+(?P<req>{SZ})(?:\s+\(rounded to (?P<rounded>\d+)\))?(?:\s*from the \w+ end)?");
// TensorFlow before the allocator was named in the message (gpu/gpu_bfc_allocator.cc, then
// common_runtime/bfc_allocator.cc, TF 0.x-1.x, read through the code index): `LOG(WARNING) << "Ran out of
// memory trying to allocate " << HumanReadableNumBytes(num_bytes) << ".  See logs for memory state"`. That
// BFC allocator served GPU memory (GPUBFCAllocator, then BFCAllocator over the GPU's memory).
grammar!(bfc_head_unnamed, r"\bRan out of memory trying to allocate\s+(?P<req>{SZ})\.\s+See logs for memory state");
grammar!(bfc_stat, r"(?m)^\s*(?P<k>Limit|InUse|MaxInUse|NumAllocs|MaxAllocSize|Reserved|PeakReserved|LargestFreeBlock):\s+(?P<v>{SZ})\s*$");
grammar!(bfc_sum, r"Sum Total of in-use chunks:\s+(?P<v>{SZ})");
grammar!(bfc_op, r"requested by op\s*(?P<op>[^\s\n]*)");
grammar!(driver, r"failed to allocate\s+(?P<h>{SZ})(?:\s+\((?P<b>\d+) bytes\))?\s+from device:\s*(?P<err>CUDA_ERROR_OUT_OF_MEMORY|HIP_ERROR_OutOfMemory|hipErrorOutOfMemory|hipError_t\(1002\))");
grammar!(cubin, r"Failed to load in-memory CUBIN[^\n]{0,200}?CUDA_ERROR_OUT_OF_MEMORY");
grammar!(pinned_call, r"\b(?:cudaHostAlloc|cudaMallocHost|cudaHostRegister|cuMemHostAlloc|cuMemAllocHost|cuMemHostRegister|hipHostMalloc|hipMallocHost|hipHostAlloc|hipHostRegister)\b");
grammar!(bare_cuda_oom, r"CUDA_ERROR_OUT_OF_MEMORY|HIP_ERROR_OutOfMemory|\bhipErrorOutOfMemory\b");
grammar!(masked, r"CUDNN_STATUS_(?:EXECUTION_FAILED|INTERNAL_ERROR|ALLOC_FAILED|NOT_INITIALIZED)|Failed to determine best cudnn convolution algorithm|cudaErrorMemoryAllocation|Failed to get convolution (?:algorithm|plans)\. This is probably because (?:cuDNN|MIOpen) failed to initialize");
// TensorFlow's own line when cuDNN's runtime is older than the one it was built with
// (`cuda_dnn.cc`): then "cuDNN failed to initialize" is a version mismatch, not memory.
grammar!(cudnn_version_mismatch, r"Loaded runtime CuDNN library: [\d.]+ but source was compiled with");
grammar!(xla_or_cudnn_words, r"(?i)\bjax|\bxla\b|xla_|tensorflow|\bcudnn");
grammar!(cudnn_input, r"custom-call\((?P<shape>[a-z0-9]+\[[0-9,]*\])");
grammar!(remat, r"Can't reduce memory use below\s+(?P<limit>{SZ})(?:\s+\((?P<limitb>\d+) bytes\))?\s+by rematerialization;\s+only reduced to\s+(?P<used>{SZ})(?:\s+\((?P<usedb>\d+) bytes\))?");
grammar!(smem_limit, r"Shared memory size limit exceeded:\s*requested\s+(?P<req>\d+),\s*available:\s*(?P<lim>\d+)");
grammar!(smem_runtime, r"Shared memory requested exceeds device resources");
grammar!(args_limit, r"The byte size of input/output arguments \((?P<args>\d+)\) exceeds the base limit \((?P<lim>\d+)\)");
grammar!(executable, r"\[executable_name='(?P<e>[^']+)'\]|hlo_module=(?P<m>[\w.\-]+)");
grammar!(rocm_hint, r"(?i)\bhip\b|rocm|amdgpu|gfx\d{3}");

fn gpu_platform(t: &str) -> Platform {
    if rocm_hint().is_match(t) {
        Platform::Rocm
    } else {
        Platform::Cuda
    }
}

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    let platform = gpu_platform(t);
    if has(t, "memory while trying to allocate") {
        for c in oom_alloc().captures_iter(t) {
            let m = c.get(0).unwrap();
            let host = c.name("host").is_some();
            let mut h = Hit::new(if host { "xla-gpu.host-memory" } else { "xla-gpu.out-of-memory" }, m.start(), m.end());
            let req = c["req"].trim_end_matches('.');
            h.size(SizeKey::Requested, req);
            h.space(if host { "host" } else { "device" });
            h.platform = Some(platform);
            h.phase = Some(Phase::Runtime);
            h.priority = 10;
            buffer_assignment_report(t, m.end(), &mut h);
            if let Some(e) = executable().captures(window(t, m.start(), 4096)) {
                h.culprit.executable = e.name("e").or(e.name("m")).map(|x| x.as_str().to_string());
            }
            hits.push(h);
        }
    }
    // The report pasted without the allocator line above it.
    if !has(t, "memory while trying to allocate") && (has(t, "BufferAssignment stats:") || has(t, "BufferAssignment OOM Debugging")) {
        let at = t.find("BufferAssignment OOM Debugging").or_else(|| t.find("BufferAssignment stats:")).unwrap_or(0);
        let mut h = Hit::new("xla-gpu.out-of-memory", at, at + 23);
        h.platform = Some(platform);
        h.phase = Some(Phase::Runtime);
        h.space("device");
        h.priority = 30;
        buffer_assignment_report(t, at, &mut h);
        hits.push(h);
    }
    if has(t, "Failed to allocate request") {
        for c in failed_request().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("xla.allocation-request-failed", m.start(), m.end());
            let b: u64 = c["b"].parse().unwrap_or(0);
            h.bytes(SizeKey::Requested, b, format!("{} ({}B)", &c["h"], &c["b"]));
            h.culprit.device = Some(format!("device ordinal {}", &c["ord"]));
            h.phase = Some(Phase::Runtime);
            if super::tpu::mentions_tpu(t) {
                h.platform = Some(Platform::Tpu);
                h.space("hbm");
            } else if super::host::cpu_only_context(t) {
                // JAX's CPU client: host RAM.
                h.id = "host.xla-cpu";
                h.platform = Some(Platform::Cpu);
                h.space("host");
                h.flag("framework_jax");
            } else {
                h.platform = Some(platform);
                h.space("device");
            }
            if has(t, "algorithm_picker") || has(t, "autotun") {
                h.flag("warning_only");
            }
            h.priority = 15;
            hits.push(h);
        }
    }
    if has(t, "ran out of memory trying to allocate") {
        for c in bfc_head().captures_iter(t) {
            let m = c.get(0).unwrap();
            let after = window(t, m.end(), 200);
            let not_failure = after.contains("The caller indicates that this is not a failure") || after.trim_start().starts_with("with freed_by_count");
            let host_pool = c["name"].contains("host");
            let id = match (not_failure, host_pool) {
                (true, _) => "bfc.not-a-failure",
                (false, true) => "xla-gpu.host-memory",
                (false, false) => "bfc.allocator-oom",
            };
            let mut h = Hit::new(id, m.start(), m.end());
            h.size(SizeKey::Requested, &c["req"]);
            h.detail("allocator", c["name"].to_string());
            if let Some(r) = c.name("rounded").and_then(|r| r.as_str().parse::<u64>().ok()) {
                h.detail("rounded_bytes", r);
            }
            h.culprit.device = Some(c["name"].to_string());
            h.platform = Some(if c["name"].starts_with("GPU") || c["name"].contains("gpu") { platform } else { Platform::Other });
            if c["name"].contains("cpu") || c["name"].contains("CPU") || c["name"].contains("host") {
                h.platform = Some(Platform::Cpu);
                h.space("host");
            } else {
                h.space("device");
            }
            h.phase = Some(Phase::Runtime);
            if not_failure {
                h.flag("warning_only");
                let e = after.find("more memory were available.").map_or(m.end(), |i| m.end() + i + 27);
                h.end = e.min(t.len());
            } else {
                if let Some(op) = bfc_op().captures(window(t, m.end(), 300)) {
                    if !op["op"].is_empty() {
                        h.culprit.op = Some(op["op"].to_string());
                    }
                }
                bfc_dump(t, m.end(), &mut h);
            }
            h.priority = 12;
            hits.push(h);
        }
    }
    if has(t, "Ran out of memory trying to allocate") {
        for c in bfc_head_unnamed().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("bfc.allocator-oom", m.start(), m.end()).on(platform).during(Phase::Runtime).in_space("device").ranked(12);
            h.size(SizeKey::Requested, &c["req"]);
            // TensorFlow before the allocator's name was printed: long before TF_GPU_ALLOCATOR=cuda_malloc_async (2.5).
            h.flag("legacy_message");
            bfc_dump(t, m.end(), &mut h);
            hits.push(h);
        }
    }
    if has(t, "from device") {
        for c in driver().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("cuda.driver-oom", m.start(), m.end());
            match c.name("b").and_then(|b| b.as_str().parse::<u64>().ok()) {
                Some(b) => h.bytes(SizeKey::Requested, b, format!("{} ({} bytes)", &c["h"], b)),
                None => h.size(SizeKey::Requested, &c["h"]),
            };
            h.detail("driver_error", c["err"].to_string());
            h.platform = Some(if c["err"].starts_with("CUDA") { Platform::Cuda } else { Platform::Rocm });
            // TensorFlow prints the device's memory when it creates it, just before.
            let before = window_before(t, m.start(), 1600);
            if let Some(tm) = tf_total_mem().captures(before) {
                h.size(SizeKey::Total, &tm["v"]);
            }
            if let Some(fm) = tf_free_mem().captures(before) {
                h.size(SizeKey::Free, &fm["v"]);
            }
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.priority = 14;
            hits.push(h);
        }
    }
    if has(t, "CUBIN") {
        for m in cubin().find_iter(t) {
            let mut h = Hit::new("cuda.driver-oom", m.start(), m.end());
            h.platform = Some(Platform::Cuda);
            h.phase = Some(Phase::Load);
            h.space("device");
            h.detail("driver_error", "CUDA_ERROR_OUT_OF_MEMORY");
            h.detail("during", "module load (in-memory CUBIN)");
            h.priority = 13;
            hits.push(h);
        }
    }
    // Any other driver-level OOM status.
    for m in bare_cuda_oom().find_iter(t) {
        let mut h = Hit::new("cuda.driver-oom", m.start(), m.end());
        h.platform = Some(if m.as_str().starts_with("CUDA") { Platform::Cuda } else { Platform::Rocm });
        h.phase = Some(Phase::Runtime);
        // Returned by a page-locked host allocation (`hipHostRegister returns 2`, `cuMemHostAlloc`): host memory.
        h.space(if pinned_call().is_match(window_before(t, m.start(), 300)) { "host" } else { "device" });
        h.detail("driver_error", m.as_str().to_string());
        h.priority = 40;
        hits.push(h);
    }
    if has(t, "CUDNN_STATUS_") || has(t, "convolution algorithm") || has(t, "convolution plans") || has(t, "cudaErrorMemoryAllocation") {
        for m in masked().find_iter(t) {
            // TensorFlow's conv autotuner could not list cuDNN's (MIOpen's) algorithms
            // because the library's handle was never created (`conv_ops_gpu.cc`,
            // `get_algo_failed_error`, TF 1.13-2.6): usually no memory was left for it
            // beside TF's start-up mapping, but a version mismatch says the same.
            let autotuner = m.as_str().starts_with("Failed to get convolution");
            if autotuner && cudnn_version_mismatch().is_match(t) {
                continue;
            }
            // A bare CUDA runtime status is XLA's (cuDNN handle or workspace) only where the
            // text shows XLA, JAX, TensorFlow or cuDNN; elsewhere (XGBoost's thrust/RMM
            // allocator, CuPy) the runtime vocabulary names it.
            if m.as_str() == "cudaErrorMemoryAllocation" && !xla_or_cudnn_words().is_match(t) {
                continue;
            }
            let mut h = Hit::new("xla-gpu.masked-cudnn", m.start(), m.end());
            h.platform = Some(if m.as_str().contains("MIOpen") { Platform::Rocm } else { Platform::Cuda });
            h.phase = Some(if m.as_str().starts_with("Failed to determine") { Phase::Compile } else { Phase::Runtime });
            h.space("device");
            if autotuner {
                h.detail("during", "convolution autotuning (the library's handle was not created)");
                h.likely("TensorFlow could not list the convolution algorithms because cuDNN (MIOpen) did not initialize; that is usually its handle finding no device memory left beside TensorFlow's start-up mapping (the warning above it says which), and a library version mismatch reads the same");
            } else {
                h.detail("library_status", m.as_str().to_string());
                if m.as_str() != "CUDNN_STATUS_ALLOC_FAILED" {
                    h.confidence = Confidence::Likely;
                }
            }
            if let Some(c) = cudnn_input().captures(window(t, m.end(), 2000)) {
                let (_, unpadded) = shape_bytes(&c["shape"]);
                h.culprit.shape = Some(c["shape"].to_string());
                h.culprit.unpadded_bytes = unpadded;
                if let Some(b) = unpadded {
                    h.derive("input_bytes", b, format!("elements of {} × element size", &c["shape"]));
                }
                h.end = h.end.max(m.end() + c.get(0).unwrap().end());
            }
            h.priority = 45;
            hits.push(h);
        }
    }
    if has(t, "by rematerialization") {
        for c in remat().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("xla.remat-warning", m.start(), m.end());
            match c.name("limitb") {
                Some(b) => h.bytes(SizeKey::Limit, b.as_str().parse().unwrap_or(0), c["limit"].to_string()),
                None => h.size(SizeKey::Limit, &c["limit"]),
            };
            match c.name("usedb") {
                Some(b) => h.bytes(SizeKey::Used, b.as_str().parse().unwrap_or(0), c["used"].to_string()),
                None => h.size(SizeKey::Used, &c["used"]),
            };
            h.platform = Some(platform);
            h.phase = Some(Phase::Compile);
            h.space("device");
            h.flag("warning_only");
            h.priority = 20;
            hits.push(h);
        }
    }
    if has(t, "Shared memory") {
        for c in smem_limit().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("xla-gpu.shared-memory", m.start(), m.end());
            let req: u64 = c["req"].parse().unwrap_or(0);
            let lim: u64 = c["lim"].parse().unwrap_or(0);
            h.bytes(SizeKey::Requested, req, c["req"].to_string()).bytes(SizeKey::Limit, lim, c["lim"].to_string());
            h.platform = Some(if lim == 65536 && platform == Platform::Rocm { Platform::Rocm } else { platform });
            h.phase = Some(Phase::Compile);
            h.space("shared");
            h.priority = 10;
            hits.push(h);
        }
        for m in smem_runtime().find_iter(t) {
            let mut h = Hit::new("xla-gpu.shared-memory", m.start(), m.end());
            h.platform = Some(platform);
            h.phase = Some(Phase::Runtime);
            h.space("shared");
            if let Some(e) = executable().captures(window(t, m.start(), 2000)) {
                h.culprit.executable = e.name("e").or(e.name("m")).map(|x| x.as_str().to_string());
            }
            h.priority = 11;
            hits.push(h);
        }
    }
    if has(t, "exceeds the base limit") {
        for c in args_limit().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("xla-gpu.args-exceed-limit", m.start(), m.end());
            let a: u64 = c["args"].parse().unwrap_or(0);
            let l: u64 = c["lim"].parse().unwrap_or(0);
            h.bytes(SizeKey::Used, a, c["args"].to_string()).bytes(SizeKey::Limit, l, c["lim"].to_string());
            h.platform = Some(platform);
            h.phase = Some(Phase::Compile);
            h.space("device");
            h.priority = 10;
            hits.push(h);
        }
    }
}

/// "BufferAssignment OOM Debugging." stats and peak buffers after an XLA:GPU OOM.
fn buffer_assignment_report(t: &str, from: usize, h: &mut Hit) {
    let w = window(t, from, 512 * 1024);
    let Some(start) = w.find("BufferAssignment stats:").or_else(|| w.find("BufferAssignment OOM Debugging")) else { return };
    if start > 4096 {
        return;
    }
    let report = &w[start..];
    let mut end = start;
    for c in ba_stat().captures_iter(window(report, 0, 4096)) {
        let key = format!("{}_allocation", c["k"].replace(' ', "_"));
        if let Some(p) = oomdoc_units::parse_size(&c["v"]) {
            h.detail(&key, p.bytes);
        }
        end = end.max(start + c.get(0).unwrap().end());
    }
    for c in ba_frag().captures_iter(window(report, 0, 4096)) {
        let key = format!("{}_fragmentation", c["k"].replace(' ', "_"));
        if let Some(p) = oomdoc_units::parse_size(&c["v"]) {
            h.detail(&key, p.bytes);
        }
    }
    if let Some(pb) = report.find("Peak buffers:") {
        let list = &report[pb..];
        let heads: Vec<_> = peak_buffer().captures_iter(list).collect();
        for (i, c) in heads.iter().enumerate().take(64) {
            let s = c.get(0).unwrap().end();
            let e = heads.get(i + 1).map_or(list.len().min(s + 8192), |n| n.get(0).unwrap().start());
            let mut a = Allocation { rank: c["i"].parse().unwrap_or(0), ..Default::default() };
            let mut consumed = 0;
            for line in list[s..e].lines() {
                consumed += line.len() + 1;
                let l = line.trim();
                if let Some(v) = l.strip_prefix("Size:") {
                    a.size = oomdoc_units::parse_size(v.trim()).map(|p| p.bytes);
                } else if let Some(v) = l.strip_prefix("Operator:") {
                    let v = v.trim();
                    if let Some(rest) = v.strip_prefix("op_name=\"") {
                        let (op, tail) = rest.split_once('"').unwrap_or((rest, ""));
                        a.op_name = Some(op.to_string());
                        if let (Some(f), Some(ln)) = (
                            tail.split("source_file=\"").nth(1).and_then(|x| x.split('"').next()),
                            tail.split("source_line=").nth(1).map(|x| x.trim().split_whitespace().next().unwrap_or("")),
                        ) {
                            a.source = Some(format!("{f}:{ln}"));
                        }
                    } else {
                        a.op_name = Some(v.to_string());
                    }
                } else if let Some(v) = l.strip_prefix("XLA Label:") {
                    a.label = Some(v.trim().to_string());
                } else if let Some(v) = l.strip_prefix("Shape:").or_else(|| l.strip_prefix("Entry Parameter Subshape:")) {
                    a.shape = Some(v.trim().to_string());
                    if l.starts_with("Entry") {
                        a.allocation_type = Some("parameter".into());
                    }
                } else if l.starts_with("=====") {
                    break;
                }
            }
            if let Some(s) = &a.shape {
                a.unpadded_size = shape_bytes(s).1;
            }
            alloc_shape(&mut a);
            end = end.max(start + pb + s + consumed.min(e - s));
            h.culprit.allocations.push(a);
        }
    }
    h.end = h.end.max(from + end);
}

/// The BFC allocator's dump after a fatal failure: Stats and the in-use sum.
pub(super) fn bfc_dump(t: &str, from: usize, h: &mut Hit) {
    let w = window(t, from, 1 << 20);
    let mut end = 0;
    let stats_at = w.find("Stats:");
    if let Some(s) = stats_at {
        for c in bfc_stat().captures_iter(window(w, s, 4096)) {
            let k = &c["k"];
            let Some(p) = oomdoc_units::parse_size(&c["v"]) else { continue };
            match k {
                "Limit" => {
                    h.bytes(SizeKey::Limit, p.bytes, p.text.clone());
                }
                "InUse" => {
                    h.bytes(SizeKey::Allocated, p.bytes, p.text.clone());
                }
                "Reserved" => {
                    h.bytes(SizeKey::Reserved, p.bytes, p.text.clone());
                }
                _ => {}
            }
            let key: String = k.chars().flat_map(|ch| if ch.is_uppercase() { vec!['_', ch.to_ascii_lowercase()] } else { vec![ch] }).collect();
            h.detail(key.trim_start_matches('_'), p.bytes);
            end = end.max(s + c.get(0).unwrap().end());
        }
    }
    if let Some(c) = bfc_sum().captures(w) {
        if let Some(p) = oomdoc_units::parse_size(&c["v"]) {
            h.detail("sum_in_use_chunks", p.bytes);
            if h.get(SizeKey::Allocated).is_none() {
                h.bytes(SizeKey::Allocated, p.bytes, p.text.clone());
            }
        }
        end = end.max(c.get(0).unwrap().end());
    }
    if let (Some(limit), Some(inuse), Some(req)) = (h.get(SizeKey::Limit), h.get(SizeKey::Allocated), h.get(SizeKey::Requested)) {
        // The statistics show the pool itself has less free than the request: full, not
        // fragmented. Without them neither can be told from the warning alone.
        if limit.saturating_sub(inuse) < req {
            h.flag("pool_full");
        }
        if let Some(largest) = h.details.get("largest_free_block").and_then(|v| v.as_u64()) {
            if limit.saturating_sub(inuse) >= req && largest < req {
                h.flag("fragmentation");
            }
        }
    }
    if end > 0 {
        h.end = h.end.max(from + end);
    }
}
