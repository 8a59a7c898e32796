//! Other array frameworks and vendors: CuPy/Chainer/Numba, MLX, PaddlePaddle, MXNet, Intel XPU, Ascend NPU.
//!
//! * CuPy `cupy/cuda/memory.pyx` `OutOfMemoryError`: "Out of memory allocating N bytes
//!   (allocated so far: M bytes[, limit set to: L bytes])." (v7+, comma-grouped), and
//!   "out of memory to allocate N bytes (total M bytes)" (v2–v6; "total" is what the pool
//!   had allocated).
//! * Numba `numba/cuda/cudadrv/driver.py`: `CudaAPIError` "[2] Call to cuMemAlloc results in
//!   CUDA_ERROR_OUT_OF_MEMORY" (`[CUresult.CUDA_ERROR_OUT_OF_MEMORY]` with NVIDIA bindings).
//! * MLX `mlx/backend/metal/allocator.cpp`: "[metal::malloc] Attempting to allocate N bytes
//!   which is greater than the maximum allowed buffer size of M bytes."; `device.cpp`:
//!   "[METAL] Command buffer execution failed: Insufficient Memory
//!   (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)".
//! * PaddlePaddle allocator: "Out of memory error on GPU N. Cannot allocate X memory on GPU
//!   N, Y memory has been allocated and available memory is only Z." (older releases omit
//!   the "has been allocated" clause).
//! * MXNet `src/storage/pooled_storage_manager.h`: "cudaMalloc [retry ]failed: out of memory".
//! * Intel XPU: PyTorch/IPEX "XPU out of memory. Tried to allocate …" (read by the PyTorch
//!   allocator grammar, which sends it here as `xpu.out-of-memory`), IPEX's "Current platform
//!   can NOT allocate memory block with size larger than 4GB!", Level Zero / Unified Runtime
//!   `ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY`, `UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY` (and the
//!   `_HOST_` variants).
//! * Ascend NPU: torch_npu "NPU out of memory. Tried to allocate …" (PyTorch grammar, sent
//!   here as `npu.out-of-memory`), CANN runtime "EL0004 … Failed to allocate memory"
//!   (`Memory_Allocation_Failure(EL0004)`), `FAIL_TO_ALLOCATE_MEMORY`.

use super::{has, window_before, Hit};
use crate::finding::SizeKey;
use crate::grammar;
use oomdoc_kb::{Phase, Platform};

/// Literals that can start a block for this module's messages (every grammar's anchor contains one).
pub const TRIGGERS: &[&str] = &[
    "Out of memory allocating",
    "out of memory to allocate",
    "CUDA_ERROR_OUT_OF_MEMORY",
    "[metal::malloc]",
    "Resource limit (",
    "[malloc_or_wait]",
    "Command buffer execution failed: Insufficient Memory",
    "Out of memory error on GPU",
    "enforce allocating <= available",
    "Fail to alloc memory of",
    // (MXNet's `pooled_storage_manager.h:N: cudaMalloc failed: out of memory` starts a block by its
    // `out of memory`: the file name is no trigger of its own, which saves the scanner an anchor.)
    "cudaMalloc retry failed",
    "XPU out of memory",
    "NPU out of memory",
    "can NOT allocate memory block",
    "_OUT_OF_DEVICE_MEMORY",
    "_OUT_OF_HOST_MEMORY",
    "EL0004",
    "FAIL_TO_ALLOCATE_MEMORY",
    // Keeps CANN's traceback line with the request size in the EL0004 block.
    "Failed to allocate resource[DeviceMemory]",
];

