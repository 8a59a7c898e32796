//! llama.cpp / ggml and the tools built on it (Ollama, koboldcpp): backend buffer allocation on CUDA, ROCm, Metal, Vulkan, SYCL.
//!
//! Formats, from ggml-org/llama.cpp:
//! * `ggml/src/ggml-cuda/ggml-cuda.cu`: `"%s: allocating %.2f MiB on device %d: cudaMalloc failed: %s"`
//!   (HIP and MUSA builds print the same text; the buffer name that follows says `ROCm0`/`MUSA0`);
//!   `ggml_cuda_host_malloc: failed to allocate %.2f MiB of pinned memory: %s`.
//! * `ggml/src/ggml-alloc.c` / `ggml-backend.cpp`: `"%s: failed to allocate %s buffer of size %zu"`
//!   (`ggml_gallocr_reserve_n`, `alloc_tensor_range`), then llama's `failed to allocate compute buffers`
//!   or `unable to allocate <buft> buffer`.
//! * Each backend's `ggml_backend_<backend>[_host]_buffer_type_alloc_buffer` (`ggml-backend.cpp`'s CPU one,
//!   `ggml-cpu/amx/amx.cpp`, `ggml-openvino`): `"%s: failed to allocate buffer of size %zu"`, the buffer type
//!   named only by the function (ggml-org/ggml@d99724f2b141fed9e1a9f402213506c081433465).
//! * `ggml/src/ggml-metal/*`: `"%s: error: failed to allocate buffer, size = %8.2f MiB"`, and a failed
//!   command buffer: `error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)`.
//! * `ggml/src/ggml-vulkan/ggml-vulkan.cpp`: `ggml_vulkan: Device memory allocation of size %zu failed.`
//!   followed by the vulkan-hpp exception text `vk::Device::allocateMemory: ErrorOutOfDeviceMemory`.
//! * `ggml/src/ggml-sycl/ggml-sycl.cpp`: `can't allocate %lu Bytes of memory on device`.
//! * `ggml/src/ggml.c` (`ggml_new_object`, before 2023 `ggml_new_tensor_impl`): `"%s: not enough space in the
//!   context's memory pool (needed %zu, available %zu)"` — a fixed-size context the program sized itself
//!   (`ggml_init_params.mem_size`), not the machine's memory; and `GGML_ASSERT(ctx->mem_buffer != NULL)` in
//!   `ggml_init`, the context's own buffer not allocated from host RAM.
//! * `ggml/src/ggml-alloc.c` (ggml-org/ggml at dd92cfd4, 2023-10, and v0.21.0): the allocators that place tensors in
//!   one backend buffer the program sized beforehand (a compute buffer sized by a measuring pass, a weights buffer):
//!   `ggml_allocr_alloc` (2023) `"%s: not enough space in the buffer (needed %zu, largest block available %zu)"`
//!   then `GGML_ASSERT(!"not enough space in the buffer")`; now `ggml_tallocr_alloc` `"%s: not enough space in the
//!   buffer to allocate %s (needed %zu, available %zu)"` and `ggml_dyn_tallocr_alloc` `"%s: not enough space in the
//!   buffer to allocate %zu bytes, largest block available %zu bytes"` (then `GGML_ABORT`). Like the context pool, a
//!   buffer too small for what the program put in it, whatever the machine has free.
//! * Ollama `llm/server.go`: `model requires more system memory (%s) than is available (%s)`.

