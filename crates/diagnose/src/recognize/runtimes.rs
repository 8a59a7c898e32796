//! Inference runtimes and communication libraries: ONNX Runtime (BFCArena, CUDA/TensorRT EPs), TensorRT, NCCL, the CUDA stream-ordered allocator, Rust ML (candle, burn, wgpu, cudarc).
//!
//! Formats:
//! * ONNX Runtime `onnxruntime/core/framework/bfc_arena.cc` (`AllocateRawInternal`):
//!   `Failed to allocate memory for requested buffer of size %zu` and
//!   `Available memory of %zu is smaller than requested bytes of %zu` (the arena's memory limit,
//!   `gpu_mem_limit` / `OrtArenaCfg::max_mem`, minus what it already holds);
//!   `onnxruntime/core/providers/cuda/cuda_call.cc`: `CUDA failure 2: out of memory ; GPU=0 ; ...`.
//! * TensorRT (closed source; wordings as its logger prints them): `Requested amount of GPU memory
//!   (%zu bytes) could not be allocated. There may not be enough free memory for allocation to succeed.`,
//!   `Cuda Error in allocate: 2 (out of memory)`, `Error Code 2: OutOfMemory (...)`,
//!   `Error Code 1: Cuda Runtime (out of memory)`, `user allocator error allocating %zu-byte buffer`.
//! * NCCL `src/include/checks.h` / `alloc.h`: `NCCL WARN Cuda failure 'out of memory'` (newer:
//!   `Cuda failure 2 'out of memory'`), `NCCL WARN Failed to CUDA calloc %zu bytes`,
//!   `Call to cuMem... failed with error CUDA_ERROR_OUT_OF_MEMORY`.
//! * cudarc (used by candle and burn): `DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")`.
//! * The HIP runtime's ROCclr layer (ROCm/clr, read at rocm-6.2.2; logged at `AMD_LOG_LEVEL>=1` as
//!   `:1:<file>:<line>: <time> us: <pid> : [tid:0x..] <message>`, `rocclr/utils/debug.cpp`):
//!   `hipamd/src/hip_memory.cpp` (ihipMalloc, since 2020, bc7676045), `hip_mempool_impl.cpp` and `hip_vm.cpp`
//!   print `Allocation failed : Device memory : required :%zu | free :%zu | total :%zu` (free and total from
//!   hipMemGetInfo; `hip_vm.cpp` glues `free :%zu| total`) and return hipErrorOutOfMemory; for pinned host
//!   memory `Allocation failed : Pinned Memory, size :%zu`. `rocclr/platform/memory.cpp` logs `Video memory
//!   allocation failed!` when the device object could not be created and `Can't allocate memory size - 0x%08X
//!   bytes!` (also the OpenCL layer, `opencl/amdocl/`): `%08X` prints the low 32 bits of a `size_t`, so that
//!   number is not read as the size.