grammar!(
    cupy_new,
    r"(?P<pre>(?:cupy\.cuda\.memory\.)?OutOfMemoryError: )?Out of memory allocating (?P<req>[0-9][0-9,]*) bytes(?: \(allocated so far: (?P<alloc>[0-9][0-9,]*) bytes(?:, limit set to: (?P<lim>[0-9][0-9,]*) bytes)?\)\.?)?"
);
// CuPy's own exception class (`vocabulary::OOM_CLASSES`: `cupy/cuda/memory.pyx` `class OutOfMemoryError(MemoryError)`,
// raised by its memory pool): a traceback or title that names it is the pool's failure however much of the
// message survives; ranked after the message grammars, likely when the message is gone.
grammar!(cupy_class, &super::vocabulary::oom_class_pattern("cupy"));
grammar!(cupy_old, r"(?:(?:cupy\.cuda\.memory\.)?OutOfMemoryError: )?out of memory to allocate (?P<req>\d+) bytes \(total (?P<alloc>\d+) bytes\)");
grammar!(numba, r"(?:CudaAPIError: )?(?:\[(?P<code>[\w.]+)\] )?Call to (?P<fn>cu\w+) results in CUDA_ERROR_OUT_OF_MEMORY(?: \((?P<code2>\d+)\))?");
grammar!(
    mlx_buffer,
    r"\[metal::malloc\] Attempting to allocate (?P<req>\d+) bytes which is greater than the maximum allowed buffer size of (?P<lim>\d+) bytes\.?"
);
// MLX 0.24 on (`mlx/backend/metal/allocator.cpp`, v0.32.1): "[malloc] Unable to allocate N bytes." when Metal returns no
// buffer, and "[metal::malloc] Resource limit (N) exceeded." when the allocator holds as many Metal buffers as the
// device's resource limit (a count of buffers, not bytes) even after releasing its cache.
grammar!(mlx_malloc_or_wait, r"\[(?:malloc_or_wait|malloc)\] Unable to allocate (?P<req>\d+) bytes\.?");
// (Quoted without its tag, as an issue title does, it is MLX's where the line names MLX.)
grammar!(mlx_resource_limit, r"\[metal::malloc\] Resource limit \((?P<n>\d+)\) exceeded\.?|\bResource limit \((?P<n2>\d+)\) exceeded\b[^\n]*?\bmlx\w*");
grammar!(
    mlx_cmdbuf,
    r"\[METAL\] Command buffer execution failed: Insufficient Memory(?: \((?P<code>[0-9A-Fa-f]{8}:kIOGPUCommandBufferCallbackErrorOutOfMemory)\))?\.?"
);
grammar!(
    paddle,
    r"Out of memory error on GPU (?P<dev>\d+)\. Cannot allocate (?P<req>{SZ}) memory on GPU \d+,(?: (?P<alloc>{SZ}) memory has been allocated and)? available memory is only (?P<free>{SZ})\.?"
);
// Paddle Fluid 0.12-0.14 (2018), paddle/fluid/platform/gpu_info.cc: `PADDLE_ENFORCE_LE(allocating, available)` in
// `GpuMaxChunkSize`, printed by the enforce macro as "enforce allocating <= available failed, <bytes> > <bytes>" (the
// message names its file; not re-read at a tag).
grammar!(paddle_enforce, r"enforce allocating <= available failed, (?P<req>\d+) > (?P<free>\d+)");
// Paddle's host allocators (`paddle/fluid/memory/detail/system_allocator.cc` AlignedMalloc, `memory/allocation/
// cpu_allocator.cc`, the NPU pinned allocator; read in the code index's copies from Paddle 2.x to 3.x, not at a tag):
// posix_memalign (or _aligned_malloc) refused, `errors::ResourceExhausted("Fail to alloc memory of %ld size, error code
// is %d.", size, error)`, printed as "ResourceExhaustedError: ..." (2.x summaries) or "(ResourceExhausted) ..."; the
// size is bytes, the code an errno (12, ENOMEM).
grammar!(paddle_host, r"Fail to alloc memory of (?P<req>\d+) size(?:, error code is (?P<errno>\d+))?\.?");
grammar!(
    mxnet,
    r"(?:(?P<loc>(?:src/storage/[\w./]*)?pooled_storage_manager\.h:\d+): )?cudaMalloc (?P<retry>retry )?failed: out of memory"
);
grammar!(
    xpu_4gb,
    // The sentence alone (a title, a cut paste) is still IPEX's: the size limit is in its words.
    r"(?:Current platform )?can NOT allocate memory block with size larger than 4GB(?:! Tried to allocate (?P<req>{SZ})(?: \(GPU\s*(?P<dev>\d+); (?P<total>{SZ}) total capacity; (?P<alloc>{SZ}) already allocated; (?P<res>{SZ}) reserved in total by PyTorch\))?)?"
);
grammar!(
    level_zero,
    r"(?:level_zero backend failed with error: (?P<num>\d+) \()?(?P<code>(?:ZE|UR)_RESULT_ERROR_OUT_OF_(?P<where>DEVICE|HOST)_MEMORY)\)?"
);
grammar!(cann_size, r"Failed to allocate resource\[DeviceMemory\] with info \[size:(?P<req>\d+)\]");
grammar!(
    cann,
    // The code with its name is enough where the sentence after it was cut (a paste in HTML spans).
    r"(?:Memory_Allocation_Failure\(EL0004\)|EL0004)(?::)?[^\n]{0,120}?Failed to allocate memory\.?|Memory_Allocation_Failure\(EL0004\)|FAIL_TO_ALLOCATE_MEMORY"
);