use super::{has, window, window_before, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[
    "buffer of size",
    "failed to allocate compute buffers",
    "failed to allocate buffer, size",
    "ErrorOutOfDeviceMemory",
    "Device memory allocation of size",
    "Bytes of memory on device",
    "Bytes memory on device",
    "model requires more system memory",
    "of pinned memory",
    "current device:",
    "context's memory pool",
    "not enough space in the buffer",
    "mem_buffer != NULL",
    "unable to allocate",
    "enough available memory to run this model",
    "is larger than buffer maximum",
    "buffer is nil",
];

grammar!(cuda_malloc, r"(?P<func>ggml_backend_\w+?_buffer_type_alloc_buffer): allocating (?P<mib>[0-9]+(?:\.[0-9]+)? MiB) on device (?P<dev>\d+): (?P<api>cudaMalloc|hipMalloc|musaMalloc) failed: out of memory");
grammar!(failed_buffer, r"(?P<func>[A-Za-z_]\w*): failed to allocate (?P<buft>[A-Za-z][A-Za-z0-9_]*?) buffer of size (?P<n>[0-9]+)");
// The buffer type named by the allocating function: `ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size N`.
grammar!(func_buffer, r"(?P<func>ggml_backend_(?P<be>[a-z0-9_]+?)_buffer_type_alloc_buffer): failed to allocate buffer of size (?P<n>[0-9]+)");
grammar!(compute_buffers, r"(?P<func>[A-Za-z_]\w*): failed to allocate compute (?:pp )?buffers");
grammar!(metal_buffer, r"(?P<func>ggml_\w+): error: failed to allocate buffer, size = +(?P<mib>[0-9]+(?:\.[0-9]+)? MiB)");
grammar!(metal_cmd, r"(?:ggml_metal_\w+: (?:error: )?command buffer \d+ failed with status \d+\s+)?error: Insufficient Memory \(0*8:kIOGPUCommandBufferCallbackErrorOutOfMemory\)");
// ggml-metal.m (ggml_metal_add_buffer, ggerganov/llama.cpp 590250f7a, 2023-06): a weights buffer over the
// device's maxBufferLength, "%s: buffer '%s' size %zu is larger than buffer maximum of %zu", then loading
// fails. And (master-5ec8dd5, b1500): each buffer's line ends ", (%8.2f / %8.2f)" (currentAllocatedSize /
// recommendedMaxWorkingSetSize, MiB) and ", warning: current allocated size is greater than the recommended
// max working set size" once over it; a tensor then found in no buffer is "%s: error: buffer is nil".
grammar!(metal_max_buffer, r"(?P<func>ggml_metal_\w+): buffer '(?P<name>[^'\n]*)' size (?P<n>\d+) is larger than buffer maximum of (?P<max>\d+)");
grammar!(metal_nil, r"(?P<func>ggml_metal_\w+): error: (?:tensor '[^'\n]*' )?buffer is nil");
grammar!(metal_working_set, r"\(\s*(?P<used>\d+(?:\.\d+)?) /\s*(?P<max>\d+(?:\.\d+)?)\)[^\n]{0,60}?warning: current allocated size is greater than the recommended max working set size");
grammar!(vulkan, r"(?:ggml_vulkan: Device memory allocation of size (?P<n>[0-9]+) failed\.?\s+)?(?:ggml_vulkan: )?vk::Device::allocateMemory: ErrorOutOfDeviceMemory|(?:ggml_vulkan: )?Device memory allocation of size (?P<m>[0-9]+) failed");
// llama.cpp's model loader when a backend buffer for the weights could not be allocated (the ggml line above it
// may be missing from a paste or a title): `error loading model: unable to allocate <buft> buffer`.
grammar!(load_buffer, r"error loading model: unable to allocate (?P<buft>[A-Za-z][A-Za-z0-9_]*) buffer");
grammar!(sycl, r"can't (?:allocate|malloc) (?P<n>[0-9]+) Bytes (?:of )?memory on device");
grammar!(pinned, r"(?P<func>ggml_\w+_host_malloc): failed to allocate (?P<mib>[0-9]+(?:[.,][0-9]+)? MiB) of pinned memory: out of memory");
// Older/other ggml CUDA error reports: `CUDA error: out of memory\n  current device: 0, in function F at FILE:LINE`
// (`ggml_cuda_error`), and before 2024 `CUDA error 2 at ggml-cuda.cu:LINE: out of memory`.
grammar!(cuda_error_fn, r"(?:CUDA|ROCm|HIP|MUSA) error: out of memory\s+current device: (?P<dev>\d+), in function (?P<func>\w+) at (?P<loc>[^\s]+)");
grammar!(cuda_error_old, r"CUDA error 2 at (?P<loc>[^\s]*ggml-cuda\.cu:\d+): out of memory");
// Ollama reports the runner's last error line: `llama runner process has terminated: CUDA error: out of memory`.
grammar!(runner_oom, r"(?:llama runner|llama-server) process has terminated: (?:exit status \S+: )?(?P<dev>CUDA|ROCm|HIP|cudaMalloc failed:) (?:error: )?out of memory");
// (An issue title keeps it without the parentheses: "memory pool,needed N, available N".)
grammar!(context_pool, r"(?P<func>ggml_\w+): not enough space in the context's memory pool\s*(?:\(|,\s*)needed (?P<need>[0-9]+), available (?P<avail>[0-9]+)\)?");
grammar!(alloc_buffer, r#"(?P<func>ggml_\w+): not enough space in the buffer(?: \(needed (?P<need>\d+), largest block available (?P<lb>\d+)\)| to allocate (?:(?P<need3>\d+) bytes, largest block available (?P<lb3>\d+) bytes|[^\s(]+ \(needed (?P<need2>\d+), available (?P<avail>\d+)\)))(?:[ \t]*\r?\n[^\n]*?GGML_ASSERT[^\n]*?"not enough space in the buffer"\)?)?"#);
grammar!(context_buffer, r"GGML_ASSERT: [^\n]*?ggml\.c:\d+: ctx->mem_buffer != NULL|ggml\.c:\d+: GGML_ASSERT\(ctx->mem_buffer != NULL\) failed");
// Ollama 0.1.4-0.1.17 (llm/llama.go, read at tags v0.1.4, v0.1.10 and v0.1.17; gone at v0.1.18): when the runner
// subprocess died (its output ended with "unexpected EOF") without an error line of its own, the server guessed
// memory and returned this.
grammar!(ollama_runner_exited, r"llama runner exited, you may not have enough available memory to run this model");
grammar!(ollama_sys, r"model requires more system memory \((?P<req>{SZ})\) than is available \((?P<free>{SZ})\)");

/// Platform and memory space from a ggml buffer-type name (`CUDA0`, `ROCm1`, `Metal`, `Vulkan0`, `SYCL0`, `CANN0`,
/// `CPU`, `CUDA_Host`), or the backend part of its allocating function's name (`cpu`, `cuda_host`, `vk`, `sycl`,
/// `cann`, `metal`, `amx`, `cpu_repack`): each backend names its buffer types after itself, `_Host`/`_host` for
/// pinned host memory (`ggml_backend_*_buffer_type_get_name`).
fn buft_platform(buft: &str) -> (Platform, &'static str) {
    let b = buft.to_ascii_lowercase();
    let host = b.ends_with("_host") || b.starts_with("cpu") || b.starts_with("amx");
    let p = if b.starts_with("cuda") || b.starts_with("musa") {
        Platform::Cuda
    } else if b.starts_with("rocm") || b.starts_with("hip") {
        Platform::Rocm
    } else if b.starts_with("metal") || b.starts_with("mtl") {
        Platform::Metal
    } else if b.starts_with("sycl") {
        Platform::Xpu
    } else if b.starts_with("cann") {
        Platform::Npu
    } else if b.starts_with("cpu") || b.starts_with("amx") {
        Platform::Cpu
    } else {
        Platform::Other
    };
    (p, if host { "host" } else { "device" })
}

fn base(id: &'static str, start: usize, end: usize, platform: Platform, space: &str, priority: u8) -> Hit {
    let mut h = Hit::new(id, start, end);
    h.platform = Some(platform);
    h.phase = Some(Phase::Load);
    h.space(space);
    h.priority = priority;
    h
}

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "failed: out of memory") {
        for c in cuda_malloc().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut end = m.end();
            let platform = if &c["api"] == "hipMalloc" { Platform::Rocm } else { Platform::Cuda };
            let mut h = base("ggml.buffer-alloc", m.start(), end, platform, "device", 8);
            h.size(SizeKey::Requested, &c["mib"]);
            h.culprit.device = Some(format!("device {}", &c["dev"]));
            h.detail("function", &c["func"]);
            // The allocator's own line follows with the exact byte count and the buffer's name.
            let after = window(t, end, 600);
            if let Some(f) = failed_buffer().captures(after) {
                let fm = f.get(0).unwrap();
                if !after[..fm.start()].contains("failed: out of memory") {
                    let (p, _) = buft_platform(&f["buft"]);
                    if p != Platform::Other && p != Platform::Cpu {
                        h.platform = Some(p);
                    }
                    h.size(SizeKey::Requested, &f["n"]);
                    h.culprit.device = Some(f["buft"].to_string());
                    h.detail("allocator", &f["func"]);
                    end += fm.end();
                    h.end = end;
                }
            }
            hits.push(h);
        }
    }
    if has(t, "current device:") || has(t, "ggml-cuda.cu") {
        for c in cuda_error_fn().captures_iter(t) {
            let m = c.get(0).unwrap();
            let platform = if m.as_str().starts_with("ROCm") || m.as_str().starts_with("HIP") { Platform::Rocm } else { Platform::Cuda };
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), platform, "device", 8);
            h.phase = Some(Phase::Runtime);
            h.culprit.device = Some(format!("device {}", &c["dev"]));
            h.culprit.op = Some(c["func"].to_string());
            h.detail("location", c["loc"].rsplit(['/', '\\']).next().unwrap_or("").to_string());
            hits.push(h);
        }
        for c in cuda_error_old().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), Platform::Cuda, "device", 8);
            h.phase = Some(Phase::Runtime);
            h.detail("location", c["loc"].rsplit(['/', '\\']).next().unwrap_or("").to_string());
            hits.push(h);
        }
    }
    if has(t, "buffer of size") {
        for c in failed_buffer().captures_iter(t) {
            let m = c.get(0).unwrap();
            let (p, space) = buft_platform(&c["buft"]);
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), p, space, 12);
            h.size(SizeKey::Requested, &c["n"]);
            // Vulkan checks a single buffer against the device's largest allocation first.
            if window_before(t, m.start(), 400).contains("exceeds device buffer size limit") {
                h.flag("device_buffer_limit");
            }
            h.culprit.device = Some(c["buft"].to_string());
            h.detail("allocator", &c["func"]);
            hits.push(h);
        }
    }
    if has(t, "_buffer_type_alloc_buffer: failed to allocate buffer of size") {
        for c in func_buffer().captures_iter(t) {
            let m = c.get(0).unwrap();
            // The graph allocator's own line follows when it asked (`ggml_gallocr_reserve_n: failed to
            // allocate CPU buffer of size N`): one failure, read there with the buffer type's name.
            let next = window(t, m.end(), 300);
            if failed_buffer().find(next).is_some_and(|f| next[..f.start()].matches('\n').count() <= 1) {
                continue;
            }
            let (p, space) = buft_platform(&c["be"]);
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), p, space, 12);
            h.size(SizeKey::Requested, &c["n"]);
            h.culprit.device = Some(c["be"].to_string());
            h.detail("allocator", &c["func"]);
            hits.push(h);
        }
    }
    if has(t, "failed to allocate compute") {
        for c in compute_buffers().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), Platform::Other, "device", 40);
            h.platform = None;
            h.confidence = crate::finding::Confidence::Likely;
            h.detail("function", &c["func"]);
            hits.push(h);
        }
    }
    if has(t, "failed to allocate buffer, size") {
        for c in metal_buffer().captures_iter(t) {
            let m = c.get(0).unwrap();
            let platform = if c["func"].contains("metal") { Platform::Metal } else { Platform::Other };
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), platform, "device", 10);
            h.size(SizeKey::Requested, &c["mib"]);
            if platform == Platform::Metal {
                h.culprit.device = Some("Metal".to_string());
            }
            h.detail("function", &c["func"]);
            hits.push(h);
        }
    }
    if has(t, "is larger than buffer maximum") {
        for c in metal_max_buffer().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), Platform::Metal, "device", 10);
            for (g, k) in [("n", SizeKey::Requested), ("max", SizeKey::Limit)] {
                if let Ok(v) = c[g].parse::<u64>() {
                    h.bytes(k, v, format!("{v} bytes"));
                }
            }
            h.culprit.device = Some("Metal".to_string());
            h.detail("function", &c["func"]).detail("buffer", &c["name"]);
            h.flag("block_size_limit");
            hits.push(h);
        }
    }
    if has(t, "buffer is nil") && has(t, "recommended max working set size") {
        for m in metal_nil().find_iter(t) {
            let Some(ws) = metal_working_set().captures_iter(window_before(t, m.start(), 20000)).last() else { continue };
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), Platform::Metal, "device", 30);
            h.size(SizeKey::Used, &format!("{} MiB", &ws["used"])).size(SizeKey::Limit, &format!("{} MiB", &ws["max"]));
            h.culprit.device = Some("Metal".to_string());
            h.likely("Metal's buffers had passed the device's recommended working set before a tensor was found in no buffer: the allocation that should hold it most likely failed");
            hits.push(h);
            break;
        }
    }
    if has(t, "kIOGPUCommandBufferCallbackErrorOutOfMemory") {
        for m in metal_cmd().find_iter(t) {
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), Platform::Metal, "device", 10);
            h.phase = Some(Phase::Runtime);
            h.detail("metal_error", "kIOGPUCommandBufferCallbackErrorOutOfMemory");
            hits.push(h);
        }
    }
    if has(t, "ErrorOutOfDeviceMemory") || has(t, "Device memory allocation of size") {
        for c in vulkan().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), Platform::Other, "device", 10);
            if let Some(n) = c.name("n").or(c.name("m")) {
                h.size(SizeKey::Requested, n.as_str());
            }
            h.detail("backend", "vulkan");
            hits.push(h);
        }
    }
    if has(t, "error loading model: unable to allocate") {
        for c in load_buffer().captures_iter(t) {
            let m = c.get(0).unwrap();
            let (platform, space) = buft_platform(&c["buft"]);
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), platform, space, 12);
            h.detail("buffer_type", &c["buft"]);
            hits.push(h);
        }
    }
    if has(t, "Bytes of memory on device") || has(t, "Bytes memory on device") {
        for c in sycl().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), Platform::Xpu, "device", 10);
            h.size(SizeKey::Requested, &c["n"]);
            h.detail("backend", "sycl");
            hits.push(h);
        }
    }
    if has(t, "of pinned memory") {
        for c in pinned().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), Platform::Cuda, "host", 10);
            h.size(SizeKey::Requested, &c["mib"].replace(',', "."));
            h.detail("function", &c["func"]);
            hits.push(h);
        }
    }
    if has(t, "process has terminated") {
        for c in runner_oom().captures_iter(t) {
            let m = c.get(0).unwrap();
            let platform = match &c["dev"] {
                "ROCm" | "HIP" => Platform::Rocm,
                _ => Platform::Cuda,
            };
            let mut h = base("ggml.buffer-alloc", m.start(), m.end(), platform, "device", 8);
            h.detail("reported_by", "ollama");
            hits.push(h);
        }
    }
    if has(t, "context's memory pool") {
        for c in context_pool().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = base("ggml.context-pool", m.start(), m.end(), Platform::Cpu, "host", 10);
            h.phase = Some(Phase::Runtime);
            h.size(SizeKey::Requested, &c["need"]);
            // The pool's size: what it could hold at all, so free within it and its limit.
            h.size(SizeKey::Free, &c["avail"]);
            h.size(SizeKey::Limit, &c["avail"]);
            h.detail("function", &c["func"]);
            hits.push(h);
        }
    }
    if has(t, "not enough space in the buffer") {
        for c in alloc_buffer().captures_iter(t) {
            let m = c.get(0).unwrap();
            // The buffer's device is not in the message; a Metal log's host buffers are the GPU's too (unified memory).
            let ctx = window_before(t, m.start(), 3000);
            let (platform, space) = if ctx.contains("ggml_metal") { (Platform::Metal, "device") } else { (Platform::Cpu, "host") };
            let mut h = base("ggml.context-pool", m.start(), m.end(), platform, space, 10);
            h.phase = Some(Phase::Runtime);
            h.flag("graph_allocator");
            if let Some(n) = c.name("need").or(c.name("need2")).or(c.name("need3")) {
                h.size(SizeKey::Requested, n.as_str());
            }
            // What the buffer still had: its largest free block, or what was left past the last tensor.
            if let Some(f) = c.name("lb").or(c.name("lb3")).or(c.name("avail")) {
                h.size(SizeKey::Free, f.as_str());
            }
            h.detail("function", &c["func"]);
            hits.push(h);
        }
    }
    if has(t, "mem_buffer != NULL") {
        for m in context_buffer().find_iter(t) {
            let mut h = base("generic.host-oom", m.start(), m.end(), Platform::Cpu, "host", 20);
            h.likely("ggml_init could not allocate the context's buffer from host memory (its malloc returned NULL)");
            h.detail("assertion", "ctx->mem_buffer != NULL");
            hits.push(h);
        }
    }
    if has(t, "enough available memory to run this model") {
        for m in ollama_runner_exited().find_iter(t) {
            // Which memory is not said (the runner may die for host RAM or for the GPU's).
            let mut h = Hit::new("generic.oom", m.start(), m.end());
            h.phase = Some(Phase::Load);
            h.priority = 30;
            h.likely("Ollama says this whenever its llama runner died without an error line of its own: the runner is most often killed for memory while loading the model, but a crash for any other reason reads the same; which memory (the GPU's or the host's) it does not say, and the runner's own output before it does");
            h.detail("reported_by", "ollama");
            // Only these releases print it; later ones report the runner's own last error line.
            h.detail("printed_by_versions", "ollama 0.1.4-0.1.17");
            hits.push(h);
        }
    }
    if has(t, "model requires more system memory") {
        for c in ollama_sys().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = base("ollama.system-memory", m.start(), m.end(), Platform::Cpu, "host", 8);
            h.size(SizeKey::Requested, &c["req"]);
            h.size(SizeKey::Free, &c["free"]);
            hits.push(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_runner_exit_says_no_more_than_it_knows() {
        // ollama/ollama#1019: no memory space, no platform, likely, and the releases that print it.
        let mut hits = Vec::new();
        recognize("Error: llama runner exited, you may not have enough available memory to run this model?", &mut hits);
        let h = &hits[0];
        assert_eq!((h.id, h.platform, h.memory_space.as_deref(), h.confidence), ("generic.oom", None, None, crate::finding::Confidence::Likely));
        assert_eq!(h.details["printed_by_versions"], "ollama 0.1.4-0.1.17");
    }

    #[test]
    fn the_allocating_function_names_the_buffer_type() {
        // ggml-org/llama.cpp#8101: the CPU buffer type's allocator, named only by its function.
        let t = "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 137438953504\nllama_kv_cache_init: failed to allocate buffer for kv cache\n";
        let mut hits = Vec::new();
        recognize(t, &mut hits);
        let h = hits.iter().find(|h| h.id == "ggml.buffer-alloc").expect("ggml hit");
        assert_eq!((h.platform, h.memory_space.as_deref(), h.get(SizeKey::Requested)), (Some(Platform::Cpu), Some("host"), Some(137438953504)));
        // Followed by the graph allocator's line for the same failure: one hit, that line's.
        let mut hits = Vec::new();
        recognize("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 84940832\nggml_gallocr_reserve_n: failed to allocate CPU buffer of size 84940800\n", &mut hits);
        let sizes: Vec<_> = hits.iter().filter(|h| h.id == "ggml.buffer-alloc").map(|h| h.get(SizeKey::Requested)).collect();
        assert_eq!(sizes, vec![Some(84940800)]);
        for (name, p, space) in [("cpu", Platform::Cpu, "host"), ("CPU", Platform::Cpu, "host"), ("cuda", Platform::Cuda, "device"), ("CUDA0", Platform::Cuda, "device"), ("CUDA_Host", Platform::Cuda, "host"), ("cuda_host", Platform::Cuda, "host"), ("Vulkan0", Platform::Other, "device"), ("vk", Platform::Other, "device"), ("Metal", Platform::Metal, "device"), ("SYCL0", Platform::Xpu, "device"), ("CANN0", Platform::Npu, "device")] {
            assert_eq!(buft_platform(name), (p, space), "{name}");
        }
    }
}