use super::{has, window, window_before, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[
    "Failed to allocate memory for requested buffer",
    // A title cut inside the message, after the arena's function signature.
    "BFCArena::AllocateRawInternal",
    "is smaller than requested bytes",
    "bytes) could not be allocated",
    "Error Code 2: ",
    "Error code 2: ",
    "user allocator error allocating",
    "Failed to CUDA calloc",
    "Not enough memory left",
    "wgpu error: Out of Memory",
];

grammar!(ort_arena, r"(?:(?:onnxruntime::)?BFCArena::AllocateRawInternal(?:\([^)\n]*\))? )?(?:Failed to allocate memory for requested buffer of size (?P<req>[0-9]+)|Available memory of (?P<avail>[0-9]+) is smaller than requested bytes of (?P<req2>[0-9]+))|(?m)(?:onnxruntime::)?BFCArena::AllocateRawInternal(?:\([^)\n]*\))? (?P<cut>Failed to alloc\w*|Available memory\b)[ \t]*$");
// ONNX Runtime's NCHWc layout transformer (`onnxruntime/core/optimizer/nchwc_transformer.cc`, read through the
// code index) names the nodes it rewrites `<output>_nchwc` and assigns them to the CPU execution provider
// (`SetExecutionProviderType(kCpuExecutionProvider)`; MLAS kernels): a failing node of that name ran on the CPU.
grammar!(ort_nchwc_node, r"\bnode\. Name:'[^'\n]*_nchwc'");
grammar!(ort_cuda, r"CUDA failure 2: out of memory ; GPU=(?P<gpu>-?\d+)");
grammar!(trt_requested, r"Requested amount of (?:GPU )?memory \((?P<n>[0-9]+) bytes\) could not be allocated");
grammar!(trt_cuda_alloc, r"Cuda Error in (?:[\w:]+::)?allocate: 2 \(out of memory\)");
grammar!(trt_code2, r"(?i:Error Code) 2: (?:OutOfMemory|out of Memory)(?: \((?:Requested size was (?P<n>[0-9]+) bytes\.?|[^)\n]{0,80})\))?");
grammar!(trt_code1, r"(?i:Error Code) 1: (?i:Cuda Runtime) \(out of memory\)");
grammar!(trt_user_alloc, r"user allocator error allocating (?P<n>[0-9]+)-byte buffer");
grammar!(nccl_cuda, r"(?:NCCL WARN )?Cuda failure (?:2 )?'out of memory'");
grammar!(nccl_calloc, r"Failed to CUDA (?:calloc|malloc|host alloc) (?P<n>[0-9]+) bytes");
grammar!(nccl_cumem, r"Call to (?P<call>cuMem\w+|cudaMalloc\w*|cudaHostAlloc) failed(?: with error|:)? (?:CUDA_ERROR_OUT_OF_MEMORY|'?out of memory'?)");
// wgpu-core: a HAL `DeviceError::OutOfMemory` surfaces as "Not enough memory left" under the failing
// call ("In Device::create_buffer"); newer releases raise "wgpu error: Out of Memory".
grammar!(wgpu_oom, r"(?:wgpu error: Validation Error\s+Caused by:\s+In (?P<call>[A-Za-z]+::\w+)(?:\s+note: label = `(?P<label>[^`\n]*)`)?\s+)?Not enough memory left\.?|wgpu error: Out of Memory");
grammar!(rocclr_device, r"Allocation failed : Device memory : required :(?P<req>\d+) \| free :(?P<free>\d+) ?\| total :(?P<total>\d+)");
grammar!(rocclr_pinned, r"Allocation failed : Pinned Memory, size :(?P<req>\d+)");
grammar!(rocclr_object, r"Video memory allocation failed!|Can't allocate memory size - (?P<hex>0x[0-9A-Fa-f]{8}) bytes!");
grammar!(cudarc, r#"DriverError\(CUDA_ERROR_OUT_OF_MEMORY, "out of memory"\)"#);

fn cuda_hit(id: &'static str, start: usize, end: usize, priority: u8) -> Hit {
    Hit::new(id, start, end).on(Platform::Cuda).during(Phase::Runtime).in_space("device").ranked(priority)
}

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    onnxruntime(t, hits);
    tensorrt(t, hits);
    nccl(t, hits);
    if has(t, "Not enough memory left") || has(t, "wgpu error: Out of Memory") {
        for c in wgpu_oom().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("wgpu.out-of-memory", m.start(), m.end());
            h.platform = Some(Platform::Other);
            h.phase = Some(Phase::Runtime);
            h.space("device");
            h.priority = 9;
            if let Some(call) = c.name("call") {
                h.culprit.op = Some(call.as_str().to_string());
            }
            if let Some(l) = c.name("label") {
                h.detail("label", l.as_str());
            }
            hits.push(h);
        }
    }
    rocclr(t, hits);
    if has(t, "DriverError(CUDA_ERROR_OUT_OF_MEMORY") {
        for m in cudarc().find_iter(t) {
            let mut h = cuda_hit("cudarc.driver-oom", m.start(), m.end(), 9);
            h.detail("driver_error", "CUDA_ERROR_OUT_OF_MEMORY");
            hits.push(h);
        }
    }
}

fn rocclr(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "Allocation failed : ") {
        for c in rocclr_device().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("generic.device-oom", m.start(), m.end()).on(Platform::Rocm).during(Phase::Runtime).in_space("device").ranked(9);
            for (k, g) in [(SizeKey::Requested, "req"), (SizeKey::Free, "free"), (SizeKey::Total, "total")] {
                if let Ok(n) = c[g].parse::<u64>() {
                    h.bytes(k, n, c[g].to_string());
                }
            }
            h.detail("runtime", "hip").detail("status", "hipErrorOutOfMemory");
            hits.push(h);
        }
        for c in rocclr_pinned().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("generic.host-oom", m.start(), m.end()).on(Platform::Rocm).during(Phase::Runtime).in_space("host").ranked(9);
            if let Ok(n) = c["req"].parse::<u64>() {
                h.bytes(SizeKey::Requested, n, c["req"].to_string());
            }
            h.detail("runtime", "hip").detail("status", "hipErrorOutOfMemory").detail("memory", "pinned host memory");
            hits.push(h);
        }
    }
    if has(t, "Video memory allocation failed!") || has(t, "Can't allocate memory size - 0x") {
        for c in rocclr_object().captures_iter(t) {
            let m = c.get(0).unwrap();
            // Sizeless: a weak duplicate beside the `Allocation failed : Device memory` line that follows.
            let mut h = Hit::new("generic.device-oom", m.start(), m.end()).on(Platform::Rocm).during(Phase::Runtime).in_space("device").ranked(30);
            h.detail("runtime", "hip");
            if let Some(x) = c.name("hex") {
                h.detail("size_low_32_bits", x.as_str());
            }
            hits.push(h);
        }
    }
}