/// `25,600,000` → 25600000.
fn grouped(s: &str) -> Option<u64> {
    let digits: String = s.chars().filter(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

fn device_hit(id: &'static str, start: usize, end: usize, platform: Platform) -> Hit {
    Hit::new(id, start, end).on(platform).during(Phase::Runtime).in_space("device").ranked(8)
}

pub fn recognize(t: &str, hits: &mut Vec<Hit>) {
    if has(t, "Out of memory allocating") {
        for c in cupy_new().captures_iter(t) {
            // XLA:CPU prints the same four words ("RESOURCE_EXHAUSTED: Out of memory allocating N
            // bytes."): CuPy's own message always goes on with "(allocated so far", or comes
            // behind its exception name when a paste cut it short.
            if c.name("pre").is_none() && c.name("alloc").is_none() {
                continue;
            }
            let m = c.get(0).unwrap();
            let mut h = device_hit("cupy.out-of-memory", m.start(), m.end(), Platform::Cuda);
            for (g, k) in [("req", SizeKey::Requested), ("alloc", SizeKey::Allocated), ("lim", SizeKey::Limit)] {
                if let Some(v) = c.name(g) {
                    if let Some(b) = grouped(v.as_str()) {
                        h.bytes(k, b, format!("{} bytes", v.as_str()));
                    }
                }
            }
            if c.name("lim").is_some() {
                h.flag("memory_fraction_cap");
            }
            hits.push(h);
        }
    }
    if has(t, "out of memory to allocate") {
        for c in cupy_old().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("cupy.out-of-memory", m.start(), m.end(), Platform::Cuda);
            for (g, k) in [("req", SizeKey::Requested), ("alloc", SizeKey::Allocated)] {
                if let Some(b) = grouped(&c[g]) {
                    h.bytes(k, b, format!("{} bytes", &c[g]));
                }
            }
            h.flag("legacy_message");
            hits.push(h);
        }
    }
    if has(t, "cupy.cuda.memory.OutOfMemoryError") && !hits.iter().any(|h| h.id == "cupy.out-of-memory") {
        if let Some(m) = cupy_class().find(t) {
            let class = super::vocabulary::oom_class(m.as_str()).expect("CuPy's row");
            let mut h = device_hit(class.entry, m.start(), m.end(), class.platform).ranked(65);
            h.detail("exception", m.as_str().to_string());
            h.likely("only CuPy's out-of-memory exception class is in the text, not its message (the request and what the pool held are cut)");
            hits.push(h);
        }
    }
    if has(t, "results in CUDA_ERROR_OUT_OF_MEMORY") {
        for c in numba().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("numba.cuda-out-of-memory", m.start(), m.end(), Platform::Cuda);
            h.culprit.op = Some(c["fn"].to_string());
            h.detail("driver_error", "CUDA_ERROR_OUT_OF_MEMORY").detail("cuda_error_code", 2);
            if &c["fn"] == "cuInit" || &c["fn"] == "cuCtxCreate" {
                h.phase = Some(Phase::Load);
            }
            hits.push(h);
        }
    }
    if has(t, "[metal::malloc]") {
        for c in mlx_buffer().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("mlx.max-buffer-size", m.start(), m.end(), Platform::Metal);
            for (g, k) in [("req", SizeKey::Requested), ("lim", SizeKey::Limit)] {
                if let Ok(b) = c[g].parse::<u64>() {
                    h.bytes(k, b, format!("{} bytes", &c[g]));
                }
            }
            h.flag("request_exceeds_capacity").flag("block_size_limit");
            hits.push(h);
        }
    }
    // MLX before 0.24 (`mlx/allocator.cpp` malloc_or_wait, removed in ml-explore/mlx#1976):
    // the Metal allocator found no memory even after waiting for buffers to be freed.
    if has(t, "Resource limit (") {
        for c in mlx_resource_limit().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("mlx.metal-oom", m.start(), m.end(), Platform::Metal);
            h.detail("resource_limit", c.name("n").or(c.name("n2")).and_then(|n| n.as_str().parse::<u64>().ok()));
            h.flag("resource_limit");
            hits.push(h);
        }
    }
    if has(t, "[malloc_or_wait]") || has(t, "[malloc] Unable to allocate") {
        for c in mlx_malloc_or_wait().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("mlx.metal-oom", m.start(), m.end(), Platform::Metal);
            if let Ok(b) = c["req"].parse::<u64>() {
                h.bytes(SizeKey::Requested, b, format!("{} bytes", &c["req"]));
            }
            hits.push(h);
        }
    }
    if has(t, "Command buffer execution failed: Insufficient Memory") {
        for c in mlx_cmdbuf().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("mlx.metal-oom", m.start(), m.end(), Platform::Metal);
            if let Some(code) = c.name("code") {
                h.detail("metal_error", code.as_str().to_string());
            }
            hits.push(h);
        }
    }
    if has(t, "Out of memory error on GPU") {
        for c in paddle().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("paddle.out-of-memory", m.start(), m.end(), Platform::Cuda);
            h.cap_size(SizeKey::Requested, &c, "req").cap_size(SizeKey::Allocated, &c, "alloc").cap_size(SizeKey::Free, &c, "free");
            h.culprit.device = Some(format!("GPU {}", &c["dev"]));
            if let (Some(req), Some(free)) = (h.get(SizeKey::Requested), h.get(SizeKey::Free)) {
                if req <= free {
                    h.flag("fragmentation");
                }
            }
            hits.push(h);
        }
    }
    if has(t, "enforce allocating <= available") {
        for c in paddle_enforce().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("paddle.out-of-memory", m.start(), m.end(), Platform::Cuda);
            for (g, k) in [("req", SizeKey::Requested), ("free", SizeKey::Free)] {
                if let Ok(b) = c[g].parse::<u64>() {
                    h.bytes(k, b, c[g].to_string());
                }
            }
            hits.push(h);
        }
    }
    if has(t, "Fail to alloc memory of") {
        for c in paddle_host().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = Hit::new("host.cpu-allocator", m.start(), m.end()).on(Platform::Cpu).during(Phase::Runtime).in_space("host").ranked(8);
            if let Ok(b) = c["req"].parse::<u64>() {
                h.plausible_bytes(SizeKey::Requested, b);
            }
            if let Some(e) = c.name("errno").and_then(|e| e.as_str().parse::<u64>().ok()) {
                h.detail("errno", e);
            }
            hits.push(h);
        }
    }
    if has(t, "cudaMalloc") && (has(t, "pooled_storage_manager") || has(t, "cudaMalloc retry failed") || has(t, "MXNetError")) {
        for c in mxnet().captures_iter(t) {
            let m = c.get(0).unwrap();
            // Plain "cudaMalloc failed: out of memory" is MXNet's only with its storage manager named.
            if c.name("loc").is_none() && c.name("retry").is_none() && !has(window_before(t, m.start(), 300), "MXNetError") {
                continue;
            }
            let mut h = device_hit("mxnet.out-of-memory", m.start(), m.end(), Platform::Cuda);
            if let Some(l) = c.name("loc") {
                h.detail("location", l.as_str().rsplit('/').next().unwrap_or("").to_string());
            }
            h.priority = 12;
            hits.push(h);
        }
    }
    if has(t, "can NOT allocate memory block") {
        for c in xpu_4gb().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("xpu.out-of-memory", m.start(), m.end(), Platform::Xpu);
            h.cap_size(SizeKey::Requested, &c, "req").cap_size(SizeKey::Total, &c, "total");
            h.cap_size(SizeKey::Allocated, &c, "alloc").cap_size(SizeKey::Reserved, &c, "res");
            h.bytes(SizeKey::Limit, 4 << 30, "4GB".to_string());
            if let Some(d) = c.name("dev") {
                h.culprit.device = Some(format!("GPU {}", d.as_str()));
            }
            h.flag("block_size_limit").flag("framework_pytorch");
            h.detail("xpu_4gb_block_limit", true);
            h.priority = 3;
            hits.push(h);
        }
    }
    if has(t, "_OUT_OF_DEVICE_MEMORY") || has(t, "_OUT_OF_HOST_MEMORY") {
        for c in level_zero().captures_iter(t) {
            let m = c.get(0).unwrap();
            let mut h = device_hit("xpu.out-of-memory", m.start(), m.end(), Platform::Xpu);
            if &c["where"] == "HOST" {
                h.space("host");
            }
            h.detail("driver_error", c["code"].to_string());
            if let Some(n) = c.name("num") {
                h.detail("ur_result_code", n.as_str().parse::<u64>().ok());
            }
            hits.push(h);
        }
    }
    if has(t, "EL0004") || has(t, "FAIL_TO_ALLOCATE_MEMORY") {
        for m in cann().find_iter(t) {
            let mut h = device_hit("npu.out-of-memory", m.start(), m.end(), Platform::Npu);
            h.detail("cann_error", "EL0004 (memory allocation failure)");
            // The runtime's traceback that follows may state the request.
            let tail = super::window(t, m.end(), 1500);
            let tail = &tail[..tail.find("EL0004").unwrap_or(tail.len())];
            if let Some(c) = cann_size().captures(tail) {
                if let Ok(b) = c["req"].parse::<u64>() {
                    h.bytes(SizeKey::Requested, b, format!("size:{b}"));
                    h.end = m.end() + c.get(0).unwrap().end();
                }
            }
            hits.push(h);
        }
    }
}