fn onnxruntime(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "Failed to allocate memory for requested buffer") || has(t, "is smaller than requested bytes") || has(t, "BFCArena::AllocateRawInternal") {
        for c in ort_arena().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("onnxruntime.arena-alloc", m.start(), m.end());
            h.phase = Some(Phase::Runtime);
            h.priority = 9;
            if let Some(r) = c.name("req").or(c.name("req2")) {
                h.size(SizeKey::Requested, r.as_str());
            }
            if let Some(a) = c.name("avail") {
                h.size(SizeKey::Free, a.as_str());
                h.flag("arena_limit");
            }
            // The message does not name the arena's device; the surrounding log does.
            let ctx = format!("{}{}", window_before(t, m.start(), 3000), window(t, m.end(), 1500));
            let gpu = ["Cuda", "CUDA", "cuda", "TensorRT", "GPU", "gpu", "VRAM"].iter().any(|w| ctx.contains(w));
            let cpu = ctx.contains("BFCArena for Cpu") || ctx.contains("Default CPU") || ctx.contains("CPUExecutionProvider") || ort_nchwc_node().is_match(&ctx);
            if c.name("cut").is_some() {
                h.detail("message", "cut after the arena's function name");
            }
            if gpu && !cpu {
                h.platform = Some(Platform::Cuda);
                h.space("device");
            } else if cpu && !gpu {
                h.platform = Some(Platform::Cpu);
                h.space("host");
                h.flag("host_arena");
            } else {
                h.platform = Some(Platform::Other);
            }
            hits.push(h);
        }
    }
    if has(t, "CUDA failure 2: out of memory") {
        for c in ort_cuda().captures_iter(t) {
            let m = c.get(0).unwrap();
            // CNTK printed the same format; ONNX Runtime's lines name it (CudaCall, source paths).
            let line = format!("{}{}", window_before(t, m.start(), 600), window(t, m.end(), 600));
            if !line.contains("onnxruntime") {
                continue;
            }
            // Sizeless: a weak duplicate next to the arena's own message.
            let mut h = cuda_hit("onnxruntime.arena-alloc", m.start(), m.end(), 30);
            h.culprit.device = Some(format!("GPU {}", &c["gpu"]));
            h.detail("cuda_error_code", 2);
            hits.push(h);
        }
    }
}

fn tensorrt(t: &str, hits: &mut Vec<Hit>) {
    let id = "tensorrt.out-of-memory";
    if has(t, "could not be allocated") {
        for c in trt_requested().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = cuda_hit(id, m.start(), m.end(), 9);
            h.phase = Some(Phase::Compile);
            h.size(SizeKey::Requested, &c["n"]);
            // During the engine build the builder skips the tactic and goes on.
            let after = window(t, m.end(), 300);
            if after.contains("Skipping tactic") {
                h.flag("tactic_skipped");
            }
            hits.push(h);
        }
    }
    if has(t, "allocate: 2 (out of memory)") {
        for m in trt_cuda_alloc().find_iter(t) {
            let mut h = cuda_hit(id, m.start(), m.end(), 30);
            h.detail("cuda_error_code", 2);
            hits.push(h);
        }
    }
    if has(t, " 2: OutOfMemory") || has(t, " 2: out of Memory") {
        for c in trt_code2().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = cuda_hit(id, m.start(), m.end(), 30);
            if let Some(n) = c.name("n") {
                h.size(SizeKey::Requested, n.as_str());
                h.priority = 9;
            }
            hits.push(h);
        }
    }
    if has(t, "(out of memory)") {
        for m in trt_code1().find_iter(t) {
            hits.push(cuda_hit(id, m.start(), m.end(), 30));
        }
    }
    if has(t, "user allocator error allocating") {
        for c in trt_user_alloc().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = cuda_hit(id, m.start(), m.end(), 9);
            h.phase = Some(Phase::Compile);
            h.size(SizeKey::Requested, &c["n"]);
            hits.push(h);
        }
    }
}

fn nccl(t: &str, hits: &mut Vec<Hit>) {
    let id = "nccl.cuda-oom";
    if has(t, "'out of memory'") {
        for m in nccl_cuda().find_iter(t) {
            // Other libraries print the same CUDA text; NCCL's own lines carry its name.
            if !m.as_str().starts_with("NCCL") && !window_before(t, m.start(), 2000).contains("NCCL") {
                continue;
            }
            let mut end = m.end();
            let mut h = cuda_hit(id, m.start(), end, 30);
            // RCCL is NCCL hipified: the same text, from a path or banner that names it.
            let before = window_before(t, m.start(), 2000);
            if before.contains("rccl") || before.contains("RCCL") || before.contains("hipify") {
                h.platform = Some(Platform::Rocm);
            }
            // alloc.h follows the CUDA error with the size it asked for.
            let after = window(t, end, 400);
            if let Some(c) = nccl_calloc().captures(after) {
                h.size(SizeKey::Requested, &c["n"]);
                end += c.get(0).unwrap().end();
                h.end = end;
                h.priority = 9;
            }
            hits.push(h);
        }
    }
    if has(t, "Failed to CUDA") {
        for c in nccl_calloc().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = cuda_hit(id, m.start(), m.end(), 11);
            h.size(SizeKey::Requested, &c["n"]);
            hits.push(h);
        }
    }
    if has(t, "Call to cu") {
        for c in nccl_cumem().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = cuda_hit(id, m.start(), m.end(), 9);
            h.culprit.op = Some(c["call"].to_string());
            hits.push(h);
        }
    }
}
